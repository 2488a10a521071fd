/* session.c — a client's connection (session.h): accept and who the peer is, the
 * datagrams in and the outbox out, replies, failure, close and reap, the scanners'
 * notices, the re-attach log. What each request does is session_req.c's. */
#include "session.h"
#include "session_internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "fdio.h"
#include "log.h"
#include "points.h"
#include "readiness.h"
#include "wire.h"

#define RECV_BATCH 64 /* datagrams per callback before yielding to others */


/* Inside the daemon every error is negative: -GARUDA_E_* or -errno (DESIGN.md). On the
 * wire a registry code travels positive and an errno negative (docs/protocol.md §10).
 * This is the one place that converts; a code of the wrong sign is a bug, and the
 * assertion makes the test that reaches it fail. */
static int wire_code(int code)
{
	assert(code < 0 && "daemon error codes are negative");
	return -code >= GARUDA_ERR_BASE ? -code : code;
}

static void error_msg(struct garuda_msg *m, uint64_t cookie, int code, const char *text)
{
	garuda_msg_error(m, cookie, wire_code(code), text);
}

static void count_error(struct daemon *d, int code)
{
	int w = wire_code(code);
	if (w >= GARUDA_ERR_BASE && w < GARUDA_ERR_BASE + ERRCOUNT_SLOTS)
		d->errors_by_code[w - GARUDA_ERR_BASE]++;
	if (w == GARUDA_E_QUOTA)
		d->quota_refusals++;
}

/* ---------------- lookup ---------------- */

struct session *session_find(struct daemon *d, uint64_t id)
{
	for (struct session *s = d->by_id[id % SESSION_BUCKETS]; s; s = s->hnext)
		if (s->id == id)
			return s;
	return NULL;
}

/* ---------------- replies ---------------- */

void reply_error(struct session *s, uint64_t cookie, int code, const char *text)
{
	struct garuda_msg m;
	s->errors++;
	count_error(s->d, code);
	error_msg(&m, cookie, code, text);
	session_send(s, &m, -1);
}

/* NOT_ARMED answering a DISARM: an answer (the arm fired first, as it does for every
 * stream libgaruda frees after its last wait), not a fault of the client's: sent,
 * not counted in the session's or the daemon's errors. */
void reply_not_armed(struct session *s, uint64_t cookie)
{
	struct garuda_msg m;
	error_msg(&m, cookie, -GARUDA_E_NOT_ARMED, NULL);
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

/* Send an error and end the session (protocol violations, offenders). */
static void drop_outbox(struct session *s);
static void release_holdings(struct session *s);

void fail_session(struct session *s, uint64_t cookie, int code, const char *text)
{
	log_client(LOG_NOTICE, "session %llu (pid %d %s): %s; disconnecting",
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

static void watch_out(struct session *s, bool on);

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
		quota_release(&s->sink->quota, Q_OUTBOX, o->len);
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
		if (r != -EAGAIN)
			return; /* sent, or the peer is gone (noticed on the next receive) */
	}
	if (quota_charge(&s->sink->quota, &s->d->cfg, Q_OUTBOX,
			 (uint64_t)len)) {
		log_client(LOG_NOTICE, "session %llu (pid %d %s): outbox over quota; disconnecting",
			   (unsigned long long)s->id, (int)s->pid, s->comm);
		count_error(s->d, -GARUDA_E_SLOW_PEER);
		session_close(s);
		return;
	}
	struct outmsg *o = malloc(sizeof(*o) + (size_t)len);
	int dupfd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : -1;
	if (!o || (fd >= 0 && dupfd < 0)) {
		free(o);
		if (dupfd >= 0)
			close(dupfd);
		quota_release(&s->sink->quota, Q_OUTBOX, (uint64_t)len);
		session_close(s);
		return;
	}
	o->next = NULL;
	o->len = (size_t)len;
	o->fd = dupfd;
	o->overflow = m->type == GARUDA_MSG_READY; /* the loop sends no other READY */
	memcpy(o->buf, buf, (size_t)len);
	if (s->out_tail)
		s->out_tail->next = o;
	else
		s->out_head = o;
	s->out_tail = o;
	watch_out(s, true);
}

/* ---------------- re-attaching sessions ---------------- */

/* A session's presentation after a reconnect (§7.4: SEGMENT_ATTACH for each segment,
 * then BIND and ARM for its streams) has no end marker on the wire: it is over when the
 * session sent none of those for this long. Only the log line waits for it. */
#define REATTACH_QUIET_MS 200

static void arm_reattach_timer(struct daemon *d, uint64_t in_ns)
{
	if (d->reattach_fd < 0)
		return;
	struct itimerspec its = { .it_value = { .tv_sec = (time_t)(in_ns / 1000000000ull),
						.tv_nsec = (long)(in_ns % 1000000000ull) } };
	if (!its.it_value.tv_sec && !its.it_value.tv_nsec)
		its.it_value.tv_nsec = 1;
	timerfd_settime(d->reattach_fd, 0, &its, NULL);
}

/* After a request handled without error: the first SEGMENT_ATTACH marks the session as
 * re-attaching; its ATTACHes, BINDs and ARMs are counted until it goes quiet. */
static void note_reattach(struct session *s, const struct garuda_msg *m)
{
	bool attach = m->type == GARUDA_MSG_SEGMENT_ATTACH;
	if (!attach && !s->reattach_pending)
		return;
	switch (m->type) {
	case GARUDA_MSG_SEGMENT_ATTACH:
		s->reattached_segments++;
		break;
	case GARUDA_MSG_BIND:
		s->rebound++;
		break;
	case GARUDA_MSG_ARM:
		s->rearmed++;
		break;
	case GARUDA_MSG_ARM_BATCH:
		s->rearmed += m->arm_batch.count;
		break;
	default:
		return;
	}
	s->reattach_pending = true;
	s->reattach_last_ns = garuda_now_ns();
	arm_reattach_timer(s->d, REATTACH_QUIET_MS * 1000000ull);
}

static void log_reattached(struct session *s, const char *how)
{
	uint64_t ms = (garuda_now_ns() - s->connected_ns) / 1000000u;
	log_info("session %llu (pid %d uid %u %s): re-attached %u segment(s), %u eventfd "
		 "binding(s), %u wait(s) re-armed, %llu ms after connecting%s (a reconnect after "
		 "a garudad restart, or a hand-over from its fallback reactor)",
		 (unsigned long long)s->id, (int)s->pid, (unsigned)s->uid, s->comm,
		 s->reattached_segments, s->rebound, s->rearmed, (unsigned long long)ms, how);
	s->reattach_pending = false;
}

void session_reattach_tick(struct daemon *d)
{
	uint64_t ticks;
	if (read(d->reattach_fd, &ticks, sizeof(ticks)) < 0)
		return;
	uint64_t now = garuda_now_ns(), quiet = REATTACH_QUIET_MS * 1000000ull, next = 0;
	for (struct session *s = d->sessions; s; s = s->next) {
		if (!s->reattach_pending)
			continue;
		uint64_t idle = now - s->reattach_last_ns;
		if (idle >= quiet)
			log_reattached(s, "");
		else if (!next || quiet - idle < next)
			next = quiet - idle;
	}
	if (next)
		arm_reattach_timer(d, next);
}

/* Decode -> look up -> check state -> call. May close the session (s->closed); s
 * stays valid until the loop iteration ends. */
static void handle_datagram(struct session *s, const uint8_t *buf, size_t len, int *fds, unsigned nfds)
{
	struct garuda_msg m;
	int r = garuda_msg_decode(buf, len, nfds, &m);
	if (r) {
		fail_session(s, garuda_peek_cookie(buf, len), r, NULL);
		return;
	}
	const struct request_handler *h = session_request(m.type);
	enum session_state now = s->welcomed ? ST_WELCOMED : ST_NEW;
	if ((h ? h->state : ST_WELCOMED) != now) {
		fail_session(s, m.cookie, -GARUDA_E_UNEXPECTED,
			     now == ST_NEW ? "the first message must be HELLO" : "HELLO sent twice");
		return;
	}
	if (!h) {
		char text[96];
		snprintf(text, sizeof(text), "%s is not a request", garuda_msg_type_name(m.type));
		fail_session(s, m.cookie, -GARUDA_E_UNEXPECTED, text);
		return;
	}
	if (nfds != h->nfds) { /* the decoder's check, restated where the fds are used */
		fail_session(s, m.cookie, -GARUDA_E_FD_COUNT, NULL);
		return;
	}
	uint64_t errors = s->errors;
	h->fn(s, &m, fds);
	if (!s->closed && s->errors == errors)
		note_reattach(s, &m);
}

/* recvmsg returned 0: end of file, or a zero-length datagram? A SOCK_SEQPACKET
 * socket whose peer has shut down or closed polls POLLRDHUP (or POLLHUP); one that
 * just received an empty datagram does not. */
static bool peer_hung_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static void on_in(struct loop_watch *w, void *data, uint32_t events)
{
	struct session *s = data;
	(void)events;
	uint8_t buf[GARUDA_MSG_MAX];
	for (int i = 0; i < RECV_BATCH; i++) {
		int fds[FDIO_MAX_FDS];
		unsigned nfds = 0;
		size_t got;
		ssize_t n = fdio_recv_ex(s->fd, buf, sizeof(buf), fds, FDIO_MAX_FDS, &nfds, MSG_DONTWAIT, &got);
		if (n == -EAGAIN)
			return;
		if (n == -EMSGSIZE) { /* the cookie is echoed when its 24 bytes arrived (§5) */
			fail_session(s, garuda_peek_cookie(buf, got), -GARUDA_E_TOO_LONG,
				     "datagram or its fds over the protocol's cap");
			return;
		}
		if (n == 0 && !peer_hung_up(s->fd)) { /* an empty datagram, not end of file */
			fail_session(s, 0, -GARUDA_E_TOO_SHORT, NULL);
			return;
		}
		if (n <= 0) {
			session_close(s); /* EOF or a socket error: the peer is gone */
			return;
		}
		handle_datagram(s, buf, (size_t)n, fds, nfds);
		fdio_close_all(fds, nfds); /* whatever a handler did not take */
		if (s->closed || s->lingering)
			return;
	}
	loop_again(s->d->loop, w); /* more may be waiting: yield to others first */
}

/* ---------------- lifetime ---------------- */

static void drop_outbox(struct session *s)
{
	while (s->out_head) {
		struct outmsg *o = s->out_head;
		s->out_head = o->next;
		session_release_quota(s, Q_OUTBOX, o->len);
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	s->out_tail = NULL;
	watch_out(s, false);
}

/* Refused before HELLO: say why (why: quota_charge_explain()'s words), best effort (the
 * caller closes fd). */
static void refuse_connection(struct daemon *d, int fd, pid_t pid, uid_t uid, const char *why)
{
	struct garuda_msg m;
	uint8_t buf[GARUDA_MSG_MAX];
	error_msg(&m, 0, -GARUDA_E_QUOTA, why);
	ssize_t len = garuda_msg_encode(&m, buf, sizeof(buf));
	if (len > 0)
		fdio_send(fd, buf, (size_t)len, NULL, 0, MSG_DONTWAIT);
	log_client(LOG_NOTICE, "pid %d uid %d: connection refused: %s", (int)pid, (int)uid, why);
	count_error(d, -GARUDA_E_QUOTA);
}

/* ---- who the peer is: pid and uid from SO_PEERCRED, cgroup and comm from /proc ----
 * A pidfd of the peer (SO_PEERPIDFD, Linux 6.5) makes that exact: what /proc/PID gave
 * is the peer's only if the peer was still alive after the reads (a pid is not reused
 * while the process lives), and where /proc/PID is hidden from garudad (systemd's
 * ProtectProc= other than "default": clients run as other users) the process is seen
 * alive, the cgroup comes from the pidfd (PIDFD_GET_INFO, Linux 6.13: its cgroup id,
 * the inode of its cgroup2 directory, quota_cgroup_by_id()) and the log says why there
 * is no comm. Older kernels: /proc alone, as before. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
/* <linux/pidfd.h>'s struct pidfd_info, its first version (PIDFD_INFO_SIZE_VER0, 64
 * bytes; later kernels accept it and fill what it has room for) */
struct peer_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	uint32_t spare0[1];
};
_Static_assert(sizeof(struct peer_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");
#define PEER_PIDFD_INFO_CGROUPID (1ull << 2)
#define PEER_PIDFD_GET_INFO _IOWR(0xFF, 11, struct peer_pidfd_info)

/* The peer's pidfd, or -1 (kernel before 6.5, or the peer is gone). */
static int peer_pidfd(int fd)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0 || len != sizeof(pidfd))
		return -1;
	return pidfd;
}

/* 1: the pidfd's process has exited (its pidfd polls readable); 0: alive; -1: no pidfd */
static int peer_exited(int pidfd)
{
	if (pidfd < 0)
		return -1;
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	return poll(&p, 1, 0) > 0 ? 1 : 0;
}

/* The peer's cgroup from its pidfd: 0 and *path, or -errno. */
static int pidfd_cgroup(int pidfd, char **path)
{
	*path = NULL;
	struct peer_pidfd_info info = { .mask = PEER_PIDFD_INFO_CGROUPID };
	if (ioctl(pidfd, PEER_PIDFD_GET_INFO, &info) < 0)
		return -errno;
	if (!(info.mask & PEER_PIDFD_INFO_CGROUPID))
		return -ENODATA;
	return quota_cgroup_by_id(NULL, info.cgroupid, path);
}

/* The peer's cgroup quota record, or NULL (no cgroup key: logged, rate-limited);
 * *oom on ENOMEM. path and r: what quota_peer_cgroup() gave (path taken); exited:
 * peer_exited() after the reads from /proc. */
static struct quota_cgroup *peer_cgroup(struct daemon *d, pid_t pid, int pidfd, int exited,
					char *proc_path, int r, bool *oom)
{
	_cleanup_free_ char *path = proc_path;
	const char *why = NULL;
	char whybuf[160];
	if (r == 0 && exited == 1) {
		/* the peer died by the end of the reads: the file may have been another's */
		free(TAKE_PTR(path));
		r = -ENOENT;
	}
	if ((r == -ENOENT || r == -EACCES) && exited == 0) {
		/* alive but /proc/PID hidden from garudad: ask its pidfd */
		int e = pidfd_cgroup(pidfd, &path);
		if (e == 0) {
			log_client(LOG_INFO, "pid %d: /proc/%d hidden from garudad (ProtectProc=?): "
				   "cgroup key %s from its pidfd, no command name", (int)pid, (int)pid,
				   path);
			r = 0;
		} else if (e == -ENOMEM) {
			r = e;
		} else {
			snprintf(whybuf, sizeof(whybuf), "hidden from garudad (ProtectProc=?), and "
				 "its pidfd gives none: %s",
				 e == -ENOTTY || e == -EINVAL ? "PIDFD_GET_INFO needs Linux 6.13"
				 : e == -ENOENT ? "not under garudad's /sys/fs/cgroup"
						: strerror(-e));
			why = whybuf;
		}
	}
	if (r == -ENOENT && exited < 0 && pid > 0 && (kill(pid, 0) == 0 || errno == EPERM))
		why = "hidden from garudad (ProtectProc=?); no pidfd to ask (Linux 6.5)";
	*oom = r == -ENOMEM;
	if (r < 0) {
		if (!*oom)
			log_client(LOG_INFO, "pid %d: no cgroup quota key (/proc/%d/cgroup: %s); "
				   "charged per connection and per uid only", (int)pid, (int)pid,
				   why ? why
				   : r == -ENODATA ? "no cgroup v2 \"0::\" line"
				   : r == -ESRCH ? "pid outside garudad's pid namespace"
				   : r == -ENOENT ? "the process is gone"
						  : strerror(-r));
		return NULL;
	}
	struct quota_cgroup *c = quota_cgroup_get(&d->quotas, path);
	*oom = !c;
	return c;
}

/* The peer's command name from /proc/PID/comm ("" when unreadable); the caller checks
 * that the peer outlived the read. */
static void read_comm(pid_t pid, char comm[17])
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, 17, f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
}

void session_accept(struct daemon *d, int accepted_fd)
{
	_cleanup_close_ int fd = accepted_fd;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return;
	struct quota_uid *qu = quota_uid_get(&d->quotas, cred.uid);
	bool oom = false;
	/* /proc (cgroup, comm), then whether the peer outlived the reads */
	_cleanup_close_ int pidfd = cred.pid > 0 ? peer_pidfd(fd) : -1;
	char comm[17] = "";
	char *proc_path = NULL;
	struct quota_cgroup *qc = NULL;
	if (qu) {
		int pr = quota_peer_cgroup("/proc", cred.pid, &proc_path);
		if (cred.pid > 0)
			read_comm(cred.pid, comm);
		int exited = peer_exited(pidfd);
		if (exited == 1)
			comm[0] = '\0';
		qc = peer_cgroup(d, cred.pid, pidfd, exited, proc_path, pr, &oom);
	}
	_cleanup_free_ struct session *s = oom ? NULL : calloc(1, sizeof(*s));
	/* sink_new() takes qc's reference, also when it fails */
	_cleanup_(sink_unrefp) struct sink *sink = (s && qu) ? sink_new(fd, d->next_session_id, qu, qc) : NULL;
	if (!sink) {
		if (!s || !qu)
			quota_cgroup_unref(qc);
		log_err("out of memory accepting a client");
		return;
	}
	TAKE_FD(fd); /* the sink owns the socket: its last reference closes it */
	char why[GARUDA_ERROR_TEXT_MAX + 1];
	if (quota_charge_explain(&sink->quota, &d->cfg, Q_CONNECTIONS, 1, why, sizeof(why))) {
		refuse_connection(d, sink->fd, cred.pid, cred.uid, why);
		return;
	}
	s->d = d;
	s->id = d->next_session_id;
	s->sink = sink;
	s->fd = sink->fd;
	s->pid = cred.pid;
	s->uid = cred.uid;
	s->gid = cred.gid;
	s->next_segment_id = 1;
	s->connected_ns = garuda_now_ns();
	memcpy(s->comm, comm, sizeof(s->comm));
	s->w_in = loop_add(d->loop, s->fd, POLLIN, on_in, s);
	if (!s->w_in) {
		quota_release(&sink->quota, Q_CONNECTIONS, 1); /* the one charge */
		return;
	}
	/* from here nothing fails: the session owns the sink, the daemon the session */
	TAKE_PTR(sink);
	d->next_session_id++;
	s->next = d->sessions;
	if (d->sessions)
		d->sessions->prev = s;
	d->sessions = s;
	s->hnext = d->by_id[s->id % SESSION_BUCKETS];
	d->by_id[s->id % SESSION_BUCKETS] = s;
	d->nsessions++;
	d->sessions_total++;
	log_debug("session %llu: pid %d uid %d (%s) cgroup %s connected", (unsigned long long)s->id,
		  (int)s->pid, (int)s->uid, s->comm, qc ? qc->path : "(none)");
	d->status_dirty = true;
	TAKE_PTR(s);
}

/* Give back everything the session holds except its socket and outbox: stop reading,
 * drop its descriptors in the scanners, its bindings and segments. Idempotent. */
static void release_holdings(struct session *s)
{
	struct daemon *d = s->d;
	if (s->w_in) {
		loop_remove(d->loop, s->w_in);
		s->w_in = NULL;
		shutdown(s->fd, SHUT_RD);
		for (unsigned i = 0; i < d->nscanners; i++)
			scanner_drop_sink(d->scanner[i], s->sink);
	}
	while (s->bindings) {
		struct binding *b = s->bindings;
		s->bindings = b->next;
		session_release_quota(s, Q_BINDINGS, 1);
		binding_unref(b);
	}
	while (s->segments) {
		struct segment *g = s->segments;
		s->segments = g->next;
		session_release_quota(s, Q_SEGMENTS, 1);
		session_release_quota(s, Q_LINES, g->lines);
		segment_unref(g);
	}
}

void session_close(struct session *s)
{
	struct daemon *d = s->d;
	if (s->closed)
		return;
	s->closed = true;
	release_holdings(s);
	watch_out(s, false);
	shutdown(s->fd, SHUT_RDWR); /* scanners still holding the sink now fail fast */
	drop_outbox(s);
	session_release_quota(s, Q_CONNECTIONS, 1);
	struct session **pp = &d->by_id[s->id % SESSION_BUCKETS];
	while (*pp != s)
		pp = &(*pp)->hnext;
	*pp = s->hnext;
	if (s->prev)
		s->prev->next = s->next;
	else
		d->sessions = s->next;
	if (s->next)
		s->next->prev = s->prev;
	d->nsessions--;
	if (s->reattach_pending)
		log_reattached(s, ", then closed");
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
		.completions = atomic_load(&k->completions), .undelivered = atomic_load(&k->undelivered),
		.write_retries = atomic_load(&k->write_retries), .errors = s->errors,
		.outbox_bytes = atomic_load(&u->used[Q_OUTBOX]), .overflow = s->overflow_queued,
	};
	for (const struct segment *g = s->segments; g; g = g->next)
		v->segments++;
	for (const struct binding *b = s->bindings; b; b = b->next)
		v->bindings++;
	for (unsigned f = 0; f < GARUDA_FORM_COUNT; f++)
		v->by_form[f] = atomic_load_explicit(&k->by_form[f], memory_order_relaxed);
	for (unsigned b = 0; b < GARUDA_LAT_BUCKETS; b++)
		v->detect_hist[b] = atomic_load_explicit(&k->detect_hist[b], memory_order_relaxed);
}

void session_handle_notices(struct daemon *d)
{
	struct notice *n;
	unsigned k = notice_take(&d->notices, &n);
	for (unsigned i = 0; i < k; i++) {
		if (n[i].kind == NOTICE_RELEASE) { /* a scanner's last reference: dropped here */
			notice_release(n[i].what, n[i].obj);
			continue;
		}
		struct session *s = session_find(d, n[i].session_id);
		if (!s)
			continue; /* already gone */
		switch (n[i].kind) {
		case NOTICE_ANSWER:
			if (n[i].code == -GARUDA_E_NOT_ARMED)
				reply_not_armed(s, n[i].cookie);
			else if (n[i].code)
				reply_error(s, n[i].cookie, n[i].code, NULL);
			else if (!n[i].noreply) {
				struct garuda_msg m;
				garuda_msg_init(&m, GARUDA_MSG_ACK, n[i].cookie);
				session_send(s, &m, -1);
			}
			break;
		case NOTICE_OVERFLOW:
			atomic_store(&s->sink->overflow, false);
			if (!s->overflow_queued) {
				struct garuda_msg m;
				readiness_overflow_msg(&m);
				s->overflow_queued = true;
				session_send(s, &m, -1);
				if (!s->out_head) /* it went out directly */
					s->overflow_queued = false;
			}
			break;
		case NOTICE_OFFENDER:
			fail_session(s, 0, n[i].code, "bound eventfd would block the daemon");
			break;
		case NOTICE_RELEASE:
			break;
		}
	}
	free(n);
}
