#!/usr/bin/env bash
# security.sh SERVICE_FILE MAX — garuda.service's exposure score from
# `systemd-analyze security --offline=true` must be at most MAX (the project: 1.5).
set -euo pipefail
unit=$1 max=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$unit" "$tmp/garuda.service"
out=$(cd "$tmp" && systemd-analyze security --offline=true --no-pager ./garuda.service 2>&1) || {
	echo "$out"
	exit 1
}
score=$(sed -n 's/.*Overall exposure level for garuda.service: \([0-9.]*\).*/\1/p' <<<"$out")
[[ -n $score ]] || { echo "$out"; echo "no exposure level in the output"; exit 1; }
echo "exposure level of garuda.service: $score (at most $max)"
awk -v s="$score" -v m="$max" 'BEGIN { exit !(s <= m) }' || { echo "$out"; exit 1; }
