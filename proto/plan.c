/* plan.c — parse, check and format wait plans (plan.h).
 *
 * One table row per key (its section, where it lives in struct garuda_plan, its
 * bounds); the parser fills values through it, garuda_plan_check() applies its bounds
 * and garuda_plan_format() prints in its order, so the three cannot drift apart.
 * Errors are reported in this order: the first syntax fault met while scanning left
 * to right (unknown kind, modifier or key, a key given twice, a bad number,
 * block+predict), then the first missing key, then the first key out of order, then
 * bounds (table order) and min_sleep_us > max_sleep_us.
 */
#include "plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errcode.h"

enum section { SEC_FLAG, SEC_PREDICT, SEC_COUNT_ };

static const char *const section_name[SEC_COUNT_] = { "flag", "predict" };
static const char *const section_keys[SEC_COUNT_] = {
	"park_us, backstop_us[, backoff_div]",
	"margin_us, min_sleep_us, max_sleep_us, window",
};

struct key {
	const char *name;
	enum section sec;
	size_t off; /* of a uint64_t in struct garuda_plan */
	uint64_t min, max;
	bool optional; /* may be left out: 0 in the struct, not printed */
};

#define KEY_(name, sec, field, lo, hi) { name, sec, offsetof(struct garuda_plan, field), lo, hi, false }
static const struct key keys[] = {
	KEY_("park_us", SEC_FLAG, flag.park_us, 0, GARUDA_PLAN_PARK_US_MAX),
	KEY_("backstop_us", SEC_FLAG, flag.backstop_us, 0, GARUDA_PLAN_BACKSTOP_US_MAX),
	{ "backoff_div", SEC_FLAG, offsetof(struct garuda_plan, flag.backoff_div), 1,
	  GARUDA_PLAN_BACKOFF_DIV_MAX, true },
	KEY_("margin_us", SEC_PREDICT, pred.margin_us, 0, UINT64_MAX),
	KEY_("min_sleep_us", SEC_PREDICT, pred.min_sleep_us, 0, UINT64_MAX),
	/* at least 1: a sleep toward a deadline goes in steps of at most this (0 was taken
	 * for "no cap" by the watcher and for "no sleep" by the estimator) */
	KEY_("max_sleep_us", SEC_PREDICT, pred.max_sleep_us, 1, UINT64_MAX),
	KEY_("window", SEC_PREDICT, pred.window, 1, GARUDA_PLAN_WINDOW_MAX),
};
#undef KEY_
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static uint64_t *field(struct garuda_plan *p, const struct key *k)
{
	return (uint64_t *)((char *)p + k->off);
}

static uint64_t value(const struct garuda_plan *p, const struct key *k)
{
	uint64_t v;
	memcpy(&v, (const char *)p + k->off, sizeof(v));
	return v;
}

static const char *const kind_names[] = {
	[GARUDA_PLAN_BLOCK] = "block",
	[GARUDA_PLAN_POLL] = "poll",
	[GARUDA_PLAN_FLAG] = "flag",
};

const char *garuda_plan_kind_name(enum garuda_plan_kind kind)
{
	if ((unsigned)kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return NULL;
	return kind_names[kind];
}

/* ---- messages ---- */

__attribute__((format(printf, 3, 4))) static int refuse(char *msg, size_t cap, const char *fmt, ...)
{
	if (msg && cap) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, cap, fmt, ap);
		va_end(ap);
	}
	return -GARUDA_E_BAD_PLAN;
}

#define ECHO_BYTES 24u /* bytes of user text echoed in a message */
#define ECHO_MAX (ECHO_BYTES * 4u + 4u)

/* Printable copy of user bytes: anything outside '!'..'~' (and '\') as \xHH. */
static const char *echo(char out[ECHO_MAX], const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (size_t i = 0; i < n && i < ECHO_BYTES; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c > ' ' && c <= '~' && c != '\\') {
			out[o++] = (char)c;
		} else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (n > ECHO_BYTES) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

/* ---- parsing ---- */

static bool span_is(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && memcmp(s, word, n) == 0;
}

static const char *find(const char *s, size_t n, char c)
{
	return memchr(s, c, n);
}

struct parse {
	struct garuda_plan plan;
	unsigned seen;           /* bit per key row */
	int order[NKEYS];        /* key rows in the order the text gave them */
	unsigned norder;
	char *msg;
	size_t cap;
};

/* Decimal, no sign, no leading zero (so that the text round-trips), fits in 64 bits. */
static int parse_number(struct parse *ps, const struct key *k, const char *s, size_t n,
			uint64_t *out)
{
	char e[ECHO_MAX];
	if (n == 0)
		return refuse(ps->msg, ps->cap, "%s: no value after '='", k->name);
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return refuse(ps->msg, ps->cap, "%s: '%s' is not a decimal number",
				      k->name, echo(e, s, n));
	if (n > 1 && s[0] == '0')
		return refuse(ps->msg, ps->cap, "%s: '%s' has a leading zero", k->name,
			      echo(e, s, n));
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return refuse(ps->msg, ps->cap, "%s: '%s' overflows 64 bits", k->name,
				      echo(e, s, n));
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* "key=N,key=N,..." of one section */
static int parse_params(struct parse *ps, enum section sec, const char *s, size_t n)
{
	char e[ECHO_MAX];
	if (n == 0)
		return 0; /* every key missing: reported after the scan */
	const char *end = s + n;
	for (;;) {
		const char *comma = find(s, (size_t)(end - s), ',');
		const char *item_end = comma ? comma : end;
		size_t item_len = (size_t)(item_end - s);
		if (item_len == 0)
			return refuse(ps->msg, ps->cap, "%s: empty parameter (stray ',')",
				      section_name[sec]);
		const char *eq = find(s, item_len, '=');
		size_t key_len = eq ? (size_t)(eq - s) : item_len;
		const struct key *k = NULL;
		unsigned row = 0;
		for (row = 0; row < NKEYS; row++)
			if (keys[row].sec == sec && span_is(s, key_len, keys[row].name)) {
				k = &keys[row];
				break;
			}
		if (!k)
			return refuse(ps->msg, ps->cap, "%s: unknown key for %s (%s)",
				      echo(e, s, key_len), section_name[sec], section_keys[sec]);
		if (ps->seen & (1u << row))
			return refuse(ps->msg, ps->cap, "%s: given twice", k->name);
		if (!eq)
			return refuse(ps->msg, ps->cap, "%s: needs '=' and a number", k->name);
		uint64_t v = 0;
		int r = parse_number(ps, k, eq + 1, (size_t)(item_end - eq - 1), &v);
		if (r < 0)
			return r;
		/* (an optional key given 0, which would read as left out, is refused with
		 * the bounds, after every syntax fault: check_bounds()) */
		*field(&ps->plan, k) = v;
		ps->seen |= 1u << row;
		ps->order[ps->norder++] = (int)row;
		if (!comma)
			return 0;
		s = comma + 1;
	}
}

/* After the scan: every key of the used sections present, in table order. */
static int check_complete(struct parse *ps)
{
	bool used[SEC_COUNT_] = { ps->plan.kind == GARUDA_PLAN_FLAG, ps->plan.predict };
	for (unsigned row = 0; row < NKEYS; row++)
		if (used[keys[row].sec] && !keys[row].optional && !(ps->seen & (1u << row)))
			return refuse(ps->msg, ps->cap, "%s: missing", keys[row].name);
	/* every key present exactly once, so table order is the only accepted order */
	unsigned want = 0;
	for (unsigned i = 0; i < ps->norder; i++, want++) {
		while (want < NKEYS && (!used[keys[want].sec] ||
					(keys[want].optional && !(ps->seen & (1u << want)))))
			want++;
		if (want >= NKEYS || (unsigned)ps->order[i] != want)
			return refuse(ps->msg, ps->cap, "%s: out of order (%s: %s)",
				      keys[ps->order[i]].name, section_name[keys[ps->order[i]].sec],
				      section_keys[keys[ps->order[i]].sec]);
	}
	return 0;
}

static int parse_kind(struct parse *ps, const char *s, size_t n)
{
	char e[ECHO_MAX];
	const char *colon = find(s, n, ':');
	size_t name_len = colon ? (size_t)(colon - s) : n;
	if (n == 0)
		return refuse(ps->msg, ps->cap, "kind: missing (block, poll or flag)");
	enum garuda_plan_kind kind = 0;
	for (unsigned k = GARUDA_PLAN_BLOCK; k <= GARUDA_PLAN_FLAG; k++)
		if (span_is(s, name_len, kind_names[k]))
			kind = (enum garuda_plan_kind)k;
	if (!kind)
		return refuse(ps->msg, ps->cap, "kind: unknown '%s' (block, poll or flag)",
			      echo(e, s, name_len));
	ps->plan.kind = kind;
	if (kind != GARUDA_PLAN_FLAG) {
		if (colon)
			return refuse(ps->msg, ps->cap, "kind: %s takes no parameters", kind_names[kind]);
		return 0;
	}
	if (!colon)
		return 0; /* "flag": its keys are reported missing */
	return parse_params(ps, SEC_FLAG, colon + 1, (size_t)(s + n - colon - 1));
}

static int parse_modifier(struct parse *ps, const char *s, size_t n)
{
	char e[ECHO_MAX];
	const char *colon = find(s, n, ':');
	size_t name_len = colon ? (size_t)(colon - s) : n;
	if (!span_is(s, name_len, "predict"))
		return refuse(ps->msg, ps->cap, "modifier: unknown '+%s' (predict)",
			      echo(e, s, name_len));
	if (ps->plan.predict)
		return refuse(ps->msg, ps->cap, "predict: given twice");
	if (ps->plan.kind == GARUDA_PLAN_BLOCK)
		return refuse(ps->msg, ps->cap,
			      "predict: not with block (a blocking wait has nothing to sleep in front of)");
	ps->plan.predict = true;
	if (!colon)
		return 0;
	return parse_params(ps, SEC_PREDICT, colon + 1, (size_t)(s + n - colon - 1));
}

static int check_bounds(const struct garuda_plan *p, unsigned given, char *msg, size_t msg_cap);

int garuda_plan_parse_n(const char *text, size_t len, struct garuda_plan *out, char *msg,
			size_t msg_cap)
{
	struct parse ps = { .msg = msg, .cap = msg_cap };
	if (msg && msg_cap)
		msg[0] = '\0';
	const char *end = text + len;
	const char *plus = find(text, len, '+');
	int r = parse_kind(&ps, text, (size_t)((plus ? plus : end) - text));
	while (r == 0 && plus) {
		const char *s = plus + 1;
		plus = find(s, (size_t)(end - s), '+');
		r = parse_modifier(&ps, s, (size_t)((plus ? plus : end) - s));
	}
	if (r == 0)
		r = check_complete(&ps);
	if (r == 0)
		r = check_bounds(&ps.plan, ps.seen, msg, msg_cap);
	if (r < 0) {
		memset(out, 0, sizeof(*out));
		return r;
	}
	*out = ps.plan;
	return 0;
}

int garuda_plan_parse(const char *text, struct garuda_plan *out, char *msg, size_t msg_cap)
{
	return garuda_plan_parse_n(text, strlen(text), out, msg, msg_cap);
}

/* ---- check, format, equal ---- */

/* The bounds of every key, in table order. given: a bit per row, whether an optional
 * key was given (0 in the struct reads as left out; given, it is a value like any) */
static int check_bounds(const struct garuda_plan *p, unsigned given, char *msg, size_t msg_cap)
{
	const char *kind = garuda_plan_kind_name(p->kind);
	if (!kind)
		return refuse(msg, msg_cap, "kind: unknown value %d", (int)p->kind);
	if (p->kind == GARUDA_PLAN_BLOCK && p->predict)
		return refuse(msg, msg_cap,
			      "predict: not with block (a blocking wait has nothing to sleep in front of)");
	bool used[SEC_COUNT_] = { p->kind == GARUDA_PLAN_FLAG, p->predict };
	for (unsigned row = 0; row < NKEYS; row++) {
		const struct key *k = &keys[row];
		uint64_t v = value(p, k);
		if (!used[k->sec]) {
			if (v != 0)
				return refuse(msg, msg_cap, "%s: set, but the plan has no %s",
					      k->name, section_name[k->sec]);
			continue;
		}
		if (k->optional && !(given & (1u << row)))
			continue; /* left out: the default */
		if (v > k->max)
			return refuse(msg, msg_cap, "%s: %" PRIu64 " exceeds %" PRIu64, k->name, v,
				      k->max);
		if (v < k->min)
			return refuse(msg, msg_cap, "%s: %" PRIu64 " is below %" PRIu64, k->name,
				      v, k->min);
	}
	if (p->predict && p->pred.min_sleep_us > p->pred.max_sleep_us)
		return refuse(msg, msg_cap, "min_sleep_us: %" PRIu64 " exceeds max_sleep_us (%" PRIu64 ")",
			      p->pred.min_sleep_us, p->pred.max_sleep_us);
	if (msg && msg_cap)
		msg[0] = '\0';
	return 0;
}

int garuda_plan_check(const struct garuda_plan *p, char *msg, size_t msg_cap)
{
	unsigned given = 0;
	for (unsigned row = 0; row < NKEYS; row++)
		if (value(p, &keys[row]) != 0)
			given |= 1u << row;
	return check_bounds(p, given, msg, msg_cap);
}

int garuda_plan_format(const struct garuda_plan *p, char *buf, size_t cap)
{
	if (garuda_plan_check(p, NULL, 0) < 0) {
		if (cap)
			buf[0] = '\0';
		return -GARUDA_E_BAD_PLAN;
	}
	char text[GARUDA_PLAN_TEXT_MAX];
	size_t o = (size_t)snprintf(text, sizeof(text), "%s", garuda_plan_kind_name(p->kind));
	bool used[SEC_COUNT_] = { p->kind == GARUDA_PLAN_FLAG, p->predict };
	int last_sec = -1;
	for (unsigned row = 0; row < NKEYS; row++) {
		const struct key *k = &keys[row];
		if (!used[k->sec] || (k->optional && value(p, k) == 0))
			continue;
		const char *lead = ",";
		if ((int)k->sec != last_sec)
			lead = k->sec == SEC_FLAG ? ":" : "+predict:";
		last_sec = (int)k->sec;
		/* bounded: the longest plan needs 172 bytes + NUL (tests pin this) */
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%s=%" PRIu64, lead, k->name,
				      value(p, k));
	}
	if (o + 1 > cap) {
		if (cap)
			buf[0] = '\0';
		return -ENOSPC;
	}
	memcpy(buf, text, o + 1);
	return (int)o;
}

bool garuda_plan_equal(const struct garuda_plan *a, const struct garuda_plan *b)
{
	if (a->kind != b->kind || a->predict != b->predict)
		return false;
	for (unsigned row = 0; row < NKEYS; row++)
		if (value(a, &keys[row]) != value(b, &keys[row]))
			return false;
	return true;
}
