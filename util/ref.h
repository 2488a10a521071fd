/* ref.h — reference counts shared between threads. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>

/* Drop one reference unless it is the last; returns false (and drops nothing) when it
 * is. A thread that must not run an object's destructor (a scanner) drops its
 * references this way and hands a last one to the owner's thread. */
static inline bool ref_put_unless_last(atomic_uint *refs)
{
	unsigned r = atomic_load_explicit(refs, memory_order_relaxed);
	while (r > 1)
		if (atomic_compare_exchange_weak_explicit(refs, &r, r - 1, memory_order_acq_rel,
							  memory_order_relaxed))
			return true;
	return false;
}

/* Drop n references (n >= 1, all held by the caller) unless one of them is the last:
 * returns true when all n were dropped, false when n - 1 were and the last is left,
 * for the caller to hand over as ref_put_unless_last()'s false. One atomic operation
 * for a run of references to one object (a scanner giving back a session's waits). */
static inline bool ref_put_many_unless_last(atomic_uint *refs, unsigned n)
{
	unsigned r = atomic_load_explicit(refs, memory_order_relaxed);
	for (;;) {
		unsigned k = r > n ? n : r - 1; /* r >= n: the caller holds n of them */
		if (k == 0)
			return false;
		if (atomic_compare_exchange_weak_explicit(refs, &r, r - k, memory_order_acq_rel,
							  memory_order_relaxed))
			return k == n;
	}
}
