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
 *    for each outstanding sequence), with reg_lock held throughout.
 */
#include "internal.h"

#include <unistd.h>

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

static int present(struct garuda_client *c, uint64_t gen)
{
	int r = 0;
	pthread_mutex_lock(&c->reg_lock);
	for (struct garuda_seg *seg = c->segs; seg && r >= 0; seg = seg->next)
		r = seg_present(seg, gen);
	for (uint32_t i = 0; i < c->nstreams_cap && r >= 0; i++) {
		pthread_mutex_lock(&c->lock);
		struct garuda_stream *s = c->streams[i];
		pthread_mutex_unlock(&c->lock);
		if (s)
			r = stream_present(s, gen);
	}
	pthread_mutex_unlock(&c->reg_lock);
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

const struct conn_router client_router = {
	.route = route,
	.present = present,
	.session_lost_locked = session_lost_locked,
	.session_up_locked = session_up_locked,
	.while_down = while_down,
	.while_lost = while_lost,
};
