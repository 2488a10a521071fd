/* test_fake.c — libgaruda against a scripted fake garudad (a thread on a private
 * socket that answers what each test scripts), for the daemon answers a real garudad
 * does not give on demand: a refused version, a closed or silent or garbled handshake,
 * a segment that does not match the request, a dying session during a request. */
#include <errno.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* the registry first: garuda.h then skips its copy */
#include "errcode.h"
#include "fdio.h"
#include "segment_layout.h"
#include "wire.h"

#include "common.h"

TestSuite(fake, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 60);

struct fake;
typedef void (*script_fn)(struct fake *f, int conn);

struct fake {
	char dir[64], path[128];
	int lfd;
	pthread_t th;
	script_fn script;
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	int conn = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (conn >= 0) {
		f->script(f, conn);
		close(conn);
	}
	return NULL;
}

static void fake_start(struct fake *f, script_fn script)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/garuda-fake.XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/g.sock", f->dir);
	f->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	strcpy(sa.sun_path, f->path);
	cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(f->lfd, 4), 0);
	f->script = script;
	cr_assert_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
	pthread_join(f->th, NULL);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
}

/* receive one message (fds closed), 0 or -1 on EOF/garbage */
static int rx(int conn, struct garuda_msg *m)
{
	uint8_t buf[GARUDA_MSG_MAX];
	int fds[FDIO_MAX_FDS];
	unsigned nfds;
	ssize_t n = fdio_recv(conn, buf, sizeof(buf), fds, FDIO_MAX_FDS, &nfds, 0);
	if (n <= 0)
		return -1;
	int r = garuda_msg_decode(buf, (size_t)n, nfds, m);
	fdio_close_all(fds, nfds);
	return r < 0 ? -1 : 0;
}

static void tx(int conn, struct garuda_msg *m, int fd)
{
	uint8_t buf[GARUDA_MSG_MAX];
	m->nfds = fd >= 0 ? 1 : 0;
	ssize_t n = garuda_msg_encode(m, buf, sizeof(buf));
	if (n > 0)
		fdio_send(conn, buf, (size_t)n, &fd, fd >= 0 ? 1 : 0, 0);
}

static void welcome(int conn)
{
	struct garuda_msg m;
	if (rx(conn, &m) < 0 || m.type != GARUDA_MSG_HELLO)
		return;
	garuda_msg_init(&m, GARUDA_MSG_WELCOME, m.cookie);
	m.welcome.session_id = 7;
	tx(conn, &m, -1);
}

/* wait until the client closes */
static void until_eof(int conn)
{
	struct garuda_msg m;
	while (rx(conn, &m) == 0)
		;
}

/* ---- handshake ---- */

static void script_bad_version(struct fake *f, int conn)
{
	(void)f;
	struct garuda_msg m;
	if (rx(conn, &m) < 0)
		return;
	garuda_msg_error(&m, m.cookie, GARUDA_E_BAD_VERSION, NULL);
	tx(conn, &m, -1);
}

Test(fake, refused_version)
{
	struct fake f;
	struct garuda_client *c;
	fake_start(&f, script_bad_version);
	fails(garuda_connect_to(f.path, &c), -GARUDA_E_BAD_VERSION);
	fake_stop(&f);
}

static void script_close(struct fake *f, int conn)
{
	(void)f;
	struct garuda_msg m;
	rx(conn, &m);
}

Test(fake, closed_during_handshake)
{
	struct fake f;
	struct garuda_client *c;
	fake_start(&f, script_close);
	fails(garuda_connect_to(f.path, &c), -GARUDA_E_DISCONNECTED);
	fake_stop(&f);
}

static void script_garbage(struct fake *f, int conn)
{
	(void)f;
	struct garuda_msg m;
	rx(conn, &m);
	static const char junk[40] = "this is not a garuda message at all";
	fdio_send(conn, junk, sizeof(junk), NULL, 0, 0);
	until_eof(conn);
}

Test(fake, garbled_welcome_is_protocol)
{
	struct fake f;
	struct garuda_client *c;
	fake_start(&f, script_garbage);
	fails(garuda_connect_to(f.path, &c), -GARUDA_E_PROTOCOL);
	fake_stop(&f);
}

static void script_ack_not_welcome(struct fake *f, int conn)
{
	(void)f;
	struct garuda_msg m;
	rx(conn, &m);
	garuda_msg_init(&m, GARUDA_MSG_ACK, m.cookie);
	tx(conn, &m, -1);
	until_eof(conn);
}

Test(fake, wrong_reply_is_protocol)
{
	struct fake f;
	struct garuda_client *c;
	fake_start(&f, script_ack_not_welcome);
	fails(garuda_connect_to(f.path, &c), -GARUDA_E_PROTOCOL);
	fake_stop(&f);
}

static void script_silent(struct fake *f, int conn)
{
	(void)f;
	until_eof(conn);
}

Test(fake, silent_daemon_times_out)
{
	struct fake f;
	struct garuda_client *c;
	fake_start(&f, script_silent);
	fails(garuda_connect_to(f.path, &c), -GARUDA_E_TIMEOUT);
	fake_stop(&f);
}

/* ---- segments ---- */

/* answer SEGMENT_OPEN with a SEGMENT of the wrong size, then another without a fd */
static void script_bad_segment(struct fake *f, int conn)
{
	(void)f;
	welcome(conn);
	for (int round = 0; round < 2; round++) {
		struct garuda_msg m;
		if (rx(conn, &m) < 0 || m.type != GARUDA_MSG_SEGMENT_OPEN)
			return;
		uint32_t lines = m.segment_open.lines;
		uint64_t cookie = m.cookie;
		int fd = memfd_create("fake-seg", MFD_CLOEXEC);
		size_t bytes = garuda_segment_bytes(lines, (size_t)sysconf(_SC_PAGESIZE));
		if (ftruncate(fd, (off_t)bytes) < 0)
			return;
		garuda_msg_init(&m, GARUDA_MSG_SEGMENT, cookie);
		m.segment.segment_id = 1;
		m.segment.lines = lines + 1; /* not what was asked */
		m.segment.bytes = garuda_segment_bytes(lines + 1, (size_t)sysconf(_SC_PAGESIZE));
		m.segment.numa_node = -1;
		tx(conn, &m, round == 0 ? fd : -1);
		close(fd);
		/* the client says it does not keep it */
		if (rx(conn, &m) < 0 || m.type != GARUDA_MSG_SEGMENT_CLOSE)
			return;
		garuda_msg_init(&m, GARUDA_MSG_ACK, m.cookie);
		tx(conn, &m, -1);
	}
	until_eof(conn);
}

Test(fake, mismatched_segment_is_protocol)
{
	struct fake f;
	struct garuda_client *c;
	struct garuda_seg *seg;
	fake_start(&f, script_bad_segment);
	ok(garuda_connect_to(f.path, &c));
	cr_assert_eq(garuda_client_session(c), 7);
	fails(garuda_segment_open(c, "host", 0, 2, &seg), -GARUDA_E_PROTOCOL);
	cr_assert_null(seg);
	fails(garuda_segment_open(c, "host", 0, 2, &seg), -GARUDA_E_PROTOCOL);
	garuda_disconnect(c);
	fake_stop(&f);
}

/* the daemon's ERROR for a request comes back as its code */
static void script_quota(struct fake *f, int conn)
{
	(void)f;
	welcome(conn);
	struct garuda_msg m;
	if (rx(conn, &m) < 0 || m.type != GARUDA_MSG_SEGMENT_OPEN)
		return;
	garuda_msg_error(&m, m.cookie, GARUDA_E_NO_MEMLOCK, NULL);
	tx(conn, &m, -1);
	until_eof(conn);
}

Test(fake, daemon_error_is_returned)
{
	struct fake f;
	struct garuda_client *c;
	struct garuda_seg *seg;
	fake_start(&f, script_quota);
	ok(garuda_connect_to(f.path, &c));
	fails(garuda_segment_open(c, "host", 0, 1, &seg), -GARUDA_E_NO_MEMLOCK);
	garuda_disconnect(c);
	fake_stop(&f);
}

/* the session dies while a request waits for its reply */
static void script_die_on_request(struct fake *f, int conn)
{
	(void)f;
	welcome(conn);
	struct garuda_msg m;
	rx(conn, &m); /* SEGMENT_OPEN: no answer, just go away */
}

Test(fake, session_lost_during_request_is_disconnected)
{
	struct fake f;
	struct garuda_client *c;
	struct garuda_seg *seg;
	fake_start(&f, script_die_on_request);
	ok(garuda_connect_to(f.path, &c));
	fails(garuda_segment_open(c, "host", 0, 1, &seg), -GARUDA_E_DISCONNECTED);
	fake_stop(&f); /* nobody listens any more: the client keeps retrying quietly */
	cr_assert_eq(garuda_client_connected(c), 0);
	fails(garuda_segment_open(c, "host", 0, 1, &seg), -GARUDA_E_DISCONNECTED);
	garuda_disconnect(c);
}

/* ---- routing of asynchronous errors ---- */

/* An ERROR for a NOREPLY ARM that no live stream sent (the cookie's serial names no
 * stream: a freed one's, or garbage) is dropped and counted; the session carries on. */
static void script_stray_arm_error(struct fake *f, int conn)
{
	(void)f;
	struct garuda_msg m;
	welcome(conn);
	/* stream bit, serial 12345 (no such stream), target 1 */
	garuda_msg_error(&m, (1ull << 63) | (12345ull << 32) | 1u, GARUDA_E_QUOTA, NULL);
	tx(conn, &m, -1);
	if (rx(conn, &m) < 0 || m.type != GARUDA_MSG_QUERY)
		return;
	garuda_msg_init(&m, GARUDA_MSG_QUERY_REPLY, m.cookie);
	static const char json[] = "{\"version\":1,\"armed\":0}";
	memcpy(m.query_reply.json, json, sizeof(json));
	m.query_reply.json_len = sizeof(json) - 1;
	tx(conn, &m, -1);
	until_eof(conn);
}

Test(fake, stray_arm_error_is_dropped_and_counted)
{
	struct fake f;
	struct garuda_client *c;
	char buf[544];
	fake_start(&f, script_stray_arm_error);
	ok(garuda_connect_to(f.path, &c));
	/* the ERROR came before the QUERY_REPLY, so it was routed first */
	int n = garuda_client_query(c, buf, sizeof(buf));
	cr_assert_gt(n, 0, "%d (%s)", n, garuda_strerror(n));
	cr_assert_str_eq(buf, "{\"version\":1,\"armed\":0,\"stray_errors\":1}");
	cr_assert_eq(garuda_client_connected(c), 1, "a stray error ends nothing");
	garuda_disconnect(c);
	fake_stop(&f);
}
