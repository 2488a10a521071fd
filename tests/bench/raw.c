/* raw.c — see raw.h. */
#include "raw.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench.h"
#include "fdio.h"

#define SEND_BATCH 64 /* datagrams per sendmmsg / recvmmsg */

static int send_msg(struct rc *c, struct garuda_msg *m, int fd)
{
	uint8_t buf[GARUDA_MSG_MAX];
	m->nfds = fd >= 0 ? 1 : 0;
	ssize_t len = garuda_msg_encode(m, buf, sizeof(buf));
	if (len < 0)
		return (int)len;
	for (;;) {
		ssize_t r = fdio_send(c->fd, buf, (size_t)len, &fd, fd >= 0 ? 1 : 0, 0);
		if (r == -EINTR)
			continue;
		return r < 0 ? (int)r : 0;
	}
}

int rc_recv(struct rc *c, struct garuda_msg *m, int timeout_ms)
{
	uint8_t buf[GARUDA_MSG_MAX];
	int fds[FDIO_MAX_FDS];
	unsigned nfds = 0;
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	int pr;
	while ((pr = poll(&p, 1, timeout_ms < 0 ? BENCH_HANG_MS : timeout_ms)) < 0 && errno == EINTR)
		;
	if (pr == 0)
		return -ETIMEDOUT;
	ssize_t n = fdio_recv(c->fd, buf, sizeof(buf), fds, FDIO_MAX_FDS, &nfds, 0);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return (int)n;
	int r = garuda_msg_decode(buf, (size_t)n, nfds, m);
	fdio_close_all(fds, nfds);
	return r ? -EBADMSG : 0;
}

/* Send a request and wait for the message that answers its cookie; READY messages in
 * between are ignored (setup requests are made before anything is armed). The fd that
 * comes with the answer (SEGMENT) goes to *fd_out. */
static int request(struct rc *c, struct garuda_msg *m, int fd, struct garuda_msg *ans, int *fd_out)
{
	m->cookie = ++c->cookie;
	int r = send_msg(c, m, fd);
	if (r < 0)
		return r;
	for (;;) {
		uint8_t buf[GARUDA_MSG_MAX];
		int fds[FDIO_MAX_FDS];
		unsigned nfds = 0;
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		if (poll(&p, 1, BENCH_HANG_MS) <= 0)
			return -ETIMEDOUT;
		ssize_t n = fdio_recv(c->fd, buf, sizeof(buf), fds, FDIO_MAX_FDS, &nfds, 0);
		if (n == 0)
			return -EPIPE;
		if (n < 0)
			return (int)n;
		if (garuda_msg_decode(buf, (size_t)n, nfds, ans)) {
			fdio_close_all(fds, nfds);
			return -EBADMSG;
		}
		if (ans->cookie != m->cookie || ans->type == GARUDA_MSG_READY) {
			fdio_close_all(fds, nfds);
			continue;
		}
		if (ans->type == GARUDA_MSG_ERROR) {
			fdio_close_all(fds, nfds);
			return ans->error.code > 0 ? ans->error.code : -EPROTO;
		}
		if (fd_out && nfds) {
			*fd_out = fds[0];
			fds[0] = -1;
		}
		fdio_close_all(fds, nfds);
		return 0;
	}
}

int rc_connect(struct rc *c, const char *path)
{
	return rc_connect_features(c, path, 0);
}

int rc_connect_features(struct rc *c, const char *path, uint32_t features)
{
	memset(c, 0, sizeof(*c));
	c->fd = fdio_connect(path);
	if (c->fd < 0) {
		int e = c->fd;
		c->fd = -1;
		return e;
	}
	struct garuda_msg m, ans;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 0);
	m.hello.version = GARUDA_PROTO_VERSION;
	m.hello.features = features;
	int r = request(c, &m, -1, &ans, NULL);
	if (r == 0 && ans.type != GARUDA_MSG_WELCOME)
		r = -EPROTO;
	if (r) {
		close(c->fd);
		c->fd = -1;
		return r;
	}
	c->session = ans.welcome.session_id;
	c->features = ans.welcome.features;
	return 0;
}

void rc_close(struct rc *c)
{
	if (c->map)
		munmap(c->map, c->map_bytes);
	c->map = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

int rc_segment_open(struct rc *c, uint32_t lines, bool map, int *keep_fd)
{
	struct garuda_msg m, ans;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, 0);
	m.segment_open.lines = lines;
	m.segment_open.numa_node = -1;
	int memfd = -1;
	int r = request(c, &m, -1, &ans, &memfd);
	if (r)
		return r;
	if (ans.type != GARUDA_MSG_SEGMENT || memfd < 0) {
		if (memfd >= 0)
			close(memfd);
		return -EPROTO;
	}
	c->seg_id = ans.segment.segment_id;
	c->lines = ans.segment.lines;
	c->map_bytes = (size_t)ans.segment.bytes;
	if (map) {
		void *p = mmap(NULL, c->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
		if (p == MAP_FAILED) {
			r = -errno;
			close(memfd);
			return r;
		}
		c->map = p;
	}
	if (keep_fd)
		*keep_fd = memfd;
	else
		close(memfd);
	return 0;
}

int rc_bind(struct rc *c, uint32_t index, int efd)
{
	struct garuda_msg m, ans;
	garuda_msg_init(&m, GARUDA_MSG_BIND, 0);
	m.bind.slot.segment = c->seg_id;
	m.bind.slot.index = index;
	int r = request(c, &m, efd, &ans, NULL);
	if (r == 0 && ans.type != GARUDA_MSG_ACK)
		r = -EPROTO;
	return r;
}

static void arm_msg(struct rc *c, struct garuda_msg *m, uint32_t index, uint64_t target, uint64_t token,
		    uint8_t form)
{
	garuda_msg_init(m, GARUDA_MSG_ARM, 0);
	m->arm.slot.segment = c->seg_id;
	m->arm.slot.index = index;
	m->arm.target = target;
	m->arm.token = token;
	m->arm.form = form;
}

int rc_arm(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form)
{
	struct garuda_msg m;
	arm_msg(c, &m, index, target, token, form);
	m.flags = GARUDA_F_NOREPLY;
	return send_msg(c, &m, -1);
}

int rc_arm_point(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form,
		 uint32_t point)
{
	struct garuda_msg m;
	arm_msg(c, &m, index, target, token, form);
	m.arm.point = point;
	m.flags = GARUDA_F_NOREPLY;
	return send_msg(c, &m, -1);
}

int rc_arm_acked(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form)
{
	struct garuda_msg m, ans;
	arm_msg(c, &m, index, target, token, form);
	int r = request(c, &m, -1, &ans, NULL);
	if (r == 0 && ans.type != GARUDA_MSG_ACK)
		r = -EPROTO;
	return r;
}

/* Send mm[0..k) in order, blocking while the socket is full. */
static int send_all(struct rc *c, struct mmsghdr *mm, unsigned k)
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

int rc_arm_many(struct rc *c, const struct rc_arm_req *reqs, unsigned n)
{
	uint8_t bufs[SEND_BATCH][64];
	struct iovec iov[SEND_BATCH];
	struct mmsghdr mm[SEND_BATCH];
	for (unsigned done = 0; done < n;) {
		unsigned k = n - done < SEND_BATCH ? n - done : SEND_BATCH;
		for (unsigned i = 0; i < k; i++) {
			const struct rc_arm_req *q = &reqs[done + i];
			struct garuda_msg m;
			arm_msg(c, &m, q->index, q->target, q->token, q->form);
			m.flags = GARUDA_F_NOREPLY;
			ssize_t len = garuda_msg_encode(&m, bufs[i], sizeof(bufs[i]));
			if (len < 0)
				return (int)len;
			iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = (size_t)len };
			mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
		}
		int r = send_all(c, mm, k);
		if (r < 0)
			return r;
		done += k;
	}
	return (int)n;
}

int rc_arm_batched(struct rc *c, const struct rc_arm_req *reqs, unsigned n)
{
	static _Thread_local uint8_t bufs[SEND_BATCH][GARUDA_MSG_MAX];
	struct iovec iov[SEND_BATCH];
	struct mmsghdr mm[SEND_BATCH];
	for (unsigned done = 0; done < n;) {
		unsigned k = 0;
		while (k < SEND_BATCH && done < n) {
			unsigned take = n - done < GARUDA_BATCH_MAX ? n - done : GARUDA_BATCH_MAX;
			struct garuda_msg m;
			if (take == 1) {
				const struct rc_arm_req *q = &reqs[done];
				arm_msg(c, &m, q->index, q->target, q->token, q->form);
			} else {
				garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 0);
				m.arm_batch.count = take;
				for (unsigned i = 0; i < take; i++) {
					const struct rc_arm_req *q = &reqs[done + i];
					m.arm_batch.arm[i] = (struct garuda_arm){ .slot = { c->seg_id, q->index },
										  .target = q->target,
										  .token = q->token,
										  .form = q->form };
				}
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

int rc_recv_ready(struct rc *c, struct garuda_ready *out, unsigned max, unsigned *datagrams)
{
	enum { B = SEND_BATCH };
	static _Thread_local uint8_t bufs[B][GARUDA_MSG_MAX];
	struct iovec iov[B];
	struct mmsghdr mm[B];
	/* the most records one datagram may bring on this session */
	unsigned per = c->features & GARUDA_FEATURE_READY_BATCH ? GARUDA_BATCH_MAX : 1;
	unsigned got = 0, dgrams = 0;
	if (datagrams)
		*datagrams = 0;
	if (max < per)
		return -EINVAL;
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
		if (r == 0)
			return got ? (int)got : -EPIPE;
		for (int i = 0; i < r; i++) {
			struct garuda_msg m;
			if (mm[i].msg_len == 0)
				return got ? (int)got : -EPIPE;
			if (garuda_msg_decode(bufs[i], mm[i].msg_len, 0, &m))
				return -EBADMSG;
			if (m.type == GARUDA_MSG_READY) {
				out[got++] = m.ready;
			} else if (m.type == GARUDA_MSG_READY_BATCH && per > 1) {
				memcpy(out + got, m.ready_batch.ready, m.ready_batch.count * sizeof(*out));
				got += m.ready_batch.count;
			} else {
				fprintf(stderr, "garuda-bench: unexpected %s (code %d: %s)\n",
					garuda_msg_type_name(m.type), m.type == GARUDA_MSG_ERROR ? m.error.code : 0,
					m.type == GARUDA_MSG_ERROR ? m.error.text : "");
				return -EPROTO;
			}
			dgrams++;
			if (datagrams)
				*datagrams = dgrams;
		}
		if ((unsigned)r < k)
			break;
	}
	return (int)got;
}
