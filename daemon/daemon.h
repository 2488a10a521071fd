/* daemon.h — garudad's top-level object: the one place that holds mutable state
 * (configuration, loop, sockets, scanners, sessions, counters). Sessions, the
 * control plane and systemd glue all hang off it; nothing else is global. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "errcode.h"
#include "loop.h"
#include "notice.h"
#include "numa.h"
#include "quota.h"
#include "scanner.h"

struct session;
struct control_conn;

#define SESSION_BUCKETS 1024
#define ERRCOUNT_SLOTS 64 /* registry codes GARUDA_ERR_BASE .. +63 */

struct daemon {
	struct config cfg;
	struct loop *loop;

	int client_fd, control_fd; /* listening sockets */
	bool client_owned, control_owned; /* we created them: unlink at exit */
	int lock_fd; /* single-instance flock on "<socket_path>.lock" (server.c), or -1 */
	int signal_fd, watchdog_fd;
	int notify_fd; /* non-blocking socket for STATUS=/WATCHDOG=1 */
	int spare_fd;  /* held open to be given up when accept hits EMFILE */
	struct loop_watch *client_w, *control_w, *signal_w, *notice_w, *watchdog_w;

	struct numa_topology topo;
	struct scanner *scanner[NUMA_MAX_NODES];
	int scanner_node[NUMA_MAX_NODES];
	unsigned nscanners;
	unsigned next_scanner; /* round robin for segments with no node preference */
	struct scanner_tuning tuning;
	struct notice_queue notices;
	struct quota_table quotas;

	struct session *sessions;
	struct session *by_id[SESSION_BUCKETS]; /* session_find(): chained on id */
	struct session *dead_sessions; /* closed this iteration, freed after it */
	unsigned nsessions;
	struct control_conn *controls;
	uint64_t next_session_id;

	bool stopping;
	bool notify; /* NOTIFY_SOCKET is set */
	uint64_t started_ns;

	/* counters (loop thread) */
	uint64_t arms_total;
	uint64_t sessions_total;
	uint64_t errors_by_code[ERRCOUNT_SLOTS];
	uint64_t quota_refusals;
};

/* sockets (server.c) */
int server_open_sockets(struct daemon *d);
void server_close_sockets(struct daemon *d);
void server_on_client_accept(struct loop_watch *w, void *data, uint32_t events);
/* accept4 (CLOEXEC, NONBLOCK) that copes with EMFILE/ENFILE by refusing the pending
 * connection through the spare fd; -1 with errno as accept4's. */
int server_accept(struct daemon *d, int listen_fd);

/* sessions (session.c) */
void session_accept(struct daemon *d, int fd);
void session_close(struct session *s);
void session_close_all(struct daemon *d);
void session_reap(struct daemon *d);
void session_handle_notices(struct daemon *d);
struct session *session_find(struct daemon *d, uint64_t id);
void daemon_count_error(struct daemon *d, int code);

/* control plane (control.c) */
void control_on_accept(struct loop_watch *w, void *data, uint32_t events);
void control_close_all(struct daemon *d);

/* systemd status line; configuration reload (main.c) */
void daemon_update_status(struct daemon *d);
/* Re-read the config file; keeps the running config on error (-GARUDA_E_BAD_ARGUMENT,
 * *why = a malloc'ed message naming the key and the reason, when why is not NULL). */
int daemon_reload(struct daemon *d, char **why);
