"""asyncio: Stream.wait_async through loop.add_reader on the stream's eventfd. Each test
runs under the default loop and under uvloop (conftest.event_loop). What is checked:
results, timeouts, faults, closing, that cancellation and completion leave no reader in
the loop and nothing armed in garudad (the client's own query), 1,000 concurrent awaits
on 1,000 streams and 5,000 on 100 streams in one loop, and no helper thread."""
import asyncio
import threading

import pytest

import garuda
from conftest import LOOP_KINDS


@pytest.fixture(autouse=True, params=LOOP_KINDS)
def loop_kind(request):
    return request.param


@pytest.fixture
def client(daemon):
    with garuda.Client() as c:
        yield c


def has_reader(loop, fd):
    """True when the loop still watches fd (remove_reader tells, and would remove it:
    only call where none is expected)."""
    return loop.remove_reader(fd)


async def test_wait_async_basic(client):
    hs = garuda.HostStream()
    with client.segment() as seg, seg.stream(hs) as s:
        threads = threading.active_count()
        for _ in range(20):
            hs.enqueue_work(0.0005)
            seq = s.signal()
            await s.wait_async(seq)
            assert s.reached(seq)
        assert await s.synchronize_async() == 21
        await s.wait_async(5)  # already reached: returns at once
        await s.wait_async()  # the last
        assert threading.active_count() == threads  # no helper thread
        assert not has_reader(asyncio.get_running_loop(), s.fileno())
        with pytest.raises(garuda.ErrnoError) as e:
            await s.wait_async(s.last + 1)  # never signalled
        assert e.value.name == "EINVAL"
    hs.close()


async def test_wait_async_needs_eventfd_form(client, gate):
    with client.segment() as seg, seg.stream(None, garuda.Readiness.POLL) as s:
        hs = None
        await s.wait_async(s.signal())  # already stored: fine in any form
    hs = garuda.HostStream()
    with client.segment() as seg, seg.stream(hs, garuda.Readiness.DOORBELL) as s:
        held = gate(hs)
        with pytest.raises(garuda.ErrnoError) as e:
            await s.wait_async(s.signal())
        assert e.value.name == "EOPNOTSUPP"
        held.set()
    hs.close()


async def test_timeout(client, gate):
    hs = garuda.HostStream()
    with client.segment() as seg, seg.stream(hs) as s:
        held = gate(hs)
        seq = s.signal()
        with pytest.raises(garuda.TimeoutError) as e:
            await s.wait_async(seq, timeout=0.01)
        assert e.value.code == 1020
        assert not has_reader(asyncio.get_running_loop(), s.fileno())
        held.set()
        await s.wait_async(seq, timeout=30)  # still completes afterwards
    hs.close()


async def test_cancellation_leaves_nothing(client):
    loop = asyncio.get_running_loop()
    hs = garuda.HostStream()
    gate = threading.Event()
    with client.segment() as seg, seg.stream(hs) as s:
        hs.enqueue_call(lambda: gate.wait(60))
        seq = s.signal()
        tasks = [asyncio.create_task(s.wait_async(seq)) for _ in range(50)]
        await asyncio.sleep(0)
        assert s._waiters.live == 50 and not any(t.done() for t in tasks)
        for t in tasks:
            t.cancel()
        res = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in res)
        assert not has_reader(loop, s.fileno())
        assert s._waiters.live == 0 and not s._waiters.heap
        gate.set()
        # a cancelled await does not disturb a later one on the same sequence
        await s.wait_async(seq, timeout=30)
        # and garudad holds nothing armed for this client once the word got there
        for _ in range(2000):
            if client.query()["armed"] == 0:
                break
            await asyncio.sleep(0.005)
        assert client.query()["armed"] == 0
        # cancel while the store is still to come: the arm stays with garudad (it
        # belongs to signal()) until the stream is closed, which disarms it
        gate2 = threading.Event()
        hs.enqueue_call(lambda: gate2.wait(60))
        seq = s.signal()
        t = asyncio.create_task(s.wait_async(seq))
        await asyncio.sleep(0)
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        assert not has_reader(loop, s.fileno())
        assert client.query()["armed"] == 1  # requests are ordered: the ARM came first
        s.close()
        assert client.query()["armed"] == 0
        gate2.set()
    hs.close()


async def test_close_fails_pending_awaits(client, gate):
    hs = garuda.HostStream()
    seg = client.segment()
    s = seg.stream(hs)
    held = gate(hs)
    t = asyncio.create_task(s.wait_async(s.signal()))
    await asyncio.sleep(0)
    fd = s.fileno()
    s.close()
    with pytest.raises(garuda.ClosedError):
        await t
    assert not has_reader(asyncio.get_running_loop(), fd)
    held.set()
    seg.close()
    hs.close()


async def test_fault_fails_awaits(client):
    hs = garuda.HostStream()
    with client.segment() as seg, seg.stream(hs) as s:
        s.async_backstop = 0.01
        gate = threading.Event()
        hs.enqueue_call(lambda: gate.wait(60))
        first = s.signal()
        hs.enqueue_fault()
        second = s.signal()  # queued behind the fault: never stored
        gate.set()
        await s.wait_async(first, timeout=30)
        with pytest.raises(garuda.StreamFaultError):
            await s.wait_async(second, timeout=30)
        assert not has_reader(asyncio.get_running_loop(), s.fileno())
    hs.close()


async def test_thousand_streams_thousand_awaits(client):
    """1,000 requests, each on its own stream and host stream work, awaited together."""
    hs = [garuda.HostStream() for _ in range(8)]
    segs = [client.segment(lines=16) for _ in range(8)]
    streams = [segs[i % 8].stream(hs[i % 8]) for i in range(1000)]
    try:
        for s in streams:
            s.async_backstop = None  # only garudad's eventfd writes can complete them
        before = client.query()["completions"]
        seqs = []
        for i, s in enumerate(streams):
            hs[i % 8].enqueue_work(0.00001)
            seqs.append(s.signal())
        await asyncio.wait_for(
            asyncio.gather(*(s.wait_async(q) for s, q in zip(streams, seqs))), 60)
        assert all(s.reached(q) for s, q in zip(streams, seqs))
        # one delivery per arm: a wait_async that found its word already reached returns
        # before garudad's scanner (which may be sleeping to a predicted deadline) has
        # delivered that arm, so wait for the count to settle, then require it exact
        deadline = asyncio.get_running_loop().time() + 30
        while (client.query()["completions"] - before < 1000
               and asyncio.get_running_loop().time() < deadline):
            await asyncio.sleep(0.01)
        assert client.query()["completions"] - before == 1000
        loop = asyncio.get_running_loop()
        assert not any(has_reader(loop, s.fileno()) for s in streams)
    finally:
        for s in streams:
            s.close()
        for x in segs + hs:
            x.close()


async def test_five_thousand_awaits(client):
    """5,000 concurrent awaits: 100 streams, 50 sequences each, all pending at once
    (the host streams are held at a gate until every await is in the loop)."""
    hs = [garuda.HostStream(depth=8192) for _ in range(4)]
    gate = threading.Event()
    with client.segment(lines=16) as seg:
        streams = [seg.stream(hs[i % 4]) for i in range(100)]
        try:
            for h in hs:
                h.enqueue_call(lambda: gate.wait(60))
            pending = []
            for k in range(50):
                for i, s in enumerate(streams):
                    pending.append(s.wait_async(s.signal()))
            tasks = [asyncio.ensure_future(p) for p in pending]
            await asyncio.sleep(0)
            assert sum(s._waiters.live for s in streams) == 5000
            assert not any(t.done() for t in tasks)
            gate.set()
            await asyncio.wait_for(asyncio.gather(*tasks), 60)
            assert all(s.value == 50 for s in streams)
            assert sum(s._waiters.live for s in streams) == 0
        finally:
            gate.set()
            for s in streams:
                s.close()
    for h in hs:
        h.close()


async def test_many_loops_one_stream(client):
    """A stream's awaits move from one loop to the next once none is pending."""
    with client.segment() as seg, seg.stream(None) as s:
        await s.wait_async(s.signal())
    hs = garuda.HostStream()
    with client.segment() as seg, seg.stream(hs) as s:
        hs.enqueue_work(0.001)
        seq = s.signal()

        def other_loop():
            return asyncio.run(s.wait_async(seq, timeout=30))
        await asyncio.get_running_loop().run_in_executor(None, other_loop)
        hs.enqueue_work(0.001)
        await s.wait_async(s.signal(), timeout=30)
    hs.close()




def new_loop(kind):
    """A fresh event loop of the kind (conftest.event_loop's choice), for tests that run
    and close loops of their own."""
    if kind == "uvloop":
        uvloop = pytest.importorskip("uvloop", reason="python3-uvloop is not installed")
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


@pytest.fixture(scope="module", autouse=True)
def uvloop_opened():
    """libuv opens a process-wide pipe with its first loop and keeps it to the exit:
    have it open before the fd check of a test that makes a loop of its own."""
    try:
        import uvloop
    except ImportError:
        return
    uvloop.new_event_loop().close()


def loop_closed_under_an_await(kind, s, seq):
    """Start wait_async(seq) in a new loop, run until it is pending, close the loop with
    it pending (its task never finishes: it is simply dropped)."""
    loop = new_loop(kind)
    task = loop.create_task(s.wait_async(seq))
    loop.run_until_complete(asyncio.sleep(0))
    assert not task.done()
    loop.close()
    return task


def test_client_close_after_a_loop_closed_under_an_await(daemon, gate, loop_kind):
    """An event loop closed while an await was pending: client.close() then raised
    "Event loop is closed" (the stream's close failed the await's future in that loop)
    having never disconnected (the session and its fds lived on); now the awaits of a
    closed loop are dropped and the client closes."""
    c = garuda.Client()
    seg = c.segment()
    hs = garuda.HostStream()
    s = seg.stream(hs)
    held = gate(hs)
    task = loop_closed_under_an_await(loop_kind, s, s.signal())
    held.set()  # close() lets the store land first
    c.close()
    assert s.closed and seg.closed and c.closed
    assert daemon.wait_status("clients", 0) == 0  # garuda_disconnect ran
    hs.close()
    del task


def test_a_new_loop_awaits_a_stream_whose_loop_closed_under_an_await(daemon, gate,
                                                                      loop_kind):
    """The awaits of a closed loop no longer claim the stream: a new loop awaits it
    (it raised "this stream has awaits pending in another loop"), and it closes."""
    hs = garuda.HostStream()
    with garuda.Client() as c, c.segment() as seg:
        s = seg.stream(hs)
        held = gate(hs)
        seq = s.signal()
        task = loop_closed_under_an_await(loop_kind, s, seq)
        held.set()

        async def again():
            await s.wait_async(seq, timeout=30)
            hs.enqueue_work(0.001)
            await s.wait_async(s.signal(), timeout=30)
            assert not has_reader(asyncio.get_running_loop(), s.fileno())
        loop = new_loop(loop_kind)
        try:
            loop.run_until_complete(again())
        finally:
            loop.close()
        assert s.value == 2
        s.close()
    hs.close()
    del task

async def test_await_of_a_landed_sequence_completes_when_a_fault_follows(make_daemon):
    """A store that landed before its native stream faulted completes its awaits even
    when the loop learns of both from one readiness: garuda_stream_drain() then fails
    with STREAM_FAULT, having written the word first; the awaits it reached failed
    with StreamFaultError. garudad is paused so that the only readiness is libgaruda's
    fault watch's, which comes after both; no backstop."""
    d = make_daemon()
    hs = garuda.HostStream()
    held = threading.Event()
    with garuda.Client(d.sock) as c, c.segment() as seg, seg.stream(hs) as s:
        s.async_backstop = None
        hs.enqueue_call(lambda: held.wait(60))
        first = s.signal()
        hs.enqueue_fault()
        second = s.signal()  # behind the fault: never stored
        tasks = [asyncio.ensure_future(s.wait_async(q)) for q in (first, second)]
        await asyncio.sleep(0)
        assert not any(t.done() for t in tasks)
        d.pause()  # no eventfd write for `first` from garudad
        try:
            held.set()
            res = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 60)
        finally:
            held.set()
            d.resume()
        assert s.value == first
        assert res[0] is None, res[0]  # it landed: completed
        assert isinstance(res[1], garuda.StreamFaultError), res[1]
        assert not has_reader(asyncio.get_running_loop(), s.fileno())
    hs.close()
