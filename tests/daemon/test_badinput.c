/* test_badinput.c — no client can hurt another by its messages or its fds.
 *
 * Every test runs a well-behaved client ("good") next to the offender. Before each
 * offence good arms one descriptor of every form; after it, good stores and must get
 * all three readiness, and the daemon's fd count must come back to what it was with
 * good alone (the offender's fds, passed or not, are all closed by the daemon).
 *
 * Where the contract names the answer, it is checked exactly: a datagram that fails
 * garuda_msg_decode() gets ERROR{the code decode gives for the same bytes} (cookie 0
 * or the header's) and a disconnect; a BIND of a non-eventfd gets ERROR{BAD_FD} and
 * the connection stays; a saturated blocking eventfd gets ERROR{BAD_FD} (cookie 0)
 * and a disconnect. Elsewhere "an error or a disconnect" is accepted.
 *
 * The bench (garudad and good, armed) is the suites' fixture: up before each test, down
 * after it. */
#include <criterion/criterion.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "harness.h"


/* ------------------------------------------------------------ the good client ---- */

struct bench {
	struct gd_daemon d;
	struct gd_client good;
	struct gd_seg gs;
	int efd;
	uint64_t next; /* target of good's armed descriptors */
	int base_fds;  /* daemon fds with good set up and armed */
	bool up;       /* bench_up() finished: bench_down() has something to take down */
};

static void good_arm(struct bench *b)
{
	b->next++;
	gd_ok(gd_arm(&b->good, gd_slot(&b->gs, 0), b->next, b->next, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&b->good, gd_slot(&b->gs, 1), b->next, b->next, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&b->good, gd_slot(&b->gs, 2), b->next, b->next, GARUDA_FORM_DOORBELL));
}

static void bench_up(struct bench *b, const char *config)
{
	memset(b, 0, sizeof(*b));
	gd_start(&b->d, &(struct gd_opts){ .config = config });
	gd_baseline(&b->d);
	gd_ok(gd_open(&b->good, b->d.sock));
	gd_ok(gd_segment_open(&b->good, 1, -1, &b->gs));
	gd_ok(gd_bind_new(&b->good, gd_slot(&b->gs, 0), &b->efd));
	good_arm(b);
	cr_assert_eq(gd_wait_status(&b->d, "armed", 3), 3);
	b->base_fds = gd_fd_count(&b->d);
	b->up = true;
}

/* good's armed descriptors fire after the offence; then it re-arms */
static void good_served(struct bench *b, const char *after)
{
	cr_assert(gd_alive(&b->d), "garudad died after %s", after);
	uint32_t bell = gd_doorbell(&b->gs), now;
	for (uint32_t i = 0; i < 3; i++)
		gd_store(&b->gs, i, b->next);
	long long n = gd_eventfd_read(b->efd, GD_DEADLINE_MS);
	cr_assert_eq(n, 1, "good client after %s: eventfd %lld", after, n);
	struct garuda_ready rd;
	int r = gd_wait_ready(&b->good, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "good client after %s: no READY: %s", after, gd_strerr(r));
	cr_assert_eq(rd.token, b->next, "good client after %s: READY token %llu", after,
		     (unsigned long long)rd.token);
	cr_assert_eq(gd_doorbell_wait(&b->gs, bell, &now, GD_DEADLINE_MS), 1,
		     "good client after %s: doorbell", after);
	good_arm(b);
}

/* the daemon's fd count returns to what it was with good alone */
static void fds_back(struct bench *b, const char *after)
{
	int n = gd_wait_fds_at_most(&b->d, b->base_fds);
	cr_assert_leq(n, b->base_fds, "after %s the daemon holds %d fds, %d before", after, n,
		      b->base_fds);
}

/* good's resources closed, then SIGTERM: 0 when garudad exited 0, else negative with
 * the reason in b->d.err (no assertion: it runs in .fini) */
static int bench_down(struct bench *b)
{
	b->up = false;
	close(b->efd);
	gd_seg_unmap(&b->gs);
	gd_close(&b->good);
	return gd_terminate(&b->d);
}

/* Each test's bench, up before it runs and down after it (also after a failure: the
 * suite's fini counts the fds then). */
static struct bench bench;

/* Criterion 2.4 ignores an assertion that fails in .fini, so a cr_assert on garudad's
 * exit status there could not fail the test: when garudad did not exit 0 on SIGTERM,
 * crash the worker instead (as fdcheck_end() does for a leaked fd): Criterion reports
 * the test's teardown crashed and the test binary exits non-zero (meson: FAIL).
 * gd_test_fini() then checks the fds. */
static void bench_fini(void)
{
	if (bench.up) {
		if (bench_down(&bench) < 0) {
			cr_log_error("%s", bench.d.err);
			fprintf(stderr, "test_badinput: garudad did not exit cleanly: %s\n", bench.d.err);
			fflush(NULL);
			abort();
		}
	}
	gd_test_fini();
}

static void bench_init(void)
{
	gd_test_init();
	bench_up(&bench, NULL);
}

TestSuite(badinput, .init = bench_init, .fini = bench_fini, .timeout = 300);

/* slow_reader's: a small outbox quota */
static void bench_init_small_outbox(void)
{
	gd_test_init();
	bench_up(&bench, "{\"quota\":{\"connection\":{\"outbox_bytes\":8192}}}");
}

TestSuite(badinput_small_outbox, .init = bench_init_small_outbox, .fini = bench_fini,
	  .timeout = 300);

/* ------------------------------------------------------------- the offender ---- */

static void bad_open(struct bench *b, struct gd_client *c, bool hello)
{
	int r = hello ? gd_open(c, b->d.sock) : gd_connect(c, b->d.sock);
	cr_assert_eq(r, 0, "offender connect: %s", gd_strerr(r));
}

/* Read until EOF. want > 0: exactly one ERROR{want} must come first; want == 0: any
 * ERROR (or none). Cookie of an ERROR: 0 or `cookie`. Returns the ERROR code seen (0
 * for none). */
static int expect_close(struct gd_client *c, int want, uint64_t cookie, const char *what)
{
	int seen = 0;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	for (;;) {
		struct garuda_msg m;
		int r = gd_recv(c, &m, NULL, gd_left_ms(dl));
		if (r == -EPIPE)
			break;
		cr_assert_neq(r, 0, "%s: the daemon neither answered nor closed within %d ms%s", what,
			      GD_DEADLINE_MS, seen ? " after its ERROR" : "");
		cr_assert_eq(r, 1, "%s: %s", what, gd_strerr(r));
		cr_assert_eq(m.type, GARUDA_MSG_ERROR, "%s: answered %s", what,
			     garuda_msg_type_name(m.type));
		cr_assert_eq(seen, 0, "%s: two ERRORs", what);
		seen = m.error.code;
		if (want)
			cr_assert_eq(m.error.code, want, "%s: expected ERROR{%s}, got %s (\"%s\")", what,
				     garuda_errcode_name(want), gd_strerr(m.error.code),
				     m.error.text);
		cr_assert(m.cookie == 0 || m.cookie == cookie,
			  "%s: ERROR cookie %llu (request's %llu)", what,
			  (unsigned long long)m.cookie, (unsigned long long)cookie);
	}
	if (want)
		cr_assert_eq(seen, want, "%s: disconnected without ERROR{%s}", what,
			     garuda_errcode_name(want));
	return seen;
}

static uint64_t header_cookie(const uint8_t *buf, size_t len)
{
	uint64_t c = 0;
	if (len >= GARUDA_HDR_BYTES) {
		memcpy(&c, buf + 16, 8);
		c = le64toh(c);
	}
	return c;
}

/* Send buf (with fds) on a fresh connection (after HELLO when hello) and expect what
 * the contract says for a datagram decode refuses: ERROR{decode's code}, disconnect. */
static void offend_decode(struct bench *b, bool hello, const void *buf, size_t len,
			  const int *fds, unsigned nfds, const char *what)
{
	struct garuda_msg tmp;
	int code = -garuda_msg_decode(buf, len, nfds, &tmp);
	cr_assert_gt(code, 0, "test bug: %s decodes fine", what);
	struct gd_client c;
	bad_open(b, &c, hello);
	int r = gd_send_raw(&c, buf, len, fds, nfds);
	cr_assert_eq(r, 0, "%s: send: %s", what, gd_strerr(r));
	char w[160];
	snprintf(w, sizeof(w), "%s (%s)", what, hello ? "after HELLO" : "as the first message");
	expect_close(&c, code, header_cookie(buf, len), w);
	gd_close(&c);
}

static size_t encode(struct garuda_msg *m, uint8_t *buf)
{
	ssize_t n = garuda_msg_encode(m, buf, GARUDA_MSG_MAX);
	cr_assert_gt(n, 0, "test bug: encode %s: %zd", garuda_msg_type_name(m->type), n);
	return (size_t)n;
}

static size_t valid_arm(uint8_t *buf, uint64_t cookie)
{
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, cookie);
	m.arm.slot.segment = 1;
	m.arm.target = 1;
	m.arm.form = GARUDA_FORM_MESSAGE;
	return encode(&m, buf);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

/* ------------------------------------------------------------------- tests ---- */

/* Random bytes, and random bodies behind plausible headers, after HELLO and before */
Test(badinput, garbage_datagrams)
{
	unsigned seed = 12345;
	int checked = 0;
	for (int i = 0; i < 120; i++) {
		uint8_t buf[700];
		size_t len = 1 + (size_t)(rand_r(&seed) % 640);
		for (size_t k = 0; k < len; k++)
			buf[k] = (uint8_t)rand_r(&seed);
		if (i % 2 && len >= GARUDA_HDR_BYTES) {
			/* a header that agrees with the datagram: the body is what is wrong */
			put16(buf, (uint16_t)(1 + rand_r(&seed) % GARUDA_MSG_TYPE_MAX_));
			put16(buf + 2, 0);
			put32(buf + 4, (uint32_t)len);
			put16(buf + 8, 0);
			memset(buf + 10, 0, 6);
		}
		struct garuda_msg tmp;
		if (garuda_msg_decode(buf, len, 0, &tmp) == 0)
			continue; /* happens to be valid: not garbage */
		char what[64];
		snprintf(what, sizeof(what), "garbage datagram #%d (%zu bytes)", i, len);
		offend_decode(&bench, i % 3 != 0, buf, len, NULL, 0, what);
		checked++;
		if (i % 20 == 0)
			good_served(&bench, what);
	}
	cr_assert_gt(checked, 100);
	fds_back(&bench, "garbage datagrams");
	good_served(&bench, "garbage datagrams");
}

/* An empty datagram reads like EOF on SOCK_SEQPACKET: error or close, both fine; the
 * fds it carried are closed (they leaked, 4 a connection, until garudad ran out) */
Test(badinput, empty_datagram)
{
	static const unsigned nfds[] = { 0, 1, 4 };
	for (int hello = 0; hello < 2; hello++) {
		for (unsigned k = 0; k < sizeof(nfds) / sizeof(nfds[0]); k++) {
			struct gd_client c;
			bad_open(&bench, &c, hello);
			int fds[4];
			for (unsigned i = 0; i < nfds[k]; i++)
				fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			gd_ok(gd_send_raw(&c, "", 0, fds, nfds[k]));
			for (unsigned i = 0; i < nfds[k]; i++)
				close(fds[i]);
			int code = expect_close(&c, 0, 0, "empty datagram");
			cr_assert(code == 0 || code == GARUDA_E_TOO_SHORT, "empty datagram: %s",
				  gd_strerr(code));
			gd_close(&c);
		}
	}
	fds_back(&bench, "empty datagrams, with and without fds");
	good_served(&bench, "empty datagrams");
}

/* A client's comm is its own to choose: control characters in it (a terminal's escape
 * sequences, a carriage return that hides the start of the line) reach garudad's log
 * as \xHH, never raw. The session ended for an empty datagram logs its comm. */
Test(badinput, control_characters_of_a_comm_are_logged_escaped)
{
	char old[16] = "";
	prctl(PR_GET_NAME, old);
	prctl(PR_SET_NAME, "x\033[31m\rFAKE\a");
	struct gd_client c;
	int r = gd_open(&c, bench.d.sock);
	prctl(PR_SET_NAME, old);
	cr_assert_eq(r, 0, "offender connect: %s", gd_strerr(r));
	gd_ok(gd_send_raw(&c, "", 0, NULL, 0));
	expect_close(&c, GARUDA_E_TOO_SHORT, 0, "empty datagram");
	gd_close(&c);
	cr_assert(gd_wait_log(&bench.d, "x\\x1B[31m\\x0DFAKE\\x07): "), "the comm is not escaped: %s",
		  bench.d.log);
	good_served(&bench, "a comm with control characters");
}

Test(badinput, truncated_messages)
{
	uint8_t buf[GARUDA_MSG_MAX];
	size_t len = valid_arm(buf, 77);
	const size_t cuts[] = { 1, 8, 23, 24, 25, 40, 55 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		char what[64];
		snprintf(what, sizeof(what), "ARM cut to %zu of %zu bytes", cuts[i], len);
		offend_decode(&bench, true, buf, cuts[i], NULL, 0, what);
	}
	/* cut, with the header's length agreeing: too short for the body */
	uint8_t cut[GARUDA_MSG_MAX];
	memcpy(cut, buf, len);
	put32(cut + 4, 40);
	offend_decode(&bench, true, cut, 40, NULL, 0, "ARM cut to 40 bytes, header says 40");
	/* every request type, one byte short */
	const enum garuda_msg_type types[] = { GARUDA_MSG_HELLO, GARUDA_MSG_SEGMENT_OPEN,
					       GARUDA_MSG_SEGMENT_CLOSE, GARUDA_MSG_UNBIND,
					       GARUDA_MSG_DISARM };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct garuda_msg m;
		garuda_msg_init(&m, types[i], 5);
		if (types[i] == GARUDA_MSG_SEGMENT_OPEN)
			m.segment_open.lines = 1;
		size_t n = encode(&m, buf);
		put32(buf + 4, (uint32_t)n - 1);
		char what[64];
		snprintf(what, sizeof(what), "%s one byte short", garuda_msg_type_name(types[i]));
		offend_decode(&bench, types[i] != GARUDA_MSG_HELLO, buf, n - 1, NULL, 0, what);
	}
	fds_back(&bench, "truncated messages");
	good_served(&bench, "truncated messages");
}

Test(badinput, oversized_messages)
{
	static uint8_t big[70000];
	size_t len = valid_arm(big, 88);
	/* trailing bytes, header agreeing */
	put32(big + 4, (uint32_t)len + 8);
	offend_decode(&bench, true, big, len + 8, NULL, 0, "ARM with 8 trailing bytes");
	const size_t sizes[] = { GARUDA_MSG_MAX, GARUDA_MSG_MAX + 1, 4096, 65000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		put32(big + 4, (uint32_t)sizes[i]);
		char what[64];
		snprintf(what, sizeof(what), "%zu-byte ARM", sizes[i]);
		offend_decode(&bench, true, big, sizes[i], NULL, 0, what);
		offend_decode(&bench, false, big, sizes[i], NULL, 0, what);
	}
	fds_back(&bench, "oversized messages");
	good_served(&bench, "oversized messages");
}

/* Header fd count and the fds that came disagree, or the type carries no fd */
Test(badinput, wrong_fd_counts)
{
	uint8_t buf[GARUDA_MSG_MAX];
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	int e1 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), e2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int fds4[4] = { e1, e2, p[0], p[1] };
	struct garuda_msg m;

	/* BIND: header says 1, none came */
	garuda_msg_init(&m, GARUDA_MSG_BIND, 10);
	m.bind.slot.segment = 1;
	size_t n = encode(&m, buf);
	offend_decode(&bench, true, buf, n, NULL, 0, "BIND without its fd");
	/* BIND: header says 1, two came */
	offend_decode(&bench, true, buf, n, fds4, 2, "BIND with 2 fds, header 1");
	/* BIND: header says 2, two came (the type carries one) */
	put16(buf + 8, 2);
	offend_decode(&bench, true, buf, n, fds4, 2, "BIND with 2 fds, header 2");
	put16(buf + 8, 4);
	offend_decode(&bench, true, buf, n, fds4, 4, "BIND with 4 fds, header 4");
	/* ARM with an fd, header 0 and header 1 */
	n = valid_arm(buf, 11);
	offend_decode(&bench, true, buf, n, &e1, 1, "ARM with an eventfd, header 0");
	put16(buf + 8, 1);
	offend_decode(&bench, true, buf, n, &e1, 1, "ARM with an eventfd, header 1");
	/* HELLO with an fd, before the handshake */
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 12);
	n = encode(&m, buf);
	offend_decode(&bench, false, buf, n, &p[0], 1, "HELLO with an fd");
	/* SEGMENT_OPEN with a pipe; SEGMENT_ATTACH without its fd */
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, 13);
	m.segment_open.lines = 1;
	n = encode(&m, buf);
	offend_decode(&bench, true, buf, n, &p[1], 1, "SEGMENT_OPEN with a pipe");
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 14);
	m.segment_open.lines = 1;
	n = encode(&m, buf);
	offend_decode(&bench, true, buf, n, NULL, 0, "SEGMENT_ATTACH without its memfd");
	good_served(&bench, "wrong fd counts");

	/* more fds than anyone receives at once (8): an error or a close */
	{
		struct gd_client c;
		bad_open(&bench, &c, true);
		garuda_msg_init(&m, GARUDA_MSG_BIND, 15);
		m.bind.slot.segment = 1;
		n = encode(&m, buf);
		int many[8];
		for (int i = 0; i < 8; i++)
			many[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		union {
			struct cmsghdr align;
			char b[CMSG_SPACE(sizeof(many))];
		} ctl;
		memset(&ctl, 0, sizeof(ctl));
		struct iovec iov = { .iov_base = buf, .iov_len = n };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
				     .msg_controllen = sizeof(ctl.b) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(many));
		memcpy(CMSG_DATA(cm), many, sizeof(many));
		cr_assert_eq(sendmsg(c.fd, &mh, MSG_NOSIGNAL), (ssize_t)n);
		for (int i = 0; i < 8; i++)
			close(many[i]);
		expect_close(&c, 0, 15, "BIND with 8 fds");
		gd_close(&c);
	}
	close(e1);
	close(e2);
	close(p[0]);
	close(p[1]);
	fds_back(&bench, "wrong fd counts");
	good_served(&bench, "wrong fd counts");
}

/* Reserved bits, unknown types, values and slots out of the protocol's range */
Test(badinput, reserved_types_and_ranges)
{
	uint8_t buf[GARUDA_MSG_MAX];
	size_t n;
	struct garuda_msg m;

	n = valid_arm(buf, 20);
	put16(buf + 2, 0x8000);
	offend_decode(&bench, true, buf, n, NULL, 0, "ARM with an unknown flag");
	n = valid_arm(buf, 21);
	buf[12] = 1;
	offend_decode(&bench, true, buf, n, NULL, 0, "ARM with a reserved header byte set");
	n = valid_arm(buf, 22);
	buf[n - 5] = 0xff; /* byte 51: bytes 52-55 are the point (feature POINTS) */
	offend_decode(&bench, true, buf, n, NULL, 0, "ARM with a reserved body byte set");
	{ /* a point id decodes, but without POINTS the daemon refuses it as reserved */
		n = valid_arm(buf, 22);
		buf[n - 1] = 0xff;
		struct gd_client c;
		bad_open(&bench, &c, true);
		cr_assert_eq(gd_send_raw(&c, buf, n, NULL, 0), 0);
		expect_close(&c, GARUDA_E_RESERVED_SET, 22, "ARM naming a point without POINTS");
		gd_close(&c);
	}
	const uint16_t types[] = { 0, GARUDA_MSG_TYPE_MAX_ + 1, 200, 0xffff };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		n = valid_arm(buf, 23);
		put16(buf, types[i]);
		char what[48];
		snprintf(what, sizeof(what), "message type %u", types[i]);
		offend_decode(&bench, true, buf, n, NULL, 0, what);
	}
	const uint8_t forms[] = { 0, 4, 255 };
	for (size_t i = 0; i < 3; i++) {
		n = valid_arm(buf, 24);
		buf[GARUDA_HDR_BYTES + 24] = forms[i];
		char what[48];
		snprintf(what, sizeof(what), "ARM with form %u", forms[i]);
		offend_decode(&bench, true, buf, n, NULL, 0, what);
	}
	n = valid_arm(buf, 25);
	put32(buf + GARUDA_HDR_BYTES + 4, GARUDA_SEGMENT_MAX_LINES * GARUDA_WORDS_PER_LINE);
	offend_decode(&bench, true, buf, n, NULL, 0, "ARM with a slot index beyond any segment");
	const struct {
		uint32_t lines;
		int32_t node;
	} opens[] = { { 0, -1 }, { GARUDA_SEGMENT_MAX_LINES + 1, -1 }, { 1, -2 },
		      { 1, GARUDA_NUMA_MAX + 1 } };
	for (size_t i = 0; i < 4; i++) {
		garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, 26);
		m.segment_open.lines = 1;
		n = encode(&m, buf);
		put32(buf + GARUDA_HDR_BYTES, opens[i].lines);
		put32(buf + GARUDA_HDR_BYTES + 4, (uint32_t)opens[i].node);
		char what[64];
		snprintf(what, sizeof(what), "SEGMENT_OPEN lines %u node %d", opens[i].lines,
			 opens[i].node);
		offend_decode(&bench, true, buf, n, NULL, 0, what);
	}
	fds_back(&bench, "reserved bits, types and ranges");
	good_served(&bench, "reserved bits, types and ranges");
}

/* Valid messages that are not requests, and a second HELLO: an error or a close; if
 * the connection stays, it keeps working */
Test(badinput, not_requests)
{
	const enum garuda_msg_type types[] = { GARUDA_MSG_WELCOME, GARUDA_MSG_SEGMENT,
					       GARUDA_MSG_READY, GARUDA_MSG_ERROR, GARUDA_MSG_ACK,
					       GARUDA_MSG_HELLO };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct garuda_msg m;
		garuda_msg_init(&m, types[i], 30 + i);
		if (types[i] == GARUDA_MSG_SEGMENT) {
			m.segment.lines = 1;
			m.segment.bytes = 4096;
		}
		if (types[i] == GARUDA_MSG_ERROR)
			garuda_msg_error(&m, 30 + i, GARUDA_E_QUOTA, "from a client");
		struct gd_client c;
		bad_open(&bench, &c, true);
		gd_ok(gd_send(&c, &m, NULL, 0));
		/* either an ERROR, a close, or both */
		struct garuda_msg rep;
		int r = gd_recv(&c, &rep, NULL, GD_DEADLINE_MS);
		char what[64];
		snprintf(what, sizeof(what), "%s from a client", garuda_msg_type_name(types[i]));
		cr_assert_neq(r, 0, "%s: neither answered nor closed", what);
		if (r == 1) {
			cr_assert_eq(rep.type, GARUDA_MSG_ERROR, "%s: answered %s", what,
				     garuda_msg_type_name(rep.type));
			cr_log_info("%s: ERROR{%s}", what, garuda_errcode_name(rep.error.code));
			struct gd_seg s;
			r = gd_segment_open(&c, 1, -1, &s);
			cr_assert(r == 0 || r == -EPIPE, "%s: connection half-dead: %s", what,
				  gd_strerr(r));
			gd_seg_unmap(&s);
		}
		gd_close(&c);
	}
	/* SEGMENT with an fd, from a client */
	{
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_SEGMENT, 40);
		m.segment.lines = 1;
		m.segment.bytes = 4096;
		int mfd = memfd_create("from-client", MFD_CLOEXEC);
		struct gd_client c;
		bad_open(&bench, &c, true);
		gd_ok(gd_send(&c, &m, &mfd, 1));
		close(mfd);
		struct garuda_msg rep;
		int r = gd_recv(&c, &rep, NULL, GD_DEADLINE_MS);
		cr_assert_neq(r, 0, "SEGMENT with a memfd from a client: neither answered nor closed");
		gd_close(&c);
	}
	cr_assert_eq(gd_wait_status(&bench.d, "clients", 1), 1);
	fds_back(&bench, "messages that are not requests");
	good_served(&bench, "messages that are not requests");
}

/* BIND with an fd that is not an eventfd: ERROR{BAD_FD}, the connection stays, the
 * daemon keeps none of those fds */
Test(badinput, bind_non_eventfd)
{
	struct gd_client c;
	struct gd_seg s;
	bad_open(&bench, &c, true);
	gd_ok(gd_segment_open(&c, 4, -1, &s));
	int before = gd_fd_count(&bench.d);

	int p[2], sp[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	struct {
		const char *name;
		int fd;
	} fds[] = {
		{ "a pipe (read end)", p[0] },
		{ "a pipe (write end)", p[1] },
		{ "a memfd", memfd_create("not-an-eventfd", MFD_CLOEXEC) },
		{ "/dev/null", open("/dev/null", O_RDWR | O_CLOEXEC) },
		{ "a socket", sp[0] },
		{ "a timerfd", timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) },
		{ "a signalfd", signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK) },
		{ "an epoll fd", epoll_create1(EPOLL_CLOEXEC) },
		{ "its own segment memfd", s.memfd },
		{ "its own connection", c.fd },
		{ "a directory", open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) },
	};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		cr_assert_geq(fds[i].fd, 0, "cannot make %s", fds[i].name);
		int r = gd_bind(&c, gd_slot(&s, (uint32_t)i), fds[i].fd);
		cr_assert_eq(r, GARUDA_E_BAD_FD, "BIND of %s: %s, expected ERROR{BAD_FD}", fds[i].name,
			     gd_strerr(r));
	}
	/* the connection works: a real eventfd binds and fires */
	int efd;
	gd_ok(gd_bind_new(&c, gd_slot(&s, 20), &efd));
	gd_ok(gd_arm(&c, gd_slot(&s, 20), 1, 1, GARUDA_FORM_EVENTFD));
	gd_store(&s, 20, 1);
	cr_assert_eq(gd_eventfd_read(efd, GD_DEADLINE_MS), 1);
	gd_ok(gd_unbind(&c, gd_slot(&s, 20)));
	int n = gd_wait_fds_at_most(&bench.d, before);
	cr_assert_leq(n, before, "the daemon kept refused BIND fds: %d fds, %d before", n, before);
	good_served(&bench, "BINDs of non-eventfds");

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i].fd != s.memfd && fds[i].fd != c.fd && fds[i].fd != sp[0])
			close(fds[i].fd);
	close(sp[0]);
	close(sp[1]);
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	fds_back(&bench, "BINDs of non-eventfds");
}

/* The saturated blocking eventfd: the client fills its counter to the maximum
 * (0xfffffffffffffffe), clears O_NONBLOCK and arms. A write by the daemon would block
 * forever: the client must get ERROR{BAD_FD} (cookie 0) and be disconnected, and the
 * good client's readiness must still come. */
static void saturate(int efd, bool clear_nonblock)
{
	uint64_t max = 0xfffffffffffffffeull;
	cr_assert_eq(write(efd, &max, sizeof(max)), (ssize_t)sizeof(max), "saturate: %s",
		     strerror(errno));
	if (clear_nonblock) {
		int fl = fcntl(efd, F_GETFL);
		cr_assert_eq(fcntl(efd, F_SETFL, fl & ~O_NONBLOCK), 0);
	}
}

static void saturated_blocking(bool before_bind)
{
	struct gd_client c;
	struct gd_seg s;
	bad_open(&bench, &c, true);
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (before_bind)
		saturate(efd, true);
	int r = gd_bind(&c, gd_slot(&s, 0), efd);
	if (before_bind && r == GARUDA_E_BAD_FD) {
		/* refused at BIND (blocking eventfd): fine, nothing can block later */
		cr_log_info("a saturated blocking eventfd is refused at BIND");
	} else {
		cr_assert_eq(r, 0, "BIND: %s", gd_strerr(r));
		if (!before_bind)
			saturate(efd, true);
		gd_ok(gd_arm(&c, gd_slot(&s, 0), 1, 1, GARUDA_FORM_EVENTFD));
		gd_store(&s, 0, 1);
		/* good is served meanwhile: its readiness comes (a blocked daemon would
		 * never deliver it) */
		uint32_t bell = gd_doorbell(&bench.gs), now;
		for (uint32_t i = 0; i < 3; i++)
			gd_store(&bench.gs, i, bench.next);
		struct garuda_ready rd;
		r = gd_wait_ready(&bench.good, &rd, GD_DEADLINE_MS);
		if (r != 1) {
			uint64_t v;
			if (read(efd, &v, sizeof(v)) < 0) /* unblock the daemon for the cleanup */
				cr_log_warn("read: %s", strerror(errno));
		}
		cr_assert_eq(r, 1, "good client's READY while another client's eventfd is "
			     "saturated and blocking: %s", gd_strerr(r));
		cr_assert_eq(gd_eventfd_read(bench.efd, GD_DEADLINE_MS), 1);
		cr_assert_eq(gd_doorbell_wait(&bench.gs, bell, &now, GD_DEADLINE_MS), 1);
		good_arm(&bench);
		expect_close(&c, GARUDA_E_BAD_FD, 0, "saturated blocking eventfd");
	}
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	cr_assert_eq(gd_wait_status(&bench.d, "clients", 1), 1);
	fds_back(&bench, "a saturated blocking eventfd");
	good_served(&bench, "a saturated blocking eventfd");
}

Test(badinput, saturated_blocking_eventfd)
{
	saturated_blocking(false);
}

Test(badinput, saturated_blocking_eventfd_before_bind)
{
	saturated_blocking(true);
}

/* Saturated but still non-blocking: the daemon's write fails with EAGAIN, which is
 * no reason to hurt anyone (the eventfd is readable anyway) */
Test(badinput, saturated_nonblocking_eventfd)
{
	struct gd_client c;
	struct gd_seg s;
	int efd;
	bad_open(&bench, &c, true);
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	gd_ok(gd_bind_new(&c, gd_slot(&s, 0), &efd));
	saturate(efd, false);
	for (uint64_t t = 1; t <= 3; t++)
		gd_ok(gd_arm(&c, gd_slot(&s, 0), t, t, GARUDA_FORM_EVENTFD));
	gd_store(&s, 0, 3);
	good_served(&bench, "a saturated non-blocking eventfd");
	/* the client is still there and its eventfd still readable */
	gd_ok(gd_arm(&c, gd_slot(&s, 1), 1, 9, GARUDA_FORM_MESSAGE));
	gd_store(&s, 1, 1);
	struct garuda_ready rd;
	int r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "saturated non-blocking client: %s", gd_strerr(r));
	uint64_t v = 0;
	cr_assert_eq(read(efd, &v, sizeof(v)), (ssize_t)sizeof(v), "eventfd not readable");
	cr_assert_eq(v, 0xfffffffffffffffeull, "eventfd counter %llx", (unsigned long long)v);
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	fds_back(&bench, "a saturated non-blocking eventfd");
}

/* Connections that come and go without a word, or half-close */
Test(badinput, connection_churn)
{
	for (int i = 0; i < 200; i++) {
		struct gd_client c;
		bad_open(&bench, &c, i % 2);
		if (i % 4 == 3)
			shutdown(c.fd, SHUT_WR);
		gd_close(&c);
	}
	struct gd_client idle[50];
	for (int i = 0; i < 50; i++)
		bad_open(&bench, &idle[i], i % 2);
	cr_assert_eq(gd_wait_status(&bench.d, "clients", 51), 51);
	good_served(&bench, "50 idle connections");
	for (int i = 0; i < 50; i++)
		gd_close(&idle[i]);
	cr_assert_eq(gd_wait_status(&bench.d, "clients", 1), 1);
	fds_back(&bench, "connection churn");
	good_served(&bench, "connection churn");
}

/* A client that never reads while its readiness piles up: the daemon must not block
 * on it. When it reads at last it finds each READY once, or an OVERFLOW READY
 * ("re-check your words"), or it was disconnected (SLOW_PEER) — never a silent loss. */
Test(badinput_small_outbox, slow_reader)
{
	struct gd_client c;
	struct gd_seg s;
	bad_open(&bench, &c, true);
	const uint32_t lines = 512, words = lines * GARUDA_WORDS_PER_LINE; /* 4096 */
	gd_ok(gd_segment_open(&c, lines, -1, &s));
	int sz = 4096;
	setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	for (uint32_t i = 0; i < words; i++) {
		int r = gd_arm_flags(&c, gd_slot(&s, i), 1, i, GARUDA_FORM_MESSAGE, GARUDA_F_NOREPLY);
		cr_assert_eq(r, 0, "arm %u: %s", i, gd_strerr(r));
	}
	/* wait until the daemon has taken all arms (or errors are queued) */
	long long armed;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	while ((armed = gd_status_num(&bench.d, "armed")) < (long long)words + 3 && gd_left_ms(dl) > 0)
		usleep(2000);
	cr_assert_eq(armed, (long long)words + 3, "armed %lld", armed);
	for (uint32_t i = 0; i < words; i++)
		gd_store(&s, i, 1);
	/* the good client is served while c's readiness piles up */
	good_served(&bench, "a non-reading client's readiness piling up");

	/* now read everything */
	static unsigned char seen[4096];
	memset(seen, 0, sizeof(seen));
	unsigned got = 0, dup = 0;
	bool overflow = false, closed = false;
	int err = 0;
	for (;;) {
		struct garuda_msg m;
		int r = gd_recv(&c, &m, NULL, overflow ? GD_QUIET_MS * 4 : GD_DEADLINE_MS);
		if (r == -EPIPE) {
			closed = true;
			break;
		}
		if (r == 0)
			break;
		cr_assert_eq(r, 1, "%s", gd_strerr(r));
		if (m.type == GARUDA_MSG_ERROR) {
			err = m.error.code;
			continue;
		}
		cr_assert_eq(m.type, GARUDA_MSG_READY, "got %s", garuda_msg_type_name(m.type));
		if (m.ready.flags & GARUDA_READY_OVERFLOW) {
			overflow = true;
			continue;
		}
		cr_assert_lt(m.ready.token, words);
		if (seen[m.ready.token]++)
			dup++;
		got++;
		if (got == words && !overflow)
			break;
	}
	cr_log_info("slow reader: %u READY, overflow %d, closed %d, error %s", got, overflow, closed,
		    err ? garuda_errcode_name(err) : "none");
	cr_assert_eq(dup, 0, "%u duplicate READY", dup);
	cr_assert(got == words || overflow || closed,
		  "%u of %u READY, no OVERFLOW, not disconnected: readiness silently lost", got,
		  words);
	if (closed && !overflow && got < words)
		cr_assert(err == GARUDA_E_SLOW_PEER || err == 0, "closed with %s", gd_strerr(err));
	gd_seg_unmap(&s);
	gd_close(&c);
	cr_assert_eq(gd_wait_status(&bench.d, "clients", 1), 1);
	fds_back(&bench, "a slow reader");
	good_served(&bench, "a slow reader");
}

/* A client that does not read: a small receive buffer, then n ARMs (message form,
 * never reached) whose ACKs fill its socket and then the daemon's outbox */
static void unread_acks(struct gd_client *c, struct gd_seg *s, unsigned n)
{
	int sz = 4096;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	for (unsigned i = 0; i < n; i++) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_ARM, ++c->cookie);
		m.arm.slot = gd_slot(s, i % 512);
		m.arm.target = 1000000 + i;
		m.arm.token = i;
		m.arm.form = GARUDA_FORM_MESSAGE;
		int r = gd_send(c, &m, NULL, 0);
		cr_assert_eq(r, 0, "request %u: %s", i, gd_strerr(r));
	}
}

/* A client that pipelines many requests before reading any reply: the replies that do
 * not fit its socket wait in the daemon's outbox (within outbox_bytes) and all arrive
 * once it reads; meanwhile everyone else is served. */
Test(badinput, unread_replies)
{
	struct gd_client c;
	struct gd_seg s;
	bad_open(&bench, &c, true);
	gd_ok(gd_segment_open(&c, 64, -1, &s));
	const unsigned n = 3000; /* 3000 ACKs = 72 KB < outbox_bytes 256 KiB */
	uint64_t first = c.cookie + 1;
	unread_acks(&c, &s, n);
	good_served(&bench, "a client not reading its replies");
	unsigned acks = 0;
	for (;;) {
		struct garuda_msg m;
		int r = gd_recv(&c, &m, NULL, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "after %u of %u ACKs: %s", acks, n,
			     r == 0 ? "nothing more came" : gd_strerr(r));
		cr_assert_eq(m.type, GARUDA_MSG_ACK, "reply %u: %s", acks, garuda_msg_type_name(m.type));
		cr_assert_eq(m.cookie, first + acks, "reply %u has cookie %llu", acks,
			     (unsigned long long)m.cookie);
		if (++acks == n)
			break;
	}
	gd_seg_unmap(&s);
	gd_close(&c);
	cr_assert_eq(gd_wait_status(&bench.d, "clients", 1), 1);
	fds_back(&bench, "unread replies");
	good_served(&bench, "unread replies");
}

/* A client that opens a segment and closes it without reading the SEGMENT reply (ids
 * are predictable): the reply, queued in the daemon's outbox, goes with the segment,
 * and so does the memfd it held; a queued copy outlived the segment's quota and pinned
 * its memory, as many times over as the client cared to repeat it */
Test(badinput, a_closed_segments_unsent_reply_goes_with_it)
{
	struct gd_client c;
	struct gd_seg s;
	bad_open(&bench, &c, true);
	gd_ok(gd_segment_open(&c, 64, -1, &s));
	int base = gd_fd_count(&bench.d);
	const unsigned n = 1000; /* ACKs that fill the socket: the rest waits in the outbox */
	unread_acks(&c, &s, n);
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, ++c.cookie);
	m.segment_open.lines = 16;
	m.segment_open.numa_node = -1;
	gd_ok(gd_send(&c, &m, NULL, 0));
	uint32_t id = s.id + 1; /* the next id (garudad counts them up) */
	cr_assert_eq(gd_wait_status(&bench.d, "segments", 3), 3); /* good's, s, the new one */
	/* the new segment's memfd and its queued copy (and, with the epoll loop, the
	 * outbox's POLLOUT watch: epoll watches one fd once, so a second watch is a dup) */
	int open = gd_fd_count(&bench.d);
	cr_assert_geq(open, base + 2, "the segment's memfd and its queued copy");
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, ++c.cookie);
	m.flags = GARUDA_F_NOREPLY;
	m.segment_close.segment_id = id;
	gd_ok(gd_send(&c, &m, NULL, 0));
	int fds = gd_wait_fds_at_most(&bench.d, open - 2);
	cr_assert_leq(fds, open - 2, "segment %u closed unread: the daemon holds %d fds, %d with it",
		      id, fds, open);
	good_served(&bench, "a segment closed unread");
	unsigned acks = 0, segments = 0;
	for (;;) {
		int r = gd_recv(&c, &m, NULL, GD_QUIET_MS);
		if (r == 0)
			break;
		cr_assert_eq(r, 1, "%s", gd_strerr(r));
		acks += m.type == GARUDA_MSG_ACK;
		segments += m.type == GARUDA_MSG_SEGMENT;
	}
	cr_assert_eq(acks, n);
	cr_assert_eq(segments, 0, "the SEGMENT reply of a segment closed before it left");
	gd_seg_unmap(&s);
	gd_close(&c);
	fds_back(&bench, "a segment closed unread");
}

/* The client scribbles over its segment's header (every value in shared memory is the
 * client's to write): the daemon trusts none of it and keeps serving every form. */
Test(badinput, scribbled_segment_header)
{
	struct gd_client c;
	struct gd_seg s;
	int efd;
	bad_open(&bench, &c, true);
	gd_ok(gd_segment_open(&c, 2, -1, &s));
	gd_ok(gd_bind_new(&c, gd_slot(&s, 0), &efd));
	s.map->hdr.magic = 0;
	s.map->hdr.layout = 0xffffffffu;
	s.map->hdr.lines = 0xffffffffu;
	s.map->hdr.segment_id = s.id + 12345;
	s.map->hdr.numa_node = -77;
	memset(s.map->hdr.reserved0, 0xff, sizeof(s.map->hdr.reserved0));
	__atomic_store_n(&s.map->hdr.doorbell, 0xffffffffu, __ATOMIC_RELEASE);
	memset(s.map->hdr.reserved1, 0xff, sizeof(s.map->hdr.reserved1));
	gd_ok(gd_arm(&c, gd_slot(&s, 0), 1, 1, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&c, gd_slot(&s, 1), 1, 2, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&c, gd_slot(&s, 15), 1, 3, GARUDA_FORM_DOORBELL));
	gd_refused(gd_arm(&c, gd_slot(&s, 16), 1, 4, GARUDA_FORM_MESSAGE), GARUDA_E_SLOT_RANGE);
	for (uint32_t i = 0; i < 16; i++)
		gd_store(&s, i, 1);
	cr_assert_eq(gd_eventfd_read(efd, GD_DEADLINE_MS), 1);
	struct garuda_ready rd;
	int r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s", gd_strerr(r));
	cr_assert_eq(rd.token, 2);
	cr_assert_eq(rd.slot.segment, s.id, "READY names segment %u (the header's scribble?)",
		     rd.slot.segment);
	uint32_t now;
	cr_assert_eq(gd_doorbell_wait(&s, 0xffffffffu, &now, GD_DEADLINE_MS), 1);
	cr_assert_eq(now, 0, "doorbell 0xffffffff + 1 wrapped to %u", now);
	good_served(&bench, "a scribbled segment header");
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	fds_back(&bench, "a scribbled segment header");
}

/* A session ends while its DISARMs are still queued for the scanner: the scanner must
 * not touch the session's memory (the ASan build runs this daemon under ASan), and no
 * stray answer reaches another client. */
Test(badinput, disarms_queued_at_disconnect)
{
	for (int round = 0; round < 20; round++) {
		struct gd_client c;
		struct gd_seg s;
		bad_open(&bench, &c, true);
		gd_ok(gd_segment_open(&c, 1, -1, &s));
		for (unsigned i = 0; i < 60; i++) {
			struct garuda_msg m;
			garuda_msg_init(&m, GARUDA_MSG_DISARM, ++c.cookie);
			m.disarm.slot = gd_slot(&s, 0);
			m.disarm.token = i;
			gd_ok(gd_send(&c, &m, NULL, 0));
		}
		uint8_t junk[GARUDA_HDR_BYTES] = { 0xff, 0xff }; /* unknown type: disconnect */
		junk[4] = GARUDA_HDR_BYTES;
		gd_ok(gd_send_raw(&c, junk, sizeof(junk), NULL, 0));
		gd_seg_unmap(&s);
		gd_close(&c);
	}
	struct garuda_msg m;
	cr_assert_eq(gd_quiet(&bench.good, 200, &m), 0, "the good client got a stray %s",
		     garuda_msg_type_name(m.type));
	good_served(&bench, "sessions closed with DISARMs queued");
	fds_back(&bench, "sessions closed with DISARMs queued");
}

/* A client holding many armed descriptors disarms them one DISARM at a time, as fast
 * as it can: every DISARM takes its descriptor exactly once and another client's
 * readiness still comes through. (The daemon applies removals per batch of commands,
 * one pass over the armed set per batch; how long the good client waits is not
 * asserted: timings are the benchmarks' business.) */
Test(badinput, disarm_flood)
{
	struct gd_client c;
	struct gd_seg s;
	bad_open(&bench, &c, true);
	gd_ok(gd_segment_open(&c, 64, -1, &s));
	enum { ARMED = 1333 * GARUDA_BATCH_MAX }; /* whole batches */
	for (unsigned i = 0; i < ARMED; i += GARUDA_BATCH_MAX) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 0);
		m.flags = GARUDA_F_NOREPLY;
		m.arm_batch.count = GARUDA_BATCH_MAX;
		for (unsigned k = 0; k < GARUDA_BATCH_MAX; k++)
			m.arm_batch.arm[k] = (struct garuda_arm){ .slot = gd_slot(&s, (i + k) % 512),
								  .target = UINT64_C(1) << 62,
								  .token = i + k,
								  .form = GARUDA_FORM_DOORBELL };
		gd_ok(gd_send(&c, &m, NULL, 0));
	}
	cr_assert_geq(gd_wait_status(&bench.d, "armed", ARMED + 3), ARMED + 3);
	int sz = 1 << 20;
	setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	for (unsigned i = 0; i < ARMED; i++) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
		m.flags = GARUDA_F_NOREPLY; /* each matches: no reply at all */
		m.disarm.slot = gd_slot(&s, i % 512);
		m.disarm.token = i;
		gd_ok(gd_send(&c, &m, NULL, 0));
	}
	good_served(&bench, "a DISARM flood");
	cr_assert_eq(gd_wait_status(&bench.d, "armed", 3), 3, "every DISARM took its descriptor");
	gd_seg_unmap(&s);
	gd_close(&c);
}

/* The ERROR that ends a session goes out even when replies are queued before it. */
Test(badinput, error_after_queued_replies)
{
	struct gd_client c;
	bad_open(&bench, &c, true);
	int sz = 4096;
	setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	for (unsigned i = 0; i < 1000; i++) { /* more than the socket holds: replies queue */
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_QUERY, ++c.cookie);
		gd_ok(gd_send(&c, &m, NULL, 0));
	}
	uint8_t junk[GARUDA_HDR_BYTES] = { 0xff, 0xff };
	junk[4] = GARUDA_HDR_BYTES;
	gd_ok(gd_send_raw(&c, junk, sizeof(junk), NULL, 0));
	bool error = false;
	unsigned replies = 0;
	int r;
	for (;;) {
		struct garuda_msg m;
		r = gd_recv(&c, &m, NULL, GD_DEADLINE_MS);
		if (r != 1)
			break; /* EOF */
		replies++;
		if (m.type == GARUDA_MSG_ERROR) {
			cr_assert_eq(m.error.code, GARUDA_E_UNKNOWN_TYPE);
			error = true;
		}
	}
	cr_assert(error, "the session ended without its ERROR (%u replies, then %s)", replies,
		  gd_strerr(r));
	gd_close(&c);
	good_served(&bench, "a violation behind queued replies");
}
