/* fdscan.c — see fdscan.h. */
#include "fdscan.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int fdscan(pid_t pid, unsigned char *set)
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
		if (set && fd >= 0 && fd < FDSCAN_MAX)
			set[fd] = 1;
	}
	closedir(d);
	return n;
}

int fdscan_report_new(const unsigned char *before, const char *who,
		      bool (*ignore)(const char *target))
{
	unsigned char now[FDSCAN_MAX] = { 0 };
	if (fdscan(0, now) < 0) {
		fprintf(stderr, "%s: cannot list /proc/self/fd\n", who);
		return 1;
	}
	int leaked = 0;
	for (int fd = 0; fd < FDSCAN_MAX; fd++) {
		if (!now[fd] || before[fd])
			continue;
		char link[64], target[PATH_MAX] = "?";
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		if (n >= 0)
			target[n] = '\0';
		if (ignore && ignore(target))
			continue;
		fprintf(stderr, "%s: leaked fd %d -> %s\n", who, fd, target);
		leaked++;
	}
	return leaked;
}
