/* armed_index.h — the arms on deep words by (sink, slot, token): what a DISARM on a
 * word that many arms wait on looks up, instead of walking the word.
 *
 * A word that ARMED_INDEX_DEEP or more waits are on has every one of them here: the
 * scanner indexes the word's waits when an ARM brings their count to that, and each
 * ARM after while it stays there (daemon/scanner.c, index_if_deep); a wait leaves as
 * it leaves the watcher (fired or removed: armed_index_del()). A DISARM on such a word
 * looks at the arms with its sink, slot and token alone; on a shallower word it walks
 * the word (fewer than ARMED_INDEX_DEEP waits). Why: a DISARM walked every wait on
 * its word, and one connection's quota holds 65,535 on one word (garuda-bench
 * tenants, "deepchurn": another tenant's p99 +4.3 ms).
 *
 * Two tables, both open addressing with linear probing and backward-shift deletion
 * (no tombstones): the keys, one entry per distinct (sink, slot, token), naming the
 * first arm of that key; and the arms by id, each with the key's other arms before
 * and after it (a chain both ways). Why not one table of ids by key: one slot and
 * token may be armed 65,535 times, and such a run of equal keys is one cluster that
 * every other key hashing into it probes through (it made each DISARM of the
 * "deepchurn" bench slower than the walk it replaced).
 *
 * Promises:
 *   - armed_index_next() yields every indexed id whose payload has the sink, segment,
 *     index and token asked, each once, and no other; deleting the id it yielded
 *     (armed_index_del) before the next call is allowed.
 *   - Every operation is O(1) expected, whatever the number of arms of one key.
 *   - A payload's `indexed` bit says whether it is in the index.
 *   - Memory: 12-byte entries for the arms and 4-byte ones for the keys, each table a
 *     power of two at least twice what it holds (12-24 bytes per indexed wait, plus
 *     4-8 per key), none for waits on shallower words; freed when the last one leaves.
 *   - Allocation in armed_index_reserve() alone.
 *
 * Thread: the scanner thread that owns the payloads (daemon/scanner.c); freed by
 * armed_index_free() when the scanner is destroyed. */
#pragma once

#include <stdint.h>

#include "armed.h"

#define ARMED_INDEX_DEEP 32u        /* waits on a word from which its DISARMs use the index */
#define ARMED_INDEX_NONE UINT32_MAX /* no id (GARUDA_WATCH_NONE's value) */

struct armed_index_arm {
	uint32_t id, prev, next; /* prev, next: the ids of its key's arms around it */
};

struct armed_index {
	uint32_t *keys;               /* the first arm's id of each key; ARMED_INDEX_NONE: empty */
	uint32_t kmask, nkeys;        /* capacity - 1 (0: no table) */
	struct armed_index_arm *arms; /* by id; .id ARMED_INDEX_NONE: empty */
	uint32_t amask, live;
};

/* Room for n more ids (and keys) without allocating: 0, or -ENOMEM (nothing lost). */
int armed_index_reserve(struct armed_index *x, const struct armed *pay, uint32_t n);
/* Index id (room reserved; pay[id] not indexed yet): sets pay[id].indexed. */
void armed_index_add(struct armed_index *x, struct armed *pay, uint32_t id);
/* Take id out if it is indexed (pay[id] as it was indexed); clears pay[id].indexed. */
void armed_index_del(struct armed_index *x, struct armed *pay, uint32_t id);

/* Where a DISARM's walk of its key's arms stands. */
struct armed_index_key {
	uint32_t next; /* private: the next id to yield */
};
struct armed_index_key armed_index_key(const struct armed_index *x, const struct armed *pay,
				       const struct sink *sink, uint32_t segment_id, uint32_t index,
				       uint64_t token);
/* The arms with this sink, slot and token: the next, or ARMED_INDEX_NONE (no more). */
uint32_t armed_index_next(const struct armed_index *x, struct armed_index_key *k);

void armed_index_free(struct armed_index *x);
