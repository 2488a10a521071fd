/* session.c — the session object (session.h): its outbox and the replies, ERRORs and
 * failures it sends, its quota account, its lookup by id and what it is
 * (session_describe), and its end (close, reap, everything it held given back). The
 * lowest layer of the session module: the requests (session_req.c) and the
 * connection (session_conn.c) both call down to it, and it calls neither. Loop thread;
 * the session's reference of its sink drops in session_close(), the struct is freed
 * by session_reap(). */
#include "session.h"
#include "list.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "clock.h"
#include "fdio.h"
#include "log.h"
#include "points.h"

static void drop_outbox(struct session *s);
static void release_holdings(struct session *s);
static void watch_out(struct session *s, bool on);

struct session *session_find(struct daemon *d, uint64_t id)
{
	for (struct session *s = d->by_id[id % SESSION_BUCKETS]; s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

/* the words of the loop thread's last quota refusal (charge()), for the ERROR */
char session_quota_why[GARUDA_ERROR_TEXT_MAX + 1];

int session_charge(struct session *s, enum quota_kind k, uint64_t n)
{
	int r = quota_charge_explain(&s->sink->quota, &s->d->cfg, k, n, session_quota_why,
				     sizeof(session_quota_why));
	if (r)
		log_client(s->uid, LOG_NOTICE, "session %llu (pid %d %s uid %u): refused: %s",
			   (unsigned long long)s->id, (int)s->pid, s->comm, (unsigned)s->uid,
			   session_quota_why);
	return r;
}

void session_release_quota(struct session *s, enum quota_kind k, uint64_t n)
{
	quota_release(&s->sink->quota, k, n);
}

/* Inside the daemon every error is negative: -GARUDA_E_* or -errno (DESIGN.md). On the
 * wire a registry code travels positive and an errno negative (docs/protocol.md §10).
 * This is the one place that converts; a code of the wrong sign is a bug, and the
 * assertion makes the test that reaches it fail. */
static int wire_code(int code)
{
	assert(code < 0 && "daemon error codes are negative");
	return -code >= GARUDA_ERR_BASE ? -code : code;
}

void session_error_msg(struct garuda_msg *m, uint64_t cookie, int code, const char *text)
{
	garuda_msg_error(m, cookie, wire_code(code), text);
}

void session_count_error(struct daemon *d, int code)
{
	int w = wire_code(code);
	if (w >= GARUDA_ERR_BASE && w < GARUDA_ERR_BASE + ERRCOUNT_SLOTS)
		d->errors_by_code[w - GARUDA_ERR_BASE]++;
	if (w == GARUDA_E_QUOTA)
		d->quota_refusals++;
}

void reply_error(struct session *s, uint64_t cookie, int code, const char *text)
{
	struct garuda_msg m;
	s->errors++;
	session_count_error(s->d, code);
	session_error_msg(&m, cookie, code, text);
	session_send(s, &m, -1);
}

/* NOT_ARMED answering a DISARM: an answer (the arm fired first, as it does for every
 * stream libgaruda frees after its last wait), not a fault of the client's: sent,
 * not counted in the session's or the daemon's errors. */
void reply_not_armed(struct session *s, uint64_t cookie)
{
	struct garuda_msg m;
	session_error_msg(&m, cookie, -GARUDA_E_NOT_ARMED, NULL);
	session_send(s, &m, -1);
}

void reply_ack(struct session *s, const struct garuda_msg *req)
{
	if (req->flags & GARUDA_F_NOREPLY)
		return;
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ACK, req->cookie);
	session_send(s, &m, -1);
}

void fail_session(struct session *s, uint64_t cookie, int code, const char *text)
{
	log_client(s->uid, LOG_NOTICE, "session %llu (pid %d %s): %s; disconnecting",
		   (unsigned long long)s->id, (int)s->pid, s->comm, text ? text : garuda_strerror(code));
	/* the session ends: replies still queued are moot, the ERROR saying why is not.
	 * When the peer's socket is full, the session lingers holding nothing but its
	 * socket (still counted in quota.uid.connections) until the ERROR has gone out or
	 * the peer closes; then on_out() closes it. */
	drop_outbox(s);
	reply_error(s, cookie, code, text);
	if (s->out_head && !s->closed) {
		s->lingering = true;
		release_holdings(s);
	} else {
		session_close(s);
	}
}

static void on_out(struct loop_watch *w, void *data, uint32_t events)
{
	(void)w;
	(void)events;
	struct session *s = data;
	while (s->out_head && !s->closed) {
		struct outmsg *o = s->out_head;
		ssize_t r = fdio_send(s->fd, o->buf, o->len, &o->fd, o->fd >= 0 ? 1 : 0, MSG_DONTWAIT);
		if (r == -EAGAIN)
			return;
		s->out_head = o->next;
		if (!s->out_head)
			s->out_tail = NULL;
		quota_release(&s->sink->quota, Q_OUTBOX, outmsg_cost(o->len));
		if (o->fd >= 0)
			close(o->fd);
		bool was_overflow = o->overflow;
		free(o);
		if (was_overflow)
			s->overflow_queued = false;
		if (r < 0) {
			session_close(s); /* EPIPE, ECONNRESET: peer gone */
			return;
		}
	}
	if (s->lingering)
		session_close(s); /* its ERROR is out */
	else if (!s->closed)
		watch_out(s, false);
}

static void watch_out(struct session *s, bool on)
{
	if (on && !s->w_out) {
		s->w_out = loop_add(s->d->loop, s->fd, POLLOUT, on_out, s);
		if (!s->w_out) {
			log_err("session %llu: cannot watch its socket for POLLOUT: %s; disconnecting",
				(unsigned long long)s->id, strerror(errno));
			session_close(s); /* queued replies could never leave */
		}
	} else if (!on && s->w_out) {
		loop_remove(s->d->loop, s->w_out);
		s->w_out = NULL;
	}
}

/* Send m (with fd, which stays the caller's) now, or queue it behind what is queued. */
void session_send(struct session *s, const struct garuda_msg *m, int fd)
{
	if (s->closed || s->lingering) /* lingering: only its ERROR, already queued */
		return;
	uint8_t buf[GARUDA_MSG_MAX];
	ssize_t len = garuda_msg_encode(m, buf, sizeof(buf));
	if (len < 0) {
		log_err("session %llu: cannot encode %s: %s", (unsigned long long)s->id,
			garuda_msg_type_name(m->type), garuda_strerror((int)len));
		return;
	}
	if (!s->out_head) {
		ssize_t r = fdio_send(s->fd, buf, (size_t)len, &fd, fd >= 0 ? 1 : 0, MSG_DONTWAIT);
		if (r >= 0 || r == -EPIPE || r == -ECONNRESET)
			return; /* sent, or the peer is gone (noticed on the next receive) */
		if (r != -EAGAIN) {
			/* not sent and not queued: the kernel refused it (ENOBUFS, ENOMEM;
			 * ETOOMANYREFS for a SEGMENT's fd past the in-flight limit). A reply or
			 * READY lost here would leave the client waiting: the session ends, as
			 * on_out() ends it (EOF ends the client's waits; protocol.md §6.2) */
			log_client(s->uid, LOG_WARNING, "session %llu (pid %d %s): cannot send %s: %s; "
				   "disconnecting", (unsigned long long)s->id, (int)s->pid, s->comm,
				   garuda_msg_type_name(m->type), strerror((int)-r));
			session_close(s);
			return;
		}
	}
	if (quota_charge(&s->sink->quota, &s->d->cfg, Q_OUTBOX, outmsg_cost((size_t)len))) {
		log_client(s->uid, LOG_NOTICE, "session %llu (pid %d %s): outbox over quota; disconnecting",
			   (unsigned long long)s->id, (int)s->pid, s->comm);
		session_count_error(s->d, -GARUDA_E_SLOW_PEER);
		session_close(s);
		return;
	}
	struct outmsg *o = malloc(sizeof(*o) + (size_t)len);
	int dupfd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
	if (!o || (fd >= 0 && dupfd < 0)) {
		free(o);
		if (dupfd >= 0)
			close(dupfd);
		quota_release(&s->sink->quota, Q_OUTBOX, outmsg_cost((size_t)len));
		session_close(s);
		return;
	}
	o->next = NULL;
	o->len = (size_t)len;
	o->fd = dupfd;
	o->segment_id = m->type == GARUDA_MSG_SEGMENT ? m->segment.segment_id : 0;
	o->overflow = m->type == GARUDA_MSG_READY; /* the loop sends no other READY */
	memcpy(o->buf, buf, (size_t)len);
	if (s->out_tail)
		s->out_tail->next = o;
	else
		s->out_head = o;
	s->out_tail = o;
	watch_out(s, true);
}

void session_unsend_segment(struct session *s, struct segment *g)
{
	struct outmsg *prev = NULL;
	for (struct outmsg *o = s->out_head, *next; o; o = next) {
		next = o->next;
		if (o->segment_id != g->id) {
			prev = o;
			continue;
		}
		if (prev)
			prev->next = next;
		else
			s->out_head = next;
		if (s->out_tail == o)
			s->out_tail = prev;
		session_release_quota(s, Q_OUTBOX, outmsg_cost(o->len));
		if (o->fd >= 0)
			close(o->fd);
		free(o);
		g->reply_no = 0; /* its memfd never left */
	}
	if (!s->out_head)
		watch_out(s, false);
}

/* ---------------- SEGMENT replies the client may not have read ----------------
 *
 * Unread in the client's socket, a SEGMENT reply keeps its memfd, and the segment's
 * pages, alive after SEGMENT_CLOSE or the session's end (62 MiB per connection was
 * measured at the default quota.connection.lines, none of it charged). So a segment's
 * quota stays charged while its reply may be unread: until the client has read
 * everything it was sent (SIOCOUTQ counts what the peer has not read of this
 * socket's messages; the kernel gives no finer mark) or its socket is gone. */

void session_send_segment(struct session *s, struct segment *g, const struct garuda_msg *m)
{
	g->reply_no = ++s->fds_sent;
	session_send(s, m, g->fd);
}

static void hold_timer_arm(struct daemon *d)
{
	if (d->hold_fd < 0 || d->hold_armed)
		return;
	struct itimerspec its = { .it_value = { .tv_nsec = SESSION_HOLD_TICK_MS * 1000000l } };
	if (timerfd_settime(d->hold_fd, 0, &its, NULL) == 0)
		d->hold_armed = true;
}

/* What the peer has not read of what this socket sent: 0 also when that cannot be
 * known (the socket is gone: nothing of it can be held). */
static int unread_bytes(int fd)
{
	int q = 0;
	if (ioctl(fd, SIOCOUTQ, &q) < 0)
		return 0;
	return q;
}

bool session_unread_check(struct session *s)
{
	if (s->fds_read == s->fds_sent)
		return true;
	if (s->out_head || unread_bytes(s->fd) > 0)
		return false;
	s->fds_read = s->fds_sent;
	if (s->held_segments)
		log_debug("session %llu: its %u unread SEGMENT repl%s read: %llu line(s) given back",
			  (unsigned long long)s->id, s->held_segments, s->held_segments == 1 ? "y" : "ies",
			  (unsigned long long)s->held_lines);
	session_release_quota(s, Q_SEGMENTS, s->held_segments);
	session_release_quota(s, Q_LINES, s->held_lines);
	s->held_segments = 0;
	s->held_lines = 0;
	return true;
}

void session_release_segment(struct session *s, struct segment *g)
{
	segment_retire(g);
	if (g->reply_no > s->fds_read && !session_unread_check(s)) {
		s->held_segments++;
		s->held_lines += g->lines;
		hold_timer_arm(s->d);
		return;
	}
	session_release_quota(s, Q_SEGMENTS, 1);
	session_release_quota(s, Q_LINES, g->lines);
}

/* An ended session's hold: its sink (the socket, to look at; the account the charges
 * are on) and what stays charged. Loop thread; freed by hold_release(). */
struct session_hold {
	struct session_hold *next;
	struct sink *sink;
	uint64_t id;
	uint32_t segments;
	uint64_t lines;
};

static void hold_release(struct daemon *d, struct session_hold *h)
{
	quota_release(&h->sink->quota, Q_SEGMENTS, h->segments);
	quota_release(&h->sink->quota, Q_LINES, h->lines);
	quota_release(&h->sink->quota, Q_CONNECTIONS, 1);
	sink_unref(h->sink);
	free(h);
	d->nholds--;
}

/* The session ends (its outbox dropped) with replies still unread: keep their quota
 * and its connection charged, and its socket. false: nothing to hold, or no timer to
 * look again (then given back now, as before holds). */
static bool hold_after_end(struct session *s)
{
	struct daemon *d = s->d;
	if (session_unread_check(s))
		return false;
	struct session_hold *h = NULL;
	if (!d->stopping && d->hold_fd >= 0)
		h = malloc(sizeof(*h));
	if (!h) {
		s->fds_read = s->fds_sent;
		session_release_quota(s, Q_SEGMENTS, s->held_segments);
		session_release_quota(s, Q_LINES, s->held_lines);
		s->held_segments = 0;
		s->held_lines = 0;
		return false;
	}
	*h = (struct session_hold){ .next = d->holds, .sink = sink_ref(s->sink), .id = s->id,
				    .segments = s->held_segments, .lines = s->held_lines };
	d->holds = h;
	d->nholds++;
	log_client(s->uid, LOG_NOTICE, "session %llu (pid %d %s uid %u): ended with %u SEGMENT repl%s "
		   "unread; %llu line(s) and its connection stay charged until the client reads "
		   "them or closes its socket", (unsigned long long)s->id, (int)s->pid, s->comm,
		   (unsigned)s->uid, h->segments, h->segments == 1 ? "y" : "ies",
		   (unsigned long long)h->lines);
	s->held_segments = 0;
	s->held_lines = 0;
	hold_timer_arm(d);
	return true;
}

void session_hold_tick(struct daemon *d)
{
	uint64_t ticks;
	if (read(d->hold_fd, &ticks, sizeof(ticks)) < 0 && errno == EAGAIN)
		return;
	d->hold_armed = false;
	bool more = false;
	for (struct session *s = d->sessions; s; s = s->next)
		if (s->held_segments && !session_unread_check(s))
			more = true;
	for (struct session_hold **pp = &d->holds, *h; (h = *pp);) {
		if (unread_bytes(h->sink->fd) > 0) {
			more = true;
			pp = &h->next;
			continue;
		}
		log_debug("session %llu: its unread SEGMENT replies are gone: %u segment(s), "
			  "%llu line(s) and its connection given back", (unsigned long long)h->id,
			  h->segments, (unsigned long long)h->lines);
		*pp = h->next;
		hold_release(d, h);
	}
	if (more)
		hold_timer_arm(d);
}

void session_holds_free(struct daemon *d)
{
	while (d->holds) {
		struct session_hold *h = d->holds;
		d->holds = h->next;
		hold_release(d, h);
	}
}

static void drop_outbox(struct session *s)
{
	while (s->out_head) {
		struct outmsg *o = s->out_head;
		s->out_head = o->next;
		session_release_quota(s, Q_OUTBOX, outmsg_cost(o->len));
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	s->out_tail = NULL;
	watch_out(s, false);
}

/* Give back everything the session holds except its socket and outbox: stop reading,
 * drop its descriptors in the scanners, its bindings and segments. Idempotent. */
static void release_holdings(struct session *s)
{
	struct daemon *d = s->d;
	if (s->w_pid) {
		loop_remove(d->loop, s->w_pid);
		s->w_pid = NULL;
		close(s->pidfd);
		s->pidfd = -1;
	}
	if (s->w_in) {
		loop_remove(d->loop, s->w_in);
		s->w_in = NULL;
	}
	if (!s->released) { /* read or paused (session_conn.c): it reads nothing more */
		s->released = true;
		shutdown(s->fd, SHUT_RD);
		for (unsigned i = 0; i < d->nscanners; i++)
			scanner_drop_sink(d->scanner[i], s->sink);
	}
	garuda_keymap_free(&s->binding_index);
	while (s->segments) {
		struct segment *g = s->segments;
		s->segments = g->next;
		while (g->bindings) {
			struct binding *b = g->bindings;
			g->bindings = b->next;
			g->nbindings--;
			session_release_quota(s, Q_BINDINGS, 1);
			binding_unref(b);
		}
		session_release_segment(s, g);
		segment_unref(g);
	}
}

void session_log_reattached(struct session *s, const char *how)
{
	uint64_t ms = (garuda_now_ns() - s->connected_ns) / 1000000u;
	log_client(s->uid, LOG_INFO, "session %llu (pid %d uid %u %s): re-attached %u segment(s), %u eventfd "
		 "binding(s), %u wait(s) re-armed, %llu ms after connecting%s (a reconnect after "
		 "a garudad restart, or a hand-over from its fallback reactor)",
		 (unsigned long long)s->id, (int)s->pid, (unsigned)s->uid, s->comm,
		 s->reattached_segments, s->rebound, s->rearmed, (unsigned long long)ms, how);
	s->reattach_pending = false;
}

void session_close(struct session *s)
{
	struct daemon *d = s->d;
	if (s->closed)
		return;
	s->closed = true;
	drop_outbox(s); /* first: a SEGMENT reply that never left holds nothing */
	release_holdings(s);
	shutdown(s->fd, SHUT_RDWR); /* scanners still holding the sink now fail fast */
	/* what the client sent that was never read: discarded now, so the close does
	 * not reset the client's socket (its next read would fail with ECONNRESET
	 * ahead of the ERROR that says why; protocol.md §6.2); the fds that came with
	 * it go to the closer thread (fdio_set_closer(): closer.h), never closed here */
	fdio_discard(s->fd);
	if (!hold_after_end(s)) /* held: its connection too, until its replies are read */
		session_release_quota(s, Q_CONNECTIONS, 1);
	struct session **pp = &d->by_id[s->id % SESSION_BUCKETS];
	while (*pp != s)
		pp = &(*pp)->hnext;
	*pp = s->hnext;
	LIST_UNLINK(d->sessions, s, prev, next);
	d->nsessions--;
	if (s->reattach_pending)
		session_log_reattached(s, ", then closed");
	log_debug("session %llu: closed", (unsigned long long)s->id);
	sink_unref(s->sink);
	s->sink = NULL;
	/* freed after this loop iteration: callers up the stack may still hold s */
	s->next = d->dead_sessions;
	d->dead_sessions = s;
	d->status_dirty = true;
}

void session_reap(struct daemon *d)
{
	while (d->dead_sessions) {
		struct session *s = d->dead_sessions;
		d->dead_sessions = s->next;
		free(s);
	}
}

void session_close_all(struct daemon *d)
{
	while (d->sessions)
		session_close(d->sessions);
}

struct binding *session_binding(const struct session *s, uint32_t segment_id, uint32_t index)
{
	uint64_t b;
	return garuda_keymap_get(&s->binding_index, session_binding_key(segment_id, index), &b)
		       ? (struct binding *)(uintptr_t)b
		       : NULL;
}

void session_describe(const struct session *s, struct session_view *v)
{
	const struct sink *k = s->sink;
	const struct quota_usage *u = &k->quota.usage;
	*v = (struct session_view){
		.id = s->id, .pid = s->pid, .uid = s->uid, .gid = s->gid, .comm = s->comm,
		.cgroup = k->quota.cgroup ? k->quota.cgroup->path : NULL,
		.connected_ns = s->connected_ns,
		.lines = atomic_load(&u->used[Q_LINES]), .armed = atomic_load(&u->used[Q_ARMED]),
		.arms = s->arms, .points = atomic_load(&u->used[Q_POINTS]),
		.errors = s->errors,
		.outbox_bytes = atomic_load(&u->used[Q_OUTBOX]), .overflow = s->overflow_queued,
	};
	for (const struct segment *g = s->segments; g; g = g->next) {
		v->segments++;
		v->bindings += g->nbindings;
	}
	for (unsigned c = 0; c < SN_COUNT_; c++)
		v->counters[c] = atomic_load(&k->count[c]);
	form_tally_read(&k->by_form, &v->by_form);
	for (unsigned b = 0; b < GARUDA_LAT_BUCKETS; b++)
		v->detect_hist[b] = atomic_load_explicit(&k->detect_hist[b], memory_order_relaxed);
}
