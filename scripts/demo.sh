#!/usr/bin/env bash
# demo.sh — the main job: garudad on a private runtime directory, several client
# processes (examples/workload: simulated GPU streams on the host backend, waiting
# through garudad in one epoll loop each), and a live `garctl top`. Ctrl-C stops
# everything cleanly and prints each client's summary, with garctl's latency for the
# same client (`garctl -o json clients`) under it and why the two differ. A stop by
# Ctrl-C is the demo's normal end: it says so, removes its runtime directory and exits
# 0 (garudad's log is kept only when something failed).
#   DEMO_CLIENTS  client processes (default 4)      DEMO_STREAMS  streams each (default 4)
#   DEMO_SECONDS  stop by itself after this long (default: until Ctrl-C; 20 without a TTY)
#   BUILD_DIR     build directory (default build)
#   DEMO_NO_BUILD=1  use garudad, garctl and the workload already built in BUILD_DIR: no
#                 package check, no meson, no ninja (tests/control/demo_ctrl_c.py)
#   DEMO_LOADAVG  the file read for the load average (default /proc/loadavg; tests)
# The legend, the baseline and the load average are printed before the first frame of
# garctl top and again after its last one (on a terminal top redraws the screen over
# them), with a note when the machine is busy (load >= CPUs), since then every
# latency includes waiting for a CPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${BUILD_DIR:-build}
clients=${DEMO_CLIENTS:-4}
streams=${DEMO_STREAMS:-4}
seconds=${DEMO_SECONDS:-}
[[ -t 1 ]] || seconds=${seconds:-20}

if [[ -z ${DEMO_NO_BUILD:-} ]]; then
	bash scripts/deps.sh --build
	if [[ -f $build/meson-private/coredata.dat ]]; then
		meson setup --reconfigure "$build" >/dev/null
	else
		meson setup "$build" >/dev/null
	fi
	echo "demo: building garudad, garctl and the workload in $build (log: $build/demo-build.log)"
	ninja -C "$build" daemon/garudad client/garctl/garctl examples/workload >"$build/demo-build.log" 2>&1 ||
		{ tail -30 "$build/demo-build.log"; echo "demo: the build failed" >&2; exit 1; }
fi
for b in daemon/garudad client/garctl/garctl examples/workload; do
	[[ -x $build/$b ]] || { echo "demo: no $build/$b (build it, or leave DEMO_NO_BUILD unset)" >&2; exit 1; }
done

rt=$(mktemp -d /tmp/garuda-demo.XXXXXX)
export GARUDA_SOCKET=$rt/garuda.sock GARUDA_CONTROL_SOCKET=$rt/control.sock
pids=()
daemon_pid=
up=         # set once garudad listens and the demo is announced
stopped_by= # INT or TERM when a signal stopped the demo
garctl=("$build/client/garctl/garctl" --socket="$GARUDA_CONTROL_SOCKET")

# garctl's view of the clients while they still run (their sessions end with them)
snapshot() { "${garctl[@]}" -o json clients >"$rt/clients.json" 2>/dev/null || rm -f "$rt/clients.json"; }

# Each workload's own summary (exact latencies it measured), and under it garctl's
# per-client figures for the same pid (clients[].wake_latency: the same percentile
# rule as garctl's GAP50/GAP99 columns), then one line on why they differ.
reconciled=
reconcile() {
	local outs=("$rt"/workload.*.out)
	[[ -z $reconciled && -e ${outs[0]} ]] || return 0
	reconciled=1
	if [[ ! -s $rt/clients.json ]] || ! command -v python3 >/dev/null; then
		cat "${outs[@]}"
		return 0
	fi
	python3 - "$rt/clients.json" "${outs[@]}" <<'PY'
import json, math, re, sys
clients = {c["pid"]: c for c in json.load(open(sys.argv[1])).get("clients", [])}
def fmt(ns):
    return "%.0fns" % ns if ns < 1e3 else "%.1fus" % (ns / 1e3) if ns < 1e6 else "%.1fms" % (ns / 1e6)
def pct(lat, p):  # garctl's rule: the upper edge of the bucket holding the rank
    b = (lat or {}).get("buckets", [])
    total = sum(x["count"] for x in b)
    if not total:
        return "-"
    rank, cum, prev = max(1, math.ceil(p * total)), 0, 0
    for x in b:
        cum += x["count"]
        if cum >= rank:
            return "<=" + fmt(x["le_ns"]) if x["le_ns"] is not None else ">" + fmt(prev)
        prev = x["le_ns"] if x["le_ns"] is not None else prev
    return "-"
for f in sys.argv[2:]:
    for line in open(f):
        print(line.rstrip())
        m = re.match(r"workload\[(\d+)\]", line)
        c = clients.get(int(m.group(1))) if m else None
        if c:
            lat = c.get("wake_latency")
            print("  garctl clients, pid %d: p50 %s p99 %s over %d completions" %
                  (c["pid"], pct(lat, 0.50), pct(lat, 0.99), c["completions"]))
PY
	echo "Why they differ: the workload times kernel end -> its own wake-up exactly (eventfd and"
	echo "  epoll hand-off included); garctl counts word-reached -> scanner-saw and shows the upper"
	echo "  edge of its power-of-two bucket (<=EDGE, up to twice the true delay), sampled a moment"
	echo "  before the workloads ended."
}

# What garctl top's columns mean, what the demo compares them with, and how busy the
# machine is (a busy one delays every wake-up: the workloads' p99 grows with the load)
explain() {
	echo "Legend (garctl top): COMPL/S completions per second; CPU% a scanner's share of one core;"
	echo "  GAP50/GAP99 the scanner's look gap (its previous look at the word -> the look that saw it"
	echo "  reached), shown as <=EDGE: the upper edge of a power-of-two bucket, an upper bound on"
	echo "  word reached -> seen (set against the workloads' own timing when the demo ends);"
	echo "  ARMED waits in flight."
	echo "Baseline: without garudad each of the $((clients * streams)) streams would be waited on by a"
	echo "  thread spinning in cudaStreamSynchronize (or a poll loop): about $((clients * streams)) cores busy."
	echo "  Compare the scanners' CPU% with $((clients * streams * 100))%."
	local l1 l5 l15 cpus
	read -r l1 l5 l15 _ <"${DEMO_LOADAVG:-/proc/loadavg}" || return 0
	cpus=$(nproc)
	echo "Load average: $l1 $l5 $l15 (1, 5, 15 min) on $cpus CPUs."
	if awk -v l="$l1" -v c="$cpus" 'BEGIN { exit !(l >= c) }'; then
		echo "  The machine is busy (load >= CPUs): garudad and the workloads waited for a CPU, which"
		echo "  adds to every latency shown (most to p99); on a quiet machine they are much lower."
	fi
}
explained=
cleanup() {
	trap - INT TERM EXIT
	if ((${#pids[@]})) && [[ -n $daemon_pid && ! -s $rt/clients.json ]]; then snapshot; fi
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
	reconcile
	if [[ -n $up && -z $explained ]]; then
		explained=1
		echo
		explain
	fi
	if [[ -n $daemon_pid ]]; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	if [[ ${demo_failed:-1} == 0 ]]; then
		rm -rf "$rt"
	else
		echo "demo: something failed; garudad's log is kept in $rt/garudad.log" >&2
	fi
	case $stopped_by in
	INT) echo "demo: stopped by Ctrl-C (the demo's normal end)" ;;
	TERM) echo "demo: stopped by SIGTERM" ;;
	*) echo "demo: stopped" ;;
	esac
	echo
	echo "Next steps:"
	echo "  - your own garudad: $build/daemon/garudad   (as a user it listens in \$XDG_RUNTIME_DIR/garuda;"
	echo "    libgaruda and garctl find it there; garudad --help, man docs/garudad.8)"
	echo "  - write a client: docs/client.md, examples/minimal.c (pkg-config --cflags --libs garuda;"
	echo "    against this build tree: PKG_CONFIG_PATH=$build/meson-uninstalled, docs/client.md)"
	echo "  - inspect: $build/client/garctl/garctl status | clients | top   (garctl help COMMAND)"
	echo "  - system service: install the Debian packages (docs/deploy.md: dpkg-buildpackage -b;"
	echo "    garuda.socket starts with them), or meson install, systemd-sysusers, then"
	echo "    systemctl enable --now garuda.socket garuda-control.socket"
}
# Ctrl-C (SIGINT) or SIGTERM: the demo's end, not a failure (a failure already
# recorded in demo_failed still counts). The trap runs once garctl top, which the
# terminal's SIGINT ends too, has returned, before the line after it could record
# the run as good: so it decides here. Ctrl-C exits 0 once the demo is up.
on_stop() {
	stopped_by=$1
	demo_failed=${demo_failed:-0}
	cleanup
	if [[ $1 == INT ]]; then
		[[ -n $up ]] && exit 0
		exit 130
	fi
	exit 143
}
trap 'on_stop INT' INT
trap 'on_stop TERM' TERM
trap cleanup EXIT

# garudad and the workloads run in sessions of their own (setsid: no fork, $! is
# theirs): the terminal's Ctrl-C reaches garctl top and this script only, and
# cleanup() samples the clients (garctl clients) before it stops them
setsid "$build/daemon/garudad" --runtime-dir="$rt" --log-level=notice 2>"$rt/garudad.log" &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $GARUDA_SOCKET ]] && break; sleep 0.05; done
[[ -S $GARUDA_SOCKET ]] || { cat "$rt/garudad.log"; echo "demo: garudad did not start" >&2; exit 1; }
echo "demo: garudad pid $daemon_pid on $rt; $clients clients x $streams simulated streams"
up=1
echo
explain
echo

for i in $(seq "$clients"); do
	# the summary goes to a file: printed at the end beside garctl's figures
	setsid "$build/examples/workload" -s "$streams" ${seconds:+-t "$seconds"} >"$rt/workload.$i.out" &
	pids+=($!)
done

if [[ -n $seconds ]]; then
	# bounded run (no terminal, or DEMO_SECONDS set): batch-mode top once a second
	"${garctl[@]}" top -b -d 1 -n "$((seconds > 1 ? seconds - 1 : 1))" || true
	snapshot
	status=0
	for p in "${pids[@]}"; do wait "$p" || status=1; done
	pids=()
	echo
	reconcile
	echo
	"${garctl[@]}" status || true
	demo_failed=$status
	exit $status
else
	"${garctl[@]}" top || true
	demo_failed=0
fi
