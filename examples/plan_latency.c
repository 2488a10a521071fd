/* plan_latency.c — what a wait plan costs and gains on one host stream: store->wake
 * latency (p50, p99) and the waiting thread's CPU time per completion, for kernels of
 * a fixed length. A measuring aid (issue 11), not a test: it prints numbers only.
 *
 *   plan_latency SOCKET KERNEL_US PLAN|default N [QUEUED [wait|fd]]
 *   e.g. plan_latency /run/garuda/garuda.sock 1000 \
 *          'flag:park_us=10000,backstop_us=1000+predict:margin_us=150,min_sleep_us=20,max_sleep_us=50000,window=8' 400
 *
 * QUEUED (default 1): kernels kept in flight, each with its signal behind it (a
 * pipelined stream). wait (default): each completion awaited with garuda_stream_wait();
 * fd: poll() on garuda_stream_fd(), then garuda_stream_drain(), as an event loop does.
 * With GARUDA_FALLBACK=reactor and a SOCKET nobody serves, fd measures libgaruda's
 * in-process reactor (docs/plans.md, "Giving way after a find"). With fd, the CPU
 * figure is the whole process's (the reactor's thread and the host stream's worker
 * included), per completion.
 */
#include <errno.h>
#include <garuda/garuda.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t cpu_us(int who) /* RUSAGE_THREAD or RUSAGE_SELF */
{
	struct rusage r;
	getrusage(who, &r);
	return (uint64_t)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1000000ull +
	       (uint64_t)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int die(const char *what, int r)
{
	fprintf(stderr, "plan_latency: %s: %s\n", what, garuda_strerror(r));
	return 1;
}

/* one kernel and its signal behind it; *stamp is set when the kernel ends */
static int enqueue(struct garuda_host_stream *hs, struct garuda_stream *s, uint64_t kernel_ns,
		   uint64_t *stamp)
{
	uint64_t seq;
	int r;
	if ((r = garuda_host_stream_enqueue_work(hs, kernel_ns)) < 0 ||
	    (r = garuda_host_stream_enqueue_stamp(hs, stamp)) < 0)
		return r;
	return garuda_stream_signal(s, &seq);
}

int main(int argc, char **argv)
{
	if (argc < 5 || argc > 7 || (argc == 7 && strcmp(argv[6], "wait") != 0 && strcmp(argv[6], "fd") != 0)) {
		fprintf(stderr, "usage: %s SOCKET KERNEL_US PLAN|default N [QUEUED [wait|fd]]\n", argv[0]);
		return 2;
	}
	uint64_t kernel_ns = strtoull(argv[2], NULL, 10) * 1000ull;
	const char *plan = argv[3];
	int n = atoi(argv[4]);
	int queued = argc > 5 ? atoi(argv[5]) : 1;
	bool by_fd = argc > 6 && strcmp(argv[6], "fd") == 0;
	if (n < 1 || queued < 1)
		return 2;
	struct garuda_client *c;
	struct garuda_seg *seg;
	struct garuda_host_stream *hs;
	struct garuda_stream *s;
	int r;
	if ((r = garuda_connect_to(argv[1], &c)) < 0)
		return die("connect", r);
	if ((r = garuda_segment_open(c, "host", 0, 1, &seg)) < 0)
		return die("segment_open", r);
	if ((r = garuda_host_stream_new(NULL, &hs)) < 0)
		return die("host_stream_new", r);
	if ((r = garuda_stream_new(seg, hs, GARUDA_READINESS_EVENTFD, &s)) < 0)
		return die("stream_new", r);
	if (strcmp(plan, "default") != 0 && (r = garuda_stream_set_plan(s, plan)) < 0) {
		fprintf(stderr, "plan_latency: %s\n", garuda_plan_message());
		return 1;
	}
	/* sequence k (1-based) is completion k - 1 - 10: 10 rounds of warm-up (and learning) */
	int total = n + 10;
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));
	uint64_t *stamp = calloc((size_t)total + 1, sizeof(*stamp));
	if (!lat || !stamp)
		return 1;
	int who = by_fd ? RUSAGE_SELF : RUSAGE_THREAD;
	uint64_t cpu0 = 0, issued = 0, done = 0;
	while (issued < (uint64_t)queued && issued < (uint64_t)total)
		if ((r = enqueue(hs, s, kernel_ns, &stamp[++issued])) < 0)
			return die("enqueue", r);
	while (done < (uint64_t)total) {
		uint64_t reached = done + 1;
		if (by_fd) {
			struct pollfd p = { .fd = garuda_stream_fd(s), .events = POLLIN };
			if (poll(&p, 1, -1) < 0)
				return die("poll", -errno);
			if ((r = garuda_stream_drain(s, &reached)) < 0)
				return die("drain", r);
		} else if ((r = garuda_stream_wait(s, reached, -1)) < 0) {
			return die("wait", r);
		}
		uint64_t woke = now_ns();
		if (reached > issued)
			reached = issued;
		for (; done < reached; done++) {
			if (done == 10)
				cpu0 = cpu_us(who);
			/* the stamp is stored before the word: visible once the word is */
			if (done >= 10)
				lat[done - 10] = woke - __atomic_load_n(&stamp[done + 1], __ATOMIC_ACQUIRE);
		}
		while (issued < (uint64_t)total && issued < done + (uint64_t)queued)
			if ((r = enqueue(hs, s, kernel_ns, &stamp[++issued])) < 0)
				return die("enqueue", r);
	}
	uint64_t cpu = cpu_us(who) - cpu0;
	qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
	struct garuda_stream_stats st;
	garuda_stream_stats(s, &st);
	printf("kernel %llu us x%d queued  plan %s  %s\n  store->wake p50 %.1f us  p99 %.1f us  %s CPU per "
	       "completion %.1f us  exact %llu censored %llu sleeps %llu\n",
	       (unsigned long long)(kernel_ns / 1000), queued, plan, by_fd ? "fd" : "wait", (double)lat[n / 2] / 1e3,
	       (double)lat[(size_t)n * 99 / 100] / 1e3, by_fd ? "process" : "waiter", (double)cpu / n,
	       (unsigned long long)st.exact, (unsigned long long)st.censored,
	       (unsigned long long)st.sleeps);
	free(lat);
	free(stamp);
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	garuda_segment_close(seg);
	garuda_disconnect(c);
	return 0;
}
