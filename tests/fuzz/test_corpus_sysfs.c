/* test_corpus_sysfs.c — the sysfs fuzz target's seed corpus (tests/fuzz/corpus-sysfs)
 * in the ordinary test suite: every file replays through the target's models; files
 * named ok-* must be taken by their parser (the first byte picks it, as in the
 * target: 0 a number, 1 a CPU list, 2 a /proc/PID/cgroup), bad-* refused; and every
 * prefix of every seed, and runs of every byte value, replay too. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus_dir.h"
#include "fdcheck.h"
#include "quota.h"
#include "sysfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

TestSuite(fuzz_sysfs, .init = fdcheck_begin, .fini = fdcheck_end);

/* Does the seed's parser take its text? */
static bool taken(const struct corpus_seed *s)
{
	char text[CORPUS_SEED_MAX + 1];
	memcpy(text, s->bytes + 1, s->len - 1);
	text[s->len - 1] = '\0';
	switch (s->bytes[0] % 3) {
	case 0: return sysfs_parse_uint(text, INT64_MAX) >= 0;
	case 1: {
		cpu_set_t set;
		return sysfs_parse_cpulist(text, &set) >= 0;
	}
	default: {
		FILE *f = fmemopen((void *)(s->bytes + 1), s->len - 1, "r");
		cr_assert_not_null(f);
		char *path = NULL;
		int r = quota_cgroup_line(f, &path);
		fclose(f);
		free(path);
		return r == 0;
	}
	}
}

Test(fuzz_sysfs, every_seed_replays)
{
	static struct corpus_seed seeds[64];
	size_t n = corpus_load(FUZZ_SYSFS_CORPUS_DIR, seeds, 64);
	unsigned ok[3] = { 0 }, bad[3] = { 0 };
	for (size_t i = 0; i < n; i++) {
		cr_assert_geq(seeds[i].len, 1, "%s: a parser byte, then the text", seeds[i].name);
		bool want = strncmp(seeds[i].name, "ok-", 3) == 0;
		cr_assert_eq(taken(&seeds[i]), want, "%s is %s", seeds[i].name, want ? "refused" : "taken");
		(want ? ok : bad)[seeds[i].bytes[0] % 3]++;
		cr_assert_eq(LLVMFuzzerTestOneInput(seeds[i].bytes, seeds[i].len), 0);
	}
	for (int p = 0; p < 3; p++)
		cr_assert(ok[p] >= 1 && bad[p] >= 1, "parser %d: %u ok and %u bad seeds", p, ok[p], bad[p]);
}

/* what the target's models say, checked against the kernel's forms by hand */
Test(fuzz_sysfs, the_forms_the_kernel_writes)
{
	cr_assert_eq(sysfs_parse_uint("0\n", 1023), 0);
	cr_assert_eq(sysfs_parse_uint("1023", 1023), 1023);
	cr_assert_eq(sysfs_parse_uint("1024\n", 1023), -1);
	cr_assert_eq(sysfs_parse_uint("-1\n", 1023), -1, "a device with no NUMA node");
	cr_assert_eq(sysfs_parse_uint("9223372036854775807", INT64_MAX), INT64_MAX);
	cr_assert_eq(sysfs_parse_uint("9223372036854775808", INT64_MAX), -1);
	cr_assert_eq(sysfs_parse_uint("1\n\n", 10), -1);
	cpu_set_t s;
	cr_assert_eq(sysfs_parse_cpulist("0-3,8,10-11\n", &s), 7);
	cr_assert(CPU_ISSET(8, &s) && CPU_ISSET(11, &s) && !CPU_ISSET(9, &s));
	cr_assert_eq(sysfs_parse_cpulist("0,0,0-1\n", &s), 2, "a count of distinct CPUs");
	cr_assert_eq(sysfs_parse_cpulist("\n", &s), 0, "a memory-only node");
}

Test(fuzz_sysfs, prefixes_and_byte_values_replay)
{
	corpus_replay_prefixes_and_bytes(FUZZ_SYSFS_CORPUS_DIR, LLVMFuzzerTestOneInput, 64, 7);
}
