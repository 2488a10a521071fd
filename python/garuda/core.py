"""core.py — Client, Segment, Stream and HostStream over libgaruda.

Promises:
 - Every object owns exactly one libgaruda object and frees it once: on close(), on
   leaving its ``with`` block, or when it is garbage-collected (a Stream frees its
   garuda stream and so closes its eventfd; a Client disconnects and so closes its
   socket). Children keep their parents alive (Stream -> Segment -> Client, Stream ->
   HostStream), so collection frees children first. Closing a parent closes its
   children first; a closed object raises garuda.ClosedError.
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
   with StreamFaultError instead of hanging) and re-reads the word.

Threads follow libgaruda's rules (docs/client.md): a Client may be shared by threads;
one Stream is signalled, waited on and drained by one thread at a time; value and
reached() from anywhere. Close an object from one thread while nothing else uses it.
A stream's async awaits belong to one event loop at a time.
"""
import ctypes
import enum
import heapq
import json
import os
import threading
import warnings
import weakref
from ctypes import byref, c_uint64, c_void_p

from . import _lib
from .errors import (ClosedError, Error, GarudaWarning, TimeoutError as GTimeoutError,
                     from_code)

_MASK = (1 << 64) - 1
_HALF = 1 << 63
_EVENTFD_FORM = 1


class Readiness(enum.IntEnum):
    """How garudad tells a stream's waiter that its word moved (enum garuda_readiness)."""
    POLL = 0
    EVENTFD = 1
    MESSAGE = 2
    DOORBELL = 3


def version():
    """libgaruda's version, "MAJOR.MINOR.PATCH"."""
    return _lib.load().garuda_version().decode()


def strerror(code):
    """libgaruda's text for a return value or code (either sign)."""
    return _lib.load().garuda_strerror(int(code)).decode()


def has_plans():
    """True when the loaded libgaruda has garuda_stream_set_plan (Stream.set_plan)."""
    return _lib.has("garuda_stream_set_plan")


def reached(value, seq):
    """Wrapping order of sequences: value has reached seq."""
    return ((value - seq) & _MASK) < _HALF


def _ns(seconds, what):
    if seconds is None:
        return -1
    if seconds < 0:
        raise ValueError(f"{what} must be >= 0 seconds or None")
    return int(seconds * 1e9)


class _Owned:
    """Base: one libgaruda handle, freed once."""
    _h = None
    _kind = "object"

    def _handle(self):
        h = self._h
        if h is None:
            raise ClosedError(what=f"{self._kind} is closed")
        return h

    @property
    def closed(self):
        return self._h is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            if self._h is not None:
                self.close()
        except Exception:
            pass  # interpreter shutdown, or a parent already gone


class Client(_Owned):
    """One connection to garudad: $GARUDA_SOCKET (default /run/garuda/garuda.sock), or
    `path`. The library reconnects in the background when garudad restarts.

    A failed connect raises with libgaruda's words (which socket, how it was chosen,
    what to do). A connect that succeeds with a coded warning (GARUDA_FALLBACK=reactor
    and no garudad: an in-process reactor stands in) issues a garuda.GarudaWarning."""
    _kind = "client"

    def __init__(self, path=None):
        lib = _lib.load()
        h = c_void_p()
        if path is None:
            lib.garuda_connect(byref(h))
        else:
            lib.garuda_connect_to(os.fsencode(path), byref(h))
        self._h = h.value
        self._lib = lib
        self._segments = weakref.WeakSet()
        self._lock = threading.Lock()
        w = self.warning
        if w is not None:
            warnings.warn(GarudaWarning(*w), stacklevel=2)

    def close(self):
        """Close every segment and stream of this client, then disconnect."""
        with self._lock:
            h, self._h = self._h, None
            segs = list(self._segments)
        if h is None:
            return
        for seg in segs:
            seg._close_tree()
        self._lib.garuda_disconnect(h)

    @property
    def connected(self):
        """True while the client has a session (False while it reconnects)."""
        return self._lib.garuda_client_connected(self._handle()) == 1

    @property
    def warning(self):
        """The client's coded warning as (code, text), or None: (1035, "requested:
        ...; unavailable: ...; running: ...") while a GARUDA_FALLBACK=reactor client
        runs without garudad (garuda_client_warning(); cleared when garudad is back)."""
        buf = ctypes.create_string_buffer(512)
        code = self._lib.garuda_client_warning(self._handle(), buf, len(buf))
        if code == 0:
            return None
        return code, buf.value.decode(errors="replace")

    @property
    def session(self):
        """garudad's session id for the current connection (0 while disconnected)."""
        return self._lib.garuda_client_session(self._handle())

    @property
    def reconnects(self):
        """Successful reconnections since connect."""
        return self._lib.garuda_client_reconnects(self._handle())

    def query(self):
        """garudad's view of this client's own session, as a dict (docs/protocol.md
        §4.14: id, pid, uid, segments, bindings, armed, arms, completions, ...)."""
        buf = ctypes.create_string_buffer(4096)
        n = self._lib.garuda_client_query(self._handle(), buf, len(buf))
        return json.loads(buf.raw[:n].decode())

    def fileno(self):
        """An fd readable when dispatch() has callbacks to run (message form)."""
        return self._lib.garuda_client_fd(self._handle())

    def dispatch(self):
        """Run pending callbacks of message-form streams; returns how many ran."""
        return self._lib.garuda_dispatch(self._handle())

    def segment(self, backend="host", device=0, lines=1):
        """Segment(self, backend, device, lines)."""
        return Segment(self, backend, device, lines)

    def __repr__(self):
        return f"<garuda.Client {'closed' if self._h is None else 'session %d' % self.session}>"


class Segment(_Owned):
    """Shared memory of words for one backend device ("host", "cuda", "hip"):
    `lines` lines of 8 words; each stream uses one word."""
    _kind = "segment"

    def __init__(self, client, backend="host", device=0, lines=1):
        if not isinstance(client, Client):
            raise TypeError("client must be a garuda.Client")
        ch = client._handle()
        h = c_void_p()
        client._lib.garuda_segment_open(ch, backend.encode(), int(device), int(lines),
                                        byref(h))
        self._h = h.value
        self._lib = client._lib
        self.client = client
        self.backend = backend
        self.device = device
        self._streams = weakref.WeakSet()
        # host streams that were given stores into this segment: their queued stores
        # must land before the mapping goes (libgaruda unmaps on close)
        self._hosts = set()
        client._segments.add(self)

    def _close_tree(self):
        for s in list(self._streams):
            s.close()
        self._settle_hosts()
        self._h = None  # the client's disconnect frees it

    def _settle_hosts(self):
        for hs in self._hosts:
            if hs._h is not None:
                try:
                    hs.drain()
                except Error:
                    pass  # faulted: its remaining stores never happen
        self._hosts.clear()

    def close(self):
        """Close the segment's open streams, wait for the host streams that stores into
        it were queued on (a store into an unmapped segment would fault; GPU streams'
        stores must have landed before this), then close the segment."""
        h = self._h
        if h is None:
            return
        if self.client._h is None:  # the client's disconnect freed it
            self._h = None
            return
        for st in list(self._streams):
            st.close()
        self._settle_hosts()
        self._lib.garuda_segment_close(h)
        self._h = None
        self.client._segments.discard(self)

    @property
    def numa_node(self):
        return self._lib.garuda_segment_numa_node(self._handle())

    @property
    def free_words(self):
        return self._lib.garuda_segment_free_words(self._handle())

    def stream(self, native=None, form=Readiness.EVENTFD):
        """Stream(self, native, form)."""
        return Stream(self, native, form)

    def __repr__(self):
        return f"<garuda.Segment {self.backend}:{self.device}{' closed' if self._h is None else ''}>"


class HostStream(_Owned):
    """A host stream: the CPU standing in for a GPU stream (one worker thread running a
    FIFO of items in order). Pass it as `native` to a stream on a "host" segment."""
    _kind = "host stream"

    def __init__(self, depth=0, spin=0.0, nonblock=False):
        lib = _lib.load()
        cfg = _lib.HostStreamConfig(int(depth), int(spin * 1e9), 1 if nonblock else 0)
        h = c_void_p()
        lib.garuda_host_stream_new(byref(cfg), byref(h))
        self._h = h.value
        self._lib = lib
        self._keep = []  # stamps and callbacks the worker may still touch
        self._users = weakref.WeakSet()

    def close(self):
        """Let queued items finish, stop the worker, free. BusyError while garuda
        streams use it."""
        if self._h is None:
            return
        if any(not s.closed for s in self._users):
            raise from_code(1033, "host stream still used by garuda streams")
        h, self._h = self._h, None
        self._lib.garuda_host_stream_free(h)
        self._keep.clear()

    def enqueue_work(self, seconds):
        """A simulated kernel that keeps the stream busy for `seconds`."""
        self._lib.garuda_host_stream_enqueue_work(self._handle(), int(seconds * 1e9))

    def enqueue_fault(self):
        """A failed context: later items never run, later enqueues fail."""
        self._lib.garuda_host_stream_enqueue_fault(self._handle())

    def enqueue_stamp(self):
        """Returns a ctypes c_uint64 that gets the monotonic time (ns) when the worker
        reaches this item (0 until then)."""
        cell = c_uint64(0)
        self._lib.garuda_host_stream_enqueue_stamp(self._handle(), byref(cell))
        self._keep.append(cell)
        return cell

    def enqueue_call(self, fn):
        """Call fn() on the worker thread when it reaches this item."""
        def tramp(_arg):
            fn()
        cb = _lib.HOST_CALL(tramp)
        self._lib.garuda_host_stream_enqueue_call(self._handle(), cb, None)
        self._keep.append(cb)

    def query(self):
        """True when every item so far finished, False while some run; raises
        StreamFaultError on a faulted stream."""
        return self._lib.garuda_host_stream_query(self._handle()) != -_lib.EAGAIN

    def drain(self):
        """Block until every item so far finished (raises StreamFaultError)."""
        self._lib.garuda_host_stream_drain(self._handle())


def _native_pointer(native):
    """The `native` argument of garuda_stream_new: None, a HostStream, an int handle
    (CUstream, hipStream_t), or an object with .cuda_stream (torch.cuda.Stream)."""
    if native is None:
        return None
    if isinstance(native, HostStream):
        return native._handle()
    if isinstance(native, int):
        return native
    cs = getattr(native, "cuda_stream", None)
    if isinstance(cs, int):
        return cs
    raise TypeError("native must be None, a garuda.HostStream, an int stream handle or an "
                    "object with an int .cuda_stream")


class Stream(_Owned):
    """One word of `segment`, signalled through `native` (see _native_pointer; None on a
    "host" segment: signal() stores at once, from the calling thread)."""
    _kind = "stream"
    async_backstop = 0.25

    def __init__(self, segment, native=None, form=Readiness.EVENTFD):
        if not isinstance(segment, Segment):
            raise TypeError("segment must be a garuda.Segment")
        form = Readiness(form)
        sh = segment._handle()
        h = c_void_p()
        segment._lib.garuda_stream_new(sh, _native_pointer(native), int(form), byref(h))
        self._h = h.value
        self._lib = segment._lib
        self.segment = segment
        self.native = native
        self.form = form
        self._cb = None
        self._waiters = None
        self._seq = c_uint64(0)
        segment._streams.add(self)
        if isinstance(native, HostStream):
            native._users.add(self)
            segment._hosts.add(native)

    def close(self):
        """Fail pending async awaits with ClosedError (removing the loop reader),
        disarm, unbind, close the eventfd, give the word back."""
        h = self._h
        if h is None:
            return
        w, self._waiters = self._waiters, None
        if w is not None:
            w.fail_all(ClosedError(what="stream closed while awaited"))
        self._h = None
        self.segment._streams.discard(self)
        if self.segment.client._h is not None:  # else the client's disconnect freed it
            self._lib.garuda_stream_free(h)
        self._cb = None

    # --- the word ----------------------------------------------------------------
    def signal(self):
        """Enqueue the store of the next sequence behind the native stream's queued
        work and arm it; returns the sequence."""
        self._lib.garuda_stream_signal(self._handle(), byref(self._seq))
        return self._seq.value

    @property
    def last(self):
        """The sequence the last signal() returned (0 before the first)."""
        return self._lib.garuda_stream_last(self._handle())

    @property
    def value(self):
        """The word now: every sequence up to it has completed."""
        return self._lib.garuda_stream_value(self._handle())

    def reached(self, seq):
        """True when the word has reached seq."""
        return bool(self._lib.garuda_stream_reached(self._handle(), int(seq)))

    def wait(self, seq=None, timeout=None):
        """Block until the word reaches seq (default: the last signalled); raises
        garuda.TimeoutError, StreamFaultError. timeout 0 only checks."""
        h = self._handle()
        if seq is None:
            seq = self._lib.garuda_stream_last(h)
        self._lib.garuda_stream_wait(h, int(seq), _ns(timeout, "timeout"))

    def synchronize(self, timeout=None):
        """signal() then wait() for that sequence; returns it."""
        seq = self.signal()
        self.wait(seq, timeout)
        return seq

    def fileno(self):
        """The stream's eventfd (EVENTFD form), owned by the stream."""
        return self._lib.garuda_stream_fd(self._handle())

    def drain(self):
        """Clear the eventfd; returns (moved, value): moved is True when the word moved
        since the previous drain."""
        v = c_uint64(0)
        rc = self._lib.garuda_stream_drain(self._handle(), byref(v))
        return rc == 1, v.value

    def query(self):
        """Ask the native stream: True all queued work done, False running; raises
        StreamFaultError."""
        return self._lib.garuda_stream_query(self._handle()) != -_lib.EAGAIN

    def set_wait(self, spin=20e-6, backstop=1e-3):
        """The blocking wait's plan: spin `spin` seconds, then block, querying the
        native stream every `backstop` seconds (at least 10 us)."""
        self._lib.garuda_stream_set_wait(self._handle(), int(spin * 1e9), int(backstop * 1e9))

    def set_plan(self, text):
        """The wait plan as text ("block", "poll", "flag:park_us=N,backstop_us=N"...).
        Needs a libgaruda with garuda_stream_set_plan (garuda.has_plans()); with an
        older one, NotImplementedError. A bad plan raises BadPlanError."""
        h = self._handle()
        if not _lib.has("garuda_stream_set_plan"):
            raise NotImplementedError("garuda: this libgaruda has no garuda_stream_set_plan")
        # a refusal's detail is the offending key, as libgaruda words it
        # (garuda_plan_message(): "window: 17 exceeds 16")
        self._lib.garuda_stream_set_plan(h, text.encode())

    @property
    def plan(self):
        """The wait plan's text as libgaruda prints it back (garuda_stream_get_plan)."""
        h = self._handle()
        if not _lib.has("garuda_stream_get_plan"):
            raise NotImplementedError("garuda: this libgaruda has no garuda_stream_get_plan")
        buf = ctypes.create_string_buffer(192)
        n = self._lib.garuda_stream_get_plan(h, buf, len(buf))
        return buf.raw[:n].decode()

    def set_callback(self, fn):
        """MESSAGE form: fn(stream, seq) runs inside client.dispatch() when the word
        advanced (every sequence up to seq completed). None removes it."""
        h = self._handle()
        if fn is None:
            cb = ctypes.cast(None, _lib.STREAM_CB)
        else:
            ref = weakref.ref(self)

            def tramp(_s, seq, _user):
                me = ref()
                if me is not None:
                    fn(me, seq)
            cb = _lib.STREAM_CB(tramp)
        self._lib.garuda_stream_set_callback(h, cb, None)
        self._cb = cb if fn is not None else None

    # --- asyncio -------------------------------------------------------------------
    async def wait_async(self, seq=None, timeout=None):
        """Await the word reaching seq (default: the last signalled) in the running
        event loop (asyncio or uvloop), through the stream's eventfd. Raises
        garuda.TimeoutError, StreamFaultError, ClosedError. Cancelling the await leaves
        no reader in the loop."""
        import asyncio
        h = self._handle()
        last = self._lib.garuda_stream_last(h)
        if seq is None:
            seq = last
        seq = int(seq)
        if seq == 0 or not reached(last, seq):
            raise from_code(22, f"wait_async: sequence {seq} was not signalled")
        if self._lib.garuda_stream_reached(h, seq):
            return
        if self.form != Readiness.EVENTFD:
            raise from_code(95, "wait_async needs a stream of the EVENTFD form")
        loop = asyncio.get_running_loop()
        w = self._waiters
        if w is None or w.loop is not loop:
            if w is not None and w.live:
                raise RuntimeError("garuda: this stream has awaits pending in another loop")
            w = self._waiters = _Waiters(self, loop)
        fut = loop.create_future()
        entry = w.add(seq, fut)
        timer = None
        if timeout is not None:
            timer = loop.call_later(max(0.0, timeout), _expire, fut, seq)
        try:
            await fut
        finally:
            if timer is not None:
                timer.cancel()
            w.remove(entry)

    async def synchronize_async(self, timeout=None):
        """signal() then await that sequence; returns it."""
        seq = self.signal()
        await self.wait_async(seq, timeout)
        return seq

    def __repr__(self):
        if self._h is None:
            return "<garuda.Stream closed>"
        return f"<garuda.Stream {self.form.name} last={self.last} value={self.value}>"


def _expire(fut, seq):
    if not fut.done():
        fut.set_exception(GTimeoutError(what=f"wait_async({seq})"))


class _Waiters:
    """The pending awaits of one stream in one loop: a heap by sequence, one reader on
    the eventfd while any is pending, one backstop timer while any is pending."""

    def __init__(self, stream, loop):
        self.stream = weakref.ref(stream)  # no cycle: a dropped stream is freed at once
        self.loop = loop
        self.lib = stream._lib
        self.h = stream._h
        self.fd = stream.fileno()
        self.heap = []
        self.live = 0
        self.n = 0
        self.reading = False
        self.backstop = None
        self.v = c_uint64(0)

    def add(self, seq, fut):
        self.n += 1
        entry = [seq, self.n, fut, True]
        heapq.heappush(self.heap, entry)
        self.live += 1
        if not self.reading:
            self.loop.add_reader(self.fd, self.on_ready)
            self.reading = True
            self.arm_backstop()
        return entry

    def remove(self, entry):
        if entry[3]:
            entry[3] = False
            self.live -= 1
            if self.live == 0:
                self.stop()

    def stop(self):
        if self.reading:
            self.loop.remove_reader(self.fd)
            self.reading = False
        if self.backstop is not None:
            self.backstop.cancel()
            self.backstop = None
        self.heap.clear()

    def arm_backstop(self):
        s = self.stream()
        interval = s.async_backstop if s is not None else None
        if interval is not None and self.backstop is None:
            self.backstop = self.loop.call_later(interval, self.on_backstop)

    def on_ready(self):
        try:
            self.lib.garuda_stream_drain(self.h, byref(self.v))
        except Error as e:
            self.fail_all(e)
            return
        self.resolve(self.v.value)

    def on_backstop(self):
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

    def resolve(self, value):
        heap = self.heap
        while heap and (not heap[0][3] or ((value - heap[0][0]) & _MASK) < _HALF):
            e = heapq.heappop(heap)
            if e[3]:
                e[3] = False
                self.live -= 1
                if not e[2].done():
                    e[2].set_result(None)
        if self.live == 0:
            self.stop()

    def fail_all(self, exc):
        for e in self.heap:
            if e[3]:
                e[3] = False
                if not e[2].done():
                    e[2].set_exception(exc)
        self.live = 0
        self.stop()
