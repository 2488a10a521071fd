/* test_corpus_replay.c — the replay fuzz target's seed corpus (tests/fuzz/corpus-replay)
 * in the ordinary test suite: every file replays through the target's checks (the cost
 * and trace models, the run's invariants); files named ok-* must parse (their cost line
 * and their trace), bad-* must be refused (the cost line or the trace); and every
 * prefix of every seed, and bytes of every value, replay too. A seed is split as the
 * target splits it (fuzz_replay_split(): the first line is the --cost text). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "corpus_dir.h"
#include "fdcheck.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
bool fuzz_replay_split(const uint8_t *data, size_t size, size_t *cost_len, size_t *trace_off);

TestSuite(fuzz_replay, .init = fdcheck_begin, .fini = fdcheck_end);

static size_t load_seeds(struct corpus_seed *seeds, size_t cap)
{
	return corpus_load(FUZZ_REPLAY_CORPUS_DIR, seeds, cap);
}

Test(fuzz_replay, every_seed_replays)
{
	static struct corpus_seed seeds[64];
	size_t n = load_seeds(seeds, 64);
	unsigned ok = 0, bad = 0;
	for (size_t i = 0; i < n; i++) {
		const struct corpus_seed *s = &seeds[i];
		size_t cost_len, off;
		cr_assert(fuzz_replay_split(s->bytes, s->len, &cost_len, &off), "%s: no cost line",
			  s->name);
		char cost_text[CORPUS_SEED_MAX + 1], msg[160];
		memcpy(cost_text, s->bytes, cost_len);
		cost_text[cost_len] = '\0';
		struct garuda_replay_cost cost = garuda_replay_default_cost();
		int rc = garuda_replay_cost_parse(&cost, cost_text, msg, sizeof(msg));
		char cost_msg[160];
		snprintf(cost_msg, sizeof(cost_msg), "%s", rc ? msg : "");
		struct garuda_replay_trace t;
		int rt = garuda_replay_trace_parse((const char *)s->bytes + off, s->len - off, &t,
						   msg, sizeof(msg));
		if (rt == 0)
			garuda_replay_trace_free(&t);
		if (strncmp(s->name, "ok-", 3) == 0) {
			cr_assert_eq(rc, 0, "%s: cost: %s", s->name, cost_msg);
			cr_assert_eq(rt, 0, "%s: %s", s->name, msg);
			ok++;
		} else {
			cr_assert(strncmp(s->name, "bad-", 4) == 0, "%s: neither ok-* nor bad-*",
				  s->name);
			cr_assert(rc != 0 || rt != 0, "%s parses", s->name);
			cr_assert(rc == 0 || rc == -EINVAL);
			cr_assert(rt == 0 || rt == -EINVAL || rt == -ERANGE, "%s: %d", s->name, rt);
			bad++;
		}
		cr_assert_eq(LLVMFuzzerTestOneInput(s->bytes, s->len), 0);
	}
	cr_assert_geq(ok, 4);
	cr_assert_geq(bad, 4);
}

Test(fuzz_replay, prefixes_and_byte_values_replay)
{
	corpus_replay_prefixes_and_bytes(FUZZ_REPLAY_CORPUS_DIR, LLVMFuzzerTestOneInput, 300, 13);
}
