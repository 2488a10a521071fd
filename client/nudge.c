/* nudge.c — local readiness delivery: tell the application that a stream's word may
 * have moved, in the stream's own readiness form (eventfd: +1; doorbell: bump, then
 * futex-wake; message: count, broadcast, queue its callback for garuda_dispatch()).
 * Called by the router (a READY from garudad, a session lost or new), by the reactor
 * (fallback: it found the word reached), and by stream.c (errors, set_callback).
 *
 * Promises: never blocks (the eventfds are non-blocking; a saturated one is readable
 * anyway); the doorbell is bumped (release) before the wake, so a waiter that sampled
 * the old value and is about to FUTEX_WAIT on it returns at once; c->lock held by the
 * caller, which is what orders the message form's count against its waiters. */
#include "internal.h"

#include <limits.h>
#include <pthread.h>

#include "futex.h"


void stream_nudge_locked(struct garuda_stream *s)
{
	struct garuda_client *c = s->client;
	switch (s->form) {
	case GARUDA_READINESS_EVENTFD: {
		uint64_t one = 1;
		ssize_t n = write(s->efd, &one, sizeof(one));
		(void)n; /* EAGAIN: saturated, readable anyway */
		break;
	}
	case GARUDA_READINESS_DOORBELL:
		/* bump (release) before the wake, like the daemon does, so a waiter about to
		 * sleep on the old value does not sleep */
		__atomic_fetch_add(&s->seg->map->hdr.doorbell, 1, __ATOMIC_RELEASE);
		futex_wake(&s->seg->map->hdr.doorbell, INT_MAX, true); /* shared memory: every waiter */
		break;
	case GARUDA_READINESS_MESSAGE:
		s->ses.ready_count++;
		pthread_cond_broadcast(&s->ses.ready_cond);
		if (s->cb.fn && !s->cb.queued && !s->cb.free_pending && !s->ses.dying) {
			s->cb.queued = true;
			s->cb.next = NULL;
			if (c->cbq_tail)
				c->cbq_tail->cb.next = s;
			else
				c->cbq_head = s;
			c->cbq_tail = s;
			uint64_t one = 1;
			ssize_t n = write(c->dispatch_efd, &one, sizeof(one));
			(void)n;
		}
		break;
	case GARUDA_READINESS_POLL:
		break;
	}
}
