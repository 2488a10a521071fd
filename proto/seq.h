/* seq.h — sequence arithmetic on completion words, and the descriptor type.
 *
 * A stream stores 1, 2, 3, ... into its word. "The word reached target" is decided in
 * wrapping order, so a counter that wraps past UINT64_MAX still compares correctly
 * as long as word and target are within 2^63 of each other.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* (segment, word index) address of one word; index = line * 8 + word-in-line. */
struct garuda_slot {
	uint32_t segment;
	uint32_t index;
};

/* "the word at slot has reached target". */
struct garuda_descriptor {
	struct garuda_slot slot;
	uint64_t target;
};

/* True when word has reached target in wrapping order: (int64_t)(word - target) >= 0.
 * The subtraction is done unsigned (defined wrap), then reinterpreted as two's
 * complement; gcc and clang define that conversion as modular. */
static inline bool garuda_reached(uint64_t word, uint64_t target)
{
	return (int64_t)(word - target) >= 0;
}
