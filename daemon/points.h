/* points.h — a session's deadline-estimator points: one struct garuda_estimator
 * (proto/estimator.h) per readback point the session waits on, so that the scanners
 * can sleep until a point's predicted completion (docs/plans.md, "In garudad").
 *
 * A point's key is the word it waits on (POINT_KEY_WORD: segment id and slot; the
 * session is the table's owner) unless the client named a point (POINT_KEY_NAMED).
 *
 * Promises:
 *   - Bounded: a session holds at most quota.connection.points points (and its uid
 *     quota.uid.points); each is charged one unit of Q_POINTS (it costs
 *     sizeof(struct point) bytes). When a new key finds the quota spent, the session's
 *     least recently used point is reused for it (its records are forgotten); a
 *     session with no point at all then arms without a prediction (cold).
 *   - A point's estimator follows the daemon's plan: a point last used under an older
 *     plan generation is re-initialised (records forgotten) at its next lookup.
 *   - A record names the slot and the key it was looked up with: one that finds its
 *     slot reused for another key is dropped, never credited to the wrong point.
 *
 * Threads: the table hangs off its owner (a sink's points field: this module knows no
 * sink, it takes the table's slot and the quota account to charge). It is created and
 * looked up on the loop thread (points_lookup, at ARM), recorded into by scanner
 * threads (points_record, per completion) and listed by the control plane, all under
 * its mutex; freed with the sink's last reference (points_free). The slot is an atomic
 * pointer: the loop thread publishes a new table with a release store while a scanner
 * may be reading the slot for an arm armed before (acquire load, sink_points()). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "estimator.h"
#include "keymap.h"
#include "policy.h"
#include "quota.h"

#define POINT_KEY_NAMED (1ull << 63)
/* A word's own point: its segment id above its index (below 2^19: protocol.md's
 * SLOT_RANGE), in bits 0..51, never POINT_KEY_NAMED (a segment id of 2^31 or more
 * once set it, and that word's key met a named point's) */
#define POINT_KEY_INDEX_BITS 20
static inline uint64_t point_key_word(uint32_t segment_id, uint32_t index)
{
	return (uint64_t)segment_id << POINT_KEY_INDEX_BITS | index;
}
static inline uint32_t point_key_segment(uint64_t key)
{
	return (uint32_t)(key >> POINT_KEY_INDEX_BITS);
}
static inline uint32_t point_key_index(uint64_t key)
{
	return (uint32_t)(key & ((1u << POINT_KEY_INDEX_BITS) - 1));
}

#define POINT_NONE UINT32_MAX /* no point: the arm is cold */

struct point {
	uint32_t plan_gen;
	uint32_t newer, older; /* the LRU list (POINT_NONE: its end) */
	struct garuda_estimator est;
};

/* A key's point is found through a hash map (key -> slot): an ARM's lookup is O(1)
 * whatever the session's points quota, and so is the choice of the point a new key
 * reuses (the LRU list's oldest). Before, both were walks of the session's points: an
 * ARM flood over thousands of words (every lookup a miss, the quota spent) made them
 * the loop thread's largest cost (perf, row dropcycle of the tenants bench). */
struct points {
	pthread_mutex_t lock;
	unsigned n, cap;
	uint32_t newest, oldest; /* the LRU list's ends (POINT_NONE: empty) */
	struct point *p;
	uint64_t *keys; /* [cap]: p[i]'s key */
	struct garuda_keymap slot_of; /* key -> its slot */
};

/* Loop thread, at ARM: the point of key in *tab (the table made on first use; a new
 * point charged to q, else the LRU one reused),
 * its slot in *slot, the estimator's sleep (0 = do not sleep) in *sleep_ns and its
 * exact sleep (the second look, estimator.h) in *exact_sleep_ns. With no point to give
 * (out of memory, or a quota of 0) *slot is POINT_NONE and both sleeps 0. */
void points_lookup(struct points *_Atomic *tab, struct quota_account *q, const struct config *cfg,
		   uint32_t plan_gen, uint64_t key, uint32_t *slot, uint64_t *sleep_ns,
		   uint64_t *exact_sleep_ns);

/* Scanner thread: record a completion of the arm that got (slot, key): the watcher's
 * find (policy.h: exact, a lower bound or censored; garuda_policy_record). */
void points_record(struct points *t, uint32_t slot, uint64_t key, const struct garuda_find *f);

/* Scanner thread: the sleeps the point of (slot, key) gives now (as points_lookup()
 * does, without touching the LRU): false when the slot holds another point now. A
 * wait queued behind another on its word was armed with the sleeps of its arm time;
 * when it starts, its point may have learned since (a shorter kernel). */
bool points_peek(struct points *t, uint32_t slot, uint64_t key, uint64_t *sleep_ns,
		 uint64_t *exact_sleep_ns);

/* One point as the control plane shows it. */
struct point_view {
	uint64_t key;
	bool predicted;
	uint64_t prediction_ns, sleep_ns, exact, censored;
};

/* Copy t's points (NULL: none; malloc'ed array in *out, caller frees). Returns the
 * count or -ENOMEM. */
int points_list(struct points *t, struct point_view **out);

/* Its owner's last reference: free the table in *tab and give q back its quota. */
void points_free(struct points *_Atomic *tab, struct quota_account *q);
