/* gpu_latency.c — kernel-end to client-wake latency and CPU cost of each way of
 * waiting on a GPU stream (tests/gpu/run.sh).
 *
 * One way of waiting ("mode") per run (the context's scheduling flag is fixed per
 * process). Each iteration launches a kernel that sleeps a known time on a CUDA
 * stream, then garuda_stream_signal() enqueues cuStreamWriteValue64 of the next
 * sequence into a garuda segment word behind it (libgaruda, cuda backend), and the
 * waiting thread waits:
 *
 *   garuda-eventfd | garuda-message | garuda-doorbell
 *       garuda_stream_wait() through garudad with that readiness form, no spin phase;
 *   sync-spin | sync-yield | sync-blocking
 *       cudaStreamSynchronize() under CU_CTX_SCHED_SPIN / _YIELD / _BLOCKING_SYNC.
 *
 * "Kernel end" is when the store becomes visible to the host: a reference thread,
 * alone on the last CPU (pin()), spins on the word with acquire loads and stamps each new
 * value, and every value it passed over between two loads (a pipeline stores several
 * back to back), with the time of the load that showed it. The latency of an iteration is the waiter's wake time minus that stamp (the
 * same store and the same observer for every mode, so the modes compare fairly). A
 * sample where the waiter woke more than OBSERVER_SLACK_NS before the observer saw the
 * store means the observer was descheduled: it is left out and counted as "late".
 *
 * Single process (default): --iterations kernels of --kernel-us, after --warmup.
 * --queued=N (pipelined): each iteration queues N kernels, each signalled behind the
 * one before, then waits for each sequence in order (garuda modes: one wake, one sample
 * per sequence; cudaStreamSynchronize: one sync, a sample of the last).
 * Prints mode, n (kept), late, p50, p99, mean, min, max in microseconds.
 *
 * Several processes (--procs=N): the program forks N children before touching CUDA;
 * each has its own context, stream, garuda client and segment, warms up, and all start
 * together and run back-to-back kernels of --kernel-us for --seconds. Child 0 also
 * runs the observer and gives the latency; the CPU time of every child (its whole
 * process, less child 0's observer thread) and of garudad (--daemon-pid, from
 * /proc/PID/task/TID/schedstat) is taken over the same window. Prints mode, procs,
 * kernel_us, completions/s, n and late (as above), p50, p99 (us), client CPU seconds
 * per 1,000 completions and as cores, garudad CPU seconds per 1,000 completions.
 *
 * --json=FILE appends one JSON object (one line) per run with the same numbers.
 * --check (run.sh --check, over the fake): a run where the observer was late for every
 * sample (a loaded machine descheduled it) still passes; the observer must still see
 * every store. Without it such a run fails: its table would mean nothing.
 *
 * Promises: never hangs (every wait has a timeout); exits non-zero with the failing
 * call named, or when the run leaked an fd (every fd open at the end was open at the
 * start, but those the CUDA driver opens for its context, kept until the process
 * exits). Built by meson (tests/gpu/meson.build): with nvcc against
 * gpu_kernel.cu (the real check), and always against gpu_stub.c and gpu_fake.c.
 */
#include <dirent.h>
#include <errno.h>
#include <garuda/garuda.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdscan.h"
#include "gpu_kernel.h"

#define WAIT_TIMEOUT_NS 5000000000ll /* 5 s: far beyond any kernel we launch */
#define OBSERVER_SLACK_NS 5000        /* a spinning observer is never later than this */
#define MAX_PROCS 256
#define MAX_QUEUED 64 /* --queued */
#define START_TIMEOUT_NS 120000000000ull /* children's CUDA init + warm-up */

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

struct opts {
	const struct mode *m;
	long iterations, warmup, kernel_us, device, procs;
	long queued; /* kernels queued per round (1: one at a time) */
	double seconds;
	long daemon_pid;
	const char *json;
	int check; /* a rehearsal: a run with no on-time sample passes */
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* ---- the fd-leak check (tests/common/fdscan.h) ---------------------------------- */

static unsigned char fds_allowed[FDSCAN_MAX]; /* open at the start, or the CUDA driver's */

/* the driver's device files, opened as it needs them */
static bool driver_fd(const char *target)
{
	return strncmp(target, "/dev/nvidia", 11) == 0;
}

/* The reference observer: stamps[v] = when the word was first seen at v or beyond (a
 * value the observer did not see itself, passed over between two loads, is stamped
 * with the load that first showed it reached: what a waiter for v waits for). */
struct observer {
	struct garuda_stream *stream;
	uint64_t *stamps;
	uint64_t max_seq;
	_Atomic uint64_t seen; /* highest value stamped */
	atomic_bool stop;
	pthread_t thread;
};

/* The observer runs alone on the last CPU: it pins itself there, and every measuring
 * process keeps its other threads (and those CUDA and libgaruda start later, which
 * inherit the mask) off it, where there are more than 2 CPUs. Best effort. */
static void pin(int observer)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 2 || ncpu > CPU_SETSIZE || (!observer && ncpu < 3))
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	if (observer)
		CPU_SET((int)(ncpu - 1), &set);
	else
		for (int i = 0; i < ncpu - 1; i++)
			CPU_SET(i, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *observe(void *arg)
{
	struct observer *o = arg;
	pin(1);
	uint64_t last = 0;
	while (!atomic_load_explicit(&o->stop, memory_order_relaxed)) {
		uint64_t v = garuda_stream_value(o->stream);
		if (v != last) {
			uint64_t t = now_ns();
			for (uint64_t s = last + 1; s <= v && s <= o->max_seq; s++)
				if (!o->stamps[s])
					o->stamps[s] = t;
			if (v <= o->max_seq && !o->stamps[v])
				o->stamps[v] = t;
			last = v;
			atomic_store_explicit(&o->seen, v, memory_order_release);
		}
	}
	return NULL;
}

/* CPU time of the observer thread so far (ns), to leave it out of the client's. */
static uint64_t observer_cpu_ns(const struct observer *o)
{
	clockid_t id;
	if (!o || pthread_getcpuclockid(o->thread, &id))
		return 0;
	return clock_ns(id);
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

/* One process's measuring state: its CUDA stream, garuda stream, optional observer
 * and latency samples (lat has cap entries). */
struct waiter {
	const struct mode *m;
	void *cs;
	struct garuda_client *client;
	struct garuda_seg *seg;
	struct garuda_stream *gs;
	struct observer *obs;
	int64_t *lat;
	size_t cap, kept, late;
	uint64_t completions;
};

#define FAIL(what, err, text)                                                          \
	do {                                                                            \
		fprintf(stderr, "gpu_latency: %s: %s (%d)\n", what, text, err);         \
		return 1;                                                               \
	} while (0)

/* CUDA context, garuda client, segment and stream for mode m; observer when
 * max_seq > 0. Returns 0 or 1 (printed why). */
static int waiter_open(struct waiter *w, const struct mode *m, int device, uint64_t max_seq)
{
	*w = (struct waiter){ .m = m };
	pin(0);
	int r = gk_init(device, m->sched);
	if (r)
		FAIL("CUDA init (primary context flags)", r, gk_error_string(r));
	fdscan(0, fds_allowed); /* the driver's, for its context: open until we exit */
	if ((r = garuda_connect(&w->client)) < 0)
		FAIL("garuda_connect ($GARUDA_SOCKET)", r, garuda_strerror(r));
	if ((r = garuda_segment_open(w->client, "cuda", device, 1, &w->seg)) < 0)
		FAIL("garuda_segment_open(cuda)", r, garuda_strerror(r));
	if ((r = gk_stream_new(&w->cs)))
		FAIL("cudaStreamCreate", r, gk_error_string(r));
	if ((r = garuda_stream_new(w->seg, w->cs, m->form, &w->gs)) < 0)
		FAIL("garuda_stream_new", r, garuda_strerror(r));
	/* no spin phase: the waiter blocks on the readiness form at once; a backstop far
	 * above the kernel time keeps stream queries out of the measurement */
	if ((r = garuda_stream_set_wait(w->gs, 0, 100000000)) < 0)
		FAIL("garuda_stream_set_wait", r, garuda_strerror(r));
	if (max_seq == 0)
		return 0;
	w->obs = calloc(1, sizeof(*w->obs));
	if (!w->obs)
		FAIL("calloc", -ENOMEM, "out of memory");
	w->obs->stream = w->gs;
	w->obs->max_seq = max_seq;
	w->obs->stamps = calloc(max_seq + 1, sizeof(*w->obs->stamps));
	if (!w->obs->stamps)
		FAIL("calloc", -ENOMEM, "out of memory");
	atomic_init(&w->obs->seen, 0);
	atomic_init(&w->obs->stop, false);
	if ((r = pthread_create(&w->obs->thread, NULL, observe, w->obs))) {
		free(w->obs->stamps);
		free(w->obs);
		w->obs = NULL;
		FAIL("pthread_create", r, strerror(r));
	}
	return 0;
}

static void waiter_close(struct waiter *w)
{
	if (w->obs) {
		atomic_store(&w->obs->stop, true);
		pthread_join(w->obs->thread, NULL);
		free(w->obs->stamps);
		free(w->obs);
	}
	garuda_stream_free(w->gs);
	garuda_segment_close(w->seg);
	garuda_disconnect(w->client);
	if (w->cs)
		gk_stream_free(w->cs);
}

/* The latency of sequence seq, woken at woke: recorded when record and there is an
 * observer with room. 0, 1 (printed why) or 2 (the observer's stamps are used up). */
static int record_wake(struct waiter *w, uint64_t seq, uint64_t woke, int record)
{
	w->completions++;
	if (!w->obs)
		return 0;
	uint64_t deadline = woke + 1000000000ull;
	while (atomic_load_explicit(&w->obs->seen, memory_order_acquire) < seq)
		if (now_ns() > deadline) {
			fprintf(stderr, "gpu_latency: the observer never saw sequence %llu\n",
				(unsigned long long)seq);
			return 1;
		}
	if (seq >= w->obs->max_seq)
		return 2;
	if (!record || w->kept >= w->cap)
		return 0;
	int64_t d = (int64_t)(woke - w->obs->stamps[seq]);
	if (d < -OBSERVER_SLACK_NS)
		w->late++;
	else
		w->lat[w->kept++] = d;
	return 0;
}

/* One round: `queued` kernels, each launched and signalled behind the one before (a
 * pipeline on the stream), then waited for in order: garuda modes wait for each
 * sequence (each wake is a sample), cudaStreamSynchronize once for all (its one wake
 * is a sample of the last). Returns 0, or 1 (printed why); 2 when the observer's
 * stamps are used up (the caller stops). */
static int iterate(struct waiter *w, long kernel_us, long queued, int record)
{
	uint64_t seq[MAX_QUEUED];
	int r;
	for (long k = 0; k < queued; k++) {
		if ((r = gk_launch_sleep(w->cs, (uint64_t)kernel_us * 1000)))
			FAIL("kernel launch", r, gk_error_string(r));
		if ((r = garuda_stream_signal(w->gs, &seq[k])) < 0)
			FAIL("garuda_stream_signal", r, garuda_strerror(r));
	}
	for (long k = 0; k < queued; k++) {
		if (w->m->garuda) {
			if ((r = garuda_stream_wait(w->gs, seq[k], WAIT_TIMEOUT_NS)) < 0)
				FAIL("garuda_stream_wait", r, garuda_strerror(r));
		} else if (k < queued - 1) {
			w->completions++; /* covered by the one synchronize below */
			continue;
		} else if ((r = gk_stream_sync(w->cs))) {
			FAIL("cudaStreamSynchronize", r, gk_error_string(r));
		}
		if ((r = record_wake(w, seq[k], now_ns(), record)))
			return r;
	}
	return 0;
}

struct summary {
	double p50, p99, mean, min, max; /* us */
};

static struct summary summarize(int64_t *lat, size_t n)
{
	struct summary s = { 0 };
	if (n == 0)
		return s;
	qsort(lat, n, sizeof(*lat), cmp_i64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)lat[i];
	s.p50 = (double)percentile(lat, n, 0.50) / 1e3;
	s.p99 = (double)percentile(lat, n, 0.99) / 1e3;
	s.mean = sum / (double)n / 1e3;
	s.min = (double)lat[0] / 1e3;
	s.max = (double)lat[n - 1] / 1e3;
	return s;
}

static FILE *json_open(const struct opts *o)
{
	if (!o->json)
		return NULL;
	FILE *f = fopen(o->json, "a");
	if (!f)
		fprintf(stderr, "gpu_latency: %s: %s\n", o->json, strerror(errno));
	return f;
}

static int run_single(const struct opts *o)
{
	struct waiter w;
	size_t total = (size_t)(o->warmup + o->iterations);
	int status = waiter_open(&w, o->m, (int)o->device, total * (size_t)o->queued + 1);
	if (status == 0) {
		w.cap = (size_t)(o->iterations * o->queued);
		w.lat = calloc(w.cap, sizeof(*w.lat));
		if (!w.lat) {
			fprintf(stderr, "gpu_latency: out of memory\n");
			status = 1;
		}
	}
	uint64_t t0 = now_ns(); /* the run's wall time bounds every latency in it */
	for (size_t i = 0; status == 0 && i < total; i++)
		status = iterate(&w, o->kernel_us, o->queued, i >= (size_t)o->warmup);
	double wall = (double)(now_ns() - t0) / 1e9;
	if (status == 0 && w.kept == 0 && !o->check) {
		fprintf(stderr, "gpu_latency: every sample had a late observer\n");
		status = 1;
	}
	if (status == 0) {
		struct summary s = summarize(w.lat, w.kept);
		printf("%-16s %6zu %5zu %9.2f %9.2f %9.2f %9.2f %9.2f\n", o->m->name, w.kept,
		       w.late, s.p50, s.p99, s.mean, s.min, s.max);
		FILE *f = json_open(o);
		if (f) {
			fprintf(f,
				"{\"kind\":\"single\",\"mode\":\"%s\",\"kernel_us\":%ld,\"queued\":%ld,\"n\":%zu,"
				"\"late\":%zu,\"p50_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f,"
				"\"min_us\":%.3f,\"max_us\":%.3f,\"wall_s\":%.6f}\n",
				o->m->name, o->kernel_us, o->queued, w.kept, w.late, s.p50, s.p99, s.mean,
				s.min, s.max, wall);
			status = fclose(f) ? 1 : 0;
		} else if (o->json) {
			status = 1;
		}
	}
	free(w.lat);
	waiter_close(&w);
	return status;
}

/* ---- several processes ---------------------------------------------------------- */

/* Shared (MAP_SHARED, anonymous) between the parent and its children. */
struct shared {
	_Atomic int ready;  /* children done warming up */
	_Atomic int go;     /* parent: measure from now on */
	_Atomic int done;   /* children done measuring */
	struct {
		uint64_t completions, cpu_ns;
	} child[MAX_PROCS];
	size_t kept, late;  /* child 0's samples in lat */
	int64_t lat[];
};

/* CPU time of every thread of process pid still alive, in ns (schedstat's first
 * field), or -1 when /proc does not say. */
static int64_t process_cpu_ns(long pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%ld/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int64_t sum = 0;
	int any = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[320];
		snprintf(p, sizeof(p), "/proc/%ld/task/%s/schedstat", pid, e->d_name);
		FILE *f = fopen(p, "r");
		unsigned long long ns;
		if (f && fscanf(f, "%llu", &ns) == 1) {
			sum += (int64_t)ns;
			any = 1;
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	return any ? sum : -1;
}

static int child_main(const struct opts *o, struct shared *sh, int idx, size_t cap)
{
	struct waiter w;
	/* the observer's stamps bound a run: kernels never end faster than kernel_us */
	uint64_t max_seq = idx == 0 ? (uint64_t)(o->warmup * o->queued) + cap + 1 : 0;
	int status = waiter_open(&w, o->m, (int)o->device, max_seq);
	if (status == 0) {
		w.lat = sh->lat;
		w.cap = cap;
	}
	for (long i = 0; status == 0 && i < o->warmup; i++)
		status = iterate(&w, o->kernel_us, o->queued, 0);
	atomic_fetch_add(&sh->ready, 1);
	uint64_t give_up = now_ns() + START_TIMEOUT_NS;
	while (status == 0 && !atomic_load_explicit(&sh->go, memory_order_acquire)) {
		if (now_ns() > give_up) {
			fprintf(stderr, "gpu_latency: child %d: the start never came\n", idx);
			status = 1;
		}
		nanosleep(&(struct timespec){ 0, 100000 }, NULL);
	}
	uint64_t cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - observer_cpu_ns(w.obs);
	uint64_t end = now_ns() + (uint64_t)(o->seconds * 1e9);
	w.completions = 0;
	while (status == 0 && now_ns() < end) {
		status = iterate(&w, o->kernel_us, o->queued, 1);
		if (status == 2) /* child 0 ran out of stamps: stop measuring there */
			status = 0, end = 0;
	}
	uint64_t cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - observer_cpu_ns(w.obs);
	sh->child[idx].completions = w.completions;
	sh->child[idx].cpu_ns = cpu1 - cpu0;
	if (idx == 0) {
		sh->kept = w.kept;
		sh->late = w.late;
	}
	atomic_fetch_add_explicit(&sh->done, 1, memory_order_release);
	w.lat = NULL; /* shared memory, not ours to free */
	waiter_close(&w);
	return status;
}

static int run_multi(const struct opts *o)
{
	int n = (int)o->procs;
	/* room for child 0's samples: at most one completion per kernel_us, twice over */
	size_t cap = (size_t)(o->seconds * 1e6 / (double)o->kernel_us) * 2 + 1024;
	size_t bytes = sizeof(struct shared) + cap * sizeof(int64_t);
	struct shared *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		FAIL("mmap", -errno, strerror(errno));
	pid_t pids[MAX_PROCS];
	int started = 0, status = 0;
	fflush(NULL);
	for (; started < n; started++) {
		pid_t pid = fork();
		if (pid < 0) {
			fprintf(stderr, "gpu_latency: fork: %s\n", strerror(errno));
			status = 1;
			break;
		}
		if (pid == 0)
			_exit(child_main(o, sh, started, cap));
		pids[started] = pid;
	}
	/* start together once every child has warmed up; stop counting garudad's CPU
	 * when every child has stopped measuring. A child that dies ends the run. */
	int64_t d0 = -1, d1 = -1;
	uint64_t t0 = 0, t1 = 0, give_up = now_ns() + START_TIMEOUT_NS + WAIT_TIMEOUT_NS +
					       (uint64_t)(o->seconds * 1e9);
	int reaped = 0, stage = 0;
	while (status == 0 && stage < 2) {
		if (stage == 0 && atomic_load(&sh->ready) == n) {
			d0 = o->daemon_pid > 0 ? process_cpu_ns(o->daemon_pid) : -1;
			t0 = now_ns();
			atomic_store_explicit(&sh->go, 1, memory_order_release);
			stage = 1;
		}
		if (stage == 1 && atomic_load_explicit(&sh->done, memory_order_acquire) == n) {
			t1 = now_ns();
			d1 = o->daemon_pid > 0 ? process_cpu_ns(o->daemon_pid) : -1;
			stage = 2;
			break;
		}
		int ws;
		pid_t p = waitpid(-1, &ws, WNOHANG);
		if (p > 0) {
			reaped++;
			if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || stage < 1) {
				fprintf(stderr, "gpu_latency: a %s child failed\n", o->m->name);
				status = 1;
			}
		}
		if (now_ns() > give_up) {
			fprintf(stderr, "gpu_latency: children did not finish in time\n");
			status = 1;
		}
		nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	}
	if (status) /* one failed or hung: stop the rest */
		for (int i = 0; i < started; i++)
			kill(pids[i], SIGKILL);
	for (; reaped < started; reaped++) {
		int ws;
		if (waitpid(-1, &ws, 0) < 0)
			break;
		if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
			status = 1;
	}
	if (status == 0 && sh->kept == 0 && !o->check) {
		fprintf(stderr, "gpu_latency: no latency sample (every one had a late observer)\n");
		status = 1;
	}
	if (status == 0) {
		uint64_t completions = 0, cpu = 0;
		for (int i = 0; i < n; i++) {
			completions += sh->child[i].completions;
			cpu += sh->child[i].cpu_ns;
		}
		double wall = (double)(t1 - t0) / 1e9;
		double k = completions ? 1000.0 / (double)completions : 0;
		double client_s = (double)cpu / 1e9;
		double daemon_s = d0 >= 0 && d1 >= d0 ? (double)(d1 - d0) / 1e9 : -1;
		struct summary s = summarize(sh->lat, sh->kept);
		printf("%-16s %5d %9ld %9.1f %6zu %6zu %9.2f %9.2f %12.4f %6.2f %12.4f\n",
		       o->m->name, n, o->kernel_us, (double)completions / wall, sh->kept,
		       sh->late, s.p50, s.p99,
		       client_s * k, client_s / wall, daemon_s >= 0 ? daemon_s * k : -1.0);
		FILE *f = json_open(o);
		if (f) {
			fprintf(f,
				"{\"kind\":\"multi\",\"mode\":\"%s\",\"procs\":%d,\"kernel_us\":%ld,"
				"\"seconds\":%.3f,\"completions\":%llu,\"completions_per_s\":%.3f,"
				"\"n\":%zu,\"late\":%zu,\"p50_us\":%.3f,\"p99_us\":%.3f,"
				"\"mean_us\":%.3f,\"max_us\":%.3f,\"client_cpu_s\":%.6f,"
				"\"client_cpu_s_per_1k\":%.6f,\"garudad_cpu_s\":%.6f,"
				"\"garudad_cpu_s_per_1k\":%.6f}\n",
				o->m->name, n, o->kernel_us, wall, (unsigned long long)completions,
				(double)completions / wall, sh->kept, sh->late, s.p50, s.p99,
				s.mean, s.max, client_s, client_s * k, daemon_s,
				daemon_s >= 0 ? daemon_s * k : -1.0);
			status = fclose(f) ? 1 : 0;
		} else if (o->json) {
			status = 1;
		}
	}
	munmap(sh, bytes);
	return status;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: gpu_latency --mode=MODE [--iterations=N] [--warmup=N] [--kernel-us=N]\n"
		   "                   [--queued=N] [--device=N] [--json=FILE] [--check] [--header]\n"
		   "       gpu_latency --mode=MODE --procs=N [--seconds=S] [--daemon-pid=PID]\n"
		   "                   [--warmup=N] [--kernel-us=N] [--device=N] [--json=FILE]\n"
		   "                   [--check] [--header]\nmodes:");
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		fprintf(f, " %s", modes[i].name);
	fprintf(f, "\nThe daemon socket is $GARUDA_SOCKET.\n");
}

static int number(const char *text, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (errno || end == text || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .iterations = 1000, .warmup = 50, .kernel_us = 100, .seconds = 5, .queued = 1 };
	int header = 0;
	static const struct option lopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "kernel-us", required_argument, NULL, 'k' },
		{ "device", required_argument, NULL, 'd' },
		{ "procs", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 's' },
		{ "daemon-pid", required_argument, NULL, 'D' },
		{ "queued", required_argument, NULL, 'q' },
		{ "json", required_argument, NULL, 'j' },
		{ "check", no_argument, NULL, 'c' },
		{ "header", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	double v = 0;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		/* every numeric option: a number within its bounds, or usage */
		static const struct {
			int opt;
			double lo, hi;
		} bounds[] = { { 'n', 1, 1e8 }, { 'w', 0, 1e6 },     { 'k', 0, 1e7 },
			       { 'd', 0, 1024 }, { 'p', 1, MAX_PROCS }, { 's', 0.001, 3600 },
			       { 'D', 1, 1e9 },  { 'q', 1, MAX_QUEUED } };
		for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++)
			if (c == bounds[i].opt && number(optarg, bounds[i].lo, bounds[i].hi, &v)) {
				fprintf(stderr, "gpu_latency: bad value '%s' for option %s\n", optarg,
					argv[optind - 1]);
				return 2;
			}
		switch (c) {
		case 'm':
			for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
				if (strcmp(optarg, modes[i].name) == 0)
					o.m = &modes[i];
			if (!o.m) {
				fprintf(stderr, "gpu_latency: unknown mode '%s'\n", optarg);
				usage(stderr);
				return 2;
			}
			break;
		case 'n': o.iterations = (long)v; break;
		case 'w': o.warmup = (long)v; break;
		case 'k': o.kernel_us = (long)v; break;
		case 'd': o.device = (long)v; break;
		case 'p': o.procs = (long)v; break;
		case 's': o.seconds = v; break;
		case 'D': o.daemon_pid = (long)v; break;
		case 'q': o.queued = (long)v; break;
		case 'j': o.json = optarg; break;
		case 'c': o.check = 1; break;
		case 'H': header = 1; break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (header && o.procs)
		printf("%-16s %5s %9s %9s %6s %6s %9s %9s %12s %6s %12s\n", "mode", "procs",
		       "kernel_us", "compl/s", "n", "late", "p50_us", "p99_us", "cli_cpu/1k",
		       "cores", "daemon/1k");
	else if (header)
		printf("%-16s %6s %5s %9s %9s %9s %9s %9s\n", "mode", "n", "late", "p50_us",
		       "p99_us", "mean_us", "min_us", "max_us");
	if (header && !o.m)
		return 0;
	if (!o.m) {
		usage(stderr);
		return 2;
	}
	if (o.procs && o.kernel_us < 10) {
		fprintf(stderr, "gpu_latency: --procs needs --kernel-us of at least 10\n");
		return 2;
	}
	if (fdscan(0, fds_allowed) < 0) {
		fprintf(stderr, "gpu_latency: cannot list /proc/self/fd\n");
		return 1;
	}
	int status = o.procs ? run_multi(&o) : run_single(&o);
	return fdscan_report_new(fds_allowed, "gpu_latency", driver_fd) ? 1 : status;
}
