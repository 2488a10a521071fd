/* test_errors.c — every error code the library returns against a real garudad, each
 * provoked on purpose: -EINVAL misuse, -ENOSPC, -EOPNOTSUPP, -GARUDA_E_BUSY,
 * -GARUDA_E_QUOTA (segments, bindings, armed), -GARUDA_E_TIMEOUT,
 * -GARUDA_E_STREAM_FAULT, -GARUDA_E_DISCONNECTED, -GARUDA_E_NO_DRIVER,
 * -GARUDA_E_NO_MEMLOCK, connect's -EACCES (as another uid). Outstanding work is held by
 * gates, never by sleeps. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
	/* each EINVAL in words, in garuda_last_error() (issue 30, item 15) */
	fails(garuda_segment_open(f.c, "nosuchbackend", 0, 1, &seg), -EINVAL);
	cr_assert_str_eq(garuda_last_error(), "unknown backend \"nosuchbackend\": the backends are host, cuda and hip");
	fails(garuda_segment_open(f.c, "host", 0, 0, &seg), -EINVAL);
	cr_assert_not_null(strstr(garuda_last_error(), "a segment of 0 lines"), "%s", garuda_last_error());
	fails(garuda_segment_open(f.c, "host", 0, 65537, &seg), -EINVAL);
	fails(garuda_stream_new(f.seg, NULL, (enum garuda_readiness)7, &s), -EINVAL);
	fails(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, NULL), -EINVAL);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &s));
	fails(garuda_stream_signal(s, NULL), -EINVAL);
	fails(garuda_stream_wait(s, 0, 0), -EINVAL);
	fails(garuda_stream_wait(s, 1, 0), -EINVAL); /* never signalled */
	cr_assert_not_null(strstr(garuda_last_error(), "a wait before any signal on this stream"), "%s",
			   garuda_last_error());
	ok(garuda_stream_signal(s, &seq));
	ok(garuda_stream_wait(s, seq, 0));
	fails(garuda_stream_wait(s, seq + 1, -1), -EINVAL);
	cr_assert_not_null(strstr(garuda_last_error(), "which was not signalled on this stream"), "%s",
			   garuda_last_error());
	fails(garuda_stream_set_wait(s, 0, 9999), -EINVAL);
	ok(garuda_stream_set_wait(s, 0, 10000));
	garuda_stream_free(s);
	fx_down(&f);
}

/* garuda_last_error() is the calling thread's last failure's: a failing call leaves its
 * own words, or "" when it has none (never an older failure's), and a call that
 * succeeds leaves the text as it was. */
Test(errors, last_error_is_the_last_failures)
{
	struct fixture f = { 0 };
	struct garuda_client *c = NULL;
	struct garuda_stream *s;
	uint32_t *word, value;
	char json[1024];
	fx_up(&f, NULL, 1);
	fails(garuda_connect_to("/nonexistent/garuda-test.sock", &c), -ENOENT);
	cr_assert_not_null(strstr(garuda_last_error(), "/nonexistent/garuda-test.sock"), "%s",
			   garuda_last_error());
	/* calls that succeed, a request to garudad among them, leave it */
	ok(garuda_segment_doorbell(f.seg, &word, &value));
	ok(garuda_client_query(f.c, json, sizeof(json)));
	cr_assert_not_null(strstr(garuda_last_error(), "/nonexistent/garuda-test.sock"), "%s",
			   garuda_last_error());
	/* a failure without words of its own: "" */
	fails(garuda_segment_doorbell(NULL, &word, &value), -EINVAL);
	cr_assert_str_eq(garuda_last_error(), "");
	fails(garuda_connect_to("/nonexistent/garuda-test.sock", &c), -ENOENT);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, &s));
	fails(garuda_segment_close(f.seg), -GARUDA_E_BUSY);
	cr_assert_str_eq(garuda_last_error(), "");
	fails(garuda_connect_to("/nonexistent/garuda-test.sock", &c), -ENOENT);
	fails(garuda_dispatch(NULL), -EINVAL);
	cr_assert_str_eq(garuda_last_error(), "");
	garuda_stream_free(s);
	fx_down(&f);
}

/* An earlier failure's words: the text the checks below must never see again. */
static void stale_words(struct garuda_client *c)
{
	struct garuda_seg *seg;
	fails(garuda_segment_open(c, "stale-words", 0, 1, &seg), -EINVAL);
	cr_assert_not_null(strstr(garuda_last_error(), "stale-words"), "%s", garuda_last_error());
}

/* expr fails with code after an earlier failure with words: the text is its own words
 * or "", never the earlier ones */
#define fails_fresh(c, expr, code)                                                      \
	do {                                                                            \
		stale_words(c);                                                         \
		fails(expr, code);                                                      \
		cr_assert_null(strstr(garuda_last_error(), "stale-words"), "%s left: %s", \
			       #expr, garuda_last_error());                             \
	} while (0)

/* expr succeeds and leaves an earlier failure's words exactly as they were */
#define ok_keeps(c, expr)                                                               \
	do {                                                                            \
		stale_words(c);                                                         \
		char keeps_before_[768];                                                \
		snprintf(keeps_before_, sizeof(keeps_before_), "%s", garuda_last_error()); \
		ok(expr);                                                               \
		cr_assert_str_eq(garuda_last_error(), keeps_before_, "%s", #expr);      \
	} while (0)

/* The same contract, family by family: streams, plans, waits and host streams (issue
 * 31, item 5). A "not yet" (-EAGAIN, -GARUDA_E_TIMEOUT) is a failing return too. */
Test(errors, last_error_in_every_family)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs, *none;
	struct garuda_stream *s, *p, *m;
	struct garuda_stream_stats st;
	struct gate g, g2;
	uint64_t seq, one, two;
	char plan[192];
	fx_up(&f, NULL, 1);
	gate_init(&g);
	gate_init(&g2);

	/* host streams */
	struct garuda_host_stream_config deep = { .depth = GARUDA_HOST_STREAM_DEPTH_MAX + 1 };
	fails_fresh(f.c, garuda_host_stream_new(&deep, &none), -EINVAL);
	ok_keeps(f.c, garuda_host_stream_new(NULL, &hs));
	fails_fresh(f.c, garuda_host_stream_enqueue_work(NULL, 1), -EINVAL);
	fails_fresh(f.c, garuda_host_stream_enqueue_stamp(hs, NULL), -EINVAL);
	fails_fresh(f.c, garuda_host_stream_enqueue_call(hs, NULL, NULL), -EINVAL);
	fails_fresh(f.c, garuda_host_stream_query(NULL), -EINVAL);
	fails_fresh(f.c, garuda_host_stream_drain(NULL), -EINVAL);
	ok_keeps(f.c, garuda_host_stream_enqueue_work(hs, 0));
	ok_keeps(f.c, garuda_host_stream_drain(hs));
	ok_keeps(f.c, garuda_host_stream_query(hs));

	/* streams */
	fails_fresh(f.c, garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, NULL), -EINVAL);
	ok_keeps(f.c, garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	ok_keeps(f.c, garuda_stream_new(f.seg, NULL, GARUDA_READINESS_POLL, &p));
	ok_keeps(f.c, garuda_stream_new(f.seg, NULL, GARUDA_READINESS_MESSAGE, &m));
	fails_fresh(f.c, garuda_stream_set_callback(p, NULL, NULL), -EOPNOTSUPP);
	fails_fresh(f.c, garuda_stream_set_callback(NULL, NULL, NULL), -EINVAL);
	ok_keeps(f.c, garuda_stream_set_callback(m, NULL, NULL));
	fails_fresh(f.c, garuda_stream_signal(s, NULL), -EINVAL);
	fails_fresh(f.c, garuda_stream_query(NULL), -EINVAL);

	/* waits, with the host stream held by a gate */
	gate_enqueue(&g, hs);
	ok_keeps(f.c, garuda_stream_signal(s, &one));
	fails_fresh(f.c, garuda_stream_query(s), -EAGAIN);
	fails_fresh(f.c, garuda_host_stream_query(hs), -EAGAIN);
	fails_fresh(f.c, garuda_stream_wait(s, one, 0), -GARUDA_E_TIMEOUT);
	fails_fresh(f.c, garuda_stream_wait(s, one + 1, 0), -EINVAL);
	cr_assert_not_null(strstr(garuda_last_error(), "which was not signalled"), "%s",
			   garuda_last_error());
	fails_fresh(f.c, garuda_stream_wait(NULL, one, 0), -EINVAL);
	fails_fresh(f.c, garuda_stream_fd(NULL), -EINVAL);
	fails_fresh(f.c, garuda_stream_fd(p), -EOPNOTSUPP);
	fails_fresh(f.c, garuda_stream_drain(NULL, NULL), -EINVAL);
	ok_keeps(f.c, garuda_stream_fd(s));
	gate_open(&g);
	ok_keeps(f.c, garuda_stream_wait(s, one, -1));
	ok_keeps(f.c, garuda_stream_drain(s, &seq));
	ok_keeps(f.c, garuda_stream_query(s));

	/* plans: a refused text's words are garuda_plan_message()'s */
	fails_fresh(f.c, garuda_stream_set_plan(s, "spin"), -GARUDA_E_BAD_PLAN);
	cr_assert_str_eq(garuda_last_error(), garuda_plan_message());
	fails_fresh(f.c, garuda_stream_set_plan(NULL, "poll"), -EINVAL);
	ok_keeps(f.c, garuda_stream_set_plan(s, "poll"));
	fails_fresh(f.c, garuda_stream_get_plan(s, plan, 1), -ENOSPC);
	fails_fresh(f.c, garuda_stream_get_plan(NULL, plan, sizeof(plan)), -EINVAL);
	ok_keeps(f.c, garuda_stream_get_plan(s, plan, sizeof(plan)));
	fails_fresh(f.c, garuda_stream_stats(s, NULL), -EINVAL);
	ok_keeps(f.c, garuda_stream_stats(s, &st));
	fails_fresh(f.c, garuda_stream_set_wait(s, 0, 1), -EINVAL);
	ok_keeps(f.c, garuda_stream_set_wait(s, 0, 10000));

	/* a faulted native stream: the wait, the query, the next signal, the drain */
	gate_enqueue(&g2, hs);
	ok_keeps(f.c, garuda_host_stream_enqueue_fault(hs));
	ok_keeps(f.c, garuda_stream_signal(s, &two)); /* discarded when the fault runs */
	gate_open(&g2);
	fails_fresh(f.c, garuda_stream_wait(s, two, 60 * NS_PER_S), -GARUDA_E_STREAM_FAULT);
	fails_fresh(f.c, garuda_stream_query(s), -GARUDA_E_STREAM_FAULT);
	fails_fresh(f.c, garuda_stream_signal(s, &seq), -GARUDA_E_STREAM_FAULT);
	fails_fresh(f.c, garuda_host_stream_drain(hs), -GARUDA_E_STREAM_FAULT);

	/* frees on the way out (a DISARM and an UNBIND round trip for s) leave it too */
	stale_words(f.c);
	garuda_stream_free(s);
	garuda_stream_free(p);
	garuda_stream_free(m);
	garuda_host_stream_free(hs);
	cr_assert_not_null(strstr(garuda_last_error(), "stale-words"), "%s", garuda_last_error());
	gate_destroy(&g2);
	gate_destroy(&g);
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
	/* garudad's words reach garuda_last_error(): the quota's key and its limit */
	const char *e = garuda_last_error();
	cr_assert_not_null(strstr(e, "garudad refused SEGMENT_OPEN"), "%s", e);
	cr_assert_not_null(strstr(e, "quota.connection.segments"), "%s", e);
	cr_assert_not_null(strstr(e, "limit 1"), "%s", e);
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

struct fault_cb {
	int calls;
	int query; /* what garuda_stream_query() said in the callback */
	int drain; /* what garuda_stream_drain() said in it */
};

static void cb_fault(struct garuda_stream *s, uint64_t seq, void *user)
{
	struct fault_cb *fc = user;
	(void)seq;
	fc->calls++;
	fc->query = garuda_stream_query(s);
	fc->drain = garuda_stream_drain(s, NULL);
}

/* Whether the I/O thread of the test's client sits in poll(fds, 2, -1): a client in a
 * session with nothing to watch (no timer at all). The harness's notifier thread
 * (tests/common/garudad.c) parks the same way, so: two threads so parked, and none in
 * a 2-fd poll with a timeout. */
static bool io_parked_untimed(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return false;
	int untimed = 0, timed = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[300], line[256] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		bool got = fgets(line, sizeof(line), f) != NULL;
		fclose(f);
		long nr;
		unsigned long long a[3];
		if (!got || sscanf(line, "%ld %llx %llx %llx", &nr, &a[0], &a[1], &a[2]) != 4 ||
		    nr != SYS_poll || a[1] != 2)
			continue;
		if ((int)a[2] == -1)
			untimed++;
		else
			timed++;
	}
	closedir(d);
	return untimed >= 2 && !timed;
}

/* A user parked outside garuda_stream_wait() is told of a fault: the eventfd form's fd
 * becomes readable and the drain fails; the message form's callback runs on the next
 * garuda_dispatch() and its query and drain fail. Nobody waits on the stream: only the
 * I/O thread's fault watch can find it. */
Test(errors, stream_fault_reaches_parked_forms)
{
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	struct garuda_host_stream *hs, *hm;
	struct garuda_stream *s, *m;
	uint64_t one, seq;
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_host_stream_new(NULL, &hm));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	ok(garuda_stream_new(f.seg, hm, GARUDA_READINESS_MESSAGE, &m));
	struct fault_cb fc = { 0 };
	ok(garuda_stream_set_callback(m, cb_fault, &fc));
	ok(garuda_dispatch(f.c)); /* set_callback's own nudge: nothing completed */
	cr_assert_eq(fc.calls, 0);

	struct gate g, gm;
	gate_init(&g);
	gate_init(&gm);
	int fd = garuda_stream_fd(s);
	gate_enqueue(&g, hs);
	ok(garuda_host_stream_enqueue_fault(hs));
	ok(garuda_stream_signal(s, &one)); /* discarded when the fault runs */
	gate_open(&g);
	cr_assert_eq(gd_wait_in(fd, GD_DEADLINE_MS), 1, "a fault left the eventfd silent");
	fails(garuda_stream_drain(s, &seq), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(seq, 0);
	fails(garuda_stream_query(s), -GARUDA_E_STREAM_FAULT);

	gate_enqueue(&gm, hm);
	ok(garuda_host_stream_enqueue_fault(hm));
	ok(garuda_stream_signal(m, &one));
	gate_open(&gm);
	cr_assert_eq(gd_wait_in(garuda_client_fd(f.c), GD_DEADLINE_MS), 1,
		     "a fault left the callback's fd silent");
	cr_assert_eq(garuda_dispatch(f.c), 1);
	cr_assert_eq(fc.calls, 1);
	cr_assert_eq(fc.query, -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(fc.drain, -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(garuda_dispatch(f.c), 0, "told once");

	/* the doorbell form: the segment's doorbell is bumped (a futex waiter wakes) */
	struct garuda_host_stream *hd;
	struct garuda_stream *db;
	struct gate gd;
	gate_init(&gd);
	ok(garuda_host_stream_new(NULL, &hd));
	ok(garuda_stream_new(f.seg, hd, GARUDA_READINESS_DOORBELL, &db));
	uint32_t *bell, rung;
	ok(garuda_segment_doorbell(f.seg, &bell, &rung));
	gate_enqueue(&gd, hd);
	ok(garuda_host_stream_enqueue_fault(hd));
	ok(garuda_stream_signal(db, &one));
	gate_open(&gd);
	eventually(__atomic_load_n(bell, __ATOMIC_ACQUIRE) != rung, "a fault left the doorbell silent");
	fails(garuda_stream_drain(db, &seq), -GARUDA_E_STREAM_FAULT);
	fails(garuda_stream_query(db), -GARUDA_E_STREAM_FAULT);
	garuda_stream_free(db);
	garuda_host_stream_free(hd);
	gate_destroy(&gd);

	/* nothing outstanding: the fault watch has no timer, the I/O thread no timeout */
	struct garuda_host_stream *hq;
	struct garuda_stream *q;
	ok(garuda_host_stream_new(NULL, &hq));
	ok(garuda_stream_new(f.seg, hq, GARUDA_READINESS_EVENTFD, &q));
	ok(garuda_stream_signal(q, &one));
	ok(garuda_stream_wait(q, one, 10 * NS_PER_S));
	eventually(io_parked_untimed(), "the idle client's I/O thread parked without a timeout");
	garuda_stream_free(q);
	garuda_host_stream_free(hq);

	garuda_stream_free(s);
	garuda_stream_free(m);
	garuda_host_stream_free(hs);
	garuda_host_stream_free(hm);
	gate_destroy(&g);
	gate_destroy(&gm);
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
	/* counted before the client shows up (conn.c, presenter_main): a TSan CI run read
	 * 0 here when the count came after the state. At least once, not exactly: under
	 * TSan one CI run counted more than one session up (cause not found); the count
	 * is not the behaviour, the reconnection is */
	cr_assert_geq(garuda_client_reconnects(f.c), 1, "reconnects %llu",
		      (unsigned long long)garuda_client_reconnects(f.c));
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

/* ---- the permission and memlock refusals in words (issue 17) ---- */

#define NOBODY 65534

/* garudad (root) gives its client socket the group "daemon" (mode 0660); uid/gid 65534
 * with no supplementary group connects: -EACCES, and garuda_last_error() names the
 * socket, its group and how to join it. */
Test(errors, connect_eacces_names_socket_and_group)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: garudad must chown its socket to a group and the client "
			     "connect as uid %d", NOBODY);
	const struct group *g = getgrnam("daemon");
	if (!g || g->gr_gid == NOBODY)
		cr_skip_test("no group \"daemon\" (other than gid %d) to give the socket", NOBODY);
	struct gd_daemon d;
	td_start(&d, "\"socket_group\":\"daemon\"");
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	setenv("container", "podman", 1); /* the child runs "in a container": the pod remedy too */
	pid_t pid = fork();
	unsetenv("container");
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		struct garuda_client *c = NULL;
		char out[1024];
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(126);
		int r = garuda_connect_to(d.sock, &c);
		int n = snprintf(out, sizeof(out), "%d %s", r, garuda_last_error());
		if (write(p[1], out, (size_t)n) != n)
			_exit(125);
		_exit(c ? 124 : 0);
	}
	close(p[1]);
	char out[1024];
	size_t len = 0;
	ssize_t n;
	while (len + 1 < sizeof(out) && (n = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the uid %d child: status 0x%x", NOBODY, st);
	int code = atoi(out);
	cr_assert_eq(code, -EACCES, "connect as uid %d: %d, expected -EACCES: %s", NOBODY, code, out);
	cr_assert_not_null(strstr(out, d.sock), "the error does not name the socket: %s", out);
	cr_assert_not_null(strstr(out, "group \"daemon\""), "the error does not name the group: %s", out);
	cr_assert_not_null(strstr(out, "usermod -aG daemon"), "the error names no remedy: %s", out);
	/* the gid too, and in a container how a pod adds it (issue 30, item 9) */
	char want[96];
	snprintf(want, sizeof(want), "group \"daemon\" (gid %u, mode 0660)", (unsigned)g->gr_gid);
	cr_assert_not_null(strstr(out, want), "the error does not give the gid: %s", out);
	snprintf(want, sizeof(want), "supplementalGroups: [%u]", (unsigned)g->gr_gid);
	cr_assert_not_null(strstr(out, want), "the error gives no pod remedy: %s", out);
	td_stop(&d);
}

/* In a pod, garudad's socket group is the host's gid (deploy.md: 61000), which has no
 * name in the pod: the EACCES hint named group "garuda" (issue 30, item 9). Here the
 * socket gets a gid with no name; uid 65534 is told that gid and how a pod or
 * container adds it. */
Test(errors, connect_eacces_names_an_unnamed_gid)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: garudad must chown its socket to a gid and the client "
			     "connect as uid %d", NOBODY);
	unsigned gid = 61000;
	while (getgrgid((gid_t)gid) && gid < 61100)
		gid++;
	if (getgrgid((gid_t)gid))
		cr_skip_test("no unnamed gid in 61000..61099");
	char extra[64];
	snprintf(extra, sizeof(extra), "\"socket_group\":\"%u\"", gid);
	struct gd_daemon d;
	td_start(&d, extra);
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		struct garuda_client *c = NULL;
		char out[1024];
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(126);
		int r = garuda_connect_to(d.sock, &c);
		int n = snprintf(out, sizeof(out), "%d %s", r, garuda_last_error());
		if (write(p[1], out, (size_t)n) != n)
			_exit(125);
		_exit(c ? 124 : 0);
	}
	close(p[1]);
	char out[1024], want[96];
	size_t len = 0;
	ssize_t n;
	while (len + 1 < sizeof(out) && (n = read(p[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the uid %d child: status 0x%x", NOBODY, st);
	cr_assert_eq(atoi(out), -EACCES, "connect as uid %d: expected -EACCES: %s", NOBODY, out);
	snprintf(want, sizeof(want), "admits its owner and gid %u (mode 0660)", gid);
	cr_assert_not_null(strstr(out, want), "the error does not name the gid: %s", out);
	snprintf(want, sizeof(want), "supplementalGroups: [%u]", gid);
	cr_assert_not_null(strstr(out, want), "the error gives no pod remedy: %s", out);
	cr_assert_null(strstr(out, "\"garuda\""), "the error names group garuda: %s", out);
	td_stop(&d);
}

/* In a container or pod, "no such socket" points at the host's /run/garuda, not at
 * systemctl (issue 30, item 9); $container marks one (as systemd-nspawn and podman
 * set it) */
Test(errors, no_socket_in_a_container_names_the_mount)
{
	struct garuda_client *c;
	setenv("container", "podman", 1);
	cr_assert_eq(garuda_connect_to("/nonexistent/garuda/garuda.sock", &c), -ENOENT);
	unsetenv("container");
	const char *e = garuda_last_error();
	cr_assert_not_null(strstr(e, "no such socket"), "%s", e);
	cr_assert_not_null(strstr(e, "mount the host's /run/garuda"), "%s", e);
	cr_assert_null(strstr(e, "systemctl"), "%s", e);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* garudad without CAP_IPC_LOCK (root: dropped from this worker's bounding set before
 * the launch) and RLIMIT_MEMLOCK 2 pages: one 1-line segment (1 page) fits, a 256-line
 * one does not. The refusal is NO_MEMLOCK; garuda_last_error() and garudad's log give
 * the bytes asked, the limit, what is locked already and the remedy; the session goes on. */
/* the sanitizers' runtimes (ASan, TSan) intercept mlock() and make it a no-op */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GARUDAD_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GARUDAD_SANITIZED 1
#endif
#endif

Test(errors, memlock_refusal_gives_bytes_and_limit)
{
#ifdef GARUDAD_SANITIZED
	cr_skip_test("the sanitizer of this build makes mlock() a no-op in its garudad: "
		     "nothing is refused");
#endif
	if (geteuid() == 0 && prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0) < 0)
		cr_skip_test("cannot drop CAP_IPC_LOCK from the bounding set: %s", strerror(errno));
	if (geteuid() != 0 && prctl(PR_CAPBSET_READ, CAP_IPC_LOCK, 0, 0, 0) == 1 &&
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_IPC_LOCK, 0, 0) == 1)
		cr_skip_test("CAP_IPC_LOCK is ambient here: garudad would ignore RLIMIT_MEMLOCK");
	long page = sysconf(_SC_PAGESIZE);
	struct rlimit rl = { .rlim_cur = (rlim_t)(2 * page), .rlim_max = (rlim_t)(2 * page) };
	cr_assert_eq(setrlimit(RLIMIT_MEMLOCK, &rl), 0, "%s", strerror(errno));
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1); /* one page locked */
	struct garuda_seg *big = (void *)1;
	fails(garuda_segment_open(f.c, "host", 0, 256, &big), -GARUDA_E_NO_MEMLOCK);
	cr_assert_null(big);
	long bytes = (128 + 64 * 256 + page - 1) / page * page;
	char want[128], limit[64], held[64];
	snprintf(want, sizeof(want), "cannot mlock %ld bytes", bytes);
	snprintf(limit, sizeof(limit), "RLIMIT_MEMLOCK is %ld bytes", 2 * page);
	snprintf(held, sizeof(held), "%ld locked already", page);
	const char *e = garuda_last_error();
	cr_assert_not_null(strstr(e, "garudad refused SEGMENT_OPEN"), "%s", e);
	cr_assert_not_null(strstr(e, want), "the error does not give the bytes asked: %s", e);
	cr_assert_not_null(strstr(e, limit), "the error does not give the limit: %s", e);
	cr_assert_not_null(strstr(e, held), "the error does not give what is locked: %s", e);
	cr_assert_not_null(strstr(e, "LimitMEMLOCK="), "%s", e);
	cr_assert_not_null(strstr(e, "CAP_IPC_LOCK"), "%s", e);
	/* the session carries on: a segment that fits still opens */
	struct garuda_seg *small;
	ok(garuda_segment_open(f.c, "host", 0, 1, &small));
	ok(garuda_segment_close(small));
	const char *log = slurp(f.d.log);
	cr_assert_not_null(strstr(log, want), "garudad's log lacks the refusal:\n%s", log);
	cr_assert_not_null(strstr(log, limit), "garudad's log lacks the limit:\n%s", log);
	fx_down(&f);
}

/* A connection garudad refuses (its uid's connections quota) says why in garudad's
 * words: the quota's key, its limit and the usage; whether the refusal reaches the
 * client before or after its HELLO (garudad sends the ERROR and closes at once). */
Test(errors, connect_refused_by_quota_says_which)
{
	struct gd_daemon d;
	td_start(&d, "\"quota\":{\"uid\":{\"connections\":1}}");
	struct garuda_client *a, *b = (struct garuda_client *)&b;
	ok(garuda_connect_to(d.sock, &a));
	for (int i = 0; i < 20; i++) { /* both orders of the race, as they come */
		fails(garuda_connect_to(d.sock, &b), -GARUDA_E_QUOTA);
		cr_assert_null(b);
		const char *e = garuda_last_error();
		cr_assert_not_null(strstr(e, d.sock), "%s", e);
		cr_assert_not_null(strstr(e, "quota.uid.connections"), "garudad's reason is missing: %s", e);
	}
	garuda_disconnect(a);
	td_stop(&d);
}

/* A BIND that timed out (garudad hung past the 20 s request timeout) leaves its word
 * out of use in that session: garudad takes the BIND late when it runs again, and the
 * next EVENTFD stream given that word got ALREADY_BOUND, and so did every later one
 * (the lowest free word is given first). ~20 s: the request timeout. */
Test(errors, a_bind_that_timed_out_leaves_its_word_unused)
{
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	struct garuda_stream *s = NULL;
	cr_assert_eq(kill(f.d.pid, SIGSTOP), 0);
	int r = garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &s);
	cr_assert_eq(kill(f.d.pid, SIGCONT), 0);
	cr_assert_eq(r, -GARUDA_E_TIMEOUT, "a BIND to a stopped garudad: %s", garuda_strerror(r));
	cr_assert_null(s);
	for (int i = 0; i < 2; i++) {
		ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &s));
		uint64_t seq;
		ok(garuda_stream_signal(s, &seq));
		ok(garuda_stream_wait(s, seq, TD_DEADLINE_MS));
		garuda_stream_free(s);
	}
	fx_down(&f);
}

/* A SEGMENT_OPEN that timed out leaves no segment behind: garudad makes it when it runs
 * again, and it stayed charged to the session's quota (and mapped) until the session
 * ended. The client closes it with its next request. Quota of 2 segments: the
 * fixture's, and room for one more. ~20 s: the request timeout. */
Test(errors, a_segment_open_that_timed_out_leaves_no_segment)
{
	struct fixture f = { 0 };
	fx_up(&f, "\"quota\":{\"connection\":{\"segments\":2}}", 1);
	struct garuda_seg *seg = NULL;
	cr_assert_eq(kill(f.d.pid, SIGSTOP), 0);
	int r = garuda_segment_open(f.c, "host", 0, 1, &seg);
	cr_assert_eq(kill(f.d.pid, SIGCONT), 0);
	cr_assert_eq(r, -GARUDA_E_TIMEOUT, "a SEGMENT_OPEN to a stopped garudad: %s", garuda_strerror(r));
	cr_assert_null(seg);
	/* a round trip: answered after the late SEGMENT, so that one has been seen */
	char q[1024];
	cr_assert_gt(garuda_client_query(f.c, q, sizeof(q)), 0);
	ok(garuda_segment_open(f.c, "host", 0, 1, &seg));
	ok(garuda_segment_close(seg));
	fx_down(&f);
}

/* garuda_disconnect() with a store still to land in a segment (a freed stream's, held
 * on its native stream) leaves that segment mapped: it unmapped it, and the store,
 * when it came, faulted (SIGSEGV in the host stream's worker). */
Test(errors, disconnect_leaves_a_segment_a_store_will_land_in_mapped)
{
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	struct garuda_host_stream *hs;
	ok(garuda_host_stream_new(NULL, &hs));
	struct gate g;
	gate_init(&g);
	gate_enqueue(&g, hs);
	struct garuda_stream *s;
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	uint64_t seq;
	ok(garuda_stream_signal(s, &seq));
	garuda_stream_free(s);
	fails(garuda_segment_close(f.seg), -GARUDA_E_BUSY);
	garuda_disconnect(f.c);
	gate_open(&g);
	ok(garuda_host_stream_drain(hs)); /* the store lands */
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	td_stop(&f.d);
}
