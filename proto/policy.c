/* policy.c — the wait policy (policy.h). */
#include "policy.h"

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}


void garuda_policy_wait_init(struct garuda_policy_wait *w, uint64_t word, uint64_t target,
			     uint64_t arm_ns, uint64_t taken_ns, uint64_t sleep_ns,
			     uint64_t exact_sleep_ns)
{
	*w = (struct garuda_policy_wait){ .word = word,
					  .target = target,
					  .arm_ns = arm_ns,
					  .taken_ns = taken_ns,
					  .start_ns = arm_ns,
					  .sleep_ns = sleep_ns,
					  .exact_sleep_ns = exact_sleep_ns,
					  .state = GARUDA_POLICY_NEW };
}

void garuda_policy_wait_start(struct garuda_policy_wait *w, uint64_t start)
{
	w->state = GARUDA_POLICY_STARTED;
	w->start_ns = start;
}

void garuda_policy_wait_queue(struct garuda_policy_wait *w)
{
	w->state = GARUDA_POLICY_QUEUED;
}

uint64_t garuda_policy_start(const struct garuda_policy_wait *w)
{
	switch (w->state) {
	case GARUDA_POLICY_QUEUED:
		return UINT64_MAX;
	case GARUDA_POLICY_STARTED:
		return w->start_ns;
	default:
		return w->arm_ns;
	}
}

/* start + sleep, start + max(sleep, exact sleep); UINT64_MAX while QUEUED. Computed
 * at each call (a watcher looks only at due words: no cache per wait is worth its 16
 * bytes a wait) */
uint64_t garuda_policy_deadline(const struct garuda_policy_wait *w)
{
	return add_sat(garuda_policy_start(w), w->sleep_ns);
}

uint64_t garuda_policy_resume(const struct garuda_policy_wait *w)
{
	return add_sat(garuda_policy_start(w), max_u64(w->sleep_ns, w->exact_sleep_ns));
}


bool garuda_policy_in_window(const struct garuda_policy_wait *w,
			     const struct garuda_policy_tuning *t, uint64_t at, uint64_t *open_at)
{
	*open_at = UINT64_MAX;
	if (w->state == GARUDA_POLICY_QUEUED)
		return false;
	uint64_t opens = t->forever ? garuda_policy_deadline(w) : garuda_policy_resume(w);
	if (at < opens) {
		*open_at = opens;
		return false;
	}
	/* one window of park_ns however long the prediction: a long kernel is slept
	 * toward (watch.h), not spun on for twice its sleep */
	return t->forever || at < add_sat(opens, t->park_ns);
}

/* the watcher was not spinning on w at `at`: past its deadline (less the early wake
 * the short ladder starts by), outside its spin window */
static bool given_up(const struct garuda_policy_wait *w, const struct garuda_policy_tuning *t,
		     uint64_t at)
{
	uint64_t open;
	return add_sat(at, t->early_ns) >= garuda_policy_deadline(w) &&
	       !garuda_policy_in_window(w, t, at, &open);
}

/* ---------------------------------------------------------------- stream order */

/* An open-addressing table over words: slot = (index of the word's lowest wait) + 1
 * (0: empty), then the run's earliest start. */
static unsigned table_size(unsigned n)
{
	unsigned cap = 8;
	while (cap < 2 * n)
		cap *= 2;
	return cap;
}

size_t garuda_policy_order_scratch(unsigned n)
{
	return 2 * (size_t)table_size(n);
}

static unsigned slot_of(const uint64_t *tab, unsigned cap, struct garuda_policy_wait *const *v,
			uint64_t word)
{
	uint64_t h = word * 0x9e3779b97f4a7c15ull;
	unsigned i = (unsigned)(h >> 32) & (cap - 1);
	while (tab[2 * i] && v[tab[2 * i] - 1]->word != word)
		i = (i + 1) & (cap - 1);
	return i;
}

/* a's target comes before b's, in wrapping order */
static bool before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

static uint64_t clock_if_head(const struct garuda_policy_wait *w, uint64_t landing_ns)
{
	switch (w->state) {
	case GARUDA_POLICY_QUEUED: /* its predecessor landed (or went away) by this pass */
		return max_u64(w->arm_ns, landing_ns);
	case GARUDA_POLICY_STARTED:
		return w->start_ns;
	default: /* no armed predecessor: the wait starts at its arm */
		return w->arm_ns;
	}
}

void garuda_policy_order(struct garuda_policy_wait *const *v, unsigned n, uint64_t landing_ns,
			 uint64_t *scratch)
{
	unsigned cap = table_size(n);
	for (unsigned i = 0; i < 2 * cap; i++)
		scratch[i] = 0;
	for (unsigned i = 0; i < n; i++) { /* each word's lowest target */
		unsigned s = slot_of(scratch, cap, v, v[i]->word);
		if (!scratch[2 * s] || before(v[i]->target, v[scratch[2 * s] - 1]->target))
			scratch[2 * s] = i + 1;
		scratch[2 * s + 1] = UINT64_MAX;
	}
	for (unsigned i = 0; i < n; i++) { /* the head run's earliest clock */
		unsigned s = slot_of(scratch, cap, v, v[i]->word);
		if (v[i]->target == v[scratch[2 * s] - 1]->target)
			scratch[2 * s + 1] =
				min_u64(scratch[2 * s + 1], clock_if_head(v[i], landing_ns));
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned s = slot_of(scratch, cap, v, v[i]->word);
		if (v[i]->target == v[scratch[2 * s] - 1]->target) {
			v[i]->start_ns = scratch[2 * s + 1];
			v[i]->state = GARUDA_POLICY_STARTED;
		} else {
			v[i]->state = GARUDA_POLICY_QUEUED;
		}
	}
}

/* ---------------------------------------------------------------- the look */

uint64_t garuda_policy_next(const struct garuda_policy_wait *first, size_t stride, unsigned n,
			    const struct garuda_policy_tuning *t, uint64_t now, uint64_t *ladder_ns)
{
	uint64_t early = t->early_ns;
	uint64_t lead = add_sat(GARUDA_POLICY_SPIN_AHEAD_NS, early), next = UINT64_MAX;
	bool overdue = false;
	for (unsigned i = 0; i < n; i++) {
		const struct garuda_policy_wait *w =
			(const struct garuda_policy_wait *)((const char *)first + (size_t)i * stride);
		if (w->state == GARUDA_POLICY_QUEUED)
			continue; /* its predecessor's find starts its clock */
		uint64_t open;
		if (garuda_policy_in_window(w, t, now, &open))
			return 0;
		if (open != UINT64_MAX) {
			if (open <= add_sat(now, lead))
				return 0; /* a window opens within the lead: spin into it */
			next = min_u64(next, open - early);
		}
		/* its deadline starts the short ladder (before its window: a halved one) */
		uint64_t dl = garuda_policy_deadline(w);
		if (add_sat(now, early) >= dl)
			overdue = true;
		else
			next = min_u64(next, dl - early);
	}
	if (overdue) {
		uint64_t max = t->backstop_ns ? t->backstop_ns : GARUDA_POLICY_STEP_MIN_NS;
		*ladder_ns = *ladder_ns ? *ladder_ns * 2 : GARUDA_POLICY_STEP_MIN_NS;
		if (*ladder_ns > max)
			*ladder_ns = max;
		next = min_u64(next, add_sat(now, *ladder_ns));
	}
	return next;
}

/* ---------------------------------------------------------------- the find */

struct garuda_find garuda_policy_find(const struct garuda_policy_wait *w,
				      const struct garuda_policy_tuning *t, uint64_t now,
				      uint64_t prev_pass, bool slept)
{
	const struct garuda_find unknown = { GARUDA_FIND_UNKNOWN, 0 };
	bool seen = w->taken_ns <= prev_pass; /* some earlier pass saw it unfinished */
	bool close = now - prev_pass <= GARUDA_POLICY_EXACT_GAP_NS;
	if (w->state == GARUDA_POLICY_QUEUED) {
		/* the word jumped over its predecessor and it between two looks: its work
		 * ran within (prev_pass, now]. Spinning closely, that bounds it (censored);
		 * after a sleep the watcher overslept both: nothing is known. */
		if (seen && !slept && close)
			return (struct garuda_find){ GARUDA_FIND_CENSORED,
						     now - max_u64(w->arm_ns, prev_pass) };
		return unknown;
	}
	/* Only a wait some pass saw unfinished can be exact; one found done by its first
	 * look is censored, spinning or not. Spinning: exact, and a long gap (the watcher
	 * was preempted) gives the lower bound prev_pass. After a sleep: censored,
	 * unless the watcher was not spinning on it before that sleep (given up): then
	 * too the lower bound, as exact (a censored halving there would drive the
	 * prediction to 0 for good). A censored find by a wake late past its deadline is
	 * not recorded: the store may have landed in the wake's lateness. The wake was
	 * meant for the later of its deadline and its window's opening (a window that
	 * opens within the margin past the deadline is slept to: watch.h). */
	uint64_t start = garuda_policy_start(w);
	bool lower = seen && (slept ? given_up(w, t, prev_pass) : !close);
	bool exact = seen && (!slept || lower);
	if (!exact && slept && w->sleep_ns &&
	    now > add_sat(garuda_policy_resume(w), GARUDA_POLICY_LATE_WAKE_NS))
		return (struct garuda_find){ GARUDA_FIND_LATE, 0 };
	uint64_t at = lower ? max_u64(prev_pass, start) : now;
	if (at <= start)
		return lower ? unknown
			     : (struct garuda_find){ exact ? GARUDA_FIND_EXACT
							   : GARUDA_FIND_CENSORED,
						     0 };
	return (struct garuda_find){ exact ? GARUDA_FIND_EXACT : GARUDA_FIND_CENSORED, at - start };
}

/* ---------------------------------------------------------------- flag, no +predict */

uint64_t garuda_policy_ladder(const struct garuda_policy_tuning *t, uint64_t now,
			      uint64_t last_active, uint64_t *step_ns)
{
	if (t->forever || now - last_active < t->park_ns)
		return 0;
	*step_ns = *step_ns ? *step_ns * 2 : GARUDA_POLICY_STEP_MIN_NS;
	if (*step_ns > t->backstop_ns)
		*step_ns = t->backstop_ns;
	return add_sat(now, *step_ns);
}
