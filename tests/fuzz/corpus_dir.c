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
