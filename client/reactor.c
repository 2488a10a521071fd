/* reactor.c — libgaruda's in-process reactor: what delivers readiness while garudad
 * cannot be reached and the client's fallback chain allows it (GARUDA_FALLBACK=reactor,
 * resolved once at connect; docs/client.md "Fallback").
 *
 * Promises:
 *  - While the client has no working session, every stream whose word moved gets the
 *    readiness garudad would have delivered, in its own form (stream_nudge_locked():
 *    eventfd +1, doorbell bump + futex wake, message form ready_count/cond and the
 *    callback queue), so application code does not change.
 *  - Serves every stream that garudad does not: all of them while there is no
 *    session, and in a session those it did not accept (a local segment whose
 *    SEGMENT_ATTACH was refused: its streams stay unpresented, and their readiness
 *    keeps coming from here instead of stopping).
 *  - Parked (a condvar wait without timeout, no CPU) while no stream it serves has an
 *    outstanding sequence; a signal on such a stream, a lost session and
 *    garuda_disconnect() unpark it.
 *  - With outstanding sequences it sleeps until the earliest completion the streams'
 *    estimators predict (proto/estimator.h, the seed's parameters: margin 150 us,
 *    min_sleep 20 us, max_sleep 50 ms, window 8; the point is the stream), then spins
 *    on the words for at most REACTOR_SPIN_NS, then polls on a growing schedule
 *    (REACTOR_STEP_MIN_NS .. REACTOR_STEP_MAX_NS). A word seen moving while spinning
 *    records an exact residual (completion - signal), one seen after a sleep a
 *    censored one, so late wakes only lower a prediction.
 *  - It reads streams only under c->lock (garuda_stream_free() takes a stream out of
 *    the table under it) and never sends.
 *
 * Threads: its own thread, one per fallback client, started by garuda_connect*() and
 * joined by garuda_disconnect() after the I/O thread.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "cpu.h"

#define REACTOR_SPIN_NS 300000ull     /* twice the margin: the spin after a sleep */
#define REACTOR_STEP_MIN_NS 20000ull  /* polls after a spin ran out */
#define REACTOR_STEP_MAX_NS 1000000ull
#define REACTOR_RELAX_PASSES 64       /* cpu_relax()es between two looks while spinning */

static const struct garuda_plan_predict reactor_pred = {
	.margin_us = 150, .min_sleep_us = 20, .max_sleep_us = 50000, .window = 8,
};

void reactor_stream_init(struct garuda_stream *s)
{
	int r = garuda_estimator_init(&s->rest, &reactor_pred);
	(void)r; /* constant parameters inside the plan's bounds */
}

void reactor_signalled_locked(struct garuda_stream *s, uint64_t prev)
{
	struct garuda_client *c = s->client;
	if (!c->fallback || !c->reactor_started)
		return;
	/* the wait for `prev + 1` starts now when nothing older is outstanding */
	if (!s->rarm_ns && garuda_reached(word_load(s->word), prev))
		s->rarm_ns = garuda_now_ns();
	pthread_cond_signal(&c->reactor_cond);
}

void fallback_warn_locked(struct garuda_client *c, int why)
{
	if (!why) {
		c->warn_code = 0;
		c->warn[0] = '\0';
		return;
	}
	if (!c->fallback || c->warn_code)
		return;
	c->warn_code = GARUDA_E_FALLBACK_REACTOR;
	snprintf(c->warn, sizeof(c->warn),
		 "requested: garudad at %s; unavailable: %s (%d); running: the in-process "
		 "reactor (GARUDA_FALLBACK=reactor), until garudad is back",
		 c->path, garuda_strerror(why), why);
}

void fallback_session_up_locked(struct garuda_client *c)
{
	fallback_warn_locked(c, 0);
	for (struct garuda_seg *seg = c->segs; seg; seg = seg->next) {
		if (seg->attach_err) {
			fallback_warn_locked(c, seg->attach_err);
			pthread_cond_signal(&c->reactor_cond); /* its streams stay here */
			break;
		}
	}
}

/* One look at every stream (c->lock held): nudge those whose words moved and record
 * their residuals. Returns the earliest predicted completion of an outstanding
 * sequence (<= now: unknown, look now), or UINT64_MAX when nothing is outstanding;
 * *moved tells whether a word moved. */
static uint64_t scan_locked(struct garuda_client *c, uint64_t now, bool spinning, bool *moved)
{
	uint64_t next = UINT64_MAX;
	*moved = false;
	bool up = c->state == CONN_UP;
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (!s || s->form == GARUDA_READINESS_POLL || s->dying)
			continue;
		if (up && s->gen == c->gen) {
			s->rarm_ns = 0; /* garudad delivers it: the reactor's arm is dropped */
			continue;
		}
		uint64_t v = word_load(s->word);
		uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_acquire);
		if (v != s->polled) {
			s->polled = v;
			*moved = true;
			stream_nudge_locked(s);
			if (s->rarm_ns && now > s->rarm_ns) {
				if (spinning)
					garuda_estimator_record_exact_ns(&s->rest, now - s->rarm_ns);
				else
					garuda_estimator_record_censored_ns(&s->rest, now - s->rarm_ns);
			}
			/* the next outstanding sequence's wait starts here */
			s->rarm_ns = garuda_reached(v, sig) ? 0 : now;
		}
		if (garuda_reached(v, sig))
			continue;
		if (!s->rarm_ns)
			s->rarm_ns = now; /* signalled while a session was up that died since */
		uint64_t at = s->rarm_ns + garuda_estimator_sleep_ns(&s->rest);
		if (at < next)
			next = at;
	}
	return next;
}

static void wait_until_locked(struct garuda_client *c, uint64_t when)
{
	struct timespec ts = { .tv_sec = (time_t)(when / 1000000000ull),
			       .tv_nsec = (long)(when % 1000000000ull) };
	pthread_cond_timedwait(&c->reactor_cond, &c->lock, &ts);
}

static void *reactor_main(void *arg)
{
	struct garuda_client *c = arg;
	uint64_t spin_end = 0, step = REACTOR_STEP_MIN_NS;
	pthread_mutex_lock(&c->lock);
	for (;;) {
		if (c->state == CONN_CLOSING)
			break;
		uint64_t now = garuda_now_ns();
		bool spinning = spin_end && now < spin_end;
		bool moved;
		uint64_t next = scan_locked(c, now, spinning, &moved);
		if (moved) {
			spin_end = spinning ? spin_end : 0;
			step = REACTOR_STEP_MIN_NS;
		}
		if (next == UINT64_MAX) {
			spin_end = 0; /* parked: nothing outstanding */
			step = REACTOR_STEP_MIN_NS;
			pthread_cond_wait(&c->reactor_cond, &c->lock);
			continue;
		}
		if (spinning) {
			pthread_mutex_unlock(&c->lock);
			for (int k = 0; k < REACTOR_RELAX_PASSES; k++)
				cpu_relax();
			pthread_mutex_lock(&c->lock);
			continue;
		}
		if (next > now && !spin_end) {
			wait_until_locked(c, next); /* the predicted completion, or a signal */
			if (garuda_now_ns() >= next)
				spin_end = garuda_now_ns() + REACTOR_SPIN_NS;
			continue;
		}
		if (!spin_end) {
			spin_end = now + REACTOR_SPIN_NS; /* no prediction: spin first */
			continue;
		}
		/* the spin ran out: poll on the growing schedule until a word moves */
		wait_until_locked(c, now + step);
		step = step * 2 > REACTOR_STEP_MAX_NS ? REACTOR_STEP_MAX_NS : step * 2;
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int reactor_start(struct garuda_client *c)
{
	int r = -pthread_create(&c->reactor, NULL, reactor_main, c);
	c->reactor_started = r == 0;
	return r;
}

void reactor_stop(struct garuda_client *c)
{
	if (!c->reactor_started)
		return;
	pthread_mutex_lock(&c->lock);
	pthread_cond_broadcast(&c->reactor_cond); /* state is CLOSING (io_stop) */
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->reactor, NULL);
	c->reactor_started = false;
}
