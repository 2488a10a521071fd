# hostcheck.sh — sourced by the real-engine tests (tests/deploy/*-real.sh): what a test
# must leave on the host as it found it. hostcheck_snapshot FILE records, from the
# host's namespaces: the mount table (each mount point), the cgroup directories that
# engines create (slurm*, libpod*, machine.slice), network links, addresses, routes,
# IPv4 forwarding, the nftables ruleset and the iptables rules, the files in the places
# the engines and garuda write by default (/run/garuda, /var/lib/prometheus, the CDI
# and containers directories, munge's and Slurm's), and the processes of
# the engines under test (by name: ENGINE_PROCS, a regex for pgrep -x) and any process
# whose command line holds HOSTCHECK_MARK (the test's temp dir): new ones only. hostcheck_diff
# BEFORE AFTER prints what changed and fails if anything did.
hostcheck_snapshot() { # FILE
	(
		set +e +o pipefail
		echo "# mounts"
		awk '{print $5}' /proc/self/mountinfo | grep -v "/deploy\\." | sort
		echo "# cgroups"
		find /sys/fs/cgroup -maxdepth 4 -type d \( -name 'slurm*' -o -name 'libpod*' \
			-o -name 'machine.slice' -o -name 'conmon*' \) 2>/dev/null | sort
		echo "# links"
		ip -o link show 2>/dev/null | awk '{print $2}' | sort
		echo "# addresses"
		ip -o addr show 2>/dev/null | awk '{print $2, $4}' | sort
		echo "# routes"
		ip route show table all 2>/dev/null | sort
		echo "# ip_forward"
		cat /proc/sys/net/ipv4/ip_forward
		echo "# nft"
		if command -v nft >/dev/null; then nft list ruleset 2>/dev/null | md5sum; fi
		echo "# iptables"
		if command -v iptables-save >/dev/null; then iptables-save 2>/dev/null | grep -v '^#' | md5sum; fi
		echo "# files where the engines and garuda write by default"
		find /run/garuda /run/cdi /etc/cdi /run/containers /run/libpod /var/lib/containers \
			/var/lib/prometheus /run/munge /var/lib/munge /var/log/munge /run/slurm* \
			/var/lib/slurm* /var/spool/slurm* /var/log/slurm* /etc/default/garuda \
			-maxdepth 3 2>/dev/null | sort
	) >"$1"
	{
		if [[ -n ${ENGINE_PROCS:-} ]]; then pgrep -x "$ENGINE_PROCS" -a 2>/dev/null || true; fi
		if [[ -n ${HOSTCHECK_MARK:-} ]]; then pgrep -f -a -- "$HOSTCHECK_MARK" 2>/dev/null || true; fi
	} | sort -u >"$1.procs"
	true
}
hostcheck_settle() { # up to 5 s for the test's processes (HOSTCHECK_MARK) to finish exiting
	local _
	[[ -n ${HOSTCHECK_MARK:-} ]] || return 0
	for _ in $(seq 50); do pgrep -f -- "$HOSTCHECK_MARK" >/dev/null || return 0; sleep 0.1; done
}
hostcheck_diff() { # BEFORE AFTER
	local new=
	# processes: only new ones count (others' may come and go meanwhile)
	[[ ! -f $2.procs ]] || new=$(comm -13 "$1.procs" "$2.procs")
	if [[ -n $new ]]; then
		echo "$new"
		echo "FAIL: the test left the processes above on the host"
		return 1
	fi
	if ! diff -u "$1" "$2"; then
		echo "FAIL: the test left the changes above on the host"
		return 1
	fi
	echo "host: no process, mount, cgroup or network change left behind"
}
