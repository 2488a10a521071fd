/* router.c — where every message garudad sends the client goes, and what a new
 * session needs. conn.c (the transport) hands each decoded message to route() on its
 * I/O thread, and runs present() on the presenter thread of each new session; neither
 * ever sends from the I/O thread, and nothing here reads the socket.
 *
 * Promises:
 *  - READY/READY_BATCH wake the stream whose token (serial and table index) they
 *    carry, and nobody else; READY{OVERFLOW} wakes every stream.
 *  - An ERROR for a stream's NOREPLY ARM goes to the stream that sent the arm (by its
 *    serial), never to a newer stream on the same table index or word.
 *  - Replies complete the request with their cookie; a reply nobody waits for any
 *    more is dropped (its fd closed).
 *  - present() presents every segment (SEGMENT_ATTACH), then every stream (BIND, ARM
 *    for each outstanding sequence), with reg_lock held throughout (the presenter's,
 *    held on until the session is declared up: nothing registers in between).
 *  - fault_watch() (I/O thread, any session state, strict and fallback clients) is
 *    the only place outside a wait that queries a backend: for each stream with a
 *    sequence outstanding (fx.since set by its signal), every stream_fault_interval_ns()
 *    of the oldest outstanding sequence's age (the waits' schedule, at least 100 ms:
 *    STREAM_FAULT_WATCH_MIN_NS); a fault with
 *    the word still behind (re-read after the query: a landed store wins) sets
 *    s->faulted and nudges the stream once in its form. A stream with nothing
 *    outstanding, faulted or dying leaves the watch; none watched: no timer.
 */
#include "internal.h"

#include <unistd.h>

#include "clock.h"

static void nudge_all_locked(struct garuda_client *c)
{
	for (uint32_t i = 0; i < c->nstreams_cap; i++)
		if (c->streams[i])
			stream_nudge_locked(c->streams[i]);
}

static void route(struct garuda_client *c, struct garuda_msg *m, int fd)
{
	pthread_mutex_lock(&c->lock);
	switch (m->type) {
	case GARUDA_MSG_READY:
		if (m->ready.flags & GARUDA_READY_OVERFLOW)
			nudge_all_locked(c);
		else
			stream_ready_locked(c, m->ready.token, m->ready.value);
		break;
	case GARUDA_MSG_READY_BATCH:
		for (uint32_t i = 0; i < m->ready_batch.count; i++)
			stream_ready_locked(c, m->ready_batch.ready[i].token, m->ready_batch.ready[i].value);
		break;
	case GARUDA_MSG_ACK:
	case GARUDA_MSG_SEGMENT:
	case GARUDA_MSG_QUERY_REPLY:
	case GARUDA_MSG_ERROR: {
		int err = m->type == GARUDA_MSG_ERROR ? error_to_ret(m->error.code) : 0;
		if (m->cookie & COOKIE_STREAM_BIT) {
			if (err)
				stream_async_error_locked(c, m->cookie, err,
							  m->type == GARUDA_MSG_ERROR ? m->error.text : NULL);
			break;
		}
		if (m->cookie == 0) {
			/* connection-level error: the daemon closes next */
			c->last_error = err ? err : -GARUDA_E_UNEXPECTED;
			break;
		}
		if (conn_complete_locked(c, m, err, fd))
			fd = -1;
		else if (m->type == GARUDA_MSG_SEGMENT)
			conn_orphan_segment_locked(c, m);
		break;
	}
	default:
		c->last_error = -GARUDA_E_UNEXPECTED;
		break;
	}
	pthread_mutex_unlock(&c->lock);
	if (fd >= 0)
		close(fd);
}

/* reg_lock held (the presenter's, conn.c presenter_main: it keeps it until the session
 * is declared up) */
static int present(struct garuda_client *c, uint64_t gen)
{
	int r = 0;
	for (struct garuda_seg *seg = c->segs; seg && r >= 0; seg = seg->next)
		r = seg_present(seg, gen);
	for (uint32_t i = 0; i < c->nstreams_cap && r >= 0; i++) {
		pthread_mutex_lock(&c->lock);
		struct garuda_stream *s = c->streams[i];
		pthread_mutex_unlock(&c->lock);
		if (s)
			r = stream_present(s, gen);
	}
	return r;
}

static void session_lost_locked(struct garuda_client *c)
{
	nudge_all_locked(c);
	if (c->fallback) /* the warning was set with the state (conn.c go_down) */
		reactor_session_lost_locked(c); /* the reactor takes over */
}

static void session_up_locked(struct garuda_client *c)
{
	fallback_session_up_locked(c); /* streams moved to garudad: no warning */
	nudge_all_locked(c);
}

/* While down: wake streams whose words moved since the last look. */
static bool while_down(struct garuda_client *c)
{
	if (c->fallback)
		return false;
	bool moved = false;
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (!s)
			continue;
		uint64_t v = word_load(s->word);
		if (v != s->ses.polled) {
			s->ses.polled = v;
			stream_nudge_locked(s);
			moved = true;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return moved;
}

/* In a session: nudge the streams whose arms garudad refused (arm_lost) when their
 * words move, as garudad would have; a stream with nothing outstanding any more is
 * served by garudad again (its next arm). Clears lost_any when none is left. */
static bool while_lost(struct garuda_client *c)
{
	pthread_mutex_lock(&c->lock);
	bool any = false, moved = false;
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (!s || !s->ses.arm_lost || s->ses.dying)
			continue;
		uint64_t v = word_load(s->word);
		if (v != s->ses.polled) {
			s->ses.polled = v;
			stream_nudge_locked(s);
			moved = true;
		}
		if (garuda_reached(v, atomic_load_explicit(&s->signalled, memory_order_acquire)))
			s->ses.arm_lost = false;
		else
			any = true;
	}
	c->lost_any = any;
	pthread_mutex_unlock(&c->lock);
	return moved;
}

/* The fault watch: query the native stream of every watched stream that is due (see
 * the head comment), the stream pinned (fx.querying) while c->lock is released for
 * the query, so that a slow runtime never holds up API threads and the stream is not
 * freed meanwhile. Sets c->fault_due to the soonest next query (0: none watched). */
static void fault_watch(struct garuda_client *c)
{
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (!s || !s->fx.since)
			continue;
		uint64_t now = garuda_now_ns();
		uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_acquire);
		uint64_t v = word_load(s->word);
		if (s->ses.dying || garuda_reached(v, sig) ||
		    atomic_load_explicit(&s->faulted, memory_order_relaxed)) {
			/* everything landed and no READY said so (a garudad that hangs, stopped
			 * or stuck, but keeps its socket): the stream's readiness form is nudged
			 * here, a fault interval late at most, so its waiter is not left in
			 * silence (a READY still in flight only makes one spare wake) */
			if (!s->ses.dying && garuda_reached(v, sig) && !garuda_reached(s->ses.readied, sig))
				stream_nudge_locked(s);
			s->fx.since = 0; /* nothing outstanding: no more work for it */
			continue;
		}
		if (v != s->fx.base) {
			/* the word moved: the oldest outstanding sequence started when its
			 * predecessor landed (stream order is the clock, proto/policy.h) */
			s->fx.base = v;
			s->fx.since = now;
			s->fx.due = now + stream_fault_interval_ns(s, 0);
		}
		if (now >= s->fx.due) {
			s->fx.querying = true;
			pthread_mutex_unlock(&c->lock);
			int q = s->seg->ops->query(s->seg->backend, s->native);
			/* after the query: a store that landed wins, as in the waits */
			bool fault = q == -GARUDA_E_STREAM_FAULT && !garuda_reached(word_load(s->word), sig);
			pthread_mutex_lock(&c->lock);
			s->fx.querying = false;
			pthread_cond_broadcast(&c->cond); /* garuda_stream_free() waits */
			now = garuda_now_ns();
			if (fault) {
				atomic_store_explicit(&s->faulted, true, memory_order_release);
				s->fx.since = 0;
				if (!s->ses.dying)
					stream_nudge_locked(s); /* once, in its form */
				continue;
			}
			s->fx.due = now + stream_fault_interval_ns(s, now - s->fx.since);
		}
	}
	/* a second look, c->lock held throughout (a signal during a query may have
	 * started the watch of a stream this pass had gone by) */
	uint64_t soonest = 0;
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (s && s->fx.since && (!soonest || s->fx.due < soonest))
			soonest = s->fx.due;
	}
	c->fault_due = soonest;
	pthread_mutex_unlock(&c->lock);
}

const struct conn_router client_router = {
	.route = route,
	.present = present,
	.session_lost_locked = session_lost_locked,
	.session_up_locked = session_up_locked,
	.while_down = while_down,
	.while_lost = while_lost,
	.fault_watch = fault_watch,
};
