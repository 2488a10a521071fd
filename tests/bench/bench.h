/* bench.h — shared pieces of garuda-bench (issue 6): the run context (options,
 * results, failures), timing, latency statistics, shared memory, futexes, child
 * processes and /proc readings.
 *
 * Promises: nothing here sleeps or spins longer than asked; every blocking helper has
 * a deadline (a hang becomes a recorded failure, never a stuck benchmark); children
 * die with the benchmark (PR_SET_PDEATHSIG). A "failure" means a broken run (a daemon
 * that did not start, a readiness that never came, a wrong value): timings never fail.
 */
#pragma once

#include "cpu.h" /* cpu_relax (util/) */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "clock.h"

/* how long any single blocking step may take before the run counts as broken */
#define BENCH_HANG_MS 10000

struct bench_opts {
	bool quick;
	const char *garudad;   /* path of the daemon to run */
	const char *json_path; /* where the JSON results go */
	const char *only;      /* comma-separated sections, NULL = all */
	unsigned gap_us;       /* simulated kernel time between arm and store (latency) */
	unsigned spin_us;      /* garudad spin_us for the latency-tuned daemon */
	unsigned max_sleep_us; /* garudad max_sleep_us */
	unsigned lat_samples;  /* completions per latency row */
	unsigned cpu_clients;  /* client processes of the CPU benchmark */
	unsigned cpu_ms;       /* duration of one CPU row */
	unsigned thru_ms;      /* duration of one throughput cell */
	unsigned scale_clients;
	unsigned scale_max_armed;
	unsigned idle_s;
};

/* Numbers the target table needs; sections fill them (NaN = not measured). */
struct bench_key_numbers {
	double lat_p50_b, lat_p50_c, lat_p50_efd;
	double cpu_per_k_garuda, cpu_per_k_reactor; /* 16 clients, 1 ms */
	double cpu_per_k_garuda_100us, cpu_per_k_reactor_100us;
	double cpu_per_k_garuda_eco, cpu_per_k_garuda_eco_100us;
	double cpu_per_k_reactor_uncapped; /* 1 ms: (c) if each reactor had a CPU */
	double thru_max, thru_burst;
	double ns_per_desc;
	double idle_cpu_s, idle_ctxt;
};

struct bench {
	struct bench_opts o;
	cJSON *json;      /* the results document */
	unsigned failures; /* broken-run count */
	struct bench_key_numbers keys;
};

/* A broken run: print and count. Never used for a timing. */
void bench_fail(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Progress line on stderr (only with GARUDA_BENCH_VERBOSE or in full mode). */
void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ------------------------------------------------------------------ time */

static inline uint64_t now_ns(void)
{
	return garuda_now_ns();
}
void sleep_ns(uint64_t ns);
void sleep_until_ns(uint64_t abs_ns);


/* CPU time of the calling thread / process, in ns */
uint64_t thread_cpu_ns(void);
uint64_t process_cpu_ns(void);

/* ------------------------------------------------------------------ statistics */

struct lat_stats {
	uint64_t n;
	double p50, p99, p999, mean, max; /* ns */
};
/* Sorts samples in place. */
void lat_compute(uint64_t *samples, size_t n, struct lat_stats *out);
cJSON *lat_json(const struct lat_stats *s);

/* ------------------------------------------------------------------ shared memory, futex */

/* MAP_SHARED anonymous memory that forked children share; zeroed. NULL on failure. */
void *shm_alloc(size_t bytes);
void shm_free(void *p, size_t bytes);

/* Shared (not PRIVATE) futex ops: work across processes on shared mappings.
 * futex_wait returns 0 on wake, -EAGAIN if *addr != val, -ETIMEDOUT, -EINTR. */
int futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns);
void futex_wake(uint32_t *addr, int n);

/* Wait until *addr >= want (as uint32, via futex). Returns 0 or -ETIMEDOUT. */
int futex_wait_ge(uint32_t *addr, uint32_t want, uint64_t timeout_ns);
/* *addr = v (release) and wake all waiters. */
void futex_set(uint32_t *addr, uint32_t v);
/* Is item one of the entries of a comma-separated list? */
bool bench_list_has(const char *list, const char *item);

/* The same wait in an io_uring ring: one IORING_OP_FUTEX_WAIT (Linux 6.7;
 * examples/uring_futex.h) for *addr == val, at most timeout_ns (then cancelled). */
struct io_uring;
void uring_bell_wait(struct io_uring *ring, uint32_t *addr, uint32_t val, uint64_t timeout_ns);

/* ------------------------------------------------------------------ children */

/* Fork a child that runs fn(arg) and exits with its return value (0 = ok). The child
 * dies with the parent. Returns the pid or -errno. */
pid_t child_start(int (*fn)(void *arg), void *arg);
/* Wait for a child; after timeout_ms kill it. Returns its exit status (0 ok), or -1
 * when it was killed or died by a signal. */
int child_wait(pid_t pid, unsigned timeout_ms);

/* ------------------------------------------------------------------ /proc */

struct proc_sample {
	uint64_t cpu_ns;      /* all threads: the process CPU clock (ns), else utime + stime (ticks) */
	uint64_t rss_kib;     /* VmRSS */
	uint64_t vol_ctxt;    /* summed over /proc/PID/task/ */
	uint64_t nonvol_ctxt; /* summed over /proc/PID/task/ */
	uint64_t scan_ns;     /* garudad's scanner threads (comm garuda-scan*): their time on
			       * CPU, /proc/PID/task/TID/schedstat (ns) */
};
int proc_read(pid_t pid, struct proc_sample *out);

/* Raise RLIMIT_NOFILE's soft limit to its hard limit; returns the new soft limit. */
unsigned long raise_nofile(void);

/* ------------------------------------------------------------------ output */

/* Section runners (each adds its object to b->json and prints its table). */
int bench_latency(struct bench *b);
int bench_cpu(struct bench *b);
int bench_throughput(struct bench *b);
int bench_scale(struct bench *b);
int bench_plans(struct bench *b);
/* 6. the row "spin step: hardware wait vs pause" (wordwait.c) */
int bench_wordwait_section(struct bench *b);
/* 7. tenants (tenants.c, issue 29): one tenant's idle and churning arms, another's lateness */
int bench_tenants(struct bench *b);

/* The plans section's garudad stream processes (plans.c), for other sections: `streams`
 * streams of n fixed 1 ms kernels each against the running garudad d (eventfd form over
 * the raw protocol, one kernel at a time, a producer process stores after the kernel),
 * as the plans section's "garuda +predict" cells under whatever plan d runs. lat: store
 * -> wake of all but each stream's first 16 completions; daemon_us and total_us: CPU per
 * completion (garudad's; garudad's and the streams'). 0, or -1 after a recorded failure. */
struct gd_daemon;
struct plans_streams_result {
	bool ok;
	struct lat_stats lat;
	uint64_t completions;
	double daemon_us, total_us;
	double scan_us; /* of daemon_us, the scanner threads' (the rest: the loop thread's) */
	/* the scanner's timed sleeps that ran to their time, and of them those that woke
	 * 0.5 ms or more late (the host's timer stalls, plans.c TIMER_STALL_BUCKET) */
	double timed_wakes, timer_stalls;
};
int plans_garuda_streams(struct bench *b, struct gd_daemon *d, unsigned streams, unsigned n,
			 struct plans_streams_result *out);
/* The hardware word wait libgaruda would use here (util/wordwait.h; GARUDA_WORDWAIT=off:
 * none), for the header line */
struct wordwait;
const struct wordwait *bench_wordwait(void);
