/* test_reconnect.c — a daemon restart loses nothing (DESIGN invariant 4).
 *
 * garudad is SIGKILLed while streams of every readiness form are signalling and being
 * waited on, callbacks dispatched and eventfds drained through epoll; it stays down for
 * a while (waits must keep completing by polling the words), then starts again on the
 * same socket. libgaruda reconnects, presents its segments again (SEGMENT_ATTACH),
 * re-binds and re-arms. Checked: every signalled sequence completes at the client
 * exactly once (each wait returns 0 once; callback and drain ranges cover 1..last
 * without overlap), twice over; and readiness really comes from the new daemon again
 * (re-armed descriptors fire, new arms fire). Outstanding work is held by gates. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <errno.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common.h"

TestSuite(reconnect, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 300);

#define WAITERS 4   /* one per form, signal + wait */
#define DRAINED 3   /* eventfd streams consumed through epoll + drain */
#define CALLBACKS 2 /* message streams consumed through callbacks */
#define MAXSEQ 200000

struct cov {
	uint64_t last;
	unsigned char *seen; /* MAXSEQ */
	bool bad;
};

static void cov_init(struct cov *c)
{
	c->last = 0;
	c->bad = false;
	c->seen = calloc(MAXSEQ, 1);
	cr_assert_not_null(c->seen);
}

static void cov_add(struct cov *c, uint64_t upto)
{
	if (upto <= c->last || upto >= MAXSEQ) {
		c->bad = true;
		return;
	}
	for (uint64_t q = c->last + 1; q <= upto; q++)
		if (c->seen[q]++)
			c->bad = true;
	c->last = upto;
}

static void cov_check(struct cov *c, uint64_t last, const char *who)
{
	cr_assert(!c->bad, "%s: a sequence was reported twice or out of order", who);
	cr_assert_eq(c->last, last, "%s: reported up to %llu of %llu", who,
		     (unsigned long long)c->last, (unsigned long long)last);
	for (uint64_t q = 1; q <= last; q++)
		cr_assert_eq(c->seen[q], 1, "%s: sequence %llu reported %d times", who,
			     (unsigned long long)q, c->seen[q]);
	free(c->seen);
}

struct run {
	struct garuda_client *c;
	struct garuda_seg *seg;
	atomic_bool stop;
	atomic_ullong progress; /* completions seen by anyone */
};

/* ---- signal + wait, one thread per stream ---- */

struct waiter {
	struct run *run;
	enum garuda_readiness form;
	uint64_t last;
	unsigned waited_twice;
	int err;
	const char *what;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	if ((w->err = garuda_host_stream_new(NULL, &hs)) < 0)
		return (w->what = "host stream", NULL);
	if ((w->err = garuda_stream_new(w->run->seg, hs, w->form, &s)) < 0) {
		garuda_host_stream_free(hs);
		return (w->what = "stream_new", NULL);
	}
	garuda_stream_set_wait(s, 2000, 1000000);
	for (unsigned k = 0; !atomic_load(&w->run->stop); k++) {
		uint64_t seq;
		garuda_host_stream_enqueue_work(hs, (k % 4) * 50000);
		if ((w->err = garuda_stream_signal(s, &seq)) < 0) {
			w->what = "signal";
			break;
		}
		if (seq != w->last + 1) {
			w->err = -1;
			w->what = "sequence numbers skipped";
			break;
		}
		if ((w->err = garuda_stream_wait(s, seq, 120 * NS_PER_S)) < 0) {
			w->what = "wait";
			break;
		}
		if (garuda_stream_wait(s, seq, 0) != 0)
			w->waited_twice++; /* completed stays completed */
		w->last = seq;
		atomic_fetch_add(&w->run->progress, 1);
	}
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	return NULL;
}

/* ---- epoll + drain over eventfd streams, one thread signals and consumes ---- */

struct drainer {
	struct run *run;
	struct cov cov[DRAINED];
	uint64_t last[DRAINED];
	int err;
	const char *what;
};

static void *drainer_main(void *arg)
{
	struct drainer *d = arg;
	struct garuda_host_stream *hs[DRAINED];
	struct garuda_stream *s[DRAINED];
	int ep = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < DRAINED; i++) {
		cov_init(&d->cov[i]);
		garuda_host_stream_new(NULL, &hs[i]);
		if ((d->err = garuda_stream_new(d->run->seg, hs[i], GARUDA_READINESS_EVENTFD, &s[i])) < 0) {
			d->what = "stream_new";
			return NULL; /* the test fails; leaks do not matter then */
		}
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		epoll_ctl(ep, EPOLL_CTL_ADD, garuda_stream_fd(s[i]), &ev);
	}
	bool stopping = false;
	for (;;) {
		bool all_done = true;
		for (int i = 0; i < DRAINED; i++) {
			/* keep up to 8 outstanding per stream while running */
			while (!stopping && d->last[i] - d->cov[i].last < 8) {
				garuda_host_stream_enqueue_work(hs[i], (uint64_t)(i + 1) * 30000);
				if ((d->err = garuda_stream_signal(s[i], &d->last[i])) < 0) {
					d->what = "signal";
					goto out;
				}
			}
			if (d->cov[i].last != d->last[i])
				all_done = false;
		}
		if (stopping && all_done)
			break;
		stopping = atomic_load(&d->run->stop);
		struct epoll_event ev[DRAINED];
		/* readiness or, while the daemon is away, the library's own nudges */
		int n = epoll_wait(ep, ev, DRAINED, 200);
		for (int e = 0; e < n; e++) {
			int i = (int)ev[e].data.u32;
			uint64_t v;
			int r = garuda_stream_drain(s[i], &v);
			if (r == 1) {
				cov_add(&d->cov[i], v);
				atomic_fetch_add(&d->run->progress, 1);
			}
		}
		if (n == 0 && stopping) {
			/* the last completions may have come with no readiness left to see */
			for (int i = 0; i < DRAINED; i++) {
				uint64_t v;
				if (garuda_stream_drain(s[i], &v) == 1)
					cov_add(&d->cov[i], v);
			}
		}
	}
out:
	for (int i = 0; i < DRAINED; i++) {
		garuda_stream_free(s[i]);
		garuda_host_stream_free(hs[i]);
	}
	close(ep);
	return NULL;
}

/* ---- message form: producers signal, a dispatcher runs callbacks ---- */

struct cbstream {
	struct run *run;
	struct cov cov;
	uint64_t last;
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	int err;
};

static void on_ready(struct garuda_stream *s, uint64_t seq, void *user)
{
	(void)s;
	struct cbstream *cb = user;
	cov_add(&cb->cov, seq);
	atomic_fetch_add(&cb->run->progress, 1);
}

static void *cbproducer_main(void *arg)
{
	struct cbstream *cb = arg;
	for (unsigned k = 0; !atomic_load(&cb->run->stop); k++) {
		garuda_host_stream_enqueue_work(cb->hs, (k % 3) * 40000);
		uint64_t seq;
		if ((cb->err = garuda_stream_signal(cb->s, &seq)) < 0)
			break;
		cb->last = seq;
		/* bounded backlog: wait for the one before */
		if (seq > 4 && (cb->err = garuda_stream_wait(cb->s, seq - 4, 120 * NS_PER_S)) < 0)
			break;
	}
	return NULL;
}

static void dispatch_until(struct garuda_client *c, struct cbstream *cb, int n)
{
	long long end = td_now_ms() + TD_DEADLINE_MS;
	for (;;) {
		bool done = true;
		for (int i = 0; i < n; i++)
			done &= cb[i].cov.last == cb[i].last;
		if (done)
			return;
		cr_assert(td_now_ms() < end, "callbacks never caught up");
		struct pollfd p = { .fd = garuda_client_fd(c), .events = POLLIN };
		poll(&p, 1, 50);
		cr_assert_geq(garuda_dispatch(c), 0);
	}
}

struct dispatcher {
	struct run *run;
	atomic_bool stop;
};

static void *dispatcher_main(void *arg)
{
	struct dispatcher *d = arg;
	while (!atomic_load(&d->stop)) {
		struct pollfd p = { .fd = garuda_client_fd(d->run->c), .events = POLLIN };
		poll(&p, 1, 50);
		garuda_dispatch(d->run->c);
	}
	return NULL;
}

static void progress_by(struct run *run, unsigned long long n, const char *what)
{
	unsigned long long p0 = atomic_load(&run->progress);
	eventually(atomic_load(&run->progress) >= p0 + n, what);
}

Test(reconnect, kill_while_signalling_loses_nothing)
{
	struct fixture f = { 0 };
	struct run run = { 0 };
	struct waiter w[WAITERS];
	struct drainer dr = { .run = &run };
	struct cbstream cb[CALLBACKS];
	struct dispatcher disp = { .run = &run };
	pthread_t tw[WAITERS], tdr, tcb[CALLBACKS], tdisp;

	fx_up(&f, NULL, 2);
	run.c = f.c;
	run.seg = f.seg;
	for (int i = 0; i < CALLBACKS; i++) {
		cb[i] = (struct cbstream){ .run = &run };
		cov_init(&cb[i].cov);
		ok(garuda_host_stream_new(NULL, &cb[i].hs));
		ok(garuda_stream_new(f.seg, cb[i].hs, GARUDA_READINESS_MESSAGE, &cb[i].s));
		ok(garuda_stream_set_callback(cb[i].s, on_ready, &cb[i]));
	}
	for (int i = 0; i < WAITERS; i++) {
		w[i] = (struct waiter){ .run = &run, .form = (enum garuda_readiness)i };
		cr_assert_eq(pthread_create(&tw[i], NULL, waiter_main, &w[i]), 0);
	}
	cr_assert_eq(pthread_create(&tdr, NULL, drainer_main, &dr), 0);
	for (int i = 0; i < CALLBACKS; i++)
		cr_assert_eq(pthread_create(&tcb[i], NULL, cbproducer_main, &cb[i]), 0);
	cr_assert_eq(pthread_create(&tdisp, NULL, dispatcher_main, &disp), 0);

	for (int round = 1; round <= 2; round++) {
		progress_by(&run, 300, "progress with the daemon up");
		gd_kill(&f.d);
		eventually(garuda_client_connected(f.c) == 0, "the client noticed");
		progress_by(&run, 200, "progress while the daemon is down (polling the words)");
		gd_restart(&f.d);
		eventually(garuda_client_reconnects(f.c) == (uint64_t)round, "reconnected");
		eventually(garuda_client_connected(f.c) == 1, "session up");
		progress_by(&run, 300, "progress after the restart");
	}

	atomic_store(&run.stop, true);
	for (int i = 0; i < WAITERS; i++)
		pthread_join(tw[i], NULL);
	pthread_join(tdr, NULL);
	for (int i = 0; i < CALLBACKS; i++)
		pthread_join(tcb[i], NULL);
	atomic_store(&disp.stop, true);
	pthread_join(tdisp, NULL);

	for (int i = 0; i < WAITERS; i++) {
		cr_assert_eq(w[i].err, 0, "waiter %d (form %d): %s: %s", i, w[i].form, w[i].what,
			     garuda_strerror(w[i].err));
		cr_assert_gt(w[i].last, 0);
		cr_assert_eq(w[i].waited_twice, 0);
		cr_log_info("waiter form %d: %llu sequences", w[i].form, (unsigned long long)w[i].last);
	}
	cr_assert_eq(dr.err, 0, "drainer: %s: %s", dr.what, garuda_strerror(dr.err));
	for (int i = 0; i < DRAINED; i++) {
		cov_check(&dr.cov[i], dr.last[i], "epoll/drain");
		cr_log_info("drained stream %d: %llu sequences", i, (unsigned long long)dr.last[i]);
	}
	for (int i = 0; i < CALLBACKS; i++)
		cr_assert_eq(cb[i].err, 0, "callback producer %d: %s", i, garuda_strerror(cb[i].err));
	dispatch_until(f.c, cb, CALLBACKS);
	for (int i = 0; i < CALLBACKS; i++) {
		cov_check(&cb[i].cov, cb[i].last, "callbacks");
		cr_log_info("callback stream %d: %llu sequences", i, (unsigned long long)cb[i].last);
		garuda_stream_free(cb[i].s);
		garuda_host_stream_free(cb[i].hs);
	}
	fx_down(&f);
}

/* garudad's log (both runs: the launcher appends), or "" */
static const char *daemon_log(const struct gd_daemon *d)
{
	static char buf[1 << 16];
	buf[0] = '\0';
	FILE *f = fopen(d->log, "re");
	if (f) {
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

/* An arm that was outstanding when the daemon died is re-armed in the new session and
 * fired by the new daemon: the eventfd becomes readable with no polling involved. The
 * new garudad logs the re-attaching session once, with who and what it presented (the
 * first, fresh session was not logged so). */
Test(reconnect, outstanding_arms_are_rearmed)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs[3];
	struct garuda_stream *s[3];
	struct gate g;
	uint64_t seq[3];
	int counted = 0;
	fx_up(&f, NULL, 1);
	gate_init(&g);
	static const enum garuda_readiness forms[] = { GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_MESSAGE,
						       GARUDA_READINESS_DOORBELL };
	for (int i = 0; i < 3; i++) {
		ok(garuda_host_stream_new(NULL, &hs[i]));
		ok(garuda_stream_new(f.seg, hs[i], forms[i], &s[i]));
		ok(garuda_stream_set_wait(s[i], 0, 60 * NS_PER_S)); /* no backstop help */
		gate_enqueue(&g, hs[i]);
		ok(garuda_stream_signal(s[i], &seq[i]));
	}
	cr_assert_null(strstr(daemon_log(&f.d), "re-attach"), "a fresh session logged as re-attaching:\n%s",
		       daemon_log(&f.d));
	gd_kill(&f.d);
	eventually(garuda_client_connected(f.c) == 0, "the client noticed");
	gd_restart(&f.d);
	eventually(garuda_client_connected(f.c) == 1, "session up");
	/* the new daemon holds what the client presented again */
	cr_assert_eq(gd_wait_status(&f.d, "segments", 1), 1, "segment re-attached");
	cr_assert_eq(gd_wait_status(&f.d, "bindings", 1), 1, "eventfd re-bound");
	cr_assert_eq(gd_wait_status(&f.d, "armed", 3), 3, "outstanding sequences re-armed");
	/* ... and says so in its log, once the session went quiet (nothing else is sent
	 * until the line is there: the counts are exact) */
	char who[64];
	snprintf(who, sizeof(who), "(pid %d uid %u ", (int)getpid(), (unsigned)getuid());
	eventually(strstr(daemon_log(&f.d), "re-attached 1 segment(s)"), "the re-attach line");
	const char *line = strstr(daemon_log(&f.d), "re-attached 1 segment(s)");
	cr_assert_not_null(strstr(line, "1 eventfd binding(s), 3 wait(s) re-armed"), "%s", line);
	const char *eol = strchr(line, '\n'), *bol = line;
	while (bol > daemon_log(&f.d) && bol[-1] != '\n')
		bol--;
	const char *at = strstr(bol, who);
	cr_assert(at && at < line && eol, "the line does not name %s:\n%s", who, daemon_log(&f.d));
	cr_assert_null(strstr(line + 1, "re-attached"), "logged twice:\n%s", daemon_log(&f.d));
	/* forget the reconnection's nudges */
	uint64_t v;
	cr_assert_eq(garuda_stream_drain(s[0], &v), 0);
	cr_assert_eq(garuda_stream_value(s[0]), 0);
	gate_open(&g);
	struct pollfd p = { .fd = garuda_stream_fd(s[0]), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 30000), 1, "the re-armed descriptor never fired");
	cr_assert_eq(garuda_stream_drain(s[0], &v), 1);
	cr_assert_eq(v, seq[0]);
	for (int i = 1; i < 3; i++) {
		long long t0 = td_now_ms();
		ok(garuda_stream_wait(s[i], seq[i], 120 * NS_PER_S));
		cr_assert_lt(td_now_ms() - t0, 30000, "form %d: only the backstop woke it", forms[i]);
		counted++;
	}
	cr_assert_eq(counted, 2);
	/* and new arms in the new session */
	for (int i = 0; i < 3; i++) {
		ok(garuda_host_stream_enqueue_work(hs[i], 1000000));
		ok(garuda_stream_signal(s[i], &seq[i]));
	}
	cr_assert_eq(poll(&p, 1, 30000), 1, "a new arm never fired");
	for (int i = 0; i < 3; i++)
		ok(garuda_stream_wait(s[i], seq[i], 120 * NS_PER_S));
	for (int i = 0; i < 3; i++) {
		garuda_stream_free(s[i]);
		garuda_host_stream_free(hs[i]);
	}
	gate_destroy(&g);
	fx_down(&f);
}

/* A client that keeps working while it re-attaches: garudad's re-attach line counts
 * what the client presented again (3 outstanding waits), not the arms of its new work
 * meanwhile (issue 30, item 16: "6520 wait(s) re-armed" for a client with at most 20
 * outstanding). libgaruda marks its re-presentation (feature REPRESENT). */
Test(reconnect, rearm_count_is_the_waits_presented_again)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *ha, *hb;
	struct garuda_stream *a, *b;
	struct gate g;
	uint64_t seq[3], sb;
	fx_up(&f, NULL, 1);
	gate_init(&g);
	ok(garuda_host_stream_new(NULL, &ha));
	ok(garuda_host_stream_new(NULL, &hb));
	ok(garuda_stream_new(f.seg, ha, GARUDA_READINESS_EVENTFD, &a));
	ok(garuda_stream_new(f.seg, hb, GARUDA_READINESS_EVENTFD, &b));
	gate_enqueue(&g, ha);
	for (int i = 0; i < 3; i++)
		ok(garuda_stream_signal(a, &seq[i]));
	gd_kill(&f.d);
	eventually(garuda_client_connected(f.c) == 0, "the client noticed");
	gd_restart(&f.d);
	eventually(garuda_client_connected(f.c) == 1, "session up");
	/* new work at once, while garudad still counts the re-attach: 200 arms on b */
	for (int i = 0; i < 200; i++) {
		ok(garuda_host_stream_enqueue_work(hb, 20000));
		ok(garuda_stream_signal(b, &sb));
		ok(garuda_stream_wait(b, sb, 60 * NS_PER_S));
	}
	eventually(strstr(daemon_log(&f.d), "re-attached 1 segment(s)"), "the re-attach line");
	const char *line = strstr(daemon_log(&f.d), "re-attached 1 segment(s)");
	cr_assert_not_null(strstr(line, "re-attached 1 segment(s), 2 eventfd binding(s), 3 wait(s) re-armed"),
			   "%.*s", (int)strcspn(line, "\n"), line);
	gate_open(&g);
	for (int i = 0; i < 3; i++)
		ok(garuda_stream_wait(a, seq[i], 60 * NS_PER_S));
	garuda_stream_free(a);
	garuda_stream_free(b);
	garuda_host_stream_free(ha);
	garuda_host_stream_free(hb);
	gate_destroy(&g);
	fx_down(&f);
}

/* While garudad is away, an eventfd user still gets each completion in its fd (the
 * I/O thread looks at the words every 1 ms, doubling to 16 ms while none moves, apart
 * from the reconnect backoff's 100 ms). Each completion after a quiet spell longer than
 * the backoff's cap is asserted to arrive; how late is logged, not asserted (a loaded
 * machine decides it). */
/* An EVENTFD stream on a host stream, then garudad killed: the client has noticed,
 * and the going-down nudge is drained. *p polls the stream's eventfd. */
static void eventfd_stream_then_away(struct fixture *f, struct garuda_host_stream **hs,
				     struct garuda_stream **s, struct pollfd *p)
{
	fx_up(f, NULL, 1);
	ok(garuda_host_stream_new(NULL, hs));
	ok(garuda_stream_new(f->seg, *hs, GARUDA_READINESS_EVENTFD, s));
	gd_kill(&f->d);
	eventually(garuda_client_connected(f->c) == 0, "the client noticed");
	*p = (struct pollfd){ .fd = garuda_stream_fd(*s), .events = POLLIN };
	garuda_stream_drain(*s, NULL); /* the going-down nudge */
}

Test(reconnect, eventfd_readiness_while_daemon_is_away)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct pollfd p;
	uint64_t seq, v, late[5];
	eventfd_stream_then_away(&f, &hs, &s, &p);
	for (int i = 0; i < 5; i++) {
		/* the 20 ms kernel lets the away-backoff climb to its 16 ms cap; no sleep:
		 * readiness is what is asserted, the delay is only logged */
		uint64_t stamp = 0;
		ok(garuda_host_stream_enqueue_work(hs, 20 * NS_PER_MS)); /* a kernel */
		ok(garuda_host_stream_enqueue_stamp(hs, &stamp));
		ok(garuda_stream_signal(s, &seq));
		do
			cr_assert_eq(poll(&p, 1, 30000), 1, "sequence %llu: no readiness while garudad is away",
				     (unsigned long long)seq);
		while (garuda_stream_drain(s, &v) == 0 || !garuda_stream_reached(s, seq));
		late[i] = garuda_now_ns() - __atomic_load_n(&stamp, __ATOMIC_ACQUIRE);
	}
	cr_log_info("while away, store -> eventfd wake: %.1f %.1f %.1f %.1f %.1f ms", late[0] / 1e6,
		    late[1] / 1e6, late[2] / 1e6, late[3] / 1e6, late[4] / 1e6);
	cr_assert_eq(garuda_client_connected(f.c), 0);
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	gd_restart(&f.d);
	eventually(garuda_client_connected(f.c) == 1, "session up");
	fx_down(&f);
}

/* A listening socket at path that nobody accepts from (what garudad's path holds when
 * it is stopped, hung, or systemd's socket while it starts) */
static int listener_at(const char *path, int backlog)
{
	int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(listen(lfd, backlog), 0);
	return lfd;
}

/* Fill a listener's backlog (listen(fd, 0)) with connections of our own, until the
 * next connect would wait: n of them are left in fds (closed by the caller). */
static int fill_backlog(const char *path, int *fds, int max)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int n = 0;
	for (; n < max; n++) {
		fds[n] = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		cr_assert_geq(fds[n], 0);
		if (connect(fds[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			cr_assert_eq(errno, EAGAIN, "connect: %s", strerror(errno));
			close(fds[n]);
			return n;
		}
	}
	cr_assert_fail("the backlog took %d connections", max);
	return n;
}

/* A listener at path whose backlog is full (listen(fd, 0), then filled): what a stopped
 * or hung garudad's path holds once clients queue on it */
struct full_listener {
	int lfd, held[8], n;
	char path[108];
};

static void full_listener_open(struct full_listener *l, const char *path)
{
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->lfd = listener_at(path, 0);
	l->n = fill_backlog(path, l->held, 8);
}

static void full_listener_close(struct full_listener *l)
{
	for (int i = 0; i < l->n; i++)
		close(l->held[i]);
	close(l->lfd);
	unlink(l->path);
}

/* garudad's path holds a listener whose backlog is full: a connect() there would wait
 * until it accepts, and the I/O thread's reconnect did, for good. Readiness must still
 * come while garudad is away, and garuda_disconnect() (it joins that thread) return.
 * Ordering, not timing: a blocked thread delivers neither, and the poll fails. */
Test(reconnect, readiness_while_garudads_backlog_is_full)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct pollfd p;
	uint64_t seq, v;
	eventfd_stream_then_away(&f, &hs, &s, &p);
	unlink(f.d.sock);
	struct full_listener l;
	full_listener_open(&l, f.d.sock);
	ok(garuda_host_stream_enqueue_work(hs, 20 * NS_PER_MS)); /* spans some reconnect tries */
	ok(garuda_stream_signal(s, &seq));
	do
		cr_assert_eq(poll(&p, 1, 30000), 1, "no readiness while garudad's backlog is full");
	while (garuda_stream_drain(s, &v) == 0 || !garuda_stream_reached(s, seq));
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	ok(garuda_segment_close(f.seg));
	f.seg = NULL;
	garuda_disconnect(f.c); /* hangs if the I/O thread is stuck in connect() */
	f.c = NULL;
	full_listener_close(&l);
	gd_restart(&f.d);
	fx_down(&f);
}

/* A new connect to such a listener ends in -GARUDA_E_TIMEOUT after the handshake's
 * time (5 s, docs/client.md), not in a connect() that never returns. */
Test(reconnect, connect_to_a_full_backlog_times_out)
{
	char dir[] = "/tmp/garuda-backlog-XXXXXX", path[64];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/garuda.sock", dir);
	struct full_listener l;
	full_listener_open(&l, path);
	struct garuda_client *c = NULL;
	cr_assert_eq(garuda_connect_to(path, &c), -GARUDA_E_TIMEOUT, "%s", garuda_last_error());
	cr_assert_null(c);
	full_listener_close(&l);
	rmdir(dir);
}

/* While a reconnect's handshake waits for an answer that does not come (systemd's
 * socket accepting while garudad starts, or a stopped garudad), the I/O thread goes
 * on watching the words: an eventfd stream's readiness comes while that handshake is
 * still pending. The thread blocked in it for 5 s a try, every eventfd wake with it.
 * Ordering, not timing: once the readiness came, the handshake's connection must still
 * be open (a thread that had blocked in it would have given it up first). */
Test(reconnect, readiness_while_a_handshake_goes_unanswered)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct pollfd p;
	uint64_t seq, v;
	eventfd_stream_then_away(&f, &hs, &s, &p);
	/* a listener at garudad's path that takes the client's HELLO and never answers */
	unlink(f.d.sock);
	int lfd = listener_at(f.d.sock, 4);
	int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC); /* the reconnect's; its HELLO sent */
	cr_assert_geq(conn, 0);
	struct gate g;
	gate_init(&g);
	gate_enqueue(&g, hs);
	ok(garuda_stream_signal(s, &seq));
	gate_open(&g);
	do
		cr_assert_eq(poll(&p, 1, 30000), 1, "no readiness while the handshake is pending");
	while (garuda_stream_drain(s, &v) == 0 || !garuda_stream_reached(s, seq));
	struct pollfd c = { .fd = conn, .events = POLLIN | POLLRDHUP };
	cr_assert_eq(poll(&c, 1, 0), 1);
	cr_assert(c.revents & POLLIN, "no HELLO");
	cr_assert(!(c.revents & (POLLRDHUP | POLLHUP)),
		  "the handshake was given up before the readiness came: the I/O thread waited in it");
	close(conn);
	close(lfd);
	unlink(f.d.sock);
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	gd_restart(&f.d);
	eventually(garuda_client_connected(f.c) == 1, "session up");
	fx_down(&f);
}

/* Streams and segments made while the daemon is away are presented when it is back. */
Test(reconnect, created_while_down)
{
	struct fixture f = { 0 };
	struct garuda_stream *s[4];
	uint64_t seq;
	fx_up(&f, NULL, 1);
	gd_kill(&f.d);
	eventually(garuda_client_connected(f.c) == 0, "the client noticed");
	for (int i = 0; i < 4; i++) {
		ok(garuda_stream_new(f.seg, NULL, (enum garuda_readiness)i, &s[i]));
		ok(garuda_stream_signal(s[i], &seq));
		ok(garuda_stream_wait(s[i], seq, 0)); /* stored at once: memory is the truth */
	}
	gd_restart(&f.d);
	eventually(garuda_client_connected(f.c) == 1, "session up");
	struct garuda_host_stream *hs;
	ok(garuda_host_stream_new(NULL, &hs));
	struct garuda_stream *e;
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &e));
	ok(garuda_host_stream_enqueue_work(hs, 1000000));
	ok(garuda_stream_signal(e, &seq));
	struct pollfd p = { .fd = garuda_stream_fd(e), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 30000), 1);
	garuda_stream_free(e);
	garuda_host_stream_free(hs);
	for (int i = 0; i < 4; i++)
		garuda_stream_free(s[i]);
	fx_down(&f);
}

/* garuda_stream_signal(T) from its own thread: blocks in the host stream's enqueue
 * (a full FIFO behind a gate) while it holds T's lock */
struct blocked_signal {
	struct garuda_stream *s;
	uint64_t seq;
	int err;
};

static void *blocked_signal_main(void *arg)
{
	struct blocked_signal *b = arg;
	b->err = garuda_stream_signal(b->s, &b->seq);
	return NULL;
}

/* A strict client whose segment garudad refused on re-attach (a segments quota), its
 * stream S signalled while the new session is still being presented (after S's turn):
 * the refused stream is watched by the I/O thread, so its eventfd becomes readable
 * when the word reaches the sequence, after the session is up. Until the fix nobody
 * covered that sequence: not garudad (S is not presented), not the presentation (S's
 * turn had passed), not the I/O thread (the signal cleared S's refusal mark).
 * The presentation is held at a later stream T with no timing: T's signal waits for
 * room in its full host FIFO (behind a gate) holding T's lock, which the presenter
 * needs for T. */
Test(reconnect, refused_stream_signalled_while_presenting_is_watched)
{
	struct fixture f = { 0 };
	struct garuda_seg *segs, *segt;
	struct garuda_host_stream *hss, *hst;
	struct garuda_stream *s, *t;
	struct gate gs, gt;
	uint64_t seq, v;
	fx_up(&f, NULL, 0);
	gate_init(&gs);
	gate_init(&gt);
	/* presented newest first: segt takes the quota's one segment, segs is refused */
	ok(garuda_segment_open(f.c, "host", 0, 1, &segs));
	ok(garuda_segment_open(f.c, "host", 0, 1, &segt));
	/* streams in table order: S is presented before T */
	ok(garuda_host_stream_new(NULL, &hss));
	struct garuda_host_stream_config one = { .depth = 1 };
	ok(garuda_host_stream_new(&one, &hst));
	ok(garuda_stream_new(segs, hss, GARUDA_READINESS_EVENTFD, &s));
	ok(garuda_stream_new(segt, hst, GARUDA_READINESS_EVENTFD, &t));

	gd_kill(&f.d);
	eventually(garuda_client_connected(f.c) == 0, "the client noticed");
	cr_assert_eq(gd_write_config(&f.d, "{\"socket_group\":\"\",\"control_group\":\"\","
					   "\"log_level\":\"info\","
					   "\"quota\":{\"connection\":{\"segments\":1}}}"), 0, "%s", f.d.err);
	/* T's FIFO: the gate running, one item queued: full. T's signal then waits for
	 * room with T's lock held, until the gate opens */
	gate_enqueue(&gt, hst);
	ok(garuda_host_stream_enqueue_work(hst, 0));
	struct blocked_signal bt = { .s = t };
	pthread_t tid;
	cr_assert_eq(pthread_create(&tid, NULL, blocked_signal_main, &bt), 0);
	garuda_stream_drain(s, NULL); /* the going-down nudge */
	gd_restart(&f.d);

	/* S's turn: its segment is refused, the refusal makes its eventfd readable (its
	 * word has not moved); the presentation is held at T */
	struct pollfd p = { .fd = garuda_stream_fd(s), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, TD_DEADLINE_MS), 1, "S's refusal never made its eventfd readable");
	cr_assert_eq(garuda_stream_drain(s, &v), 0);
	cr_assert_eq(v, 0);
	fails(garuda_stream_signal(s, &seq), -GARUDA_E_QUOTA); /* the refusal, reported once */
	gate_enqueue(&gs, hss);
	ok(garuda_stream_signal(s, &seq));
	cr_assert_eq(seq, 1);
	cr_assert_eq(garuda_client_connected(f.c), 0,
		     "the session came up before S was signalled: T did not hold the presentation");

	/* T's signal gets its room, the presentation goes on, the session comes up */
	gate_open(&gt);
	cr_assert_eq(pthread_join(tid, NULL), 0);
	ok(bt.err);
	eventually(garuda_client_connected(f.c) == 1, "session up");
	(void)garuda_client_session(f.c); /* c->lock: the session-up nudge is done */
	garuda_stream_drain(s, NULL);     /* ... and forgotten */
	cr_assert_eq(garuda_stream_value(s), 0, "S's gate is closed");

	/* S's word reaches the sequence: its eventfd must say so, though garudad does not
	 * watch S (its segment is not attached in this session) */
	gate_open(&gs);
	cr_assert_eq(poll(&p, 1, TD_DEADLINE_MS), 1,
		     "S completed with no readiness: nobody watched the stream signalled while presenting");
	cr_assert_eq(garuda_stream_drain(s, &v), 1);
	cr_assert_eq(v, seq);

	ok(garuda_stream_wait(t, bt.seq, (int64_t)TD_DEADLINE_MS * NS_PER_MS));
	garuda_stream_free(s);
	garuda_stream_free(t);
	garuda_host_stream_free(hss);
	garuda_host_stream_free(hst);
	gate_destroy(&gs);
	gate_destroy(&gt);
	ok(garuda_segment_close(segs));
	ok(garuda_segment_close(segt));
	fx_down(&f);
}

static void *free_main(void *arg)
{
	garuda_stream_free(arg);
	return NULL;
}

/* garuda_stream_free() of a stream S that the presentation of a new session presented
 * already (bound, its outstanding sequence re-armed), while that presentation goes on:
 * the free waits for the session to be up and forgets S there (DISARM, UNBIND), so its
 * word goes back to the segment with nothing of S left in garudad. Until the fix the
 * DISARM/UNBIND were refused locally (only the presenter sends while presenting), S was
 * taken for a stream whose session is gone, and its word handed out again while
 * garudad still held S's BIND: the next EVENTFD stream there got
 * -GARUDA_E_ALREADY_BOUND and the binding stayed for the session. The presentation is
 * held at a later stream T with no timing, as above (T's signal waits for room in its
 * full host FIFO holding T's lock); garudad's count of S's re-arm says S's turn is
 * over. The free runs on its own thread: it returns only once the session is up. */
Test(reconnect, free_while_presenting_forgets_the_stream_in_garudad)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hss, *hst;
	struct garuda_stream *s, *t, *x;
	struct gate gs, gt;
	uint64_t seq;
	fx_up(&f, NULL, 1);
	gate_init(&gs);
	gate_init(&gt);
	ok(garuda_host_stream_new(NULL, &hss));
	struct garuda_host_stream_config one = { .depth = 1 };
	ok(garuda_host_stream_new(&one, &hst));
	/* table and word order: S (word 0) is presented before T (word 1) */
	ok(garuda_stream_new(f.seg, hss, GARUDA_READINESS_EVENTFD, &s));
	ok(garuda_stream_new(f.seg, hst, GARUDA_READINESS_EVENTFD, &t));
	gate_enqueue(&gs, hss);
	ok(garuda_stream_signal(s, &seq)); /* outstanding: re-armed by the presentation */

	gd_kill(&f.d);
	eventually(garuda_client_connected(f.c) == 0, "the client noticed");
	gate_enqueue(&gt, hst);
	ok(garuda_host_stream_enqueue_work(hst, 0));
	struct blocked_signal bt = { .s = t };
	pthread_t tid, fid;
	cr_assert_eq(pthread_create(&tid, NULL, blocked_signal_main, &bt), 0);
	gd_restart(&f.d);

	/* S presented in the new session (its arm is there); the presentation held at T */
	cr_assert_eq(gd_wait_status(&f.d, "armed", 1), 1, "S's outstanding sequence was not re-armed");
	cr_assert_eq(gd_status_num(&f.d, "bindings"), 1);
	cr_assert_eq(garuda_client_connected(f.c), 0,
		     "the session came up before S was freed: T did not hold the presentation");
	/* S's sequence lands (its word may be handed out again), then S is freed while
	 * the presentation still goes on */
	gate_open(&gs);
	ok(garuda_stream_wait(s, seq, (int64_t)TD_DEADLINE_MS * NS_PER_MS));
	cr_assert_eq(pthread_create(&fid, NULL, free_main, s), 0);
	/* a head start for the free, so that it runs while the presentation is held (it
	 * blocks until the session is up either way: the test passes without it, this
	 * only keeps the free from coming after the presentation) */
	usleep(20000);

	gate_open(&gt);
	cr_assert_eq(pthread_join(tid, NULL), 0);
	ok(bt.err);
	cr_assert_eq(pthread_join(fid, NULL), 0);
	eventually(garuda_client_connected(f.c) == 1, "session up");
	/* S's free returned after its UNBIND's answer: garudad binds T only */
	cr_assert_eq(gd_status_num(&f.d, "bindings"), 1,
		     "S's BIND outlived its free (DISARM/UNBIND refused while presenting)");
	/* S's word, free again, binds a new stream */
	ok(garuda_stream_new(f.seg, hss, GARUDA_READINESS_EVENTFD, &x));
	cr_assert_eq(gd_status_num(&f.d, "bindings"), 2);
	ok(garuda_host_stream_enqueue_work(hss, 1000000));
	ok(garuda_stream_signal(x, &seq));
	struct pollfd p = { .fd = garuda_stream_fd(x), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, TD_DEADLINE_MS), 1, "the new stream's arm never fired");
	ok(garuda_stream_wait(t, bt.seq, (int64_t)TD_DEADLINE_MS * NS_PER_MS));

	garuda_stream_free(x);
	garuda_stream_free(t);
	garuda_host_stream_free(hss);
	garuda_host_stream_free(hst);
	gate_destroy(&gs);
	gate_destroy(&gt);
	fx_down(&f);
}

/* A garudad that hangs (stopped, or stuck) keeps its socket: no session loss is seen,
 * and no READY comes. Each form's readiness must still come once the word has landed
 * (the fault watch nudges a landed sequence no READY came for): every wait ends in
 * readiness or an error, never in silence. Ordering, not timing: garudad stays
 * stopped until the readiness came (a generous poll fails the test otherwise). */
Test(reconnect, readiness_while_garudad_hangs)
{
	static const enum garuda_readiness forms[] = { GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_DOORBELL };
	for (size_t k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
		struct fixture f = { 0 };
		fx_up(&f, NULL, 1);
		struct garuda_host_stream *hs;
		struct garuda_stream *s;
		ok(garuda_host_stream_new(NULL, &hs));
		ok(garuda_stream_new(f.seg, hs, forms[k], &s));
		uint64_t seq, v;
		ok(garuda_host_stream_enqueue_work(hs, 20 * NS_PER_MS));
		ok(garuda_stream_signal(s, &seq));
		cr_assert_eq(kill(f.d.pid, SIGSTOP), 0);
		if (forms[k] == GARUDA_READINESS_EVENTFD) {
			struct pollfd p = { .fd = garuda_stream_fd(s), .events = POLLIN };
			do
				cr_assert_eq(poll(&p, 1, 30000), 1, "no eventfd readiness while garudad hangs");
			while (garuda_stream_drain(s, &v) == 0 || !garuda_stream_reached(s, seq));
		} else {
			uint32_t *word, bell;
			ok(garuda_segment_doorbell(f.seg, &word, &bell));
			while (!garuda_stream_reached(s, seq)) /* the store lands */
				ok(garuda_host_stream_drain(hs));
			/* the doorbell must move: a futex wait on it would sleep for good */
			uint64_t until = garuda_now_ns() + 30 * NS_PER_S;
			while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == bell) {
				cr_assert_lt(garuda_now_ns(), until, "no doorbell while garudad hangs");
				usleep(1000);
			}
		}
		cr_assert_eq(kill(f.d.pid, SIGCONT), 0);
		garuda_stream_free(s);
		garuda_host_stream_free(hs);
		fx_down(&f);
	}
}
