/* form.c — libgaruda's readiness forms, one row each (struct stream_form, internal.h),
 * indexed by enum garuda_readiness: what garudad is told (the wire form, the BIND of
 * the stream's eventfd), how a waiter blocks on the form, and how a stream is nudged:
 * told locally that its word may have moved, in its own form (eventfd: +1; doorbell:
 * bump, then futex-wake; message: count, broadcast, queue its callback for
 * garuda_dispatch()). The router (a READY from garudad, a session lost or new), the
 * reactor (fallback: it found the word reached) and stream.c (errors, set_callback)
 * nudge; wait.c blocks; stream.c binds.
 *
 * Promises: every public form has a complete row, and nothing else in libgaruda tests
 * a form's value: adding a form is its public value (garuda.h), its wire value when
 * garudad delivers it (proto/wire.h) and a row here. A nudge never blocks (the
 * eventfds are non-blocking; a saturated one is readable anyway); the doorbell is
 * bumped (release) before the wake, so a waiter that sampled the old value and is
 * about to FUTEX_WAIT on it returns at once; c->lock held by the caller, which is what
 * orders the message form's count against its waiters. A block returns by `until` or
 * on a wake, and never consumes a wake it did not sample (stream.c's head comment). */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "futex.h"

/* ------------------------------------------------------------------ eventfd */

static int eventfd_open(struct garuda_stream *s)
{
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return s->efd < 0 ? -errno : 0;
}

/* BIND (on) or UNBIND the stream's slot in session gen, with header flags (a
 * presentation's present_flag()): a round trip. */
static int eventfd_bind(struct garuda_stream *s, uint32_t segid, uint64_t gen, bool on,
			uint16_t flags)
{
	struct garuda_msg m;
	garuda_msg_init(&m, on ? GARUDA_MSG_BIND : GARUDA_MSG_UNBIND, 0);
	m.flags = flags;
	m.bind.slot.segment = segid;
	m.bind.slot.index = s->index;
	/* an UNBIND's refusal is not the caller's error (garuda_stream_free() succeeds) */
	if (!on)
		return conn_tell_gen(s->client, &m, gen);
	return conn_request_gen(s->client, &m, s->efd, gen, NULL, NULL, NULL);
}

static void eventfd_block(struct garuda_stream *s, uint64_t now, uint64_t until,
			  uint64_t ready_seen, uint32_t bell_seen)
{
	(void)ready_seen, (void)bell_seen;
	struct pollfd p = { .fd = s->efd, .events = POLLIN };
	struct timespec ts = garuda_ns_to_ts(until > now ? until - now : 0);
	if (ppoll(&p, 1, &ts, NULL) > 0) {
		uint64_t v;
		ssize_t n = read(s->efd, &v, sizeof(v));
		(void)n;
		/* the caller's next load of the word stays after this read */
		atomic_thread_fence(memory_order_acquire);
	}
}

static void eventfd_nudge(struct garuda_stream *s)
{
	uint64_t one = 1;
	ssize_t n = write(s->efd, &one, sizeof(one));
	(void)n; /* EAGAIN: saturated, readable anyway */
}

/* ------------------------------------------------------------------ doorbell */

static uint32_t *doorbell(struct garuda_stream *s)
{
	return &s->seg->map->hdr.doorbell;
}

/* The sample a waiter blocks on, taken before it reads the word (acquire). */
static uint32_t doorbell_sample(struct garuda_stream *s)
{
	return __atomic_load_n(doorbell(s), __ATOMIC_ACQUIRE);
}

static void doorbell_block(struct garuda_stream *s, uint64_t now, uint64_t until,
			   uint64_t ready_seen, uint32_t bell_seen)
{
	(void)ready_seen;
	futex_wait_for(doorbell(s), bell_seen, until > now ? until - now : 0,
		       true); /* shared memory */
}

static void doorbell_nudge(struct garuda_stream *s)
{
	/* bump (release) before the wake, like the daemon does, so a waiter about to
	 * sleep on the old value does not sleep */
	__atomic_fetch_add(doorbell(s), 1, __ATOMIC_RELEASE);
	futex_wake(doorbell(s), INT_MAX, true); /* shared memory: every waiter */
}

/* ------------------------------------------------------------------ message */

static void message_block(struct garuda_stream *s, uint64_t now, uint64_t until,
			  uint64_t ready_seen, uint32_t bell_seen)
{
	(void)now, (void)bell_seen;
	struct garuda_client *c = s->client;
	struct timespec ts = garuda_ns_to_ts(until);
	pthread_mutex_lock(&c->lock);
	while (s->ses.ready_count == ready_seen) {
		if (pthread_cond_timedwait(&s->ses.ready_cond, &c->lock, &ts) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&c->lock);
}

static void message_nudge(struct garuda_stream *s)
{
	struct garuda_client *c = s->client;
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
}

/* ------------------------------------------------------------------ poll */

static void poll_block(struct garuda_stream *s, uint64_t now, uint64_t until,
		       uint64_t ready_seen, uint32_t bell_seen)
{
	(void)s, (void)now, (void)ready_seen, (void)bell_seen;
	struct timespec ts = garuda_ns_to_ts(until);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void poll_nudge(struct garuda_stream *s)
{
	(void)s; /* nobody blocks on anything but the clock */
}

/* ------------------------------------------------------------------ the table */

const struct stream_form stream_forms[] = {
	[GARUDA_READINESS_POLL] = { .block = poll_block, .nudge = poll_nudge },
	[GARUDA_READINESS_EVENTFD] = { .wire = GARUDA_FORM_EVENTFD, .open = eventfd_open,
				       .bind = eventfd_bind, .block = eventfd_block,
				       .nudge = eventfd_nudge },
	[GARUDA_READINESS_MESSAGE] = { .wire = GARUDA_FORM_MESSAGE, .callbacks = true,
				       .block = message_block, .nudge = message_nudge },
	[GARUDA_READINESS_DOORBELL] = { .wire = GARUDA_FORM_DOORBELL, .sample = doorbell_sample,
					.block = doorbell_block, .nudge = doorbell_nudge },
};

bool stream_form_known(enum garuda_readiness form)
{
	return (unsigned)form < sizeof(stream_forms) / sizeof(stream_forms[0]) &&
	       stream_forms[form].block;
}

void stream_nudge_locked(struct garuda_stream *s)
{
	stream_form(s)->nudge(s);
}
