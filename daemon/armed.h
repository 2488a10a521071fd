/* armed.h — an armed descriptor's payload (what delivering and releasing it need; its
 * wait is the scanner's watcher's, proto/watch.h, under the same id) and the removal
 * index that applies a batch of DISARMs and DROP_*s together.
 *
 * Promises: a removal takes only descriptors armed before it (an earlier batch, or a
 * smaller gen in its own), so removals and ARMs of one batch may be applied in any order; the first DISARM after
 * an ARM takes it, the others answer NOT_ARMED. Every armed descriptor holds one
 * reference on its sink, segment and binding and one unit of the armed quota;
 * armed_releases_*() give them back (armed_release() on the loop thread).
 *
 * Thread: everything here is private to the scanner thread that owns the descriptors
 * (armed_release(): the loop thread, the scanner stopped). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "notice.h"
#include "points.h"
#include "policy.h"
#include "segment.h"
#include "sink.h"

/* One armed descriptor's payload. */
struct armed {           /* 48 bytes: one per armed descriptor (RSS per armed wait) */
	struct sink *sink;
	struct segment *seg;
	struct binding *bind;
	uint64_t token;
	uint32_t gen;         /* while its command batch is applied, its ARM's place in the
			       * batch (1..); after, 0: older than every later removal */
	uint32_t point_slot;  /* POINT_NONE: no point */
	uint32_t index : 24;  /* its slot (< GARUDA_SEGMENT_MAX_LINES x 8 = 2^19) */
	uint32_t form : 6;
	uint32_t indexed : 1; /* in the scanner's armed_index (armed_index.h) */
	uint32_t listed : 1;  /* a mark of binding_arms_add()'s compaction (scanner.c); else 0 */
	uint32_t point;       /* the point the client named; 0: its word's own (armed_point_key) */
};

/* Its point's key (points.h): the named point, else its word's. */
static inline uint64_t armed_point_key(const struct armed *a)
{
	return a->point ? POINT_KEY_NAMED | a->point : point_key_word(a->seg->id, a->index);
}

/* A fired descriptor, for delivery: its payload and the value its word was read as. */
struct fired {
	struct armed a;
	uint64_t value;
};

/* Give back what one descriptor holds (its armed quota unit and references) on the
 * loop thread, the scanner stopped (scanner_stop()); a scanner gives them back in
 * runs (armed_releases below), a last reference handed to the loop thread. */
void armed_release(struct armed *a);
/* Give back one reference a scanner holds on obj, a sink, segment or binding as what
 * says (a drop's own reference on its segment or binding): a last one goes to
 * the loop thread as a NOTICE_RELEASE. */
void armed_put(struct notice_queue *loop, enum notice_release what, void *obj);
/* A scanner's releases in runs: consecutive descriptors of one sink, segment or
 * binding give back their quota units and references with one atomic operation per
 * run (ref_put_many_unless_last(), quota_release(n)), not 6 or 7 per descriptor, on
 * counters the loop thread charges at the same time for the same uid's new arms (a
 * tenant that arms 65,536 and ends its session, again: the scanner's CPU a cycle fell
 * ~10 %, docs/plans.md).
 * What is queued is held: a run's objects stay alive until armed_releases_flush(),
 * and a quota unit counts as used until then, so flush before anything is answered
 * or delivered that a client could re-arm on. A run's quota goes back before its
 * sink's references (the account is the sink's). Zero-initialize with .loop set. */
struct armed_run {
	void *obj; /* NULL: none yet */
	uint32_t n;
};
struct armed_releases {
	struct notice_queue *loop;
	struct sink *qsink; /* whose account the nquota units go back to */
	uint32_t nquota;
	struct armed_run ref[RELEASE_BINDING + 1]; /* references, by enum notice_release */
};
/* Queue a's quota unit, its references, or both. */
void armed_releases_quota(struct armed_releases *r, const struct armed *a);
void armed_releases_refs(struct armed_releases *r, const struct armed *a);
void armed_releases_add(struct armed_releases *r, const struct armed *a);
/* Give back everything queued: the quota units, then the references. */
void armed_releases_flush(struct armed_releases *r);
/* Drop the last reference a scanner handed over (NOTICE_RELEASE): where it was taken
 * on the loop thread, or, out of memory, on the scanner itself. One switch for both. */
void notice_release(enum notice_release what, void *obj);
enum removal_kind { RM_DISARM, RM_DROP_SEGMENT, RM_DROP_BINDING, RM_DROP_SINK };

struct removal {
	enum removal_kind kind;
	const void *obj; /* DROP_*: segment, binding or sink; DISARM: sink. Compared only */
	const uint64_t *word; /* DISARM: its slot's word, where its descriptors wait */
	uint32_t segment_id, index;
	uint64_t token, gen;
	bool found; /* DISARM: out: it took a descriptor */
	bool rest;  /* DROP_BINDING: out: the step's budget ran out before its walk did */
	int next;   /* private to the removal table */
};

/* A batch's removals, indexed: armed_removals_takes() says whether one of them takes a
 * descriptor (and marks that DISARM found). Index aborts when out of memory (a lost
 * DROP would leave dangling references). */
struct removal_table {
	int *slot; /* index into rem[], or -1 */
	unsigned mask;
	struct removal *rem;
};
void armed_removals_index(struct removal_table *t, struct removal *rem, unsigned n,
			  unsigned scanner_index);
bool armed_removals_takes(const struct removal_table *t, const struct armed *a);
/* Does the batch drop this segment? */
bool armed_removals_drop_segment(const struct removal_table *t, const struct segment *seg);
void armed_removals_free(struct removal_table *t);
