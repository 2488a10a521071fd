#!/usr/bin/env bash
# slurm.sh SRC GARUDAD GARCTL — contrib/slurm in a fake Slurm environment (the
# variables slurmd sets and nothing else, a recording scontrol): the settings come from
# the defaults file only (GARUDA_DEFAULTS here, /etc/default/garuda as shipped), with
# absolute defaults; the prolog passes with garudad
# answering and drains the node (NodeName, State=DRAIN, a reason naming garudad and
# the job) when garudad is stopped (SIGSTOP: garctl times out) or gone, failing
# each time; the epilog does the same with its own reason, and keeps the reason of a
# node that is drained already (a failed prolog's, an admin's); the task prolog exports
# GARUDA_SOCKET only when the socket exists and keeps one the user set; the enroot
# entry bind-mounts the socket directory (never the socket file).
set -euo pipefail
src=$(cd "$1" && pwd) garudad=$2 garctl=$3
slurm=$src/contrib/slurm
work=$(mktemp -d)
daemon_pid=
cleanup() {
	[[ -n $daemon_pid ]] && kill -CONT "$daemon_pid" 2>/dev/null && kill "$daemon_pid" 2>/dev/null
	[[ -n $daemon_pid ]] && wait "$daemon_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# scontrol: "update ..." is recorded; "-o show node N" prints the state in scontrol.state
cat >"$work/scontrol" <<SH
#!/bin/sh
if [ "\$1" = -o ] && [ "\$2" = show ]; then
	echo "NodeName=\$4 Arch=x86_64 CPUTot=1 State=\$(cat "$work/scontrol.state") Partitions=test"
	exit 0
fi
printf '%s\n' "\$@" >"$work/scontrol.args"
SH
chmod +x "$work/scontrol"
echo IDLE >"$work/scontrol.state"
# what slurmd gives a prolog: its own variables, no PATH, nothing else (env -i); the
# site's settings in the defaults file
slurm_env=(SLURMD_NODENAME=gpu7 SLURM_JOB_ID=4242 "SLURM_JOB_UID=$(id -u)" "SLURM_JOB_USER=$(id -un)"
	SLURM_CLUSTER_NAME=test SLURM_SCRIPT_CONTEXT=prolog_slurmd "GARUDA_DEFAULTS=$work/default")
printf '%s\n' "# as a site writes /etc/default/garuda" "GARCTL=$garctl" "SCONTROL=$work/scontrol" \
	"GARUDA_CONTROL_SOCKET=$work/control.sock" "GARUDA_PROLOG_TIMEOUT=1" >"$work/default"
run() { env -i "${slurm_env[@]}" "$@"; }

echo "--- defaults: /etc/default/garuda, absolute paths"
for want in 'defaults=${GARUDA_DEFAULTS:-/etc/default/garuda}' GARCTL=/usr/bin/garctl \
	SCONTROL=/usr/bin/scontrol GARUDA_PROLOG_TIMEOUT=5; do
	grep -qxF "$want" "$slurm/garuda-prolog" || fail "garuda-prolog lacks the default $want"
done

"$garudad" --socket="$work/garuda.sock" --control-socket="$work/control.sock" \
	--log-level=warning >"$work/garudad.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $work/control.sock ]] && break; sleep 0.1; done
[[ -S $work/control.sock ]] || { cat "$work/garudad.log"; fail "garudad did not start"; }

echo "--- prolog, garudad answering"
run "$slurm/garuda-prolog" || fail "prolog failed with garudad answering"
[[ ! -e $work/scontrol.args ]] || fail "prolog called scontrol with garudad answering"

echo "--- task prolog"
out=$(GARUDA_SOCKET_PATH=$work/garuda.sock "$slurm/garuda-task-prolog")
[[ $out == "export GARUDA_SOCKET=$work/garuda.sock" ]] || fail "task prolog said: $out"
out=$(GARUDA_SOCKET_PATH=$work/none.sock "$slurm/garuda-task-prolog")
[[ $out == print* && $out != *export* ]] || fail "task prolog without a socket said: $out"
out=$(GARUDA_SOCKET=/mine.sock GARUDA_SOCKET_PATH=$work/garuda.sock "$slurm/garuda-task-prolog")
[[ -z $out ]] || fail "task prolog overrode the user's GARUDA_SOCKET: $out"

check_drain() { # stage
	[[ -f $work/scontrol.args ]] || fail "$1: no scontrol call"
	mapfile -t args <"$work/scontrol.args"
	[[ ${args[0]} == update && ${args[1]} == NodeName=gpu7 && ${args[2]} == State=DRAIN ]] ||
		fail "$1: scontrol ${args[*]}"
	[[ ${args[3]} == "Reason=garudad not answering (job 4242 $1)"* ]] || fail "$1: ${args[3]}"
	echo "$1 drained: scontrol ${args[*]}"
	rm -f "$work/scontrol.args"
}

echo "--- prolog, garudad stopped (garctl times out)"
kill -STOP "$daemon_pid"
if run "$slurm/garuda-prolog" 2>/dev/null; then fail "prolog passed with garudad stopped"; fi
check_drain prolog
echo "--- epilog after the failed prolog: the node is drained, its reason is kept"
echo IDLE+DRAIN >"$work/scontrol.state"
if run "$slurm/garuda-epilog" 2>"$work/epilog.err"; then fail "epilog passed with garudad stopped"; fi
[[ ! -e $work/scontrol.args ]] || fail "epilog overwrote the drain reason: scontrol $(tr '\n' ' ' <"$work/scontrol.args")"
grep -q 'drained already, reason kept' "$work/epilog.err" || fail "epilog: $(cat "$work/epilog.err")"
echo "epilog: $(cat "$work/epilog.err")"
echo IDLE >"$work/scontrol.state"
kill -CONT "$daemon_pid"

echo "--- epilog, garudad answering, then gone"
run "$slurm/garuda-epilog" || fail "epilog failed with garudad answering"
[[ ! -e $work/scontrol.args ]] || fail "epilog called scontrol with garudad answering"
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
if run "$slurm/garuda-epilog" 2>/dev/null; then fail "epilog passed with garudad gone"; fi
check_drain epilog

echo "--- enroot entries"
mapfile -t lines < <(grep -v '^#' "$slurm/enroot/garuda.fstab" | grep .)
((${#lines[@]} == 1)) || fail "garuda.fstab: ${#lines[@]} entries"
read -r srcdir dst fstype opts <<<"${lines[0]}"
[[ $srcdir == /run/garuda && $dst == /run/garuda ]] || fail "garuda.fstab mounts $srcdir on $dst, not the socket directory"
[[ ,$opts, == *,bind,* && ,$opts, == *,x-create=dir,* && ,$opts, == *,nofail,* ]] ||
	fail "garuda.fstab options: $opts"
grep -qx 'GARUDA_SOCKET=/run/garuda/garuda.sock' "$slurm/enroot/garuda.env" || fail "garuda.env"
echo "enroot: $srcdir -> $dst ($opts)"
