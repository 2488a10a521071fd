#!/usr/bin/env bash
# socket-group.sh GARUDAD — the config key socket_group as a numeric gid, which the
# container deployment relies on (contrib/kubernetes: garudad-configmap.yaml gives
# "61000", example-pod.yaml's supplementalGroups hold 61000, and the image has no group
# database): "61000" and 61000 (a JSON number) give the client socket that gid with no
# group lookup, mode 0660; a gid that is not below 4294967295 is refused, naming the
# key; a name is still looked up. Exit 77 (skip) without root (chown to another gid).
set -euo pipefail
garudad=$1
((EUID == 0)) || { echo "SKIP: needs root (chown of the socket to a gid root is not in)"; exit 77; }
work=$(mktemp -d)
pid=
cleanup() { [[ -z $pid ]] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [[ ! -f $work/log ]] || cat "$work/log"; exit 1; }
start() { # CONFIG-JSON: garudad on it, waits for the sockets
	echo "$1" >"$work/c.json"
	"$garudad" --config="$work/c.json" --socket="$work/g.sock" --control-socket="$work/c.sock" \
		--log-level=info >"$work/log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do [[ -S $work/c.sock ]] && return; sleep 0.1; done
	fail "garudad did not start with $1"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
getent group 61000 >/dev/null && echo "note: gid 61000 has a name here ($(getent group 61000))"
for cfg in '{"socket_group": "61000"}' '{"socket_group": 61000}'; do
	start "$cfg"
	got=$(stat -c '%g %a' "$work/g.sock")
	[[ $got == "61000 660" ]] || fail "$cfg: the client socket is gid/mode $got, not 61000 660"
	grep -q 'does not exist' "$work/log" && fail "$cfg: garudad looked the gid up as a name"
	echo "$cfg: client socket gid 61000, mode 0660"
	stop
done
for bad in '{"socket_group": "4294967295"}' '{"socket_group": 4294967295}' '{"socket_group": -1}'; do
	echo "$bad" >"$work/bad.json"
	rc=0
	"$garudad" --config="$work/bad.json" --check-config >"$work/bad.out" 2>&1 || rc=$?
	((rc == 2)) && grep -q socket_group "$work/bad.out" || fail "$bad: exit $rc, $(cat "$work/bad.out")"
	echo "$bad: refused ($(head -n 1 "$work/bad.out"))"
done
start '{"socket_group": "garuda-no-such-group"}'
grep -q 'group garuda-no-such-group does not exist' "$work/log" || fail "a group name was not looked up"
echo "a name is looked up as before"
