/* fdcheck.c — fd-leak check for tests; see fdcheck.h. */
#include "fdcheck.h"
#include "fdscan.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char fd_open_before[FDSCAN_MAX];

int fdcheck_count(pid_t pid)
{
	return fdscan(pid, NULL);
}

void fdcheck_begin(void)
{
	memset(fd_open_before, 0, sizeof(fd_open_before));
	cr_assert(fdscan(0, fd_open_before) >= 0, "cannot list /proc/self/fd");
}

void fdcheck_end(void)
{
	int leaked = fdscan_report_new(fd_open_before, "fdcheck", NULL);
	if (leaked) {
		/* Criterion 2.4 ignores assertions that fail in .fini: crash the worker instead,
		 * which makes the test binary exit non-zero (and meson report the failure) */
		cr_log_error("test leaked %d fd(s)", leaked);
		fflush(NULL);
		abort();
	}
}
