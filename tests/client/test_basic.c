/* test_basic.c — libgaruda end to end against a real garudad: every readiness form
 * signals and waits, the word is the truth, drain/fd/callbacks report each sequence
 * exactly once. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

TestSuite(basic, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 60);

static const enum garuda_readiness forms[] = {
	GARUDA_READINESS_POLL, GARUDA_READINESS_EVENTFD, GARUDA_READINESS_MESSAGE,
	GARUDA_READINESS_DOORBELL,
};

Test(basic, signal_wait_every_form)
{
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		struct garuda_host_stream *hs;
		struct garuda_stream *s;
		ok(garuda_host_stream_new(NULL, &hs));
		ok(garuda_stream_new(f.seg, hs, forms[i], &s));
		for (uint64_t k = 1; k <= 50; k++) {
			uint64_t seq = 0;
			ok(garuda_host_stream_enqueue_work(hs, (k % 5) * 20000));
			ok(garuda_stream_signal(s, &seq));
			cr_assert_eq(seq, k);
			ok(garuda_stream_wait(s, seq, 10 * NS_PER_S));
			cr_assert(garuda_stream_reached(s, seq));
			cr_assert(garuda_stream_value(s) >= seq);
		}
		garuda_stream_free(s);
		garuda_host_stream_free(hs);
	}
	fx_down(&f);
}

/* What libgaruda asked of the daemon, it gives back: freeing streams leaves no binding
 * or arm, closing segments no segment, disconnecting no client. */
Test(basic, daemon_side_state_is_released)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s[4];
	struct gate g;
	uint64_t seq;
	fx_up(&f, NULL, 1);
	cr_assert_eq(gd_wait_status(&f.d, "clients", 1), 1);
	cr_assert_eq(gd_wait_status(&f.d, "segments", 1), 1);
	gate_init(&g);
	ok(garuda_host_stream_new(NULL, &hs));
	gate_enqueue(&g, hs);
	for (int i = 0; i < 4; i++) {
		ok(garuda_stream_new(f.seg, hs, (enum garuda_readiness)i, &s[i]));
		ok(garuda_stream_signal(s[i], &seq));
		ok(garuda_stream_signal(s[i], &seq));
	}
	cr_assert_eq(gd_wait_status(&f.d, "bindings", 1), 1, "one eventfd stream");
	cr_assert_eq(gd_wait_status(&f.d, "armed", 6), 6, "two arms each for three forms");
	for (int i = 0; i < 4; i++)
		garuda_stream_free(s[i]); /* outstanding: disarmed */
	cr_assert_eq(gd_wait_status(&f.d, "armed", 0), 0);
	cr_assert_eq(gd_wait_status(&f.d, "bindings", 0), 0);
	gate_open(&g);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	ok(garuda_segment_close(f.seg));
	f.seg = NULL;
	cr_assert_eq(gd_wait_status(&f.d, "segments", 0), 0);
	garuda_disconnect(f.c);
	cr_assert_eq(gd_wait_status(&f.d, "clients", 0), 0);
	td_stop(&f.d);
}

/* A fork()'s child that never touches the client (docs/client.md, Threads) holds a copy
 * of the client's socket: the parent's garuda_disconnect() still ends the session in
 * garudad while the child lives (its client and segment go). Until the fix the
 * disconnect only close()d its fd, and garudad kept the session (segments, arms,
 * quota) until the child exited. The child waits on a pipe: no timing. */
Test(basic, disconnect_ends_the_session_while_a_forked_child_lives)
{
	struct fixture f = { 0 };
	int p[2];
	fx_up(&f, NULL, 1);
	cr_assert_eq(gd_wait_status(&f.d, "clients", 1), 1);
	cr_assert_eq(gd_wait_status(&f.d, "segments", 1), 1);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* the child: waits for the pipe's end, touches nothing */
		char b;
		close(p[1]);
		while (read(p[0], &b, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	garuda_disconnect(f.c); /* frees the segment too, telling garudad nothing */
	f.c = NULL;
	f.seg = NULL;
	long long clients = gd_wait_status(&f.d, "clients", 0);
	/* (a session that stayed keeps its segment: no second wait for the deadline) */
	long long segments = clients ? gd_status_num(&f.d, "segments") : gd_wait_status(&f.d, "segments", 0);
	int st = 0;
	bool alive = waitpid(pid, &st, WNOHANG) == 0;
	close(p[1]); /* the child exits */
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(alive, "the child exited early (status %d)", st);
	cr_assert_eq(clients, 0, "the session outlived garuda_disconnect() while a child held its socket");
	cr_assert_eq(segments, 0);
	td_stop(&f.d);
}

/* garuda_client_query() describes this client's own session, as the daemon sees it. */
Test(basic, query_own_session)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct gate g;
	uint64_t seq;
	char json[512];
	fx_up(&f, NULL, 1);
	gate_init(&g);
	ok(garuda_host_stream_new(NULL, &hs));
	gate_enqueue(&g, hs); /* hold the stream: the arm stays armed */
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	ok(garuda_stream_signal(s, &seq));

	int n = garuda_client_query(f.c, json, sizeof(json));
	cr_assert_gt(n, 0, "query: %s", garuda_strerror(n));
	cr_assert_eq((size_t)n, strlen(json));
	char want[64];
	snprintf(want, sizeof(want), "\"id\":%llu,", (unsigned long long)garuda_client_session(f.c));
	cr_assert_not_null(strstr(json, want), "%s lacks %s", json, want);
	cr_assert_not_null(strstr(json, "\"segments\":1,"), "%s", json);
	cr_assert_not_null(strstr(json, "\"bindings\":1,"), "%s", json);
	cr_assert_not_null(strstr(json, "\"armed\":1,"), "%s", json);
	cr_assert_eq(garuda_client_query(f.c, json, 8), -ENOBUFS);
	cr_assert_eq(garuda_client_query(NULL, json, sizeof(json)), -EINVAL);

	gate_open(&g);
	ok(garuda_stream_wait(s, seq, 10 * 1000000000ll));
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	fx_down(&f);
}
