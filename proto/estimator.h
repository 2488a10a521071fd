/* estimator.h — the per-readback-point deadline estimator of a +predict wait plan.
 *
 * One struct garuda_estimator per point (what garudad or libgaruda waits on). All
 * times are uint64_t nanoseconds (the plan's microseconds are converted once, at
 * init). The state is a fixed ring of the last `window` (<= GARUDA_PLAN_WINDOW_MAX)
 * records; the rules (docs/plans.md):
 *   - prediction = the minimum of the records in the window, but the lower bounds an
 *     exact record came after (below; none: no prediction);
 *   - record_exact(residual): the residual (completion - wait start, observed by a
 *     poll that was already running when the work finished) is recorded as is;
 *   - record_censored(wake): a wake that found the work already done records
 *     min(wake, prediction) / 2. Choice: with no prediction yet it records wake / 2
 *     (as if the prediction were infinite), so a cold point's first late wake already
 *     gives it a prediction below that wake;
 *   - sleep = prediction - margin; 0 (do not sleep) when there is no record, when
 *     prediction <= margin or when the result is below min_sleep; at most max_sleep.
 *   - record_lower(lower) (an addition to the seed): a lower bound of a residual (a
 *     completion found by a look that came late), recorded as is, like an exact one,
 *     until an exact record comes after it: from then on the prediction and the sleep
 *     skip it (the exact records above it say more; one far below them, from a look a
 *     host stall delayed, held the deadline that early for a whole window);
 *   - exact sleep (an addition to the seed, for the second look and the spin window,
 *     docs/plans.md "The second look" and "Lower bounds"): the minimum of the exact
 *     records alone, and of the newest uncensored record when it is a lower bound, less the exact
 *     margin (half their spread, at least 20 us, at most margin); 0 when the window
 *     holds none. It is >= the sleep while no censored record or older lower bound is
 *     the minimum, and equals it while the spread is 2 x margin or more.
 *
 * Promises:
 *   - Pure, I/O-free, libc only, no allocation; a struct is owned by one thread at a
 *     time (the caller's lock or thread discipline), functions keep no other state.
 *     Every function but init needs a struct that garuda_estimator_init() accepted.
 *   - Fixed size: sizeof(struct garuda_estimator) is all a point costs (192 bytes on
 *     LP64; a daemon charges it to the session's quota).
 *   - No overflow anywhere: any uint64_t input is valid (an exact UINT64_MAX gives
 *     max_sleep); microsecond parameters convert to nanoseconds saturating.
 *   - garuda_estimator_sleep_ns() <= max_sleep, always.
 *   - A censored record never raises the prediction: after it the prediction is
 *     <= min(wake, previous prediction) / 2.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

struct garuda_estimator {
	uint64_t margin_ns;
	uint64_t min_sleep_ns;
	uint64_t max_sleep_ns;
	uint32_t window;     /* 1 .. GARUDA_PLAN_WINDOW_MAX */
	uint32_t count;      /* records held, <= window */
	uint32_t next;       /* ring slot the next record goes to */
	uint32_t censored_slots; /* bit i: ring[i] holds a censored record */
	uint32_t lower_slots;    /* bit i: ring[i] holds a lower bound (an exact record of
				  * a completion seen late: record_lower) */
	uint32_t late_run;   /* late finds since the last record (record_late) */
	uint64_t exact;      /* exact records (lower bounds too) since init (for metrics) */
	uint64_t censored;   /* censored records since init */
	uint64_t ring[GARUDA_PLAN_WINDOW_MAX];
};

/* Set up e from a +predict section (a plan's p->pred). Returns 0, or
 * -GARUDA_E_BAD_PLAN (e untouched) when the section is out of the plan's bounds. */
int garuda_estimator_init(struct garuda_estimator *e, const struct garuda_plan_predict *pred);

/* Forget every record (and the counts), keep the parameters. */
void garuda_estimator_reset(struct garuda_estimator *e);

/* The prediction in ns; false (and *out_ns untouched) when there is none yet. */
bool garuda_estimator_prediction_ns(const struct garuda_estimator *e, uint64_t *out_ns);

/* An exact residual: completion - wait start, in ns. */
void garuda_estimator_record_exact_ns(struct garuda_estimator *e, uint64_t residual_ns);

/* A lower bound of a residual: the work was done by a look that came late (the watcher
 * was not spinning on it, or was preempted), ns = the previous look that saw it not
 * done - wait start. It counts as an exact record for the prediction and the sleep
 * while no exact record came after it; for the exact sleep only while no exact record
 * or lower bound came after it (below). */
void garuda_estimator_record_lower_ns(struct garuda_estimator *e, uint64_t lower_ns);

/* A censored wake: the wait's wake - wait start, in ns, when the work was already done. */
void garuda_estimator_record_censored_ns(struct garuda_estimator *e, uint64_t wake_ns);

/* A late find (policy.h, GARUDA_FIND_LATE): a wake past the wait's window found the
 * work done, wake_ns after the wait's start. Alone it records nothing: the store may
 * have landed in the wake's own lateness, where the prediction expected it. The
 * GARUDA_ESTIMATOR_LATE_RUN-th in a row (no record between them) is recorded as
 * censored: the window opened after the work again and again, so the prediction is
 * too long. Without it a point whose records all lie too long (a cold point's first
 * kernel that took 2.6 ms, then 150 us kernels) finds every later wait by the wake at
 * that prediction, records none of them and never learns (docs/plans.md, "Late
 * finds"). Three, not two: two in a row come at a cold start while the early wake is
 * still learning the timer's lateness (garuda-replay, one stream of 10 ms kernels:
 * its 2nd and 3rd waits), and a right prediction halved costs its next 16 waits a
 * ladder each; three in a row come there too, more rarely (two shipped traces). */
#define GARUDA_ESTIMATOR_LATE_RUN 3u
void garuda_estimator_record_late_ns(struct garuda_estimator *e, uint64_t wake_ns);

/* How long to sleep from the wait's start before spinning, in ns; 0 = do not sleep. */
uint64_t garuda_estimator_sleep_ns(const struct garuda_estimator *e);

/* The same, from the exact records in the window alone (0: none, or no sleep); a lower
 * bound counts among them while it is the newest record but censored ones: a later
 * exact record or lower bound supersedes it there (its gap may be as long as the backoff's period, and a stale one would open
 * every window early for `window` completions). */
uint64_t garuda_estimator_exact_sleep_ns(const struct garuda_estimator *e);

/* The exact sleep's margin: half the spread (max - min) of the exact records held (a
 * lower bound only while it is the newest uncensored record), at
 * least GARUDA_ESTIMATOR_MARGIN_FLOOR_NS, at most margin; margin itself while fewer than
 * 2 exact records are held. A point whose kernels land within a few us of each other
 * is spun on for the floor before its earliest landing, not for the whole margin. */
#define GARUDA_ESTIMATOR_MARGIN_FLOOR_NS 20000ull
uint64_t garuda_estimator_exact_margin_ns(const struct garuda_estimator *e);

/* The sleeps without the max_sleep cap: how far from the wait's start its deadline
 * lies (a watcher sleeps toward it in steps of at most max_sleep: watch.h). */
uint64_t garuda_estimator_horizon_ns(const struct garuda_estimator *e);
uint64_t garuda_estimator_exact_horizon_ns(const struct garuda_estimator *e);
