/* lat.h — what the latency benchmark's parts share: the run's shared memory (t0 and
 * latency arrays, the waiter -> storer futex word, a broken-run flag and message) and
 * the libgaruda waiter, which lives in lgwait.c because <garuda/garuda.h> and
 * proto/wire.h cannot share a translation unit (both name a `garuda_error`). */
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
