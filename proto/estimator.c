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
	e->exact = 0;
	e->censored = 0;
	memset(e->ring, 0, sizeof(e->ring));
}

bool garuda_estimator_prediction_ns(const struct garuda_estimator *e, uint64_t *out_ns)
{
	if (e->count == 0)
		return false;
	uint64_t m = UINT64_MAX;
	for (uint32_t i = 0; i < e->count; i++)
		if (e->ring[i] < m)
			m = e->ring[i];
	*out_ns = m;
	return true;
}

static void push(struct garuda_estimator *e, uint64_t v)
{
	e->ring[e->next] = v;
	e->next = e->next + 1 == e->window ? 0 : e->next + 1;
	if (e->count < e->window)
		e->count++;
}

void garuda_estimator_record_exact_ns(struct garuda_estimator *e, uint64_t residual_ns)
{
	push(e, residual_ns);
	e->exact++;
}

void garuda_estimator_record_censored_ns(struct garuda_estimator *e, uint64_t wake_ns)
{
	uint64_t pred;
	uint64_t v = wake_ns;
	if (garuda_estimator_prediction_ns(e, &pred) && pred < v)
		v = pred;
	push(e, v / 2);
	e->censored++;
}

uint64_t garuda_estimator_sleep_ns(const struct garuda_estimator *e)
{
	uint64_t pred;
	if (!garuda_estimator_prediction_ns(e, &pred) || pred <= e->margin_ns)
		return 0;
	uint64_t s = pred - e->margin_ns;
	if (s < e->min_sleep_ns)
		return 0;
	return s > e->max_sleep_ns ? e->max_sleep_ns : s;
}
