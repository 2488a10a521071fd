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
