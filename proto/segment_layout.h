/* segment_layout.h — the shared-memory layout of a segment.
 *
 * A segment is one sealed memfd: a header of two lines, then N lines of 8 words.
 *
 *   offset 0    line 0: identity (magic, layout version, line count, segment id)
 *   offset 64   line 1: doorbell (a 32-bit futex word the daemon bumps and wakes)
 *   offset 128  line 0 of the words, then line 1, ...
 *
 * The file size is the header plus N * 64, rounded up to the page size. Every value
 * in a segment is written by an untrusted party: readers read each field once and
 * range-check it; nothing here is ever used as a pointer or an index by the daemon
 * (the daemon keeps its own copy of the line count).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define GARUDA_SEGMENT_MAGIC 0x3147455341445247ull /* "GRDASEG1" little-endian */
#define GARUDA_SEGMENT_LAYOUT 1u
#define GARUDA_LINE_BYTES 64u
#define GARUDA_WORDS_PER_LINE 8u
#define GARUDA_SEGMENT_HEADER_BYTES 128u
#define GARUDA_SEGMENT_MAX_LINES 65536u /* 4 MiB of lines per segment */

struct garuda_line {
	uint64_t word[GARUDA_WORDS_PER_LINE];
} __attribute__((aligned(64)));

struct garuda_segment_header {
	/* line 0: identity, written once by the daemon before the fd is sent */
	uint64_t magic;
	uint32_t layout;
	uint32_t lines;
	uint32_t segment_id;
	int32_t numa_node;
	uint64_t reserved0[5];
	/* line 1: doorbell; bumped (+1, wrapping) and FUTEX_WAKE'd by the daemon for
	 * every doorbell-form readiness. Shared futex: use FUTEX_WAIT without PRIVATE. */
	uint32_t doorbell;
	uint32_t reserved1[15];
} __attribute__((aligned(64)));

struct garuda_segment {
	struct garuda_segment_header hdr;
	struct garuda_line line[];
};

_Static_assert(sizeof(struct garuda_line) == 64, "line is one cache line");
_Static_assert(sizeof(struct garuda_segment_header) == GARUDA_SEGMENT_HEADER_BYTES, "header size");
_Static_assert(offsetof(struct garuda_segment_header, magic) == 0, "magic offset");
_Static_assert(offsetof(struct garuda_segment_header, layout) == 8, "layout offset");
_Static_assert(offsetof(struct garuda_segment_header, lines) == 12, "lines offset");
_Static_assert(offsetof(struct garuda_segment_header, segment_id) == 16, "segment_id offset");
_Static_assert(offsetof(struct garuda_segment_header, numa_node) == 20, "numa_node offset");
_Static_assert(offsetof(struct garuda_segment_header, doorbell) == 64, "doorbell offset");
_Static_assert(offsetof(struct garuda_segment, line) == GARUDA_SEGMENT_HEADER_BYTES, "lines offset");

/* Bytes of a segment of `lines` lines, rounded up to `page` (a power of two). */
static inline size_t garuda_segment_bytes(uint32_t lines, size_t page)
{
	size_t raw = GARUDA_SEGMENT_HEADER_BYTES + (size_t)lines * GARUDA_LINE_BYTES;
	return (raw + page - 1) & ~(page - 1);
}

/* Fill the header of a freshly mapped (zeroed) segment: garudad's, and libgaruda's
 * local one (segment_id 0: none yet), which SEGMENT_ATTACH checks field by field. */
static inline void garuda_segment_header_init(struct garuda_segment *seg, uint32_t lines,
					      uint32_t segment_id, int numa_node)
{
	seg->hdr.magic = GARUDA_SEGMENT_MAGIC;
	seg->hdr.layout = GARUDA_SEGMENT_LAYOUT;
	seg->hdr.lines = lines;
	seg->hdr.segment_id = segment_id;
	seg->hdr.numa_node = numa_node;
}

/* Word `index` (line * 8 + word) of a mapped segment; index must be < lines * 8. */
static inline uint64_t *garuda_segment_word(struct garuda_segment *seg, uint32_t index)
{
	return &seg->line[index / GARUDA_WORDS_PER_LINE].word[index % GARUDA_WORDS_PER_LINE];
}
