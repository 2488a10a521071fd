/* test_session.c — garudad sessions: HELLO/WELCOME, version mismatch, the first
 * message rule, segments (memfd, seals, header, close, attach) and isolation between
 * clients (an arm on another client's segment is refused). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <endian.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdio.h"
#include "harness.h"

TestSuite(session, .init = gd_test_init, .fini = gd_test_fini, .timeout = 120);

static const char *small_quota =
	"{\"quota\":{\"connection\":{\"segments\":5,\"lines\":100,\"bindings\":7,\"armed\":9}}}";

/* Read from c until the daemon closes; every message must be an ERROR with `code`
 * (at most one), *got_error tells whether one came. */
static void expect_error_then_close(struct gd_client *c, int code, uint64_t cookie,
				    bool *got_error, const char *what)
{
	struct garuda_msg m;
	*got_error = false;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	for (;;) {
		int r = gd_recv(c, &m, NULL, gd_left_ms(dl));
		if (r == -EPIPE)
			return;
		cr_assert_neq(r, 0, "%s: %s: daemon neither answered nor closed within %d ms",
			      what, *got_error ? "after the ERROR" : "no ERROR", GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "waiting for ERROR{%s} and close: %s",
			     garuda_errcode_name(code), gd_strerr(r));
		cr_assert_eq(m.type, GARUDA_MSG_ERROR, "expected ERROR{%s}, got %s",
			     garuda_errcode_name(code), garuda_msg_type_name(m.type));
		cr_assert_eq(m.error.code, code, "expected ERROR{%s}, got %s (\"%s\")",
			     garuda_errcode_name(code), gd_strerr(m.error.code), m.error.text);
		cr_assert(m.cookie == cookie || m.cookie == 0,
			  "ERROR cookie %llu, expected the request's %llu (or 0)",
			  (unsigned long long)m.cookie, (unsigned long long)cookie);
		cr_assert_not(*got_error, "two ERRORs for one request");
		*got_error = true;
	}
}

Test(session, handshake)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = small_quota });

	struct gd_client a, b;
	gd_ok(gd_connect(&a, d.sock));
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 0x1234567890abcdefull);
	gd_ok(gd_send(&a, &m, NULL, 0));
	int fd = -1;
	int r = gd_recv(&a, &rep, &fd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "no answer to HELLO: %s", gd_strerr(r));
	cr_assert_eq(fd, -1, "WELCOME came with an fd");
	cr_assert_eq(rep.type, GARUDA_MSG_WELCOME, "HELLO answered by %s (code %d)",
		     garuda_msg_type_name(rep.type),
		     rep.type == GARUDA_MSG_ERROR ? rep.error.code : 0);
	cr_assert_eq(rep.cookie, 0x1234567890abcdefull, "WELCOME does not carry HELLO's cookie");
	cr_assert_eq(rep.welcome.version, GARUDA_PROTO_VERSION);
	cr_assert_eq(rep.welcome.max_message, GARUDA_MSG_MAX);
	cr_assert_eq(rep.welcome.max_segments, 5, "WELCOME max_segments %u, config says 5",
		     rep.welcome.max_segments);
	cr_assert_eq(rep.welcome.max_lines, 100, "WELCOME max_lines %u", rep.welcome.max_lines);
	cr_assert_eq(rep.welcome.max_bindings, 7, "WELCOME max_bindings %u",
		     rep.welcome.max_bindings);
	cr_assert_eq(rep.welcome.max_armed, 9, "WELCOME max_armed %u", rep.welcome.max_armed);
	uint64_t sid_a = rep.welcome.session_id;

	gd_ok(gd_open(&b, d.sock));
	cr_assert_neq(b.welcome.session_id, sid_a, "two sessions share session id %llu",
		      (unsigned long long)sid_a);
	cr_assert_eq(gd_wait_status(&d, "clients", 2), 2, "status does not count 2 clients");

	/* the session works after the handshake */
	struct gd_seg s;
	gd_ok(gd_segment_open(&a, 1, -1, &s));
	gd_seg_unmap(&s);

	gd_close(&a);
	cr_assert_eq(gd_wait_status(&d, "clients", 1), 1, "closed client still counted");
	gd_close(&b);
	cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
	gd_stop(&d);
}

/* HELLO with a version other than GARUDA_PROTO_VERSION: ERROR{BAD_VERSION}, close */
Test(session, version_mismatch)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	gd_baseline(&d);

	const uint32_t versions[] = { 0, 2, GARUDA_PROTO_VERSION + 1, 0xffffffffu };
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct gd_client c;
		gd_ok(gd_connect(&c, d.sock));
		struct garuda_msg m;
		uint8_t buf[GARUDA_MSG_MAX];
		garuda_msg_init(&m, GARUDA_MSG_HELLO, 40 + i);
		ssize_t len = garuda_msg_encode(&m, buf, sizeof(buf));
		cr_assert_gt(len, 0);
		uint32_t v = htole32(versions[i]);
		memcpy(buf + GARUDA_HDR_BYTES, &v, 4); /* hello.version */
		gd_ok(gd_send_raw(&c, buf, (size_t)len, NULL, 0));
		bool got;
		expect_error_then_close(&c, GARUDA_E_BAD_VERSION, 40 + i, &got, "HELLO with a bad version");
		cr_assert(got, "HELLO version %u: closed without ERROR{BAD_VERSION}", versions[i]);
		gd_close(&c);
	}
	cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
	int fds = gd_wait_fds_at_most(&d, d.fd_baseline);
	cr_assert_leq(fds, d.fd_baseline, "daemon has %d fds, %d before", fds, d.fd_baseline);

	struct gd_client ok;
	gd_ok(gd_open(&ok, d.sock));
	gd_close(&ok);
	gd_stop(&d);
}

/* any first message but HELLO: ERROR{UNEXPECTED}, close */
Test(session, first_message_must_be_hello)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	gd_baseline(&d);

	const enum garuda_msg_type types[] = { GARUDA_MSG_SEGMENT_OPEN, GARUDA_MSG_ARM,
					       GARUDA_MSG_DISARM, GARUDA_MSG_SEGMENT_CLOSE,
					       GARUDA_MSG_UNBIND, GARUDA_MSG_BIND };
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct gd_client c;
		gd_ok(gd_connect(&c, d.sock));
		struct garuda_msg m;
		garuda_msg_init(&m, types[i], 700 + i);
		m.segment_open.lines = 1; /* the union: harmless for the other types */
		m.arm.form = GARUDA_FORM_MESSAGE;
		if (types[i] == GARUDA_MSG_SEGMENT_OPEN) {
			memset(&m.segment_open, 0, sizeof(m.segment_open));
			m.segment_open.lines = 1;
			m.segment_open.numa_node = -1;
		}
		int efd = -1;
		unsigned nfds = 0;
		if (types[i] == GARUDA_MSG_BIND) {
			efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			nfds = 1;
		}
		gd_ok(gd_send(&c, &m, &efd, nfds));
		if (efd >= 0)
			close(efd);
		bool got;
		expect_error_then_close(&c, GARUDA_E_UNEXPECTED, 700 + i, &got,
					garuda_msg_type_name(types[i]));
		cr_assert(got, "%s before HELLO: closed without ERROR{UNEXPECTED}",
			  garuda_msg_type_name(types[i]));
		gd_close(&c);
	}
	cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
	cr_assert_eq(gd_wait_status(&d, "segments", 0), 0, "a pre-HELLO SEGMENT_OPEN made a segment");
	int fds = gd_wait_fds_at_most(&d, d.fd_baseline);
	cr_assert_leq(fds, d.fd_baseline, "daemon has %d fds, %d before (the BIND eventfd?)", fds,
		      d.fd_baseline);
	gd_stop(&d);
}

/* SEGMENT_OPEN: a sealed memfd of the right size with a filled-in header */
Test(session, segment_open)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	struct gd_client c;
	gd_ok(gd_open(&c, d.sock));

	struct gd_seg s, s2;
	gd_ok(gd_segment_open(&c, 3, -1, &s));
	long page = sysconf(_SC_PAGESIZE);
	cr_assert_eq(s.lines, 3);
	cr_assert_eq(s.bytes, garuda_segment_bytes(3, (size_t)page), "SEGMENT bytes %llu",
		     (unsigned long long)s.bytes);
	struct stat st;
	cr_assert_eq(fstat(s.memfd, &st), 0);
	cr_assert_eq((uint64_t)st.st_size, s.bytes, "memfd size %lld, SEGMENT says %llu",
		     (long long)st.st_size, (unsigned long long)s.bytes);

	int seals = fcntl(s.memfd, F_GET_SEALS);
	cr_assert_geq(seals, 0, "F_GET_SEALS: %s (not a sealable memfd)", strerror(errno));
	cr_assert_eq(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
		     F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, "seals 0x%x lack SHRINK|GROW|SEAL",
		     seals);
	cr_assert_eq(seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE), 0,
		     "segment sealed against writes (0x%x): the GPU could not store", seals);
	cr_assert_neq(ftruncate(s.memfd, (off_t)s.bytes * 2), 0, "segment can grow");
	cr_assert_neq(ftruncate(s.memfd, 0), 0, "segment can shrink");

	char link[64], target[PATH_MAX] = "";
	snprintf(link, sizeof(link), "/proc/self/fd/%d", s.memfd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	cr_assert_gt(n, 0);
	target[n] = '\0';
	cr_assert(strncmp(target, "/memfd:garuda-seg", 17) == 0,
		  "segment fd is %s, expected a memfd named garuda-seg:...", target);

	cr_assert_eq(s.map->hdr.magic, GARUDA_SEGMENT_MAGIC, "magic 0x%llx",
		     (unsigned long long)s.map->hdr.magic);
	cr_assert_eq(s.map->hdr.layout, GARUDA_SEGMENT_LAYOUT);
	cr_assert_eq(s.map->hdr.lines, 3);
	cr_assert_eq(s.map->hdr.segment_id, s.id, "header id %u, SEGMENT id %u",
		     s.map->hdr.segment_id, s.id);
	cr_assert_eq(s.map->hdr.numa_node, s.numa_node);
	for (uint32_t i = 0; i < 3 * GARUDA_WORDS_PER_LINE; i++)
		cr_assert_eq(gd_load(&s, i), 0, "word %u of a new segment is not 0", i);
	cr_assert_eq(gd_wait_status(&d, "segments", 1), 1);

	gd_ok(gd_segment_open(&c, 1, 0, &s2));
	cr_assert_neq(s2.id, s.id, "two segments of one session share id %u", s.id);
	cr_assert_eq(s2.numa_node, 0, "asked for node 0, SEGMENT says %d", s2.numa_node);
	cr_assert_eq(gd_wait_status(&d, "segments", 2), 2);

	/* SEGMENT_CLOSE */
	gd_ok(gd_segment_close(&c, s.id));
	cr_assert_eq(gd_wait_status(&d, "segments", 1), 1, "closed segment still counted");
	gd_refused(gd_arm(&c, gd_slot(&s, 0), 1, 1, GARUDA_FORM_MESSAGE), GARUDA_E_NO_SEGMENT);
	gd_refused(gd_segment_close(&c, s.id), GARUDA_E_NO_SEGMENT);
	gd_refused(gd_segment_close(&c, 0xfffffff0u), GARUDA_E_NO_SEGMENT);
	/* our mapping survives the close (the daemon only drops its own) */
	gd_store(&s, 0, 5);
	cr_assert_eq(gd_load(&s, 0), 5);

	/* the other segment still serves */
	struct garuda_ready rd;
	gd_ok(gd_arm(&c, gd_slot(&s2, 7), 1, 99, GARUDA_FORM_MESSAGE));
	gd_store(&s2, 7, 1);
	int r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "no READY: %s", gd_strerr(r));
	cr_assert_eq(rd.token, 99);

	gd_seg_unmap(&s);
	gd_seg_unmap(&s2);
	gd_close(&c);
	cr_assert_eq(gd_wait_status(&d, "segments", 0), 0);
	gd_stop(&d);
}

/* Closing a segment drops its armed descriptors and bindings */
Test(session, segment_close_drops_arms)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	gd_baseline(&d);
	struct gd_client c;
	gd_ok(gd_open(&c, d.sock));
	int base = gd_fd_count(&d);
	struct gd_seg s;
	int efd;
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	gd_ok(gd_bind_new(&c, gd_slot(&s, 0), &efd));
	gd_ok(gd_arm(&c, gd_slot(&s, 0), 1, 1, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&c, gd_slot(&s, 1), 1, 2, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&c, gd_slot(&s, 2), 1, 3, GARUDA_FORM_DOORBELL));
	cr_assert_eq(gd_wait_status(&d, "armed", 3), 3);
	cr_assert_eq(gd_wait_status(&d, "bindings", 1), 1);
	uint32_t bell = gd_doorbell(&s);
	gd_ok(gd_segment_close(&c, s.id));
	cr_assert_eq(gd_wait_status(&d, "armed", 0), 0, "SEGMENT_CLOSE left armed descriptors");
	cr_assert_eq(gd_wait_status(&d, "bindings", 0), 0, "SEGMENT_CLOSE left bindings");
	for (uint32_t i = 0; i < 3; i++)
		gd_store(&s, i, 1);
	cr_assert_eq(gd_quiet(&c, GD_QUIET_MS, NULL), 0, "READY for a closed segment");
	cr_assert_eq(gd_eventfd_read(efd, 0), 0, "eventfd readiness for a closed segment");
	cr_assert_eq(gd_doorbell(&s), bell);
	int fds = gd_wait_fds_at_most(&d, base);
	cr_assert_leq(fds, base, "daemon holds %d fds after SEGMENT_CLOSE, %d before", fds, base);
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* An arm (or bind, disarm, close) naming another client's segment: NO_SEGMENT */
Test(session, other_clients_segment_refused)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	struct gd_client a, b;
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_open(&b, d.sock));
	struct gd_seg sa, sb;
	int efd, efd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	gd_ok(gd_segment_open(&a, 2, -1, &sa));
	gd_ok(gd_bind_new(&a, gd_slot(&sa, 0), &efd));
	gd_ok(gd_arm(&a, gd_slot(&sa, 1), 5, 77, GARUDA_FORM_MESSAGE));

	/* b has no segment at all */
	gd_refused(gd_arm(&b, gd_slot(&sa, 1), 5, 77, GARUDA_FORM_MESSAGE), GARUDA_E_NO_SEGMENT);
	gd_refused(gd_arm(&b, gd_slot(&sa, 0), 5, 78, GARUDA_FORM_EVENTFD), GARUDA_E_NO_SEGMENT);
	gd_refused(gd_arm(&b, gd_slot(&sa, 2), 5, 79, GARUDA_FORM_DOORBELL), GARUDA_E_NO_SEGMENT);
	gd_refused(gd_bind(&b, gd_slot(&sa, 3), efd2), GARUDA_E_NO_SEGMENT);
	int r = gd_disarm(&b, gd_slot(&sa, 1), 77);
	cr_assert(r == GARUDA_E_NO_SEGMENT || r == GARUDA_E_NOT_ARMED,
		  "DISARM of another client's arm: %s", gd_strerr(r));
	r = gd_unbind(&b, gd_slot(&sa, 0));
	cr_assert(r == GARUDA_E_NO_SEGMENT || r == GARUDA_E_NOT_BOUND,
		  "UNBIND of another client's binding: %s", gd_strerr(r));
	gd_refused(gd_segment_close(&b, sa.id), GARUDA_E_NO_SEGMENT);

	/* b with its own segment: still refused whenever the id is not b's */
	gd_ok(gd_segment_open(&b, 2, -1, &sb));
	if (sb.id != sa.id)
		gd_refused(gd_arm(&b, gd_slot(&sa, 1), 5, 77, GARUDA_FORM_MESSAGE),
			   GARUDA_E_NO_SEGMENT);
	else
		cr_log_info("segment ids are per session (both 0x%x): cross-id case moot", sa.id);

	/* b keeps working */
	struct garuda_ready rd;
	gd_ok(gd_arm(&b, gd_slot(&sb, 1), 1, 5, GARUDA_FORM_MESSAGE));
	gd_store(&sb, 1, 1);
	r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "b: %s", gd_strerr(r));
	cr_assert_eq(rd.token, 5);

	/* a's arm and binding were untouched by b */
	gd_ok(gd_arm(&a, gd_slot(&sa, 0), 1, 6, GARUDA_FORM_EVENTFD));
	gd_store(&sa, 1, 5);
	gd_store(&sa, 0, 1);
	r = gd_wait_ready(&a, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "a: %s", gd_strerr(r));
	cr_assert_eq(rd.token, 77);
	cr_assert_eq(rd.value, 5);
	cr_assert_eq(gd_eventfd_read(efd, GD_DEADLINE_MS), 1);
	cr_assert_eq(gd_quiet(&b, GD_QUIET_MS, NULL), 0, "b got something for a's segment");

	close(efd);
	close(efd2);
	gd_seg_unmap(&sa);
	gd_seg_unmap(&sb);
	gd_close(&a);
	gd_close(&b);
	gd_stop(&d);
}

/* A session garudad ends (here for a malformed datagram; SLOW_PEER and `garctl
 * disconnect` alike) while its scanner sleeps long: the client reconnects at once and
 * re-presents its segment. The file was held by the ended segment until the scanner
 * applied the drop (up to its next timed wake, a second here), so the ATTACH was
 * refused BAD_SEGMENT and libgaruda left the segment's streams unpresented. */
Test(session, a_segment_of_an_ended_session_may_be_attached_at_once)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){
		.config = "{\"plan\":\"flag:park_us=100,backstop_us=1000000,backoff_div=1\"}" });
	for (int how = 0; how < 2; how++) {
		struct gd_client a, b;
		struct gd_seg s;
		gd_ok(gd_open(&a, d.sock));
		gd_ok(gd_segment_open(&a, 2, -1, &s));
		gd_ok(gd_arm(&a, gd_slot(&s, 0), 1, 1, GARUDA_FORM_MESSAGE)); /* never reached */
		gd_sleep_ms(2000); /* the scanner now looks about once a second */
		if (how == 0)
			gd_ok(gd_send_raw(&a, "bad", 3, NULL, 0)); /* garudad ends the session */
		else
			gd_close(&a); /* the client does */
		cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
		gd_ok(gd_open(&b, d.sock));
		struct garuda_msg m, rep;
		garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
		m.segment_open.lines = s.lines;
		m.segment_open.numa_node = -1;
		int r = gd_request(&b, &m, &s.memfd, 1, &rep, NULL);
		cr_assert_eq(r, 0, "%s: SEGMENT_ATTACH of the ended session's segment: %s",
			     how ? "closed by the client" : "ended by garudad", gd_strerr(r));
		struct gd_seg s2 = s;
		s2.id = rep.segment.segment_id;
		gd_ok(gd_arm(&b, gd_slot(&s2, 0), 1, 2, GARUDA_FORM_MESSAGE));
		gd_store(&s, 0, 1);
		struct garuda_ready rd;
		r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "the re-attached segment: %s", gd_strerr(r));
		cr_assert_eq(rd.token, 2, "readiness of the ended session's wait reached the new one");
		gd_seg_unmap(&s);
		gd_close(&a);
		gd_close(&b);
		cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
	}
	gd_stop(&d);
}

/* SEGMENT_ATTACH: a client re-presents a segment after reconnecting (the restart
 * path); the daemon checks seals and size. */
Test(session, segment_attach)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	gd_baseline(&d);
	struct gd_client a, b;
	struct gd_seg s;
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_segment_open(&a, 2, -1, &s));
	gd_store(&s, 3, 7);
	gd_close(&a);
	cr_assert_eq(gd_wait_status(&d, "segments", 0), 0);

	gd_ok(gd_open(&b, d.sock));
	struct garuda_msg m, rep;
	int fd = -1;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
	m.segment_open.lines = s.lines;
	m.segment_open.numa_node = -1;
	int r = gd_request(&b, &m, &s.memfd, 1, &rep, &fd);
	cr_assert_eq(r, 0, "SEGMENT_ATTACH of a daemon-made segment: %s", gd_strerr(r));
	cr_assert_eq(rep.type, GARUDA_MSG_SEGMENT, "SEGMENT_ATTACH answered %s",
		     garuda_msg_type_name(rep.type));
	cr_assert_eq(fd, -1, "SEGMENT reply to ATTACH carries an fd");
	cr_assert_eq(rep.segment.lines, s.lines);
	struct gd_seg s2 = s; /* same mapping, new id */
	s2.id = rep.segment.segment_id;
	cr_assert_eq(gd_wait_status(&d, "segments", 1), 1);

	struct garuda_ready rd;
	gd_ok(gd_arm(&b, gd_slot(&s2, 3), 7, 1, GARUDA_FORM_MESSAGE));
	r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "already-reached word of an attached segment: %s", gd_strerr(r));
	cr_assert_eq(rd.value, 7);
	gd_ok(gd_arm(&b, gd_slot(&s2, 3), 8, 2, GARUDA_FORM_MESSAGE));
	gd_store(&s, 3, 8);
	r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "attached segment: %s", gd_strerr(r));
	cr_assert_eq(rd.token, 2);

	/* an unsealed memfd could be shrunk under the daemon: refused */
	int bad = memfd_create("not-sealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cr_assert_geq(bad, 0);
	cr_assert_eq(ftruncate(bad, (off_t)s.bytes), 0);
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
	m.segment_open.lines = s.lines;
	m.segment_open.numa_node = -1;
	r = gd_request(&b, &m, &bad, 1, &rep, NULL);
	cr_assert_eq(r, GARUDA_E_BAD_SEGMENT, "SEGMENT_ATTACH of an unsealed memfd: %s",
		     gd_strerr(r));
	close(bad);

	/* a sealed segment too small for the lines it claims: refused */
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
	m.segment_open.lines = 100; /* within the lines quota, beyond the file */
	m.segment_open.numa_node = -1;
	r = gd_request(&b, &m, &s.memfd, 1, &rep, NULL);
	cr_assert_eq(r, GARUDA_E_BAD_SEGMENT, "SEGMENT_ATTACH claiming 100 lines of %llu bytes: %s",
		     (unsigned long long)s.bytes, gd_strerr(r));

	/* not a memfd at all */
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
	m.segment_open.lines = 1;
	m.segment_open.numa_node = -1;
	r = gd_request(&b, &m, &p[0], 1, &rep, NULL);
	cr_assert(r == GARUDA_E_BAD_SEGMENT || r == GARUDA_E_BAD_FD,
		  "SEGMENT_ATTACH of a pipe: %s", gd_strerr(r));
	close(p[0]);
	close(p[1]);

	/* the connection survived the refusals */
	gd_ok(gd_arm(&b, gd_slot(&s2, 4), 1, 3, GARUDA_FORM_MESSAGE));
	gd_store(&s, 4, 1);
	r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s", gd_strerr(r));
	cr_assert_eq(rd.token, 3);

	gd_seg_unmap(&s);
	gd_close(&b);
	cr_assert_eq(gd_wait_status(&d, "segments", 0), 0);
	int fds = gd_wait_fds_at_most(&d, d.fd_baseline);
	cr_assert_leq(fds, d.fd_baseline, "daemon has %d fds, %d before", fds, d.fd_baseline);
	gd_stop(&d);
}

/* QUERY: a client learns about its own session (and only that) over the client socket */
Test(session, query_own_session)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = small_quota });

	struct gd_client a, b;
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_open(&b, d.sock));
	struct gd_seg s;
	gd_ok(gd_segment_open(&a, 1, -1, &s));
	int efd;
	gd_ok(gd_bind_new(&a, gd_slot(&s, 2), &efd));
	gd_ok(gd_arm(&a, gd_slot(&s, 2), 5, 1, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&a, gd_slot(&s, 3), 5, 2, GARUDA_FORM_MESSAGE));

	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_QUERY, 77);
	gd_ok(gd_request(&a, &m, NULL, 0, &rep, NULL));
	cr_assert_eq(rep.type, GARUDA_MSG_QUERY_REPLY, "QUERY answered by %s",
		     garuda_msg_type_name(rep.type));
	cr_assert_eq(rep.cookie, m.cookie);
	cJSON *j = cJSON_Parse(rep.query_reply.json);
	cr_assert_not_null(j, "QUERY_REPLY is not JSON: %s", rep.query_reply.json);
	cr_assert_eq(cJSON_GetObjectItem(j, "version")->valueint, 1);
	cr_assert_eq((uint64_t)cJSON_GetObjectItem(j, "id")->valuedouble, a.welcome.session_id,
		     "QUERY describes another session");
	cr_assert_eq(cJSON_GetObjectItem(j, "pid")->valueint, (int)getpid());
	cr_assert_eq(cJSON_GetObjectItem(j, "segments")->valueint, 1);
	cr_assert_eq(cJSON_GetObjectItem(j, "bindings")->valueint, 1);
	cr_assert_eq(cJSON_GetObjectItem(j, "armed")->valueint, 2);
	cJSON_Delete(j);

	/* the other client sees its own, empty session */
	garuda_msg_init(&m, GARUDA_MSG_QUERY, 78);
	gd_ok(gd_request(&b, &m, NULL, 0, &rep, NULL));
	j = cJSON_Parse(rep.query_reply.json);
	cr_assert_not_null(j);
	cr_assert_eq((uint64_t)cJSON_GetObjectItem(j, "id")->valuedouble, b.welcome.session_id);
	cr_assert_eq(cJSON_GetObjectItem(j, "segments")->valueint, 0);
	cr_assert_eq(cJSON_GetObjectItem(j, "armed")->valueint, 0);
	cJSON_Delete(j);

	close(efd);
	gd_seg_unmap(&s);
	gd_close(&a);
	gd_close(&b);
	gd_stop(&d);
}

/* Bindings are kept per segment: unbinding the newest, the oldest and one between
 * (each place in its segment's list), then closing one segment, leaves exactly the
 * other segment's bindings, and each still delivers */
Test(session, unbind_and_segment_close_keep_the_other_bindings)
{
	enum { N = 6 };
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	gd_baseline(&d);
	struct gd_client c;
	gd_ok(gd_open(&c, d.sock));
	int base = gd_fd_count(&d);
	struct gd_seg a, b;
	int ea[N], eb[N];
	gd_ok(gd_segment_open(&c, 1, -1, &a));
	gd_ok(gd_segment_open(&c, 1, -1, &b));
	for (uint32_t i = 0; i < N; i++) { /* interleaved: the two lists grow together */
		gd_ok(gd_bind_new(&c, gd_slot(&a, i), &ea[i]));
		gd_ok(gd_bind_new(&c, gd_slot(&b, i), &eb[i]));
	}
	cr_assert_eq(gd_wait_status(&d, "bindings", 2 * N), 2 * N);
	static const uint32_t gone[] = { N - 1, 0, 2 }; /* newest (list head), oldest, between */
	for (unsigned k = 0; k < 3; k++) {
		gd_ok(gd_unbind(&c, gd_slot(&b, gone[k])));
		gd_refused(gd_unbind(&c, gd_slot(&b, gone[k])), GARUDA_E_NOT_BOUND);
	}
	cr_assert_eq(gd_wait_status(&d, "bindings", 2 * N - 3), 2 * N - 3);
	gd_ok(gd_segment_close(&c, a.id));
	cr_assert_eq(gd_wait_status(&d, "bindings", N - 3), N - 3, "SEGMENT_CLOSE dropped another segment's bindings");
	for (uint32_t i = 0; i < N; i++) {
		bool bound = i != gone[0] && i != gone[1] && i != gone[2];
		if (!bound) {
			gd_refused(gd_arm(&c, gd_slot(&b, i), 1, 10 + i, GARUDA_FORM_EVENTFD), GARUDA_E_NOT_BOUND);
			continue;
		}
		gd_ok(gd_arm(&c, gd_slot(&b, i), 1, 10 + i, GARUDA_FORM_EVENTFD));
		gd_store(&b, i, 1);
		cr_assert_eq(gd_eventfd_read(eb[i], GD_DEADLINE_MS), 1, "slot %u's binding lost", i);
	}
	/* a slot unbound from the middle binds again */
	gd_ok(gd_bind(&c, gd_slot(&b, 2), eb[2]));
	cr_assert_eq(gd_wait_status(&d, "bindings", N - 2), N - 2);
	gd_ok(gd_segment_close(&c, b.id));
	cr_assert_eq(gd_wait_status(&d, "bindings", 0), 0);
	int fds = gd_wait_fds_at_most(&d, base);
	cr_assert_leq(fds, base, "daemon holds %d fds after closing both segments, %d before", fds, base);
	for (uint32_t i = 0; i < N; i++) {
		close(ea[i]);
		close(eb[i]);
	}
	gd_seg_unmap(&a);
	gd_seg_unmap(&b);
	gd_close(&c);
	gd_stop(&d);
}

/* The session ends when the process that connected exits, though a child it forked
 * still holds the socket: the child's copy kept the parent's session (segments,
 * bindings, quota) for as long as the child lived, e.g. in a prefork server whose
 * master crashed. Needs the peer's pidfd (SO_PEERPIDFD, Linux 6.5). */
Test(session, ends_when_its_process_exits_though_a_child_holds_the_socket)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	int hold[2], ready[2];
	cr_assert_eq(pipe2(hold, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* connect, fork a holder of the socket, exit without closing it */
		struct gd_client c;
		if (gd_open(&c, d.sock) != 0)
			_exit(1);
		pid_t g = fork();
		if (g == 0) { /* the holder: until the test closes hold[1] */
			char b;
			close(hold[1]);
			(void)!write(ready[1], "r", 1);
			(void)!read(hold[0], &b, 1);
			_exit(0);
		}
		_exit(g > 0 ? 0 : 1);
	}
	close(hold[0]);
	close(ready[1]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child did not connect and fork");
	char b;
	cr_assert_eq(read(ready[0], &b, 1), 1, "the holder did not start");
	close(ready[0]);
	struct gd_client probe;
	gd_ok(gd_open(&probe, d.sock)); /* ordering: its session is listed after the other */
	struct garuda_msg q, rep;
	garuda_msg_init(&q, GARUDA_MSG_QUERY, 9);
	gd_ok(gd_request(&probe, &q, NULL, 0, &rep, NULL));
	long long n = gd_wait_status(&d, "clients", 1);
	cr_assert_eq(n, 1, "%lld sessions while the holder lives: the exited process's session "
		     "was kept by the socket's copy in its child", n);
	gd_close(&probe);
	close(hold[1]); /* the holder exits (not our child: the one it had exited first) */
	gd_stop(&d);
}
