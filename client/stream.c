/* stream.c — libgaruda's streams: one word each, signalled through a backend, armed
 * with garudad, and waited on with a plan (spin, then block on the readiness form,
 * with a backstop query of the native stream).
 *
 * Promises:
 *  - Memory is the truth: every answer (reached, wait, drain, callbacks) comes from an
 *    acquire load of the word; readiness only decides when to look again.
 *  - Sequences are stored in increasing order: a stream's sequence, its store and its
 *    arm are taken under the stream's lock, so arms go out in the order of the stores.
 *  - No lost wake-up: a waiter samples its readiness generation (eventfd count,
 *    doorbell value, READY count) before it reads the word, and blocks only on that
 *    sample.
 *  - A waiter never blocks longer than the backstop interval without reading the word
 *    and querying the native stream; a faulted stream fails the wait.
 *  - Without a session (or with an arm refused), waits poll the word with a growing
 *    interval (POLL_STEP_MIN_NS .. POLL_STEP_MAX_NS).
 */
#include "internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define DEFAULT_SPIN_NS 20000ull
#define DEFAULT_BACKSTOP_NS 1000000ull
#define MIN_BACKSTOP_NS 10000ull
#define POLL_STEP_MIN_NS 20000ull
#define POLL_STEP_MAX_NS 1000000ull

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static struct timespec ns_to_ts(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* ------------------------------------------------------------------ readiness */

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
		/* bump like the daemon does, so a waiter about to sleep on the old value
		 * does not sleep */
		__atomic_fetch_add(&s->seg->map->hdr.doorbell, 1, __ATOMIC_RELEASE);
		futex_wake_all(&s->seg->map->hdr.doorbell);
		break;
	case GARUDA_READINESS_MESSAGE:
		s->ready_count++;
		pthread_cond_broadcast(&s->ready_cond);
		if (s->cb && !s->cb_queued && !s->free_pending && !s->dying) {
			s->cb_queued = true;
			s->cb_next = NULL;
			if (c->cbq_tail)
				c->cbq_tail->cb_next = s;
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

struct garuda_stream *stream_lookup_locked(struct garuda_client *c, uint64_t token)
{
	uint32_t i = (uint32_t)token;
	if (i >= c->nstreams_cap)
		return NULL;
	struct garuda_stream *s = c->streams[i];
	return s && s->token == token ? s : NULL;
}

void stream_ready_locked(struct garuda_client *c, uint64_t token, uint64_t value)
{
	(void)value; /* memory is the truth: the word is read again where it matters */
	struct garuda_stream *s = stream_lookup_locked(c, token);
	if (s)
		stream_nudge_locked(s);
}

void stream_async_error_locked(struct garuda_client *c, uint64_t cookie, int code)
{
	uint32_t tab = (uint32_t)(cookie >> 32) & 0x7fffffffu;
	uint32_t target = (uint32_t)cookie;
	if (tab >= c->nstreams_cap || !c->streams[tab])
		return;
	struct garuda_stream *s = c->streams[tab];
	if (code == -GARUDA_E_NOT_ARMED)
		return;
	s->arm_lost = true; /* that arm is missing: waits poll until it is behind us */
	/* report once: not for arms older than the last report */
	if (!s->arm_err && (int32_t)(target - (uint32_t)s->err_upto) > 0)
		s->arm_err = code;
	stream_nudge_locked(s);
}

/* ARM target on s; c->lock and s->lock held; s presented in the current session. */
static int arm_locked(struct garuda_stream *s, uint64_t target)
{
	struct garuda_client *c = s->client;
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, arm_cookie(s->tab, target));
	m.flags = GARUDA_F_NOREPLY;
	m.arm.slot.segment = s->seg->id;
	m.arm.slot.index = s->index;
	m.arm.target = target;
	m.arm.token = s->token;
	m.arm.form = (uint8_t)(s->form == GARUDA_READINESS_EVENTFD    ? GARUDA_FORM_EVENTFD
			       : s->form == GARUDA_READINESS_DOORBELL ? GARUDA_FORM_DOORBELL
								      : GARUDA_FORM_MESSAGE);
	return conn_send_arm_locked(c, &m, s->gen);
}

int stream_present(struct garuda_stream *s, uint64_t gen)
{
	struct garuda_client *c = s->client;
	int r = 0;

	if (s->form == GARUDA_READINESS_POLL)
		return 0;
	pthread_mutex_lock(&s->lock);
	pthread_mutex_lock(&c->lock);
	bool dying = s->dying;
	bool seg_ok = s->seg->gen == gen;
	uint32_t segid = s->seg->id;
	int seg_err = s->seg->attach_err;
	pthread_mutex_unlock(&c->lock);
	if (dying)
		goto out;
	if (!seg_ok) {
		pthread_mutex_lock(&c->lock);
		s->arm_lost = true;
		if (!s->arm_err)
			s->arm_err = seg_err ? seg_err : -GARUDA_E_NO_SEGMENT;
		pthread_mutex_unlock(&c->lock);
		goto out;
	}
	if (s->form == GARUDA_READINESS_EVENTFD) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_BIND, 0);
		m.bind.slot.segment = segid;
		m.bind.slot.index = s->index;
		r = conn_request_gen(c, &m, s->efd, gen, NULL, NULL, NULL);
		if (r == -GARUDA_E_DISCONNECTED || r == -GARUDA_E_TIMEOUT) {
			r = -GARUDA_E_DISCONNECTED;
			goto out;
		}
		if (r < 0) {
			pthread_mutex_lock(&c->lock);
			s->arm_lost = true;
			if (!s->arm_err)
				s->arm_err = r;
			pthread_mutex_unlock(&c->lock);
			r = 0;
			goto out;
		}
	}
	pthread_mutex_lock(&c->lock);
	s->gen = gen;
	s->arm_lost = false;
	uint64_t word = word_load(s->word);
	uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_relaxed);
	/* every outstanding sequence gets its arm again */
	for (uint64_t t = word + 1; !garuda_reached(word, sig) && !garuda_reached(t - 1, sig); t++) {
		r = arm_locked(s, t);
		if (r < 0)
			break;
	}
	pthread_mutex_unlock(&c->lock);
	if (r < 0 && r != -GARUDA_E_DISCONNECTED)
		r = 0; /* recorded as async errors when they come back */
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ------------------------------------------------------------------ lifecycle */

static int table_insert_locked(struct garuda_client *c, struct garuda_stream *s)
{
	uint32_t i = 0;
	while (i < c->nstreams_cap && c->streams[i])
		i++;
	if (i == c->nstreams_cap) {
		uint32_t cap = c->nstreams_cap ? c->nstreams_cap * 2 : 16;
		struct garuda_stream **t = realloc(c->streams, cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		memset(t + c->nstreams_cap, 0, (cap - c->nstreams_cap) * sizeof(*t));
		c->streams = t;
		c->nstreams_cap = cap;
	}
	c->next_serial = (c->next_serial + 1) & 0x7fffffffu;
	if (!c->next_serial)
		c->next_serial = 1;
	s->tab = i;
	s->token = ((uint64_t)c->next_serial << 32) | i;
	c->streams[i] = s;
	return 0;
}

int garuda_stream_new(struct garuda_seg *seg, void *native, enum garuda_readiness form,
		      struct garuda_stream **out)
{
	if (out)
		*out = NULL;
	if (!seg || !out || (unsigned)form > GARUDA_READINESS_DOORBELL)
		return -EINVAL;
	struct garuda_client *c = seg->client;
	struct garuda_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->client = c;
	s->seg = seg;
	s->native = native;
	s->form = form;
	s->efd = -1;
	s->spin_ns = DEFAULT_SPIN_NS;
	s->backstop_ns = DEFAULT_BACKSTOP_NS;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->ready_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (form == GARUDA_READINESS_EVENTFD) {
		s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->efd < 0) {
			int r = -errno;
			pthread_cond_destroy(&s->ready_cond);
			pthread_mutex_destroy(&s->lock);
			free(s);
			return r;
		}
	}

	/* a free word, and the stream in the token table */
	int r = -ENOSPC;
	bool bind_now = false;
	uint64_t gen = 0;
	uint32_t segid = 0;
	pthread_mutex_lock(&c->reg_lock);
	uint32_t nwords = seg->lines * GARUDA_WORDS_PER_LINE;
	for (uint32_t i = 0; i < nwords && seg->nfree; i++) {
		if (!seg->used[i]) {
			s->index = i;
			r = 0;
			break;
		}
	}
	if (r == 0) {
		pthread_mutex_lock(&c->lock);
		r = table_insert_locked(c, s);
		if (r == 0) {
			seg->used[s->index] = 1;
			seg->nfree--;
			seg->nstreams++;
			s->word = garuda_segment_word(seg->map, s->index);
			/* no store is pending on a free word: start from 0 */
			__atomic_store_n(s->word, 0, __ATOMIC_RELEASE);
			bool up = c->state == CONN_UP && seg->gen == c->gen;
			/* in an up session we present it ourselves; otherwise the next
			 * presentation (which needs reg_lock, held here) will */
			if (up && form == GARUDA_READINESS_EVENTFD) {
				bind_now = true;
				gen = c->gen;
				segid = seg->id;
			} else if (up && form != GARUDA_READINESS_POLL) {
				s->gen = c->gen;
			}
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->reg_lock);
	if (r < 0) {
		if (s->efd >= 0)
			close(s->efd);
		pthread_cond_destroy(&s->ready_cond);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return r;
	}

	if (bind_now) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_BIND, 0);
		m.bind.slot.segment = segid;
		m.bind.slot.index = s->index;
		r = conn_request_gen(c, &m, s->efd, gen, NULL, NULL, NULL);
		if (r == 0) {
			pthread_mutex_lock(&s->lock);
			pthread_mutex_lock(&c->lock);
			if (c->gen == gen)
				s->gen = gen;
			pthread_mutex_unlock(&c->lock);
			pthread_mutex_unlock(&s->lock);
		} else if (r != -GARUDA_E_DISCONNECTED) {
			garuda_stream_free(s);
			return r;
		}
	}
	*out = s;
	return 0;
}

/* DISARM and UNBIND s in session gen (round trips; NOT_ARMED and errors are fine).
 * Every async error of its arms in that session arrives before these replies, while
 * its table index is still its own. */
static void forget_daemon_side(struct garuda_stream *s, uint64_t gen, uint32_t segid)
{
	struct garuda_client *c = s->client;
	struct garuda_msg m;
	uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_relaxed);
	/* all reached: the daemon fires (or has fired) them, a DISARM would be NOT_ARMED */
	if (sig && !garuda_reached(word_load(s->word), sig)) {
		garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
		m.disarm.slot.segment = segid;
		m.disarm.slot.index = s->index;
		m.disarm.token = s->token;
		(void)conn_request_gen(c, &m, -1, gen, NULL, NULL, NULL);
	}
	if (s->form == GARUDA_READINESS_EVENTFD) {
		garuda_msg_init(&m, GARUDA_MSG_UNBIND, 0);
		m.bind.slot.segment = segid;
		m.bind.slot.index = s->index;
		(void)conn_request_gen(c, &m, -1, gen, NULL, NULL, NULL);
	}
}

void garuda_stream_free(struct garuda_stream *s)
{
	if (!s)
		return;
	struct garuda_client *c = s->client;
	struct garuda_seg *seg = s->seg;

	/* dying: no callback, no queueing, no presentation from here on */
	pthread_mutex_lock(&c->lock);
	if (s->cb_busy && c->dispatching && pthread_equal(c->dispatcher, pthread_self())) {
		/* from its own callback: the dispatcher frees it when the callback returns */
		s->free_pending = true;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	while (s->cb_busy)
		pthread_cond_wait(&c->cond, &c->lock);
	s->dying = true;
	if (s->cb_queued) {
		struct garuda_stream *prev = NULL;
		for (struct garuda_stream *q = c->cbq_head; q; prev = q, q = q->cb_next) {
			if (q != s)
				continue;
			if (prev)
				prev->cb_next = q->cb_next;
			else
				c->cbq_head = q->cb_next;
			if (c->cbq_tail == q)
				c->cbq_tail = prev;
			break;
		}
		s->cb_queued = false;
	}
	uint64_t gen = s->gen;
	pthread_mutex_unlock(&c->lock);

	/* Forget it daemon-side in the session it is presented in. A presentation that
	 * began before it was dying may present it in a newer session meanwhile; the
	 * presentation holds reg_lock, so under reg_lock the generation is final. */
	for (;;) {
		pthread_mutex_lock(&c->lock);
		bool presented = gen && gen == c->gen && seg->gen == gen &&
				 s->form != GARUDA_READINESS_POLL;
		uint32_t segid = seg->id;
		pthread_mutex_unlock(&c->lock);
		if (presented)
			forget_daemon_side(s, gen, segid);
		pthread_mutex_lock(&c->reg_lock);
		pthread_mutex_lock(&c->lock);
		if (s->gen == gen)
			break; /* both locks held */
		gen = s->gen;
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_unlock(&c->reg_lock);
	}
	c->streams[s->tab] = NULL;
	pthread_mutex_unlock(&c->lock);
	uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_relaxed);
	bool outstanding = !garuda_reached(word_load(s->word), sig);
	/* a word with a store still to land is never handed out again */
	seg->used[s->index] = outstanding ? 2 : 0;
	if (!outstanding)
		seg->nfree++;
	seg->nstreams--;
	pthread_mutex_unlock(&c->reg_lock);

	if (s->efd >= 0)
		close(s->efd);
	pthread_cond_destroy(&s->ready_cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int garuda_stream_set_wait(struct garuda_stream *s, uint64_t spin_ns, uint64_t backstop_ns)
{
	if (!s || backstop_ns < MIN_BACKSTOP_NS)
		return -EINVAL;
	s->spin_ns = spin_ns;
	s->backstop_ns = backstop_ns;
	return 0;
}

int garuda_stream_set_callback(struct garuda_stream *s, garuda_stream_cb cb, void *user)
{
	if (!s)
		return -EINVAL;
	if (s->form != GARUDA_READINESS_MESSAGE)
		return -EOPNOTSUPP;
	struct garuda_client *c = s->client;
	pthread_mutex_lock(&c->lock);
	s->cb = cb;
	s->cb_user = user;
	if (cb)
		stream_nudge_locked(s); /* report what completed before */
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* ------------------------------------------------------------------ signal */

int garuda_stream_signal(struct garuda_stream *s, uint64_t *seq)
{
	if (!s || !seq)
		return -EINVAL;
	struct garuda_client *c = s->client;
	struct garuda_seg *seg = s->seg;

	pthread_mutex_lock(&s->lock);
	pthread_mutex_lock(&c->lock);
	int err = s->arm_err;
	s->arm_err = 0;
	uint64_t prev = atomic_load_explicit(&s->signalled, memory_order_relaxed);
	if (err)
		s->err_upto = prev; /* every arm sent so far is covered by this report */
	pthread_mutex_unlock(&c->lock);
	if (err) {
		pthread_mutex_unlock(&s->lock);
		return err;
	}
	uint64_t next = prev + 1;
	int r = seg->ops->enqueue_store(seg->backend, s->native, seg->reg, s->word, next);
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	atomic_store_explicit(&s->signalled, next, memory_order_release);
	if (s->form != GARUDA_READINESS_POLL) {
		pthread_mutex_lock(&c->lock);
		if (s->arm_lost && garuda_reached(word_load(s->word), prev))
			s->arm_lost = false; /* nothing older is outstanding any more */
		/* also while the session is being presented: a stream presented in it
		 * already is not armed again by the presentation */
		if ((c->state == CONN_UP || c->state == CONN_PRESENTING) && s->gen == c->gen) {
			r = arm_locked(s, next);
			if (r < 0 && r != -GARUDA_E_DISCONNECTED)
				s->arm_lost = true;
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&s->lock);
	*seq = next;
	return 0;
}

uint64_t garuda_stream_last(const struct garuda_stream *s)
{
	return s ? atomic_load_explicit(&s->signalled, memory_order_acquire) : 0;
}

uint64_t garuda_stream_value(const struct garuda_stream *s)
{
	return s ? word_load(s->word) : 0;
}

bool garuda_stream_reached(const struct garuda_stream *s, uint64_t seq)
{
	return s && garuda_reached(word_load(s->word), seq);
}

int garuda_stream_query(struct garuda_stream *s)
{
	if (!s)
		return -EINVAL;
	return s->seg->ops->query(s->seg->backend, s->native);
}

/* ------------------------------------------------------------------ wait */

/* Block on the readiness form until `until` (monotonic ns) or a wake. */
static void block(struct garuda_stream *s, uint64_t now, uint64_t until, uint64_t ready_seen,
		  uint32_t bell_seen)
{
	struct garuda_client *c = s->client;
	uint64_t left = until > now ? until - now : 0;
	switch (s->form) {
	case GARUDA_READINESS_EVENTFD: {
		struct pollfd p = { .fd = s->efd, .events = POLLIN };
		struct timespec ts = ns_to_ts(left);
		if (ppoll(&p, 1, &ts, NULL) > 0) {
			uint64_t v;
			ssize_t n = read(s->efd, &v, sizeof(v));
			(void)n;
		}
		break;
	}
	case GARUDA_READINESS_DOORBELL: {
		struct timespec ts = ns_to_ts(left);
		syscall(SYS_futex, &s->seg->map->hdr.doorbell, FUTEX_WAIT, bell_seen, &ts, NULL, 0);
		break;
	}
	case GARUDA_READINESS_MESSAGE: {
		struct timespec ts = ns_to_ts(until);
		pthread_mutex_lock(&c->lock);
		while (s->ready_count == ready_seen) {
			if (pthread_cond_timedwait(&s->ready_cond, &c->lock, &ts) == ETIMEDOUT)
				break;
		}
		pthread_mutex_unlock(&c->lock);
		break;
	}
	case GARUDA_READINESS_POLL: {
		struct timespec ts = ns_to_ts(until);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		break;
	}
	}
}

int garuda_stream_wait(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns)
{
	if (!s || seq == 0)
		return -EINVAL;
	if (!garuda_reached(atomic_load_explicit(&s->signalled, memory_order_acquire), seq))
		return -EINVAL; /* never signalled: would never complete */
	if (garuda_reached(word_load(s->word), seq))
		return 0;
	if (timeout_ns == 0)
		return -GARUDA_E_TIMEOUT;

	struct garuda_client *c = s->client;
	uint64_t now = garuda_now_ns();
	uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;

	/* spin */
	uint64_t spin_end = s->spin_ns > deadline - now ? deadline : now + s->spin_ns;
	for (unsigned i = 1; now < spin_end; i++) {
		if (garuda_reached(word_load(s->word), seq))
			return 0;
		cpu_relax();
		if ((i & 63) == 0)
			now = garuda_now_ns();
	}

	/* block, with the backstop */
	uint64_t backstop_at = now + s->backstop_ns;
	uint64_t step = POLL_STEP_MIN_NS;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		bool armed = s->form != GARUDA_READINESS_POLL && c->state == CONN_UP &&
			     s->gen == c->gen && !s->arm_lost;
		uint64_t ready_seen = s->ready_count;
		pthread_mutex_unlock(&c->lock);
		uint32_t bell_seen = s->form == GARUDA_READINESS_DOORBELL
					     ? __atomic_load_n(&s->seg->map->hdr.doorbell,
							       __ATOMIC_ACQUIRE)
					     : 0;
		if (garuda_reached(word_load(s->word), seq))
			return 0;
		now = garuda_now_ns();
		if (now >= deadline)
			return -GARUDA_E_TIMEOUT;
		if (now >= backstop_at) {
			int q = s->seg->ops->query(s->seg->backend, s->native);
			if (garuda_reached(word_load(s->word), seq))
				return 0;
			if (q == -GARUDA_E_STREAM_FAULT)
				return q;
			backstop_at = now + s->backstop_ns;
		}
		uint64_t until = deadline < backstop_at ? deadline : backstop_at;
		if (!armed) {
			if (now + step < until)
				until = now + step;
			step = step * 2 > POLL_STEP_MAX_NS ? POLL_STEP_MAX_NS : step * 2;
		}
		block(s, now, until, ready_seen, bell_seen);
	}
}

int garuda_stream_fd(const struct garuda_stream *s)
{
	if (!s)
		return -EINVAL;
	return s->form == GARUDA_READINESS_EVENTFD ? s->efd : -EOPNOTSUPP;
}

int garuda_stream_drain(struct garuda_stream *s, uint64_t *seq)
{
	if (!s)
		return -EINVAL;
	if (s->efd >= 0) {
		uint64_t v;
		ssize_t n = read(s->efd, &v, sizeof(v));
		(void)n;
	}
	uint64_t v = word_load(s->word);
	if (seq)
		*seq = v;
	if (v == s->drained || !garuda_reached(v, s->drained))
		return 0;
	s->drained = v;
	return 1;
}
