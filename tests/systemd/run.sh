#!/usr/bin/env bash
# run.sh SCENARIO — garuda's units under a real systemd 252 (PID 1 of private
# namespaces, tests/systemd/sdns.sh). Scenarios:
#   units            sysusers, socket activation of both sockets, Type=notify READY and
#                    STATUS=, reload, group access to the client socket, garctl for root
#                    only, `systemctl stop` exits 0
#   restart-kill     8 clients x 1104 armed streams; SIGKILL of garudad (Restart=)
#   restart-upgrade  the same; `systemctl restart garuda` (an upgrade)
#   restart-watchdog the same; SIGSTOP: the watchdog (the unit's WatchdogSec) kills it
#   restart-stopkill the same; SIGSTOP, 8 s, SIGKILL (not registered: the watchdog's
#                    case without the watchdog)
# The restart scenarios check, through tests/systemd/sd_load, that every signalled
# sequence is reported exactly once and print the gaps (line "gap ...").
# Environment (from meson): UNIT_SERVICE (garuda.service configured for the build
# tree), UNIT_SRC (systemd/), SD_LOAD, GARCTL, EXAMPLE_MINIMAL. SD_DROPIN: extra
# [Service] lines for garuda.service (e.g. RestartSec=100ms, to compare); SD_CLIENTS,
# SD_STREAMS: the load (default 8 and 1104; the checks want >= 1000 armed per client).
# Exit 77 (skipped) only when this machine refuses the namespaces, with the reason.
set -uo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
. "$here/sdns.sh"

scenario=${1:?scenario}
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
trap 'sd_teardown' EXIT
t0=$(date +%s%N)
sd_setup || exit 1
echo "systemd up in $((($(date +%s%N) - t0) / 1000000)) ms (PID $SD_PID on the host)"

dump() {
	echo "---- garudad log"
	tail -n 40 "$T/logs/garudad.log" 2>/dev/null
	echo "---- systemctl"
	sd_ctl status garuda.service garuda.socket garuda-control.socket
	sd_ctl show -p Result -p ExecMainStatus -p NRestarts -p MainPID garuda.service
}

units() {
	local pw=$T/root/etc/passwd gr=$T/root/etc/group
	check "systemd-sysusers made user garuda in group garuda" \
		grep -q "^garuda:x:[0-9]*:$(awk -F: '$1=="garuda"{print $3}' "$gr"):" "$pw"
	check "both sockets listen" test "$(prop garuda.socket SubState)$(prop garuda-control.socket SubState)" = listeninglistening
	check "garuda.service not started before the first connection" test "$(prop garuda.service ActiveState)" = inactive
	check "client socket root:garuda 0660" test "$(sd_in stat -c '%U:%G %a' /run/garuda/garuda.sock)" = "root:garuda 660"

	# client socket activation: a real client (the example) connects, signals, waits
	check "a client (root) is served through socket activation" sd_in "$EXAMPLE_MINIMAL"
	check "garuda.service active after the first connection" test "$(prop garuda.service ActiveState)" = active
	check "Type=notify: running (READY=1 seen)" test "$(prop garuda.service SubState)" = running
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

	# reload applies the config
	printf '{ "log_level": "info", "spin_us": 77 }\n' >"$T/garudad.json"
	local pid
	pid=$(prop garuda.service MainPID)
	check "systemctl reload exits 0" sd_ctl reload garuda.service
	check "reload kept the process" test "$(prop garuda.service MainPID)" = "$pid"
	check "reload applied spin_us 77" grep -q '"spin_us": *77' <<<"$(sd_in "$GARCTL" --json=short config)"

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

case $scenario in
units) units ;;
restart-kill) restart kill ;;
restart-upgrade) restart upgrade ;;
restart-watchdog) restart watchdog ;;
restart-stopkill) restart stopkill ;;
*)
	echo "unknown scenario $scenario"
	exit 2
	;;
esac
if ((fails)); then
	dump
	echo "$fails check(s) failed"
	exit 1
fi
echo "all checks passed"
