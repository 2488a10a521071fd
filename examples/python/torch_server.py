#!/usr/bin/env python3
"""torch_server.py — asyncio_server.py with PyTorch: each request runs a matmul on a
CUDA stream of its own, then awaits that stream through garudad
(garuda.torch.synchronize_async) instead of blocking the event loop in
torch.cuda.synchronize(). Needs torch with CUDA and a GPU.

    GARUDA_SOCKET=/run/garuda/garuda.sock python3 torch_server.py --requests 256
"""
import argparse
import asyncio
import sys
import time

import garuda.torch as gt


async def main(args):
    import torch
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
    sys.exit(asyncio.run(main(p.parse_args())))
