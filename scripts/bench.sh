#!/usr/bin/env bash
# bench.sh — build garuda (installing its build dependencies, scripts/deps.sh --build) and run the
# full benchmark suite of tests/bench (latency, CPU, throughput, scale against
# per-process baselines, wait plans, tenants, in one run). Prints the table; writes JSON.
#   BUILD_DIR   build directory, relative to the repository root (default build-bench)
#   arguments   passed to garuda-bench (e.g. --quick, --json=PATH, --only=latency,
#               --spin-us=N; garuda-bench --help lists them)
# The full mode takes a few minutes and needs root or a high RLIMIT_NOFILE for its
# 1,000 clients; run it on an otherwise idle machine for numbers worth comparing. The
# tenants section runs its tenant A as uid 65534 only as root, in a cgroup of its own
# only where the cgroup2 mount is writable (it says which), and its full mode has A hold
# 1,048,576 arms (about 300 MiB of garudad RSS at 85e4664).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${BUILD_DIR:-build-bench}

bash scripts/deps.sh --build

if [[ -f $build/meson-private/coredata.dat ]]; then
	meson setup --reconfigure "$build" --buildtype=debugoptimized >/dev/null
else
	meson setup "$build" --buildtype=debugoptimized >/dev/null
fi
ninja -C "$build" daemon/garudad tests/bench/garuda-bench

# 1,000 clients need more fds than the usual soft limit of 1024
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# options given to this script come later and win
exec "$build/tests/bench/garuda-bench" --daemon="$build/daemon/garudad" \
	--json="$build/garuda-bench.json" "$@"
