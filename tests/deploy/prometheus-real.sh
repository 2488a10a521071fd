#!/usr/bin/env bash
# prometheus-real.sh SRC GARUDAD GARCTL — contrib/prometheus with a real Prometheus 2.42
# and node_exporter 1.5 (Debian's prometheus, prometheus-node-exporter): garudad
# (quota.uid.connections 1), garuda-textfile writing into node_exporter's textfile
# directory, node_exporter scraped every second by a Prometheus that loads the shipped
# garuda.rules.yml, all on 127.0.0.1 and in a temp dir. Checked:
#   - the rules load (health ok) and garuda_up 1 and garudad's series reach Prometheus;
#   - a real quota refusal (a second connection of the same uid) fires
#     GarudaQuotaRefusals, whose summary says "refused 1 requests" (whole number) of
#     the uid by quota.uid.connections: the series garuda_quota_refusals_total{uid,
#     cgroup,key} appears with that refusal at 1, which increase() alone misses;
#   - GarudaDown goes pending on a stale garuda.prom (mtime 10 min ago), on a missing
#     one (node_exporter up, no garuda_up series) and, once those clear, on garuda_up 0
#     (garudad gone). Its `for: 2m` firing is covered by
#     promtool test rules (test deploy-prometheus).
# No mounts; the host is checked at the end for leftover processes and network changes.
# Exit 77 (skip) naming the package when a tool is missing.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
src=$(cd "$1" && pwd) garudad=$2 garctl=$3
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
for t in prometheus:prometheus prometheus-node-exporter:prometheus-node-exporter curl:curl python3:python3; do
	command -v "${t%%:*}" >/dev/null || skip "${t%%:*} not installed (Debian package ${t#*:})"
done
source "$here/hostcheck.sh"
export ENGINE_PROCS='prometheus|prometheus-node-exporter|prometheus-node'
prom=$src/contrib/prometheus
work=$(mktemp -d /tmp/garuda-prom.XXXXXX)
export HOSTCHECK_MARK=$work
start=$SECONDS
pids=()
holder=
finish() {
	local rc=$? p
	set +e
	if ((rc != 0)); then
		for f in "$work"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -n 15 "$f"; }; done
	fi
	[[ -z $holder ]] || { kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null; }
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	hostcheck_settle
	hostcheck_snapshot "$work/host.after"
	hostcheck_diff "$work/host.before" "$work/host.after" || rc=1
	rm -rf "$work"
	exit "$rc"
}
hostcheck_snapshot "$work/host.before"
trap finish EXIT

echo '{"quota": {"uid": {"connections": 1}}}' >"$work/garudad.json"
"$garudad" --config="$work/garudad.json" --socket="$work/garuda.sock" \
	--control-socket="$work/control.sock" --log-level=notice >"$work/garudad.log" 2>&1 &
garudad_pid=$!
pids+=("$garudad_pid")
for _ in $(seq 100); do [[ -S $work/control.sock ]] && break; sleep 0.1; done
[[ -S $work/control.sock ]] || fail "garudad did not start"
export GARUDA_CONTROL_SOCKET=$work/control.sock GARCTL=$garctl
mkdir "$work/textfile"
"$prom/garuda-textfile" "$work/textfile"

read -r pn pp < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1", 0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
prometheus-node-exporter --web.listen-address="127.0.0.1:$pn" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$work/textfile" >"$work/node-exporter.log" 2>&1 &
pids+=($!)
cat >"$work/prometheus.yml" <<CONF
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: ["$prom/garuda.rules.yml"]
scrape_configs:
  - job_name: node
    static_configs: [{targets: ["127.0.0.1:$pn"]}]
CONF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
	--web.listen-address="127.0.0.1:$pp" --log.level=warn >"$work/prometheus.log" 2>&1 &
pids+=($!)
api() { curl -sfG --max-time 5 "http://127.0.0.1:$pp/api/v1/$1" "${@:2}"; }
query() { api query --data-urlencode "query=$1" | python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(" ".join(x["value"][1] for x in r))'; }
alerts() { # NAME: "state summary [file]" per alert
	api alerts | python3 -c 'import json, sys
for a in json.load(sys.stdin)["data"]["alerts"]:
    if a["labels"]["alertname"] == sys.argv[1]:
        print(a["state"], a["annotations"]["summary"], a["labels"].get("file", ""))' "$1"
}
wait_for() { # DESC CMD...: until CMD succeeds, 30 s at most (the machine may be loaded)
	local d=$1
	shift
	for _ in $(seq 300); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "targets: $(api targets | head -c 600)"
	! declare -F rules >/dev/null || echo "rules, now: $(rules | tr '\n' ' ')"
	fail "$d: not within 30 s"
}

echo "--- rules load, garuda metrics arrive"
wait_for "Prometheus ready" api status/config
rules() { api rules | python3 -c 'import json, sys
for g in json.load(sys.stdin)["data"]["groups"]:
    for r in g["rules"]:
        print(r["name"], r["health"])'; }
shipped=$(grep -c '^ *- alert:' "$prom/garuda.rules.yml")
rules_ok() { [[ $(rules | grep -c ' ok$') == "$shipped" ]]; }
wait_for "the $shipped shipped rules loaded and evaluated with health ok" rules_ok
rules
up() { [[ $(query garuda_up) == 1 ]]; }
wait_for "garuda_up 1 in Prometheus" up
for m in garuda_clients garuda_uptime_seconds garuda_quota_limit; do
	[[ -n $(query "$m") ]] || fail "$m did not reach Prometheus"
done
echo "garuda_up 1 and garudad's series arrived after $((SECONDS - start)) s"

echo "--- a quota refusal fires GarudaQuotaRefusals"
# no refusal yet: garudad exports a refusal series from its first refusal on
[[ -z $(query garuda_quota_refusals_total) ]] || fail "a refusal series before any refusal"
python3 -c 'import socket, sys, time
a = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); a.connect(sys.argv[1])
b = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); b.connect(sys.argv[1])
m = b.recv(4096)
assert b"quota.uid.connections exceeded" in m, m
time.sleep(600)' "$work/garuda.sock" &
holder=$!
refused() { [[ $(query garuda_quota_refusals_total) == 1 ]] || "$prom/garuda-textfile" "$work/textfile"; [[ $(query garuda_quota_refusals_total) == 1 ]]; }
wait_for "garuda_quota_refusals_total 1 in Prometheus" refused
[[ $(query 'garuda_quota_refusals_total{uid="'"$(id -u)"'",key="quota.uid.connections"}') == 1 ]] ||
	fail "no garuda_quota_refusals_total{uid=\"$(id -u)\",key=\"quota.uid.connections\"} 1"
firing() { alerts GarudaQuotaRefusals | grep -q '^firing '; }
wait_for "GarudaQuotaRefusals firing" firing
a=$(alerts GarudaQuotaRefusals)
echo "GarudaQuotaRefusals: $a (increase: $(query 'increase(garuda_quota_refusals_total[10m])'))"
[[ $a == "firing garudad on 127.0.0.1:$pn refused 1 requests of uid $(id -u) by quota.uid.connections " ]] ||
	fail "alert text: $a"

# node_exporter takes every family of garuda.prom: none may clash with its own (it
# exports process_* itself: garudad's are garuda_process_*)
! grep -q "error gathering metrics" "$work/node-exporter.log" ||
	fail "node_exporter refused garuda.prom: $(grep -m1 "error gathering metrics" "$work/node-exporter.log")"

echo "--- GarudaDown pending on a stale garuda.prom"
touch -d '10 minutes ago' "$work/textfile/garuda.prom"
stale() { alerts GarudaDown | grep -q "^pending .* $work/textfile/garuda.prom$"; }
wait_for "GarudaDown pending on the stale file" stale
echo "GarudaDown: $(alerts GarudaDown)"
"$prom/garuda-textfile" "$work/textfile"
clear() { [[ -z $(alerts GarudaDown) ]]; }
wait_for "GarudaDown cleared by a fresh file" clear

echo "--- GarudaDown pending on a missing garuda.prom (node_exporter up, no garuda_up)"
rm "$work/textfile/garuda.prom"
missing() { [[ -z $(query garuda_up) ]] && alerts GarudaDown | grep -q '^pending garudad on .* does not answer $'; }
wait_for "GarudaDown pending with no garuda_up series" missing
echo "GarudaDown: $(alerts GarudaDown) (garuda_up: none; up: $(query 'up{job="node"}'))"
"$prom/garuda-textfile" "$work/textfile"
wait_for "GarudaDown cleared by the file's return" clear

echo "--- GarudaDown pending on garuda_up 0"
kill "$garudad_pid"; wait "$garudad_pid" 2>/dev/null || true
if "$prom/garuda-textfile" "$work/textfile" 2>/dev/null; then fail "garuda-textfile succeeded with garudad gone"; fi
down() { alerts GarudaDown | grep -q '^pending garudad on .* does not answer $'; }
wait_for "GarudaDown pending on garuda_up 0" down
echo "GarudaDown: $(alerts GarudaDown)"
[[ $(query garuda_up) == 0 ]] || fail "garuda_up is not 0 in Prometheus"
echo "prometheus: all steps passed in $((SECONDS - start)) s"
