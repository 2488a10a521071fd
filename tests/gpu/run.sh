#!/usr/bin/env bash
# tests/gpu/run.sh — the GPU check: kernel-end to client-wake latency on a real NVIDIA
# GPU, garudad against cudaStreamSynchronize. Run it on a GPU host, from anywhere:
#
#   tests/gpu/run.sh [--iterations=N] [--warmup=N] [--kernel-us=N] [--device=N]
#                    [--build-dir=DIR] [--modes=M1,M2,...] [--dry-run]
#
# It builds garudad and libgaruda from this checkout (meson, into DIR, default
# build-gpu), builds tests/gpu/gpu_latency with nvcc, starts a private garudad on a
# temporary socket, and runs gpu_latency once per mode: each iteration launches a
# kernel that sleeps --kernel-us on the GPU timer, then garuda's cuda backend enqueues
# cuStreamWriteValue64 of the next sequence into a garuda segment word, and the client
# waits (through garudad, per readiness form; or in cudaStreamSynchronize under spin,
# yield and blocking-sync scheduling). It prints one table: p50/p99/mean/min/max of
# kernel end (the store seen by a spinning observer) to client wake, in microseconds.
#
# Needs: nvcc (CUDA >= 12), an NVIDIA driver >= 12.0 (libcuda.so.1), a C compiler,
# meson, ninja, pkg-config and garuda's build dependencies (libsystemd-dev,
# liburing-dev, libcjson-dev, libcriterion-dev). garudad locks segment memory: run as
# root or with a memlock limit of a few MiB (ulimit -l). Not a meson test.
#
# --dry-run rehearses all of this without a GPU or nvcc: gpu_latency is the meson-built
# gpu-latency-fake (tests/gpu/gpu_fake.c) over the FAKE libcuda.so.1 of tests/fakes.
# It checks the plumbing; its numbers mean nothing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
iterations=1000
warmup=50
kernel_us=100
device=0
build_dir=$repo/build-gpu
dry_run=0
modes=(garuda-eventfd garuda-message garuda-doorbell sync-spin sync-yield sync-blocking)

for arg in "$@"; do
	case $arg in
	--iterations=*) iterations=${arg#*=} ;;
	--warmup=*) warmup=${arg#*=} ;;
	--kernel-us=*) kernel_us=${arg#*=} ;;
	--device=*) device=${arg#*=} ;;
	--build-dir=*) build_dir=${arg#*=} ;;
	--modes=*) IFS=, read -r -a modes <<<"${arg#*=}" ;;
	--dry-run) dry_run=1 ;;
	-h | --help)
		sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "run.sh: unknown argument $arg (try --help)" >&2
		exit 2
		;;
	esac
done

die() {
	echo "run.sh: $*" >&2
	exit 1
}
step() { printf '== %s\n' "$*" >&2; }

tools=(meson ninja cc)
((dry_run)) || tools+=(nvcc)
for tool in "${tools[@]}"; do
	command -v "$tool" >/dev/null || die "$tool not found (see the header of this script)"
done
if ((!dry_run)) && command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader >&2 || true
fi

step "build garudad and libgaruda ($build_dir)"
if [[ ! -f $build_dir/meson-private/coredata.dat ]]; then
	meson setup "$build_dir" "$repo" --buildtype=release >/dev/null
fi
if ((dry_run)); then
	meson compile -C "$build_dir" garudad garuda:shared_library gpu-latency-fake cuda >/dev/null
else
	meson compile -C "$build_dir" garudad garuda:shared_library >/dev/null
fi
garudad=$build_dir/daemon/garudad
[[ -x $garudad ]] || die "no $garudad after the build"

tmp=$(mktemp -d /tmp/garuda-gpu.XXXXXX)
daemon_pid=
# shellcheck disable=SC2317 # invoked through the EXIT trap
cleanup() {
	if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ((dry_run)); then
	step "dry run: gpu-latency-fake over the FAKE libcuda (no GPU; numbers mean nothing)"
	latency=$build_dir/tests/backends/gpu-latency-fake
	export GARUDA_CUDA_LIBRARY=$build_dir/tests/fakes/libcuda.so.1
else
	step "build gpu_latency (nvcc)"
	latency=$tmp/gpu_latency
	read -r -a nvcc_arch <<<"${NVCC_ARCH:--arch=native}"
	nvcc -O2 "${nvcc_arch[@]}" -c "$here/gpu_kernel.cu" -o "$tmp/gpu_kernel.o"
	cc -O2 -std=gnu11 -Wall -Wextra -D_GNU_SOURCE -I"$repo/client/include" -I"$here" \
		-c "$here/gpu_latency.c" -o "$tmp/gpu_latency.o"
	nvcc -o "$latency" "$tmp/gpu_latency.o" "$tmp/gpu_kernel.o" \
		-L"$build_dir/client" -lgaruda -lcuda -Xlinker -rpath="$build_dir/client" -lpthread
fi

step "start garudad on $tmp/garuda.sock"
echo '{ "socket_group": "", "log_level": "warning" }' >"$tmp/garudad.json"
"$garudad" --config="$tmp/garudad.json" --socket="$tmp/garuda.sock" \
	--control-socket="$tmp/control.sock" >"$tmp/garudad.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
	[[ -S $tmp/garuda.sock ]] && break
	kill -0 "$daemon_pid" 2>/dev/null || { cat "$tmp/garudad.log" >&2; die "garudad exited"; }
	sleep 0.05
done
[[ -S $tmp/garuda.sock ]] || die "garudad did not create its socket"
export GARUDA_SOCKET=$tmp/garuda.sock

step "measure: ${iterations} iterations (+${warmup} warm-up), kernel ${kernel_us} us, device ${device}"
"$latency" --header
status=0
for mode in "${modes[@]}"; do
	"$latency" --mode="$mode" --iterations="$iterations" --warmup="$warmup" \
		--kernel-us="$kernel_us" --device="$device" || status=1
done
# the Python package's real-torch checks (docs/python.md), where torch with CUDA,
# pytest and pytest-asyncio are importable; they start their own garudad
if ((!dry_run)) && python3 -c 'import sys, pytest, pytest_asyncio, torch
sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	step "python: garuda.torch and examples/python/torch_server.py with real torch"
	env -u GARUDA_CUDA_LIBRARY GARUDA_LIBRARY="$build_dir/client/libgaruda.so.0" \
		GARUDAD="$garudad" GARUDA_SOURCE_ROOT="$repo" PYTHONPATH="$repo/python" \
		PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -c "$repo/python/tests/pytest.ini" \
		"$repo/python/tests/test_torch.py" "$repo/python/tests/test_examples.py" \
		-k "real_torch or torch_server" || status=1
else
	step "python: real-torch checks skipped (needs torch with CUDA, pytest, pytest-asyncio)"
fi
if ! kill -0 "$daemon_pid" 2>/dev/null; then
	cat "$tmp/garudad.log" >&2
	die "garudad died during the run"
fi
if [[ -s $tmp/garudad.log ]]; then
	echo "-- garudad log" >&2
	cat "$tmp/garudad.log" >&2
fi
exit $status
