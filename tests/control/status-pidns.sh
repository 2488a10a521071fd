#!/usr/bin/env bash
# status-pidns.sh — issue 30, item 9: garctl status from the host showed "PID: 1" for
# a garudad in a container (its own pid namespace). garudad here runs in a new pid
# namespace (unshare --pid), where it is pid 1; garctl status must show that and its
# pid on this side (SO_PEERCRED). Needs root and unshare: skips (77) otherwise.
#   status-pidns.sh GARUDAD GARCTL
set -euo pipefail
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (a pid namespace)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: needs unshare (util-linux)"; exit 77; }
garudad=$1 garctl=$2
work=$(mktemp -d /tmp/garuda-pidns.XXXXXX)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; [[ -n ${here-} ]] && kill "$here" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
unshare --pid --fork --kill-child=SIGTERM --mount-proc env GARUDAD_DEFAULT_CONFIG= "$garudad" --no-config \
	--socket="$work/garuda.sock" --control-socket="$work/control.sock" --event-loop=epoll \
	>"$work/garudad.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
	[[ -S $work/control.sock ]] && break
	sleep 0.05
done
[[ -S $work/control.sock ]] || { cat "$work/garudad.log"; echo "SKIP: garudad did not start in a pid namespace"; exit 77; }
out=$("$garctl" --no-pager --socket="$work/control.sock" status)
line=$(grep '^ *PID:' <<<"$out") || { echo "$out"; echo "FAIL: no PID row"; exit 1; }
echo "$line"
here=$(sed -n 's/.*PID: *1 (in its own pid namespace; \([0-9]*\) here)$/\1/p' <<<"$line")
[[ -n $here ]] || { echo "FAIL: the PID row does not give garudad's pid here"; exit 1; }
[[ $(cat "/proc/$here/comm" 2>/dev/null) == garudad ]] || { echo "FAIL: pid $here is not garudad"; exit 1; }
# JSON keeps garudad's own answer
"$garctl" --socket="$work/control.sock" -j status | grep -q '"pid": *1[,}]' ||
	{ echo "FAIL: garctl -j status changed the pid garudad reported"; exit 1; }
echo PASS
