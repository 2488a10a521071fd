/* test_closer.c — a client's fds can never block garudad's loop (DESIGN.md, invariant
 * 2): the fds a client sends that no handler takes are closed by the closer thread
 * (daemon/closer.h), never on the loop thread, on both event loops
 * (tests/daemon/meson.build).
 *
 * The fd used is one whose last close blocks: a 127.0.0.1 TCP socket with SO_LINGER
 * {1, 60} and its send buffer full, its peer (this test) never reading: the close
 * waits up to 60 s for the data to go. The client hands it to garudad and closes its
 * own copy while garudad is stopped (SIGSTOP), so that garudad's is the last one.
 * Then, once garudad has certainly reached the close (the offender was answered
 * from the very callback that closes it), another session's request must be answered
 * and a new connection accepted while that socket still lingers: the peer has seen
 * no FIN nor RST yet, and a thread of garudad sits in close(2). Before the fix the
 * loop itself sat in that close: the request was not answered within 20 s and the
 * test failed. Ordering, not timing: the 20 s only turn a blocked loop into a failure.
 * Closing the peer (unread data: an RST) ends the linger; every test then checks that
 * garudad's fds are back at its baseline and that it leaked none of its own. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/un.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdio.h"
#include "harness.h"

/* Under valgrind a thread in close(2) holds valgrind's one lock, so every thread of
 * garudad waits for a blocked close: what these tests check cannot hold there. */
static void closer_init(void)
{
	gd_test_init();
	const char *bin = getenv("GARUDAD");
	if (bin && strstr(bin, "valgrind"))
		cr_skip_test("garudad under valgrind: a thread blocked in close(2) holds valgrind's "
			     "one lock and stops every other thread, the loop's too (valgrind "
			     "serialises threads); the closer thread is checked by the other stages");
}

TestSuite(closer, .init = closer_init, .fini = gd_test_fini, .timeout = 240);

/* long enough for any loaded machine, far shorter than the 60 s linger */
#define SERVED_MS 20000

/* A TCP connection whose client end cannot finish its last close (see the head). */
struct lingerer {
	int client, peer;
};

static void lingerer_open(struct lingerer *t)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(l, 0, "socket: %s", strerror(errno));
	int small = 4096; /* the accepted peer's receive buffer: filled in a few sends */
	setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(listen(l, 1), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &al), 0);
	t->client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(t->client, 0);
	setsockopt(t->client, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	cr_assert_eq(connect(t->client, (struct sockaddr *)&a, sizeof(a)), 0, "connect: %s",
		     strerror(errno));
	t->peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	cr_assert_geq(t->peer, 0, "accept: %s", strerror(errno));
	close(l);
	/* fill the peer's receive buffer and the client's send buffer, until data waits
	 * unsent (the peer's window is shut) */
	static const char junk[4096];
	int unsent = 0;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	for (;;) {
		ssize_t n;
		while ((n = send(t->client, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL)) > 0)
			;
		cr_assert(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK), "send: %s",
			  n < 0 ? strerror(errno) : "0");
		cr_assert_eq(ioctl(t->client, SIOCOUTQNSD, &unsent), 0, "SIOCOUTQNSD: %s",
			     strerror(errno));
		if (unsent > 0 || gd_left_ms(dl) <= 0)
			break;
		gd_sleep_ms(5);
	}
	cr_assert_gt(unsent, 0, "no data left unsent on the TCP socket");
	struct linger lg = { .l_onoff = 1, .l_linger = 60 };
	cr_assert_eq(setsockopt(t->client, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
}

/* The peer has seen neither a FIN nor an RST: the client end still lingers */
static bool peer_untouched(int peer)
{
	struct pollfd p = { .fd = peer, .events = POLLRDHUP };
	int r = poll(&p, 1, 0);
	return r == 0 || (r == 1 && !(p.revents & (POLLRDHUP | POLLHUP | POLLERR)));
}

/* Whether garudad's closer thread (named garuda-closer, daemon/closer.c) sits in
 * close(2) (/proc/PID/task/TID/syscall): 1, 0, or -1 when no such file could be read
 * (then nothing is asserted on it). Only that thread: any other (an io_uring worker,
 * whose syscall file shows what its creator was in) could read as in close(2) while
 * the lingering socket still waits in the closer's queue, and the queue's bound would
 * then be one further than the test counts. */
static int thread_in_close(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *dir = opendir(path);
	if (!dir)
		return -1;
	int found = -1;
	struct dirent *e;
	while (found != 1 && (e = readdir(dir))) {
		if (e->d_name[0] == '.')
			continue;
		char p[320], comm[32] = "";
		snprintf(p, sizeof(p), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		FILE *f = fopen(p, "re");
		if (!f)
			continue;
		bool closer = fgets(comm, sizeof(comm), f) && strcmp(comm, "garuda-closer\n") == 0;
		fclose(f);
		if (!closer)
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/syscall", (int)pid, e->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		long nr;
		if (fscanf(f, "%ld", &nr) == 1)
			found = nr == SYS_close ? 1 : 0;
		fclose(f);
	}
	closedir(dir);
	return found;
}

static int wait_thread_in_close(pid_t pid)
{
	uint64_t dl = gd_deadline(SERVED_MS);
	int r;
	while ((r = thread_in_close(pid)) == 0 && gd_left_ms(dl) > 0)
		gd_sleep_ms(5);
	return r;
}

/* garudad stopped (all its threads: waited for), so that what the test sends now is
 * read only after the test closed its own copies */
static void daemon_stop_signal(struct gd_daemon *d)
{
	cr_assert_eq(kill(d->pid, SIGSTOP), 0);
	siginfo_t si;
	int r;
	do
		r = waitid(P_PID, (id_t)d->pid, &si, WSTOPPED);
	while (r < 0 && errno == EINTR);
	cr_assert_eq(r, 0, "waitid: %s", strerror(errno));
}

static void daemon_cont_signal(struct gd_daemon *d)
{
	cr_assert_eq(kill(d->pid, SIGCONT), 0);
}

/* Send buf with fds in one datagram (up to 32 fds: past FDIO_MAX_FDS, which fdio_send
 * refuses) */
static void send_fds(int sock, const void *buf, size_t len, const int *fds, unsigned n)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 32)];
	} ctl;
	cr_assert_leq(n, 32);
	memset(&ctl, 0, sizeof(ctl));
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = n ? ctl.buf : NULL,
			     .msg_controllen = n ? CMSG_SPACE(sizeof(int) * n) : 0 };
	if (n) {
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * n);
	}
	cr_assert_eq(sendmsg(sock, &mh, MSG_NOSIGNAL), (ssize_t)len, "sendmsg: %s", strerror(errno));
}

static size_t encode(enum garuda_msg_type type, uint64_t cookie, uint8_t *buf)
{
	struct garuda_msg m;
	garuda_msg_init(&m, type, cookie);
	ssize_t len = garuda_msg_encode(&m, buf, GARUDA_MSG_MAX);
	cr_assert_gt(len, 0);
	return (size_t)len;
}

/* ERROR{want} (any cookie), then end of file */
static void expect_error_then_eof(struct gd_client *c, int want, const char *what)
{
	struct garuda_msg m;
	int r = gd_recv(c, &m, NULL, SERVED_MS);
	cr_assert_eq(r, 1, "%s: no ERROR: %s", what, r ? gd_strerr(r) : "timed out");
	cr_assert(m.type == GARUDA_MSG_ERROR, "%s: answered %s", what, garuda_msg_type_name(m.type));
	if (want)
		cr_assert_eq(m.error.code, want, "%s: ERROR{%s}, not ERROR{%s}", what,
			     gd_strerr(m.error.code), garuda_errcode_name(want));
	r = gd_recv(c, &m, NULL, SERVED_MS);
	cr_assert_eq(r, -EPIPE, "%s: not disconnected after its ERROR: %s", what, gd_strerr(r));
}

/* Another session is served and a new one accepted while the socket lingers, then
 * the linger is ended and garudad's fds are counted back */
static void expect_served_while_lingering(struct gd_daemon *d, struct gd_client *victim,
					  struct lingerer *t)
{
	uint8_t buf[GARUDA_MSG_MAX];
	size_t len = encode(GARUDA_MSG_QUERY, 777, buf);
	gd_ok(gd_send_raw(victim, buf, len, NULL, 0));
	struct garuda_msg m;
	int r = gd_recv(victim, &m, NULL, SERVED_MS);
	cr_assert_eq(r, 1, "another session's QUERY was not answered: %s (the loop is blocked "
		     "in the close of the lingering socket)", r ? gd_strerr(r) : "timed out");
	cr_assert(m.type == GARUDA_MSG_QUERY_REPLY && m.cookie == 777, "QUERY answered %s",
		  garuda_msg_type_name(m.type));
	cr_assert(peer_untouched(t->peer), "the TCP socket stopped lingering before the QUERY "
		  "was answered: this test proved nothing");
	struct gd_client fresh;
	gd_ok(gd_open(&fresh, d->sock));
	cr_assert(peer_untouched(t->peer), "the TCP socket stopped lingering before a new "
		  "connection was accepted: this test proved nothing");
	/* positively: garudad is in that close, on a thread of its own */
	int in = wait_thread_in_close(d->pid);
	cr_assert_neq(in, 0, "no thread of garudad but its loop's is in close(2)");
	cr_assert(peer_untouched(t->peer));
	gd_close(&fresh);
	gd_close(victim);
	/* the peer closes with data unread: an RST, which ends the linger */
	close(t->peer);
	t->peer = -1;
	int n = gd_wait_fds_at_most(d, d->fd_baseline);
	cr_assert_leq(n, d->fd_baseline, "garudad holds %d fds, %d before: the closer did not "
		      "close what it was handed", n, d->fd_baseline);
}

/* The ways a client's fd reaches a close nobody asked for */
enum how {
	FD_WITH_HELLO,   /* before HELLO, with a message that takes none (FD_COUNT) */
	REFUSED_ATTACH,  /* SEGMENT_ATTACH of a socket: BAD_SEGMENT, the session goes on */
	UNREAD_AT_END,   /* a datagram never read: the session ended first (fdio_discard) */
	SURPLUS_FDS,     /* more fds than a datagram may carry: 19 eventfds, the socket last */
	REFUSED_CONNECTION, /* sent before garudad accepted a connection it refuses (quota) */
};

static void run(enum how how)
{
	struct gd_daemon d = { 0 };
	/* REFUSED_CONNECTION: the victim and hog are all the uid may have */
	gd_start(&d, how == REFUSED_CONNECTION
			     ? &(struct gd_opts){ .config = "{\"quota\":{\"uid\":{\"connections\":2}}}" }
			     : NULL);
	gd_baseline(&d);
	struct gd_client victim, bad, hog;
	gd_ok(gd_open(&victim, d.sock));
	if (how == REFUSED_CONNECTION)
		gd_ok(gd_open(&hog, d.sock));
	struct lingerer t;
	lingerer_open(&t);
	uint8_t buf[GARUDA_MSG_MAX];
	size_t len;
	if (how != REFUSED_CONNECTION)
		gd_ok(how == REFUSED_ATTACH || how == UNREAD_AT_END ? gd_open(&bad, d.sock)
								    : gd_connect(&bad, d.sock));
	daemon_stop_signal(&d);
	if (how == REFUSED_CONNECTION) /* in the backlog, accepted once garudad runs */
		gd_ok(gd_connect(&bad, d.sock));
	switch (how) {
	case FD_WITH_HELLO:
	case REFUSED_CONNECTION:
		len = encode(GARUDA_MSG_HELLO, 1, buf);
		send_fds(bad.fd, buf, len, &t.client, 1);
		break;
	case REFUSED_ATTACH: {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 42);
		m.segment_open.lines = 4;
		m.segment_open.numa_node = -1;
		gd_ok(gd_send(&bad, &m, &t.client, 1));
		break;
	}
	case UNREAD_AT_END:
		send_fds(bad.fd, "", 0, NULL, 0); /* TOO_SHORT: ends the session */
		for (unsigned i = 0; i < 16; i++) { /* past what one read takes (8) */
			len = encode(GARUDA_MSG_QUERY, 100 + i, buf);
			gd_ok(gd_send_raw(&bad, buf, len, NULL, 0));
		}
		len = encode(GARUDA_MSG_QUERY, 200, buf);
		send_fds(bad.fd, buf, len, &t.client, 1);
		break;
	case SURPLUS_FDS: {
		int fds[20];
		for (unsigned i = 0; i < 19; i++) {
			fds[i] = eventfd(0, EFD_CLOEXEC);
			cr_assert_geq(fds[i], 0);
		}
		fds[19] = t.client;
		len = encode(GARUDA_MSG_QUERY, 300, buf);
		send_fds(bad.fd, buf, len, fds, 20);
		for (unsigned i = 0; i < 19; i++)
			close(fds[i]);
		break;
	}
	}
	close(t.client); /* garudad's copy is the last one now */
	t.client = -1;
	daemon_cont_signal(&d);
	/* the offender's answer goes out from the callback that then closes its fds: past
	 * it, the loop has reached that close */
	switch (how) {
	case FD_WITH_HELLO:
		expect_error_then_eof(&bad, 0, "HELLO with an fd");
		break;
	case REFUSED_ATTACH: {
		struct garuda_msg rep;
		int r = gd_await(&bad, 42, &rep, NULL);
		cr_assert_eq(r, GARUDA_E_BAD_SEGMENT, "SEGMENT_ATTACH of a TCP socket: %s",
			     gd_strerr(r));
		break;
	}
	case UNREAD_AT_END:
		expect_error_then_eof(&bad, GARUDA_E_TOO_SHORT, "an empty datagram");
		break;
	case SURPLUS_FDS:
		expect_error_then_eof(&bad, GARUDA_E_TOO_LONG, "a QUERY with 20 fds");
		break;
	case REFUSED_CONNECTION:
		expect_error_then_eof(&bad, GARUDA_E_QUOTA, "a connection over quota");
		gd_close(&hog); /* room for the new connection below */
		cr_assert_eq(gd_wait_status(&d, "clients", 1), 1, "no status with one client: "
			     "the control socket is not answered (the loop is blocked?)");
		break;
	}
	gd_close(&bad);
	expect_served_while_lingering(&d, &victim, &t);
	gd_stop(&d);
}

Test(closer, fd_sent_with_hello_does_not_block_the_loop)
{
	run(FD_WITH_HELLO);
}

Test(closer, refused_segment_attach_fd_does_not_block_the_loop)
{
	run(REFUSED_ATTACH);
}

Test(closer, unread_fd_at_session_end_does_not_block_the_loop)
{
	run(UNREAD_AT_END);
}

Test(closer, surplus_fds_do_not_block_the_loop)
{
	run(SURPLUS_FDS);
}

Test(closer, fd_sent_on_a_refused_connection_does_not_block_the_loop)
{
	run(REFUSED_CONNECTION);
}

/* The queue's bound (closer.h, CLOSER_QUEUE_MAX): with the closer stuck in the
 * lingering close, refused SEGMENT_ATTACHes of eventfds fill the queue; past it an
 * eventfd (whose close cannot block) is closed at once and the session goes on; an fd
 * of another kind (/dev/null: told apart only by its kind) is still queued, never
 * closed on the loop, and its sender is disconnected with ERROR{BAD_FD} after the
 * request's own answer. Meanwhile another session is served. */
/* bad (connected, no HELLO) sends the lingering socket with its HELLO while garudad is
 * stopped, so that garudad holds its last reference; once answered and closed, a thread
 * of garudad other than its loop's is in that close */
static void closer_stuck(struct gd_daemon *d, struct gd_client *bad, struct lingerer *t)
{
	uint8_t buf[GARUDA_MSG_MAX];
	daemon_stop_signal(d);
	size_t len = encode(GARUDA_MSG_HELLO, 1, buf);
	send_fds(bad->fd, buf, len, &t->client, 1);
	close(t->client);
	t->client = -1;
	daemon_cont_signal(d);
	expect_error_then_eof(bad, 0, "HELLO with an fd");
	gd_close(bad);
	int in = wait_thread_in_close(d->pid);
	cr_assert_neq(in, 0, "no thread of garudad but its loop's is in close(2)");
	/* and it is the lingering socket's close: nothing else is left queued (the closer
	 * in close(2) of another fd, the socket still queued behind it, held one slot of
	 * the queue that the test counts as free: CI's ASan run of
	 * a_full_queue_ends_the_sender_not_the_loop saw one eventfd more queued, twice) */
	cr_assert_eq(gd_wait_status(d, "closer_pending", 1), 1, "the closer has more than the lingering socket");
	cr_assert_neq(thread_in_close(d->pid), 0, "garuda-closer left close(2): the socket did not linger");
}

#define QUEUE_MAX 1024 /* daemon/closer.h */

/* filler's SEGMENT_ATTACH of fd (closed here after), which garudad refuses and hands to
 * its closer (queued, or closed at once past the bound): the request's answer */
static int attach_fd(struct gd_client *filler, int fd)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
	m.segment_open.lines = 4;
	m.segment_open.numa_node = -1;
	int r = gd_request(filler, &m, &fd, 1, &rep, NULL);
	close(fd);
	return r;
}

static void attach_eventfd(struct gd_client *filler, unsigned i)
{
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cr_assert_geq(efd, 0);
	int r = attach_fd(filler, efd);
	cr_assert_eq(r, GARUDA_E_BAD_SEGMENT, "SEGMENT_ATTACH %u of an eventfd: %s", i, gd_strerr(r));
}

Test(closer, a_full_queue_ends_the_sender_not_the_loop)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	gd_baseline(&d);
	struct gd_client victim, bad, filler;
	gd_ok(gd_open(&victim, d.sock));
	gd_ok(gd_connect(&bad, d.sock));
	gd_ok(gd_open(&filler, d.sock));
	struct lingerer t;
	lingerer_open(&t);
	closer_stuck(&d, &bad, &t);
	unsigned i = 0;
	for (; i < QUEUE_MAX; i++)
		attach_eventfd(&filler, i);
	/* The queue is full: QUEUE_MAX eventfds wait behind the lingering close (status
	 * closer_pending counts that one too; the loop hands a request's fds over before it
	 * reads the control socket's next request). Topped up until it says so: in CI's
	 * ASan runs (3 of 6) and once in 40 runs under load here, garudad held 52 fewer
	 * eventfds than it was sent (989 fds, 1,041 in a run that passes) and then queued
	 * the last 16: the closer closed some before it stuck in the lingering close (why
	 * is not pinned down; closer_stuck's checks had passed). The bound itself is what
	 * is tested, from a full queue on. */
	long long pending;
	while ((pending = gd_status_num(&d, "closer_pending")) < QUEUE_MAX + 1 && i < 2 * QUEUE_MAX)
		attach_eventfd(&filler, i++);
	cr_assert_eq(pending, QUEUE_MAX + 1, "the closer's queue is not full after %u eventfds: %lld "
		     "pending (the closer is not stuck in the lingering close?)", i, pending);
	int before = gd_fd_count(&d);
	long long handed = gd_status_num(&d, "closer_handed");
	for (unsigned k = 0; k < 16; k++)
		attach_eventfd(&filler, i++);
	struct garuda_msg rep;
	garuda_msg_init(&rep, GARUDA_MSG_QUERY, 0);
	gd_ok(gd_request(&filler, &rep, NULL, 0, &rep, NULL)); /* the last close is done */
	/* waited for: a count taken at one instant saw one fd more once in a TSan run (an
	 * fd open for a moment: queued eventfds would stay, the closer being stuck) */
	int after = gd_wait_fds_at_most(&d, before);
	cr_assert_leq(after, before, "past the bound, eventfds were not closed at once: "
		     "garudad holds %d fds, %d before the last 16", after, before);
	/* and by garudad's own count: all 16 handed over, none queued */
	cr_assert_eq(gd_status_num(&d, "closer_handed"), handed + 16, "the last 16 eventfds were not "
		     "handed to the closer");
	cr_assert_eq(gd_status_num(&d, "closer_pending"), QUEUE_MAX + 1, "past the bound, an eventfd "
		     "was queued");
	cr_assert(peer_untouched(t.peer), "the TCP socket stopped lingering: proved nothing");
	/* another kind past the bound: queued, and the sender disconnected */
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(null, 0);
	int r = attach_fd(&filler, null);
	cr_assert_eq(r, GARUDA_E_BAD_SEGMENT, "SEGMENT_ATTACH of /dev/null: %s", gd_strerr(r));
	expect_error_then_eof(&filler, GARUDA_E_BAD_FD, "an unusable fd past the closer's bound");
	gd_close(&filler);
	expect_served_while_lingering(&d, &victim, &t);
	gd_stop(&d);
}

/* SIGTERM while the closer is stuck in that close: garudad exits 0 all the same, after
 * at most the closer's stop wait (closer.h, CLOSER_STOP_WAIT_MS), and says it left the
 * close behind; the socket still lingers when it is gone (the peer saw no FIN nor RST),
 * so the exit did not wait for the linger to end. */
Test(closer, exit_does_not_wait_for_a_blocked_close)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	struct gd_client bad;
	gd_ok(gd_connect(&bad, d.sock));
	struct lingerer t;
	lingerer_open(&t);
	closer_stuck(&d, &bad, &t);
	int st = gd_signal_and_wait(&d, SIGTERM);
	cr_assert(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "garudad did not exit 0 on SIGTERM with a close blocked (wait status %d)", st);
	cr_assert(peer_untouched(t.peer), "the linger ended before garudad exited: proved nothing");
	FILE *f = fopen(d.log, "re");
	cr_assert(f, "%s: %s", d.log, strerror(errno));
	char line[1024];
	bool said = false;
	while (!said && fgets(line, sizeof(line), f))
		said = strstr(line, "still being closed") != NULL;
	fclose(f);
	cr_assert(said, "garudad's log does not say it left a close behind");
	gd_cleanup(&d);
	close(t.peer);
	gd_check_fds();
}

/* The control socket takes no fds: one sent with a request is closed by the closer
 * thread too (a plain recv() let the kernel drop it, closing it on the loop thread).
 * The request is answered, and the client socket goes on being served. */
Test(closer, fd_sent_to_the_control_socket_does_not_block_the_loop)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	gd_baseline(&d);
	struct gd_client victim;
	gd_ok(gd_open(&victim, d.sock));
	struct lingerer t;
	lingerer_open(&t);
	int cfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", d.ctl);
	cr_assert_eq(connect(cfd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %s", strerror(errno));
	daemon_stop_signal(&d);
	static const char req[] = "{\"request\":\"status\"}";
	send_fds(cfd, req, sizeof(req) - 1, &t.client, 1);
	close(t.client); /* garudad's copy is the last one now */
	t.client = -1;
	daemon_cont_signal(&d);
	struct pollfd p = { .fd = cfd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, SERVED_MS), 1, "the status request was not answered");
	char reply[65536];
	ssize_t n = recv(cfd, reply, sizeof(reply) - 1, 0);
	cr_assert_gt(n, 0);
	reply[n] = '\0';
	cr_assert_not_null(strstr(reply, "\"version\":1"), "%s", reply);
	close(cfd);
	expect_served_while_lingering(&d, &victim, &t);
	gd_stop(&d);
}
