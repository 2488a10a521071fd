/* estimator.c — the deadline estimator (estimator.h): a ring of the last `window`
 * records, the prediction is their minimum (computed on demand: at most 16 compares). */
#include "estimator.h"

#include <string.h>

#include "errcode.h"

static uint64_t us_to_ns(uint64_t us)
{
	return us > UINT64_MAX / 1000u ? UINT64_MAX : us * 1000u;
}

int garuda_estimator_init(struct garuda_estimator *e, const struct garuda_plan_predict *pred)
{
	/* the same bounds the plan parser applies (plan.c's key table) */
	struct garuda_plan p = { .kind = GARUDA_PLAN_POLL, .predict = true, .pred = *pred };
	if (garuda_plan_check(&p, NULL, 0) < 0)
		return -GARUDA_E_BAD_PLAN;
	memset(e, 0, sizeof(*e));
	e->margin_ns = us_to_ns(pred->margin_us);
	e->min_sleep_ns = us_to_ns(pred->min_sleep_us);
	e->max_sleep_ns = us_to_ns(pred->max_sleep_us);
	e->window = (uint32_t)pred->window;
	return 0;
}

void garuda_estimator_reset(struct garuda_estimator *e)
{
	e->count = 0;
	e->next = 0;
	e->censored_slots = 0;
	e->lower_slots = 0;
	e->exact = 0;
	e->censored = 0;
	e->late_run = 0;
	memset(e->ring, 0, sizeof(e->ring));
}

/* the minimum of the records whose slots are not in skip; false when there is none */
static bool min_of(const struct garuda_estimator *e, uint32_t skip, uint64_t *out_ns)
{
	bool any = false;
	uint64_t m = UINT64_MAX;
	for (uint32_t i = 0; i < e->count; i++)
		if (!(skip >> i & 1) && (!any || e->ring[i] < m)) {
			m = e->ring[i];
			any = true;
		}
	if (any)
		*out_ns = m;
	return any;
}

_Static_assert(GARUDA_PLAN_WINDOW_MAX <= 32, "censored_slots has a bit per ring slot");

/* The slots the prediction and the sleep skip: every lower bound an exact record came
 * after (a lower bound is consistent with the exact records above it, and one far
 * below them, from a look a host stall delayed, would otherwise hold the deadline that
 * far early for a whole window). Newest first from the ring's next slot. */
static uint32_t superseded(const struct garuda_estimator *e)
{
	uint32_t skip = 0, slot = e->next, exact = ~(e->censored_slots | e->lower_slots);
	bool after = false; /* an exact record newer than this slot */
	for (uint32_t i = 0; i < e->count; i++) {
		slot = slot ? slot - 1 : e->window - 1;
		if (after && (e->lower_slots >> slot & 1))
			skip |= 1u << slot;
		after = after || (exact >> slot & 1);
	}
	return skip;
}

bool garuda_estimator_prediction_ns(const struct garuda_estimator *e, uint64_t *out_ns)
{
	return min_of(e, superseded(e), out_ns);
}

enum kind { EXACT, LOWER, CENSORED };

static void push(struct garuda_estimator *e, uint64_t v, enum kind k)
{
	uint32_t bit = 1u << e->next;
	e->censored_slots = k == CENSORED ? e->censored_slots | bit : e->censored_slots & ~bit;
	e->lower_slots = k == LOWER ? e->lower_slots | bit : e->lower_slots & ~bit;
	e->ring[e->next] = v;
	e->late_run = 0;
	e->next = e->next + 1 == e->window ? 0 : e->next + 1;
	if (e->count < e->window)
		e->count++;
}

void garuda_estimator_record_exact_ns(struct garuda_estimator *e, uint64_t residual_ns)
{
	push(e, residual_ns, EXACT);
	e->exact++;
}

void garuda_estimator_record_lower_ns(struct garuda_estimator *e, uint64_t lower_ns)
{
	push(e, lower_ns, LOWER);
	e->exact++;
}

/* The slots the exact sleep and margin skip: the censored records, and every lower
 * bound but the newest of the records that are not censored (a censored record says
 * a kernel came early, nothing of where late-found ones land: it does not supersede). */
static uint32_t not_exact(const struct garuda_estimator *e)
{
	uint32_t keep = 0, slot = e->next;
	for (uint32_t i = 0; i < e->count; i++) {
		slot = slot ? slot - 1 : e->window - 1;
		if (!(e->censored_slots >> slot & 1)) {
			keep = 1u << slot;
			break;
		}
	}
	return e->censored_slots | (e->lower_slots & ~keep);
}

void garuda_estimator_record_censored_ns(struct garuda_estimator *e, uint64_t wake_ns)
{
	uint64_t pred;
	uint64_t v = wake_ns;
	if (garuda_estimator_prediction_ns(e, &pred) && pred < v)
		v = pred;
	push(e, v / 2, CENSORED);
	e->censored++;
}

void garuda_estimator_record_late_ns(struct garuda_estimator *e, uint64_t wake_ns)
{
	if (++e->late_run >= GARUDA_ESTIMATOR_LATE_RUN)
		garuda_estimator_record_censored_ns(e, wake_ns);
}

/* The margin the exact records ask for: half their spread (max - min), at least
 * GARUDA_ESTIMATOR_MARGIN_FLOOR_NS, at most margin; margin while fewer than 2 exact
 * records are held (nothing is known of the spread yet). */
uint64_t garuda_estimator_exact_margin_ns(const struct garuda_estimator *e)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	uint32_t n = 0, skip = not_exact(e);
	for (uint32_t i = 0; i < e->count; i++)
		if (!(skip >> i & 1)) {
			lo = e->ring[i] < lo ? e->ring[i] : lo;
			hi = e->ring[i] > hi ? e->ring[i] : hi;
			n++;
		}
	if (n < 2)
		return e->margin_ns;
	uint64_t m = (hi - lo) / 2;
	if (m < GARUDA_ESTIMATOR_MARGIN_FLOOR_NS)
		m = GARUDA_ESTIMATOR_MARGIN_FLOOR_NS;
	return m < e->margin_ns ? m : e->margin_ns;
}

static uint64_t sleep_of(const struct garuda_estimator *e, uint32_t skip, uint64_t margin,
			 uint64_t cap)
{
	uint64_t pred;
	if (!min_of(e, skip, &pred) || pred <= margin)
		return 0;
	uint64_t s = pred - margin;
	if (s < e->min_sleep_ns)
		return 0;
	return s > cap ? cap : s;
}

uint64_t garuda_estimator_horizon_ns(const struct garuda_estimator *e)
{
	return sleep_of(e, superseded(e), e->margin_ns, UINT64_MAX);
}

uint64_t garuda_estimator_exact_horizon_ns(const struct garuda_estimator *e)
{
	return sleep_of(e, not_exact(e), garuda_estimator_exact_margin_ns(e), UINT64_MAX);
}

uint64_t garuda_estimator_sleep_ns(const struct garuda_estimator *e)
{
	return sleep_of(e, superseded(e), e->margin_ns, e->max_sleep_ns);
}

uint64_t garuda_estimator_exact_sleep_ns(const struct garuda_estimator *e)
{
	return sleep_of(e, not_exact(e), garuda_estimator_exact_margin_ns(e),
			e->max_sleep_ns);
}
