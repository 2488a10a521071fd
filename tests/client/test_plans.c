/* test_plans.c — wait plans on libgaruda streams (issue 11): garuda_stream_set_plan()
 * accepts the grammar and refuses the rest with GARUDA_E_BAD_PLAN and a message naming
 * the key, keeping the old plan; garuda_stream_get_plan() prints back what was set;
 * set_wait is a flag plan; each kind (block, poll, flag, +predict) waits correctly on
 * host streams in every readiness form, times out, and reports a faulted stream; the
 * +predict estimator learns (exact samples from a running spin, censored ones from a
 * late wake, visible through garuda_stream_stats()); GARUDA_WAIT_PLAN sets the default
 * or fails the connect; GARUDA_WORDWAIT's values; garuda_segment_close() refuses while a freed stream's store
 * has still to land. No timing assertions: gates decide when work completes. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

TestSuite(plans, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 300);

#define PREDICT "+predict:margin_us=200,min_sleep_us=20,max_sleep_us=50000,window=8"

static void plan_is(struct garuda_stream *s, const char *want)
{
	char buf[192];
	int n = garuda_stream_get_plan(s, buf, sizeof(buf));
	cr_assert_eq(n, (int)strlen(want), "get_plan -> %d '%s', want '%s'", n, n > 0 ? buf : "",
		     want);
	cr_assert_str_eq(buf, want);
}

Test(plans, set_plan_accepts_refuses_and_prints_back)
{
	struct fixture f = { 0 };
	struct garuda_stream *s;
	fx_up(&f, NULL, 1);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_EVENTFD, &s));
	plan_is(s, "flag:park_us=10000,backstop_us=1000"); /* the built-in default */

	static const char *good[] = {
		"block",
		"poll",
		"flag:park_us=0,backstop_us=0",
		"flag:park_us=10000,backstop_us=1000000",
		"poll" PREDICT,
		"flag:park_us=50,backstop_us=2000" PREDICT,
		"poll+predict:margin_us=0,min_sleep_us=0,max_sleep_us=1,window=16",
	};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ok(garuda_stream_set_plan(s, good[i]));
		plan_is(s, good[i]);
		cr_assert_str_eq(garuda_plan_message(), "");
	}

	static const struct {
		const char *text, *key;
	} bad[] = {
		{ "spin", "kind:" },
		{ "", "kind:" },
		{ "block+predict:margin_us=1,min_sleep_us=1,max_sleep_us=1,window=1", "predict:" },
		{ "flag:park_us=1", "backstop_us:" },
		{ "flag:park_us=10001,backstop_us=1", "park_us:" },
		{ "poll+predict:margin_us=1,min_sleep_us=1,max_sleep_us=1,window=17", "window:" },
		{ "poll+predict:margin_us=1,min_sleep_us=1,max_sleep_us=1,window=0", "window:" },
		{ "poll+predict:margin_us=1,min_sleep_us=21,max_sleep_us=20,window=1",
		  "min_sleep_us:" },
		{ "flag:backstop_us=2,park_us=1", "backstop_us:" },
		{ "poll ", "kind:" },
	};
	ok(garuda_stream_set_plan(s, "poll" PREDICT));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fails(garuda_stream_set_plan(s, bad[i].text), -GARUDA_E_BAD_PLAN);
		const char *msg = garuda_plan_message();
		cr_assert(strncmp(msg, bad[i].key, strlen(bad[i].key)) == 0,
			  "'%s': message '%s' does not start with '%s'", bad[i].text, msg,
			  bad[i].key);
		plan_is(s, "poll" PREDICT); /* a refused text changes nothing */
	}

	/* set_wait is shorthand for a flag plan */
	ok(garuda_stream_set_wait(s, 0, 5 * NS_PER_MS));
	plan_is(s, "flag:park_us=10000,backstop_us=5000");
	ok(garuda_stream_set_wait(s, 1000, 60 * NS_PER_S));
	plan_is(s, "flag:park_us=10000,backstop_us=1000000");

	fails(garuda_stream_set_plan(NULL, "poll"), -EINVAL);
	fails(garuda_stream_set_plan(s, NULL), -EINVAL);
	char small[4];
	fails(garuda_stream_get_plan(s, small, sizeof(small)), -ENOSPC);
	fails(garuda_stream_get_plan(NULL, small, sizeof(small)), -EINVAL);
	struct garuda_stream_stats st;
	fails(garuda_stream_stats(NULL, &st), -EINVAL);
	fails(garuda_stream_stats(s, NULL), -EINVAL);
	garuda_stream_free(s);
	fx_down(&f);
}

/* opens a gate after delay_us, from its own thread */
struct opener {
	struct gate *g;
	unsigned delay_us;
	pid_t asleep; /* then also wait until this thread sleeps (0: don't): in
		       * clock_nanosleep, or a flag plan's sleep on its eventfd (ppoll) */
	pthread_t t;
};

/* tid sleeps in clock_nanosleep or ppoll (or restarts one after a handled signal) */
static bool asleep_in(pid_t tid)
{
	long nr = gd_blocked_in(tid, NULL);
	return nr == SYS_clock_nanosleep || nr == SYS_ppoll || nr == SYS_restart_syscall;
}

static void *opener_main(void *arg)
{
	struct opener *o = arg;
	usleep(o->delay_us);
	/* a loaded machine may start the wait after the delay: then it would find the
	 * work done on entry and record nothing */
	(void)settles(!o->asleep || asleep_in(o->asleep));
	gate_open(o->g);
	return NULL;
}

static void open_later(struct opener *o, struct gate *g, unsigned delay_us, pid_t asleep)
{
	o->g = g;
	o->delay_us = delay_us;
	o->asleep = asleep;
	cr_assert_eq(pthread_create(&o->t, NULL, opener_main, o), 0);
}

static const char *const kinds[] = {
	"block",
	"poll",
	"flag:park_us=100,backstop_us=1000000", /* far backstop: only readiness wakes it */
	"poll" PREDICT,
	"flag:park_us=10000,backstop_us=1000000" PREDICT,
};
static const enum garuda_readiness forms[] = {
	GARUDA_READINESS_EVENTFD,
	GARUDA_READINESS_MESSAGE,
	GARUDA_READINESS_DOORBELL,
	GARUDA_READINESS_POLL,
};

Test(plans, every_kind_waits_in_every_form)
{
	struct fixture f = { 0 };
	fx_up(&f, NULL, 8); /* faulted streams leave their words quarantined */
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (size_t fm = 0; fm < sizeof(forms) / sizeof(forms[0]); fm++) {
			struct garuda_host_stream *hs;
			struct garuda_stream *s;
			ok(garuda_host_stream_new(NULL, &hs));
			ok(garuda_stream_new(f.seg, hs, forms[fm], &s));
			ok(garuda_stream_set_plan(s, kinds[k]));
			for (int round = 0; round < 4; round++) {
				struct gate g;
				gate_init(&g);
				uint64_t seq;
				gate_enqueue(&g, hs);
				ok(garuda_host_stream_enqueue_work(hs, 300000));
				ok(garuda_stream_signal(s, &seq));
				/* held by the gate: a bounded wait times out, whatever the plan */
				fails(garuda_stream_wait(s, seq, 0), -GARUDA_E_TIMEOUT);
				fails(garuda_stream_wait(s, seq, 2 * NS_PER_MS), -GARUDA_E_TIMEOUT);
				cr_assert(!garuda_stream_reached(s, seq));
				struct opener o;
				open_later(&o, &g, 1000, 0);
				int r = garuda_stream_wait(s, seq, -1);
				cr_assert_eq(r, 0, "plan '%s' form %d round %d: %d (%s)", kinds[k],
					     forms[fm], round, r, garuda_strerror(r));
				cr_assert(garuda_stream_reached(s, seq));
				pthread_join(o.t, NULL);
				gate_destroy(&g);
			}
			/* a faulted stream fails the wait instead of hanging it */
			struct gate g;
			gate_init(&g);
			uint64_t seq;
			gate_enqueue(&g, hs);
			ok(garuda_host_stream_enqueue_fault(hs));
			ok(garuda_stream_signal(s, &seq));
			struct opener o;
			open_later(&o, &g, 1000, 0);
			int r = garuda_stream_wait(s, seq, 60 * NS_PER_S);
			cr_assert_eq(r, -GARUDA_E_STREAM_FAULT, "plan '%s' form %d fault: %d (%s)",
				     kinds[k], forms[fm], r, garuda_strerror(r));
			pthread_join(o.t, NULL);
			gate_destroy(&g);
			garuda_stream_free(s);
			garuda_host_stream_free(hs);
		}
	}
	fx_down(&f);
}

/* one gated round: the gate opens delay_us after the wait starts (about); asleep: and
 * not before the wait sleeps (a +predict wait with a prediction) */
static void gated_round(struct garuda_stream *s, struct garuda_host_stream *hs, unsigned delay_us,
			bool asleep)
{
	struct gate g;
	gate_init(&g);
	uint64_t seq;
	gate_enqueue(&g, hs);
	ok(garuda_stream_signal(s, &seq));
	struct opener o;
	open_later(&o, &g, delay_us, asleep ? (pid_t)syscall(SYS_gettid) : 0);
	ok(garuda_stream_wait(s, seq, -1));
	pthread_join(o.t, NULL);
	gate_destroy(&g);
}

Test(plans, predict_learns_exact_and_censored)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct garuda_stream_stats st;
	fx_up(&f, NULL, 1);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));

	/* a plan without +predict learns nothing */
	gated_round(s, hs, 2000, false);
	ok(garuda_stream_stats(s, &st));
	cr_assert_eq(st.exact + st.censored + st.sleeps + st.prediction_ns, 0);

	/* cold point: no sleep, a spin window (park_us), then the watcher's backoff: the find
	 * records its lower bound, exact; then the stream
	 * sleeps in front of its predicted completion. The gate opens 30 ms on and not
	 * before the wait sleeps in its backoff (ppoll on the eventfd): a loaded machine
	 * may start the wait after 30 ms, which would find the work done and record nothing */
	ok(garuda_stream_set_plan(
		s, "flag:park_us=10000,backstop_us=1000000+predict:margin_us=200,min_sleep_us=20,"
		   "max_sleep_us=200000,window=4"));
	ok(garuda_stream_stats(s, &st));
	cr_assert_eq(st.exact + st.censored + st.prediction_ns + st.sleep_ns, 0, "reset");
	gated_round(s, hs, 30000, true);
	ok(garuda_stream_stats(s, &st));
	cr_assert_eq(st.exact, 1, "the cold wait spun its window, then recorded its lower bound");
	cr_assert_eq(st.sleeps, 0, "a cold point does not sleep");
	cr_assert_gt(st.prediction_ns, 0);
	cr_assert_gt(st.sleep_ns, 0, "a 30 ms residual is worth sleeping for");
	cr_assert_eq(st.sleep_ns, st.prediction_ns - 200000, "sleep = prediction - margin");
	for (int i = 0; i < 3; i++)
		gated_round(s, hs, 30000, false);
	ok(garuda_stream_stats(s, &st));
	/* each warm wait sleeps toward its deadline once at most (a wait that gets the CPU
	 * only past it has nothing to sleep toward), and records at most one sample (a find
	 * by a wake that came late past the deadline records none: the scanner's rule,
	 * proto/policy.h). The exact sequences are test_watch.c's, on a simulated clock;
	 * here nothing that a loaded machine can change is asserted. */
	cr_assert_leq(st.sleeps, 3, "one sleep toward the deadline per warm wait at most");
	cr_assert_leq(st.exact + st.censored, 4, "one sample per wait at most");

	/* work that is done long before the predicted deadline: the readiness ends the
	 * sleep, the look after it finds the work done: a censored sample, which halves the
	 * prediction at least (a readiness that came late past the deadline records none) */
	uint64_t before = st.prediction_ns;
	uint64_t samples = st.exact + st.censored, censored = st.censored;
	gated_round(s, hs, 1000, true);
	ok(garuda_stream_stats(s, &st));
	cr_assert_leq(st.exact + st.censored, samples + 1, "one sample at most");
	if (st.censored == censored + 1)
		cr_assert_leq(st.prediction_ns, before / 2, "censored samples lower the prediction");

	/* setting a plan again starts over */
	ok(garuda_stream_set_plan(s, "poll" PREDICT));
	ok(garuda_stream_stats(s, &st));
	cr_assert_eq(st.exact + st.censored + st.sleeps + st.prediction_ns, 0);
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	fx_down(&f);
}

Test(plans, wait_plan_environment)
{
	struct gd_daemon d;
	struct garuda_client *c;
	struct garuda_seg *seg;
	struct garuda_stream *s;
	td_start(&d, NULL);

	const char *text = "poll" PREDICT;
	setenv("GARUDA_WAIT_PLAN", text, 1);
	ok(garuda_connect_to(d.sock, &c));
	ok(garuda_segment_open(c, "host", 0, 1, &seg));
	ok(garuda_stream_new(seg, NULL, GARUDA_READINESS_DOORBELL, &s));
	plan_is(s, text);
	uint64_t seq;
	ok(garuda_stream_signal(s, &seq));
	ok(garuda_stream_wait(s, seq, -1));
	garuda_stream_free(s);
	ok(garuda_segment_close(seg));
	garuda_disconnect(c);

	/* a refused text fails the connect, with the key in the message */
	setenv("GARUDA_WAIT_PLAN", "flag:park_us=20000,backstop_us=1", 1);
	c = (struct garuda_client *)1;
	fails(garuda_connect_to(d.sock, &c), -GARUDA_E_BAD_PLAN);
	cr_assert_null(c);
	cr_assert(strncmp(garuda_plan_message(), "park_us:", 8) == 0, "message '%s'",
		  garuda_plan_message());
	/* and garuda_last_error() names the variable, its text and the key, not garudad
	 * (it was "cannot connect to garudad at ...: invalid wait plan") */
	cr_assert(strstr(garuda_last_error(), "$GARUDA_WAIT_PLAN=\"flag:park_us=20000,backstop_us=1\": park_us:"),
		  "last error '%s'", garuda_last_error());
	cr_assert_null(strstr(garuda_last_error(), d.sock), "last error '%s'", garuda_last_error());
	setenv("GARUDA_WAIT_PLAN", "spin", 1);
	fails(garuda_connect_to(d.sock, &c), -GARUDA_E_BAD_PLAN);
	cr_assert(strstr(garuda_last_error(), "$GARUDA_WAIT_PLAN=\"spin\": "), "last error '%s'",
		  garuda_last_error());
	cr_assert(strstr(garuda_last_error(), garuda_plan_message()), "last error '%s'",
		  garuda_last_error());
	/* the search path (garuda_connect) says the same */
	setenv("GARUDA_SOCKET", d.sock, 1);
	fails(garuda_connect(&c), -GARUDA_E_BAD_PLAN);
	cr_assert(strstr(garuda_last_error(), "$GARUDA_WAIT_PLAN=\"spin\": "), "last error '%s'",
		  garuda_last_error());
	unsetenv("GARUDA_SOCKET");

	/* empty: the built-in default */
	setenv("GARUDA_WAIT_PLAN", "", 1);
	ok(garuda_connect_to(d.sock, &c));
	ok(garuda_segment_open(c, "host", 0, 1, &seg));
	ok(garuda_stream_new(seg, NULL, GARUDA_READINESS_DOORBELL, &s));
	plan_is(s, "flag:park_us=10000,backstop_us=1000");
	garuda_stream_free(s);
	ok(garuda_segment_close(seg));
	garuda_disconnect(c);
	unsetenv("GARUDA_WAIT_PLAN");
	td_stop(&d);
}

/* GARUDA_WORDWAIT (read at connect): unset, "", "auto" and "off" connect, and a wait
 * whose spin phase sees the word land completes under each (the spin step idles in
 * the hardware word wait where the CPU has one: here, no WAITPKG nor MONITORX, the
 * cpu_relax step); anything else fails the connect with -EINVAL and a message naming
 * the variable */
Test(plans, wordwait_environment)
{
	struct gd_daemon d;
	td_start(&d, NULL);
	static const char *const good[] = { NULL, "", "auto", "off" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (good[i])
			setenv("GARUDA_WORDWAIT", good[i], 1);
		else
			unsetenv("GARUDA_WORDWAIT");
		struct garuda_client *c;
		struct garuda_seg *seg;
		struct garuda_host_stream *hs;
		struct garuda_stream *s;
		ok(garuda_connect_to(d.sock, &c));
		ok(garuda_segment_open(c, "host", 0, 1, &seg));
		ok(garuda_host_stream_new(NULL, &hs));
		ok(garuda_stream_new(seg, hs, GARUDA_READINESS_EVENTFD, &s));
		/* a spin of 60 s: the wait is over in its spin phase */
		ok(garuda_stream_set_wait(s, 60 * NS_PER_S, 1 * NS_PER_MS));
		for (int round = 0; round < 3; round++) {
			struct gate g;
			gate_init(&g);
			uint64_t seq;
			gate_enqueue(&g, hs);
			ok(garuda_stream_signal(s, &seq));
			struct opener o;
			open_later(&o, &g, 2000, 0);
			int r = garuda_stream_wait(s, seq, -1);
			cr_assert_eq(r, 0, "GARUDA_WORDWAIT=%s round %d: %d (%s)", good[i] ? good[i] : "(unset)",
				     round, r, garuda_strerror(r));
			pthread_join(o.t, NULL);
			gate_destroy(&g);
		}
		garuda_stream_free(s);
		garuda_host_stream_free(hs);
		ok(garuda_segment_close(seg));
		garuda_disconnect(c);
	}
	static const char *const bad[] = { "on", "Auto", "umwait", "off ", "0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("GARUDA_WORDWAIT", bad[i], 1);
		struct garuda_client *c = (struct garuda_client *)1;
		fails(garuda_connect_to(d.sock, &c), -EINVAL);
		cr_assert_null(c);
		cr_assert(strstr(garuda_last_error(), "GARUDA_WORDWAIT") &&
			  strstr(garuda_last_error(), "auto or off"), "'%s': %s", bad[i], garuda_last_error());
	}
	unsetenv("GARUDA_WORDWAIT");
	td_stop(&d);
}

/* the Python helper's hazard: a freed stream's store still queued on its host stream
 * must not land in an unmapped segment */
Test(plans, segment_close_waits_for_freed_streams_stores)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	fx_up(&f, NULL, 1);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	struct gate g;
	gate_init(&g);
	uint64_t seq;
	gate_enqueue(&g, hs);
	ok(garuda_stream_signal(s, &seq));
	fails(garuda_segment_close(f.seg), -GARUDA_E_BUSY); /* the stream is alive */
	garuda_stream_free(s);
	fails(garuda_segment_close(f.seg), -GARUDA_E_BUSY); /* its store is still queued */
	fails(garuda_segment_close(f.seg), -GARUDA_E_BUSY);
	gate_open(&g);
	ok(garuda_host_stream_drain(hs));
	ok(garuda_segment_close(f.seg)); /* landed: nothing more will come */
	f.seg = NULL;
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	fx_down(&f);
}

/* A wait taken in slices (garuda_stream_wait with a timeout, again and again for the
 * same sequence, as the Python package's main thread does so that Ctrl-C is seen) is
 * one wait: its backstop queries go on across the slices. Each slice started the
 * schedule anew, so slices shorter than the backstop never queried the native stream,
 * and a faulted stream (no store, no readiness: only a query finds it) was waited on
 * for good. POLL form, backstop 2 ms, slices of 1 ms. */
Test(plans, a_wait_in_slices_keeps_its_backstop)
{
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_POLL, &s));
	ok(garuda_stream_set_plan(s, "flag:park_us=0,backstop_us=2000"));
	/* the fault behind a gate: a signal on a stream that faulted already is refused */
	struct gate g;
	gate_init(&g);
	gate_enqueue(&g, hs);
	ok(garuda_host_stream_enqueue_fault(hs));
	uint64_t seq;
	ok(garuda_stream_signal(s, &seq));
	gate_open(&g);
	int r = -GARUDA_E_TIMEOUT;
	unsigned slices = 0;
	for (; slices < 2000 && r == -GARUDA_E_TIMEOUT; slices++)
		r = garuda_stream_wait(s, seq, NS_PER_MS);
	cr_assert_eq(r, -GARUDA_E_STREAM_FAULT, "after %u slices of 1 ms: %d (%s)", slices, r,
		     garuda_strerror(r));
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	gate_destroy(&g);
	fx_down(&f);
}
