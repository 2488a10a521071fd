#!/usr/bin/env python3
"""bench_async.py — the Python rows of garuda's latency benchmark, in one run with the
C rows they are compared with.

It runs garuda-bench's latency section (C: the raw-protocol "garuda eventfd" row, the
one an epoll loop such as examples/epoll.c sees, and libgaruda's spin-then-block
wait), then, against a garudad with the same tuning (spin_us=100, max_sleep_us=1000),
the same measurement from Python: a host stream sleeps the simulated kernel (--gap-us),
stamps t0 and stores; the waiter signals, then ``await stream.wait_async(seq)``; the
sample is wake - t0. It does this under asyncio's default loop and under uvloop, the C and Python
rows alternating in --rounds rounds, and reports CPU per completion: the waiting process (getrusage, its host-stream worker
included) and garudad (/proc/PID/stat). Target: Python asyncio p50 <= 1.5x the C
eventfd row's p50, both from this run.

    python3 python/bench/bench_async.py --bench build/tests/bench/garuda-bench \\
        --garudad build/daemon/garudad [--samples 20000] [--json out.json]

Exit status: 0 when every row ran (timings never fail), 1 on a broken run (one that
leaked an fd among them).
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
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "common"))
from fdleak import leaked_fds, open_fds  # noqa: E402  (the fd-leak check)

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


def timerslack_1ns():
    """As the C rows' waiter does (tests/bench/lgwait.c): no timer slack on this thread."""
    import ctypes
    ctypes.CDLL(None).prctl(29, ctypes.c_ulong(1), 0, 0, 0)  # PR_SET_TIMERSLACK


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


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench", required=True, help="garuda-bench")
    p.add_argument("--garudad", required=True)
    p.add_argument("--samples", type=int, default=20000, help="completions per row")
    p.add_argument("--rounds", type=int, default=5,
                   help="C and Python rows alternate in this many rounds (a busy machine "
                   "then weighs on both alike)")
    p.add_argument("--gap-us", type=int, default=20)
    p.add_argument("--json")
    a = p.parse_args()
    os.environ["GARUDAD"] = a.garudad
    per_round = max(100, a.samples // a.rounds)

    kinds = ["asyncio"]
    try:
        import uvloop
        kinds.append("uvloop")
    except ImportError:
        print("(uvloop not installed: its row is left out)")
    if "uvloop" in kinds:  # libuv's first loop opens its signal pipe, open until exit
        uvloop.new_event_loop().close()
    fds_before = open_fds()
    c_ids = {"garuda_eventfd": "C: garuda eventfd (raw protocol, epoll-style)",
             "libgaruda_wait": "C: libgaruda spin-then-block wait"}
    rounds = []  # per round: {label: row}
    d = Daemon({"spin_us": 100, "max_sleep_us": 1000})
    try:
        for _ in range(a.rounds):
            c = c_rows(a.bench, a.garudad, per_round, a.gap_us)
            got = {label: c[rid] for rid, label in c_ids.items()}
            for kind in kinds:
                timerslack_1ns()
                loop = uvloop.new_event_loop() if kind == "uvloop" else asyncio.new_event_loop()
                try:
                    got[f"Python {kind} await wait_async"] = loop.run_until_complete(
                        py_row(d.sock, per_round, a.gap_us * 1000, d.proc.pid))
                finally:
                    loop.close()
            rounds.append(got)
    finally:
        d.stop()

    labels = list(rounds[0])
    print(f"Wake latency, store -> wake (us; {a.rounds} rounds x {per_round} completions per "
          f"row, C and Python alternating; simulated kernel {a.gap_us} us; garudad spin_us=100 "
          f"max_sleep_us=1000). Median over rounds of each round's percentile.")
    print(f"  {'':48} {'p50':>8} {'p99':>9} {'p99.9':>9} {'cpu/c proc':>11} {'cpu/c daemon':>13}")
    summary = {}
    for label in labels:
        rs = [r[label] for r in rounds]
        row = {k: median([x[k] for x in rs]) for k in ("p50_us", "p99_us", "p99_9_us")}
        for k in ("cpu_us_per_completion_process", "cpu_us_per_completion_garudad"):
            if k in rs[0]:
                row[k] = median([x[k] for x in rs])
        summary[label] = row
        cp = row.get("cpu_us_per_completion_process")
        cd = row.get("cpu_us_per_completion_garudad")
        print(f"  {label:48} {row['p50_us']:8.2f} {row['p99_us']:9.2f} {row['p99_9_us']:9.2f} "
              f"{'-' if cp is None else f'{cp:8.2f} us':>11} "
              f"{'-' if cd is None else f'{cd:8.2f} us':>13}")
    base = c_ids["garuda_eventfd"]
    ratios = {label: median([r[label]["p50_us"] / r[base]["p50_us"] for r in rounds])
              for label in labels if label.startswith("Python")}
    print("Target: Python asyncio p50 <= 1.5x the C garuda eventfd p50 (median over rounds "
          "of the ratio within a round)")
    for label, ratio in ratios.items():
        print(f"  {label:48} {ratio:6.2f}x  {'met' if ratio <= 1.5 else 'MISSED'}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"gap_us": a.gap_us, "rounds": a.rounds, "samples_per_round": per_round,
                       "rows": summary, "per_round": rounds,
                       "ratios_p50_vs_c_eventfd": ratios}, f, indent=1)
    leaked = leaked_fds(fds_before)
    if leaked:
        raise RuntimeError(f"leaked fds: {', '.join(leaked)}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # a broken run, not a timing
        print(f"bench_async: broken run: {e}", file=sys.stderr)
        sys.exit(1)
