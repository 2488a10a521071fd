"""The pip route (docs/python.md, "pip"): python/pyproject.toml builds with setuptools,
offline, into a fresh venv —

    python3 -m venv --system-site-packages v
    v/bin/pip install --no-build-isolation --no-index ./python

— and the installed package (not the source tree: no PYTHONPATH) loads the build
tree's libgaruda named by GARUDA_LIBRARY and runs one completion through a garudad
this test starts. The install runs on a read-only copy of python/ in a temporary
directory, and writes nothing into it (the build backend, build_backend/
garuda_build.py, runs setuptools on a copy of its own: setuptools writes build/ and
garuda.egg-info/ into the tree it builds, which failed in a checkout the user cannot
write). Root writes into a read-only tree anyway: run as root, the test makes the
venv and runs pip as an unprivileged uid (nobody, 65534), whom the 0555 tree stops.
Skips, saying why, without the venv module or ensurepip (Debian python3-venv) or
without the wheel package (python3-wheel: Debian 12's setuptools needs it to build
and its venvs carry none)."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIBRARY = os.environ.get("GARUDA_LIBRARY")
NOBODY = 65534  # the uid (and gid) the venv and pip run as when the test runs as root

PROBE = r"""
import os, sys, garuda
assert garuda.__file__.startswith(sys.prefix), (garuda.__file__, sys.prefix)
with garuda.Client() as c, c.segment() as seg, seg.stream() as s:
    seq = s.signal()
    s.wait(seq, timeout=30)
    assert s.reached(seq)
print("pip garuda", garuda.__version__, "libgaruda", garuda.version(),
      "from", os.path.dirname(garuda.__file__))
"""


def _tree(top):
    return {os.path.relpath(os.path.join(d, n), top) for d, dirs, files in os.walk(top)
            for n in dirs + files}


def _chmod_tree(top, dmode, fmode):
    for d, dirs, files in os.walk(top):
        os.chmod(d, dmode)
        for n in files:
            os.chmod(os.path.join(d, n), fmode)


def _missing():
    for mod, pkg in (("venv", "python3-venv"), ("ensurepip", "python3-venv"),
                     ("setuptools", "python3-setuptools"), ("wheel", "python3-wheel")):
        if importlib.util.find_spec(mod) is None:
            return f"the {mod} module is not available to {sys.executable} (install {pkg})"
    return None


@pytest.mark.skipif(not LIBRARY, reason="GARUDA_LIBRARY is not set (meson test sets it "
                    "to the build tree's libgaruda)")
def test_pip_install_into_venv(make_daemon):
    why = _missing()
    if why:
        pytest.skip(why)
    as_root = os.geteuid() == 0
    if as_root and not shutil.which("setpriv"):
        pytest.skip("run as root, the test runs pip as uid 65534 with setpriv (util-linux), "
                    "which is not on PATH")
    d = make_daemon()
    base = None
    if as_root:  # a directory nobody can reach (TMPDIR under /root, say) would not do
        base = next((b for b in (tempfile.gettempdir(), "/tmp", "/var/tmp")
                     if subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                                        "--clear-groups", "test", "-x", b]).returncode == 0),
                    None)
        if base is None:
            pytest.skip(f"uid {NOBODY} can reach none of {tempfile.gettempdir()}, /tmp, "
                        "/var/tmp to run pip in")
    with tempfile.TemporaryDirectory(prefix="garuda-py-pip.", dir=base) as tmp:
        shutil.copytree(PYTHON_DIR, os.path.join(tmp, "python"),
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__",
                                                      "tests", "bench"))
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        user = []  # the venv and pip: as nobody when run as root (root writes a 0555 tree)
        user_env = env
        if as_root:
            home, utmp = os.path.join(tmp, "home"), os.path.join(tmp, "tmp")
            os.mkdir(home)
            os.mkdir(utmp)
            for p in (tmp, home, utmp):
                os.chown(p, NOBODY, NOBODY)
            user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
            user_env = dict(env, HOME=home, TMPDIR=utmp, PIP_NO_CACHE_DIR="1")

        def run(*cmd, **kw):
            r = subprocess.run(cmd, cwd=tmp, env=kw.pop("env", env), capture_output=True,
                               text=True, timeout=240, **kw)
            assert r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}"
            return r

        r = subprocess.run(user + [sys.executable, "-m", "venv", "--system-site-packages", "v"],
                           cwd=tmp, env=user_env, capture_output=True, text=True, timeout=240)
        if r.returncode != 0 and "ensurepip" in r.stdout + r.stderr:
            pytest.skip(f"{sys.executable} -m venv cannot install pip (python3-venv's "
                        f"ensurepip): {(r.stdout + r.stderr).strip()[-300:]}")
        assert r.returncode == 0, r.stdout + r.stderr
        pip = os.path.join(tmp, "v", "bin", "pip")
        src = os.path.join(tmp, "python")
        before = _tree(src)
        _chmod_tree(src, 0o555, 0o444)  # as a checkout the user cannot write
        try:
            run(*user, pip, "install", "--no-build-isolation", "--no-index", "./python",
                env=user_env)
        finally:
            _chmod_tree(src, 0o755, 0o644)
        assert _tree(src) == before, f"the build wrote into the source tree: {_tree(src) - before}"
        files = run(pip, "show", "--files", "garuda").stdout.split()
        assert "garuda/py.typed" in files, files  # PEP 561: the annotations are its types
        probe_env = dict(env, GARUDA_LIBRARY=LIBRARY, GARUDA_SOCKET=d.sock)
        r = run(os.path.join(tmp, "v", "bin", "python"), "-c", PROBE, env=probe_env)
        assert r.stdout.startswith("pip garuda 0.1.0 libgaruda 0.1.0 from " + tmp), r.stdout
        # without GARUDA_LIBRARY the package asks the loader for libgaruda.so.0: an
        # installed libgaruda, or an ImportError that says what to set
        bare = {k: v for k, v in probe_env.items() if k not in ("GARUDA_LIBRARY",)}
        r = subprocess.run([os.path.join(tmp, "v", "bin", "python"), "-c",
                            "import garuda; print(garuda.version())"],
                           cwd=tmp, env=bare, capture_output=True, text=True, timeout=60)
        assert (r.returncode == 0 and r.stdout.strip() or
                "ImportError" in r.stderr and "GARUDA_LIBRARY" in r.stderr), r.stdout + r.stderr
