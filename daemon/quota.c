/* quota.c — see quota.h. */
#include "quota.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

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

static const char *const scope_names[QS_SCOPES_] = {
	[QS_CONNECTION] = "connection", [QS_UID] = "uid", [QS_CGROUP] = "cgroup", [QS_DAEMON] = "daemon",
};

const char *quota_scope_name(enum quota_scope s)
{
	return scope_names[s];
}

const struct quota_limits *quota_scope_limits(const struct config *cfg, enum quota_scope s)
{
	switch (s) {
	case QS_CONNECTION: return &cfg->quota_connection;
	case QS_UID: return &cfg->quota_uid;
	case QS_CGROUP: return &cfg->quota_cgroup;
	default: return &cfg->quota_daemon;
	}
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
	q->table = t;
	q->next = t->head;
	t->head = q;
	return q;
}

/* the cgroup list and its reference counts (one daemon per process) */
static pthread_mutex_t cgroups_lock = PTHREAD_MUTEX_INITIALIZER;

struct quota_cgroup *quota_cgroup_get(struct quota_table *t, const char *path)
{
	pthread_mutex_lock(&cgroups_lock);
	struct quota_cgroup *c;
	for (c = t->cgroups; c; c = c->next)
		if (strcmp(c->path, path) == 0) {
			c->refs++;
			break;
		}
	if (!c && (c = calloc(1, sizeof(*c)))) {
		c->path = strdup(path);
		if (c->path) {
			c->refs = 1;
			c->table = t;
			c->next = t->cgroups;
			t->cgroups = c;
		} else {
			free(c);
			c = NULL;
		}
	}
	pthread_mutex_unlock(&cgroups_lock);
	return c;
}

void quota_cgroup_unref(struct quota_cgroup *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cgroups_lock);
	bool last = --c->refs == 0;
	if (last) {
		struct quota_cgroup **pp = &c->table->cgroups;
		while (*pp != c)
			pp = &(*pp)->next;
		*pp = c->next;
	}
	pthread_mutex_unlock(&cgroups_lock);
	if (last) {
		free(c->path);
		free(c);
	}
}

void quota_cgroups_each(struct quota_table *t, void (*fn)(const struct quota_cgroup *c, void *arg),
			void *arg)
{
	pthread_mutex_lock(&cgroups_lock);
	for (const struct quota_cgroup *c = t->cgroups; c; c = c->next)
		fn(c, arg);
	pthread_mutex_unlock(&cgroups_lock);
}

void quota_table_free(struct quota_table *t)
{
	while (t->head) {
		struct quota_uid *q = t->head;
		t->head = q->next;
		while (q->refusals) {
			struct quota_refusals *r = q->refusals;
			q->refusals = r->next;
			free(r->cgroup);
			free(r);
		}
		free(q);
	}
	/* sinks still holding references are gone with the daemon */
	pthread_mutex_lock(&cgroups_lock);
	while (t->cgroups) {
		struct quota_cgroup *c = t->cgroups;
		t->cgroups = c->next;
		free(c->path);
		free(c);
	}
	pthread_mutex_unlock(&cgroups_lock);
}

int quota_peer_cgroup(const char *proc, pid_t pid, char **path)
{
	*path = NULL;
	if (pid <= 0)
		return -ESRCH;
	char name[64];
	snprintf(name, sizeof(name), "%s/%d/cgroup", proc, (int)pid);
	FILE *f = fopen(name, "re");
	if (!f)
		return -errno;
	int r = quota_cgroup_line(f, path);
	fclose(f);
	return r;
}

int quota_cgroup_line(FILE *f, char **path)
{
	*path = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = -ENODATA;
	errno = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		*path = strdup(line + 3);
		r = *path ? 0 : -ENOMEM;
		break;
	}
	if (n < 0 && errno)
		r = -errno;
	free(line);
	return r;
}

#define CGROUP_WALK_DIRS 65536
#define CGROUP_WALK_DEPTH 64

/* Depth-first under the directory dfd (taken), whose path relative to the mount is
 * path[0..len): the subdirectory whose inode number is id. 0 with its path in path, or
 * -ENOENT. A kernfs directory entry's d_ino is the node's id, so no stat per entry. */
static int cgroup_walk(int dfd, uint64_t id, char *path, size_t len, unsigned depth,
		       unsigned *budget)
{
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -ENOENT;
	}
	int r = -ENOENT;
	struct dirent *e;
	while (r == -ENOENT && (e = readdir(d))) {
		if (e->d_type != DT_DIR || !strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t n = strlen(e->d_name);
		if (len + 1 + n >= PATH_MAX)
			continue;
		path[len] = '/';
		memcpy(path + len + 1, e->d_name, n + 1);
		if ((uint64_t)e->d_ino == id) {
			r = 0;
			break;
		}
		if (depth + 1 >= CGROUP_WALK_DEPTH || *budget == 0)
			continue;
		--*budget;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			r = cgroup_walk(fd, id, path, len + 1 + n, depth + 1, budget);
	}
	if (r < 0)
		path[len] = '\0';
	closedir(d);
	return r;
}

int quota_cgroup_by_id(const char *mount, uint64_t id, char **path)
{
	*path = NULL;
	static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	int fd = -1, r = -EMEDIUMTYPE;
	for (size_t i = 0; i < 2 && fd < 0; i++) {
		const char *m = mount ? mount : mounts[i];
		struct statfs sf;
		int f = open(m, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (f < 0) {
			r = -errno;
		} else if (fstatfs(f, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
			fd = f;
		} else {
			close(f);
			r = -EMEDIUMTYPE;
		}
		if (mount)
			break;
	}
	if (fd < 0)
		return r;
	struct stat st;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == id) {
		close(fd);
		*path = strdup("/");
		return *path ? 0 : -ENOMEM;
	}
	char *buf = malloc(PATH_MAX);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	buf[0] = '\0';
	unsigned budget = CGROUP_WALK_DIRS;
	r = cgroup_walk(fd, id, buf, 0, 0, &budget);
	if (r == 0)
		*path = buf;
	else
		free(buf);
	return r;
}

/* The scopes of one charge, in the order they are taken and named. */
struct scope {
	enum quota_scope id;
	struct quota_usage *usage;
	const struct quota_limits *limits;
};

static unsigned scopes(struct scope s[QS_SCOPES_], struct quota_account *a, const struct config *cfg)
{
	unsigned n = 0;
	s[n++] = (struct scope){ QS_CONNECTION, &a->usage, &cfg->quota_connection };
	s[n++] = (struct scope){ QS_UID, &a->uid->usage, &cfg->quota_uid };
	if (a->cgroup)
		s[n++] = (struct scope){ QS_CGROUP, &a->cgroup->usage, &cfg->quota_cgroup };
	s[n++] = (struct scope){ QS_DAEMON, &a->uid->table->usage, &cfg->quota_daemon };
	return n;
}

static bool same_key(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The row of u's refusals for cgroup path (NULL: no key): found, else a new one, else
 * (QUOTA_REFUSAL_ROWS reached) the QUOTA_REFUSAL_OTHER row; NULL out of memory. */
static struct quota_refusals *refusal_row(struct quota_uid *u, const char *path)
{
	struct quota_refusals *other = NULL;
	for (struct quota_refusals *r = u->refusals; r; r = r->next) {
		if (r->cgroup && strcmp(r->cgroup, QUOTA_REFUSAL_OTHER) == 0)
			other = r;
		else if (same_key(r->cgroup, path))
			return r;
	}
	bool full = u->nrefusals + 1 >= QUOTA_REFUSAL_ROWS; /* the last row is "other" */
	if (full && other)
		return other;
	struct quota_refusals *r = calloc(1, sizeof(*r));
	const char *key = full ? QUOTA_REFUSAL_OTHER : path;
	if (!r || (key && !(r->cgroup = strdup(key)))) {
		free(r);
		return NULL;
	}
	/* appended: rows keep the order of their first refusal */
	struct quota_refusals **pp = &u->refusals;
	while (*pp)
		pp = &(*pp)->next;
	*pp = r;
	u->nrefusals++;
	return r;
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

/* Take n in every scope, or in none: the index of the scope that refused, or -1. */
static int take_all(const struct scope *s, unsigned ns, enum quota_kind k, uint64_t n)
{
	for (unsigned i = 0; i < ns; i++)
		if (take(s[i].usage, s[i].limits, k, n)) {
			for (unsigned j = 0; j < i; j++)
				atomic_fetch_sub(&s[j].usage->used[k], n);
			return (int)i;
		}
	return -1;
}

int quota_charge(struct quota_account *a, const struct config *cfg, enum quota_kind k, uint64_t n)
{
	struct scope s[QS_SCOPES_];
	return take_all(s, scopes(s, a, cfg), k, n) < 0 ? 0 : -GARUDA_E_QUOTA;
}

void quota_release(struct quota_account *a, enum quota_kind k, uint64_t n)
{
	atomic_fetch_sub(&a->usage.used[k], n);
	atomic_fetch_sub(&a->uid->usage.used[k], n);
	if (a->cgroup)
		atomic_fetch_sub(&a->cgroup->usage.used[k], n);
	atomic_fetch_sub(&a->uid->table->usage.used[k], n);
}

/* A cgroup path for a message: whole when short, else "..." and its last 100 bytes
 * (the tail names the pod or container; an ERROR's text is at most 256 bytes). */
#define WHY_PATH_MAX 100

int quota_charge_explain(struct quota_account *a, const struct config *cfg, enum quota_kind k, uint64_t n,
			 char *why, size_t cap)
{
	struct quota_cgroup *cg = a->cgroup;
	struct scope s[QS_SCOPES_];
	int i = take_all(s, scopes(s, a, cfg), k, n);
	if (i < 0)
		return 0;
	struct quota_refusals *row = refusal_row(a->uid, cg ? cg->path : NULL);
	if (row)
		row->n[s[i].id][k]++;
	int len = snprintf(why, cap, "quota.%s.%s exceeded: limit %llu, %llu in use, %llu more asked",
			   scope_names[s[i].id], kind_names[k], (unsigned long long)quota_limit(s[i].limits, k),
			   (unsigned long long)atomic_load(&s[i].usage->used[k]), (unsigned long long)n);
	if (cg && s[i].usage == &cg->usage && len > 0 && (size_t)len < cap) {
		size_t pl = strlen(cg->path);
		const char *p = pl > WHY_PATH_MAX ? cg->path + pl - WHY_PATH_MAX : cg->path;
		snprintf(why + len, cap - (size_t)len, " (cgroup %s%s)", p == cg->path ? "" : "...", p);
	}
	return -GARUDA_E_QUOTA;
}
