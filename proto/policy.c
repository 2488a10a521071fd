/* policy.c — the wait policy (policy.h). */
#include "policy.h"

#include "estimator.h"
#include "plan.h"

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
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

uint64_t garuda_policy_probe(const struct garuda_policy_wait *w)
{
	if (w->state == GARUDA_POLICY_QUEUED)
		return 0;
	uint64_t start = garuda_policy_start(w), resume = garuda_policy_resume(w);
	if (resume == UINT64_MAX || resume - start < GARUDA_POLICY_PROBE_MIN_NS)
		return 0;
	return resume - (resume - start) / 4;
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

/* ---------------------------------------------------------------- the find */

/* now is the wake aimed at w's opening (resume) or later, and the look before it
 * (prev_pass) was w's probe or later: its store landed in the way's last quarter
 * (garuda_policy_find). Only a find after a sleep asks (not a spinning one's). */
static bool near_miss(const struct garuda_policy_wait *w, const struct garuda_policy_tuning *t,
		      uint64_t now, uint64_t prev_pass, uint64_t resume)
{
	uint64_t probe = garuda_policy_probe(w);
	return probe && add_sat(now, t->early_ns) >= resume && add_sat(prev_pass, t->early_ns) >= probe;
}

struct garuda_find garuda_policy_find(const struct garuda_policy_wait *w,
				      const struct garuda_policy_tuning *t, uint64_t now,
				      uint64_t prev_pass, bool slept)
{
	const struct garuda_find unknown = { GARUDA_FIND_UNKNOWN, 0 };
	if (w->done) /* landed before it was armed, or before its arm was taken */
		return unknown;
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
	 * prediction to 0 for good). A censored find by a wake past its window's opening
	 * (resume) is not recorded: the store may have landed after the opening, in the
	 * wake's lateness, where the prediction expected it. Nor is one by the wake aimed
	 * at the opening (timed wakes end early_ns early: the tuning's, watch.h) when an
	 * earlier look, at the wait's probe or later, saw it unfinished: its store landed
	 * in the last quarter of the way, a few us before the opening as the kernels'
	 * spread puts some, not in a kernel that got shorter (such a find, censored, halved
	 * a 10 ms point's prediction for a kernel 33 us short of its window, and its next
	 * 16 waits took ~25 looks each, 200 us apart from 5 ms on, some found 200 us
	 * late). Both count in a run (estimator.h, record_late). Every other find after a
	 * sleep is censored: a kernel that got shorter is found by the probe or by the
	 * wake aimed at an opening with no probe (a short wait), and halves. */
	uint64_t start = garuda_policy_start(w);
	bool lower = seen && (slept ? given_up(w, t, prev_pass) : !close);
	bool exact = seen && (!slept || lower);
	/* (a window that opens past its start: sleep_ns, or the exact records' sleep alone
	 * when a small censored record took the sleep to 0) */
	uint64_t resume = garuda_policy_resume(w);
	if (!exact && slept && resume > start &&
	    (now > resume || (seen && near_miss(w, t, now, prev_pass, resume))))
		return (struct garuda_find){ GARUDA_FIND_LATE, now > start ? now - start : 0 };
	uint64_t at = lower ? max_u64(prev_pass, start) : now;
	enum garuda_find_kind kind = lower ? GARUDA_FIND_LOWER
				     : exact ? GARUDA_FIND_EXACT
					     : GARUDA_FIND_CENSORED;
	if (at <= start)
		return lower ? unknown : (struct garuda_find){ kind, 0 };
	return (struct garuda_find){ kind, at - start };
}

uint64_t garuda_policy_backstop_ns(uint64_t backstop_ns, uint64_t backoff_div, uint64_t age_ns)
{
	uint64_t grown = age_ns / (backoff_div ? backoff_div : GARUDA_PLAN_BACKOFF_DIV_DEFAULT);
	grown = grown < GARUDA_POLICY_BACKOFF_MAX_NS ? grown : GARUDA_POLICY_BACKOFF_MAX_NS;
	return max_u64(grown, backstop_ns);
}

void garuda_policy_record(struct garuda_estimator *e, const struct garuda_find *f)
{
	switch (f->kind) {
	case GARUDA_FIND_EXACT:
		garuda_estimator_record_exact_ns(e, f->ns);
		break;
	case GARUDA_FIND_LOWER:
		garuda_estimator_record_lower_ns(e, f->ns);
		break;
	case GARUDA_FIND_CENSORED:
		garuda_estimator_record_censored_ns(e, f->ns);
		break;
	case GARUDA_FIND_LATE: /* a run of them is censored (estimator.h) */
		garuda_estimator_record_late_ns(e, f->ns);
		break;
	default: /* UNKNOWN: nothing to record */
		break;
	}
}
