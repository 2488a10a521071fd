/* quota.h — per-connection and per-uid accounting of what clients hold: segments,
 * lines, bindings, armed descriptors, outbox bytes, deadline-estimator points (each
 * costs sizeof(struct point), daemon/points.h). A charge is taken before anything
 * is allocated and fails as a whole (both scopes or neither) with -GARUDA_E_QUOTA.
 * Counters are atomic: the loop thread charges, scanner threads release armed
 * descriptors as they fire. uid records live as long as the daemon (bounded by the
 * number of distinct uids that ever connected). */
#pragma once

#include <stddef.h>

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"

/* Q_CONNECTIONS counts sessions (per uid; a connection is one by definition) */
enum quota_kind { Q_SEGMENTS, Q_LINES, Q_BINDINGS, Q_ARMED, Q_OUTBOX, Q_CONNECTIONS, Q_POINTS, Q_KINDS_ };

struct quota_usage {
	atomic_uint_fast64_t used[Q_KINDS_];
};

struct quota_uid {
	uid_t uid;
	struct quota_usage usage;
	struct quota_uid *next;
};

struct quota_table {
	struct quota_uid *head;
};

const char *quota_kind_name(enum quota_kind k);
uint64_t quota_limit(const struct quota_limits *l, enum quota_kind k);

/* Find or create the record of uid. NULL on ENOMEM. */
struct quota_uid *quota_uid_get(struct quota_table *t, uid_t uid);
void quota_table_free(struct quota_table *t);

/* Charge n of kind k to both scopes, or to neither. Returns 0 or -GARUDA_E_QUOTA. */
int quota_charge(struct quota_usage *conn, const struct quota_limits *conn_limits,
		 struct quota_usage *uid, const struct quota_limits *uid_limits, enum quota_kind k,
		 uint64_t n);
/* As quota_charge(); on a refusal, why gets the words for the peer and the log: the
 * key of the quota that refused ("quota.uid.armed"), its limit, the usage and n. */
int quota_charge_explain(struct quota_usage *conn, const struct quota_limits *conn_limits,
			 struct quota_usage *uid, const struct quota_limits *uid_limits,
			 enum quota_kind k, uint64_t n, char *why, size_t cap);
void quota_release(struct quota_usage *conn, struct quota_usage *uid, enum quota_kind k, uint64_t n);
