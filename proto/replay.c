/* replay.c — a plan over a trace on a simulated clock (replay.h). The loop mirrors
 * daemon/scanner.c's scanner_main(): take arms, pass, then the plan's look. */
#include "replay.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "estimator.h"
#include "policy.h"

/* garudad's +predict sleeps end early by the mean timed-wake lateness, at most this */
#define WAKE_LATE_MAX_NS 200000ull

struct garuda_replay_cost garuda_replay_default_cost(void)
{
	/* docs/plans.md: a spin step ~1.6 us (0.4 us of pauses and a ~1.2 us
	 * sched_yield), a timed futex wait ~15 us of CPU, timer wakes tens of us late */
	return (struct garuda_replay_cost){ .pass_ns = 200,
					    .spin_ns = 1600,
					    .wake_late_ns = 30000,
					    .wake_cpu_ns = 15000,
					    .arm_wake_ns = 10000 };
}

struct sim_wait {
	struct garuda_policy_wait w;
	size_t row;
	size_t point;
};

struct sim {
	const struct garuda_replay_row *rows;
	size_t n;
	size_t *by_arm;		  /* row indices in arm order */
	size_t *word_of;	  /* row -> dense word */
	uint64_t *target_of;	  /* row -> its sequence on its word */
	size_t *point_of;	  /* row -> estimator */
	uint64_t **stores;	  /* per word: its store times, ascending */
	size_t *nstores, *cursor; /* per word: count, stores <= the clock so far */
	size_t nwords, npoints;
	struct garuda_estimator *est;
	struct sim_wait *waits;
	struct garuda_policy_wait **wv;
	uint64_t *scratch;
	size_t nwaits;
	uint64_t *lateness;
	size_t *finds; /* per point: finds so far (the first GARUDA_REPLAY_WARMUP not counted) */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static const struct garuda_replay_row *sort_rows;
static int cmp_by_arm(const void *a, const void *b)
{
	const struct garuda_replay_row *x = &sort_rows[*(const size_t *)a],
				       *y = &sort_rows[*(const size_t *)b];
	if (x->arm_ns != y->arm_ns)
		return x->arm_ns < y->arm_ns ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* dense ids: the index of key in keys[0..*nkeys), appended when new */
static size_t dense(uint64_t *keys, size_t *nkeys, uint64_t key)
{
	for (size_t i = 0; i < *nkeys; i++)
		if (keys[i] == key)
			return i;
	keys[*nkeys] = key;
	return (*nkeys)++;
}

static void sim_free(struct sim *s)
{
	for (size_t i = 0; s->stores && i < s->nwords; i++)
		free(s->stores[i]);
	free(s->stores);
	free(s->by_arm);
	free(s->word_of);
	free(s->target_of);
	free(s->point_of);
	free(s->nstores);
	free(s->cursor);
	free(s->est);
	free(s->waits);
	free(s->wv);
	free(s->scratch);
	free(s->lateness);
	free(s->finds);
}

static int sim_init(struct sim *s, const struct garuda_plan *plan,
		    const struct garuda_replay_row *rows, size_t n)
{
	*s = (struct sim){ .rows = rows, .n = n };
	uint64_t *wkeys = calloc(n, sizeof(*wkeys)), *pkeys = calloc(n, sizeof(*pkeys));
	s->by_arm = calloc(n, sizeof(size_t));
	s->word_of = calloc(n, sizeof(size_t));
	s->target_of = calloc(n, sizeof(uint64_t));
	s->point_of = calloc(n, sizeof(size_t));
	s->waits = calloc(n, sizeof(*s->waits));
	s->wv = calloc(n, sizeof(*s->wv));
	s->scratch = calloc(garuda_policy_order_scratch((unsigned)n), sizeof(uint64_t));
	s->lateness = calloc(n, sizeof(uint64_t));
	int r = -ENOMEM;
	if (!wkeys || !pkeys || !s->by_arm || !s->word_of || !s->target_of || !s->point_of ||
	    !s->waits || !s->wv || !s->scratch || !s->lateness)
		goto out;
	for (size_t i = 0; i < n; i++) {
		s->by_arm[i] = i;
		s->word_of[i] = dense(wkeys, &s->nwords, rows[i].word);
		uint64_t pk = rows[i].point ? 1ull << 63 | rows[i].point : s->word_of[i];
		s->point_of[i] = dense(pkeys, &s->npoints, pk);
	}
	s->stores = calloc(s->nwords, sizeof(*s->stores));
	s->nstores = calloc(s->nwords, sizeof(size_t));
	s->cursor = calloc(s->nwords, sizeof(size_t));
	s->est = calloc(s->npoints, sizeof(*s->est));
	s->finds = calloc(s->npoints, sizeof(size_t));
	if (!s->stores || !s->nstores || !s->cursor || !s->est || !s->finds)
		goto out;
	for (size_t i = 0; i < n; i++)
		s->nstores[s->word_of[i]]++;
	for (size_t w = 0; w < s->nwords; w++)
		if (!(s->stores[w] = calloc(s->nstores[w], sizeof(uint64_t))))
			goto out;
	memset(s->cursor, 0, s->nwords * sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		s->stores[s->word_of[i]][s->cursor[s->word_of[i]]++] = rows[i].store_ns;
	for (size_t w = 0; w < s->nwords; w++)
		qsort(s->stores[w], s->nstores[w], sizeof(uint64_t), cmp_u64);
	memset(s->cursor, 0, s->nwords * sizeof(size_t));
	/* a row's sequence: its rank among its word's stores (equal stores: in row order) */
	for (size_t i = 0; i < n; i++) {
		size_t w = s->word_of[i], k = 0;
		while (k < s->nstores[w] && s->stores[w][k] < rows[i].store_ns)
			k++;
		for (size_t j = 0; j < i; j++)
			k += s->word_of[j] == w && rows[j].store_ns == rows[i].store_ns;
		s->target_of[i] = k + 1;
	}
	for (size_t p = 0; p < s->npoints; p++)
		if (plan->predict)
			garuda_estimator_init(&s->est[p], &plan->pred);
	sort_rows = rows;
	qsort(s->by_arm, n, sizeof(size_t), cmp_by_arm);
	r = 0;
out:
	free(wkeys);
	free(pkeys);
	return r;
}

/* the word's value at t: how many of its stores landed by then (t never goes back) */
static uint64_t word_at(struct sim *s, size_t w, uint64_t t)
{
	while (s->cursor[w] < s->nstores[w] && s->stores[w][s->cursor[w]] <= t)
		s->cursor[w]++;
	return s->cursor[w];
}

static void order(struct sim *s, uint64_t landing)
{
	for (size_t i = 0; i < s->nwaits; i++)
		s->wv[i] = &s->waits[i].w;
	if (s->nwaits)
		garuda_policy_order(s->wv, (unsigned)s->nwaits, landing, s->scratch);
}

static uint64_t sleep_of(const struct sim *s, const struct garuda_plan *plan, size_t row,
			 bool exact)
{
	if (!plan->predict)
		return 0;
	const struct garuda_estimator *e = &s->est[s->point_of[row]];
	return exact ? garuda_estimator_exact_sleep_ns(e) : garuda_estimator_sleep_ns(e);
}

static void record(struct sim *s, struct garuda_replay_result *out, size_t point,
		   struct garuda_find f, bool predict)
{
	switch (f.kind) {
	case GARUDA_FIND_EXACT:
		out->exact++;
		if (predict)
			garuda_estimator_record_exact_ns(&s->est[point], f.ns);
		break;
	case GARUDA_FIND_CENSORED:
		out->censored++;
		if (predict)
			garuda_estimator_record_censored_ns(&s->est[point], f.ns);
		break;
	case GARUDA_FIND_LATE:
		out->late++;
		break;
	default:
		out->unknown++;
		break;
	}
}

int garuda_replay_run(const struct garuda_plan *plan, const struct garuda_replay_row *rows,
		      size_t n, const struct garuda_replay_cost *cost,
		      struct garuda_replay_result *out)
{
	if (!n || garuda_plan_check(plan, NULL, 0) < 0 || plan->kind == GARUDA_PLAN_BLOCK)
		return -EINVAL;
	struct sim s;
	int r = sim_init(&s, plan, rows, n);
	if (r) {
		sim_free(&s);
		return r;
	}
	*out = (struct garuda_replay_result){ 0 };
	struct garuda_policy_tuning t = {
		.spin_ns = plan->kind == GARUDA_PLAN_FLAG ? plan->flag.park_us * 1000 : 0,
		.forever = plan->kind == GARUDA_PLAN_POLL,
		.max_step_ns = plan->kind == GARUDA_PLAN_FLAG ? plan->flag.backstop_us * 1000 : 0,
	};
	uint64_t now = rows[s.by_arm[0]].arm_ns, first = now;
	uint64_t prev_pass = now, last_active = now, ladder = 0, wake_late = 0;
	bool slept = true;
	size_t next_arm = 0, done = 0;
	while (done < n) {
		bool was_idle = s.nwaits == 0, took = false;
		for (; next_arm < n && rows[s.by_arm[next_arm]].arm_ns <= now; next_arm++) {
			size_t row = s.by_arm[next_arm];
			struct sim_wait *w = &s.waits[s.nwaits++];
			w->row = row;
			w->point = s.point_of[row];
			garuda_policy_wait_init(
				&w->w, s.word_of[row], s.target_of[row], rows[row].arm_ns, now,
				sleep_of(&s, plan, row, false), sleep_of(&s, plan, row, true));
			took = true;
		}
		if (took) {
			order(&s, now);
			ladder = 0;
			if (was_idle)
				last_active = now;
		}
		if (!s.nwaits) { /* park until the next arm */
			now = rows[s.by_arm[next_arm]].arm_ns > now
				      ? rows[s.by_arm[next_arm]].arm_ns
				      : now;
			out->busy_ns += cost->wake_cpu_ns;
			prev_pass = last_active = now;
			ladder = 0;
			slept = true;
			continue;
		}
		uint64_t start = now;
		now += cost->pass_ns;
		out->busy_ns += cost->pass_ns;
		size_t fired = 0;
		for (size_t i = 0; i < s.nwaits;) {
			struct sim_wait *w = &s.waits[i];
			if (word_at(&s, s.word_of[w->row], start) < s.target_of[w->row]) {
				i++;
				continue;
			}
			t.early_ns = wake_late < WAKE_LATE_MAX_NS ? wake_late : WAKE_LATE_MAX_NS;
			record(&s, out, w->point,
			       garuda_policy_find(&w->w, &t, now, prev_pass, slept), plan->predict);
			if (s.finds[w->point]++ >= GARUDA_REPLAY_WARMUP)
				s.lateness[out->counted++] = now - rows[w->row].store_ns;
			done++;
			s.waits[i] = s.waits[--s.nwaits];
			fired++;
		}
		prev_pass = start;
		slept = false;
		if (fired) {
			order(&s, now);
			last_active = now;
			ladder = 0;
			continue;
		}
		t.early_ns = wake_late < WAKE_LATE_MAX_NS ? wake_late : WAKE_LATE_MAX_NS;
		uint64_t until;
		if (plan->predict) {
			until = garuda_policy_next(&s.waits[0].w, sizeof(s.waits[0]), (unsigned)s.nwaits, &t, now,
						   &ladder);
		} else {
			until = garuda_policy_ladder(&t, now, last_active, &ladder);
		}
		if (!until) {
			now += cost->spin_ns;
			out->busy_ns += cost->spin_ns;
			out->spins++;
			continue;
		}
		/* sleep; the next arm wakes it when its deadline is earlier (every arm,
		 * without +predict) */
		uint64_t wake = (until > now ? until : now) + cost->wake_late_ns;
		bool timed = true;
		if (next_arm < n) {
			size_t row = s.by_arm[next_arm];
			uint64_t at = rows[row].arm_ns + cost->arm_wake_ns;
			uint64_t dl = rows[row].arm_ns + sleep_of(&s, plan, row, false);
			if (at < wake && (!plan->predict || dl < until)) {
				wake = at;
				timed = false;
			}
		}
		if (timed && plan->predict)
			wake_late = wake_late - wake_late / 8 + (wake - until) / 8;
		out->busy_ns += cost->wake_cpu_ns;
		out->sleeps++;
		now = wake > now ? wake : now;
		slept = true;
	}
	out->completions = n;
	out->span_ns = now - first;
	size_t c = out->counted;
	qsort(s.lateness, c, sizeof(uint64_t), cmp_u64);
	if (c) {
		out->late_p50_ns = s.lateness[(c - 1) * 50 / 100];
		out->late_p90_ns = s.lateness[(c - 1) * 90 / 100];
		out->late_p99_ns = s.lateness[(c - 1) * 99 / 100];
		out->late_max_ns = s.lateness[c - 1];
	}
	sim_free(&s);
	return 0;
}
