#!/usr/bin/env bash
# prometheus.sh SRC GARUDAD GARCTL — contrib/prometheus checked by promtool: the alert
# rules (check rules, and test rules: each alert fires on its series and not on a
# healthy node), `garctl metrics` from a running garudad with a client held connected
# (check metrics, with the per-uid and per-cgroup quota series, the cgroup label from a
# group named with ", \ and a non-UTF-8 byte where root can make one; and a lint problem fails), and
# garuda-textfile: an answering daemon gives garuda.prom with garuda_up 1 that promtool
# accepts; a dead one gives garuda_up 0 and garctl's exit
# status; no temporary file is left either way. Exit 77 (skip) without promtool.
set -euo pipefail
src=$(cd "$1" && pwd) garudad=$2 garctl=$3
command -v promtool >/dev/null || { echo "SKIP: promtool not installed (Debian package prometheus)"; exit 77; }
prom=$src/contrib/prometheus
work=$(mktemp -d)
daemon_pid=
cleanup() {
	[[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

echo "--- promtool check rules"
promtool check rules "$prom/garuda.rules.yml"
echo "--- promtool test rules"
(cd "$prom" && promtool test rules garuda.rules.test.yml)

echo "--- garctl metrics | promtool check metrics"
"$garudad" --socket="$work/garuda.sock" --control-socket="$work/control.sock" \
	--log-level=warning >"$work/garudad.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $work/control.sock ]] && break; sleep 0.1; done
[[ -S $work/control.sock ]] || { cat "$work/garudad.log"; echo "garudad did not start"; exit 1; }
export GARUDA_CONTROL_SOCKET=$work/control.sock
# a client held connected, so that the per-key quota families have series: from a
# cgroup v2 group whose name needs escaping in a label (" and \) where root can make
# one under the cgroup2 mount, else from wherever this runs
cgmount=$(awk '$0 ~ / - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
cgname="garuda-prom-$$-q\"b\\s"$'\xff' # ", \ and a byte that is not UTF-8
cgdir=
if [[ -n $cgmount ]] && mkdir "$cgmount/$cgname" 2>/dev/null; then cgdir=$cgmount/$cgname; fi
hold() { # connect (no HELLO needed: the session and its charges start at accept), then wait
	exec python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1]); time.sleep(120)' "$work/garuda.sock"
}
if [[ -n $cgdir ]]; then
	(echo "$BASHPID" >"$cgdir/cgroup.procs" && hold) &
else
	hold &
fi
holder=$!
cleanup_holder() { kill "$holder" 2>/dev/null || true; wait "$holder" 2>/dev/null || true; [[ -z $cgdir ]] || rmdir "$cgdir" 2>/dev/null || true; }
trap 'cleanup_holder; cleanup' EXIT
for _ in $(seq 100); do "$garctl" metrics | grep -qx 'garuda_clients 1' && break; sleep 0.1; done
"$garctl" metrics >"$work/metrics.prom"
grep -q '^garuda_quota_uid_used{uid="'"$(id -u)"'",quota="connections"} 1$' "$work/metrics.prom" ||
	{ grep garuda_quota "$work/metrics.prom"; echo "no garuda_quota_uid_used series for the held client"; exit 1; }
if [[ -n $cgdir ]]; then
	# the path's \ as \\ and its \xff as the text \xFF (garctl.1: reversible, valid
	# UTF-8), then the exposition format's escaping of " and \
	want='garuda_quota_cgroup_used{cgroup="'/garuda-prom-$$-q'\"b\\\\s\\xFF",quota="connections"} 1'
	LC_ALL=C grep -qxF "$want" "$work/metrics.prom" ||
		{ grep garuda_quota "$work/metrics.prom"; echo "no escaped garuda_quota_cgroup_used series: $want"; exit 1; }
	echo "cgroup label escaped: $want"
else
	echo "no writable cgroup2: the held client's cgroup is wherever this runs"
fi
grep -q '^garuda_uptime_seconds ' "$work/metrics.prom" || { echo "no garuda_uptime_seconds in garctl metrics"; exit 1; }
# promtool check metrics prints lint problems and exits 1 on any
promtool check metrics <"$work/metrics.prom"
echo "garctl metrics: $(grep -c '^# TYPE' "$work/metrics.prom") families, promtool check metrics clean"
# the check is not vacuous: a counter without _total is a lint problem
if printf '# HELP garuda_x x\n# TYPE garuda_x counter\ngaruda_x 1\n' | promtool check metrics >/dev/null 2>&1; then
	echo "promtool check metrics accepted a counter without _total"; exit 1
fi

echo "--- garuda-textfile"
mkdir "$work/textfile"
GARCTL=$garctl "$prom/garuda-textfile" "$work/textfile"
grep -qx 'garuda_up 1' "$work/textfile/garuda.prom" || { echo "garuda_up 1 missing"; exit 1; }
grep -q '^garuda_clients ' "$work/textfile/garuda.prom" || { echo "metrics missing from garuda.prom"; exit 1; }
promtool check metrics <"$work/textfile/garuda.prom"
[[ $(stat -c %a "$work/textfile/garuda.prom") == 644 ]] || { echo "garuda.prom is not 0644"; exit 1; }

cleanup_holder
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
daemon_pid=
rc=0
GARCTL=$garctl "$prom/garuda-textfile" "$work/textfile" 2>"$work/textfile.err" || rc=$?
((rc != 0)) || { echo "garuda-textfile succeeded with garudad gone"; exit 1; }
grep -qx 'garuda_up 0' "$work/textfile/garuda.prom" || { echo "garuda_up 0 missing with garudad gone"; exit 1; }
promtool check metrics <"$work/textfile/garuda.prom"
left=$(ls -A "$work/textfile")
[[ $left == garuda.prom ]] || { echo "left in the textfile dir: $left"; exit 1; }
echo "garuda-textfile: garuda_up 1 with garudad, garuda_up 0 (exit $rc) without, nothing else left"
