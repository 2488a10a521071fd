#!/usr/bin/env bash
# run.sh — model-check the wake-up protocols (docs/models.md): for every model and
# variant, spin -a generates the verifier, cc compiles it, and each property is checked
# with a bounded search depth and hash table. The correct models must verify; each
# deliberately broken variant must FAIL, and fail for the property it is listed with (the
# verifier's output must name that property's never claim and report its violation: an
# assertion in the claim for a safety property, an acceptance cycle for a liveness one;
# the models themselves contain no assert(), so nothing else can raise either).
# Prints states stored, transitions and errors per run; exits 1 on any unexpected result,
# 77 (skip) when spin is not installed.
#
# usage: run.sh [MODEL_DIR]   (default: the directory of this script)
set -uo pipefail

dir=${1:-$(dirname "${BASH_SOURCE[0]}")}
dir=$(cd "$dir" && pwd)
if ! command -v spin >/dev/null; then
	echo "SKIP: spin is not installed (Debian package spin; scripts/deps.sh installs it)"
	exit 77
fi
read -ra cc <<<"${CC_MODELS:-cc}" # the compiler command (meson's, e.g. "ccache cc")
if ! command -v "${cc[0]}" >/dev/null; then
	echo "SKIP: no C compiler (${cc[*]}) to build the verifiers"
	exit 77
fi

# the verifiers' sources and binaries: under MODELS_WORKDIR (meson: the build directory)
work=$(mktemp -d "${MODELS_WORKDIR:-${TMPDIR:-/tmp}}/models.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

depth=20000     # -m: far above the deepest path (< 500 steps); a truncated search fails
hash=20         # -w: 2^20 slots; the largest run stores about 310k states
memlim=512      # MB, -DMEMLIM: a run that outgrows it stops and fails

# model | variant (-D macro, or -) | property | kind (safety|liveness) | expect (pass|fail)
# (a variant expected to pass shows a change the protocol tolerates)
cases='
scanner_park.pml -                        no_lost_wakeup              safety   pass
scanner_park.pml -                        every_command_taken         liveness pass
scanner_park.pml BROKEN_NO_FENCE          no_lost_wakeup              safety   fail
scanner_park.pml BROKEN_NO_FENCE          every_command_taken         liveness fail
scanner_park.pml BROKEN_WAKE_BEFORE_BUMP  no_lost_wakeup              safety   fail
scanner_park.pml BROKEN_WAKE_BEFORE_BUMP  every_command_taken         liveness fail
scanner_park.pml BROKEN_LATE_SNAPSHOT     no_lost_wakeup              safety   fail
scanner_park.pml BROKEN_LATE_SNAPSHOT     every_command_taken         liveness fail
scanner_park.pml BROKEN_WAKE_AT_AFTER_FENCE no_lost_wakeup            safety   fail
scanner_park.pml BROKEN_WAKE_AT_AFTER_FENCE every_command_taken       liveness fail
scanner_park.pml BROKEN_STALE_WAKE_AT     no_lost_wakeup              safety   fail
scanner_park.pml BROKEN_STALE_WAKE_AT     every_command_taken         liveness fail
scanner_park.pml SLEEPING_FIRST           no_lost_wakeup              safety   pass
scanner_park.pml SLEEPING_FIRST           every_command_taken         liveness pass
doorbell.pml     -                        no_lost_wakeup              safety   pass
doorbell.pml     -                        every_wait_returns          liveness pass
doorbell.pml     -                        every_reached_arm_delivered liveness pass
doorbell.pml     BROKEN_WAKE_BEFORE_BUMP  no_lost_wakeup              safety   fail
doorbell.pml     BROKEN_WAKE_BEFORE_BUMP  every_wait_returns          liveness fail
doorbell.pml     BROKEN_SAMPLE_AFTER_WORD no_lost_wakeup              safety   fail
doorbell.pml     BROKEN_SAMPLE_AFTER_WORD every_wait_returns          liveness fail
stream_free.pml  -                        no_arm_stranded             safety   pass
stream_free.pml  -                        no_stale_delivery           safety   pass
stream_free.pml  -                        every_reached_arm_delivered liveness pass
stream_free.pml  BUGGY_FREE               no_arm_stranded             safety   fail
stream_free.pml  BUGGY_FREE               no_stale_delivery           safety   fail
stream_free.pml  BUGGY_FREE               every_reached_arm_delivered liveness fail
stream_free.pml  BROKEN_DISARM_NO_WAIT    no_arm_stranded             safety   fail
stream_free.pml  BROKEN_DISARM_NO_WAIT    no_stale_delivery           safety   fail
flow_pause.pml   -                        no_lost_resume              safety   pass
flow_pause.pml   -                        every_command_taken         liveness pass
flow_pause.pml   BROKEN_NO_RECHECK        no_lost_resume              safety   fail
flow_pause.pml   BROKEN_NO_RECHECK        every_command_taken         liveness fail
flow_pause.pml   BROKEN_LOAD_BEFORE_SUB   no_lost_resume              safety   fail
flow_pause.pml   BROKEN_LOAD_BEFORE_SUB   every_command_taken         liveness fail
'

# every broken variant a model defines is in the table (one not listed would never be run)
for f in "$dir"/*.pml; do
	for v in $(grep -oE '\b(BROKEN|BUGGY)_[A-Z_]+' "$f" | sort -u); do
		if ! grep -Eq "^$(basename "$f") +$v " <<<"$cases"; then
			echo "run.sh: $(basename "$f") defines the variant $v, which no case checks" >&2
			exit 1
		fi
	done
done

# build MODEL VARIANT -> path of the verifier (built once per model and variant)
build() {
	local model=$1 variant=$2 out=$work/${1%.pml}-$2
	if [[ ! -x $out/pan ]]; then
		mkdir -p "$out"
		local defs=()
		[[ $variant != - ]] && defs=("-D$variant")
		if ! (cd "$out" && spin "${defs[@]}" -a "$dir/$model" >spin.log 2>&1 &&
		      ! grep -qi 'error' spin.log); then
			echo "spin -a failed for $model $variant:" >&2
			cat "$out/spin.log" >&2
			return 1
		fi
		# NFAIR: weak fairness over up to 6 processes
		if ! (cd "$out" && "${cc[@]}" -O0 -w -DNFAIR=6 -DMEMLIM=$memlim -o pan pan.c >cc.log 2>&1); then
			echo "cc failed for $model $variant:" >&2
			cat "$out/cc.log" >&2
			return 1
		fi
	fi
	echo "$out"
}

field() { sed -n "$2" <<<"$1" | head -1; }

bad=0
n=0
printf '%-17s %-26s %-28s %-8s %9s %11s %6s  %s\n' model variant property kind stored transitions errors result
while read -r model variant prop kind expect; do
	[[ -z $model ]] && continue
	n=$((n + 1))
	out=$(build "$model" "$variant") || { bad=$((bad + 1)); continue; }
	flags=(-m$depth -w$hash -N "$prop")
	[[ $kind == liveness ]] && flags=(-a -f "${flags[@]}")
	log=$(cd "$out" && ./pan "${flags[@]}" 2>&1)
	stored=$(field "$log" 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p')
	trans=$(field "$log" 's/^ *\([0-9][0-9]*\) transitions.*/\1/p')
	errors=$(field "$log" 's/.*errors: \([0-9][0-9]*\).*/\1/p')
	why=
	if ! grep -Eq "never claim[[:space:]]+\+ \($prop\)" <<<"$log"; then
		why="the run did not check property $prop"
	elif grep -Eq 'max search depth too small|out of memory|search not completed' <<<"$log"; then
		why="the search was not complete (depth or memory bound)"
	elif [[ -z $errors ]]; then
		why="no error count in the verifier's output"
	elif [[ $expect == pass ]]; then
		((errors == 0)) || why="expected to verify, found $errors error(s)"
	else
		if ((errors == 0)); then
			why="the broken variant verified: the model cannot catch it"
		elif [[ $kind == safety ]] && ! grep -q 'assertion violated' <<<"$log"; then
			why="failed, but not by violating the safety claim $prop"
		elif [[ $kind == liveness ]] && ! grep -q 'acceptance cycle' <<<"$log"; then
			why="failed, but not by an acceptance cycle of $prop"
		fi
	fi
	if [[ -z $why ]]; then
		[[ $expect == pass ]] && result="ok: holds" || result="ok: fails as it must"
	else
		result="UNEXPECTED: $why"
		bad=$((bad + 1))
	fi
	printf '%-17s %-26s %-28s %-8s %9s %11s %6s  %s\n' "$model" "$variant" "$prop" "$kind" \
		"${stored:-?}" "${trans:-?}" "${errors:-?}" "$result"
	if [[ -n $why ]]; then
		echo "---- pan output ($model $variant $prop):"
		echo "$log" | head -40
	fi
done <<<"$cases"

echo "$n runs, $bad unexpected"
((bad == 0))
