/* seeds.h — the seed corpus of the decoder fuzz target, as code.
 *
 * One valid message per type, built through the encoder, then FUZZ_REFUSED_SEEDS
 * shapes the daemon refuses (issue 10: an empty datagram, too many fds, the first
 * 512 bytes of an oversized datagram), named "rN-...". A fuzz input is one byte
 * giving the number of fds that "arrived", then the datagram. gen-fuzz-corpus writes
 * these to tests/fuzz/corpus/ and the fuzz-corpus test checks the checked-in files
 * are still exactly what this produces (so a wire change cannot leave a stale corpus).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define FUZZ_SEED_MAX (1 + GARUDA_MSG_MAX)

struct fuzz_seed {
	char name[48];          /* file name in the corpus: "08-arm" */
	uint8_t bytes[FUZZ_SEED_MAX];
	size_t len;             /* 1 + datagram length */
};

#define FUZZ_REFUSED_SEEDS 3

/* Fill out[0..cap) with the seeds; returns how many (aborts if encoding fails). */
size_t fuzz_seeds(struct fuzz_seed *out, size_t cap);
