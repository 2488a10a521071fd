/* replay.h — a wait plan over a completion trace on a simulated clock: the watcher
 * (proto/watch.h) driven as garudad's scanner drives it (daemon/scanner.c,
 * scanner_main and scan_step), with the same tuning (garuda_watch_tuning_of), the same
 * estimator (estimator.h, a point's uncapped horizon as its prediction, as
 * daemon/points.c gives it) and the same find rules (policy.h), with no thread, no
 * sleep and no clock. garuda-replay (a CSV trace in, a table out), the policy's unit
 * tests and the bench's plans section (replay's busy next to the live daemon's CPU)
 * drive it.
 *
 * A trace is rows (word, point, arm_ns, store_ns): a waiter armed at arm_ns for the
 * sequence whose store landed at store_ns. A word's sequences are its rows in store
 * order (1, 2, 3, ...); point 0 is the word's own point, any other a named one of
 * that word's. Each word is its own owner (a session of its own, as each stream of the
 * bench is a process of its own), and garudad's named points are a session's: two
 * words naming point 1 have a point 1 each (before, they shared one, and the bench's
 * 16 streams of 30/8 ms kernels replayed 16 sessions' records into two points: 0.17
 * of poll's busy against the live 0.25-0.30).
 *
 * The loop drives proto/watch as the scanner does: take the arms that came (an ARM
 * comes cost.arm_wake_ns after its send; each garuda_watch_add()ed with its clock at
 * the send, its sleep its point's horizon as of then), park when nothing is
 * armed (the next arm wakes it cost.arm_wake_ns after it), else a step
 * (garuda_watch_due(), each due word read at the step's time and reported with
 * garuda_watch_found(), the finds recorded into their points); after a step that fired
 * the loop goes round at once, else garuda_watch_next() says spin one step, or sleep
 * until T: a timed wake comes cost.wake_late_ns late (longer sleeps: the long figures,
 * below); an ARM wakes it cost.arm_wake_ns
 * after it when its deadline is earlier than T (any ARM, under a plan without
 * +predict); garuda_watch_woke() after it. +predict's early wake is the scanner's: a
 * running mean of how late timed wakes came, at most 200 us, handed to the watcher
 * when arms are taken. Busy time is what garudad would be charged (the cost figures
 * below): steps, word looks, spin steps, sleeps, arms and fires. Lateness is (the step
 * that found it ends) - store; the first GARUDA_REPLAY_WARMUP finds of each point are
 * not counted in it (a cold point is learning), as the bench does.
 *
 * The steady window, where the costs are taken as the bench takes the live daemon's
 * (its plans section): from the arm of every word's (GARUDA_REPLAY_WARMUP + 1)-th row
 * (all are past their warm-up) to the arm of the first word's last row (one of them
 * ends); the busy time, sleeps and spins charged in it, and the rows armed in it. A
 * word of at most GARUDA_REPLAY_WARMUP + 1 rows, or the windows of words that do not
 * overlap, leave it empty (steady_rows 0).
 *
 * What it simulates: timestamps at most GARUDA_REPLAY_TIME_MAX_NS (2^62 ns, 146 years)
 * and waits (store - arm) of at most GARUDA_REPLAY_WAIT_MAX_NS (an hour); other rows
 * are refused (garuda_replay_rows_check). The clock saturates, never wraps. Poll's
 * spin steps between two events (an arm taken, a store to a word it spins on, the
 * steady window's edges) are counted, not stepped, where nothing else can change (no
 * timer, no word off its spin): a wait poll spins on for an hour is a few steps.
 *
 * Promises: deterministic (the same rows, plan and costs give the same result); the
 * rows are not modified. Time O(rows log rows + steps x due words x log rows): the
 * sorts, then each step's due words (and the watcher's heap); steps are O(rows) under
 * poll (while at most 4,096 words wait at once), and under the other plans as many as
 * the watcher takes (per wait, at most park_us of spin steps, ~ln(its age) /
 * backoff_div looks on its backoff and its age / 524 ms). Memory (measured): ~150
 * bytes per row, ~200 per distinct named point (its estimator), and ~3.7 KB per
 * distinct word (each word is an owner of the watcher, with its 29 backoff levels and
 * their timers' room): 200,000 rows on 16 words take ~34 MB, 100,000 words of one row
 * each ~0.4 GB. Allocation only in garuda_replay_run() (freed before it returns) and
 * garuda_replay_trace_parse() (the caller's, until garuda_replay_trace_free()). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define GARUDA_REPLAY_WARMUP 16 /* the bench's WARMUP (tests/bench/plans.c) */
#define GARUDA_REPLAY_SHORT_SLEEP_NS 200000ull /* the sleep cost.wake_*_ns are for */
#define GARUDA_REPLAY_TIME_MAX_NS (1ull << 62) /* the latest arm_ns or store_ns (146 years) */
#define GARUDA_REPLAY_WAIT_MAX_NS 3600000000000ull /* the longest store_ns - arm_ns (1 h) */

struct garuda_replay_row {
	uint64_t word;
	uint32_t point;
	uint64_t arm_ns, store_ns;
};

/* What garudad's steps cost. garuda_replay_default_cost(): figures measured on the
 * project's build machines (docs/plans.md, "Replaying a trace"). */
struct garuda_replay_cost {
	uint64_t step_ns;      /* one step's own work: the due schedule, the clock reads,
				* the counters */
	uint64_t look_ns;      /* one due word looked at: its load and garuda_watch_found() */
	uint64_t spin_ns;      /* one spin step's CPU (pauses and a sched_yield) */
	uint64_t spin_wall_ns; /* one spin step's time on the clock: longer than its CPU on a
				* loaded machine, whose other tasks run in its sched_yield
				* (the bench's 16-stream poll cells: 4.2 us of the scanner's
				* CPU a step, ~7 us apart); 0 (the default): spin_ns */
	uint64_t wake_late_ns; /* a timed wake comes this late */
	uint64_t wake_cpu_ns;  /* CPU of one sleep or park and its wake */
	/* Longer sleeps wake later and cost more (the CPU idles deeper; measured in a KVM
	 * guest: a timed futex wait 200 us ahead ~12-18 us of CPU and ~12-20 us late, 5 ms
	 * ahead ~38 us and ~76 us): the two figures above are a GARUDA_REPLAY_SHORT_SLEEP_NS
	 * sleep's, these a long_sleep_ns one's, and a sleep between takes the figures on
	 * the line between them over log2 of its length (a timed wake: its length as
	 * asked; a park or a sleep an ARM ends: as slept), in 1/256ths of an octave: a
	 * long_sleep_ns of 200,001 to 200,191 ns (log2 within 1/256 of the short one's)
	 * leaves no line, and a sleep shorter than it costs the short figures. long_sleep_ns
	 * 0 (the default): every sleep costs the short figures. */
	uint64_t long_sleep_ns;
	uint64_t wake_late_long_ns, wake_cpu_long_ns;
	/* How far the slower timed wakes spread: the p90 of a short (and a long) sleep's
	 * lateness, whose p50 is wake_late_ns (wake_late_long_ns). 0 (the default): every
	 * wake comes exactly its figure late. Set, each timed wake's lateness is drawn
	 * (seeded: the same every run) from a piecewise-uniform spread with that median
	 * and p90, s = p90 - p50: half in [p50 - s / 4, p50], 40 % in [p50, p90], 10 % in
	 * [p90, p90 + 2 s] (so its p99 is ~p90 + 1.8 s). A live wake that comes sooner
	 * than its mean lands before its window's opening, and one that finds its work
	 * done there is censored (policy.h); without the spread every replayed wake is its
	 * mean late, lands just past the opening, and such a find is late (not recorded):
	 * replay missed the ladders that live censored finds cost (docs/plans.md,
	 * "Replaying with the timer's spread"). The p90, not the p99: a calibration of a
	 * few hundred sleeps puts its p99 on a single stall of the machine (2.75 ms for a
	 * 200 us sleep whose p50 was 38 us, one run), and a spread drawn to that p99 made
	 * every replayed wake ~0.7 ms late on average. */
	uint64_t wake_late_p90_ns, wake_late_long_p90_ns;
	uint64_t arm_wake_ns;  /* an ARM reaches the scanner this long after its send (the
				* loop thread's receive and post; garudad's take_ns over
				* arms_taken): it is taken then, and wakes a sleep then */
	uint64_t arm_cpu_ns;   /* garudad's CPU per ARM (the loop thread's receive and
				* post, the scanner's take) */
	uint64_t fire_cpu_ns;  /* garudad's CPU per fired wait (counters, the delivery's
				* eventfd write) */
};

struct garuda_replay_result {
	size_t completions;
	size_t counted; /* in the lateness figures: all but each point's warm-up */
	uint64_t late_p50_ns, late_p90_ns, late_p99_ns, late_max_ns;
	uint64_t busy_ns;		       /* CPU the watcher was charged */
	uint64_t span_ns;		       /* first arm to last find */
	size_t exact, censored, late, unknown; /* what the finds recorded */
	size_t sleeps, spins;
	size_t steps, looks, parks; /* steps, word looks over all steps, parks */
	uint64_t steady_from_ns, steady_to_ns; /* the steady window (above) */
	size_t steady_rows;		       /* rows armed in it (0: no window) */
	uint64_t steady_busy_ns;	       /* charged in it */
	size_t steady_sleeps, steady_spins;
};

struct garuda_replay_cost garuda_replay_default_cost(void);

/* Set figures of *cost from text, "KEY=NS[,KEY=NS]...", each KEY a field's name above
 * (step_ns, look_ns, spin_ns, spin_wall_ns, wake_late_ns, wake_cpu_ns, long_sleep_ns,
 * wake_late_long_ns, wake_cpu_long_ns, wake_late_p90_ns, wake_late_long_p90_ns,
 * arm_wake_ns, arm_cpu_ns, fire_cpu_ns) and NS
 * decimal nanoseconds. 0, or -EINVAL with *cost unchanged and the reason in msg (at
 * most len bytes, NUL-terminated) on an unknown key, a malformed or out-of-range
 * number. */
int garuda_replay_cost_parse(struct garuda_replay_cost *cost, const char *text, char *msg, size_t len);

/* Can the replay simulate rows[0..n)? 0, or -ERANGE with the first row it cannot
 * named in msg (at most len bytes, NUL-terminated; its index from 0): an arm_ns or
 * store_ns above GARUDA_REPLAY_TIME_MAX_NS, or a store more than
 * GARUDA_REPLAY_WAIT_MAX_NS after its arm (a store before its arm is an ARM for work
 * done: fine). */
int garuda_replay_rows_check(const struct garuda_replay_row *rows, size_t n, char *msg, size_t len);

/* Run plan over rows[0..n). 0; -EINVAL for an empty trace or a plan that
 * garuda_plan_check() refuses (or block: no watcher); -ERANGE for rows that
 * garuda_replay_rows_check() refuses; -ENOMEM; -EDEADLK when the watcher left a wait
 * that is never due (a bug of the watcher's, never expected). */
int garuda_replay_run(const struct garuda_plan *plan, const struct garuda_replay_row *rows,
		      size_t n, const struct garuda_replay_cost *cost,
		      struct garuda_replay_result *out);

/* A trace as garuda-replay reads it (docs/garuda-replay.1): CSV lines, each ended by
 * a newline (or the text's end; a CR before it is dropped). A line whose first byte is
 * '#' is a comment, and one of only spaces and tabs is blank: both skipped; a comment
 * "# busy<=R" names the trace's busy bound. The first other line is the header
 * (word,point,arm_ns,store_ns), unless it starts with a digit: a trace without a
 * header starts with a row. Every other line is a row, four fields
 * word,point,arm_ns,store_ns: decimal digits only (no sign; spaces and tabs around
 * a field are allowed), point below 2^32, store_ns not before arm_ns, and a row
 * garuda_replay_rows_check() takes. */
struct garuda_replay_trace {
	struct garuda_replay_row *rows; /* malloc'd: garuda_replay_trace_free() */
	size_t n;
	double busy_bound; /* the last "# busy<=R" line's R; 0: none */
};

/* Parse text[0..len) (NUL bytes in it are malformed) into *t: 0 with at least one
 * row; else *t empty (nothing to free) and the reason in msg (at most msglen bytes,
 * NUL-terminated), naming the line (from 1): -EINVAL for a malformed line or no rows,
 * -ERANGE for a number past its field's range or a row the replay cannot simulate,
 * -ENOMEM. Allocates the rows only. */
int garuda_replay_trace_parse(const char *text, size_t len, struct garuda_replay_trace *t,
			      char *msg, size_t msglen);
void garuda_replay_trace_free(struct garuda_replay_trace *t);
