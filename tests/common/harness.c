/* harness.c — the Criterion layer over tests/common's launcher and raw client; see
 * harness.h. */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdcheck.h"

static void test_init(bool probe_uring)
{
	gd_kill_all();
	/* a daemon that dies with SIGPIPE must not take the test with it */
	signal(SIGPIPE, SIG_IGN);
	/* the io_uring run needs a kernel that allows io_uring (seccomp, sysctl
	 * kernel.io_uring_disabled): where it is refused, say so and skip */
	if (probe_uring && strcmp(gd_event_loop(), "io_uring") == 0) {
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		int fd = (int)syscall(__NR_io_uring_setup, 2, &p);
		if (fd < 0)
			cr_skip_test("io_uring refused by this kernel (%s): the epoll run covers the daemon",
				     strerror(errno));
		close(fd);
	}
	fdcheck_begin();
}

void gd_test_init(void)
{
	test_init(true);
}

void gd_test_init_any_loop(void)
{
	test_init(false);
}

void gd_test_fini(void)
{
	gd_kill_all();
	fdcheck_end();
}

void gd_prepare(struct gd_daemon *d)
{
	int r = gd_prepare_dir(d);
	cr_assert_eq(r, 0, "%s", d->err);
}

void gd_start(struct gd_daemon *d, const struct gd_opts *o)
{
	int r = gd_launch(d, o);
	cr_assert_eq(r, 0, "starting garudad: %s", d->err);
}

void gd_restart(struct gd_daemon *d)
{
	cr_assert_leq(d->pid, 0, "garudad is still running");
	gd_forget_process(d);
	int r = gd_relaunch(d);
	cr_assert_eq(r, 0, "restarting garudad: %s", d->err);
}

void gd_kill(struct gd_daemon *d)
{
	if (d->pid <= 0)
		return;
	int st = gd_signal_and_wait(d, SIGKILL);
	cr_assert_neq(st, -1, "SIGKILL: %s", d->err);
}

void gd_daemon_ready(struct gd_daemon *d)
{
	if (gd_wait_ready_notify(d) < 0) {
		gd_dump_log(d);
		cr_assert_fail("%s", d->err);
	}
}

void gd_stop(struct gd_daemon *d)
{
	int r = gd_terminate(d);
	cr_assert_eq(r, 0, "%s", d->err);
	gd_check_fds();
}

void gd_check_fds(void)
{
	/* Criterion 2.4 ignores assertions in .fini: check in the test body. Only when no
	 * other daemon of this test is alive (its notifier holds fds). */
	if (!gd_any_running())
		fdcheck_end();
}

int gd_fd_count(struct gd_daemon *d)
{
	return fdcheck_count(d->pid);
}

int gd_wait_fds_at_most(struct gd_daemon *d, int n)
{
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	int c;
	while ((c = gd_fd_count(d)) > n && gd_left_ms(dl) > 0)
		gd_sleep_ms(5);
	return c;
}
void gd_baseline(struct gd_daemon *d)
{
	struct gd_client c;
	struct gd_seg s;
	int efd = -1, r;
	struct garuda_ready rd;

	r = gd_open(&c, d->sock);
	cr_assert_eq(r, 0, "warm-up connect: %s", gd_strerr(r));
	r = gd_segment_open(&c, 1, -1, &s);
	cr_assert_eq(r, 0, "warm-up SEGMENT_OPEN: %s", gd_strerr(r));
	r = gd_bind_new(&c, gd_slot(&s, 0), &efd);
	cr_assert_eq(r, 0, "warm-up BIND: %s", gd_strerr(r));
	cr_assert_eq(r = gd_arm(&c, gd_slot(&s, 0), 1, 1, GARUDA_FORM_EVENTFD), 0,
		     "warm-up ARM eventfd: %s", gd_strerr(r));
	cr_assert_eq(r = gd_arm(&c, gd_slot(&s, 1), 1, 2, GARUDA_FORM_MESSAGE), 0,
		     "warm-up ARM message: %s", gd_strerr(r));
	gd_store(&s, 0, 1);
	gd_store(&s, 1, 1);
	cr_assert_eq(gd_eventfd_read(efd, GD_DEADLINE_MS), 1, "warm-up: no eventfd readiness");
	cr_assert_eq(r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1, "warm-up: no READY: %s",
		     gd_strerr(r));
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	cr_assert_eq(gd_wait_status(d, "clients", 0), 0, "warm-up client still counted");
	cr_assert_eq(gd_wait_status(d, "segments", 0), 0, "warm-up segment still counted");
	/* the loop may close the last fds a moment after the counters drop: take the
	 * smallest count seen over a short while (only makes the later check stricter) */
	int best = gd_fd_count(d);
	for (int i = 0; i < 20; i++) {
		gd_sleep_ms(5);
		int c2 = gd_fd_count(d);
		if (c2 >= 0 && c2 < best)
			best = c2;
	}
	cr_assert_gt(best, 0, "cannot count the daemon's fds");
	d->fd_baseline = best;
}
