/* launcher.h — the Criterion layer over the launcher (garudad.h): gd_start/gd_stop
 * assert where garudad.h's calls return errors, and the hooks that wrap each test with
 * the fd-leak check (fdcheck.h) and kill what a failed test left running. Included by
 * harness.h; libgaruda's tests include it alone (proto's headers would clash with
 * garuda.h there). Implemented in harness.c. */
#pragma once

#include "garudad.h"

/* Criterion hooks: fdcheck_begin + harness reset (and, for GARUDA_TEST_EVENT_LOOP=
 * io_uring, a skip saying why where the kernel refuses io_uring) / kill leftovers +
 * fdcheck_end. */
void gd_test_init(void);
void gd_test_fini(void);
/* The same hooks without the io_uring probe (suites that do not choose the loop). */
void gd_test_init_any_loop(void);

/* gd_prepare_dir, asserting. */
void gd_prepare(struct gd_daemon *d);

/* gd_launch, asserting it came up (READY=1, or for socket activation: the listening
 * socket exists; call gd_daemon_ready() after the first connect). */
void gd_start(struct gd_daemon *d, const struct gd_opts *o);

/* Start again with the same options on the same paths after gd_kill (a restart). */
void gd_restart(struct gd_daemon *d);

/* SIGKILL and reap, as a crash: the runtime dir and socket files stay behind. */
void gd_kill(struct gd_daemon *d);

/* Wait for READY=1 on the notify socket (asserts, with the daemon's log on failure;
 * GD_DEADLINE_MS, no fallback: d->ready_seen is set when it returns). */
void gd_daemon_ready(struct gd_daemon *d);

/* SIGTERM, wait, assert exit status 0, remove the runtime dir, then (when no other
 * daemon of the test runs) gd_check_fds(): close everything before calling it. */
void gd_stop(struct gd_daemon *d);

/* Fail the test when it holds an fd it did not hold at gd_test_init (the fd check in
 * the body: Criterion 2.4 does not fail a test for assertions in .fini). */
void gd_check_fds(void);

