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
 *  - With outstanding sequences it waits as garudad's scanner does, by driving the same
 *    watcher (proto/watch.h) the same way (scanner.c's scanner_main and scan_step):
 *    its tuning is garudad's default plan's (GARUDA_PLAN_GARUDAD_DEFAULT, through
 *    garuda_watch_tuning_of), each stream's estimator that plan's (the point is the
 *    stream), a wait per outstanding sequence (at most REACTOR_AHEAD ahead of its
 *    word; more as those land) queued in stream order by the watcher, the early wake
 *    the watcher's running mean; one owner per client, so the watcher serves clients'
 *    due words in turn; a step that delivered gives way (sched_yield) when a sleep comes
 *    next, as the scanner's does. It looks only at the words the watcher says are due; it walks
 *    the clients' streams only after a kick (a signal, a lost session, a refused
 *    segment), to take their new sequences.
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
 * reactor.lock's, and so is the watcher (the thread drives it; reactor_release()
 * takes a client's waits out of it); a stream's rx is its client's c->lock's. A
 * stream's rx.added names waits the watcher still has: where the thread takes a live
 * stream's waits out (take_client_locked(), step()) it clears rx.added and rx.rarm_ns
 * under that lock, so a later take (a lost session's kick) adds them again from the
 * word; forget_client() leaves them (the client is going away).
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "futex.h"
#include "watch.h"

#define REACTOR_RELAX_PASSES 64 /* cpu_relax()es in a spin step */
#define REACTOR_STEP_MAX 512u   /* words looked at per step, at most (scanner.c's) */
#define REACTOR_AHEAD 64u       /* waits per stream ahead of its word, at most */

/* What the reactor knows of a wait: whose stream it is (looked up again under the
 * client's lock before its word is read: the stream may be gone). */
struct reactor_pay {
	struct garuda_client *c;
	uint64_t token;
};

static struct {
	pthread_mutex_t life;            /* acquire/release, thread start and join */
	pthread_mutex_t lock;            /* clients, refs, stop, the watcher */
	struct garuda_client *clients;   /* registered fallback clients (c->reactor_next) */
	unsigned refs;                   /* = the length of clients */
	bool stop;                       /* the last reference went: the thread ends */
	bool running;                    /* a thread exists (under life) */
	pthread_t thread;                /* under life */
	_Atomic uint32_t kick;           /* the futex word the thread parks on */
	/* the thread's, while it runs (watching): the watcher, each wait's payload by
	 * its id, a step's due words and one word's fires [firescap] */
	bool watching;
	struct garuda_watch watch;
	struct reactor_pay *pay;
	uint32_t paycap;
	uint32_t due[REACTOR_STEP_MAX];
	struct garuda_watch_fire *fires;
	uint32_t firescap;
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

/* The reactor's plan: garudad's default (a constant the parser accepts). */
static struct garuda_plan reactor_plan(void)
{
	struct garuda_plan p;
	int r = garuda_plan_parse(GARUDA_PLAN_GARUDAD_DEFAULT, &p, NULL, 0);
	(void)r;
	return p;
}

void reactor_stream_init(struct garuda_stream *s)
{
	struct garuda_plan p = reactor_plan();
	int r = garuda_estimator_init(&s->rx.rest, &p.pred);
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

/* ---------------- the thread (reactor.lock held) ---------------- */

/* The stream with this token on c, if it is still in c's table (c->lock held). */
static struct garuda_stream *stream_of_locked(struct garuda_client *c, uint64_t token)
{
	uint32_t tab = (uint32_t)token;
	struct garuda_stream *s = tab < c->nstreams_cap ? c->streams[tab] : NULL;
	return s && s->token == token ? s : NULL;
}

/* The stream with this token on c, if the reactor serves it (c->lock held): alive, not
 * a form garudad delivers (not POLL), and not delivered by garudad in c's session. */
static struct garuda_stream *served_locked(struct garuda_client *c, uint64_t token)
{
	if (c->state == CONN_CLOSING)
		return NULL;
	struct garuda_stream *s = stream_of_locked(c, token);
	if (!s || !stream_form(s)->wire || s->ses.dying)
		return NULL;
	if (c->state == CONN_UP && s->ses.gen == c->gen)
		return NULL; /* garudad delivers it */
	return s;
}

/* *p (*cap elements of size) holds at least n: false when out of memory. */
static bool grow_to(void **p, uint32_t *cap, uint32_t n, size_t size)
{
	if (n <= *cap)
		return true;
	void *q = realloc(*p, (size_t)n * size);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

/* Room for n more waits: the watcher's and the payload's. false: out of memory (the
 * stream's sequences are taken at the next kick, or when its next one lands). */
static bool room(uint32_t n)
{
	return garuda_watch_reserve(&reactor.watch, n) == 0 &&
	       grow_to((void **)&reactor.pay, &reactor.paycap, garuda_watch_capacity(&reactor.watch),
		       sizeof(*reactor.pay));
}

/* Take s's outstanding sequences past what the watcher has (rx.added), up to
 * REACTOR_AHEAD past its word's value v, their clock from arm (c->lock held). */
static void take_stream(struct garuda_stream *s, uint64_t v, uint64_t arm, uint64_t now)
{
	struct garuda_watch *w = &reactor.watch;
	uint64_t sig = atomic_load_explicit(&s->signalled, memory_order_acquire);
	uint64_t from = s->rx.added && garuda_reached(s->rx.added, v) ? s->rx.added : v;
	uint64_t to = sig - v > REACTOR_AHEAD ? v + REACTOR_AHEAD : sig;
	if (!garuda_reached(to, from) || to == from)
		return;
	uint32_t owner = garuda_watch_owner(w, (uintptr_t)s->client);
	if (owner == GARUDA_WATCH_NONE || !room((uint32_t)(to - from)))
		return;
	uint64_t sl = garuda_estimator_horizon_ns(&s->rx.rest);
	uint64_t ex = garuda_estimator_exact_horizon_ns(&s->rx.rest);
	for (uint64_t target = from + 1; target != to + 1; target++) { /* queued in turn */
		struct garuda_policy_wait pw;
		garuda_policy_wait_init(&pw, (uintptr_t)s->word, target, arm, now, sl, ex);
		uint32_t id = garuda_watch_add(w, &pw, owner, now);
		reactor.pay[id] = (struct reactor_pay){ .c = s->client, .token = s->token };
	}
	s->rx.added = to;
}

/* The watcher's waits for s go (its caller takes them out before the thread next takes
 * a stream): what the reactor took of s is forgotten with them (c->lock held), so that
 * its next take starts from the word again instead of past waits that are gone. */
static void dropped_locked(struct garuda_stream *s)
{
	s->rx.added = 0;
	s->rx.rarm_ns = 0;
}

/* Take every wait on the word with this key out of the watcher. */
static void forget_word(uint64_t key, uint64_t now)
{
	uint32_t id;
	while ((id = garuda_watch_first_on(&reactor.watch, key)) != GARUDA_WATCH_NONE)
		garuda_watch_remove(&reactor.watch, id, now);
}

/* After a kick: every stream of c that the reactor serves gets its new sequences (and
 * a nudge when its word moved past the waits the reactor had for it); those garudad
 * delivers again are forgotten. c->lock held. */
static void take_client_locked(struct garuda_client *c, uint64_t now)
{
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (!s)
			continue;
		if (!served_locked(c, s->token)) {
			if (s->rx.added)
				forget_word((uintptr_t)s->word, now);
			dropped_locked(s);
			continue;
		}
		uint64_t v = word_load(s->word);
		if (v != s->ses.polled && !garuda_reached(s->rx.added, v)) {
			/* moved past every wait the watcher has (none, or a sequence that
			 * landed before it was taken): nobody else nudges for it */
			stream_nudge_locked(s);
			s->ses.polled = v;
		}
		take_stream(s, v, s->rx.rarm_ns ? s->rx.rarm_ns : now, now);
		s->rx.rarm_ns = 0;
	}
}

static void take_all(uint64_t now)
{
	for (struct garuda_client *c = reactor.clients; c; c = c->reactor_next) {
		pthread_mutex_lock(&c->lock);
		take_client_locked(c, now);
		pthread_mutex_unlock(&c->lock);
	}
}

/* Room for one word's fires. false: out of memory (the word is not looked at: the
 * caller pokes it, so that the next step gives it out again). */
static bool fires_room(uint32_t n)
{
	uint32_t cap = reactor.firescap ? reactor.firescap : REACTOR_AHEAD;
	while (cap < n)
		cap *= 2;
	return grow_to((void **)&reactor.fires, &reactor.firescap, cap, sizeof(*reactor.fires));
}

/* Look at due word wi, whose head's stream s the reactor serves (its client's lock
 * held): what each find tells the stream's estimator, a nudge when waits fired, its
 * next sequences, and the successor's sleeps as they are now (scan_step's order).
 * Returns the waits fired. */
static unsigned look_locked(uint32_t wi, struct garuda_stream *s, uint64_t now)
{
	struct garuda_watch *w = &reactor.watch;
	if (!fires_room(garuda_watch_word_waits(w, wi))) {
		/* due() took it off its timer: unreported, it would be looked at by no one
		 * (a wait left in silence); due at once instead */
		garuda_watch_poke(w, (uintptr_t)s->word, now);
		return 0;
	}
	uint64_t v = word_load(s->word);
	unsigned k = garuda_watch_found(w, wi, v, now, reactor.fires);
	if (!k)
		return 0;
	for (unsigned i = 0; i < k; i++)
		garuda_policy_record(&s->rx.rest, &reactor.fires[i].find);
	stream_nudge_locked(s);
	s->ses.polled = v;
	take_stream(s, v, now, now);
	uint32_t head = garuda_watch_first_on(w, (uintptr_t)s->word);
	if (head != GARUDA_WATCH_NONE)
		garuda_watch_resleep(w, head, garuda_estimator_horizon_ns(&s->rx.rest),
				     garuda_estimator_exact_horizon_ns(&s->rx.rest), now);
	return k;
}

/* One step: the words the watcher says are due, each looked at under its head's
 * client's lock. The waits of a stream that is gone (or garudad's again) leave
 * unlooked at, and such a stream still in its client's table forgets them (its rx, under
 * that lock: a lost session's take starts again from its word); what is left on the
 * word (a stream that took the word over) is looked at. Returns the waits fired. */
static unsigned step(uint64_t now)
{
	struct garuda_watch *w = &reactor.watch;
	unsigned n = garuda_watch_due(w, now, reactor.due, REACTOR_STEP_MAX), fired = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t wi = reactor.due[i];
		uint64_t key = garuda_watch_word_key(w, wi);
		for (;;) {
			struct reactor_pay p = reactor.pay[garuda_watch_word_head(w, wi)];
			pthread_mutex_lock(&p.c->lock);
			struct garuda_stream *s = served_locked(p.c, p.token);
			if (s)
				fired += look_locked(wi, s, now);
			else {
				struct garuda_stream *gone = stream_of_locked(p.c, p.token);
				if (gone)
					dropped_locked(gone); /* its waits leave below */
			}
			pthread_mutex_unlock(&p.c->lock);
			if (s)
				break;
			uint32_t id = garuda_watch_first_on(w, key);
			while (id != GARUDA_WATCH_NONE) {
				uint32_t next = garuda_watch_next_on(w, id);
				if (reactor.pay[id].c == p.c && reactor.pay[id].token == p.token)
					garuda_watch_remove(w, id, now);
				id = next;
			}
			if (garuda_watch_first_on(w, key) == GARUDA_WATCH_NONE)
				break; /* the word went with them */
		}
	}
	return fired;
}

/* The thread ends (or a fork()'s child forgets it): its watcher and payload go. */
static void unwatch(void)
{
	if (!reactor.watching)
		return;
	reactor.watching = false;
	garuda_watch_fini(&reactor.watch);
	free(reactor.pay);
	free(reactor.fires);
	reactor.pay = NULL;
	reactor.fires = NULL;
	reactor.paycap = reactor.firescap = 0;
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
	struct garuda_plan plan = reactor_plan();
	struct garuda_watch_tuning t;
	garuda_watch_tuning_of(&plan, &t);
	pthread_mutex_lock(&reactor.lock);
	garuda_watch_init(&reactor.watch, &t);
	reactor.watching = true;
	uint32_t taken = atomic_load_explicit(&reactor.kick, memory_order_acquire) - 1;
	while (!reactor.stop) {
		uint32_t seen = atomic_load_explicit(&reactor.kick, memory_order_acquire);
		uint64_t now = garuda_now_ns();
		if (seen != taken) { /* scanner.c's take_commands(), with its retune() */
			reactor.watch.t.pol.early_ns = garuda_watch_early_ns(&reactor.watch);
			take_all(now);
			taken = seen;
		}
		if (!garuda_watch_count(&reactor.watch)) {
			reactor_wait(seen, UINT64_MAX); /* parked: nothing outstanding */
			garuda_watch_woke(&reactor.watch, garuda_now_ns());
			continue;
		}
		if (step(now)) {
			/* the application thread its eventfd write woke may be runnable on
			 * this CPU now (watch.h) */
			if (garuda_watch_gives_way(&reactor.watch, garuda_now_ns())) {
				pthread_mutex_unlock(&reactor.lock);
				spin_give_way();
				pthread_mutex_lock(&reactor.lock);
			}
			continue; /* successors may be due at once */
		}
		now = garuda_now_ns();
		uint64_t until = garuda_watch_next(&reactor.watch, now);
		if (!until) {
			pthread_mutex_unlock(&reactor.lock);
			for (int k = 0; k < REACTOR_RELAX_PASSES; k++)
				cpu_relax();
			spin_give_way(); /* the application's threads share its CPUs */
			pthread_mutex_lock(&reactor.lock);
			continue;
		}
		reactor_wait(seen, until); /* the watcher's time, or a kick */
		garuda_watch_woke_from(&reactor.watch, until, garuda_now_ns());
	}
	unwatch();
	pthread_mutex_unlock(&reactor.lock);
	return NULL;
}

/* c leaves: its waits leave the watcher (reactor.lock held; the thread is not in a
 * step). Its streams' rx marks are not touched: c is going away. */
static void forget_client(struct garuda_client *c)
{
	if (!reactor.watching)
		return;
	uint64_t now = garuda_now_ns();
	struct garuda_watch *w = &reactor.watch;
	/* the words that have waits, not every id ever used; each next taken before a
	 * removal (one that empties a word unlinks that word) */
	for (uint32_t wi = garuda_watch_first_word(w), nwi; wi != GARUDA_WATCH_NONE; wi = nwi) {
		nwi = garuda_watch_next_word(w, wi);
		for (uint32_t id = garuda_watch_word_head(w, wi), nid; id != GARUDA_WATCH_NONE; id = nid) {
			nid = garuda_watch_next_on(w, id);
			if (reactor.pay[id].c == c)
				garuda_watch_remove(w, id, now);
		}
	}
	garuda_watch_owner_drop(w, (uintptr_t)c);
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
	unwatch(); /* the parent's thread's: none runs here */
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
		forget_client(c);
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
