"""examples/python: the asyncio server serves 500 concurrent requests to itself
(under asyncio and under uvloop) and exits 0 with every reply; the torch server runs
only where torch with CUDA is importable, and with a torch without CUDA exits 1 with
garuda's NoCudaError instead of torch's own error; every example's header names the
variables a build tree needs (GARUDA_LIBRARY, PYTHONPATH, GARUDA_SOCKET)."""
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
    # each figure labelled (issue 30, item 15: a bare "server-side p50 26205 us")
    assert "\n  kernel end -> wake:      p50 " in r.stdout, r.stdout
    assert "\n  request in -> reply out: p50 " in r.stdout, r.stdout


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


FAKE_TORCH = """
import types
__version__ = "2.1.0+cpu"
version = types.SimpleNamespace(cuda=None)
def _not_compiled(*a, **k):
    raise AssertionError("Torch not compiled with CUDA enabled")
class _Stream:
    def __new__(cls, *a, **k):
        raise TypeError("cannot create 'torch._C._CudaStreamBase' instances")
cuda = types.SimpleNamespace(is_available=lambda: False, current_stream=_not_compiled,
                             Stream=_Stream)
def randn(*a, device=None, **k):
    if device == "cuda":
        _not_compiled()
"""


def test_torch_server_without_cuda(tmp_path):
    """A CPU-only torch (a stand-in package first on PYTHONPATH): garuda's error, which
    says torch has no CUDA and that host streams still work; no torch traceback."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "torch_server.py"),
                        "--requests", "4"], capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "torch_server.py: garuda.torch: torch has no CUDA" in r.stderr, r.stderr
    assert "host streams still work" in r.stderr and "asyncio_server.py" in r.stderr
    assert "Traceback" not in r.stderr and "AssertionError" not in r.stderr, r.stderr


def test_torch_server_without_torch(tmp_path):
    """No torch at all (a stand-in that fails to import, first on PYTHONPATH): one line
    from garuda.torch saying torch is not installed, no traceback (issue 30, item 15)."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path)] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "torch_server.py"),
                        "--requests", "4"], capture_output=True, text=True, timeout=60,
                       env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "torch_server.py: garuda.torch: PyTorch is not installed" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("example", ["asyncio_server.py", "torch_server.py"])
def test_header_names_build_tree_variables(example):
    import ast
    with open(os.path.join(EXAMPLES, example)) as f:
        doc = ast.get_docstring(ast.parse(f.read()))
    for var in ("GARUDA_LIBRARY=", "PYTHONPATH=", "GARUDA_SOCKET="):
        assert var in doc, f"{example}'s header does not set {var[:-1]}"
