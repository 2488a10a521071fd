#!/usr/bin/env bash
# Verify garuda's units with systemd-analyze: the service (pointing at the built
# garudad) and both sockets, as a unit set. Fails on any warning about our units.
set -euo pipefail
src=$1 bin=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|@SBINDIR@/garudad|$bin|" "$src/garuda.service.in" > "$tmp/garuda.service"
cp "$src/garuda.socket" "$src/garuda-control.socket" "$tmp/"
out=$(cd "$tmp" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
	./garuda.service ./garuda.socket ./garuda-control.socket 2>&1) || { echo "$out"; exit 1; }
# systemd-analyze also reports problems in unrelated system units: keep ours only
ours=$(printf '%s\n' "$out" | grep -E 'garuda(-control)?\.(service|socket)' || true)
if [ -n "$ours" ]; then
	echo "$ours"
	exit 1
fi
echo "units verified: garuda.service garuda.socket garuda-control.socket"
