#!/usr/bin/env bash
# verify-units.sh SYSTEMD_DIR GARUDAD GARCTL PROMETHEUS_DIR — every unit garuda ships,
# checked by systemd-analyze verify as one unit set: garuda.service (its ExecStart at
# the built garudad, its ExecReload at the built garctl), both sockets, and
# garuda-fleet's garuda-metrics.service and .timer (contrib/prometheus, ExecStart at
# the garuda-textfile beside them). Fails on any warning about one of our units (e.g.
# "ReadWritePaths= path is not absolute, ignoring"), and first checks that a unit with
# such a warning is caught.
set -euo pipefail
src=$1 bin=$2 garctl=$3 prom=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
units=(garuda.service garuda.socket garuda-control.socket garuda-metrics.service garuda-metrics.timer)
sed -e "s|@SBINDIR@/garudad|$bin|g" -e "s|@BINDIR@/garctl|$garctl|g" \
	"$src/garuda.service.in" >"$tmp/garuda.service"
cp "$src/garuda.socket" "$src/garuda-control.socket" "$prom/garuda-metrics.timer" "$tmp/"
sed "s|/usr/libexec/garuda/garuda-textfile|$prom/garuda-textfile|g" \
	"$prom/garuda-metrics.service" >"$tmp/garuda-metrics.service"
if grep -n '@[A-Z]*@' "$tmp"/*; then
	echo "a placeholder is left in the units above"
	exit 1
fi

# verify DIR UNIT...: what systemd-analyze says about our units (nothing: clean)
verify() {
	local dir=$1 out
	shift
	out=$(cd "$dir" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no "${@/#/./}" 2>&1) ||
		{ echo "$out"; return 0; }
	# systemd-analyze also reports problems in unrelated system units: keep ours only
	printf '%s\n' "$out" | grep -E "$dir/|garuda[-a-z]*\.(service|socket|timer)" || true
}

# the check can fail: a unit with an unexpanded variable in ReadWritePaths= is reported
mkdir "$tmp/bad"
cp "$tmp/garuda-metrics.service" "$tmp/bad/"
# shellcheck disable=SC2016 # literally ${TEXTFILE_DIR}
printf '[Service]\nReadWritePaths=${TEXTFILE_DIR}\n' >>"$tmp/bad/garuda-metrics.service"
if [[ -z $(verify "$tmp/bad" garuda-metrics.service) ]]; then
	echo "systemd-analyze verify did not report ReadWritePaths=\${TEXTFILE_DIR}: this check checks nothing"
	exit 1
fi

ours=$(verify "$tmp" "${units[@]}")
if [[ -n $ours ]]; then
	echo "$ours"
	exit 1
fi
echo "units verified: ${units[*]}"
