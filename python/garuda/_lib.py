"""_lib.py — loads libgaruda.so.0 with ctypes and declares every prototype of
<garuda/garuda.h> and <garuda/host.h>.

Promises: the library is loaded once, on first use (importing ``garuda`` never needs it),
from ``$GARUDA_LIBRARY`` when set, else by its soname ``libgaruda.so.0`` through the
dynamic loader's search path. Every function gets its exact argument and return types, so
no call goes through ctypes' int defaults. Optional entry points of newer libraries
(``garuda_stream_set_plan``) are bound only when the loaded library exports them.

Every call that returns a negative code on failure has an ``errcheck``: the failure
is raised as the garuda.Error of its code (errors.from_code), carrying libgaruda's own
explanation (``Error.detail``): garuda_last_error(), read by the errcheck right after the
failing call on the calling thread. libgaruda keeps it per thread, and every failing call
leaves there its own words or "" (never an older failure's; a refused plan's words are
garuda_plan_message()'s: garuda.h), so the text is this failure's as it is. Call sites
never test return codes; the query calls return -EAGAIN ("still running") instead of
raising it.

garuda's objects (Client, Segment, Stream, HostStream) are passed to the calls as
themselves: ctypes converts each through its ``_as_parameter_`` (the native handle). A
closed object's ``_as_parameter_`` raises garuda.ClosedError; ctypes would report that as
a ctypes.ArgumentError that has lost it, so the library's functions re-raise the
ClosedError itself (_passing_closed).

ctypes releases the GIL around every call, so a blocking ``garuda_stream_wait`` or
``garuda_host_stream_drain`` lets other Python threads run.
"""
from __future__ import annotations

import ctypes
import errno
import os
import threading
from typing import Any, Callable, Optional
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char_p, c_int, c_int64,
                    c_size_t, c_uint, c_uint32, c_uint64, c_void_p)

from . import errors

SONAME = "libgaruda.so.0"

_lock = threading.Lock()
_lib: Optional[Library] = None

# garuda_stream_cb: void (*)(struct garuda_stream *s, uint64_t seq, void *user)
STREAM_CB = CFUNCTYPE(None, c_void_p, c_uint64, c_void_p)
# host stream call item: void (*)(void *arg)
HOST_CALL = CFUNCTYPE(None, c_void_p)


class HostStreamConfig(Structure):
    """struct garuda_host_stream_config."""
    _fields_ = [("depth", c_uint), ("spin_ns", c_uint64), ("nonblock", c_int)]


_H = c_void_p
_PH = POINTER(c_void_p)

# name: (restype, argtypes)
_PROTOTYPES = {
    "garuda_version": (c_char_p, []),
    "garuda_strerror": (c_char_p, [c_int]),
    "garuda_connect": (c_int, [_PH]),
    "garuda_connect_to": (c_int, [c_char_p, _PH]),
    "garuda_last_error": (c_char_p, []),
    "garuda_client_warning": (c_int, [_H, c_char_p, c_size_t]),
    "garuda_disconnect": (None, [_H]),
    "garuda_client_connected": (c_int, [_H]),
    "garuda_client_session": (c_uint64, [_H]),
    "garuda_client_query": (c_int, [_H, c_char_p, c_size_t]),
    "garuda_client_reconnects": (c_uint64, [_H]),
    "garuda_client_fd": (c_int, [_H]),
    "garuda_dispatch": (c_int, [_H]),
    "garuda_segment_open": (c_int, [_H, c_char_p, c_int, c_uint32, _PH]),
    "garuda_segment_close": (c_int, [_H]),
    "garuda_segment_numa_node": (c_int, [_H]),
    "garuda_segment_free_words": (c_uint32, [_H]),
    "garuda_stream_new": (c_int, [_H, c_void_p, c_int, _PH]),
    "garuda_stream_free": (None, [_H]),
    "garuda_stream_set_wait": (c_int, [_H, c_uint64, c_uint64]),
    "garuda_stream_set_callback": (c_int, [_H, STREAM_CB, c_void_p]),
    "garuda_stream_signal": (c_int, [_H, POINTER(c_uint64)]),
    "garuda_stream_last": (c_uint64, [_H]),
    "garuda_stream_value": (c_uint64, [_H]),
    "garuda_stream_reached": (c_bool, [_H, c_uint64]),
    "garuda_stream_wait": (c_int, [_H, c_uint64, c_int64]),
    "garuda_stream_fd": (c_int, [_H]),
    "garuda_stream_drain": (c_int, [_H, POINTER(c_uint64)]),
    "garuda_stream_query": (c_int, [_H]),
    "garuda_host_stream_new": (c_int, [POINTER(HostStreamConfig), _PH]),
    "garuda_host_stream_free": (None, [_H]),
    "garuda_host_stream_enqueue_work": (c_int, [_H, c_uint64]),
    "garuda_host_stream_enqueue_fault": (c_int, [_H]),
    "garuda_host_stream_enqueue_stamp": (c_int, [_H, POINTER(c_uint64)]),
    "garuda_host_stream_enqueue_call": (c_int, [_H, HOST_CALL, c_void_p]),
    "garuda_host_stream_query": (c_int, [_H]),
    "garuda_host_stream_drain": (c_int, [_H]),
}

# entry points that only newer libraries have: bound when present
_OPTIONAL = {
    "garuda_stream_set_plan": (c_int, [_H, c_char_p]),
    "garuda_stream_get_plan": (c_int, [_H, c_char_p, c_size_t]),
    "garuda_plan_message": (c_char_p, []),
}


# calls whose non-negative results are values that are never failures, and the query
# calls (-EAGAIN: still running)
_NO_CHECK = frozenset({"garuda_segment_numa_node"})
_QUERIES = frozenset({"garuda_stream_query", "garuda_host_stream_query"})


def _raise(result: int, func: Any) -> None:
    """Raise the failure the calling thread just got from func, with libgaruda's words
    for it (garuda_last_error(): "" when it gave none)."""
    name = func.__name__
    what = name[len("garuda_"):] if name.startswith("garuda_") else name
    detail = load().garuda_last_error()  # loaded: an errcheck runs after a call
    raise errors.from_code(-result, what, detail.decode(errors="replace") if detail else "")


def _check(result: int, func: Any, _args: tuple) -> int:
    """errcheck: a negative result raises; anything else is the call's value."""
    if result < 0:
        _raise(result, func)
    return result


def _check_query(result: int, func: Any, _args: tuple) -> int:
    """errcheck of the query calls: 0 done, -EAGAIN running (returned), else raises."""
    if result < 0 and result != -errno.EAGAIN:
        _raise(result, func)
    return result


def _closed_argument(args: tuple) -> Optional[BaseException]:
    """The ClosedError of the first closed garuda object among a call's arguments."""
    for a in args:
        try:
            getattr(a, "_as_parameter_", None)
        except errors.ClosedError as e:
            return e
    return None


def _passing_closed(fn: Any) -> Callable[..., Any]:
    """fn, raising the ClosedError of a closed garuda object passed to it. ctypes
    reports any failure to convert an argument as a ctypes.ArgumentError that keeps
    only the text of the exception that caused it; this raises the ClosedError itself
    (any other ArgumentError goes through as it is). A plain function: calling it costs
    next to nothing beside the ctypes call (a ctypes function subclass with a Python
    __call__ costs more than the call)."""
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except ctypes.ArgumentError:
            closed = _closed_argument(args)
            if closed is None:
                raise
        raise closed from None  # not shown 'during handling of' the ArgumentError
    call.__name__ = call.__qualname__ = fn.__name__
    return call


class Library:
    """The loaded libgaruda: each declared function as an attribute named as in C
    (an optional one only when the library exports it), through _passing_closed;
    ``cdll`` is the ctypes.CDLL."""

    def __init__(self, cdll: ctypes.CDLL) -> None:
        self.cdll = cdll

    def __getattr__(self, name: str) -> Any:  # the declared functions, for type checkers
        raise AttributeError(f"libgaruda: {name} is not declared (or not exported)")


def _declare(lib: Library, name: str, proto: tuple) -> None:
    fn = getattr(lib.cdll, name)
    fn.restype, fn.argtypes = proto
    if proto[0] is c_int and name not in _NO_CHECK:
        fn.errcheck = _check_query if name in _QUERIES else _check
    setattr(lib, name, _passing_closed(fn))


def load() -> Library:
    """The loaded library (every prototype declared)."""
    global _lib
    lib = _lib
    if lib is not None:
        return lib
    with _lock:
        if _lib is None:
            path = os.environ.get("GARUDA_LIBRARY") or SONAME
            try:
                lib = Library(ctypes.CDLL(path))
            except OSError as e:
                raise ImportError(
                    f"garuda: cannot load libgaruda ({path}): {e}; install libgaruda or set "
                    "GARUDA_LIBRARY to its path") from e
            for name, proto in _PROTOTYPES.items():
                try:
                    _declare(lib, name, proto)
                except AttributeError as e:
                    raise ImportError(f"garuda: {path} lacks {name}: not a libgaruda "
                                      "with the GARUDA_0.1 interface") from e
            for name, proto in _OPTIONAL.items():
                if hasattr(lib.cdll, name):
                    _declare(lib, name, proto)
            _lib = lib
            errors.use_library_text(lambda code: lib.garuda_strerror(-code).decode())
        return _lib


def has(name: str) -> bool:
    """True when the loaded library exports the optional entry point `name`."""
    lib = load()
    return name in _OPTIONAL and hasattr(lib, name)
