#!/usr/bin/env bash
# dead-private-socket.sh — first hour round 2, item 4 (and round 3, item 14): a user's own garudad was killed
# and left its sockets in $XDG_RUNTIME_DIR/garuda; the system garudad runs at
# /run/garuda. A client (examples/minimal, libgaruda's default search) and garctl
# status, run as that user with no GARUDA_SOCKET, must reach the system garudad, and
# say which socket they used (GARUDA_DEBUG=1's line, garctl status's Socket: row).
# Runs in a private mount namespace with a tmpfs on /run/garuda, so the host's own
# /run/garuda is never touched; what the user runs is copied into a 0755 directory
# under $TMPDIR, else /tmp (the build may live under a 0700 home). Needs root and
# unshare, and that directory not mounted noexec: skips (77) otherwise.
#   dead-private-socket.sh GARUDAD GARCTL MINIMAL LIBGARUDA_DIR
set -euo pipefail
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (a mount namespace and another uid)"; exit 77; }
command -v unshare >/dev/null && command -v setpriv >/dev/null ||
	{ echo "SKIP: needs unshare and setpriv (util-linux)"; exit 77; }
if [[ ${1-} != --inside ]]; then
	exec unshare --mount --propagation private "$0" --inside "$@"
fi
shift
garudad=$1 garctl=$2 minimal=$3 libdir=$4
user=nobody group=nogroup

work=$(mktemp -d "${TMPDIR:-/tmp}/garuda-deadsock.XXXXXX")
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
python3 -c 'import os, sys; sys.exit(os.statvfs(sys.argv[1]).f_flag & os.ST_NOEXEC)' "$work" ||
	{ echo "SKIP: ${TMPDIR:-/tmp} is mounted noexec: no place for the programs the user runs (set TMPDIR)"; exit 77; }
chmod 0755 "$work"
mkdir -p "$work/bin" "$work/xdg/garuda" /run/garuda
mount -t tmpfs -o mode=0755 tmpfs /run/garuda
cp "$garctl" "$minimal" "$work/bin/"
cp -P "$libdir"/libgaruda.so "$libdir"/libgaruda.so.[0-9]* "$work/bin/" 2>/dev/null || true
rm -rf "$work"/bin/*.p
chmod -R a+rX "$work/bin"

# the dead private sockets: bound, then their listener gone
python3 - "$work/xdg/garuda" <<'PY'
import socket, sys
for name in ("garuda.sock", "control.sock"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(sys.argv[1] + "/" + name)
    s.close()
PY
chown -R "$user" "$work/xdg"
chmod 0700 "$work/xdg"

run_user() {
	setpriv --reuid="$user" --regid="$group" --clear-groups -- "$@"
}

# issue 30, item 14: no garudad anywhere (the system one not started yet). The client
# leads with the user's own garudad and says "start it" once per garudad; garctl
# gives a next step on a second line.
if out=$(run_user env -i PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$work/xdg" LD_LIBRARY_PATH="$work/bin" \
	"$work/bin/minimal" 2>&1); then
	echo "$out"; echo "FAIL: the client connected with no garudad running"; exit 1
fi
echo "client, nobody listening: $out"
grep -q "^minimal: cannot connect to garudad: your own garudad ($work/xdg/garuda/garuda.sock) is gone" <<<"$out" ||
	{ echo "FAIL: the client's message does not lead with the user's own garudad"; exit 1; }
grep -q "start it again" <<<"$out" || { echo "FAIL: no 'start it again'"; exit 1; }
[[ $(grep -o "systemctl start" <<<"$out" | wc -l) == 1 ]] ||
	{ echo "FAIL: the client's message repeats its remedy"; exit 1; }
(( ${#out} < 400 )) || { echo "FAIL: the client's message is ${#out} characters"; exit 1; }
if out=$(run_user env -i PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$work/xdg" LD_LIBRARY_PATH="$work/bin" \
	"$work/bin/garctl" --no-pager status 2>&1); then
	echo "$out"; echo "FAIL: garctl status succeeded with no garudad running"; exit 1
fi
echo "garctl, nobody listening: $out"
[[ $(wc -l <<<"$out") == 2 ]] || { echo "FAIL: garctl's message is not two lines"; exit 1; }
grep -q "^garctl: your own garudad is gone: nothing listens on $work/xdg/garuda/control.sock" <<<"$out" ||
	{ echo "FAIL: garctl does not lead with the user's own garudad"; exit 1; }
grep -q "^garctl: start it again" <<<"$out" || { echo "FAIL: garctl gives no next step"; exit 1; }

# the system garudad, its sockets admitting group nogroup
printf '{"socket_group": "%s", "control_group": "%s"}\n' "$group" "$group" >"$work/garudad.json"
GARUDAD_DEFAULT_CONFIG= "$garudad" --config="$work/garudad.json" --runtime-dir=/run/garuda \
	--event-loop=epoll >"$work/garudad.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
	[[ -S /run/garuda/control.sock ]] && break
	sleep 0.05
done
[[ -S /run/garuda/control.sock ]] || { cat "$work/garudad.log"; echo "garudad did not start"; exit 1; }

out=$(run_user env -i PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$work/xdg" LD_LIBRARY_PATH="$work/bin" \
	GARUDA_DEBUG=1 "$work/bin/minimal" 2>&1) || { echo "$out"; echo "FAIL: the client did not reach the system garudad"; exit 1; }
grep -q "libgaruda: connected to garudad at /run/garuda/garuda.sock" <<<"$out" ||
	{ echo "$out"; echo "FAIL: GARUDA_DEBUG does not say which socket was used"; exit 1; }
echo "client: $(grep 'libgaruda: connected' <<<"$out")"

out=$(run_user env -i PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$work/xdg" LD_LIBRARY_PATH="$work/bin" \
	"$work/bin/garctl" --no-pager status 2>&1) || { echo "$out"; echo "FAIL: garctl did not reach the system garudad"; exit 1; }
grep -q "Socket: *$(printf '%s' /run/garuda/control.sock) (the system default, after your own" <<<"$out" ||
	{ echo "$out"; echo "FAIL: garctl status does not name the socket it used"; exit 1; }
echo "garctl: $(grep 'Socket:' <<<"$out")"

# and with GARUDA_SOCKET set to the dead socket, nothing else is tried
if run_user env -i PATH=/usr/bin:/bin XDG_RUNTIME_DIR="$work/xdg" LD_LIBRARY_PATH="$work/bin" \
	GARUDA_SOCKET="$work/xdg/garuda/garuda.sock" "$work/bin/minimal" >/dev/null 2>&1; then
	echo "FAIL: an explicit GARUDA_SOCKET was not the only place tried"
	exit 1
fi
echo "PASS"
