# sdns.sh — a real systemd (the host's /lib/systemd/systemd) as PID 1 of private
# namespaces, with garuda's units, for the systemd suite. Sourced by run.sh.
#
#   sd_setup          build $T: units (the configured garuda.service, the two sockets,
#                     garuda-metrics.service and .timer from contrib/prometheus, stub
#                     targets), a copy of /etc where systemd-sysusers ran on
#                     garuda.sysusers and two test users were added (gtin, a member of
#                     group garuda, and gtout), then start systemd. SD_HOST=packaged:
#                     the copy looks like a node with the packages (sd_fake_packaged)
#   sd_stage FILE     copy an executable of the build tree into $T/b (see below) and
#                     print its path inside the namespace
#   sd_ctl ARGS       systemctl inside the namespace
#   sd_in CMD...      run a command inside the namespace (mount + pid namespaces)
#   sd_teardown       systemctl exit, kill what is left, remove the cgroup and $T
#
# Inside: a private /proc, a tmpfs /run, a cgroup2 mount of a fresh cgroup of ours,
# /etc read-only: the copy in $T/root/etc, bind-mounted over it (the host's /etc is
# only read); garuda.service's environment is the test's file, /run/gt/default-garuda,
# alone (its drop-in resets EnvironmentFile=),
# tmpfs over /tmp and /var's writable places (/var/lib then holds only an empty
# /var/lib/prometheus/node-exporter, the metrics unit's directory), $T visible at
# /run/gt (the service has PrivateTmp=yes, so nothing it reads may live under /tmp). What the namespace runs
# from the build tree (the unit's garudad, the clients, garctl) is run from copies in
# $T/b (/run/gt/b inside), 0755 all the way down: the build may live where the service
# user cannot reach it (under a 0700 home, which ProtectHome=yes hides from the
# service anyway) or where the namespace cannot see it (/tmp, under its own tmpfs).
# Only $T/units is on the unit
# path: with the default path appended, the host's sysinit.target.wants (tmpfiles,
# journald...) would run against the host's disk. Needs root and
# unshare(CLONE_NEWPID|NEWNS|NEWCGROUP); sd_can_run says why
# not. Nothing on the host changes except the cgroup directory, removed at the end.

SD_BIN=${SD_BIN:-/lib/systemd/systemd}

sd_can_run() {
	[[ $EUID -eq 0 ]] || { echo "not root: cannot start systemd as PID 1 of a namespace"; return 1; }
	[[ -x $SD_BIN ]] || { echo "no $SD_BIN (Debian package systemd)"; return 1; }
	local e
	if ! e=$(unshare --pid --fork --mount --cgroup --propagation private \
		sh -c 'mount -t proc proc /proc && mount -t tmpfs tmpfs /run' 2>&1); then
		echo "namespaces refused here (unshare --pid --mount --cgroup, mounting proc/tmpfs): $e"
		return 1
	fi
	[[ -n $(sd_cgroup2_root) ]] || { echo "no cgroup2 hierarchy mounted on this host"; return 1; }
	return 0
}

# where the host's cgroup2 hierarchy is mounted (pure v2 or the hybrid "unified" one)
sd_cgroup2_root() {
	local m
	for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		if [[ $(stat -f -c %T "$m" 2>/dev/null) == cgroup2fs ]]; then
			echo "$m"
			return
		fi
	done
}

# BUILD_ROOT: the build tree (from meson; else the one UNIT_SERVICE was configured in)
sd_build_root() {
	local b=${BUILD_ROOT:-${UNIT_SERVICE%/tests/systemd/garuda.service}}
	echo "${b%/}"
}

# sd_stage FILE — copy FILE into $T/b at its path relative to the build tree (outside
# it: $T/b/ext/NAME), with the build tree's shared libraries it loads (libgaruda.so.0,
# found through its $ORIGIN-relative RUNPATH, lands where that RUNPATH looks again);
# directories 0755, files readable and executable by all. Prints /run/gt/b/REL, its
# path inside the namespace.
sd_stage() {
	local f=$1 b rel lib
	b=$(sd_build_root)
	[[ -f $f ]] || { echo "sd_stage: no file $f" >&2; return 1; }
	case $f in
	"$b"/*) rel=${f#"$b"/} ;;
	*) rel=ext/${f##*/} ;;
	esac
	mkdir -p "$(dirname "$T/b/$rel")"
	cp -L "$f" "$T/b/$rel"
	# the build tree's libraries, as the dynamic linker finds them for the original
	while read -r lib; do
		lib=$(realpath -s -m "$lib") # $ORIGIN/../client/...: no "..", links kept
		case $lib in
		"$b"/*)
			mkdir -p "$T/b/$(dirname "${lib#"$b"/}")"
			cp -L "$lib" "$T/b/${lib#"$b"/}"
			;;
		esac
	done < <(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
	chmod -R a+rX "$T/b"
	echo "/run/gt/b/$rel"
}

# sd_stage_unit UNIT — stage every build-tree file UNIT names (ExecStart=...) and point
# UNIT at the copies
sd_stage_unit() {
	local unit=$1 b w f staged text
	b=$(sd_build_root)
	text=$(<"$unit")
	for w in $(tr -s ' \t=' '\n' <"$unit" | grep -F "$b/" | sort -u); do
		f=$b/${w#*"$b"/} # without a prefix such as "-" or "@"
		staged=$(sd_stage "$f") || return 1
		text=${text//"$f"/"$staged"} # literally, not as a pattern
	done
	printf '%s\n' "$text" >"$unit"
	if grep -qF "$b/" "$unit"; then
		echo "sd_stage_unit: $unit still names the build tree $b:" >&2
		grep -F "$b/" "$unit" >&2
		return 1
	fi
}

sd_sysusers() { # FILE: systemd-sysusers on FILE, into $T/root
	systemd-sysusers --root="$T/root" "$1" >>"$T/sysusers.out" 2>&1 || {
		cat "$T/sysusers.out"
		return 1
	}
}

# sd_add_user NAME — user and group NAME (no login) in $T/root/etc, with the first id
# from 64001 up that neither passwd nor group uses (an entry NAME the host has is
# replaced); prints the id
sd_add_user() {
	local name=$1 e=$T/root/etc id f
	for f in passwd group shadow gshadow; do
		[[ -f $e/$f ]] && sed -i "/^$name:/d" "$e/$f"
	done
	id=$(awk -F: '{ used[$3] = 1 } END { for (i = 64001; i in used; i++); print i }' "$e/passwd" "$e/group")
	echo "$name:x:$id:$id::/:/usr/sbin/nologin" >>"$e/passwd"
	echo "$name:x:$id:" >>"$e/group"
	echo "$id"
}

# sd_group_add_member GROUP USER — USER joins GROUP's members in $T/root/etc/group
# (after those it has, as usermod -aG does)
sd_group_add_member() {
	local g=$T/root/etc/group
	awk -F: -v OFS=: -v g="$1" -v u="$2" '
		$1 == g {
			n = split($4, m, ",")
			for (i = 1; i <= n; i++) if (m[i] == u) n = -1
			if (n == 0) $4 = u
			else if (n > 0) $4 = $4 "," u
		}
		{ print }' "$g" >"$g.new" && cat "$g.new" >"$g" && rm "$g.new"
}

# sd_fake_packaged — make the copy of /etc ($T/root/etc) what a GPU node with
# garuda's packages installed has (tests systemd-*-packaged), whatever this host is:
# the package's sysusers (group and user garuda), two operators in group garuda
# (usermod -aG, as an operator does), the package's /etc/default/garuda
# (GARUDAD_OPTIONS=""), and a site /etc/garuda/garudad.json. The host's /etc is
# only read.
sd_fake_packaged() {
	local deb=${DEBIAN_SRC:-$UNIT_SRC/../debian} u
	sd_sysusers "$deb/garuda.sysusers" || return 1
	for u in gtopa gtopb; do
		sd_add_user "$u" >/dev/null || return 1
		sd_group_add_member garuda "$u"
	done
	mkdir -p "$T/root/etc/default" "$T/root/etc/garuda"
	cp "$deb/garuda.default" "$T/root/etc/default/garuda"
	printf '{ "log_level": "err", "spin_us": 11, "quota": { "uid": { "segments": 3 } } }\n' \
		>"$T/root/etc/garuda/garudad.json"
	chmod 644 "$T/root/etc/default/garuda" "$T/root/etc/garuda/garudad.json"
}

sd_stub_target() {
	printf '[Unit]\nDescription=stub %s\n' "$1" >"$T/units/$1.target"
}

sd_setup() {
	T=$(mktemp -d /tmp/garuda-sd.XXXXXX)
	chmod 755 "$T"
	mkdir -p "$T/units" "$T/empty" "$T/root/etc" "$T/logs"
	chmod 777 "$T/logs"
	# units: what meson configured (ExecStart = the built garudad, run from its copy in
	# $T/b) and the sockets
	cp "$UNIT_SERVICE" "$UNIT_SRC/garuda.socket" "$UNIT_SRC/garuda-control.socket" "$T/units/"
	sd_stage_unit "$T/units/garuda.service" || return 1
	# garuda-fleet's metrics units as shipped, but for where garuda-textfile and
	# garctl are (a drop-in names this build's garctl: on a host with the packages,
	# garctl on PATH is the installed one)
	local prom=${PROM_SRC:-$UNIT_SRC/../contrib/prometheus} textfile staged_garctl
	textfile=$(sd_stage "$prom/garuda-textfile") || return 1
	staged_garctl=$(sd_stage "${GARCTL:-$(sd_build_root)/client/garctl/garctl}") || return 1
	sed "s|/usr/libexec/garuda/garuda-textfile|$textfile|g" "$prom/garuda-metrics.service" \
		>"$T/units/garuda-metrics.service"
	cp "$prom/garuda-metrics.timer" "$T/units/"
	mkdir -p "$T/units/garuda-metrics.service.d"
	printf '[Service]\nEnvironment=GARCTL=%s\nStandardOutput=append:/run/gt/logs/metrics.log\nStandardError=append:/run/gt/logs/metrics.log\n' \
		"$staged_garctl" >"$T/units/garuda-metrics.service.d/10-test.conf"
	local t
	for t in sysinit basic sockets shutdown multi-user paths timers slices local-fs network \
		umount final emergency rescue; do
		sd_stub_target "$t"
	done
	printf '[Unit]\nDescription=garuda test boot\nWants=garuda.socket garuda-control.socket\n' \
		>"$T/units/garuda-test.target"
	printf '[Unit]\nDescription=exit\nRequires=systemd-exit.service\nAfter=systemd-exit.service\nAllowIsolate=yes\n' \
		>"$T/units/exit.target"
	printf '[Unit]\nDescription=exit\nDefaultDependencies=no\n[Service]\nType=oneshot\nExecStart=systemctl --force exit\n' \
		>"$T/units/systemd-exit.service"
	# the service's output into a file we can read, and test overrides (an ASan build's
	# garudad: no leak check at exit, LeakSanitizer cannot stop the world under the
	# unit's hardening and would turn a clean exit into status 1)
	# The unit's environment is the test's file alone: the unit reads
	# /etc/default/garuda with EnvironmentFile=, which wins over any Environment=, and
	# the package's copy says GARUDAD_OPTIONS="" (the empty assignment drops the
	# unit's EnvironmentFile= lines).
	mkdir -p "$T/units/garuda.service.d"
	printf '[Service]\nStandardOutput=append:/run/gt/logs/garudad.log\nStandardError=append:/run/gt/logs/garudad.log\nEnvironmentFile=\nEnvironmentFile=/run/gt/default-garuda\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' \
		>"$T/units/garuda.service.d/10-test.conf"
	printf 'GARUDAD_OPTIONS="--config=/run/gt/garudad.json"\n' >"$T/default-garuda"
	if [[ -n ${SD_DROPIN:-} ]]; then
		printf '[Service]\n%s\n' "$SD_DROPIN" >"$T/units/garuda.service.d/20-scenario.conf"
	fi
	printf '{ "log_level": "info" }\n' >"$T/garudad.json"
	chmod 644 "$T/garudad.json"

	# /etc: a copy of the host's, which the namespace sees read-only in place of /etc
	# (as the host has it: a node with garuda's packages has group garuda, maybe with
	# members, /etc/default/garuda, maybe /etc/garuda/garudad.json); with
	# SD_HOST=packaged, made to look like such a node whatever this host is
	cp -a /etc/. "$T/root/etc/" || return 1
	: >"$T/sysusers.out"
	if [[ ${SD_HOST:-} == packaged ]]; then
		sd_fake_packaged || return 1
	fi
	# users: systemd-sysusers on the project's file, into the copy
	sd_sysusers "$UNIT_SRC/garuda.sysusers" || return 1
	# two clients: one in group garuda (added to its members, whoever else is there),
	# one not (ids chosen free in the copy)
	SD_GTIN_UID=$(sd_add_user gtin) && SD_GTOUT_UID=$(sd_add_user gtout) || return 1
	sd_group_add_member garuda gtin

	# a cgroup of our own, which becomes the namespace's cgroup root
	local root parent
	root=$(sd_cgroup2_root)
	parent=$(awk -F: '$1=="0"{print $3}' /proc/self/cgroup)
	SD_CG="$root${parent%/}/garuda-sd-$$-$RANDOM"
	mkdir "$SD_CG"

	# Only our unit directory (no trailing ":"): the host's units and their .wants
	# (tmpfiles, journald, sysusers...) must never run here. And in case anything still
	# tried to write the host's disk: /etc read-only, tmpfs over /tmp, /var/tmp,
	# /var/log, /var/lib, /var/cache.
	cat >"$T/inner.sh" <<EOF
#!/bin/sh
set -e
mount --make-rprivate /
mount -t proc proc /proc
mount -t tmpfs -o mode=755 tmpfs /run
mkdir -p /run/gt
mount --bind $T /run/gt
for d in /tmp /var/tmp /var/log /var/lib /var/cache; do
	[ -d \$d ] && mount -t tmpfs -o mode=1777 tmpfs \$d
done
# /var/lib: systemd's, and node_exporter's textfile directory (Debian's path, as
# garuda-metrics.service has it), empty
mkdir -p /var/lib/systemd /var/lib/prometheus/node-exporter
chmod 755 /var/lib /var/lib/systemd /var/lib/prometheus /var/lib/prometheus/node-exporter
mount --bind /run/gt/root/etc /etc
mount -o remount,bind,ro /etc
umount -R /sys/fs/cgroup 2>/dev/null || umount -l /sys/fs/cgroup 2>/dev/null || true
mount -t cgroup2 cgroup2 /sys/fs/cgroup
: >/run/gt/systemd.log
mount --bind /run/gt/systemd.log /dev/console # never the host's console (PID 1 logs
# nothing to a file that is not a tty: use systemctl show/status)
exec env -i container=garuda-test PATH=/usr/sbin:/usr/bin:/sbin:/bin \\
	SYSTEMD_UNIT_PATH=/run/gt/units SYSTEMD_GENERATOR_PATH=/run/gt/empty \\
	SYSTEMD_ENVIRONMENT_GENERATOR_PATH=/run/gt/empty \\
	$SD_BIN --system --unit=garuda-test.target --log-target=console --log-level=info \\
	--show-status=no
EOF
	chmod 755 "$T/inner.sh"
	# the unshare process joins our cgroup first, so that it is the namespace's root
	sh -c "echo \$\$ >'$SD_CG/cgroup.procs' && exec unshare --pid --fork --mount --cgroup --uts \
		--propagation private '$T/inner.sh'" >"$T/unshare.log" 2>&1 &
	SD_UNSHARE=$!
	local i
	SD_PID=
	for ((i = 0; i < 200; i++)); do
		SD_PID=$(cat "/proc/$SD_UNSHARE/task/$SD_UNSHARE/children" 2>/dev/null | awk '{print $1}')
		if [[ -n $SD_PID ]] && nsenter -t "$SD_PID" -m -p test -S /run/systemd/private 2>/dev/null &&
			[[ $(sd_ctl is-active garuda.socket 2>/dev/null) == active ]]; then
			return 0
		fi
		sleep 0.05
	done
	echo "systemd did not come up within 10 s; its log:"
	cat "$T/unshare.log" "$T/systemd.log"
	return 1
}

sd_in() {
	nsenter -t "$SD_PID" -m -p "$@"
}

sd_ctl() {
	nsenter -t "$SD_PID" -m -p systemctl --no-pager "$@"
}

sd_teardown() {
	if [[ -n ${SD_PID:-} ]] && kill -0 "$SD_PID" 2>/dev/null; then
		sd_ctl start exit.target --no-block >/dev/null 2>&1 || true
		local i
		for ((i = 0; i < 100; i++)); do
			kill -0 "$SD_UNSHARE" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$SD_PID" 2>/dev/null || true # PID 1 of the namespace: takes all with it
	fi
	[[ -n ${SD_UNSHARE:-} ]] && wait "$SD_UNSHARE" 2>/dev/null || true
	if [[ -n ${SD_CG:-} && -d $SD_CG ]]; then
		# children first
		find "$SD_CG" -depth -type d -exec rmdir {} + 2>/dev/null || true
	fi
	if [[ -n ${SD_KEEP:-} ]]; then
		echo "kept $T"
	elif [[ -n ${T:-} && -d $T ]]; then
		rm -rf "$T"
	fi
	return 0
}
