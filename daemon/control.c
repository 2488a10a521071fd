/* control.c — the control plane's connections: one JSON object per SOCK_SEQPACKET
 * datagram on the control socket, answered by one JSON object carrying "version".
 *
 * Promises:
 * - Access: a peer is admitted when its SO_PEERCRED uid is 0 or garudad's own euid
 *   (a user's private garudad answers its user), or when the config names
 *   an admin group (control_group) and the peer's gid or one of its supplementary
 *   groups (SO_PEERGROUPS, both as of connect time) is that group. Anyone else gets
 *   ACCESS_DENIED for every request, read-only ones included, before its datagram is
 *   even parsed. The group is looked up again when the config changes, so a reload
 *   applies to connections already open.
 * - Every request is checked against one table (request name, argument names, types,
 *   ranges) before a handler runs: malformed JSON or a non-object gets BAD_JSON, a
 *   missing or unknown "request" UNKNOWN_REQUEST / BAD_ARGUMENT, an unknown, duplicate,
 *   missing or mistyped argument BAD_ARGUMENT, a datagram over 4096 bytes TOO_LONG.
 *   The connection carries on after any of them.
 * - Replies never block the loop: a peer that does not read its replies is dropped.
 *   A reply too large for one datagram becomes a TOO_LONG error (lists are paged so
 *   that this does not happen in practice).
 * - At most CONTROL_MAX_CONNS connections at once; a burst of requests on one
 *   connection yields to the rest of the loop after CONTROL_BATCH of them.
 */
#include <cjson/cJSON.h>
#include <assert.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control.h"
#include "control_internal.h"
#include "control_names.h"
#include "log.h"
#include "server.h"

#define CONTROL_MAX_CONNS 64
#define CONTROL_BATCH 16
#define CONTROL_SNDBUF (1024 * 1024)

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

struct control_conn {
	struct daemon *d;
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups; /* supplementary groups at connect time */
	int ngroups;
	bool denied_logged;
	/* the admin group as last resolved for this connection */
	char *group_name;
	gid_t group_gid;
	bool group_found;
	struct loop_watch *w;
	struct control_conn *next;
};

/* ---------------- reply helpers ---------------- */

cJSON *ctl_reply_new(void)
{
	cJSON *r = cJSON_CreateObject();
	if (r)
		cJSON_AddNumberToObject(r, CTL_KEY_VERSION, CONTROL_VERSION);
	return r;
}

cJSON *ctl_error(int code, const char *fmt, ...)
{
	char msg[512];
	/* negative inside the daemon; in the reply a registry code is positive, an errno
	 * negative (as on the client socket), named by its registry or errno name */
	assert(code < 0 && "daemon error codes are negative");
	const char *name;
	if (-code >= GARUDA_ERR_BASE) {
		code = -code;
		name = garuda_errcode_name(code);
	} else {
		name = strerrorname_np(-code);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cJSON *r = ctl_reply_new();
	cJSON *e = cJSON_AddObjectToObject(r, CTL_KEY_ERROR);
	cJSON_AddNumberToObject(e, CTL_KEY_CODE, code);
	cJSON_AddStringToObject(e, CTL_KEY_NAME, name ? name : "UNKNOWN");
	cJSON_AddStringToObject(e, CTL_KEY_MESSAGE, msg);
	return r;
}

void ctl_add_uint(cJSON *o, const char *key, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cJSON_AddRawToObject(o, key, buf);
}

void ctl_add_int(cJSON *o, const char *key, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	cJSON_AddRawToObject(o, key, buf);
}

void ctl_add_u64_string(cJSON *o, const char *key, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cJSON_AddStringToObject(o, key, buf);
}

size_t ctl_printed_size(const cJSON *item)
{
	char *t = cJSON_PrintUnformatted(item);
	size_t n = t ? strlen(t) : 0;
	free(t);
	return n;
}

/* ---------------- request table ---------------- */

enum ctl_arg_type { ARG_NONE, ARG_UINT, ARG_STRING };

struct ctl_arg {
	const char *name;
	enum ctl_arg_type type;
	bool required;
	double min, max; /* ARG_UINT */
};

struct ctl_request {
	const char *name;
	cJSON *(*fn)(struct daemon *d, const cJSON *req);
	struct ctl_arg args[4];
};

#define ARG_CLIENT(req) { CTL_KEY_CLIENT, ARG_UINT, req, 1, CONTROL_MAX_ID }
#define ARG_START(max) { CTL_KEY_START, ARG_UINT, false, 0, max }

static const struct ctl_request requests[] = {
	{ CTL_REQ_STATUS, ctl_req_status, { { 0 } } },
	{ CTL_REQ_CLIENTS, ctl_req_clients, { ARG_START(CONTROL_MAX_ID) } },
	{ CTL_REQ_SEGMENTS, ctl_req_segments, { ARG_CLIENT(true), ARG_START(UINT32_MAX) } },
	{ CTL_REQ_LINES, ctl_req_lines, { ARG_CLIENT(true), { CTL_KEY_SEGMENT, ARG_UINT, true, 0, UINT32_MAX },
				    ARG_START(GARUDA_SEGMENT_MAX_LINES - 1),
				    { CTL_KEY_COUNT, ARG_UINT, false, 1, GARUDA_SEGMENT_MAX_LINES } } },
	{ CTL_REQ_SCANNERS, ctl_req_scanners, { { 0 } } },
	{ CTL_REQ_POINTS, ctl_req_points, { ARG_CLIENT(true) } },
	{ CTL_REQ_CONFIG, ctl_req_config, { { 0 } } },
	{ CTL_REQ_METRICS, ctl_req_metrics, { { 0 } } },
	{ CTL_REQ_DISCONNECT, ctl_req_disconnect, { ARG_CLIENT(true) } },
	{ CTL_REQ_LOG_LEVEL, ctl_req_log_level, { { CTL_KEY_LEVEL, ARG_STRING, false, 0, 0 } } },
	{ CTL_REQ_RELOAD, ctl_req_reload, { { 0 } } },
};

bool ctl_arg_uint(const cJSON *req, const char *key, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
	if (!cJSON_IsNumber(v))
		return false;
	*out = (uint64_t)v->valuedouble; /* checked integral and in range by check_args */
	return true;
}

const char *ctl_arg_string(const cJSON *req, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const struct ctl_arg *find_arg(const struct ctl_request *rq, const char *key)
{
	for (size_t i = 0; i < sizeof(rq->args) / sizeof(rq->args[0]) && rq->args[i].name; i++)
		if (strcmp(rq->args[i].name, key) == 0)
			return &rq->args[i];
	return NULL;
}

/* NULL when req's arguments fit rq's table, else the error reply. */
static cJSON *check_args(const struct ctl_request *rq, const cJSON *req)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, req)
	{
		for (const cJSON *p = req->child; p != it; p = p->next)
			if (strcmp(p->string, it->string) == 0)
				return ctl_error(-GARUDA_E_BAD_ARGUMENT, "duplicate key \"%.64s\"", it->string);
		if (strcmp(it->string, CTL_KEY_REQUEST) == 0)
			continue;
		const struct ctl_arg *a = find_arg(rq, it->string);
		if (!a)
			return ctl_error(-GARUDA_E_BAD_ARGUMENT, "request \"%s\" takes no argument \"%.64s\"",
					 rq->name, it->string);
		if (a->type == ARG_STRING) {
			if (!cJSON_IsString(it))
				return ctl_error(-GARUDA_E_BAD_ARGUMENT, "argument \"%s\" must be a string", a->name);
			continue;
		}
		double v = it->valuedouble;
		/* in range first (NaN fails it), then integral: the cast is defined there */
		if (!cJSON_IsNumber(it) || !(v >= a->min && v <= a->max) || v != (double)(uint64_t)v)
			return ctl_error(-GARUDA_E_BAD_ARGUMENT, "argument \"%s\" must be an integer in [%.0f, %.0f]",
					 a->name, a->min, a->max);
	}
	for (size_t i = 0; i < sizeof(rq->args) / sizeof(rq->args[0]) && rq->args[i].name; i++)
		if (rq->args[i].required && !cJSON_GetObjectItemCaseSensitive(req, rq->args[i].name))
			return ctl_error(-GARUDA_E_BAD_ARGUMENT, "request \"%s\" needs argument \"%s\"", rq->name,
					 rq->args[i].name);
	return NULL;
}

static bool only_space(const char *p, const char *end)
{
	for (; p < end; p++)
		if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
			return false;
	return true;
}

static cJSON *dispatch(struct daemon *d, const char *buf, size_t len)
{
	const char *end = NULL;
	cJSON *req = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!req || !end || !only_space(end, buf + len)) {
		cJSON_Delete(req);
		return ctl_error(-GARUDA_E_BAD_JSON, "request is not valid JSON");
	}
	if (!cJSON_IsObject(req)) {
		cJSON_Delete(req);
		return ctl_error(-GARUDA_E_BAD_JSON, "request must be a JSON object");
	}
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, CTL_KEY_REQUEST);
	cJSON *r = NULL;
	if (!name) {
		r = ctl_error(-GARUDA_E_BAD_ARGUMENT, "missing key \"request\"");
	} else if (!cJSON_IsString(name)) {
		r = ctl_error(-GARUDA_E_BAD_ARGUMENT, "key \"request\" must be a string");
	} else {
		const struct ctl_request *rq = NULL;
		for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
			if (strcmp(requests[i].name, name->valuestring) == 0)
				rq = &requests[i];
		if (!rq)
			r = ctl_error(-GARUDA_E_UNKNOWN_REQUEST, "unknown request \"%.64s\"", name->valuestring);
		else if (!(r = check_args(rq, req)))
			r = rq->fn(d, req);
	}
	cJSON_Delete(req);
	return r;
}

/* ---------------- access ---------------- */

/* Supplementary groups of the peer as of connect(): SO_PEERGROUPS (Linux 4.13), else
 * /proc/PID/status "Groups:" (racy against pid reuse; only for old kernels). */
static void read_groups(struct control_conn *c)
{
	socklen_t len = 64 * sizeof(gid_t);
	for (int tries = 0; tries < 4; tries++) {
		gid_t *g = malloc(len ? len : sizeof(gid_t));
		if (!g)
			return;
		socklen_t l = len;
		if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, g, &l) == 0) {
			c->groups = g;
			c->ngroups = (int)(l / sizeof(gid_t));
			return;
		}
		free(g);
		if (errno != ERANGE || l <= len)
			break;
		len = l;
	}
	if (errno != ENOPROTOOPT)
		return;
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)c->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		int cap = 0;
		for (char *p = line + 7, *e;; p = e) {
			unsigned long v = strtoul(p, &e, 10);
			if (e == p)
				break;
			if (c->ngroups == cap) {
				cap = cap ? cap * 2 : 16;
				gid_t *ng = realloc(c->groups, (size_t)cap * sizeof(gid_t));
				if (!ng)
					break;
				c->groups = ng;
			}
			c->groups[c->ngroups++] = (gid_t)v;
		}
		break;
	}
	fclose(f);
}

static bool admitted(struct control_conn *c)
{
	if (c->uid == 0 || c->uid == geteuid()) /* root, and the daemon's own user */
		return true;
	const char *want = c->d->cfg.control_group;
	if (!want || !*want)
		return false;
	if (!c->group_name || strcmp(c->group_name, want) != 0) {
		free(c->group_name);
		c->group_name = strdup(want);
		/* as the socket's chown (server.c): a numeric group is a gid, no lookup */
		unsigned gid;
		bool numeric = config_numeric_gid(want, &gid);
		struct group *g = numeric ? NULL : getgrnam(want);
		c->group_found = numeric || g != NULL;
		c->group_gid = numeric ? (gid_t)gid : g ? g->gr_gid : (gid_t)-1;
	}
	if (!c->group_found)
		return false;
	if (c->gid == c->group_gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == c->group_gid)
			return true;
	return false;
}

static cJSON *denied(struct control_conn *c)
{
	const char *want = c->d->cfg.control_group;
	if (!c->denied_logged) {
		c->denied_logged = true;
		log_client(LOG_NOTICE, "control: refused pid %d uid %u gid %u: not root and not in the admin group",
			   (int)c->pid, (unsigned)c->uid, (unsigned)c->gid);
	}
	if (!want || !*want)
		return ctl_error(-GARUDA_E_ACCESS_DENIED,
				 "uid %u may not use the control socket: it admits root only (config key "
				 "control_group is empty); every request, read-only ones too, needs that",
				 (unsigned)c->uid);
	return ctl_error(-GARUDA_E_ACCESS_DENIED,
			 "uid %u may not use the control socket: it admits root and members of group "
			 "\"%s\"%s; every request, read-only ones too, needs that",
			 (unsigned)c->uid, want, c->group_found ? "" : " (which does not exist)");
}

/* ---------------- connections ---------------- */

static void conn_close(struct control_conn *c)
{
	struct control_conn **pp = &c->d->controls;
	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	loop_remove(c->d->loop, c->w);
	close(c->fd);
	free(c->groups);
	free(c->group_name);
	free(c);
}

/* Send r (consumed). Returns false when the connection had to be closed. */
static bool send_reply(struct control_conn *c, cJSON *r)
{
	char *text = r ? cJSON_PrintUnformatted(r) : NULL;
	cJSON_Delete(r);
	if (text && strlen(text) > CONTROL_MAX_REPLY) {
		free(text);
		cJSON *e = ctl_error(-GARUDA_E_TOO_LONG, "reply over %u bytes; ask for a smaller page",
				     (unsigned)CONTROL_MAX_REPLY);
		text = cJSON_PrintUnformatted(e);
		cJSON_Delete(e);
	}
	if (!text) {
		cJSON *e = ctl_error(-ENOMEM, "%s", garuda_strerror(-ENOMEM));
		text = e ? cJSON_PrintUnformatted(e) : NULL;
		cJSON_Delete(e);
		if (!text) {
			conn_close(c);
			return false;
		}
	}
	/* the peer waits for its reply; one that does not read gets dropped, not queued */
	ssize_t n = send(c->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	free(text);
	if (n < 0) {
		conn_close(c);
		return false;
	}
	return true;
}

static void on_request(struct loop_watch *w, void *data, uint32_t events)
{
	struct control_conn *c = data;
	(void)events;
	char buf[CONTROL_MAX_REQUEST];
	for (int i = 0; i < CONTROL_BATCH; i++) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		cJSON *r;
		if (!admitted(c))
			r = denied(c);
		else if ((size_t)n > sizeof(buf))
			r = ctl_error(-GARUDA_E_TOO_LONG, "request of %zd bytes; the limit is %u", n,
				      (unsigned)CONTROL_MAX_REQUEST);
		else
			r = dispatch(c->d, buf, (size_t)n);
		if (!send_reply(c, r))
			return;
	}
	loop_again(c->d->loop, w);
}

void control_on_accept(struct loop_watch *w, void *data, uint32_t events)
{
	struct daemon *d = data;
	(void)events;
	for (int i = 0; i < CONTROL_BATCH; i++) {
		int fd = server_accept(d, d->control_fd);
		if (fd < 0 && errno == ECONNABORTED)
			continue; /* refused one for want of fds (server.c) */
		if (fd < 0)
			return;
		unsigned nconn = 0;
		for (struct control_conn *o = d->controls; o; o = o->next)
			nconn++;
		if (nconn >= CONTROL_MAX_CONNS) {
			log_client(LOG_WARNING, "control: %u connections open; refusing another", nconn);
			close(fd);
			continue;
		}
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		struct control_conn *c = calloc(1, sizeof(*c));
		if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
			free(c);
			close(fd);
			continue;
		}
		c->d = d;
		c->fd = fd;
		c->uid = cred.uid;
		c->gid = cred.gid;
		c->pid = cred.pid;
		if (c->uid != 0)
			read_groups(c);
		int sndbuf = CONTROL_SNDBUF;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)); /* best effort */
		c->w = loop_add(d->loop, fd, POLLIN, on_request, c);
		if (!c->w) {
			close(fd);
			free(c->groups);
			free(c);
			continue;
		}
		c->next = d->controls;
		d->controls = c;
	}
	loop_again(d->loop, w);
}

void control_close_all(struct daemon *d)
{
	while (d->controls)
		conn_close(d->controls);
}
