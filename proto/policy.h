/* policy.h — the wait policy of a +predict plan: when a watcher (garudad's scanner,
 * libgaruda's in-process reactor) spins, when it sleeps and until when, and what a
 * find records into a point's estimator (estimator.h). docs/plans.md, "In garudad"
 * and "Several outstanding sequences on one word", says why each rule is what it is.
 *
 * Values in, decisions out: arm, taken, the predecessor's landing, the previous pass,
 * whether the watcher slept, now, the tuning. The watcher keeps the clock, the
 * queue, the pass and the sleep; this module never reads a clock.
 *
 * Stream order is the clock. A sequence queued behind another armed sequence on the
 * same word cannot start before that one lands, so its watcher (watch.h) gives it no
 * live deadline (QUEUED) until the pass that finds its predecessor starts its clock:
 * start = max(arm, that landing). Its deadline is start + its point's sleep and its
 * residual is completion - start. Waits on the same (word, target) share one start
 * (the earliest). A wait whose lower sequences nobody waits on starts at its arm.
 *
 * Promises:
 *   - Pure: no clock, no atomics, no I/O, no allocation; libc only. Deterministic:
 *     the same inputs give the same decisions (the replay tool depends on it).
 *   - No overflow: every uint64_t time is valid; sums saturate.
 *   - A find never records an inflated exact residual: a wait found done by its first
 *     look, after a sleep, or in the same pass as its predecessor (the word jumped)
 *     records censored, a lower bound, or nothing.
 *
 * Threads: none of its own; a struct belongs to whoever owns the wait. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A find whose previous pass began at most this long before it was spinning closely
 * enough to take its time as the completion's. */
#define GARUDA_POLICY_EXACT_GAP_NS  20000ull
/* A deadline closer than this is spun to, not slept to. */
#define GARUDA_POLICY_SPIN_AHEAD_NS 5000ull
/* The short ladder's first step (a timed futex wait costs ~15 us of CPU: shorter
 * steps only burn it). */
#define GARUDA_POLICY_STEP_MIN_NS   32000ull
/* The longest backoff period: the watcher's top level (watch.h) and a client wait's
 * longest backstop (garuda_policy_backstop_ns) */
#define GARUDA_POLICY_BACKOFF_MAX_NS (GARUDA_POLICY_STEP_MIN_NS << 14)

/* A plan's keys as the policy takes them, named as the plan names them (docs/plans.md),
 * in nanoseconds; garuda_watch_tuning_of() (watch.h) makes them from a plan, for every
 * driver (garudad's scanner, libgaruda's reactor and +predict wait, garuda-replay). */
struct garuda_policy_tuning {
	uint64_t park_ns;     /* park_us: how long a spin window lasts */
	bool forever;         /* poll: a window, once open, never closes */
	uint64_t backstop_ns; /* backstop_us: the short ladder's longest step */
	uint64_t early_ns; /* sleeps toward a deadline end this early (timer lateness) */
};

enum garuda_policy_state {
	GARUDA_POLICY_NEW,     /* not ordered yet: its clock is its arm */
	GARUDA_POLICY_STARTED, /* start_ns is its clock */
	GARUDA_POLICY_QUEUED,  /* behind an armed predecessor: no live deadline */
};

struct garuda_policy_wait {
	uint64_t word;		 /* which word (any key equal for waits on one word) */
	uint64_t target;	 /* the sequence it waits for */
	uint64_t arm_ns;	 /* when the waiter armed */
	uint64_t taken_ns;	 /* the watcher's first look at it */
	uint64_t start_ns;	 /* STARTED: max(arm, the predecessor's landing) */
	uint64_t sleep_ns;	 /* its point's sleep at arm (0: cold, no sleep) */
	uint64_t exact_sleep_ns; /* its point's exact sleep (the second look) */
	uint8_t state;		 /* enum garuda_policy_state */
	bool done;		 /* its word had reached its target at the driver's look when
				  * it took the arm (a late arm, or no work at all): looked at
				  * at once, whatever its point predicts, and its find records
				  * nothing (nothing is known of its work's length) */
};

/* A new wait, its clock at its arm until its watcher orders it (watch.h). */
void garuda_policy_wait_init(struct garuda_policy_wait *w, uint64_t word, uint64_t target,
			     uint64_t arm_ns, uint64_t taken_ns, uint64_t sleep_ns,
			     uint64_t exact_sleep_ns);

/* Stream order for one word, set by its watcher (watch.h): w is at the head of its
 * word and its clock is start; or w is queued behind an armed predecessor. */
void garuda_policy_wait_start(struct garuda_policy_wait *w, uint64_t start);
void garuda_policy_wait_queue(struct garuda_policy_wait *w);

/* Its clock: arm (NEW), start (STARTED); UINT64_MAX while QUEUED. */
uint64_t garuda_policy_start(const struct garuda_policy_wait *w);
/* start + sleep (UINT64_MAX: QUEUED). */
uint64_t garuda_policy_deadline(const struct garuda_policy_wait *w);
/* start + max(sleep, exact sleep): where its spin window opens (the second look). */
uint64_t garuda_policy_resume(const struct garuda_policy_wait *w);

/* Its probe: one look 3/4 of the way from its start to its window's opening, on the
 * way there, when that opening is GARUDA_POLICY_PROBE_MIN_NS or more past its start;
 * 0: none (QUEUED, or a shorter way). The watcher (watch.h) looks at a wait slept
 * toward its window there first; a find by the wake aimed at the opening after it is
 * a near miss (late, garuda_policy_find), one by the probe a kernel that got shorter
 * (censored). A wake's cost (~15 us of CPU) is the probe's price: a wait of 4 ms or
 * more pays it once. Not shorter: a host's timer stall longer than a quarter of the
 * way (0.5 ms of a 2 ms kernel's, seen 2 in ~1,000 timed wakes here) puts the probe's
 * wake in the window late, a second wake exposed to it before every window (the 2 ms
 * x 4 queued cell's p99 5.1x poll's with a 2 ms bound, docs/plans.md "The probe"),
 * while a near miss's halving costs a 2 ms point ~5 extra looks a wait, a 10 ms
 * point ~25. */
#define GARUDA_POLICY_PROBE_MIN_NS 4000000ull
uint64_t garuda_policy_probe(const struct garuda_policy_wait *w);

/* Its spin window holds t; else *open_at is its opening if after t (UINT64_MAX:
 * none). From resume for park_ns; forever: no end, from the deadline. A QUEUED wait
 * has no window. The one definition of the window: the watcher (watch.h) places a
 * word by it, and a find's "given up" is its complement past the deadline. */
bool garuda_policy_in_window(const struct garuda_policy_wait *w,
			     const struct garuda_policy_tuning *t, uint64_t at, uint64_t *open_at);

enum garuda_find_kind {
	GARUDA_FIND_EXACT,    /* record ns exact: a completion seen while spinning closely */
	GARUDA_FIND_LOWER,    /* record ns as a lower bound of it (a late look's find) */
	GARUDA_FIND_CENSORED, /* record ns censored (the estimator halves it) */
	GARUDA_FIND_LATE,     /* found by a wake past its window's opening, or by the
			       * wake aimed at it after its probe saw it unfinished; ns
			       * from its start: recorded only as the last of a run of
			       * them (estimator.h, record_late) */
	GARUDA_FIND_UNKNOWN,  /* not recorded: nothing is known (the word jumped) */
};

struct garuda_find {
	enum garuda_find_kind kind;
	uint64_t ns; /* EXACT, LOWER, CENSORED: the residual from its start; LATE: the
		      * wake's time from its start */
};

/* The backstop of a client's parked wait (libgaruda's flag wait: how long it parks on
 * its readiness form before it looks at the word and queries the native stream
 * itself) once the wait has run for age_ns: max(backstop_ns, age_ns / backoff_div),
 * at most GARUDA_POLICY_BACKOFF_MAX_NS (and never below backstop_ns); backoff_div 0 is
 * the plan's default (32). The readiness ends a park in any case: the backstop bounds
 * how late a lost readiness or a faulted stream is noticed, as the watcher's backoff
 * bounds an overdue word's, at ~ln(t) / r wake-ups in the first t instead of t /
 * backstop. */
uint64_t garuda_policy_backstop_ns(uint64_t backstop_ns, uint64_t backoff_div, uint64_t age_ns);

/* What a find tells its point's estimator (EXACT, LOWER and CENSORED are recorded as
 * such, LATE as censored when it ends a run of them, UNKNOWN not at all): the one
 * place every driver records a find. */
struct garuda_estimator;
void garuda_policy_record(struct garuda_estimator *e, const struct garuda_find *f);

/* What a find of w at now records: prev_pass, when the previous pass began (the store
 * landed in (prev_pass, now]); slept, the watcher slept since it. */
struct garuda_find garuda_policy_find(const struct garuda_policy_wait *w,
				      const struct garuda_policy_tuning *t, uint64_t now,
				      uint64_t prev_pass, bool slept);
