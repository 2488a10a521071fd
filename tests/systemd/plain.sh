#!/usr/bin/env bash
# plain.sh GARUDAD SD_LOAD — the restart accounting of the systemd suite without systemd:
# garudad started here on a private directory, 8 clients x 1104 armed streams
# (sd_load), then garudad SIGKILLed and started again at once on the same socket (no
# waiting: the single-instance lock, not a probe, decides). Checks what sd_load checks
# (every sequence reported exactly once, one reconnection each) and that the new
# garudad stops on SIGTERM.
set -uo pipefail
garudad=$1 load=$2
dir=$(mktemp -d /tmp/garuda-plain.XXXXXX)
cleanup() {
	[[ -f $dir/pid ]] && kill -KILL "$(cat "$dir/pid")" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
printf '{ "socket_group": "", "control_group": "" }\n' >"$dir/garudad.json"
start="$garudad --config=$dir/garudad.json --socket=$dir/g.sock --control-socket=$dir/c.sock"
start_bg() { # the daemon outlives the shell that starts it (sd_load's system())
	setsid $start >>"$dir/log" 2>&1 </dev/null &
	echo $! >"$dir/pid"
}
start_bg
for ((i = 0; i < 200; i++)); do
	[[ -S $dir/g.sock ]] && break
	sleep 0.05
done
GARUDA_SOCKET=$dir/g.sock "$load" 8 1104 \
	"kill -KILL \$(cat $dir/pid); setsid $start >>$dir/log 2>&1 </dev/null & echo \$! >$dir/pid"
rc=$?
pid=$(cat "$dir/pid")
kill -TERM "$pid"
for ((i = 0; i < 200; i++)); do
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.05
done
if kill -0 "$pid" 2>/dev/null; then
	echo "FAIL: garudad did not exit on SIGTERM"
	rc=1
fi
rm -f "$dir/pid"
if ((rc)); then
	cat "$dir/log"
	exit 1
fi
echo "all checks passed"
