/* tdaemon.h — a garudad for libgaruda's tests: start it on sockets in a private
 * mkdtemp directory, kill it (SIGKILL, as a crash), start it again on the same socket,
 * stop it (SIGTERM, clean exit 0 asserted).
 *
 * The daemon's binary comes from the build (GARUDAD_PATH), or $GARUDAD when set. It
 * dies with the test process (PR_SET_PDEATHSIG). td_start() waits until the client
 * socket accepts a connection; nothing here depends on timing beyond generous
 * deadlines that only detect hangs.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#define TD_DEADLINE_MS 20000

struct tdaemon {
	pid_t pid;
	char dir[128];
	char sock[192];
	char ctl[192];
	char cfg[192];
	char log[192];
};

/* Make the directory and config (extra_json: members merged into the base config
 * object, e.g. "\"quota\":{...}", or NULL), start garudad, wait for its socket. */
void td_start(struct tdaemon *d, const char *extra_json);
/* Start again on the same directory, socket and config (after td_kill). */
void td_restart(struct tdaemon *d);
/* SIGKILL and reap (the socket file stays behind, as after a crash). */
void td_kill(struct tdaemon *d);
/* SIGTERM, reap, assert exit 0, remove the directory. */
void td_stop(struct tdaemon *d);
/* Print the daemon's log through cr_log_info (on failures). */
void td_dump_log(struct tdaemon *d);
/* Set GARUDA_SOCKET to the daemon's socket (for garuda_connect and examples). */
void td_export(struct tdaemon *d);
/* {"request":"status"} on the control socket: the number under key, or -1 (no reply,
 * no such key). */
long long td_status(struct tdaemon *d, const char *key);
/* Wait (deadline) until status key == value; returns the last value seen. */
long long td_wait_status(struct tdaemon *d, const char *key, long long value);
/* Milliseconds now (monotonic), for deadlines. */
long long td_now_ms(void);
