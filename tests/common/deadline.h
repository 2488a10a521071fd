/* deadline.h — the tests' hang deadlines and waits (implemented in rawclient.c).
 * Deadlines only detect hangs; no test depends on timing to pass. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* generous: only for detecting hangs on a loaded 2-core box */
#define GD_DEADLINE_MS 30000
/* how long a "nothing else arrives" check listens; longer only catches more */
#define GD_QUIET_MS 50

/* Milliseconds left until a deadline taken from gd_deadline(ms). */
uint64_t gd_deadline(int ms);
int gd_left_ms(uint64_t deadline);
void gd_sleep_ms(int ms);
/* poll one fd for POLLIN: 1 readable (or hung up), 0 timeout, -errno */
int gd_wait_in(int fd, int timeout_ms);

/* The system call thread tid (of this process, or of another one it may inspect: a
 * garudad the test started) is blocked in, from /proc/TID/syscall: its number (and
 * *arg0, unless NULL: its first argument), or -1 while the thread runs, or when the
 * file cannot be read. */
long gd_blocked_in(pid_t tid, uint64_t *arg0);
/* Wait (GD_DEADLINE_MS) until thread tid is blocked in system call nr
 * (and, unless arg0 is NULL, with arg0 as its first argument: the futex a FUTEX_WAIT
 * sleeps on). false at the deadline. For tests that must act only once a waiter
 * sleeps, instead of after a delay that a loaded machine can outlast. */
bool gd_wait_blocked_in(pid_t tid, long nr, const void *arg0);
