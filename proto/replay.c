/* replay.c — a plan over a trace on a simulated clock (replay.h): proto/watch driven
 * as daemon/scanner.c's scanner_main() and scan_step() drive it (take arms, park or
 * step, then spin or sleep until the watcher's time). */
#include "replay.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "estimator.h"
#include "policy.h"
#include "seq.h"
#include "watch.h"

/* daemon/scanner.c's SCANNER_STEP_MAX (512): words looked at per step, at most */
#define REPLAY_STEP_MAX 512u

struct garuda_replay_cost garuda_replay_default_cost(void)
{
	/* docs/plans.md, "Replaying a trace": a step ~150 ns and ~20 ns per word looked at
	 * (the watcher driven as scan_step does, -O2, this machine); a spin step ~1.6 us
	 * (0.4 us of pauses and a ~1.2 us sched_yield); a timed futex wait ~15 us of CPU,
	 * timer wakes tens of us late; an ARM ~5 us of garudad's CPU (a receive and a
	 * post, ~1.2 us a syscall here) and a fire ~2 us (its eventfd write) */
	return (struct garuda_replay_cost){ .step_ns = 150,
					    .look_ns = 20,
					    .spin_ns = 1600,
					    .wake_late_ns = 30000,
					    .wake_cpu_ns = 15000,
					    .arm_wake_ns = 10000,
					    .arm_cpu_ns = 5000,
					    .fire_cpu_ns = 2000 };
}

/* garuda_replay_cost_parse()'s keys: each a field of struct garuda_replay_cost */
static const struct {
	const char *key;
	size_t off;
} cost_keys[] = {
#define COST_KEY_(f) { #f, offsetof(struct garuda_replay_cost, f) }
	COST_KEY_(step_ns),	      COST_KEY_(look_ns),	   COST_KEY_(spin_ns),
	COST_KEY_(wake_late_ns),      COST_KEY_(wake_cpu_ns),	   COST_KEY_(long_sleep_ns),
	COST_KEY_(wake_late_long_ns), COST_KEY_(wake_cpu_long_ns), COST_KEY_(wake_late_p90_ns),
	COST_KEY_(wake_late_long_p90_ns), COST_KEY_(arm_wake_ns), COST_KEY_(arm_cpu_ns),
	COST_KEY_(fire_cpu_ns),	      COST_KEY_(spin_wall_ns),
#undef COST_KEY_
};

int garuda_replay_cost_parse(struct garuda_replay_cost *cost, const char *text, char *msg, size_t len)
{
	struct garuda_replay_cost c = *cost;
	const char *p = text;
	if (msg && len)
		msg[0] = '\0';
	while (*p) {
		const char *eq = strchr(p, '='), *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		if (!eq || eq > end) {
			if (msg && len)
				snprintf(msg, len, "'%.*s': want KEY=NS", (int)(end - p), p);
			return -EINVAL;
		}
		size_t k = 0, nk = sizeof(cost_keys) / sizeof(cost_keys[0]);
		while (k < nk && !(strlen(cost_keys[k].key) == (size_t)(eq - p) &&
				   memcmp(cost_keys[k].key, p, (size_t)(eq - p)) == 0))
			k++;
		if (k == nk) {
			if (msg && len)
				snprintf(msg, len, "'%.*s': no such cost", (int)(eq - p), p);
			return -EINVAL;
		}
		uint64_t v = 0;
		const char *d = eq + 1;
		if (d == end) {
			if (msg && len)
				snprintf(msg, len, "%s: no value", cost_keys[k].key);
			return -EINVAL;
		}
		for (; d < end; d++) {
			unsigned dig = (unsigned)(*d - '0');
			if (*d < '0' || *d > '9' || v > (UINT64_MAX - dig) / 10) {
				if (msg && len)
					snprintf(msg, len, "%s: '%.*s' is not nanoseconds", cost_keys[k].key,
						 (int)(end - eq - 1), eq + 1);
				return -EINVAL;
			}
			v = v * 10 + dig;
		}
		memcpy((char *)&c + cost_keys[k].off, &v, sizeof(v));
		if (*end && !end[1]) { /* KEY=NS[,KEY=NS]...: no ',' at the end */
			if (msg && len)
				snprintf(msg, len, "a trailing ','");
			return -EINVAL;
		}
		p = *end ? end + 1 : end;
	}
	*cost = c;
	return 0;
}

/* Why the replay cannot simulate row r (replay.h), or NULL */
static const char *out_of_range(const struct garuda_replay_row *r)
{
	if (r->arm_ns > GARUDA_REPLAY_TIME_MAX_NS || r->store_ns > GARUDA_REPLAY_TIME_MAX_NS)
		return "a time past 2^62 ns (146 years)";
	if (r->store_ns > r->arm_ns && r->store_ns - r->arm_ns > GARUDA_REPLAY_WAIT_MAX_NS)
		return "stored more than an hour after its arm";
	return NULL;
}

int garuda_replay_rows_check(const struct garuda_replay_row *rows, size_t n, char *msg, size_t len)
{
	if (msg && len)
		msg[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		const char *why = out_of_range(&rows[i]);
		if (why) {
			if (msg && len)
				snprintf(msg, len, "row %zu (arm_ns %llu, store_ns %llu): %s", i,
					 (unsigned long long)rows[i].arm_ns,
					 (unsigned long long)rows[i].store_ns, why);
			return -ERANGE;
		}
	}
	return 0;
}

struct sim {
	const struct garuda_replay_row *rows;
	size_t n;
	size_t *by_arm;	     /* row indices in arm order */
	size_t *word_of;     /* row -> dense word */
	uint64_t *target_of; /* row -> its sequence on its word */
	size_t *point_of;    /* row -> estimator */
	uint64_t *stores;    /* every store time, by word: word w's at [first[w], first[w+1]), ascending */
	size_t *first;	     /* [nwords + 1] */
	size_t *cursor;	     /* per word: how many of its stores landed by the clock so far */
	size_t nwords, npoints;
	struct garuda_estimator *est;
	size_t *pay; /* the watcher's wait id -> its row */
	uint32_t paycap;
	uint32_t *due;			 /* a step's due words [REPLAY_STEP_MAX] */
	struct garuda_watch_fire *fires; /* one word's fires [n] */
	uint64_t *lateness;
	size_t *finds; /* per point: finds so far (the first GARUDA_REPLAY_WARMUP not counted) */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* a + b x c, saturating */
static uint64_t add_mul_sat(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t p;
	return __builtin_mul_overflow(b, c, &p) ? UINT64_MAX : add_sat(a, p);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* log2(x) in 1/256ths (x >= 1): the integer part from the top bit, the fraction linear
 * in the next 8 bits (within 0.09 of log2) */
static uint64_t log2_q8(uint64_t x)
{
	unsigned top = 63u - (unsigned)__builtin_clzll(x | 1);
	uint64_t frac = top >= 8 ? (x >> (top - 8)) & 0xff : (x << (8 - top)) & 0xff;
	return (uint64_t)top * 256 + frac;
}

/* A sleep of len's figure, short_v at GARUDA_REPLAY_SHORT_SLEEP_NS and below, long_v at
 * cost->long_sleep_ns and above, on the line between them over log2(len) (replay.h) */
static uint64_t by_length(const struct garuda_replay_cost *cost, uint64_t len, uint64_t short_v, uint64_t long_v)
{
	uint64_t lo = GARUDA_REPLAY_SHORT_SLEEP_NS, hi = cost->long_sleep_ns;
	if (hi <= lo || len <= lo)
		return short_v;
	if (len >= hi)
		return long_v;
	uint64_t at = log2_q8(len) - log2_q8(lo), span = log2_q8(hi) - log2_q8(lo);
	if (!span) /* hi within log2_q8's 1/256 of lo: no line between them (replay.h) */
		return short_v;
	if (at > span)
		at = span;
	return long_v >= short_v ? short_v + (long_v - short_v) * at / span
				 : short_v - (short_v - long_v) * at / span;
}

/* A timed wake's lateness for a sleep of len (garuda_replay_cost: the figure, or a
 * draw from the spread around it when the p90s are set); *rng is the run's state */
static uint64_t wake_late(const struct garuda_replay_cost *cost, uint64_t len, uint64_t *rng)
{
	uint64_t m = by_length(cost, len, cost->wake_late_ns, cost->wake_late_long_ns);
	if (!cost->wake_late_p90_ns && !cost->wake_late_long_p90_ns)
		return m;
	uint64_t q = by_length(cost, len, cost->wake_late_p90_ns ? cost->wake_late_p90_ns : cost->wake_late_ns,
			       cost->wake_late_long_p90_ns ? cost->wake_late_long_p90_ns : cost->wake_late_long_ns);
	uint64_t s = q > m ? q - m : 0, lo = m > s / 4 ? m - s / 4 : 0;
	*rng ^= *rng << 13; /* xorshift64 */
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	uint64_t u = *rng % 10000; /* in 1/10,000ths */
	if (u < 5000)
		return lo + (m - lo) * u / 5000;
	if (u < 9000)
		return m + s * (u - 5000) / 4000;
	return q + 2 * s * (u - 9000) / 1000;
}

/* the rows being sorted (qsort takes no context; one per thread, so runs on several
 * threads do not mix) */
static _Thread_local const struct garuda_replay_row *sort_rows;

static int cmp_by_arm(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct garuda_replay_row *x = &sort_rows[i], *y = &sort_rows[j];
	if (x->arm_ns != y->arm_ns)
		return x->arm_ns < y->arm_ns ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* by word, then store, then row (equal stores: in row order) */
static int cmp_by_store(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct garuda_replay_row *x = &sort_rows[i], *y = &sort_rows[j];
	if (x->word != y->word)
		return x->word < y->word ? -1 : 1;
	if (x->store_ns != y->store_ns)
		return x->store_ns < y->store_ns ? -1 : 1;
	return i < j ? -1 : i > j;
}

/* by word, then point, then row */
static int cmp_by_point(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct garuda_replay_row *x = &sort_rows[i], *y = &sort_rows[j];
	if (x->word != y->word)
		return x->word < y->word ? -1 : 1;
	if (x->point != y->point)
		return x->point < y->point ? -1 : 1;
	return i < j ? -1 : i > j;
}

static void sim_free(struct sim *s)
{
	free(s->by_arm);
	free(s->word_of);
	free(s->target_of);
	free(s->point_of);
	free(s->stores);
	free(s->first);
	free(s->cursor);
	free(s->est);
	free(s->pay);
	free(s->due);
	free(s->fires);
	free(s->lateness);
	free(s->finds);
}

static int sim_init(struct sim *s, const struct garuda_plan *plan,
		    const struct garuda_replay_row *rows, size_t n)
{
	*s = (struct sim){ .rows = rows, .n = n };
	size_t nnamed = 0, *by_store = calloc(n, sizeof(size_t)),
	       *by_point = calloc(n, sizeof(size_t));
	s->by_arm = calloc(n, sizeof(size_t));
	s->word_of = calloc(n, sizeof(size_t));
	s->target_of = calloc(n, sizeof(uint64_t));
	s->point_of = calloc(n, sizeof(size_t));
	s->stores = calloc(n, sizeof(uint64_t));
	s->first = calloc(n + 1, sizeof(size_t));
	s->due = calloc(REPLAY_STEP_MAX, sizeof(*s->due));
	s->fires = calloc(n, sizeof(*s->fires));
	s->lateness = calloc(n, sizeof(uint64_t));
	int r = -ENOMEM;
	if (!by_point || !by_store || !s->by_arm || !s->word_of || !s->target_of || !s->point_of ||
	    !s->stores || !s->first || !s->due || !s->fires || !s->lateness)
		goto out;
	/* words and sequences: a row's sequence is its rank among its word's stores */
	for (size_t i = 0; i < n; i++)
		by_store[i] = s->by_arm[i] = i;
	sort_rows = rows;
	qsort(by_store, n, sizeof(size_t), cmp_by_store);
	qsort(s->by_arm, n, sizeof(size_t), cmp_by_arm);
	uint64_t rank = 0;
	for (size_t k = 0; k < n; k++) {
		size_t i = by_store[k];
		if (k == 0 || rows[i].word != rows[by_store[k - 1]].word) {
			s->first[s->nwords++] = k;
			rank = 0;
		}
		s->word_of[i] = s->nwords - 1;
		s->target_of[i] = ++rank;
		s->stores[k] = rows[i].store_ns;
	}
	s->first[s->nwords] = n;
	/* points: each word's own, then the named ones, per word (each word is a session
	 * of its own, and garudad's named points are a session's), numbered in (word,
	 * point) order: a sort, not a search per row (200,000 rows of distinct points took
	 * 45 s) */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		s->point_of[i] = s->word_of[i];
		if (rows[i].point)
			by_point[m++] = i;
	}
	qsort(by_point, m, sizeof(size_t), cmp_by_point);
	for (size_t k = 0; k < m; k++) {
		size_t i = by_point[k], h = k ? by_point[k - 1] : 0;
		if (k == 0 || rows[i].word != rows[h].word || rows[i].point != rows[h].point)
			nnamed++;
		s->point_of[i] = s->nwords + nnamed - 1;
	}
	s->npoints = s->nwords + nnamed;
	s->cursor = calloc(s->nwords, sizeof(size_t));
	s->est = calloc(s->npoints, sizeof(*s->est));
	s->finds = calloc(s->npoints, sizeof(size_t));
	if (!s->cursor || !s->est || !s->finds)
		goto out;
	for (size_t w = 0; w < s->nwords; w++)
		s->cursor[w] = s->first[w];
	for (size_t p = 0; p < s->npoints && plan->predict; p++)
		garuda_estimator_init(&s->est[p], &plan->pred);
	r = 0;
out:
	free(by_point);
	free(by_store);
	return r;
}

/* The steady window (replay.h): false when it is empty. */
static bool steady_window(const struct sim *s, uint64_t *from, uint64_t *to)
{
	size_t *seen = calloc(s->nwords, sizeof(size_t));
	if (!seen)
		return false;
	uint64_t lo = 0, hi = UINT64_MAX;
	for (size_t w = 0; w < s->nwords; w++)
		if (s->first[w + 1] - s->first[w] <= GARUDA_REPLAY_WARMUP + 1)
			hi = 0; /* a word never past its warm-up while another runs */
	for (size_t k = 0; k < s->n && hi; k++) {
		size_t row = s->by_arm[k], w = s->word_of[row];
		uint64_t arm = s->rows[row].arm_ns;
		if (++seen[w] == GARUDA_REPLAY_WARMUP + 1 && arm > lo)
			lo = arm;
		if (seen[w] == s->first[w + 1] - s->first[w] && arm < hi)
			hi = arm;
	}
	free(seen);
	*from = lo;
	*to = hi;
	return lo < hi;
}

/* the word's value at t: how many of its stores landed by then (t never goes back) */
static uint64_t word_at(struct sim *s, size_t w, uint64_t t)
{
	while (s->cursor[w] < s->first[w + 1] && s->stores[s->cursor[w]] <= t)
		s->cursor[w]++;
	return s->cursor[w] - s->first[w];
}

/* A row's sleep as garudad's loop thread gives it at the ARM (daemon/points.c): its
 * point's deadline as far as the prediction goes, uncapped (the watcher sleeps toward
 * it in steps of max_sleep_us); exact: from the exact records alone. 0 without
 * +predict. */
static uint64_t horizon_of(const struct sim *s, const struct garuda_plan *plan, size_t row,
			   bool exact)
{
	if (!plan->predict)
		return 0;
	const struct garuda_estimator *e = &s->est[s->point_of[row]];
	return exact ? garuda_estimator_exact_horizon_ns(e) : garuda_estimator_horizon_ns(e);
}

/* a find into its point, as scanner.c's count_fired() records it */
static void record(struct sim *s, struct garuda_replay_result *out, size_t point,
		   struct garuda_find f, bool predict)
{
	if (predict)
		garuda_policy_record(&s->est[point], &f);
	switch (f.kind) {
	case GARUDA_FIND_EXACT:
	case GARUDA_FIND_LOWER:
		out->exact++;
		break;
	case GARUDA_FIND_CENSORED:
		out->censored++;
		break;
	case GARUDA_FIND_LATE:
		out->late++;
		break;
	default:
		out->unknown++;
		break;
	}
}

/* Poll's spin steps counted, not stepped (replay.h). The step just done found nothing
 * among its nd due words (s->due, each read at its start) and the next is at now, each
 * period after. While the plan spins forever (poll) with no timer in the watcher and
 * every word that has waits on its spin (so each step looks at all nd, and a look
 * that finds nothing changes nothing the replay reads but the word's last look), the
 * steps before the next event are alike: the next arm taken, the next store to one of
 * the words, mark (the steady window's next edge; UINT64_MAX: none). How many of them,
 * less the last before the event, can be counted: that one is stepped, so that the
 * event's step finds the last look it would have. */
static uint64_t spins_to_count(const struct sim *s, const struct garuda_watch *w, unsigned nd,
			       size_t next, const struct garuda_replay_cost *cost, uint64_t mark,
			       uint64_t now, uint64_t period)
{
	if (!w->t.pol.forever || w->nheap || garuda_watch_sweeping(w) || w->nspin != nd)
		return 0;
	uint64_t e = mark;
	if (next < s->n)
		e = min_u64(e, add_sat(s->rows[s->by_arm[next]].arm_ns, cost->arm_wake_ns));
	for (unsigned i = 0; i < nd; i++) {
		size_t word = s->word_of[s->pay[garuda_watch_word_head(w, s->due[i])]];
		if (s->cursor[word] < s->first[word + 1])
			e = min_u64(e, s->stores[s->cursor[word]]); /* its next store (word_at) */
	}
	if (e == UINT64_MAX || e <= now || !period)
		return 0;
	return (e - 1 - now) / period;
}

/* room for one more wait: the watcher's and the payload's (scanner.c's room()) */
static int room(struct sim *s, struct garuda_watch *w)
{
	if (garuda_watch_reserve(w, 1) < 0)
		return -ENOMEM;
	uint32_t cap = garuda_watch_capacity(w);
	if (cap <= s->paycap)
		return 0;
	size_t *p = realloc(s->pay, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->pay = p;
	s->paycap = cap;
	return 0;
}

/* The ARM that wakes a sleep whose timed wake is at *wake (deadline until): post()'s
 * rule, an ARM wakes the sleeping scanner when its deadline is earlier than the
 * published wake time (UINT64_MAX without +predict: every ARM). Between the sleep and
 * the ARMs no find is recorded, so each ARM's deadline is its point's horizon now. */
static bool arm_wakes(const struct sim *s, const struct garuda_plan *plan, size_t next,
		      uint64_t until, const struct garuda_replay_cost *cost, uint64_t *wake)
{
	for (size_t j = next; j < s->n; j++) {
		size_t row = s->by_arm[j];
		uint64_t arm = s->rows[row].arm_ns, at = add_sat(arm, cost->arm_wake_ns);
		if (at >= *wake)
			return false; /* it comes after the timed wake */
		if (!plan->predict || add_sat(arm, horizon_of(s, plan, row, false)) < until) {
			*wake = at;
			return true;
		}
	}
	return false;
}

int garuda_replay_run(const struct garuda_plan *plan, const struct garuda_replay_row *rows,
		      size_t n, const struct garuda_replay_cost *cost,
		      struct garuda_replay_result *out)
{
	if (!n || !plan || garuda_plan_check(plan, NULL, 0) < 0 || plan->kind == GARUDA_PLAN_BLOCK)
		return -EINVAL;
	if (garuda_replay_rows_check(rows, n, NULL, 0) < 0)
		return -ERANGE;
	struct sim s;
	int r = sim_init(&s, plan, rows, n);
	if (r) {
		sim_free(&s);
		return r;
	}
	*out = (struct garuda_replay_result){ 0 };
	struct garuda_watch_tuning tuning;
	garuda_watch_tuning_of(plan, &tuning); /* the one conversion, garudad's too */
	struct garuda_watch w;
	garuda_watch_init(&w, &tuning);
	uint64_t now = rows[s.by_arm[0]].arm_ns, first = now, last_find = now;
	size_t next = 0, done = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull; /* wake_late()'s draws: the same every run */
	/* the steady window: the counts at its start (a), taken off at its end */
	uint64_t sfrom = 0, sto = 0, busy_a = 0;
	size_t sleeps_a = 0, spins_a = 0;
	unsigned smark = steady_window(&s, &sfrom, &sto) ? 0 : 2; /* 0 before, 1 in, 2 after */
	while (done < n) {
		if (smark == 0 && now >= sfrom) {
			busy_a = out->busy_ns;
			sleeps_a = out->sleeps;
			spins_a = out->spins;
			smark = 1;
		}
		if (smark == 1 && now >= sto) {
			out->steady_from_ns = sfrom;
			out->steady_to_ns = sto;
			out->steady_busy_ns = out->busy_ns - busy_a;
			out->steady_sleeps = out->sleeps - sleeps_a;
			out->steady_spins = out->spins - spins_a;
			for (size_t i = 0; i < n; i++)
				out->steady_rows += rows[i].arm_ns >= sfrom && rows[i].arm_ns < sto;
			smark = 2;
		}
		/* take_commands(): the arms posted by now (each arm_wake_ns after its send);
		 * the watcher's early wake is the running mean as of this take (retune()) */
		if (next < n && add_sat(rows[s.by_arm[next]].arm_ns, cost->arm_wake_ns) <= now) {
			w.t.pol.early_ns = garuda_watch_early_ns(&w);
			for (; next < n && add_sat(rows[s.by_arm[next]].arm_ns, cost->arm_wake_ns) <= now; next++) {
				size_t row = s.by_arm[next];
				/* keyed by its dense word, 1 up: a trace's word may be any 64-bit
				 * value, UINT64_MAX too, which the watcher's maps reserve */
				uint64_t key = (uint64_t)s.word_of[row] + 1;
				uint32_t owner = garuda_watch_owner(&w, key);
				if ((r = room(&s, &w)) < 0 || owner == GARUDA_WATCH_NONE) {
					r = -ENOMEM;
					goto out;
				}
				struct garuda_policy_wait pw;
				garuda_policy_wait_init(&pw, key, s.target_of[row],
							rows[row].arm_ns, rows[row].arm_ns,
							horizon_of(&s, plan, row, false),
							horizon_of(&s, plan, row, true));
				pw.taken_ns = now;
				/* the take's look (scanner.c): a row stored before its arm was
				 * taken is looked at at once and records nothing */
				pw.done = garuda_reached(word_at(&s, s.word_of[row], now), s.target_of[row]);
				s.pay[garuda_watch_add(&w, &pw, owner, now)] = row;
				out->busy_ns += cost->arm_cpu_ns;
			}
		}
		if (!garuda_watch_count(&w)) { /* park until the next arm wakes it */
			uint64_t at = add_sat(rows[s.by_arm[next]].arm_ns, cost->arm_wake_ns);
			out->busy_ns += by_length(cost, at > now ? at - now : 0, cost->wake_cpu_ns,
						  cost->wake_cpu_long_ns);
			now = at > now ? at : now;
			out->parks++;
			garuda_watch_woke(&w, now);
			continue;
		}
		/* scan_step(): the due words, each read at the step's time and reported */
		uint64_t start = now;
		unsigned nd = garuda_watch_due(&w, start, s.due, REPLAY_STEP_MAX);
		uint64_t end = add_mul_sat(add_sat(start, cost->step_ns), nd, cost->look_ns);
		if (end == start && end != UINT64_MAX)
			end++; /* time moves, whatever the costs (and saturates, never wraps) */
		size_t fired = 0;
		for (unsigned i = 0; i < nd; i++) {
			uint32_t wi = s.due[i];
			size_t word = s.word_of[s.pay[garuda_watch_word_head(&w, wi)]];
			uint64_t v = word_at(&s, word, start);
			unsigned k = garuda_watch_found(&w, wi, v, start, s.fires);
			for (unsigned j = 0; j < k; j++) {
				size_t row = s.pay[s.fires[j].id], point = s.point_of[row];
				record(&s, out, point, s.fires[j].find, plan->predict);
				if (s.finds[point]++ >= GARUDA_REPLAY_WARMUP)
					s.lateness[out->counted++] = end - rows[row].store_ns;
			}
			fired += k;
			/* the successor that starts now takes its point's sleeps as they are
			 * now (scan_step: points_peek, garuda_watch_resleep) */
			if (k && garuda_watch_word_waits(&w, wi)) {
				uint32_t head = garuda_watch_word_head(&w, wi);
				size_t hrow = s.pay[head];
				garuda_watch_resleep(&w, head, horizon_of(&s, plan, hrow, false),
						     horizon_of(&s, plan, hrow, true), start);
			}
		}
		done += fired;
		out->steps++;
		out->looks += nd;
		out->busy_ns += end - start + fired * cost->fire_cpu_ns;
		now = add_mul_sat(end, fired, cost->fire_cpu_ns); /* the delivery */
		if (fired) {
			last_find = end;
			continue; /* successors may be due at once */
		}
		uint64_t until = garuda_watch_next(&w, now);
		if (!until) { /* a spin step */
			uint64_t wall = cost->spin_wall_ns > cost->spin_ns ? cost->spin_wall_ns
									   : cost->spin_ns;
			now = add_sat(now, wall);
			out->busy_ns += cost->spin_ns;
			out->spins++;
			/* poll's steps that find nothing until the next event, counted */
			uint64_t period = add_sat(end - start, wall),
				 mark = smark == 0 ? sfrom : smark == 1 ? sto : UINT64_MAX;
			uint64_t k = spins_to_count(&s, &w, nd, next, cost, mark, now, period);
			if (k) {
				now += k * period; /* (before the event: no overflow) */
				out->steps += k;
				out->looks += k * nd;
				out->busy_ns += k * (end - start + cost->spin_ns);
				out->spins += k;
			}
			continue;
		}
		/* sleep until the watcher's time, or an ARM that wakes it */
		uint64_t wake = until == UINT64_MAX ? UINT64_MAX
						    : add_sat(until, wake_late(cost, until > now ? until - now : 0, &rng));
		arm_wakes(&s, plan, next, until, cost, &wake);
		if (wake == UINT64_MAX) { /* live waits never due and no arm to come */
			r = -EDEADLK;
			goto out;
		}
		out->busy_ns += by_length(cost, wake > now ? wake - now : 0, cost->wake_cpu_ns, cost->wake_cpu_long_ns);
		out->sleeps++;
		now = wake > now ? wake : now;
		garuda_watch_woke_from(&w, until, now); /* a timed wake: the early wake's mean */
	}
	out->completions = n;
	out->span_ns = last_find - first;
	size_t c = out->counted;
	qsort(s.lateness, c, sizeof(uint64_t), cmp_u64);
	if (c) {
		out->late_p50_ns = s.lateness[(c - 1) * 50 / 100];
		out->late_p90_ns = s.lateness[(c - 1) * 90 / 100];
		out->late_p99_ns = s.lateness[(c - 1) * 99 / 100];
		out->late_max_ns = s.lateness[c - 1];
	}
out:
	garuda_watch_fini(&w);
	sim_free(&s);
	return r;
}

/* One field of a row, [p, end): spaces and tabs, decimal digits, spaces and tabs. 0;
 * -EINVAL: not that; -ERANGE: digits past max. */
static int parse_field(const char *p, const char *end, uint64_t max, uint64_t *v)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (p == end)
		return -EINVAL;
	uint64_t x = 0;
	int r = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		uint64_t d = (uint64_t)(*p - '0');
		if (x > (max - d) / 10)
			r = -ERANGE; /* (a non-digit after it is still -EINVAL) */
		else
			x = x * 10 + d;
	}
	*v = x;
	return r;
}

/* A row's line [p, end) into *row: 0, or -EINVAL/-ERANGE with why in msg */
static int parse_row(const char *p, const char *end, size_t lineno, struct garuda_replay_row *row,
		     char *msg, size_t len)
{
	static const char *const names[4] = { "word", "point", "arm_ns", "store_ns" };
	uint64_t v[4];
	for (unsigned f = 0; f < 4; f++) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *fend = f < 3 ? comma : end;
		if (f < 3 ? !comma : !!comma) {
			if (msg && len)
				snprintf(msg, len, "line %zu: expected word,point,arm_ns,store_ns",
					 lineno);
			return -EINVAL;
		}
		int r = parse_field(p, fend, f == 1 ? UINT32_MAX : UINT64_MAX, &v[f]);
		if (r < 0) {
			if (msg && len)
				snprintf(msg, len, "line %zu: %s: '%.*s' %s", lineno, names[f],
					 (int)(fend - p < 40 ? fend - p : 40), p,
					 r == -ERANGE ? "is out of range"
						      : "is not a decimal number");
			return r;
		}
		p = fend + (f < 3);
	}
	*row = (struct garuda_replay_row){
		.word = v[0], .point = (uint32_t)v[1], .arm_ns = v[2], .store_ns = v[3]
	};
	const char *why =
		row->store_ns < row->arm_ns ? "store_ns is before arm_ns" : out_of_range(row);
	if (why) {
		if (msg && len)
			snprintf(msg, len, "line %zu: %s", lineno, why);
		return row->store_ns < row->arm_ns ? -EINVAL : -ERANGE;
	}
	return 0;
}

/* "# busy<=R" on the comment [p, end): R into *bound */
static void parse_busy(const char *p, const char *end, double *bound)
{
	static const char key[] = "busy<=";
	p++; /* the '#' */
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(end - p) <= sizeof(key) - 1 || memcmp(p, key, sizeof(key) - 1) != 0)
		return;
	p += sizeof(key) - 1;
	char num[64];
	size_t k = (size_t)(end - p) < sizeof(num) - 1 ? (size_t)(end - p) : sizeof(num) - 1;
	memcpy(num, p, k);
	num[k] = '\0';
	char *e;
	double r = strtod(num, &e);
	if (e != num)
		*bound = r;
}

void garuda_replay_trace_free(struct garuda_replay_trace *t)
{
	free(t->rows);
	*t = (struct garuda_replay_trace){ 0 };
}

int garuda_replay_trace_parse(const char *text, size_t len, struct garuda_replay_trace *t,
			      char *msg, size_t msglen)
{
	*t = (struct garuda_replay_trace){ 0 };
	if (msg && msglen)
		msg[0] = '\0';
	size_t cap = 0, lineno = 0;
	bool header = false;
	int r = 0;
	for (size_t at = 0; at < len && !r;) {
		const char *p = text + at, *nl = memchr(p, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - p) : len - at; /* the line's length */
		at += ll + 1;
		lineno++;
		if (ll && p[ll - 1] == '\r')
			ll--;
		const char *end = p + ll;
		if (memchr(p, '\0', ll)) {
			if (msg && msglen)
				snprintf(msg, msglen, "line %zu: a NUL byte", lineno);
			r = -EINVAL;
			break;
		}
		if (p < end && *p == '#') {
			parse_busy(p, end, &t->busy_bound);
			continue;
		}
		const char *q = p;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q == end)
			continue; /* blank */
		if (!header) {
			header = true;
			if (*q < '0' || *q > '9')
				continue; /* the header (a row starts with a digit) */
		}
		struct garuda_replay_row row;
		if ((r = parse_row(p, end, lineno, &row, msg, msglen)) < 0)
			break;
		if (t->n == cap) {
			size_t ncap = cap ? 2 * cap : 1024;
			struct garuda_replay_row *nr =
				ncap > SIZE_MAX / sizeof(*nr)
					? NULL
					: realloc(t->rows, ncap * sizeof(*nr));
			if (!nr) {
				if (msg && msglen)
					snprintf(msg, msglen, "line %zu: out of memory", lineno);
				r = -ENOMEM;
				break;
			}
			t->rows = nr;
			cap = ncap;
		}
		t->rows[t->n++] = row;
	}
	if (!r && !t->n) {
		if (msg && msglen)
			snprintf(msg, msglen, "no completions");
		r = -EINVAL;
	}
	if (r)
		garuda_replay_trace_free(t);
	return r;
}
