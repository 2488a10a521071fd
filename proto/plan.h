/* plan.h — wait plans: the text a user writes, the typed struct garuda uses.
 *
 * Grammar (docs/plans.md gives it in full, with the bounds and the estimator rules):
 *
 *   plan    := kind [ "+predict:" "margin_us=" N ",min_sleep_us=" N ",max_sleep_us=" N ",window=" N ]
 *   kind    := "block" | "poll" | "flag:park_us=" N ",backstop_us=" N [ ",backoff_div=" N ]
 *   N       := "0" | [1-9][0-9]*        (decimal, fits in 64 bits)
 *
 * Every key exactly once, in the order above, nothing defaulted, no whitespace; the one
 * exception is backoff_div, which may be left out (0 in the struct: the default,
 * GARUDA_PLAN_BACKOFF_DIV_DEFAULT) and is printed back only when given.
 * block+predict is refused (a vendor blocking wait has nothing to sleep in front of);
 * poll+predict and flag+predict are accepted. Bounds: park_us <= 10000,
 * backstop_us <= 1000000, 1 <= backoff_div <= GARUDA_PLAN_BACKOFF_DIV_MAX, 1 <= window <= GARUDA_PLAN_WINDOW_MAX (16),
 * min_sleep_us <= max_sleep_us. The order is fixed so that every accepted text is the
 * one garuda_plan_format() prints for it.
 *
 * Promises:
 *   - Pure and I/O-free, libc only, no allocation, thread-safe (no shared state).
 *   - garuda_plan_parse() either returns 0 with *out fully written (fields that the
 *     plan does not use are zero), or returns -GARUDA_E_BAD_PLAN, leaves *out zeroed
 *     and writes a message that starts with the offending key ("window: 17 exceeds
 *     16", "margin_us: given twice", "max_sleep_us: missing"). Bytes of the text it
 *     echoes are escaped (\xHH) and cut short, so the message is always printable.
 *   - Round trip: for every accepted text t, format(parse(t)) == t byte for byte; for
 *     every plan p that garuda_plan_check() accepts, parse(format(p)) equals p.
 *   - Parsing, checking and formatting use one key table, so they cannot disagree.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GARUDA_PLAN_WINDOW_MAX 16u         /* most samples an estimator keeps */
#define GARUDA_PLAN_PARK_US_MAX 10000u
#define GARUDA_PLAN_BACKSTOP_US_MAX 1000000u
/* backoff_div = 1/r: a wait overdue by t is next looked at no later than
 * max(backstop, t / backoff_div) (proto/watch.h, docs/plans.md "The backoff bound") */
#define GARUDA_PLAN_BACKOFF_DIV_DEFAULT 32u
#define GARUDA_PLAN_BACKOFF_DIV_MAX 1024u
#define GARUDA_PLAN_TEXT_MAX 192u          /* longest plan text + NUL (format never needs more) */
#define GARUDA_PLAN_MSG_MAX 192u           /* a message buffer this size is never cut short */
/* garudad's default plan: the best policy measured (tests/bench "plans" section, and
 * garuda-replay over tests/traces: window 16 meets the p99 target on 2 ms +-10 %
 * kernels, where window 8 gave 5.6x poll's, for ~5 % more scanner time;
 * docs/plans.md). garuda-replay's default too. */
#define GARUDA_PLAN_GARUDAD_DEFAULT \
	"flag:park_us=1000,backstop_us=200+predict:margin_us=100,min_sleep_us=20,max_sleep_us=1000000,window=16"

enum garuda_plan_kind {
	GARUDA_PLAN_BLOCK = 1, /* the backend's synchronize */
	GARUDA_PLAN_POLL = 2,  /* query polling */
	GARUDA_PLAN_FLAG = 3,  /* park on the readiness form with backstop queries */
};

struct garuda_plan_flag {
	uint64_t park_us;     /* <= GARUDA_PLAN_PARK_US_MAX */
	uint64_t backstop_us; /* <= GARUDA_PLAN_BACKSTOP_US_MAX */
	uint64_t backoff_div; /* 0: not given (GARUDA_PLAN_BACKOFF_DIV_DEFAULT) */
};

struct garuda_plan_predict {
	uint64_t margin_us;    /* wake this much before the predicted completion */
	uint64_t min_sleep_us; /* a shorter sleep is not worth taking: do not sleep */
	uint64_t max_sleep_us; /* never sleep longer; >= min_sleep_us */
	uint64_t window;       /* residuals kept, 1 .. GARUDA_PLAN_WINDOW_MAX */
};

struct garuda_plan {
	enum garuda_plan_kind kind;
	struct garuda_plan_flag flag;     /* kind == GARUDA_PLAN_FLAG only; zero otherwise */
	bool predict;                     /* "+predict" given */
	struct garuda_plan_predict pred;  /* predict only; zero otherwise */
};

/* Parse len bytes of text (a NUL or any other byte outside the grammar is refused).
 * Returns 0 or -GARUDA_E_BAD_PLAN; msg (may be NULL when msg_cap is 0) gets a
 * NUL-terminated message naming the offending key, or "" on success. */
int garuda_plan_parse_n(const char *text, size_t len, struct garuda_plan *out, char *msg,
			size_t msg_cap);

/* Same for a NUL-terminated string. */
int garuda_plan_parse(const char *text, struct garuda_plan *out, char *msg, size_t msg_cap);

/* Is p a plan that parse could have produced? 0 or -GARUDA_E_BAD_PLAN with a message
 * as above (also for fields set that the plan does not use, and an unknown kind). */
int garuda_plan_check(const struct garuda_plan *p, char *msg, size_t msg_cap);

/* Print p's canonical text into buf (cap bytes, NUL-terminated). Returns the text's
 * length, -GARUDA_E_BAD_PLAN when garuda_plan_check() refuses p, or -ENOSPC when cap
 * is too small (buf then holds ""). cap >= GARUDA_PLAN_TEXT_MAX always suffices. */
int garuda_plan_format(const struct garuda_plan *p, char *buf, size_t cap);

/* Field-by-field equality (the structs have padding: do not memcmp them). */
bool garuda_plan_equal(const struct garuda_plan *a, const struct garuda_plan *b);

/* "block", "poll", "flag", or NULL for an unknown kind. */
const char *garuda_plan_kind_name(enum garuda_plan_kind kind);
