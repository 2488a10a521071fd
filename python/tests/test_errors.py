"""garuda's exceptions against the C registry: the Python table is proto/errcode.h's
(codes, names, order), every message is the library's garuda_strerror(), every code
maps to its own class, errno values map to ErrnoError."""
import errno
import os
import pickle
import re

import pytest

import garuda
from garuda import errors

SOURCE_ROOT = os.environ.get("GARUDA_SOURCE_ROOT",
                             os.path.join(os.path.dirname(__file__), "..", ".."))


def c_registry():
    text = open(os.path.join(SOURCE_ROOT, "proto", "errcode.h")).read()
    body = text[text.index("#define GARUDA_ERRCODES(X)"):]
    body = body[:body.index("\n\n")]
    rows = re.findall(r'X\(\s*([A-Z_]+)\s*,\s*(\d+)\s*,\s*("(?:[^"\\]|\\.)*")\s*\)', body)
    assert len(rows) >= 35, "could not parse proto/errcode.h"
    return [(int(num), name, msg[1:-1]) for name, num, msg in rows]


def test_table_is_the_c_registry():
    c = c_registry()
    assert [(code, name) for code, name, _ in c] == list(garuda.REGISTRY), \
        "python/garuda/errors.py REGISTRY differs from proto/errcode.h: run scripts/gen-errcodes.py"


def test_public_header_copy_agrees():
    """proto/include/garuda/errcodes.h (generated, installed as <garuda/errcodes.h>) carries the codes."""
    text = open(os.path.join(SOURCE_ROOT, "proto", "include", "garuda", "errcodes.h")).read()
    rows = re.findall(r"GARUDA_E_([A-Z_]+)\s*=\s*(\d+)", text)
    assert [(int(n), name) for name, n in rows] == list(garuda.REGISTRY)


def test_messages_are_the_librarys(daemon):
    garuda.Client().close()  # loads the library
    for code, name, msg in c_registry():
        assert garuda.strerror(-code) == msg
        e = errors.from_code(code)
        assert e.text == msg and e.code == code and e.name == name


def test_one_class_per_code():
    classes = set()
    for code, name in garuda.REGISTRY:
        cls = errors.BY_CODE[code]
        assert issubclass(cls, garuda.Error)
        assert cls.code == code and cls.name == name
        assert getattr(garuda, cls.__name__) is cls
        e = errors.from_code(code, "what")
        assert type(e) is cls and str(e).startswith("what: ")
        assert pickle.loads(pickle.dumps(e)).code == code
        classes.add(cls)
    assert len(classes) == len(garuda.REGISTRY)
    assert garuda.QuotaError.code == 1016
    assert issubclass(garuda.TimeoutError, TimeoutError)


def test_unknown_code_and_errno():
    e = errors.from_code(1999)
    assert type(e) is garuda.Error and e.code == 1999 and e.name == "E1999"
    e = errors.from_code(errno.ENOENT, "connect")
    assert isinstance(e, garuda.ErrnoError) and isinstance(e, OSError)
    assert isinstance(e, garuda.Error)
    assert e.errno == errno.ENOENT and e.name == "ENOENT" and e.code == errno.ENOENT
    with pytest.raises(garuda.ErrnoError):
        errors.check(-errno.EINVAL)
    assert errors.check(5) == 5


def test_missing_library_is_clear_importerror(tmp_path):
    """import garuda needs no library; the first use without one says what to do."""
    import subprocess
    import sys
    probe = ("import garuda\n"
             "try:\n    garuda.Client()\nexcept ImportError as e:\n    print('ImportError:', e)\n")
    env = dict(os.environ, GARUDA_LIBRARY=str(tmp_path / "libgaruda.so.0"))
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ImportError: garuda: cannot load libgaruda"), r.stdout
    assert "GARUDA_LIBRARY" in r.stdout


def test_strerror_of_zero_is_success():
    """garuda_strerror(0) said "unknown error" (issue 30, item 16)."""
    assert garuda.strerror(0) == "success"
