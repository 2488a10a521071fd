/* harness.h — run garudad as a child of a test and talk to it over the raw protocol.
 *
 * The daemon side: gd_start() makes a mkdtemp runtime directory, writes a config file,
 * creates a NOTIFY_SOCKET there and starts $GARUDAD on sockets in that directory (or
 * under systemd-socket-activate), then waits for READY=1. gd_stop() sends SIGTERM and
 * asserts a clean exit 0. Every daemon started is also recorded so that the suite's
 * .fini (gd_test_fini) kills what a failed test left running and removes its
 * directory; daemons die with the test process (PR_SET_PDEATHSIG) in any case.
 *
 * The client side speaks proto/wire.h through util/fdio.h and never uses libgaruda.
 * Client functions never assert (they are safe in threads and forked children): they
 * return 0 (or a count), a positive registry code when the daemon answered ERROR, or a
 * negative errno (-EPIPE: the daemon closed the connection; -ETIMEDOUT: nothing came
 * within the deadline; -EBADMSG: the daemon sent something garuda_msg_decode refuses;
 * -EPROTO: a reply of the wrong type). gd_strerr() turns any of them into text.
 *
 * Deadlines here only detect hangs; no test depends on timing to pass.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "errcode.h"
#include "segment_layout.h"
#include "seq.h"
#include "wire.h"

/* generous: only for detecting hangs on a loaded 2-core box */
#define GD_DEADLINE_MS 30000
/* how long a "nothing else arrives" check listens; longer only catches more */
#define GD_QUIET_MS 50

/* ---------------------------------------------------------------- daemon ---- */

struct gd_opts {
	const char *config;       /* JSON object merged over the harness's base config */
	const char *const *env;   /* extra NAME=VALUE for the daemon, NULL-terminated */
	const char *const *args;  /* extra command-line arguments, NULL-terminated */
	const char *event_loop;   /* NULL: $GARUDA_TEST_EVENT_LOOP, else "auto" */
	bool socket_activation;   /* run under systemd-socket-activate --seqpacket */
	bool activation_reverse;  /* activation: pass the control socket first */
	bool no_control;          /* activation: pass only the client socket */
	unsigned watchdog_usec;   /* set WATCHDOG_USEC (and WATCHDOG_PID) for the daemon */
	const char *extra_fdname; /* activation: a third socket, dir/extra.sock, this name */
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
	struct gd_notifier *notifier; /* drains NOTIFY_SOCKET in a thread (sd_notify blocks
				       * the daemon when nobody reads) */
	bool ready_seen;      /* READY=1 arrived on our NOTIFY_SOCKET */
	bool activation;
	char event_loop[16];
	int fd_baseline;      /* daemon fds with no client, after gd_baseline() */
};

/* The event-loop mode this run tests ("io_uring", "epoll" or "auto"). */
const char *gd_event_loop(void);

/* Criterion hooks: fdcheck_begin + harness reset / kill leftovers + fdcheck_end. */
void gd_test_init(void);
void gd_test_fini(void);

/* Prepare d (runtime dir and paths) without starting anything, so a test can put
 * files (a fake sysfs) into d->dir first. gd_start() calls it when d->dir is empty. */
void gd_prepare(struct gd_daemon *d);

/* Start garudad; asserts it came up (READY=1, or for socket activation: the listening
 * socket exists; call gd_daemon_ready() after the first connect). */
void gd_start(struct gd_daemon *d, const struct gd_opts *o);

/* Wait for READY=1 on the notify socket (asserts, with the daemon's log on failure).
 * Falls back to polling connect() when no READY=1 came; d->ready_seen tells which. */
void gd_daemon_ready(struct gd_daemon *d);

/* SIGTERM, wait, assert exit status 0, remove the runtime dir, then (when no other
 * daemon of the test runs) gd_check_fds(): close everything before calling it. */
void gd_stop(struct gd_daemon *d);

/* Fail the test when it holds an fd it did not hold at gd_test_init (the fd check in
 * the body: Criterion 2.4 does not fail a test for assertions in .fini). */
void gd_check_fds(void);

/* Send sig and wait for the daemon's exit; returns the wait status, or -1 when it
 * did not exit within the deadline (then it is SIGKILLed). Does not clean up. */
int gd_signal_and_wait(struct gd_daemon *d, int sig);

/* Remove the runtime dir and close the notify socket (after gd_signal_and_wait). */
void gd_cleanup(struct gd_daemon *d);

/* After the daemon is gone: drop the notify socket but keep the runtime dir, so that
 * gd_start(d, ...) can start a new daemon on the same paths. */
void gd_forget_process(struct gd_daemon *d);

/* Number of notifications received so far, and a copy of the last STATUS= text. */
unsigned gd_notify_count(struct gd_daemon *d, char *status, size_t cap);

/* Number of WATCHDOG=1 notifications received so far. */
unsigned gd_notify_watchdogs(struct gd_daemon *d);

/* Is the daemon process still running (not a zombie)? */
bool gd_alive(struct gd_daemon *d);

/* Log the tail of the daemon's stderr through cr_log_info. */
void gd_dump_log(struct gd_daemon *d);

/* Number of open fds of the daemon. */
int gd_fd_count(struct gd_daemon *d);

/* Warm the daemon up with one full client round trip, wait until the status says no
 * client and no segment is left, and record d->fd_baseline. */
void gd_baseline(struct gd_daemon *d);

/* Wait (deadline) until the daemon's fd count is <= n; returns the last count. */
int gd_wait_fds_at_most(struct gd_daemon *d, int n);

/* Send one datagram to the control socket and parse the JSON reply; NULL on any
 * failure (no reply, not JSON). */
cJSON *gd_control(struct gd_daemon *d, const char *request);

/* Raw control exchange: reply text (malloc'ed) or NULL; *closed when the daemon
 * closed instead of answering. */
char *gd_control_raw(struct gd_daemon *d, const void *req, size_t len, bool *closed);

/* {"request":"status"}; the number under key, or -1 when absent / no reply. */
long long gd_status_num(struct gd_daemon *d, const char *key);

/* Wait (deadline) until status key == value; returns the last value seen. */
long long gd_wait_status(struct gd_daemon *d, const char *key, long long value);

/* ---------------------------------------------------------------- client ---- */

struct gd_rx {
	struct garuda_msg m;
};

struct gd_client {
	int fd;
	uint64_t cookie;
	struct garuda_welcome welcome;
	struct gd_rx *q; /* messages that arrived while waiting for a reply, in order */
	size_t qhead, qlen, qcap;
	bool eof;
};

struct gd_seg {
	uint32_t id;
	uint32_t lines;
	uint64_t bytes;
	int32_t numa_node;
	int memfd;
	struct garuda_segment *map;
};

/* Text for any harness return value. */
const char *gd_strerr(int r);

/* Connect (SOCK_SEQPACKET); 0 or -errno. c is initialised either way. */
int gd_connect(struct gd_client *c, const char *path);
/* HELLO -> WELCOME (stored in c->welcome). */
int gd_hello(struct gd_client *c);
/* connect + hello */
int gd_open(struct gd_client *c, const char *path);
void gd_close(struct gd_client *c);

/* Encode m (m->nfds = nfds) and send it with fds. */
int gd_send(struct gd_client *c, const struct garuda_msg *m, const int *fds, unsigned nfds);
/* Send raw bytes with fds. */
int gd_send_raw(struct gd_client *c, const void *buf, size_t len, const int *fds, unsigned nfds);

/* Next message (queued first, then the socket): 1, 0 on timeout, or -errno. A fd that
 * came with it goes to *fd (or is closed when fd is NULL; *fd = -1 when none). */
int gd_recv(struct gd_client *c, struct garuda_msg *m, int *fd, int timeout_ms);

/* Wait for the reply with this cookie (READY and other messages are queued). */
int gd_await(struct gd_client *c, uint64_t cookie, struct garuda_msg *reply, int *fd);

/* Give m the next cookie, send it and (unless NOREPLY) wait for its reply. */
int gd_request(struct gd_client *c, struct garuda_msg *m, const int *fds, unsigned nfds,
	       struct garuda_msg *reply, int *reply_fd);

int gd_segment_open(struct gd_client *c, uint32_t lines, int32_t numa, struct gd_seg *s);
int gd_segment_close(struct gd_client *c, uint32_t id);
void gd_seg_unmap(struct gd_seg *s);

/* BIND slot to efd (the daemon gets its own copy). */
int gd_bind(struct gd_client *c, struct garuda_slot slot, int efd);
/* New non-blocking eventfd in *efd, bound to slot (closed again on failure). */
int gd_bind_new(struct gd_client *c, struct garuda_slot slot, int *efd);
int gd_unbind(struct gd_client *c, struct garuda_slot slot);

int gd_arm(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
	   uint8_t form);
int gd_arm_flags(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
		 uint8_t form, uint16_t flags);
int gd_disarm(struct gd_client *c, struct garuda_slot slot, uint64_t token);

/* Next READY: 1 (filled), 0 on timeout, or -errno; any other message -> -EPROTO
 * (an ERROR -> its positive code). */
int gd_wait_ready(struct gd_client *c, struct garuda_ready *r, int timeout_ms);

/* Nothing at all arrives on c for ms (queued messages count): 0, or 1 with *m filled. */
int gd_quiet(struct gd_client *c, int ms, struct garuda_msg *m);

/* Play the GPU: release-store v into word index of the segment. */
static inline void gd_store(struct gd_seg *s, uint32_t index, uint64_t v)
{
	__atomic_store_n(garuda_segment_word(s->map, index), v, __ATOMIC_RELEASE);
}
static inline uint64_t gd_load(struct gd_seg *s, uint32_t index)
{
	return __atomic_load_n(garuda_segment_word(s->map, index), __ATOMIC_ACQUIRE);
}
static inline uint32_t gd_doorbell(struct gd_seg *s)
{
	return __atomic_load_n(&s->map->hdr.doorbell, __ATOMIC_ACQUIRE);
}
static inline struct garuda_slot gd_slot(struct gd_seg *s, uint32_t index)
{
	return (struct garuda_slot){ .segment = s->id, .index = index };
}

/* Read an eventfd: its counter (> 0), 0 when nothing came within timeout_ms, -errno. */
long long gd_eventfd_read(int efd, int timeout_ms);

/* Wait until the doorbell differs from old (FUTEX_WAIT, shared): its new value in
 * *now; 1, or 0 on timeout. */
int gd_doorbell_wait(struct gd_seg *s, uint32_t old, uint32_t *now, int timeout_ms);

/* Milliseconds left until a deadline taken from gd_deadline(ms). */
uint64_t gd_deadline(int ms);
int gd_left_ms(uint64_t deadline);

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
