/* session_conn.c — a client's connection (session_conn.h), the session module's top
 * layer: accept and who the peer is, the datagrams in and their dispatch through the
 * request table (session_req.h), the scanners' notices (where the last references a
 * scanner handed back drop, on the loop thread), the re-attach timer. The session
 * object and its way out are session.c's: the layers call down only (session_conn.c
 * -> session_req.c -> session.c). Loop thread. */
#include "session_conn.h"
#include "list.h"
#include "session_req.h"

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
#include "closer.h"
#include "fdio.h"
#include "log.h"
#include "points.h"
#include "readiness.h"
#include "server.h"
#include "wire.h"

#define RECV_BATCH 64 /* datagrams per callback before yielding to others */

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
 * re-attaching; its ATTACHes, BINDs and ARMs are counted until it goes quiet. A session
 * granted REPRESENT marks what it presents again (F_REPRESENT): only that counts, not
 * the new work it sends meanwhile (a busy client never went quiet, and its log line
 * counted every arm of its first seconds as re-armed). */
static void note_reattach(struct session *s, const struct garuda_msg *m)
{
	if ((s->sink->features & GARUDA_FEATURE_REPRESENT) && !(m->flags & GARUDA_F_REPRESENT))
		return;
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
			session_log_reattached(s, "");
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

/* One datagram in: handled, or the session ends. false: stop reading (closed,
 * lingering or failed). */
static bool take_datagram(struct session *s, struct fdio_dgram *g)
{
	if (g->n == -EMFILE) { /* garudad's fds ran out, not the client's fault: refused,
				* the session goes on */
		log_client(s->uid, LOG_WARNING, "session %llu (pid %d %s): a request's fds were cut short: "
			   "garudad is out of file descriptors (raise LimitNOFILE, or lower "
			   "quota.uid.bindings)", (unsigned long long)s->id, (int)s->pid, s->comm);
		reply_error(s, garuda_peek_cookie(g->buf, g->got), -EMFILE,
			    "garudad is out of file descriptors; the request was not handled");
		return !s->closed && !s->lingering;
	}
	if (g->n == -EMSGSIZE) { /* the cookie is echoed when its 24 bytes arrived (§5) */
		fail_session(s, garuda_peek_cookie(g->buf, g->got), -GARUDA_E_TOO_LONG,
			     "datagram or its fds over the protocol's cap");
		return false;
	}
	if (g->n == 0 && !peer_hung_up(s->fd)) { /* an empty datagram, not end of file */
		fail_session(s, 0, -GARUDA_E_TOO_SHORT, NULL);
		return false;
	}
	if (g->n <= 0) {
		session_close(s); /* EOF or a socket error: the peer is gone */
		return false;
	}
	s->rx_sent_ns = g->sent_ns;
	handle_datagram(s, g->buf, (size_t)g->n, g->fds, g->nfds);
	s->rx_sent_ns = 0;
	/* whatever a handler did not take: to the closer thread (a close may block for
	 * as long as the fd's owner likes); past its bound, the sender is stopped */
	if (closer_close_all(g->fds, g->nfds) == -ENOSPC && !s->closed && !s->lingering)
		fail_session(s, 0, -GARUDA_E_BAD_FD,
			     "garudad has too many fds that clients sent still to close; "
			     "a session that sends one it cannot use is ended");
	return !s->closed && !s->lingering;
}

/* SINK_QUEUED_MAX of its ARMs and DISARMs are still untaken (sink.h): stop reading
 * the session until NOTICE_RESUME (resume_reading), and wake every scanner to take them
 * now, whenever they were to wake. Its requests wait in its socket meanwhile: a client
 * that sends more is blocked or told EAGAIN by its own socket (docs/protocol.md §3). */
static bool pause_reading(struct session *s)
{
	if (!sink_pause(s->sink))
		return false;
	sink_count(s->sink, SN_pauses, 1);
	loop_remove(s->d->loop, s->w_in);
	s->w_in = NULL;
	for (unsigned i = 0; i < s->d->nscanners; i++)
		scanner_kick(s->d->scanner[i]);
	return true;
}

static void on_in(struct loop_watch *w, void *data, uint32_t events);

/* A paused session's commands were taken: read it again (what came meanwhile is read at
 * once: a watch added on a readable socket fires). */
static void resume_reading(struct session *s)
{
	if (s->w_in || s->closed || s->lingering || s->released)
		return;
	s->w_in = loop_add(s->d->loop, s->fd, POLLIN, on_in, s);
	if (!s->w_in) {
		log_client(s->uid, LOG_ERR, "session %llu (pid %d %s): cannot watch its socket again (%m): "
			   "it ends", (unsigned long long)s->id, (int)s->pid, s->comm);
		session_close(s);
	}
}

/* Datagrams come RECV_MANY at a time (recvmmsg: one system call, not one each), at
 * most RECV_BATCH per callback. */
#define RECV_MANY 8
static void read_requests(struct loop_watch *w, struct session *s)
{
	uint8_t buf[RECV_MANY][GARUDA_MSG_MAX];
	struct fdio_dgram g[RECV_MANY];
	for (unsigned i = 0; i < RECV_MANY; i++) /* fdio_recv_many() keeps buf, cap, max_fds */
		g[i] = (struct fdio_dgram){ .buf = buf[i], .cap = sizeof(buf[i]), .max_fds = FDIO_MAX_FDS };
	for (int done = 0; done < RECV_BATCH;) {
		if (pause_reading(s))
			return;
		int k = fdio_recv_many(s->fd, g, RECV_MANY, MSG_DONTWAIT);
		if (k == -EAGAIN)
			return;
		if (k < 0) {
			session_close(s); /* a socket error: the peer is gone */
			return;
		}
		for (int i = 0; i < k; i++) {
			if (!take_datagram(s, &g[i])) {
				/* its own fds too (an empty datagram's, refused before any
				 * handler: they leaked), and those read, never to be handled;
				 * closer_close_all() leaves -1 where it took one */
				for (int j = i; j < k; j++)
					(void)closer_close_all(g[j].fds, g[j].nfds);
				return;
			}
		}
		done += k;
		if (k < RECV_MANY)
			return; /* the socket is empty (or was a moment ago): no need to try again */
	}
	loop_again(s->d->loop, w); /* more may be waiting: yield to others first */
}

/* The session's socket is readable: its requests, then their ARMs and DISARMs posted
 * to the scanners together (scanner_flush: one lock and one wake decision a callback) */
static void on_in(struct loop_watch *w, void *data, uint32_t events)
{
	struct session *s = data;
	struct daemon *d = s->d; /* (the session may be gone after its requests) */
	(void)events;
	read_requests(w, s);
	for (unsigned i = 0; i < d->nscanners; i++)
		scanner_flush(d->scanner[i]);
}

/* ---------------- lifetime ---------------- */

/* Refused before HELLO with ERROR{code}: say why (a quota: quota_charge_explain()'s
 * words), best effort (the caller closes fd). What the peer sent before it was
 * accepted is read and thrown away first, nothing more can come (SHUT_RD): the fds it
 * carries go to the closer thread (fdio_set_closer(): closer.h), where the close of
 * the socket would have dropped them on this thread. */
static void refuse_connection(struct daemon *d, int fd, pid_t pid, uid_t uid, int code,
			      const char *why)
{
	struct garuda_msg m;
	uint8_t buf[GARUDA_MSG_MAX];
	session_error_msg(&m, 0, code, why);
	ssize_t len = garuda_msg_encode(&m, buf, sizeof(buf));
	if (len > 0)
		fdio_send(fd, buf, (size_t)len, NULL, 0, MSG_DONTWAIT);
	shutdown(fd, SHUT_RD);
	fdio_discard(fd);
	log_client(uid, code == -GARUDA_E_QUOTA ? LOG_NOTICE : LOG_WARNING,
		   "pid %d uid %d: connection refused: %s", (int)pid, (int)uid, why);
	session_count_error(d, code);
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

/* Whether a peer's cgroup path is one that unrelated clients share, so a key there
 * would make quota.cgroup node-wide (issue 30, item 6): the root "/" (a host or a
 * container without systemd, Slurm's proctrack/linuxproc, a hybrid host's unified
 * hierarchy where systemd does not manage it) or garudad's own cgroup (a container
 * that runs garudad beside its clients). Returns the words for the log, or NULL. */
static const char *shared_cgroup(const char *path)
{
	if (strcmp(path, "/") == 0)
		return "the root cgroup";
	char *own = NULL;
	bool same = quota_peer_cgroup("/proc", getpid(), &own) == 0 && strcmp(own, path) == 0;
	free(own);
	return same ? "garudad's own cgroup" : NULL;
}

/* Out of memory or file descriptors: the peer's cgroup is not known, for want of
 * garudad's own resources, not because it has none */
static bool out_of_resources(int r)
{
	return r == -ENOMEM || r == -EMFILE || r == -ENFILE;
}

/* The peer's cgroup quota record, or NULL (no cgroup key: logged, rate-limited);
 * *fail: -ENOMEM, -EMFILE or -ENFILE when garudad ran out of them finding it out (then
 * the connection is refused: accepted without its key it would escape quota.cgroup),
 * or -ESRCH when the peer is gone (exited before the accept: refused for the same
 * reason).
 * path and r: what quota_peer_cgroup() gave (path taken); exited: peer_exited() after
 * the reads from /proc. */
static struct quota_cgroup *peer_cgroup(struct daemon *d, pid_t pid, uid_t uid, int pidfd, int exited,
					char *proc_path, int r, int *fail)
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
			log_client(uid, LOG_INFO, "pid %d: /proc/%d hidden from garudad (ProtectProc=?): "
				   "cgroup key %s from its pidfd, no command name", (int)pid, (int)pid,
				   path);
			r = 0;
		} else if (out_of_resources(e)) {
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
	if (r == -ENOENT && !why && pid > 0) {
		/* the process is gone: connected, then exited (or handed its socket on)
		 * before the accept. Taken without a key, such connections escaped
		 * quota.cgroup (a tenant's launcher could open any number): refused */
		*fail = -ESRCH;
		return NULL;
	}
	*fail = out_of_resources(r) ? r : 0;
	if (r < 0) {
		if (!*fail)
			log_client(uid, LOG_INFO, "pid %d: no cgroup quota key (/proc/%d/cgroup: %s); "
				   "charged per connection and per uid only", (int)pid, (int)pid,
				   why ? why
				   : r == -ENODATA ? "no cgroup v2 \"0::\" line"
				   : r == -ESRCH ? "pid outside garudad's pid namespace"
				   : r == -ENOENT ? "the process is gone"
						  : strerror(-r));
		return NULL;
	}
	const char *shared = shared_cgroup(path);
	if (shared) {
		log_client(uid, LOG_NOTICE, "pid %d: no cgroup quota key: its cgroup %s is %s, which "
			   "unrelated clients share (a host or container without systemd, Slurm's "
			   "proctrack/linuxproc); charged per connection and per uid only",
			   (int)pid, path, shared);
		return NULL;
	}
	struct quota_cgroup *c = quota_cgroup_get(&d->quotas, path);
	*fail = c ? 0 : -ENOMEM;
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

static void on_peer_exit(struct loop_watch *w, void *data, uint32_t events);

void session_refuse_out_of_fds(struct daemon *d, int fd)
{
	struct ucred cred = { .pid = 0, .uid = (uid_t)-1 };
	socklen_t cl = sizeof(cred);
	(void)getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl);
	refuse_connection(d, fd, cred.pid, cred.uid, -EMFILE, GARUDA_OUT_OF_FDS);
}

void session_accept(struct daemon *d, int accepted_fd)
{
	_cleanup_close_ int fd = accepted_fd;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0)
		return;
	struct quota_uid *qu = quota_uid_get(&d->quotas, cred.uid);
	int fail = 0;
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
		qc = peer_cgroup(d, cred.pid, cred.uid, pidfd, exited, proc_path, pr, &fail);
	}
	if (fail == -EMFILE || fail == -ENFILE) {
		refuse_connection(d, fd, cred.pid, cred.uid, -EMFILE, GARUDA_OUT_OF_FDS);
		return;
	}
	if (fail == -ESRCH) {
		char why[128];
		snprintf(why, sizeof(why), "the connecting process (pid %d) exited before garudad "
			 "accepted it: its cgroup quota key cannot be known", (int)cred.pid);
		refuse_connection(d, fd, cred.pid, cred.uid, -ESRCH, why);
		return;
	}
	_cleanup_free_ struct session *s = fail ? NULL : calloc(1, sizeof(*s));
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
		refuse_connection(d, sink->fd, cred.pid, cred.uid, -GARUDA_E_QUOTA, why);
		return;
	}
	s->d = d;
	s->id = d->next_session_id;
	s->sink = sink;
	s->fd = sink->fd;
	/* datagrams stamped with their send time (an ARM's start: rx_sent_ns); without it
	 * an ARM starts when the loop thread reads it */
	if (fdio_stamp_sends(s->fd) < 0)
		log_debug("session %llu: no SO_TIMESTAMPNS", (unsigned long long)d->next_session_id);
	s->pid = cred.pid;
	s->uid = cred.uid;
	s->gid = cred.gid;
	s->next_segment_id = 1;
	s->connected_ns = garuda_now_ns();
	memcpy(s->comm, comm, sizeof(s->comm));
	s->w_in = loop_add(d->loop, s->fd, POLLIN, on_in, s);
	if (!s->w_in) {
		int e = errno;
		quota_release(&sink->quota, Q_CONNECTIONS, 1); /* the one charge */
		refuse_connection(d, sink->fd, cred.pid, cred.uid, e == EMFILE || e == ENFILE ? -EMFILE : -ENOMEM,
				  e == EMFILE || e == ENFILE ? GARUDA_OUT_OF_FDS : "garudad is out of memory");
		return;
	}
	/* the connecting process's exit ends the session, though a child it forked still
	 * holds the socket (its copy kept the parent's segments, bindings and quota for as
	 * long as it lived). Best effort: without a pidfd or a watch, end of file alone */
	s->pidfd = -1;
	if (pidfd >= 0 && (s->w_pid = loop_add(d->loop, pidfd, POLLIN, on_peer_exit, s)))
		s->pidfd = TAKE_FD(pidfd);
	/* from here nothing fails: the session owns the sink, the daemon the session */
	TAKE_PTR(sink);
	d->next_session_id++;
	LIST_PREPEND(d->sessions, s, prev, next);
	s->hnext = d->by_id[s->id % SESSION_BUCKETS];
	d->by_id[s->id % SESSION_BUCKETS] = s;
	d->nsessions++;
	d->sessions_total++;
	log_debug("session %llu: pid %d uid %d (%s) cgroup %s connected", (unsigned long long)s->id,
		  (int)s->pid, (int)s->uid, s->comm, qc ? qc->path : "(none)");
	d->status_dirty = true;
	TAKE_PTR(s);
}

/* The process that connected has exited: the session ends (as at end of file) */
static void on_peer_exit(struct loop_watch *w, void *data, uint32_t events)
{
	struct session *s = data;
	(void)w, (void)events;
	log_debug("session %llu: its process (pid %d) exited; ending it (a process it forked "
		  "may still hold the socket)", (unsigned long long)s->id, (int)s->pid);
	session_close(s);
}

/* A READY lost to the client's full socket: one OVERFLOW queued (docs/protocol.md §9.4) */
static void overflowed(struct session *s)
{
	atomic_store(&s->sink->overflow, false);
	if (s->overflow_queued)
		return;
	struct garuda_msg m;
	readiness_overflow_msg(&m);
	s->overflow_queued = true;
	session_send(s, &m, -1);
	if (!s->out_head) /* it went out directly */
		s->overflow_queued = false;
}

/* Its bound eventfd would block a scanner: the session ends, once */
static void offended(struct session *s, int code)
{
	if (!s->lingering && !s->closed)
		fail_session(s, 0, code, "bound eventfd would block the daemon");
}

void session_handle_notices(struct daemon *d)
{
	struct notice *n;
	bool lost;
	/* n is the queue's until the next take or reserve: nothing here posts a command
	 * that owes an answer (only requests do) */
	unsigned k = notice_take(&d->notices, &n, &lost);
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
			overflowed(s);
			break;
		case NOTICE_OFFENDER:
			offended(s, n[i].code);
			break;
		case NOTICE_RESUME:
			resume_reading(s);
			break;
		case NOTICE_RELEASE:
			break;
		}
	}
	if (!lost)
		return;
	/* notices were dropped (out of memory): what an OVERFLOW or OFFENDER said is in
	 * the sinks' flags */
	log_warning("notices lost (out of memory): looking at every session's overflow and eventfds");
	for (struct session *s = d->sessions, *next; s; s = next) {
		next = s->next;
		if (s->lingering || s->closed)
			continue;
		if (atomic_load_explicit(&s->sink->eventfd_broken, memory_order_relaxed))
			offended(s, -GARUDA_E_BAD_FD);
		else if (atomic_load(&s->sink->overflow))
			overflowed(s);
		if (!s->w_in && !atomic_load(&s->sink->paused)) /* a lost RESUME */
			resume_reading(s);
	}
}
