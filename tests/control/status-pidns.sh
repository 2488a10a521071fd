#!/usr/bin/env bash
# status-pidns.sh — issue 30, item 9: garctl status from the host showed "PID: 1" for
# a garudad in a container (its own pid namespace). garudad here runs in a new pid
# namespace (unshare --pid), where it is pid 1; garctl status must show that and its
# pid on this side (SO_PEERCRED). Needs root and unshare, and a pid namespace allowed
# here: skips (77) otherwise; past that, a garudad that does not start fails (1).
#   status-pidns.sh GARUDAD GARCTL
set -euo pipefail
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (a pid namespace)"; exit 77; }
command -v unshare >/dev/null || { echo "SKIP: needs unshare (util-linux)"; exit 77; }
# root may still be refused a pid namespace (a container without CAP_SYS_ADMIN): that
# is a missing prerequisite; once this passes, a garudad that does not start fails
unshare --pid --fork --kill-child=SIGKILL --mount-proc true 2>/dev/null ||
	{ echo "SKIP: unshare --pid --mount-proc is not permitted here"; exit 77; }
garudad=$1 garctl=$2
work=$(mktemp -d /tmp/garuda-pidns.XXXXXX)
pid= here=
# SIGKILL: nothing may outlive the test (the namespace's pid 1, garudad, dies with
# unshare by --kill-child; its pid here too, in case)
trap '{ [[ -n $pid ]] && kill -KILL "$pid"; [[ -n $here ]] && kill -KILL "$here"; wait; } 2>/dev/null; rm -rf "$work"' EXIT
unshare --pid --fork --kill-child=SIGKILL --mount-proc env GARUDAD_DEFAULT_CONFIG= "$garudad" --no-config \
	--socket="$work/garuda.sock" --control-socket="$work/control.sock" --event-loop=epoll \
	>"$work/garudad.log" 2>&1 &
pid=$!
# a hang deadline only (a loaded machine may be slow to start it)
deadline=$((SECONDS + 30))
until [[ -S $work/control.sock ]]; do
	if ! kill -0 "$pid" 2>/dev/null || ((SECONDS >= deadline)); then
		cat "$work/garudad.log"
		echo "FAIL: garudad did not start in a pid namespace (within 30 s)"
		exit 1
	fi
	sleep 0.05
done
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
