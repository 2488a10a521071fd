/* control.c — the control plane: one JSON object per SOCK_SEQPACKET datagram on the
 * control socket, answered by one JSON object carrying "version". Requests are
 * dispatched through one table; an error is {"version":1,"error":{"code","name",
 * "message"}} with a registry code. Malformed JSON, unknown requests, wrong types and
 * oversized datagrams get such an error; the connection carries on. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "session.h"

#define CONTROL_VERSION 1
#define CONTROL_MAX_REQUEST 4096

struct control_conn {
	struct daemon *d;
	int fd;
	uid_t uid;
	gid_t gid;
	pid_t pid;
	struct loop_watch *w;
	struct control_conn *next;
};

static cJSON *reply_new(void)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddNumberToObject(r, "version", CONTROL_VERSION);
	return r;
}

static cJSON *reply_error(int code, const char *message)
{
	cJSON *r = reply_new();
	cJSON *e = cJSON_AddObjectToObject(r, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "name", garuda_errcode_name(code) ? garuda_errcode_name(code) : "UNKNOWN");
	cJSON_AddStringToObject(e, "message", message ? message : garuda_strerror(code));
	return r;
}

static uint64_t total_armed(struct daemon *d)
{
	uint64_t armed = 0;
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		armed += st.armed;
	}
	return armed;
}

static uint64_t total_completions(struct daemon *d)
{
	uint64_t c = 0;
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		c += st.completions;
	}
	return c;
}

static cJSON *req_status(struct daemon *d, const cJSON *req)
{
	(void)req;
	unsigned bindings = 0;
	for (struct session *s = d->sessions; s; s = s->next)
		for (struct binding *b = s->bindings; b; b = b->next)
			bindings++;
	cJSON *r = reply_new();
	cJSON_AddNumberToObject(r, "pid", getpid());
	cJSON_AddStringToObject(r, "event_loop", event_loop_name(loop_kind(d->loop)));
	cJSON_AddNumberToObject(r, "uptime_s", (double)(garuda_now_ns() - d->started_ns) / 1e9);
	cJSON_AddNumberToObject(r, "clients", d->nsessions);
	cJSON_AddNumberToObject(r, "segments", segment_count());
	cJSON_AddNumberToObject(r, "bindings", bindings);
	cJSON_AddNumberToObject(r, "armed", (double)total_armed(d));
	cJSON_AddNumberToObject(r, "completions", (double)total_completions(d));
	cJSON_AddNumberToObject(r, "arms", (double)d->arms_total);
	cJSON_AddNumberToObject(r, "scanners", d->nscanners);
	return r;
}

static cJSON *req_scanners(struct daemon *d, const cJSON *req)
{
	(void)req;
	cJSON *r = reply_new();
	cJSON *arr = cJSON_AddArrayToObject(r, "scanners");
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "index", i);
		cJSON_AddNumberToObject(o, "numa_node", st.numa_node);
		cJSON_AddNumberToObject(o, "armed", (double)st.armed);
		cJSON_AddNumberToObject(o, "passes", (double)st.passes);
		cJSON_AddNumberToObject(o, "completions", (double)st.completions);
		cJSON_AddNumberToObject(o, "parks", (double)st.parks);
		cJSON_AddNumberToObject(o, "cpu_s", (double)st.cpu_ns / 1e9);
		cJSON_AddItemToArray(arr, o);
	}
	return r;
}

static cJSON *req_clients(struct daemon *d, const cJSON *req)
{
	(void)req;
	cJSON *r = reply_new();
	cJSON *arr = cJSON_AddArrayToObject(r, "clients");
	for (struct session *s = d->sessions; s; s = s->next) {
		unsigned nseg = 0;
		for (struct segment *g = s->segments; g; g = g->next)
			nseg++;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", (double)s->id);
		cJSON_AddNumberToObject(o, "pid", s->pid);
		cJSON_AddNumberToObject(o, "uid", s->uid);
		cJSON_AddNumberToObject(o, "gid", s->gid);
		cJSON_AddStringToObject(o, "comm", s->comm);
		cJSON_AddNumberToObject(o, "segments", nseg);
		cJSON_AddNumberToObject(o, "armed", (double)atomic_load(&s->sink->usage.used[Q_ARMED]));
		cJSON_AddNumberToObject(o, "arms", (double)s->arms);
		cJSON_AddNumberToObject(o, "completions", (double)atomic_load(&s->sink->completions));
		cJSON_AddNumberToObject(o, "errors", (double)s->errors);
		cJSON_AddItemToArray(arr, o);
	}
	return r;
}

struct control_request {
	const char *name;
	cJSON *(*fn)(struct daemon *d, const cJSON *req);
};

static const struct control_request requests[] = {
	{ "status", req_status },
	{ "clients", req_clients },
	{ "scanners", req_scanners },
};

static cJSON *dispatch(struct daemon *d, const char *buf, size_t len)
{
	const char *end = NULL;
	cJSON *req = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!req || !cJSON_IsObject(req)) {
		cJSON_Delete(req);
		return reply_error(GARUDA_E_BAD_JSON, NULL);
	}
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(req, "request");
	cJSON *r = NULL;
	if (!cJSON_IsString(name)) {
		r = reply_error(GARUDA_E_BAD_ARGUMENT, "\"request\" must be a string");
	} else {
		for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
			if (strcmp(requests[i].name, name->valuestring) == 0)
				r = requests[i].fn(d, req);
		if (!r)
			r = reply_error(GARUDA_E_UNKNOWN_REQUEST, NULL);
	}
	cJSON_Delete(req);
	return r;
}

static void conn_close(struct control_conn *c)
{
	struct control_conn **pp = &c->d->controls;
	while (*pp != c)
		pp = &(*pp)->next;
	*pp = c->next;
	loop_remove(c->d->loop, c->w);
	close(c->fd);
	free(c);
}

static void on_request(struct loop_watch *w, void *data, uint32_t events)
{
	struct control_conn *c = data;
	(void)w;
	(void)events;
	char buf[CONTROL_MAX_REQUEST];
	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		cJSON *r = (size_t)n > sizeof(buf) ? reply_error(GARUDA_E_TOO_LONG, "request over 4096 bytes")
						   : dispatch(c->d, buf, (size_t)n);
		char *text = cJSON_PrintUnformatted(r);
		cJSON_Delete(r);
		if (text) {
			/* replies are small and the peer waits for them; a peer that does not
			 * read gets dropped rather than queued */
			if (send(c->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				free(text);
				conn_close(c);
				return;
			}
			free(text);
		}
	}
}

void control_on_accept(struct loop_watch *w, void *data, uint32_t events)
{
	struct daemon *d = data;
	(void)w;
	(void)events;
	for (;;) {
		int fd = accept4(d->control_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
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
		c->w = loop_add(d->loop, fd, POLLIN, on_request, c);
		if (!c->w) {
			close(fd);
			free(c);
			continue;
		}
		c->next = d->controls;
		d->controls = c;
	}
}

void control_close_all(struct daemon *d)
{
	while (d->controls)
		conn_close(d->controls);
}
