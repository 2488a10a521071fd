"""garudad killed (SIGKILL, as a crash) and started again while awaits and blocking
waits are pending: every await and wait completes, nothing is lost, the client
reconnects by itself and the daemon sees its segments and arms again."""
import asyncio
import threading
import time

import pytest

import garuda
from conftest import LOOP_KINDS


@pytest.fixture(params=LOOP_KINDS)
def loop_kind(request):
    return request.param


async def test_restart_during_awaits(make_daemon, loop_kind):
    d = make_daemon()
    c = garuda.Client(d.sock)
    hs = [garuda.HostStream() for _ in range(4)]
    seg = c.segment(lines=8)
    streams = [seg.stream(hs[i % 4]) for i in range(40)]
    gate = threading.Event()
    try:
        for h in hs:
            h.enqueue_call(lambda: gate.wait(60))  # the stores land while garudad is down
        seqs = [s.signal() for s in streams]
        more = [s.signal() for s in streams]  # two outstanding per stream
        tasks = [asyncio.ensure_future(s.wait_async(q)) for s, q in zip(streams, seqs + more)]
        tasks += [asyncio.ensure_future(s.wait_async(q)) for s, q in zip(streams, more)]
        await asyncio.sleep(0)
        assert not any(t.done() for t in tasks)
        d.kill()
        gate.set()
        await asyncio.sleep(0.05)
        d.restart()
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        assert all(s.value == 2 for s in streams)
        # the library is back in a new session (the new daemon numbers its sessions
        # afresh, so the id may repeat), and new work completes through it
        for _ in range(2000):
            if c.connected and c.reconnects >= 1:
                break
            await asyncio.sleep(0.005)
        assert c.connected and c.reconnects == 1 and c.session != 0
        for h in hs:
            h.enqueue_work(0.001)
        await asyncio.wait_for(asyncio.gather(*(s.synchronize_async() for s in streams)), 60)
        q = c.query()
        assert q["segments"] == 1 and q["bindings"] == 40
    finally:
        gate.set()
        for s in streams:
            s.close()
        seg.close()
        c.close()
        for h in hs:
            h.close()


def test_restart_during_blocking_waits(make_daemon):
    d = make_daemon()
    with garuda.Client(d.sock) as c, c.segment() as seg:
        hs = [garuda.HostStream() for _ in range(4)]
        streams = [seg.stream(h, f) for h, f in zip(hs, list(garuda.Readiness))]
        gate = threading.Event()
        for h in hs:
            h.enqueue_call(lambda: gate.wait(60))
        seqs = [s.signal() for s in streams]
        errors = []

        def wait(s, q):
            try:
                s.wait(q, timeout=60)
            except Exception as e:
                errors.append(e)
        threads = [threading.Thread(target=wait, args=sq) for sq in zip(streams, seqs)]
        for t in threads:
            t.start()
        time.sleep(0.01)
        assert not any(s.reached(q) for s, q in zip(streams, seqs))
        d.kill()
        gate.set()  # the stores land while garudad is down
        time.sleep(0.05)
        d.restart()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert all(s.reached(q) for s, q in zip(streams, seqs))
        for s in streams:
            s.close()
    for h in hs:
        h.close()
