/* garudad.h — the one garudad launcher of the tests and the bench.
 *
 * gd_launch() makes a mkdtemp runtime directory (mode 0755: some tests connect as
 * another uid), writes a config file, creates a NOTIFY_SOCKET there (drained by a
 * thread: sd_notify blocks the daemon when nobody reads) and starts garudad on sockets
 * in that directory (or under systemd-socket-activate), then waits for READY=1. The
 * binary is gd_opts.garudad, else $GARUDAD (meson sets it; -Dtest_garudad points the
 * daemon suites at a TSan build or the valgrind wrapper), else GARUDAD_PATH when the
 * including build defines it. gd_terminate() sends SIGTERM and checks for exit 0;
 * gd_signal_and_wait(d, SIGKILL) is a crash, and gd_relaunch() then starts again on
 * the same paths (a restart). gd_run() runs garudad in the foreground (flag and
 * config checks). The control socket: gd_control*, gd_status_*, gd_wait_status*,
 * gd_scanner_sum, gd_wait_scanner, gd_session_num, gd_wait_session.
 *
 * Promises: nothing here uses Criterion (tests/common/harness.h adds the asserting
 * layer; the bench uses this directly): every call returns 0 or a negative errno and
 * leaves a one-line reason in d->err. Every daemon started is recorded so that
 * gd_kill_all() (the tests' .fini) kills what a failed test left running and removes
 * its directory; daemons die with their parent (PR_SET_PDEATHSIG) in any case.
 * Deadlines only detect hangs.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "deadline.h"

struct gd_opts {
	const char *garudad;      /* binary; NULL: $GARUDAD */
	const char *config;       /* JSON object merged over the base config */
	bool config_verbatim;     /* write config as given (NULL: "{}"), no base merged in */
	const char *const *env;   /* extra NAME=VALUE for the daemon, NULL-terminated */
	const char *const *args;  /* extra command-line arguments, NULL-terminated */
	const char *event_loop;   /* NULL: $GARUDA_TEST_EVENT_LOOP, else "auto" */
	bool socket_activation;   /* run under systemd-socket-activate --seqpacket */
	bool activation_reverse;  /* activation: pass the control socket first */
	bool no_control;          /* activation: pass only the client socket */
	unsigned watchdog_usec;   /* set WATCHDOG_USEC (and WATCHDOG_PID) for the daemon */
	const char *extra_fdname; /* activation: a third socket, dir/extra.sock, this name */
	bool quiet;               /* log_level "warning" in the base config (bench) */
	long refuse_syscall;      /* > 0: a seccomp filter fails this system call number */
	int refuse_errno;         /*      with this errno, in garudad (as a container's) */
	int blocked_signal;       /* > 0: garudad starts with this signal blocked */
};

struct gd_daemon {
	pid_t pid;
	char dir[64];
	char sock[108]; /* sizes: these go into sockaddr_un.sun_path */
	char ctl[108];
	char notify[108];
	char config[128];
	char log[128];
	char sysfs[128]; /* dir/sysfs, for tests that fake NUMA nodes */
	char extra[108]; /* dir/extra.sock (gd_opts.extra_fdname) */
	struct gd_notifier *notifier;
	bool ready_seen;      /* READY=1 arrived on our NOTIFY_SOCKET */
	bool activation;
	char event_loop[16];
	int fd_baseline;      /* daemon fds with no client, after gd_baseline() */
	int ctl_fd;           /* kept control connection of gd_control_keep(), or -1 */
	struct gd_opts opts;  /* what the last gd_launch() used (gd_relaunch) */
	char err[512];        /* why the last call failed */
};

/* The event-loop mode this run tests ("io_uring", "epoll" or "auto"). */
const char *gd_event_loop(void);

/* Prepare d (runtime dir and paths) without starting anything, so a test can put
 * files (a fake sysfs) into d->dir first. gd_launch() calls it when d->dir is empty. */
int gd_prepare_dir(struct gd_daemon *d);

/* Start garudad (o may be NULL). Unless socket activation: waits for READY=1 (up to
 * GD_DEADLINE_MS; no READY=1 is a failure). With activation: returns once the
 * listening sockets exist. On failure the daemon is killed, its log printed. */
int gd_launch(struct gd_daemon *d, const struct gd_opts *o);
/* Start again with the options of the last gd_launch(), on the same paths and the
 * config file as it is now (after gd_signal_and_wait, gd_forget_process). The arrays
 * of gd_opts (env, args) must still exist then; the config text need not. */
int gd_relaunch(struct gd_daemon *d);

/* Wait (GD_DEADLINE_MS) for READY=1 on the notify socket: 0 once it came (then
 * d->ready_seen), -ETIMEDOUT or -ECHILD (it exited) otherwise. */
int gd_wait_ready_notify(struct gd_daemon *d);

/* SIGTERM, wait, require exit status 0, remove the runtime dir (gd_cleanup) either way. */
int gd_terminate(struct gd_daemon *d);

/* Send sig and wait for the daemon's exit; returns the wait status, or -1 when it
 * did not exit within the deadline (then it is SIGKILLed). Does not clean up. */
int gd_signal_and_wait(struct gd_daemon *d, int sig);

/* Remove the runtime dir and close the notify socket (kills a daemon still running). */
void gd_cleanup(struct gd_daemon *d);

/* After the daemon is gone: drop the notify socket but keep the runtime dir, so that
 * gd_relaunch(d) can start a new daemon on the same paths. */
void gd_forget_process(struct gd_daemon *d);

/* Kill every daemon still recorded, dump its log, remove its directory; forget all. */
void gd_kill_all(void);
/* Is any daemon recorded (started and not yet cleaned up)? */
bool gd_any_running(void);

/* Number of notifications received so far, and a copy of the last STATUS= text. */
unsigned gd_notify_count(struct gd_daemon *d, char *status, size_t cap);
/* Number of WATCHDOG=1 notifications received so far. */
unsigned gd_notify_watchdogs(struct gd_daemon *d);

/* Is the daemon process still running (not a zombie)? */
bool gd_alive(struct gd_daemon *d);

/* Print the tail of the daemon's stderr on our stderr. */
void gd_dump_log(struct gd_daemon *d);
/* Whether a line of the daemon's log contains text, now. */
bool gd_log_has(struct gd_daemon *d, const char *text);
/* Wait (GD_DEADLINE_MS) until a line of the daemon's log contains text. */
bool gd_wait_log(struct gd_daemon *d, const char *text);


/* Replace the daemon's config file atomically (for reload tests). */
int gd_write_config(struct gd_daemon *d, const char *text);

/* Send one datagram to the control socket and parse the JSON reply; NULL on any
 * failure (no reply, not JSON). */
cJSON *gd_control(struct gd_daemon *d, const char *request);
/* The same on a control connection kept open across calls (the bench's sampling). */
cJSON *gd_control_keep(struct gd_daemon *d, const char *request);

/* Raw control exchange on a fresh connection to path: reply text (malloc'ed) or NULL
 * with *err = -errno (-EPIPE: closed instead of answering). */
char *gd_control_path(const char *path, const void *req, size_t len, int *err);
/* The same on d's control socket; *closed when the daemon closed instead of answering. */
char *gd_control_raw(struct gd_daemon *d, const void *req, size_t len, bool *closed);

/* {"request":"status"}; the number under key, or -1 when absent / no reply. */
long long gd_status_num(struct gd_daemon *d, const char *key);
double gd_status_path(const char *ctl_path, const char *key);

/* {"request":"scanners"}: key summed over the scanners (a number, or a histogram
 * object's count); -1 when there is no reply or a scanner lacks it. */
double gd_scanner_sum(const char *ctl_path, const char *key);
/* Wait (deadline) until that sum >= value; returns the last sum seen. */
double gd_wait_scanner(const char *ctl_path, const char *key, double value);

/* {"request":"clients"}: the number under key of session id (a counter such as
 * "word_loads" or "pauses", or "arms"); -1 when there is no such session or key. */
double gd_session_num(const char *ctl_path, uint64_t id, const char *key);
/* Wait (deadline) until that number >= value; returns the last one seen. */
double gd_wait_session(const char *ctl_path, uint64_t id, const char *key, double value);

/* Wait (deadline) until status key == value; returns the last value seen. */
long long gd_wait_status(struct gd_daemon *d, const char *key, long long value);
double gd_wait_status_path(const char *ctl_path, const char *key, double value);
/* Wait up to timeout_ms until status key >= value (at_most: <= value). 0 or -ETIMEDOUT. */
int gd_wait_status_cmp(struct gd_daemon *d, const char *key, double value, bool at_most,
		       unsigned timeout_ms);

/* Run garudad in the foreground with args (split at spaces; NULL: none), stdin
 * /dev/null, stdout and stderr into out (NUL-terminated, cut at cap). Returns its
 * exit status (128 + signal; 124 when it ran past 20 s and was killed), or -errno. */
int gd_run(struct gd_daemon *d, const char *args, char *out, size_t cap);

/* Run the command argv (argv[0]: its path) with stdin /dev/null and stdout and stderr
 * into out (NUL-terminated, cut at cap): its exit status (128 + signal; 124 when it ran
 * past timeout_ms and was killed), or -errno. In the child, before exec: child(arg),
 * then an address-space limit of as_bytes. The one way the tests run a program and
 * read what it says (gd_run: garudad; the examples; garuda-replay). */
struct gd_run_opts {
	int timeout_ms;  /* 0: none */
	size_t as_bytes; /* RLIMIT_AS in the child; 0: none */
	void (*child)(void *arg);
	void *arg;
};
int gd_run_argv(const char *const *argv, const struct gd_run_opts *o, char *out, size_t cap);
