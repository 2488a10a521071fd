/* test_uring.c — a segment's doorbell awaited in an io_uring ring with
 * IORING_OP_FUTEX_WAIT (garuda_segment_doorbell(), examples/uring_futex.h; docs/client.md
 * "io_uring"), against a real garudad. Work is held outstanding by gates (no timing).
 *
 * Checked: a wait queued with the doorbell's value does not complete before garudad's
 * readiness, completes (res 0) after it, and the doorbell moved by exactly the
 * readiness delivered (one wake per store, none more: a second wait queued with the new
 * value stays queued until the next store); a wait with a stale value completes at once
 * with -EAGAIN, so the rule (take the value, check the streams, wait) misses no ring.
 * Skipped, saying why, where the kernel has no IORING_OP_FUTEX_WAIT (Linux 6.7); the
 * example's fallback to eventfd reads is test_examples.c's.
 */
#include <errno.h>
#include <liburing.h>
#include <string.h>

#include "common.h"
#include "uring_futex.h"

TestSuite(uring, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 120);

struct bell_fixture {
	struct fixture f;
	struct io_uring ring;
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
};

static void up(struct bell_fixture *b)
{
	cr_assert_eq(io_uring_queue_init(8, &b->ring, 0), 0);
	if (!uring_futex_wait_supported(&b->ring)) {
		io_uring_queue_exit(&b->ring);
		cr_skip_test("this kernel has no IORING_OP_FUTEX_WAIT (Linux 6.7 or later): the "
			     "doorbell is awaited with futex(2) or through the EVENTFD form there");
	}
	fx_up(&b->f, NULL, 1);
	ok(garuda_host_stream_new(NULL, &b->hs));
	ok(garuda_stream_new(b->f.seg, b->hs, GARUDA_READINESS_DOORBELL, &b->s));
}

static void down(struct bell_fixture *b)
{
	io_uring_queue_exit(&b->ring); /* cancels a wait still queued */
	garuda_stream_free(b->s);
	garuda_host_stream_free(b->hs);
	fx_down(&b->f);
}

/* queue a FUTEX_WAIT on the doorbell for `value`; the CQE it made at once, if any */
static bool wait_bell(struct bell_fixture *b, uint32_t *word, uint32_t value, int *res)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
	cr_assert_not_null(sqe);
	uring_prep_futex_wait(sqe, word, value);
	io_uring_sqe_set_data64(sqe, value);
	cr_assert_eq(io_uring_submit(&b->ring), 1);
	struct io_uring_cqe *cqe;
	if (io_uring_peek_cqe(&b->ring, &cqe) != 0)
		return false;
	*res = cqe->res;
	io_uring_cqe_seen(&b->ring, cqe);
	return true;
}

/* the next CQE (a deadline, not a timing assumption: it must come) */
static int next_res(struct bell_fixture *b)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = 60 };
	int r = io_uring_wait_cqe_timeout(&b->ring, &cqe, &ts);
	cr_assert_eq(r, 0, "no completion of the doorbell wait: %s", strerror(-r));
	int res = cqe->res;
	io_uring_cqe_seen(&b->ring, cqe);
	return res;
}

/* one sequence held by a gate, then its store: the readiness wakes the ring's wait */
static void one_readiness(struct bell_fixture *b, uint64_t *seq)
{
	struct gate g;
	gate_init(&g);
	gate_enqueue(&g, b->hs);
	ok(garuda_stream_signal(b->s, seq));
	uint32_t *word, value;
	ok(garuda_segment_doorbell(b->f.seg, &word, &value));
	cr_assert(!garuda_stream_reached(b->s, *seq), "the gate let the store through");
	int res;
	cr_assert(!wait_bell(b, word, value, &res), "the wait completed (res %d) before any store",
		  res);
	gate_open(&g);
	cr_assert_eq(next_res(b), 0, "the doorbell wait did not end by a wake");
	cr_assert(garuda_stream_reached(b->s, *seq), "woken before the store");
	uint32_t *w2, now;
	ok(garuda_segment_doorbell(b->f.seg, &w2, &now));
	cr_assert_eq(w2, word);
	cr_assert_eq(now, value + 1, "one readiness, one ring (doorbell %u -> %u)", value, now);
	ok(garuda_host_stream_drain(b->hs));
	gate_destroy(&g);
}

Test(uring, doorbell_wait_wakes_on_the_store_and_only_then)
{
	struct bell_fixture b;
	up(&b);
	uint64_t seq;
	one_readiness(&b, &seq);
	ok(garuda_stream_wait(b.s, seq, NS_PER_S));
	/* nothing outstanding: a wait with the current value stays queued (no spurious
	 * wake), and the next store ends it, once */
	one_readiness(&b, &seq);
	down(&b);
}

Test(uring, a_stale_value_returns_at_once)
{
	struct bell_fixture b;
	up(&b);
	uint64_t seq;
	one_readiness(&b, &seq);
	uint32_t *word, value;
	ok(garuda_segment_doorbell(b.f.seg, &word, &value));
	int res = 0;
	/* the value taken before the last ring: the wait must not sleep */
	cr_assert(wait_bell(&b, word, value - 1, &res), "a wait with a stale value was queued");
	cr_assert_eq(res, -EAGAIN);
	down(&b);
}

Test(uring, doorbell_arguments)
{
	uint32_t *word, value;
	fails(garuda_segment_doorbell(NULL, &word, &value), -EINVAL);
	struct fixture f;
	fx_up(&f, NULL, 1);
	fails(garuda_segment_doorbell(f.seg, NULL, &value), -EINVAL);
	fails(garuda_segment_doorbell(f.seg, &word, NULL), -EINVAL);
	ok(garuda_segment_doorbell(f.seg, &word, &value));
	fx_down(&f);
}
