/* test_corpus_plan.c — the plan fuzz target's seed corpus (tests/fuzz/corpus-plan) in
 * the ordinary test suite: every file replays through the target's checks (round
 * trip, messages, the estimator model); files named ok-* must parse, all others
 * (bad-* plan texts, est-* estimator sequences) must be refused; and a few generated
 * inputs (every prefix of every seed, bytes of every value) replay too. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "errcode.h"
#include "corpus_dir.h"
#include "fdcheck.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

TestSuite(fuzz_plan, .init = fdcheck_begin, .fini = fdcheck_end);

static size_t load_seeds(struct corpus_seed *seeds, size_t cap)
{
	return corpus_load(FUZZ_PLAN_CORPUS_DIR, seeds, cap);
}

Test(fuzz_plan, every_seed_replays)
{
	static struct corpus_seed seeds[64];
	size_t n = load_seeds(seeds, 64);
	unsigned ok = 0, bad = 0, est = 0;
	for (size_t i = 0; i < n; i++) {
		struct garuda_plan p;
		char msg[GARUDA_PLAN_MSG_MAX];
		int r = garuda_plan_parse_n((const char *)seeds[i].bytes, seeds[i].len, &p, msg,
					    sizeof(msg));
		if (strncmp(seeds[i].name, "ok-", 3) == 0) {
			cr_assert_eq(r, 0, "%s: %s", seeds[i].name, msg);
			ok++;
		} else {
			cr_assert_eq(r, -GARUDA_E_BAD_PLAN, "%s parses", seeds[i].name);
			if (strncmp(seeds[i].name, "est-", 4) == 0)
				est++;
			else
				bad++;
		}
		cr_assert_eq(LLVMFuzzerTestOneInput(seeds[i].bytes, seeds[i].len), 0);
	}
	cr_assert_geq(ok, 4);
	cr_assert_geq(bad, 4);
	cr_assert_geq(est, 1);
}

Test(fuzz_plan, prefixes_and_byte_values_replay)
{
	corpus_replay_prefixes_and_bytes(FUZZ_PLAN_CORPUS_DIR, LLVMFuzzerTestOneInput, 64, 7);
}
