/* test_fdio.c — util/fdio over a socketpair(AF_UNIX, SOCK_SEQPACKET): datagrams with 0
 * and 1 fds keep their boundaries, received fds are CLOEXEC and refer to the sent
 * object, and every failure path (truncation, too many fds) closes what arrived. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fdcheck.h"
#include "fdio.h"

TestSuite(fdio, .init = fdcheck_begin, .fini = fdcheck_end);

static void pair(int sv[2])
{
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0, "%m");
}

static int open_fds(void)
{
	return fdcheck_count(0);
}

Test(fdio, datagram_without_fds)
{
	int sv[2];
	pair(sv);
	uint8_t out[32], in[64];
	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (uint8_t)(i * 7);
	cr_assert_eq(fdio_send(sv[0], out, sizeof(out), NULL, 0, 0), 32);
	cr_assert_eq(fdio_send(sv[0], out, 5, NULL, 0, 0), 5);
	int fds[FDIO_MAX_FDS] = { -1, -1, -1, -1 };
	unsigned n = 99;
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), 32, "one datagram at a time");
	cr_assert_eq(n, 0);
	cr_assert_arr_eq(in, out, 32);
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), 5);
	cr_assert_eq(n, 0);
	cr_assert_eq(fds[0], -1);
	close(sv[0]);
	close(sv[1]);
}

Test(fdio, datagram_with_one_fd)
{
	int sv[2];
	pair(sv);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cr_assert_geq(efd, 0);
	uint8_t msg[40] = { 1, 2, 3 }, in[64];
	cr_assert_eq(fdio_send(sv[0], msg, sizeof(msg), &efd, 1, 0), 40);
	int fds[1] = { -1 };
	unsigned n = 0;
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), 40);
	cr_assert_eq(n, 1);
	cr_assert_geq(fds[0], 0);
	cr_assert_neq(fds[0], efd, "a new descriptor");
	cr_assert_arr_eq(in, msg, 40);
	cr_assert(fcntl(fds[0], F_GETFD) & FD_CLOEXEC, "received fds are CLOEXEC");
	struct stat a, b;
	cr_assert_eq(fstat(efd, &a), 0);
	cr_assert_eq(fstat(fds[0], &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino);
	uint64_t one = 1, got = 0;
	cr_assert_eq(write(fds[0], &one, 8), 8);
	cr_assert_eq(read(efd, &got, 8), 8, "same eventfd");
	cr_assert_eq(got, 1);
	fdio_close_all(fds, 1);
	cr_assert_eq(fds[0], -1);
	close(efd);
	close(sv[0]);
	close(sv[1]);
}

Test(fdio, truncated_datagram_is_emsgsize_and_closes_its_fds)
{
	int sv[2];
	pair(sv);
	int efd = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(efd, 0);
	uint8_t big[600] = { 0 }, in[64];
	cr_assert_eq(fdio_send(sv[0], big, sizeof(big), &efd, 1, 0), 600);
	close(efd);
	int before = open_fds();
	int fds[1] = { -1 };
	unsigned n = 7;
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), -EMSGSIZE);
	cr_assert_eq(n, 0);
	cr_assert_eq(open_fds(), before, "the passed fd was closed");
	/* the rest of the datagram is gone: the next recv sees the next datagram */
	cr_assert_eq(fdio_send(sv[0], in, 3, NULL, 0, 0), 3);
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), 3);
	close(sv[0]);
	close(sv[1]);
}

Test(fdio, more_fds_than_wanted_is_emsgsize_and_closes_them)
{
	int sv[2];
	pair(sv);
	int e[2] = { eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC) };
	cr_assert_geq(e[0], 0);
	cr_assert_geq(e[1], 0);
	uint8_t msg[24] = { 0 }, in[64];
	cr_assert_eq(fdio_send(sv[0], msg, sizeof(msg), e, 2, 0), 24);
	cr_assert_eq(fdio_send(sv[0], msg, sizeof(msg), e, 1, 0), 24);
	close(e[0]);
	close(e[1]);
	int before = open_fds();
	int fds[1] = { -1 };
	unsigned n;
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), -EMSGSIZE);
	cr_assert_eq(n, 0);
	cr_assert_eq(open_fds(), before);
	/* a receiver that wants no fds: one fd is already too many */
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 0, &n, 0), -EMSGSIZE);
	cr_assert_eq(open_fds(), before);
	close(sv[0]);
	close(sv[1]);
}

/* More fds than FDIO_MAX_FDS that all fit the control buffer (no MSG_CTRUNC): refused
 * as any datagram with too many, all closed (they were cut to 4 and the rest closed,
 * and the call succeeded: FD_COUNT instead of protocol.md's TOO_LONG) */
Test(fdio, more_fds_than_the_cap_in_one_control_buffer_is_emsgsize)
{
	int sv[2];
	pair(sv);
	enum { N = FDIO_MAX_FDS + 2 };
	int e[N];
	for (int i = 0; i < N; i++)
		cr_assert_geq(e[i] = eventfd(0, EFD_CLOEXEC), 0);
	uint8_t msg[24] = { 0 }, in[64];
	union {
		char buf[CMSG_SPACE(sizeof(int) * N)];
		struct cmsghdr align;
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * N);
	memcpy(CMSG_DATA(c), e, sizeof(e));
	cr_assert_eq(sendmsg(sv[0], &mh, 0), (ssize_t)sizeof(msg));
	for (int i = 0; i < N; i++)
		close(e[i]);
	int before = open_fds();
	int fds[FDIO_MAX_FDS];
	unsigned n = 99;
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, FDIO_MAX_FDS, &n, 0), -EMSGSIZE);
	cr_assert_eq(n, 0);
	cr_assert_eq(open_fds(), before, "fds of a refused datagram left open");
	close(sv[0]);
	close(sv[1]);
}

Test(fdio, too_many_fds_to_send)
{
	int sv[2];
	pair(sv);
	int fds[FDIO_MAX_FDS + 1] = { 0 };
	uint8_t msg[24] = { 0 };
	cr_assert_eq(fdio_send(sv[0], msg, sizeof(msg), fds, FDIO_MAX_FDS + 1, 0), -EINVAL);
	close(sv[0]);
	close(sv[1]);
}

Test(fdio, eof_and_errors)
{
	int sv[2];
	pair(sv);
	uint8_t in[64];
	int fds[1];
	unsigned n;
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, MSG_DONTWAIT), -EAGAIN);
	close(sv[0]);
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), 0, "EOF");
	cr_assert_eq(fdio_send(sv[1], in, 8, NULL, 0, 0), -EPIPE, "no SIGPIPE, just -EPIPE");
	close(sv[1]);
	cr_assert_eq(fdio_recv(sv[1], in, sizeof(in), fds, 1, &n, 0), -EBADF);
}

/* fdio_recv_many (garudad's session input): several datagrams per call, each with its
 * own length, bytes and fds; a bad one among good ones is -EMSGSIZE with its fds
 * closed while the others keep theirs; an empty socket is -EAGAIN; EOF reads 0. */
Test(fdio, recv_many_keeps_each_datagram_and_its_fds)
{
	int sv[2];
	pair(sv);
	int e[2] = { eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC) };
	cr_assert_geq(e[0], 0);
	cr_assert_geq(e[1], 0);
	uint8_t msg[3][48];
	for (unsigned i = 0; i < 3; i++)
		memset(msg[i], 'a' + (int)i, sizeof(msg[i]));
	cr_assert_eq(fdio_send(sv[0], msg[0], 10, NULL, 0, 0), 10);
	cr_assert_eq(fdio_send(sv[0], msg[1], 20, e, 2, 0), 20, "two fds: one over max_fds");
	cr_assert_eq(fdio_send(sv[0], msg[2], 30, &e[1], 1, 0), 30);
	cr_assert_eq(fdio_send(sv[0], msg[0], 40, NULL, 0, 0), 40, "left for the next call");
	close(e[0]);
	int before = open_fds();
	uint8_t in[3][64];
	struct fdio_dgram g[3];
	for (unsigned i = 0; i < 3; i++)
		g[i] = (struct fdio_dgram){ .buf = in[i], .cap = sizeof(in[i]), .max_fds = 1 };
	cr_assert_eq(fdio_recv_many(sv[1], g, 3, MSG_DONTWAIT), 3);
	cr_assert_eq(g[0].n, 10);
	cr_assert_eq(g[0].nfds, 0);
	cr_assert_arr_eq(in[0], msg[0], 10);
	cr_assert_eq(g[1].n, -EMSGSIZE);
	cr_assert_eq(g[1].nfds, 0);
	cr_assert_eq(g[1].got, 20, "its bytes are there, for its header");
	cr_assert_eq(g[2].n, 30);
	cr_assert_eq(g[2].nfds, 1);
	cr_assert_arr_eq(in[2], msg[2], 30);
	cr_assert_eq(open_fds(), before + 1, "only the good datagram's fd is open");
	struct stat a, b;
	cr_assert_eq(fstat(g[2].fds[0], &a), 0);
	cr_assert_eq(fstat(e[1], &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino, "the fd that was sent");
	cr_assert_eq(fcntl(g[2].fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(g[2].fds[0]);
	close(e[1]);
	cr_assert_eq(fdio_recv_many(sv[1], g, 3, MSG_DONTWAIT), 1, "what is left: one");
	cr_assert_eq(g[0].n, 40);
	cr_assert_eq(fdio_recv_many(sv[1], g, 3, MSG_DONTWAIT), -EAGAIN);
	close(sv[0]);
	cr_assert_geq(fdio_recv_many(sv[1], g, 3, MSG_DONTWAIT), 1);
	cr_assert_eq(g[0].n, 0, "EOF");
	close(sv[1]);
}

/* With fdio_stamp_sends() each datagram says when it was sent (the kernel stamps it in
 * the sender's sendmsg), also one with fds and after it waited; without, 0. */
Test(fdio, recv_many_says_when_each_datagram_was_sent)
{
	int sv[2];
	pair(sv);
	uint8_t msg[8] = "stamped", in[2][16];
	struct fdio_dgram g[2];
	for (unsigned i = 0; i < 2; i++)
		g[i] = (struct fdio_dgram){ .buf = in[i], .cap = sizeof(in[i]), .max_fds = 1 };
	cr_assert_eq(fdio_send(sv[0], msg, sizeof(msg), NULL, 0, 0), (ssize_t)sizeof(msg));
	cr_assert_eq(fdio_recv_many(sv[1], g, 2, MSG_DONTWAIT), 1);
	cr_assert_eq(g[0].sent_ns, 0, "not asked for: no stamp");

	cr_assert_eq(fdio_stamp_sends(sv[1]), 0);
	int e = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(e, 0);
	uint64_t t0 = garuda_real_ns();
	cr_assert_eq(fdio_send(sv[0], msg, sizeof(msg), NULL, 0, 0), (ssize_t)sizeof(msg));
	uint64_t t1 = garuda_real_ns();
	cr_assert_eq(fdio_send(sv[0], msg, sizeof(msg), &e, 1, 0), (ssize_t)sizeof(msg));
	uint64_t t2 = garuda_real_ns();
	/* read after both sends: each stamp says when its own was sent, not the read */
	cr_assert_eq(fdio_recv_many(sv[1], g, 2, MSG_DONTWAIT), 2);
	uint64_t t3 = garuda_real_ns();
	cr_assert(g[0].sent_ns >= t0 && g[0].sent_ns <= t1, "sent in [%llu, %llu]: %llu", (unsigned long long)t0,
		  (unsigned long long)t1, (unsigned long long)g[0].sent_ns);
	cr_assert(g[1].sent_ns >= t1 && g[1].sent_ns <= t2, "with an fd too");
	cr_assert_eq(g[1].nfds, 1, "the stamp takes no fd's room");
	cr_assert_lt(g[1].sent_ns, t3);
	close(g[1].fds[0]);
	close(e);
	close(sv[0]);
	close(sv[1]);
}

/* A send stamp on the real clock, as a time on the monotonic clock: now less its age;
 * the age never negative (a stamp ahead of now: now) and at most max_age; no stamp:
 * now. */
Test(fdio, a_send_stamp_becomes_a_monotonic_time)
{
	const uint64_t S = 1000000000ull;
	cr_assert_eq(fdio_sent_mono_ns(100 * S - 300, 100 * S, 50 * S, S), 50 * S - 300);
	cr_assert_eq(fdio_sent_mono_ns(0, 100 * S, 50 * S, S), 50 * S, "no stamp");
	cr_assert_eq(fdio_sent_mono_ns(101 * S, 100 * S, 50 * S, S), 50 * S, "ahead of now: the real clock stepped back");
	cr_assert_eq(fdio_sent_mono_ns(90 * S, 100 * S, 50 * S, S), 49 * S, "older than max_age: max_age");
	cr_assert_eq(fdio_sent_mono_ns(1, 100 * S, 3, 100 * S), 3, "never before the monotonic clock's zero");
}
