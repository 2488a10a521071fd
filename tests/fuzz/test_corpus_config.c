/* test_corpus_config.c — the config fuzz target's seed corpus (tests/fuzz/corpus-config)
 * in the ordinary test suite: every file replays through the target's checks (the
 * model of the rules, the values, the round trip through config_to_json()); files
 * named ok-* must load, bad-* must be refused; every prefix of every seed and bytes of
 * every value replay too, and so do files at the loader's size bound. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "corpus_dir.h"
#include "fdcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

TestSuite(fuzz_config, .init = fdcheck_begin, .fini = fdcheck_end);

static size_t load_seeds(struct corpus_seed *seeds, size_t cap)
{
	return corpus_load(FUZZ_CONFIG_CORPUS_DIR, seeds, cap);
}

/* config_load_file() of the bytes: 0 or -1, *err its message */
static int load(const struct corpus_seed *s, char **err)
{
	int fd = memfd_create("corpus-config", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, s->bytes, s->len), (ssize_t)s->len);
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct config c;
	config_defaults(&c);
	*err = NULL;
	int r = config_load_file(&c, path, err);
	config_free(&c);
	close(fd);
	return r;
}

Test(fuzz_config, every_seed_replays)
{
	static struct corpus_seed seeds[64];
	size_t n = load_seeds(seeds, 64);
	unsigned ok = 0, bad = 0;
	for (size_t i = 0; i < n; i++) {
		char *err;
		int r = load(&seeds[i], &err);
		if (strncmp(seeds[i].name, "ok-", 3) == 0) {
			cr_assert_eq(r, 0, "%s: %s", seeds[i].name, err);
			ok++;
		} else {
			cr_assert(strncmp(seeds[i].name, "bad-", 4) == 0,
				  "%s: neither ok-* nor bad-*", seeds[i].name);
			cr_assert_eq(r, -1, "%s loads", seeds[i].name);
			bad++;
		}
		free(err);
		cr_assert_eq(LLVMFuzzerTestOneInput(seeds[i].bytes, seeds[i].len), 0);
	}
	cr_assert_geq(ok, 4);
	cr_assert_geq(bad, 4);
}

Test(fuzz_config, prefixes_and_byte_values_replay)
{
	corpus_replay_prefixes_and_bytes(FUZZ_CONFIG_CORPUS_DIR, LLVMFuzzerTestOneInput, 64, 7);
}

/* {   ...   } of 1 MiB - 4096 - 1 bytes loads; one byte more is "larger than 1 MiB"
 * (the loader's buffer bound), as is 1 MiB + 1 */
Test(fuzz_config, size_bound_replays)
{
	size_t sizes[] = { (1u << 20) - 4097u, (1u << 20) - 4096u, (1u << 20) + 1u };
	uint8_t *buf = malloc((1u << 20) + 1u);
	cr_assert_not_null(buf);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(buf, ' ', sizes[i]);
		buf[0] = '{';
		buf[sizes[i] - 1] = '}';
		cr_assert_eq(LLVMFuzzerTestOneInput(buf, sizes[i]), 0);
	}
	free(buf);
}
