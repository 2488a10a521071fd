/* test_errors.c — every error code the library returns against a real garudad, each
 * provoked on purpose: -EINVAL misuse, -ENOSPC, -EOPNOTSUPP, -GARUDA_E_BUSY,
 * -GARUDA_E_QUOTA (segments, bindings, armed), -GARUDA_E_TIMEOUT,
 * -GARUDA_E_STREAM_FAULT, -GARUDA_E_DISCONNECTED, -GARUDA_E_NO_DRIVER. Outstanding work
 * is held by gates, never by sleeps. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

TestSuite(errors, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 120);

Test(errors, misuse_is_einval)
{
	struct fixture f = { 0 };
	struct garuda_seg *seg;
	struct garuda_stream *s;
	uint64_t seq;
	fx_up(&f, NULL, 1);
	fails(garuda_segment_open(f.c, "nosuchbackend", 0, 1, &seg), -EINVAL);
	fails(garuda_segment_open(f.c, "host", 0, 0, &seg), -EINVAL);
	fails(garuda_segment_open(f.c, "host", 0, 65537, &seg), -EINVAL);
	fails(garuda_stream_new(f.seg, NULL, (enum garuda_readiness)7, &s), -EINVAL);
	fails(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, NULL), -EINVAL);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &s));
	fails(garuda_stream_signal(s, NULL), -EINVAL);
	fails(garuda_stream_wait(s, 0, 0), -EINVAL);
	fails(garuda_stream_wait(s, 1, 0), -EINVAL); /* never signalled */
	ok(garuda_stream_signal(s, &seq));
	ok(garuda_stream_wait(s, seq, 0));
	fails(garuda_stream_wait(s, seq + 1, -1), -EINVAL);
	fails(garuda_stream_set_wait(s, 0, 9999), -EINVAL);
	ok(garuda_stream_set_wait(s, 0, 10000));
	garuda_stream_free(s);
	fx_down(&f);
}

Test(errors, full_segment_is_enospc)
{
	struct fixture f = { 0 };
	struct garuda_stream *s[9];
	fx_up(&f, NULL, 1);
	cr_assert_eq(garuda_segment_free_words(f.seg), 8);
	for (int i = 0; i < 8; i++)
		ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, &s[i]));
	cr_assert_eq(garuda_segment_free_words(f.seg), 0);
	fails(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, &s[8]), -ENOSPC);
	cr_assert_null(s[8]);
	/* in words: the segment is full, how big it is, and what to do */
	const char *e = garuda_last_error();
	cr_assert_not_null(strstr(e, "segment is full: all 8 words (1 lines x 8)"), "%s", e);
	cr_assert_not_null(strstr(e, "garuda_segment_open"), "%s", e);
	garuda_stream_free(s[3]);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_MESSAGE, &s[3]));
	cr_assert_eq(garuda_stream_value(s[3]), 0, "a reused word starts from 0");
	for (int i = 0; i < 8; i++)
		garuda_stream_free(s[i]);
	cr_assert_eq(garuda_segment_free_words(f.seg), 8);
	fx_down(&f);
}

Test(errors, word_with_pending_store_is_not_reused)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct gate g;
	uint64_t seq;
	fx_up(&f, NULL, 1);
	gate_init(&g);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	gate_enqueue(&g, hs);
	ok(garuda_stream_signal(s, &seq));
	garuda_stream_free(s); /* its store has not landed */
	cr_assert_eq(garuda_segment_free_words(f.seg), 7);
	gate_open(&g);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	fx_down(&f);
}

Test(errors, wrong_form_is_eopnotsupp)
{
	struct fixture f = { 0 };
	struct garuda_stream *p, *e;
	fx_up(&f, NULL, 1);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, &p));
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &e));
	fails(garuda_stream_fd(p), -EOPNOTSUPP);
	cr_assert_geq(garuda_stream_fd(e), 0);
	fails(garuda_stream_set_callback(e, NULL, NULL), -EOPNOTSUPP);
	fails(garuda_stream_set_callback(p, NULL, NULL), -EOPNOTSUPP);
	garuda_stream_free(p);
	garuda_stream_free(e);
	fx_down(&f);
}

Test(errors, close_with_streams_is_busy)
{
	struct fixture f = { 0 };
	struct garuda_stream *s;
	fx_up(&f, NULL, 1);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, &s));
	fails(garuda_segment_close(f.seg), -GARUDA_E_BUSY);
	garuda_stream_free(s);
	ok(garuda_segment_close(f.seg));
	f.seg = NULL;
	fx_down(&f);
}

Test(errors, segment_quota)
{
	struct fixture f = { 0 };
	struct garuda_seg *more;
	fx_up(&f, "\"quota\":{\"connection\":{\"segments\":1}}", 1);
	fails(garuda_segment_open(f.c, "host", 0, 1, &more), -GARUDA_E_QUOTA);
	cr_assert_null(more);
	fx_down(&f);
}

Test(errors, binding_quota)
{
	struct fixture f = { 0 };
	struct garuda_stream *a, *b, *p;
	fx_up(&f, "\"quota\":{\"connection\":{\"bindings\":1}}", 1);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &a));
	fails(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &b), -GARUDA_E_QUOTA);
	cr_assert_null(b);
	cr_assert_eq(garuda_segment_free_words(f.seg), 7, "the failed stream gave its word back");
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, &p)); /* needs no binding */
	garuda_stream_free(a);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &b)); /* freed: room again */
	garuda_stream_free(b);
	garuda_stream_free(p);
	fx_down(&f);
}

/* An arm beyond the armed quota is refused asynchronously (ARM is NOREPLY); the next
 * signal reports it, and waits on the earlier sequences still complete. */
Test(errors, armed_quota_reported_by_next_signal)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct gate g;
	uint64_t seq = 0, last = 0;
	fx_up(&f, "\"quota\":{\"connection\":{\"armed\":2}}", 1);
	gate_init(&g);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_MESSAGE, &s));
	gate_enqueue(&g, hs);
	int r = 0;
	long long end = td_now_ms() + TD_DEADLINE_MS;
	while ((r = garuda_stream_signal(s, &seq)) == 0) {
		last = seq;
		cr_assert(td_now_ms() < end, "the armed quota was never reported");
		if (last >= 3)
			usleep(1000); /* the refusal is on its way */
	}
	fails(r, -GARUDA_E_QUOTA);
	cr_assert_geq(last, 3);
	cr_assert_eq(garuda_stream_last(s), last, "a refused signal enqueued nothing");
	gate_open(&g);
	ok(garuda_stream_wait(s, last, 10 * NS_PER_S)); /* by polling if need be */
	ok(garuda_stream_signal(s, &seq)); /* reported once; arming works again */
	ok(garuda_stream_wait(s, seq, 10 * NS_PER_S));
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	fx_down(&f);
}

Test(errors, timeout)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct gate g;
	uint64_t seq;
	fx_up(&f, NULL, 1);
	gate_init(&g);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	ok(garuda_stream_set_wait(s, 1000, 100000));
	gate_enqueue(&g, hs);
	ok(garuda_stream_signal(s, &seq));
	fails(garuda_stream_wait(s, seq, 0), -GARUDA_E_TIMEOUT);
	fails(garuda_stream_wait(s, seq, 1), -GARUDA_E_TIMEOUT);
	fails(garuda_stream_wait(s, seq, 5 * NS_PER_MS), -GARUDA_E_TIMEOUT);
	cr_assert(!garuda_stream_reached(s, seq));
	gate_open(&g);
	ok(garuda_stream_wait(s, seq, -1));
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	fx_down(&f);
}

/* A faulted stream never performs its store: the backstop turns that into an error,
 * for every readiness form, and later signals fail too. */
Test(errors, stream_fault)
{
	static const enum garuda_readiness forms[] = { GARUDA_READINESS_POLL, GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_MESSAGE,
						       GARUDA_READINESS_DOORBELL };
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	for (size_t i = 0; i < 4; i++) {
		struct garuda_host_stream *hs;
		struct garuda_stream *s;
		struct gate g;
		uint64_t one, two;
		gate_init(&g);
		ok(garuda_host_stream_new(NULL, &hs));
		ok(garuda_stream_new(f.seg, hs, forms[i], &s));
		gate_enqueue(&g, hs);
		ok(garuda_stream_signal(s, &one));
		ok(garuda_host_stream_enqueue_fault(hs));
		ok(garuda_stream_signal(s, &two)); /* discarded when the fault runs */
		gate_open(&g);
		ok(garuda_stream_wait(s, one, 10 * NS_PER_S));
		fails(garuda_stream_wait(s, two, 60 * NS_PER_S), -GARUDA_E_STREAM_FAULT);
		fails(garuda_stream_query(s), -GARUDA_E_STREAM_FAULT);
		uint64_t three;
		fails(garuda_stream_signal(s, &three), -GARUDA_E_STREAM_FAULT);
		garuda_stream_free(s);
		garuda_host_stream_free(hs);
		gate_destroy(&g);
	}
	fx_down(&f);
}

Test(errors, no_driver)
{
	struct fixture f = { 0 };
	struct garuda_seg *seg;
	fx_up(&f, NULL, 0);
	setenv("GARUDA_CUDA_LIBRARY", "/nonexistent/garuda/libcuda.so.1", 1);
	setenv("GARUDA_HIP_LIBRARY", "/nonexistent/garuda/libamdhip64.so", 1);
	fails(garuda_segment_open(f.c, "cuda", 0, 1, &seg), -GARUDA_E_NO_DRIVER);
	/* the words name the library, where its path came from, and the override */
	const char *e = garuda_last_error();
	cr_assert_not_null(strstr(e, "/nonexistent/garuda/libcuda.so.1"), "%s", e);
	cr_assert_not_null(strstr(e, "from $GARUDA_CUDA_LIBRARY"), "%s", e);
	fails(garuda_segment_open(f.c, "hip", 0, 1, &seg), -GARUDA_E_NO_DRIVER);
	e = garuda_last_error();
	cr_assert_not_null(strstr(e, "/nonexistent/garuda/libamdhip64.so"), "%s", e);
	cr_assert_not_null(strstr(e, "GARUDA_HIP_LIBRARY"), "%s", e);
	cr_assert_null(seg);
	fx_down(&f);
}

Test(errors, disconnected_and_back)
{
	struct fixture f = { 0 };
	struct garuda_seg *seg;
	fx_up(&f, NULL, 1);
	cr_assert_eq(garuda_client_connected(f.c), 1);
	uint64_t session = garuda_client_session(f.c);
	cr_assert_neq(session, 0);
	gd_kill(&f.d);
	eventually(garuda_client_connected(f.c) == 0, "client noticed the daemon is gone");
	cr_assert_eq(garuda_client_session(f.c), 0);
	fails(garuda_segment_open(f.c, "host", 0, 1, &seg), -GARUDA_E_DISCONNECTED);
	gd_restart(&f.d);
	eventually(garuda_client_connected(f.c) == 1, "client reconnected");
	cr_assert_eq(garuda_client_reconnects(f.c), 1);
	ok(garuda_segment_open(f.c, "host", 0, 1, &seg));
	ok(garuda_segment_close(seg));
	fx_down(&f);
}

static void cb_nested(struct garuda_stream *s, uint64_t seq, void *user)
{
	(void)s;
	(void)seq;
	struct garuda_client *c = user;
	fails(garuda_dispatch(c), -GARUDA_E_BUSY);
}

Test(errors, dispatch_from_callback_is_busy)
{
	struct fixture f = { 0 };
	struct garuda_stream *s;
	uint64_t seq;
	fx_up(&f, NULL, 1);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_MESSAGE, &s));
	ok(garuda_stream_set_callback(s, cb_nested, f.c));
	ok(garuda_stream_signal(s, &seq));
	int n = 0;
	long long end = td_now_ms() + TD_DEADLINE_MS;
	while (n == 0 && td_now_ms() < end) {
		n = garuda_dispatch(f.c);
		cr_assert_geq(n, 0);
		if (!n)
			usleep(1000);
	}
	cr_assert_eq(n, 1);
	garuda_stream_free(s);
	fx_down(&f);
}

/* ---- connecting: the failure in words, and waiting for a daemon (issue 17) ---- */

Test(errors, connect_error_names_socket_and_remedy)
{
	struct garuda_client *c = (void *)1;
	const char *path = "/nonexistent-garuda-dir/garuda.sock";
	fails(garuda_connect_to(path, &c), -ENOENT);
	cr_assert_null(c);
	const char *e = garuda_last_error();
	cr_assert_not_null(strstr(e, path), "the error does not name the socket: %s", e);
	cr_assert_not_null(strstr(e, "not running"), "%s", e);
	cr_assert_not_null(strstr(e, "GARUDA_SOCKET"), "the error names no remedy: %s", e);
	/* through garuda_connect(): says the path came from $GARUDA_SOCKET */
	setenv("GARUDA_SOCKET", path, 1);
	unsetenv("GARUDA_CONNECT_TIMEOUT");
	fails(garuda_connect(&c), -ENOENT);
	cr_assert(strstr(garuda_last_error(), "(from $GARUDA_SOCKET)") ||
			  strstr(garuda_last_error(), "($GARUDA_SOCKET)"),
		  "%s", garuda_last_error());
	/* a bad GARUDA_CONNECT_TIMEOUT is refused, naming it */
	setenv("GARUDA_CONNECT_TIMEOUT", "soon", 1);
	fails(garuda_connect(&c), -EINVAL);
	cr_assert_not_null(strstr(garuda_last_error(), "GARUDA_CONNECT_TIMEOUT"), "%s", garuda_last_error());
	unsetenv("GARUDA_CONNECT_TIMEOUT");
	unsetenv("GARUDA_SOCKET");
}

Test(errors, connect_wait_gives_up_after_timeout)
{
	struct garuda_client *c;
	long long t0 = td_now_ms();
	fails(garuda_connect_wait("/nonexistent-garuda-dir/garuda.sock", 200, &c), -ENOENT);
	cr_assert_geq(td_now_ms() - t0, 200, "returned before its timeout");
	cr_assert_not_null(strstr(garuda_last_error(), "waited 200 ms"), "%s", garuda_last_error());
}

struct unhide {
	char from[128], to[128];
};

static void *unhide_later(void *arg)
{
	struct unhide *u = arg;
	struct timespec ts = { .tv_nsec = 300 * 1000000L };
	nanosleep(&ts, NULL);
	if (rename(u->from, u->to) < 0)
		return (void *)1;
	return NULL;
}

/* The daemon's socket appears 300 ms after the client starts waiting (renamed into
 * place: the listener stays the same): garuda_connect_wait() and garuda_connect() with
 * GARUDA_CONNECT_TIMEOUT both get through; without a wait, the first try fails. */
Test(errors, connect_waits_for_the_daemon)
{
	struct gd_daemon d;
	td_start(&d, NULL);
	struct unhide u;
	snprintf(u.to, sizeof(u.to), "%s", d.sock);
	snprintf(u.from, sizeof(u.from), "%s.hidden", d.sock);
	for (int form = 0; form < 2; form++) {
		struct garuda_client *c = NULL;
		cr_assert_eq(rename(u.to, u.from), 0);
		fails(garuda_connect_to(d.sock, &c), -ENOENT);
		pthread_t t;
		cr_assert_eq(pthread_create(&t, NULL, unhide_later, &u), 0);
		if (form == 0) {
			ok(garuda_connect_wait(d.sock, 10000, &c));
		} else {
			setenv("GARUDA_SOCKET", d.sock, 1);
			setenv("GARUDA_CONNECT_TIMEOUT", "10000", 1);
			ok(garuda_connect(&c));
			unsetenv("GARUDA_CONNECT_TIMEOUT");
			unsetenv("GARUDA_SOCKET");
		}
		void *tr;
		pthread_join(t, &tr);
		cr_assert_null(tr, "rename failed");
		cr_assert_str_eq(garuda_last_error(), "");
		cr_assert_eq(garuda_client_connected(c), 1);
		garuda_disconnect(c);
	}
	td_stop(&d);
}
