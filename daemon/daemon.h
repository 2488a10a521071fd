/* daemon.h — garudad's top-level object: the one place that holds mutable state
 * (configuration, loop, sockets, scanners, sessions, counters). Sessions, the
 * control plane and systemd glue all hang off it; nothing else is global. Only the
 * struct lives here: each module declares its functions in its own header (server.h,
 * session.h, control.h, service.h). Owned by the loop thread (docs/architecture.md). */
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
struct session_hold;
struct control_conn;

#define SESSION_BUCKETS 1024
#define ERRCOUNT_SLOTS 64 /* registry codes GARUDA_ERR_BASE .. +63 */

#define DAEMON_MAX_WARNINGS 8

struct daemon {
	struct config cfg;
	struct loop *loop;

	int client_fd, control_fd; /* listening sockets */
	bool client_owned, control_owned; /* we created them: unlink at exit */
	int lock_fd; /* single-instance flock on "<socket_path>.lock" (server.c), or -1 */
	int signal_fd, watchdog_fd;
	int reattach_fd; /* timerfd: log re-attaching sessions once they went quiet (session_conn.c) */
	int hold_fd; /* timerfd: unread SEGMENT replies held against quota (session.c) */
	bool hold_armed;
	int notify_fd; /* non-blocking socket for STATUS=/WATCHDOG=1 */
	int spare_fd;  /* held open to be given up when accept hits EMFILE */
	struct loop_watch *client_w, *control_w, *signal_w, *notice_w, *watchdog_w, *reattach_w, *hold_w;

	struct numa_topology topo;
	struct scanner *scanner[NUMA_MAX_NODES];
	int scanner_node[NUMA_MAX_NODES];
	unsigned nscanners;
	unsigned next_scanner; /* round robin for segments with no node preference */
	struct scanner_tuning tuning;
	uint32_t plan_gen; /* bumped when a reload changes the plan (points.h) */
	struct notice_queue notices;
	struct quota_table quotas;

	struct session *sessions;
	struct session *by_id[SESSION_BUCKETS]; /* session_find(): chained on id */
	struct session *dead_sessions; /* closed this iteration, freed after it */
	/* ended sessions whose SEGMENT replies may be unread: their sink (socket, account)
	 * and the quota those segments and the connection keep (session.c) */
	struct session_hold *holds;
	unsigned nholds;
	unsigned nsessions;
	struct control_conn *controls;
	uint64_t next_session_id;

	bool stopping;
	bool notify; /* NOTIFY_SOCKET is set */
	bool status_dirty; /* sessions came or went: main refreshes STATUS= after the iteration */
	uint64_t started_ns;

	/* counters (loop thread) */
	uint64_t arms_total;
	uint64_t sessions_total;
	uint64_t errors_by_code[ERRCOUNT_SLOTS];
	uint64_t quota_refusals;
	/* the last reload (daemon_reload: control request or SIGHUP); reloads_total 0: none */
	uint64_t reloads_total, reload_failures_total;
	bool reload_ok;             /* the last one applied the file */
	uint64_t reload_realtime_ns; /* when it ended, CLOCK_REALTIME */

	/* start-up conditions an operator should fix (service_warn()); garctl status lists them */
	char warnings[DAEMON_MAX_WARNINGS][256];
	unsigned nwarnings;
};
