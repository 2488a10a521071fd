/* reactor.c — libgaruda's in-process reactor: what delivers readiness while garudad
 * cannot be reached and a client's fallback chain allows it (GARUDA_FALLBACK=reactor,
 * resolved once at connect; docs/client.md "Fallback"). One per process, shared by
 * every fallback client of the process.
 *
 * Promises:
 *  - While a fallback client has no working session, every stream of it whose word
 *    moved gets the readiness garudad would have delivered, in its own form
 *    (stream_nudge_locked(): eventfd +1, doorbell bump + futex wake, message form
 *    ready_count/cond and the callback queue), so application code does not change.
 *  - Serves every stream that garudad does not: all of a client's while it has no
 *    session, and in a session those garudad did not accept (a local segment whose
 *    SEGMENT_ATTACH was refused: its streams stay unpresented, and their readiness
 *    keeps coming from here instead of stopping).
 *  - One thread per process ("garuda-reactor", all signals blocked) for all fallback
 *    clients together: created by the first reactor_acquire() (a fallback client's
 *    connect), reference-counted by the clients registered with it, and stopped and
 *    joined by the reactor_release() that drops the last reference (that client's
 *    garuda_disconnect(), or its failed connect). A later fallback client starts a new
 *    one.
 *  - Parked (FUTEX_WAIT on reactor.kick without timeout, no CPU) while no stream of
 *    any registered client has an outstanding sequence it serves; reactor_kick()
 *    (a signal on such a stream, a lost session, a refused segment, the last release)
 *    unparks it. A kick between its look and its wait is not lost: the wait is on the
 *    kick count it read before looking.
 *  - With outstanding sequences it waits as garudad's scanner does, by the same
 *    policy (proto/policy.h, reactor_tuning): it sleeps until the earliest deadline
 *    the streams' estimators predict (proto/estimator.h, the seed's parameters:
 *    margin 150 us, min_sleep 20 us, max_sleep 50 ms, window 8; the point is the
 *    stream), spins in the window from there, then polls on the short ladder; what
 *    a find records is garuda_policy_find()'s. Stream order: the clock of a stream's
 *    oldest outstanding sequence starts at its signal, or at the landing of the
 *    sequence before it (rarm_ns), so a stream with several sequences queued learns
 *    one kernel, not several.
 *  - It reads a client's streams only under that client's c->lock (garuda_stream_free()
 *    takes a stream out of the table under it) and never sends.
 *  - fork(): the child has no reactor thread (threads do not survive fork) and starts
 *    with an empty registry (pthread_atfork child handler): clients inherited from
 *    the parent must not be used there (garuda.h), and releasing one is a no-op; a
 *    fallback client connected in the child starts the child's own reactor.
 *
 * Threads and ownership: `reactor` (below) is the process's. reactor.life serializes
 * acquire/release (and so thread start and join) and is never taken by the thread;
 * reactor.lock guards the client list, the count and `stop`, and is held by the
 * thread while it looks at the clients. Lock order: reactor.life, then reactor.lock,
 * then a client's c->lock. Code holding a c->lock never takes reactor.lock: it kicks
 * (an atomic add and a futex wake). A client's reactor_next and reactor_joined are
 * reactor.lock's; a stream's rest and rarm_ns are its client's c->lock's.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "futex.h"
#include "policy.h"

/* The reactor's wait is the policy's (proto/policy.h) with this tuning: a spin window
 * from a stream's deadline of twice the margin plus twice its sleep, then the short
 * ladder up to 1 ms. */
static const struct garuda_policy_tuning reactor_tuning = {
	.spin_ns = 300000ull, .max_step_ns = 1000000ull,
};
#define REACTOR_RELAX_PASSES 64       /* cpu_relax()es between two looks while spinning */

static const struct garuda_plan_predict reactor_pred = {
	.margin_us = 150, .min_sleep_us = 20, .max_sleep_us = 50000, .window = 8,
};

static struct {
	pthread_mutex_t life;            /* acquire/release, thread start and join */
	pthread_mutex_t lock;            /* clients, refs, stop (the thread holds it to look) */
	struct garuda_client *clients;   /* registered fallback clients (c->reactor_next) */
	unsigned refs;                   /* = the length of clients */
	bool stop;                       /* the last reference went: the thread ends */
	bool running;                    /* a thread exists (under life) */
	pthread_t thread;                /* under life */
	_Atomic uint32_t kick;           /* the futex word the thread parks on */
	struct garuda_policy_wait *waits;  /* the thread's: this look's outstanding waits */
	size_t nwaits, cap;
} reactor = {
	.life = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_once_t reactor_atfork_once = PTHREAD_ONCE_INIT;

static void reactor_kick(void)
{
	atomic_fetch_add_explicit(&reactor.kick, 1, memory_order_release);
	futex_wake((void *)&reactor.kick, 1, false);
}

/* Wait until reactor.kick differs from seen, or until `when` (CLOCK_MONOTONIC ns;
 * UINT64_MAX: no timeout). */
static void reactor_park(uint32_t seen, uint64_t when)
{
	futex_wait_until((void *)&reactor.kick, seen, when, false); /* garuda_now_ns()'s clock */
}

void reactor_stream_init(struct garuda_stream *s)
{
	int r = garuda_estimator_init(&s->rx.rest, &reactor_pred);
	(void)r; /* constant parameters inside the plan's bounds */
}

void reactor_signalled_locked(struct garuda_stream *s, uint64_t prev)
{
	struct garuda_client *c = s->client;
	if (!c->fallback)
		return;
	/* the wait for `prev + 1` starts now when nothing older is outstanding */
	if (!s->rx.rarm_ns && garuda_reached(word_load(s->word), prev))
		s->rx.rarm_ns = garuda_now_ns();
	reactor_kick();
}

void reactor_session_lost_locked(struct garuda_client *c)
{
	if (c->fallback)
		reactor_kick(); /* the reactor takes over */
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
			reactor_kick(); /* its streams stay here */
			break;
		}
	}
}

/* The wait of s's oldest outstanding sequence, for the policy: its clock is rarm_ns
 * (stream order: the signal, or the landing of the sequence before it), when the
 * reactor also began to look at it. */
static struct garuda_policy_wait stream_wait(const struct garuda_stream *s, uint64_t target)
{
	struct garuda_policy_wait w;
	garuda_policy_wait_init(&w, (uintptr_t)s->word, target, s->rx.rarm_ns, s->rx.rarm_ns,
				garuda_estimator_sleep_ns(&s->rx.rest), garuda_estimator_exact_sleep_ns(&s->rx.rest));
	return w;
}

/* Keep w for this look's garuda_policy_next() (reactor.lock held). */
static void keep_wait(const struct garuda_policy_wait *w)
{
	if (reactor.nwaits == reactor.cap) {
		size_t cap = reactor.cap ? 2 * reactor.cap : 16;
		struct garuda_policy_wait *nw = realloc(reactor.waits, cap * sizeof(*nw));
		if (nw)
			reactor.waits = nw;
		if (!nw)
			return; /* out of memory: the look goes by the waits it has */
		reactor.cap = cap;
	}
	reactor.waits[reactor.nwaits++] = *w;
}

/* One look at every stream of c (c->lock held): nudge those whose words moved, record
 * what the find tells each stream's estimator (garuda_policy_find: prev_look, when the
 * previous look began; slept, the reactor waited since), keep each outstanding wait.
 * Returns whether a word moved. */
static bool scan_locked(struct garuda_client *c, uint64_t now, uint64_t prev_look, bool slept)
{
	bool moved = false;
	if (c->state == CONN_CLOSING)
		return false; /* its garuda_disconnect() is releasing it */
	bool up = c->state == CONN_UP;
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (!s || !stream_form(s)->wire || s->ses.dying)
			continue;
		if (up && s->ses.gen == c->gen) {
			s->rx.rarm_ns = 0; /* garudad delivers it: the reactor's arm is dropped */
			continue;
		}
		uint64_t v = word_load(s->word);
		uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_acquire);
		if (v != s->ses.polled) {
			moved = true;
			stream_nudge_locked(s);
			if (s->rx.rarm_ns && now > s->rx.rarm_ns) {
				struct garuda_policy_wait w = stream_wait(s, s->ses.polled + 1);
				struct garuda_find f = garuda_policy_find(&w, &reactor_tuning, now, prev_look, slept);
				if (f.kind == GARUDA_FIND_EXACT)
					garuda_estimator_record_exact_ns(&s->rx.rest, f.ns);
				else if (f.kind == GARUDA_FIND_CENSORED)
					garuda_estimator_record_censored_ns(&s->rx.rest, f.ns);
			}
			s->ses.polled = v;
			/* stream order: the next outstanding sequence's clock starts here */
			s->rx.rarm_ns = garuda_reached(v, sig) ? 0 : now;
		}
		if (garuda_reached(v, sig))
			continue;
		if (!s->rx.rarm_ns)
			s->rx.rarm_ns = now; /* signalled while a session was up that died since */
		struct garuda_policy_wait w = stream_wait(s, v + 1);
		keep_wait(&w);
	}
	return moved;
}

/* One look at every registered client (reactor.lock held); this look's waits are
 * left in reactor.waits. */
static bool scan_all(uint64_t now, uint64_t prev_look, bool slept)
{
	bool moved = false;
	reactor.nwaits = 0;
	for (struct garuda_client *c = reactor.clients; c; c = c->reactor_next) {
		pthread_mutex_lock(&c->lock);
		moved |= scan_locked(c, now, prev_look, slept);
		pthread_mutex_unlock(&c->lock);
	}
	return moved;
}

/* Drop reactor.lock for a wait (on the kick count read before the look) or a spin. */
static void reactor_wait(uint32_t seen, uint64_t when)
{
	pthread_mutex_unlock(&reactor.lock);
	reactor_park(seen, when);
	pthread_mutex_lock(&reactor.lock);
}

static void *reactor_main(void *arg)
{
	(void)arg;
	uint64_t prev_look = garuda_now_ns(), ladder = 0;
	bool slept = true;
	pthread_mutex_lock(&reactor.lock);
	while (!reactor.stop) {
		uint32_t seen = atomic_load_explicit(&reactor.kick, memory_order_acquire);
		uint64_t now = garuda_now_ns();
		bool moved = scan_all(now, prev_look, slept);
		prev_look = now;
		slept = false;
		if (!reactor.nwaits) {
			ladder = 0;
			reactor_wait(seen, UINT64_MAX); /* parked: nothing outstanding */
			slept = true;
			continue;
		}
		if (moved) {
			ladder = 0;
			continue; /* look again at once, as the scanner does after a find */
		}
		uint64_t until = garuda_policy_next(reactor.waits, sizeof(*reactor.waits),
						    (unsigned)reactor.nwaits, &reactor_tuning, now, &ladder);
		if (!until) {
			pthread_mutex_unlock(&reactor.lock);
			for (int k = 0; k < REACTOR_RELAX_PASSES; k++)
				cpu_relax();
			spin_give_way(); /* the application's threads share its CPUs */
			pthread_mutex_lock(&reactor.lock);
			continue;
		}
		reactor_wait(seen, until); /* the policy's time, or a kick */
		slept = true;
	}
	free(reactor.waits);
	reactor.waits = NULL;
	reactor.nwaits = reactor.cap = 0;
	pthread_mutex_unlock(&reactor.lock);
	return NULL;
}

/* fork(): hold both locks across it, so that the child's copies are consistent; the
 * child (one thread: the forking one, which holds them) forgets the parent's
 * registry and thread. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&reactor.life);
	pthread_mutex_lock(&reactor.lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&reactor.lock);
	pthread_mutex_unlock(&reactor.life);
}

static void atfork_child(void)
{
	for (struct garuda_client *c = reactor.clients; c; c = c->reactor_next)
		c->reactor_joined = false; /* its release is a no-op here */
	reactor.clients = NULL;
	reactor.refs = 0;
	reactor.stop = false;
	reactor.running = false;
	atomic_store_explicit(&reactor.kick, 0, memory_order_relaxed);
	pthread_mutex_unlock(&reactor.lock);
	pthread_mutex_unlock(&reactor.life);
}

static void atfork_register(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int reactor_acquire(struct garuda_client *c)
{
	pthread_once(&reactor_atfork_once, atfork_register);
	pthread_mutex_lock(&reactor.life);
	pthread_mutex_lock(&reactor.lock);
	c->reactor_next = reactor.clients;
	reactor.clients = c;
	reactor.refs++;
	c->reactor_joined = true;
	pthread_mutex_unlock(&reactor.lock);
	int r = 0;
	if (!reactor.running) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = -pthread_create(&reactor.thread, NULL, reactor_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (r == 0) {
			reactor.running = true;
			pthread_setname_np(reactor.thread, "garuda-reactor");
		} else {
			pthread_mutex_lock(&reactor.lock);
			reactor.clients = c->reactor_next;
			reactor.refs--;
			c->reactor_joined = false;
			pthread_mutex_unlock(&reactor.lock);
		}
	}
	pthread_mutex_unlock(&reactor.life);
	return r;
}

void reactor_release(struct garuda_client *c)
{
	pthread_mutex_lock(&reactor.life);
	pthread_mutex_lock(&reactor.lock);
	bool last = false;
	if (c->reactor_joined) {
		/* the thread is not looking at c (it holds reactor.lock to look), and
		 * never will again */
		struct garuda_client **pp = &reactor.clients;
		while (*pp != c)
			pp = &(*pp)->reactor_next;
		*pp = c->reactor_next;
		c->reactor_joined = false;
		last = --reactor.refs == 0;
		reactor.stop = last;
	}
	pthread_mutex_unlock(&reactor.lock);
	if (last && reactor.running) {
		reactor_kick();
		pthread_join(reactor.thread, NULL); /* where the last reference drops */
		reactor.running = false;
		pthread_mutex_lock(&reactor.lock);
		reactor.stop = false;
		pthread_mutex_unlock(&reactor.lock);
	}
	pthread_mutex_unlock(&reactor.life);
}
