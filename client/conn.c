/* conn.c — libgaruda's connection to garudad: handshake, sending, requests with
 * replies, and the client's I/O thread (the only reader of the socket), which routes
 * replies and READY messages and reconnects after the daemon went away.
 *
 * Promises:
 *  - A request's reply is matched by cookie; a request never waits forever for a
 *    session that died: losing the connection fails every pending request with
 *    -GARUDA_E_DISCONNECTED.
 *  - A message tied to a session (it names a daemon-side segment id) is sent only in
 *    the session it was built for (expect_gen), never in a later one.
 *  - Sending never blocks while holding c->lock: a full socket releases the lock while
 *    it waits for room, and the I/O thread keeps draining the socket meanwhile.
 *  - After a reconnect the I/O thread presents every segment (SEGMENT_ATTACH with the
 *    memfd the client holds), then every stream (BIND, ARM for each outstanding
 *    sequence), before the session counts as up; then it nudges every stream so that
 *    waiters and event loops re-read their words.
 *  - While no session exists, the I/O thread retries with exponential backoff
 *    (RECONNECT_MIN_NS .. RECONNECT_MAX_NS) and nudges streams whose words moved, so
 *    eventfd users keep seeing progress.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "fdio.h"

#define HANDSHAKE_TIMEOUT_MS 5000
#define RECONNECT_MIN_NS 1000000ull    /* 1 ms */
#define RECONNECT_MAX_NS 100000000ull  /* 100 ms */
#define SEND_WAIT_MS 10

void futex_wake_all(uint32_t *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* ERROR code -> our return value: registry codes travel positive, errno negative */
static int error_to_ret(int32_t code)
{
	return code > 0 ? -code : code;
}

/* ------------------------------------------------------------------ handshake */

static int recv_one(int sock, struct garuda_msg *m, int *fd, int timeout_ms)
{
	uint8_t buf[GARUDA_MSG_MAX];
	int fds[FDIO_MAX_FDS];
	unsigned nfds = 0;
	struct pollfd p = { .fd = sock, .events = POLLIN };
	int r;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
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

int conn_handshake(const char *path, struct garuda_welcome *w)
{
	if (!path)
		return -EINVAL;
	_cleanup_close_ int sock = fdio_connect(path);
	if (sock == -ENAMETOOLONG)
		return -EINVAL;
	if (sock < 0)
		return sock;
	int r;

	struct garuda_msg m;
	uint8_t buf[GARUDA_MSG_MAX];
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 1);
	m.hello.features = GARUDA_FEATURE_READY_BATCH; /* route() takes READY_BATCH */
	ssize_t n = garuda_msg_encode(&m, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	n = fdio_send(sock, buf, (size_t)n, NULL, 0, 0);
	if (n == -EPIPE || n == -ECONNRESET)
		return -GARUDA_E_DISCONNECTED;
	if (n < 0)
		return (int)n;
	r = recv_one(sock, &m, NULL, HANDSHAKE_TIMEOUT_MS);
	if (r < 0)
		return r;
	if (m.type == GARUDA_MSG_ERROR)
		return error_to_ret(m.error.code);
	if (m.type != GARUDA_MSG_WELCOME || m.cookie != 1)
		return -GARUDA_E_PROTOCOL;
	*w = m.welcome;
	return TAKE_FD(sock);
}

/* ------------------------------------------------------------------ sending */

/* While the I/O thread presents a new session, only it sends, except a message built
 * for that very session (arm_gen: an ARM of a stream already presented in it, which no
 * one would send again). */
static bool may_send_locked(struct garuda_client *c, uint64_t arm_gen)
{
	return c->state == CONN_UP ||
	       (c->state == CONN_PRESENTING && (is_io_thread(c) || (arm_gen && c->gen == arm_gen)));
}

static int pump(struct garuda_client *c);

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
		/* full: wait for room without the lock; the I/O thread drains meanwhile */
		int sock = c->sock;
		bool io = is_io_thread(c);
		pthread_mutex_unlock(&c->lock);
		struct pollfd p = { .fd = sock, .events = POLLOUT | (io ? POLLIN : 0) };
		if (poll(&p, 1, SEND_WAIT_MS) > 0 && io && (p.revents & POLLIN))
			(void)pump(c);
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

/* ------------------------------------------------------------------ routing */

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
				stream_async_error_locked(c, m->cookie, err);
			break;
		}
		if (m->cookie == 0) {
			/* connection-level error: the daemon closes next */
			c->last_error = err ? err : -GARUDA_E_UNEXPECTED;
			break;
		}
		struct pending *p = c->pending;
		while (p && p->cookie != m->cookie)
			p = p->next;
		if (!p || p->done)
			break; /* nobody waits (any more): drop */
		p->done = true;
		p->err = err;
		p->reply = *m;
		p->fd = fd;
		fd = -1;
		pthread_cond_broadcast(&c->cond);
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
		route(c, &m, nfds ? fds[0] : -1);
	}
}

/* ------------------------------------------------------------------ requests */

int conn_request_gen(struct garuda_client *c, struct garuda_msg *m, int fd, uint64_t expect_gen,
		     struct garuda_msg *reply, int *reply_fd, uint64_t *gen_out)
{
	struct pending p = { .fd = -1 };
	bool io = is_io_thread(c);
	int r = 0;

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
	while (!p.done) {
		if (!io) {
			pthread_cond_wait(&c->cond, &c->lock);
			continue;
		}
		/* the I/O thread is its own reader */
		int sock = c->sock;
		pthread_mutex_unlock(&c->lock);
		struct pollfd pf = { .fd = sock, .events = POLLIN };
		int pr = poll(&pf, 1, HANDSHAKE_TIMEOUT_MS);
		int e = pr < 0 ? -errno : pr == 0 ? -GARUDA_E_TIMEOUT : pump(c);
		pthread_mutex_lock(&c->lock);
		if (e < 0 && e != -EINTR && !p.done) {
			r = e == -GARUDA_E_TIMEOUT ? e : -GARUDA_E_DISCONNECTED;
			goto out;
		}
	}
	r = p.err;
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

int conn_request(struct garuda_client *c, struct garuda_msg *m, int fd, struct garuda_msg *reply,
		 int *reply_fd)
{
	return conn_request_gen(c, m, fd, 0, reply, reply_fd, NULL);
}

/* ------------------------------------------------------------------ I/O thread */

static void set_state_locked(struct garuda_client *c, enum conn_state st)
{
	c->state = st;
	atomic_store_explicit(&c->atomic_state, (int)st, memory_order_release);
	pthread_cond_broadcast(&c->cond);
}

/* The session is over: close it, fail what waits for it, wake every waiter so that it
 * falls back to polling its word. I/O thread. */
static void go_down(struct garuda_client *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->sock >= 0)
		close(c->sock);
	c->sock = -1;
	c->session_id = 0;
	if (c->state != CONN_CLOSING)
		set_state_locked(c, CONN_DOWN);
	fail_pending_locked(c, -GARUDA_E_DISCONNECTED);
	nudge_all_locked(c);
	pthread_mutex_unlock(&c->lock);
}

/* New session on sock: present everything, then declare it up. I/O thread. */
static int present(struct garuda_client *c, int sock, const struct garuda_welcome *w)
{
	int r = 0;
	pthread_mutex_lock(&c->reg_lock);
	pthread_mutex_lock(&c->lock);
	if (c->state == CONN_CLOSING) {
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_unlock(&c->reg_lock);
		close(sock);
		return -GARUDA_E_CLOSED;
	}
	c->sock = sock;
	c->gen++;
	uint64_t gen = c->gen;
	c->session_id = w->session_id;
	c->welcome = *w;
	set_state_locked(c, CONN_PRESENTING);
	pthread_mutex_unlock(&c->lock);

	for (struct garuda_seg *seg = c->segs; seg && r >= 0; seg = seg->next)
		r = seg_present(seg, gen);
	for (uint32_t i = 0; i < c->nstreams_cap && r >= 0; i++) {
		pthread_mutex_lock(&c->lock);
		struct garuda_stream *s = c->streams[i];
		pthread_mutex_unlock(&c->lock);
		if (s)
			r = stream_present(s, gen);
	}

	pthread_mutex_lock(&c->lock);
	if (r >= 0 && c->state == CONN_PRESENTING && c->gen == gen) {
		set_state_locked(c, CONN_UP);
		atomic_fetch_add(&c->reconnects, 1);
		nudge_all_locked(c); /* readiness lost with the old session: re-check */
	} else if (r >= 0) {
		r = -GARUDA_E_DISCONNECTED;
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->reg_lock);
	return r;
}

/* While down: wake streams whose words moved since the last look. */
static void poll_words(struct garuda_client *c)
{
	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->nstreams_cap; i++) {
		struct garuda_stream *s = c->streams[i];
		if (!s)
			continue;
		uint64_t v = word_load(s->word);
		if (v != s->polled) {
			s->polled = v;
			stream_nudge_locked(s);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

static void drain_efd(int fd)
{
	uint64_t v;
	while (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
}

static void *io_main(void *arg)
{
	struct garuda_client *c = arg;
	uint64_t backoff = RECONNECT_MIN_NS;

	for (;;) {
		pthread_mutex_lock(&c->lock);
		enum conn_state st = c->state;
		int sock = c->sock;
		pthread_mutex_unlock(&c->lock);
		if (st == CONN_CLOSING)
			break;

		if (st == CONN_UP) {
			struct pollfd p[2] = { { .fd = sock, .events = POLLIN },
					       { .fd = c->wake_efd, .events = POLLIN } };
			if (poll(p, 2, -1) < 0)
				continue;
			if (p[1].revents)
				drain_efd(c->wake_efd);
			if (p[0].revents && pump(c) < 0)
				go_down(c);
			continue;
		}

		/* down: try a new session */
		struct garuda_welcome w;
		int fd = conn_handshake(c->path, &w);
		if (fd >= 0) {
			backoff = RECONNECT_MIN_NS;
			if (present(c, fd, &w) < 0)
				go_down(c);
			continue;
		}
		poll_words(c);
		struct pollfd p = { .fd = c->wake_efd, .events = POLLIN };
		if (poll(&p, 1, (int)(backoff / 1000000ull)) > 0)
			drain_efd(c->wake_efd);
		backoff = backoff * 2 > RECONNECT_MAX_NS ? RECONNECT_MAX_NS : backoff * 2;
	}
	return NULL;
}

int io_start(struct garuda_client *c)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&c->io_thread, NULL, io_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return -r;
	c->io_started = true;
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
