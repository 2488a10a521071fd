/* plan.c — a stream's wait plan (docs/plans.md, docs/client.md "Waiting"): parsing
 * and applying it (garuda_stream_set_plan(), garuda_stream_set_wait(), the client's
 * default plan at garuda_stream_new()), printing it back, the stream's wait
 * statistics, and garuda_plan_message(). wait.c waits by what this file stores in
 * s->pl.
 *
 * Promises: a stream's plan, spin, backstop and park change only here, together, under
 * s->plan_lock (wait.c adds to the statistics and the estimator under the same lock),
 * and the estimator starts afresh with each +predict plan; a backstop is never below MIN_BACKSTOP_NS nor, from set_wait, above
 * MAX_BACKSTOP_NS; a park is at least 1 us; a refused plan leaves the stream's plan as
 * it was and its reason in garuda_plan_message() (this thread's). */
#include "internal.h"

#include <errno.h>
#include <string.h>

#define DEFAULT_SPIN_NS 20000ull
#define DEFAULT_BACKSTOP_NS 1000000ull
#define MIN_BACKSTOP_NS 10000ull
/* larger backstops are capped here, so that now + backstop never wraps (the monotonic
 * clock stays far below 2^63 ns): one hour, documented in docs/client.md */
#define MAX_BACKSTOP_NS 3600000000000ull
#define DEFAULT_PARK_US GARUDA_PLAN_PARK_US_MAX

static _Thread_local char plan_msg[GARUDA_PLAN_MSG_MAX];

const char *garuda_plan_message(void)
{
	return plan_msg;
}

int plan_parse_tls(const char *text, struct garuda_plan *out)
{
	return garuda_plan_parse(text, out, plan_msg, sizeof(plan_msg));
}

/* backstop_ns 0: the plan's own (flag: backstop_us, at least MIN_BACKSTOP_NS; block
 * and poll: the polling schedule's longest step) */
void stream_apply_plan(struct garuda_stream *s, const struct garuda_plan *p, uint64_t spin_ns,
		       uint64_t backstop_ns)
{
	pthread_mutex_lock(&s->plan_lock);
	s->pl.plan = *p;
	if (p->predict)
		garuda_estimator_init(&s->pl.est, &p->pred); /* p passed garuda_plan_check */
	s->pl.spin_ns = spin_ns;
	if (!backstop_ns)
		backstop_ns = p->kind == GARUDA_PLAN_FLAG ? p->flag.backstop_us * NS_PER_US
							  : POLL_STEP_MAX_NS;
	s->pl.backstop_ns = backstop_ns < MIN_BACKSTOP_NS ? MIN_BACKSTOP_NS : backstop_ns;
	s->pl.sleeps = s->pl.spin_outs = 0;
	pthread_mutex_unlock(&s->plan_lock);
}

int garuda_stream_set_plan(struct garuda_stream *s, const char *text)
{
	if (!s || !text)
		return client_fail(-EINVAL);
	struct garuda_plan p;
	int r = plan_parse_tls(text, &p);
	if (r < 0) {
		client_set_error("%s", plan_msg); /* garuda_last_error() says it too */
		return client_fail(r);
	}
	stream_apply_plan(s, &p, 0, 0);
	return 0;
}

int garuda_stream_get_plan(struct garuda_stream *s, char *buf, size_t cap)
{
	if (!s || !buf)
		return client_fail(-EINVAL);
	pthread_mutex_lock(&s->plan_lock);
	int r = garuda_plan_format(&s->pl.plan, buf, cap);
	pthread_mutex_unlock(&s->plan_lock);
	return client_return(r);
}

int garuda_stream_stats(struct garuda_stream *s, struct garuda_stream_stats *out)
{
	if (!s || !out)
		return client_fail(-EINVAL);
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->plan_lock);
	out->sleeps = s->pl.sleeps;
	out->spin_outs = s->pl.spin_outs;
	if (s->pl.plan.predict) {
		out->exact = s->pl.est.exact;
		out->censored = s->pl.est.censored;
		garuda_estimator_prediction_ns(&s->pl.est, &out->prediction_ns);
		out->sleep_ns = garuda_estimator_sleep_ns(&s->pl.est);
	}
	pthread_mutex_unlock(&s->plan_lock);
	return 0;
}

int garuda_stream_set_wait(struct garuda_stream *s, uint64_t spin_ns, uint64_t backstop_ns)
{
	if (!s || backstop_ns < MIN_BACKSTOP_NS)
		return client_fail(-EINVAL);
	if (backstop_ns > MAX_BACKSTOP_NS)
		backstop_ns = MAX_BACKSTOP_NS;
	uint64_t b_us = backstop_ns / NS_PER_US;
	struct garuda_plan p = {
		.kind = GARUDA_PLAN_FLAG,
		.flag = { .park_us = DEFAULT_PARK_US,
			  .backstop_us = b_us > GARUDA_PLAN_BACKSTOP_US_MAX ? GARUDA_PLAN_BACKSTOP_US_MAX
									     : b_us },
	};
	stream_apply_plan(s, &p, spin_ns, backstop_ns);
	return 0;
}

/* A new stream's plan: the client's default plan (GARUDA_PLAN), else spin
 * DEFAULT_SPIN_NS, then block with a DEFAULT_BACKSTOP_NS backstop. */
void stream_plan_init(struct garuda_stream *s)
{
	if (s->client->has_plan)
		stream_apply_plan(s, &s->client->default_plan, 0, 0);
	else
		garuda_stream_set_wait(s, DEFAULT_SPIN_NS, DEFAULT_BACKSTOP_NS);
}
