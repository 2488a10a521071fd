#!/usr/bin/env python3
"""bench_async.py — the Python rows of garuda's latency benchmark, in one run with the
C rows they are compared with.

It runs garuda-bench's latency section (C: the raw-protocol "garuda eventfd" row, the
one an epoll loop such as examples/epoll.c sees, and libgaruda's spin-then-block
wait), then, against a garudad with the same tuning (spin_us=100, max_sleep_us=1000),
the same measurement from Python: a host stream sleeps the simulated kernel (--gap-us),
stamps t0 and stores; the waiter signals, then ``await stream.wait_async(seq)``; the
sample is wake - t0. It does this under asyncio's default loop and under uvloop, and
reports CPU per completion: the waiting process (getrusage, its host-stream worker
included) and garudad (/proc/PID/stat). Target: Python asyncio p50 <= 1.5x the C
eventfd row's p50, both from this run.

    python3 python/bench/bench_async.py --bench build/tests/bench/garuda-bench \\
        --garudad build/daemon/garudad [--samples 20000] [--json out.json]

Exit status: 0 when every row ran (timings never fail), 1 on a broken run.
"""
import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import garuda  # noqa: E402
from daemon import Daemon  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def pct(sorted_us, p):
    return sorted_us[min(len(sorted_us) - 1, int(p * len(sorted_us)))]


async def py_row(sock, samples, gap_ns, daemon_pid):
    lat = []
    with garuda.Client(sock) as c, c.segment() as seg:
        hs = garuda.HostStream(depth=64)
        try:
            with seg.stream(hs) as s:
                for _ in range(min(200, samples)):  # warm-up
                    hs.enqueue_work(gap_ns / 1e9)
                    await s.wait_async(s.signal())
                cpu0, dcpu0 = self_cpu(), proc_cpu(daemon_pid)
                t_start = time.monotonic()
                for _ in range(samples):
                    hs.enqueue_work(gap_ns / 1e9)
                    stamp = hs.enqueue_stamp()
                    seq = s.signal()
                    await s.wait_async(seq)
                    woke = time.monotonic_ns()
                    lat.append((woke - stamp.value) / 1e3)
                    hs._keep.clear()  # the stamp item has run: nothing refers to it
                wall = time.monotonic() - t_start
                cpu, dcpu = self_cpu() - cpu0, proc_cpu(daemon_pid) - dcpu0
        finally:
            hs.close()
    lat.sort()
    return {"samples": samples, "p50_us": pct(lat, 0.5), "p99_us": pct(lat, 0.99),
            "p99_9_us": pct(lat, 0.999), "max_us": lat[-1],
            "cpu_us_per_completion_process": cpu / samples * 1e6,
            "cpu_us_per_completion_garudad": dcpu / samples * 1e6,
            "wall_us_per_completion": wall / samples * 1e6}


def c_rows(bench, garudad, samples, gap_us):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        r = subprocess.run([bench, "--only=latency", f"--samples={samples}",
                            f"--gap-us={gap_us}", f"--daemon={garudad}", f"--json={out.name}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"garuda-bench failed ({r.returncode}): {r.stderr[-2000:]}")
        rows = json.load(open(out.name))["latency"]["rows"]
    return {row["row"]: row for row in rows}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", required=True, help="garuda-bench")
    p.add_argument("--garudad", required=True)
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--gap-us", type=int, default=20)
    p.add_argument("--json")
    a = p.parse_args()
    os.environ["GARUDAD"] = a.garudad

    c = c_rows(a.bench, a.garudad, a.samples, a.gap_us)
    rows = [("C: garuda eventfd (raw protocol, epoll-style)", c["garuda_eventfd"]),
            ("C: libgaruda spin-then-block wait", c["libgaruda_wait"])]
    d = Daemon({"spin_us": 100, "max_sleep_us": 1000})
    try:
        kinds = ["asyncio"]
        try:
            import uvloop
            kinds.append("uvloop")
        except ImportError:
            print("(uvloop not installed: its row is left out)")
        for kind in kinds:
            loop = uvloop.new_event_loop() if kind == "uvloop" else asyncio.new_event_loop()
            try:
                row = loop.run_until_complete(
                    py_row(d.sock, a.samples, a.gap_us * 1000, d.proc.pid))
            finally:
                loop.close()
            rows.append((f"Python {kind} await wait_async", row))
    finally:
        d.stop()

    print(f"Wake latency, store -> wake (us; {a.samples} completions per row; simulated kernel "
          f"{a.gap_us} us; garudad spin_us=100 max_sleep_us=1000)")
    print(f"  {'':48} {'p50':>8} {'p99':>9} {'p99.9':>9} {'cpu/c proc':>11} {'cpu/c daemon':>13}")
    for label, r in rows:
        cp = r.get("cpu_us_per_completion_process")
        cd = r.get("cpu_us_per_completion_garudad")
        print(f"  {label:48} {r['p50_us']:8.2f} {r['p99_us']:9.2f} {r['p99_9_us']:9.2f} "
              f"{'-' if cp is None else f'{cp:8.2f} us':>11} "
              f"{'-' if cd is None else f'{cd:8.2f} us':>13}")
    base = c["garuda_eventfd"]["p50_us"]
    ratios = {label: r["p50_us"] / base for label, r in rows if label.startswith("Python")}
    print("Target: Python asyncio p50 <= 1.5x the C garuda eventfd p50 (same run)")
    for label, ratio in ratios.items():
        print(f"  {label:48} {ratio:6.2f}x  {'met' if ratio <= 1.5 else 'MISSED'}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gap_us": a.gap_us, "samples": a.samples,
                       "rows": [dict(r, label=label) for label, r in rows],
                       "ratios_p50_vs_c_eventfd": ratios}, f, indent=1)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a broken run, not a timing
        print(f"bench_async: broken run: {e}", file=sys.stderr)
        sys.exit(1)
