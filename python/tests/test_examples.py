"""examples/python: the asyncio server serves 500 concurrent requests to itself
(under asyncio and under uvloop) and exits 0 with every reply; the torch server runs
only where torch with CUDA is importable."""
import os
import subprocess
import sys

import pytest

SOURCE_ROOT = os.environ.get("GARUDA_SOURCE_ROOT",
                             os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(SOURCE_ROOT, "examples", "python")


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_asyncio_server(daemon, loop):
    cmd = [sys.executable, os.path.join(EXAMPLES, "asyncio_server.py"), "--requests", "500",
           "--slots", "128", "--kernel-us", "300"]
    if loop == "uvloop":
        pytest.importorskip("uvloop", reason="python3-uvloop is not installed")
        cmd.append("--uvloop")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("500/500 requests done"), r.stdout


def _torch_cuda():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(not _torch_cuda(), reason="needs torch with CUDA and a GPU")
def test_torch_server(daemon):
    env = dict(os.environ)
    env.pop("GARUDA_CUDA_LIBRARY", None)  # the real libcuda, not the fake
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "torch_server.py"),
                        "--requests", "64"], capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
