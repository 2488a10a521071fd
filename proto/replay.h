/* replay.h — one watcher (garudad's scanner) running a wait plan over a completion
 * trace on a simulated clock: the same policy (policy.h) and estimator (estimator.h)
 * the daemon runs, with no thread, no sleep and no clock. garuda-replay (a CSV trace
 * in, a table out) and the policy's unit tests drive it.
 *
 * A trace is rows (word, point, arm_ns, store_ns): a waiter armed at arm_ns for the
 * sequence whose store landed at store_ns. A word's sequences are its rows in store
 * order (1, 2, 3, ...); point 0 is the word's own point, any other a named one.
 *
 * The watcher: takes in arms at its next look, passes (reads every armed word once),
 * then spins one step, or sleeps until the policy's time (a timed wake comes
 * cost.wake_late_ns late; an arm whose deadline is earlier, or any arm under a plan
 * without +predict, wakes it cost.arm_wake_ns after it; with nothing armed it parks
 * until the next arm). Busy time is what the thread would be charged: passes, spin
 * steps and the CPU of each sleep. Lateness is (the pass that found it ends) - store;
 * the first GARUDA_REPLAY_WARMUP finds of each point are not counted in it (a cold
 * point is learning), as the bench does.
 *
 * Promises: deterministic (the same rows, plan and costs give the same result); the
 * rows are not modified; O(rows x armed) time. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define GARUDA_REPLAY_WARMUP 10

struct garuda_replay_row {
	uint64_t word;
	uint32_t point;
	uint64_t arm_ns, store_ns;
};

/* What the simulated thread's steps cost. garuda_replay_default_cost(): figures
 * measured on the project's build machines (docs/plans.md). */
struct garuda_replay_cost {
	uint64_t pass_ns;      /* one pass over the armed set */
	uint64_t spin_ns;      /* one spin step (pauses and a sched_yield) */
	uint64_t wake_late_ns; /* a timed wake comes this late */
	uint64_t wake_cpu_ns;  /* CPU of one sleep or park and its wake */
	uint64_t arm_wake_ns;  /* an ARM that wakes the thread does so this long after */
};

struct garuda_replay_result {
	size_t completions;
	size_t counted; /* in the lateness figures: all but each point's warm-up */
	uint64_t late_p50_ns, late_p90_ns, late_p99_ns, late_max_ns;
	uint64_t busy_ns;		       /* CPU the watcher was charged */
	uint64_t span_ns;		       /* first arm to last find */
	size_t exact, censored, late, unknown; /* what the finds recorded */
	size_t sleeps, spins;
};

struct garuda_replay_cost garuda_replay_default_cost(void);

/* Run plan over rows[0..n). 0; -EINVAL for an empty trace or a plan that
 * garuda_plan_check() refuses; -ENOMEM. */
int garuda_replay_run(const struct garuda_plan *plan, const struct garuda_replay_row *rows,
		      size_t n, const struct garuda_replay_cost *cost,
		      struct garuda_replay_result *out);
