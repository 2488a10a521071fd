#!/usr/bin/env python3
"""gen-traces.py - write the synthetic completion traces of tests/traces/ (seeded:
the same files every run). Each is a CSV that garuda-replay reads: word,point,
arm_ns,store_ns per completion. A stream runs its kernels back to back in stream
order; each round the host launches `depth` kernels, arms a wait for each right
after its launch, awaits the last and launches the next round 50 us later.

    python3 scripts/gen-traces.py [OUTDIR]     (default tests/traces)
"""
import os
import random
import sys

US = 1000
MS = 1000 * US


def stream(rng, word, rounds, depth, length, point=lambda k: 0, t0=1 * MS, gap=50 * US):
    rows, t, end = [], t0, t0
    for r in range(rounds):
        for k in range(depth):
            launch = t + k * 5 * US
            start = max(end, launch)
            end = start + int(length(r, k)) + rng.randrange(5000)  # ns of phase
            rows.append((word, point(k), launch + 2 * US, end))
        t = end + gap
    return rows


def write(outdir, name, busy, about, rows):
    rows.sort(key=lambda r: (r[2], r[0]))
    with open(os.path.join(outdir, name + ".csv"), "w") as f:
        f.write("# %s\n# busy<=%s\nword,point,arm_ns,store_ns\n" % (about, busy))
        for w, p, a, s in rows:
            f.write("%d,%d,%d,%d\n" % (w, p, a, s))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/traces"
    os.makedirs(outdir, exist_ok=True)
    rng = random.Random(20261202)
    fixed = lambda ms: (lambda r, k: ms * MS)
    # issue 29's targets (busy <= the bound): one stream and pipelines 1/5 at 1-2 ms,
    # 1/20 at 10 ms and more; several streams 1/3 at 1-2 ms, 1/10 at 10 ms
    write(outdir, "single-1ms", "0.2", "one stream, one 1 ms kernel at a time",
          stream(rng, 1, 1000, 1, fixed(1)))
    write(outdir, "single-10ms", "0.05", "one stream, one 10 ms kernel at a time",
          stream(rng, 1, 400, 1, fixed(10)))
    write(outdir, "pipeline-4x2ms", "0.2", "one stream, 4 kernels of 2 ms queued per round",
          stream(rng, 1, 250, 4, fixed(2)))
    write(outdir, "pipeline-10x2ms", "0.2", "one stream, 10 kernels of 2 ms queued per round",
          stream(rng, 1, 100, 10, fixed(2)))
    write(outdir, "pipeline-4x2ms-4streams", "0.333", "4 streams, 4 kernels of 2 ms queued per round each",
          sum((stream(rng, w, 100, 4, fixed(2), t0=MS + rng.randrange(2 * MS)) for w in range(1, 5)), []))
    write(outdir, "jitter-2ms", "0.2", "one stream, 2 ms kernels +-10 % (uniform)",
          stream(rng, 1, 1000, 1, lambda r, k: 2 * MS * rng.uniform(0.9, 1.1)))
    write(outdir, "bimodal-30-8ms", "0.05",
          "one word, a 30 ms prefill (point 1) then 3 decodes of 8 ms (point 2) queued per round",
          stream(rng, 1, 150, 4, lambda r, k: 30 * MS if k == 0 else 8 * MS,
                 point=lambda k: 1 if k == 0 else 2))
    write(outdir, "shorter-10-to-5ms", "0.1", "one stream, 300 kernels of 10 ms, then 300 of 5 ms",
          stream(rng, 1, 600, 1, lambda r, k: 10 * MS if r < 300 else 5 * MS))
    write(outdir, "streams-4x2ms", "0.333", "4 streams, one 2 ms kernel at a time each",
          sum((stream(rng, w, 300, 1, fixed(2), t0=MS + rng.randrange(2 * MS)) for w in range(1, 5)), []))
    # the bench's plan workloads (tests/bench/plans.c): 1, 4 and 16 streams of 1, 2 and
    # 10 ms kernels, one at a time and pipelined (4 and 10 queued per stream per round);
    # streams start within the first 2 ms, as the bench's processes do
    rounds = {1: 600, 2: 400, 10: 100}
    def streams(n, ms, depth, per):
        return sum((stream(rng, w, per, depth, fixed(ms), t0=MS + rng.randrange(2 * MS))
                    for w in range(1, n + 1)), [])
    write(outdir, "single-2ms", "0.2", "one stream, one 2 ms kernel at a time",
          stream(rng, 1, 600, 1, fixed(2)))
    for n in (4, 16):
        for ms in (1, 2, 10):
            if (n, ms) == (4, 2):
                continue  # streams-4x2ms above
            write(outdir, "streams-%dx%dms" % (n, ms), "0.1" if ms >= 10 else "0.333",
                  "%d streams, one %d ms kernel at a time each" % (n, ms),
                  streams(n, ms, 1, rounds[ms] // (n // 4 + 1)))
    for ms in (1, 10):
        write(outdir, "pipeline-4x%dms" % ms, "0.05" if ms >= 10 else "0.2",
              "one stream, 4 kernels of %d ms queued per round" % ms,
              stream(rng, 1, rounds[ms] // 4 + 25, 4, fixed(ms)))
    write(outdir, "pipeline-10x2ms-4streams", "0.333", "4 streams, 10 kernels of 2 ms queued per round each",
          streams(4, 2, 10, 30))
    write(outdir, "pipeline-4x2ms-16streams", "0.333", "16 streams, 4 kernels of 2 ms queued per round each",
          streams(16, 2, 4, 25))
    # issue 29's long kernels: 10 s kernels (100 us of jitter, a sleep's), one at a
    # time; the cold first wait is found on its backoff (up to 3 % late) and the host
    # re-arms after that wake, then 70 us after each store. Its own seed: the files
    # above stay as they were.
    lrng, rows, t = random.Random(10), [], 1 * MS
    for r in range(24):
        end = t + 10000 * MS + 60 * US + lrng.randrange(100 * US)
        rows.append((1, 0, t, end))
        t = end + (300 * MS if r == 0 else 70 * US)
    write(outdir, "long-10s", "0.001",
          "one stream of 10 s kernels: the cold first wait leaves a lower bound up to 3 % early; "
          "the next are on time", rows)

if __name__ == "__main__":
    main()
