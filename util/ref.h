/* ref.h — reference counts shared between threads. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>

/* Drop n references (n >= 1, all held by the caller) unless one of them is the last:
 * returns true when all n were dropped, false when n - 1 were and the last is left. A
 * thread that must not run an object's destructor (a scanner) drops its references
 * this way and hands a last one to the owner's thread; one atomic operation for a run
 * of references to one object (a scanner giving back a session's waits). */
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

/* One reference: false (and nothing dropped) when it is the last. */
static inline bool ref_put_unless_last(atomic_uint *refs)
{
	return ref_put_many_unless_last(refs, 1);
}
