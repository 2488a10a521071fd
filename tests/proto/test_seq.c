/* test_seq.c — garuda_reached(): wrapping order at 0, 2^63, UINT64_MAX and across the
 * wrap, exactly as docs/protocol.md states it: (int64_t)(word - target) >= 0. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "fdcheck.h"
#include "seq.h"

TestSuite(seq, .init = fdcheck_begin, .fini = fdcheck_end);

#define HALF (UINT64_C(1) << 63) /* 2^63 */

Test(seq, equal_is_reached)
{
	static const uint64_t v[] = { 0, 1, HALF - 1, HALF, HALF + 1, UINT64_MAX - 1, UINT64_MAX };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		cr_assert(garuda_reached(v[i], v[i]), "%#llx", (unsigned long long)v[i]);
}

Test(seq, edges_at_zero)
{
	cr_assert(garuda_reached(1, 0));
	cr_assert_not(garuda_reached(0, 1));
	cr_assert(garuda_reached(0, UINT64_MAX), "0 follows UINT64_MAX");
	cr_assert_not(garuda_reached(UINT64_MAX, 0), "UINT64_MAX is one before 0");
}

Test(seq, edges_at_half)
{
	/* exactly 2^63 apart: neither direction counts as reached */
	cr_assert_not(garuda_reached(HALF, 0));
	cr_assert_not(garuda_reached(0, HALF));
	cr_assert_not(garuda_reached(UINT64_MAX, HALF - 1));
	cr_assert_not(garuda_reached(HALF - 1, UINT64_MAX));
	cr_assert(garuda_reached(HALF, HALF - 1));
	cr_assert_not(garuda_reached(HALF - 1, HALF));
	cr_assert(garuda_reached(HALF + 1, HALF));
	cr_assert_not(garuda_reached(HALF, HALF + 1));
}

Test(seq, edges_at_max)
{
	cr_assert(garuda_reached(UINT64_MAX, UINT64_MAX - 1));
	cr_assert_not(garuda_reached(UINT64_MAX - 1, UINT64_MAX));
	cr_assert_not(garuda_reached(UINT64_MAX, 1)); /* UINT64_MAX - 1 reads as -2 */
	cr_assert_not(garuda_reached(UINT64_MAX, 1) && garuda_reached(1, UINT64_MAX));
}

Test(seq, target_ahead_or_behind_by_half_minus_one)
{
	static const uint64_t bases[] = { 0, 1, 5, HALF - 1, HALF, HALF + 7, UINT64_MAX - 3, UINT64_MAX };
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		uint64_t w = bases[i];
		/* target behind the word by 2^63 - 1: reached */
		cr_assert(garuda_reached(w, w - (HALF - 1)), "base %#llx", (unsigned long long)w);
		/* target ahead of the word by 2^63 - 1: not reached */
		cr_assert_not(garuda_reached(w, w + (HALF - 1)), "base %#llx", (unsigned long long)w);
		/* 2^63 either way: not reached (the ambiguous half) */
		cr_assert_not(garuda_reached(w, w + HALF));
		cr_assert_not(garuda_reached(w, w - HALF));
	}
}

Test(seq, across_the_wrap)
{
	/* a counter stepping through the wrap: each value reached every earlier one
	 * (within 2^63) and none of the later ones */
	uint64_t start = UINT64_MAX - 8;
	for (uint64_t i = 0; i < 17; i++) {
		uint64_t w = start + i;
		for (uint64_t j = 0; j < 17; j++) {
			uint64_t t = start + j;
			cr_assert_eq(garuda_reached(w, t), j <= i, "word %#llx target %#llx",
				     (unsigned long long)w, (unsigned long long)t);
		}
	}
}

Test(seq, descriptor_layout)
{
	struct garuda_descriptor d = { .slot = { .segment = 1, .index = 2 }, .target = 3 };
	cr_assert_eq(d.slot.segment, 1);
	cr_assert_eq(d.slot.index, 2);
	cr_assert_eq(d.target, 3);
	cr_assert_eq(sizeof(struct garuda_slot), 8);
}
