/* conn.c — libgaruda's transport to garudad: handshake, sending, requests with
 * replies, and the client's I/O thread (the only reader of the socket), which hands
 * each decoded message to the router (router.c, through c->router) and reconnects
 * after the daemon went away.
 *
 * Promises:
 *  - A request's reply is matched by cookie; a request never waits forever (it gives
 *    up after REQUEST_TIMEOUT_NS with -GARUDA_E_TIMEOUT), nor at all for a session
 *    that died: losing the connection fails every pending request with
 *    -GARUDA_E_DISCONNECTED.
 *  - A message tied to a session (it names a daemon-side segment id) is sent only in
 *    the session it was built for (expect_gen), never in a later one.
 *  - Sending never reads the socket and never routes: a full socket releases c->lock
 *    while it waits for room, and the I/O thread keeps draining the socket meanwhile.
 *    The I/O thread itself never sends, so it never waits for a reply or for room.
 *  - After a reconnect a presenter thread (one per session) runs the router's
 *    present() (every segment, then every stream) while the I/O thread routes the
 *    replies; only then does the session count as up, and every stream is nudged so
 *    that waiters and event loops re-read their words.
 *  - While no session exists, the I/O thread retries with exponential backoff
 *    (RECONNECT_MIN_NS .. RECONNECT_MAX_NS) and, on a schedule of its own (every
 *    LOST_POLL_MIN_MS, doubling to LOST_POLL_MAX_MS while none moves), lets the router
 *    nudge streams whose words moved, so eventfd users keep seeing progress within
 *    16 ms, not at the reconnect backoff's 100 ms; a fallback client's reactor
 *    (reactor.c) is unparked and its coded warning set, and cleared again once a new
 *    session is presented.
 *  - In a session, while some stream has an arm garudad refused (lost_any), the I/O
 *    thread looks at those streams' words every 1 ms, doubling to 16 ms while none
 *    moves, and lets the router nudge those that moved: an arm refused for a quota
 *    still ends in readiness.
 *  - In every state (up, presenting, down; strict and fallback clients), while some
 *    stream of a delivered form has a sequence outstanding, the I/O thread wakes at
 *    c->fault_due and lets the router query the native streams that are due (router.c
 *    fault_watch): a faulted stream still ends in readiness. One timer for the client;
 *    none while nothing is outstanding (an idle client's I/O thread never wakes).
 *
 * Threads: the I/O thread owns the socket's reading end and the presenter's lifetime
 * (it starts and joins it); API threads and the presenter send under c->lock.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "fdio.h"

#define HANDSHAKE_TIMEOUT_MS 5000
#define RECONNECT_MIN_NS 1000000ull    /* 1 ms */
#define RECONNECT_MAX_NS 100000000ull  /* 100 ms */
/* how often the words of streams with a refused arm, or of every stream while garudad
 * is away, are looked at: every 1 ms, doubling up to 16 ms while none moves
 * (docs/client.md) */
#define LOST_POLL_MIN_MS 1
#define LOST_POLL_MAX_MS 16
#define SEND_WAIT_MS 10
/* a reply that has not come after this long is given up (-GARUDA_E_TIMEOUT): only a
 * hung daemon gets there, and no caller (garuda_stream_free() included) waits forever */
#define REQUEST_TIMEOUT_NS 20000000000ull

/* ------------------------------------------------------------------ handshake */

static int recv_one(int sock, struct garuda_msg *m, int *fd, int timeout_ms)
{
	uint8_t buf[GARUDA_MSG_MAX];
	int fds[FDIO_MAX_FDS];
	unsigned nfds = 0;
	struct pollfd p = { .fd = sock, .events = POLLIN };
	/* a signal cuts the wait short, not longer: a process with a periodic signal (a
	 * profiler's SIGPROF) must still see the timeout */
	uint64_t until = garuda_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int r;
	for (;;) {
		r = poll(&p, 1, timeout_ms);
		if (r >= 0 || errno != EINTR)
			break;
		uint64_t now = garuda_now_ns();
		timeout_ms = now >= until ? 0 : (int)((until - now + 999999) / 1000000ull);
	}
	if (r < 0)
		return -errno;
	if (r == 0)
		return -GARUDA_E_TIMEOUT;
	ssize_t n = fdio_recv(sock, buf, sizeof(buf), fds, 1, &nfds, MSG_DONTWAIT);
	if (n == 0 || n == -ECONNRESET)
		return -GARUDA_E_DISCONNECTED;
	if (n == -EMSGSIZE)
		return -GARUDA_E_PROTOCOL;
	if (n < 0)
		return (int)n;
	r = garuda_msg_decode(buf, (size_t)n, nfds, m);
	if (r < 0) {
		fdio_close_all(fds, nfds);
		return -GARUDA_E_PROTOCOL;
	}
	if (fd)
		*fd = nfds ? fds[0] : -1;
	else
		fdio_close_all(fds, nfds);
	return 0;
}

int conn_hello(const char *path, bool *closed)
{
	if (!path)
		return -EINVAL;
	_cleanup_close_ int sock = fdio_connect(path);
	if (sock == -ENAMETOOLONG)
		return -EINVAL;
	if (sock < 0)
		return sock;
	struct garuda_msg m;
	uint8_t buf[GARUDA_MSG_MAX];
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 1);
	/* route() takes READY_BATCH; present() marks its messages (F_REPRESENT) */
	m.hello.features = GARUDA_FEATURE_READY_BATCH | GARUDA_FEATURE_REPRESENT;
	ssize_t n = garuda_msg_encode(&m, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	n = fdio_send(sock, buf, (size_t)n, NULL, 0, 0);
	*closed = n == -EPIPE || n == -ECONNRESET;
	if (n < 0 && !*closed)
		return (int)n;
	return TAKE_FD(sock);
}

int conn_welcome(int sock, bool closed, int timeout_ms, struct garuda_welcome *w)
{
	struct garuda_msg m;
	/* a daemon that refuses the connection (a connections quota) sends its ERROR and
	 * closes before our HELLO: the ERROR is still queued for us */
	int r = recv_one(sock, &m, NULL, closed ? 0 : timeout_ms);
	/* a socket closed with our HELLO unread reports ECONNRESET once, before the
	 * datagrams queued ahead of the reset: the refusal's ERROR may come next */
	if (r == -GARUDA_E_DISCONNECTED) {
		closed = true;
		r = recv_one(sock, &m, NULL, 0);
	}
	if (r == -GARUDA_E_TIMEOUT && !closed)
		return -EAGAIN;
	if (r < 0)
		return closed ? -GARUDA_E_DISCONNECTED : r;
	if (m.type == GARUDA_MSG_ERROR) {
		/* its words for garuda_last_error() (explain_connect() quotes them) */
		client_set_error("%s", m.error.text);
		return error_to_ret(m.error.code);
	}
	if (m.type != GARUDA_MSG_WELCOME || m.cookie != 1)
		return -GARUDA_E_PROTOCOL;
	*w = m.welcome;
	return 0;
}

/* how often a connect that found garudad's backlog full is tried again */
#define BACKLOG_RETRY_NS 10000000ull /* 10 ms */

int conn_handshake(const char *path, struct garuda_welcome *w)
{
	bool closed = false;
	/* a full backlog (-EAGAIN) is a garudad that does not accept yet: tried again
	 * within the handshake's time, as a blocking connect would have waited in it */
	uint64_t until = garuda_now_ns() + (uint64_t)HANDSHAKE_TIMEOUT_MS * 1000000ull;
	int sock;
	while ((sock = conn_hello(path, &closed)) == -EAGAIN) {
		uint64_t now = garuda_now_ns();
		if (now >= until)
			return -GARUDA_E_TIMEOUT;
		uint64_t nap = until - now < BACKLOG_RETRY_NS ? until - now : BACKLOG_RETRY_NS;
		nanosleep(&(struct timespec){ .tv_nsec = (long)nap }, NULL);
	}
	if (sock < 0)
		return sock;
	uint64_t now = garuda_now_ns();
	int left_ms = now >= until ? 0 : (int)((until - now + 999999) / 1000000ull);
	int r = conn_welcome(sock, closed, left_ms, w);
	if (r < 0) {
		close(sock);
		return r == -EAGAIN ? -GARUDA_E_TIMEOUT : r;
	}
	return sock;
}

void conn_end_socket(struct garuda_client *c, int sock)
{
	if (sock < 0)
		return;
	if (getpid() == c->owner)
		(void)shutdown(sock, SHUT_RDWR);
	close(sock);
}

/* ------------------------------------------------------------------ sending */

static bool is_presenter_locked(struct garuda_client *c)
{
	return c->presenter_running && pthread_equal(pthread_self(), c->presenter);
}

/* While the presenter presents a new session, only it sends, except a message built
 * for that very session (arm_gen: an ARM of a stream already presented in it, which no
 * one would send again). */
static bool may_send_locked(struct garuda_client *c, uint64_t arm_gen)
{
	return c->state == CONN_UP ||
	       (c->state == CONN_PRESENTING && (is_presenter_locked(c) || (arm_gen && c->gen == arm_gen)));
}

/* c->lock held; may release and retake it while the socket is full. expect_gen 0:
 * any session; arm_gen: see may_send_locked. */
static int send_gen_locked(struct garuda_client *c, struct garuda_msg *m, int fd,
			   uint64_t expect_gen, uint64_t arm_gen)
{
	uint8_t buf[GARUDA_MSG_MAX];
	m->nfds = fd >= 0 ? 1 : 0;
	ssize_t len = garuda_msg_encode(m, buf, sizeof(buf));
	if (len < 0)
		return (int)len;
	for (;;) {
		if (!may_send_locked(c, arm_gen) || (expect_gen && c->gen != expect_gen))
			return -GARUDA_E_DISCONNECTED;
		ssize_t n = fdio_send(c->sock, buf, (size_t)len, &fd, fd >= 0 ? 1 : 0, MSG_DONTWAIT);
		if (n >= 0)
			return 0;
		if (n == -EPIPE || n == -ECONNRESET || n == -ENOTCONN)
			return -GARUDA_E_DISCONNECTED;
		if (n != -EAGAIN)
			return (int)n;
		/* full: wait for room without the lock (bounded, then the session is
		 * checked again); the I/O thread drains the socket meanwhile */
		int sock = c->sock;
		pthread_mutex_unlock(&c->lock);
		struct pollfd p = { .fd = sock, .events = POLLOUT };
		(void)poll(&p, 1, SEND_WAIT_MS);
		pthread_mutex_lock(&c->lock);
	}
}

int conn_send_locked(struct garuda_client *c, struct garuda_msg *m, int fd)
{
	return send_gen_locked(c, m, fd, 0, 0);
}

int conn_send_arm_locked(struct garuda_client *c, struct garuda_msg *m, uint64_t gen)
{
	return send_gen_locked(c, m, -1, gen, gen);
}

/* ------------------------------------------------------------------ orphans */

void conn_orphan_segment_locked(struct garuda_client *c, const struct garuda_msg *m)
{
	bool ours = false; /* an answer to a SEGMENT_OPEN that timed out (not an attach's) */
	for (unsigned i = 0; i < sizeof(c->timed_out_opens) / sizeof(c->timed_out_opens[0]); i++)
		if (m->cookie && c->timed_out_opens[i] == m->cookie) {
			c->timed_out_opens[i] = 0;
			ours = true;
		}
	if (!ours)
		return;
	uint32_t segment_id = m->segment.segment_id;
	if (c->orphan_gen != c->gen)
		c->norphan_segs = 0; /* an older session's: gone with it */
	c->orphan_gen = c->gen;
	if (c->norphan_segs < sizeof(c->orphan_segs) / sizeof(c->orphan_segs[0]))
		c->orphan_segs[c->norphan_segs++] = segment_id;
}

/* SEGMENT_CLOSE (NOREPLY) each segment whose SEGMENT_OPEN timed out and that garudad
 * made afterwards: else it stays charged to the session's quota until the session
 * ends. Before a request of an API thread, in its session gen. */
static void close_orphans_locked(struct garuda_client *c, uint64_t gen)
{
	if (c->orphan_gen != gen)
		c->norphan_segs = 0;
	while (c->norphan_segs) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, ++c->next_cookie & ~COOKIE_STREAM_BIT);
		if (!m.cookie)
			m.cookie = ++c->next_cookie;
		m.flags = GARUDA_F_NOREPLY; /* a refusal's ERROR finds no waiter: dropped */
		m.segment_close.segment_id = c->orphan_segs[c->norphan_segs - 1];
		if (send_gen_locked(c, &m, -1, gen, 0) < 0)
			return;
		c->norphan_segs--;
	}
}

/* ------------------------------------------------------------------ replies */

static void fail_pending_locked(struct garuda_client *c, int err)
{
	for (struct pending *p = c->pending; p; p = p->next) {
		if (!p->done) {
			p->done = true;
			p->err = err;
		}
	}
	pthread_cond_broadcast(&c->cond);
}

bool conn_complete_locked(struct garuda_client *c, const struct garuda_msg *m, int err, int fd)
{
	struct pending *p = c->pending;
	while (p && p->cookie != m->cookie)
		p = p->next;
	if (!p || p->done)
		return false; /* nobody waits (any more): drop */
	p->done = true;
	p->err = err;
	p->reply = *m;
	p->fd = fd;
	pthread_cond_broadcast(&c->cond);
	return true;
}

/* Read everything available on the socket (I/O thread only). 0 when drained, or a
 * negative code when the session is over (EOF, reset, protocol violation). */
static int pump(struct garuda_client *c)
{
	for (;;) {
		uint8_t buf[GARUDA_MSG_MAX];
		int fds[FDIO_MAX_FDS];
		unsigned nfds = 0;
		ssize_t n = fdio_recv(c->sock, buf, sizeof(buf), fds, 1, &nfds, MSG_DONTWAIT);
		if (n == -EAGAIN)
			return 0;
		if (n == 0 || n == -ECONNRESET || n == -EPIPE)
			return -GARUDA_E_DISCONNECTED;
		if (n < 0)
			return n == -EMSGSIZE ? -GARUDA_E_PROTOCOL : (int)n;
		struct garuda_msg m;
		int r = garuda_msg_decode(buf, (size_t)n, nfds, &m);
		if (r < 0) {
			fdio_close_all(fds, nfds);
			pthread_mutex_lock(&c->lock);
			c->last_error = r;
			pthread_mutex_unlock(&c->lock);
			return -GARUDA_E_PROTOCOL;
		}
		c->router->route(c, &m, nfds ? fds[0] : -1);
	}
}

/* ------------------------------------------------------------------ requests */

/* explain: a refusal's words become the calling thread's garuda_last_error() */
static int request(struct garuda_client *c, struct garuda_msg *m, int fd, uint64_t expect_gen,
		   struct garuda_msg *reply, int *reply_fd, uint64_t *gen_out, bool explain)
{
	struct pending p = { .fd = -1 };
	int r = 0;

	/* the I/O thread routes the reply: it must never wait for one */
	if (is_io_thread(c))
		return -EDEADLK;

	if (reply_fd)
		*reply_fd = -1;
	pthread_mutex_lock(&c->lock);
	if (!may_send_locked(c, 0) || (expect_gen && c->gen != expect_gen)) {
		pthread_mutex_unlock(&c->lock);
		return -GARUDA_E_DISCONNECTED;
	}
	uint64_t gen = c->gen;
	if (gen_out)
		*gen_out = gen;
	close_orphans_locked(c, gen);
	p.cookie = ++c->next_cookie & ~COOKIE_STREAM_BIT;
	if (!p.cookie)
		p.cookie = ++c->next_cookie;
	m->cookie = p.cookie;
	m->flags &= (uint16_t)~GARUDA_F_NOREPLY;
	p.next = c->pending;
	c->pending = &p;
	r = send_gen_locked(c, m, fd, gen, 0);
	if (r < 0)
		goto out;
	uint64_t end = garuda_now_ns() + REQUEST_TIMEOUT_NS;
	struct timespec ts = { .tv_sec = (time_t)(end / 1000000000ull),
			       .tv_nsec = (long)(end % 1000000000ull) };
	while (!p.done) {
		/* c->cond runs on CLOCK_MONOTONIC (garuda_connect_to) */
		if (pthread_cond_timedwait(&c->cond, &c->lock, &ts) == ETIMEDOUT && !p.done) {
			r = -GARUDA_E_TIMEOUT;
			if (m->type == GARUDA_MSG_SEGMENT_OPEN) /* its segment may come late */
				c->timed_out_opens[c->next_timed_out++ % 8] = p.cookie;
			goto out;
		}
	}
	r = p.err;
	/* the daemon's words for a refusal (a quota's key and limit, memlock's bytes and
	 * limit) become the calling thread's garuda_last_error() */
	if (explain && r < 0 && p.reply.type == GARUDA_MSG_ERROR && p.reply.error.text_len)
		client_set_error("garudad refused %s: %s", garuda_msg_type_name(m->type),
				 p.reply.error.text);
out:
	for (struct pending **pp = &c->pending; *pp; pp = &(*pp)->next) {
		if (*pp == &p) {
			*pp = p.next;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (r == 0 && reply)
		*reply = p.reply;
	if (r == 0 && reply_fd)
		*reply_fd = p.fd;
	else if (p.fd >= 0)
		close(p.fd);
	return r;
}

int conn_request_gen(struct garuda_client *c, struct garuda_msg *m, int fd, uint64_t expect_gen,
		     struct garuda_msg *reply, int *reply_fd, uint64_t *gen_out)
{
	return request(c, m, fd, expect_gen, reply, reply_fd, gen_out, true);
}

int conn_request(struct garuda_client *c, struct garuda_msg *m, int fd, struct garuda_msg *reply,
		 int *reply_fd)
{
	return request(c, m, fd, 0, reply, reply_fd, NULL, true);
}

int conn_tell_gen(struct garuda_client *c, struct garuda_msg *m, uint64_t expect_gen)
{
	return request(c, m, -1, expect_gen, NULL, NULL, NULL, false);
}

/* ------------------------------------------------------------------ I/O thread */

static void set_state_locked(struct garuda_client *c, enum conn_state st)
{
	c->state = st;
	atomic_store_explicit(&c->atomic_state, (int)st, memory_order_release);
	pthread_cond_broadcast(&c->cond);
}

/* Join the presenter of the last session, if any. I/O thread, no lock held. */
static void join_presenter(struct garuda_client *c)
{
	pthread_mutex_lock(&c->lock);
	bool running = c->presenter_running;
	pthread_t t = c->presenter;
	pthread_mutex_unlock(&c->lock);
	if (!running)
		return;
	pthread_join(t, NULL);
	pthread_mutex_lock(&c->lock);
	c->presenter_running = false;
	c->presenter_done = false;
	pthread_mutex_unlock(&c->lock);
}

/* The session is over: close it, fail what waits for it (the presenter too), wake
 * every waiter so that it falls back to polling its word. I/O thread. */
static void go_down(struct garuda_client *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->state != CONN_CLOSING) {
		set_state_locked(c, CONN_DOWN);
		/* in the same critical section as the state: whoever sees the client down
		 * sees why (docs/client.md); a strict client has no warning */
		fallback_warn_locked(c, -GARUDA_E_DISCONNECTED);
	}
	fail_pending_locked(c, -GARUDA_E_DISCONNECTED);
	pthread_mutex_unlock(&c->lock);
	/* the presenter sends nothing in a state other than PRESENTING, and its requests
	 * failed: it ends soon; the socket is closed only after it did */
	join_presenter(c);
	pthread_mutex_lock(&c->lock);
	/* shut down, not only closed: a fork()'s child's copy must not keep the session
	 * (its segments, arms, quota) alive in garudad while the client starts another */
	conn_end_socket(c, c->sock);
	c->sock = -1;
	c->session_id = 0;
	c->present_failed = false; /* handled: this is the going down it asked for */
	c->router->session_lost_locked(c);
	pthread_mutex_unlock(&c->lock);
}

/* The presenter: present everything in session gen, then declare it up (or ask the
 * I/O thread to end the session). Its own thread, so that the I/O thread keeps
 * routing the replies. */
static void *presenter_main(void *arg)
{
	struct garuda_client *c = arg;
	pthread_mutex_lock(&c->lock);
	uint64_t gen = c->gen;
	pthread_mutex_unlock(&c->lock);
	/* reg_lock from before the presentation until the session is declared up (or
	 * failed): a segment or stream registered (garuda_segment_open's link,
	 * garuda_stream_new's publish, both under reg_lock) either comes before the
	 * presentation, which presents it, or finds the session up and presents itself.
	 * Released between present() and CONN_UP, a stream published in that gap saw
	 * PRESENTING (not up: it does not bind) after the presentation had passed it, and
	 * was never presented in the session; and a garuda_stream_free() that got reg_lock
	 * there had its DISARM/UNBIND refused (only the presenter sends while presenting) */
	pthread_mutex_lock(&c->reg_lock);
	int r = c->router->present(c, gen);
	pthread_mutex_lock(&c->lock);
	if (r >= 0 && c->state == CONN_PRESENTING && c->gen == gen) {
		/* before the state: its release store publishes the count, so whoever sees
		 * the client up (garuda_client_connected's acquire load) sees it counted */
		atomic_fetch_add(&c->reconnects, 1);
		set_state_locked(c, CONN_UP);
		c->router->session_up_locked(c);
	} else if (c->state == CONN_PRESENTING && c->gen == gen) {
		c->present_failed = true;
	}
	c->presenter_done = true;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->reg_lock);
	uint64_t one = 1;
	ssize_t n = write(c->wake_efd, &one, sizeof(one)); /* the I/O thread joins us */
	(void)n;
	return NULL;
}

/* New session on sock: install it and start its presenter. I/O thread. */
static int start_session(struct garuda_client *c, int sock, const struct garuda_welcome *w)
{
	pthread_mutex_lock(&c->lock);
	if (c->state == CONN_CLOSING) {
		pthread_mutex_unlock(&c->lock);
		conn_end_socket(c, sock);
		return -GARUDA_E_CLOSED;
	}
	c->sock = sock;
	c->gen++;
	c->session_id = w->session_id;
	c->welcome = *w;
	c->present_failed = false;
	c->presenter_done = false;
	set_state_locked(c, CONN_PRESENTING);
	/* under c->lock: may_send_locked() sees presenter_running with its id */
	int r = -pthread_create(&c->presenter, NULL, presenter_main, c);
	c->presenter_running = r == 0;
	pthread_mutex_unlock(&c->lock);
	return r;
}

static void drain_efd(int fd)
{
	uint64_t v;
	while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
}

/* The poll timeout (ms, -1: none) to, shortened to the fault watch's timer due (0:
 * none; rounded up to whole ms: the query comes at most 1 ms late). */
static int fault_timeout_ms(uint64_t due, int to)
{
	if (!due)
		return to;
	uint64_t now = garuda_now_ns();
	uint64_t ms = due <= now ? 0 : (due - now + 999999) / 1000000ull;
	if (ms > INT_MAX)
		ms = INT_MAX;
	return to < 0 || (int)ms < to ? (int)ms : to;
}

/* The fault watch, when its timer has come (router.c fault_watch). */
static void fault_check(struct garuda_client *c, uint64_t due)
{
	if (due && garuda_now_ns() >= due)
		c->router->fault_watch(c);
}

static void *io_main(void *arg)
{
	struct garuda_client *c = arg;
	uint64_t backoff = RECONNECT_MIN_NS, next_try = 0;
	int lost_step = LOST_POLL_MIN_MS;
	/* a reconnect's handshake in flight: its socket (HELLO sent), whether the peer
	 * had closed already, and when it is given up */
	int hs_sock = -1;
	bool hs_closed = false;
	uint64_t hs_until = 0;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		enum conn_state st = c->state;
		int sock = c->sock;
		bool failed = c->present_failed, done = c->presenter_done;
		bool lost = c->lost_any;
		uint64_t fault_due = c->fault_due;
		pthread_mutex_unlock(&c->lock);
		if (st == CONN_CLOSING)
			break;
		if (failed) {
			go_down(c);
			continue;
		}
		if (done)
			join_presenter(c);

		if (st == CONN_UP || st == CONN_PRESENTING) {
			struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
					       { .fd = c->wake_efd, .events = POLLIN } };
			/* streams whose arms garudad refused: their words are looked at every
			 * lost_step ms (router.c while_lost) */
			if (!lost)
				lost_step = LOST_POLL_MIN_MS;
			/* and every watched stream's native stream on its backstop schedule
			 * (router.c fault_watch); nothing watched, no timeout */
			if (poll(p, 2, fault_timeout_ms(fault_due, lost ? lost_step : -1)) < 0)
				continue;
			fault_check(c, fault_due);
			if (p[1].revents)
				drain_efd(c->wake_efd);
			if (p[0].revents && pump(c) < 0) {
				go_down(c);
				continue;
			}
			if (lost && c->router->while_lost(c))
				lost_step = LOST_POLL_MIN_MS;
			else if (lost && lost_step < LOST_POLL_MAX_MS)
				lost_step *= 2;
			continue;
		}

		/* down: try a new session when the backoff says so. The HELLO goes out
		 * at once; its answer is waited for in this loop, beside the words and
		 * the fault watch (a listener that accepts and never answers, systemd's
		 * socket while garudad starts or a stopped garudad, held the thread
		 * HANDSHAKE_TIMEOUT_MS per try, every wait's readiness with it) */
		uint64_t now = garuda_now_ns();
		if (hs_sock < 0 && now >= next_try) {
			bool closed = false;
			hs_sock = conn_hello(c->path, &closed);
			hs_closed = closed;
			hs_until = now + (uint64_t)HANDSHAKE_TIMEOUT_MS * 1000000ull;
			if (hs_sock < 0) {
				next_try = now + backoff;
				backoff = backoff * 2 > RECONNECT_MAX_NS ? RECONNECT_MAX_NS : backoff * 2;
			}
		}
		if (hs_sock >= 0) {
			struct garuda_welcome w;
			int r = conn_welcome(hs_sock, hs_closed, 0, &w);
			if (r == 0) {
				int fd = hs_sock;
				hs_sock = -1;
				backoff = RECONNECT_MIN_NS, next_try = 0;
				lost_step = LOST_POLL_MIN_MS;
				if (start_session(c, fd, &w) < 0)
					go_down(c);
				continue;
			}
			now = garuda_now_ns();
			if (r != -EAGAIN || now >= hs_until) { /* refused, gone, or no answer in time */
				close(hs_sock);
				hs_sock = -1;
				next_try = now + backoff;
				backoff = backoff * 2 > RECONNECT_MAX_NS ? RECONNECT_MAX_NS : backoff * 2;
			}
		}
		/* meanwhile the words, on their own schedule (lost_step, as while_lost) */
		if (c->router->while_down(c))
			lost_step = LOST_POLL_MIN_MS;
		else if (lost_step < LOST_POLL_MAX_MS)
			lost_step *= 2;
		uint64_t until = hs_sock >= 0 ? hs_until : next_try;
		uint64_t to_try = until > now ? (until - now + 999999) / 1000000ull : 0;
		struct pollfd p[2] = { { .fd = c->wake_efd, .events = POLLIN },
				       { .fd = hs_sock, .events = POLLIN } };
		int to = (int)(to_try < (uint64_t)lost_step ? to_try : (uint64_t)lost_step);
		if (poll(p, hs_sock >= 0 ? 2 : 1, fault_timeout_ms(fault_due, to)) > 0 && p[0].revents)
			drain_efd(c->wake_efd);
		fault_check(c, fault_due);
	}
	if (hs_sock >= 0)
		close(hs_sock);
	join_presenter(c);
	return NULL;
}

int io_start(struct garuda_client *c)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* set before the thread exists, so that it (and the presenters it starts) read
	 * it without a race */
	c->io_started = true;
	int r = pthread_create(&c->io_thread, NULL, io_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		c->io_started = false;
		return -r;
	}
	return 0;
}

void io_stop(struct garuda_client *c)
{
	pthread_mutex_lock(&c->lock);
	set_state_locked(c, CONN_CLOSING);
	fail_pending_locked(c, -GARUDA_E_DISCONNECTED);
	pthread_mutex_unlock(&c->lock);
	if (!c->io_started)
		return;
	uint64_t one = 1;
	ssize_t n = write(c->wake_efd, &one, sizeof(one));
	(void)n;
	pthread_join(c->io_thread, NULL);
	c->io_started = false;
}

/* The fallback's warning (garuda_client_warning(), internal.h): here, beside the
 * transport that finds garudad gone, so that the reactor depends on the transport and
 * not the other way round. */
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
