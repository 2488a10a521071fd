/* test_reuse.c — a freed stream's word and table index are handed to a new stream
 * (issue 16): no arm of the old stream may stay armed on the word, and no error for an
 * arm of the old stream may be blamed on the new one. Every form with the daemon, run
 * under both of garudad's event loops (io_uring skips, saying why, where the kernel
 * refuses it). Nothing here depends on timing: the counts come from QUERY, waited for
 * with a deadline that only detects a hang. */
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

TestSuite(reuse, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 240);

#define CYCLES 2001
#define MISROUTE_ROUNDS 200

/* "key":N of this client's QUERY, or -1 */
static long long session_key(struct garuda_client *c, const char *key)
{
	char buf[1024], pat[64];
	if (garuda_client_query(c, buf, sizeof(buf)) < 0)
		return -1;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(buf, pat);
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static void up(struct fixture *f, const char *loop, const char *quota)
{
	if (strcmp(loop, "io_uring") == 0) {
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		int fd = (int)syscall(__NR_io_uring_setup, 2, &p);
		if (fd < 0)
			cr_skip_test("io_uring refused by this kernel (%s): the epoll run covers it",
				     strerror(errno));
		close(fd);
	}
	char extra[160];
	snprintf(extra, sizeof(extra), "\"event_loop\":\"%s\"%s%s", loop, quota ? "," : "",
		 quota ? quota : "");
	fx_up(f, extra, 1);
}

/* 2,001 create/signal/wait/free cycles on one word (the allocator hands out the lowest
 * free word, and the segment has no other stream), with 3, 2, 1, 3, ... signals per
 * cycle so that the word ends below targets of earlier streams: afterwards no stream
 * is alive, so no arm may be left armed. Before the fix a freed stream whose word had reached its
 * sequence sent no DISARM, the next stream stored 0 into the word, and an arm the
 * scanner had not yet seen reached stayed armed for good. */
static void no_arm_stranded(const char *loop, enum garuda_readiness form)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	up(&f, loop, NULL);
	ok(garuda_host_stream_new(NULL, &hs));
	long long arms = 0;
	for (int i = 0; i < CYCLES; i++) {
		struct garuda_stream *s;
		uint64_t seq;
		struct gate g;
		gate_init(&g);
		ok(garuda_stream_new(f.seg, hs, form, &s));
		gate_enqueue(&g, hs); /* the stores land after the daemon took the arms */
		for (int k = 0; k < 3 - i % 3; k++, arms++)
			ok(garuda_stream_signal(s, &seq));
		eventually(session_key(f.c, "arms") == arms, "the arms were taken");
		gate_open(&g);
		ok(garuda_stream_wait(s, seq, 10 * NS_PER_S));
		gate_destroy(&g);
		garuda_stream_free(s);
	}
	cr_assert_eq(garuda_segment_free_words(f.seg), 8);
	long long end = td_now_ms() + TD_DEADLINE_MS;
	long long armed;
	while ((armed = session_key(f.c, "armed")) != 0) {
		cr_assert(td_now_ms() < end, "%lld arms still armed with no stream alive", armed);
		usleep(1000);
	}
	garuda_host_stream_free(hs);
	fx_down(&f);
}

/* Armed quota 1: each round, stream A signals twice (the second arm is refused with
 * QUOTA, asynchronously), waits and is freed; stream B then takes A's word and table
 * index. B's first signal reports errors of B's own arms only, so it must succeed.
 * Before the fix the refusal of A's arm, arriving after A was freed, was looked up by
 * table index and blamed on B. */
static void error_not_misrouted(const char *loop, enum garuda_readiness form)
{
	struct fixture f = { 0 };
	struct garuda_host_stream *hs;
	up(&f, loop, "\"quota\":{\"connection\":{\"armed\":1}}");
	ok(garuda_host_stream_new(NULL, &hs));
	int blamed = 0;
	for (int i = 0; i < MISROUTE_ROUNDS; i++) {
		struct garuda_stream *a, *b;
		uint64_t seq;
		ok(garuda_stream_new(f.seg, hs, form, &a));
		ok(garuda_stream_signal(a, &seq));
		int r = garuda_stream_signal(a, &seq);
		if (r == 0)
			ok(garuda_stream_wait(a, seq, 10 * NS_PER_S));
		else
			fails(r, -GARUDA_E_QUOTA); /* a refusal of a's own first arm */
		garuda_stream_free(a);
		ok(garuda_stream_new(f.seg, hs, form, &b));
		r = garuda_stream_signal(b, &seq);
		if (r < 0) {
			cr_assert_eq(r, -GARUDA_E_QUOTA, "%d (%s)", r, garuda_strerror(r));
			blamed++;
		} else {
			ok(garuda_stream_wait(b, seq, 10 * NS_PER_S));
		}
		garuda_stream_free(b);
	}
	cr_assert_eq(blamed, 0, "%d of %d fresh streams got an error of a freed stream's arm",
		     blamed, MISROUTE_ROUNDS);
	/* every refusal was routed to the stream that signalled it, before its free ended */
	cr_assert_eq(session_key(f.c, "stray_errors"), 0);
	garuda_host_stream_free(hs);
	fx_down(&f);
}

#define FORMS(X, loop)                                                                       \
	X(loop, eventfd, GARUDA_READINESS_EVENTFD)                                           \
	X(loop, doorbell, GARUDA_READINESS_DOORBELL)                                         \
	X(loop, message, GARUDA_READINESS_MESSAGE)

#define CASES(loop, name, form)                                                              \
	Test(reuse, no_arm_stranded_##loop##_##name) { no_arm_stranded(#loop, form); }       \
	Test(reuse, error_not_misrouted_##loop##_##name) { error_not_misrouted(#loop, form); }

FORMS(CASES, epoll)
FORMS(CASES, io_uring)
