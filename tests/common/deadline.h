/* deadline.h — the tests' hang deadlines and waits (implemented in rawclient.c).
 * Deadlines only detect hangs; no test depends on timing to pass. */
#pragma once

#include <stdint.h>

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

