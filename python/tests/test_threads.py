"""Blocking waits from many threads through one Client (ctypes releases the GIL, so
waits overlap), while other threads make and drop streams and read words."""
import sys
import threading

import garuda


def test_concurrent_waits_from_threads(daemon):
    with garuda.Client() as c, c.segment(lines=4) as seg:
        hs = [garuda.HostStream() for _ in range(8)]
        streams = [seg.stream(h, form) for h, form in
                   zip(hs, [garuda.Readiness.EVENTFD, garuda.Readiness.DOORBELL,
                            garuda.Readiness.MESSAGE, garuda.Readiness.POLL] * 2)]
        errors = []
        stop = threading.Event()

        def worker(s, h):
            try:
                for k in range(200):
                    h.enqueue_work(0.00002 * (k % 5))
                    seq = s.signal()
                    s.wait(seq, timeout=60)
                    assert s.reached(seq)
            except Exception as e:  # reported below
                errors.append(e)

        def churn():
            try:
                while not stop.is_set():
                    with c.segment() as seg2, seg2.stream() as t:
                        t.wait(t.signal(), timeout=60)
                    for s in streams:
                        s.value  # any thread, any time
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(s, h)) for s, h in zip(streams, hs)]
        others = [threading.Thread(target=churn) for _ in range(2)]
        for t in threads + others:
            t.start()
        for t in threads:
            t.join(120)
        stop.set()
        for t in others:
            t.join(120)
        assert not any(t.is_alive() for t in threads + others)
        assert not errors, errors
        assert all(s.value == 200 for s in streams)
        for s in streams:
            s.close()
    for h in hs:
        h.close()


def test_thread_waits_while_loop_awaits(daemon):
    """A thread blocks in wait() on one stream while asyncio awaits another."""
    import asyncio
    with garuda.Client() as c, c.segment() as seg:
        h1, h2 = garuda.HostStream(), garuda.HostStream()
        a, b = seg.stream(h1), seg.stream(h2)
        h1.enqueue_work(0.05)
        sa = a.signal()
        done = []
        t = threading.Thread(target=lambda: (a.wait(sa, timeout=60), done.append(1)))
        t.start()

        async def main():
            for _ in range(20):
                h2.enqueue_work(0.001)
                await b.wait_async(b.signal(), timeout=60)
        asyncio.run(main())
        t.join(60)
        assert done == [1]
        a.close()
        b.close()
    h1.close()
    h2.close()


def test_threads_make_streams_on_host_streams_through_one_client(daemon):
    """Threads sharing a client make streams on host streams of their own at once: the
    client's and the segment's notes of the host streams that feed them
    (_remember_host) were walked while other threads added to them ("dictionary changed
    size during iteration" from seg.stream()); they are the client's lock's now. The
    interpreter switches threads as often as it can meanwhile."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    errors = []
    try:
        with garuda.Client() as c, c.segment(lines=16) as seg:
            def worker():
                live = []  # the last few host streams stay open: longer walks
                try:
                    for _ in range(200):
                        hs = garuda.HostStream()
                        live.append(hs)
                        with seg.stream(hs) as s:
                            s.synchronize(timeout=60)
                        if len(live) > 4:
                            live.pop(0).close()
                except Exception as e:  # reported below
                    errors.append(e)
                finally:
                    for hs in live:
                        hs.close()
            threads = [threading.Thread(target=worker) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not any(t.is_alive() for t in threads)
    finally:
        sys.setswitchinterval(switch)
    assert not errors, errors


import pytest


@pytest.mark.parametrize("closer", ["stream", "segment", "client"])
@pytest.mark.parametrize("form", [garuda.Readiness.EVENTFD, garuda.Readiness.MESSAGE,
                                  garuda.Readiness.DOORBELL, garuda.Readiness.POLL])
def test_close_from_another_thread_fails_the_wait(daemon, gate, closer, form):
    """A thread blocks in wait() while another closes the stream, its segment or its
    client (a shutdown path): the wait raises ClosedError and close() returns. The free
    ran under the waiting thread's C call, and the interpreter crashed."""
    c = garuda.Client()
    seg = c.segment()
    hs = garuda.HostStream()
    s = seg.stream(hs, form)
    held = gate(hs)  # the work is not done until the test ends
    seq = s.signal()
    res = {}
    inside = threading.Event()

    def waiter():
        inside.set()
        try:
            s.wait(seq)
            res["r"] = "returned"
        except garuda.ClosedError as e:
            res["r"] = e

    t = threading.Thread(target=waiter)
    t.start()
    inside.wait(60)
    while not s._inflight:  # in the wait's call (a free before it is no race)
        threading.Event().wait(0.001)
    # a segment's or client's close() then waits for the host stream's queued store
    # (it must land before the mapping goes): the gate opens once the wait has ended
    def opener():
        t.join(60)
        held.set()
    o = threading.Thread(target=opener)
    o.start()
    {"stream": s, "segment": seg, "client": c}[closer].close()
    o.join(60)
    assert not t.is_alive()
    assert isinstance(res.get("r"), garuda.ClosedError), res
    for o in (s, seg, c):
        o.close()
    hs.close()
