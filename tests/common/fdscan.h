/* fdscan.h — the fd-leak check's core, without Criterion: the fds a process has open,
 * and those open now that were not before. fdcheck.h builds every Criterion test's
 * check on it; programs that are tests of their own (garuda-bench, gpu-latency) use it
 * directly. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define FDSCAN_MAX 4096 /* fds at or above it are not seen */

/* Mark in set[] (FDSCAN_MAX entries, unless NULL) the fds open in process pid (0: this
 * one, the listing's own fd left out); their count, or -1 when /proc does not say. */
int fdscan(pid_t pid, unsigned char *set);

/* Name on stderr ("WHO: leaked fd N -> TARGET") each fd of this process open now and
 * not in before[], but those whose target ignore() accepts (NULL: none); how many,
 * 1 when /proc does not say. */
int fdscan_report_new(const unsigned char *before, const char *who,
		      bool (*ignore)(const char *target));
