/* corpus_dir.c — a seed corpus read from its directory (corpus_dir.h). */
#include "corpus_dir.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

size_t corpus_load(const char *dir, struct corpus_seed *seeds, size_t cap)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		cr_assert_lt(n, cap);
		snprintf(seeds[n].name, sizeof(seeds[n].name), "%s", e->d_name);
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		cr_assert_geq(fd, 0, "%s: %s", e->d_name, strerror(errno));
		ssize_t r = read(fd, seeds[n].bytes, CORPUS_SEED_MAX);
		close(fd);
		cr_assert_geq(r, 0);
		seeds[n].len = (size_t)r;
		n++;
	}
	closedir(d);
	return n;
}

void corpus_replay_prefixes_and_bytes(const char *dir, int (*target)(const uint8_t *, size_t),
				      size_t run_max, size_t step)
{
	static struct corpus_seed seeds[128];
	size_t n = corpus_load(dir, seeds, 128);
	for (size_t i = 0; i < n; i++)
		for (size_t len = 0; len <= seeds[i].len; len++)
			cr_assert_eq(target(seeds[i].bytes, len), 0, "%s, its first %zu bytes",
				     seeds[i].name, len);
	uint8_t buf[1024];
	cr_assert_leq(run_max, sizeof(buf));
	for (unsigned v = 0; v < 256; v++) {
		memset(buf, (int)v, run_max);
		for (size_t len = 0; len <= run_max; len += step)
			cr_assert_eq(target(buf, len), 0, "%zu bytes of %#x", len, v);
	}
}
