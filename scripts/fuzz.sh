#!/usr/bin/env bash
# fuzz.sh — run every libFuzzer target of a build for a bounded time.
#   scripts/fuzz.sh BUILD_DIR [SECONDS]    (SECONDS: default $FUZZ_SECONDS or 45)
# The build must be configured with CC=clang and -Dfuzz=true. Each target
# tests/fuzz/fuzz-NAME starts from the checked-in seeds (tests/fuzz/corpus for
# fuzz-decode, tests/fuzz/corpus-NAME for others) plus a working corpus kept in
# BUILD_DIR/fuzz/NAME/; crash inputs land in BUILD_DIR/fuzz/NAME/artifacts/.
# Exits non-zero when a target finds a crash (or does not run).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

[[ $# -ge 1 ]] || { echo "usage: $0 BUILD_DIR [SECONDS]" >&2; exit 2; }
build=$(cd "$1" && pwd)
seconds=${2:-${FUZZ_SECONDS:-45}}

shopt -s nullglob
targets=("$build"/tests/fuzz/fuzz-*)
if ((${#targets[@]} == 0)); then
	echo "fuzz: no fuzz targets in $build/tests/fuzz (configure with CC=clang -Dfuzz=true and build)" >&2
	exit 1
fi

status=0
for exe in "${targets[@]}"; do
	[[ -x $exe && -f $exe ]] || continue
	name=$(basename "$exe")
	name=${name#fuzz-}
	seeds=$root/tests/fuzz/corpus-$name
	[[ $name == decode ]] && seeds=$root/tests/fuzz/corpus
	work=$build/fuzz/$name
	mkdir -p "$work/corpus" "$work/artifacts"
	rm -f "$work"/artifacts/*
	echo "fuzz: $name for ${seconds}s (seeds: ${seeds#"$root"/})"
	rc=0
	"$exe" -max_total_time="$seconds" -max_len=1024 -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/artifacts/" \
		"$work/corpus" "$seeds" >"$work/log" 2>&1 || rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n1)
	found=("$work"/artifacts/*)
	if ((rc != 0 || ${#found[@]} > 0)); then
		tail -n 60 "$work/log"
		echo "fuzz: $name FAILED (exit $rc); inputs: ${found[*]:-none}" >&2
		status=1
	else
		echo "fuzz: $name ok, ${execs:-?} executions in ${seconds}s"
	fi
done
exit $status
