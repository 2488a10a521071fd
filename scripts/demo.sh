#!/usr/bin/env bash
# demo.sh — the main job: garudad on a private runtime directory, several client
# processes (examples/workload: simulated GPU streams on the host backend, waiting
# through garudad in one epoll loop each), and a live `garctl top`. Ctrl-C stops
# everything cleanly and prints each client's summary.
#   DEMO_CLIENTS  client processes (default 4)      DEMO_STREAMS  streams each (default 4)
#   DEMO_SECONDS  stop by itself after this long (default: until Ctrl-C; 20 without a TTY)
#   BUILD_DIR     build directory (default build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${BUILD_DIR:-build}
clients=${DEMO_CLIENTS:-4}
streams=${DEMO_STREAMS:-4}
seconds=${DEMO_SECONDS:-}
[[ -t 1 ]] || seconds=${seconds:-20}

bash scripts/deps.sh
if [[ -f $build/meson-private/coredata.dat ]]; then
	meson setup --reconfigure "$build" >/dev/null
else
	meson setup "$build" >/dev/null
fi
echo "demo: building garudad, garctl and the workload in $build (log: $build/demo-build.log)"
ninja -C "$build" daemon/garudad client/garctl/garctl examples/workload >"$build/demo-build.log" 2>&1 ||
	{ tail -30 "$build/demo-build.log"; echo "demo: the build failed" >&2; exit 1; }

rt=$(mktemp -d /tmp/garuda-demo.XXXXXX)
export GARUDA_SOCKET=$rt/garuda.sock GARUDA_CONTROL_SOCKET=$rt/control.sock
pids=()
daemon_pid=
cleanup() {
	trap - INT TERM EXIT
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n $daemon_pid ]]; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	if [[ ${demo_failed:-1} == 0 ]]; then
		rm -rf "$rt"
	else
		echo "demo: something failed; garudad's log is kept in $rt/garudad.log" >&2
	fi
	echo "demo: stopped"
	echo
	echo "Next steps:"
	echo "  - your own garudad: $build/daemon/garudad   (as a user it listens in \$XDG_RUNTIME_DIR/garuda;"
	echo "    libgaruda and garctl find it there; garudad --help, man docs/garudad.8)"
	echo "  - write a client: docs/client.md, examples/minimal.c (pkg-config --cflags --libs garuda)"
	echo "  - inspect: $build/client/garctl/garctl status | clients | top   (garctl help COMMAND)"
	echo "  - system service: systemctl enable --now garuda.socket garuda-control.socket"
}
trap cleanup INT TERM EXIT

"$build/daemon/garudad" --runtime-dir="$rt" --log-level=notice 2>"$rt/garudad.log" &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $GARUDA_SOCKET ]] && break; sleep 0.05; done
[[ -S $GARUDA_SOCKET ]] || { cat "$rt/garudad.log"; echo "demo: garudad did not start" >&2; exit 1; }
echo "demo: garudad pid $daemon_pid on $rt; $clients clients x $streams simulated streams"
echo
echo "Legend (garctl top): COMPL/S completions per second; CPU% a scanner's share of one core;"
echo "  P50/P99 wake latency, shown as <=EDGE: the upper edge of a power-of-two bucket, an upper"
echo "  bound (a workload timing its own wake-ups sees figures up to half that); ARMED waits in flight."
echo "Baseline: without garudad each of the $((clients * streams)) streams would be waited on by a"
echo "  thread spinning in cudaStreamSynchronize (or a poll loop): about $((clients * streams)) cores busy."
echo "  Compare the scanners' CPU% below (all streams together) with $((clients * streams * 100))%."
echo

for i in $(seq "$clients"); do
	"$build/examples/workload" -s "$streams" ${seconds:+-t "$seconds"} &
	pids+=($!)
done

garctl=("$build/client/garctl/garctl" --socket="$GARUDA_CONTROL_SOCKET")
if [[ -n $seconds ]]; then
	# bounded run (no terminal, or DEMO_SECONDS set): batch-mode top once a second
	"${garctl[@]}" top -b -d 1 -n "$((seconds > 1 ? seconds - 1 : 1))" || true
	status=0
	for p in "${pids[@]}"; do wait "$p" || status=1; done
	pids=()
	"${garctl[@]}" status || true
	demo_failed=$status
	exit $status
else
	"${garctl[@]}" top || true
	demo_failed=0
fi
