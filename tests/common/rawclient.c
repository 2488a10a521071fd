/* rawclient.c — the tests' raw-protocol client; see rawclient.h. */
#include "rawclient.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "fdio.h"

/* ------------------------------------------------------------------ time ---- */

uint64_t gd_deadline(int ms)
{
	return garuda_now_ns() + (uint64_t)ms * 1000000ull;
}

int gd_left_ms(uint64_t deadline)
{
	uint64_t now = garuda_now_ns();
	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > 1000000 ? 1000000 : (int)ms;
}

void gd_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* poll one fd for POLLIN: 1 readable (or hung up), 0 timeout, -errno */
int gd_wait_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		int r = poll(&p, 1, timeout_ms < 0 ? -1 : gd_left_ms(dl));
		if (r >= 0)
			return r;
		if (errno != EINTR)
			return -errno;
	}
}

long gd_blocked_in(pid_t tid, uint64_t *arg0)
{
	char path[64], buf[256];
	/* /proc/TID: any thread this process may inspect, its own or another's */
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	long nr = -1;
	/* "NR ARG0 ... ARG5 SP PC" while blocked in a call; "running" or "-1 SP PC" else */
	if (fgets(buf, sizeof(buf), f)) {
		char *end;
		nr = strtol(buf, &end, 10);
		if (end == buf)
			nr = -1;
		else if (arg0)
			*arg0 = strtoull(end, NULL, 16);
	}
	fclose(f);
	return nr;
}

bool gd_wait_blocked_in(pid_t tid, long nr, const void *arg0)
{
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	for (;;) {
		uint64_t a = 0;
		long in = gd_blocked_in(tid, &a);
		/* a handled signal (the test runner's, SA_RESTART) restarts a timed wait as
		 * restart_syscall, the same call with the same arguments */
		if ((in == nr || in == SYS_restart_syscall) && (!arg0 || a == (uint64_t)(uintptr_t)arg0))
			return true;
		if (gd_left_ms(dl) == 0)
			return false;
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
}

/* ----------------------------------------------------------------- client ---- */

const char *gd_strerr(int r)
{
	static __thread char buf[96];
	if (r == 0)
		return "ok";
	if (r > 0) {
		const char *n = garuda_errcode_name(r);
		snprintf(buf, sizeof(buf), "ERROR{%s (%d)}", n ? n : "unregistered code", r);
		return buf;
	}
	switch (-r) {
	case EPIPE:
		return "daemon closed the connection";
	case ETIMEDOUT:
		return "no answer within the deadline";
	case EBADMSG:
		return "daemon sent an undecodable datagram";
	case EPROTO:
		return "unexpected reply type";
	default:
		snprintf(buf, sizeof(buf), "%s", strerror(-r));
		return buf;
	}
}

int gd_connect(struct gd_client *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->fd = fdio_connect(path);
	if (c->fd < 0) {
		int e = c->fd;
		c->fd = -1;
		return e;
	}
	return 0;
}

int gd_hello(struct gd_client *c)
{
	return gd_hello_features(c, 0);
}

int gd_hello_features(struct gd_client *c, uint32_t features)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 0);
	m.hello.features = features;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	if (r)
		return r;
	if (rep.type != GARUDA_MSG_WELCOME)
		return -EPROTO;
	c->welcome = rep.welcome;
	return 0;
}

int gd_open(struct gd_client *c, const char *path)
{
	return gd_open_features(c, path, 0);
}

int gd_open_features(struct gd_client *c, const char *path, uint32_t features)
{
	int r = gd_connect(c, path);
	if (r)
		return r;
	r = gd_hello_features(c, features);
	if (r)
		gd_close(c);
	return r;
}

/* the keepers' pipe ends this process holds (a test's clients: a few) */
#define GD_KEEPERS_MAX 256
static int keepers[GD_KEEPERS_MAX];
static unsigned nkeepers;

void gd_keeper_set(struct gd_client *c, pid_t pid, int fd)
{
	c->keeper_pid = pid;
	c->keeper_fd = fd;
	if (nkeepers < GD_KEEPERS_MAX)
		keepers[nkeepers++] = fd;
}

void gd_keepers_close_inherited(void)
{
	for (unsigned i = 0; i < nkeepers; i++)
		close(keepers[i]);
	nkeepers = 0;
}

void gd_keeper_end(struct gd_client *c)
{
	if (c->keeper_pid <= 0)
		return;
	for (unsigned i = 0; i < nkeepers; i++)
		if (keepers[i] == c->keeper_fd) {
			keepers[i] = keepers[--nkeepers];
			break;
		}
	close(c->keeper_fd);
	while (waitpid(c->keeper_pid, NULL, 0) < 0 && errno == EINTR)
		;
	c->keeper_pid = 0;
}

void gd_close(struct gd_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	gd_keeper_end(c);
	free(c->q);
	c->q = NULL;
	c->qhead = c->qlen = c->qcap = 0;
}

int gd_send_raw(struct gd_client *c, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	ssize_t n = fdio_send(c->fd, buf, len, fds, nfds, 0);
	if (n == -EPIPE || n == -ECONNRESET)
		return -EPIPE;
	if (n < 0)
		return (int)n;
	return n == (ssize_t)len ? 0 : -EIO;
}

int gd_send(struct gd_client *c, const struct garuda_msg *m, const int *fds, unsigned nfds)
{
	uint8_t buf[GARUDA_MSG_MAX];
	struct garuda_msg copy = *m;
	copy.nfds = (uint16_t)nfds;
	ssize_t len = garuda_msg_encode(&copy, buf, sizeof(buf));
	if (len < 0)
		return -EINVAL;
	return gd_send_raw(c, buf, (size_t)len, fds, nfds);
}

static int queue_push(struct gd_client *c, const struct garuda_msg *m)
{
	if (c->qhead + c->qlen == c->qcap) {
		if (c->qhead > 0) {
			memmove(c->q, c->q + c->qhead, c->qlen * sizeof(*c->q));
			c->qhead = 0;
		} else {
			size_t cap = c->qcap ? c->qcap * 2 : 64;
			struct gd_rx *q = realloc(c->q, cap * sizeof(*q));
			if (!q)
				return -ENOMEM;
			c->q = q;
			c->qcap = cap;
		}
	}
	c->q[c->qhead + c->qlen++].m = *m;
	return 0;
}

/* one datagram from the socket */
static int recv_sock(struct gd_client *c, struct garuda_msg *m, int *fd, int timeout_ms)
{
	if (fd)
		*fd = -1;
	if (c->eof)
		return -EPIPE;
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		int r = gd_wait_in(c->fd, gd_left_ms(dl));
		if (r < 0)
			return r;
		if (r == 0)
			return 0;
		uint8_t buf[GARUDA_MSG_MAX + 64];
		int fds[FDIO_MAX_FDS];
		unsigned n = 0;
		ssize_t len = fdio_recv(c->fd, buf, sizeof(buf), fds, FDIO_MAX_FDS, &n, MSG_DONTWAIT);
		if (len == -EAGAIN)
			continue;
		if (len == 0 || len == -ECONNRESET || len == -EPIPE) {
			c->eof = true;
			return -EPIPE;
		}
		if (len < 0)
			return (int)len;
		int err = garuda_msg_decode(buf, (size_t)len, n, m);
		if (err) {
			fdio_close_all(fds, n);
			return -EBADMSG;
		}
		for (unsigned i = 0; i < n; i++) {
			if (i == 0 && fd)
				*fd = fds[0];
			else
				close(fds[i]);
		}
		return 1;
	}
}

int gd_recv(struct gd_client *c, struct garuda_msg *m, int *fd, int timeout_ms)
{
	if (c->qlen) {
		*m = c->q[c->qhead].m;
		c->qhead++;
		c->qlen--;
		if (fd)
			*fd = -1;
		return 1;
	}
	return recv_sock(c, m, fd, timeout_ms);
}

int gd_await(struct gd_client *c, uint64_t cookie, struct garuda_msg *reply, int *fd)
{
	/* an earlier NOREPLY request's ERROR may already be queued under this cookie */
	for (size_t i = 0; i < c->qlen; i++) {
		struct garuda_msg *q = &c->q[c->qhead + i].m;
		if (q->cookie == cookie && q->type != GARUDA_MSG_READY) {
			*reply = *q;
			memmove(q, q + 1, (c->qlen - i - 1) * sizeof(*c->q));
			c->qlen--;
			if (fd)
				*fd = -1;
			return reply->type == GARUDA_MSG_ERROR ? reply->error.code : 0;
		}
	}
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	for (;;) {
		struct garuda_msg m;
		int rfd = -1;
		int r = recv_sock(c, &m, &rfd, gd_left_ms(dl));
		if (r < 0)
			return r;
		if (r == 0)
			return -ETIMEDOUT;
		if (m.cookie == cookie && m.type != GARUDA_MSG_READY) {
			*reply = m;
			if (fd)
				*fd = rfd;
			else if (rfd >= 0)
				close(rfd);
			return m.type == GARUDA_MSG_ERROR ? m.error.code : 0;
		}
		if (rfd >= 0)
			close(rfd);
		r = queue_push(c, &m);
		if (r)
			return r;
	}
}

int gd_request(struct gd_client *c, struct garuda_msg *m, const int *fds, unsigned nfds,
	       struct garuda_msg *reply, int *reply_fd)
{
	struct garuda_msg dummy;
	if (reply_fd)
		*reply_fd = -1;
	m->cookie = ++c->cookie;
	int r = gd_send(c, m, fds, nfds);
	if (r)
		return r;
	if (m->flags & GARUDA_F_NOREPLY)
		return 0;
	return gd_await(c, m->cookie, reply ? reply : &dummy, reply_fd);
}

static int expect_ack(int r, const struct garuda_msg *rep)
{
	if (r)
		return r;
	return rep->type == GARUDA_MSG_ACK ? 0 : -EPROTO;
}

int gd_segment_open(struct gd_client *c, uint32_t lines, int32_t numa, struct gd_seg *s)
{
	struct garuda_msg m, rep;
	int fd = -1;
	memset(s, 0, sizeof(*s));
	s->memfd = -1;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, 0);
	m.segment_open.lines = lines;
	m.segment_open.numa_node = numa;
	int r = gd_request(c, &m, NULL, 0, &rep, &fd);
	if (r)
		return r;
	if (rep.type != GARUDA_MSG_SEGMENT || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < rep.segment.bytes) {
		close(fd);
		return -EPROTO;
	}
	void *p = mmap(NULL, rep.segment.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	s->id = rep.segment.segment_id;
	s->lines = rep.segment.lines;
	s->bytes = rep.segment.bytes;
	s->numa_node = rep.segment.numa_node;
	s->memfd = fd;
	s->map = p;
	return 0;
}

int gd_segment_close(struct gd_client *c, uint32_t id)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, 0);
	m.segment_close.segment_id = id;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	return expect_ack(r, &rep);
}

void gd_seg_unmap(struct gd_seg *s)
{
	if (s->map)
		munmap(s->map, s->bytes);
	s->map = NULL;
	if (s->memfd >= 0)
		close(s->memfd);
	s->memfd = -1;
}

int gd_bind(struct gd_client *c, struct garuda_slot slot, int efd)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_BIND, 0);
	m.bind.slot = slot;
	int r = gd_request(c, &m, &efd, 1, &rep, NULL);
	return expect_ack(r, &rep);
}

int gd_bind_new(struct gd_client *c, struct garuda_slot slot, int *efd)
{
	*efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (*efd < 0)
		return -errno;
	int r = gd_bind(c, slot, *efd);
	if (r) {
		close(*efd);
		*efd = -1;
	}
	return r;
}

int gd_unbind(struct gd_client *c, struct garuda_slot slot)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_UNBIND, 0);
	m.bind.slot = slot;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	return expect_ack(r, &rep);
}

int gd_arm_flags(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
		 uint8_t form, uint16_t flags)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.flags = flags;
	m.arm.slot = slot;
	m.arm.target = target;
	m.arm.token = token;
	m.arm.form = form;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	if (flags & GARUDA_F_NOREPLY)
		return r;
	return expect_ack(r, &rep);
}

int gd_arm(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
	   uint8_t form)
{
	return gd_arm_flags(c, slot, target, token, form, 0);
}

int gd_disarm(struct gd_client *c, struct garuda_slot slot, uint64_t token)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
	m.disarm.slot = slot;
	m.disarm.token = token;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	return expect_ack(r, &rep);
}

int gd_wait_ready(struct gd_client *c, struct garuda_ready *rd, int timeout_ms)
{
	struct garuda_msg m;
	int r = gd_recv(c, &m, NULL, timeout_ms);
	if (r <= 0)
		return r;
	if (m.type == GARUDA_MSG_READY) {
		*rd = m.ready;
		return 1;
	}
	if (m.type == GARUDA_MSG_ERROR)
		return m.error.code;
	return -EPROTO;
}

int gd_quiet(struct gd_client *c, int ms, struct garuda_msg *m)
{
	struct garuda_msg tmp;
	int r = gd_recv(c, m ? m : &tmp, NULL, ms);
	return r == 0 ? 0 : 1;
}

long long gd_eventfd_read(int efd, int timeout_ms)
{
	/* poll first: the eventfd may be a blocking one */
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		int r = gd_wait_in(efd, gd_left_ms(dl));
		if (r < 0)
			return r;
		if (r == 0)
			return 0;
		uint64_t v;
		ssize_t n = read(efd, &v, sizeof(v));
		if (n == sizeof(v))
			return (long long)v;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
	}
}

int gd_doorbell_wait(struct gd_seg *s, uint32_t old, uint32_t *now, int timeout_ms)
{
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		uint32_t v = gd_doorbell(s);
		if (v != old) {
			if (now)
				*now = v;
			return 1;
		}
		int left = gd_left_ms(dl);
		if (left == 0)
			return 0;
		/* bounded waits: a daemon that bumps without waking is caught by the
		 * dedicated wake test, not here */
		if (left > 100)
			left = 100;
		struct timespec ts = { .tv_sec = left / 1000, .tv_nsec = (long)(left % 1000) * 1000000L };
		syscall(SYS_futex, &s->map->hdr.doorbell, FUTEX_WAIT, old, &ts, NULL, 0);
	}
}

/* ---------------------------------------------------------------- bulk ---- */

#define SEND_BATCH 64 /* datagrams per sendmmsg / recvmmsg */

static void arm_record(struct garuda_arm *a, uint32_t seg, const struct gd_arm_req *q)
{
	*a = (struct garuda_arm){ .slot = { .segment = seg, .index = q->index },
				  .target = q->target,
				  .token = q->token,
				  .form = q->form };
}

/* Send mm[0..k) in order, blocking while the socket is full. */
static int send_all(struct gd_client *c, struct mmsghdr *mm, unsigned k)
{
	unsigned sent = 0;
	while (sent < k) {
		int r = sendmmsg(c->fd, mm + sent, k - sent, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		sent += (unsigned)r;
	}
	return 0;
}

/* Encode NOREPLY ARMs of reqs[0..n) into sendmmsg batches: each datagram carries up
 * to per records (1: plain ARMs; GARUDA_BATCH_MAX: ARM_BATCH, a lone record as ARM). */
static int arm_send(struct gd_client *c, uint32_t seg, const struct gd_arm_req *reqs, unsigned n,
		    unsigned per)
{
	static _Thread_local uint8_t bufs[SEND_BATCH][GARUDA_MSG_MAX];
	struct iovec iov[SEND_BATCH];
	struct mmsghdr mm[SEND_BATCH];
	for (unsigned done = 0; done < n;) {
		unsigned k = 0;
		while (k < SEND_BATCH && done < n) {
			unsigned take = n - done < per ? n - done : per;
			struct garuda_msg m;
			if (take == 1) {
				garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
				arm_record(&m.arm, seg, &reqs[done]);
			} else {
				garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 0);
				m.arm_batch.count = take;
				for (unsigned i = 0; i < take; i++)
					arm_record(&m.arm_batch.arm[i], seg, &reqs[done + i]);
			}
			m.flags = GARUDA_F_NOREPLY;
			ssize_t len = garuda_msg_encode(&m, bufs[k], sizeof(bufs[k]));
			if (len < 0)
				return (int)len;
			iov[k] = (struct iovec){ .iov_base = bufs[k], .iov_len = (size_t)len };
			mm[k] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[k], .msg_iovlen = 1 } };
			k++;
			done += take;
		}
		int r = send_all(c, mm, k);
		if (r < 0)
			return r;
	}
	return (int)n;
}

int gd_arm_many(struct gd_client *c, uint32_t seg, const struct gd_arm_req *reqs, unsigned n)
{
	return arm_send(c, seg, reqs, n, 1);
}

int gd_arm_batched(struct gd_client *c, uint32_t seg, const struct gd_arm_req *reqs, unsigned n)
{
	return arm_send(c, seg, reqs, n, GARUDA_BATCH_MAX);
}

/* store one READY or READY_BATCH in out[*got..]; -EPROTO for anything else */
static int take_ready(const struct garuda_msg *m, unsigned per, struct garuda_ready *out,
		      unsigned *got)
{
	if (m->type == GARUDA_MSG_READY) {
		out[(*got)++] = m->ready;
		return 0;
	}
	if (m->type == GARUDA_MSG_READY_BATCH && per > 1) {
		memcpy(out + *got, m->ready_batch.ready, m->ready_batch.count * sizeof(*out));
		*got += m->ready_batch.count;
		return 0;
	}
	fprintf(stderr, "rawclient: unexpected %s (code %d: %s)\n", garuda_msg_type_name(m->type),
		m->type == GARUDA_MSG_ERROR ? m->error.code : 0,
		m->type == GARUDA_MSG_ERROR ? m->error.text : "");
	return -EPROTO;
}

int gd_recv_ready(struct gd_client *c, struct garuda_ready *out, unsigned max, unsigned *datagrams)
{
	enum { B = SEND_BATCH };
	static _Thread_local uint8_t bufs[B][GARUDA_MSG_MAX];
	struct iovec iov[B];
	struct mmsghdr mm[B];
	/* the most records one datagram may bring on this session */
	unsigned per = c->welcome.features & GARUDA_FEATURE_READY_BATCH ? GARUDA_BATCH_MAX : 1;
	unsigned got = 0, dgrams = 0;
	if (datagrams)
		*datagrams = 0;
	if (max < per)
		return -EINVAL;
	/* what arrived while a request waited for its reply comes first */
	while (c->qlen && (max - got) / per > 0) {
		struct garuda_msg *m = &c->q[c->qhead].m;
		int r = take_ready(m, per, out, &got);
		if (r < 0)
			return r;
		c->qhead++;
		c->qlen--;
		if (datagrams)
			*datagrams = ++dgrams;
	}
	if (c->eof)
		return got ? (int)got : -EPIPE;
	while ((max - got) / per > 0) {
		unsigned k = (max - got) / per < B ? (max - got) / per : B;
		for (unsigned i = 0; i < k; i++) {
			iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = sizeof(bufs[i]) };
			mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
		}
		int r = recvmmsg(c->fd, mm, k, MSG_DONTWAIT, NULL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return (errno == EAGAIN || errno == EWOULDBLOCK) ? (int)got : -errno;
		if (r == 0) {
			c->eof = true;
			return got ? (int)got : -EPIPE;
		}
		for (int i = 0; i < r; i++) {
			struct garuda_msg m;
			if (mm[i].msg_len == 0) {
				c->eof = true;
				return got ? (int)got : -EPIPE;
			}
			if (garuda_msg_decode(bufs[i], mm[i].msg_len, 0, &m))
				return -EBADMSG;
			int e = take_ready(&m, per, out, &got);
			if (e < 0)
				return e;
			dgrams++;
			if (datagrams)
				*datagrams = dgrams;
		}
		if ((unsigned)r < k)
			break;
	}
	return (int)got;
}
