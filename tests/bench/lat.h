/* lat.h — what the latency benchmark's parts share: the run's shared memory (t0 and
 * latency arrays, the waiter -> storer futex word, a broken-run flag and message) and
 * the libgaruda waiter, which lives in lgwait.c because <garuda/garuda.h> and
 * proto/wire.h cannot share a translation unit (both name a `garuda_error`); the plans
 * section's libgaruda stream lives there too, for the same reason. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct lat_shm {
	_Alignas(64) uint32_t go;  /* waiter -> storer: sequence armed */
	_Alignas(64) uint32_t err; /* a side hit a broken-run condition */
	_Alignas(64) uint64_t word; /* the baselines' word */
	char msg[160];
	/* then t0[n + 1], lat[n + 1], ta[n + 1] */
};

struct lat_run {
	struct lat_shm *sh;
	size_t bytes;
	uint64_t *t0, *lat;
	uint64_t *ta; /* waiter: time the arm was out (the storer's clock starts then) */
	unsigned n;
	uint64_t gap_ns;
};

/* Flag a broken run (first message wins) and release a waiting storer. fmt takes a
 * string and a long. */
void lat_side_fail(struct lat_run *r, const char *fmt, const char *what, long v);

/* libgaruda waiter (lgwait.c), run in a forked child: arg is a struct lat_lgwaiter. */
struct lat_lgwaiter {
	struct lat_run *r;
	const char *sock;
	char *status; /* set-up failure text (160 bytes), in shared memory */
};
int lat_lgwaiter_main(void *arg);

/* The plans section's "libgaruda +predict (client)" stream (lgwait.c), run inside a
 * plans stream process: a client of garudad at sock, one host segment, a host stream
 * (its worker thread stands in for the GPU: sleeps kns[i], stamps t0[i], stores i)
 * and an eventfd stream with plan text `plan`; per completion it signals and waits
 * with garuda_stream_wait(), and records lat[i] = wake - t0[i]. *cpu_ns: the
 * process's CPU less the worker thread's. The estimator's counters at the end. 0, or
 * -1 with msg set. */
struct plan_lgstream {
	const char *sock, *plan;
	unsigned n;
	const uint64_t *kns; /* [n + 1] */
	uint64_t *t0, *lat;  /* [n + 1] */
	uint64_t *cpu_ns;
	char *msg;
	size_t msg_cap;
	uint64_t exact, censored, sleeps, spin_outs;
};
int plan_lgstream_run(struct plan_lgstream *a);
