/* test_corpus_control.c — the control fuzz target's seed corpus
 * (tests/fuzz/corpus-control) in the ordinary test suite: every file replays through
 * the target's checks (the model of the request rules, the reply, the escaping); files
 * named ok-* must get a reply, bad-* an error, and the bad ones must between them
 * meet BAD_JSON, BAD_ARGUMENT, UNKNOWN_REQUEST and NO_CLIENT; every prefix of every
 * seed and bytes of every value replay too, and so do datagrams at the 4096-byte
 * bound (one byte over: TOO_LONG). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_dir.h"
#include "errcode.h"
#include "fdcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int fuzz_control_reply_code(const uint8_t *data, size_t size);

TestSuite(fuzz_control, .init = fdcheck_begin, .fini = fdcheck_end);

static size_t load_seeds(struct corpus_seed *seeds, size_t cap)
{
	return corpus_load(FUZZ_CONTROL_CORPUS_DIR, seeds, cap);
}

Test(fuzz_control, every_seed_replays)
{
	static struct corpus_seed seeds[96];
	size_t n = load_seeds(seeds, 96);
	unsigned ok = 0, bad = 0, seen = 0;
	static const int codes[] = { GARUDA_E_BAD_JSON, GARUDA_E_BAD_ARGUMENT,
				     GARUDA_E_UNKNOWN_REQUEST, GARUDA_E_NO_CLIENT };
	for (size_t i = 0; i < n; i++) {
		int code = fuzz_control_reply_code(seeds[i].bytes, seeds[i].len);
		if (strncmp(seeds[i].name, "ok-", 3) == 0) {
			cr_assert_eq(code, 0, "%s: error %d", seeds[i].name, code);
			ok++;
		} else {
			cr_assert(strncmp(seeds[i].name, "bad-", 4) == 0,
				  "%s: neither ok-* nor bad-*", seeds[i].name);
			cr_assert_neq(code, 0, "%s gets a reply", seeds[i].name);
			for (unsigned k = 0; k < sizeof(codes) / sizeof(codes[0]); k++)
				if (code == codes[k])
					seen |= 1u << k;
			bad++;
		}
		cr_assert_eq(LLVMFuzzerTestOneInput(seeds[i].bytes, seeds[i].len), 0);
	}
	cr_assert_geq(ok, 4);
	cr_assert_geq(bad, 4);
	cr_assert_eq(seen, (1u << (sizeof(codes) / sizeof(codes[0]))) - 1, "codes met: %#x", seen);
}

Test(fuzz_control, prefixes_and_byte_values_replay)
{
	corpus_replay_prefixes_and_bytes(FUZZ_CONTROL_CORPUS_DIR, LLVMFuzzerTestOneInput, 64, 7);
}

/* {"request":"status"} padded with spaces to 4096 bytes is a request; 4097: TOO_LONG */
Test(fuzz_control, size_bound_replays)
{
	static uint8_t buf[4097];
	static const char req[] = "{\"request\":\"status\"}";
	for (size_t len = 4096; len <= 4097; len++) {
		memset(buf, ' ', len);
		memcpy(buf, req, sizeof(req) - 1);
		cr_assert_eq(fuzz_control_reply_code(buf, len), len > 4096 ? GARUDA_E_TOO_LONG : 0);
		cr_assert_eq(LLVMFuzzerTestOneInput(buf, len), 0);
	}
}
