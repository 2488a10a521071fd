/* lgwait.c — the latency row for libgaruda's garuda_stream_wait(): a host stream (a
 * worker thread of the waiter's process standing in for the GPU) sleeps the simulated
 * kernel, stamps t0 and stores; the waiter signals, then waits with the stream's
 * default plan (spin, then block on its eventfd). Built only with libgaruda. */
#include <garuda/garuda.h>
#include <stdio.h>
#include <sys/prctl.h>

#include "bench.h"
#include "lat.h"

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
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	garuda_segment_close(seg);
	garuda_disconnect(c);
	return rc;
}
