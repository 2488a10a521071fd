/* armed_index.c — see armed_index.h. Written by hand, as proto/watch.c's word hash
 * is: a key's entry is 4 bytes, the key read from the payload it names (a keymap.h
 * slot holds 16 and maps a key to one value, where a key here has a chain of arms). */
#include "armed_index.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#define NONE ARMED_INDEX_NONE
#define MIN_CAP 64u

static uint32_t mix(uint64_t h)
{
	h ^= h >> 32;
	h *= 0xD6E8FEB86659FD93ull;
	return (uint32_t)(h ^ (h >> 32));
}

static uint32_t hash_key(const struct sink *sink, uint32_t segment_id, uint32_t index, uint64_t token)
{
	return mix((uint64_t)(uintptr_t)sink * 0x9E3779B97F4A7C15ull ^
		   (((uint64_t)segment_id << 32) | index) * 0xC2B2AE3D27D4EB4Full ^ token * 0x165667B19E3779F9ull);
}

static uint32_t hash_pay(const struct armed *a)
{
	return hash_key(a->sink, a->seg->id, a->index, a->token);
}

static uint32_t hash_id(uint32_t id)
{
	return mix(id * 0x9E3779B97F4A7C15ull);
}

static bool same_key(const struct armed *a, const struct sink *sink, uint32_t segment_id, uint32_t index,
		     uint64_t token)
{
	return a->sink == sink && a->token == token && a->index == index && a->seg->id == segment_id;
}

/* ------------------------------------------------------------ the arms by id */

/* Its entry's position, or the empty one where it would go. */
static uint32_t arm_pos(const struct armed_index *x, uint32_t id)
{
	uint32_t p = hash_id(id) & x->amask;
	while (x->arms[p].id != NONE && x->arms[p].id != id)
		p = (p + 1) & x->amask;
	return p;
}

static struct armed_index_arm *arm_of(const struct armed_index *x, uint32_t id)
{
	return &x->arms[arm_pos(x, id)];
}

/* Is home h outside the run (i, j]: may the entry at j move back to i? */
static bool movable(uint32_t h, uint32_t i, uint32_t j)
{
	return i <= j ? h <= i || h > j : h <= i && h > j;
}

static void arm_remove(struct armed_index *x, uint32_t p)
{
	for (uint32_t j = (p + 1) & x->amask; x->arms[j].id != NONE; j = (j + 1) & x->amask)
		if (movable(hash_id(x->arms[j].id) & x->amask, p, j)) {
			x->arms[p] = x->arms[j];
			p = j;
		}
	x->arms[p].id = NONE;
}

/* ------------------------------------------------------------------ the keys */

static uint32_t key_pos(const struct armed_index *x, const struct armed *pay, const struct sink *sink,
			uint32_t segment_id, uint32_t index, uint64_t token)
{
	uint32_t p = hash_key(sink, segment_id, index, token) & x->kmask;
	while (x->keys[p] != NONE && !same_key(&pay[x->keys[p]], sink, segment_id, index, token))
		p = (p + 1) & x->kmask;
	return p;
}

static uint32_t key_pos_of(const struct armed_index *x, const struct armed *pay, uint32_t id)
{
	const struct armed *a = &pay[id];
	return key_pos(x, pay, a->sink, a->seg->id, a->index, a->token);
}

static void key_remove(struct armed_index *x, const struct armed *pay, uint32_t p)
{
	for (uint32_t j = (p + 1) & x->kmask; x->keys[j] != NONE; j = (j + 1) & x->kmask)
		if (movable(hash_pay(&pay[x->keys[j]]) & x->kmask, p, j)) {
			x->keys[p] = x->keys[j];
			p = j;
		}
	x->keys[p] = NONE;
}

/* ------------------------------------------------------------------- the API */

/* A table of at least 4 (have + n) entries, a power of two: its mask, or 0 past 2^31. */
static uint32_t mask_for(uint64_t have, uint32_t n)
{
	uint64_t cap = MIN_CAP;
	while (cap < 4 * (have + n))
		cap *= 2;
	return cap > (1ull << 31) ? 0 : (uint32_t)(cap - 1);
}

int armed_index_reserve(struct armed_index *x, const struct armed *pay, uint32_t n)
{
	if (!x->arms || ((uint64_t)x->live + n) * 2 > (uint64_t)x->amask + 1) {
		uint32_t mask = mask_for(x->live, n);
		struct armed_index_arm *arms = mask ? malloc(((size_t)mask + 1) * sizeof(*arms)) : NULL;
		if (!arms)
			return -ENOMEM;
		for (uint64_t i = 0; i <= mask; i++)
			arms[i].id = NONE;
		struct armed_index_arm *old = x->arms;
		uint32_t omask = x->amask;
		x->arms = arms;
		x->amask = mask;
		for (uint64_t i = 0; old && i <= omask; i++)
			if (old[i].id != NONE)
				x->arms[arm_pos(x, old[i].id)] = old[i];
		free(old);
	}
	if (!x->keys || ((uint64_t)x->nkeys + n) * 2 > (uint64_t)x->kmask + 1) {
		uint32_t mask = mask_for(x->nkeys, n);
		uint32_t *keys = mask ? malloc(((size_t)mask + 1) * sizeof(*keys)) : NULL;
		if (!keys)
			return -ENOMEM;
		for (uint64_t i = 0; i <= mask; i++)
			keys[i] = NONE;
		uint32_t *old = x->keys, omask = x->kmask;
		x->keys = keys;
		x->kmask = mask;
		for (uint64_t i = 0; old && i <= omask; i++)
			if (old[i] != NONE)
				x->keys[key_pos_of(x, pay, old[i])] = old[i];
		free(old);
	}
	return 0;
}

void armed_index_add(struct armed_index *x, struct armed *pay, uint32_t id)
{
	uint32_t k = key_pos_of(x, pay, id), head = x->keys[k];
	if (head == NONE)
		x->nkeys++;
	else
		arm_of(x, head)->prev = id; /* it goes first in its key's chain */
	x->keys[k] = id;
	x->arms[arm_pos(x, id)] = (struct armed_index_arm){ .id = id, .prev = NONE, .next = head };
	x->live++;
	pay[id].indexed = true;
}

void armed_index_del(struct armed_index *x, struct armed *pay, uint32_t id)
{
	if (!pay[id].indexed)
		return;
	pay[id].indexed = false;
	uint32_t p = arm_pos(x, id);
	struct armed_index_arm a = x->arms[p];
	if (a.next != NONE)
		arm_of(x, a.next)->prev = a.prev;
	if (a.prev != NONE) {
		arm_of(x, a.prev)->next = a.next;
	} else { /* its key's first */
		uint32_t k = key_pos_of(x, pay, id);
		if (a.next != NONE)
			x->keys[k] = a.next;
		else {
			key_remove(x, pay, k);
			x->nkeys--;
		}
	}
	arm_remove(x, p);
	if (!--x->live)
		armed_index_free(x); /* the last deep word emptied: its tables go */
}

struct armed_index_key armed_index_key(const struct armed_index *x, const struct armed *pay,
				       const struct sink *sink, uint32_t segment_id, uint32_t index,
				       uint64_t token)
{
	return (struct armed_index_key){ .next = x->keys ? x->keys[key_pos(x, pay, sink, segment_id, index, token)]
							 : NONE };
}

uint32_t armed_index_next(const struct armed_index *x, struct armed_index_key *k)
{
	uint32_t id = k->next;
	/* the next one now, before the caller deletes this one (that frees the tables
	 * when it is the last: then there is no next) */
	if (id != NONE)
		k->next = arm_of(x, id)->next;
	return id;
}

void armed_index_free(struct armed_index *x)
{
	free(x->keys);
	free(x->arms);
	*x = (struct armed_index){ 0 };
}
