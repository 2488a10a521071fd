/* gpu_latency.c — kernel-end to client-wake latency on a real GPU (tests/gpu/run.sh).
 *
 * One mode per run (the context's scheduling flag is fixed per process). Each
 * iteration launches a kernel that sleeps a known time on a CUDA stream, then
 * garuda_stream_signal() enqueues cuStreamWriteValue64 of the next sequence into a
 * garuda segment word behind it (libgaruda, cuda backend), and the main thread waits:
 *
 *   garuda-eventfd | garuda-message | garuda-doorbell
 *       garuda_stream_wait() through garudad with that readiness form, no spin phase;
 *   sync-spin | sync-yield | sync-blocking
 *       cudaStreamSynchronize() under CU_CTX_SCHED_SPIN / _YIELD / _BLOCKING_SYNC.
 *
 * "Kernel end" is when the store becomes visible to the host: a reference thread,
 * pinned to the last CPU, spins on the word with acquire loads and stamps each new
 * value. The latency of an iteration is the waiter's wake time minus that stamp (the
 * same store and the same observer for every mode, so the modes compare fairly). A
 * sample where the waiter woke more than OBSERVER_SLACK_NS before the observer saw the
 * store means the observer was descheduled: it is left out and counted as "late".
 * Prints one line: mode, n (kept), late, p50, p99, mean, min, max in microseconds.
 *
 * Promises: never hangs (every wait has a timeout); exits non-zero with the failing
 * call named. Build: run.sh (nvcc for gpu_kernel.cu); in CI it is compiled against
 * gpu_stub.c only, to keep it building.
 */
#include <errno.h>
#include <garuda/garuda.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu_kernel.h"

#define WAIT_TIMEOUT_NS 5000000000ll /* 5 s: far beyond any kernel we launch */
#define OBSERVER_SLACK_NS 5000        /* a spinning observer is never later than this */

struct mode {
	const char *name;
	int garuda;                /* wait through garudad */
	enum garuda_readiness form;
	int sched;                 /* enum gk_sched */
};

static const struct mode modes[] = {
	{ "garuda-eventfd", 1, GARUDA_READINESS_EVENTFD, GK_SCHED_AUTO },
	{ "garuda-message", 1, GARUDA_READINESS_MESSAGE, GK_SCHED_AUTO },
	{ "garuda-doorbell", 1, GARUDA_READINESS_DOORBELL, GK_SCHED_AUTO },
	{ "sync-spin", 0, GARUDA_READINESS_POLL, GK_SCHED_SPIN },
	{ "sync-yield", 0, GARUDA_READINESS_POLL, GK_SCHED_YIELD },
	{ "sync-blocking", 0, GARUDA_READINESS_POLL, GK_SCHED_BLOCKING_SYNC },
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The reference observer: stamps[v] = when the word was first seen at v. */
struct observer {
	struct garuda_stream *stream;
	uint64_t *stamps;
	uint64_t max_seq;
	_Atomic uint64_t seen; /* highest value stamped */
	atomic_bool stop;
};

static void *observe(void *arg)
{
	struct observer *o = arg;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu > 1) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)(ncpu - 1), &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	uint64_t last = 0;
	while (!atomic_load_explicit(&o->stop, memory_order_relaxed)) {
		uint64_t v = garuda_stream_value(o->stream);
		if (v != last) {
			uint64_t t = now_ns();
			if (v <= o->max_seq)
				o->stamps[v] = t;
			last = v;
			atomic_store_explicit(&o->seen, v, memory_order_release);
		}
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int64_t percentile(const int64_t *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return sorted[i < n ? i : n - 1];
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpu_latency --mode=MODE [--iterations=N] [--warmup=N] [--kernel-us=N]\n"
		   "                   [--device=N] [--header]\nmodes:");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(f, " %s", modes[i].name);
	fprintf(f, "\nThe daemon socket is $GARUDA_SOCKET.\n");
}

#define FAIL(what, err, text)                                                          \
	do {                                                                            \
		fprintf(stderr, "gpu_latency: %s: %s (%d)\n", what, text, err);         \
		return 1;                                                               \
	} while (0)

int main(int argc, char **argv)
{
	const struct mode *m = NULL;
	long iterations = 1000, warmup = 50, kernel_us = 100, device = 0;
	int header = 0;
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "kernel-us", required_argument, NULL, 'k' },
		{ "device", required_argument, NULL, 'd' },
		{ "header", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
				if (strcmp(optarg, modes[i].name) == 0)
					m = &modes[i];
			if (!m) {
				fprintf(stderr, "gpu_latency: unknown mode '%s'\n", optarg);
				usage(stderr);
				return 2;
			}
			break;
		case 'n':
			iterations = strtol(optarg, NULL, 10);
			break;
		case 'w':
			warmup = strtol(optarg, NULL, 10);
			break;
		case 'k':
			kernel_us = strtol(optarg, NULL, 10);
			break;
		case 'd':
			device = strtol(optarg, NULL, 10);
			break;
		case 'H':
			header = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (header) {
		printf("%-16s %6s %5s %9s %9s %9s %9s %9s\n", "mode", "n", "late", "p50_us",
		       "p99_us", "mean_us", "min_us", "max_us");
		if (!m)
			return 0;
	}
	if (!m || iterations < 1 || warmup < 0 || kernel_us < 0 || device < 0) {
		usage(stderr);
		return 2;
	}

	int r = gk_init((int)device, m->sched);
	if (r)
		FAIL("CUDA init (primary context flags)", r, gk_error_string(r));

	struct garuda_client *client;
	if ((r = garuda_connect(&client)) < 0)
		FAIL("garuda_connect ($GARUDA_SOCKET)", r, garuda_strerror(r));
	struct garuda_seg *seg;
	if ((r = garuda_segment_open(client, "cuda", (int)device, 1, &seg)) < 0)
		FAIL("garuda_segment_open(cuda)", r, garuda_strerror(r));
	void *cs;
	if ((r = gk_stream_new(&cs)))
		FAIL("cudaStreamCreate", r, gk_error_string(r));
	struct garuda_stream *gs;
	if ((r = garuda_stream_new(seg, cs, m->form, &gs)) < 0)
		FAIL("garuda_stream_new", r, garuda_strerror(r));
	/* no spin phase: the waiter blocks on the readiness form at once; a backstop far
	 * above the kernel time keeps stream queries out of the measurement */
	if ((r = garuda_stream_set_wait(gs, 0, 100000000)) < 0)
		FAIL("garuda_stream_set_wait", r, garuda_strerror(r));

	size_t total = (size_t)(warmup + iterations);
	struct observer obs = { .stream = gs, .max_seq = total };
	obs.stamps = calloc(total + 1, sizeof(*obs.stamps));
	int64_t *lat = calloc((size_t)iterations, sizeof(*lat));
	if (!obs.stamps || !lat)
		FAIL("calloc", -ENOMEM, "out of memory");
	atomic_init(&obs.seen, 0);
	atomic_init(&obs.stop, false);
	pthread_t t;
	if ((r = pthread_create(&t, NULL, observe, &obs)))
		FAIL("pthread_create", r, strerror(r));

	int status = 0;
	size_t kept = 0, late = 0;
	for (size_t i = 0; i < total; i++) {
		uint64_t seq;
		if ((r = gk_launch_sleep(cs, (uint64_t)kernel_us * 1000))) {
			fprintf(stderr, "gpu_latency: kernel launch: %s\n", gk_error_string(r));
			status = 1;
			break;
		}
		if ((r = garuda_stream_signal(gs, &seq)) < 0) {
			fprintf(stderr, "gpu_latency: garuda_stream_signal: %s\n", garuda_strerror(r));
			status = 1;
			break;
		}
		if (m->garuda) {
			r = garuda_stream_wait(gs, seq, WAIT_TIMEOUT_NS);
			if (r < 0) {
				fprintf(stderr, "gpu_latency: garuda_stream_wait: %s\n",
					garuda_strerror(r));
				status = 1;
				break;
			}
		} else if ((r = gk_stream_sync(cs))) {
			fprintf(stderr, "gpu_latency: cudaStreamSynchronize: %s\n", gk_error_string(r));
			status = 1;
			break;
		}
		uint64_t woke = now_ns();
		uint64_t deadline = woke + 1000000000ull;
		while (atomic_load_explicit(&obs.seen, memory_order_acquire) < seq) {
			if (now_ns() > deadline) {
				fprintf(stderr, "gpu_latency: the observer never saw sequence %llu\n",
					(unsigned long long)seq);
				status = 1;
				break;
			}
		}
		if (status)
			break;
		if (i < (size_t)warmup || seq > total)
			continue;
		int64_t d = (int64_t)(woke - obs.stamps[seq]);
		if (d < -OBSERVER_SLACK_NS)
			late++;
		else
			lat[kept++] = d;
	}
	atomic_store(&obs.stop, true);
	pthread_join(t, NULL);

	if (status == 0 && kept == 0) {
		fprintf(stderr, "gpu_latency: every sample had a late observer\n");
		status = 1;
	}
	if (status == 0) {
		size_t n = kept;
		qsort(lat, n, sizeof(*lat), cmp_i64);
		double sum = 0;
		for (size_t i = 0; i < n; i++)
			sum += (double)lat[i];
		printf("%-16s %6zu %5zu %9.2f %9.2f %9.2f %9.2f %9.2f\n", m->name, n, late,
		       (double)percentile(lat, n, 0.50) / 1e3, (double)percentile(lat, n, 0.99) / 1e3,
		       sum / (double)n / 1e3, (double)lat[0] / 1e3, (double)lat[n - 1] / 1e3);
	}

	garuda_stream_free(gs);
	garuda_segment_close(seg);
	garuda_disconnect(client);
	gk_stream_free(cs);
	free(lat);
	free(obs.stamps);
	return status;
}
