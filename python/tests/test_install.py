"""`meson install` puts the package where the interpreter finds it, next to libgaruda:
from a DESTDIR install, with only PYTHONPATH (the site-packages directory) and
LD_LIBRARY_PATH (found by soname, no GARUDA_LIBRARY) pointing into it, `import garuda`
comes from the installed tree and signals and waits through a garudad. The tree carries
py.typed (PEP 561)."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

MESON = os.environ.get("MESON") or shutil.which("meson")
BUILD = os.environ.get("GARUDA_BUILD_ROOT")

PROBE = r"""
import os, sys, garuda
assert garuda.__file__.startswith(sys.argv[1]), garuda.__file__
with garuda.Client() as c, c.segment() as seg, seg.stream() as s:
    s.wait(s.signal(), timeout=30)
print("installed garuda", garuda.version(), "from", os.path.dirname(garuda.__file__))
"""


@pytest.mark.skipif(not MESON or not BUILD, reason="needs meson and GARUDA_BUILD_ROOT "
                    "(meson test sets it)")
def test_import_from_installed_tree(daemon):
    with tempfile.TemporaryDirectory(prefix="garuda-py-install.") as dest:
        subprocess.run([MESON, "install", "-C", BUILD, "--destdir", dest, "--no-rebuild",
                        "--quiet"], check=True, stdout=subprocess.DEVNULL)
        inits = glob.glob(os.path.join(dest, "**", "garuda", "__init__.py"), recursive=True)
        assert len(inits) == 1, inits
        site = os.path.dirname(os.path.dirname(inits[0]))
        # the annotations are the package's types (PEP 561)
        assert os.path.isfile(os.path.join(site, "garuda", "py.typed"))
        libs = glob.glob(os.path.join(dest, "**", "libgaruda.so.0"), recursive=True)
        assert len(libs) == 1, libs
        env = {k: v for k, v in os.environ.items()
               if k not in ("GARUDA_LIBRARY", "PYTHONPATH")}
        env.update(PYTHONPATH=site, LD_LIBRARY_PATH=os.path.dirname(libs[0]))
        r = subprocess.run([sys.executable, "-c", PROBE, site], env=env, cwd=dest,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "installed garuda 0.1.0" in r.stdout
