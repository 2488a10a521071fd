/* readiness.c — see readiness.h. */
#include "readiness.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "control_names.h"
#include "errcode.h"
#include "form.h"
#include "futex.h"
#include "log.h"

/* The write guard: a PERIODIC timer whose signal interrupts an eventfd write that
 * blocks. A one-shot guard has a hole: the scanner may be preempted between checking
 * it and entering write(), the signal then lands before the write and the write blocks
 * for good (seen under load and ASan: the chaos soak's scanner froze for seconds). A
 * periodic one cannot miss: a write that blocks is interrupted by the next tick, within
 * one period, however late it started. It is armed by the first eventfd write after
 * the scanner last slept (one timer_settime), ticks every GUARD_NS while the scanner
 * works, and is disarmed when the scanner goes to sleep (readiness_quiesce(): one
 * timer_settime, only when it was armed), so a sleeping or parked scanner takes no
 * signal at all. */
#define GUARD_NS 1000000ull

#define SEND_BATCH 64 /* datagrams per sendmmsg */

/* What became of one eventfd write (the sink counts the last two). */
enum delivery {
	DELIVERY_WRITTEN,
	DELIVERY_RETRIED, /* written, after EINTR on a still non-blocking eventfd */
	DELIVERY_DROPPED, /* not written: the session's eventfds are broken */
};

static int guard_signal(void)
{
	return SIGRTMIN;
}

static void guard_handler(int sig)
{
	(void)sig;
}

void readiness_install_guard_handler(void)
{
	struct sigaction sa = { .sa_handler = guard_handler }; /* no SA_RESTART: EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(guard_signal(), &sa, NULL);
}

int readiness_init(struct readiness *r, unsigned index, struct notice_queue *notices)
{
	*r = (struct readiness){ .index = index, .notices = notices };
	/* the guard's signal must reach this thread whatever mask garudad was started
	 * with (a launcher that blocks SIGRTMIN): blocked, it never interrupts a write */
	sigset_t guard;
	sigemptyset(&guard);
	sigaddset(&guard, guard_signal());
	int e = pthread_sigmask(SIG_UNBLOCK, &guard, NULL);
	if (e) {
		log_err("scanner %u: cannot unblock the write guard's signal: %s", index, strerror(e));
		return -e;
	}
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = guard_signal() };
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &r->guard) < 0) {
		e = errno;
		log_err("scanner %u: no write guard timer: %s%s", index, strerror(e),
			e == EAGAIN ? " (RLIMIT_SIGPENDING is 0?)" : "");
		return -e;
	}
	r->guard_ok = true;
	return 0;
}

void readiness_fini(struct readiness *r)
{
	if (r->guard_ok)
		timer_delete(r->guard);
	r->guard_ok = false;
}

static void guard_arm(struct readiness *r, uint64_t period_ns)
{
	struct itimerspec its = { .it_value.tv_nsec = (long)period_ns,
				  .it_interval.tv_nsec = (long)period_ns };
	timer_settime(r->guard, 0, &its, NULL);
	r->guard_period = period_ns;
}

void readiness_quiesce(struct readiness *r)
{
	if (!r->guard_ok || !r->guard_period)
		return;
	struct itimerspec off = { 0 };
	timer_settime(r->guard, 0, &off, NULL);
	r->guard_period = 0;
}

static void offender(struct readiness *r, struct sink *sink, int code)
{
	notice_push(r->notices, &(struct notice){ .kind = NOTICE_OFFENDER,
						  .session_id = sink->session_id, .code = code });
}

/* After a write that blocked, the rest of that write loop runs under this shorter
 * guard: another client's eventfd blocking in the same pass (an attacker with many
 * sessions and eventfds) costs GUARD_AFTER_NS each, not a whole GUARD_NS. */
#define GUARD_AFTER_NS 50000ull

/* Before every eventfd write: the guard must be ticking: GUARD_NS, or GUARD_AFTER_NS
 * once a write of this pass blocked. A syscall only when that changes. */
static void guard_cover(struct readiness *r)
{
	uint64_t period = r->blocked ? GUARD_AFTER_NS : GUARD_NS;
	if (r->guard_ok && r->guard_period != period)
		guard_arm(r, period);
}

/* The session's eventfds would block the scanner: stop writing to every one of them
 * (a client may bind one open file description to many slots: each further write
 * could block again) and have the loop disconnect it. */
static void eventfd_offender(struct readiness *r, struct binding *b, struct sink *sink, const char *why)
{
	atomic_store_explicit(&b->broken, true, memory_order_relaxed);
	if (atomic_exchange_explicit(&sink->eventfd_broken, true, memory_order_relaxed))
		return; /* already reported */
	log_client(sink->quota.uid ? sink->quota.uid->uid : LOG_UID_NONE, LOG_WARNING, "session %llu: %s; disconnecting", (unsigned long long)sink->session_id, why);
	offender(r, sink, -GARUDA_E_BAD_FD);
}

/* How often a write that EINTR'd on an eventfd that is still O_NONBLOCK is tried
 * again before the session is taken for an offender. */
#define EINTR_TRIES 4

/* One write of add to the client's eventfd. It does not block for long: an eventfd
 * without O_NONBLOCK is refused before the write, and one that loses O_NONBLOCK
 * between that check and the write (another thread of the client flips it) blocks
 * until the guard's next tick, at most GUARD_NS; the rest of the pass runs under the
 * short guard, and the session's other eventfds are skipped.
 *
 * EINTR alone does not mean "blocked". A non-blocking eventfd write never sleeps, but
 * the guard's signal can still end it with EINTR before it started: valgrind does
 * exactly that when the signal lands at the syscall instruction (measured: 16 EINTRs
 * in 200,000 non-blocking writes under a 50 us timer, the counter short by 16; never
 * natively). Taking that for a block lost a good client's completion in the chaos
 * soak. So after EINTR the flags decide: still O_NONBLOCK, the write did not happen
 * and is made again (EINTR_TRIES in all; only a client flipping the flag back and forth
 * gets that far); blocking, it was the client's doing. Returns what happened, for the
 * sink's counters. */
static enum delivery deliver_eventfd(struct readiness *r, struct binding *b, struct sink *sink, uint64_t add)
{
	if (atomic_load_explicit(&b->broken, memory_order_relaxed) ||
	    atomic_load_explicit(&sink->eventfd_broken, memory_order_relaxed))
		return DELIVERY_DROPPED;
	guard_cover(r);
	for (unsigned tries = 0;; tries++) {
		int fl = fcntl(b->fd, F_GETFL);
		if (fl < 0 || !(fl & O_NONBLOCK)) {
			eventfd_offender(r, b, sink, tries ? "eventfd write blocked" : "bound eventfd lost O_NONBLOCK");
			r->blocked |= tries > 0; /* the rest of this loop under the short guard */
			return DELIVERY_DROPPED;
		}
		if (tries == EINTR_TRIES) {
			eventfd_offender(r, b, sink, "eventfd write interrupted again and again");
			r->blocked = true;
			return DELIVERY_DROPPED;
		}
		ssize_t w = write(b->fd, &add, sizeof(add));
		if (!(w < 0 && errno == EINTR))
			/* EAGAIN: the counter is saturated, so the eventfd is readable */
			return tries ? DELIVERY_RETRIED : DELIVERY_WRITTEN;
		/* interrupted (it may have blocked a guard period): the retries, and the
		 * rest of the pass, under the short guard */
		r->blocked = true;
		guard_cover(r);
	}
}

void readiness_eventfd(struct readiness *r, struct fired *f, unsigned n)
{
	switch (deliver_eventfd(r, f[0].a.bind, f[0].a.sink, n)) {
	case DELIVERY_RETRIED:
		sink_count(f[0].a.sink, SN_write_retries, 1);
		break;
	case DELIVERY_DROPPED:
		sink_count(f[0].a.sink, SN_undelivered, n);
		break;
	default:
		break;
	}
}

void readiness_doorbell(struct readiness *r, struct fired *f, unsigned n)
{
	(void)r;
	uint32_t *bell = &f[0].a.seg->map->hdr.doorbell;
	__atomic_fetch_add(bell, n, __ATOMIC_RELEASE);
	futex_wake(bell, INT_MAX, true); /* shared memory: every waiter, any process */
}

/* Encode the READY (n == 1, or the client did not ask for batches: one record each)
 * or READY_BATCH (up to GARUDA_BATCH_MAX records) for f[0..n) into buf; returns its
 * length. */
static size_t encode_ready(const struct fired *f, unsigned n, uint8_t *buf, size_t cap)
{
	struct garuda_msg m;
	struct garuda_ready *rec;
	if (n == 1) {
		garuda_msg_init(&m, GARUDA_MSG_READY, 0);
		rec = &m.ready;
	} else {
		garuda_msg_init(&m, GARUDA_MSG_READY_BATCH, 0);
		m.ready_batch.count = n;
		rec = m.ready_batch.ready;
	}
	for (unsigned i = 0; i < n; i++)
		rec[i] = (struct garuda_ready){ .token = f[i].a.token, .value = f[i].value,
						.slot = { f[i].a.seg->id, f[i].a.index } };
	return (size_t)garuda_msg_encode(&m, buf, cap);
}

/* READY messages of one sink: f[0..n), as few datagrams as the client accepts,
 * sendmmsg in batches; on EAGAIN the rest coalesce into the sink's overflow flag. */
void readiness_messages(struct readiness *r, struct fired *f, unsigned n)
{
	struct sink *sink = f[0].a.sink;
	unsigned per = sink->features & GARUDA_FEATURE_READY_BATCH ? GARUDA_BATCH_MAX : 1;
	static _Thread_local uint8_t bufs[SEND_BATCH][GARUDA_MSG_MAX];
	struct mmsghdr mm[SEND_BATCH];
	struct iovec iov[SEND_BATCH];

	for (unsigned done = 0; done < n;) {
		unsigned k = 0, at = done;
		while (k < SEND_BATCH && at < n) {
			unsigned take = n - at < per ? n - at : per;
			size_t len = encode_ready(f + at, take, bufs[k], sizeof(bufs[k]));
			iov[k] = (struct iovec){ .iov_base = bufs[k], .iov_len = len };
			mm[k] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[k], .msg_iovlen = 1 } };
			at += take;
			k++;
		}
		int sent = sendmmsg(sink->fd, mm, k, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sent < 0 && errno == EINTR)
			continue;
		if (sent < 0) {
			if (errno == EAGAIN || errno == ENOBUFS) {
				if (!atomic_exchange(&sink->overflow, true))
					notice_push(r->notices, &(struct notice){ .kind = NOTICE_OVERFLOW,
										  .session_id = sink->session_id });
			}
			return; /* EPIPE etc.: the session is ending */
		}
		for (int i = 0; i < sent; i++) /* records carried by the datagrams that went */
			done += n - done < per ? n - done : per;
	}
}

/* Ordered by the form's rank (form.h), then by form and group key, so that one write
 * serves each run. */
static int cmp_fired(const void *pa, const void *pb)
{
	const struct armed *a = &((const struct fired *)pa)->a, *b = &((const struct fired *)pb)->a;
	const struct form_ops *fa = form_get(a->form), *fb = form_get(b->form);
	if (fa->rank != fb->rank)
		return fa->rank < fb->rank ? -1 : 1;
	if (a->form != b->form)
		return a->form < b->form ? -1 : 1;
	uintptr_t x = fa->group_key(a), y = fb->group_key(b);
	return x < y ? -1 : x > y;
}

void readiness_deliver(struct readiness *r, struct fired *f, unsigned n)
{
	if (n > 1)
		qsort(f, n, sizeof(*f), cmp_fired);
	r->blocked = false;
	for (unsigned i = 0, j; i < n; i = j) {
		const struct form_ops *fo = form_get(f[i].a.form);
		uintptr_t key = fo->group_key(&f[i].a);
		for (j = i + 1; j < n && form_get(f[j].a.form) == fo && fo->group_key(&f[j].a) == key; j++)
			;
		fo->deliver(r, f + i, j - i);
	}
	if (r->blocked && r->guard_period != GUARD_NS) /* back to the normal period */
		guard_arm(r, GUARD_NS);
}

void readiness_overflow_msg(struct garuda_msg *m)
{
	garuda_msg_init(m, GARUDA_MSG_READY, 0);
	m->ready.flags = GARUDA_READY_OVERFLOW;
}

/* ---------------------------------------------------------------- the form table */

/* form.h's table, here beside the delivery calls it names (form.h is its face: types
 * that sinks and scanners count by, and the lookups) */
static uintptr_t key_binding(const struct armed *a)
{
	return (uintptr_t)a->bind;
}

static uintptr_t key_segment(const struct armed *a)
{
	return (uintptr_t)a->seg;
}

static uintptr_t key_sink(const struct armed *a)
{
	return (uintptr_t)a->sink;
}

const struct form_ops form_table[GARUDA_FORM_COUNT] = {
	/* +1 on the slot's eventfd, one write per binding (the guard covers it) */
	[GARUDA_FORM_EVENTFD] = { .name = CTL_KEY_EVENTFD, .rank = 2, .needs_binding = true,
				  .group_key = key_binding, .deliver = readiness_eventfd },
	/* READY / READY_BATCH on the session's socket, one sendmmsg run per sink */
	[GARUDA_FORM_MESSAGE] = { .name = CTL_KEY_MESSAGE, .rank = 1,
				  .group_key = key_sink, .deliver = readiness_messages },
	/* bump the segment's doorbell and FUTEX_WAKE it, once per segment */
	[GARUDA_FORM_DOORBELL] = { .name = CTL_KEY_DOORBELL, .rank = 0,
				   .group_key = key_segment, .deliver = readiness_doorbell },
};

const char *form_name(unsigned form)
{
	return form < GARUDA_FORM_COUNT ? form_table[form].name : NULL;
}
