/* test_examples.c — the examples, run as a user would: GARUDA_SOCKET pointing at a
 * test garudad, exit status 0 expected, their output kept in the test log. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "uring_futex.h"

TestSuite(examples, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 120);

static void socket_env(void *sock)
{
	setenv("GARUDA_SOCKET", sock, 1);
}

/* run argv with GARUDA_SOCKET at sock; returns the exit status, logs the output */
static int run_at(const char *sock, const char *const *argv, char *out, size_t cap)
{
	int st = gd_run_argv(argv, &(struct gd_run_opts){ .child = socket_env, .arg = (void *)sock },
			     out, cap);
	cr_assert_geq(st, 0, "cannot run %s: %s", argv[0], strerror(-st));
	cr_log_info("%s:\n%s", argv[0], out);
	return st;
}

static int run(struct gd_daemon *d, const char *const *argv, char *out, size_t cap)
{
	return run_at(d->sock, argv, out, cap);
}

Test(examples, minimal)
{
	struct gd_daemon d;
	char out[4096];
	td_start(&d, NULL);
	const char *argv[] = { EXAMPLE_MINIMAL, "2000", NULL };
	cr_assert_eq(run(&d, argv, out, sizeof(out)), 0, "minimal failed:\n%s", out);
	cr_assert_not_null(strstr(out, "sequence 1 completed"));
	td_stop(&d);
}

Test(examples, epoll)
{
	struct gd_daemon d;
	char out[16384];
	td_start(&d, NULL);
	const char *argv[] = { EXAMPLE_EPOLL, "5", "6", NULL };
	cr_assert_eq(run(&d, argv, out, sizeof(out)), 0, "epoll failed:\n%s", out);
	cr_assert_not_null(strstr(out, "30 completions from 5 streams"));
	td_stop(&d);
}

/* the io_uring loop: 3 streams, 40 sequences each, through the doorbell's
 * IORING_OP_FUTEX_WAIT where the kernel has it, else (and when the probe is made to
 * say no) through eventfd reads; every sequence reported once either way */
Test(examples, uring)
{
	struct gd_daemon d;
	char out[4096];
	td_start(&d, NULL);
	const char *argv[] = { EXAMPLE_URING, "40", NULL };
	cr_assert_eq(run(&d, argv, out, sizeof(out)), 0, "uring failed:\n%s", out);
	cr_assert_not_null(strstr(out, "120 sequences on 3 streams, reported once each"), "%s", out);
	/* the path the kernel allows (both messages name IORING_OP_FUTEX_WAIT: match whole) */
	struct io_uring ring;
	cr_assert_eq(io_uring_queue_init(8, &ring, 0), 0);
	bool futex = uring_futex_wait_supported(&ring);
	io_uring_queue_exit(&ring);
	cr_assert_not_null(strstr(out, futex ? "on the segment's doorbell with IORING_OP_FUTEX_WAIT"
					     : "the probe says this kernel has no IORING_OP_FUTEX_WAIT"),
			   "the %s path was not taken:\n%s", futex ? "doorbell" : "eventfd", out);
	setenv("URING_NO_FUTEX", "1", 1);
	cr_assert_eq(run(&d, argv, out, sizeof(out)), 0, "uring (eventfd fallback) failed:\n%s", out);
	unsetenv("URING_NO_FUTEX");
	cr_assert_not_null(strstr(out, "with IORING_OP_READ (the probe says this kernel has no "
				       "IORING_OP_FUTEX_WAIT"), "the fallback was not taken:\n%s", out);
	cr_assert_not_null(strstr(out, "120 sequences on 3 streams, reported once each"), "%s", out);
	td_stop(&d);
}

/* garuda-ping, the packaged check of the client path: every wait woken through
 * garudad, the socket named with how it was chosen, a latency per wait; --socket and
 * --json say the same */
Test(examples, garuda_ping)
{
	struct gd_daemon d;
	char out[4096], want[256];
	td_start(&d, NULL);
	const char *argv[] = { GARUDA_PING, "-n", "4", NULL };
	cr_assert_eq(run(&d, argv, out, sizeof(out)), 0, "garuda-ping failed:\n%s", out);
	snprintf(want, sizeof(want), "garudad at %s ($GARUDA_SOCKET), session ", d.sock);
	cr_assert_not_null(strstr(out, want), "%s", out);
	cr_assert_not_null(strstr(out, "sequence 4: store -> wake "), "%s", out);
	cr_assert_not_null(strstr(out, "4 wait(s) woken through garudad: store -> wake min "), "%s", out);

	const char *given[] = { GARUDA_PING, "--socket", d.sock, "--json", "-n", "2", NULL };
	cr_assert_eq(run_at("/nonexistent/garuda.sock", given, out, sizeof(out)), 0, "%s", out);
	snprintf(want, sizeof(want), "{\"socket\":\"%s\",\"socket_from\":\"--socket\",\"session\":", d.sock);
	cr_assert_eq(strncmp(out, want, strlen(want)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "\"count\":2,\"wake_us\":{\"min\":"), "%s", out);
	td_stop(&d);
}

/* garudad refusing the arm (armed quota 0): libgaruda wakes the wait by itself, and
 * garuda-ping exited 0 ("woken through garudad") for one ping; it now asks garudad how
 * many it completed */
Test(examples, garuda_ping_fails_when_garudad_delivered_nothing)
{
	struct gd_daemon d;
	char out[4096];
	td_start(&d, "\"quota\":{\"connection\":{\"armed\":0}}");
	const char *argv[] = { GARUDA_PING, "-n", "1", NULL };
	cr_assert_eq(run(&d, argv, out, sizeof(out)), 1, "garuda-ping passed with every arm refused:\n%s", out);
	cr_assert_not_null(strstr(out, "garudad completed 0 of the 1 wait(s)"), "%s", out);
	td_stop(&d);
}

/* no garudad: exit 1 with the no-socket hint (which socket, start garudad); a bad
 * count is a usage error */
Test(examples, garuda_ping_without_daemon)
{
	char out[4096];
	const char *argv[] = { GARUDA_PING, NULL };
	cr_assert_eq(run_at("/nonexistent/garuda.sock", argv, out, sizeof(out)), 1, "%s", out);
	cr_assert_not_null(strstr(out, "garuda-ping: cannot connect to garudad at /nonexistent/garuda.sock "
				       "($GARUDA_SOCKET): no such socket"), "%s", out);
	cr_assert_not_null(strstr(out, "start garudad"), "%s", out);
	const char *bad[] = { GARUDA_PING, "-n", "0", NULL };
	cr_assert_eq(run_at("/nonexistent/garuda.sock", bad, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "--count"), "%s", out);
}
