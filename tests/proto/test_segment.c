/* test_segment.c — the shared-memory layout a client maps: header offsets, magic
 * bytes, file size rounding and word addressing (index = line * 8 + word). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdcheck.h"
#include "segment_layout.h"

TestSuite(segment, .init = fdcheck_begin, .fini = fdcheck_end);

Test(segment, constants)
{
	cr_assert_eq(GARUDA_LINE_BYTES, 64);
	cr_assert_eq(GARUDA_WORDS_PER_LINE, 8);
	cr_assert_eq(GARUDA_SEGMENT_HEADER_BYTES, 128);
	cr_assert_eq(GARUDA_SEGMENT_MAX_LINES, 65536);
	cr_assert_eq(GARUDA_SEGMENT_LAYOUT, 1);
	cr_assert_eq(sizeof(struct garuda_segment_header), 128);
}

Test(segment, magic_reads_grdaseg1_in_memory)
{
	uint64_t m = GARUDA_SEGMENT_MAGIC;
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(m >> (8 * i));
	cr_assert_arr_eq(le, "GRDASEG1", 8);
}

Test(segment, header_offsets)
{
	static uint8_t raw[4096] __attribute__((aligned(64)));
	struct garuda_segment *seg = (struct garuda_segment *)raw;
	memset(raw, 0, sizeof(raw));
	seg->hdr.magic = GARUDA_SEGMENT_MAGIC;
	seg->hdr.layout = 0x11223344;
	seg->hdr.lines = 0x55667788;
	seg->hdr.segment_id = 0x99aabbcc;
	seg->hdr.numa_node = -1;
	seg->hdr.doorbell = 0xdeadbeef;
	cr_assert_arr_eq(raw, "GRDASEG1", 8);
	cr_assert_arr_eq(raw + 8, ((uint8_t[]){ 0x44, 0x33, 0x22, 0x11 }), 4);
	cr_assert_arr_eq(raw + 12, ((uint8_t[]){ 0x88, 0x77, 0x66, 0x55 }), 4);
	cr_assert_arr_eq(raw + 16, ((uint8_t[]){ 0xcc, 0xbb, 0xaa, 0x99 }), 4);
	cr_assert_arr_eq(raw + 20, ((uint8_t[]){ 0xff, 0xff, 0xff, 0xff }), 4);
	cr_assert_arr_eq(raw + 64, ((uint8_t[]){ 0xef, 0xbe, 0xad, 0xde }), 4);
	for (size_t i = 24; i < 64; i++)
		cr_assert_eq(raw[i], 0, "reserved byte %zu", i);
	for (size_t i = 68; i < 128; i++)
		cr_assert_eq(raw[i], 0, "reserved byte %zu", i);
}

Test(segment, bytes_round_up_to_the_page)
{
	cr_assert_eq(garuda_segment_bytes(0, 4096), 4096);
	cr_assert_eq(garuda_segment_bytes(1, 4096), 4096);
	cr_assert_eq(garuda_segment_bytes(62, 4096), 4096); /* 128 + 62*64 = 4096 exactly */
	cr_assert_eq(garuda_segment_bytes(63, 4096), 8192);
	cr_assert_eq(garuda_segment_bytes(64, 4096), 8192);
	cr_assert_eq(garuda_segment_bytes(126, 4096), 8192);
	cr_assert_eq(garuda_segment_bytes(127, 4096), 12288);
	cr_assert_eq(garuda_segment_bytes(65536, 4096), 4198400); /* 4 MiB + one page */
	cr_assert_eq(garuda_segment_bytes(1, 65536), 65536);
	cr_assert_eq(garuda_segment_bytes(1022, 65536), 65536); /* 128 + 1022*64 = 65536 */
	cr_assert_eq(garuda_segment_bytes(1023, 65536), 131072);
	cr_assert_eq(garuda_segment_bytes(1, 1), 192, "page 1: no rounding");
	for (uint32_t lines = 1; lines <= 300; lines++) {
		size_t b = garuda_segment_bytes(lines, 4096);
		cr_assert_eq(b % 4096, 0);
		cr_assert_geq(b, 128 + (size_t)lines * 64);
		cr_assert_lt(b - (128 + (size_t)lines * 64), 4096);
	}
}

Test(segment, word_addressing)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t bytes = garuda_segment_bytes(16, (size_t)page);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	struct garuda_segment *seg = p;
	uint8_t *base = p;
	for (uint32_t index = 0; index < 16 * 8; index++) {
		uint64_t *w = garuda_segment_word(seg, index);
		cr_assert_eq((uint8_t *)w - base, 128 + (ptrdiff_t)index * 8, "index %u", index);
		cr_assert_eq(w, &seg->line[index / 8].word[index % 8]);
		cr_assert_eq((uintptr_t)w % 8, 0);
		*w = index + 1;
	}
	/* line L starts at 128 + 64 L, its words are consecutive little-endian u64 */
	cr_assert_eq(base[128 + 64 * 3 + 8 * 5], 3 * 8 + 5 + 1);
	cr_assert_eq(munmap(p, bytes), 0);
}
