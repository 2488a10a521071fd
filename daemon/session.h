/* session.h — one client connection: its credentials, what it holds (segments,
 * bindings; armed descriptors live in the scanners), its outbox, and the client
 * requests, dispatched from one table in session.c (type -> handler, the state it is
 * valid in, the fds it takes). Everything here runs on the loop thread; the socket's
 * other writers are the scanners (READY, docs/architecture.md).
 *
 * Promises: each request is decoded and validated before it acts; quotas are charged
 * before anything is allocated; a protocol violation gets ERROR and a disconnect; a
 * semantic error gets ERROR and the connection carries on; a peer that does not drain
 * its socket is disconnected once its outbox passes its quota; when a session ends,
 * everything it held is released (scanners drop its descriptors). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"
#include "sink.h"
#include "segment.h"

struct outmsg {
	struct outmsg *next;
	size_t len;
	int fd; /* rides along, or -1 */
	bool overflow; /* the READY{OVERFLOW} (clears overflow_queued when it leaves) */
	uint8_t buf[];
};

struct session {
	struct daemon *d;
	uint64_t id;
	struct sink *sink; /* owns the socket */
	int fd;            /* = sink->fd */
	struct loop_watch *w_in, *w_out;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char comm[17];
	bool welcomed;
	bool closed; /* session_close() ran; freed by session_reap() */
	bool lingering; /* failed: holds only its socket until its ERROR is sent */
	bool overflow_queued;
	uint64_t connected_ns;
	struct segment *segments;
	uint32_t next_segment_id;
	struct binding *bindings;
	struct outmsg *out_head, *out_tail;
	uint64_t arms, errors;
	/* a re-attaching session (its first SEGMENT_ATTACH): what it presented again, logged
	 * in one line once it sent no ATTACH/BIND/ARM for REATTACH_QUIET_MS */
	bool reattach_pending;
	uint32_t reattached_segments, rebound, rearmed;
	uint64_t reattach_last_ns;
	struct session *next, *prev;
	struct session *hnext; /* d->by_id chain */
};

/* A connection accepted on the client socket (fd: CLOEXEC, NONBLOCK; taken in every
 * case). The session is charged to its peer's uid and, where /proc/PID/cgroup gives
 * one (or, with /proc/PID hidden from garudad, the peer's pidfd), its cgroup v2 path
 * (read here, once; quota.h). A connection over
 * quota.uid.connections or quota.cgroup.connections gets ERROR{QUOTA} naming the quota
 * and is closed. */
void session_accept(struct daemon *d, int fd);
/* End a session: release what it holds, close its socket; freed by session_reap(). */
void session_close(struct session *s);
void session_close_all(struct daemon *d);
/* Free the sessions closed during this loop iteration (callers up the stack may have
 * held them until then). */
void session_reap(struct daemon *d);
/* The re-attach timer (d->reattach_fd) fired: log each re-attaching session that has
 * been quiet for REATTACH_QUIET_MS (who, segments, eventfd bindings, waits re-armed);
 * re-arm for the rest. Loop thread. */
void session_reattach_tick(struct daemon *d);

/* What a session is and holds, at one moment: the one description QUERY (its stable
 * keys, docs/protocol.md §4.14) and the control plane's `clients` both render. */
struct session_view {
	uint64_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	const char *comm;
	const char *cgroup; /* NULL: no cgroup key */
	uint64_t connected_ns;
	unsigned segments, bindings;
	uint64_t lines, armed, arms, points, errors;
	uint64_t counters[SN_COUNT_]; /* proto/counters.h's session table */
	uint64_t outbox_bytes;
	bool overflow;
	struct form_counts by_form;
	uint64_t detect_hist[GARUDA_LAT_BUCKETS];
};
void session_describe(const struct session *s, struct session_view *v);

/* Act on the scanners' notices (DISARM answers, overflows, offenders). */
void session_handle_notices(struct daemon *d);
struct session *session_find(struct daemon *d, uint64_t id);
