/* clock.h — the one clock interface. Everything that reads time goes through
 * garuda_now_ns() so that waits can be replayed on a virtual clock in tests. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t garuda_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time (a system call, not the vDSO: for sampling, not for
 * every step). */
static inline uint64_t garuda_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME, for what the kernel stamps on that clock alone (a datagram's send
 * time: fdio.h); never for an interval. */
static inline uint64_t garuda_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ns (an interval, or a CLOCK_MONOTONIC time) as a timespec. */
static inline struct timespec garuda_ns_to_ts(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}
