#!/usr/bin/env bash
# man-pages.sh SRC — the shipped man pages (docs/*.1, docs/*.8) format without a
# warning: groff with every warning on (-ww, input through preconv as man does) and
# `man -l` at 80 columns, as a user reads them, print nothing on stderr. (Issue 30,
# item 16: `man garudad` printed "cannot adjust line" for the plan key's default, one
# word too long for the line.) First checks that such a page is caught.
set -euo pipefail
src=$1
for tool in groff man; do
	command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (Debian packages groff-base, man-db)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# warnings PAGE: what groff -ww and man -l say on stderr about PAGE
warnings() {
	groff -k -ww -man -Tutf8 -z "$1" 2>&1
	# shellcheck disable=SC2069 # its stderr only, onto the captured stdout
	LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$1" 2>&1 >/dev/null
}

# the check can fail: a line with a word longer than the line cannot be adjusted
printf '.TH T 1\n.SH NAME\nt \\- t\n.SH DESCRIPTION\n.TP\n.BR key " (default %s)"\ntext\n' \
	"$(printf 'x,%.0s' $(seq 60))" >"$work/bad.1"
if [[ -z $(warnings "$work/bad.1") ]]; then
	echo "groff/man printed no warning for a line that cannot be adjusted: this check checks nothing"
	exit 1
fi

failed=0
pages=("$src"/docs/*.[18])
for page in "${pages[@]}"; do
	out=$(warnings "$page")
	if [[ -n $out ]]; then
		echo "${page#"$src"/}:"
		echo "$out"
		failed=1
	fi
done
((failed == 0)) || exit 1
echo "no warnings: ${pages[*]#"$src"/}"
