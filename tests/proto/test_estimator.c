/* test_estimator.c — the deadline estimator (estimator.h, docs/plans.md).
 *
 * Pins: the seed's test vectors exactly (margin 150 µs, min_sleep 20 µs, max_sleep
 * 50 ms, window 8), the censored rule (min(wake, prediction) / 2, wake / 2 when cold),
 * that a censored record never raises the prediction and sleep never exceeds
 * max_sleep over many random sequences (checked against an independent model of the
 * window), no overflow at UINT64_MAX, and that init applies the plan's bounds; the
 * exact sleep (garudad's second look after a halving) skips censored records and
 * every lower bound but the newest uncensored record.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "errcode.h"
#include "estimator.h"
#include "fdcheck.h"
#include "plan.h"

TestSuite(estimator, .init = fdcheck_begin, .fini = fdcheck_end);

#define US 1000u
#define MS 1000000u

static struct garuda_estimator seed_estimator(void)
{
	struct garuda_plan p;
	char msg[GARUDA_PLAN_MSG_MAX];
	int r = garuda_plan_parse("poll+predict:margin_us=150,min_sleep_us=20,max_sleep_us=50000,window=8",
				  &p, msg, sizeof(msg));
	cr_assert_eq(r, 0, "%s", msg);
	struct garuda_estimator e;
	cr_assert_eq(garuda_estimator_init(&e, &p.pred), 0);
	return e;
}

static uint64_t prediction(const struct garuda_estimator *e)
{
	uint64_t v = 12345;
	cr_assert(garuda_estimator_prediction_ns(e, &v), "no prediction");
	return v;
}

Test(estimator, seed_vectors)
{
	struct garuda_estimator e = seed_estimator();
	uint64_t v = 777;
	/* cold point: no sleep */
	cr_assert_not(garuda_estimator_prediction_ns(&e, &v));
	cr_assert_eq(v, 777, "no prediction leaves *out untouched");
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0);
	/* exact 1.0, 0.9, 1.1 ms -> sleep 750 µs */
	garuda_estimator_record_exact_ns(&e, 1000 * US);
	garuda_estimator_record_exact_ns(&e, 900 * US);
	garuda_estimator_record_exact_ns(&e, 1100 * US);
	cr_assert_eq(prediction(&e), 900 * US);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 750 * US);
	/* 8 x exact 2 ms -> 1,850 µs: the old minimum has left the window */
	for (int i = 1; i <= 6; i++) { /* 0.9 ms still in the window */
		garuda_estimator_record_exact_ns(&e, 2 * MS);
		cr_assert_eq(garuda_estimator_sleep_ns(&e), 750 * US, "after %d", i);
	}
	garuda_estimator_record_exact_ns(&e, 2 * MS); /* 1.0 and 0.9 ms gone, 1.1 left */
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 950 * US);
	garuda_estimator_record_exact_ns(&e, 2 * MS);
	cr_assert_eq(prediction(&e), 2 * MS);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 1850 * US);
	/* exact 160 µs -> 10 µs, below min_sleep: no sleep */
	garuda_estimator_record_exact_ns(&e, 160 * US);
	cr_assert_eq(prediction(&e), 160 * US);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0);
	/* exact 100 µs -> below the margin: no sleep */
	garuda_estimator_record_exact_ns(&e, 100 * US);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0);
	/* UINT64_MAX -> max_sleep, once the small ones have left the window */
	for (int i = 0; i < 8; i++)
		garuda_estimator_record_exact_ns(&e, UINT64_MAX);
	cr_assert_eq(prediction(&e), UINT64_MAX);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 50 * MS);
	cr_assert_eq(e.exact, 3 + 8 + 2 + 8);
	cr_assert_eq(e.censored, 0);
}

Test(estimator, fixed_size)
{
	/* what estimator.h promises a point costs (LP64) */
	cr_assert_eq(sizeof(struct garuda_estimator), 192);
}

Test(estimator, uint64_max_on_a_cold_point_is_max_sleep)
{
	struct garuda_estimator e = seed_estimator();
	garuda_estimator_record_exact_ns(&e, UINT64_MAX);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 50 * MS);
}

Test(estimator, edges_of_the_sleep_rule)
{
	struct garuda_estimator e = seed_estimator();
	garuda_estimator_record_exact_ns(&e, 150 * US); /* == margin */
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0);
	garuda_estimator_reset(&e);
	garuda_estimator_record_exact_ns(&e, 170 * US); /* 20 µs == min_sleep: sleeps */
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 20 * US);
	garuda_estimator_reset(&e);
	garuda_estimator_record_exact_ns(&e, 170 * US - 1); /* 1 ns short */
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0);
	garuda_estimator_reset(&e);
	garuda_estimator_record_exact_ns(&e, 50150 * US); /* == max_sleep */
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 50 * MS);
	garuda_estimator_reset(&e);
	garuda_estimator_record_exact_ns(&e, 50150 * US + 1);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 50 * MS);
	garuda_estimator_record_exact_ns(&e, 0);
	cr_assert_eq(prediction(&e), 0);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0);
}

Test(estimator, reset_forgets_records_keeps_parameters)
{
	struct garuda_estimator e = seed_estimator();
	garuda_estimator_record_exact_ns(&e, 1 * MS);
	garuda_estimator_record_censored_ns(&e, 1 * MS);
	garuda_estimator_reset(&e);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0);
	uint64_t v;
	cr_assert_not(garuda_estimator_prediction_ns(&e, &v));
	cr_assert_eq(e.exact + e.censored, 0);
	cr_assert_eq(e.margin_ns, 150 * US);
	cr_assert_eq(e.window, 8);
}

Test(estimator, censored_records_half_the_smaller_of_wake_and_prediction)
{
	struct garuda_estimator e = seed_estimator();
	/* cold: wake / 2 */
	garuda_estimator_record_censored_ns(&e, 3 * MS);
	cr_assert_eq(prediction(&e), 1500 * US);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 1350 * US);
	/* a late wake (after the prediction): prediction / 2 */
	garuda_estimator_record_censored_ns(&e, 10 * MS);
	cr_assert_eq(prediction(&e), 750 * US);
	/* an early wake: wake / 2 */
	garuda_estimator_record_censored_ns(&e, 400 * US);
	cr_assert_eq(prediction(&e), 200 * US);
	/* repeated late wakes lower it geometrically */
	garuda_estimator_record_censored_ns(&e, UINT64_MAX);
	cr_assert_eq(prediction(&e), 100 * US);
	cr_assert_eq(e.censored, 4);
	cr_assert_eq(e.exact, 0);
	/* UINT64_MAX cold: halved, no overflow */
	garuda_estimator_reset(&e);
	garuda_estimator_record_censored_ns(&e, UINT64_MAX);
	cr_assert_eq(prediction(&e), UINT64_MAX / 2);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 50 * MS);
}

/* A late find (a wake past the window found the work done) alone records nothing: the
 * store may have landed in the wake's lateness. The GARUDA_ESTIMATOR_LATE_RUN-th in a
 * row is censored: a prediction that is too long (a cold point's slow first kernel)
 * is learnt down instead of kept for good. Any record between late finds starts the
 * run again. */
static void lates(struct garuda_estimator *e, unsigned n, uint64_t wake_ns)
{
	for (unsigned i = 0; i < n; i++)
		garuda_estimator_record_late_ns(e, wake_ns);
}

Test(estimator, a_run_of_late_finds_is_censored)
{
	const unsigned run = GARUDA_ESTIMATOR_LATE_RUN;
	cr_assert_geq(run, 2, "one late find alone is never recorded");
	struct garuda_estimator e = seed_estimator();
	garuda_estimator_record_lower_ns(&e, 2600 * US); /* the cold point's slow first */
	lates(&e, run - 1, 2500 * US);
	uint64_t v;
	cr_assert(garuda_estimator_prediction_ns(&e, &v));
	cr_assert_eq(v, 2600 * US, "fewer late finds than a run record nothing");
	cr_assert_eq(e.censored, 0);
	lates(&e, 1, 2500 * US);
	cr_assert(garuda_estimator_prediction_ns(&e, &v));
	cr_assert_eq(v, 1250 * US, "the run's last halves the smaller of wake and prediction");
	cr_assert_eq(e.censored, 1);
	lates(&e, run - 1, 1200 * US); /* a new run */
	garuda_estimator_record_exact_ns(&e, 1300 * US);
	lates(&e, 1, 1200 * US); /* the exact record ended the run */
	cr_assert(garuda_estimator_prediction_ns(&e, &v));
	cr_assert_eq(v, 1250 * US);
	cr_assert_eq(e.censored, 1);
	lates(&e, run - 1, 1200 * US);
	cr_assert(garuda_estimator_prediction_ns(&e, &v));
	cr_assert_eq(v, 600 * US);
	garuda_estimator_reset(&e);
	lates(&e, run - 1, 1200 * US); /* reset ends a run too */
	cr_assert_not(garuda_estimator_prediction_ns(&e, &v));
}

Test(estimator, window_of_one_follows_the_last_record)
{
	struct garuda_plan_predict pp = { .margin_us = 0, .min_sleep_us = 0, .max_sleep_us = 1000, .window = 1 };
	struct garuda_estimator e;
	cr_assert_eq(garuda_estimator_init(&e, &pp), 0);
	garuda_estimator_record_exact_ns(&e, 100 * US);
	garuda_estimator_record_exact_ns(&e, 300 * US);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 300 * US);
	garuda_estimator_record_exact_ns(&e, 200 * US);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 200 * US);
}

Test(estimator, init_applies_the_plan_bounds)
{
	struct garuda_estimator e;
	memset(&e, 0x77, sizeof(e));
	struct garuda_plan_predict bad[] = {
		{ .max_sleep_us = 1, .window = 0 },
		{ .max_sleep_us = 1, .window = 17 },
		{ .min_sleep_us = 2, .max_sleep_us = 1, .window = 1 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(garuda_estimator_init(&e, &bad[i]), -GARUDA_E_BAD_PLAN, "row %zu", i);
		cr_assert_eq(e.window, 0x77777777u, "a refused init leaves e untouched");
	}
	/* microseconds too large for nanoseconds saturate */
	struct garuda_plan_predict huge = { .margin_us = UINT64_MAX, .min_sleep_us = UINT64_MAX / 999,
					    .max_sleep_us = UINT64_MAX, .window = 16 };
	cr_assert_eq(garuda_estimator_init(&e, &huge), 0);
	cr_assert_eq(e.margin_ns, UINT64_MAX);
	cr_assert_eq(e.min_sleep_ns, UINT64_MAX);
	cr_assert_eq(e.max_sleep_ns, UINT64_MAX);
	garuda_estimator_record_exact_ns(&e, UINT64_MAX);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 0, "prediction <= margin: no sleep");
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* After a censored halving the sleep halves, the exact sleep keeps the exact records'
 * minimum; it follows them as they leave the window, and is 0 with none left. */
Test(estimator, exact_sleep_skips_censored_records)
{
	struct garuda_estimator e = seed_estimator();
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), 0, "cold");
	garuda_estimator_record_exact_ns(&e, 10 * MS);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), garuda_estimator_sleep_ns(&e));
	garuda_estimator_record_censored_ns(&e, 9 * MS); /* 4.5 ms */
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 4500 * US - 150 * US);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), 10 * MS - 150 * US);
	for (int i = 0; i < 6; i++)
		garuda_estimator_record_exact_ns(&e, 11 * MS);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), 10 * MS - 150 * US);
	garuda_estimator_record_exact_ns(&e, 11 * MS); /* the 10 ms record leaves */
	/* seven exact 11 ms records, no spread: the exact margin is its 20 us floor */
	cr_assert_eq(garuda_estimator_exact_margin_ns(&e), 20 * US);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), 11 * MS - 20 * US);
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 4500 * US - 150 * US, "4.5 ms still in");
	garuda_estimator_record_exact_ns(&e, 12 * MS); /* the censored record leaves */
	cr_assert_eq(garuda_estimator_sleep_ns(&e), 11 * MS - 150 * US);
	/* a slot that held a censored record and now holds an exact one counts again */
	struct garuda_estimator c = seed_estimator();
	garuda_estimator_record_censored_ns(&c, 4 * MS); /* cold: 2 ms */
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&c), 0, "only censored records");
	cr_assert_eq(garuda_estimator_sleep_ns(&c), 2 * MS - 150 * US);
	garuda_estimator_record_exact_ns(&c, 3 * MS);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&c), 3 * MS - 150 * US);
	garuda_estimator_reset(&c);
	garuda_estimator_record_exact_ns(&c, 1 * MS);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&c), 1 * MS - 150 * US, "reset forgets the kinds");
}

/* A lower bound (a completion found by a late look) counts as an exact record for
 * the prediction and the sleep until an exact record comes after it; for the exact
 * sleep and its margin only while it is the newest uncensored record: a later exact
 * record or lower bound supersedes it. */
Test(estimator, a_lower_bound_opens_the_window_only_while_newest)
{
	struct garuda_estimator e = seed_estimator();
	/* a cold point's first wait, found on its backoff: 250 ms below the 10 s truth */
	garuda_estimator_record_lower_ns(&e, 9750 * MS);
	cr_assert_eq(e.exact, 1, "counted with the exact records");
	cr_assert_eq(prediction(&e), 9750 * MS);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), 50 * MS, "capped at max_sleep");
	cr_assert_eq(garuda_estimator_exact_horizon_ns(&e), 9750 * MS - 150 * US, "the newest");
	/* the next, found on the backoff from that early window: a tighter lower bound */
	garuda_estimator_record_lower_ns(&e, 9996 * MS);
	cr_assert_eq(prediction(&e), 9750 * MS, "the prediction keeps the minimum");
	cr_assert_eq(garuda_estimator_exact_horizon_ns(&e), 9996 * MS - 150 * US,
		     "the older lower bound no longer opens the window");
	/* then one found spinning: the exact record alone opens it, and the lower bounds
	 * before it no longer count for the prediction either */
	garuda_estimator_record_exact_ns(&e, 10000 * MS);
	cr_assert_eq(garuda_estimator_exact_horizon_ns(&e), 10000 * MS - 150 * US);
	cr_assert_eq(prediction(&e), 10000 * MS, "an exact record supersedes the lower bounds before it");
	cr_assert_eq(garuda_estimator_horizon_ns(&e), 10000 * MS - 150 * US);
	/* a lower bound below the exact records (the kernel got shorter) opens it while
	 * newest; the exact margin then spans both */
	garuda_estimator_record_exact_ns(&e, 10000 * MS + 40 * US);
	cr_assert_eq(garuda_estimator_exact_margin_ns(&e), 20 * US);
	garuda_estimator_record_lower_ns(&e, 5000 * MS);
	cr_assert_eq(garuda_estimator_exact_margin_ns(&e), 150 * US, "half the spread, capped");
	cr_assert_eq(garuda_estimator_exact_horizon_ns(&e), 5000 * MS - 150 * US);
	/* a censored record does not supersede it (a kernel came early: nothing of where
	 * the late-found ones land); the next exact record does */
	garuda_estimator_record_censored_ns(&e, 4000 * MS);
	cr_assert_eq(garuda_estimator_exact_horizon_ns(&e), 5000 * MS - 150 * US);
	garuda_estimator_record_exact_ns(&e, 10000 * MS + 10 * US);
	cr_assert_eq(garuda_estimator_exact_horizon_ns(&e), 10000 * MS - 20 * US);
	garuda_estimator_reset(&e);
	garuda_estimator_record_exact_ns(&e, 1 * MS);
	cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), 1 * MS - 150 * US, "reset forgets the kinds");
}

/* A lower bound far below the exact records, from a look a host stall delayed (the
 * bench's 30/8 ms mix: a decode of ~8.2 ms found 2.5 ms after a look at 6.95 ms),
 * holds the prediction, and so the deadline and the backoff before the window, that
 * early only until the next exact record: not for the whole window (16 waits of ~8
 * extra wakes each, some found on that backoff ~250 us late). */
Test(estimator, a_stalled_lower_bound_holds_the_deadline_until_the_next_exact_record)
{
	struct garuda_estimator e = seed_estimator();
	garuda_estimator_record_exact_ns(&e, 8200 * US);
	garuda_estimator_record_exact_ns(&e, 8300 * US);
	uint64_t before = garuda_estimator_sleep_ns(&e);
	cr_assert_eq(before, 8200 * US - 150 * US);
	garuda_estimator_record_lower_ns(&e, 6950 * US);
	cr_assert_eq(prediction(&e), 6950 * US, "the newest lower bound counts");
	garuda_estimator_record_exact_ns(&e, 8250 * US);
	cr_assert_eq(prediction(&e), 8200 * US, "an exact record came after it");
	cr_assert_eq(garuda_estimator_sleep_ns(&e), before);
	/* a lower bound after it counts again; several in a row all count (no exact
	 * record after them: a kernel that got longer is found late each time) */
	garuda_estimator_record_lower_ns(&e, 8100 * US);
	garuda_estimator_record_lower_ns(&e, 9000 * US);
	cr_assert_eq(prediction(&e), 8100 * US);
	/* a censored record is no exact one: it supersedes nothing, and halves */
	garuda_estimator_record_censored_ns(&e, 9000 * US);
	cr_assert_eq(prediction(&e), 4050 * US);
}

/* Random sequences against an independent model: the window is the last `window`
 * records of a plain array; prediction = their minimum, but the lower bounds an exact
 * record came after; a censored record never
 * raises the prediction; sleep follows the rule and never exceeds max_sleep. */
Test(estimator, random_sequences_match_the_model)
{
	uint64_t rng = 88172645463325252u;
#define NEXT() xorshift(&rng)
	static uint64_t hist[512];
	static bool hist_censored[512], hist_lower[512];
	unsigned censored_seen = 0, raised_by_exact = 0;
	for (unsigned seq = 0; seq < 2000; seq++) {
		struct garuda_plan_predict pp = {
			.margin_us = NEXT() % 500,
			.min_sleep_us = NEXT() % 100,
			.window = 1 + NEXT() % GARUDA_PLAN_WINDOW_MAX,
		};
		pp.max_sleep_us = pp.min_sleep_us + NEXT() % 5000;
		struct garuda_estimator e;
		cr_assert_eq(garuda_estimator_init(&e, &pp), 0);
		unsigned n = 0, len = 1 + (unsigned)(NEXT() % 300);
		for (unsigned i = 0; i < len; i++) {
			uint64_t r = NEXT();
			uint64_t t;
			switch (r % 4) { /* mostly realistic, sometimes extreme */
			case 0: t = (r >> 8) % (20 * MS); break;
			case 1: t = (r >> 8) % (600 * US); break;
			case 2: t = r % 8 == 2 ? UINT64_MAX : (r >> 8); break;
			default: t = (r >> 16) % (3 * MS); break;
			}
			uint64_t before = 0;
			bool had = garuda_estimator_prediction_ns(&e, &before);
			unsigned kind = (unsigned)(NEXT() % 6); /* 0, 1: censored; 2: lower */
			bool censored = kind < 2;
			cr_assert_lt(n, sizeof(hist) / sizeof(hist[0]));
			hist_lower[n] = kind == 2;
			if (censored) {
				garuda_estimator_record_censored_ns(&e, t);
				uint64_t rec = had && before < t ? before : t;
				hist_censored[n] = true;
				hist[n++] = rec / 2;
			} else {
				if (kind == 2)
					garuda_estimator_record_lower_ns(&e, t);
				else
					garuda_estimator_record_exact_ns(&e, t);
				hist_censored[n] = false;
				hist[n++] = t;
			}
			uint64_t model = UINT64_MAX, model_exact = UINT64_MAX, max_exact = 0;
			unsigned n_exact = 0;
			for (unsigned k = n > pp.window ? n - (unsigned)pp.window : 0; k < n; k++) {
				/* the prediction: every record but a lower bound an exact record
				 * came after; exact: the exact records, and a lower bound while
				 * the newest uncensored one */
				bool newest = true, exact_after = false;
				for (unsigned q = k + 1; q < n; q++) {
					newest = newest && hist_censored[q];
					exact_after = exact_after || (!hist_censored[q] && !hist_lower[q]);
				}
				if (!hist_lower[k] || !exact_after)
					model = hist[k] < model ? hist[k] : model;
				if (!hist_censored[k] && (!hist_lower[k] || newest)) {
					model_exact = hist[k] < model_exact ? hist[k] : model_exact;
					max_exact = hist[k] > max_exact ? hist[k] : max_exact;
					n_exact++;
				}
			}
			bool any_exact = n_exact > 0;
			uint64_t after = prediction(&e);
			cr_assert_eq(after, model, "seq %u step %u", seq, i);
			if (censored) {
				censored_seen++;
				cr_assert_leq(after, t / 2);
				if (had)
					cr_assert_leq(after, before / 2, "a censored wake raised the prediction");
			} else if (had && after > before) {
				raised_by_exact++;
			}
			uint64_t s = garuda_estimator_sleep_ns(&e);
			uint64_t margin = pp.margin_us * US;
			uint64_t want = model <= margin ? 0 : model - margin;
			if (want < pp.min_sleep_us * US)
				want = 0;
			if (want > pp.max_sleep_us * US)
				want = pp.max_sleep_us * US;
			cr_assert_eq(s, want, "seq %u step %u", seq, i);
			cr_assert_leq(s, pp.max_sleep_us * US);
			/* the exact margin: half the exact records' spread, 20 us at least, the
			 * margin at most; the margin itself below 2 exact records */
			uint64_t xm = margin;
			if (n_exact >= 2) {
				xm = (max_exact - model_exact) / 2;
				xm = xm < 20 * US ? 20 * US : xm;
				xm = xm < margin ? xm : margin;
			}
			cr_assert_eq(garuda_estimator_exact_margin_ns(&e), xm, "seq %u step %u", seq, i);
			uint64_t want_exact = !any_exact || model_exact <= xm ? 0 : model_exact - xm;
			if (want_exact < pp.min_sleep_us * US)
				want_exact = 0;
			if (want_exact > pp.max_sleep_us * US)
				want_exact = pp.max_sleep_us * US;
			cr_assert_eq(garuda_estimator_exact_sleep_ns(&e), want_exact, "seq %u step %u", seq, i);
		}
	}
#undef NEXT
	cr_assert_gt(censored_seen, 10000);
	cr_assert_gt(raised_by_exact, 100, "the sequences exercise eviction");
}
