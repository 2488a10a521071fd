"""garuda — wait on GPU (or CPU) stream completion like I/O, through garudad.

Standard library only: ctypes over libgaruda.so.0 ($GARUDA_LIBRARY, else the soname).
See docs/python.md.

    import garuda
    with garuda.Client() as c:                      # $GARUDA_SOCKET
        seg = c.segment("host")
        s = seg.stream()                            # eventfd form
        seq = s.signal()
        s.wait(seq, timeout=1.0)                    # or: await s.wait_async(seq)
"""
from . import errors as _errors
from .core import (Client, HostStream, Readiness, Segment, Stream, has_plans, reached,
                   strerror, version)
from .errors import *  # noqa: F401,F403  (Error and one subclass per registry code)
from .errors import Error, ErrnoError, REGISTRY

__version__ = "0.1.0"

__all__ = ["Client", "HostStream", "Readiness", "Segment", "Stream", "has_plans", "reached",
           "strerror", "version", "Error", "ErrnoError", "REGISTRY"]
__all__ += [n for n in _errors.__all__ if n not in __all__]  # one class per registry code
