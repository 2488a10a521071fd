/* keymap.c — see keymap.h. */
#include "keymap.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t home_of(uint64_t key, uint32_t mask)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & mask; /* Fibonacci hashing */
}

/* the slot holding key, or the free slot where it would go (cap > 0, never full) */
static uint32_t find(const struct garuda_keymap *m, uint64_t key)
{
	uint32_t mask = m->cap - 1;
	for (uint32_t i = home_of(key, mask);; i = (i + 1) & mask)
		if (m->slot[i].key == key || m->slot[i].key == GARUDA_KEYMAP_EMPTY)
			return i;
}

bool garuda_keymap_get(const struct garuda_keymap *m, uint64_t key, uint64_t *val)
{
	if (!m->n || key == GARUDA_KEYMAP_EMPTY)
		return false;
	const struct garuda_keymap_slot *s = &m->slot[find(m, key)];
	if (s->key != key)
		return false;
	*val = s->val;
	return true;
}

int garuda_keymap_put(struct garuda_keymap *m, uint64_t key, uint64_t val)
{
	if (key == GARUDA_KEYMAP_EMPTY)
		return -EINVAL;
	if (m->n) { /* a key it holds: replaced in place (never grows, never fails) */
		struct garuda_keymap_slot *s = &m->slot[find(m, key)];
		if (s->key == key) {
			s->val = val;
			return 0;
		}
	}
	if (((uint64_t)m->n + 1) * 2 > m->cap) {
		uint32_t cap = m->cap ? m->cap * 2 : 16;
		if (cap < m->cap)
			return -ENOMEM;
		struct garuda_keymap_slot *s = malloc((size_t)cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		for (uint32_t i = 0; i < cap; i++)
			s[i].key = GARUDA_KEYMAP_EMPTY;
		struct garuda_keymap old = *m;
		*m = (struct garuda_keymap){ .slot = s, .cap = cap, .n = old.n };
		for (uint32_t i = 0; i < old.cap; i++)
			if (old.slot[i].key != GARUDA_KEYMAP_EMPTY)
				m->slot[find(m, old.slot[i].key)] = old.slot[i];
		free(old.slot);
	}
	struct garuda_keymap_slot *s = &m->slot[find(m, key)];
	m->n += s->key == GARUDA_KEYMAP_EMPTY;
	*s = (struct garuda_keymap_slot){ .key = key, .val = val };
	return 0;
}

/* The entries after the hole, up to a free slot, move back into it when their home
 * does not lie cyclically in (hole, their slot] (Knuth 6.4, Algorithm R). */
void garuda_keymap_del(struct garuda_keymap *m, uint64_t key)
{
	if (!m->n || key == GARUDA_KEYMAP_EMPTY)
		return;
	uint32_t mask = m->cap - 1, hole = find(m, key);
	if (m->slot[hole].key != key)
		return;
	for (uint32_t j = (hole + 1) & mask; m->slot[j].key != GARUDA_KEYMAP_EMPTY; j = (j + 1) & mask) {
		uint32_t home = home_of(m->slot[j].key, mask);
		bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!stays) {
			m->slot[hole] = m->slot[j];
			hole = j;
		}
	}
	m->slot[hole].key = GARUDA_KEYMAP_EMPTY;
	m->n--;
}

void garuda_keymap_free(struct garuda_keymap *m)
{
	free(m->slot);
	*m = (struct garuda_keymap){ 0 };
}
