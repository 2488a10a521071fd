"""garuda — wait on GPU (or CPU) stream completion like I/O, through garudad.

Standard library only: ctypes over libgaruda.so.0 ($GARUDA_LIBRARY, else the soname).
See docs/python.md.

    import garuda
    with garuda.Client() as c:                      # $GARUDA_SOCKET
        seg = c.segment("host")
        s = seg.stream()                            # eventfd form
        seq = s.signal()
        s.wait(seq, timeout=1.0)                    # or: await s.wait_async(seq)

Failures raise garuda.Error: garuda.ErrnoError for a system error, else one subclass
per code of garuda's error registry (garuda.QuotaError, garuda.TimeoutError, ...),
documented in garuda.errors (help(garuda.errors)), where REGISTRY lists them all.
"""
from . import errors as _errors
from .core import (Client, HostStream, Readiness, Segment, Stream, has_plans, reached,
                   strerror, version)
from .errors import *  # noqa: F401,F403  (garuda.QuotaError...: one class per registry code)
from .errors import Error, ErrnoError, GarudaWarning, REGISTRY

__version__ = "0.1.0"

# The package's front page (help(garuda), from garuda import *): the API and the
# exceptions' bases. The registry's classes stay attributes of the package
# (garuda.QuotaError) and are documented in garuda.errors.
__all__ = ["Client", "HostStream", "Readiness", "Segment", "Stream", "has_plans", "reached",
           "strerror", "version", "Error", "ErrnoError", "GarudaWarning", "errors"]
del _errors
