/* test_forms.c — each readiness form through the API, with the backstop set far away
 * (60 s) so that only the form itself can wake a waiter in time: eventfd readable
 * after completion, READY messages driving callbacks through the client fd, the
 * doorbell waking a blocked wait. Also: memory is the truth (a store that already
 * landed needs no readiness), and drain/callbacks report each sequence exactly once. */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

TestSuite(forms, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 120);

#define FAR_BACKSTOP (60 * NS_PER_S)
#define SOON_MS 30000 /* far below the backstop: only readiness can be this quick */

static void readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, SOON_MS), 1, "fd %d never became readable", fd);
}

Test(forms, eventfd_readable_after_each_completion)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	fx_up(&f, NULL, 1);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	int fd = garuda_stream_fd(s);
	cr_assert_geq(fd, 0);
	cr_assert_eq(garuda_stream_fd(s), fd, "the same fd every time");
	for (uint64_t k = 1; k <= 20; k++) {
		uint64_t seq, v = 0;
		ok(garuda_host_stream_enqueue_work(hs, 500000));
		ok(garuda_stream_signal(s, &seq));
		cr_assert_eq(seq, k);
		readable(fd);
		cr_assert_eq(garuda_stream_drain(s, &v), 1);
		cr_assert_eq(v, k);
		cr_assert_eq(garuda_stream_drain(s, &v), 0, "nothing new");
		struct pollfd p = { .fd = fd, .events = POLLIN };
		cr_assert_eq(poll(&p, 1, 0), 0, "drain cleared the readiness");
	}
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	fx_down(&f);
}

struct coverage {
	uint64_t last;       /* highest seq reported */
	unsigned calls;
	unsigned char seen[1024];
	bool twice;
};

static void cover(struct coverage *cv, uint64_t upto)
{
	for (uint64_t q = cv->last + 1; q <= upto && q < sizeof(cv->seen); q++)
		if (cv->seen[q]++)
			cv->twice = true;
	if (upto <= cv->last)
		cv->twice = true;
	cv->last = upto;
	cv->calls++;
}

static void on_ready(struct garuda_stream *s, uint64_t seq, void *user)
{
	(void)s;
	cover(user, seq);
}

Test(forms, message_callbacks_cover_each_sequence_once)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct coverage cv = { 0 };
	fx_up(&f, NULL, 1);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_MESSAGE, &s));
	ok(garuda_stream_set_callback(s, on_ready, &cv));
	int cfd = garuda_client_fd(f.c);
	cr_assert_geq(cfd, 0);
	uint64_t seq = 0;
	for (int k = 0; k < 300; k++) {
		ok(garuda_host_stream_enqueue_work(hs, (uint64_t)(k % 7) * 10000));
		ok(garuda_stream_signal(s, &seq));
	}
	while (cv.last < seq) {
		readable(cfd);
		cr_assert_geq(garuda_dispatch(f.c), 0);
	}
	cr_assert(!cv.twice, "a sequence was reported twice");
	for (uint64_t q = 1; q <= seq; q++)
		cr_assert_eq(cv.seen[q], 1, "sequence %llu reported %d times", (unsigned long long)q,
			     cv.seen[q]);
	cr_assert_eq(garuda_client_fd(f.c), cfd, "the client fd never changes");
	/* no callback any more once removed */
	ok(garuda_stream_set_callback(s, NULL, NULL));
	unsigned calls = cv.calls;
	ok(garuda_stream_signal(s, &seq));
	ok(garuda_stream_wait(s, seq, 10 * NS_PER_S));
	cr_assert_eq(garuda_dispatch(f.c), 0);
	cr_assert_eq(cv.calls, calls);
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	fx_down(&f);
}

Test(forms, callback_set_late_reports_what_completed_before)
{
	struct fixture f = { 0 };
	struct garuda_stream *s;
	struct coverage cv = { 0 };
	uint64_t seq;
	fx_up(&f, NULL, 1);
	ok(garuda_stream_new(f.seg, NULL, GARUDA_READINESS_MESSAGE, &s));
	for (int k = 0; k < 5; k++)
		ok(garuda_stream_signal(s, &seq)); /* CPU producer: stored at once */
	ok(garuda_stream_set_callback(s, on_ready, &cv));
	cr_assert_eq(garuda_dispatch(f.c), 1);
	cr_assert_eq(cv.last, 5);
	cr_assert_eq(cv.calls, 1, "coalesced into one callback");
	garuda_stream_free(s);
	fx_down(&f);
}

/* A blocked wait (no spin, backstop 60 s) is woken by the form's readiness. */
Test(forms, every_form_wakes_a_blocked_wait)
{
	static const enum garuda_readiness forms[] = { GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_MESSAGE,
						       GARUDA_READINESS_DOORBELL };
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	for (size_t i = 0; i < 3; i++) {
		struct garuda_host_stream *hs;
		struct garuda_stream *s;
		ok(garuda_host_stream_new(NULL, &hs));
		ok(garuda_stream_new(f.seg, hs, forms[i], &s));
		ok(garuda_stream_set_wait(s, 0, FAR_BACKSTOP));
		for (int k = 0; k < 10; k++) {
			uint64_t seq;
			ok(garuda_host_stream_enqueue_work(hs, 2000000));
			ok(garuda_stream_signal(s, &seq));
			long long t0 = td_now_ms();
			ok(garuda_stream_wait(s, seq, 120 * NS_PER_S));
			cr_assert_lt(td_now_ms() - t0, SOON_MS, "form %d: woken by the backstop only",
				     forms[i]);
		}
		garuda_stream_free(s);
		garuda_host_stream_free(hs);
	}
	fx_down(&f);
}

Test(forms, poll_form_waits_by_reading_the_word)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	fx_up(&f, NULL, 1);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_POLL, &s));
	ok(garuda_stream_set_wait(s, 0, FAR_BACKSTOP));
	for (int k = 0; k < 10; k++) {
		uint64_t seq, v;
		ok(garuda_host_stream_enqueue_work(hs, 1000000));
		ok(garuda_stream_signal(s, &seq));
		long long t0 = td_now_ms();
		ok(garuda_stream_wait(s, seq, 120 * NS_PER_S));
		cr_assert_lt(td_now_ms() - t0, SOON_MS);
		cr_assert_eq(garuda_stream_drain(s, &v), 1);
		cr_assert_eq(v, seq);
	}
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	fx_down(&f);
}

/* A store that landed is complete, whatever readiness did or did not say yet. */
Test(forms, memory_is_the_truth)
{
	static const enum garuda_readiness forms[] = { GARUDA_READINESS_POLL, GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_MESSAGE,
						       GARUDA_READINESS_DOORBELL };
	struct fixture f = { 0 };
	fx_up(&f, NULL, 1);
	for (size_t i = 0; i < 4; i++) {
		struct garuda_stream *s;
		uint64_t seq;
		ok(garuda_stream_new(f.seg, NULL, forms[i], &s)); /* CPU producer */
		for (int k = 1; k <= 3; k++) {
			ok(garuda_stream_signal(s, &seq));
			cr_assert(garuda_stream_reached(s, seq), "stored before signal returned");
			cr_assert_eq(garuda_stream_value(s), seq);
			cr_assert_eq(garuda_stream_last(s), seq);
			ok(garuda_stream_wait(s, seq, 0));
		}
		cr_assert(!garuda_stream_reached(s, seq + 1));
		ok(garuda_stream_query(s));
		garuda_stream_free(s);
	}
	fx_down(&f);
}

Test(forms, drain_reports_each_sequence_once)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	struct coverage cv = { 0 };
	fx_up(&f, NULL, 1);
	ok(garuda_host_stream_new(NULL, &hs));
	ok(garuda_stream_new(f.seg, hs, GARUDA_READINESS_EVENTFD, &s));
	uint64_t seq = 0;
	for (int k = 0; k < 500; k++) {
		ok(garuda_host_stream_enqueue_work(hs, (uint64_t)(k % 3) * 5000));
		ok(garuda_stream_signal(s, &seq));
	}
	while (cv.last < seq) {
		uint64_t v;
		readable(garuda_stream_fd(s));
		int r = garuda_stream_drain(s, &v);
		cr_assert_geq(r, 0);
		if (r)
			cover(&cv, v);
	}
	cr_assert(!cv.twice);
	for (uint64_t q = 1; q <= seq; q++)
		cr_assert_eq(cv.seen[q], 1);
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	fx_down(&f);
}
