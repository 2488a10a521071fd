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
 * reactor takes over once more, including sequences it had taken before the move
 * and dropped for garudad (their store still wakes). The reactor is one thread per
 * process: two fallback clients are served by the same "garuda-reactor" thread
 * (counted in /proc/self/task), which is parked in an untimed futex wait while nothing
 * is outstanding, survives their moves to garudad and back, and is joined when the
 * last of them disconnects; a forked child has none until it connects a fallback
 * client of its own. Work is held outstanding by gates (no timing).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* garuda_connect_to(path) with GARUDA_FALLBACK=reactor (for this connect only) */
static struct garuda_client *connect_fallback(const char *path)
{
	struct garuda_client *c;
	setenv("GARUDA_FALLBACK", "reactor", 1);
	ok(garuda_connect_to(path, &c));
	unsetenv("GARUDA_FALLBACK");
	return c;
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
	struct garuda_client *c = connect_fallback(no_daemon_path());
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

/* A store that lands before the reactor takes its sequence (no work in front of it:
 * the host worker stores at once, while the reactor may still be asleep) still makes
 * the eventfd readable: the reactor nudges a word that moved past every wait it had.
 * Many rounds, each with a wait on the eventfd alone (no backstop, no I/O-thread
 * polling); a lost nudge fails the round's poll. */
Test(fallback, a_store_before_the_reactor_took_it_still_wakes)
{
	struct garuda_client *c = connect_fallback(no_daemon_path());
	struct garuda_seg *seg;
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	ok(garuda_segment_open(c, "host", 0, 1, &seg));
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(seg, hs, GARUDA_READINESS_EVENTFD, &s));
	struct pollfd p = { .fd = garuda_stream_fd(s), .events = POLLIN };
	for (int round = 0; round < 300; round++) {
		uint64_t seq, v = 0;
		if (round % 3 == 0)
			ok(garuda_host_stream_enqueue_work(hs, 100000)); /* some land after */
		ok(garuda_stream_signal(s, &seq));
		while (v != seq) {
			cr_assert_eq(poll(&p, 1, 60000), 1, "round %d: no readiness for %llu", round,
				     (unsigned long long)seq);
			garuda_stream_drain(s, &v);
		}
	}
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
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
	struct garuda_client *c = connect_fallback(d.sock);
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
	struct garuda_client *c = connect_fallback(d.sock);
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

/* The threads of this process named "garuda-reactor": how many, and the id of one. */
static int reactor_threads(pid_t *tid)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* the thread ended meanwhile */
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		if (strcmp(comm, "garuda-reactor\n") == 0) {
			n++;
			if (tid)
				*tid = (pid_t)atoi(e->d_name);
		}
	}
	closedir(d);
	return n;
}

/* Whether thread tid is blocked in futex() without a timeout (its 4th argument):
 * parked, not sleeping to a deadline nor polling (/proc/PID/task/TID/syscall: the
 * number, then the six arguments in hex). */
static bool parked_untimed(pid_t tid)
{
	char path[96], line[256] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	bool got = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	long nr;
	unsigned long long a[4];
	if (!got || sscanf(line, "%ld %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3]) != 5)
		return false;
	return nr == SYS_futex && a[3] == 0;
}

struct two {
	struct garuda_client *c[2];
	struct garuda_seg *seg[2];
	struct garuda_host_stream *hs[2];
	struct garuda_stream *s[2];
	uint64_t seq[2];
};

/* Hold one sequence outstanding on each client's stream, release them together, and
 * see both eventfds become readable and both waits complete. */
static void serve_both(struct two *t, const char *who)
{
	struct gate g;
	gate_init(&g);
	uint64_t v;
	for (int i = 0; i < 2; i++) {
		if (!t->c[i])
			continue;
		garuda_stream_drain(t->s[i], &v); /* presentation nudges */
		gate_enqueue(&g, t->hs[i]);
		ok(garuda_stream_signal(t->s[i], &t->seq[i]));
	}
	gate_open(&g);
	for (int i = 0; i < 2; i++) {
		if (!t->c[i])
			continue;
		struct pollfd p = { .fd = garuda_stream_fd(t->s[i]), .events = POLLIN };
		cr_assert_eq(poll(&p, 1, 60000), 1, "client %d: %s never made the eventfd readable",
			     i, who);
		ok(garuda_stream_wait(t->s[i], t->seq[i], LONG_WAIT));
	}
	gate_destroy(&g);
}

static void two_free(struct two *t, int i)
{
	garuda_stream_free(t->s[i]);
	garuda_host_stream_free(t->hs[i]);
	ok(garuda_segment_close(t->seg[i]));
	garuda_disconnect(t->c[i]);
	t->c[i] = NULL;
}

Test(fallback, one_reactor_thread_per_process)
{
	cr_assert_eq(reactor_threads(NULL), 0, "a reactor before any fallback client");
	struct gd_daemon d;
	td_start(&d, NULL);
	gd_kill(&d); /* its socket path stays: nobody listens (ECONNREFUSED) */
	struct two t = { 0 };
	setenv("GARUDA_FALLBACK", "reactor", 1);
	for (int i = 0; i < 2; i++) {
		ok(garuda_connect_to(d.sock, &t.c[i]));
		warning_is(t.c[i], d.sock);
		ok(garuda_segment_open(t.c[i], "host", 0, 1, &t.seg[i]));
		ok(garuda_host_stream_new(NULL, &t.hs[i]));
		ok(garuda_stream_new(t.seg[i], t.hs[i], GARUDA_READINESS_EVENTFD, &t.s[i]));
		ok(garuda_stream_set_wait(t.s[i], 0, NO_BACKSTOP));
	}
	unsetenv("GARUDA_FALLBACK");
	pid_t tid = 0;
	cr_assert_eq(reactor_threads(&tid), 1, "two fallback clients, one reactor thread");
	eventually(parked_untimed(tid), "the idle reactor parked without a timeout");
	serve_both(&t, "the reactor");
	pid_t tid2 = 0;
	cr_assert_eq(reactor_threads(&tid2), 1);
	cr_assert_eq(tid2, tid, "the same thread served both");
	eventually(parked_untimed(tid), "parked again once nothing is outstanding");

	/* garudad comes back: both clients move to it, the reactor stays parked */
	gd_restart(&d);
	for (int i = 0; i < 2; i++) {
		eventually(garuda_client_connected(t.c[i]) == 1, "the streams moved to garudad");
		cr_assert_eq(garuda_client_warning(t.c[i], NULL, 0), 0, "warning not cleared");
	}
	cr_assert_eq(gd_wait_status(&d, "segments", 2), 2, "both local segments attached");
	serve_both(&t, "garudad");
	cr_assert_eq(reactor_threads(&tid2), 1);
	cr_assert_eq(tid2, tid);
	eventually(parked_untimed(tid), "parked while garudad serves the streams");

	/* garudad goes away again: the one reactor takes both over */
	gd_kill(&d);
	for (int i = 0; i < 2; i++) {
		eventually(garuda_client_connected(t.c[i]) == 0, "the client noticed");
		warning_is(t.c[i], d.sock);
	}
	serve_both(&t, "the reactor, again");
	cr_assert_eq(reactor_threads(&tid2), 1);
	cr_assert_eq(tid2, tid);

	/* references: the first disconnect keeps it for the other client, the last
	 * joins it; the next fallback client starts a new one */
	two_free(&t, 0);
	cr_assert_eq(reactor_threads(NULL), 1, "the other client still holds the reactor");
	serve_both(&t, "the reactor, one client left");
	two_free(&t, 1);
	/* joined; the kernel reaps the exited thread just after pthread_join() returns
	 * (it clears the tid before it releases the task): an event, waited for */
	eventually(reactor_threads(NULL) == 0, "the last disconnect joins the reactor");
	struct garuda_client *c = connect_fallback(no_daemon_path());
	cr_assert_eq(reactor_threads(NULL), 1, "started again on first need");
	garuda_disconnect(c);
	eventually(reactor_threads(NULL) == 0, "the reactor joined");
	/* a strict client never has one */
	gd_restart(&d);
	ok(garuda_connect_to(d.sock, &c));
	cr_assert_eq(reactor_threads(NULL), 0, "a strict client started a reactor");
	garuda_disconnect(c);
	td_stop(&d);
}

/* The waits the reactor drops for a stream garudad serves are taken again when garudad
 * goes away: sequences taken under the reactor (a wait each), moved to garudad with
 * none landed (the reactor drops its waits for them: nothing left, it parks), then
 * garudad dies with them still outstanding. The store that reaches the last of them
 * makes the eventfd readable (the reactor's nudge alone: no backstop, no I/O-thread
 * polling on a fallback client). The gate holds them outstanding (no timing). */
Test(fallback, waits_dropped_for_garudad_are_taken_again)
{
	struct gd_daemon d;
	td_start(&d, NULL);
	gd_kill(&d); /* its socket path stays: nobody listens (ECONNREFUSED) */
	struct garuda_client *c = connect_fallback(d.sock);
	struct garuda_seg *seg;
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	ok(garuda_segment_open(c, "host", 0, 1, &seg));
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(seg, hs, GARUDA_READINESS_EVENTFD, &s));
	ok(garuda_stream_set_wait(s, 0, NO_BACKSTOP));
	pid_t tid = 0;
	cr_assert_eq(reactor_threads(&tid), 1);
	eventually(parked_untimed(tid), "the idle reactor parked without a timeout");

	struct gate g;
	gate_init(&g);
	gate_enqueue(&g, hs);
	enum { N = 10 };
	uint64_t seq = 0;
	for (int i = 0; i < N; i++)
		ok(garuda_stream_signal(s, &seq));
	eventually(!parked_untimed(tid), "the reactor took the outstanding sequences");

	/* garudad starts: the sequences are armed there; the reactor, left with waits
	 * for a stream it no longer serves, drops them and parks */
	gd_restart(&d);
	eventually(garuda_client_connected(c) == 1, "the stream moved to garudad");
	cr_assert_eq(gd_wait_status(&d, "armed", N), N, "outstanding sequences armed there");
	eventually(parked_untimed(tid), "the reactor dropped the waits garudad serves");

	/* garudad dies before any of them landed: the reactor takes them again */
	gd_kill(&d);
	eventually(garuda_client_connected(c) == 0, "the client noticed");
	uint64_t v;
	garuda_stream_drain(s, &v); /* the presentation's and the loss's nudges */
	cr_assert_lt(garuda_stream_value(s), seq, "a sequence landed behind the gate");
	gate_open(&g);
	struct pollfd p = { .fd = garuda_stream_fd(s), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, TD_DEADLINE_MS), 1,
		     "the reactor never made the eventfd readable (word %llu, signalled %llu)",
		     (unsigned long long)garuda_stream_value(s), (unsigned long long)seq);
	ok(garuda_stream_wait(s, seq, LONG_WAIT));

	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	ok(garuda_segment_close(seg));
	garuda_disconnect(c);
	gd_cleanup(&d); /* garudad is gone: its runtime dir goes */
}

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* Sanitizer runtimes whose child of a threaded fork cannot go on: TSan refuses to start
 * threads there ("starting new threads after multi-threaded fork is not supported");
 * GCC 12's ASan allocator takes no lock across fork(), so a size class a parent thread
 * held at the fork (the I/O thread retrying its connect) stays locked in the child and
 * every thread that allocates from it blocks for good (seen: the child's reactor, host
 * worker and main thread all in SizeClassAllocator64::GetFromAllocator, 2 runs in 12).
 * glibc's malloc is fork-safe, so the plain build runs the whole child. Said at info:
 * Criterion exits 1 after a test that logged a warning, even when all tests pass. */
#if defined(UNDER_TSAN) || defined(__SANITIZE_ADDRESS__)
#define CHILD_CHECK_ONLY 1
#endif

/* The child of a fork() has no reactor thread (the parent's clients must not be used
 * there); a fallback client it connects gets the child's own, served and joined. The
 * child reports by exit status: 0 all good, else the step that failed. Under TSan and
 * ASan only the first check (CHILD_CHECK_ONLY). */
static int child_runs_its_own_reactor(void)
{
	if (reactor_threads(NULL) != 0)
		return 10;
#ifdef CHILD_CHECK_ONLY
	return 0;
#endif
	setenv("GARUDA_FALLBACK", "reactor", 1);
	struct garuda_client *c;
	if (garuda_connect_to(no_daemon_path(), &c) < 0)
		return 11;
	if (reactor_threads(NULL) != 1)
		return 12;
	struct garuda_seg *seg;
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	uint64_t seq;
	if (garuda_segment_open(c, "host", 0, 1, &seg) < 0 || garuda_host_stream_new(NULL, &hs) < 0 ||
	    garuda_stream_new(seg, hs, GARUDA_READINESS_EVENTFD, &s) < 0 ||
	    garuda_stream_set_wait(s, 0, NO_BACKSTOP) < 0)
		return 13;
	if (garuda_host_stream_enqueue_work(hs, 100000) < 0 || garuda_stream_signal(s, &seq) < 0)
		return 14;
	struct pollfd p = { .fd = garuda_stream_fd(s), .events = POLLIN };
	if (poll(&p, 1, 60000) != 1)
		return 15; /* the child's reactor never served the stream */
	if (garuda_stream_wait(s, seq, LONG_WAIT) < 0)
		return 16;
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	garuda_segment_close(seg);
	garuda_disconnect(c);
	/* joined; the kernel reaps the thread just after (an event, waited for) */
	return settles(reactor_threads(NULL) == 0) ? 0 : 17;
}

Test(fallback, forked_child_has_no_reactor_until_it_needs_one)
{
	struct garuda_client *c = connect_fallback(no_daemon_path());
	cr_assert_eq(reactor_threads(NULL), 1);
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(child_runs_its_own_reactor());
#ifdef CHILD_CHECK_ONLY
	cr_log_info("sanitizer build: the child only checks it has no reactor thread (its "
		    "runtime cannot run a threaded fork's child: CHILD_CHECK_ONLY)");
#endif
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed at step %d (status %#x)",
		  WIFEXITED(st) ? WEXITSTATUS(st) : -1, st);
	/* the parent's reactor is untouched */
	cr_assert_eq(reactor_threads(NULL), 1);
	garuda_disconnect(c);
	eventually(reactor_threads(NULL) == 0, "the reactor joined");
}

/* GARUDA_FALLBACK=reactor falls back only once the connect's search and wait found no
 * garudad: GARUDA_CONNECT_TIMEOUT is waited out first (it took the reactor at the
 * first refusal, and the search stopped there: a stale socket of the user's own garudad
 * hid the system one). At least the timeout passes before the reactor is taken (a
 * lower bound: a loaded machine only makes it longer). */
Test(fallback, reactor_mode_waits_out_the_connect_timeout)
{
	setenv("GARUDA_FALLBACK", "reactor", 1);
	setenv("GARUDA_SOCKET", no_daemon_path(), 1);
	setenv("GARUDA_CONNECT_TIMEOUT", "300", 1);
	struct garuda_client *c = NULL;
	uint64_t t0 = garuda_now_ns();
	int r = garuda_connect(&c);
	uint64_t spent = garuda_now_ns() - t0;
	unsetenv("GARUDA_CONNECT_TIMEOUT");
	unsetenv("GARUDA_SOCKET");
	unsetenv("GARUDA_FALLBACK");
	cr_assert_eq(r, 0, "garuda_connect: %s", garuda_strerror(r));
	cr_assert_geq(spent, 300 * NS_PER_MS, "the reactor taken after %llu us, before the 300 ms "
		      "GARUDA_CONNECT_TIMEOUT was waited out", (unsigned long long)(spent / 1000));
	warning_is(c, no_daemon_path());
	garuda_disconnect(c);
}
