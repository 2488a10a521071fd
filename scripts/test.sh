#!/usr/bin/env bash
# test.sh — install dependencies, configure (warnings are errors), build and run the
# whole test suite. Exits non-zero on any failure. Run from anywhere.
#   BUILD_DIR   build directory, relative to the repository root (default build-test)
#   extra arguments are passed to `meson setup` (e.g. -Db_sanitize=address,undefined)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${BUILD_DIR:-build-test}

bash scripts/deps.sh

if [[ -f $build/meson-private/coredata.dat ]]; then
	meson setup --reconfigure "$build" -Dwerror=true "$@"
else
	meson setup "$build" -Dwerror=true "$@"
fi
ninja -C "$build"
# sanitizer runtimes: stop at the first report instead of printing and carrying on
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1}
meson test -C "$build" --print-errorlogs --num-processes 2
