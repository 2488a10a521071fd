/* plan_latency.c — what a wait plan costs and gains on one host stream: store->wake
 * latency (p50, p99) and the waiting thread's CPU time per completion, for kernels of
 * a fixed length. A measuring aid (issue 11), not a test: it prints numbers only.
 *
 *   plan_latency SOCKET KERNEL_US PLAN|default N
 *   e.g. plan_latency /run/garuda/garuda.sock 1000 \
 *          'flag:park_us=10000,backstop_us=1000+predict:margin_us=150,min_sleep_us=20,max_sleep_us=50000,window=8' 400
 */
#include <garuda/garuda.h>
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

static uint64_t thread_cpu_us(void)
{
	struct rusage r;
	getrusage(RUSAGE_THREAD, &r);
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

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s SOCKET KERNEL_US PLAN|default N\n", argv[0]);
		return 2;
	}
	uint64_t kernel_ns = strtoull(argv[2], NULL, 10) * 1000ull;
	const char *plan = argv[3];
	int n = atoi(argv[4]);
	if (n < 1)
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
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));
	if (!lat)
		return 1;
	uint64_t cpu0 = 0;
	for (int i = -10; i < n; i++) { /* 10 rounds of warm-up (and learning) */
		if (i == 0)
			cpu0 = thread_cpu_us();
		uint64_t stamp = 0, seq;
		if ((r = garuda_host_stream_enqueue_work(hs, kernel_ns)) < 0 ||
		    (r = garuda_host_stream_enqueue_stamp(hs, &stamp)) < 0 ||
		    (r = garuda_stream_signal(s, &seq)) < 0 || (r = garuda_stream_wait(s, seq, -1)) < 0)
			return die("round", r);
		uint64_t woke = now_ns();
		if (i >= 0)
			lat[i] = woke - stamp;
	}
	uint64_t cpu = thread_cpu_us() - cpu0;
	qsort(lat, (size_t)n, sizeof(*lat), cmp_u64);
	struct garuda_stream_stats st;
	garuda_stream_stats(s, &st);
	printf("kernel %llu us  plan %s\n  store->wake p50 %.1f us  p99 %.1f us  waiter CPU per "
	       "completion %.1f us  exact %llu censored %llu sleeps %llu\n",
	       (unsigned long long)(kernel_ns / 1000), plan, (double)lat[n / 2] / 1e3,
	       (double)lat[(size_t)n * 99 / 100] / 1e3, (double)cpu / n,
	       (unsigned long long)st.exact, (unsigned long long)st.censored,
	       (unsigned long long)st.sleeps);
	free(lat);
	garuda_stream_free(s);
	garuda_host_stream_free(hs);
	garuda_segment_close(seg);
	garuda_disconnect(c);
	return 0;
}
