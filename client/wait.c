/* wait.c — libgaruda's waiting (docs/client.md, "Waiting"): garuda_stream_wait() by
 * the stream's plan (spin; +predict's sleep and window in stream order; block on the
 * readiness form; the backstop query), what a find tells the stream's estimator (the
 * wait policy's rule, proto/policy.h), and the eventfd form's fd and drain. The
 * memory-ordering rules it relies on are stream.c's head comment.
 *
 * Threads: the caller's; a stream is waited on by one thread at a time (garuda.h). */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "futex.h"
#include "policy.h"

static struct timespec ns_to_ts(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* Block on the readiness form until `until` (monotonic ns) or a wake. */
static void block(struct garuda_stream *s, uint64_t now, uint64_t until, uint64_t ready_seen,
		  uint32_t bell_seen)
{
	stream_form(s)->block(s, now, until, ready_seen, bell_seen);
}

/* The longest a spin step parks in a hardware word wait: then, as after 64
 * cpu_relax()es, spin_give_way() and a look at the clock and the backstop. */
#define SPIN_WORDWAIT_STEP_NS 20000u

/* Spin on the word until it reaches seq or `end`; every backstop_ns, query the native
 * stream. 0 reached (*seen_ns: the clock right after the load that saw it), 1 ran
 * out, or -GARUDA_E_STREAM_FAULT. A step idles in cpu_relax(), or, where the client
 * has a hardware word wait (GARUDA_WORDWAIT, util/wordwait.h), parked on the word's
 * line until a store to it, the end, the backstop or SPIN_WORDWAIT_STEP_NS. */
static int spin_until(struct garuda_stream *s, uint64_t seq, uint64_t end, uint64_t backstop_ns,
		      uint64_t *seen_ns)
{
	const struct wordwait *ww = s->client->ww;
	uint64_t step_ns =
		ww->min_park_ns > SPIN_WORDWAIT_STEP_NS ? ww->min_park_ns : SPIN_WORDWAIT_STEP_NS;
	uint64_t now = garuda_now_ns();
	uint64_t backstop_at = now + backstop_ns;
	uint64_t steps = 0, parks = 0;
	int r = 1;
	for (unsigned i = 1; now < end; i++) {
		uint64_t v = word_load(s->word);
		if (garuda_reached(v, seq)) {
			*seen_ns = garuda_now_ns();
			r = 0;
			goto out;
		}
		bool hw = false;
		if (ww->variant != WORDWAIT_SPIN) {
			uint64_t t = garuda_now_ns();
			uint64_t until = end < backstop_at ? end : backstop_at;
			if (until > t + step_ns)
				until = t + step_ns;
			hw = until > t && until - t >= ww->min_park_ns;
			if (hw) {
				wordwait_arm(ww, s->word);
				if (word_load(s->word) ==
				    v) /* after the arm: nothing landed since */
					parks += (unsigned)wordwait_park(ww, until - t);
			}
		}
		if (!hw)
			cpu_relax();
		if (hw || (i & 63) == 0) {
			steps++;
			spin_give_way(); /* a thread of this process may be waiting for the CPU */
			now = garuda_now_ns();
			if (now >= backstop_at) {
				int q = s->seg->ops->query(s->seg->backend, s->native);
				if (q == -GARUDA_E_STREAM_FAULT &&
				    !garuda_reached(word_load(s->word), seq)) {
					r = q;
					goto out;
				}
				backstop_at = now + backstop_ns;
			}
		}
	}
	if (garuda_reached(word_load(s->word), seq)) {
		*seen_ns = garuda_now_ns();
		r = 0;
	}
out:
	if (steps)
		atomic_fetch_add_explicit(&s->client->spin_steps, steps, memory_order_relaxed);
	if (parks)
		atomic_fetch_add_explicit(&s->client->ww_steps, parks, memory_order_relaxed);
	return r;
}

/* What a find of seq at `at` (clock started at t0, the sleep it was given) tells the
 * stream's estimator: the policy's rule (proto/policy.h), as garudad's scanner and the
 * in-process reactor apply it. prev: the look before (the spin looks continuously:
 * at itself), slept: found by the look after a sleep. */
static void record_find(struct garuda_stream *s, uint64_t seq, uint64_t t0, uint64_t sleep_ns,
			uint64_t at, uint64_t prev, bool slept)
{
	struct garuda_policy_tuning t = { .spin_ns = 0 };
	struct garuda_policy_wait w;
	garuda_policy_wait_init(&w, (uintptr_t)s->word, seq, t0, t0, sleep_ns, sleep_ns);
	struct garuda_find f = garuda_policy_find(&w, &t, at, prev, slept);
	pthread_mutex_lock(&s->plan_lock);
	if (s->pl.plan.predict && f.kind == GARUDA_FIND_EXACT)
		garuda_estimator_record_exact_ns(&s->pl.est, f.ns);
	else if (s->pl.plan.predict && f.kind == GARUDA_FIND_CENSORED)
		garuda_estimator_record_censored_ns(&s->pl.est, f.ns);
	pthread_mutex_unlock(&s->plan_lock);
}

/* +predict: sleep to margin before the predicted completion of seq (its clock started
 * at t0), then spin. Records the estimator's sample. 0 reached, 1 go on with the
 * kind's wait, or a negative code. */
static int predict_phase(struct garuda_stream *s, const struct garuda_plan *p, uint64_t seq,
			 uint64_t t0, uint64_t deadline, uint64_t sleep_ns, uint64_t backstop_ns)
{
	if (sleep_ns) {
		uint64_t until = sleep_ns > deadline - t0 ? deadline : t0 + sleep_ns;
		struct timespec ts = ns_to_ts(until);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		uint64_t wake = garuda_now_ns();
		bool done = garuda_reached(word_load(s->word), seq);
		pthread_mutex_lock(&s->plan_lock);
		s->pl.sleeps++;
		pthread_mutex_unlock(&s->plan_lock);
		if (done) { /* a wake that finds the work done: found at the time it asked to
			     * wake (the timer's lateness is not the prediction's fault; garudad's
			     * scanner takes it out by waking early) */
			record_find(s, seq, t0, sleep_ns, until, t0, true);
			return 0;
		}
		if (wake >= deadline)
			return -GARUDA_E_TIMEOUT;
	}
	uint64_t budget = p->pred.max_sleep_us > UINT64_MAX / NS_PER_US
				  ? UINT64_MAX
				  : p->pred.max_sleep_us * NS_PER_US;
	uint64_t m2 = p->pred.margin_us > UINT64_MAX / (2 * NS_PER_US)
			      ? UINT64_MAX
			      : 2 * p->pred.margin_us * NS_PER_US;
	if (m2 > budget)
		budget = m2;
	uint64_t now = garuda_now_ns();
	uint64_t end = budget > deadline - now ? deadline : now + budget;
	uint64_t seen;
	int r = spin_until(s, seq, end, backstop_ns, &seen);
	if (r == 0) /* the spin ran when the word moved */
		record_find(s, seq, t0, sleep_ns, seen, seen, false);
	if (r == 1) {
		pthread_mutex_lock(&s->plan_lock);
		s->pl.spin_outs++;
		pthread_mutex_unlock(&s->plan_lock);
	}
	return r;
}

/* +predict in stream order: a sequence queued behind others on the stream cannot start
 * before they land, so wait for each in turn, each with its own clock (its
 * predecessor's landing as seen here; the first from the call), and the estimator
 * learns one kernel, not several (docs/plans.md, "Several outstanding sequences on
 * one word"). Returns as predict_phase() for seq. */
static int predict_in_order(struct garuda_stream *s, const struct garuda_plan *p, uint64_t seq,
			    uint64_t t0, uint64_t deadline, uint64_t backstop_ns)
{
	for (;;) {
		uint64_t v = word_load(s->word);
		if (garuda_reached(v, seq))
			return 0;
		uint64_t head = v + 1; /* the next sequence to land: its clock runs from t0 */
		pthread_mutex_lock(&s->plan_lock);
		uint64_t sleep_ns = garuda_estimator_sleep_ns(&s->pl.est);
		pthread_mutex_unlock(&s->plan_lock);
		int r = predict_phase(s, p, head, t0, deadline, sleep_ns, backstop_ns);
		if (r != 0 || head == seq)
			return r;
		t0 = garuda_now_ns(); /* head landed: the next one's clock starts */
	}
}

/* block: the backend's synchronize, when it has one and the wait has no limit. 0
 * reached, 1 go on polling, or a negative code. */
static int sync_phase(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns)
{
	const struct garuda_backend_ops *ops = s->seg->ops;
	if (timeout_ns >= 0 || !ops->synchronize)
		return 1;
	int r = ops->synchronize(s->seg->backend, s->native);
	if (garuda_reached(word_load(s->word), seq))
		return 0;
	return r == -GARUDA_E_STREAM_FAULT ? r : 1;
}

int garuda_stream_wait(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns)
{
	if (!s) {
		client_set_error("garuda_stream_wait: the stream is NULL");
		return -EINVAL;
	}
	/* a sequence never signalled would never complete */
	uint64_t signalled = atomic_load_explicit(&s->signalled, memory_order_acquire);
	if (seq == 0 || !garuda_reached(signalled, seq)) {
		if (signalled == 0)
			client_set_error("a wait before any signal on this stream: garuda_stream_signal() "
					 "gives the sequence to wait for");
		else if (seq == 0)
			client_set_error("a wait for sequence 0: sequences start at 1 (the stream's last "
					 "signal gave %llu)", (unsigned long long)signalled);
		else
			client_set_error("a wait for sequence %llu, which was not signalled on this "
					 "stream (its last signal gave %llu): it would never complete",
					 (unsigned long long)seq, (unsigned long long)signalled);
		return -EINVAL;
	}
	if (garuda_reached(word_load(s->word), seq))
		return 0;
	if (timeout_ns == 0)
		return -GARUDA_E_TIMEOUT;

	struct garuda_client *c = s->client;
	uint64_t now = garuda_now_ns();
	uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;

	pthread_mutex_lock(&s->plan_lock);
	struct garuda_plan plan = s->pl.plan;
	uint64_t spin_ns = s->pl.spin_ns, backstop_ns = s->pl.backstop_ns, park_ns = s->pl.park_ns;
	pthread_mutex_unlock(&s->plan_lock);

	int r;
	if (plan.predict) {
		if ((r = predict_in_order(s, &plan, seq, now, deadline, backstop_ns)) <= 0)
			return r;
	} else if (plan.kind == GARUDA_PLAN_BLOCK) {
		if ((r = sync_phase(s, seq, timeout_ns)) <= 0)
			return r;
	} else if (spin_ns) {
		uint64_t seen;
		uint64_t end = spin_ns > deadline - now ? deadline : now + spin_ns;
		if ((r = spin_until(s, seq, end, backstop_ns, &seen)) <= 0)
			return r;
	}
	now = garuda_now_ns();

	/* flag: park on the readiness form; block and poll: poll the word and the native
	 * stream on the growing schedule. Either way query every backstop. */
	bool flag = plan.kind == GARUDA_PLAN_FLAG;
	uint64_t backstop_at = now + backstop_ns;
	uint64_t step = POLL_STEP_MIN_NS;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		bool armed = flag && stream_form(s)->wire && c->state == CONN_UP &&
			     s->ses.gen == c->gen && !s->ses.arm_lost;
		uint64_t ready_seen = s->ses.ready_count;
		pthread_mutex_unlock(&c->lock);
		/* the sample first (acquire), then the word: see the head comment */
		uint32_t bell_seen = stream_sample(s);
		if (garuda_reached(word_load(s->word), seq))
			return 0;
		now = garuda_now_ns();
		if (now >= deadline)
			return -GARUDA_E_TIMEOUT;
		if (now >= backstop_at || !flag) {
			int q = s->seg->ops->query(s->seg->backend, s->native);
			if (garuda_reached(word_load(s->word), seq))
				return 0;
			if (q == -GARUDA_E_STREAM_FAULT)
				return q;
			backstop_at = now + backstop_ns;
		}
		uint64_t until = deadline < backstop_at ? deadline : backstop_at;
		if (armed) {
			if (until - now > park_ns)
				until = now + park_ns;
		} else {
			if (now + step < until)
				until = now + step;
			step = step * 2 > POLL_STEP_MAX_NS ? POLL_STEP_MAX_NS : step * 2;
		}
		if (flag) {
			/* unarmed too: the I/O thread nudges the form while garudad is away */
			block(s, now, until, ready_seen, bell_seen);
		} else {
			struct timespec ts = ns_to_ts(until);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
	}
}

int garuda_stream_fd(const struct garuda_stream *s)
{
	if (!s)
		return -EINVAL;
	return s->efd >= 0 ? s->efd : -EOPNOTSUPP; /* only a form that opens one has one */
}

int garuda_stream_drain(struct garuda_stream *s, uint64_t *seq)
{
	if (!s)
		return -EINVAL;
	if (s->efd >= 0) {
		uint64_t v;
		ssize_t n = read(s->efd, &v, sizeof(v));
		(void)n;
		/* the count first, then the word: a write after this read leaves the fd
		 * readable, a write before it is followed by a store we now see */
		atomic_thread_fence(memory_order_acquire);
	}
	uint64_t v = word_load(s->word);
	if (seq)
		*seq = v;
	if (v == s->drained || !garuda_reached(v, s->drained))
		return 0;
	s->drained = v;
	return 1;
}
