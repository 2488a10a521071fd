#!/usr/bin/env bash
# run.sh SCENARIO — garuda's units under a real systemd 252 (PID 1 of private
# namespaces, tests/systemd/sdns.sh). Scenarios:
#   units            sysusers, socket activation of both sockets, Type=notify READY and
#                    STATUS=, reload (in force when systemctl returns, 50 times; a bad
#                    file fails it; a removed key is its default again), group access
#                    to the client socket, garctl for root only, `systemctl stop` exits 0
#   restart-kill     8 clients x 1104 armed streams; SIGKILL of garudad (Restart=)
#   restart-upgrade  the same; `systemctl restart garuda` (an upgrade)
#   restart-watchdog the same; SIGSTOP: the watchdog (the unit's WatchdogSec) kills it
#   restart-stopkill the same; SIGSTOP, 8 s, SIGKILL (not registered: the watchdog's
#                    case without the watchdog)
#   metrics          garuda-metrics.service and .timer as shipped: garuda.prom in
#                    /var/lib/prometheus/node-exporter (written, parses, 0644), another
#                    directory by a drop-in, the timer's run, garuda_up 0 without garudad
#   tenant           per-tenant keys under the shipped unit: clients of uid gtin and of
#                    root, each in a scope of its own (systemd-run --scope, as a job or
#                    a unit would be), show their cgroup and command name in garctl
#                    clients as /proc shows them, and quota.cgroup.connections 1
#                    refuses a second connection from the tenant's cgroup only
#   tenant-invisible the same with ProtectProc=invisible added (a drop-in: /proc/PID
#                    of other users hidden from garudad): the cgroup key from the
#                    peer's pidfd (Linux 6.13; before, the log says why there is none),
#                    no command name, and the log says it is hidden
# The restart scenarios check, through tests/systemd/sd_load, that every signalled
# sequence is reported exactly once and print the gaps (line "gap ...").
# Environment (from meson): UNIT_SERVICE (garuda.service configured for the build
# tree), UNIT_SRC (systemd/), BUILD_ROOT, SD_LOAD, GARCTL, EXAMPLE_MINIMAL (all run
# from copies in the namespace: sdns.sh's sd_stage). SD_DROPIN: extra
# [Service] lines for garuda.service (e.g. RestartSec=100ms, to compare); SD_CLIENTS,
# SD_STREAMS: the load (default 8 and 1104; the checks want >= 1000 armed per client).
# run.sh SCENARIO packaged: the same on a node made to look as if garuda's packages
# were installed (sdns.sh, SD_HOST=packaged), in the namespace's copy of /etc only.
# Every scenario checks at the end that the host's passwd, group, shadow, gshadow and
# garuda files are as they were.
# Exit 77 (skipped) only when this machine refuses the namespaces, with the reason.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/sdns.sh"

scenario=${1:?scenario}
# run.sh SCENARIO packaged: on a node made to look as if garuda's packages were
# installed (sdns.sh, sd_fake_packaged), whatever this host has
if [[ ${2:-} == packaged ]]; then
	export SD_HOST=packaged
fi
if [[ $scenario == tenant-invisible ]]; then
	SD_DROPIN="ProtectProc=invisible${SD_DROPIN:+$'\n'$SD_DROPIN}"
fi
fails=0
ok() { echo "ok: $*"; }
bad() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}
prop() { sd_ctl show -p "$2" --value "$1"; }

if ! why=$(sd_can_run); then
	echo "SKIP: $why"
	exit 77
fi

# the host's files the suite copies and fakes: unchanged by the end
host_etc() {
	local f
	for f in /etc/passwd /etc/group /etc/shadow /etc/gshadow /etc/default/garuda \
		/etc/garuda/garudad.json; do
		if [[ -e $f ]]; then md5sum "$f"; else echo "none $f"; fi
	done
}
trap 'sd_teardown' EXIT
etc_before=$(host_etc)
t0=$(date +%s%N)
sd_setup || exit 1
echo "systemd up in $((($(date +%s%N) - t0) / 1000000)) ms (PID $SD_PID on the host)"
# what runs inside runs from copies the namespace and its users can reach (sdns.sh)
EXAMPLE_MINIMAL=$(sd_stage "$EXAMPLE_MINIMAL") && SD_LOAD=$(sd_stage "$SD_LOAD") &&
	GARCTL=$(sd_stage "$GARCTL") || exit 1
echo "garudad: $(sd_ctl show -p ExecStart --value garuda.service | sed -n 's/.*path=\([^ ;]*\).*/\1/p')"

dump() {
	echo "---- garudad log"
	tail -n 40 "$T/logs/garudad.log" 2>/dev/null
	echo "---- systemctl"
	sd_ctl status garuda.service garuda.socket garuda-control.socket
	sd_ctl show -p Result -p ExecMainStatus -p NRestarts -p MainPID garuda.service
}

# config_value KEY: garctl config's value of KEY (a.b.c for nested keys)
config_value() {
	sd_in "$GARCTL" --json=short config | python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k]
print(v)' "$1"
}

# what the namespace's host looks like, where it matters to the suite
host_checks() {
	local gr=$T/root/etc/group members
	members=$(sd_in getent group garuda | cut -d: -f4)
	if [[ ${SD_HOST:-} == packaged ]]; then
		# its own two operators, then gtin; a host that is itself a packaged node
		# brings its own members along (its /etc/group is the copy's start)
		check "packaged node: group garuda has members of its own ($members)" \
			grep -qE '(^|,)gtopa,gtopb,gtin$' <<<"$members"
		check "packaged node: /etc/default/garuda says GARUDAD_OPTIONS=\"\"" \
			sd_in grep -qx 'GARUDAD_OPTIONS=""' /etc/default/garuda
		check "packaged node: /etc/garuda/garudad.json exists" sd_in test -s /etc/garuda/garudad.json
	fi
	check "gtin is a member of group garuda ($members)" grep -qw gtin <<<"$members"
	check "gtout is not" test "$(sd_in id -nG gtout)" = gtout
}


units() {
	local pw=$T/root/etc/passwd gr=$T/root/etc/group
	host_checks
	check "systemd-sysusers made user garuda in group garuda" \
		grep -q "^garuda:x:[0-9]*:$(awk -F: '$1=="garuda"{print $3}' "$gr"):" "$pw"
	check "both sockets listen" test "$(prop garuda.socket SubState)$(prop garuda-control.socket SubState)" = listeninglistening
	check "garuda.service not started before the first connection" test "$(prop garuda.service ActiveState)" = inactive
	check "client socket root:garuda 0660" test "$(sd_in stat -c '%U:%G %a' /run/garuda/garuda.sock)" = "root:garuda 660"

	# client socket activation: a real client (the example) connects, signals, waits
	check "a client (root) is served through socket activation" sd_in "$EXAMPLE_MINIMAL"
	check "garuda.service active after the first connection" test "$(prop garuda.service ActiveState)" = active
	check "Type=notify: running (READY=1 seen)" test "$(prop garuda.service SubState)" = running
	check "garudad reads the test's config (GARUDAD_OPTIONS from the test's environment file)" \
		grep -q '"config_path": *"/run/gt/garudad.json"' <<<"$(sd_in "$GARCTL" --json=short config)"
	local status
	status=$(sd_ctl status garuda.service)
	check "STATUS= shown by systemctl status" grep -q 'Status: "clients=[0-9]* armed=[0-9]* completions=[0-9]*"' <<<"$status"
	check "the daemon runs as garuda" test "$(sd_in ps -o user= -p "$(prop garuda.service MainPID)")" = garuda

	# group access
	check "a client in group garuda is served" sd_in setpriv --reuid=gtin --regid=gtin --init-groups "$EXAMPLE_MINIMAL"
	local out
	out=$(sd_in setpriv --reuid=gtout --regid=gtout --init-groups "$EXAMPLE_MINIMAL" 2>&1)
	check "a client outside group garuda is refused (exit 1)" test $? -eq 1
	check "... with permission denied" grep -qi "permission denied" <<<"$out"

	# garctl: root yes, others no
	check "garctl status works for root" sd_in "$GARCTL" status
	out=$(sd_in setpriv --reuid=gtin --regid=gtin --init-groups "$GARCTL" status 2>&1)
	check "garctl is refused for a user in group garuda" test $? -ne 0
	check "... with permission denied" grep -qi "permission denied" <<<"$out"

	# reload applies the config before systemctl returns (ExecReload= is garctl reload)
	printf '{ "log_level": "info", "spin_us": 77, "quota": { "uid": { "segments": 3 } } }\n' >"$T/garudad.json"
	local pid
	pid=$(prop garuda.service MainPID)
	check "systemctl reload exits 0" sd_ctl reload garuda.service
	check "reload kept the process" test "$(prop garuda.service MainPID)" = "$pid"
	check "reload applied spin_us 77" test "$(config_value spin_us)" = 77
	check "... and quota.uid.segments 3" test "$(config_value quota.uid.segments)" = 3
	local i n=0 v=
	for ((i = 1; i <= 50; i++)); do
		printf '{ "log_level": "info", "spin_us": %d }\n' $((100 + i)) >"$T/garudad.json"
		sd_ctl reload garuda.service || break
		v=$(config_value spin_us)
		[[ $v == $((100 + i)) ]] || break
		n=$i
	done
	check "50 reloads, the config read at once after each: each in force ($n ok${v:+, the last read spin_us $v})" test "$n" = 50
	check "the key removed from the file is its default again (quota.uid.segments 256)" \
		test "$(config_value quota.uid.segments)" = 256
	check "... and garudad's log says so" grep -q 'reload: quota.uid.segments: 3 -> 256$' "$T/logs/garudad.log"
	printf '{ "spin_us": "fast" }\n' >"$T/garudad.json"
	local out
	out=$(sd_ctl reload garuda.service 2>&1)
	check "a bad file: systemctl reload fails" test $? -ne 0
	check "... the running config is kept (spin_us 150)" test "$(config_value spin_us)" = 150
	check "... in the same process, still running" \
		test "$(prop garuda.service MainPID)/$(prop garuda.service SubState)" = "$pid/running"
	check "... and the log says why" grep -q 'reload failed, keeping the running configuration: .*garudad.json: spin_us: expected a number' "$T/logs/garudad.log"
	printf '{ "log_level": "info" }\n' >"$T/garudad.json"

	# stop exits 0; control socket activation afterwards
	check "systemctl stop exits 0" sd_ctl stop garuda.service
	check "garudad exited with status 0" test "$(prop garuda.service ExecMainStatus)/$(prop garuda.service Result)" = 0/success
	check "sockets still listen after stop" test "$(prop garuda.socket SubState)$(prop garuda-control.socket SubState)" = listeninglistening
	check "the control socket activates garuda.service (garctl status)" sd_in "$GARCTL" status
	check "garuda.service active again" test "$(prop garuda.service ActiveState)" = active
	check "and it serves clients" sd_in "$EXAMPLE_MINIMAL"
	check "systemctl stop exits 0 again" sd_ctl stop garuda.service
	check "garudad exited with status 0 again" test "$(prop garuda.service ExecMainStatus)/$(prop garuda.service Result)" = 0/success
}

restart() {
	local kind=$1 cmd
	case $kind in
	kill) cmd='kill -KILL $(systemctl show -p MainPID --value garuda.service)' ;;
	upgrade) cmd='systemctl restart garuda.service' ;;
	watchdog) cmd='kill -STOP $(systemctl show -p MainPID --value garuda.service)' ;;
	stopkill) cmd='p=$(systemctl show -p MainPID --value garuda.service); kill -STOP $p; sleep 8; kill -KILL $p' ;;
	esac
	# start it (socket activation) and note its pid
	check "garuda.service starts" sd_in "$EXAMPLE_MINIMAL"
	local pid n0
	pid=$(prop garuda.service MainPID)
	n0=$(prop garuda.service NRestarts)
	sd_in env GARUDA_SOCKET=/run/garuda/garuda.sock "$SD_LOAD" "${SD_CLIENTS:-8}" "${SD_STREAMS:-1104}" "$cmd"
	check "${SD_CLIENTS:-8} clients: every sequence reported exactly once across the $kind" test $? -eq 0
	local pid2
	pid2=$(prop garuda.service MainPID)
	check "a new garudad serves ($pid -> $pid2)" test "$pid2" != "$pid" -a "$pid2" != 0
	check "garuda.service active" test "$(prop garuda.service ActiveState)" = active
	case $kind in
	kill | watchdog | stopkill)
		check "systemd restarted it (NRestarts $n0 -> $(prop garuda.service NRestarts))" \
			test "$(prop garuda.service NRestarts)" -eq $((n0 + 1)) ;;
	esac
	check "systemctl stop exits 0" sd_ctl stop garuda.service
	check "garudad exited with status 0" test "$(prop garuda.service ExecMainStatus)/$(prop garuda.service Result)" = 0/success
}

# a field of garctl -j clients' entry for pid PID ("null" for null, "none": no entry)
client_field() { # client_field JSON PID FIELD
	python3 -c '
import json, sys
j = json.loads(sys.argv[1])
c = [c for c in j["clients"] if c["pid"] == int(sys.argv[2])]
v = c[0][sys.argv[3]] if c else "none"
print("null" if v is None else v)' "$@"
}

# what the namespace's root sees of PID: /proc/PID/FILE from inside its cgroup namespace
# too, as garudad does (sd_in keeps the host's cgroup namespace)
proc_of() { nsenter -t "$SD_PID" -m -p -C cat "/proc/$1/$2" 2>/dev/null; }

# tenant [invisible]: see the scenarios above
tenant() {
	local invisible=${1:-}
	host_checks
	printf '{ "log_level": "info", "quota": { "cgroup": { "connections": 1 } } }\n' >"$T/garudad.json"
	# tenant A: uid gtin in scope gt-tenant, a client held connected (an 8 s "kernel"),
	# then, once $T/go exists, a second client from the same cgroup
	sd_in systemd-run --quiet --scope --unit=gt-tenant -- \
		setpriv --reuid=gtin --regid=gtin --init-groups sh -c \
		'"$0" 8000000 >/run/gt/logs/tenant-a1.out 2>&1 & a1=$!
		while [ ! -e /run/gt/go ]; do sleep 0.05; done
		"$0" >/run/gt/logs/tenant-a2.out 2>&1; echo "exit $?" >>/run/gt/logs/tenant-a2.out
		wait $a1; echo "exit $?" >>/run/gt/logs/tenant-a1.out' "$EXAMPLE_MINIMAL" &
	local bg_a=$!
	# tenant B: root in scope gt-root
	sd_in systemd-run --quiet --scope --unit=gt-root -- "$EXAMPLE_MINIMAL" 8000000 \
		>"$T/logs/tenant-b.out" 2>&1 &
	local bg_b=$!
	local j='' i pa='' pb=''
	for ((i = 0; i < 200; i++)); do
		pa=$(sd_in pgrep -u gtin -x minimal | head -n 1)
		pb=$(sd_in pgrep -u root -x minimal | head -n 1)
		if [[ -n $pa && -n $pb ]]; then
			j=$(sd_in "$GARCTL" -j clients 2>/dev/null)
			[[ $(client_field "$j" "$pa" uid) == "$SD_GTIN_UID" && $(client_field "$j" "$pb" uid) == 0 ]] && break
		fi
		sleep 0.05
	done
	# A's second client now, while its first is surely connected (8 s)
	touch "$T/go"
	check "garctl clients lists tenant A (uid gtin, pid ${pa:-?}) and B (root, pid ${pb:-?})" \
		test "$(client_field "$j" "${pa:-0}" uid)/$(client_field "$j" "${pb:-0}" uid)" = "$SD_GTIN_UID/0"
	local p who unit cg comm want_cg want_comm pa_cg=''
	for p in "${pa:-0}:A:gt-tenant" "${pb:-0}:B:gt-root"; do
		IFS=: read -r p who unit <<<"$p"
		want_cg=$(proc_of "$p" cgroup | sed -n 's/^0:://p')
		want_comm=$(proc_of "$p" comm)
		[[ $who == A ]] && pa_cg=$want_cg
		cg=$(client_field "$j" "$p" cgroup)
		comm=$(client_field "$j" "$p" comm)
		echo "tenant $who: cgroup $cg (/proc: $want_cg), comm \"$comm\" (/proc: \"$want_comm\")"
		if [[ -z $invisible ]]; then
			check "tenant $who: its own cgroup is its key ($want_cg)" \
				test "$cg" = "$want_cg" -a "${want_cg##*/}" = "$unit.scope"
			check "tenant $who: its command name ($want_comm)" test "$comm" = minimal -a "$want_comm" = minimal
		elif kernel_has 6.13; then
			check "tenant $who, /proc hidden: its cgroup key from its pidfd ($want_cg)" \
				test "$cg" = "$want_cg" -a "${want_cg##*/}" = "$unit.scope"
			check "tenant $who, /proc hidden: no command name" test -z "$comm"
			check "tenant $who, /proc hidden: the log says so" \
				grep -q "pid $p: /proc/$p hidden from garudad (ProtectProc=?): cgroup key $want_cg from its pidfd" "$T/logs/garudad.log"
		else
			check "tenant $who, /proc hidden, Linux < 6.13: no cgroup key" test "$cg" = null
			check "tenant $who, /proc hidden, Linux < 6.13: the log says why" \
				grep -q "pid $p: no cgroup quota key (/proc/$p/cgroup: hidden from garudad" "$T/logs/garudad.log"
		fi
	done
	# quota.cgroup.connections 1: A's second client is refused, naming A's cgroup
	for ((i = 0; i < 200; i++)); do
		grep -q '^exit' "$T/logs/tenant-a2.out" 2>/dev/null && break
		sleep 0.05
	done
	echo "tenant A's second client: $(tr '\n' ' ' <"$T/logs/tenant-a2.out" 2>/dev/null)"
	if [[ -z $invisible ]] || kernel_has 6.13; then
		check "tenant A's second connection is refused (quota.cgroup.connections 1)" \
			grep -q '^exit 1' "$T/logs/tenant-a2.out"
		check "... by quota.cgroup, naming A's cgroup (garudad's log)" \
			grep -qE "uid $SD_GTIN_UID: connection refused: quota.cgroup.connections exceeded: limit 1, 1 in use, 1 more asked \(cgroup ${pa_cg:-?}\)" "$T/logs/garudad.log"
	fi
	wait "$bg_a" "$bg_b"
	check "tenant A's first client was served" grep -q '^exit 0' "$T/logs/tenant-a1.out"
	check "tenant B's client was served" grep -q '^sequence 1 completed' "$T/logs/tenant-b.out"
	check "systemctl stop exits 0" sd_ctl stop garuda.service
}

# prom_parses: stdin is Prometheus text that promtool accepts (lint included); without
# promtool, that every sample line is NAME{LABELS} VALUE and the file has garuda_up
prom_parses() {
	if command -v promtool >/dev/null; then
		promtool check metrics
	else
		python3 -c '
import re, sys
ok = False
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)", line)
    if not m:
        sys.exit("not a sample: %r" % line)
    float(m.group(3))
    ok = ok or m.group(1) == "garuda_up"
sys.exit(0 if ok else "no garuda_up")'
	fi
}

# metrics: garuda-fleet's garuda-metrics.service and .timer as shipped (but for where
# garuda-textfile and garctl are), into Debian's /var/lib/prometheus/node-exporter
# (a tmpfs in the namespace), under the unit's ProtectSystem=strict
metrics() {
	local dir=/var/lib/prometheus/node-exporter text i t0 rc
	# the timer first: its first run (OnBootSec=15s: in a container, from the manager's
	# start) comes while the service is checked by hand
	check "garuda-metrics.timer starts" sd_ctl start garuda-metrics.timer
	check "garuda-metrics.timer waits for its first run" \
		test "$(prop garuda-metrics.timer ActiveState)/$(prop garuda-metrics.timer SubState)" = active/waiting

	# by hand: garctl metrics activates garudad through the control socket
	check "garuda-metrics.service runs and exits 0" sd_ctl start garuda-metrics.service
	check "... Result=success" test "$(prop garuda-metrics.service Result)" = success
	text=$(sd_in cat "$dir/garuda.prom")
	check "garuda.prom written into $dir, with garuda_up 1" grep -qx 'garuda_up 1' <<<"$text"
	check "... and garudad's series" grep -q '^garuda_uptime_seconds ' <<<"$text"
	check "... and it parses (promtool check metrics)" prom_parses <<<"$text"
	check "... mode 0644" test "$(sd_in stat -c %a "$dir/garuda.prom")" = 644
	check "... and nothing else is left in $dir" test "$(sd_in ls -A "$dir")" = garuda.prom

	# another directory, as the unit's comment and deploy.md say: TEXTFILE_DIR alone
	# is refused with a reason, TEXTFILE_DIR and ReadWritePaths= work
	mkdir "$T/textfile2"
	printf '[Service]\nEnvironment=TEXTFILE_DIR=/run/gt/textfile2\n' \
		>"$T/units/garuda-metrics.service.d/20-dir.conf"
	sd_ctl daemon-reload
	sd_ctl start garuda-metrics.service 2>/dev/null
	check "TEXTFILE_DIR alone (no ReadWritePaths=): the service fails" test $? -ne 0
	check "... and says to add it to ReadWritePaths=" \
		grep -q "garuda-textfile: cannot create a file in /run/gt/textfile2 (under systemd: is /run/gt/textfile2 in the ReadWritePaths= of the unit?" "$T/logs/metrics.log"
	printf 'ReadWritePaths=/run/gt/textfile2\n' >>"$T/units/garuda-metrics.service.d/20-dir.conf"
	sd_ctl daemon-reload
	check "TEXTFILE_DIR and ReadWritePaths=: the service exits 0" sd_ctl start garuda-metrics.service
	check "... garuda.prom with garuda_up 1 there" grep -qx 'garuda_up 1' "$T/textfile2/garuda.prom"
	rm "$T/units/garuda-metrics.service.d/20-dir.conf"
	sd_ctl daemon-reload

	# the timer runs it: garuda.prom comes back (within its 15 s, and a loaded
	# machine's slack)
	sd_in rm "$dir/garuda.prom"
	t0=$SECONDS
	for ((i = 0; i < 800; i++)); do
		[[ $(prop garuda-metrics.timer LastTriggerUSecMonotonic) != 0 ]] &&
			[[ $(prop garuda-metrics.service ActiveState) != activating ]] &&
			sd_in test -s "$dir/garuda.prom" && break
		sleep 0.05
	done
	check "the timer ran garuda-metrics.service (after $((SECONDS - t0)) s)" \
		test "$(prop garuda-metrics.timer LastTriggerUSecMonotonic)" != 0
	text=$(sd_in cat "$dir/garuda.prom" 2>/dev/null)
	check "... which wrote garuda.prom again, with garuda_up 1" grep -qx 'garuda_up 1' <<<"$text"
	check "... that parses" prom_parses <<<"$text"
	check "... and the timer waits for its next run" \
		test "$(prop garuda-metrics.timer SubState)" = waiting -a \
		"$(prop garuda-metrics.timer NextElapseUSecMonotonic)" != infinity
	sd_ctl stop garuda-metrics.timer

	# garudad not answering: garuda_up 0, and the unit fails with garctl's status
	sd_ctl stop garuda.socket garuda-control.socket garuda.service
	# RemoveOnStop=yes (issue 30, item 8): stopped, as dpkg --remove stops them, the
	# socket units leave no stale socket file for clients to find
	check "the stopped socket units removed /run/garuda/garuda.sock and control.sock" \
		sd_in sh -c '! test -e /run/garuda/garuda.sock && ! test -e /run/garuda/control.sock'
	sd_ctl start garuda-metrics.service 2>/dev/null
	rc=$?
	check "garudad gone: garuda-metrics.service fails ($rc)" test "$rc" -ne 0 -a "$(prop garuda-metrics.service Result)" = exit-code
	text=$(sd_in cat "$dir/garuda.prom")
	check "... and garuda.prom says garuda_up 0" grep -qx 'garuda_up 0' <<<"$text"
	check "... which parses" prom_parses <<<"$text"
	check "... and nothing else is left in $dir" test "$(sd_in ls -A "$dir")" = garuda.prom
}

# kernel_has X.Y: the running kernel is X.Y or later
kernel_has() {
	[[ $(printf '%s\n%s\n' "$1" "$(uname -r | cut -d- -f1)" | sort -V | head -n 1) == "$1" ]]
}

case $scenario in
units) units ;;
metrics) metrics ;;
tenant) tenant ;;
tenant-invisible) tenant invisible ;;
restart-kill) restart kill ;;
restart-upgrade) restart upgrade ;;
restart-watchdog) restart watchdog ;;
restart-stopkill) restart stopkill ;;
*)
	echo "unknown scenario $scenario"
	exit 2
	;;
esac
check "the host's /etc/passwd, group, shadow, gshadow, default/garuda, garuda/ are as they were" \
	test "$(host_etc)" = "$etc_before"
if ((fails)); then
	dump
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed"
