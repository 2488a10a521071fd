#!/usr/bin/env python3
"""torch_server.py — asyncio_server.py with PyTorch: each request runs a matmul on a
CUDA stream of its own, then awaits that stream through garudad
(garuda.torch.synchronize_async) instead of blocking the event loop in
torch.cuda.synchronize(). Needs torch with CUDA and a GPU: a torch without CUDA (a
CPU-only build, no driver) stops it with garuda.torch.NoCudaError, which says so and
what still works (host streams: asyncio_server.py), exit status 1.

Installed (python3-garuda or pip, libgaruda0, garudad running on the default socket):

    python3 torch_server.py --requests 256

From a build tree (build/), against a garudad you started there: the package from
the source tree (PYTHONPATH), the built library (GARUDA_LIBRARY; else libgaruda.so.0
through the loader), the daemon's socket (GARUDA_SOCKET; else /run/garuda/garuda.sock):

    build/daemon/garudad --no-config --runtime-dir=/tmp/garuda &
    PYTHONPATH=python GARUDA_LIBRARY=build/client/libgaruda.so.0 \\
        GARUDA_SOCKET=/tmp/garuda/garuda.sock python3 examples/python/torch_server.py --requests 256
"""
import argparse
import asyncio
import sys
import time

import garuda
import garuda.torch as gt


async def main(args):
    torch = gt.require_cuda()  # NoCudaError, not torch's AssertionError, without CUDA
    streams = asyncio.Queue()
    for _ in range(args.slots):
        streams.put_nowait(torch.cuda.Stream())
    x = torch.randn(args.n, args.n, device="cuda")

    async def request(i):
        s = await streams.get()
        try:
            with torch.cuda.stream(s):
                y = x @ x  # queued on s
            t0 = time.monotonic()
            await gt.synchronize_async(s, timeout=60)  # the loop stays free meanwhile
            return time.monotonic() - t0, float(y[0, 0])
        finally:
            streams.put_nowait(s)

    t0 = time.monotonic()
    res = await asyncio.gather(*(request(i) for i in range(args.requests)))
    lat = sorted(r[0] for r in res)
    print(f"{len(res)} requests in {time.monotonic() - t0:.3f} s; await p50 "
          f"{lat[len(lat) // 2] * 1e6:.0f} us; slots {args.slots}")
    gt.reset()
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--slots", type=int, default=16)
    p.add_argument("--requests", type=int, default=256)
    p.add_argument("--n", type=int, default=1024, help="matrix size")
    args = p.parse_args()
    try:
        sys.exit(asyncio.run(main(args)))
    except (garuda.Error, ImportError) as e:  # ImportError: no torch (garuda.torch says so)
        print(f"torch_server.py: {e}", file=sys.stderr)
        sys.exit(1)
