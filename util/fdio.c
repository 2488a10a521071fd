/* fdio.c — sendmsg/recvmsg/recvmmsg with SCM_RIGHTS; see fdio.h. */
#include "fdio.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The most fds one datagram can carry (the kernel's SCM_MAX_FD). */
#define FDIO_KERNEL_MAX_FDS 253

/* room for every fd one message can carry and its send time, aligned for cmsghdr: a
 * message whose fds do not fit is cut short (MSG_CTRUNC), and the kernel closes the
 * fds it cut on this thread, on the way out of recvmsg, bypassing the hook below */
typedef union {
	struct cmsghdr align;
	char buf[CMSG_SPACE(sizeof(int) * FDIO_KERNEL_MAX_FDS) + CMSG_SPACE(sizeof(struct timespec))];
} fdio_control;

typedef void (*fdio_closer_fn)(int fd);
static _Atomic(fdio_closer_fn) peer_closer; /* NULL: close() */

void fdio_set_closer(void (*close_fn)(int fd))
{
	atomic_store_explicit(&peer_closer, close_fn, memory_order_release);
}

/* Close an fd a peer sent that nobody took: through the hook */
static void close_peer_fd(int fd)
{
	fdio_closer_fn f = atomic_load_explicit(&peer_closer, memory_order_acquire);
	if (f)
		f(fd);
	else
		close(fd);
}

static void close_peer_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close_peer_fd(fds[i]);
		fds[i] = -1;
	}
}

ssize_t fdio_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfds, int flags)
{
	fdio_control control;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > FDIO_MAX_FDS)
		return -EINVAL;
	if (nfds) {
		memset(&control, 0, sizeof(control));
		mh.msg_control = control.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	ssize_t n;
	do
		n = sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

int fdio_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	if (n >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, n + 1);
	/* non-blocking for the connect alone: a listener whose backlog is full (a stopped
	 * or hung garudad) makes a blocking connect() wait until it accepts, maybe never;
	 * an AF_UNIX connect completes or fails at once, EAGAIN for that full backlog */
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int r;
	do
		r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	while (r < 0 && errno == EINTR);
	if (r == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		r = -1;
	if (r < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

void fdio_close_all(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

void fdio_discard(int sock)
{
	/* a 1-byte buffer: every longer datagram is consumed whole and reported
	 * -EMSGSIZE, its fds closed by take_fds(); at most the socket's receive buffer */
	for (unsigned i = 0; i < 1u << 16; i++) {
		unsigned char b;
		int fds[FDIO_MAX_FDS];
		unsigned n = 0;
		ssize_t r = fdio_recv(sock, &b, 1, fds, FDIO_MAX_FDS, &n, MSG_DONTWAIT);
		if (r > 0)
			close_peer_fds(fds, n);
		else if (r != -EMSGSIZE && r != -EMFILE && r != -EINTR)
			return; /* drained (-EAGAIN), end of file, or the socket is gone */
	}
}

ssize_t fdio_recv(int sock, void *buf, size_t cap, int *fds, unsigned max_fds, unsigned *nfds,
		  int flags)
{
	size_t got;
	return fdio_recv_ex(sock, buf, cap, fds, max_fds, nfds, flags, &got);
}

/* This process cannot open one more fd (the kernel cuts a message's fds short then too,
 * with MSG_CTRUNC, as when more come than the control buffer holds) */
static bool out_of_fds(int sock)
{
	int t = fcntl(sock, F_DUPFD_CLOEXEC, 0);
	if (t >= 0) {
		close(t);
		return false;
	}
	return errno == EMFILE || errno == ENFILE;
}

/* The fds of one received message: every fd the kernel passed is put in fds (at most
 * max) or closed. -EMSGSIZE (all closed) when the datagram or its fds were cut short or
 * more than max came, -EMFILE (all closed) when they were cut short because this
 * process is out of fds; else how many. */
static int take_fds(int sock, struct msghdr *mh, int *fds, unsigned max)
{
	int got[FDIO_MAX_FDS];
	unsigned ngot = 0;
	bool over = false; /* more than FDIO_MAX_FDS came (the control buffer has room for
			    * every fd a message can carry) */
	/* collect every fd first, whatever else is wrong, so none can leak */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (ngot < FDIO_MAX_FDS) {
				got[ngot++] = fd;
			} else {
				close_peer_fd(fd);
				over = true;
			}
		}
	}
	if ((mh->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || over || ngot > max) {
		close_peer_fds(got, ngot);
		if ((mh->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == MSG_CTRUNC && !over && ngot <= max &&
		    out_of_fds(sock))
			return -EMFILE;
		return -EMSGSIZE;
	}
	memcpy(fds, got, sizeof(int) * ngot);
	return (int)ngot;
}

ssize_t fdio_recv_ex(int sock, void *buf, size_t cap, int *fds, unsigned max_fds, unsigned *nfds,
		     int flags, size_t *got_len)
{
	fdio_control control;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};

	*nfds = 0;
	*got_len = 0;
	ssize_t n;
	do
		n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*got_len = (size_t)n < cap ? (size_t)n : cap;
	int k = take_fds(sock, &mh, fds, max_fds);
	if (k < 0)
		return k;
	*nfds = (unsigned)k;
	return n;
}

int fdio_stamp_sends(int sock)
{
	int on = 1;
	return setsockopt(sock, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) < 0 ? -errno : 0;
}

uint64_t fdio_sent_mono_ns(uint64_t sent_ns, uint64_t now_real, uint64_t now_mono, uint64_t max_age_ns)
{
	if (!sent_ns || sent_ns >= now_real)
		return now_mono;
	uint64_t age = now_real - sent_ns;
	if (age > max_age_ns)
		age = max_age_ns;
	return age < now_mono ? now_mono - age : now_mono;
}

/* the message's SCM_TIMESTAMPNS as ns of CLOCK_REALTIME; 0 when it has none */
static uint64_t sent_of(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
			struct timespec t;
			memcpy(&t, CMSG_DATA(c), sizeof(t));
			return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
		}
	return 0;
}

int fdio_recv_many(int sock, struct fdio_dgram *d, unsigned n, int flags)
{
	if (n > FDIO_RECV_MANY_MAX)
		n = FDIO_RECV_MANY_MAX;
	fdio_control control[FDIO_RECV_MANY_MAX];
	struct iovec iov[FDIO_RECV_MANY_MAX];
	struct mmsghdr mm[FDIO_RECV_MANY_MAX];
	for (unsigned i = 0; i < n; i++) {
		iov[i] = (struct iovec){ .iov_base = d[i].buf, .iov_len = d[i].cap };
		mm[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i],
						      .msg_iovlen = 1,
						      .msg_control = control[i].buf,
						      .msg_controllen = sizeof(control[i].buf) } };
	}
	int got;
	do
		got = recvmmsg(sock, mm, n, flags | MSG_CMSG_CLOEXEC, NULL);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	for (int i = 0; i < got; i++) {
		size_t len = mm[i].msg_len;
		d[i].got = len < d[i].cap ? len : d[i].cap;
		int k = take_fds(sock, &mm[i].msg_hdr, d[i].fds, d[i].max_fds);
		d[i].nfds = k < 0 ? 0 : (unsigned)k;
		d[i].n = k < 0 ? k : (ssize_t)len;
		d[i].sent_ns = sent_of(&mm[i].msg_hdr);
	}
	return got;
}

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

int fdio_sealed_memfd(const char *name, size_t bytes)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
	if (fd < 0 && errno == EINVAL) /* a kernel before 6.3 */
		fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)bytes) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	return fd;
}
