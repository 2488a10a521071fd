/* workload.c — the demo's client process: a pretend inference server with several
 * simulated GPU streams (host backend). Each stream runs "kernels" of random length
 * back to back with a signal behind each; one epoll loop waits on all streams'
 * eventfds and queues the next kernel as each completes, the way a server would
 * launch the next batch. It measures kernel-end to wake latency (a stamp the stream
 * takes right before its store) and prints a summary when stopped.
 *
 *   GARUDA_SOCKET=/path/garuda.sock ./workload [-s streams] [-t seconds] [-k max_kernel_us]
 *
 * Runs until SIGINT/SIGTERM or -t seconds. Exit 0 when every signalled sequence was
 * seen exactly once.
 */
#include <errno.h>
#include <garuda/garuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define MAX_STREAMS 64
#define MAX_SAMPLES 200000

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct lane {
	struct garuda_host_stream *gpu;
	struct garuda_stream *stream;
	uint64_t stamp;  /* kernel end, written by the stream's worker */
	uint64_t signalled, seen;
};

static int fail(const char *what, int r)
{
	fprintf(stderr, "workload[%d]: %s: %s\n", (int)getpid(), what, garuda_strerror(r));
	return 1;
}

/* queue one kernel of random length, a stamp, and the signal behind them */
static int launch(struct lane *l, unsigned max_us, unsigned *seed)
{
	uint64_t us = 50 + (uint64_t)(rand_r(seed) % (max_us > 50 ? max_us - 50 : 1));
	int r = garuda_host_stream_enqueue_work(l->gpu, us * 1000);
	if (r == 0)
		r = garuda_host_stream_enqueue_stamp(l->gpu, &l->stamp);
	if (r == 0)
		r = garuda_stream_signal(l->stream, &l->signalled);
	return r;
}

int main(int argc, char **argv)
{
	int nstreams = 4, seconds = 0, opt;
	unsigned max_us = 2000, seed = (unsigned)getpid();
	while ((opt = getopt(argc, argv, "s:t:k:")) != -1) {
		switch (opt) {
		case 's': nstreams = atoi(optarg); break;
		case 't': seconds = atoi(optarg); break;
		case 'k': max_us = (unsigned)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: workload [-s streams] [-t seconds] [-k max_kernel_us]\n");
			return 2;
		}
	}
	if (nstreams < 1 || nstreams > MAX_STREAMS || max_us < 1)
		return fail("arguments", -EINVAL);
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	struct garuda_client *client;
	struct garuda_seg *seg;
	struct lane lane[MAX_STREAMS] = { 0 };
	uint64_t *lat = calloc(MAX_SAMPLES, sizeof(*lat));
	size_t nlat = 0;
	uint64_t completions = 0;
	int r, ep = epoll_create1(EPOLL_CLOEXEC);

	if (!lat || ep < 0)
		return fail("setup", -ENOMEM);
	if ((r = garuda_connect(&client)) < 0) { /* $GARUDA_SOCKET, your own garudad, or the system's */
		fprintf(stderr, "workload: %s\n", garuda_last_error()); /* which socket, what to do */
		return 1;
	}
	if ((r = garuda_segment_open(client, "host", 0, (uint32_t)(nstreams + 7) / 8, &seg)) < 0)
		return fail("segment", r);
	for (int i = 0; i < nstreams; i++) {
		if ((r = garuda_host_stream_new(NULL, &lane[i].gpu)) < 0 ||
		    (r = garuda_stream_new(seg, lane[i].gpu, GARUDA_READINESS_EVENTFD, &lane[i].stream)) < 0)
			return fail("stream", r);
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, garuda_stream_fd(lane[i].stream), &ev) < 0)
			return fail("epoll_ctl", -errno);
		if ((r = launch(&lane[i], max_us, &seed)) < 0)
			return fail("launch", r);
	}

	uint64_t start = now_ns(), deadline = seconds > 0 ? start + (uint64_t)seconds * 1000000000ull : 0;
	int bad = 0;
	while (!stop && (!deadline || now_ns() < deadline)) {
		struct epoll_event ev[MAX_STREAMS];
		int n = epoll_wait(ep, ev, MAX_STREAMS, 200);
		if (n < 0 && errno != EINTR)
			return fail("epoll_wait", -errno);
		uint64_t woke = now_ns();
		for (int e = 0; e < n; e++) {
			struct lane *l = &lane[ev[e].data.u32];
			uint64_t done;
			if (garuda_stream_drain(l->stream, &done) != 1)
				continue;
			if (done != l->seen + 1 || done != l->signalled)
				bad++; /* one kernel in flight per stream: exactly the next one */
			l->seen = done;
			completions++;
			uint64_t stamp = __atomic_load_n(&l->stamp, __ATOMIC_ACQUIRE);
			if (nlat < MAX_SAMPLES && woke > stamp)
				lat[nlat++] = woke - stamp;
			if (!stop && (r = launch(l, max_us, &seed)) < 0)
				return fail("launch", r);
		}
	}
	double secs = (double)(now_ns() - start) / 1e9;
	qsort(lat, nlat, sizeof(*lat), cmp_u64);
	printf("workload[%d]: %d streams, %llu completions in %.1f s (%.0f/s), kernel-end to wake "
	       "p50 %.1f us p99 %.1f us, %d out of order\n",
	       (int)getpid(), nstreams, (unsigned long long)completions, secs, completions / secs,
	       nlat ? lat[nlat / 2] / 1e3 : 0.0, nlat ? lat[nlat * 99 / 100] / 1e3 : 0.0, bad);

	for (int i = 0; i < nstreams; i++) {
		garuda_host_stream_drain(lane[i].gpu);
		garuda_stream_free(lane[i].stream);
		garuda_host_stream_free(lane[i].gpu);
	}
	close(ep);
	free(lat);
	garuda_segment_close(seg);
	garuda_disconnect(client);
	return bad ? 1 : 0;
}
