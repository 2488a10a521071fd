/* stream.c — libgaruda's streams: one word each, signalled through a backend, armed
 * with garudad, presented again to a new session. How a stream is waited on (spin,
 * then block on the readiness form, with a backstop query of the native stream) is
 * wait.c's; its plan (what the wait does, and the stream's statistics) plan.c's; what
 * each readiness form does form.c's.
 *
 * Promises:
 *  - Memory is the truth: every answer (reached, wait, drain, callbacks) comes from an
 *    acquire load of the word; readiness only decides when to look again.
 *  - Sequences are stored in increasing order: a stream's sequence, its store and its
 *    arm are taken under the stream's lock, so arms go out in the order of the stores.
 *  - No lost wake-up. Doorbell and message forms: a waiter samples its readiness
 *    generation (doorbell value, READY count) before it reads the word, and blocks only
 *    on that sample. Eventfd form: no sample is taken; the eventfd's count is the
 *    memory of a wake-up (a write after the word was read leaves the fd readable, and
 *    the waiter consumes the count only by reading the fd before it reads the word).
 *  - A freed stream's word is handed out again only when the daemon can no longer
 *    fire an arm of it there (garuda_stream_free's DISARM round trip), and only when
 *    no store of it is still to land.
 *  - A waiter never blocks longer than the backstop interval without reading the word
 *    and querying the native stream; a faulted stream fails the wait.
 *  - A fault ends in the stream's readiness form too, not only in a wait: while a
 *    sequence is outstanding on a stream of a delivered form, the I/O thread queries
 *    its native stream on the waits' backstop schedule (router.c fault_watch, started
 *    by the signal that found nothing older outstanding: stream_fault_watch_locked);
 *    a fault with the word still behind marks it faulted (sticky) and nudges it once,
 *    and drain, query and the callback's dispatch report -GARUDA_E_STREAM_FAULT.
 *  - Without a session (or with an arm refused), waits poll the word with a growing
 *    interval (POLL_STEP_MIN_NS .. POLL_STEP_MAX_NS).
 *  - A refused arm ends in the stream's readiness form: the refusal nudges the stream
 *    (stream_arm_lost_locked), the I/O thread nudges it again whenever its word moves
 *    until nothing signalled is outstanding (router.c while_lost), and the next signal
 *    reports the refusal once, with garudad's text in garuda_last_error(). The same
 *    watch covers every sequence garudad holds no arm for in a session (strict client):
 *    after an arm that could not be sent (not reported: garudad refused nothing), and
 *    of a stream whose segment or BIND was refused, also one signalled while the
 *    session is still being presented (watch_lost_locked).
 *  - An arm's ERROR names its sequence by the low 32 bits (arm_cookie()); the whole
 *    one, k * 2^32 included, is found from what the stream signalled
 *    (stream_arm_target(), stream.h).
 *
 * Memory ordering (what the wake-up paths rely on; each is repeated where it lives):
 *  - The word: the device's (or host worker's) store is read with acquire loads only
 *    (word_load); garudad's scanner reads it the same way before it wakes anyone.
 *  - Doorbell: the waiter's acquire load of the doorbell comes before its acquire load
 *    of the word (acquire keeps the later load after it). garudad bumps the doorbell
 *    with a release RMW after its acquire load saw the word reached, and only then
 *    calls FUTEX_WAKE. So a waiter that saw the bumped value also sees the store, and
 *    one that saw the old value either finds the new one in FUTEX_WAIT's own compare
 *    (EAGAIN) or is queued before the wake (the kernel orders compare and wake under
 *    its futex bucket lock). stream_nudge_locked() bumps before it wakes, likewise.
 *  - Eventfd: read(2) of the fd comes before the load of the word (drain, block).
 *    garudad writes the fd after its acquire load saw the word reached; the eventfd's
 *    internal lock orders that write before our read, and an explicit acquire fence
 *    after the read keeps our load of the word after it.
 *  - Message: the READY count is sampled under c->lock before the word is read; the
 *    router increments it under c->lock after the READY came through the socket, which
 *    garudad sent after its acquire load saw the word reached (the socket and c->lock
 *    carry that order to the waiter).
 *  - s->signalled is stored (release) before the ARM for it is sent under c->lock, so
 *    the router, which holds c->lock when an ERROR for that arm comes back, reads a
 *    value at least as new (the relaxed load there is ordered by c->lock).
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "stream.h"

/* ------------------------------------------------------------------ readiness */

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
	/* memory is the truth: the word is read again where it matters; the value is kept
	 * for the fault watch's liveness check (router.c) */
	struct garuda_stream *s = stream_lookup_locked(c, token);
	if (!s)
		return;
	if (garuda_reached(value, s->ses.readied))
		s->ses.readied = value;
	stream_nudge_locked(s);
}

/* The live stream with this serial, or NULL. Errors are rare (quota refusals, a
 * closed segment): a scan of the table is fine here. */
static struct garuda_stream *stream_by_serial_locked(struct garuda_client *c, uint32_t serial)
{
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (s && (uint32_t)(s->token >> 32) == serial)
			return s;
	}
	return NULL;
}

/* s is served by the I/O thread's while_lost from here: it nudges the next move of
 * its word (what the waiter sees now is the caller's to cover). c->lock held. */
static void watch_lost_locked(struct garuda_stream *s)
{
	struct garuda_client *c = s->client;
	if (!s->ses.arm_lost) { /* (already lost: while_lost has a move to report) */
		s->ses.arm_lost = true; /* waits poll until it is behind us */
		s->ses.polled = word_load(s->word);
	}
	if (!c->lost_any) {
		c->lost_any = true;
		if (!is_io_thread(c)) { /* wake it: its poll takes a timeout from now on */
			uint64_t one = 1;
			ssize_t n = write(c->wake_efd, &one, sizeof(one));
			(void)n;
		}
	}
}

void stream_arm_lost_locked(struct garuda_stream *s, int code, const char *text)
{
	if (code && !s->ses.arm_err) {
		s->ses.arm_err = code;
		snprintf(s->ses.arm_err_text, sizeof(s->ses.arm_err_text), "%s", text ? text : "");
	}
	watch_lost_locked(s);
	stream_nudge_locked(s); /* the waiter looks now: the refusal ends its block */
}

void stream_async_error_locked(struct garuda_client *c, uint64_t cookie, int code,
			       const char *text)
{
	uint32_t serial = (uint32_t)(cookie >> 32) & STREAM_SERIAL_MASK;
	if (code == -GARUDA_E_NOT_ARMED)
		return;
	struct garuda_stream *s = stream_by_serial_locked(c, serial);
	/* only a sequence this stream signalled (1..signalled; the cookie holds its low
	 * 32 bits, stream_arm_target() finds the whole one, k * 2^32 included) can be its
	 * arm; anything else names a stream that is gone (or a daemon bug): drop and count */
	uint64_t target = s ? stream_arm_target(atomic_load_explicit(&s->signalled,
								      memory_order_relaxed),
						(uint32_t)cookie)
			    : 0;
	if (!target) {
		atomic_fetch_add_explicit(&c->stray_errors, 1, memory_order_relaxed);
		return;
	}
	/* report once: not for arms older than the last report */
	bool report = target > s->ses.err_upto;
	stream_arm_lost_locked(s, report ? code : 0, text);
}

/* ARM target on s; c->lock and s->lock held; s presented in the current session. */
/* flags: 0, or present_flag() for an arm of what a lost session held */
static int arm_locked(struct garuda_stream *s, uint64_t target, uint16_t flags)
{
	struct garuda_client *c = s->client;
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, arm_cookie((uint32_t)(s->token >> 32), target));
	m.flags = (uint16_t)(GARUDA_F_NOREPLY | flags);
	m.arm.slot.segment = s->seg->id;
	m.arm.slot.index = s->index;
	m.arm.target = target;
	m.arm.token = s->token;
	m.arm.form = stream_form(s)->wire;
	uint64_t gen = s->ses.gen;
	int r = conn_send_arm_locked(c, &m, gen);
	if (r == 0)
		s->ses.armed_gen = gen; /* garuda_stream_free() owes this session a DISARM */
	return r;
}

int stream_present(struct garuda_stream *s, uint64_t gen)
{
	struct garuda_client *c = s->client;
	int r = 0;

	const struct stream_form *form = stream_form(s);
	if (!form->wire)
		return 0;
	pthread_mutex_lock(&s->lock);
	pthread_mutex_lock(&c->lock);
	bool dying = s->ses.dying;
	bool seg_ok = s->seg->gen == gen;
	uint32_t segid = s->seg->id;
	int seg_err = s->seg->attach_err;
	pthread_mutex_unlock(&c->lock);
	if (dying)
		goto out;
	if (!seg_ok) {
		pthread_mutex_lock(&c->lock);
		stream_arm_lost_locked(s, seg_err ? seg_err : -GARUDA_E_NO_SEGMENT,
				       "the stream's segment is not attached in this session");
		pthread_mutex_unlock(&c->lock);
		goto out;
	}
	if (form->bind) {
		/* the presenter thread's text: what a refusal below leaves is this BIND's */
		client_clear_error();
		r = form->bind(s, segid, gen, true, present_flag(c));
		if (r == -GARUDA_E_DISCONNECTED || r == -GARUDA_E_TIMEOUT) {
			r = -GARUDA_E_DISCONNECTED;
			goto out;
		}
		if (r < 0) {
			pthread_mutex_lock(&c->lock);
			stream_arm_lost_locked(s, r, garuda_last_error());
			pthread_mutex_unlock(&c->lock);
			r = 0;
			goto out;
		}
	}
	pthread_mutex_lock(&c->lock);
	s->ses.gen = gen;
	s->ses.arm_lost = false;
	uint64_t word = word_load(s->word);
	uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_relaxed);
	/* every outstanding sequence gets its arm again */
	for (uint64_t t = word + 1; !garuda_reached(word, sig) && !garuda_reached(t - 1, sig); t++) {
		r = arm_locked(s, t, present_flag(c));
		if (r < 0)
			break;
	}
	/* garudad's refusals of the arms sent come back as async errors; an arm that could
	 * not be sent (a local send error) gets none: the sequences from it on have no arm,
	 * so the I/O thread watches the stream (no report: garudad refused nothing, as for
	 * garuda_stream_signal()'s own arm) */
	if (r < 0 && r != -GARUDA_E_DISCONNECTED) {
		stream_arm_lost_locked(s, 0, NULL);
		r = 0;
	}
	pthread_mutex_unlock(&c->lock);
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
	/* a serial no live stream has: after the first wrap, skip the ones in use */
	do {
		c->next_serial = (c->next_serial + 1) & STREAM_SERIAL_MASK;
		if (!c->next_serial) {
			c->next_serial = 1;
			c->serial_wrapped = true;
		}
	} while (c->serial_wrapped && stream_by_serial_locked(c, c->next_serial));
	s->tab = i;
	s->token = ((uint64_t)c->next_serial << 32) | i;
	c->streams[i] = s;
	return 0;
}

/* A stream nobody else can see yet (not in the table, no word): undone by
 * stream_discard(). */
static struct garuda_stream *stream_alloc(struct garuda_seg *seg, void *native,
					  enum garuda_readiness form)
{
	struct garuda_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->client = seg->client;
	s->seg = seg;
	s->native = native;
	s->form = form;
	s->efd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->plan_lock, NULL);
	reactor_stream_init(s);
	stream_plan_init(s);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->ses.ready_cond, &ca);
	pthread_condattr_destroy(&ca);
	return s;
}

void stream_discard(struct garuda_stream *s)
{
	if (s->efd >= 0)
		close(s->efd);
	pthread_cond_destroy(&s->ses.ready_cond);
	pthread_mutex_destroy(&s->plan_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Give s a free word of its segment and a place in the token table; from here on
 * garuda_stream_free() undoes it. *bind_gen gets the session s must BIND in itself
 * (a form that binds, in an up session), else 0. */
static int stream_publish(struct garuda_stream *s, uint64_t *bind_gen, uint32_t *segid)
{
	struct garuda_client *c = s->client;
	struct garuda_seg *seg = s->seg;
	int r = -ENOSPC;
	*bind_gen = 0;
	pthread_mutex_lock(&c->reg_lock);
	uint32_t nwords = seg->lines * GARUDA_WORDS_PER_LINE;
	for (uint32_t i = 0; i < nwords && seg->nfree; i++) {
		if (!seg->used[i]) {
			s->index = i;
			r = 0;
			break;
		}
	}
	if (r == -ENOSPC)
		client_set_error("segment is full: all %u words (%u lines x %u) hold streams; free a "
				 "stream (garuda_stream_free) or open another segment (garuda_segment_open)",
				 nwords, seg->lines, GARUDA_WORDS_PER_LINE);
	if (r == 0) {
		pthread_mutex_lock(&c->lock);
		r = table_insert_locked(c, s);
		if (r == 0) {
			seg->used[s->index] = 1;
			seg->nfree--;
			seg->nstreams++;
			s->word = garuda_segment_word(seg->map, s->index);
			/* no store is pending on a free word, and no arm of an earlier stream
			 * is left on it (garuda_stream_free): start from 0 */
			__atomic_store_n(s->word, 0, __ATOMIC_RELEASE);
			bool up = c->state == CONN_UP && seg->gen == c->gen;
			/* in an up session we present it ourselves; otherwise the next
			 * presentation (which needs reg_lock, held here) will */
			if (up && stream_form(s)->bind) {
				*bind_gen = c->gen;
				*segid = seg->id;
			} else if (up && stream_form(s)->wire) {
				s->ses.gen = c->gen;
			}
		}
		pthread_mutex_unlock(&c->lock);
	}
	pthread_mutex_unlock(&c->reg_lock);
	return r;
}

static int stream_new(struct garuda_seg *seg, void *native, enum garuda_readiness form,
		      struct garuda_stream **out)
{
	if (out)
		*out = NULL;
	if (!seg || !out || !stream_form_known(form))
		return -EINVAL;
	struct garuda_client *c = seg->client;

	/* two owners, one after the other: before it is published, stream_discard()
	 * undoes it; after, garuda_stream_free() */
	_cleanup_(stream_discardp) struct garuda_stream *fresh = stream_alloc(seg, native, form);
	if (!fresh)
		return -ENOMEM;
	int r = stream_form(fresh)->open ? stream_form(fresh)->open(fresh) : 0;
	if (r < 0)
		return r;
	uint64_t gen;
	uint32_t segid = 0;
	r = stream_publish(fresh, &gen, &segid);
	if (r < 0)
		return r;
	_cleanup_(garuda_stream_freep) struct garuda_stream *s = TAKE_PTR(fresh);

	if (gen) {
		r = stream_form(s)->bind(s, segid, gen, true, 0);
		if (r == -GARUDA_E_TIMEOUT) {
			/* a hung garudad may still bind the slot when it comes back: the word
			 * would be ALREADY_BOUND for every later EVENTFD stream given it.
			 * Freed below (garuda_stream_freep), it stays out of use in this
			 * session; an UNBIND now could wait as long again. */
			pthread_mutex_lock(&c->lock);
			s->ses.bind_unknown = gen;
			pthread_mutex_unlock(&c->lock);
		}
		if (r < 0 && r != -GARUDA_E_DISCONNECTED)
			return r;
		if (r == 0) {
			pthread_mutex_lock(&s->lock);
			pthread_mutex_lock(&c->lock);
			if (c->gen == gen)
				s->ses.gen = gen;
			pthread_mutex_unlock(&c->lock);
			pthread_mutex_unlock(&s->lock);
		}
		/* disconnected: the next presentation binds it */
	}
	*out = TAKE_PTR(s);
	return 0;
}

int garuda_stream_new(struct garuda_seg *seg, void *native, enum garuda_readiness form,
		      struct garuda_stream **out)
{
	return client_return(stream_new(seg, native, form, out));
}

/* DISARM and UNBIND s in session gen (round trips). Returns true when the daemon can
 * no longer fire an arm of s: the round trips completed (NOT_ARMED is fine: those arms
 * fired), or the session is gone (its arms went with it).
 *
 * Why a DISARM round trip whenever s sent an ARM in this session, even when its word
 * already reached every signalled sequence: the daemon drops an arm only when a
 * scanner pass sees the word reached. If garuda_stream_new() hands the word to a new
 * stream, which stores 0 into it, before such a pass, no pass ever will: the arm stays
 * armed for good (charged to the armed quota, keeping the scanner from parking) and
 * fires stale readiness when a later stream climbs back (issue 16). Generation-tagged
 * arms would avoid the round trip but need a protocol change; one round trip per free
 * of a stream that signalled is cheap next to a signal's own ARM. The reply also
 * orders every async error of s's arms before it (a session's messages arrive in
 * order), so they are routed while s is still in the table. */
static bool forget_daemon_side(struct garuda_stream *s, uint64_t gen, uint32_t segid,
			       bool armed)
{
	struct garuda_client *c = s->client;
	struct garuda_msg m;
	bool safe = true;
	if (armed) {
		garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
		m.disarm.slot.segment = segid;
		m.disarm.slot.index = s->index;
		m.disarm.token = s->token;
		int r = conn_tell_gen(c, &m, gen); /* its refusal is not the caller's error */
		safe = r == 0 || r == -GARUDA_E_NOT_ARMED;
	}
	/* UNBIND drops the slot's eventfd arms too */
	if (stream_form(s)->bind && stream_form(s)->bind(s, segid, gen, false, 0) == 0)
		safe = true;
	if (safe)
		return true;
	/* not sent, or refused for good: no arm is left only when the session is over.
	 * One still being presented is not (garuda_stream_free waits for it to be up
	 * first, so it is not met here; were it, the word stays quarantined) */
	pthread_mutex_lock(&c->lock);
	bool gone = c->gen != gen || (c->state != CONN_UP && c->state != CONN_PRESENTING);
	pthread_mutex_unlock(&c->lock);
	return gone;
}

void garuda_stream_free(struct garuda_stream *s)
{
	if (!s)
		return;
	struct garuda_client *c = s->client;
	struct garuda_seg *seg = s->seg;

	/* dying: no callback, no queueing, no presentation from here on */
	pthread_mutex_lock(&c->lock);
	if (s->cb.busy && c->dispatching && pthread_equal(c->dispatcher, pthread_self())) {
		/* from its own callback: the dispatcher frees it when the callback returns */
		s->cb.free_pending = true;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	while (s->cb.busy || s->fx.querying) /* a callback, the fault watch's query */
		pthread_cond_wait(&c->cond, &c->lock);
	s->ses.dying = true;
	if (s->cb.queued) {
		struct garuda_stream *prev = NULL;
		for (struct garuda_stream *q = c->cbq_head; q; prev = q, q = q->cb.next) {
			if (q != s)
				continue;
			if (prev)
				prev->cb.next = q->cb.next;
			else
				c->cbq_head = q->cb.next;
			if (c->cbq_tail == q)
				c->cbq_tail = prev;
			break;
		}
		s->cb.queued = false;
	}
	uint64_t gen = s->ses.gen;
	pthread_mutex_unlock(&c->lock);
	bool word_safe = true;

	/* Forget it daemon-side in the session it is presented in. A presentation that
	 * began before it was dying may present it in a newer session meanwhile; the
	 * presentation holds reg_lock, so under reg_lock the generation is final. */
	for (;;) {
		pthread_mutex_lock(&c->lock);
		/* Presented in a session that is still being presented (the presenter got to
		 * it before it was dying): garudad holds its BIND and arms, but only the
		 * presenter may send until the session is up (conn.c may_send_locked), so a
		 * DISARM/UNBIND now would be refused here and the stream taken for one whose
		 * session is gone: its word handed out again while garudad still binds and
		 * arms it (the next EVENTFD stream there: -GARUDA_E_ALREADY_BOUND; a stale
		 * arm firing for a later stream). Wait for the session to be up, or to end
		 * (its arms go with it); c->cond is broadcast with every state change. No
		 * new wait: the reg_lock below waits for the presentation's end anyway, and
		 * this holds no lock the presenter needs (c->lock is released while waiting,
		 * dying keeps the presentation from taking the stream again). Quarantining the
		 * word instead would leak the binding and arms for the whole session. */
		while (gen && gen == c->gen && c->state == CONN_PRESENTING)
			pthread_cond_wait(&c->cond, &c->lock);
		bool presented = gen && gen == c->gen && seg->gen == gen && stream_form(s)->wire;
		uint32_t segid = seg->id;
		bool armed = s->ses.armed_gen == gen;
		pthread_mutex_unlock(&c->lock);
		word_safe = !presented || forget_daemon_side(s, gen, segid, armed);
		pthread_mutex_lock(&c->reg_lock);
		pthread_mutex_lock(&c->lock);
		if (s->ses.gen == gen)
			break; /* both locks held */
		gen = s->ses.gen;
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_unlock(&c->reg_lock);
	}
	c->streams[s->tab] = NULL;
	bool bind_unknown = s->ses.bind_unknown && s->ses.bind_unknown == c->gen;
	pthread_mutex_unlock(&c->lock);
	uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_relaxed);
	bool outstanding = !garuda_reached(word_load(s->word), sig);
	/* a word with a store still to land, or one the daemon may still hold an arm or a
	 * binding of s on (the DISARM round trip did not complete in a live session, or
	 * its BIND timed out in this one), is never handed out again */
	bool keep = outstanding || !word_safe || bind_unknown;
	seg->used[s->index] = keep ? 2 : 0;
	/* garuda_segment_close() refuses while that store may still land; a faulted native
	 * stream discards its stores, so none will */
	bool may_land = outstanding && seg->ops->query(seg->backend, s->native) != -GARUDA_E_STREAM_FAULT;
	seg->tomb[s->index] = may_land ? sig : 0;
	if (!keep)
		seg->nfree++;
	seg->nstreams--;
	pthread_mutex_unlock(&c->reg_lock);

	stream_discard(s);
}

int garuda_stream_set_callback(struct garuda_stream *s, garuda_stream_cb cb, void *user)
{
	if (!s)
		return client_fail(-EINVAL);
	if (!stream_form(s)->callbacks)
		return client_fail(-EOPNOTSUPP);
	struct garuda_client *c = s->client;
	pthread_mutex_lock(&c->lock);
	s->cb.fn = cb;
	s->cb.user = user;
	if (cb)
		stream_nudge_locked(s); /* report what completed before */
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* ------------------------------------------------------------------ signal */

void stream_fault_watch_locked(struct garuda_stream *s)
{
	struct garuda_client *c = s->client;
	if (s->fx.since || atomic_load_explicit(&s->faulted, memory_order_relaxed))
		return; /* watched already (an older sequence is outstanding), or told */
	uint64_t now = garuda_now_ns();
	s->fx.since = now;
	s->fx.base = word_load(s->word);
	s->fx.due = now + stream_fault_interval_ns(s, 0); /* plan_lock: a leaf */
	if (!c->fault_due || s->fx.due < c->fault_due) {
		c->fault_due = s->fx.due;
		uint64_t one = 1;
		ssize_t n = write(c->wake_efd, &one, sizeof(one)); /* its timer is later */
		(void)n;
	}
}

int garuda_stream_signal(struct garuda_stream *s, uint64_t *seq)
{
	if (!s || !seq)
		return client_fail(-EINVAL);
	struct garuda_client *c = s->client;
	struct garuda_seg *seg = s->seg;

	pthread_mutex_lock(&s->lock);
	pthread_mutex_lock(&c->lock);
	int err = s->ses.arm_err;
	s->ses.arm_err = 0;
	uint64_t prev = atomic_load_explicit(&s->signalled, memory_order_relaxed);
	if (err) {
		s->ses.err_upto = prev; /* every arm sent so far is covered by this report */
		client_set_error("garudad refused the arm of an earlier sequence of this stream "
				 "(its wait completes by polling the word): %s",
				 s->ses.arm_err_text[0] ? s->ses.arm_err_text : garuda_strerror(err));
	}
	pthread_mutex_unlock(&c->lock);
	if (err) {
		pthread_mutex_unlock(&s->lock);
		return client_fail(err);
	}
	uint64_t next = prev + 1;
	int r = seg->ops->enqueue_store(seg->backend, s->native, seg->reg, s->word, next);
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return client_fail(r);
	}
	/* before the ARM goes out under c->lock: the router's check of an ERROR for
	 * this arm (stream_async_error_locked, under c->lock) sees it */
	atomic_store_explicit(&s->signalled, next, memory_order_release);
	if (stream_form(s)->wire) {
		pthread_mutex_lock(&c->lock);
		stream_fault_watch_locked(s);
		uint64_t v = word_load(s->word);
		if (s->ses.arm_lost && garuda_reached(v, prev)) {
			s->ses.arm_lost = false; /* nothing older is outstanding any more */
			if (v != s->ses.polled) /* a move while_lost has not reported yet */
				stream_nudge_locked(s);
		}
		/* also while the session is being presented: a stream presented in it
		 * already is not armed again by the presentation */
		if ((c->state == CONN_UP || c->state == CONN_PRESENTING) && s->ses.gen == c->gen) {
			r = arm_locked(s, next, 0);
			if (r < 0 && r != -GARUDA_E_DISCONNECTED)
				stream_arm_lost_locked(s, 0, NULL); /* the session is ending */
		} else if ((c->state == CONN_UP || c->state == CONN_PRESENTING) && !c->fallback) {
			/* not presented in this session: garudad refused its segment or its
			 * BIND, or (while presenting) its turn is still to come; s->lock is
			 * held, so it is one or the other. The I/O thread watches it; a later
			 * stream_present() clears the mark and arms every outstanding
			 * sequence, this one included */
			watch_lost_locked(s);
		} else {
			reactor_signalled_locked(s, prev); /* fallback clients: the reactor's */
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
		return client_fail(-EINVAL);
	int r = s->seg->ops->query(s->seg->backend, s->native);
	if (r != -GARUDA_E_STREAM_FAULT && stream_fault_stands(s))
		r = -GARUDA_E_STREAM_FAULT;
	return client_return(r);
}
