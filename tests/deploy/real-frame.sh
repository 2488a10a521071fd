# shellcheck shell=bash
# real-frame.sh — sourced by the tests that run a real engine as root in private mount and
# pid namespaces (slurm-real.sh, container-real.sh): their shared frame.
#   real_require WHY TOOL:PACKAGE...  skip (exit 77) without root (WHY says what needs
#                                     it), without a tool (naming its Debian package) or
#                                     where unshare --mount --pid is not permitted;
#   real_outer ENGINE_PROCS NAME SRC GARUDAD GARCTL MINIMAL
#                                     run "$0 --inner SRC GARUDAD GARCTL MINIMAL SCRATCH"
#                                     (SCRATCH: a temp dir /tmp/NAME.XXXXXX, removed at exit)
#                                     in the namespaces for at most 55 s, and fail when
#                                     the host is not left as it was found
#                                     (hostcheck.sh: ENGINE_PROCS, the engine's processes
#                                     by name); exits with the test's status. A test that
#                                     defines real_cleanup has it run after the inner run
#                                     and again at exit, before SCRATCH goes;
#   real_inner "$@"                   inside: sets src garudad garctl minimal work start,
#                                     and mounts a tmpfs on /run.
# Plus skip and fail (exit 77, exit 1, with the message).
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

real_require() { # WHY TOOL:PACKAGE...
	local why=$1 t
	shift
	((EUID == 0)) || skip "needs root ($why)"
	for t in "$@"; do
		command -v "${t%%:*}" >/dev/null || skip "${t%%:*} not installed (Debian package ${t#*:})"
	done
	unshare --mount --pid --fork true 2>/dev/null || skip "unshare --mount --pid not permitted here"
}

real_cleanup_hook() {
	if declare -F real_cleanup >/dev/null; then real_cleanup; fi
}

real_outer() { # ENGINE_PROCS NAME SRC GARUDAD GARCTL MINIMAL
	local here rc=0 src garudad garctl minimal
	here=$(dirname "${BASH_SOURCE[0]}")
	src=$(cd "$3" && pwd) garudad=$(readlink -f "$4") garctl=$(readlink -f "$5") minimal=$(readlink -f "$6")
	# shellcheck source=hostcheck.sh
	source "$here/hostcheck.sh"
	export ENGINE_PROCS=$1
	work=$(mktemp -d "/tmp/$2.XXXXXX")
	trap 'real_cleanup_hook; rm -rf "$work"' EXIT
	export HOSTCHECK_MARK=$work
	hostcheck_snapshot "$work/host.before"
	timeout -k 5 55 unshare --mount --propagation private --pid --fork --mount-proc \
		"$0" --inner "$src" "$garudad" "$garctl" "$minimal" "$work" || rc=$?
	((rc != 124)) || echo "FAIL: timed out (55 s)"
	hostcheck_settle
	real_cleanup_hook
	hostcheck_snapshot "$work/host.after"
	hostcheck_diff "$work/host.before" "$work/host.after" || rc=1
	exit "$rc"
}

# shellcheck disable=SC2034 # the variables are the test's
real_inner() { # --inner SRC GARUDAD GARCTL MINIMAL SCRATCH
	src=$2 garudad=$3 garctl=$4 minimal=$5 work=$6
	start=$SECONDS
	mount -t tmpfs -o mode=0755 tmpfs /run
}
