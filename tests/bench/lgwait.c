/* lgwait.c — the latency row for libgaruda's garuda_stream_wait(): a host stream (a
 * worker thread of the waiter's process standing in for the GPU) sleeps the simulated
 * kernel, stamps t0 and stores; the waiter signals, then waits with the stream's
 * default plan (spin, then block on its eventfd). Built only with libgaruda. */
#include <garuda/garuda.h>
#include <stdio.h>
#include <sys/prctl.h>

#include "bench.h"
#include "lat.h"

/* free what a libgaruda waiter set up (each may be NULL) */
static void lg_close(struct garuda_client *c, struct garuda_seg *seg, struct garuda_host_stream *hs,
		     struct garuda_stream *s)
{
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	garuda_segment_close(seg);
	garuda_disconnect(c);
}

int lat_lgwaiter_main(void *arg)
{
	struct lat_lgwaiter *g = arg;
	struct lat_run *r = g->r;
	struct garuda_client *c = NULL;
	struct garuda_seg *seg = NULL;
	struct garuda_host_stream *hs = NULL;
	struct garuda_stream *s = NULL;
	int e, rc = 1;
	struct garuda_host_stream_config hc = { .depth = 64, .spin_ns = 0 };
	if ((e = garuda_connect_to(g->sock, &c)) || (e = garuda_segment_open(c, "host", 0, 1, &seg)) ||
	    (e = garuda_host_stream_new(&hc, &hs)) ||
	    (e = garuda_stream_new(seg, hs, GARUDA_READINESS_EVENTFD, &s))) {
		snprintf(g->status, 160, "set-up failed: %s", garuda_strerror(e));
		goto out;
	}
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	rc = 0;
	for (uint32_t i = 1; i <= r->n; i++) {
		uint64_t seq = 0;
		r->ta[i] = now_ns();
		if ((e = garuda_host_stream_enqueue_work(hs, r->gap_ns)) ||
		    (e = garuda_host_stream_enqueue_stamp(hs, &r->t0[i])) ||
		    (e = garuda_stream_signal(s, &seq))) {
			lat_side_fail(r, "libgaruda: %s failed (%ld)", "signal", e);
			rc = 1;
			break;
		}
		if (seq != i) {
			lat_side_fail(r, "libgaruda: %s is %ld", "sequence", (long)seq);
			rc = 1;
			break;
		}
		e = garuda_stream_wait(s, seq, (int64_t)BENCH_HANG_MS * 1000000);
		uint64_t t1 = now_ns();
		if (e) {
			lat_side_fail(r, "libgaruda: %s failed (%ld)", "wait", e);
			rc = 1;
			break;
		}
		r->lat[i] = t1 - __atomic_load_n(&r->t0[i], __ATOMIC_ACQUIRE);
	}
out:
	lg_close(c, seg, hs, s);
	return rc;
}

/* ---------------------------------------------------------------- plans section */

/* The worker thread ("the GPU"): sleeps precisely like the producer processes of the
 * other rows (timer slack 1 ns), and reports its own CPU so that the stream's CPU
 * excludes it as theirs does. */
static void worker_slack(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
}

static void worker_cpu(void *arg)
{
	*(uint64_t *)arg = thread_cpu_ns();
}

int plan_lgstream_run(struct plan_lgstream *a)
{
	uint64_t cpu0 = process_cpu_ns(), wcpu = 0;
	struct garuda_client *c = NULL;
	struct garuda_seg *seg = NULL;
	struct garuda_host_stream *hs = NULL;
	struct garuda_stream *s = NULL;
	int e, rc = -1;
	const char *what = "connect";
	struct garuda_host_stream_config hc = { .depth = 64, .spin_ns = 0 };
	if ((e = garuda_connect_to(a->sock, &c)) ||
	    (what = "segment", e = garuda_segment_open(c, "host", 0, 1, &seg)) ||
	    (what = "host stream", e = garuda_host_stream_new(&hc, &hs)) ||
	    (what = "stream", e = garuda_stream_new(seg, hs, GARUDA_READINESS_EVENTFD, &s)) ||
	    (what = "set_plan", e = garuda_stream_set_plan(s, a->plan)) ||
	    (what = "worker", e = garuda_host_stream_enqueue_call(hs, worker_slack, NULL))) {
		snprintf(a->msg, a->msg_cap, "libgaruda: %s failed: %s %s", what, garuda_strerror(e),
			 e == -GARUDA_E_BAD_PLAN ? garuda_plan_message() : "");
		goto out;
	}
	for (uint32_t i = 1; i <= a->n; i++) {
		uint64_t seq = 0;
		if ((what = "enqueue", e = garuda_host_stream_enqueue_work(hs, a->kns[i])) ||
		    (e = garuda_host_stream_enqueue_stamp(hs, &a->t0[i])) ||
		    (what = "signal", e = garuda_stream_signal(s, &seq)) ||
		    (what = "wait", e = garuda_stream_wait(s, seq, (int64_t)BENCH_HANG_MS * 1000000))) {
			snprintf(a->msg, a->msg_cap, "libgaruda: %s failed at %u: %s", what, i,
				 garuda_strerror(e));
			goto out;
		}
		uint64_t t1 = now_ns();
		if (seq != i || !garuda_stream_reached(s, seq)) {
			snprintf(a->msg, a->msg_cap, "libgaruda: sequence %llu at %u, or not reached",
				 (unsigned long long)seq, i);
			goto out;
		}
		/* the stamp is stored before the word: visible once the wait saw the word */
		a->lat[i] = t1 - __atomic_load_n(&a->t0[i], __ATOMIC_ACQUIRE);
	}
	if ((e = garuda_host_stream_enqueue_call(hs, worker_cpu, &wcpu)) ||
	    (e = garuda_host_stream_drain(hs))) {
		snprintf(a->msg, a->msg_cap, "libgaruda: worker CPU: %s", garuda_strerror(e));
		goto out;
	}
	struct garuda_stream_stats st;
	if (garuda_stream_stats(s, &st) == 0) {
		a->exact = st.exact;
		a->censored = st.censored;
		a->sleeps = st.sleeps;
		a->spin_outs = st.spin_outs;
	}
	rc = 0;
out:
	*a->cpu_ns = process_cpu_ns() - cpu0 - __atomic_load_n(&wcpu, __ATOMIC_ACQUIRE);
	lg_close(c, seg, hs, s);
	return rc;
}
