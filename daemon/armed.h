/* armed.h — a scanner's armed set: the descriptors it watches, kept as two parallel
 * arrays (the pass reads only `hot`, 16 bytes each; `armed` is touched when one
 * fires), and the removal index that applies a batch of DISARMs and DROP_*s in one
 * pass over the set.
 *
 * Promises: push and remove are O(1) (removal swaps the last entry in); a batch of
 * removals costs O(armed + removals); a removal takes only descriptors armed before
 * it (smaller gen), so removals and ARMs of one batch may be applied in any order;
 * the first DISARM after an ARM takes it, the others answer NOT_ARMED. Every armed
 * descriptor holds one reference on its sink, segment and binding and one unit of
 * the armed quota; armed_release() gives them back.
 *
 * Thread: everything here is private to the scanner thread that owns the set. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "notice.h"
#include "policy.h"
#include "segment.h"
#include "sink.h"

struct armed {
	const uint64_t *word;
	uint64_t target, token;
	struct sink *sink;
	struct segment *seg;
	struct binding *bind;
	uint32_t index;
	uint8_t form;
	uint64_t value; /* set when fired */
	uint64_t gen;   /* sequence number of its ARM command */
	/* the wait as the policy sees it (proto/policy.h): arm, when the scanner took it
	 * in, its stream-order clock, its point's sleeps */
	struct garuda_policy_wait wait;
	uint64_t point_key;   /* points.h */
	uint32_t point_slot;  /* POINT_NONE: no point */
};

struct armed_hot {
	const uint64_t *word;
	uint64_t target;
};

struct armed_set {
	struct armed_hot *hot;
	struct armed *armed;
	unsigned n, cap;
	struct armed *fired; /* scratch for one pass: room for cap entries */
};

/* Append a (its gen set); aborts when out of memory (a lost arm would leak quota). */
void armed_push(struct armed_set *set, const struct armed *a, unsigned scanner_index);
static inline void armed_remove_at(struct armed_set *set, unsigned i)
{
	set->n--;
	set->hot[i] = set->hot[set->n];
	set->armed[i] = set->armed[set->n];
}
/* Give back what one descriptor holds (references and its armed quota unit). On a
 * scanner (loop != NULL) a last reference is not dropped there but handed to the loop
 * thread as a NOTICE_RELEASE (the destructors close client fds and unmap segments);
 * the loop thread itself passes NULL. */
void armed_release(struct armed *a, struct notice_queue *loop);
/* The two halves of armed_release(), for a pass: the quota unit goes back before the
 * readiness is sent (a client that saw it may re-arm at once, and QUERY no longer
 * counts it), the references after (the writes still use them). */
void armed_release_quota(struct armed *a);
void armed_release_refs(struct armed *a, struct notice_queue *loop);
/* Drop the last reference a scanner handed over (NOTICE_RELEASE): where it was taken
 * on the loop thread, or, out of memory, on the scanner itself. One switch for both. */
void notice_release(enum notice_release what, void *obj);
/* Release everything still armed (loop thread: scanner stopped) and free the arrays. */
void armed_set_free(struct armed_set *set);

enum removal_kind { RM_DISARM, RM_DROP_SEGMENT, RM_DROP_BINDING, RM_DROP_SINK };

struct removal {
	enum removal_kind kind;
	const void *obj; /* DROP_*: segment, binding or sink; DISARM: sink. Compared only */
	uint32_t segment_id, index;
	uint64_t token, gen;
	bool found; /* DISARM: out: it took a descriptor */
	int next;   /* private to armed_apply_removals() */
};

/* Apply rem[0..n) to the set (releasing what they take) and set rem[i].found for
 * DISARMs. Aborts when out of memory (a lost DROP would leave dangling references). */
void armed_apply_removals(struct armed_set *set, struct removal *rem, unsigned n,
			  unsigned scanner_index, struct notice_queue *loop);
