/* corpus_dir.h — a fuzz target's seed corpus read from its directory, for the corpus
 * tests that replay it in the ordinary suite (test_corpus_*.c).
 * Criterion-asserting: a directory or file that cannot be read fails the test. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define CORPUS_SEED_MAX 1024 /* bytes read of each seed */

struct corpus_seed {
	char name[256];
	uint8_t bytes[CORPUS_SEED_MAX];
	size_t len;
};

/* Every file of dir but dot files into seeds (at most cap); how many. */
size_t corpus_load(const char *dir, struct corpus_seed *seeds, size_t cap);

/* The generated inputs every corpus test replays through its target (which returns 0):
 * every prefix of every seed of dir, then runs of each byte value, of lengths 0 to
 * run_max in steps of step. */
void corpus_replay_prefixes_and_bytes(const char *dir, int (*target)(const uint8_t *, size_t),
				      size_t run_max, size_t step);
