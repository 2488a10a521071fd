/* config_keys.h — garudad's configuration keys, one row each. From these rows come
 * garudad's JSON loader, its command-line flags (getopt and --help), --list-config-keys,
 * the reload log ("reload: KEY: OLD -> NEW"), the control plane's config reply, the
 * table of `garctl config`, and (checked by tests/control) the key list of garudad(8).
 *
 * A row: X(key, flag, type, field, lo, hi, reload, legacy, help)
 *   key     the name in the config file; nested keys joined with dots
 *           ("quota.uid.segments" is {"quota": {"uid": {"segments": N}}})
 *   flag    the command-line flag without "--" (--flag=VALUE), or NULL
 *   type    GARUDA_CFG_<type>: how the value is parsed and shown (daemon/config.c)
 *   field   the member of garudad's struct config it fills (daemon/config.h)
 *   lo, hi  bounds of a number (inclusive); 0, 0 for other types
 *   reload  true: a reload applies a change; false: only a restart does
 *   legacy  NULL, or the plan key it replaces when set: a legacy key parses and
 *           works, logs a deprecation line, and is shown only when set
 *   help    one line for --help and --list-config-keys
 *
 * Why here, in proto/: garctl does not link the daemon, yet shows the same keys in the
 * same order. A row's columns are macro arguments, and an expansion drops the ones it
 * does not name: garctl takes key, reload and legacy, and never compiles `field`
 * (struct config stays the daemon's). The parsers stay in daemon/config.c.
 *
 * Promises: a key appears once; every row is reachable from the file, legacy rows last;
 * adding a key is a row here, its field in struct config, its default and its use. */
#pragma once

#include <stdint.h>

enum garuda_cfg_type {
	GARUDA_CFG_PATH,     /* string: an absolute path shorter than 108 bytes */
	GARUDA_CFG_GROUP,    /* string (a group name or decimal gid) or a number (a gid) */
	GARUDA_CFG_STRING,   /* string */
	GARUDA_CFG_LOOP,     /* auto | io_uring | epoll */
	GARUDA_CFG_U32,      /* integer in [lo, hi], a uint32_t */
	GARUDA_CFG_U64,      /* integer in [lo, hi], a uint64_t */
	GARUDA_CFG_PLAN,     /* wait-plan text (docs/plans.md), not block */
	GARUDA_CFG_LEVEL,    /* err | warning | notice | info | debug */
	GARUDA_CFG_WORDWAIT, /* auto | off */
};

/* One quota scope's keys (daemon/quota.h); quota.connection has no connections (a
 * connection is one session). */
#define GARUDA_CONFIG_QUOTA_(X, scope, q, what)                                                    \
	X("quota." scope ".segments", NULL, U32, q.segments, 0, UINT32_MAX, true, NULL,            \
	  "segments " what)                                                                        \
	X("quota." scope ".lines", NULL, U32, q.lines, 0, UINT32_MAX, true, NULL, "lines " what)   \
	X("quota." scope ".bindings", NULL, U32, q.bindings, 0, UINT32_MAX, true, NULL,            \
	  "eventfd bindings " what)                                                                \
	X("quota." scope ".armed", NULL, U32, q.armed, 0, UINT32_MAX, true, NULL,                  \
	  "armed descriptors " what)                                                               \
	X("quota." scope ".outbox_bytes", NULL, U64, q.outbox_bytes, 512, UINT32_MAX, true, NULL,  \
	  "bytes of queued replies and readiness " what)                                           \
	X("quota." scope ".points", NULL, U32, q.points, 0, UINT32_MAX, true, NULL,                \
	  "deadline-estimator points " what)
#define GARUDA_CONFIG_CONNECTIONS_(X, scope, q, what)                                              \
	X("quota." scope ".connections", NULL, U32, q.connections, 1, UINT32_MAX, true, NULL,      \
	  "sessions at once " what)

#define GARUDA_CONFIG_KEYS(X)                                                                      \
	X("socket", "socket", PATH, socket_path, 0, 0, false, NULL,                                \
	  "client socket (default DIR/garuda.sock)")                                               \
	X("control_socket", "control-socket", PATH, control_socket_path, 0, 0, false, NULL,        \
	  "control socket (default beside the client socket)")                                     \
	X("socket_group", NULL, GROUP, socket_group, 0, 0, false, NULL,                            \
	  "group of the client socket, a name or a gid (default garuda)")                          \
	X("control_group", NULL, GROUP, control_group, 0, 0, true, NULL,                           \
	  "group admitted to the control socket, a name or a gid (default none)")                   \
	X("control_read_group", NULL, GROUP, control_read_group, 0, 0, true, NULL,                 \
	  "group admitted to the control socket's read-only requests (default none)")             \
	X("event_loop", "event-loop", LOOP, event_loop, 0, 0, false, NULL,                         \
	  "auto, io_uring or epoll (default auto)")                                                \
	X("scanners", "scanners", U32, scanners, 0, 64, false, NULL,                               \
	  "scanner threads (0 = one per NUMA node)")                                               \
	X("plan", "plan", PLAN, plan, 0, 0, true, NULL,                                            \
	  "the scanners' wait plan (docs/plans.md)")                                               \
	X("log_level", "log-level", LEVEL, log_level, 0, 0, true, NULL,                            \
	  "err, warning, notice, info or debug (default info)")                                    \
	X("wordwait", "wordwait", WORDWAIT, wordwait, 0, 0, true, NULL,                            \
	  "auto or off: hardware word wait when spinning")                                         \
	GARUDA_CONFIG_QUOTA_(X, "connection", quota_connection, "per connection")                  \
	GARUDA_CONFIG_QUOTA_(X, "uid", quota_uid, "per client uid")                                \
	GARUDA_CONFIG_CONNECTIONS_(X, "uid", quota_uid, "per client uid")                          \
	GARUDA_CONFIG_QUOTA_(X, "cgroup", quota_cgroup, "per client cgroup")                       \
	GARUDA_CONFIG_CONNECTIONS_(X, "cgroup", quota_cgroup, "per client cgroup")                 \
	GARUDA_CONFIG_QUOTA_(X, "daemon", quota_daemon, "for all clients together")                \
	GARUDA_CONFIG_CONNECTIONS_(X, "daemon", quota_daemon, "for all clients together")          \
	X("spin_us", "spin-us", U64, legacy.park_us, 0, 1000000, true, "park_us",                  \
	  "microseconds, in place of the plan's park_us")                                          \
	X("max_sleep_us", NULL, U64, legacy.backstop_us, 1, 1000000, true, "backstop_us",          \
	  "microseconds, in place of the plan's backstop_us")
