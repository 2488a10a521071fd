/* internal.h — libgaruda's private structures and the functions its files share.
 *
 * Objects: a client (one connection to garudad, its background I/O thread, the
 * registry of its segments and streams), segments (the client's mapping of a memfd the
 * daemon created, registered with one backend device) and streams (one word each).
 *
 * Files, each using only those below it: client.c (connect, dispatch) and router.c
 * (where each message goes, what a new session presents) on top; segment.c;
 * stream.c; conn.c (transport: send, requests, the I/O thread, reconnect), which
 * reaches the router only through c->router.
 *
 * Threads: API threads (any number); the I/O thread (the only reader of the socket;
 * routes, never sends); one presenter per new session (sends the presentation while
 * the I/O thread routes its replies); callbacks run on garuda_dispatch()'s caller.
 *
 * Locks, always taken in this order (never the other way round):
 *   c->reg_lock  the registry: segment list and stream table membership. The
 *                presenter holds it for the whole re-presentation after a reconnect,
 *                until the session is up (conn.c presenter_main).
 *   s->lock      a stream's signal path: sequence, enqueue, and its arm going out in
 *                the same order as the stores.
 *   c->lock      connection state (socket, state, generation, cookies, pending
 *                replies), each segment's daemon-side id, each stream's presented
 *                generation, readiness bookkeeping, the fault watch (s->fx,
 *                c->fault_due) and the callback queue. Messages are sent under it.
 *   s->plan_lock a stream's plan and estimator: a leaf, taken last (also under
 *                c->lock); nothing else is taken while it is held.
 * No API thread waits for a reply while holding reg_lock or a stream lock (the
 * presenter does, holding reg_lock and one stream lock at a time, but the I/O thread
 * that routes the replies takes neither), and the I/O thread is the only reader of
 * the socket and never sends, so a waiter for a reply can never block the thread that
 * routes it.
 *
 * Generations: c->gen counts sessions. A segment or stream is "presented" in the
 * session whose generation it carries; arms are sent only for presented streams, and
 * the presenter presents everything again (ATTACH, BIND, ARM) after a reconnect.
 */
#pragma once

#include <garuda/garuda.h>

#include "errcode.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "cleanup.h"
#include "estimator.h"
#include "plan.h"
#include "segment_layout.h"
#include "wire.h"
#include "wordwait.h"

enum conn_state {
	CONN_DOWN = 0,       /* no socket; the I/O thread retries with backoff */
	CONN_PRESENTING = 1, /* new session, the I/O thread re-presents segments/streams */
	CONN_UP = 2,         /* working session */
	CONN_CLOSING = 3,    /* garuda_disconnect() in progress */
};

/* Cookies with this bit belong to a stream's NOREPLY ARM: bits 62..32 are the stream's
 * serial (the high half of its token), bits 31..0 the low half of the armed target. A
 * reply to one is an async error for that arm. The serial, not the table index, names
 * the stream: a table index is handed to a new stream as soon as the old one is freed,
 * a serial is never shared by two live streams (stream identity, issue 16). */
#define COOKIE_STREAM_BIT (1ull << 63)
#define STREAM_SERIAL_MASK 0x7fffffffu
static inline uint64_t arm_cookie(uint32_t serial, uint64_t target)
{
	return COOKIE_STREAM_BIT | ((uint64_t)(serial & STREAM_SERIAL_MASK) << 32) | (uint32_t)target;
}

/* one request waiting for its reply */
struct pending {
	uint64_t cookie;
	bool done;
	int err;              /* 0, or negative code from ERROR / disconnect */
	struct garuda_msg reply;
	int fd;               /* fd that came with the reply, or -1 */
	struct pending *next;
};

struct garuda_seg {
	struct garuda_client *client;
	const struct garuda_backend_ops *ops;
	struct garuda_backend *backend;
	struct garuda_backend_reg *reg;
	int memfd;
	struct garuda_segment *map;
	size_t bytes;
	uint32_t lines;
	int numa_node;

	/* under c->lock */
	uint32_t id;    /* daemon-side id in session `gen` */
	uint64_t gen;   /* session in which id is valid (0: none) */
	int attach_err; /* last re-present error (0 ok) */

	/* word allocator and stream count, under c->reg_lock */
	uint8_t *used; /* one byte per word: 0 free, 1 stream, 2 quarantined */
	uint64_t *tomb; /* quarantined word: the freed stream's last sequence (a store
			 * still to land while the word has not reached it; 0: none) */
	uint32_t nfree;
	uint32_t nstreams;

	struct garuda_seg *next; /* c->segs, under reg_lock (and c->lock) */
};

struct garuda_stream {
	/* set by garuda_stream_new() and never changed: any thread */
	struct garuda_client *client;
	struct garuda_seg *seg;
	void *native;
	enum garuda_readiness form;
	uint32_t index;  /* word index in seg */
	uint64_t *word;  /* the client's mapping of it */
	uint64_t token;  /* (serial << 32) | table index; never 0 */
	uint32_t tab;    /* index in c->streams */
	int efd;         /* eventfd form: bound eventfd; else -1 */

	/* the wait plan (set_plan/set_wait; must not race with waits) and the estimator of a
	 * +predict plan (the point is the stream): plan_lock's */
	pthread_mutex_t plan_lock;
	struct {
		struct garuda_plan plan;
		struct garuda_estimator est; /* plan.predict only */
		uint64_t spin_ns;            /* set_wait's pre-park spin; 0 for set_plan plans */
		uint64_t backstop_ns;        /* effective backstop (set_wait keeps it exact) */
		uint64_t sleeps, spin_outs;  /* +predict waits that slept / whose spin ran out */
	} pl;

	/* the last wait that ran out of time (the waiting thread's: one at a time): a wait
	 * for the same sequence begun within GARUDA_WAIT_RESUME_NS of it goes on from
	 * there (wait.c), so that waiting in slices (to run signal handlers between
	 * them: the Python package's main thread) costs what one long wait does */
	struct {
		uint64_t seq, begun, left, backstop_at;
	} resume;

	/* signals: lock's (signalled is read without it, acquire) */
	pthread_mutex_t lock;
	_Atomic uint64_t signalled; /* last sequence enqueued (written under lock) */
	uint64_t drained;   /* garuda_stream_drain()'s mark (stream's thread) */

	/* its state in the client's session: c->lock's */
	struct {
		uint64_t gen;        /* session in which the stream is bound/armed (0: none) */
		uint64_t armed_gen;  /* session in which it last sent an ARM (0: none) */
		int arm_err;         /* async error of an ARM/BIND, reported by the next signal */
		char arm_err_text[GARUDA_ERROR_TEXT_MAX + 1]; /* garudad's words for it ("") */
		uint64_t err_upto;   /* refusals of arms up to this target were reported already */
		bool dying;          /* garuda_stream_free() in progress: not queued or presented */
		uint64_t bind_unknown; /* session whose BIND of it timed out (0: none): garudad
					* may still take that BIND late, so its word is never
					* handed out again in that session (stream_new) */
		bool arm_lost;       /* arms may be missing (async error): waits poll, and the
				      * I/O thread nudges it when its word moves (lost_any) */
		uint64_t ready_count;/* READY messages/nudges seen (message form waiters) */
		pthread_cond_t ready_cond;
		uint64_t polled;     /* word value the I/O thread or reactor saw last while down */
		uint64_t readied;    /* the highest value a READY for it carried (fault_watch:
				      * a landed sequence no READY came for gets a nudge) */
	} ses;

	/* the in-process reactor (reactor.c), c->lock's: its estimator for this stream
	 * (the point is the stream), the signal of a sequence signalled with nothing older
	 * outstanding, until the reactor takes it (0: none), and the last sequence its
	 * watcher has a wait for (0: none) */
	struct {
		struct garuda_estimator rest;
		uint64_t rarm_ns;
		uint64_t added;
	} rx;

	/* The fault watch (router.c fault_watch): while a sequence is outstanding on a
	 * stream of a form garudad delivers, the I/O thread queries its native stream on
	 * the waits' backstop schedule, so that a fault ends in the stream's readiness
	 * form, not in silence. c->lock's. */
	struct {
		uint64_t since;  /* when the oldest outstanding sequence's clock started (a
				  * signal with nothing outstanding, or the word's last move
				  * seen); 0: not watched */
		uint64_t base;   /* the word's value at `since` */
		uint64_t due;    /* the next query (monotonic ns) */
		bool querying;   /* the I/O thread queries it, c->lock released: the stream
				  * is not freed meanwhile (garuda_stream_free waits) */
	} fx;
	/* the native stream faulted with a sequence outstanding (sticky; set by the fault
	 * watch, read anywhere: drain, query, dispatch) */
	_Atomic bool faulted;

	/* message-form callbacks (garuda_dispatch()), c->lock's */
	struct {
		garuda_stream_cb fn;
		void *user;
		uint64_t delivered; /* last seq handed to fn */
		bool fault_told;    /* fn was run once for `faulted` */
		bool queued;
		unsigned busy;      /* a dispatcher runs fn right now */
		bool free_pending;  /* garuda_stream_free() called from its own callback */
		struct garuda_stream *next;
	} cb;
};

struct garuda_client {
	char *path;

	pthread_mutex_t reg_lock;
	struct garuda_seg *segs;

	pthread_mutex_t lock;
	pthread_cond_t cond; /* pending replies, state changes, cb_busy */
	int sock;
	enum conn_state state;
	uint64_t gen;
	uint64_t session_id;
	struct garuda_welcome welcome;
	uint64_t next_cookie;
	struct pending *pending;
	/* SEGMENT replies nobody waited for any more (their SEGMENT_OPEN timed out): the
	 * segments garudad made late, in session orphan_gen, which the next request
	 * closes (conn.c close_orphans_locked; the I/O thread never sends) */
	uint32_t orphan_segs[8];
	unsigned norphan_segs;
	uint64_t orphan_gen;
	uint64_t timed_out_opens[8]; /* cookies of SEGMENT_OPENs that timed out (a ring) */
	unsigned next_timed_out;
	struct garuda_stream **streams; /* token table, under lock (+reg_lock to change) */
	uint32_t nstreams_cap;
	uint32_t next_serial;
	bool serial_wrapped; /* next_serial went round: check it against live streams */
	_Atomic uint64_t stray_errors; /* async errors naming no live stream's signalled arm */
	struct garuda_stream *cbq_head, *cbq_tail;
	int last_error;     /* last connection-level error (ERROR cookie 0, protocol) */
	/* some stream has arm_lost set in the current session: the I/O thread looks at
	 * their words every LOST_POLL step and nudges those that moved (conn.c, router.c
	 * while_lost), so that an arm garudad refused still ends in readiness */
	bool lost_any;
	/* the fault watch's timer (router.c fault_watch): the soonest s->fx.due of the
	 * watched streams, 0 when none is watched (the I/O thread then sleeps without a
	 * timeout). A signal that starts a watch sooner writes wake_efd. */
	uint64_t fault_due;
	_Atomic uint64_t reconnects;
	/* GARUDA_WORDWAIT, read at connect: how a spin step of a wait idles
	 * (util/wordwait.h): the process's hardware word wait ("auto", the default) or
	 * wordwait_off() ("off"). The counts: spin steps of spin_until(), and those that
	 * parked in the hardware wait (GARUDA_DEBUG prints them at disconnect). */
	const struct wordwait *ww;
	_Atomic uint64_t spin_steps, ww_steps;
	/* GARUDA_WAIT_PLAN, parsed at connect (has_plan false: the built-in default) */
	bool has_plan;
	struct garuda_plan default_plan;
	_Atomic int atomic_state; /* copy of state for lock-free readers */

	/* the fallback chain, resolved once at connect (GARUDA_FALLBACK): false (strict)
	 * refuses to run without garudad; true runs the in-process reactor */
	bool fallback;
	/* the coded warning (0: none) and its text, under lock */
	int warn_code;
	char warn[256];
	/* the process's in-process reactor (reactor.c): a fallback client is registered
	 * with it (holds a reference) from connect to disconnect; its link in the
	 * reactor's client list and whether it is on it, both under the reactor's lock */
	struct garuda_client *reactor_next;
	bool reactor_joined;

	/* dispatch */
	pthread_mutex_t dispatch_lock;
	pthread_t dispatcher;
	bool dispatching;
	int dispatch_efd; /* garuda_client_fd() */

	/* the router the I/O thread hands messages to (router.c) */
	const struct conn_router *router;

	/* presenter of the current session (under lock; started and joined by the I/O
	 * thread) */
	pthread_t presenter;
	bool presenter_running, presenter_done, present_failed;

	/* I/O thread */
	pthread_t io_thread;
	bool io_started;
	int wake_efd; /* wakes the I/O thread (stop) */

	/* the process that connected it (set at connect): only it ends a session with
	 * shutdown(2) (conn_end_socket), never a fork()'s child that holds a copy */
	pid_t owner;
};

/* ---- the router (router.c): what the transport hands messages and sessions to ---- */
struct conn_router {
	/* one decoded message (fd: the one it carried, or -1; the router owns it); I/O
	 * thread, no lock held. Never sends. */
	void (*route)(struct garuda_client *c, struct garuda_msg *m, int fd);
	/* present everything in session gen; presenter thread, c->reg_lock held (taken by
	 * the transport, which declares the session up before it lets go of it, so that
	 * nothing is registered between the presentation and CONN_UP), no other lock. 0,
	 * or -GARUDA_E_DISCONNECTED when the session died meanwhile. */
	int (*present)(struct garuda_client *c, uint64_t gen);
	/* the session is gone: wake every stream (they poll or, on a fallback client, the
	 * reactor takes over and the coded warning is set); c->lock held */
	void (*session_lost_locked)(struct garuda_client *c);
	/* a new session is presented: clear the fallback warning, wake every stream
	 * (readiness lost with the old session); c->lock held */
	void (*session_up_locked)(struct garuda_client *c);
	/* no session: wake streams whose words moved (true when one did; not on a fallback
	 * client: its reactor does that, better); I/O thread, no lock held */
	bool (*while_down)(struct garuda_client *c);
	/* in a session, while lost_any: nudge the streams with a refused arm whose words
	 * moved (true when one did); I/O thread, no lock held */
	bool (*while_lost)(struct garuda_client *c);
	/* c->fault_due has come: query the native streams of the watched streams that are
	 * due (the stream pinned by fx.querying, c->lock released for the query), mark and
	 * nudge those that faulted, and set c->fault_due again (0: none watched). Any
	 * session state, fallback clients too; I/O thread, no lock held. */
	void (*fault_watch)(struct garuda_client *c);
};
extern const struct conn_router client_router;

/* ---- the in-process reactor (reactor.c) ---- */

/* Register a fallback client with the process's reactor (at connect), starting its
 * thread when it is the first; 0 or -errno (pthread_create). No client lock held. */
int reactor_acquire(struct garuda_client *c);
/* Unregister it (after io_stop: state is CLOSING; no client lock held): the reactor
 * never looks at c again; the last reference stops and joins the thread. A no-op for
 * a client not registered (strict, or inherited across fork()). */
void reactor_release(struct garuda_client *c);
/* The session of a fallback client is gone: unpark the reactor. c->lock held. */
void reactor_session_lost_locked(struct garuda_client *c);
/* A sequence was signalled on s while no session exists: note its start for the
 * estimator and unpark the reactor. c->lock held. */
void reactor_signalled_locked(struct garuda_stream *s, uint64_t prev);
/* Set the fallback warning (why: the negative code the last connect attempt gave)
 * unless one is set; clear it (why == 0). c->lock held. */
void fallback_warn_locked(struct garuda_client *c, int why);
/* A session is up (presented): clear the warning, or, when garudad refused a local
 * segment (its streams stay with the reactor), set it with that refusal. c->lock. */
void fallback_session_up_locked(struct garuda_client *c);
/* Init s->rest (stream_alloc). */
void reactor_stream_init(struct garuda_stream *s);

/* Create, seal and map a segment in this process (no daemon): the layout of proto/
 * and the daemon's seals, so that a later SEGMENT_ATTACH is accepted. segment.c */
int seg_create_local(uint32_t lines, int numa_node, int *fd_out, struct garuda_segment **map_out,
		     size_t *bytes_out);

/* ---- transport (conn.c) ---- */

/* Complete the pending request with m's cookie (err: 0 or the ERROR's code; fd: what m
 * carried). True when it took fd; false when nobody waits (the caller closes fd).
 * c->lock held. */
bool conn_complete_locked(struct garuda_client *c, const struct garuda_msg *m, int err, int fd);

/* connect + HELLO/WELCOME on a fresh socket (blocking, bounded). Returns the socket
 * or a negative code; fills *w. */
int conn_handshake(const char *path, struct garuda_welcome *w);
/* The handshake in two halves, for the I/O thread (it must not block in it): connect
 * and send HELLO (the socket, *closed when the peer had closed already, or -errno);
 * then the answer, waiting at most timeout_ms: 0 with *w, -EAGAIN while none came,
 * or the error (the refusal's code, -GARUDA_E_DISCONNECTED, -GARUDA_E_PROTOCOL). */
int conn_hello(const char *path, bool *closed);
int conn_welcome(int sock, bool closed, int timeout_ms, struct garuda_welcome *w);
/* End the session on sock (a session socket of c) and close it: shutdown(2) first, so
 * that garudad sees the session end now even where a fork()'s child holds a copy of
 * the fd (close() alone ends it only with the last copy: the child's exit), then
 * close. In a process other than the one that connected c (a child that freed what it
 * inherited against the rules) only close: a shutdown there would end the parent's
 * session. */
void conn_end_socket(struct garuda_client *c, int sock);
/* The header flag of a message that presents again what a lost session held (router.c
 * present()): F_REPRESENT where garudad granted the feature, so that its re-attach log
 * counts those and not the new work sent meanwhile; else 0. Presenter thread (the
 * session's WELCOME was stored before it started). */
static inline uint16_t present_flag(const struct garuda_client *c)
{
	return c->welcome.features & GARUDA_FEATURE_REPRESENT ? GARUDA_F_REPRESENT : 0;
}

/* Send one message with fd (-1: none) on the current session; call with c->lock held.
 * Returns 0 or a negative code (-GARUDA_E_DISCONNECTED when not connected). */
int conn_send_locked(struct garuda_client *c, struct garuda_msg *m, int fd);
/* A SEGMENT reply came that nobody waits for: when it answers a SEGMENT_OPEN that
 * timed out, the next request closes that segment in garudad. I/O thread, c->lock
 * held. */
void conn_orphan_segment_locked(struct garuda_client *c, const struct garuda_msg *m);
/* Send an ARM (or ARM_BATCH) of a stream presented in session gen, in that session
 * only (also while the I/O thread is still presenting it); -GARUDA_E_DISCONNECTED
 * when gen is not the current session. c->lock held. */
int conn_send_arm_locked(struct garuda_client *c, struct garuda_msg *m, uint64_t gen);

/* A request with a reply: send m (with fd, or -1) and wait for its ACK/SEGMENT/ERROR,
 * which the I/O thread routes to us. On success *reply (may be NULL) gets the reply
 * and *reply_fd (may be NULL) its fd (else it is closed). From API threads and the
 * presenter (the only sender during CONN_PRESENTING); never from the I/O thread
 * (-EDEADLK). Returns 0 or a negative code. Call without locks. */
int conn_request(struct garuda_client *c, struct garuda_msg *m, int fd, struct garuda_msg *reply,
		 int *reply_fd);
/* As conn_request, sent only in session expect_gen (0: any); *gen_out (may be NULL)
 * gets the session the request went to. */
int conn_request_gen(struct garuda_client *c, struct garuda_msg *m, int fd, uint64_t expect_gen,
		     struct garuda_msg *reply, int *reply_fd, uint64_t *gen_out);
/* As conn_request_gen, for a request whose failure the calling API function does not
 * report (a SEGMENT_CLOSE or DISARM on the way out): a refusal's words do not become
 * garuda_last_error(), so a call that succeeds leaves it as it was. */
int conn_tell_gen(struct garuda_client *c, struct garuda_msg *m, uint64_t expect_gen);

/* Start/stop the I/O thread (and with it the presenter). */
int io_start(struct garuda_client *c);
void io_stop(struct garuda_client *c);

/* A readiness form's row (form.c's table, indexed by enum garuda_readiness). */
struct stream_form {
	/* the ARM's form (proto/wire.h); 0: garudad is not told (the stream is never
	 * presented nor armed, and the reactor leaves it alone) */
	uint8_t wire;
	bool callbacks; /* garuda_stream_set_callback() takes a callback */
	/* garuda_stream_new(): what the stream holds for its form (its eventfd, closed by
	 * stream_discard()); NULL: nothing */
	int (*open)(struct garuda_stream *s);
	/* BIND (on) or UNBIND the stream's slot in session gen, a round trip (0 or the
	 * error); NULL: the form binds nothing */
	int (*bind)(struct garuda_stream *s, uint32_t segid, uint64_t gen, bool on,
		    uint16_t flags);
	/* the wake generation a waiter samples before it reads the word (the doorbell's
	 * value), passed to block() as bell_seen; NULL: none (0) */
	uint32_t (*sample)(struct garuda_stream *s);
	/* block until `until` (monotonic ns; now is the clock) or a wake the waiter has not
	 * seen (ready_seen: s->ses.ready_count, sampled under c->lock; bell_seen: sample()) */
	void (*block)(struct garuda_stream *s, uint64_t now, uint64_t until, uint64_t ready_seen,
		      uint32_t bell_seen);
	/* tell the waiters that the word may have moved; c->lock held, never blocks */
	void (*nudge)(struct garuda_stream *s);
};
extern const struct stream_form stream_forms[]; /* indexed by enum garuda_readiness */
/* Whether form is one of the table's (a public form this libgaruda knows). */
bool stream_form_known(enum garuda_readiness form);

static inline const struct stream_form *stream_form(const struct garuda_stream *s)
{
	return &stream_forms[s->form];
}

/* s's wake sample (stream_form.sample), or 0. */
static inline uint32_t stream_sample(struct garuda_stream *s)
{
	const struct stream_form *f = stream_form(s);
	return f->sample ? f->sample(s) : 0;
}

/* Wake whoever waits for readiness of s (eventfd +1, doorbell wake, condvar, callback
 * queue): its form's nudge. c->lock held. */
void stream_nudge_locked(struct garuda_stream *s); /* form.c */

/* Present s in session gen (BIND, re-ARM outstanding sequences); presenter, during
 * CONN_PRESENTING, with reg_lock held and no other lock. Returns 0, or
 * -GARUDA_E_DISCONNECTED when the session died meanwhile (other errors are recorded
 * on the stream). */
int stream_present(struct garuda_stream *s, uint64_t gen);

/* Typed cleanup (util/cleanup.h): garuda_stream_freep() frees a published stream
 * (one garuda_stream_new() returned or would return); stream_discardp() frees one that
 * was never published (no word, not in the table). */
void stream_discard(struct garuda_stream *s);
DEFINE_CLEANUP(struct garuda_stream, stream_discard)
DEFINE_CLEANUP(struct garuda_stream, garuda_stream_free)

/* Async error (ERROR for a NOREPLY ARM) with this cookie (arm_cookie()). */
void stream_async_error_locked(struct garuda_client *c, uint64_t cookie, int code,
			       const char *text);
/* s's arms may be missing in this session (code: why, the first one is reported by
 * the next signal, with text, garudad's words or NULL): nudge it now (the waiter looks
 * and finds the word short), and have the I/O thread nudge it again when its word
 * moves, until nothing signalled is outstanding. c->lock held. */
void stream_arm_lost_locked(struct garuda_stream *s, int code, const char *text);
/* s was signalled (c->lock held, s->lock held): start its fault watch when nothing
 * older was outstanding, waking the I/O thread when its timer is later (stream.c). */
void stream_fault_watch_locked(struct garuda_stream *s);
/* The fault watch's interval for s after its oldest outstanding sequence has been
 * outstanding for age_ns: the waits' backstop schedule (garuda_policy_backstop_ns with
 * the stream's backstop and backoff_div), at least STREAM_FAULT_WATCH_MIN_NS. Takes
 * s->plan_lock. wait.c */
uint64_t stream_fault_interval_ns(struct garuda_stream *s, uint64_t age_ns);
/* The fault watch's shortest interval. Faults are rare and a wait notices its own on
 * the backstop; at the waits' 1 ms the I/O thread would wake about once a completion
 * of every busy stream (~15-20 us of CPU each on a 2-vCPU guest), at 100 ms a busy
 * client's I/O thread wakes 10 times a second and kernels shorter than that never
 * cost a query. A fault is told within max(100 ms, its age / backoff_div). */
#define STREAM_FAULT_WATCH_MIN_NS 100000000ull
/* READY for token. */
void stream_ready_locked(struct garuda_client *c, uint64_t token, uint64_t value);

struct garuda_stream *stream_lookup_locked(struct garuda_client *c, uint64_t token);

/* Present seg in the current session (SEGMENT_ATTACH); presenter. */
int seg_present(struct garuda_seg *seg, uint64_t gen);

/* Apply a parsed plan to s (plan.c; plan_lock not held; s not yet waited on or the caller's
 * discipline); spin_ns is the set_wait spin (0 for plans). */
void stream_apply_plan(struct garuda_stream *s, const struct garuda_plan *p, uint64_t spin_ns,
		       uint64_t backstop_ns);

/* garuda_plan_parse() keeping the message for garuda_plan_message() (this thread). */
int plan_parse_tls(const char *text, struct garuda_plan *out);

/* A new stream's plan: the client's default, else the set_wait defaults (plan.c). */
void stream_plan_init(struct garuda_stream *s);

/* Free everything on the client (garuda_disconnect). */
void seg_close_all(struct garuda_client *c);

/* small helpers */

/* ERROR code -> our return value: registry codes travel positive, errno negative */
static inline int error_to_ret(int32_t code)
{
	return code > 0 ? -code : code;
}

static inline uint64_t word_load(const uint64_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

/* the fault watch (router.c) found the native stream faulted and what the stream
 * signalled has still not landed: it never will (the word, read after the flag,
 * wins when it did). drain and query say -GARUDA_E_STREAM_FAULT. */
static inline bool stream_fault_stands(const struct garuda_stream *s)
{
	return atomic_load_explicit(&s->faulted, memory_order_acquire) &&
	       !garuda_reached(word_load(s->word),
			       atomic_load_explicit(&s->signalled, memory_order_acquire));
}

static inline bool is_io_thread(struct garuda_client *c)
{
	return c->io_started && pthread_equal(pthread_self(), c->io_thread);
}

/* Waits without a session poll the word on a growing schedule (wait.c, stream.c's
 * plans) */
#define POLL_STEP_MIN_NS 20000ull
#define POLL_STEP_MAX_NS 1000000ull
#define NS_PER_US 1000ull

/* Set garuda_last_error()'s text for the calling thread (lasterr.c). */
void client_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Add to it; clear it (lasterr.c). */
void client_append_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void client_clear_error(void);
/* A public call's failure: returns code, and leaves garuda_last_error() holding the
 * words this call wrote, or "" when it wrote none (never an older failure's). Every
 * failing return of a public function goes through it; a call that succeeds leaves
 * the text as it was (the connects clear it, as garuda.h says). */
int client_fail(int code);
/* r as a public call returns it: a failure (r < 0) through client_fail(). */
static inline int client_return(int r)
{
	return r < 0 ? client_fail(r) : r;
}
/* One line "libgaruda: ..." on stderr when $GARUDA_DEBUG is set (lasterr.c). */
void client_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
