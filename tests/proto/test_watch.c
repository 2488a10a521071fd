/* test_watch.c — the watcher (proto/watch.h) on a simulated clock: no sleep, no wall
 * clock. A tiny driver here plays the scanner: words are numbers in an array, a step
 * asks garuda_watch_due(), "loads" each due word and reports it, then jumps the clock
 * to garuda_watch_next(). Asserted:
 *   - the schedule yields exactly the due words: a word sleeping toward its deadline is
 *     not looked at before it; a word in its window is looked at every step;
 *   - the backoff: a word that never moves is looked at no later than
 *     max(backstop, age/32) after the previous look (capped at the top level), and a
 *     few hundred times in 100 s; a store that lands at any time is found within that
 *     bound; the plan's backoff_div sets the 32 (garuda_watch_tuning_of);
 *   - fairness: a session with 65,536 overdue words and one with 1, all due together:
 *     the second's word is in the first step, and no step looks at more than a chunk of
 *     the first's words per turn; likewise with 65,536 words on timers (+predict, one
 *     prediction) and another's word due 1 us later, every word still given out once;
 *   - work is counted in word loads, per owner, and a wait not due costs none;
 *   - the walk over words with waits gives just those, whatever was armed before;
 *   - owners are found by key through thousands of random makes and drops;
 *   - an owner's words are listed oldest first, a new one last, and a rotated one goes
 *     last in O(1): a walk that rotates what it passes and keeps finds the words it has
 *     not passed first, whatever is added or removed meanwhile (garudad's drops taken
 *     a share a step);
 *   - stretches: an idle session's sweeps come its youngest word's backoff apart (no
 *     look past any word's bound, ~22 looks a word an octave of age, not ~27), and a
 *     session armed over a moment moves on a whole level at a time (none copied);
 *   - shares: an idle session's words move on to their next level in the array their
 *     level lends (no entry copied); a share ended halfway (a word given out, words
 *     removed on either side) or cut anywhere by random operations loses nothing;
 *   - stream order: a wait queued behind another on its word has no deadline until the
 *     first is found, then its clock starts at that find;
 *   - a wait's sleeps, kept in 32 bits, come back exact below 2^27 ns and at most
 *     2^-26 short above (never long), in order;
 *   - a 10 s prediction is slept toward in steps (max_sleep_ns) and then spun on for
 *     one short window only; one that was short (a lower bound) is looked at every
 *     GARUDA_WATCH_FINE_NS within its uncertainty past the window, then backs off;
 *   - after a find the driver gives way only when a sleep or a park comes next, not
 *     while another word is in its window;
 *   - an arm whose target landed before its take (pw.done) is looked at by the next
 *     step, however long its point predicts, and records nothing;
 *   - libgaruda's +predict wait (client/wait.c predict_wait, replayed call for call):
 *     the exact sequence of its sleeps, spins and finds, stream order over queued
 *     sequences (each one's clock from its predecessor's find: the estimator learns
 *     one kernel, not several), and a readiness that ends a sleep early (a poke).
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator.h"
#include "fdcheck.h"
#include "policy.h"
#include "seq.h"
#include "watch.h"

TestSuite(watch, .init = fdcheck_begin, .fini = fdcheck_end);

#define US 1000ull
#define MS 1000000ull
#define S 1000000000ull

/* the default plan's numbers: park_us=1000, backstop_us=200, max_sleep_us=1 s */
static struct garuda_watch_tuning tuning(bool predict)
{
	return (struct garuda_watch_tuning){
		.pol = { .park_ns = 1000 * US, .backstop_ns = 200 * US },
		.predict = predict,
		.max_sleep_ns = predict ? 1000 * MS : 0,
	};
}

/* the simulated memory: word k is value[k]; its key is k + 1 */
struct sim {
	struct garuda_watch w;
	uint64_t *value;
	uint64_t now;
	uint32_t due[70000];
	struct garuda_watch_fire fire[70000];
	unsigned fired_total;
	uint64_t loads;
};

static void sim_init_tuned(struct sim *s, const struct garuda_watch_tuning *t, unsigned words)
{
	garuda_watch_init(&s->w, t);
	s->value = calloc(words, sizeof(*s->value));
	s->now = 1 * S;
	s->fired_total = 0;
	s->loads = 0;
}

static void sim_init(struct sim *s, bool predict, unsigned words)
{
	struct garuda_watch_tuning t = tuning(predict);
	sim_init_tuned(s, &t, words);
}

static void sim_fini(struct sim *s)
{
	garuda_watch_fini(&s->w);
	free(s->value);
}

static uint32_t arm(struct sim *s, uint32_t owner, uint64_t word, uint64_t target, uint64_t sleep)
{
	struct garuda_policy_wait pw;
	garuda_policy_wait_init(&pw, word + 1, target, s->now, s->now, sleep, sleep);
	cr_assert_eq(garuda_watch_reserve(&s->w, 1), 0);
	return garuda_watch_add(&s->w, &pw, owner, s->now);
}

/* One step at s->now: look at the due words; returns how many were looked at. */
static unsigned step(struct sim *s, unsigned max)
{
	unsigned n = garuda_watch_due(&s->w, s->now, s->due, max);
	for (unsigned i = 0; i < n; i++) {
		uint64_t key = garuda_watch_word_key(&s->w, s->due[i]);
		s->fired_total += garuda_watch_found(&s->w, s->due[i], s->value[key - 1], s->now,
						     s->fire);
	}
	s->loads += n;
	return n;
}

/* The clock to the watcher's next step (a spin step: +2 us), at most until `limit`. */
static void advance(struct sim *s, uint64_t limit)
{
	uint64_t next = garuda_watch_next(&s->w, s->now);
	uint64_t to = next == 0 ? s->now + 2 * US : next;
	if (next != 0)
		garuda_watch_woke(&s->w, to);
	s->now = to < limit ? to : limit;
}

Test(watch, schedule_yields_exactly_the_due_words)
{
	static struct sim s;
	sim_init(&s, true, 4);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	arm(&s, o, 0, 1, 5 * MS);   /* sleeps 5 ms */
	arm(&s, o, 1, 1, 50 * MS);  /* sleeps 50 ms */
	/* nothing is due before word 0's probe, 3/4 of its 5 ms (policy.h): the watcher
	 * sleeps until then, looks at word 0 alone, and sleeps to its deadline */
	cr_assert_eq(step(&s, 100), 0);
	uint64_t t0 = s.now, next = garuda_watch_next(&s.w, s.now);
	cr_assert_eq(next, t0 + 5 * MS * 3 / 4, "next %llu", (unsigned long long)(next - s.now));
	s.now = next;
	garuda_watch_woke(&s.w, s.now);
	cr_assert_eq(step(&s, 100), 1);
	cr_assert_eq(garuda_watch_word_key(&s.w, s.due[0]), 1);
	next = garuda_watch_next(&s.w, s.now);
	cr_assert_eq(next, t0 + 5 * MS, "next %llu", (unsigned long long)(next - t0));
	s.now = next;
	garuda_watch_woke(&s.w, s.now);
	/* word 0's deadline: it alone (its window opens: spin on it) */
	cr_assert_eq(step(&s, 100), 1);
	cr_assert_eq(garuda_watch_word_key(&s.w, s.due[0]), 1);
	cr_assert_eq(garuda_watch_next(&s.w, s.now), 0, "in its window: spin");
	s.now += 2 * US;
	cr_assert_eq(step(&s, 100), 1, "only the word in its window");
	s.value[0] = 1;
	s.now += 2 * US;
	cr_assert_eq(step(&s, 100), 1);
	cr_assert_eq(s.fired_total, 1);
	/* then word 1 alone, at its probe, not before */
	next = garuda_watch_next(&s.w, s.now);
	cr_assert_eq(t0, 1 * S);
	cr_assert_eq(next, 1 * S + 50 * MS * 3 / 4);
	cr_assert_eq(garuda_watch_count(&s.w), 1);
	sim_fini(&s);
}

/* After a step that fired, the driver gives the CPU away (a waiter it woke may be
 * runnable beside it) when a sleep or a park comes next, never while another word is
 * in its window (scanner.c, client/reactor.c). */
Test(watch, gives_way_after_a_find_only_when_no_spin_comes_next)
{
	static struct sim s;
	for (int c = 0; c < 3; c++) {
		/* 0: word 1 sleeps 50 ms more; 1: word 1 is in its window too; 2: none */
		sim_init(&s, true, 2);
		uint32_t o = garuda_watch_owner(&s.w, 1);
		arm(&s, o, 0, 1, 5 * MS);
		if (c < 2)
			arm(&s, o, 1, 1, c == 0 ? 55 * MS : 5 * MS);
		for (int probe = 0; probe < 2; probe++) { /* word 0's probe, then its window */
			s.now = garuda_watch_next(&s.w, s.now);
			garuda_watch_woke(&s.w, s.now);
			step(&s, 100); /* the window opens: nothing landed yet */
		}
		cr_assert_eq(s.fired_total, 0);
		cr_assert_not(garuda_watch_gives_way(&s.w, s.now), "case %d: spinning", c);
		s.value[0] = 1;
		s.now += 2 * US;
		step(&s, 100);
		cr_assert_eq(s.fired_total, 1, "case %d", c);
		bool want = c != 1;
		cr_assert_eq(garuda_watch_gives_way(&s.w, s.now), want, "case %d: next %llu", c,
			     (unsigned long long)garuda_watch_next(&s.w, s.now));
		sim_fini(&s);
	}
}

/* An arm taken after its work landed (the driver's take saw the target reached:
 * pw.done) is looked at by the next step, not after its point's 2 s sleep, and its
 * find records nothing; a queued arm whose target landed brings its word's head run
 * along. The same arm unlanded sleeps. */
Test(watch, an_arm_taken_after_its_store_is_looked_at_at_once_and_records_nothing)
{
	static struct sim s;
	sim_init(&s, true, 2);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	struct garuda_policy_wait pw;
	/* word 0 landed before the take */
	s.value[0] = 1;
	garuda_policy_wait_init(&pw, 1, 1, s.now, s.now, 2 * S, 2 * S);
	pw.done = true;
	cr_assert_eq(garuda_watch_reserve(&s.w, 1), 0);
	garuda_watch_add(&s.w, &pw, o, s.now);
	/* word 1 had not: its head sleeps toward its deadline */
	arm(&s, o, 1, 1, 2 * S);
	cr_assert_eq(garuda_watch_next(&s.w, s.now), 0, "a landed arm is spun on at once");
	cr_assert_eq(step(&s, 100), 1, "only the landed word is looked at");
	cr_assert_eq(s.fired_total, 1);
	cr_assert_eq(s.fire[0].find.kind, GARUDA_FIND_UNKNOWN, "a landed arm's find records %d",
		     (int)s.fire[0].find.kind);
	uint64_t next = garuda_watch_next(&s.w, s.now);
	cr_assert_geq(next, s.now + 500 * MS, "word 1 sleeps (next look %llu ns on)",
		      (unsigned long long)(next - s.now));
	/* a second arm on word 1, queued behind its head, whose target landed */
	s.value[1] = 2;
	garuda_policy_wait_init(&pw, 2, 2, s.now, s.now, 2 * S, 2 * S);
	pw.done = true;
	cr_assert_eq(garuda_watch_reserve(&s.w, 1), 0);
	garuda_watch_add(&s.w, &pw, o, s.now);
	cr_assert_eq(garuda_watch_next(&s.w, s.now), 0);
	s.now += 1 * MS;
	step(&s, 100);
	cr_assert_eq(s.fired_total, 3, "the head and the landed arm behind it fire together");
	/* the head was taken before it landed: its find says its work came before the
	 * deadline (censored, from its start), as any early look's would; the arm that
	 * landed before its take records nothing */
	cr_assert_eq(s.fire[0].find.kind, GARUDA_FIND_CENSORED, "the head's find is %d",
		     (int)s.fire[0].find.kind);
	cr_assert_eq(s.fire[0].find.ns, 1 * MS);
	cr_assert_eq(s.fire[1].find.kind, GARUDA_FIND_UNKNOWN, "the landed arm's find is %d",
		     (int)s.fire[1].find.kind);
	cr_assert_eq(garuda_watch_count(&s.w), 0);
	/* a word stored back below the target after the take (a hostile client): the
	 * next look finds nothing, and the word is placed by its prediction, not spun on
	 * for good */
	garuda_policy_wait_init(&pw, 1, 2, s.now, s.now, 2 * S, 2 * S);
	pw.done = true;
	cr_assert_eq(garuda_watch_reserve(&s.w, 1), 0);
	garuda_watch_add(&s.w, &pw, o, s.now);
	step(&s, 100);
	cr_assert_eq(s.fired_total, 3, "word 0 holds 1, below its target 2");
	cr_assert_neq(garuda_watch_next(&s.w, s.now), 0, "a word that went back is spun on");
	sim_fini(&s);
}

Test(watch, overdue_word_backs_off_with_its_age_and_is_found_within_the_bound)
{
	static struct sim s;
	sim_init(&s, true, 1);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	uint64_t dl = s.now; /* cold: no sleep, the deadline is the arm */
	arm(&s, o, 0, 1, 0);
	uint64_t last = s.now, looks = 0, window_end = dl + 1000 * US;
	uint64_t end = dl + 100 * S;
	while (s.now < end) {
		unsigned n = step(&s, 100);
		if (n) {
			uint64_t gap = s.now - last, age = s.now - dl;
			uint64_t bound = age / 32 > 200 * US ? age / 32 : 200 * US;
			if (bound > GARUDA_WATCH_PERIOD_MAX_NS)
				bound = GARUDA_WATCH_PERIOD_MAX_NS;
			/* a look no later than the bound after the previous one (the window's
			 * spin steps are 2 us apart) */
			if (last > window_end)
				cr_assert_leq(gap, 2 * bound, "look at age %llu us came %llu us after the last",
					      (unsigned long long)(age / US), (unsigned long long)(gap / US));
			last = s.now;
			looks++;
		}
		advance(&s, end);
	}
	/* the window's ~500 spin steps, then a few hundred backed-off looks, not 100 s / 200 us */
	cr_assert_lt(looks, 1500, "%llu looks in 100 s", (unsigned long long)looks);
	cr_assert_gt(looks, 300);
	/* a store landing now (100 s overdue) is found within the top period */
	s.value[0] = 1;
	uint64_t landed = s.now;
	while (!s.fired_total) {
		advance(&s, UINT64_MAX);
		step(&s, 100);
	}
	cr_assert_leq(s.now - landed, GARUDA_WATCH_PERIOD_MAX_NS);
	sim_fini(&s);
}

Test(watch, late_store_is_found_within_a_thirty_second_of_its_age)
{
	/* stores landing at many ages: each found within max(backstop, age/32) x 2 (the
	 * level's period is at most the bound; the look may come a period after) */
	uint64_t ages[] = { 3 * MS, 17 * MS, 230 * MS, 1100 * MS, 4700 * MS };
	for (unsigned k = 0; k < sizeof(ages) / sizeof(ages[0]); k++) {
		static struct sim s;
		sim_init(&s, true, 1);
		uint32_t o = garuda_watch_owner(&s.w, 1);
		uint64_t dl = s.now + 1 * MS;
		arm(&s, o, 0, 1, 1 * MS);
		uint64_t land = dl + ages[k], found = 0;
		while (!found) {
			if (s.now >= land)
				s.value[0] = 1;
			step(&s, 100);
			if (s.fired_total)
				found = s.now;
			else
				advance(&s, land > s.now ? land : UINT64_MAX);
		}
		uint64_t bound = ages[k] / 32 > 200 * US ? ages[k] / 32 : 200 * US;
		cr_assert_leq(found - land, 2 * bound, "age %llu ms: found %llu us late",
			      (unsigned long long)(ages[k] / MS), (unsigned long long)((found - land) / US));
		sim_fini(&s);
	}
}

/* The plan's backoff_div (r = 1/backoff_div) through garuda_watch_tuning_of(): a word
 * overdue for a long stretch (1 to 60 s), whose store lands at a random time, is found
 * within max(backstop, r x its age at the landing), capped at the top period. */
Test(watch, the_plans_backoff_ratio_bounds_a_late_find)
{
	static const char *const plans[] = {
		"flag:park_us=1000,backstop_us=200,backoff_div=8+predict:margin_us=100,"
		"min_sleep_us=20,max_sleep_us=1000000,window=16",
		"flag:park_us=1000,backstop_us=200+predict:margin_us=100,"
		"min_sleep_us=20,max_sleep_us=1000000,window=16", /* the default: 32 */
		"flag:park_us=1000,backstop_us=200,backoff_div=256",
	};
	static const uint64_t div[] = { 8, GARUDA_PLAN_BACKOFF_DIV_DEFAULT, 256 };
	uint64_t top = GARUDA_WATCH_PERIOD_MAX_NS;
	unsigned seed = 29;
	for (unsigned k = 0; k < 3; k++) {
		struct garuda_plan plan;
		cr_assert_eq(garuda_plan_parse(plans[k], &plan, NULL, 0), 0);
		struct garuda_watch_tuning t;
		garuda_watch_tuning_of(&plan, &t);
		for (unsigned trial = 0; trial < 8; trial++) {
			static struct sim s;
			sim_init_tuned(&s, &t, 1);
			uint32_t o = garuda_watch_owner(&s.w, 1);
			uint64_t dl = s.now; /* cold: the deadline is the arm */
			arm(&s, o, 0, 1, 0);
			uint64_t age = 1 * S + (uint64_t)(rand_r(&seed) % 59000) * MS +
				       (uint64_t)(rand_r(&seed) % 1000) * US;
			uint64_t land = dl + age, found = 0, looks = 0;
			while (!found) {
				if (s.now >= land)
					s.value[0] = 1;
				looks += step(&s, 100);
				if (s.fired_total)
					found = s.now;
				else
					advance(&s, land > s.now ? land : UINT64_MAX);
			}
			uint64_t bound = age / div[k] > 200 * US ? age / div[k] : 200 * US;
			bound = bound < top ? bound : top;
			cr_assert_leq(found - land, bound,
				      "%s, age %llu ms: found %llu us late, bound %llu us", plans[k],
				      (unsigned long long)(age / MS),
				      (unsigned long long)((found - land) / US),
				      (unsigned long long)(bound / US));
			/* and the stretch cost few looks: ~ln(age)/r, not age/backstop */
			cr_assert_lt(looks, 2000 + 40 * div[k], "%llu looks", (unsigned long long)looks);
			sim_fini(&s);
		}
	}
}

Test(watch, a_session_backlog_does_not_delay_another_session)
{
	static struct sim s;
	sim_init(&s, true, 65537);
	uint32_t a = garuda_watch_owner(&s.w, 100), b = garuda_watch_owner(&s.w, 200);
	cr_assert_eq(garuda_watch_reserve(&s.w, 65537), 0);
	for (uint64_t k = 0; k < 65536; k++)
		arm(&s, a, k, 1, 0);
	arm(&s, b, 65536, 1, 0);
	/* every word past its window: one look each puts them on their owners' levels */
	s.now += 2 * MS;
	cr_assert_eq(step(&s, 70000), 65537);
	bool b_seen = false;
	struct garuda_watch_owner_stats sa, sb;
	unsigned steps_with_looks = 0;
	for (int r = 0; r < 64 && !b_seen; r++) {
		s.now += 50 * US;
		unsigned n = step(&s, GARUDA_WATCH_CHUNK * 4);
		steps_with_looks += n > 0;
		/* both levels fell due together: the first step that looks at anything
		 * serves b's word, after at most one chunk of a's, and goes on with a's
		 * sweep, a chunk per turn, up to the step's max */
		for (unsigned i = 0; i < n && !b_seen; i++) {
			b_seen = garuda_watch_word_key(&s.w, s.due[i]) == 65537;
			if (b_seen)
				cr_assert_leq(i, GARUDA_WATCH_CHUNK, "b's word behind %u of a's", i);
		}
		if (n)
			cr_assert_eq(n, GARUDA_WATCH_CHUNK * 4, "a's sweep stopped at %u words", n);
	}
	cr_assert(b_seen, "the lone session's due word was never looked at");
	cr_assert_eq(steps_with_looks, 1, "b's word waited %u steps", steps_with_looks);
	cr_assert(garuda_watch_owner_stats(&s.w, 100, &sa));
	cr_assert(garuda_watch_owner_stats(&s.w, 200, &sb));
	cr_assert_gt(sa.loads, sb.loads);
	cr_assert_eq(sa.loads + sb.loads, s.loads, "every look is charged to an owner");
	sim_fini(&s);
}

/* Fairness with timers (+predict: each word sleeping toward its deadline has a timer
 * of its own). The timers were one heap served in due order: a session's 65,536 words
 * on one 10 ms prediction stood in front of another session's word due 1 us later for
 * 256 steps of 512 looks. Now each session's timers are one entry in the heap, served
 * a chunk a turn: the other's word is in the first step, behind one chunk at most,
 * and every one of the first session's words is still given out (and fires) once. */
Test(watch, one_sessions_due_timers_never_stand_before_another_sessions_due_word)
{
	enum { N = 65536 };
	static struct sim s;
	static bool seen[N];
	memset(seen, 0, sizeof(seen));
	sim_init(&s, true, N + 1);
	uint32_t a = garuda_watch_owner(&s.w, 100), b = garuda_watch_owner(&s.w, 200);
	cr_assert_eq(garuda_watch_reserve(&s.w, N + 1), 0);
	for (uint64_t k = 0; k < N; k++)
		arm(&s, a, k, 1, 10 * MS);
	s.now += 1 * US;
	arm(&s, b, N, 1, 10 * MS);
	for (uint64_t k = 0; k <= N; k++)
		s.value[k] = 1; /* every one landed (before its deadline): one look fires it */
	char why[200];
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	uint64_t first = garuda_watch_next(&s.w, s.now), b_due = first + 1 * US;
	cr_assert_gt(first, s.now, "nothing due before the prediction");
	s.now = first;
	unsigned steps = 0, given = 0, b_step = 0;
	while (given < N + 1 && steps < 4 * (N / 512)) {
		unsigned n = garuda_watch_due(&s.w, s.now, s.due, 512);
		steps++;
		for (unsigned i = 0; i < n; i++) {
			uint64_t k = garuda_watch_word_key(&s.w, s.due[i]) - 1;
			if (k == N) {
				cr_assert_eq(b_step, 0, "b's word given out twice");
				b_step = steps;
				cr_assert_leq(i, GARUDA_WATCH_CHUNK, "b's word behind %u of a's", i);
			} else {
				cr_assert_not(seen[k], "a's word %llu given out twice", (unsigned long long)k);
				seen[k] = true;
			}
			given++;
			s.fired_total += garuda_watch_found(&s.w, s.due[i], s.value[k], s.now, s.fire);
		}
		if (steps % 16 == 1)
			cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "step %u: %s", steps, why);
		advance(&s, UINT64_MAX);
	}
	cr_assert_eq(b_step, 1, "b's word, due %llu us after a's, was given out in step %u",
		     (unsigned long long)((b_due - first) / US), b_step);
	for (unsigned k = 0; k < N; k++)
		cr_assert(seen[k], "a's word %u was never given out", k);
	cr_assert_eq(s.fired_total, N + 1, "%u of %u fired", s.fired_total, N + 1);
	cr_assert_eq(garuda_watch_count(&s.w), 0);
	cr_assert_leq(steps, N / 512 + 2, "%u steps of 512 looks for %u words", steps, N + 1);
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	sim_fini(&s);
}

/* Fairness with SPIN words (a completion expected: one tenant's hundreds of cold arms,
 * or every wait under poll). A step took every SPIN word first, in one order across
 * sessions, then the due timers: a tenant with a step's worth (512 in garudad) of SPIN
 * words starved every other tenant's timers for as long as its windows stayed open, and
 * one tenant's 65,536 SPIN words put another's one SPIN word 128 steps apart. Now SPIN
 * words are served a session at a time, a chunk each per turn, and take half a step
 * at most while a timer is due. */
Test(watch, one_sessions_spin_words_never_stand_before_another_sessions_due_words)
{
	static struct sim s;
	/* poll+predict: A's cold waits spin for good; B's wait sleeps to its prediction */
	struct garuda_watch_tuning t = tuning(true);
	t.pol.forever = true;
	sim_init_tuned(&s, &t, 70000);
	uint32_t a = garuda_watch_owner(&s.w, 100), b = garuda_watch_owner(&s.w, 200);
	for (uint64_t k = 0; k < 512; k++)
		arm(&s, a, k, 1, 0); /* never stored */
	arm(&s, b, 600, 1, 5 * MS);
	uint64_t store = s.now + 5 * MS, found = 0;
	while (!found && s.now < store + 200 * MS) {
		if (s.now >= store)
			s.value[600] = 1;
		unsigned n = garuda_watch_due(&s.w, s.now, s.due, 512);
		for (unsigned i = 0; i < n; i++) {
			uint64_t key = garuda_watch_word_key(&s.w, s.due[i]);
			if (garuda_watch_found(&s.w, s.due[i], s.value[key - 1], s.now, s.fire) && key == 601)
				found = s.now;
		}
		advance(&s, UINT64_MAX);
	}
	cr_assert(found, "B's timed wait was never looked at behind A's 512 SPIN words");
	cr_assert_leq(found - store, t.pol.backstop_ns, "B's store found %llu us late",
		      (unsigned long long)((found - store) / US));
	sim_fini(&s);

	/* poll: every wait spins; A's 65,536 words and B's one, steps of 512 */
	t = tuning(false);
	t.pol.forever = true;
	sim_init_tuned(&s, &t, 70000);
	a = garuda_watch_owner(&s.w, 100);
	b = garuda_watch_owner(&s.w, 200);
	cr_assert_eq(garuda_watch_reserve(&s.w, 65537), 0);
	for (uint64_t k = 0; k < 65536; k++)
		arm(&s, a, k, 1, 0);
	arm(&s, b, 65536, 1, 0);
	for (int r = 0; r < 8; r++) {
		unsigned n = garuda_watch_due(&s.w, s.now, s.due, 512), at = n;
		for (unsigned i = 0; i < n; i++)
			if (garuda_watch_word_key(&s.w, s.due[i]) == 65537)
				at = i;
		cr_assert_eq(n, 512);
		cr_assert_lt(at, n, "step %d: B's SPIN word waited behind A's", r);
		cr_assert_leq(at, GARUDA_WATCH_CHUNK, "step %d: B's word behind %u of A's", r, at);
		for (unsigned i = 0; i < n; i++)
			garuda_watch_found(&s.w, s.due[i], 0, s.now, s.fire);
		s.now += 2 * US;
	}
	char why[200];
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	sim_fini(&s);
}

Test(watch, a_wait_not_due_costs_no_load)
{
	static struct sim s;
	sim_init(&s, true, 2);
	uint32_t a = garuda_watch_owner(&s.w, 1), b = garuda_watch_owner(&s.w, 2);
	arm(&s, a, 0, 1, 10 * S); /* far */
	arm(&s, b, 1, 1, 1 * MS);
	uint64_t end = s.now + 5 * MS;
	s.value[1] = 1;
	while (s.now < end) {
		step(&s, 100);
		advance(&s, end);
	}
	struct garuda_watch_owner_stats sa, sb;
	cr_assert(garuda_watch_owner_stats(&s.w, 1, &sa));
	cr_assert(garuda_watch_owner_stats(&s.w, 2, &sb));
	cr_assert_eq(sa.loads, 0, "a word sleeping toward its deadline was loaded %llu times",
		     (unsigned long long)sa.loads);
	cr_assert_geq(sb.loads, 1);
	cr_assert_eq(sb.fired, 1);
	sim_fini(&s);
}

Test(watch, stream_order_starts_the_successor_at_the_find)
{
	static struct sim s;
	sim_init(&s, true, 1);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	uint32_t w1 = arm(&s, o, 0, 1, 1 * MS);
	uint32_t w2 = arm(&s, o, 0, 2, 1 * MS);
	struct garuda_policy_wait q = garuda_watch_policy_wait(&s.w, w2);
	cr_assert_eq(q.state, GARUDA_POLICY_QUEUED);
	cr_assert_eq(garuda_policy_deadline(&q), UINT64_MAX);
	cr_assert_eq(garuda_watch_first_on(&s.w, 1), w1);
	cr_assert_eq(garuda_watch_next_on(&s.w, w1), w2);
	uint64_t end = s.now + 1200 * US;
	uint64_t land = s.now + 1100 * US;
	while (!s.fired_total) {
		if (s.now >= land)
			s.value[0] = 1;
		step(&s, 100);
		if (!s.fired_total)
			advance(&s, s.now < land ? land : end + 10 * MS);
	}
	uint64_t found = s.now;
	q = garuda_watch_policy_wait(&s.w, w2);
	cr_assert_eq(q.state, GARUDA_POLICY_STARTED);
	cr_assert_eq(garuda_policy_start(&q), found);
	cr_assert_eq(garuda_policy_deadline(&q), found + 1 * MS);
	sim_fini(&s);
}

/* A wait keeps its take as a distance from its arm (40 bytes a wait): exact up to
 * 4.3 s, a later take counted as taken then, and a take stamped before its arm (a
 * driver's clocks) as taken at the arm. Its removal from the middle of a deep word
 * leaves the rest linked both ways (garuda_watch_check walks them). */
Test(watch, a_waits_take_is_kept_to_the_nanosecond_up_to_four_seconds_after_its_arm)
{
	static struct sim s;
	sim_init(&s, true, 1);
	uint32_t owner = garuda_watch_owner(&s.w, 1);
	const uint64_t arm_at = s.now, takes[] = { 0, 1, 4294967295ull, 4294967296ull, 10 * S };
	uint32_t ids[5];
	for (unsigned i = 0; i < 5; i++) {
		struct garuda_policy_wait pw;
		garuda_policy_wait_init(&pw, 1, 10 + i, arm_at, arm_at + takes[i], 0, 0);
		cr_assert_eq(garuda_watch_reserve(&s.w, 1), 0);
		ids[i] = garuda_watch_add(&s.w, &pw, owner, s.now);
	}
	for (unsigned i = 0; i < 5; i++) {
		uint64_t want = arm_at + (takes[i] > 4294967295ull ? 4294967295ull : takes[i]);
		cr_assert_eq(garuda_watch_policy_wait(&s.w, ids[i]).taken_ns, want, "take %u: %llu after its arm", i,
			     (unsigned long long)takes[i]);
	}
	struct garuda_policy_wait early;
	garuda_policy_wait_init(&early, 1, 20, arm_at, arm_at - 5, 0, 0);
	cr_assert_eq(garuda_watch_reserve(&s.w, 1), 0);
	uint32_t e = garuda_watch_add(&s.w, &early, owner, s.now);
	cr_assert_eq(garuda_watch_policy_wait(&s.w, e).taken_ns, arm_at);
	char why[160];
	const uint32_t gone[] = { ids[2], e, ids[0] }; /* the middle, the tail, the head */
	for (unsigned i = 0; i < 3; i++) {
		garuda_watch_remove(&s.w, gone[i], s.now);
		cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "after removal %u: %s", i, why);
	}
	cr_assert_eq(garuda_watch_count(&s.w), 3);
	s.value[0] = 14; /* the rest fire, in stream order */
	uint32_t wi = garuda_watch_get(&s.w, ids[1])->word;
	cr_assert_eq(garuda_watch_found(&s.w, wi, s.value[0], s.now, s.fire), 3);
	cr_assert(s.fire[0].id == ids[1] && s.fire[1].id == ids[3] && s.fire[2].id == ids[4]);
	cr_assert_eq(garuda_watch_count(&s.w), 0);
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	sim_fini(&s);
}

/* A word's queue stays in stream order for ARMs whose place is near either end of it
 * (its waits fire lowest target first); ARMs in a hostile order (each one's place in
 * the middle of 2,000) leave the word unordered instead of costing a walk each, and
 * then every store still fires exactly the waits it reached, none lost, none twice. */
Test(watch, arms_out_of_order_keep_their_place_near_an_end_and_lose_nothing_elsewhere)
{
	static struct sim s;
	char why[160];
	sim_init(&s, true, 2);
	uint32_t owner = garuda_watch_owner(&s.w, 1);
	static uint64_t target_of[4096]; /* by id, as armed (a fired id is free: its wait is no one's) */
#define ARM_AT(word, t) (target_of[arm(&s, owner, (word), (t), 0)] = (t))
	/* word 0: targets 10, 20, ..., 2000, then 15 (near the head) and 1995 (the tail) */
	for (uint64_t t = 10; t <= 2000; t += 10)
		ARM_AT(0, t);
	ARM_AT(0, 15);
	ARM_AT(0, 1995);
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	uint32_t wi = garuda_watch_get(&s.w, garuda_watch_first_on(&s.w, 1))->word;
	unsigned n = garuda_watch_found(&s.w, wi, 1000, s.now, s.fire);
	cr_assert_eq(n, 101, "the waits at or below 1000: %u", n);
	for (unsigned i = 1; i < n; i++)
		cr_assert_lt(target_of[s.fire[i - 1].id], target_of[s.fire[i].id],
			     "fire %u out of stream order", i);
	/* word 1: 0 and 1,000,000, then 1..999 and 999,999..999,001 alternating: each
	 * one's place is ~i deep from both ends */
	ARM_AT(1, 1000000);
	ARM_AT(1, 0);
	enum { PAIRS = 999 };
	for (uint64_t i = 1; i <= PAIRS; i++) {
		ARM_AT(1, i);
		ARM_AT(1, 1000000 - i);
	}
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	uint32_t w1 = garuda_watch_get(&s.w, garuda_watch_first_on(&s.w, 2))->word;
	static uint8_t seen[1000001];
	unsigned total = 0;
	const uint64_t stores[] = { 500, 999, 999500, 1000000 };
	const unsigned want[] = { 501, 499, 500, 500 }; /* 0..500, 501..999, 999,001..999,500, the rest */
	for (unsigned k = 0; k < 4; k++) {
		/* a wide word: each look takes a share of its waits (watch.h) */
		unsigned fired = 0, looks = 0;
		while (fired < want[k] && looks < GARUDA_WATCH_WIDE_LOOKS) {
			n = garuda_watch_found(&s.w, w1, stores[k], s.now, s.fire);
			looks++;
			for (unsigned i = 0; i < n; i++) {
				uint64_t t = target_of[s.fire[i].id];
				cr_assert(t <= stores[k] && !seen[t], "target %llu fired by a store of %llu (seen %u)",
					  (unsigned long long)t, (unsigned long long)stores[k], seen[t]);
				seen[t] = 1;
			}
			fired += n;
			cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
		}
		cr_assert_eq(fired, want[k], "store %llu fired %u in %u looks, want %u", (unsigned long long)stores[k],
			     fired, looks, want[k]);
		total += fired;
	}
	cr_assert_eq(total, 2 + 2 * PAIRS);
	cr_assert_eq(garuda_watch_count(&s.w), 101, "word 0's waits above 1000 stay");
	sim_fini(&s);
#undef ARM_AT
}

/* A look at a wide word takes a share of its waits, not all (a tenant's word of 65,535
 * waits took ~200 us of the scanner at every look), and goes on where the last one
 * stopped: a reached wait at the far end of 20,002 fires at the look whose share
 * reaches it, never the first, and nothing is lost or fired twice; the reached head
 * fires at once. */
Test(watch, a_look_at_a_wide_word_takes_a_share_of_its_waits_and_the_next_goes_on)
{
	static struct sim s;
	char why[160];
	sim_init(&s, true, 1);
	uint32_t owner = garuda_watch_owner(&s.w, 1);
	uint32_t head = arm(&s, owner, 0, 100, 0);
	arm(&s, owner, 0, 100 + (1ull << 62), 0); /* 2^62 apart: wide */
	enum { N = 20000 };
	uint32_t last = 0;
	for (uint64_t t = 1000 + N - 1; t >= 1000; t--) /* a wide word appends: 1000 at the tail */
		last = arm(&s, owner, 0, t, 0);
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	uint32_t wi = garuda_watch_get(&s.w, head)->word;
	cr_assert(garuda_watch_get(&s.w, head)->word == garuda_watch_get(&s.w, last)->word);
	unsigned n = garuda_watch_found(&s.w, wi, 1000, s.now, s.fire);
	cr_assert_eq(n, 1, "the first look fired %u: the reached head alone, not the tail 20,001 behind", n);
	cr_assert_eq(s.fire[0].id, head);
	cr_assert(garuda_watch_live(&s.w, last));
	unsigned looks = 1;
	while (garuda_watch_live(&s.w, last) && looks < 64) {
		n = garuda_watch_found(&s.w, wi, 1000, s.now, s.fire);
		looks++;
		cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
		cr_assert_leq(n, 1);
	}
	cr_assert(!garuda_watch_live(&s.w, last), "the reached tail did not fire in %u looks", looks);
	cr_assert_eq(s.fire[0].id, last);
	/* the tail is the 20,001st of the waits left after the head fired: it fires at the
	 * look whose share reaches it */
	unsigned share = (N + 1) / GARUDA_WATCH_WIDE_LOOKS + 1;
	share = share > GARUDA_WATCH_WIDE_SHARE ? share : GARUDA_WATCH_WIDE_SHARE;
	cr_assert_eq(looks, (N + 1 + share - 1) / share, "fired at look %u: a look takes %u of 20,001 waits", looks,
		     share);
	cr_assert_leq(looks, GARUDA_WATCH_WIDE_LOOKS);
	cr_assert_eq(garuda_watch_count(&s.w), N, "the unreached waits stay");
	/* a store reaching them all fires them all, a share a look at the most, and the
	 * reached head at once */
	unsigned total = 0;
	for (looks = 0; garuda_watch_count(&s.w) && looks < 64; looks++)
		total += garuda_watch_found(&s.w, wi, UINT64_MAX >> 1, s.now, s.fire);
	cr_assert_eq(total, N);
	sim_fini(&s);
}

static uint64_t deadline_of(const struct garuda_watch *w, uint32_t id)
{
	struct garuda_policy_wait pw = garuda_watch_policy_wait(w, id);
	return garuda_policy_deadline(&pw);
}

/* (from test_policy.c's garuda_policy_order, gone with it) waits on one (word, target)
 * share the earliest start, whatever their add order; another word starts at its own
 * arm; a lower target added later becomes the head and queues the started one */
Test(watch, waits_on_one_target_share_the_earliest_start_and_words_are_independent)
{
	static struct sim s;
	sim_init(&s, true, 2);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	uint64_t t0 = s.now;
	s.now = t0 + 300 * US;
	uint32_t b = arm(&s, o, 0, 5, 1 * MS);
	s.now = t0 + 100 * US;
	uint32_t a = arm(&s, o, 0, 5, 1 * MS);
	s.now = t0;
	uint32_t d = arm(&s, o, 0, 6, 1 * MS);
	s.now = t0 + 400 * US;
	uint32_t c = arm(&s, o, 1, 9, 1 * MS);
	cr_assert_eq(deadline_of(&s.w, a), t0 + 1100 * US);
	cr_assert_eq(deadline_of(&s.w, b), t0 + 1100 * US,
		     "one deadline for one target");
	cr_assert_eq(deadline_of(&s.w, c), t0 + 1400 * US,
		     "another word starts at its own arm");
	cr_assert_eq(garuda_watch_policy_wait(&s.w, d).state, GARUDA_POLICY_QUEUED);
	s.now = t0 + 600 * US;
	uint32_t e = arm(&s, o, 1, 8, 1 * MS);
	cr_assert_eq(garuda_watch_policy_wait(&s.w, e).state, GARUDA_POLICY_STARTED);
	cr_assert_eq(garuda_watch_policy_wait(&s.w, c).state, GARUDA_POLICY_QUEUED);
	char why[128];
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	sim_fini(&s);
}

Test(watch, a_ten_second_prediction_is_slept_toward_in_steps)
{
	static struct sim s;
	sim_init(&s, true, 1);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	uint64_t start = s.now;
	arm(&s, o, 0, 1, 10 * S - 150 * US); /* the estimator's prediction less the margin */
	uint64_t land = start + 10 * S, wakes = 0, spin_steps = 0;
	while (!s.fired_total) {
		if (s.now >= land)
			s.value[0] = 1;
		step(&s, 100);
		if (s.fired_total)
			break;
		uint64_t next = garuda_watch_next(&s.w, s.now);
		if (next)
			wakes++;
		else
			spin_steps++;
		advance(&s, s.now < land ? land : UINT64_MAX);
	}
	/* ten 1 s steps, then one window of at most park_us (1 ms) of 2 us spin steps */
	cr_assert_leq(wakes, 14, "%llu wakes", (unsigned long long)wakes);
	cr_assert_leq(spin_steps, 1000 * US / (2 * US) + 1, "%llu spin steps",
		      (unsigned long long)spin_steps);
	cr_assert_leq(s.now - land, 10 * US, "found %llu us late", (unsigned long long)((s.now - land) / US));
	sim_fini(&s);
}

/* A wait keeps its sleeps in 32 bits (garuda_watch_sleep): exact below 2^27 ns, else
 * rounded down by less than 2^-26 of the value (never up: a wait looked at late), in
 * order, saturating; and the policy's view of a wait gives back what was armed. */
Test(watch, a_waits_sleeps_are_kept_exactly_or_a_hair_short)
{
	for (uint64_t v = 0; v < 5000; v++)
		cr_assert_eq(garuda_watch_sleep_ns(garuda_watch_sleep_pack(v)), v);
	uint64_t exact[] = { (1ull << 27) - 1, 134 * MS, 1 * S, 10 * S, 60 * S };
	for (unsigned i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		cr_assert_eq(garuda_watch_sleep_ns(garuda_watch_sleep_pack(exact[i])), exact[i],
			     "%llu", (unsigned long long)exact[i]);
	uint64_t x = 0x9e3779b97f4a7c15ull, prev_v = 0, prev_u = 0;
	for (unsigned i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		uint64_t v = prev_v + (x >> (20 + i % 40)) + 1; /* ascending, every scale */
		if (v < prev_v || v > (1ull << 58))
			break;
		uint64_t u = garuda_watch_sleep_ns(garuda_watch_sleep_pack(v));
		cr_assert_leq(u, v);
		cr_assert_lt(v - u, (v >> 26) + 1, "%llu kept as %llu", (unsigned long long)v,
			     (unsigned long long)u);
		cr_assert_geq(u, prev_u, "in order");
		prev_v = v, prev_u = u;
	}
	uint64_t top = garuda_watch_sleep_ns(garuda_watch_sleep_pack(UINT64_MAX));
	cr_assert_eq(top, ((1ull << 27) - 1) << 31);
	cr_assert_eq(garuda_watch_sleep_ns(garuda_watch_sleep_pack(top + (1ull << 40))), top);

	static struct sim s;
	sim_init(&s, true, 2);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	uint32_t a = arm(&s, o, 0, 1, 10 * S), b = arm(&s, o, 1, 1, 10 * S + 77);
	struct garuda_policy_wait pa = garuda_watch_policy_wait(&s.w, a),
				  pb = garuda_watch_policy_wait(&s.w, b);
	cr_assert_eq(pa.sleep_ns, 10 * S);
	cr_assert_eq(pa.exact_sleep_ns, 10 * S);
	cr_assert(pb.sleep_ns <= 10 * S + 77 && pb.sleep_ns + 128 > 10 * S + 77, "%llu",
		  (unsigned long long)pb.sleep_ns);
	garuda_watch_resleep(&s.w, a, 3 * MS + 1, 5 * MS + 1, s.now);
	pa = garuda_watch_policy_wait(&s.w, a);
	cr_assert_eq(pa.sleep_ns, 3 * MS + 1);
	cr_assert_eq(pa.exact_sleep_ns, 5 * MS + 1);
	sim_fini(&s);
}

/* A 10 s prediction 100 ms short (a lower bound, as a cold first wait found on its
 * backoff records): its window opens and closes 100 ms early. Within the prediction's
 * uncertainty (sleep/32 past the opening) the word is looked at every
 * GARUDA_WATCH_FINE_NS, not on the backoff (which would look ~100 ms/32 apart there):
 * the store is found within that period. Past the uncertainty, the backoff as before. */
static uint64_t land_after_short_prediction(struct sim *s, uint64_t short_by, uint64_t *looks)
{
	sim_init(s, true, 1);
	uint32_t o = garuda_watch_owner(&s->w, 1);
	uint64_t start = s->now;
	arm(s, o, 0, 1, 10 * S - short_by);
	uint64_t land = start + 10 * S;
	*looks = 0;
	while (!s->fired_total) {
		if (s->now >= land)
			s->value[0] = 1;
		*looks += step(s, 100) > 0;
		if (!s->fired_total)
			advance(s, s->now < land ? land : UINT64_MAX);
	}
	return s->now - land;
}

Test(watch, a_closed_window_is_followed_by_fine_looks_within_the_predictions_uncertainty)
{
	static struct sim s;
	uint64_t looks;
	uint64_t late = land_after_short_prediction(&s, 100 * MS, &looks);
	cr_assert_leq(late, GARUDA_WATCH_FINE_NS, "found %llu us late", (unsigned long long)(late / US));
	/* ~10 sleeps toward it, the window's spin steps, then one look per period */
	cr_assert_leq(looks, 10 + 500 + 100 * MS / GARUDA_WATCH_FINE_NS + 10, "%llu looks",
		      (unsigned long long)looks);
	sim_fini(&s);
	/* short by more than its uncertainty (10 s / 32 = 312 ms): fine looks for 312 ms,
	 * then the backoff from the opening (found within 2 periods of max(200 us, 1 s/32)) */
	late = land_after_short_prediction(&s, 1 * S, &looks);
	cr_assert_leq(late, 2 * (1 * S / 32), "found %llu us late", (unsigned long long)(late / US));
	cr_assert_leq(looks, 10 + 500 + (10 * S / 32) / GARUDA_WATCH_FINE_NS + 600, "%llu looks",
		      (unsigned long long)looks);
	sim_fini(&s);
}

/* A session's flood of words past their windows within their uncertainty: at most
 * GARUDA_WATCH_FINE_WORDS of them get fine timers (the watcher's check counts them after
 * every step), the rest back off; another session's word in the same state still gets
 * its fine looks, and is found within a fine period. */
Test(watch, fine_looks_are_capped_per_session)
{
	static struct sim s;
	sim_init(&s, true, 1001);
	uint32_t flood = garuda_watch_owner(&s.w, 1), other = garuda_watch_owner(&s.w, 2);
	uint64_t start = s.now;
	for (unsigned k = 0; k < 1000; k++)
		arm(&s, flood, k, 1, 100 * MS); /* never stored */
	arm(&s, other, 1000, 1, 100 * MS);
	uint64_t land = start + 102 * MS; /* past its window (100-101 ms), within 100/32 ms */
	char why[160];
	while (!s.fired_total) {
		if (s.now >= land)
			s.value[1000] = 1;
		step(&s, 512);
		cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "at %llu us: %s",
			     (unsigned long long)((s.now - start) / US), why);
		if (!s.fired_total)
			advance(&s, s.now < land ? land : UINT64_MAX);
	}
	cr_assert_leq(s.now - land, GARUDA_WATCH_FINE_NS, "found %llu us late",
		      (unsigned long long)((s.now - land) / US));
	sim_fini(&s);
}

/* A point whose exact records agree (estimator.h: the exact margin, 20 us here, where
 * the seed's margin is 100 us) gives its wait a window that opens 80 us past its
 * deadline: the watcher sleeps straight to the window (one wake), never starts the
 * overdue ladder in between, and spins only from the window on. */
Test(watch, a_window_that_opens_within_the_margin_is_slept_to)
{
	static struct sim s;
	sim_init(&s, true, 1);
	s.w.t.margin_ns = 100 * US;
	uint32_t o = garuda_watch_owner(&s.w, 1);
	uint64_t start = s.now;
	struct garuda_policy_wait pw;
	garuda_policy_wait_init(&pw, 1, 1, start, start, 1 * MS - 100 * US, 1 * MS - 20 * US);
	cr_assert_eq(garuda_watch_reserve(&s.w, 1), 0);
	garuda_watch_add(&s.w, &pw, o, start);
	uint64_t land = start + 1 * MS, wakes = 0, spin_steps = 0, before_window = 0;
	while (!s.fired_total) {
		if (s.now >= land)
			s.value[0] = 1;
		unsigned n = step(&s, 100);
		if (n && s.now < start + 1 * MS - 20 * US - GARUDA_POLICY_SPIN_AHEAD_NS)
			before_window++;
		if (s.fired_total)
			break;
		if (garuda_watch_next(&s.w, s.now))
			wakes++;
		else
			spin_steps++;
		advance(&s, s.now < land ? land : UINT64_MAX);
	}
	cr_assert_eq(before_window, 0, "%llu looks before the window",
		     (unsigned long long)before_window);
	cr_assert_eq(wakes, 1, "%llu wakes", (unsigned long long)wakes);
	cr_assert_leq(spin_steps, (20 * US + GARUDA_POLICY_SPIN_AHEAD_NS) / (2 * US) + 1,
		      "%llu spin steps", (unsigned long long)spin_steps);
	cr_assert_leq(s.now - land, 2 * US, "found %llu ns late", (unsigned long long)(s.now - land));
	sim_fini(&s);
}

/* The walk over words with waits (garuda_watch_first_word / next_word) gives each such
 * word once, every owner's, and nothing else: after a session that armed 65,536 waits
 * on 16,384 words has gone, a walk over the two words left takes two steps, not a pass
 * over every id or word ever used (garudad walks it at every command batch when few
 * are armed: note_line). */
Test(watch, the_word_walk_gives_the_words_with_waits_whatever_came_before)
{
	static struct sim s;
	sim_init(&s, true, 16384 + 2);
	uint32_t big = garuda_watch_owner(&s.w, 1);
	for (uint32_t j = 0; j < 65536; j++)
		arm(&s, big, j % 16384, j / 16384 + 1, 0);
	uint32_t small = garuda_watch_owner(&s.w, 2);
	uint32_t x = arm(&s, small, 16384, 1, 0), y = arm(&s, small, 16385, 1, 0);
	unsigned n = 0;
	for (uint32_t wi = garuda_watch_first_word(&s.w); wi != GARUDA_WATCH_NONE; wi = garuda_watch_next_word(&s.w, wi))
		n++;
	cr_assert_eq(n, 16384 + 2);
	for (uint32_t id = 0; id < garuda_watch_capacity(&s.w); id++)
		if (garuda_watch_live(&s.w, id) && id != x && id != y)
			garuda_watch_remove(&s.w, id, s.now);
	garuda_watch_owner_drop(&s.w, 1);
	char why[160];
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	uint64_t seen = 0;
	n = 0;
	for (uint32_t wi = garuda_watch_first_word(&s.w); wi != GARUDA_WATCH_NONE && n < 10;
	     wi = garuda_watch_next_word(&s.w, wi), n++)
		seen |= 1ull << (garuda_watch_word_key(&s.w, wi) - 1 - 16384);
	cr_assert_eq(n, 2, "%u steps", n);
	cr_assert_eq(seen, 3);
	garuda_watch_remove(&s.w, x, s.now);
	garuda_watch_remove(&s.w, y, s.now);
	cr_assert_eq(garuda_watch_first_word(&s.w), GARUDA_WATCH_NONE);
	sim_fini(&s);
}

/* Owners by key: thousands made and dropped in random order (a drop moves the last
 * owner into the hole, and its key's entry with it): every live key finds its owner,
 * every dropped one none, and the index holds exactly the live ones
 * (garuda_watch_check) at every step. */
/* key k (the map's own hashing is test_keymap's) */
static uint64_t owner_key(unsigned k)
{
	return (k % 2) ? (uint64_t)k << 32 : (uint64_t)k * 7919 + 1;
}

Test(watch, owners_are_found_by_key_through_random_makes_and_drops)
{
	enum { KEYS = 3000 };
	static struct sim s;
	static bool live[KEYS];
	/* at most 7, 100 and 1,500 live: a small table's clusters wrap around its end */
	static const unsigned most[] = { 7, 100, 1500 };
	uint64_t x = 88172645463325252ull;
	char why[160];
	for (unsigned m = 0; m < 3; m++) {
		sim_init(&s, false, 1);
		memset(live, 0, sizeof(live));
		unsigned nlive = 0, keys = most[m] * 2;
		if (keys < 64)
			keys = 64; /* many homes, so that clusters cross the small table's end */
		for (unsigned i = 0; i < 40000; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			unsigned k = (unsigned)(x % keys);
			uint64_t key = owner_key(k);
			if (live[k] && (x >> 40) % 3 == 0) {
				garuda_watch_owner_drop(&s.w, key);
				live[k] = false;
				nlive--;
			} else if (!live[k] && nlive < most[m]) {
				cr_assert_neq(garuda_watch_owner(&s.w, key), GARUDA_WATCH_NONE);
				live[k] = true;
				nlive++;
			}
			cr_assert_eq(garuda_watch_owner_find(&s.w, key) != GARUDA_WATCH_NONE, live[k]);
			if (i % 7 == 0)
				cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "step %u: %s", i, why);
		}
		for (unsigned k = 0; k < keys; k++) {
			uint64_t key = owner_key(k);
			uint32_t o = garuda_watch_owner_find(&s.w, key);
			cr_assert_eq(o != GARUDA_WATCH_NONE, live[k], "key %u", k);
			if (live[k])
				cr_assert_eq(garuda_watch_owner(&s.w, key), o, "made once");
		}
		sim_fini(&s);
	}
}

Test(watch, removal_and_owner_drop_leave_nothing)
{
	static struct sim s;
	sim_init(&s, true, 8);
	uint32_t o = garuda_watch_owner(&s.w, 7);
	uint32_t ids[16];
	for (int i = 0; i < 16; i++)
		ids[i] = arm(&s, o, (uint64_t)(i % 8), (uint64_t)(i / 8 + 1), 0);
	cr_assert_eq(garuda_watch_words(&s.w), 8);
	s.now += 3 * MS;
	step(&s, 100); /* some on levels now */
	for (int i = 0; i < 16; i++)
		garuda_watch_remove(&s.w, ids[i], s.now);
	cr_assert_eq(garuda_watch_count(&s.w), 0);
	cr_assert_eq(garuda_watch_words(&s.w), 0);
	cr_assert_eq(garuda_watch_next(&s.w, s.now), UINT64_MAX, "nothing added: park");
	garuda_watch_owner_drop(&s.w, 7);
	struct garuda_watch_owner_stats st;
	cr_assert_not(garuda_watch_owner_stats(&s.w, 7, &st));
	sim_fini(&s);
}

/* the sim's words to the watcher itself (garuda_watch_set_load), as garudad's scanner
 * gives its own */
static uint64_t sim_load(void *ctx, uint64_t key, uint64_t now)
{
	(void)now;
	return ((const struct sim *)ctx)->value[key - 1];
}

/* Targets 2^63 apart each mean something against the word (protocol.md 8) but fall in
 * no one wrapping order: a reached wait must not hide behind an unreached head, on a
 * spin or on a level swept with a load (which reads a word's head alone) */
/* Close targets, a word that jumps half the range: targets 1 and 2, the word at
 * 2^63 + 1. reached(v, 2) holds and reached(v, 1) does not (protocol.md §8): the wait
 * for 2 fires in that look, though its head does not; in a sweep's idle look too. */
Test(watch, a_word_half_the_range_from_its_head_fires_the_reached_waits_behind_it)
{
	for (int with_load = 0; with_load < 2; with_load++) {
		static struct sim s;
		sim_init(&s, true, 1);
		if (with_load)
			garuda_watch_set_load(&s.w, sim_load, &s);
		uint32_t o = garuda_watch_owner(&s.w, 1);
		uint32_t one = arm(&s, o, 0, 1, 0), two = arm(&s, o, 0, 2, 0);
		if (with_load) { /* overdue first, on a level: the sweep looks at its head */
			uint64_t end = s.now + 10 * S;
			while (s.now < end) {
				step(&s, 100);
				advance(&s, end);
			}
			cr_assert(garuda_watch_word_overdue(&s.w, garuda_watch_get(&s.w, one)->word));
		}
		s.value[0] = (1ull << 63) + 1;
		uint64_t end = s.now + 2 * GARUDA_WATCH_PERIOD_MAX_NS;
		while (s.now < end && !s.fired_total) {
			step(&s, 100);
			advance(&s, end);
		}
		cr_assert_eq(s.fired_total, 1, "%s: the reached wait for 2 did not fire",
			     with_load ? "a sweep's look" : "a look");
		cr_assert_eq(s.fire[0].id, two);
		cr_assert(garuda_watch_live(&s.w, one), "the unreached head fired");
		char why[160];
		cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
		sim_fini(&s);
	}
}

Test(watch, a_reached_wait_behind_a_target_half_the_range_away_fires)
{
	static struct sim s;
	sim_init(&s, true, 1);
	garuda_watch_set_load(&s.w, sim_load, &s);
	uint32_t o = garuda_watch_owner(&s.w, 1);
	char why[160];
	s.value[0] = 5;
	uint32_t head = arm(&s, o, 0, 10, 0); /* 5 ahead */
	uint64_t end = s.now + 10 * S; /* overdue, on a level */
	while (s.now < end) {
		step(&s, 100);
		advance(&s, end);
	}
	cr_assert_eq(s.fired_total, 0);
	cr_assert(garuda_watch_word_overdue(&s.w, garuda_watch_get(&s.w, head)->word));
	/* 2^63 - 1 after 10 in wrapping order (so it queues behind it), and 2^63 - 4
	 * before the word's 5: reached */
	uint32_t behind = arm(&s, o, 0, (1ull << 63) + 9, 0);
	uint64_t armed = s.now;
	for (end = s.now + 2 * GARUDA_WATCH_PERIOD_MAX_NS; s.now < end && !s.fired_total;) {
		advance(&s, end);
		step(&s, 100);
		cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	}
	cr_assert_eq(s.fired_total, 1, "a reached wait queued behind an unreached head did not fire");
	cr_assert_eq(s.fire[0].id, behind);
	cr_assert_eq(s.fire[0].find.kind, GARUDA_FIND_UNKNOWN);
	cr_assert_leq(s.now - armed, GARUDA_WATCH_PERIOD_MAX_NS);
	cr_assert(garuda_watch_live(&s.w, head), "the unreached head stays");
	s.value[0] = 10;
	for (end = s.now + 2 * GARUDA_WATCH_PERIOD_MAX_NS; s.now < end && s.fired_total < 2;) {
		advance(&s, end);
		step(&s, 100);
	}
	cr_assert_eq(s.fired_total, 2);
	cr_assert_eq(s.fire[0].id, head);
	cr_assert_eq(garuda_watch_count(&s.w), 0);
	sim_fini(&s);
}

/* what a random run fired, and when (random_run) */
struct fire_rec {
	uint32_t id;
	uint8_t kind;
	bool slept;
	uint64_t now, ns, since;
};

/* the random runs' waits: a fixed-seed generator, the live ids, what was added and
 * removed */
struct rnd {
	uint64_t seed;
	uint32_t *ids;
	unsigned nids, added, removed;
};

static unsigned rnd(struct rnd *r, unsigned n)
{
	r->seed = r->seed * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(r->seed >> 33) % n;
}

static void rnd_add(struct rnd *r, uint32_t id)
{
	r->ids[r->nids++] = id;
	r->added++;
}

/* remove one of the waits at random (a no-op when it already fired) */
static void rnd_remove(struct sim *s, struct rnd *r)
{
	unsigned i = rnd(r, r->nids);
	if (garuda_watch_live(&s->w, r->ids[i])) {
		garuda_watch_remove(&s->w, r->ids[i], s->now);
		r->removed++;
	}
	r->ids[i] = r->ids[--r->nids];
}

/* after operation it: the watcher's invariants hold; the fired ids leave the list */
static void rnd_check(struct sim *s, struct rnd *r, int it)
{
	char why[160];
	cr_assert_eq(garuda_watch_check(&s->w, why, sizeof(why)), 0, "after operation %d: %s", it, why);
	for (unsigned i = 0; i < r->nids;)
		if (!garuda_watch_live(&s->w, r->ids[i]))
			r->ids[i] = r->ids[--r->nids];
		else
			i++;
}

/* at the end: every wait was fired or removed, or is still armed, never lost */
static void rnd_none_lost(struct sim *s, const struct rnd *r)
{
	cr_assert_eq(r->added, s->fired_total + r->removed + garuda_watch_count(&s->w),
		     "%u added, %u fired, %u removed, %u live", r->added, s->fired_total, r->removed,
		     garuda_watch_count(&s->w));
}

/* Random adds, removals, stores, steps, retunes and owner drops (a fixed seed, so the
 * same sequence every run): after every operation the watcher's own invariants hold
 * (garuda_watch_check: every word with waits placed exactly once, the level entries, the
 * heap), no step gives a word twice or a word without waits, and every wait is fired
 * or removed, never lost. With a load, the sweeps look at idle words themselves.
 * Records every fire into rec[] (room: cap) and each owner's counts; returns the
 * number of fires. */
static unsigned random_run(bool with_load, struct fire_rec *rec, unsigned cap,
			   struct garuda_watch_owner_stats st[5])
{
	static struct sim s;
	sim_init(&s, true, 64);
	if (with_load)
		garuda_watch_set_load(&s.w, sim_load, &s);
	static uint32_t ids[4096];
	struct rnd r = { .seed = 0x9e3779b97f4a7c15ull, .ids = ids };
#define RND(n) rnd(&r, (n))
	unsigned nrec = 0;
	for (int it = 0; it < 60000; it++) {
		unsigned op = RND(10);
		if (op < 4 && r.nids < 4000) {
			uint64_t k = RND(64);
			uint32_t o = garuda_watch_owner(&s.w, 1 + RND(5));
			uint64_t ahead = 1 + RND(3), sleep = (uint64_t)RND(3) * MS;
			rnd_add(&r, arm(&s, o, k, s.value[k] + ahead, sleep));
		} else if (op < 5 && r.nids) {
			rnd_remove(&s, &r);
		} else if (op < 6) {
			s.value[RND(64)]++;
		} else if (op < 7 && RND(40) == 0) {
			struct garuda_watch_tuning t = tuning(RND(2));
			t.pol.forever = RND(4) == 0;
			t.pol.early_ns = (uint64_t)RND(3) * 100 * US; /* a lead past level 0's period */
			garuda_watch_retune(&s.w, &t, s.now);
		} else if (op < 7) {
			garuda_watch_owner_drop(&s.w, 1 + RND(5)); /* a no-op while it has words */
		} else {
			unsigned n = garuda_watch_due(&s.w, s.now, s.due, 1 + RND(300));
			for (unsigned i = 0; i < n; i++) {
				uint32_t h = garuda_watch_word_head(&s.w, s.due[i]);
				cr_assert(h != GARUDA_WATCH_NONE && garuda_watch_live(&s.w, h),
					  "step %d gave word %u without waits", it, s.due[i]);
				uint64_t key = garuda_watch_word_key(&s.w, s.due[i]);
				unsigned k = garuda_watch_found(&s.w, s.due[i], s.value[key - 1], s.now,
								s.fire);
				for (unsigned j = 0; j < k && nrec < cap; j++)
					rec[nrec++] = (struct fire_rec){ s.fire[j].id, (uint8_t)s.fire[j].find.kind,
									 s.fire[j].slept, s.now,
									 s.fire[j].find.ns, s.fire[j].since_ns };
				s.fired_total += k;
			}
			uint64_t nx = garuda_watch_next(&s.w, s.now);
			s.now += nx == 0 ? 2 * US : nx == UINT64_MAX ? 1 * US : 1 + RND((unsigned)(nx - s.now));
			if (RND(3) == 0)
				garuda_watch_woke(&s.w, s.now);
		}
		rnd_check(&s, &r, it);
	}
	rnd_none_lost(&s, &r);
#undef RND
	for (unsigned o = 0; o < 5; o++)
		if (!garuda_watch_owner_stats(&s.w, 1 + o, &st[o]))
			st[o] = (struct garuda_watch_owner_stats){ 0 };
	sim_fini(&s);
	return nrec;
}

Test(watch, random_operations_keep_the_invariants)
{
	static struct fire_rec rec[65536];
	struct garuda_watch_owner_stats st[5];
	cr_assert_gt(random_run(false, rec, 65536, st), 1000);
}

/* A sweep that looks at its idle words itself (garudad's: garuda_watch_set_load) does
 * what a sweep that gives every word out does: the same fires at the same times, the
 * same finds (the detection bound from each word's true last look), the same looks
 * charged to the same owners, over the random run. */
Test(watch, a_sweep_with_a_load_fires_and_charges_as_one_without)
{
	static struct fire_rec a[65536], b[65536];
	struct garuda_watch_owner_stats sa[5], sb[5];
	unsigned na = random_run(false, a, 65536, sa), nb = random_run(true, b, 65536, sb);
	cr_assert_eq(na, nb, "%u fires without a load, %u with", na, nb);
	for (unsigned i = 0; i < na; i++)
		cr_assert(a[i].id == b[i].id && a[i].now == b[i].now && a[i].kind == b[i].kind &&
			  a[i].ns == b[i].ns && a[i].since == b[i].since && a[i].slept == b[i].slept,
			  "fire %u: id %u at %llu (kind %u ns %llu since %llu) against id %u at %llu "
			  "(kind %u ns %llu since %llu)", i, a[i].id, (unsigned long long)a[i].now,
			  a[i].kind, (unsigned long long)a[i].ns, (unsigned long long)a[i].since, b[i].id,
			  (unsigned long long)b[i].now, b[i].kind, (unsigned long long)b[i].ns,
			  (unsigned long long)b[i].since);
	for (unsigned o = 0; o < 5; o++)
		cr_assert(sa[o].loads == sb[o].loads && sa[o].fired == sb[o].fired &&
			  sa[o].steps == sb[o].steps, "owner %u: %llu/%llu/%llu against %llu/%llu/%llu",
			  o + 1, (unsigned long long)sa[o].loads, (unsigned long long)sa[o].fired,
			  (unsigned long long)sa[o].steps, (unsigned long long)sb[o].loads,
			  (unsigned long long)sb[o].fired, (unsigned long long)sb[o].steps);
}

/* An idle session's words, armed together, age together: each sweep that moves them on
 * moves every one to the same next level, in the array their level lends it (watch.c,
 * shares): no entry is copied, no new array is made (garudad: no page faulted in).
 * Sweeps here span many steps (300 looks each); the watcher's invariants hold after
 * every step. */
static void idle_session_over(struct sim *s, uint32_t *ids, unsigned n, uint64_t gap)
{
	sim_init(s, true, n);
	garuda_watch_set_load(&s->w, sim_load, s);
	uint32_t o = garuda_watch_owner(&s->w, 1);
	for (unsigned k = 0; k < n; k++, s->now += gap)
		ids[k] = arm(s, o, k, 1, 0);
}

static void idle_session(struct sim *s, uint32_t *ids, unsigned n)
{
	idle_session_over(s, ids, n, 0);
}

static void step_checked(struct sim *s, uint64_t end)
{
	char why[160];
	step(s, 300);
	cr_assert_eq(garuda_watch_check(&s->w, why, sizeof(why)), 0, "at %llu us: %s",
		     (unsigned long long)(s->now / US), why);
	advance(s, end);
}

Test(watch, an_idle_sessions_words_move_on_in_place)
{
	static struct sim s;
	static uint32_t ids[4096];
	idle_session(&s, ids, 4096);
	uint64_t end = s.now + 20 * S;
	while (s.now < end)
		step_checked(&s, end);
	cr_assert_eq(s.fired_total, 0);
	cr_assert_eq(garuda_watch_count(&s.w), 4096);
	cr_assert_eq(s.w.promoted_copied, 0, "%llu entries copied",
		     (unsigned long long)s.w.promoted_copied);
	/* ~2 levels an octave of age: 20 s is ~28 moves from the ladder's top */
	cr_assert_geq(s.w.promoted_in_place, 20 * 4096ull, "%llu moved in place",
		      (unsigned long long)s.w.promoted_in_place);
	cr_assert_eq(s.w.promoted_in_place % 4096, 0, "moves of whole levels");
	sim_fini(&s);
}

/* Stretches (watch.c, level_next): a level's sweeps follow its youngest word's backoff,
 * not the level's period. 4,096 idle words armed over 41 ms, as a tenant arms them
 * (cold: each one's backoff counts from its own arm), looked at by the sweeps' own
 * loads, logged here: from 1 s of age on, every look at a word comes no later than
 * max(backstop, age/32) (at most the top period) after the one before it, age taken at
 * that one; over the ages 10 to 20 s a word is looked at close to the bound's own
 * count, 32 ln 2 = 22.2 times (a level's fixed period, 0.85 of the bound on average:
 * 27); and from 2 s of age on (a backoff past the arms' spread) each level moves on
 * whole, in the array it lends (level_waits_for_young): no entry copied. */
struct look_log {
	struct sim *s;
	uint64_t *dl;      /* each word's deadline: its arm */
	uint64_t *last;    /* each word's last look */
	uint64_t looks;    /* looks at ages [10 s, 20 s) */
	uint64_t worst_over; /* the most a gap exceeded its bound by (0: none) */
};

static uint64_t logged_load(void *ctx, uint64_t key, uint64_t now)
{
	struct look_log *g = ctx;
	uint64_t prev = g->last[key - 1], dl = g->dl[key - 1];
	if (prev >= dl + 1 * S) {
		uint64_t age = prev - dl, bound = age / 32 > 200 * US ? age / 32 : 200 * US;
		bound = bound < GARUDA_WATCH_PERIOD_MAX_NS ? bound : GARUDA_WATCH_PERIOD_MAX_NS;
		if (now - prev > bound && now - prev - bound > g->worst_over)
			g->worst_over = now - prev - bound;
	}
	g->last[key - 1] = now;
	g->looks += now >= dl + 10 * S && now < dl + 20 * S;
	return g->s->value[key - 1];
}

Test(watch, an_idle_sessions_sweeps_follow_its_words_backoff_and_move_on_whole)
{
	static struct sim s;
	static uint32_t ids[4096];
	static uint64_t last[4096], dl[4096];
	uint64_t t0 = 1 * S, gap = 10 * US;
	for (unsigned k = 0; k < 4096; k++)
		dl[k] = t0 + k * gap;
	idle_session_over(&s, ids, 4096, gap);
	struct look_log g = { .s = &s, .dl = dl, .last = last };
	garuda_watch_set_load(&s.w, logged_load, &g);
	uint64_t end = t0 + 21 * S, copied = UINT64_MAX, moved = 0;
	while (s.now < end) {
		if (copied == UINT64_MAX && s.now >= dl[4095] + 2 * S) {
			copied = s.w.promoted_copied;
			moved = s.w.promoted_in_place;
		}
		step_checked(&s, end);
	}
	cr_assert_eq(s.fired_total, 0);
	cr_assert_eq(g.worst_over, 0, "a look came %llu us past its bound",
		     (unsigned long long)(g.worst_over / US));
	double per_word = (double)g.looks / 4096;
	cr_assert(per_word > 20 && per_word < 24.5, "%.2f looks a word from 10 to 20 s of age", per_word);
	cr_assert_eq(s.w.promoted_copied, copied, "%llu entries copied from 2 s of age on",
		     (unsigned long long)(s.w.promoted_copied - copied));
	/* 64 ms .. 524 ms: 7 levels on, each a whole level's move */
	cr_assert_eq(s.w.promoted_in_place - moved, 7 * 4096ull, "%llu moved in place",
		     (unsigned long long)(s.w.promoted_in_place - moved));
	sim_fini(&s);
}

/* A share ends, and nothing is lost, when the lender's sweep leaves a word where it is
 * (here: a store reached it, it is given out) or a word of either side goes */
Test(watch, a_share_ends_when_a_word_is_given_out_and_loses_nothing)
{
	static struct sim s;
	static uint32_t ids[4096];
	idle_session(&s, ids, 4096);
	uint64_t end = s.now + 20 * S, moved = 0;
	/* to the middle of a sweep that moves the words on */
	while (s.now < end && ((moved = s.w.promoted_in_place) == 0 || moved % 4096 == 0))
		step_checked(&s, end);
	cr_assert(moved > 0 && moved < 4000, "no sweep caught halfway (%llu moved)",
		  (unsigned long long)moved);
	garuda_watch_remove(&s.w, ids[0], s.now);    /* moved: the borrower's */
	garuda_watch_remove(&s.w, ids[4000], s.now); /* still the lender's */
	s.value[3000] = 1;                            /* given out when the sweep reaches it */
	char why[160];
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	while (s.now < end)
		step_checked(&s, end);
	cr_assert_eq(s.fired_total, 1, "the stored word fires once");
	cr_assert_not(garuda_watch_live(&s.w, ids[3000]));
	cr_assert_eq(garuda_watch_count(&s.w), 4093);
	cr_assert_gt(s.w.promoted_copied, 0, "the sweep went on copying once the share ended");
	/* the rest move on as before: a store to any of them is still found */
	s.value[4095] = 1;
	for (uint64_t stop = s.now + 2 * GARUDA_WATCH_PERIOD_MAX_NS; s.fired_total < 2 && s.now < stop;)
		step_checked(&s, stop);
	cr_assert_eq(s.fired_total, 2);
	sim_fini(&s);
}

/* Shares under churn: two sessions arm batches of idle words together (so their levels
 * lend and borrow), while random stores, removals, retunes and steps of random length
 * cut sweeps anywhere; the invariants hold after every operation (shares included:
 * garuda_watch_check), and every wait is fired or removed, never lost. */
Test(watch, shares_under_random_operations_keep_the_invariants)
{
	static struct sim s;
	enum { WORDS = 2048 };
	static uint32_t ids[WORDS * 2];
	sim_init(&s, true, WORDS);
	garuda_watch_set_load(&s.w, sim_load, &s);
	struct rnd r = { .seed = 0x2545f4914f6cdd1dull, .ids = ids };
#define RND(n) rnd(&r, (n))
	for (int it = 0; it < 20000; it++) {
		unsigned op = RND(100);
		if (op < 2 && r.nids + 256 <= WORDS * 2) { /* a batch: 256 words, one session, at once */
			uint32_t o = garuda_watch_owner(&s.w, 1 + RND(2));
			unsigned base = RND(WORDS / 256) * 256;
			for (unsigned k = base; k < base + 256; k++)
				rnd_add(&r, arm(&s, o, k, s.value[k] + 1 + RND(2), 0));
		} else if (op < 4 && r.nids) {
			rnd_remove(&s, &r);
		} else if (op < 6) {
			s.value[RND(WORDS)]++;
		} else if (op < 7 && RND(20) == 0) {
			/* another backoff: words move to lower levels too, a share's borrower
			 * into its lender */
			struct garuda_watch_tuning t = tuning(RND(2));
			t.backoff_div = RND(2) ? 8 : 32;
			t.pol.backstop_ns = RND(2) ? 200 * US : 2 * MS;
			garuda_watch_retune(&s.w, &t, s.now);
		} else {
			step(&s, 1 + RND(400));
			uint64_t nx = garuda_watch_next(&s.w, s.now);
			s.now += nx == 0 ? 2 * US : nx == UINT64_MAX ? 50 * MS : nx - s.now;
			garuda_watch_woke(&s.w, s.now);
		}
		rnd_check(&s, &r, it);
	}
#undef RND
	rnd_none_lost(&s, &r);
	cr_assert_gt(s.w.promoted_in_place, 0, "no share in the run");
	cr_assert_gt(s.w.promoted_copied, 0, "no copy in the run");
	sim_fini(&s);
}

/* ---------------------------------------------------------------- the +predict wait */

/* libgaruda's +predict wait (client/wait.c predict_wait) on the simulated clock, call
 * for call: its tuning from the plan, a run of waits from the word's next sequence to
 * seq with the estimator's horizons, then per turn: due and found (finds into the
 * estimator; a successor takes the sleeps as they are now), then next: a spin step
 * (2 us here) or a sleep until the watcher's time, ended early by a readiness
 * `ready_ns` after a store (UINT64_MAX: none, the plan's own sleep), woke_from, and a
 * poke when the word moved meanwhile. It logs what it did, in us from t0:
 * "sleep U" (until), "spin xN", "find T exact|censored R" (the record's residual). */
struct solo {
	struct garuda_watch w;
	struct garuda_estimator est;
	uint32_t owner;
	const uint64_t *stores; /* absolute store times of sequences 1.. */
	unsigned nstores;
	uint64_t t0, now, ready_ns;
	char log[1024];
	unsigned spins;
};

static uint64_t solo_value(const struct solo *o, uint64_t at)
{
	uint64_t v = 0;
	while (v < o->nstores && o->stores[v] <= at)
		v++;
	return v;
}

__attribute__((format(printf, 2, 3))) static void solo_log(struct solo *o, const char *fmt, ...)
{
	size_t n = strlen(o->log);
	if (o->spins) {
		n += (size_t)snprintf(o->log + n, sizeof(o->log) - n, "spin x%u; ", o->spins);
		o->spins = 0;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(o->log + n, sizeof(o->log) - n, fmt, ap);
	va_end(ap);
}

static void solo_init(struct solo *o, const char *plan_text, uint64_t t0)
{
	struct garuda_plan plan;
	cr_assert_eq(garuda_plan_parse(plan_text, &plan, NULL, 0), 0);
	struct garuda_watch_tuning t;
	garuda_watch_tuning_of(&plan, &t);
	memset(o, 0, sizeof(*o));
	garuda_watch_init(&o->w, &t);
	cr_assert_eq(garuda_estimator_init(&o->est, &plan.pred), 0);
	o->owner = garuda_watch_owner(&o->w, 0);
	cr_assert_eq(garuda_watch_reserve(&o->w, 64), 0);
	o->t0 = o->now = t0;
	o->ready_ns = UINT64_MAX;
}

static void solo_wait(struct solo *o, uint64_t seq)
{
	struct garuda_watch *w = &o->w;
	const uint64_t key = 1;
	struct garuda_watch_fire fires[64];
	uint64_t v = solo_value(o, o->now);
	garuda_watch_add_run(w, key, v, seq, o->now, o->now, garuda_estimator_horizon_ns(&o->est),
			     garuda_estimator_exact_horizon_ns(&o->est), o->owner, o->now);
	for (unsigned turn = 0; turn < 100000; turn++) {
		uint32_t wi;
		if (garuda_watch_due(w, o->now, &wi, 1)) {
			v = solo_value(o, o->now);
			unsigned k = garuda_watch_found(w, wi, v, o->now, fires);
			for (unsigned i = 0; i < k; i++) {
				const struct garuda_find *f = &fires[i].find;
				garuda_policy_record(&o->est, f);
				solo_log(o, "find %llu %s %llu; ", (unsigned long long)((o->now - o->t0) / US),
					 f->kind == GARUDA_FIND_EXACT      ? "exact"
					 : f->kind == GARUDA_FIND_LOWER    ? "lower"
					 : f->kind == GARUDA_FIND_CENSORED ? "censored"
									   : "none",
					 (unsigned long long)(f->ns / US));
			}
			if (garuda_reached(v, seq)) {
				cr_assert_eq(garuda_watch_count(w), 0);
				cr_assert_eq(garuda_watch_check(w, o->log, 0), 0);
				return;
			}
			uint32_t head = garuda_watch_first_on(w, key);
			if (k && head != GARUDA_WATCH_NONE)
				garuda_watch_resleep(w, head, garuda_estimator_horizon_ns(&o->est),
						     garuda_estimator_exact_horizon_ns(&o->est), o->now);
			if (k)
				continue;
		}
		uint64_t until = garuda_watch_next(w, o->now);
		if (!until) {
			o->spins++;
			o->now += 2 * US;
			continue;
		}
		cr_assert_neq(until, UINT64_MAX);
		solo_log(o, "sleep %llu; ", (unsigned long long)((until - o->t0) / US));
		uint64_t wake = until;
		for (unsigned i = 0; i < o->nstores && o->ready_ns != UINT64_MAX; i++)
			if (o->stores[i] > o->now && o->stores[i] + o->ready_ns < wake)
				wake = o->stores[i] + o->ready_ns; /* a readiness ends it */
		o->now = wake;
		garuda_watch_woke_from(w, until, o->now);
		if (solo_value(o, o->now) != v)
			garuda_watch_poke(w, key, o->now);
	}
	cr_assert_fail("the wait never ended: %s", o->log);
}

#define DEFAULT_PLAN \
	"flag:park_us=1000,backstop_us=200+predict:margin_us=100,min_sleep_us=20," \
	"max_sleep_us=1000000,window=16"

Test(watch, predict_wait_sleeps_to_its_deadline_then_spins_in_its_window)
{
	static struct solo o;
	solo_init(&o, DEFAULT_PLAN, 1 * S);
	for (int i = 0; i < 4; i++)
		garuda_estimator_record_exact_ns(&o.est, 2 * MS); /* a 2 ms kernel, learnt */
	uint64_t stores[] = { 1 * S + 2 * MS };
	o.stores = stores;
	o.nstores = 1;
	solo_wait(&o, 1);
	/* one sleep to the window (2 ms less the exact margin: four equal records, so its
	 * 20 us floor, not the 100 us margin: estimator.h), the window's 2 us spin steps
	 * up to the store, found by the spin: exact */
	cr_assert_str_eq(o.log, "sleep 1980; spin x10; find 2000 exact 2000; ");
	garuda_watch_fini(&o.w);
}

Test(watch, predict_wait_in_stream_order_learns_one_kernel_per_sequence)
{
	/* three sequences queued on the stream at t0, one wait for the last: each is
	 * waited for with its own clock, from its predecessor's find, so each records one
	 * 2 ms kernel (a wait from the call would record 6 ms) */
	static struct solo o;
	solo_init(&o, DEFAULT_PLAN, 1 * S);
	for (int i = 0; i < 4; i++)
		garuda_estimator_record_exact_ns(&o.est, 2 * MS);
	uint64_t stores[] = { 1 * S + 2 * MS, 1 * S + 4 * MS, 1 * S + 6 * MS };
	o.stores = stores;
	o.nstores = 3;
	solo_wait(&o, 3);
	cr_assert_str_eq(o.log, "sleep 1980; spin x10; find 2000 exact 2000; "
				"sleep 3980; spin x10; find 4000 exact 2000; "
				"sleep 5980; spin x10; find 6000 exact 2000; ");
	cr_assert_eq(o.est.exact, 4 + 3);
	uint64_t pred = 0;
	cr_assert(garuda_estimator_prediction_ns(&o.est, &pred));
	cr_assert_eq(pred, 2 * MS);
	garuda_watch_fini(&o.w);
}

Test(watch, predict_wait_cold_then_a_readiness_ends_its_sleep)
{
	/* cold: no prediction, the window from the call (park_us, 1 ms of spin), then the
	 * backoff: 1 ms overdue at the window's end, its level's period is the largest
	 * of 32, 48, 64, 96, 128, 192, ... us not above max(min(backstop_us, t/2), t/32)
	 * = 200 us: 192 us; the
	 * store at 1.5 ms is found by a look after a sleep past the window: its lower
	 * bound, the look before */
	static struct solo o;
	solo_init(&o, DEFAULT_PLAN, 1 * S);
	uint64_t cold[] = { 1 * S + 1500 * US };
	o.stores = cold;
	o.nstores = 1;
	solo_wait(&o, 1);
	cr_assert_str_eq(o.log, "spin x500; sleep 1184; sleep 1376; sleep 1568; find 1568 lower 1376; ");
	/* warm (a 1.376 ms prediction, 1.276 ms of sleep): a kernel done at 0.5 ms, whose readiness (50 us
	 * after the store) ends the sleep toward the deadline: looked at at once, a find
	 * after a sleep, censored */
	o.t0 = o.now = 2 * S;
	o.ready_ns = 50 * US;
	o.log[0] = '\0';
	uint64_t early[] = { 1 * S + 1500 * US, 2 * S + 500 * US };
	o.stores = early;
	o.nstores = 2;
	solo_wait(&o, 2);
	cr_assert_str_eq(o.log, "sleep 1276; find 550 censored 550; ");
	garuda_watch_fini(&o.w);
}

/* the owner's words as their numbers (key - 1), in its list's order */
static unsigned owner_words(const struct sim *s, uint32_t o, uint64_t *out, unsigned cap)
{
	unsigned n = 0;
	for (uint32_t wi = garuda_watch_owner_first_word(&s->w, o); wi != GARUDA_WATCH_NONE;
	     wi = garuda_watch_owner_next_word(&s->w, wi)) {
		cr_assert_lt(n, cap);
		out[n++] = garuda_watch_word_key(&s->w, wi) - 1;
	}
	cr_assert_eq(n, garuda_watch_owner_words(&s->w, o));
	return n;
}

Test(watch, an_owners_words_are_oldest_first_and_a_rotated_one_goes_last)
{
	struct sim s;
	sim_init(&s, false, 64);
	uint32_t o = garuda_watch_owner(&s.w, 1), other = garuda_watch_owner(&s.w, 2);
	uint32_t id[8];
	for (unsigned k = 0; k < 8; k++)
		id[k] = arm(&s, k % 2 ? other : o, k, 1, 0); /* o: 0 2 4 6; other: 1 3 5 7 */
	uint64_t v[16];
	cr_assert_eq(owner_words(&s, o, v, 16), 4);
	cr_assert(v[0] == 0 && v[1] == 2 && v[2] == 4 && v[3] == 6, "new words go last: %lu %lu %lu %lu",
		  (unsigned long)v[0], (unsigned long)v[1], (unsigned long)v[2], (unsigned long)v[3]);
	/* a walk passes 0 and 2 and keeps them; meanwhile 4 goes, 8 comes, 6 gets a second wait */
	garuda_watch_owner_rotate(&s.w, garuda_watch_owner_first_word(&s.w, o));
	garuda_watch_owner_rotate(&s.w, garuda_watch_owner_first_word(&s.w, o));
	garuda_watch_remove(&s.w, id[4], s.now);
	arm(&s, o, 8, 1, 0);
	uint32_t second6 = arm(&s, o, 6, 2, 0);
	cr_assert_eq(owner_words(&s, o, v, 16), 4);
	cr_assert(v[0] == 6 && v[1] == 0 && v[2] == 2 && v[3] == 8,
		  "the words not passed first, then the passed, then the new: %lu %lu %lu %lu",
		  (unsigned long)v[0], (unsigned long)v[1], (unsigned long)v[2], (unsigned long)v[3]);
	/* the first goes last; four rotations leave the order; the other owner is untouched */
	garuda_watch_owner_rotate(&s.w, garuda_watch_owner_first_word(&s.w, o));
	cr_assert_eq(owner_words(&s, o, v, 16), 4);
	cr_assert(v[0] == 0 && v[3] == 6);
	for (unsigned k = 0; k < 4; k++)
		garuda_watch_owner_rotate(&s.w, garuda_watch_owner_first_word(&s.w, o));
	cr_assert_eq(owner_words(&s, o, v, 16), 4);
	cr_assert(v[0] == 0 && v[1] == 2 && v[2] == 8 && v[3] == 6, "four rotations: the same order");
	cr_assert_eq(owner_words(&s, other, v, 16), 4);
	cr_assert(v[0] == 1 && v[1] == 3 && v[2] == 5 && v[3] == 7);
	char why[160];
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	/* the last word's removal moves the list's end: a new word goes after the rest */
	garuda_watch_remove(&s.w, id[6], s.now);
	garuda_watch_remove(&s.w, second6, s.now);
	arm(&s, o, 10, 1, 0);
	cr_assert_eq(owner_words(&s, o, v, 16), 4);
	cr_assert(v[0] == 0 && v[1] == 2 && v[2] == 8 && v[3] == 10);
	cr_assert_eq(garuda_watch_check(&s.w, why, sizeof(why)), 0, "%s", why);
	sim_fini(&s);
}
