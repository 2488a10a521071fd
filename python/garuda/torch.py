"""garuda.torch — GPU completion of PyTorch CUDA streams as an awaitable, through
garudad, with no core spinning in cudaStreamSynchronize.

    import garuda.torch as gt
    y = model(x)                                   # queued on the current stream
    await gt.synchronize_async()                   # signal + await; loop stays free
    # or: seq = gt.signal(s); ...; await gt.wait_async(s, seq)

Promises:
 - torch is imported only when a function needs it (no stream given: the current
   stream; require_cuda()); without torch that is an ImportError saying so, and with
   a torch that has no CUDA (a CPU-only build, no driver or GPU) a NoCudaError (a
   garuda.NoDriverError) saying so and what still works: host streams. A stream given
   as any object with an int ``cuda_stream`` (torch.cuda.Stream, or a stand-in) needs
   no torch at all.
 - signal() enqueues, through libgaruda's cuda backend, a cuStreamWriteValue64 of the
   next sequence on the stream's CUstream (``torch_stream.cuda_stream``), behind the
   work queued there. Call it after ``graph.replay()``: the store goes on the stream,
   not into the graph, so it follows the replay's work.
 - One garuda stream per (device, CUstream), on shared segments of one module-level
   Client (``$GARUDA_SOCKET``), made on first use; forget()/reset() release them.
Threads: the module's registry is locked; one torch stream is signalled and awaited by
one thread at a time (libgaruda's rule).
"""
from __future__ import annotations

import os
import threading
from typing import Any, Optional

from . import core
from .errors import NoDriverError

_lock = threading.Lock()
_client: Optional[core.Client] = None
_segments: dict[int, list[core.Segment]] = {}  # device -> [Segment]
_streams: dict[tuple[int, int], core.Stream] = {}   # (device, handle) -> Stream


def _forget_inherited() -> None:
    """In a fork()'s child: the module's client, segments and streams are the
    parent's (core closed them there without freeing them); the child starts with none
    and connects on its first stream, under a fresh lock (a thread of the parent may
    have held the old one at the fork)."""
    global _lock, _client
    _lock = threading.Lock()
    _client = None
    _segments.clear()
    _streams.clear()


os.register_at_fork(after_in_child=_forget_inherited)
_LINES = 8      # 64 words per segment


class NoCudaError(NoDriverError):
    """torch is there but has no CUDA (torch.cuda.is_available() is False): a CPU-only
    build, or no NVIDIA driver or GPU. A garuda.NoDriverError (code 1024)."""

    def __init__(self, code: Optional[int] = None, text: Optional[str] = "torch has no CUDA",
                 what: Optional[str] = "garuda.torch", detail: Optional[str] = None) -> None:
        super().__init__(code, text, what, detail)

_STILL_WORKS = ("garuda.torch needs CUDA streams. Without CUDA, host streams still work: "
                "garuda.HostStream on a client.segment(\"host\") — signal(), wait(), "
                "await wait_async() — as examples/python/asyncio_server.py does")


def _torch() -> Any:
    try:
        import torch  # noqa: PLC0415 — lazy by design
    except ImportError as e:
        raise ImportError("garuda.torch: PyTorch is not installed; pass a stream object "
                          "with an int .cuda_stream, or install torch") from e
    return torch


def require_cuda() -> Any:
    """torch, when it has CUDA; else NoCudaError saying so and what still works (host
    streams) — instead of torch's own AssertionError or TypeError from the first CUDA
    call. ImportError without torch."""
    torch = _torch()
    try:
        ok = bool(torch.cuda.is_available())
    except Exception as e:  # a torch too broken to say
        raise NoCudaError(detail=f"torch.cuda.is_available() failed ({e!r}); "
                          + _STILL_WORKS) from e
    if not ok:
        version = getattr(torch, "__version__", "?")
        cuda = getattr(getattr(torch, "version", None), "cuda", None)
        built = (f"built for CUDA {cuda}, but no NVIDIA driver or GPU is usable" if cuda else
                 "a CPU-only build")
        raise NoCudaError(detail=f"torch {version} ({built}): torch.cuda.is_available() is "
                          f"False. {_STILL_WORKS}")
    return torch


def _resolve(torch_stream: Optional[core.CudaStreamLike]) -> tuple[Any, int, int]:
    if torch_stream is None:
        torch_stream = require_cuda().cuda.current_stream()
    handle = getattr(torch_stream, "cuda_stream", None)
    if not isinstance(handle, int):
        raise TypeError("garuda.torch: expected a torch.cuda.Stream (an object with an int "
                        ".cuda_stream)")
    device = getattr(torch_stream, "device_index", None)
    if device is None:
        device = getattr(getattr(torch_stream, "device", None), "index", None)
    return torch_stream, int(device or 0), handle


def stream_for(torch_stream: Optional[core.CudaStreamLike] = None) -> core.Stream:
    """The garuda.Stream (EVENTFD form, cuda backend) that signals on torch_stream
    (default: torch.cuda.current_stream())."""
    global _client
    torch_stream, device, handle = _resolve(torch_stream)
    with _lock:
        s = _streams.get((device, handle))
        if s is not None and not s.closed:
            return s
        if _client is None or _client.closed:
            _client = core.Client()
        segs = _segments.setdefault(device, [])
        for seg in segs:
            if not seg.closed and seg.free_words:
                break
        else:
            seg = _client.segment("cuda", device, _LINES)
            segs.append(seg)
        s = seg.stream(handle, core.Readiness.EVENTFD)
        _streams[(device, handle)] = s
        return s


def signal(torch_stream: Optional[core.CudaStreamLike] = None) -> int:
    """Enqueue the completion store behind the work queued on torch_stream; returns
    the sequence to wait for."""
    return stream_for(torch_stream).signal()


def wait(torch_stream: Optional[core.CudaStreamLike], seq: int,
         timeout: Optional[float] = None) -> None:
    """Block (no spinning core beyond libgaruda's short spin) until seq completed."""
    stream_for(torch_stream).wait(seq, timeout)


async def wait_async(torch_stream: Optional[core.CudaStreamLike], seq: int,
                     timeout: Optional[float] = None) -> None:
    """Await seq on torch_stream in the running event loop."""
    await stream_for(torch_stream).wait_async(seq, timeout)


def synchronize(torch_stream: Optional[core.CudaStreamLike] = None,
                timeout: Optional[float] = None) -> None:
    """signal() and wait(): the work queued so far on torch_stream has finished."""
    s = stream_for(torch_stream)
    s.wait(s.signal(), timeout)


async def synchronize_async(torch_stream: Optional[core.CudaStreamLike] = None,
                            timeout: Optional[float] = None) -> None:
    """signal() and await: the work queued so far on torch_stream has finished."""
    s = stream_for(torch_stream)
    await s.wait_async(s.signal(), timeout)


def forget(torch_stream: core.CudaStreamLike) -> None:
    """Release the garuda stream of torch_stream (call before destroying it)."""
    _, device, handle = _resolve(torch_stream)
    with _lock:
        s = _streams.pop((device, handle), None)
    if s is not None:
        s.close()


def reset() -> None:
    """Close every stream, segment and the module's client (e.g. before fork, or to
    pick up a new GARUDA_SOCKET)."""
    global _client
    with _lock:
        streams = list(_streams.values())
        _streams.clear()
        _segments.clear()
        c, _client = _client, None
    for s in streams:
        s.close()
    if c is not None:
        c.close()
