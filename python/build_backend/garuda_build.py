"""garuda_build — python/pyproject.toml's build backend: setuptools' own
(setuptools.build_meta), run on a copy of python/ in a temporary directory.

Promises: building a wheel or an sdist (`pip install ./python`, `python3 -m build`)
writes nothing into the source tree. setuptools writes build/ and garuda.egg-info/
beside pyproject.toml, which failed in a checkout the user cannot write ("error: could
not create 'build': Permission denied"). An editable install is the source tree by
definition: it is setuptools' as it is, in place."""
import contextlib
import os
import shutil
import stat
import tempfile

from setuptools import build_meta as _setuptools

_LEFT_OUT = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests", "bench")


@contextlib.contextmanager
def _in_a_copy():
    """Run the body with the current directory a copy of the source tree (pip runs a
    backend in the tree it builds)."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="garuda-build.") as tmp:
        copy = os.path.join(tmp, "python")
        shutil.copytree(here, copy, ignore=_LEFT_OUT)
        # copytree keeps the modes of a read-only checkout (0555 directories, 0444
        # files): make the copy its owner's to write, or setuptools cannot create build/
        for d, _dirs, files in os.walk(copy):
            for p in [d] + [os.path.join(d, n) for n in files]:
                os.chmod(p, stat.S_IMODE(os.lstat(p).st_mode) | stat.S_IWUSR)
        os.chdir(copy)
        try:
            yield
        finally:
            os.chdir(here)


def _copied(name):
    def hook(directory, *args, **kwargs):
        directory = os.path.abspath(directory)  # pip's output directory, outside the copy
        with _in_a_copy():
            return getattr(_setuptools, name)(directory, *args, **kwargs)
    hook.__name__ = name
    hook.__doc__ = f"setuptools.build_meta.{name}, on a copy of the source tree"
    return hook


def _requires(name):
    def hook(config_settings=None):
        with _in_a_copy():
            return getattr(_setuptools, name)(config_settings)
    hook.__name__ = name
    return hook


build_wheel = _copied("build_wheel")
build_sdist = _copied("build_sdist")
prepare_metadata_for_build_wheel = _copied("prepare_metadata_for_build_wheel")
get_requires_for_build_wheel = _requires("get_requires_for_build_wheel")
get_requires_for_build_sdist = _requires("get_requires_for_build_sdist")
for _name in ("get_requires_for_build_editable", "prepare_metadata_for_build_editable",
              "build_editable"):
    if hasattr(_setuptools, _name):
        globals()[_name] = getattr(_setuptools, _name)
