#!/usr/bin/env bash
# tests/gpu/run.sh — the GPU check: how late each way of waiting on a CUDA stream wakes
# after the kernel ends, and how much CPU it burns, one process alone and N processes
# each waiting on its own stream; garudad against cudaStreamSynchronize. Run it on a
# GPU host, from anywhere (one command; about 3 minutes with the build):
#
#   tests/gpu/run.sh [--out=DIR] [--build-dir=DIR] [--device=N]
#                    [--iterations=N] [--kernel-us=N] [--modes=M1,M2,...]
#                    [--procs=N] [--multi-kernel-us=US1,US2] [--seconds=S]
#                    [--queued=D1,D2] [--pipe-kernel-us=N] [--pipe-rounds=N]
#   tests/gpu/run.sh --check [--no-build] [--build-dir=DIR]
#
# It builds garudad, libgaruda and gpu-latency (meson, into DIR, default build-gpu;
# gpu-latency needs nvcc: on PATH or /usr/local/cuda/bin), starts a private garudad on
# a temporary socket and prints two tables (docs: README, "The GPU check"):
#  1. single process: --iterations kernels of --kernel-us (default 1000 x 100 us) per
#     mode; kernel end (the store seen by a spinning observer) to wake, microseconds;
#  2. --procs processes (default 8), one stream each, back-to-back kernels of each
#     --multi-kernel-us (default 2000,10000) for --seconds (default 5) per mode:
#     completions/s, wake latency of process 0, client CPU seconds per 1,000
#     completions (and as cores), garudad CPU seconds per 1,000 completions.
#  3. pipelined, single process: --pipe-rounds rounds (default 100) of each --queued
#     (default 4,10) kernels of --pipe-kernel-us (default 2000) queued on the stream,
#     each signalled behind the one before, then waited for in order (garuda modes: a
#     sample per sequence; cudaStreamSynchronize: one per round, the last);
#     kernel end to wake as in table 1.
# Then one line: the spin steps' hardware word wait (umwait, mwaitx, wfe, or spin for
# none: util/wordwait.h, garudad(8) wordwait) and how many of garudad's spin steps
# parked in it (garctl scanners), and libgaruda's GARUDA_WORDWAIT.
# Tables and JSON lines (single.jsonl, multi.jsonl, pipelined.jsonl), the GPU's name and
# garudad's log go to --out (default DIR/gpu-results).
#
# Needs: an NVIDIA driver (libcuda.so.1), the CUDA toolkit (nvcc, lib64/libcudart_static.a,
# lib64/stubs), a C compiler, meson, ninja, pkg-config, python3 and garuda's build
# dependencies (scripts/deps.sh). garudad locks segment memory: run as root or with a
# memlock limit of a few MiB (ulimit -l).
#
# --check does all of it except touching a GPU, in seconds: build (unless --no-build),
# start garudad, run every mode alone (50 kernels) and as 2 processes (0.1 s) with the meson-built
# gpu-latency-fake over the FAKE libcuda.so.1 of tests/fakes, check both tables and the
# JSON; where gpu-latency was built, check that it loads and parses its options. Its
# numbers mean nothing. It is the meson test gpu-check (suite gpu).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
iterations=1000
warmup=50
kernel_us=100
device=0
procs=8
multi_kernel_us=2000,10000
seconds=5
queued=4,10
pipe_kernel_us=2000
pipe_rounds=100
build_dir=$repo/build-gpu
out=
check=0
build=1
modes=(garuda-eventfd garuda-message garuda-doorbell sync-spin sync-yield sync-blocking)

for arg in "$@"; do
	case $arg in
	--iterations=*) iterations=${arg#*=} ;;
	--kernel-us=*) kernel_us=${arg#*=} ;;
	--device=*) device=${arg#*=} ;;
	--procs=*) procs=${arg#*=} ;;
	--multi-kernel-us=*) multi_kernel_us=${arg#*=} ;;
	--seconds=*) seconds=${arg#*=} ;;
	--queued=*) queued=${arg#*=} ;;
	--pipe-kernel-us=*) pipe_kernel_us=${arg#*=} ;;
	--pipe-rounds=*) pipe_rounds=${arg#*=} ;;
	--build-dir=*) build_dir=${arg#*=} ;;
	--out=*) out=${arg#*=} ;;
	--modes=*) IFS=, read -r -a modes <<<"${arg#*=}" ;;
	--check) check=1 ;;
	--no-build) build=0 ;;
	-h | --help)
		sed -n '2,40p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
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

if ((check)); then
	# the latency numbers mean nothing over the fake; a loaded machine may leave no
	# sample whose observer was on time, which gpu_latency --check accepts
	iterations=50 warmup=0 kernel_us=100 procs=2 multi_kernel_us=1000 seconds=0.1
	queued=4 pipe_kernel_us=100 pipe_rounds=5
fi
build_dir=$(cd "$(dirname "$build_dir")" && pwd)/$(basename "$build_dir")
out=${out:-$build_dir/gpu-results}
tools=(python3)
((build)) && tools+=(meson ninja)
for tool in "${tools[@]}"; do
	command -v "$tool" >/dev/null || die "$tool not found (see the header of this script)"
done

if ((build)); then
	step "build ($build_dir)"
	if [[ ! -f $build_dir/meson-private/coredata.dat ]]; then
		meson setup "$build_dir" "$repo" --buildtype=release >/dev/null
	fi
	targets=(garudad garctl garuda:shared_library gpu-latency-fake cuda)
	grep -q '^build tests/gpu/gpu-latency:' "$build_dir/build.ninja" && targets+=(gpu-latency)
	meson compile -C "$build_dir" "${targets[@]}" >/dev/null
fi
garudad=$build_dir/daemon/garudad
real=$build_dir/tests/gpu/gpu-latency
fake=$build_dir/tests/gpu/gpu-latency-fake
[[ -x $garudad ]] || die "no $garudad (build it first)"
if ((check)); then
	latency=$fake
	export GARUDA_CUDA_LIBRARY=$build_dir/tests/fakes/libcuda.so.1
	[[ -e $GARUDA_CUDA_LIBRARY ]] || die "no fake $GARUDA_CUDA_LIBRARY"
else
	latency=$real
	[[ -x $latency ]] || die "no $latency: meson did not find nvcc (PATH, /usr/local/cuda/bin); see its 'tests/gpu' message"
fi
[[ -x $latency ]] || die "no $latency (build it first)"

mkdir -p "$out"
rm -f "$out/single.jsonl" "$out/multi.jsonl" "$out/pipelined.jsonl" "$out/tables.txt"
tmp=$(mktemp -d /tmp/garuda-gpu.XXXXXX)
daemon_pid=
# shellcheck disable=SC2317 # invoked through the EXIT trap
cleanup() {
	if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
		kill -TERM "$daemon_pid" 2>/dev/null || true
		wait "$daemon_pid" 2>/dev/null || true
	fi
	[[ -f $tmp/garudad.log ]] && cp "$tmp/garudad.log" "$out/garudad.log"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ((check)); then
	step "check: gpu-latency-fake over the FAKE libcuda (no GPU; numbers mean nothing)"
	if [[ -x $real ]]; then
		# it must load (libcuda.so.1 resolved here by the fake) and know every mode
		LD_LIBRARY_PATH=$build_dir/tests/fakes "$real" --help >"$tmp/help" ||
			die "$real --help failed"
		for mode in "${modes[@]}"; do
			grep -qw -- "$mode" "$tmp/help" || die "$real does not know mode $mode"
		done
		echo "gpu-latency (nvcc build) loads and knows every mode" >&2
	else
		echo "gpu-latency not built (no nvcc): only the fake program is checked" >&2
	fi
elif command -v nvidia-smi >/dev/null; then
	nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id --format=csv,noheader |
		tee "$out/gpu.txt" >&2 || true
fi

step "start garudad on $tmp/garuda.sock"
echo '{ "socket_group": "", "log_level": "warning" }' >"$tmp/garudad.json"
# garudad stays off the last CPU, where gpu_latency's observer spins
ncpu=$(nproc)
pin=()
((ncpu > 2)) && command -v taskset >/dev/null && pin=(taskset -c "0-$((ncpu - 2))")
"${pin[@]}" "$garudad" --config="$tmp/garudad.json" --socket="$tmp/garuda.sock" \
	--control-socket="$tmp/control.sock" >"$tmp/garudad.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 200); do
	[[ -S $tmp/garuda.sock ]] && break
	kill -0 "$daemon_pid" 2>/dev/null || { cat "$tmp/garudad.log" >&2; die "garudad exited"; }
	sleep 0.05
done
[[ -S $tmp/garuda.sock ]] || die "garudad did not create its socket"
export GARUDA_SOCKET=$tmp/garuda.sock

status=0
# run the program; its table line goes to the terminal and to tables.txt
check_arg=()
((check)) && check_arg=(--check)
measure() { "$latency" "$@" --device="$device" "${check_arg[@]}" | tee -a "$out/tables.txt" || status=1; }

step "single process: ${iterations} iterations (+${warmup} warm-up), kernel ${kernel_us} us, device ${device}"
"$latency" --header | tee -a "$out/tables.txt"
for mode in "${modes[@]}"; do
	measure --mode="$mode" --iterations="$iterations" --warmup="$warmup" \
		--kernel-us="$kernel_us" --json="$out/single.jsonl"
done

IFS=, read -r -a kernels <<<"$multi_kernel_us"
step "${procs} processes x 1 stream, kernels ${multi_kernel_us} us, ${seconds} s per mode"
echo | tee -a "$out/tables.txt"
"$latency" --header --procs="$procs" | tee -a "$out/tables.txt"
for k in "${kernels[@]}"; do
	for mode in "${modes[@]}"; do
		measure --mode="$mode" --procs="$procs" --kernel-us="$k" --seconds="$seconds" \
			--warmup=$((check ? 1 : 20)) --daemon-pid="$daemon_pid" --json="$out/multi.jsonl"
	done
done

IFS=, read -r -a depths <<<"$queued"
step "pipelined: ${pipe_rounds} rounds of ${queued} kernels of ${pipe_kernel_us} us queued, single process"
echo | tee -a "$out/tables.txt"
for q in "${depths[@]}"; do
	echo "queued per round: $q" | tee -a "$out/tables.txt"
	"$latency" --header | tee -a "$out/tables.txt"
	for mode in "${modes[@]}"; do
		measure --mode="$mode" --iterations="$pipe_rounds" --warmup=$((check ? 0 : 5)) \
			--kernel-us="$pipe_kernel_us" --queued="$q" --json="$out/pipelined.jsonl"
	done
done

# the Python package's real-torch checks (docs/python.md), where torch with CUDA,
# pytest and pytest-asyncio are importable; they start their own garudad
if ((!check)) && python3 -c 'import sys, pytest, pytest_asyncio, torch
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

# the word wait: garudad's (its scanners, over the run) and libgaruda's setting
garctl=$build_dir/client/garctl/garctl
if ! "$garctl" --socket="$tmp/control.sock" --no-pager -j scanners >"$tmp/scanners.json" ||
	! python3 - "$tmp/scanners.json" "${GARUDA_WORDWAIT:-auto}" <<'EOF' | tee -a "$out/tables.txt"; then
import json, sys
sc = json.load(open(sys.argv[1]))["scanners"]
steps = sum(s["spins"] for s in sc)
hw = sum(s["wordwait_steps"] for s in sc)
print(f"word wait: {sc[0]['wordwait']} ({sc[0]['wordwait_detail']}); garudad: {hw} of {steps} "
      f"scanner spin steps were hardware waits; libgaruda: GARUDA_WORDWAIT={sys.argv[2]}")
EOF
	echo "run.sh: garctl scanners gave no word wait" >&2
	status=1
fi
if [[ -s $tmp/garudad.log ]]; then
	echo "-- garudad log" >&2
	cat "$tmp/garudad.log" >&2
fi

# every run must have left one well-formed JSON line with sane numbers
# (a wake may precede the observer's stamp by its slack, 5 us: see gpu_latency.c; no
# latency can exceed the run's wall time: wall_s, multi's seconds);
# under --check every sample may be late, but there must be samples
python3 - "$out" "${#modes[@]}" "$((${#modes[@]} * ${#kernels[@]}))" "$procs" "$check" "$((${#modes[@]} * ${#depths[@]}))" <<'EOF' || status=1
import json, sys
out, n_single, n_multi, procs, check, n_pipe = sys.argv[1], *map(int, sys.argv[2:])
def sampled(r):
    return r["n"] + (r["late"] if check else 0) >= 1 and (r["n"] == 0 or r["p50_us"] <= r["p99_us"])
def rows(name):
    try:
        return [json.loads(line) for line in open(f"{out}/{name}")]
    except (OSError, ValueError) as e:
        sys.exit(f"run.sh: {name}: {e}")
single, multi, pipe = rows("single.jsonl"), rows("multi.jsonl"), rows("pipelined.jsonl")
if len(single) != n_single or len(multi) != n_multi or len(pipe) != n_pipe:
    sys.exit(f"run.sh: expected {n_single} single, {n_multi} multi and {n_pipe} pipelined results, "
             f"got {len(single)}, {len(multi)} and {len(pipe)}")
for r in single + pipe:
    if not sampled(r) or (r["n"] and not -5 <= r["min_us"] <= r["p50_us"] <= r["p99_us"]
                          <= r["max_us"] <= r["wall_s"] * 1e6):
        sys.exit(f"run.sh: implausible single result {r}")
for r in multi:
    if (r["procs"] != procs or r["completions"] < procs or not sampled(r)
            or (r["n"] and not r["p50_us"] <= r["p99_us"] <= r["max_us"] <= r["seconds"] * 1e6)
            or r["client_cpu_s"] <= 0 or r["garudad_cpu_s"] < 0):
        sys.exit(f"run.sh: implausible multi result {r}")
print(f"results: {out}/tables.txt, single.jsonl, multi.jsonl, pipelined.jsonl", file=sys.stderr)
EOF
exit $status
