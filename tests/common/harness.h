/* harness.h — what every test that runs garudad includes: the launcher (garudad.h) and
 * the raw-protocol client (rawclient.h) of tests/common, plus the Criterion layer:
 * gd_start/gd_stop assert where garudad.h's calls return errors, and the hooks that
 * wrap each test with the fd-leak check (fdcheck.h) and kill what a failed test left.
 *
 * The daemon side: gd_start() makes a private runtime directory, writes a config file,
 * and starts garudad (see garudad.h for the binary, the options and the event loop),
 * then waits for READY=1. gd_stop() sends SIGTERM and asserts a clean exit 0.
 * Client functions (rawclient.h) never assert: wrap them in gd_ok()/gd_refused().
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "launcher.h"
#include "rawclient.h"

/* Number of open fds of the daemon. */
int gd_fd_count(struct gd_daemon *d);
/* Wait (deadline) until the daemon's fd count is <= n; returns the last count. */
int gd_wait_fds_at_most(struct gd_daemon *d, int n);

/* Warm the daemon up with one full client round trip, wait until the status says no
 * client and no segment is left, and record d->fd_baseline. */
void gd_baseline(struct gd_daemon *d);

/* ------------------------------------------------------- assertion helpers ---- */
/* (criterion macros: use them in the test's own thread only) */

/* expr must return 0 */
#define gd_ok(expr)                                                                    \
	do {                                                                           \
		int gd_r_ = (expr);                                                    \
		cr_assert_eq(gd_r_, 0, "%s: %s", #expr, gd_strerr(gd_r_));              \
	} while (0)

/* expr must return the registry code `code` (an ERROR from the daemon) */
#define gd_refused(expr, code)                                                         \
	do {                                                                           \
		int gd_r_ = (expr);                                                    \
		cr_assert_eq(gd_r_, (code), "%s: expected ERROR{%s}, got %s", #expr,   \
			     garuda_errcode_name(code), gd_strerr(gd_r_));             \
	} while (0)
