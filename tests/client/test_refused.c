/* test_refused.c — no wait ends in silence when garudad refuses an arm (issue 30,
 * item 1). Five host streams, each signalled twice behind a gate, against an armed
 * quota of 4 (connection, uid or cgroup): garudad refuses six arms. Each readiness
 * form is waited on only through its own mechanism, never garuda_stream_wait() (which
 * polls): an epoll loop over the eventfds, garuda_client_fd() + garuda_dispatch()
 * callbacks, a futex wait on the segment's doorbell. Asserted:
 *   - before the gate opens, every stream with a refused arm becomes ready in its form
 *     (the refusal wakes the waiter; its word has not moved): its eventfd readable,
 *     the client's fd readable (message form: a callback is queued; it runs only
 *     when the word advanced), the doorbell rung;
 *   - after it opens, all ten sequences complete in the stream's form;
 *   - the next signal of each such stream reports the refusal, once, with garudad's
 *     words (the quota's key) in garuda_last_error(); the one after that works.
 * The cgroup case moves this process (after garudad started) into a fresh cgroup v2
 * group of its own for the client, and back after (skipped, with the reason, where the
 * hierarchy is not writable). Work is held by gates, never by
 * sleeps; every wait is bounded by the tests' deadline. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "common.h"
#include "../../client/stream.h" /* stream_arm_target(): pure, not exported */

TestSuite(refused, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 120);

#define NSTREAMS 5

struct run {
	enum garuda_readiness form;
	struct garuda_client *c;
	struct garuda_seg *seg;
	struct garuda_stream *s[NSTREAMS];
	uint64_t seen[NSTREAMS]; /* the highest sequence the form reported */
	bool woke[NSTREAMS];     /* readiness came at all */
	uint32_t bell;           /* the doorbell's value at the last look */
	char err[2048];
};

#define fail_if(cond, ...)                                                   \
	do {                                                                 \
		if (cond) {                                                  \
			snprintf(r->err, sizeof(r->err), __VA_ARGS__);       \
			return false;                                        \
		}                                                            \
	} while (0)

static void on_ready(struct garuda_stream *s, uint64_t seq, void *user)
{
	struct run *r = user;
	for (int i = 0; i < NSTREAMS; i++) {
		if (r->s[i] == s) {
			r->woke[i] = true;
			if (seq > r->seen[i])
				r->seen[i] = seq;
		}
	}
}

/* Readiness in the form, for at most ms: who woke, and what each stream's word says
 * (drain: exactly what the eventfd and doorbell forms tell an event loop). */
static bool wait_form(struct run *r, int epfd, long long ms)
{
	switch (r->form) {
	case GARUDA_READINESS_EVENTFD: {
		struct epoll_event ev[NSTREAMS];
		int n = epoll_wait(epfd, ev, NSTREAMS, (int)ms);
		fail_if(n < 0, "epoll_wait: %s", strerror(errno));
		for (int k = 0; k < n; k++) {
			int i = (int)ev[k].data.u32;
			uint64_t v;
			fail_if(garuda_stream_drain(r->s[i], &v) < 0, "drain failed");
			r->woke[i] = true;
			if (v > r->seen[i])
				r->seen[i] = v;
		}
		return true;
	}
	case GARUDA_READINESS_MESSAGE: {
		/* the client's fd is readable when a callback is queued (a callback runs
		 * only when its word advanced) */
		struct pollfd p = { .fd = garuda_client_fd(r->c), .events = POLLIN };
		int n = poll(&p, 1, (int)ms);
		fail_if(n < 0, "poll: %s", strerror(errno));
		for (int i = 0; n > 0 && i < NSTREAMS; i++)
			r->woke[i] = true;
		fail_if(garuda_dispatch(r->c) < 0, "dispatch failed");
		return true;
	}
	default: { /* doorbell: take the value, check the streams, wait while it holds */
		uint32_t *word, value;
		fail_if(garuda_segment_doorbell(r->seg, &word, &value) < 0, "no doorbell");
		if (value != r->bell) /* it rang since the last look: for every stream */
			for (int i = 0; i < NSTREAMS; i++)
				r->woke[i] = true;
		r->bell = value;
		bool moved = false;
		for (int i = 0; i < NSTREAMS; i++) {
			uint64_t v;
			if (garuda_stream_drain(r->s[i], &v) == 1) {
				moved = true;
				if (v > r->seen[i])
					r->seen[i] = v;
			}
		}
		if (moved)
			return true;
		struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };
		long w = syscall(SYS_futex, word, FUTEX_WAIT, value, &ts, NULL, 0);
		fail_if(w < 0 && errno != EAGAIN && errno != ETIMEDOUT && errno != EINTR,
			"futex: %s", strerror(errno));
		(void)w; /* whether it rang: the next look's sample says */
		return true;
	}
	}
}

/* The scenario, with garudad at sock refusing every arm past 4 under key `key`. */
static bool scenario(struct run *r, const char *sock, const char *key)
{
	struct garuda_host_stream *hs[NSTREAMS] = { 0 };
	struct gate g;
	uint64_t seq;
	bool okay = false;
	int epfd = -1;
	gate_init(&g);
	fail_if(garuda_connect_to(sock, &r->c) < 0, "connect: %s", garuda_last_error());
	if (garuda_segment_open(r->c, "host", 0, 1, &r->seg) < 0) {
		snprintf(r->err, sizeof(r->err), "segment: %s", garuda_last_error());
		goto out;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < NSTREAMS; i++) {
		if (garuda_host_stream_new(NULL, &hs[i]) < 0 ||
		    garuda_stream_new(r->seg, hs[i], r->form, &r->s[i]) < 0 ||
		    garuda_host_stream_enqueue_call(hs[i], gate_pass_, &g) < 0) {
			snprintf(r->err, sizeof(r->err), "stream %d: %s", i, garuda_last_error());
			goto out;
		}
		if (r->form == GARUDA_READINESS_EVENTFD) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
			epoll_ctl(epfd, EPOLL_CTL_ADD, garuda_stream_fd(r->s[i]), &ev);
		}
		if (r->form == GARUDA_READINESS_MESSAGE)
			garuda_stream_set_callback(r->s[i], on_ready, r);
	}
	uint32_t *bellw;
	garuda_segment_doorbell(r->seg, &bellw, &r->bell); /* before any refusal */
	if (r->form == GARUDA_READINESS_MESSAGE && garuda_dispatch(r->c) < 0) {
		snprintf(r->err, sizeof(r->err), "dispatch failed"); /* set_callback's nudges */
		goto out;
	}
	/* 10 arms, all outstanding behind the gates: 4 accepted, 6 refused (the fifth
	 * stream's first and every second one). The fifth stream's refusal may come back
	 * before its second signal, which then reports it (and enqueues nothing): signal
	 * again, that arm is refused too. */
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < NSTREAMS; i++) {
			int e = garuda_stream_signal(r->s[i], &seq);
			if (e == -GARUDA_E_QUOTA && i == NSTREAMS - 1 && k == 1 &&
			    strstr(garuda_last_error(), key))
				e = garuda_stream_signal(r->s[i], &seq);
			if (e < 0 || seq != (uint64_t)k + 1) {
				snprintf(r->err, sizeof(r->err), "signal %d of stream %d failed: %s",
					 k + 1, i, garuda_last_error());
				goto out;
			}
		}
	/* garudad has handled every ARM (and sent every refusal) once QUERY's reply, which
	 * comes after them, is here: 4 armed, 6 refused, whatever the machine's load */
	char q[600] = "";
	const char *ne = garuda_client_query(r->c, q, sizeof(q)) < 0 ? NULL : strstr(q, "\"errors\":");
	if (!ne || atoi(ne + 9) < 6) { /* 7: the fifth stream's second signal reported */
		snprintf(r->err, sizeof(r->err), "not 6 refusals: %s", q);
		goto out;
	}
	/* the refusals wake each stream in its form, while nothing has completed */
	long long end = td_now_ms() + TD_DEADLINE_MS;
	for (bool all = false; !all;) {
		if (td_now_ms() >= end) {
			snprintf(r->err, sizeof(r->err), "a refused arm never woke its stream");
			goto out;
		}
		if (!wait_form(r, epfd, 100))
			goto out;
		all = true;
		for (int i = 0; i < NSTREAMS; i++)
			all &= r->woke[i];
	}
	for (int i = 0; i < NSTREAMS; i++)
		if (r->seen[i] != 0 || garuda_stream_value(r->s[i]) != 0) {
			snprintf(r->err, sizeof(r->err), "stream %d reported %llu behind a closed gate",
				 i, (unsigned long long)r->seen[i]);
			goto out;
		}
	/* every sequence completes in the form, refused arms included */
	gate_open(&g);
	for (bool all = false; !all;) {
		if (td_now_ms() >= end) {
			snprintf(r->err, sizeof(r->err),
				 "sequences never completed in their form: %llu %llu %llu %llu %llu of 2",
				 (unsigned long long)r->seen[0], (unsigned long long)r->seen[1],
				 (unsigned long long)r->seen[2], (unsigned long long)r->seen[3],
				 (unsigned long long)r->seen[4]);
			goto out;
		}
		if (!wait_form(r, epfd, 100))
			goto out;
		all = true;
		for (int i = 0; i < NSTREAMS; i++)
			all &= r->seen[i] == 2;
	}
	/* the next signal reports the refusal with garudad's words (read off the socket
	 * before QUERY's reply above); the one after works */
	for (int i = 0; i < NSTREAMS; i++) {
		int e = garuda_stream_signal(r->s[i], &seq);
		if (e != -GARUDA_E_QUOTA || !strstr(garuda_last_error(), key)) {
			snprintf(r->err, sizeof(r->err), "stream %d: next signal gave %d (%s), text '%s'; %s",
				 i, e, garuda_strerror(e), garuda_last_error(), q);
			goto out;
		}
		if (garuda_stream_signal(r->s[i], &seq) < 0 || seq != 3 ||
		    garuda_stream_wait(r->s[i], seq, (int64_t)TD_DEADLINE_MS * NS_PER_MS) < 0) {
			snprintf(r->err, sizeof(r->err), "stream %d: signal after the report failed: %s",
				 i, garuda_last_error());
			goto out;
		}
	}
	okay = true;
out:
	gate_open(&g);
	for (int i = 0; i < NSTREAMS; i++) {
		garuda_stream_free(r->s[i]);
		if (hs[i])
			garuda_host_stream_free(hs[i]);
	}
	if (epfd >= 0)
		close(epfd);
	if (r->seg)
		garuda_segment_close(r->seg);
	garuda_disconnect(r->c);
	gate_destroy(&g);
	return okay;
}

/* Move this process into the cgroup whose cgroup.procs is procs: 0 or -errno. */
static int join_cgroup(const char *procs)
{
	FILE *f = fopen(procs, "w");
	if (!f)
		return -errno;
	bool ok = fputs("0", f) >= 0;
	ok = fclose(f) == 0 && ok;
	return ok ? 0 : -EIO;
}

static void refused_in(enum garuda_readiness form, const char *quota)
{
	char cfg[128], key[64];
	snprintf(cfg, sizeof(cfg), "\"quota\":{\"%s\":{\"armed\":4}}", quota);
	snprintf(key, sizeof(key), "quota.%s.armed", quota);
	struct gd_daemon d;
	struct cg_group grp = { 0 };
	char back[600] = "", procs[300] = "";
	bool cgroup = strcmp(quota, "cgroup") == 0;
	if (cgroup) {
		char why[256], mnt[256], root[256], self[256];
		if (cg_make(&grp, "refused", why, sizeof(why)) < 0)
			cr_skip_test("no cgroup v2 group of our own for the client: %s", why);
		cr_assert_eq(cg_mount(mnt, sizeof(mnt), root, sizeof(root), why, sizeof(why)), 0, "%s", why);
		cr_assert_eq(cg_self(self, sizeof(self)), 0);
		size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
		snprintf(back, sizeof(back), "%s%s/cgroup.procs", mnt, self + rl);
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", grp.dir);
	}
	/* garudad first, in our cgroup; then the client (this process, no fork: a TSan
	 * build cannot start threads in a child of a threaded process) in its own group,
	 * where garudad reads it at accept, and back after */
	td_start(&d, cfg);
	struct run r = { .form = form };
	bool good;
	if (cgroup && join_cgroup(procs) < 0) {
		snprintf(r.err, sizeof(r.err), "cannot join %s", grp.dir);
		good = false;
	} else {
		good = scenario(&r, d.sock, key);
	}
	if (cgroup) {
		int rb = join_cgroup(back);
		cg_remove(&grp);
		cr_assert_eq(rb, 0, "cannot go back to %s", back);
	}
	if (!good)
		gd_dump_log(&d);
	td_stop(&d);
	cr_assert(good, "%s (form %d, %s)", r.err, form, key);
}

Test(refused, eventfd_connection) { refused_in(GARUDA_READINESS_EVENTFD, "connection"); }
Test(refused, eventfd_uid) { refused_in(GARUDA_READINESS_EVENTFD, "uid"); }
Test(refused, eventfd_cgroup) { refused_in(GARUDA_READINESS_EVENTFD, "cgroup"); }
Test(refused, message_connection) { refused_in(GARUDA_READINESS_MESSAGE, "connection"); }
Test(refused, message_uid) { refused_in(GARUDA_READINESS_MESSAGE, "uid"); }
Test(refused, message_cgroup) { refused_in(GARUDA_READINESS_MESSAGE, "cgroup"); }
Test(refused, doorbell_connection) { refused_in(GARUDA_READINESS_DOORBELL, "connection"); }
Test(refused, doorbell_uid) { refused_in(GARUDA_READINESS_DOORBELL, "uid"); }
Test(refused, doorbell_cgroup) { refused_in(GARUDA_READINESS_DOORBELL, "cgroup"); }

/* The refusal of an arm of sequence k * 2^32 is that stream's refusal (reported, woken),
 * not a stray. An ARM's cookie carries only the low 32 bits of its target, 0 for such a
 * sequence, and the router took a low half of 0 for "no arm" and dropped the ERROR: no
 * readiness, no report. End to end it takes 2^32 signals to get there (the public API
 * starts every stream at 0 and signals one sequence at a time; minutes even without
 * a daemon), so the classification is tested where libgaruda keeps it, pure, in
 * client/stream.h (the library exports nothing else): which sequence of a stream
 * that signalled up to `signalled` an ERROR's cookie names, 0 when none (a stray). */
Test(refused, arm_of_sequence_k_times_2_32_is_the_streams)
{
	static const uint64_t W = 1ull << 32;
	static const struct {
		uint64_t signalled;
		uint32_t low;
		uint64_t target; /* 0: a stray */
	} cases[] = {
		/* the bug: a stream at k * 2^32, its arm's cookie says 0 */
		{ W, 0, W },
		{ W + 5, 0, W },
		{ 3 * W, 0, 3 * W },
		{ 3 * W + 9, 0, 3 * W },
		/* around the wrap of the low half */
		{ W + 5, 5, W + 5 },
		{ W + 5, 1, W + 1 },
		{ W + 5, 0xffffffffu, W - 1 },
		{ W, 0xffffffffu, W - 1 },
		{ W - 1, 0xffffffffu, W - 1 },
		{ W + 5, 6, 0 },                 /* above what it signalled */
		{ W, 1, 0 },
		{ W + 0x7fffffffu, 0, W },       /* 2^31 - 1 behind: still its arm */
		{ W + 0x80000000u, 0, 0 },       /* 2^31 behind: not */
		/* a young stream: no arm of 0 is ever sent */
		{ 5, 0, 0 },
		{ 5, 5, 5 },
		{ 5, 1, 1 },
		{ 5, 6, 0 },
		{ 1, 0, 0 },
		{ 1, 1, 1 },
		{ 0, 0, 0 },
		{ 0, 1, 0 },
		{ 0, 0xffffffffu, 0 },
		{ 0x7fffffffu, 0, 0 },
		{ 0x80000000u, 0, 0 },           /* would be 2^31 behind */
		{ 0x80000001u, 2, 2 },           /* 2^31 - 1 behind */
		{ 0x80000001u, 1, 0 },           /* 2^31 behind */
		{ UINT64_MAX, 0xffffffffu, UINT64_MAX },
		{ UINT64_MAX, 0x80000000u, UINT64_MAX - 0x7fffffffu },
		{ UINT64_MAX, 0, 0 },            /* 2^32 - 1 behind */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t got = stream_arm_target(cases[i].signalled, cases[i].low);
		cr_assert_eq(got, cases[i].target,
			     "signalled %#llx, cookie's low half %#x: arm %#llx, expected %#llx%s",
			     (unsigned long long)cases[i].signalled, cases[i].low,
			     (unsigned long long)got, (unsigned long long)cases[i].target,
			     cases[i].target ? "" : " (a stray)");
	}
}
