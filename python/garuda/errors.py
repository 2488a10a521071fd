"""errors.py — garuda's exceptions: one class per code of the error registry.

Promises: every failure a libgaruda call reports is raised as a ``garuda.Error``.
A registry code (proto/errcode.h, append-only) raises the subclass named after the code
(``QUOTA`` -> ``QuotaError``) with ``code`` (1016) and ``name`` ("QUOTA"); a code this
table does not know yet (a newer library) raises ``Error`` itself with name ``E<code>``.
A negative errno raises ``ErrnoError``, which is also a built-in ``OSError`` (``errno``,
``strerror``) and carries ``code`` = errno and ``name`` = its symbolic name ("ENOENT").
``garuda.TimeoutError`` is also a built-in ``TimeoutError``.
An exception raised from a libgaruda call carries libgaruda's own explanation in
``detail`` (garuda_last_error(): the socket path and what to do, a quota's key, limit
and usage, the driver library that is missing; "" when the call gave none) and its
message ends with it. Coded warnings (garuda_client_warning()) are issued as
``GarudaWarning`` with the same ``code`` / ``name`` / ``text``.

REGISTRY below is a copy of the C registry; tests/test_errors.py compares it with
proto/errcode.h and with the library's garuda_strerror(), so the two cannot drift.
"""
from __future__ import annotations

import builtins
import errno as _errno
import os
from typing import Optional

# (code, name) in registry order; append only, exactly as proto/errcode.h
REGISTRY = (
    (1000, "PROTOCOL"),
    (1001, "TOO_SHORT"),
    (1002, "TOO_LONG"),
    (1003, "BAD_LENGTH"),
    (1004, "UNKNOWN_TYPE"),
    (1005, "BAD_VERSION"),
    (1006, "FD_COUNT"),
    (1007, "SLOT_RANGE"),
    (1008, "RESERVED_SET"),
    (1009, "BAD_VALUE"),
    (1010, "UNEXPECTED"),
    (1011, "NO_SEGMENT"),
    (1012, "BAD_FD"),
    (1013, "NOT_BOUND"),
    (1014, "ALREADY_BOUND"),
    (1015, "NOT_ARMED"),
    (1016, "QUOTA"),
    (1017, "NO_MEMLOCK"),
    (1018, "BAD_SEGMENT"),
    (1019, "SLOW_PEER"),
    (1020, "TIMEOUT"),
    (1021, "DISCONNECTED"),
    (1022, "BAD_PLAN"),
    (1023, "STREAM_FAULT"),
    (1024, "NO_DRIVER"),
    (1025, "DRIVER_TOO_OLD"),
    (1026, "UNSUPPORTED"),
    (1027, "REGISTER_FAILED"),
    (1028, "BAD_JSON"),
    (1029, "UNKNOWN_REQUEST"),
    (1030, "BAD_ARGUMENT"),
    (1031, "ACCESS_DENIED"),
    (1032, "NO_CLIENT"),
    (1033, "BUSY"),
    (1034, "CLOSED"),
    (1035, "FALLBACK_REACTOR"),
)

ERR_BASE = 1000


class Error(Exception):
    """A failure reported by libgaruda (or by this package for a closed object).

    code: the registry code (>= 1000) or the errno; name: "QUOTA", "ENOENT"...;
    text: the library's message for the code (garuda_strerror); what: the call;
    detail: libgaruda's explanation of this failure (garuda_last_error(), e.g.
    "garudad refused SEGMENT_CREATE: quota.connection.segments ..."), "" if none.
    str(): "what: text (NAME): detail"."""
    code: int = 0
    name: str = ""

    def __init__(self, code: Optional[int] = None, text: Optional[str] = None,
                 what: Optional[str] = None, detail: Optional[str] = None) -> None:
        if code is None:
            code = type(self).code
        self.code = code
        if not type(self).name or type(self) is Error:
            self.name = _name_of(code)
        self.text = text if text is not None else _text_of(code)
        self.what = what
        self.detail = detail or ""
        super().__init__(f"{what + ': ' if what else ''}{self.text} ({self.name})"
                         f"{': ' + self.detail if self.detail else ''}")

    def __reduce__(self):
        return (type(self), (self.code, self.text, self.what, self.detail))


class ErrnoError(Error, builtins.OSError):
    """A system failure: libgaruda forwarded a negative errno."""

    def __init__(self, code: int, text: Optional[str] = None, what: Optional[str] = None,
                 detail: Optional[str] = None) -> None:
        Error.__init__(self, code, text, what, detail)
        self.errno = code
        self.strerror = self.text
        if what:
            self.filename = None

    def __str__(self) -> str:
        return Error.__str__(self)


def _name_of(code: int) -> str:
    if code >= ERR_BASE:
        return _NAMES.get(code, f"E{code}")
    if code == _errno.EOPNOTSUPP:  # == ENOTSUP on Linux; the name libgaruda documents
        return "EOPNOTSUPP"
    return _errno.errorcode.get(code, f"errno {code}")


def _text_of(code: int) -> str:
    # the library's text when it is loaded; os.strerror for errno otherwise
    from . import _lib
    if _lib._lib is not None:
        return _lib._lib.garuda_strerror(-code).decode()
    return os.strerror(code) if code < ERR_BASE else _NAMES.get(code, "unknown error")


def _class_name(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_")) + "Error"


_NAMES = dict(REGISTRY)
BY_CODE: dict[int, type[Error]] = {}
__all__ = ["Error", "ErrnoError", "GarudaWarning", "REGISTRY", "from_code", "check"]
for _code, _name in REGISTRY:
    _bases = (Error,)
    if _name == "TIMEOUT":
        _bases = (Error, builtins.TimeoutError)
    _cls = type(_class_name(_name), _bases, {"code": _code, "name": _name,
                                             "__doc__": f"Registry code {_code} ({_name})."})
    if _name == "TIMEOUT":
        # a built-in TimeoutError is an OSError: keep Error's message and attributes
        _cls.__init__ = lambda self, code=None, text=None, what=None, detail=None: \
            Error.__init__(self, code, text, what, detail)
        _cls.__str__ = Error.__str__
    _cls.__module__ = "garuda"
    globals()[_cls.__name__] = _cls
    BY_CODE[_code] = _cls
    __all__.append(_cls.__name__)
del _code, _name, _bases, _cls


def from_code(code: int, what: Optional[str] = None, detail: Optional[str] = None) -> Error:
    """The exception for a positive code (registry code or errno)."""
    if code >= ERR_BASE:
        return BY_CODE.get(code, Error)(code, what=what, detail=detail)
    return ErrnoError(code, what=what, detail=detail)


class GarudaWarning(UserWarning):
    """A coded warning of libgaruda (garuda_client_warning()): the client runs, but not
    as asked — FALLBACK_REACTOR (1035): GARUDA_FALLBACK=reactor and garudad could not be
    reached, so an in-process reactor delivers readiness until garudad is back.
    code: the registry code; name: "FALLBACK_REACTOR"; text: libgaruda's words
    ("requested: ...; unavailable: ...; running: ...")."""

    def __init__(self, code: int, text: str = "") -> None:
        self.code = code
        self.name = _name_of(code)
        self.text = text
        super().__init__(code, text)

    def __str__(self) -> str:
        return f"garuda: {self.name} ({self.code}): {self.text or _text_of(self.code)}"

    def __reduce__(self):
        return (type(self), (self.code, self.text))


def check(rc: int, what: Optional[str] = None) -> int:
    """rc from a libgaruda call: returned when >= 0, raised when negative."""
    if rc < 0:
        raise from_code(-rc, what)
    return rc
