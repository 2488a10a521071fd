/* control.c — the control plane's connections: one JSON object per SOCK_SEQPACKET
 * datagram on the control socket, answered by one JSON object carrying "version".
 *
 * Promises:
 * - Access, two tiers: a peer is an admin when its SO_PEERCRED uid is 0 or garudad's
 *   own euid (a user's private garudad answers its user), or when the config names
 *   an admin group (control_group) and the peer's gid or one of its supplementary
 *   groups (SO_PEERGROUPS, both as of connect time) is that group; else it is admitted
 *   read-only when it is so in control_read_group. A read-only peer gets every request
 *   the table marks as reading (status, lists, config, metrics, log_level without a
 *   level); one that changes something (disconnect, reload, log_level with a level)
 *   gets ACCESS_DENIED naming the admin group, and the connection carries on.
 *   Admission is decided at accept: anyone else gets one ACCESS_DENIED (read-only
 *   requests are refused too) and the connection is closed, so a refused peer never
 *   holds one of the CONTROL_MAX_CONNS. The groups are looked up again when the config
 *   changes, so a reload applies to connections already open: one no longer admitted
 *   gets ACCESS_DENIED for its next request, and is closed; one whose tier changed is
 *   answered by its new tier.
 * - Every request is checked against one table (request name, argument names, types,
 *   ranges) before a handler runs: malformed JSON, a non-object or an empty datagram
 *   gets BAD_JSON, a missing or unknown "request" UNKNOWN_REQUEST / BAD_ARGUMENT, an
 *   unknown, duplicate, missing or mistyped argument, or a string holding U+0000,
 *   BAD_ARGUMENT, a datagram over 4096 bytes TOO_LONG. The connection carries on after
 *   any of them.
 * - Every reply is valid UTF-8: text from outside (a request's names, a client's comm
 *   and cgroup) goes through ctl_escape(), and an error message as a whole too.
 * - Replies never block the loop: a peer that does not read its replies is dropped.
 *   A reply too large for one datagram becomes a TOO_LONG error (lists are paged and
 *   the metrics text is bounded, so that this does not happen in practice).
 * - At most CONTROL_MAX_CONNS admitted connections at once; one more gets a BUSY error
 *   saying so and is closed. A burst of requests on one connection yields to the rest
 *   of the loop after CONTROL_BATCH of them.
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

#include "closer.h"
#include "control.h"
#include "control_internal.h"
#include "control_names.h"
#include "fdio.h"
#include "jsontext.h"
#include "log.h"
#include "server.h"

#define CONTROL_MAX_CONNS 64
#define CONTROL_BATCH 16
#define CONTROL_SNDBUF (1024 * 1024)

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

/* A group named by the config, resolved: looked up again when the name changes. */
struct group_seen {
	char *name;
	gid_t gid;
	bool found;
};

/* What a peer may do: nothing (refused at accept), read, or everything. */
enum ctl_access { CTL_DENIED, CTL_READ, CTL_ADMIN };

struct control_conn {
	struct daemon *d;
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	gid_t *groups; /* supplementary groups at connect time */
	int ngroups;
	/* the admin group (control_group) and the read-only one (control_read_group), as
	 * last resolved for this connection */
	struct group_seen admin, reader;
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
	char msg[CTL_MESSAGE_MAX];
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
	char *raw = NULL;
	if (vasprintf(&raw, fmt, ap) < 0)
		raw = NULL;
	va_end(ap);
	/* the message may quote a request's names or a config file's keys: valid UTF-8,
	 * cut at a character */
	ctl_escape(msg, sizeof(msg), raw ? raw : garuda_strerror(-ENOMEM));
	free(raw);
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

/* ---------------- text from outside ---------------- */

/* Bytes of the valid UTF-8 sequence at s (1..4), or 0 for an invalid byte. */
static unsigned utf8_len(const unsigned char *s)
{
	unsigned n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		   : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	for (unsigned i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))) ||
	    (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))))
		return 0; /* overlong, surrogate, beyond U+10FFFF */
	return n;
}

size_t ctl_escape(char *out, size_t cap, const char *str)
{
	size_t len = 0, kept = 0;
	for (const unsigned char *s = (const unsigned char *)str; *s;) {
		char hex[5];
		const char *piece = (const char *)s;
		size_t n = utf8_len(s), step = n;
		bool control = (n == 1 && (*s < 0x20 || *s == 0x7f)) ||
			       (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
		if (*s == '\\') {
			piece = "\\\\";
			n = 2;
		} else if (!n || control) { /* not UTF-8; C0, DEL, C1 (U+0080..U+009F) */
			snprintf(hex, sizeof(hex), "\\x%02X", (unsigned)*s);
			piece = hex;
			n = 4;
			step = 1;
		}
		if (kept == len && len + n < cap) { /* nothing cut yet, and this one fits */
			memcpy(out + len, piece, n);
			kept += n;
		}
		len += n;
		s += step;
	}
	if (cap)
		out[kept] = '\0';
	return len;
}

char *ctl_escape_dup(const char *s)
{
	size_t n = ctl_escape(NULL, 0, s) + 1;
	char *t = malloc(n);
	if (t)
		ctl_escape(t, n, s);
	return t;
}

size_t ctl_utf8_prefix(const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t at = 0;
	while (s[at]) {
		unsigned n = utf8_len(s + at);
		if (at + (n ? n : 1) > max)
			break;
		at += n ? n : 1;
	}
	return at;
}

/* ---------------- request table ---------------- */

enum ctl_arg_type { ARG_NONE, ARG_UINT, ARG_STRING };

struct ctl_arg {
	const char *name;
	enum ctl_arg_type type;
	bool required;
	double min, max; /* ARG_UINT */
	bool writes;     /* given, the request changes something: admins only */
};

/* A request: its name, handler, arguments, and whether it changes something (admins
 * only) or only reads (read-only peers too). */
struct ctl_request {
	const char *name;
	cJSON *(*fn)(struct daemon *d, const cJSON *req);
	bool writes;
	struct ctl_arg args[4];
};

#define ARG_CLIENT(req) { CTL_KEY_CLIENT, ARG_UINT, req, 1, CONTROL_MAX_ID, false }
#define ARG_START(max) { CTL_KEY_START, ARG_UINT, false, 0, max, false }
#define READS false
#define WRITES true

static const struct ctl_request requests[] = {
	{ CTL_REQ_STATUS, ctl_req_status, READS, { { 0 } } },
	{ CTL_REQ_CLIENTS, ctl_req_clients, READS, { ARG_START(CONTROL_MAX_ID) } },
	{ CTL_REQ_SEGMENTS, ctl_req_segments, READS, { ARG_CLIENT(true), ARG_START(UINT32_MAX) } },
	{ CTL_REQ_LINES, ctl_req_lines, READS,
	  { ARG_CLIENT(true), { CTL_KEY_SEGMENT, ARG_UINT, true, 0, UINT32_MAX, false },
	    ARG_START(GARUDA_SEGMENT_MAX_LINES - 1),
	    { CTL_KEY_COUNT, ARG_UINT, false, 1, GARUDA_SEGMENT_MAX_LINES, false } } },
	{ CTL_REQ_SCANNERS, ctl_req_scanners, READS, { { 0 } } },
	{ CTL_REQ_POINTS, ctl_req_points, READS, { ARG_CLIENT(true) } },
	{ CTL_REQ_CONFIG, ctl_req_config, READS, { { 0 } } },
	{ CTL_REQ_METRICS, ctl_req_metrics, READS, { { 0 } } },
	{ CTL_REQ_DISCONNECT, ctl_req_disconnect, WRITES, { ARG_CLIENT(true) } },
	/* without a level it reads the level */
	{ CTL_REQ_LOG_LEVEL, ctl_req_log_level, READS, { { CTL_KEY_LEVEL, ARG_STRING, false, 0, 0, true } } },
	{ CTL_REQ_RELOAD, ctl_req_reload, WRITES, { { 0 } } },
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
				return ctl_error(-GARUDA_E_BAD_ARGUMENT, "duplicate key \"%.*s\"",
						 CTL_CUT(it->string, CTL_ECHO_MAX));
		if (strcmp(it->string, CTL_KEY_REQUEST) == 0)
			continue;
		const struct ctl_arg *a = find_arg(rq, it->string);
		if (!a)
			return ctl_error(-GARUDA_E_BAD_ARGUMENT, "request \"%s\" takes no argument \"%.*s\"",
					 rq->name, CTL_CUT(it->string, CTL_ECHO_MAX));
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

static cJSON *read_only_denied(struct control_conn *c, const struct ctl_request *rq);

/* Does req (its arguments checked) change something? */
static bool writes(const struct ctl_request *rq, const cJSON *req)
{
	if (rq->writes)
		return true;
	for (size_t i = 0; i < sizeof(rq->args) / sizeof(rq->args[0]) && rq->args[i].name; i++)
		if (rq->args[i].writes && cJSON_GetObjectItemCaseSensitive(req, rq->args[i].name))
			return true;
	return false;
}

static cJSON *dispatch(struct control_conn *c, enum ctl_access access, const char *buf, size_t len)
{
	struct daemon *d = c->d;
	if (len == 0)
		return ctl_error(-GARUDA_E_BAD_JSON, "empty request: send one JSON object per datagram");
	size_t ctl = json_text_control_at(buf, len);
	if (ctl < len)
		return ctl_error(-GARUDA_E_BAD_JSON, "request is not valid JSON: a control "
				 "character (byte 0x%02x) at offset %zu", (unsigned char)buf[ctl], ctl);
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
	if (json_text_holds_nul(buf, len)) {
		cJSON_Delete(req);
		return ctl_error(-GARUDA_E_BAD_ARGUMENT,
				 "a string of the request holds U+0000 (NUL), which no name or argument may");
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
			r = ctl_error(-GARUDA_E_UNKNOWN_REQUEST, "unknown request \"%.*s\"",
				      CTL_CUT(name->valuestring, CTL_ECHO_MAX));
		else if (!(r = check_args(rq, req)))
			r = access == CTL_ADMIN || !writes(rq, req) ? rq->fn(d, req) : read_only_denied(c, rq);
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

/* Is the peer in the group the config names want ("" or NULL: none)? seen caches
 * its lookup. */
static bool in_group(struct control_conn *c, struct group_seen *seen, const char *want)
{
	if (!want || !*want)
		return false;
	if (!seen->name || strcmp(seen->name, want) != 0) {
		free(seen->name);
		seen->name = strdup(want);
		/* as the socket's chown (server.c): a numeric group is a gid, no lookup */
		unsigned gid;
		bool numeric = config_numeric_gid(want, &gid);
		struct group *g = numeric ? NULL : getgrnam(want);
		seen->found = numeric || g != NULL;
		seen->gid = numeric ? (gid_t)gid : g ? g->gr_gid : (gid_t)-1;
	}
	if (!seen->found)
		return false;
	if (c->gid == seen->gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == seen->gid)
			return true;
	return false;
}

static enum ctl_access access_of(struct control_conn *c)
{
	if (c->uid == 0 || c->uid == geteuid()) /* root, and the daemon's own user */
		return CTL_ADMIN;
	if (in_group(c, &c->admin, c->d->cfg.control_group))
		return CTL_ADMIN;
	return in_group(c, &c->reader, c->d->cfg.control_read_group) ? CTL_READ : CTL_DENIED;
}

static const char *admins_are(const struct control_conn *c)
{
	const char *want = c->d->cfg.control_group;
	return want && *want ? want : NULL;
}

static cJSON *read_only_denied(struct control_conn *c, const struct ctl_request *rq)
{
	const char *admin = admins_are(c);
	log_client(c->uid, LOG_NOTICE, "control: refused request %s of pid %d uid %u: read-only (control_read_group)",
		   rq->name, (int)c->pid, (unsigned)c->uid);
	if (!admin)
		return ctl_error(-GARUDA_E_ACCESS_DENIED,
				 "uid %u is admitted read-only (control_read_group \"%.64s\"); request \"%s\" changes "
				 "something, which only root may (config key control_group is empty)",
				 (unsigned)c->uid, c->d->cfg.control_read_group, rq->name);
	return ctl_error(-GARUDA_E_ACCESS_DENIED,
			 "uid %u is admitted read-only (control_read_group \"%.64s\"); request \"%s\" changes "
			 "something, which only root and members of group \"%.64s\" (control_group) may",
			 (unsigned)c->uid, c->d->cfg.control_read_group, rq->name, admin);
}

static cJSON *denied(struct control_conn *c)
{
	const char *want = admins_are(c), *readers = c->d->cfg.control_read_group;
	log_client(c->uid, LOG_NOTICE, "control: refused pid %d uid %u gid %u: not root and not in the admin "
		   "or read-only group", (int)c->pid, (unsigned)c->uid, (unsigned)c->gid);
	char admins[160], reads[160] = "";
	if (want)
		snprintf(admins, sizeof(admins), "root and members of group \"%.64s\"%s", want,
			 c->admin.found ? "" : " (which does not exist)");
	else
		snprintf(admins, sizeof(admins), "root only (config key control_group is empty)");
	if (readers && *readers)
		snprintf(reads, sizeof(reads), ", and read-only requests of members of group \"%.64s\"%s", readers,
			 c->reader.found ? "" : " (which does not exist)");
	return ctl_error(-GARUDA_E_ACCESS_DENIED,
			 "uid %u may not use the control socket: it admits %s%s; every request, read-only "
			 "ones too, needs that",
			 (unsigned)c->uid, admins, reads);
}

/* ---------------- connections ---------------- */

/* A connection not (or no longer) in d->controls. */
static void conn_free(struct control_conn *c)
{
	close(c->fd);
	free(c->groups);
	free(c->admin.name);
	free(c->reader.name);
	free(c);
}

static void conn_close(struct control_conn *c)
{
	struct control_conn **pp = &c->d->controls;
	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	loop_remove(c->d->loop, c->w);
	conn_free(c);
}

/* Send r (consumed) on fd without blocking: 0, or -errno (the peer does not read its
 * replies, or is gone). */
static int send_text(int fd, cJSON *r)
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
		if (!text)
			return -ENOMEM;
	}
	/* the peer waits for its reply; one that does not read gets dropped, not queued */
	ssize_t n = send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	free(text);
	return n < 0 ? -errno : 0;
}

/* Send r (consumed). Returns false when the connection had to be closed. */
static bool send_reply(struct control_conn *c, cJSON *r)
{
	if (send_text(c->fd, r) < 0) {
		conn_close(c);
		return false;
	}
	return true;
}

/* The peer sent an empty datagram (true), or shut down its side (false): recv()
 * returns 0 for both on a SOCK_SEQPACKET socket. */
static bool empty_datagram(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLRDHUP };
	return poll(&p, 1, 0) == 0;
}

/* recv() of one request, with room for the most fds a datagram may carry (SCM_MAX_FD,
 * 253): a request takes none, and those that come are handed to the closer thread
 * (closer.h). A plain recv() let the kernel drop them, closing each on this thread: a
 * close that can block (a FUSE file, a lingering TCP socket) would have held the
 * loop. */
static ssize_t recv_request(int fd, char *buf, size_t cap)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(253 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			(void)closer_close(f);
		}
	}
	return n;
}

static void on_request(struct loop_watch *w, void *data, uint32_t events)
{
	struct control_conn *c = data;
	(void)events;
	char buf[CONTROL_MAX_REQUEST];
	for (int i = 0; i < CONTROL_BATCH; i++) {
		ssize_t n = recv_request(c->fd, buf, sizeof(buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0 || (n == 0 && !empty_datagram(c->fd))) {
			conn_close(c);
			return;
		}
		enum ctl_access access = access_of(c);
		if (access == CTL_DENIED) { /* a reload changed the groups: one answer, then closed */
			send_text(c->fd, denied(c));
			conn_close(c);
			return;
		}
		cJSON *r;
		if ((size_t)n > sizeof(buf))
			r = ctl_error(-GARUDA_E_TOO_LONG, "request of %zd bytes; the limit is %u", n,
				      (unsigned)CONTROL_MAX_REQUEST);
		else
			r = dispatch(c, access, buf, (size_t)n);
		if (!send_reply(c, r))
			return;
	}
	loop_again(c->d->loop, w);
}

/* A new connection, its peer's credentials read: NULL, or it could not be read. */
static struct control_conn *conn_new(struct daemon *d, int fd)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct control_conn *c = calloc(1, sizeof(*c));
	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		free(c);
		return NULL;
	}
	c->d = d;
	c->fd = fd;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	if (c->uid != 0)
		read_groups(c);
	return c;
}

/* A connection refused at accept: its one reply (r, consumed) is queued for it to
 * read, and what it sent is read and thrown away before the caller closes fd (closed
 * with unread data, the peer's next read gave ECONNRESET instead of the reply;
 * protocol.md §1). */
static void refuse(int fd, cJSON *r)
{
	send_text(fd, r);
	shutdown(fd, SHUT_RD);
	fdio_discard(fd);
}

/* server_accept()'s refusal for want of fds */
static void refuse_out_of_fds(struct daemon *d, int fd)
{
	(void)d;
	refuse(fd, ctl_error(-EMFILE, "%s", GARUDA_OUT_OF_FDS));
}

void control_on_accept(struct loop_watch *w, void *data, uint32_t events)
{
	struct daemon *d = data;
	(void)events;
	for (int i = 0; i < CONTROL_BATCH; i++) {
		int fd = server_accept(d, d->control_fd, refuse_out_of_fds);
		if (fd < 0 && errno == ECONNABORTED)
			continue; /* refused one for want of fds (server.c) */
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				server_accept_failed(d, w); /* look again next iteration */
			return;
		}
		struct control_conn *c = conn_new(d, fd);
		if (!c) {
			close(fd);
			continue;
		}
		/* refused at once, before it counts */
		if (access_of(c) == CTL_DENIED) {
			refuse(fd, denied(c));
			conn_free(c);
			continue;
		}
		unsigned nconn = 0;
		for (struct control_conn *o = d->controls; o; o = o->next)
			nconn++;
		if (nconn >= CONTROL_MAX_CONNS) {
			log_client(c->uid, LOG_WARNING, "control: %u connections open; refusing pid %d uid %u",
				   nconn, (int)c->pid, (unsigned)c->uid);
			refuse(fd, ctl_error(-GARUDA_E_BUSY,
					     "garudad has %u control connections open, its limit; "
					     "try again once one closes (each garctl top and each "
					     "script holds one while it runs)",
					     nconn));
			conn_free(c);
			continue;
		}
		int sndbuf = CONTROL_SNDBUF;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)); /* best effort */
		c->w = loop_add(d->loop, fd, POLLIN, on_request, c);
		if (!c->w) {
			conn_free(c);
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
