/* test_quota.c — per-connection, per-uid, per-cgroup and daemon-wide quotas (segments, lines, bindings, armed, connections):
 * an overrun is answered ERROR{QUOTA}, nothing is allocated for it (no fd kept, no
 * counter moved), the connection keeps working, and freeing something makes room. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "cgroup.h"
#include "fdio.h"
#include "harness.h"

TestSuite(quota, .init = gd_test_init, .fini = gd_test_fini, .timeout = 120);

static const char *quota_config =
	"{\"quota\":{\"connection\":{\"segments\":3,\"lines\":16,\"bindings\":2,\"armed\":4},"
	"\"uid\":{\"segments\":5,\"lines\":64,\"bindings\":3,\"armed\":6}}}";

/* The value of one series of garudad's metrics (its name and labels as printed), -1
 * when absent. */
static long long metric(struct gd_daemon *d, const char *series)
{
	cJSON *j = gd_control(d, "{\"request\":\"metrics\"}");
	cr_assert_not_null(j, "no metrics reply");
	const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "text"));
	cr_assert_not_null(text);
	char want[512];
	snprintf(want, sizeof(want), "\n%s ", series);
	const char *at = strstr(text, want);
	long long v = at ? strtoll(at + strlen(want), NULL, 10) : -1;
	cJSON_Delete(j);
	return v;
}

static void refusal_text(struct gd_client *c, struct garuda_msg *m, const char *want)
{
	struct garuda_msg rep;
	gd_refused(gd_request(c, m, NULL, 0, &rep, NULL), GARUDA_E_QUOTA);
	char text[GARUDA_ERROR_TEXT_MAX + 1];
	snprintf(text, sizeof(text), "%.*s", (int)rep.error.text_len, rep.error.text);
	cr_assert_str_eq(text, want);
}

static void still_works(struct gd_client *c, struct gd_seg *s, uint32_t idx, uint64_t token)
{
	uint64_t v = gd_load(s, idx) + 1;
	gd_ok(gd_arm(c, gd_slot(s, idx), v, token, GARUDA_FORM_MESSAGE));
	gd_store(s, idx, v);
	struct garuda_ready rd;
	int r = gd_wait_ready(c, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "connection after QUOTA: %s", gd_strerr(r));
	cr_assert_eq(rd.token, token);
}

Test(quota, segments)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = quota_config });
	struct gd_client c;
	struct gd_seg s[4];
	gd_ok(gd_open(&c, d.sock));
	cr_assert_eq(c.welcome.max_segments, 3);
	for (int i = 0; i < 3; i++)
		gd_ok(gd_segment_open(&c, 1, -1, &s[i]));
	gd_refused(gd_segment_open(&c, 1, -1, &s[3]), GARUDA_E_QUOTA);
	cr_assert_eq(gd_wait_status(&d, "segments", 3), 3, "refused segment counted");
	still_works(&c, &s[0], 0, 1);
	gd_ok(gd_segment_close(&c, s[1].id));
	gd_seg_unmap(&s[1]);
	gd_ok(gd_segment_open(&c, 1, -1, &s[3]));
	gd_refused(gd_segment_open(&c, 1, -1, &s[1]), GARUDA_E_QUOTA);
	still_works(&c, &s[3], 0, 2);
	for (int i = 0; i < 4; i++)
		gd_seg_unmap(&s[i]);
	gd_close(&c);
	gd_stop(&d);
}

Test(quota, lines)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = quota_config });
	struct gd_client c;
	struct gd_seg a, b, x;
	gd_ok(gd_open(&c, d.sock));
	cr_assert_eq(c.welcome.max_lines, 16);
	gd_refused(gd_segment_open(&c, 17, -1, &x), GARUDA_E_QUOTA);
	gd_ok(gd_segment_open(&c, 10, -1, &a));
	gd_refused(gd_segment_open(&c, 7, -1, &x), GARUDA_E_QUOTA);
	still_works(&c, &a, 79, 1);
	gd_ok(gd_segment_open(&c, 6, -1, &b)); /* exactly 16 */
	gd_refused(gd_segment_open(&c, 1, -1, &x), GARUDA_E_QUOTA);
	gd_ok(gd_segment_close(&c, a.id));
	gd_ok(gd_segment_open(&c, 10, -1, &x));
	still_works(&c, &x, 0, 2);
	gd_seg_unmap(&a);
	gd_seg_unmap(&b);
	gd_seg_unmap(&x);
	gd_close(&c);
	gd_stop(&d);
}

Test(quota, bindings)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = quota_config });
	gd_baseline(&d);
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	cr_assert_eq(c.welcome.max_bindings, 2);
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	int base = gd_fd_count(&d);
	int e0, e1, e2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	gd_ok(gd_bind_new(&c, gd_slot(&s, 0), &e0));
	gd_ok(gd_bind_new(&c, gd_slot(&s, 1), &e1));
	int with2 = gd_fd_count(&d);
	gd_refused(gd_bind(&c, gd_slot(&s, 2), e2), GARUDA_E_QUOTA);
	int fds = gd_wait_fds_at_most(&d, with2);
	cr_assert_leq(fds, with2, "daemon kept the eventfd of a refused BIND (%d fds, %d before)",
		      fds, with2);
	cr_assert_eq(gd_wait_status(&d, "bindings", 2), 2);
	still_works(&c, &s, 5, 1);
	gd_ok(gd_unbind(&c, gd_slot(&s, 0)));
	gd_ok(gd_bind(&c, gd_slot(&s, 2), e2));
	gd_ok(gd_arm(&c, gd_slot(&s, 2), 1, 2, GARUDA_FORM_EVENTFD));
	gd_store(&s, 2, 1);
	cr_assert_eq(gd_eventfd_read(e2, GD_DEADLINE_MS), 1);
	gd_ok(gd_unbind(&c, gd_slot(&s, 1)));
	gd_ok(gd_unbind(&c, gd_slot(&s, 2)));
	fds = gd_wait_fds_at_most(&d, base);
	cr_assert_leq(fds, base, "daemon holds %d fds after unbinding all, %d before", fds, base);
	close(e0);
	close(e1);
	close(e2);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

Test(quota, armed)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = quota_config });
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	cr_assert_eq(c.welcome.max_armed, 4);
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	for (uint32_t i = 0; i < 4; i++)
		gd_ok(gd_arm(&c, gd_slot(&s, i), 1, 10 + i, GARUDA_FORM_MESSAGE));
	gd_refused(gd_arm(&c, gd_slot(&s, 4), 1, 14, GARUDA_FORM_MESSAGE), GARUDA_E_QUOTA);
	gd_refused(gd_arm(&c, gd_slot(&s, 4), 1, 14, GARUDA_FORM_DOORBELL), GARUDA_E_QUOTA);
	cr_assert_eq(gd_wait_status(&d, "armed", 4), 4, "refused arm counted");
	/* a refused arm never fires */
	gd_store(&s, 4, 1);
	/* firing one makes room for one */
	gd_store(&s, 0, 1);
	struct garuda_ready rd;
	int r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s", gd_strerr(r));
	cr_assert_eq(rd.token, 10, "READY token %llu: only 10 was armed and reached",
		     (unsigned long long)rd.token);
	cr_assert_eq(gd_wait_status(&d, "armed", 3), 3);
	gd_ok(gd_arm(&c, gd_slot(&s, 5), 1, 15, GARUDA_FORM_MESSAGE));
	gd_refused(gd_arm(&c, gd_slot(&s, 6), 1, 16, GARUDA_FORM_MESSAGE), GARUDA_E_QUOTA);
	/* disarming makes room too */
	gd_ok(gd_disarm(&c, gd_slot(&s, 1), 11));
	gd_ok(gd_arm(&c, gd_slot(&s, 6), 1, 16, GARUDA_FORM_MESSAGE));
	/* fire everything: exactly tokens 12, 13, 15, 16 */
	for (uint32_t i = 1; i < 8; i++)
		gd_store(&s, i, 1);
	unsigned seen = 0;
	for (int i = 0; i < 4; i++) {
		r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "%s", gd_strerr(r));
		cr_assert(rd.token == 12 || rd.token == 13 || rd.token == 15 || rd.token == 16,
			  "READY for token %llu", (unsigned long long)rd.token);
		cr_assert_not(seen & (1u << (rd.token - 10)), "token %llu twice",
			      (unsigned long long)rd.token);
		seen |= 1u << (rd.token - 10);
	}
	cr_assert_eq(gd_quiet(&c, GD_QUIET_MS, NULL), 0, "READY for a refused or disarmed arm");
	cr_assert_eq(gd_wait_status(&d, "armed", 0), 0);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* The uid quota spans connections of one uid (the tests run as one uid) */
Test(quota, per_uid)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = quota_config });
	struct gd_client a, b;
	struct gd_seg sa[3], sb[3];
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_open(&b, d.sock));

	/* segments: 3 per connection, 5 per uid */
	for (int i = 0; i < 3; i++)
		gd_ok(gd_segment_open(&a, 1, -1, &sa[i]));
	gd_ok(gd_segment_open(&b, 1, -1, &sb[0]));
	gd_ok(gd_segment_open(&b, 1, -1, &sb[1]));
	gd_refused(gd_segment_open(&b, 1, -1, &sb[2]), GARUDA_E_QUOTA);
	gd_ok(gd_segment_close(&a, sa[2].id));
	gd_ok(gd_segment_open(&b, 1, -1, &sb[2]));

	/* bindings: 2 per connection, 3 per uid */
	int ea0, ea1, eb0, eb1 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	gd_ok(gd_bind_new(&a, gd_slot(&sa[0], 0), &ea0));
	gd_ok(gd_bind_new(&a, gd_slot(&sa[0], 1), &ea1));
	gd_ok(gd_bind_new(&b, gd_slot(&sb[0], 0), &eb0));
	gd_refused(gd_bind(&b, gd_slot(&sb[0], 1), eb1), GARUDA_E_QUOTA);

	/* armed: 4 per connection, 6 per uid */
	for (uint32_t i = 0; i < 4; i++)
		gd_ok(gd_arm(&a, gd_slot(&sa[1], i), 1, i, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&b, gd_slot(&sb[1], 0), 1, 100, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&b, gd_slot(&sb[1], 1), 1, 101, GARUDA_FORM_MESSAGE));
	gd_refused(gd_arm(&b, gd_slot(&sb[1], 2), 1, 102, GARUDA_FORM_MESSAGE), GARUDA_E_QUOTA);

	/* every ARM taken by the scanner first: "armed" below must not match a count taken
	 * half way through (2 of a's arms, say) */
	cr_assert_eq(gd_wait_status(&d, "armed", 6), 6);
	/* a's departure frees the uid's share */
	for (int i = 0; i < 3; i++)
		gd_seg_unmap(&sa[i]);
	close(ea0);
	close(ea1);
	gd_close(&a);
	cr_assert_eq(gd_wait_status(&d, "clients", 1), 1);
	cr_assert_eq(gd_wait_status(&d, "armed", 2), 2);
	gd_ok(gd_arm(&b, gd_slot(&sb[1], 2), 1, 102, GARUDA_FORM_MESSAGE));
	gd_ok(gd_bind(&b, gd_slot(&sb[0], 1), eb1));
	for (uint32_t i = 0; i < 3; i++)
		gd_store(&sb[1], i, 1);
	for (int i = 0; i < 3; i++) {
		struct garuda_ready rd;
		int r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "%s", gd_strerr(r));
		cr_assert(rd.token >= 100 && rd.token <= 102);
	}
	for (int i = 0; i < 3; i++)
		gd_seg_unmap(&sb[i]);
	close(eb0);
	close(eb1);
	gd_close(&b);
	gd_stop(&d);
}

static void seg_open_msg(struct garuda_msg *m)
{
	garuda_msg_init(m, GARUDA_MSG_SEGMENT_OPEN, 0);
	m->segment_open.lines = 1;
	m->segment_open.numa_node = -1;
}

/* The reply to msg, sent without waiting: the next message on c, its fd closed. */
static int next_reply(struct gd_client *c, struct garuda_msg *m, uint64_t cookie, int *fd)
{
	int r = gd_recv(c, m, fd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "no reply: %s", gd_strerr(r));
	cr_assert_eq(m->cookie, cookie);
	return m->type == GARUDA_MSG_ERROR ? (int)m->error.code : 0;
}

static void send_open(struct gd_client *c, uint32_t lines, uint64_t cookie)
{
	struct garuda_msg m;
	seg_open_msg(&m);
	m.cookie = cookie;
	m.segment_open.lines = lines;
	gd_ok(gd_send(c, &m, NULL, 0));
}

/* A SEGMENT reply carries the segment's memfd: unread in the client's socket, it keeps
 * the segment's pages alive after SEGMENT_CLOSE (62 MiB per connection were held so,
 * none of it charged). The segment's quota stays charged until the client has read
 * its reply: opening and closing without reading cannot hold more than the quota. */
Test(quota, a_closed_segments_unread_reply_keeps_its_quota)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = quota_config });
	struct gd_client c;
	gd_ok(gd_open(&c, d.sock));
	/* all 16 lines of the connection, closed, and opened again: nothing read */
	send_open(&c, 16, 10);
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, 11);
	m.segment_close.segment_id = 1; /* ids are predictable: never read, closed anyway */
	gd_ok(gd_send(&c, &m, NULL, 0));
	send_open(&c, 16, 12);
	/* garudad has handled all three before anything is read: a fourth request it
	 * refuses (a segment this session never had) is counted in its errors */
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, 13);
	m.segment_close.segment_id = 99;
	gd_ok(gd_send(&c, &m, NULL, 0));
	cr_assert_eq(gd_wait_status_cmp(&d, "errors", 1, false, GD_DEADLINE_MS), 0);
	/* the SEGMENT first; the ACK comes from the scanner, so anywhere after it */
	int fd = -1;
	cr_assert_eq(next_reply(&c, &m, 10, &fd), 0);
	cr_assert(m.type == GARUDA_MSG_SEGMENT && m.segment.segment_id == 1 && fd >= 0);
	close(fd);
	int code[3] = { -1, -1, -1 };
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(gd_recv(&c, &m, NULL, GD_DEADLINE_MS), 1);
		cr_assert(m.cookie >= 11 && m.cookie <= 13);
		code[m.cookie - 11] = m.type == GARUDA_MSG_ERROR ? (int)m.error.code : 0;
	}
	cr_assert_eq(code[0], 0, "SEGMENT_CLOSE refused");
	cr_assert_eq(code[1], GARUDA_E_QUOTA,
		     "a segment opened again while the closed one's memfd sat unread");
	cr_assert_eq(code[2], GARUDA_E_NO_SEGMENT);
	/* read now: the quota is back */
	struct gd_seg g;
	gd_ok(gd_segment_open(&c, 16, -1, &g));
	still_works(&c, &g, 0, 1);
	gd_seg_unmap(&g);
	gd_close(&c);
	gd_stop(&d);
}

/* The same at a session's end: a client disconnected by garudad (here for a malformed
 * datagram) with SEGMENT replies unread keeps their lines, and its connection, charged
 * to its uid until it reads them or closes its socket. */
Test(quota, a_session_ended_with_a_segment_reply_unread_keeps_its_quota)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){
		.config = "{\"quota\":{\"connection\":{\"lines\":64},\"uid\":{\"lines\":64}}}" });
	for (int round = 0; round < 2; round++) {
		struct gd_client a, b;
		gd_ok(gd_open(&a, d.sock));
		send_open(&a, 64, 20);
		gd_ok(gd_send_raw(&a, "bad", 3, NULL, 0)); /* TOO_SHORT: disconnected */
		cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
		cr_assert_eq(gd_status_num(&d, "held_sessions"), 1);
		gd_ok(gd_open(&b, d.sock));
		struct gd_seg g;
		gd_refused(gd_segment_open(&b, 1, -1, &g), GARUDA_E_QUOTA);
		if (round == 0) { /* a reads its replies, its socket still open */
			struct garuda_msg m;
			int fd = -1;
			cr_assert_eq(next_reply(&a, &m, 20, &fd), 0);
			cr_assert(m.type == GARUDA_MSG_SEGMENT && fd >= 0);
			close(fd);
			cr_assert_eq(gd_recv(&a, &m, NULL, GD_DEADLINE_MS), 1);
			cr_assert_eq(m.type, GARUDA_MSG_ERROR);
		} else { /* a closes its socket unread */
			gd_close(&a);
		}
		/* given back at garudad's next look (SESSION_HOLD_TICK_MS) */
		int r;
		uint64_t dl = gd_deadline(GD_DEADLINE_MS);
		while ((r = gd_segment_open(&b, 64, -1, &g)) == GARUDA_E_QUOTA && gd_left_ms(dl) > 0)
			gd_sleep_ms(5);
		cr_assert_eq(r, 0, "round %d: the uid's lines were not given back: %s", round,
			     gd_strerr(r));
		gd_seg_unmap(&g);
		cr_assert_eq(gd_status_num(&d, "held_sessions"), 0);
		gd_close(&a);
		gd_close(&b);
		cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
	}
	gd_stop(&d);
}

/* The only session's outbox_bytes (garctl clients' column) */
static long long only_client_outbox(struct gd_daemon *d)
{
	cJSON *j = gd_control(d, "{\"request\":\"clients\"}");
	cr_assert_not_null(j, "no clients reply");
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "clients");
	cr_assert_eq(cJSON_GetArraySize(list), 1);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 0), "outbox_bytes");
	cr_assert(cJSON_IsNumber(v), "no outbox_bytes");
	long long r = (long long)cJSON_GetNumberValue(v);
	cJSON_Delete(j);
	return r;
}

/* outbox_bytes counts what a queued reply costs garudad: its bytes and 32 bytes of
 * bookkeeping (protocol.md §6.2), not its bytes alone (an ACK of 24 took 56 of heap and
 * was charged 24). A client that does not read: its ACKs fill its socket, the rest
 * wait in the outbox; what the socket holds is SIOCINQ's. */
Test(quota, the_outbox_counts_each_queued_reply_with_its_bookkeeping)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	gd_ok(gd_segment_open(&c, 8, -1, &s));
	int sz = 4096;
	setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	const unsigned n = 400; /* 400 ACKs: more than the socket holds, far below the quota */
	for (unsigned i = 0; i < n; i++) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_ARM, ++c.cookie);
		m.arm.slot = gd_slot(&s, i % 64);
		m.arm.target = 1000000 + i; /* never reached */
		m.arm.token = i;
		m.arm.form = GARUDA_FORM_MESSAGE;
		gd_ok(gd_send(&c, &m, NULL, 0));
	}
	/* every ARM handled, so every ACK sent or queued; nothing moves while c reads
	 * nothing (garudad sends more only when the socket has room) */
	cr_assert_eq(gd_wait_status(&d, "armed", n), n);
	int inq = -1;
	cr_assert_eq(ioctl(c.fd, SIOCINQ, &inq), 0, "SIOCINQ: %s", strerror(errno));
	const long long ack = 24, in_socket = inq / ack, queued = (long long)n - in_socket;
	cr_assert_eq(inq % ack, 0, "the socket holds %d bytes: not whole ACKs", inq);
	cr_assert_gt(queued, 0, "the socket held all %u ACKs: nothing queued to count", n);
	long long bytes = only_client_outbox(&d);
	cr_assert_eq(bytes, queued * (ack + 32),
		     "%lld ACKs queued (%lld in the socket) charged %lld bytes: not %lld each", queued,
		     in_socket, bytes, ack + 32);
	/* read them all: the charge goes back to 0 */
	for (unsigned i = 0; i < n; i++) {
		struct garuda_msg m;
		cr_assert_eq(gd_recv(&c, &m, NULL, GD_DEADLINE_MS), 1, "ACK %u of %u", i, n);
		cr_assert_eq(m.type, GARUDA_MSG_ACK);
	}
	cr_assert_eq(only_client_outbox(&d), 0, "every ACK read, the outbox still charged");
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* quota.uid.connections: the connection over it gets ERROR{QUOTA} and is closed;
 * closing one makes room. */
Test(quota, connections_per_uid)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"quota\":{\"uid\":{\"connections\":3}}}" });
	struct gd_client c[4];
	for (int i = 0; i < 3; i++)
		gd_ok(gd_open(&c[i], d.sock));
	gd_ok(gd_connect(&c[3], d.sock));
	struct garuda_msg m;
	int r = gd_recv(&c[3], &m, NULL, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "no answer for the connection over quota: %s", gd_strerr(r));
	cr_assert_eq(m.type, GARUDA_MSG_ERROR);
	cr_assert_eq(m.error.code, GARUDA_E_QUOTA);
	cr_assert_eq(gd_recv(&c[3], &m, NULL, GD_DEADLINE_MS), -EPIPE, "not closed after QUOTA");
	gd_close(&c[3]);
	cr_assert_eq(gd_wait_status(&d, "clients", 3), 3);
	gd_close(&c[0]);
	cr_assert_eq(gd_wait_status(&d, "clients", 2), 2);
	gd_ok(gd_open(&c[0], d.sock));
	for (int i = 0; i < 3; i++)
		gd_close(&c[i]);
	gd_stop(&d);
}

/* quota.daemon: every connection's charges together, whatever their uid (the unit
 * test test_quota_unit.c charges two uids; here one uid whose own quotas are roomier):
 * an ARM inside its connection's and uid's quota is refused once all connections
 * together hold quota.daemon.armed, a connection past quota.daemon.connections is
 * refused at accept, both naming the key; the metrics show the usage; what one
 * session gives back at its end, another may take. */
Test(quota, the_daemon_scope_holds_every_connection_together)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"quota\":{\"daemon\":{\"armed\":5,\"connections\":3}}}" });
	struct gd_client a, b, c, x;
	struct gd_seg sa, sb;
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_open(&b, d.sock));
	gd_ok(gd_segment_open(&a, 1, -1, &sa));
	gd_ok(gd_segment_open(&b, 1, -1, &sb));
	for (uint32_t i = 0; i < 3; i++)
		gd_ok(gd_arm(&a, gd_slot(&sa, i), 1, i, GARUDA_FORM_MESSAGE));
	for (uint32_t i = 0; i < 2; i++)
		gd_ok(gd_arm(&b, gd_slot(&sb, i), 1, 10 + i, GARUDA_FORM_MESSAGE));
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.arm.slot = gd_slot(&sb, 2);
	m.arm.target = 1;
	m.arm.token = 12;
	m.arm.form = GARUDA_FORM_MESSAGE;
	refusal_text(&b, &m, "quota.daemon.armed exceeded: limit 5, 5 in use, 1 more asked");
	cr_assert_eq(metric(&d, "garuda_quota_daemon_used{quota=\"armed\"}"), 5);
	/* every ARM taken by the scanner first: "armed" below (the scanner's count) must not
	 * match 2 while 3 of the 5 charged are still on their way to it */
	cr_assert_eq(gd_wait_status(&d, "armed", 5), 5);
	cr_assert_eq(metric(&d, "garuda_quota_limit{scope=\"daemon\",quota=\"armed\"}"), 5);

	gd_ok(gd_open(&c, d.sock));
	cr_assert_eq(metric(&d, "garuda_quota_daemon_used{quota=\"connections\"}"), 3);
	gd_ok(gd_connect(&x, d.sock));
	int r = gd_recv(&x, &m, NULL, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "no answer for the connection over quota.daemon.connections: %s", gd_strerr(r));
	cr_assert_eq(m.type, GARUDA_MSG_ERROR);
	cr_assert_eq(m.error.code, GARUDA_E_QUOTA);
	char text[GARUDA_ERROR_TEXT_MAX + 1];
	snprintf(text, sizeof(text), "%.*s", (int)m.error.text_len, m.error.text);
	cr_assert_str_eq(text, "quota.daemon.connections exceeded: limit 3, 3 in use, 1 more asked");
	cr_assert_eq(gd_recv(&x, &m, NULL, GD_DEADLINE_MS), -EPIPE, "not closed after QUOTA");
	gd_close(&x);

	/* a's end gives its three arms and its connection back to the daemon scope */
	gd_seg_unmap(&sa);
	gd_close(&a);
	cr_assert_eq(gd_wait_status(&d, "clients", 2), 2);
	cr_assert_eq(gd_wait_status(&d, "armed", 2), 2);
	gd_ok(gd_arm(&b, gd_slot(&sb, 2), 1, 12, GARUDA_FORM_MESSAGE));
	gd_store(&sb, 2, 1);
	struct garuda_ready rd;
	r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s", gd_strerr(r));
	cr_assert_eq(rd.token, 12);
	gd_ok(gd_open(&x, d.sock));
	gd_seg_unmap(&sb);
	gd_close(&x);
	gd_close(&c);
	gd_close(&b);
	gd_stop(&d);
}

/* A refusal names the quota, its limit and the usage (issue 17), in the ERROR's text
 * and in the daemon's log. */
Test(quota, refusal_names_quota_and_limit)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = quota_config });
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	for (uint32_t i = 0; i < 4; i++)
		gd_ok(gd_arm(&c, gd_slot(&s, i), 1, 10 + i, GARUDA_FORM_MESSAGE));
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.arm.slot = gd_slot(&s, 4);
	m.arm.target = 1;
	m.arm.token = 14;
	m.arm.form = GARUDA_FORM_MESSAGE;
	gd_refused(gd_request(&c, &m, NULL, 0, &rep, NULL), GARUDA_E_QUOTA);
	cr_assert_eq(rep.type, GARUDA_MSG_ERROR);
	cr_assert_eq(rep.error.code, GARUDA_E_QUOTA);
	char text[256];
	snprintf(text, sizeof(text), "%.*s", (int)rep.error.text_len, rep.error.text);
	const char *want = "quota.connection.armed exceeded: limit 4, 4 in use, 1 more asked";
	cr_assert_str_eq(text, want);
	/* the log says it too (log_client: rate-limited, but this is the first) */
	bool logged = gd_wait_log(&d, want);
	cr_assert(logged, "no log line names the refused quota (%s)", d.log);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* ------------------------------------------------------------- cgroup key ---- */

/* The per-cgroup key (quota.cgroup, issue 15): real cgroup v2 groups A and B under the
 * cgroup2 mount; clients connect from children moved into them (tests/common/cgroup.h),
 * all of this test's uid. Removed again by the suite's fini, also after a failure. */
static struct cg_group cg_a, cg_b;

static void cg_fini(void)
{
	/* the groups first: the fd check of gd_test_fini() asserts (a failed test leaves
	 * fds), and the groups are empty once cg_open_in()'s children have exited */
	cg_remove(&cg_a);
	cg_remove(&cg_b);
	gd_test_fini();
}

static void cg_setup(void)
{
	char why[300];
	memset(&cg_a, 0, sizeof(cg_a));
	memset(&cg_b, 0, sizeof(cg_b));
	if (cg_make(&cg_a, "a", why, sizeof(why)) || cg_make(&cg_b, "b", why, sizeof(why)))
		cr_skip_test("no writable cgroup2 to make test groups in: %s", why);
}

/* open a client from group g: accepted (want_refused false) or refused at accept */
static void cg_client(const struct cg_group *g, const char *sock, struct gd_client *c, bool want_refused,
		      char *text, size_t cap)
{
	bool refused = want_refused;
	int r = cg_open_in(g, sock, c, &refused, text, cap);
	if (r == -EACCES || r == -EPERM || r == -EROFS || r == -EOPNOTSUPP || r == -EBUSY)
		cr_skip_test("cannot move a process into %s: %s", g->dir, strerror(-r));
	cr_assert_eq(r, 0, "client from cgroup %s: %s", g->path, gd_strerr(r));
	cr_assert_eq(refused, want_refused, "client from cgroup %s %s", g->path,
		     refused ? "refused at accept" : "accepted");
}

/* The cgroup path garudad shows for session id (garctl clients' "cgroup"), or "" */
static void session_cgroup(struct gd_daemon *d, uint64_t id, char *out, size_t cap)
{
	cJSON *j = gd_control(d, "{\"request\":\"clients\"}");
	cr_assert_not_null(j, "no clients reply");
	out[0] = '\0';
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "clients"))
	{
		if ((uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "id")) != id)
			continue;
		const cJSON *cg = cJSON_GetObjectItemCaseSensitive(it, "cgroup");
		cr_assert(cJSON_IsString(cg), "session %llu has no cgroup string", (unsigned long long)id);
		snprintf(out, cap, "%s", cg->valuestring);
	}
	cJSON_Delete(j);
}

/* garuda_quota_cgroup_used{cgroup=PATH,quota=NAME}, -1 when absent */
static long long cg_metric(struct gd_daemon *d, const char *path, const char *quota)
{
	char series[400];
	snprintf(series, sizeof(series), "garuda_quota_cgroup_used{cgroup=\"%s\",quota=\"%s\"}", path, quota);
	return metric(d, series);
}

/* Two clients of one uid in group A share quota.cgroup (segments, connections); a
 * client of the same uid in group B is not refused for A's use; the uid key still
 * refuses across both groups; a refusal names the key, the limit and the group. */
TestSuite(quota_cgroup, .init = gd_test_init, .fini = cg_fini, .timeout = 120);

Test(quota_cgroup, two_groups_one_uid)
{
	cg_setup();
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"quota\":{\"connection\":{\"segments\":2},"
						   "\"uid\":{\"segments\":5,\"connections\":10},"
						   "\"cgroup\":{\"segments\":3,\"connections\":2}}}" });
	struct gd_client a1, a2, a3, b1, b2;
	struct gd_seg sa[3], sb[3], x;
	char text[GARUDA_ERROR_TEXT_MAX + 1], want[512], path[256];
	cg_client(&cg_a, d.sock, &a1, false, NULL, 0);
	cg_client(&cg_a, d.sock, &a2, false, NULL, 0);
	cg_client(&cg_b, d.sock, &b1, false, NULL, 0);
	/* the daemon charged each session to the group its child was in */
	session_cgroup(&d, a1.welcome.session_id, path, sizeof(path));
	cr_assert_str_eq(path, cg_a.path);
	session_cgroup(&d, b1.welcome.session_id, path, sizeof(path));
	cr_assert_str_eq(path, cg_b.path);

	/* segments: 2 per connection, 3 per cgroup, 5 per uid */
	gd_ok(gd_segment_open(&a1, 1, -1, &sa[0]));
	gd_ok(gd_segment_open(&a1, 1, -1, &sa[1]));
	gd_ok(gd_segment_open(&a2, 1, -1, &sa[2]));
	struct garuda_msg m;
	seg_open_msg(&m);
	snprintf(want, sizeof(want), "quota.cgroup.segments exceeded: limit 3, 3 in use, 1 more asked (cgroup %s)",
		 cg_a.path);
	refusal_text(&a2, &m, want);
	cr_assert_eq(cg_metric(&d, cg_a.path, "segments"), 3);
	/* the same uid in group B: A's use does not count */
	gd_ok(gd_segment_open(&b1, 1, -1, &sb[0]));
	gd_ok(gd_segment_open(&b1, 1, -1, &sb[1]));
	cr_assert_eq(cg_metric(&d, cg_b.path, "segments"), 2);
	/* the uid key still holds across the groups: 5 in use */
	cg_client(&cg_b, d.sock, &b2, false, NULL, 0);
	seg_open_msg(&m);
	refusal_text(&b2, &m, "quota.uid.segments exceeded: limit 5, 5 in use, 1 more asked");

	/* connections: a third in A is refused at accept, naming the key and the group */
	cg_client(&cg_a, d.sock, &a3, true, text, sizeof(text));
	snprintf(want, sizeof(want), "quota.cgroup.connections exceeded: limit 2, 2 in use, 1 more asked (cgroup %s)",
		 cg_a.path);
	cr_assert_str_eq(text, want);
	cr_assert_eq(gd_recv(&a3, &m, NULL, GD_DEADLINE_MS), -EPIPE, "not closed after QUOTA");
	gd_close(&a3);
	cr_assert_eq(cg_metric(&d, cg_a.path, "connections"), 2);

	/* freeing in A makes room in A */
	gd_ok(gd_segment_close(&a1, sa[0].id));
	gd_ok(gd_segment_open(&a2, 1, -1, &x));
	still_works(&a2, &x, 0, 1);
	gd_ok(gd_segment_close(&a2, x.id));
	gd_seg_unmap(&x);

	/* a group's record goes with its last session: no metric series left behind */
	gd_close(&b1);
	gd_close(&b2);
	cr_assert_eq(gd_wait_status(&d, "clients", 2), 2);
	cr_assert_eq(cg_metric(&d, cg_b.path, "connections"), -1, "group B outlived its sessions");
	cr_assert_eq(cg_metric(&d, cg_a.path, "connections"), 2);
	for (int i = 0; i < 3; i++) {
		gd_seg_unmap(&sa[i]);
		if (i < 2)
			gd_seg_unmap(&sb[i]);
	}
	gd_close(&a1);
	gd_close(&a2);
	gd_stop(&d);
	cr_assert_eq(cg_remove(&cg_a), 0, "rmdir %s", cg_a.dir);
	cr_assert_eq(cg_remove(&cg_b), 0, "rmdir %s", cg_b.dir);
}

/* quota.cgroup reloads like quota.uid: SIGHUP with a larger connections limit admits a
 * connection the old one refused. */
Test(quota_cgroup, reload)
{
	cg_setup();
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"quota\":{\"cgroup\":{\"connections\":1}}}" });
	struct gd_client a1, a2;
	cg_client(&cg_a, d.sock, &a1, false, NULL, 0);
	cg_client(&cg_a, d.sock, &a2, true, NULL, 0);
	gd_close(&a2);
	gd_ok(gd_write_config(&d, "{\"socket_group\":\"\",\"control_group\":\"\",\"log_level\":\"info\","
				  "\"quota\":{\"cgroup\":{\"connections\":2}}}"));
	cr_assert_eq(kill(d.pid, SIGHUP), 0);
	cJSON *j = NULL;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	double limit = 0;
	while (gd_left_ms(dl) > 0) { /* reload is asynchronous */
		j = gd_control(&d, "{\"request\":\"config\"}");
		const cJSON *q = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "quota"), "cgroup"),
			"connections");
		limit = cJSON_GetNumberValue(q);
		cJSON_Delete(j);
		if (limit == 2)
			break;
		usleep(10000);
	}
	cr_assert_eq(limit, 2, "garctl config shows quota.cgroup.connections %g after SIGHUP", limit);
	cg_client(&cg_a, d.sock, &a2, false, NULL, 0);
	gd_close(&a1);
	gd_close(&a2);
	gd_stop(&d);
}

/* A peer whose process is gone when garudad accepts (it connected and exited while
 * garudad was stopped, handing its socket to another process) is refused with
 * ERROR{-ESRCH}: taken without a cgroup key, such connections escaped quota.cgroup (a
 * launcher could open any number for its children). */
Test(quota_cgroup, a_peer_gone_before_the_accept_is_refused)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"quota\":{\"cgroup\":{\"connections\":1}}}" });
	cr_assert_eq(kill(d.pid, SIGSTOP), 0);
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* connect (the backlog takes it), hand the socket over, exit */
		struct gd_client c;
		int r = gd_connect(&c, d.sock);
		_exit(r == 0 && fdio_send(sv[1], "c", 1, &c.fd, 1, 0) == 1 ? 0 : 1);
	}
	close(sv[1]);
	char b;
	int fds[1] = { -1 };
	unsigned nfds = 0;
	ssize_t n = fdio_recv(sv[0], &b, 1, fds, 1, &nfds, 0);
	close(sv[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid); /* reaped: /proc/PID is gone */
	cr_assert(n == 1 && nfds == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child did not connect");
	cr_assert_eq(kill(d.pid, SIGCONT), 0);
	struct gd_client c;
	memset(&c, 0, sizeof(c));
	c.fd = fds[0];
	struct garuda_msg m;
	int r = gd_recv(&c, &m, NULL, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "no ERROR for a connection whose process is gone: %s", r ? gd_strerr(r) : "timed out");
	cr_assert_eq(m.type, GARUDA_MSG_ERROR, "%s", garuda_msg_type_name(m.type));
	cr_assert_eq(m.error.code, -ESRCH, "code %d", m.error.code);
	char text[256], want[128];
	snprintf(text, sizeof(text), "%.*s", (int)m.error.text_len, m.error.text);
	snprintf(want, sizeof(want), "the connecting process (pid %d) exited before garudad accepted it", (int)pid);
	cr_assert_not_null(strstr(text, want), "%s", text);
	gd_close(&c);
	/* the uid and its cgroup carry on */
	struct gd_client e;
	gd_ok(gd_open(&e, d.sock));
	struct gd_seg s;
	gd_ok(gd_segment_open(&e, 1, -1, &s));
	still_works(&e, &s, 0, 1);
	gd_seg_unmap(&s);
	gd_close(&e);
	gd_stop(&d);
}

/* Whether session id is listed with a null cgroup (no key) */
static bool session_has_no_key(struct gd_daemon *d, uint64_t id)
{
	cJSON *j = gd_control(d, "{\"request\":\"clients\"}");
	cr_assert_not_null(j, "no clients reply");
	bool seen = false, none = false;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "clients"))
	{
		if ((uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "id")) != id)
			continue;
		seen = true;
		none = cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(it, "cgroup"));
	}
	cJSON_Delete(j);
	cr_assert(seen, "session %llu not listed", (unsigned long long)id);
	return none;
}

/* A cgroup that unrelated clients share is no key (issue 30, item 6), else quota.cgroup
 * is node-wide: on a host without systemd every client's key was "/", and one uid's
 * 256 segments refused another uid's first. This test's clients share the cgroup of
 * the garudad it started (here, or on a host without systemd, the root one): with
 * quota.cgroup.connections 1, three connect, each with a null cgroup, and garudad says
 * why at notice. */
Test(quota_cgroup, shared_cgroup_is_no_key)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"quota\":{\"cgroup\":{\"connections\":1}}}" });
	struct gd_client c[3];
	for (int i = 0; i < 3; i++) {
		gd_ok(gd_open(&c[i], d.sock));
		cr_assert(session_has_no_key(&d, c[i].welcome.session_id), "client %d has a cgroup key", i);
	}
	char self[256], want[400];
	if (cg_self(self, sizeof(self)) == 0) { /* else no "0::" line: no key for that reason */
		snprintf(want, sizeof(want), "pid %d: no cgroup quota key: its cgroup %s is %s, which "
			 "unrelated clients share", (int)getpid(), self,
			 strcmp(self, "/") == 0 ? "the root cgroup" : "garudad's own cgroup");
		cr_assert(gd_wait_log(&d, want), "no log line says why (%s): %s", want, d.log);
	}
	struct gd_seg s;
	gd_ok(gd_segment_open(&c[2], 1, -1, &s));
	still_works(&c[2], &s, 0, 1);
	gd_seg_unmap(&s);
	for (int i = 0; i < 3; i++)
		gd_close(&c[i]);
	gd_stop(&d);
}

/* Each shared cgroup on its own: garudad moved into group A, so A is garudad's own
 * cgroup (a container running garudad beside its clients) and the root cgroup is not;
 * clients in A and in the root are no key (two each under a limit of one connection),
 * a client in group B still has its key (its second connection is refused). */
Test(quota_cgroup, garudads_own_and_the_root_cgroup_are_no_key)
{
	cg_setup();
	char mdir[256], mroot[256], why[300];
	cr_assert_eq(cg_mount(mdir, sizeof(mdir), mroot, sizeof(mroot), why, sizeof(why)), 0, "%s", why);
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"quota\":{\"cgroup\":{\"connections\":1}}}" });
	char procs[300], pid[16];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cg_a.dir);
	int n = snprintf(pid, sizeof(pid), "%d", (int)d.pid);
	FILE *f = fopen(procs, "we");
	cr_assert_not_null(f, "%s: %s", procs, strerror(errno));
	bool moved = fwrite(pid, 1, (size_t)n, f) == (size_t)n;
	moved = fclose(f) == 0 && moved;
	if (!moved) {
		gd_stop(&d);
		cr_skip_test("cannot move garudad into %s", cg_a.dir);
	}
	struct gd_client a[2], b[2], r[2];
	char text[GARUDA_ERROR_TEXT_MAX + 1], want[512];
	for (int i = 0; i < 2; i++) {
		cg_client(&cg_a, d.sock, &a[i], false, NULL, 0);
		cr_assert(session_has_no_key(&d, a[i].welcome.session_id), "a client in garudad's own cgroup has a key");
	}
	snprintf(want, sizeof(want), "no cgroup quota key: its cgroup %s is garudad's own cgroup", cg_a.path);
	cr_assert(gd_wait_log(&d, want), "no log line says why (%s): %s", want, d.log);

	cg_client(&cg_b, d.sock, &b[0], false, NULL, 0);
	cr_assert_not(session_has_no_key(&d, b[0].welcome.session_id), "a client in group B has no key");
	cg_client(&cg_b, d.sock, &b[1], true, text, sizeof(text));
	snprintf(want, sizeof(want), "quota.cgroup.connections exceeded: limit 1, 1 in use, 1 more asked (cgroup %s)",
		 cg_b.path);
	cr_assert_str_eq(text, want);
	gd_close(&b[1]);

	if (strcmp(mroot, "/") == 0) { /* the mount shows the root (not a delegated subtree) */
		struct cg_group root = { .path = "/" };
		snprintf(root.dir, sizeof(root.dir), "%s", mdir);
		for (int i = 0; i < 2; i++) {
			cg_client(&root, d.sock, &r[i], false, NULL, 0);
			cr_assert(session_has_no_key(&d, r[i].welcome.session_id), "a client in / has a key");
			gd_close(&r[i]);
		}
		cr_assert(gd_wait_log(&d, "no cgroup quota key: its cgroup / is the root cgroup"), "%s", d.log);
	}
	for (int i = 0; i < 2; i++)
		gd_close(&a[i]);
	gd_close(&b[0]);
	gd_stop(&d); /* group A is empty again */
	cr_assert_eq(cg_remove(&cg_a), 0, "rmdir %s", cg_a.dir);
	cr_assert_eq(cg_remove(&cg_b), 0, "rmdir %s", cg_b.dir);
}
