/* fdcheck.c — fd-leak check for tests; see fdcheck.h. */
#include "fdcheck.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FDCHECK_MAX 4096

static unsigned char fd_open_before[FDCHECK_MAX];

/* Fill set[] with the fds open in /proc/<pid>/fd; returns their count or -1. */
static int scan(pid_t pid, unsigned char *set)
{
	char path[64];
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/fd");
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int self = dirfd(d), n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (!pid && fd == self)
			continue;
		n++;
		if (set && fd >= 0 && fd < FDCHECK_MAX)
			set[fd] = 1;
	}
	closedir(d);
	return n;
}

int fdcheck_count(pid_t pid)
{
	return scan(pid, NULL);
}

void fdcheck_begin(void)
{
	memset(fd_open_before, 0, sizeof(fd_open_before));
	cr_assert(scan(0, fd_open_before) >= 0, "cannot list /proc/self/fd");
}

void fdcheck_end(void)
{
	unsigned char now[FDCHECK_MAX] = { 0 };
	cr_assert(scan(0, now) >= 0, "cannot list /proc/self/fd");
	int leaked = 0;
	for (int fd = 0; fd < FDCHECK_MAX; fd++) {
		if (now[fd] && !fd_open_before[fd]) {
			char link[64], target[PATH_MAX] = "?";
			snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
			ssize_t n = readlink(link, target, sizeof(target) - 1);
			if (n >= 0)
				target[n] = '\0';
			cr_log_error("leaked fd %d -> %s", fd, target);
			leaked++;
		}
	}
	if (leaked) {
		/* Criterion 2.4 ignores assertions that fail in .fini: crash the worker instead,
		 * which makes the test binary exit non-zero (and meson report the failure) */
		cr_log_error("test leaked %d fd(s)", leaked);
		fflush(NULL);
		abort();
	}
}
