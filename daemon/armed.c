/* armed.c — see armed.h. */
#include "armed.h"

_Static_assert(sizeof(struct armed) == 48, "a payload is 48 bytes (RSS per armed wait)");
_Static_assert(GARUDA_FORM_COUNT <= 64, "a payload's form fits its 6 bits");

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "quota.h"
#include "ref.h"
#include "wire.h"

void notice_release(enum notice_release what, void *obj)
{
	switch (what) {
	case RELEASE_SINK:
		sink_unref(obj);
		break;
	case RELEASE_SEGMENT:
		segment_unref(obj);
		break;
	case RELEASE_BINDING:
		binding_unref(obj);
		break;
	}
}

static atomic_uint *refs_of(enum notice_release what, void *obj)
{
	switch (what) {
	case RELEASE_SINK:
		return &((struct sink *)obj)->refs;
	case RELEASE_SEGMENT:
		return &((struct segment *)obj)->refs;
	case RELEASE_BINDING:
		return &((struct binding *)obj)->refs;
	}
	abort();
}

/* The last reference to obj, handed to the loop thread. */
static void hand_over(struct notice_queue *loop, enum notice_release what, void *obj)
{
	if (notice_push(loop, &(struct notice){ .kind = NOTICE_RELEASE, .what = what, .obj = obj }))
		return;
	/* out of memory: drop it here rather than leak it (the destructor is thread-safe,
	 * only slow) */
	notice_release(what, obj);
}

void armed_put(struct notice_queue *loop, enum notice_release what, void *obj)
{
	if (!ref_put_unless_last(refs_of(what, obj)))
		hand_over(loop, what, obj);
}

/* Give back a run's references (none: nothing) */
static void put_run(struct notice_queue *loop, enum notice_release what, struct armed_run *run)
{
	if (run->n && !ref_put_many_unless_last(refs_of(what, run->obj), run->n))
		hand_over(loop, what, run->obj);
	*run = (struct armed_run){ 0 };
}

static void flush_quota(struct armed_releases *r)
{
	if (r->nquota)
		quota_release(&r->qsink->quota, Q_ARMED, r->nquota);
	r->nquota = 0;
}

void armed_releases_quota(struct armed_releases *r, const struct armed *a)
{
	if (a->sink != r->qsink) {
		flush_quota(r);
		r->qsink = a->sink;
	}
	r->nquota++;
}

/* One more reference to obj (NULL: none) in its run, a run of another object given
 * back first; a sink's quota units still queued before its references (the account is
 * the sink's: armed_releases_quota() gave them back already when the next descriptor's
 * sink is another, so this flushes only for a caller that queued refs alone). */
static void ref_add(struct armed_releases *r, enum notice_release what, void *obj)
{
	struct armed_run *run = &r->ref[what];
	if (!obj)
		return;
	if (obj != run->obj) {
		if (what == RELEASE_SINK && r->qsink == run->obj)
			flush_quota(r);
		put_run(r->loop, what, run);
		run->obj = obj;
	}
	run->n++;
}

void armed_releases_refs(struct armed_releases *r, const struct armed *a)
{
	ref_add(r, RELEASE_SINK, a->sink);
	ref_add(r, RELEASE_SEGMENT, a->seg);
	ref_add(r, RELEASE_BINDING, a->bind);
}

void armed_releases_add(struct armed_releases *r, const struct armed *a)
{
	armed_releases_quota(r, a);
	armed_releases_refs(r, a);
}

void armed_releases_flush(struct armed_releases *r)
{
	flush_quota(r);
	for (unsigned w = RELEASE_SINK; w <= RELEASE_BINDING; w++)
		put_run(r->loop, (enum notice_release)w, &r->ref[w]);
	r->qsink = NULL;
}

void armed_release(struct armed *a)
{
	quota_release(&a->sink->quota, Q_ARMED, 1);
	sink_unref(a->sink);
	segment_unref(a->seg);
	binding_unref(a->bind);
}

/* ---- the removal index ----
 *
 * Every command of a batch gets its place in the batch (gen, 1..) as it is applied,
 * and a descriptor armed in the batch remembers the gen of its ARM until the batch's
 * removals are applied; then it is 0, older than any later removal (4 bytes where a
 * sequence number for good would take 8, in every armed descriptor). A removal
 * applies to the descriptors armed before it (gen smaller than its own), so the removals of a whole batch of commands
 * can wait and be applied together, whatever order they came in relative to ARMs (an
 * ARM after a DROP_SINK of a sink at a reused address is not dropped). A batch of
 * DISARMs only looks at the descriptors on their words (the watcher's index by word:
 * O(commands + the waits on those words)); a drop (of a sink, a segment, a binding:
 * one session's, whose descriptors are all on that session's words) looks at that
 * session's words alone, one walk per session named in the batch: a client that closes
 * bindings in a loop costs one walk of its own descriptors per batch, and never walks
 * another tenant's (scanner.c, apply_removals). */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t removal_hash(enum removal_kind kind, const void *obj, uint32_t seg, uint32_t index,
			     uint64_t token)
{
	uint64_t h = mix((uint64_t)kind, (uint64_t)(uintptr_t)obj);
	if (kind == RM_DISARM)
		h = mix(mix(mix(h, seg), index), token);
	return h;
}

static bool removal_key_eq(const struct removal *r, enum removal_kind kind, const void *obj,
			   uint32_t seg, uint32_t index, uint64_t token)
{
	return r->kind == kind && r->obj == obj &&
	       (kind != RM_DISARM || (r->segment_id == seg && r->index == index && r->token == token));
}

/* The first removal with this key (-1: none). */
static int removal_find(const struct removal_table *t, enum removal_kind kind, const void *obj,
			uint32_t seg, uint32_t index, uint64_t token)
{
	for (uint64_t h = removal_hash(kind, obj, seg, index, token);; h++) {
		int i = t->slot[h & t->mask];
		if (i < 0 || removal_key_eq(&t->rem[i], kind, obj, seg, index, token))
			return i;
	}
}

/* Index rem[0..n): drops keep their latest gen under one key, DISARMs chain in order. */
static int removal_index(struct removal_table *t, struct removal *rem, unsigned n)
{
	unsigned cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	t->slot = malloc(cap * sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	memset(t->slot, 0xff, cap * sizeof(*t->slot));
	t->mask = cap - 1;
	t->rem = rem;
	int *last = calloc(n ? n : 1, sizeof(*last)); /* DISARM chains: tail per head */
	if (!last) {
		free(t->slot);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		struct removal *r = &rem[i];
		r->next = -1;
		r->found = false;
		for (uint64_t h = removal_hash(r->kind, r->obj, r->segment_id, r->index, r->token);; h++) {
			int *sl = &t->slot[h & t->mask];
			if (*sl < 0) {
				*sl = (int)i;
				last[i] = (int)i;
				break;
			}
			struct removal *o = &rem[*sl];
			if (removal_key_eq(o, r->kind, r->obj, r->segment_id, r->index, r->token)) {
				if (r->kind == RM_DISARM) {
					rem[last[*sl]].next = (int)i; /* gens ascend with i */
					last[*sl] = (int)i;
				} else {
					o->gen = r->gen; /* the latest drop covers the earlier ones */
				}
				break;
			}
		}
	}
	free(last);
	return 0;
}

bool armed_removals_drop_segment(const struct removal_table *t, const struct segment *seg)
{
	return removal_find(t, RM_DROP_SEGMENT, seg, 0, 0, 0) >= 0;
}

bool armed_removals_takes(const struct removal_table *t, const struct armed *a)
{
	const struct {
		enum removal_kind kind;
		const void *obj;
	} drops[] = { { RM_DROP_SINK, a->sink }, { RM_DROP_SEGMENT, a->seg }, { RM_DROP_BINDING, a->bind } };
	for (unsigned k = 0; k < 3; k++) {
		if (!drops[k].obj)
			continue;
		int i = removal_find(t, drops[k].kind, drops[k].obj, 0, 0, 0);
		if (i >= 0 && t->rem[i].gen > a->gen)
			return true;
	}
	/* the first DISARM after the ARM takes it */
	for (int i = removal_find(t, RM_DISARM, a->sink, a->seg->id, a->index, a->token); i >= 0;
	     i = t->rem[i].next) {
		if (t->rem[i].gen > a->gen) {
			t->rem[i].found = true;
			return true;
		}
	}
	return false;
}

void armed_removals_index(struct removal_table *t, struct removal *rem, unsigned n,
			  unsigned scanner_index)
{
	if (removal_index(t, rem, n) < 0) {
		log_err("scanner %u: out of memory applying removals", scanner_index);
		abort(); /* a lost DROP would leave dangling references */
	}
}

void armed_removals_free(struct removal_table *t)
{
	free(t->slot);
	t->slot = NULL;
}
