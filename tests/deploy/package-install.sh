#!/usr/bin/env bash
# package-install.sh SRC BUILDDIR — the Debian packages, built and installed the way a
# host gets them: dpkg-buildpackage -b on a copy of the source tree, lintian on the
# result (fails on any error or warning tag), every document a shipped man page,
# README, script or unit names is in the packages (doc-paths.py), then dpkg -i into a
# debootstrap'd Debian root (chroot). In that root: group and user garuda exist
# (sysusers), both sockets are enabled (dh_installsystemd) with RemoveOnStop=yes, the
# postinst says that no garudad runs and how to start one (systemd is not PID 1
# there), garudad started from the installed unit's
# ExecStart behind systemd-socket-activate (the sockets as the units declare them,
# the daemon as User=garuda with CAP_IPC_LOCK) is reached by a client (python3-garuda
# over libgaruda0), `garctl status` and `garctl clients` answer, and the unit's
# ExecReload= (the installed garctl reload) exits 0; garudad started by the
# postinst's own lines runs as garuda with CAP_IPC_LOCK alone, answers and logs where
# they say; an upgrade under it says "restart it" (its binary is "(deleted)"), a lock
# naming another process "not running"; then dpkg --purge
# leaves no file of ours behind (Debian keeps the system user: Policy 9.2.2).
# Exit 77 (skip) says why when a tool, root or the mirror is missing.
# The debootstrap'd root is cached as BUILDDIR/deploy-root.tar (GARUDA_DEBIAN_MIRROR
# names the mirror; default: the Debian mirror apt uses here).
set -euo pipefail
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
skip() { echo "SKIP: $*"; exit 77; }

for tool in dpkg-buildpackage dh debootstrap chroot; do
	command -v "$tool" >/dev/null || skip "$tool not installed (Debian packages dpkg-dev, debhelper, debootstrap)"
done
((EUID == 0)) || skip "needs root (chroot, dpkg -i into the test root)"

work=$(mktemp -d "$build/deploy.XXXXXX")
root=$work/root
daemon_pid=
cleanup() {
	[[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
	for m in proc dev; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
	rm -rf --one-file-system "$work"
}
trap cleanup EXIT

echo "--- dpkg-buildpackage"
mkdir -p "$work/pkg/garuda"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$src" && git ls-files -co --exclude-standard -z | tar -c --null -T - -f -) | tar -x -C "$work/pkg/garuda"
else
	tar -C "$src" --exclude='./build*' -cf - . | tar -x -C "$work/pkg/garuda"
fi
(cd "$work/pkg/garuda" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -b -us -uc) \
	>"$work/dpkg-buildpackage.log" 2>&1 || { tail -40 "$work/dpkg-buildpackage.log"; exit 1; }
debs=()
for p in garuda garuda-fleet libgaruda0 libgaruda-dev python3-garuda; do
	f=$(ls "$work"/pkg/"${p}"_*.deb)
	debs+=("$f")
done
echo "built: ${debs[*]##*/}"

echo "--- shipped documents"
# every document a man page, the Kubernetes README, a script or a unit points to is
# in the packages (tests/deploy/doc-paths.py); and the check can fail: without
# plans.md, garuda-replay(1) and garudad(8) point nowhere
mkdir "$work/contents"
for f in "${debs[@]}"; do dpkg-deb -x "$f" "$work/contents"; done
python3 "$src/tests/deploy/doc-paths.py" "$work/contents"
rm "$work/contents/usr/share/doc/garuda/plans.md.gz"
if python3 "$src/tests/deploy/doc-paths.py" "$work/contents" >/dev/null; then
	echo "doc-paths.py passed without plans.md: it checks nothing"
	exit 1
fi
rm -rf "$work/contents"

if command -v lintian >/dev/null; then
	echo "--- lintian"
	lintian --fail-on error,warning \
		"$work"/pkg/garuda_*.changes
	echo "lintian: no error or warning tags"
else
	echo "lintian not installed: package checks left out"
fi

echo "--- test root"
cache=$build/deploy-root.tar
if [[ ! -f $cache ]]; then
	# the mirror apt uses here (the first .../debian in its sources), unless told
	mirror=${GARUDA_DEBIAN_MIRROR:-$(sed -n -e 's|^URIs: *\(http[^ ]*/debian\)/*$|\1|p' \
		-e 's|^deb  *\(http[^ ]*/debian\)/* .*|\1|p' /etc/apt/sources.list \
		/etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null | head -n 1 || true)}
	mirror=${mirror:-http://deb.debian.org/debian}
	debootstrap --variant=minbase --include=systemd,libcjson1,liburing2,python3 \
		bookworm "$work/boot" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -5 "$work/debootstrap.log"; skip "debootstrap from $mirror failed (no mirror reachable?)"; }
	tar -C "$work/boot" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
	rm -rf --one-file-system "$work/boot"
fi
mkdir "$root"
tar -C "$root" -xf "$cache"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
in_root() { chroot "$root" "$@"; }

# every path in the root but the ones a package install legitimately changes
snapshot() {
	(cd "$root" && find . -xdev \( -path ./proc -o -path ./dev -o -path ./run -o -path ./tmp \
		-o -path ./var/lib/dpkg -o -path ./var/log -o -path ./var/cache \
		-o -path ./var/lib/systemd/deb-systemd-helper-masked \) -prune -o -print |
		grep -vE '^\./etc/(passwd|group|shadow|gshadow)-?$' | sort)
}
snapshot >"$work/before"

echo "--- dpkg -i"
mkdir "$root/debs"
cp "${debs[@]}" "$root/debs/"
in_root sh -c 'dpkg -i /debs/*.deb' >"$work/dpkg-i.log" 2>&1 || { cat "$work/dpkg-i.log"; exit 1; }
rm -rf "$root/debs"
# systemd is not PID 1 in the chroot: the postinst enabled the units, started nothing,
# and has to say so, that no garudad runs, and how to start one: as the unit runs it,
# user garuda with CAP_IPC_LOCK (setpriv), not as plain root (debian/garuda.postinst)
[[ ! -d $root/run/systemd/system ]] || { echo "the test root has /run/systemd/system"; exit 1; }
grep -qx 'garuda: garudad is not running.' "$work/dpkg-i.log" &&
	grep -q 'systemd is not running as PID 1' "$work/dpkg-i.log" &&
	grep -q 'systemctl start garuda.socket' "$work/dpkg-i.log" &&
	grep -q 'setpriv --reuid=garuda' "$work/dpkg-i.log" ||
	{ cat "$work/dpkg-i.log"; echo "the postinst does not say how to start garudad without systemd as PID 1"; exit 1; }
echo "postinst without systemd as PID 1:"
sed -n '/^garuda: garudad is not running/,/garudad --runtime-dir/p' "$work/dpkg-i.log"
in_root getent group garuda >/dev/null || { echo "no group garuda after install"; exit 1; }
in_root getent passwd garuda >/dev/null || { echo "no user garuda after install"; exit 1; }
for u in garuda.socket garuda-control.socket; do
	[[ -L $root/etc/systemd/system/sockets.target.wants/$u ]] ||
		{ echo "$u is not enabled (no sockets.target.wants link)"; exit 1; }
done
# garuda-fleet: contrib in its Debian places; the metrics timer installed, not enabled
for f in usr/libexec/garuda/garuda-prolog usr/libexec/garuda/garuda-epilog \
	usr/libexec/garuda/garuda-task-prolog usr/libexec/garuda/garuda-textfile; do
	[[ -x $root/$f ]] || { echo "garuda-fleet: /$f missing or not executable"; exit 1; }
done
for f in lib/systemd/system/garuda-metrics.service lib/systemd/system/garuda-metrics.timer \
	usr/share/garuda/prometheus/garuda.rules.yml usr/share/garuda/enroot/garuda.fstab \
	usr/share/garuda/kubernetes/garudad-daemonset.yaml usr/share/garuda/kubernetes/Dockerfile; do
	[[ -f $root/$f ]] || { echo "garuda-fleet: /$f missing"; exit 1; }
done
# stopped (dpkg --remove, --purge), the socket units remove their socket files
for u in garuda.socket garuda-control.socket; do
	grep -qx 'RemoveOnStop=yes' "$root/lib/systemd/system/$u" ||
		{ echo "$u: no RemoveOnStop=yes (a purge leaves a stale socket in /run/garuda)"; exit 1; }
done
grep -q '^ExecStart=/usr/libexec/garuda/garuda-textfile ' "$root/lib/systemd/system/garuda-metrics.service" ||
	{ echo "garuda-metrics.service does not run the installed garuda-textfile"; exit 1; }
[[ ! -e $root/etc/systemd/system/timers.target.wants/garuda-metrics.timer ]] ||
	{ echo "garuda-metrics.timer was enabled by the install"; exit 1; }
# removal stops the metrics timer (dh_installsystemd --no-start writes no stop: a timer
# whose units are gone stays "failed" and the system "degraded"); configure reloads
mkdir "$work/fleet-control"
dpkg-deb -e "$(ls "$work"/pkg/garuda-fleet_*.deb)" "$work/fleet-control"
grep -q 'deb-systemd-invoke stop garuda-metrics.timer' "$work/fleet-control/prerm" 2>/dev/null ||
	{ echo "garuda-fleet: no prerm that stops garuda-metrics.timer on removal"; exit 1; }
grep -q 'daemon-reload' "$work/fleet-control/postinst" 2>/dev/null ||
	{ echo "garuda-fleet: its postinst does not reload systemd"; exit 1; }
grep -q '^#GARCTL=/usr/bin/garctl$' "$root/etc/default/garuda" ||
	{ echo "/etc/default/garuda does not document the prolog's settings"; exit 1; }
echo "garuda-fleet: scripts in /usr/libexec/garuda, units in /lib/systemd/system (timer not enabled), rules, enroot, kubernetes in /usr/share/garuda"

echo "--- garudad as the units start it"
unitdir=$root/lib/systemd/system
client_sock=$(sed -n 's/^ListenSequentialPacket=//p' "$unitdir/garuda.socket")
control_sock=$(sed -n 's/^ListenSequentialPacket=//p' "$unitdir/garuda-control.socket")
exec_start=$(sed -n 's/^ExecStart=//p' "$unitdir/garuda.service")
exec_start=${exec_start/\$GARUDAD_OPTIONS/}
user=$(sed -n 's/^User=//p' "$unitdir/garuda.service")
memlock=$(sed -n 's/^LimitMEMLOCK=//p' "$unitdir/garuda.service")
[[ -n $client_sock && -n $control_sock && -n $exec_start && -n $user ]] ||
	{ echo "cannot read the installed units"; exit 1; }
mkdir -p "$root${client_sock%/*}"
# LimitMEMLOCK=, as far as this machine lets root raise it (a container may not)
memlock_bytes=$(numfmt --from=iec "$memlock")
if ! prlimit --memlock="$memlock_bytes" true 2>/dev/null; then
	echo "LimitMEMLOCK=$memlock not settable here: garudad runs with memlock $(ulimit -l) KiB"
	memlock_bytes=$(prlimit --noheadings --output=SOFT --memlock)
fi
# systemd-socket-activate binds both sockets, then starts the service on the first
# connection with LISTEN_FDNAMES=client:control, as the two socket units do
chroot "$root" systemd-socket-activate --seqpacket -l "$client_sock" -l "$control_sock" \
	--fdname=client:control \
	prlimit --memlock="$memlock_bytes" \
	setpriv --reuid="$user" --regid="$user" --init-groups \
	--inh-caps=+ipc_lock --ambient-caps=+ipc_lock $exec_start \
	>"$work/garudad.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [[ -S $root$control_sock ]] && break; sleep 0.1; done
[[ -S $root$client_sock && -S $root$control_sock ]] || { cat "$work/garudad.log"; echo "sockets did not come up"; exit 1; }
# the units' SocketMode/SocketGroup
in_root chgrp garuda "$client_sock"
chmod 0660 "$root$client_sock"
chmod 0600 "$root$control_sock"

status=$(in_root garctl status) || { cat "$work/garudad.log"; echo "garctl status failed"; exit 1; }
echo "$status"
# systemctl reload garuda runs the installed garctl (as root: the control socket's owner)
exec_reload=$(sed -n 's/^ExecReload=//p' "$unitdir/garuda.service")
[[ $exec_reload == '!/usr/bin/garctl reload' ]] ||
	{ echo "garuda.service: ExecReload=$exec_reload, not the installed garctl reload"; exit 1; }
# shellcheck disable=SC2086 # the command line, split as systemd splits it
in_root ${exec_reload#!} || { cat "$work/garudad.log"; echo "ExecReload= ($exec_reload) failed"; exit 1; }
echo "ExecReload=$exec_reload: exits 0"
# the installed prolog as slurmd runs it (no environment but Slurm's), with the
# installed /etc/default/garuda and its absolute defaults: garudad answers, it passes
in_root env -i SLURMD_NODENAME=gpu7 SLURM_JOB_ID=1 /usr/libexec/garuda/garuda-prolog ||
	{ echo "the installed garuda-prolog fails with garudad answering"; exit 1; }
echo "installed garuda-prolog: passes with garudad answering"
in_root /usr/libexec/garuda/garuda-textfile /tmp >/dev/null && grep -qx 'garuda_up 1' "$root/tmp/garuda.prom" ||
	{ echo "the installed garuda-textfile did not write garuda_up 1"; exit 1; }
rm -f "$root/tmp/garuda.prom"
# a client over the installed libgaruda0 (python3-garuda loads it by its soname),
# holding a segment while garctl lists the clients
in_root python3 - "$client_sock" <<'PY' >"$work/client.out"
import subprocess, sys
import garuda
with garuda.Client(sys.argv[1]) as c:
    with c.segment("host") as s:
        print("session", c.session)
        sys.stdout.flush()
        out = subprocess.run(["garctl", "clients"], check=True, capture_output=True, text=True).stdout
        print(out)
PY
cat "$work/client.out"
grep -q '^session ' "$work/client.out" || { echo "the client did not connect"; exit 1; }
grep -qE "^ *[0-9]+ +[0-9]+ +0 +0 +python3 +[^ ]+ +1 " "$work/client.out" || { echo "garctl clients does not list the client with its segment"; exit 1; }
# the first connection started it: systemd-socket-activate, prlimit and setpriv exec'ed
# into garudad, which runs as the unit's User= with CAP_IPC_LOCK
[[ $(cat "/proc/$daemon_pid/comm") == garudad ]] || { echo "garudad is not running"; exit 1; }
uid=$(in_root id -u "$user")
grep -qE "^Uid:\s+$uid\s" "/proc/$daemon_pid/status" || { echo "garudad does not run as $user"; exit 1; }
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
daemon_pid=

echo "--- garudad started by hand, as the postinst says"
# the postinst's lines as they are (backslash continuations joined), run as root in
# the root: garudad runs as user garuda with CAP_IPC_LOCK alone and logs to the file
# the message names; it takes the lock /run/garuda/garuda.sock.lock, with its pid
rm -rf "$root/run/garuda"
by_hand=$(sed -n '/As root:$/,/garudad --runtime-dir/p' "$work/dpkg-i.log" | sed 1d | sed -e ':a' -e '/\\$/N; s/\\\n//; ta')
[[ $by_hand == *setpriv*'garudad --runtime-dir=/run/garuda'*'&' ]] ||
	{ echo "cannot read the postinst's lines to start garudad by hand: $by_hand"; exit 1; }
echo "$by_hand"
in_root sh -c "$by_hand" </dev/null >/dev/null 2>&1
for _ in $(seq 100); do [[ -S $root/run/garuda/control.sock && -s $root/run/garuda/garuda.sock.lock ]] && break; sleep 0.1; done
hand_pid=$(head -n 1 "$root/run/garuda/garuda.sock.lock" 2>/dev/null || true)
[[ -n $hand_pid && $(cat "/proc/$hand_pid/comm" 2>/dev/null) == garudad ]] ||
	{ cat "$root/var/log/garudad.log" 2>/dev/null; echo "garudad started by hand is not running (lock: ${hand_pid:-none})"; exit 1; }
daemon_pid=$hand_pid # cleanup() stops it
grep -qE "^Uid:\s+$uid\s" "/proc/$hand_pid/status" || { echo "garudad by hand does not run as $user"; exit 1; }
# CAP_IPC_LOCK (bit 14) and nothing else, in every set it could use
for set in CapPrm CapEff CapBnd CapAmb; do
	grep -qE "^$set:\s+0000000000004000$" "/proc/$hand_pid/status" ||
		{ grep ^Cap "/proc/$hand_pid/status"; echo "garudad by hand: $set is not CAP_IPC_LOCK alone"; exit 1; }
done
in_root garctl status >/dev/null || { cat "$root/var/log/garudad.log"; echo "garctl status: no answer from garudad by hand"; exit 1; }
grep -q 'listening on /run/garuda/garuda.sock' "$root/var/log/garudad.log" ||
	{ cat "$root/var/log/garudad.log"; echo "garudad by hand did not log to /var/log/garudad.log"; exit 1; }
echo "garudad by hand: pid $hand_pid, user $user, CAP_IPC_LOCK only, answers, logs to /var/log/garudad.log"

# an upgrade (the same package again) replaces /usr/sbin/garudad under it: the
# postinst finds it by the lock's pid and says to restart it, not "not running"
reinstall() { # the garuda package over itself, as an upgrade goes; prints dpkg's output
	cp "$work"/pkg/garuda_*.deb "$root/tmp/"
	local rc=0
	in_root sh -c 'dpkg -i /tmp/garuda_*.deb' 2>&1 || rc=$?
	rm -f "$root"/tmp/garuda_*.deb
	return $rc
}
reinstall >"$work/upgrade.log" || { cat "$work/upgrade.log"; exit 1; }
[[ $(readlink "/proc/$hand_pid/exe") == *'/usr/sbin/garudad (deleted)' ]] ||
	{ echo "the upgrade did not replace garudad's binary: $(readlink "/proc/$hand_pid/exe")"; exit 1; }
grep -qF "garuda: garudad (pid $hand_pid) is still running the replaced binary (/usr/sbin/garudad (deleted)):" "$work/upgrade.log" &&
	grep -q 'restart it' "$work/upgrade.log" && ! grep -q 'garudad is not running' "$work/upgrade.log" ||
	{ cat "$work/upgrade.log"; echo "after an upgrade the postinst does not say to restart the running garudad"; exit 1; }
echo "postinst after an upgrade:"
grep -A1 '^garuda: garudad (pid' "$work/upgrade.log"
in_root garctl status >/dev/null || { echo "the old garudad stopped answering on the upgrade"; exit 1; }
# the lock names a live process that is not garudad (a pid reused after a SIGKILL):
# another upgrade says garudad is not running
kill "$hand_pid" # not this shell's child: wait until it is gone (it unlinks the lock)
for _ in $(seq 100); do [[ -d /proc/$hand_pid ]] || break; sleep 0.1; done
[[ ! -d /proc/$hand_pid ]] || { echo "garudad by hand did not stop on SIGTERM"; exit 1; }
daemon_pid=
sleep 1000 &
sleeper=$!
echo "$sleeper" >"$root/run/garuda/garuda.sock.lock"
msg=$(reinstall) || { echo "$msg"; exit 1; }
kill "$sleeper"; wait "$sleeper" 2>/dev/null || true
rm -rf "$root/run/garuda"
grep -qx 'garuda: garudad is not running.' <<<"$msg" ||
	{ echo "$msg"; echo "a lock naming a live process that is not garudad: the postinst does not say garudad is not running"; exit 1; }
echo "postinst with a lock naming another process: garudad is not running"

echo "--- dpkg --purge"
in_root dpkg --purge garuda-fleet python3-garuda libgaruda-dev garuda libgaruda0 >"$work/purge.log" 2>&1 ||
	{ cat "$work/purge.log"; exit 1; }
rm -rf "$root${client_sock%/*}"
snapshot >"$work/after"
if ! diff -u "$work/before" "$work/after"; then
	echo "purge left the files above behind"
	exit 1
fi
echo "purge: nothing left behind"
