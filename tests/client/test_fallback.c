/* test_fallback.c — the declared fallback chain (GARUDA_FALLBACK, issue 11).
 *
 * Checked: strict (the default, and "strict") refuses to run without garudad with the
 * connect's error, an unknown value is -EINVAL; "reactor" comes up without garudad,
 * reports GARUDA_E_FALLBACK_REACTOR saying what was requested, why it is unavailable
 * and what runs instead, and its in-process reactor delivers readiness in every form
 * (an eventfd readable and a dispatch fd readable with no backstop and no I/O-thread
 * polling behind them: a fallback client's I/O thread does not nudge); when garudad
 * starts, the client's local segment is attached to it, its streams bound and
 * re-armed there (garudad's status and the client's own QUERY show them), the
 * warning is cleared and garudad's readiness fires; when garudad goes away again the
 * reactor takes over once more. Work is held outstanding by gates (no timing).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

TestSuite(fallback, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 300);

#define LONG_WAIT (120 * NS_PER_S)
#define NO_BACKSTOP (600 * NS_PER_S)

static char nowhere[64];

static const char *no_daemon_path(void)
{
	snprintf(nowhere, sizeof(nowhere), "/tmp/garuda-fallback-%d-none/garudad.sock", (int)getpid());
	return nowhere;
}

static void warning_is(struct garuda_client *c, const char *path)
{
	char w[256];
	int code = garuda_client_warning(c, w, sizeof(w));
	cr_assert_eq(code, GARUDA_E_FALLBACK_REACTOR, "warning code %d", code);
	cr_assert_not_null(strstr(w, "requested: garudad at "), "%s", w);
	cr_assert_not_null(strstr(w, path), "%s", w);
	cr_assert_not_null(strstr(w, "unavailable: "), "%s", w);
	cr_assert_not_null(strstr(w, "running: the in-process reactor"), "%s", w);
}

Test(fallback, strict_refuses)
{
	struct garuda_client *c = (struct garuda_client *)&c;
	unsetenv("GARUDA_FALLBACK");
	fails(garuda_connect_to(no_daemon_path(), &c), -ENOENT);
	cr_assert_null(c);
	setenv("GARUDA_FALLBACK", "strict", 1);
	fails(garuda_connect_to(no_daemon_path(), &c), -ENOENT);
	setenv("GARUDA_FALLBACK", "", 1);
	fails(garuda_connect_to(no_daemon_path(), &c), -ENOENT);
	setenv("GARUDA_FALLBACK", "reactor,strict", 1);
	fails(garuda_connect_to(no_daemon_path(), &c), -EINVAL);
	setenv("GARUDA_FALLBACK", "Reactor", 1);
	fails(garuda_connect_to(no_daemon_path(), &c), -EINVAL);
	unsetenv("GARUDA_FALLBACK");
	/* a strict client still works with a daemon and reports no warning */
	struct gd_daemon d;
	td_start(&d, NULL);
	ok(garuda_connect_to(d.sock, &c));
	char w[8] = "x";
	cr_assert_eq(garuda_client_warning(c, w, sizeof(w)), 0);
	cr_assert_str_eq(w, "");
	fails(garuda_client_warning(NULL, w, sizeof(w)), -EINVAL);
	fails(garuda_client_warning(c, NULL, 4), -EINVAL);
	cr_assert_eq(garuda_client_warning(c, NULL, 0), 0);
	garuda_disconnect(c);
	td_stop(&d);
}

/* the message form's callback: the last sequence it was told about */
static void on_ready(struct garuda_stream *s, uint64_t seq, void *user)
{
	(void)s;
	*(uint64_t *)user = seq;
}

Test(fallback, reactor_without_garudad)
{
	setenv("GARUDA_FALLBACK", "reactor", 1);
	struct garuda_client *c;
	ok(garuda_connect_to(no_daemon_path(), &c));
	unsetenv("GARUDA_FALLBACK");
	cr_assert_eq(garuda_client_connected(c), 0);
	cr_assert_eq(garuda_client_session(c), 0);
	warning_is(c, no_daemon_path());
	char w[256];
	garuda_client_warning(c, w, sizeof(w));
	cr_assert_not_null(strstr(w, garuda_strerror(-ENOENT)), "%s", w);
	cr_assert_str_eq(garuda_strerror(GARUDA_E_FALLBACK_REACTOR),
			 "garudad unreachable: waits run on the in-process reactor");
	char q[600];
	fails(garuda_client_query(c, q, sizeof(q)), -GARUDA_E_DISCONNECTED);

	struct garuda_seg *seg;
	ok(garuda_segment_open(c, "host", 0, 1, &seg));
	static const enum garuda_readiness forms[] = { GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_MESSAGE,
						       GARUDA_READINESS_DOORBELL,
						       GARUDA_READINESS_POLL };
	struct garuda_host_stream *hs[4];
	struct garuda_stream *s[4];
	uint64_t seq[4], cb_seq = 0;
	struct gate g;
	gate_init(&g);
	for (int i = 0; i < 4; i++) {
		ok(garuda_host_stream_new(NULL, &hs[i]));
		ok(garuda_stream_new(seg, hs[i], forms[i], &s[i]));
		ok(garuda_stream_set_wait(s[i], 0, NO_BACKSTOP));
		gate_enqueue(&g, hs[i]);
		ok(garuda_host_stream_enqueue_work(hs[i], 200000));
		ok(garuda_stream_signal(s[i], &seq[i]));
	}
	ok(garuda_stream_set_callback(s[1], on_ready, &cb_seq));
	cr_assert_eq(garuda_dispatch(c), 0);
	gate_open(&g);
	/* eventfd form: readable from the reactor's nudge alone */
	struct pollfd p = { .fd = garuda_stream_fd(s[0]), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 60000), 1, "the reactor never made the eventfd readable");
	uint64_t v;
	cr_assert_eq(garuda_stream_drain(s[0], &v), 1);
	cr_assert_eq(v, seq[0]);
	/* message form: the dispatch fd, then the callback */
	struct pollfd pc = { .fd = garuda_client_fd(c), .events = POLLIN };
	while (cb_seq != seq[1]) {
		cr_assert_eq(poll(&pc, 1, 60000), 1, "the reactor never queued the callback");
		ok(garuda_dispatch(c));
	}
	/* every form's wait */
	for (int i = 0; i < 4; i++)
		ok(garuda_stream_wait(s[i], seq[i], LONG_WAIT));
	/* again, through the waits only (the doorbell and the message cond) */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 4; i++) {
			ok(garuda_host_stream_enqueue_work(hs[i], 100000));
			ok(garuda_stream_signal(s[i], &seq[i]));
		}
		for (int i = 0; i < 4; i++)
			ok(garuda_stream_wait(s[i], seq[i], LONG_WAIT));
	}
	warning_is(c, no_daemon_path()); /* still no garudad */
	for (int i = 0; i < 4; i++) {
		garuda_stream_free(s[i]);
		garuda_host_stream_free(hs[i]);
	}
	gate_destroy(&g);
	ok(garuda_segment_close(seg));
	garuda_disconnect(c);
}

/* Made without garudad, moved to it when it starts, and back to the reactor when it
 * goes away again. */
Test(fallback, streams_move_to_garudad)
{
	struct gd_daemon d;
	td_start(&d, NULL);
	gd_kill(&d); /* its socket path stays: nobody listens (ECONNREFUSED) */
	setenv("GARUDA_FALLBACK", "reactor", 1);
	struct garuda_client *c;
	ok(garuda_connect_to(d.sock, &c));
	unsetenv("GARUDA_FALLBACK");
	warning_is(c, d.sock);
	struct garuda_seg *seg;
	ok(garuda_segment_open(c, "host", 0, 1, &seg));
	static const enum garuda_readiness forms[] = { GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_MESSAGE,
						       GARUDA_READINESS_DOORBELL };
	struct garuda_host_stream *hs[3];
	struct garuda_stream *s[3];
	uint64_t seq[3];
	struct gate g;
	gate_init(&g);
	for (int i = 0; i < 3; i++) {
		ok(garuda_host_stream_new(NULL, &hs[i]));
		ok(garuda_stream_new(seg, hs[i], forms[i], &s[i]));
		ok(garuda_stream_set_wait(s[i], 0, NO_BACKSTOP));
		ok(garuda_stream_signal(s[i], &seq[i])); /* completes under the reactor */
		ok(garuda_stream_wait(s[i], seq[i], LONG_WAIT));
		gate_enqueue(&g, hs[i]);
		ok(garuda_stream_signal(s[i], &seq[i])); /* outstanding across the move */
	}

	gd_restart(&d);
	eventually(garuda_client_connected(c) == 1, "the streams moved to garudad");
	cr_assert_eq(garuda_client_warning(c, NULL, 0), 0, "warning not cleared");
	cr_assert_eq(gd_wait_status(&d, "segments", 1), 1, "local segment attached");
	cr_assert_eq(gd_wait_status(&d, "bindings", 1), 1, "eventfd bound");
	cr_assert_eq(gd_wait_status(&d, "armed", 3), 3, "outstanding sequences armed there");
	char q[600];
	ok(garuda_client_query(c, q, sizeof(q)));
	cr_assert_not_null(strstr(q, "\"segments\":1"), "%s", q);
	cr_assert_not_null(strstr(q, "\"armed\":3"), "%s", q);
	uint64_t v;
	garuda_stream_drain(s[0], &v); /* forget the presentation's nudge */
	gate_open(&g);
	struct pollfd p = { .fd = garuda_stream_fd(s[0]), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 60000), 1, "garudad's readiness never came");
	for (int i = 0; i < 3; i++)
		ok(garuda_stream_wait(s[i], seq[i], LONG_WAIT));
	cr_assert_eq(gd_wait_status(&d, "armed", 0), 0);

	/* garudad goes away again: the reactor takes over, the warning is back */
	gd_kill(&d);
	eventually(garuda_client_connected(c) == 0, "the client noticed");
	warning_is(c, d.sock);
	garuda_stream_drain(s[0], &v);
	for (int i = 0; i < 3; i++) {
		ok(garuda_host_stream_enqueue_work(hs[i], 100000));
		ok(garuda_stream_signal(s[i], &seq[i]));
	}
	cr_assert_eq(poll(&p, 1, 60000), 1, "the reactor never made the eventfd readable");
	for (int i = 0; i < 3; i++)
		ok(garuda_stream_wait(s[i], seq[i], LONG_WAIT));
	gd_restart(&d);
	eventually(garuda_client_connected(c) == 1, "back on garudad");
	cr_assert_eq(garuda_client_warning(c, NULL, 0), 0);

	for (int i = 0; i < 3; i++) {
		garuda_stream_free(s[i]);
		garuda_host_stream_free(hs[i]);
	}
	gate_destroy(&g);
	ok(garuda_segment_close(seg));
	garuda_disconnect(c);
	td_stop(&d);
}

/* garudad refuses one of the local segments (its quota): that segment's streams stay
 * with the reactor (readiness keeps coming) and the warning says why; the other moved. */
Test(fallback, refused_segment_stays_with_the_reactor)
{
	struct gd_daemon d;
	td_start(&d, "\"quota\":{\"connection\":{\"segments\":1}}");
	gd_kill(&d);
	setenv("GARUDA_FALLBACK", "reactor", 1);
	struct garuda_client *c;
	ok(garuda_connect_to(d.sock, &c));
	unsetenv("GARUDA_FALLBACK");
	struct garuda_seg *seg[2];
	struct garuda_host_stream *hs[2];
	struct garuda_stream *s[2];
	uint64_t seq[2];
	struct gate g;
	gate_init(&g);
	for (int i = 0; i < 2; i++) {
		ok(garuda_segment_open(c, "host", 0, 1, &seg[i]));
		ok(garuda_host_stream_new(NULL, &hs[i]));
		ok(garuda_stream_new(seg[i], hs[i], GARUDA_READINESS_EVENTFD, &s[i]));
		ok(garuda_stream_set_wait(s[i], 0, NO_BACKSTOP));
	}
	gd_restart(&d);
	eventually(garuda_client_connected(c) == 1, "session up");
	cr_assert_eq(gd_wait_status(&d, "segments", 1), 1, "one segment attached");
	char w[256];
	cr_assert_eq(garuda_client_warning(c, w, sizeof(w)), GARUDA_E_FALLBACK_REACTOR);
	cr_assert_not_null(strstr(w, garuda_strerror(-GARUDA_E_QUOTA)), "%s", w);
	cr_assert_not_null(strstr(w, "running: the in-process reactor"), "%s", w);
	uint64_t v;
	int refused = 0;
	for (int i = 0; i < 2; i++) {
		garuda_stream_drain(s[i], &v); /* the presentation's nudge */
		gate_enqueue(&g, hs[i]);
		/* the refusal is reported once, by the refused stream's next signal */
		int r = garuda_stream_signal(s[i], &seq[i]);
		if (r == -GARUDA_E_QUOTA) {
			refused++;
			r = garuda_stream_signal(s[i], &seq[i]);
		}
		ok(r);
	}
	cr_assert_eq(refused, 1, "one stream's segment was refused");
	gate_open(&g);
	for (int i = 0; i < 2; i++) {
		struct pollfd p = { .fd = garuda_stream_fd(s[i]), .events = POLLIN };
		cr_assert_eq(poll(&p, 1, 60000), 1, "stream %d: no readiness", i);
		ok(garuda_stream_wait(s[i], seq[i], LONG_WAIT));
	}
	for (int i = 0; i < 2; i++) {
		garuda_stream_free(s[i]);
		garuda_host_stream_free(hs[i]);
		ok(garuda_segment_close(seg[i]));
	}
	gate_destroy(&g);
	garuda_disconnect(c);
	td_stop(&d);
}
