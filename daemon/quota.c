/* quota.c — see quota.h. */
#include "quota.h"

#include <stdio.h>
#include <stdlib.h>

#include "errcode.h"

static const char *const kind_names[Q_KINDS_] = {
	[Q_SEGMENTS] = "segments", [Q_LINES] = "lines", [Q_BINDINGS] = "bindings",
	[Q_ARMED] = "armed", [Q_OUTBOX] = "outbox_bytes", [Q_CONNECTIONS] = "connections",
	[Q_POINTS] = "points",
};

const char *quota_kind_name(enum quota_kind k)
{
	return kind_names[k];
}

uint64_t quota_limit(const struct quota_limits *l, enum quota_kind k)
{
	switch (k) {
	case Q_SEGMENTS: return l->segments;
	case Q_LINES: return l->lines;
	case Q_BINDINGS: return l->bindings;
	case Q_ARMED: return l->armed;
	case Q_OUTBOX: return l->outbox_bytes;
	case Q_CONNECTIONS: return l->connections;
	case Q_POINTS: return l->points;
	default: return 0;
	}
}

struct quota_uid *quota_uid_get(struct quota_table *t, uid_t uid)
{
	for (struct quota_uid *q = t->head; q; q = q->next)
		if (q->uid == uid)
			return q;
	struct quota_uid *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->uid = uid;
	q->next = t->head;
	t->head = q;
	return q;
}

void quota_table_free(struct quota_table *t)
{
	while (t->head) {
		struct quota_uid *q = t->head;
		t->head = q->next;
		free(q);
	}
}

static int take(struct quota_usage *u, const struct quota_limits *l, enum quota_kind k, uint64_t n)
{
	uint64_t before = atomic_fetch_add(&u->used[k], n);
	if (before + n > quota_limit(l, k)) {
		atomic_fetch_sub(&u->used[k], n);
		return -GARUDA_E_QUOTA;
	}
	return 0;
}

int quota_charge(struct quota_usage *conn, const struct quota_limits *conn_limits,
		 struct quota_usage *uid, const struct quota_limits *uid_limits, enum quota_kind k,
		 uint64_t n)
{
	int r = take(conn, conn_limits, k, n);
	if (r)
		return r;
	r = take(uid, uid_limits, k, n);
	if (r)
		atomic_fetch_sub(&conn->used[k], n);
	return r;
}

void quota_release(struct quota_usage *conn, struct quota_usage *uid, enum quota_kind k, uint64_t n)
{
	atomic_fetch_sub(&conn->used[k], n);
	atomic_fetch_sub(&uid->used[k], n);
}

int quota_charge_explain(struct quota_usage *conn, const struct quota_limits *conn_limits,
			 struct quota_usage *uid, const struct quota_limits *uid_limits,
			 enum quota_kind k, uint64_t n, char *why, size_t cap)
{
	int r = take(conn, conn_limits, k, n);
	const char *scope = "connection";
	const struct quota_limits *l = conn_limits;
	const struct quota_usage *u = conn;
	if (r == 0) {
		r = take(uid, uid_limits, k, n);
		if (r == 0)
			return 0;
		atomic_fetch_sub(&conn->used[k], n);
		scope = "uid";
		l = uid_limits;
		u = uid;
	}
	snprintf(why, cap, "quota.%s.%s exceeded: limit %llu, %llu in use, %llu more asked",
		 scope, kind_names[k], (unsigned long long)quota_limit(l, k),
		 (unsigned long long)atomic_load(&u->used[k]), (unsigned long long)n);
	return r;
}
