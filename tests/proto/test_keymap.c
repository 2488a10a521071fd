/* test_keymap.c — proto/keymap.h against a plain array as the reference: random puts,
 * replaces and deletes at three sizes (a 16-slot table, whose probe runs wrap around
 * its end, up to thousands of keys), keys that differ only in their high half and
 * keys that share their home slot; after every operation the key it touched, and
 * every few operations every key, reads back as the reference says. A backward shift
 * that moved an entry across its home, or left one behind, loses a key here.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fdcheck.h"
#include "keymap.h"

TestSuite(keymap, .init = fdcheck_begin, .fini = fdcheck_end);

/* key k: odd ones differ from each other only in their high half; even ones scattered */
static uint64_t key_of(unsigned k)
{
	if (k % 2)
		return (uint64_t)k << 32;
	uint64_t z = k + 0x9e3779b97f4a7c15ull; /* splitmix64's finalizer */
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) >> 1; /* never GARUDA_KEYMAP_EMPTY */
}

static void expect_all(const struct garuda_keymap *m, const bool *live, const uint64_t *val, unsigned keys)
{
	unsigned n = 0;
	for (unsigned k = 0; k < keys; k++) {
		uint64_t v = 0;
		bool got = garuda_keymap_get(m, key_of(k), &v);
		cr_assert_eq(got, live[k], "key %u: %s", k, live[k] ? "lost" : "still there");
		if (got)
			cr_assert_eq(v, val[k], "key %u: value %llu, not %llu", k, (unsigned long long)v,
				     (unsigned long long)val[k]);
		n += live[k];
	}
	cr_assert_eq(m->n, n);
	cr_assert_leq((uint64_t)m->n * 2, m->cap, "at most half full");
}

Test(keymap, random_puts_replaces_and_deletes_read_back_as_a_plain_array)
{
	enum { KEYS = 4000 };
	static bool live[KEYS];
	static uint64_t val[KEYS];
	static const unsigned keys_at[] = { 64, 400, KEYS }, most[] = { 7, 150, 1800 };
	uint64_t x = 88172645463325252ull;
	for (unsigned r = 0; r < 3; r++) {
		struct garuda_keymap m = { 0 };
		memset(live, 0, sizeof(live));
		unsigned n = 0, keys = keys_at[r];
		for (unsigned i = 0; i < 60000; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			unsigned k = (unsigned)(x % keys);
			if (live[k] && (x >> 40) % 3 == 0) {
				garuda_keymap_del(&m, key_of(k));
				live[k] = false;
				n--;
			} else if (live[k] || n < most[r]) {
				cr_assert_eq(garuda_keymap_put(&m, key_of(k), x), 0);
				n += !live[k];
				live[k] = true;
				val[k] = x;
			} else {
				garuda_keymap_del(&m, key_of(k)); /* a key it does not hold: nothing */
			}
			uint64_t v = 0;
			cr_assert_eq(garuda_keymap_get(&m, key_of(k), &v), live[k], "op %u, key %u", i, k);
			if (i % 13 == 0)
				expect_all(&m, live, val, keys);
		}
		expect_all(&m, live, val, keys);
		garuda_keymap_free(&m);
		cr_assert_eq(m.cap, 0);
	}
}

Test(keymap, keys_of_one_home_and_the_reserved_key)
{
	struct garuda_keymap m = { 0 };
	uint64_t v = 7;
	cr_assert(!garuda_keymap_get(&m, 1, &v), "an empty map holds nothing");
	cr_assert_eq(v, 7);
	garuda_keymap_del(&m, 1);
	cr_assert_eq(garuda_keymap_put(&m, GARUDA_KEYMAP_EMPTY, 1), -EINVAL);
	cr_assert_eq(m.n, 0);
	/* multiples of 2^32 * 16 share their home in a 16-slot table: one probe run */
	for (uint64_t i = 1; i <= 7; i++)
		cr_assert_eq(garuda_keymap_put(&m, i << 36, i), 0);
	cr_assert_eq(m.cap, 16);
	garuda_keymap_del(&m, 3ull << 36); /* the middle of the run */
	garuda_keymap_del(&m, 1ull << 36); /* its head */
	for (uint64_t i = 1; i <= 7; i++) {
		bool want = i != 3 && i != 1;
		cr_assert_eq(garuda_keymap_get(&m, i << 36, &v), want, "key %llu", (unsigned long long)i);
		if (want)
			cr_assert_eq(v, i);
	}
	cr_assert_eq(garuda_keymap_put(&m, 7ull << 36, 70), 0); /* replaced */
	cr_assert(garuda_keymap_get(&m, 7ull << 36, &v) && v == 70);
	cr_assert_eq(m.n, 5);
	garuda_keymap_free(&m);
}
