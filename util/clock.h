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
