#!/usr/bin/env bash
# build-tree.sh SRC BUILDDIR GARUDAD — docs/client.md's lines for building a program
# against a source checkout's build tree (no libgaruda-dev), run exactly as written:
# the ```sh block that names build/meson-uninstalled, in a directory where `build` is
# this build directory and app.c a copy of examples/minimal.c. Checks that pkg-config
# takes the build tree's garuda-uninstalled.pc (not an installed garuda.pc), and that
# each ./app in the block loads this build's libgaruda.so.0 and completes a wait on a
# private garudad. (Issue 30, item 12: building against the build tree was
# undocumented; without libgaruda-dev, `pkg-config garuda` failed.)
set -euo pipefail
src=$1 build=$(cd "$2" && pwd) garudad=$3
command -v pkg-config >/dev/null || { echo "SKIP: pkg-config not installed"; exit 77; }
command -v "${CC:-cc}" >/dev/null || { echo "SKIP: no C compiler (${CC:-cc})"; exit 77; }
work=$(mktemp -d)
pid=
cleanup() { [[ -z $pid ]] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

# the documented block: the ```sh fence that mentions meson-uninstalled
block=$(awk '/^```sh$/ { inb = 1; b = ""; next }
	inb && /^```$/ { inb = 0; if (b ~ /meson-uninstalled/) { printf "%s", b; exit } next }
	inb { b = b $0 "\n" }' "$src/docs/client.md")
[[ -n $block ]] || fail "docs/client.md has no sh block naming build/meson-uninstalled"
echo "--- docs/client.md:"
echo "$block"
grep -q 'PKG_CONFIG_PATH=build/meson-uninstalled' <<<"$block" || fail "the block does not set PKG_CONFIG_PATH=build/meson-uninstalled"
[[ -f $build/meson-uninstalled/garuda-uninstalled.pc ]] ||
	fail "meson wrote no $build/meson-uninstalled/garuda-uninstalled.pc"

mkdir "$work/checkout"
ln -s "$build" "$work/checkout/build"
cp "$src/examples/minimal.c" "$work/checkout/app.c"
flags=$(cd "$work/checkout" && PKG_CONFIG_PATH=build/meson-uninstalled pkg-config --cflags --libs garuda)
[[ $flags == *"-L$build/client"* ]] ||
	fail "pkg-config garuda did not take the build tree's garuda-uninstalled.pc: $flags"

mkdir "$work/rt"
"$garudad" --no-config --runtime-dir="$work/rt" --log-level=notice 2>"$work/garudad.log" &
pid=$!
for _ in $(seq 100); do [[ -S $work/rt/control.sock ]] && break; sleep 0.1; done
[[ -S $work/rt/garuda.sock ]] || { cat "$work/garudad.log"; fail "garudad did not start"; }

# The block as it is, with a check after each ./app: it completed its wait, and ldd
# (with the environment that ./app line had) resolves this build's libgaruda.so.0
# shellcheck disable=SC2016 # expanded by the bash that runs the block
check='check() {
	cat app.out
	grep -q "^sequence 1 completed" app.out || { echo "./app did not complete its wait"; return 1; }
	lib=$(env "$@" ldd ./app | awk '"'"'$1 == "libgaruda.so.0" { print $3 }'"'"')
	[[ -n $lib && $(realpath "$lib") == $(realpath "$BUILD/client/libgaruda.so.0") ]] ||
		{ echo "./app loads libgaruda.so.0 from ${lib:-nowhere}, not $BUILD/client"; return 1; }
	echo "./app: ok ($lib)"
}'
runs=$(grep -c '^\(LD_LIBRARY_PATH=[^ ]* \)\?\./app$' <<<"$block") || true
((runs >= 2)) || fail "the block runs ./app $runs time(s): both ways (LD_LIBRARY_PATH, rpath) expected"
script="$check"$'\n'$(sed -E 's|^((LD_LIBRARY_PATH=[^ ]+ )?)\./app$|\1./app >app.out; check \1|' <<<"$block")
out=$(cd "$work/checkout" && BUILD=$build GARUDA_SOCKET=$work/rt/garuda.sock bash -euo pipefail -c "$script" 2>&1) ||
	{ echo "$out"; fail "the documented lines failed"; }
echo "$out"
[[ $(grep -c '^\./app: ok' <<<"$out") == "$runs" ]] || fail "not every ./app ran"
kill -0 "$pid" || fail "garudad exited"
echo "the documented build-tree lines compile examples/minimal.c and run it both ways"
