/* keymap.h — a map from 64-bit keys to 64-bit values: open addressing with linear
 * probing, at most half full, deletion by backward shift (no tombstones: a lookup
 * never walks past what was deleted). For the lookups a request makes by a key it
 * carries: the watcher's owner of a session (proto/watch.c), garudad's binding of a
 * slot (daemon/session_req.c). glib's GHashTable or hsearch(3) would do the same;
 * neither is in proto's libc-only contract (hsearch has no deletion).
 *
 * Promises: get, put and del take O(1) expected time, whatever was put or deleted
 * before; a put that fails (out of memory) changes nothing; an empty map holds no
 * memory. Not thread-safe: a map belongs to the thread that owns its holder.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct garuda_keymap_slot {
	uint64_t key;
	uint64_t val;
};

struct garuda_keymap {
	struct garuda_keymap_slot *slot; /* cap slots; key GARUDA_KEYMAP_EMPTY: free */
	uint32_t cap, n;
};

/* the one key a map cannot hold (it marks a free slot) */
#define GARUDA_KEYMAP_EMPTY UINT64_MAX

/* key's value, or false (*val untouched) */
bool garuda_keymap_get(const struct garuda_keymap *m, uint64_t key, uint64_t *val);
/* key -> val, added or replaced: 0, or -ENOMEM (nothing changed; a replace never
 * fails). key must not be GARUDA_KEYMAP_EMPTY (-EINVAL). */
int garuda_keymap_put(struct garuda_keymap *m, uint64_t key, uint64_t val);
/* key gone (a key it does not hold: nothing) */
void garuda_keymap_del(struct garuda_keymap *m, uint64_t key);
void garuda_keymap_free(struct garuda_keymap *m);
