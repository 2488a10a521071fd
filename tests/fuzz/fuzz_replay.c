/* fuzz_replay.c — libFuzzer target over garuda-replay's inputs (proto/replay.h): the
 * --cost text (garuda_replay_cost_parse()) and the trace CSV
 * (garuda_replay_trace_parse()), then one garuda_replay_run() over a small trace.
 *
 * The input is split (fuzz_replay_split()): a '\n' among its first 257 bytes ends the
 * cost line (at most 256 bytes), and the rest is the trace; without one, the whole
 * input is the trace and the costs are the defaults. Aborts (a finding) when:
 *   - the cost text is refused with anything but -EINVAL, changes the costs, or leaves
 *     an empty or unterminated message (or overruns a short buffer: ASan); or its
 *     acceptance and the figures differ from an independent model of
 *     "KEY=NS[,KEY=NS]..." (each KEY a field, NS decimal nanoseconds up to 2^64 - 1,
 *     no trailing ',', cost_model());
 *   - the trace's outcome differs from an independent model of the rules
 *     (replay.h, docs/garuda-replay.1): comments ('#' first) and blank lines skipped,
 *     an optional header (a first other line not starting with a digit), rows of four
 *     fields of decimal digits (spaces and tabs around them), point below 2^32, store
 *     not before arm, times at most 2^62 ns, a wait at most an hour, NUL bytes
 *     malformed. A refusal must be -EINVAL (malformed, no rows) or -ERANGE (a number
 *     past its field, a row past the limits) as the model's line allows, name that
 *     line ("line N:", from 1), leave *t empty and its message terminated and
 *     non-empty; an acceptance must give the model's rows (each within the limits,
 *     garuda_replay_rows_check() taking them) and busy bound.
 *   - a parsed trace small enough to replay fast (at most RUN_ROWS_MAX rows on
 *     RUN_WORDS_MAX words, RUN_WAIT_SUM_NS of waiting), replayed under garudad's
 *     default plan (GARUDA_PLAN_GARUDAD_DEFAULT) with the parsed costs (floored, see
 *     run_cost()), fails, leaves a row's wait unfound (completions, the four find
 *     kinds), counts other than each point's first GARUDA_REPLAY_WARMUP finds out,
 *     gives lateness percentiles out of order or past the span, a span shorter than
 *     first arm to last store, a steady window other than replay.h's (modelled), a
 *     second run's result not the same (at most RUN_TWICE_MAX rows), or modifies the
 *     rows.
 * Built with -fsanitize=fuzzer,address,undefined under -Dfuzz=true (clang); the same
 * function replays tests/fuzz/corpus-replay in the ordinary test suite
 * (test_corpus_replay.c).
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "replay.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
bool fuzz_replay_split(const uint8_t *data, size_t size, size_t *cost_len, size_t *trace_off);


#define COST_LINE_MAX	256u	     /* the cost line's bytes, at most */
#define COST_MSG_LEN	128u	     /* garuda-replay's --cost message buffer */
#define TRACE_MSG_LEN	160u	     /* garuda-replay's trace message buffer */
#define RUN_ROWS_MAX	64u	     /* traces replayed: at most this many rows, */
#define RUN_WORDS_MAX	8u	     /* words (each step looks at each waiting word) */
#define RUN_WAIT_SUM_NS 200000000ull /* and this much waiting, all rows together */
#define RUN_PARK_SPINS	250u	     /* the parks' spin steps, all rows together, about */
#define RUN_TWICE_MAX	4u	     /* the determinism check's rows, at most */

bool fuzz_replay_split(const uint8_t *data, size_t size, size_t *cost_len, size_t *trace_off)
{
	const uint8_t *nl = memchr(data, '\n', size < COST_LINE_MAX + 1 ? size : COST_LINE_MAX + 1);
	if (!nl) {
		*cost_len = 0;
		*trace_off = 0;
		return false;
	}
	*cost_len = (size_t)(nl - data);
	*trace_off = *cost_len + 1;
	return true;
}

/* ------------------------------------------------------------ the cost text */

#define NCOST 14u
static const char *const cost_names[NCOST] = {
	"step_ns",
	"look_ns",
	"spin_ns",
	"spin_wall_ns",
	"wake_late_ns",
	"wake_cpu_ns",
	"long_sleep_ns",
	"wake_late_long_ns",
	"wake_cpu_long_ns",
	"wake_late_p90_ns",
	"wake_late_long_p90_ns",
	"arm_wake_ns",
	"arm_cpu_ns",
	"fire_cpu_ns",
};

static uint64_t *cost_field(struct garuda_replay_cost *c, unsigned k)
{
	uint64_t *f[NCOST] = {
		&c->step_ns,
		&c->look_ns,
		&c->spin_ns,
		&c->spin_wall_ns,
		&c->wake_late_ns,
		&c->wake_cpu_ns,
		&c->long_sleep_ns,
		&c->wake_late_long_ns,
		&c->wake_cpu_long_ns,
		&c->wake_late_p90_ns,
		&c->wake_late_long_p90_ns,
		&c->arm_wake_ns,
		&c->arm_cpu_ns,
		&c->fire_cpu_ns,
	};
	return f[k];
}

static bool cost_equal(struct garuda_replay_cost *a, struct garuda_replay_cost *b)
{
	for (unsigned k = 0; k < NCOST; k++)
		if (*cost_field(a, k) != *cost_field(b, k))
			return false;
	return true;
}

enum {
	MODEL_OK,
	MODEL_BAD,
};

/* The cost text's model: MODEL_OK with the figures set into *c, or MODEL_BAD (every
 * value up to UINT64_MAX is nanoseconds; a text that ends in ',' is refused) */
static int cost_model(const char *s, struct garuda_replay_cost *c)
{
	const char *p = s;
	while (*p) {
		const char *end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		const char *eq = memchr(p, '=', (size_t)(end - p));
		if (!eq)
			return MODEL_BAD;
		unsigned k = 0;
		while (k < NCOST && !(strlen(cost_names[k]) == (size_t)(eq - p) &&
				      memcmp(cost_names[k], p, (size_t)(eq - p)) == 0))
			k++;
		if (k == NCOST || eq + 1 == end)
			return MODEL_BAD;
		uint64_t v = 0;
		for (const char *d = eq + 1; d < end; d++) {
			if (*d < '0' || *d > '9' || __builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, (uint64_t)(*d - '0'), &v))
				return MODEL_BAD;
		}
		*cost_field(c, k) = v;
		if (!*end)
			break;
		p = end + 1;
		if (!*p)
			return MODEL_BAD; /* a trailing ',' */
	}
	return MODEL_OK;
}

static void check_msg(const char *msg, size_t len)
{
	CHECK(memchr(msg, '\0', len) != NULL);
	CHECK(msg[0] != '\0');
}

/* The cost line text (NUL-terminated; a NUL inside it ends it): *cost the figures to
 * run with (the defaults unless the text is accepted) */
static void check_cost(const char *text, struct garuda_replay_cost *cost)
{
	struct garuda_replay_cost def = garuda_replay_default_cost(), model = def, c = def;
	int want = cost_model(text, &model);
	char msg[COST_MSG_LEN];
	memset(msg, 0x7f, sizeof(msg));
	int r = garuda_replay_cost_parse(&c, text, msg, sizeof(msg));
	*cost = def;
	if (r != 0) {
		CHECK(r == -EINVAL);
		CHECK(want != MODEL_OK);
		CHECK(cost_equal(&c, &def)); /* unchanged */
		check_msg(msg, sizeof(msg));
		/* a short buffer is cut, never overrun */
		char tiny[5];
		memset(tiny, 0x7f, sizeof(tiny));
		CHECK(garuda_replay_cost_parse(&c, text, tiny, sizeof(tiny)) == r);
		check_msg(tiny, sizeof(tiny));
		CHECK(garuda_replay_cost_parse(&c, text, NULL, 0) == r);
		CHECK(cost_equal(&c, &def));
		return;
	}
	CHECK(want != MODEL_BAD);
	CHECK(cost_equal(&c, &model)); /* named figures set (the last wins), others kept */
	struct garuda_replay_cost again = def;
	CHECK(garuda_replay_cost_parse(&again, text, NULL, 0) == 0);
	CHECK(cost_equal(&again, &c));
	*cost = c;
}

/* ------------------------------------------------------------ the trace */

#define WANT_INVAL 1u
#define WANT_RANGE 2u

struct trace_model {
	unsigned codes; /* 0: accepted; else WANT_* the refusal may give */
	size_t line;	/* the refused line (from 1); 0: no rows */
	struct garuda_replay_row *rows;
	size_t n;
	double busy;
	bool busy_known; /* the bound's comment fits replay.c's number buffer */
};

static bool is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* a field [p, end) of at most max: WANT_* its problems (0: *v) */
static unsigned model_field(const char *p, const char *end, uint64_t max, uint64_t *v)
{
	while (p < end && is_space(*p))
		p++;
	while (end > p && is_space(end[-1]))
		end--;
	if (p == end)
		return WANT_INVAL;
	unsigned bad = 0;
	uint64_t x = 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return WANT_INVAL | bad; /* replay.c may have stopped at the range first */
		if (__builtin_mul_overflow(x, 10, &x) ||
		    __builtin_add_overflow(x, (uint64_t)(*p - '0'), &x) || x > max)
			bad = WANT_RANGE;
	}
	*v = x;
	return bad;
}

/* a row's line [p, end): WANT_* its problems (0: *row) */
static unsigned model_row(const char *p, const char *end, struct garuda_replay_row *row)
{
	uint64_t v[4] = { 0, 0, 0, 0 };
	unsigned bad = 0, f = 0;
	const char *q = p;
	for (;;) {
		const char *comma = memchr(q, ',', (size_t)(end - q));
		const char *fend = comma ? comma : end;
		if (f < 4)
			bad |= model_field(q, fend, f == 1 ? UINT32_MAX : UINT64_MAX, &v[f]);
		f++;
		if (!comma)
			break;
		q = comma + 1;
	}
	if (f != 4)
		bad |= WANT_INVAL;
	if (bad)
		return bad;
	*row = (struct garuda_replay_row){
		.word = v[0], .point = (uint32_t)v[1], .arm_ns = v[2], .store_ns = v[3]
	};
	if (row->store_ns < row->arm_ns)
		bad |= WANT_INVAL;
	if (row->arm_ns > GARUDA_REPLAY_TIME_MAX_NS || row->store_ns > GARUDA_REPLAY_TIME_MAX_NS ||
	    (row->store_ns > row->arm_ns &&
	     row->store_ns - row->arm_ns > GARUDA_REPLAY_WAIT_MAX_NS))
		bad |= WANT_RANGE;
	return bad;
}

/* a comment [p, end): "# busy<=R" sets the bound */
static void model_busy(const char *p, const char *end, struct trace_model *m)
{
	static const char key[] = "busy<=";
	p++;
	while (p < end && is_space(*p))
		p++;
	if ((size_t)(end - p) < sizeof(key) - 1 || memcmp(p, key, sizeof(key) - 1) != 0)
		return;
	p += sizeof(key) - 1;
	char num[64];
	if ((size_t)(end - p) >= sizeof(num)) {
		m->busy_known = false; /* replay.c reads the first 63 bytes (undocumented) */
		return;
	}
	memcpy(num, p, (size_t)(end - p));
	num[end - p] = '\0';
	char *e;
	double r = strtod(num, &e);
	if (e != num) {
		m->busy = r;
		m->busy_known = true;
	}
}

static void trace_model(const char *text, size_t len, struct trace_model *m)
{
	*m = (struct trace_model){ .busy_known = true };
	m->rows = malloc((len / 7 + 1) * sizeof(*m->rows)); /* a row takes 8 bytes, "0,0,0,0\n" */
	CHECK(m->rows != NULL);
	bool header = false;
	size_t lineno = 0;
	for (size_t at = 0; at < len;) {
		const char *p = text + at, *nl = memchr(p, '\n', len - at);
		const char *end = nl ? nl : text + len;
		at = (size_t)(end - text) + 1;
		lineno++;
		if (memchr(p, '\0', (size_t)(end - p))) {
			m->codes = WANT_INVAL;
			m->line = lineno;
			return;
		}
		if (end > p && end[-1] == '\r')
			end--;
		if (p < end && *p == '#') {
			model_busy(p, end, m);
			continue;
		}
		const char *q = p;
		while (q < end && is_space(*q))
			q++;
		if (q == end)
			continue;
		if (!header) {
			header = true;
			if (*q < '0' || *q > '9')
				continue;
		}
		unsigned bad = model_row(p, end, &m->rows[m->n]);
		if (bad) {
			m->codes = bad;
			m->line = lineno;
			return;
		}
		m->n++;
	}
	if (!m->n)
		m->codes = WANT_INVAL; /* no rows: no line to name */
}

static bool trace_empty(const struct garuda_replay_trace *t)
{
	return t->rows == NULL && t->n == 0 && t->busy_bound == 0;
}

static bool code_allowed(int r, unsigned codes)
{
	return (r == -EINVAL && (codes & WANT_INVAL)) || (r == -ERANGE && (codes & WANT_RANGE));
}

/* 0 with *t parsed, or the refusal (checked) */
static int check_trace(const char *text, size_t len, struct garuda_replay_trace *t)
{
	struct trace_model m;
	trace_model(text, len, &m);
	char msg[TRACE_MSG_LEN];
	memset(msg, 0x7f, sizeof(msg));
	memset(t, 0x5a, sizeof(*t)); /* parse sets all of it */
	int r = garuda_replay_trace_parse(text, len, t, msg, sizeof(msg));
	if (r != 0) {
		CHECK(trace_empty(t));
		check_msg(msg, sizeof(msg));
		if (r != -ENOMEM) {
			CHECK(m.codes != 0);
			CHECK(code_allowed(r, m.codes));
			if (m.line) {
				char want[32];
				int k = snprintf(want, sizeof(want), "line %zu:", m.line);
				CHECK(strncmp(msg, want, (size_t)k) == 0);
			}
		}
		char tiny[5];
		memset(tiny, 0x7f, sizeof(tiny));
		int r2 = garuda_replay_trace_parse(text, len, t, tiny, sizeof(tiny));
		CHECK(r2 == r || r2 == -ENOMEM || r == -ENOMEM);
		check_msg(tiny, sizeof(tiny));
		CHECK(trace_empty(t));
		r2 = garuda_replay_trace_parse(text, len, t, NULL, 0);
		CHECK(r2 == r || r2 == -ENOMEM || r == -ENOMEM);
		CHECK(trace_empty(t));
		free(m.rows);
		return r;
	}
	CHECK(m.codes == 0);
	CHECK(t->n == m.n && t->n > 0 && t->rows != NULL);
	for (size_t i = 0; i < t->n; i++) {
		const struct garuda_replay_row *a = &t->rows[i], *b = &m.rows[i];
		CHECK(a->word == b->word && a->point == b->point && a->arm_ns == b->arm_ns &&
		      a->store_ns == b->store_ns);
		CHECK(a->arm_ns <= GARUDA_REPLAY_TIME_MAX_NS &&
		      a->store_ns <= GARUDA_REPLAY_TIME_MAX_NS);
		CHECK(a->store_ns >= a->arm_ns &&
		      a->store_ns - a->arm_ns <= GARUDA_REPLAY_WAIT_MAX_NS);
	}
	CHECK(garuda_replay_rows_check(t->rows, t->n, NULL, 0) == 0);
	if (m.busy_known)
		CHECK(isnan(m.busy) ? isnan(t->busy_bound) : t->busy_bound == m.busy);
	free(m.rows);
	return 0;
}

/* ------------------------------------------------------------ the replay */

/* The figures a run takes: the parsed ones, with a step of at least 100 ns and a spin
 * step on the clock of at least 1 us and of parked / RUN_PARK_SPINS (parked: the rows'
 * waits, each up to the plan's park), so that the parks' spin steps of all the rows
 * together stay ~RUN_PARK_SPINS (with 0-cost steps the clock moves 1 ns a step: a 1 ms
 * park would be 10^6 steps; under the fuzzer's instrumentation a step takes ~3 us) */
static struct garuda_replay_cost run_cost(struct garuda_replay_cost c, uint64_t parked)
{
	uint64_t wall = parked / RUN_PARK_SPINS < 1000 ? 1000 : parked / RUN_PARK_SPINS;
	if (c.step_ns < 100)
		c.step_ns = 100;
	if (c.spin_ns < wall && c.spin_wall_ns < wall)
		c.spin_wall_ns = wall;
	return c;
}

/* the rows' points (replay.h: a word's own, and each (word, named point)): how many of
 * the finds the lateness counts, all but each point's first GARUDA_REPLAY_WARMUP */
static size_t model_counted(const struct garuda_replay_row *rows, size_t n)
{
	size_t counted = 0;
	for (size_t i = 0; i < n; i++) {
		size_t before = 0; /* earlier rows of the same point */
		for (size_t j = 0; j < i; j++)
			before += rows[j].word == rows[i].word && rows[j].point == rows[i].point;
		counted += before >= GARUDA_REPLAY_WARMUP;
	}
	return counted;
}

/* the steady window (replay.h): from the arm of every word's (WARMUP + 1)-th row to the
 * arm of the first word's last row; false: empty */
static bool model_steady(const struct garuda_replay_row *rows, size_t n, uint64_t *from,
			 uint64_t *to, size_t *nrows)
{
	uint64_t lo = 0, hi = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		bool seen = false; /* the word's first row: take the word once */
		for (size_t j = 0; j < i && !seen; j++)
			seen = rows[j].word == rows[i].word;
		if (seen)
			continue;
		size_t count = 0;
		uint64_t last = 0;
		for (size_t j = 0; j < n; j++)
			if (rows[j].word == rows[i].word) {
				count++;
				last = rows[j].arm_ns > last ? rows[j].arm_ns : last;
			}
		if (count <= GARUDA_REPLAY_WARMUP + 1)
			return false;
		/* its (WARMUP + 1)-th arm: the arm with WARMUP below it and WARMUP + 1 at or
		 * below it */
		for (size_t j = 0; j < n; j++) {
			if (rows[j].word != rows[i].word)
				continue;
			size_t below = 0, upto = 0;
			for (size_t k = 0; k < n; k++)
				if (rows[k].word == rows[i].word) {
					below += rows[k].arm_ns < rows[j].arm_ns;
					upto += rows[k].arm_ns <= rows[j].arm_ns;
				}
			if (below <= GARUDA_REPLAY_WARMUP && upto > GARUDA_REPLAY_WARMUP &&
			    rows[j].arm_ns > lo)
				lo = rows[j].arm_ns;
		}
		hi = last < hi ? last : hi;
	}
	*from = lo;
	*to = hi;
	*nrows = 0;
	for (size_t i = 0; i < n; i++)
		*nrows += rows[i].arm_ns >= lo && rows[i].arm_ns < hi;
	return lo < hi;
}

static void check_run(const struct garuda_replay_trace *t, const struct garuda_replay_cost *parsed)
{
	static struct garuda_plan plan;
	static bool have_plan;
	if (!have_plan) {
		CHECK(garuda_plan_parse(GARUDA_PLAN_GARUDAD_DEFAULT, &plan, NULL, 0) == 0);
		have_plan = true;
	}
	size_t n = t->n, words = 0;
	if (n > RUN_ROWS_MAX)
		return;
	uint64_t waits = 0, parked = 0, first_arm = UINT64_MAX, last_store = 0;
	uint64_t park_ns = plan.flag.park_us * 1000;
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = t->rows[j].word == t->rows[i].word;
		words += !seen;
		uint64_t wait = t->rows[i].store_ns - t->rows[i].arm_ns;
		waits += wait; /* (64 waits of at most an hour: no overflow) */
		parked += wait < park_ns ? wait : park_ns;
		first_arm = t->rows[i].arm_ns < first_arm ? t->rows[i].arm_ns : first_arm;
		last_store = t->rows[i].store_ns > last_store ? t->rows[i].store_ns : last_store;
	}
	if (words > RUN_WORDS_MAX || waits > RUN_WAIT_SUM_NS)
		return;
	struct garuda_replay_cost cost = run_cost(*parsed, parked);
	bool small = true; /* figures small enough that the charged sums cannot wrap */
	for (unsigned k = 0; k < NCOST; k++)
		small = small && *cost_field(&cost, k) < (1ull << 32);

	struct garuda_replay_row copy[RUN_ROWS_MAX];
	memcpy(copy, t->rows, n * sizeof(*copy));
	struct garuda_replay_result res, again;
	memset(&res, 0, sizeof(res));
	int r = garuda_replay_run(&plan, t->rows, n, &cost, &res);
	CHECK(r == 0);
	CHECK(memcmp(copy, t->rows, n * sizeof(*copy)) == 0); /* rows not modified */

	/* every row's wait found, once */
	CHECK(res.completions == n);
	CHECK(res.exact + res.censored + res.late + res.unknown == n);
	CHECK(res.counted == model_counted(t->rows, n));
	CHECK(res.steps >= 1);
	/* lateness: (the find's step end) - store, in order, within the span */
	if (!res.counted)
		CHECK(!res.late_p50_ns && !res.late_p90_ns && !res.late_p99_ns && !res.late_max_ns);
	CHECK(res.late_p50_ns <= res.late_p90_ns && res.late_p90_ns <= res.late_p99_ns &&
	      res.late_p99_ns <= res.late_max_ns);
	CHECK(res.late_max_ns <= res.span_ns);
	CHECK(res.span_ns >= last_store - first_arm);
	/* the steady window */
	uint64_t from = 0, to = 0;
	size_t srows = 0;
	if (model_steady(t->rows, n, &from, &to, &srows)) {
		CHECK(res.steady_from_ns == from && res.steady_to_ns == to);
		CHECK(res.steady_rows == srows);
		CHECK(res.steady_sleeps <= res.sleeps && res.steady_spins <= res.spins);
		if (small)
			CHECK(res.steady_busy_ns <= res.busy_ns);
	} else {
		CHECK(res.steady_rows == 0 && res.steady_from_ns == 0 && res.steady_to_ns == 0);
		CHECK(res.steady_busy_ns == 0 && res.steady_sleeps == 0 && res.steady_spins == 0);
	}
	if (small) /* each ARM and each fire charged */
		CHECK(res.busy_ns >= n * (cost.arm_cpu_ns + cost.fire_cpu_ns));
	/* deterministic */
	if (n <= RUN_TWICE_MAX) {
		memset(&again, 0, sizeof(again));
		CHECK(garuda_replay_run(&plan, t->rows, n, &cost, &again) == 0);
		CHECK(memcmp(&again, &res, sizeof(res)) == 0);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cost_len, off;
	struct garuda_replay_cost cost = garuda_replay_default_cost();
	if (fuzz_replay_split(data, size, &cost_len, &off)) {
		char *text = malloc(cost_len + 1); /* exact size: ASan sees a read past it */
		CHECK(text != NULL);
		memcpy(text, data, cost_len);
		text[cost_len] = '\0';
		check_cost(text, &cost);
		free(text);
	}
	size_t len = size - off;
	char *text = malloc(len ? len : 1);
	CHECK(text != NULL);
	if (len)
		memcpy(text, data + off, len);
	struct garuda_replay_trace t;
	if (check_trace(text, len, &t) == 0) {
		check_run(&t, &cost);
		garuda_replay_trace_free(&t);
		CHECK(trace_empty(&t));
	}
	free(text);
	return 0;
}
