/* quota.h — per-connection, per-uid and per-cgroup accounting of what clients hold:
 * segments, lines, bindings, armed descriptors, outbox bytes, connections,
 * deadline-estimator points (each costs sizeof(struct point) and 16 bytes, daemon/points.h).
 *
 * Promises: a charge is taken before anything is allocated and fails as a whole (every
 * scope or none) with -GARUDA_E_QUOTA; a session with no cgroup key (quota_peer_cgroup()
 * failed) is charged per connection and per uid only. Counters are atomic: the loop
 * thread charges, scanner threads release armed descriptors as they fire. uid records
 * live as long as the daemon (bounded by the number of distinct uids that ever
 * connected), their list is the loop thread's; cgroup records are reference-counted by
 * the sinks charged to them and freed with the last (bounded by the cgroups with a live
 * sink). A sink is freed on the loop thread but for one case (a scanner whose notice
 * queue is out of memory drops its last reference itself, armed.c), so the cgroup list
 * and its reference counts are under a lock of their own (quota.c). The daemon scope
 * (quota.daemon.*) is every client's charges together, kept in the quota table, which
 * lives as long as the daemon: a node's tenants together meet a refusal that names
 * its key before garudad meets its memory or fd limit. */
#pragma once

#include <stddef.h>
#include <stdio.h>

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* Q_CONNECTIONS counts sessions (per uid and per cgroup; a connection is one by definition) */
enum quota_kind { Q_SEGMENTS, Q_LINES, Q_BINDINGS, Q_ARMED, Q_OUTBOX, Q_CONNECTIONS, Q_POINTS, Q_KINDS_ };

struct quota_usage {
	atomic_uint_fast64_t used[Q_KINDS_];
};

/* The quota scopes, in the order a charge takes them (a refusal names the first that
 * refused: the narrowest): quota.connection.*, quota.uid.*, quota.cgroup.*,
 * quota.daemon.* */
enum quota_scope { QS_CONNECTION, QS_UID, QS_CGROUP, QS_DAEMON, QS_SCOPES_ };

/* Refusals of one uid's requests from one cgroup key, by the quota key that refused
 * (quota.SCOPE.KIND): what garuda_quota_refusals_total{uid,cgroup,key} exports. A uid
 * has at most QUOTA_REFUSAL_ROWS rows; refusals from further cgroups count in a last
 * row whose cgroup is QUOTA_REFUSAL_OTHER, so the rows stay bounded however many
 * cgroups a uid runs in (a Slurm job each). Rows live as long as their uid record, so
 * each count only grows. */
#define QUOTA_REFUSAL_KEYS 15 /* cgroup keys (none: one key too) with a row of their own */
#define QUOTA_REFUSAL_ROWS (QUOTA_REFUSAL_KEYS + 1)
#define QUOTA_REFUSAL_OTHER "(other)" /* a cgroup path starts with '/': no clash */
struct quota_refusals {
	char *cgroup; /* the cgroup key's path, NULL: no cgroup key, or QUOTA_REFUSAL_OTHER */
	uint64_t n[QS_SCOPES_][Q_KINDS_];
	struct quota_refusals *next;
};

struct quota_uid {
	uid_t uid;
	struct quota_table *table; /* its daemon scope */
	struct quota_usage usage;
	/* refusals of requests (quota_charge_explain), by cgroup key; the loop thread's,
	 * as the uid list is */
	struct quota_refusals *refusals;
	unsigned nrefusals;
	struct quota_uid *next;
};

struct quota_table;

/* The peer's cgroup v2 path as /proc/PID/cgroup's "0::" line gives it, relative to
 * garudad's cgroup namespace. */
struct quota_cgroup {
	char *path;
	unsigned refs; /* sinks charged to it (under the cgroup list's lock) */
	struct quota_usage usage;
	struct quota_table *table;
	struct quota_cgroup *next;
};

struct quota_table {
	struct quota_usage usage; /* the daemon scope: every account's charges */
	struct quota_uid *head;
	struct quota_cgroup *cgroups;
};

const char *quota_kind_name(enum quota_kind k);
/* "connection", "uid", "cgroup" */
const char *quota_scope_name(enum quota_scope s);
/* The limits of scope s in cfg. */
const struct quota_limits *quota_scope_limits(const struct config *cfg, enum quota_scope s);
uint64_t quota_limit(const struct quota_limits *l, enum quota_kind k);

/* Find or create the record of uid. NULL on ENOMEM. */
struct quota_uid *quota_uid_get(struct quota_table *t, uid_t uid);
/* Find or create the record of a cgroup path and take a reference. NULL on ENOMEM. */
struct quota_cgroup *quota_cgroup_get(struct quota_table *t, const char *path);
/* Drop a reference; the last one unlinks and frees the record. NULL is ignored. Any
 * thread. */
void quota_cgroup_unref(struct quota_cgroup *c);
/* Call fn for each cgroup record, under the list's lock (fn must not take or drop a
 * reference). */
void quota_cgroups_each(struct quota_table *t, void (*fn)(const struct quota_cgroup *c, void *arg),
			void *arg);
void quota_table_free(struct quota_table *t);

/* The cgroup v2 path of pid from /proc/PID/cgroup (its "0::" line) into a malloc'ed
 * *path. 0, or -ESRCH (pid 0: the peer is outside garudad's pid namespace), -ENODATA
 * (no such line: a cgroup v1 only host), -ENOMEM, or -errno of opening or reading the
 * file (-ENOENT: the process is gone). proc is the procfs root ("/proc"). */
int quota_peer_cgroup(const char *proc, pid_t pid, char **path);
/* The path of f's first "0::" line (a /proc/PID/cgroup), without its newline, up to
 * a NUL byte in it, into a malloc'ed *path: 0, -ENODATA (no such line), -ENOMEM or
 * -errno of reading f. quota_peer_cgroup()'s parse, fuzzed (tests/fuzz/fuzz_sysfs.c). */
int quota_cgroup_line(FILE *f, char **path);

/* The path of the cgroup v2 directory whose cgroup id (its inode number: what the
 * PIDFD_GET_INFO ioctl reports as cgroupid) is id, relative to the cgroup2 mount at
 * mount (NULL: /sys/fs/cgroup, else /sys/fs/cgroup/unified, whichever is cgroup2), as
 * "/a/b" ("/" for the mount's root), into a malloc'ed *path: the form of
 * quota_peer_cgroup() where garudad's cgroup namespace and mount have the same root (a
 * service of the host, a container's own). For a peer whose /proc/PID garudad may not
 * read (systemd's ProtectProc=). Walks the hierarchy (at most 65536 directories, 64
 * deep). 0, -ENOENT (not under the mount), -EMEDIUMTYPE (no cgroup2 mount), -ENOMEM or
 * -errno of opening the mount. */
int quota_cgroup_by_id(const char *mount, uint64_t id, char **path);

/* What one connection is charged to: its own usage, its uid's and, where it has a
 * cgroup key, its cgroup's (a sink's, sink.h). */
struct quota_account {
	struct quota_usage usage;    /* per-connection usage */
	struct quota_uid *uid;       /* per-uid usage (lives as long as the daemon) */
	struct quota_cgroup *cgroup; /* per-cgroup usage, one reference; NULL: no cgroup key */
};

/* Charge n of kind k to the connection's usage, its uid's, its cgroup's (none without
 * a cgroup key) and the daemon's, against cfg's quota_connection, quota_uid,
 * quota_cgroup and quota_daemon, or to none of them. Returns 0 or -GARUDA_E_QUOTA. */
int quota_charge(struct quota_account *a, const struct config *cfg, enum quota_kind k, uint64_t n);
/* As quota_charge(), for a request or a connection (loop thread only); on a refusal,
 * why gets the words for the peer and the log: the key of the quota that refused
 * ("quota.uid.armed"), its limit, the usage and n, and for quota.cgroup the cgroup's
 * path (its tail when long); and the refusal is counted in the uid record's row of
 * the account's cgroup key (struct quota_refusals; out of memory: not counted). */
int quota_charge_explain(struct quota_account *a, const struct config *cfg, enum quota_kind k, uint64_t n,
			 char *why, size_t cap);
void quota_release(struct quota_account *a, enum quota_kind k, uint64_t n);
