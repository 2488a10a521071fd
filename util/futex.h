/* futex.h — the futex(2) calls garuda makes, named: wait while a 32-bit word holds a
 * value (until an absolute CLOCK_MONOTONIC time, for a relative time, or for good),
 * and wake. `shared`: the word is in memory other processes map too (a segment's
 * doorbell: daemon and client), so no FUTEX_PRIVATE_FLAG; else process-private.
 * Header-only; every wait may return early (a wake, a signal, EAGAIN when the word
 * already differs): callers re-check their condition, as futex users must. */
#pragma once

#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline int futex_op_(int op, bool shared)
{
	return shared ? op : op | FUTEX_PRIVATE_FLAG;
}

/* Wait while *word == expected, until CLOCK_MONOTONIC reaches until_ns (UINT64_MAX:
 * no time limit). */
static inline void futex_wait_until(void *word, uint32_t expected, uint64_t until_ns, bool shared)
{
	struct timespec ts = { .tv_sec = (time_t)(until_ns / 1000000000ull),
			       .tv_nsec = (long)(until_ns % 1000000000ull) };
	syscall(SYS_futex, word, futex_op_(FUTEX_WAIT_BITSET, shared), expected,
		until_ns == UINT64_MAX ? NULL : &ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

/* Wait while *word == expected, at most timeout_ns. */
static inline void futex_wait_for(void *word, uint32_t expected, uint64_t timeout_ns, bool shared)
{
	struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000ull),
			       .tv_nsec = (long)(timeout_ns % 1000000000ull) };
	syscall(SYS_futex, word, futex_op_(FUTEX_WAIT, shared), expected, &ts, NULL, 0);
}

/* Wake up to n waiters (INT_MAX: all). */
static inline void futex_wake(void *word, int n, bool shared)
{
	syscall(SYS_futex, word, futex_op_(FUTEX_WAKE, shared), n, NULL, NULL, 0);
}
