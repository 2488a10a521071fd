/* test_corpus.c — the fuzz seed corpus in the ordinary test suite: the checked-in
 * files are exactly what seeds.c generates (one per message type, each decodes), and
 * every file replays through the fuzz target's checks, as do a few invalid inputs. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errcode.h"
#include "fdcheck.h"
#include "seeds.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

TestSuite(fuzz, .init = fdcheck_begin, .fini = fdcheck_end);

static size_t read_seed(const char *name, uint8_t *buf, size_t cap)
{
	int dir = open(FUZZ_CORPUS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dir, 0, "%s: %s", FUZZ_CORPUS_DIR, strerror(errno));
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	int err = errno;
	close(dir);
	cr_assert_geq(fd, 0, "%s/%s: %s (regenerate: meson compile -C BUILD fuzz-corpus)",
		      FUZZ_CORPUS_DIR, name, strerror(err));
	ssize_t n = read(fd, buf, cap);
	close(fd);
	cr_assert_geq(n, 0);
	return (size_t)n;
}

Test(fuzz, corpus_is_current)
{
	static struct fuzz_seed seeds[32];
	size_t n = fuzz_seeds(seeds, 32);
	cr_assert_eq(n, GARUDA_MSG_TYPE_MAX_ + FUZZ_REFUSED_SEEDS, "one seed per message type, and the refused shapes");
	for (size_t i = 0; i < n; i++) {
		uint8_t buf[FUZZ_SEED_MAX + 1];
		size_t len = read_seed(seeds[i].name, buf, sizeof(buf));
		cr_assert_eq(len, seeds[i].len, "%s: stale, regenerate with fuzz-corpus", seeds[i].name);
		cr_assert_arr_eq(buf, seeds[i].bytes, len, "%s: stale", seeds[i].name);
	}
	/* and nothing else lies in the corpus directory */
	DIR *d = opendir(FUZZ_CORPUS_DIR);
	cr_assert_not_null(d);
	struct dirent *e;
	size_t files = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			files++;
	closedir(d);
	cr_assert_eq(files, n, "unexpected files in %s", FUZZ_CORPUS_DIR);
}

Test(fuzz, every_seed_decodes)
{
	static struct fuzz_seed seeds[32];
	size_t n = fuzz_seeds(seeds, 32);
	bool seen[GARUDA_MSG_TYPE_MAX_ + 1] = { false };
	for (size_t i = 0; i < n; i++) {
		uint8_t buf[FUZZ_SEED_MAX + 1];
		size_t len = read_seed(seeds[i].name, buf, sizeof(buf));
		struct garuda_msg m;
		int r = garuda_msg_decode(buf + 1, len - 1, buf[0], &m);
		if (i >= GARUDA_MSG_TYPE_MAX_) { /* the refused shapes, and the cookie §5 echoes */
			static const int want[FUZZ_REFUSED_SEEDS] = { -GARUDA_E_TOO_SHORT, -GARUDA_E_FD_COUNT,
								     -GARUDA_E_BAD_LENGTH };
			cr_assert_eq(r, want[i - GARUDA_MSG_TYPE_MAX_], "%s: %s", seeds[i].name,
				     garuda_strerror(r));
			uint64_t cookie = 0;
			if (len - 1 >= GARUDA_HDR_BYTES)
				memcpy(&cookie, buf + 1 + 16, 8);
			cr_assert_eq(garuda_peek_cookie(buf + 1, len - 1), cookie, "%s: cookie", seeds[i].name);
			cr_assert(len - 1 < GARUDA_HDR_BYTES || cookie == 0x0102030405060710ull,
				  "%s: the ARM seed's cookie", seeds[i].name);
			cr_assert_eq(LLVMFuzzerTestOneInput(buf, len), 0);
			continue;
		}
		cr_assert_eq(r, 0, "%s: %s", seeds[i].name, garuda_strerror(r));
		seen[m.type] = true;
		cr_assert_eq(LLVMFuzzerTestOneInput(buf, len), 0);
	}
	for (unsigned t = 1; t <= GARUDA_MSG_TYPE_MAX_; t++)
		cr_assert(seen[t], "no seed of type %u", t);
}

Test(fuzz, target_survives_invalid_inputs)
{
	uint8_t buf[FUZZ_SEED_MAX + 64];
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(LLVMFuzzerTestOneInput(buf, 0), 0);
	for (size_t len = 1; len < sizeof(buf); len += 3)
		cr_assert_eq(LLVMFuzzerTestOneInput(buf, len), 0);
	memset(buf, 0xff, sizeof(buf));
	for (size_t len = 1; len < sizeof(buf); len += 5)
		cr_assert_eq(LLVMFuzzerTestOneInput(buf, len), 0);
	/* every seed with every fd count and every single-byte truncation */
	static struct fuzz_seed seeds[32];
	size_t n = fuzz_seeds(seeds, 32);
	for (size_t i = 0; i < n; i++) {
		memcpy(buf, seeds[i].bytes, seeds[i].len);
		for (unsigned f = 0; f < 4; f++) {
			buf[0] = (uint8_t)f;
			for (size_t len = 1; len <= seeds[i].len; len++)
				cr_assert_eq(LLVMFuzzerTestOneInput(buf, len), 0);
		}
	}
	/* batches: every count byte with every length the header claims */
	for (size_t i = 0; i < n; i++) {
		uint8_t t = seeds[i].bytes[1];
		if (t != GARUDA_MSG_ARM_BATCH && t != GARUDA_MSG_READY_BATCH)
			continue;
		for (unsigned count = 0; count < 20; count++)
			for (size_t len = GARUDA_HDR_BYTES; len <= GARUDA_MSG_MAX + 32; len += 8) {
				memset(buf, 0, sizeof(buf));
				memcpy(buf, seeds[i].bytes, seeds[i].len);
				buf[1 + 4] = (uint8_t)len;
				buf[1 + 5] = (uint8_t)(len >> 8);
				buf[1 + 24] = (uint8_t)count;
				cr_assert_eq(LLVMFuzzerTestOneInput(buf, 1 + len), 0);
			}
	}
}
