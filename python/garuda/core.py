"""core.py — Client, Segment, Stream and HostStream over libgaruda.

Promises:
 - Every object owns exactly one libgaruda object and frees it once: on close(), on
   leaving its ``with`` block, or when it is garbage-collected (a weakref.finalize: a
   Stream frees its garuda stream and so closes its eventfd; a Client disconnects and
   so closes its socket). Children keep their parents alive (Stream -> Segment ->
   Client, Stream -> HostStream), so collection frees children first. Closing a parent
   closes its children first. What is still alive at interpreter exit is left to the
   process's exit.
 - Objects pass to libgaruda as themselves (``_as_parameter_``: their handle); a closed
   object raises garuda.ClosedError, from its own calls and wherever it is passed.
 - Every failure is a garuda.Error (see errors.py); nothing returns an error code.
   The libgaruda calls raise by themselves (their ctypes ``errcheck``, _lib.py), with
   libgaruda's explanation in ``Error.detail``.
 - A client that runs but not as asked (GARUDA_FALLBACK=reactor without garudad) has
   a coded warning: Client.warning, and a GarudaWarning issued by the connect.
 - Times are seconds (float); None means "no limit".
 - asyncio: Stream.wait_async() puts the stream's eventfd in the running loop with
   loop.add_reader() — one reader per stream however many awaits are pending, no
   thread, no polling — and removes it as soon as no await is pending (completed,
   cancelled, timed out or failed). A slow backstop timer (Stream.async_backstop,
   default 0.25 s, None disables it) runs only while awaits are pending: it asks the
   native stream whether it faulted (a faulted stream never stores, so its awaits fail
   with StreamFaultError instead of hanging) and re-reads the word. A loop closed with
   awaits pending drops them: the stream is free for another loop, and closes.
 - The main thread's blocking waits (Stream.wait, HostStream.drain) wait in slices of
   _SLICE, so that Ctrl-C (KeyboardInterrupt) is not held off until they return.

Threads follow libgaruda's rules (docs/client.md): a Client may be shared by threads;
one Stream is signalled, waited on and drained by one thread at a time; value and
reached() from anywhere. Close an object from one thread while nothing else uses it.
A stream's async awaits belong to one event loop at a time.
"""
from __future__ import annotations

import ctypes
import enum
import errno
import heapq
import json
import os
import threading
import time
import warnings
import weakref
from collections import deque
from ctypes import byref, c_uint64, c_void_p
from dataclasses import dataclass
from typing import (TYPE_CHECKING, Any, Callable, Literal, Optional, Protocol, TypeVar,
                    Union)

from . import _lib
from .errors import (BadPlanError, BusyError, ClosedError, Error, GarudaWarning, StreamFaultError,
                     TimeoutError as GTimeoutError, from_code)

if TYPE_CHECKING:
    import asyncio

_MASK = (1 << 64) - 1
_HALF = 1 << 63
# The main thread's blocking waits (Stream.wait, HostStream.drain) wait in slices of at
# most this many seconds, so that its signal handlers (Ctrl-C: KeyboardInterrupt) run
# between them: a wait in C retries EINTR itself, and Python runs a handler only once
# the call returns. Other threads never run handlers: they wait in one call.
_SLICE = 0.1
# A HostStream's kept stamps and callbacks are looked over by its enqueues once there
# are this many, then at twice what the last look left (HostStream._trim)
_TRIM_MIN = 64
_O = TypeVar("_O", bound="_Owned")


class Readiness(enum.IntEnum):
    """How garudad tells a stream's waiter that its word moved (enum garuda_readiness)."""
    POLL = 0
    EVENTFD = 1
    MESSAGE = 2
    DOORBELL = 3


def version() -> str:
    """libgaruda's version, "MAJOR.MINOR.PATCH"."""
    return _lib.load().garuda_version().decode()


def strerror(code: int) -> str:
    """libgaruda's text for a return value or code (either sign)."""
    return _lib.load().garuda_strerror(int(code)).decode()


def has_plans() -> bool:
    """True when the loaded libgaruda has garuda_stream_set_plan (Stream.set_plan)."""
    return _lib.has("garuda_stream_set_plan")


def reached(value: int, seq: int) -> bool:
    """Wrapping order of sequences: value has reached seq."""
    return ((value - seq) & _MASK) < _HALF


def _in_main_thread() -> bool:
    """True on the thread that runs Python's signal handlers."""
    return threading.current_thread() is threading.main_thread()


def _ns(seconds: Optional[float], what: str) -> int:
    if seconds is None:
        return -1
    if seconds < 0:
        raise ValueError(f"{what} must be >= 0 seconds or None")
    return int(seconds * 1e9)


class _ClosedHandle:
    """The class-level ``_as_parameter_`` of garuda's objects, found only when the
    object holds no handle (closed, or never opened): reading it raises ClosedError,
    so passing a closed object to a libgaruda call raises (see _lib._passing_closed)."""

    def __get__(self, obj: Optional[_Owned], cls: Any = None) -> Any:
        if obj is None:
            return self
        if obj.__dict__.get("_inherited"):
            raise ClosedError(what=f"{obj._kind} was inherited across fork(): it is the "
                              "parent's; make a new one in this process")
        raise ClosedError(what=f"{obj._kind} is closed")


def _quietly(free: Callable[..., None], *args: Any) -> None:
    """A collected object's free: nothing could catch its failure (a parent already
    gone, a faulted stream)."""
    try:
        free(*args)
    except Exception:
        pass


class _Owned:
    """Base: one libgaruda handle, passed to C as the object itself (ctypes reads
    ``_as_parameter_``, an instance attribute while the object is open) and freed once:
    by close(), or by a weakref.finalize when the object is collected. Objects still
    alive at interpreter exit are left to the process's exit (another thread may still
    be inside a call on them)."""
    _kind = "object"
    _as_parameter_: Any = _ClosedHandle()
    _lib: Any
    _finalizer: weakref.finalize

    def _own(self, lib: Any, h: Optional[int], free: Callable[..., None], *args: Any) -> None:
        """Hold handle h (the object stays closed if it is NULL); free(lib, h, *args)
        releases it when the object is collected. args are what free needs besides the
        object: never a garuda object or anything that may lead to one (the finalizer
        keeps them alive from a global registry, so a reference cycle through them
        would never be collected): weak sets, and a parent's finalizer, whose
        ``alive`` says whether the parent still holds its handle."""
        self._lib = lib
        if h is None:
            return
        self._as_parameter_ = h
        self._finalizer = weakref.finalize(self, _quietly, free, lib, h, *args)
        self._finalizer.atexit = False
        _live.add(self)

    def _forget(self) -> Optional[int]:
        """Let go of the handle without freeing it: returns it (None when closed
        already); the object is closed from here on."""
        h = self.__dict__.pop("_as_parameter_", None)
        if h is not None:
            self._finalizer.detach()
        return h

    @property
    def closed(self) -> bool:
        """True after close(); also, while the collector frees a reference cycle, for
        an object of the cycle whose free already ran (a client whose disconnect freed
        its segments and streams: theirs must not free them again)."""
        return "_as_parameter_" not in self.__dict__ or not self._finalizer.alive

    def close(self) -> None:
        raise NotImplementedError

    # Calls that block (Stream.wait, HostStream.drain) count themselves in _inflight,
    # under _calls; close() first sets _closing, then waits for them to return before
    # the free (a free under a thread still inside the C call was a use after free:
    # the interpreter crashed). A wait returns within a slice (_SLICE) and then sees
    # _closing: it raises ClosedError.
    _inflight = 0
    _closing = False

    def _enter(self) -> None:
        with _calls:
            if self._closing:
                raise ClosedError(what=f"{self._kind} closed while in use")
            self._as_parameter_  # closed (or inherited): raises ClosedError
            self._inflight += 1

    def _leave(self) -> None:
        with _calls:
            self._inflight -= 1
            if self._inflight == 0 and self._closing:
                _calls.notify_all()

    def _quiesce(self) -> None:
        """close()'s first step: no blocking call starts any more; wait for those that
        run to return (not from one of them: close() in a callback of its own wait
        cannot happen, libgaruda runs none there)."""
        with _calls:
            self._closing = True
            _calls.wait_for(lambda: self._inflight == 0)

    def __enter__(self: _O) -> _O:
        return self

    def __exit__(self, *exc: Any) -> Literal[False]:
        self.close()
        return False


# Every open object, for a fork()'s child to forget (_forget_inherited).
_live: "weakref.WeakSet[_Owned]" = weakref.WeakSet()
# Guards every object's _inflight and _closing (_Owned._enter); held only briefly.
_calls = threading.Condition()


def _forget_inherited() -> None:
    """In a fork()'s child: every object it inherited is the parent's (libgaruda's rule,
    docs/client.md: a child never uses them). Freeing one here would join the parent's
    I/O or host-stream thread, which the child does not have (a hang, from close() or
    from the garbage collector alike), or send a DISARM on the parent's connection. So
    each is closed here without being freed (ClosedError naming fork() on use); its
    memory and fds are the child's to leave to its exit. No lock is taken: another
    thread of the parent may have held one at the fork."""
    global _calls
    _calls = threading.Condition()  # another thread may have held it at the fork
    for o in list(_live):
        if o._forget() is not None:
            o.__dict__["_inherited"] = True
    _live.clear()


os.register_at_fork(after_in_child=_forget_inherited)


def _disconnect(lib: Any, h: int, segments: weakref.WeakSet, hosts: dict[int, weakref.finalize],
                lock: threading.RLock) -> None:
    try:
        for seg in list(segments):
            seg._close_tree()
        _settle(lib, hosts, lock)  # the collector may have emptied `segments` already
    finally:
        lib.garuda_disconnect(h)  # whatever failed above: the session must not outlive close()


class Client(_Owned):
    """One connection to garudad at `path`, or where libgaruda looks: $GARUDA_SOCKET
    when set, else your own garudad's $XDG_RUNTIME_DIR/garuda/garuda.sock when it exists
    (not as root), else the system's /run/garuda/garuda.sock (docs/python.md). The
    library reconnects in the background when garudad restarts.

    A failed connect raises with libgaruda's words (which socket, how it was chosen,
    what to do). A connect that succeeds with a coded warning (GARUDA_FALLBACK=reactor
    and no garudad: an in-process reactor stands in) issues a garuda.GarudaWarning."""
    _kind = "client"

    def __init__(self, path: Union[str, bytes, os.PathLike, None] = None) -> None:
        lib = _lib.load()
        self._segments: weakref.WeakSet[Segment] = weakref.WeakSet()
        # the host streams given stores into its segments (_settle); _lock guards it
        # and its segments' (threads share a client: _remember_host). Reentrant: the
        # collector may run a finalizer that takes it (_settle) on a thread holding it.
        self._hosts: dict[int, weakref.finalize] = {}
        self._lock = threading.RLock()
        h = c_void_p()
        if path is None:
            lib.garuda_connect(byref(h))
        else:
            lib.garuda_connect_to(os.fsencode(path), byref(h))
        self._own(lib, h.value, _disconnect, self._segments, self._hosts, self._lock)
        w = self.warning
        if w is not None:
            warnings.warn(GarudaWarning(*w), stacklevel=2)

    def close(self) -> None:
        """Close every segment and stream of this client, then disconnect."""
        with self._lock:
            h = self._forget()
        if h is not None:
            _disconnect(self._lib, h, self._segments, self._hosts, self._lock)

    @property
    def connected(self) -> bool:
        """True while the client has a session (False while it reconnects)."""
        return self._lib.garuda_client_connected(self) == 1

    @property
    def warning(self) -> Optional[tuple[int, str]]:
        """The client's coded warning as (code, text), or None: (1035, "requested:
        ...; unavailable: ...; running: ...") while a GARUDA_FALLBACK=reactor client
        runs without garudad (garuda_client_warning(); cleared when garudad is back)."""
        buf = ctypes.create_string_buffer(512)
        code = self._lib.garuda_client_warning(self, buf, len(buf))
        if code == 0:
            return None
        return code, buf.value.decode(errors="replace")

    @property
    def session(self) -> int:
        """garudad's session id for the current connection (0 while disconnected)."""
        return self._lib.garuda_client_session(self)

    @property
    def reconnects(self) -> int:
        """Successful reconnections since connect."""
        return self._lib.garuda_client_reconnects(self)

    def query(self) -> dict[str, Any]:
        """garudad's view of this client's own session, as a dict (docs/protocol.md
        §4.14: id, pid, uid, segments, bindings, armed, arms, completions, ...)."""
        buf = ctypes.create_string_buffer(4096)
        n = self._lib.garuda_client_query(self, buf, len(buf))
        return json.loads(buf.raw[:n].decode())

    def fileno(self) -> int:
        """An fd readable when dispatch() has callbacks to run (message form)."""
        return self._lib.garuda_client_fd(self)

    def dispatch(self) -> int:
        """Run pending callbacks of message-form streams; returns how many ran."""
        return self._lib.garuda_dispatch(self)

    def segment(self, backend: str = "host", device: int = 0, lines: int = 1) -> Segment:
        """Segment(self, backend, device, lines)."""
        return Segment(self, backend, device, lines)

    def __repr__(self) -> str:
        return f"<garuda.Client {'closed' if self.closed else 'session %d' % self.session}>"


def _remember_host(hosts: dict[int, weakref.finalize], hs: HostStream) -> None:
    """Note that hs was given stores into a segment (forgetting host streams freed).
    The caller holds the client's lock (threads share a client)."""
    for h in [h for h, fin in hosts.items() if not fin.alive]:
        del hosts[h]
    hosts[hs._as_parameter_] = hs._finalizer


def _settle(lib: Any, hosts: dict[int, weakref.finalize], lock: threading.RLock) -> None:
    """Wait for the host streams that stores into a segment were queued on, before its
    mapping goes: by handle ({handle: the host stream's finalizer}), since the collector
    clears the weak references of a whole cycle before it runs any free; a host stream
    whose free ran (finalizer no longer alive) let its items finish then. The dict is
    taken under the client's lock; the drains run without it."""
    with lock:
        items = list(hosts.items())
        hosts.clear()
    for h, fin in items:
        if fin.alive:
            try:
                lib.garuda_host_stream_drain(h)
            except Error:
                pass  # faulted: its remaining stores never happen


def _close_segment(lib: Any, h: int, client: weakref.finalize, streams: weakref.WeakSet,
                   hosts: dict[int, weakref.finalize], lock: threading.RLock) -> None:
    if not client.alive:
        return  # the client's disconnect freed it
    for st in list(streams):
        st.close()
    _settle(lib, hosts, lock)
    lib.garuda_segment_close(h)


class Segment(_Owned):
    """Shared memory of words for one backend device ("host", "cuda", "hip"):
    `lines` lines of 8 words; each stream uses one word."""
    _kind = "segment"

    def __init__(self, client: Client, backend: str = "host", device: int = 0,
                 lines: int = 1) -> None:
        if not isinstance(client, Client):
            raise TypeError("client must be a garuda.Client")
        self.client = client
        self.backend = backend
        self.device = device
        self._streams: weakref.WeakSet[Stream] = weakref.WeakSet()
        # host streams that were given stores into this segment: their queued stores
        # must land before the mapping goes (libgaruda unmaps on close); by handle, as
        # the collector's free needs them (_settle)
        self._hosts: dict[int, weakref.finalize] = {}
        h = c_void_p()
        client._lib.garuda_segment_open(client, backend.encode(), int(device), int(lines),
                                        byref(h))
        self._own(client._lib, h.value, _close_segment, client._finalizer, self._streams,
                  self._hosts, client._lock)
        client._segments.add(self)

    def _close_tree(self) -> None:
        for s in list(self._streams):
            s.close()
        _settle(self._lib, self._hosts, self.client._lock)
        self._forget()  # the client's disconnect frees it

    def close(self) -> None:
        """Close the segment's open streams, wait for the host streams that stores into
        it were queued on (a store into an unmapped segment would fault; GPU streams'
        stores must have landed before this), then close the segment."""
        if self.closed:
            return
        # raises (BusyError...) with the segment still open
        _close_segment(self._lib, self._as_parameter_, self.client._finalizer, self._streams,
                       self._hosts, self.client._lock)
        self._forget()
        self.client._segments.discard(self)

    @property
    def numa_node(self) -> int:
        return self._lib.garuda_segment_numa_node(self)

    @property
    def free_words(self) -> int:
        return self._lib.garuda_segment_free_words(self)

    def stream(self, native: Native = None, form: Readiness = Readiness.EVENTFD) -> Stream:
        """Stream(self, native, form)."""
        return Stream(self, native, form)

    def __repr__(self) -> str:
        return f"<garuda.Segment {self.backend}:{self.device}{' closed' if self.closed else ''}>"


def _free_host_stream(lib: Any, h: int) -> None:
    lib.garuda_host_stream_free(h)


class HostStream(_Owned):
    """A host stream: the CPU standing in for a GPU stream (one worker thread running a
    FIFO of items in order). Pass it as `native` to a stream on a "host" segment."""
    _kind = "host stream"

    def __init__(self, depth: int = 0, spin: float = 0.0, nonblock: bool = False) -> None:
        lib = _lib.load()
        cfg = _lib.HostStreamConfig(int(depth), int(spin * 1e9), 1 if nonblock else 0)
        # The stamps and callbacks the worker may still touch, as (index, floor,
        # object, is a stamp), in index order: index counts the kept objects (given
        # once the enqueue returned), floor is how many were kept when its enqueue
        # began (each one below was queued before it). What the worker has finished
        # is dropped (_drop_finished, _trim): every kept object below `index` when a
        # query or drain then found the stream idle or faulted (a faulted stream runs
        # nothing more), and every one below the floor of a stamp that holds a time or
        # of a callback that started (the FIFO ran all before it).
        self._keep: deque[tuple[int, int, Any, bool]] = deque()
        self._kept = 0  # indices given
        self._started = [0]  # the largest floor of a callback that started (worker)
        self._keep_lock = threading.Lock()  # never held across a call that blocks
        self._trim_at = _TRIM_MIN  # _keep's length that has enqueues look for progress
        self._users: weakref.WeakSet[Stream] = weakref.WeakSet()
        h = c_void_p()
        lib.garuda_host_stream_new(byref(cfg), byref(h))
        # collected: its _keep lives until the free has run (the collector frees an
        # object's attributes after calling its finalizer)
        self._own(lib, h.value, _free_host_stream)

    def close(self) -> None:
        """Let queued items finish, stop the worker, free. BusyError while garuda
        streams use it."""
        if self.closed:
            return
        if any(not s.closed for s in self._users):
            raise BusyError(what="host stream still used by garuda streams")
        self._quiesce()  # drains in other threads end with the items close waits for
        h = self._forget()
        if h is not None:
            _free_host_stream(self._lib, h)
            self._keep.clear()  # only now: the worker no longer touches them

    def enqueue_work(self, seconds: float) -> None:
        """A simulated kernel that keeps the stream busy for `seconds`."""
        self._lib.garuda_host_stream_enqueue_work(self, int(seconds * 1e9))

    def enqueue_fault(self) -> None:
        """A failed context: later items never run, later enqueues fail."""
        self._lib.garuda_host_stream_enqueue_fault(self)

    def enqueue_stamp(self) -> c_uint64:
        """Returns a ctypes c_uint64 that gets the monotonic time (ns) when the worker
        reaches this item (0 until then)."""
        cell = c_uint64(0)
        floor = self._kept
        self._lib.garuda_host_stream_enqueue_stamp(self, byref(cell))
        self._hold(cell, floor, True)
        return cell

    def enqueue_call(self, fn: Callable[[], object]) -> None:
        """Call fn() on the worker thread when it reaches this item."""
        started = self._started  # not self: no cycle through the callback
        floor = self._kept

        def tramp(_arg: Any) -> None:
            if floor > started[0]:  # only the worker writes it, in FIFO order
                started[0] = floor
            fn()
        cb = _lib.HOST_CALL(tramp)
        self._lib.garuda_host_stream_enqueue_call(self, cb, None)
        self._hold(cb, floor, False)

    def _hold(self, obj: Any, floor: int, stamp: bool) -> None:
        """Keep obj, just queued, while the worker may touch it; now and then (at
        twice the length left by the last look) drop what it finished."""
        with self._keep_lock:
            self._keep.append((self._kept, floor, obj, stamp))
            self._kept += 1
            due = len(self._keep) >= self._trim_at
        if due:
            self._trim()

    def _drop_finished(self, below: int) -> None:
        """Drop the kept objects of index < below (the worker finished them)."""
        with self._keep_lock:
            keep = self._keep
            while keep and keep[0][0] < below:
                keep.popleft()

    def _trim(self) -> None:
        """Drop what the worker finished: all kept before an idle or faulted query,
        else everything below the floor of a stamp that holds a time or of a callback
        that started."""
        mark = self._kept
        try:
            idle = self._lib.garuda_host_stream_query(self) != -errno.EAGAIN
        except Error:  # faulted: nothing queued will ever run
            idle = True
        with self._keep_lock:
            keep = self._keep
            below = mark if idle else self._started[0]
            if not idle:
                for _, floor, obj, stamp in keep:
                    if stamp and floor > below and obj.value:
                        below = floor
            while keep and keep[0][0] < below:
                keep.popleft()
            self._trim_at = max(_TRIM_MIN, 2 * len(keep))

    def query(self) -> bool:
        """True when every item so far finished, False while some run; raises
        StreamFaultError on a faulted stream."""
        mark = self._kept
        try:
            idle = self._lib.garuda_host_stream_query(self) != -errno.EAGAIN
        except StreamFaultError:
            self._drop_finished(mark)
            raise
        if idle:
            self._drop_finished(mark)
        return idle

    def drain(self) -> None:
        """Block until every item so far finished (raises StreamFaultError). In the main
        thread it waits in slices of 0.1 s, so that Ctrl-C (KeyboardInterrupt) and other
        signal handlers run between them."""
        mark = self._kept
        self._enter()  # a close() meanwhile frees only after this returns
        try:
            if _in_main_thread():
                self._drain_in_slices()
            else:
                self._lib.garuda_host_stream_drain(self)
        except StreamFaultError:
            self._drop_finished(mark)
            raise
        finally:
            self._leave()
        self._drop_finished(mark)

    def _busy(self) -> bool:
        """Items still run; a faulted stream raises drain's own StreamFaultError."""
        try:
            return self._lib.garuda_host_stream_query(self) == -errno.EAGAIN
        except StreamFaultError:
            self._lib.garuda_host_stream_drain(self)  # faulted: raises at once
            raise

    def _drain_in_slices(self) -> None:
        """drain() as waits of at most _SLICE: queue a callback that sets an event
        and wait for it (every item before it finished), asking between slices whether
        the stream faulted (the callback then never runs)."""
        if not self._busy():
            return
        done = threading.Event()
        while True:
            try:
                self.enqueue_call(done.set)
                break
            except StreamFaultError:
                self._lib.garuda_host_stream_drain(self)  # faulted: raises drain's error
                raise
            except Error as e:
                if e.code != errno.EAGAIN:
                    raise
            # a full FIFO (nonblock): look again a little later
            if not self._busy():
                return
            time.sleep(0.001)
        while not done.wait(_SLICE):
            if not self._busy():
                return
        # the marker ran, but its item is finished only once the callback returned:
        # the C drain for that last step (a query right after would still say busy)
        self._lib.garuda_host_stream_drain(self)


class CudaStreamLike(Protocol):
    """Anything with an int ``cuda_stream`` (torch.cuda.Stream)."""
    @property
    def cuda_stream(self) -> int: ...


# what a stream is signalled through (see _native_pointer)
Native = Union[None, HostStream, int, CudaStreamLike]


def _native_pointer(native: Native) -> Union[None, int, HostStream]:
    """The `native` argument of garuda_stream_new: None, a HostStream (passed as
    itself: its handle, or ClosedError), an int handle (CUstream, hipStream_t), or an
    object with .cuda_stream (torch.cuda.Stream)."""
    if native is None or isinstance(native, (HostStream, int)):
        return native
    cs = getattr(native, "cuda_stream", None)
    if isinstance(cs, int):
        return cs
    raise TypeError("native must be None, a garuda.HostStream, an int stream handle or an "
                    "object with an int .cuda_stream")


def _free_stream(lib: Any, h: int, client: weakref.finalize) -> None:
    if client.alive:  # else the client's disconnect freed it
        lib.garuda_stream_free(h)


class Stream(_Owned):
    """One word of `segment`, signalled through `native` (see _native_pointer; None on a
    "host" segment: signal() stores at once, from the calling thread)."""
    _kind = "stream"
    async_backstop: Optional[float] = 0.25

    def __init__(self, segment: Segment, native: Native = None,
                 form: Readiness = Readiness.EVENTFD) -> None:
        if not isinstance(segment, Segment):
            raise TypeError("segment must be a garuda.Segment")
        form = Readiness(form)
        self.segment = segment
        self.native = native
        self.form = form
        self._cb: Optional[Any] = None
        self._waiters: Optional[_Waiters] = None
        self._seq = c_uint64(0)
        h = c_void_p()
        segment._lib.garuda_stream_new(segment, _native_pointer(native), int(form),
                                       byref(h))
        self._own(segment._lib, h.value, _free_stream, segment.client._finalizer)
        segment._streams.add(self)
        if isinstance(native, HostStream):
            native._users.add(self)
            with segment.client._lock:  # other threads make streams on this client too
                _remember_host(segment._hosts, native)
                _remember_host(segment.client._hosts, native)

    def close(self) -> None:
        """Fail pending async awaits with ClosedError (removing the loop reader),
        disarm, unbind, close the eventfd, give the word back."""
        if self.closed:
            return
        self._quiesce()  # threads in wait() see ClosedError within a slice
        w, self._waiters = self._waiters, None
        try:
            if w is not None:
                w.fail_all(ClosedError(what="stream closed while awaited"))
        finally:  # the stream is freed whatever the awaits' loop did
            h = self._forget()
            if h is not None:
                self.segment._streams.discard(self)
                _free_stream(self._lib, h, self.segment.client._finalizer)
                self._cb = None

    # --- the word ----------------------------------------------------------------
    def signal(self) -> int:
        """Enqueue the store of the next sequence behind the native stream's queued
        work and arm it; returns the sequence."""
        self._lib.garuda_stream_signal(self, byref(self._seq))
        return self._seq.value

    @property
    def last(self) -> int:
        """The sequence the last signal() returned (0 before the first)."""
        return self._lib.garuda_stream_last(self)

    @property
    def value(self) -> int:
        """The word now: every sequence up to it has completed."""
        return self._lib.garuda_stream_value(self)

    def reached(self, seq: int) -> bool:
        """True when the word has reached seq."""
        return bool(self._lib.garuda_stream_reached(self, int(seq)))

    def wait(self, seq: Optional[int] = None, timeout: Optional[float] = None) -> None:
        """Block until the word reaches seq (default: the last signalled); raises
        garuda.TimeoutError, StreamFaultError, and ClosedError when another thread
        closes the stream (or its segment or client) meanwhile. timeout 0 only checks.
        A wait longer than 0.1 s waits in slices of 0.1 s: in the main thread Ctrl-C
        (KeyboardInterrupt) and other signal handlers run between them, and in any
        thread a close() from another thread is seen there."""
        if seq is None:
            seq = self._lib.garuda_stream_last(self)
        seq = int(seq)
        ns = _ns(timeout, "timeout")
        wait = self._lib.garuda_stream_wait
        self._enter()
        try:
            if timeout is not None and timeout <= _SLICE:
                wait(self, seq, ns)
                return
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= _SLICE:  # the last slice: its TimeoutError is the wait's
                        wait(self, seq, max(0, int(left * 1e9)))
                        return
                try:
                    wait(self, seq, int(_SLICE * 1e9))
                    return
                except GTimeoutError:
                    pass  # a slice ran out: signal handlers run here, then the next slice
                if self._closing:
                    raise ClosedError(what="stream closed while waited on")
        finally:
            self._leave()

    def synchronize(self, timeout: Optional[float] = None) -> int:
        """signal() then wait() for that sequence; returns it."""
        seq = self.signal()
        self.wait(seq, timeout)
        return seq

    def fileno(self) -> int:
        """The stream's eventfd (EVENTFD form), owned by the stream."""
        return self._lib.garuda_stream_fd(self)

    def drain(self) -> tuple[bool, int]:
        """Clear the eventfd; returns (moved, value): moved is True when the word moved
        since the previous drain."""
        v = c_uint64(0)
        rc = self._lib.garuda_stream_drain(self, byref(v))
        return rc == 1, v.value

    def query(self) -> bool:
        """Ask the native stream: True all queued work done, False running; raises
        StreamFaultError."""
        return self._lib.garuda_stream_query(self) != -errno.EAGAIN

    def set_wait(self, spin: float = 20e-6, backstop: float = 1e-3) -> None:
        """The blocking wait's plan: spin `spin` seconds, then block, querying the
        native stream every `backstop` seconds (at least 10 us)."""
        self._lib.garuda_stream_set_wait(self, int(spin * 1e9), int(backstop * 1e9))

    def set_plan(self, text: str) -> None:
        """The wait plan as text ("block", "poll", "flag:park_us=N,backstop_us=N"...).
        Needs a libgaruda with garuda_stream_set_plan (garuda.has_plans()); with an
        older one, NotImplementedError. A bad plan raises BadPlanError."""
        self._as_parameter_  # a closed stream raises ClosedError first
        if not _lib.has("garuda_stream_set_plan"):
            raise NotImplementedError("garuda: this libgaruda has no garuda_stream_set_plan")
        # a NUL would end the C string: "poll\0junk" taken for "poll"
        if "\0" in text:
            raise from_code(BadPlanError.code, what="garuda_stream_set_plan",
                            detail="the plan text holds a NUL character")
        # a refusal's detail is the offending key, as libgaruda words it
        # (garuda_plan_message(): "window: 17 exceeds 16")
        self._lib.garuda_stream_set_plan(self, text.encode())

    @property
    def plan(self) -> str:
        """The wait plan's text as libgaruda prints it back (garuda_stream_get_plan)."""
        self._as_parameter_  # a closed stream raises ClosedError first
        if not _lib.has("garuda_stream_get_plan"):
            raise NotImplementedError("garuda: this libgaruda has no garuda_stream_get_plan")
        buf = ctypes.create_string_buffer(192)
        n = self._lib.garuda_stream_get_plan(self, buf, len(buf))
        return buf.raw[:n].decode()

    def set_callback(self, fn: Optional[Callable[[Stream, int], object]]) -> None:
        """MESSAGE form: fn(stream, seq) runs inside client.dispatch() when the word
        advanced (every sequence up to seq completed). None removes it."""
        if fn is None:
            cb = ctypes.cast(None, _lib.STREAM_CB)  # type: ignore[arg-type]
        else:
            ref = weakref.ref(self)
            call = fn

            def tramp(_s: Any, seq: int, _user: Any) -> None:
                me = ref()
                if me is not None:
                    call(me, seq)
            cb = _lib.STREAM_CB(tramp)
        self._lib.garuda_stream_set_callback(self, cb, None)
        self._cb = cb if fn is not None else None

    # --- asyncio -------------------------------------------------------------------
    async def wait_async(self, seq: Optional[int] = None,
                         timeout: Optional[float] = None) -> None:
        """Await the word reaching seq (default: the last signalled) in the running
        event loop (asyncio or uvloop), through the stream's eventfd. Raises
        garuda.TimeoutError, StreamFaultError, ClosedError. Cancelling the await leaves
        no reader in the loop."""
        import asyncio
        last = self._lib.garuda_stream_last(self)
        if seq is None:
            seq = last
        seq = int(seq)
        if seq == 0 or not reached(last, seq):
            raise from_code(errno.EINVAL, f"wait_async: sequence {seq} was not signalled")
        if self._lib.garuda_stream_reached(self, seq):
            return
        # wait_async reads the stream's fd: libgaruda's form table says which forms have
        # one (EVENTFD); the others raise EOPNOTSUPP here
        self.fileno()
        loop = asyncio.get_running_loop()
        w = self._waiters
        if w is None or w.loop is not loop:
            if w is not None and w.live:
                if not w.loop.is_closed():
                    raise RuntimeError("garuda: this stream has awaits pending in another loop")
                # that loop was closed with awaits pending: they can never complete
                w.fail_all(ClosedError(what="event loop closed while awaited"))
            w = self._waiters = _Waiters(self, loop)
        fut = loop.create_future()
        entry = w.add(seq, fut)
        timer = None
        if timeout is not None:
            timer = loop.call_later(max(0.0, timeout), _expire, fut, seq)
        try:
            await fut
        finally:
            if timer is not None and not loop.is_closed():
                timer.cancel()
            w.remove(entry)

    async def synchronize_async(self, timeout: Optional[float] = None) -> int:
        """signal() then await that sequence; returns it."""
        seq = self.signal()
        await self.wait_async(seq, timeout)
        return seq

    def __repr__(self) -> str:
        if self.closed:
            return "<garuda.Stream closed>"
        return f"<garuda.Stream {self.form.name} last={self.last} value={self.value}>"


def _expire(fut: asyncio.Future, seq: int) -> None:
    if not fut.done():
        fut.set_exception(GTimeoutError(what=f"wait_async({seq})"))


@dataclass(eq=False)
class _Await:
    """One wait_async in a stream's heap: its future, and whether it still counts as
    pending (an await that completed, failed or went away stays in the heap until it
    reaches the top)."""
    fut: asyncio.Future
    pending: bool = True


class _Waiters:
    """The pending awaits of one stream in one loop: a heap of (seq, n, _Await) — n
    keeps equal sequences in arrival order —, one reader on the eventfd while any is
    pending, one backstop timer while any is pending."""

    def __init__(self, stream: Stream, loop: asyncio.AbstractEventLoop) -> None:
        self.stream = weakref.ref(stream)  # no cycle: a dropped stream is freed at once
        self.loop = loop
        self.lib = stream._lib
        self.h = stream._as_parameter_
        self.fd = stream.fileno()
        self.heap: list[tuple[int, int, _Await]] = []
        self.live = 0
        self.n = 0
        self.reading = False
        self.backstop: Optional[asyncio.TimerHandle] = None
        self.v = c_uint64(0)

    def add(self, seq: int, fut: asyncio.Future) -> _Await:
        self.n += 1
        entry = _Await(fut)
        heapq.heappush(self.heap, (seq, self.n, entry))
        self.live += 1
        if not self.reading:
            self.loop.add_reader(self.fd, self.on_ready)
            self.reading = True
            self.arm_backstop()
        return entry

    def remove(self, entry: _Await) -> None:
        if entry.pending:
            entry.pending = False
            self.live -= 1
            if self.live == 0:
                self.stop()

    def stop(self) -> None:
        if not self.loop.is_closed():  # a closed loop dropped its readers and timers
            if self.reading:
                self.loop.remove_reader(self.fd)
            if self.backstop is not None:
                self.backstop.cancel()
        self.reading = False
        self.backstop = None
        self.heap.clear()

    def arm_backstop(self) -> None:
        s = self.stream()
        interval = s.async_backstop if s is not None else None
        if interval is not None and self.backstop is None:
            self.backstop = self.loop.call_later(interval, self.on_backstop)

    def on_ready(self) -> None:
        try:
            self.lib.garuda_stream_drain(self.h, byref(self.v))
        except Error as e:
            # a failed drain wrote the word first (STREAM_FAULT: docs/client.md): a
            # store that landed before the fault still completes its awaits
            self.resolve(self.v.value)
            self.fail_all(e)
            return
        self.resolve(self.v.value)

    def on_backstop(self) -> None:
        self.backstop = None
        value = self.lib.garuda_stream_value(self.h)
        self.resolve(value)
        if not self.live:
            return
        try:
            self.lib.garuda_stream_query(self.h)  # 0 or -EAGAIN: fine
        except Error as e:
            # the native stream failed: the stores will never come. Re-read first: a
            # store that landed before the fault still completes its awaits.
            self.resolve(self.lib.garuda_stream_value(self.h))
            self.fail_all(e)
            return
        self.arm_backstop()

    def resolve(self, value: int) -> None:
        heap = self.heap
        while heap:
            seq, _, a = heap[0]
            if a.pending and not reached(value, seq):
                break
            heapq.heappop(heap)
            if a.pending:
                a.pending = False
                self.live -= 1
                if not a.fut.done():
                    a.fut.set_result(None)
        if self.live == 0:
            self.stop()

    def fail_all(self, exc: BaseException) -> None:
        # a closed loop's futures take no result (set_exception would raise "Event loop
        # is closed"): nothing will ever run their tasks; the awaits are dropped
        closed = self.loop.is_closed()
        for _, _, a in self.heap:
            if a.pending:
                a.pending = False
                if not closed and not a.fut.done():
                    a.fut.set_exception(exc)
        self.live = 0
        self.stop()
