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
--kernel-us microseconds), prints one line of results and exits 0 when every reply
arrived; otherwise it serves on --port until interrupted. Requests are lines
"<kernel_us>\\n"; replies are "done <seq> <microseconds>\\n".
"""
import argparse
import asyncio
import sys
import time

import garuda


class GpuPool:
    """Request slots: each a host stream ("a GPU stream") and the garuda stream on it."""

    def __init__(self, client, slots):
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
        hs, s = await self.free.get()
        try:
            hs.enqueue_work(kernel_us / 1e6)  # "launch the kernel"
            await s.synchronize_async(timeout=60)  # store behind it, await it
            return s.last
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
            seq = await pool.run(int(line))
            writer.write(f"done {seq} {int((time.monotonic() - t0) * 1e6)}\n".encode())
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


async def main(args):
    with garuda.Client() as client:
        pool = GpuPool(client, args.slots)
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
            bad = [r for r in replies if len(r) != 3 or r[0] != "done"]
            lat = sorted(int(r[2]) for r in replies if r not in bad)
            print(f"{len(replies) - len(bad)}/{args.requests} requests done in {took:.3f} s; "
                  f"server-side p50 {lat[len(lat) // 2] if lat else 0} us, "
                  f"max {lat[-1] if lat else 0} us; slots {args.slots}")
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
