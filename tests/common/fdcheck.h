/* fdcheck.h — every test checks that it leaked no fd.
 *
 * Use as Criterion init/fini:  Test(suite, name, .init = fdcheck_begin, .fini = fdcheck_end)
 * or wrap a whole suite with TestSuite(suite, .init = fdcheck_begin, .fini = fdcheck_end).
 * fdcheck_begin() records the set of open fds of this process; fdcheck_end() fails the
 * test when any fd is open that was not open before: it names each leaked fd and what
 * it points to, then aborts the test worker (Criterion 2.4 does not count assertions
 * that fail in .fini, but a crash there makes the test binary exit non-zero). fdcheck_count() is there for tests that check a peer process too.
 */
#pragma once

#include <sys/types.h>

void fdcheck_begin(void);
void fdcheck_end(void);

/* Number of open fds of process pid (0 = self), or -1. */
int fdcheck_count(pid_t pid);
