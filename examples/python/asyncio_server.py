#!/usr/bin/env python3
"""asyncio_server.py — the shape of an inference server on garuda: an asyncio TCP
server where every request queues "GPU work" on a stream of its own and awaits that
stream's completion in the event loop — no thread per request, no core spinning in a
synchronize call. The GPU here is garuda's host backend (a host stream per request
slot simulates a kernel); examples/python/torch_server.py is the same with PyTorch.

Installed (python3-garuda or pip, libgaruda0, garudad running on the default socket):

    python3 asyncio_server.py --requests 1000

From a build tree (build/), against a garudad you started there: the package from
the source tree (PYTHONPATH), the built library (GARUDA_LIBRARY; else libgaruda.so.0
through the loader), the daemon's socket (GARUDA_SOCKET; else /run/garuda/garuda.sock):

    build/daemon/garudad --no-config --runtime-dir=/tmp/garuda &
    PYTHONPATH=python GARUDA_LIBRARY=build/client/libgaruda.so.0 \\
        GARUDA_SOCKET=/tmp/garuda/garuda.sock python3 examples/python/asyncio_server.py --requests 1000

With --requests N it serves itself N concurrent requests (each asks for a kernel of
--kernel-us microseconds), prints its results and exits 0 when every reply arrived:
kernel end -> wake (the host stream stamps the kernel's end; the handler's wake-up in
the event loop after garudad's readiness), as scripts/demo.sh's workloads print it,
and request in -> reply out (the server's whole time, waiting for a free slot and the
loop's queueing included: on a few cores, far longer than the kernel). Otherwise it
serves on --port until interrupted. Requests are lines "<kernel_us>\\n"; replies are
"done <seq> <microseconds in the server> <microseconds kernel end -> wake>\\n".
"""
import argparse
import asyncio
import sys
import time

import garuda


class GpuPool:
    """Request slots: each a host stream ("a GPU stream") and the garuda stream on it."""

    def __init__(self, client, slots, stamps):
        self.stamps = stamps  # time each kernel's end (a stamp the host stream keeps)
        self.segs = [client.segment("host", 0, 64) for _ in range((slots + 511) // 512)]
        self.free = asyncio.Queue()
        self.host = []
        self.streams = []
        for i in range(slots):
            hs = garuda.HostStream()
            self.host.append(hs)
            s = self.segs[i // 512].stream(hs)
            self.streams.append(s)
            self.free.put_nowait((hs, s))

    async def run(self, kernel_us):
        """Returns (the sequence, kernel end -> wake in us; 0 when not timed)."""
        hs, s = await self.free.get()
        try:
            hs.enqueue_work(kernel_us / 1e6)  # "launch the kernel"
            end = hs.enqueue_stamp() if self.stamps else None
            await s.synchronize_async(timeout=60)  # store behind it, await it
            woke = time.monotonic_ns()  # CLOCK_MONOTONIC, as the stamp
            return s.last, (woke - end.value) // 1000 if end else 0
        finally:
            self.free.put_nowait((hs, s))

    def close(self):
        for s in self.streams:
            s.close()
        for seg in self.segs:
            seg.close()
        for hs in self.host:
            hs.close()


async def handle(pool, reader, writer):
    try:
        while line := await reader.readline():
            t0 = time.monotonic()
            seq, wake_us = await pool.run(int(line))
            writer.write(f"done {seq} {int((time.monotonic() - t0) * 1e6)} {wake_us}\n".encode())
            await writer.drain()
    finally:
        writer.close()


async def one_request(port, kernel_us):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{kernel_us}\n".encode())
    reply = (await reader.readline()).decode().split()
    writer.close()
    await writer.wait_closed()
    return reply


def _pcts(lat):
    """p50, p99 and max of sorted microseconds, labelled"""
    if not lat:
        return "no replies"
    return (f"p50 {lat[len(lat) // 2]} us, p99 {lat[min(len(lat) - 1, len(lat) * 99 // 100)]} us, "
            f"max {lat[-1]} us")


async def main(args):
    with garuda.Client() as client:
        pool = GpuPool(client, args.slots, stamps=bool(args.requests))
        try:
            server = await asyncio.start_server(lambda r, w: handle(pool, r, w),
                                                "127.0.0.1", args.port, backlog=4096)
            port = server.sockets[0].getsockname()[1]
            async with server:
                if not args.requests:
                    print(f"serving on 127.0.0.1:{port}", flush=True)
                    await server.serve_forever()
                t0 = time.monotonic()
                replies = await asyncio.gather(*(one_request(port, args.kernel_us)
                                                 for _ in range(args.requests)))
                took = time.monotonic() - t0
            bad = [r for r in replies if len(r) != 4 or r[0] != "done"]
            good = [r for r in replies if r not in bad]
            server = sorted(int(r[2]) for r in good)
            wake = sorted(int(r[3]) for r in good)
            print(f"{len(good)}/{args.requests} requests done in {took:.3f} s "
                  f"({len(good) / took:.0f}/s), {args.kernel_us} us kernels on {args.slots} slots")
            print(f"  kernel end -> wake:      {_pcts(wake)}")
            print(f"  request in -> reply out: {_pcts(server)} (server side: waiting for a "
                  f"slot and the event loop's queueing included)")
            return 1 if bad else 0
        finally:
            pool.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--slots", type=int, default=256, help="concurrent GPU streams")
    p.add_argument("--requests", type=int, default=0, help="serve N requests to itself, exit")
    p.add_argument("--kernel-us", type=int, default=200)
    p.add_argument("--uvloop", action="store_true", help="run under uvloop")
    a = p.parse_args()
    if a.uvloop:
        import uvloop
        uvloop.install()
    sys.exit(asyncio.run(main(a)))
