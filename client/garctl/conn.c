/* conn.c — garctl's side of the control socket: connect, one JSON request per
 * datagram, one JSON reply per datagram (any size: the length is peeked first).
 *
 * Promises: every failure is reported once, in words an operator can act on: no
 * daemon (the socket path and how to point garctl elsewhere), permission (the socket
 * path and what admits a peer: root, or the group named by the daemon's config key
 * control_group), a daemon error (its message and registry name), or a timeout. A
 * connection garudad refuses at accept (a peer not admitted, its connection limit)
 * gets one error reply and is closed: that reply is read and printed all the same. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "errcode.h"
#include "control_names.h"
#include "fdio.h"
#include "garctl.h"
#include "paths.h"

#define PERMISSION_HINT                                                                      \
	"the control socket admits root, and members of the admin group that garudad's config " \
	"key control_group names (none by default); run garctl as root or join that group"

int conn_open(struct conn *c, struct options *o)
{
	c->o = o;
	c->answered = false;
	c->fd = fdio_connect(o->socket);
	/* the user's own socket, left by a garudad that is gone, must not hide the system
	 * garudad: on a refusal try the next place (proto/paths.h) */
	static char next[108];
	const char *next_why;
	bool own_gone = false; /* the user's own garudad left its socket, no system one either */
	if ((c->fd == -ECONNREFUSED || c->fd == -ENOENT) &&
	    garuda_socket_path_next(GARUDA_SOCKET_CONTROL, o->socket_why, next, sizeof(next), &next_why) == 0) {
		int fd = fdio_connect(next);
		if (fd >= 0 || fd != -ENOENT) { /* found, or an error worth its own words */
			o->socket = next;
			o->socket_why = next_why;
			c->fd = fd;
		} else {
			own_gone = true;
		}
	}
	if (c->fd >= 0)
		return 0;
	int e = -c->fd;
	c->fd = -1;
	switch (e) {
	case ENAMETOOLONG:
		fprintf(stderr, "garctl: socket path %s is longer than %zu bytes\n", o->socket,
			sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
		break;
	case ENOENT:
	case ENOTDIR:
		fprintf(stderr,
			"garctl: garudad is not running: no control socket at %s (%s)\n"
			"garctl: start it (systemctl start garuda.socket garuda.service, or garudad as "
			"yourself: garctl then finds it in $XDG_RUNTIME_DIR/garuda) or name another "
			"socket with --socket=PATH or GARUDA_CONTROL_SOCKET\n",
			o->socket, o->socket_why ? o->socket_why : "default");
		break;
	case ECONNREFUSED:
		if (own_gone)
			fprintf(stderr,
				"garctl: your own garudad is gone: nothing listens on %s (it left its "
				"socket), and no system garudad runs at %s\n"
				"garctl: start it again (garudad, as yourself), or start the system one "
				"(systemctl start garuda.socket garuda.service), or name another socket "
				"with --socket=PATH or GARUDA_CONTROL_SOCKET\n",
				o->socket, next);
		else
			fprintf(stderr,
				"garctl: garudad is not running: nothing listens on %s (%s; a stale "
				"socket: garudad stopped without removing it)\n"
				"garctl: start it (systemctl start garuda.socket garuda.service, or "
				"garudad as yourself: garctl then finds it in $XDG_RUNTIME_DIR/garuda) or "
				"name another socket with --socket=PATH or GARUDA_CONTROL_SOCKET\n",
				o->socket, o->socket_why ? o->socket_why : "default");
		break;
	case EAGAIN:
		fprintf(stderr,
			"garctl: garudad at %s (%s) does not accept connections: its backlog is "
			"full (garudad is stopped, hung or swamped)\n",
			o->socket, o->socket_why ? o->socket_why : "default");
		break;
	case EACCES:
	case EPERM:
		fprintf(stderr, "garctl: permission denied connecting to %s (%s)\ngarctl: %s%s\n",
			o->socket, o->socket_why ? o->socket_why : "default", PERMISSION_HINT,
			/* a user turned away by the node's garudad may run one of their own */
			geteuid() != 0 && o->socket_why && strcmp(o->socket_why, GARUDA_SOCKET_WHY_SYSTEM) == 0
				? "; or run garudad as yourself: garctl then finds it in "
				  "$XDG_RUNTIME_DIR/garuda (set XDG_RUNTIME_DIR)"
				: "");
		break;
	default:
		fprintf(stderr, "garctl: cannot connect to %s: %s\n", o->socket, strerror(e));
		break;
	}
	return 1;
}

void conn_close(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

cJSON *request_new(const char *name)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, CTL_KEY_REQUEST, name);
	return r;
}

/* garctl aimed at the client socket gets a binary ERROR, or the connection closed:
 * say so, naming the control socket to use instead. */
static void not_control_hint(const struct conn *c)
{
	char beside[108];
	if (garuda_path_beside(c->o->socket, GARUDA_CONTROL_SOCKET_NAME, beside, sizeof(beside)) < 0 ||
	    strcmp(beside, c->o->socket) == 0)
		snprintf(beside, sizeof(beside), "%s", GARUDA_CONTROL_SOCKET_PATH);
	fprintf(stderr,
		"garctl: %s does not speak the control protocol: is it garudad's client socket?\n"
		"garctl: garctl needs the control socket, by default %s: --socket=%s\n",
		c->o->socket, GARUDA_CONTROL_SOCKET_NAME " beside it", beside);
}

/* Wait for the reply datagram; returns its text (malloc'ed) or NULL after printing. */
static char *receive(struct conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	int timeout = c->o->timeout_s > 0 ? (int)(c->o->timeout_s * 1000) : -1;
	int r;
	do
		r = poll(&p, 1, timeout);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		fprintf(stderr, "garctl: no reply from garudad on %s within %g s\n", c->o->socket,
			c->o->timeout_s);
		return NULL;
	}
	ssize_t n = recv(c->fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
	if (n < 0 && errno == ECONNRESET) /* garudad closed with our request unread (it refused
					    * us at accept): said once, before its reply */
		n = recv(c->fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n > 0) {
		char *buf = malloc((size_t)n + 1);
		if (!buf) {
			fprintf(stderr, "garctl: out of memory for a %zd-byte reply\n", n);
			return NULL;
		}
		ssize_t m = recv(c->fd, buf, (size_t)n, 0);
		if (m == n) {
			buf[n] = '\0';
			return buf;
		}
		free(buf);
		n = m;
	}
	if (n == 0 || errno == ECONNRESET) {
		fprintf(stderr, "garctl: garudad closed the connection on %s without a reply (it stopped, "
			"or this is not its control socket)\n", c->o->socket);
		if (n == 0 && !c->answered)
			not_control_hint(c);
	} else
		fprintf(stderr, "garctl: receiving from %s: %s\n", c->o->socket, strerror(errno));
	return NULL;
}

/* Whether a reply datagram is queued for us now (past a reset, said once first). */
static bool reply_waiting(struct conn *c)
{
	ssize_t n = recv(c->fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0 && errno == ECONNRESET)
		n = recv(c->fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	return n > 0;
}

/* Print a daemon error reply; always returns 1. */
static int print_daemon_error(struct conn *c, const cJSON *err)
{
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, CTL_KEY_CODE);
	const char *name = jstr(err, CTL_KEY_NAME);
	char *msg = strdup(jstr(err, CTL_KEY_MESSAGE));
	if (msg)
		sanitize(msg);
	fprintf(stderr, "garctl: %s (%s)\n", msg ? msg : "error", name);
	free(msg);
	if (cJSON_IsNumber(code) && (int)code->valuedouble == GARUDA_E_ACCESS_DENIED)
		fprintf(stderr, "garctl: socket %s: %s\n", c->o->socket, PERMISSION_HINT);
	return 1;
}

int conn_call(struct conn *c, const cJSON *req, cJSON **reply)
{
	*reply = NULL;
	char *text = cJSON_PrintUnformatted(req);
	if (!text)
		return 1;
	ssize_t n = send(c->fd, text, strlen(text), MSG_NOSIGNAL);
	free(text);
	/* garudad answers a connection it refuses at accept (ACCESS_DENIED, BUSY) with one
	 * error and closes it: that reply waits to be read though the send failed */
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET) && !reply_waiting(c)) {
		fprintf(stderr, "garctl: garudad went away (connection on %s closed)\n", c->o->socket);
		return 1;
	}
	if (n < 0 && errno != EPIPE && errno != ECONNRESET) {
		fprintf(stderr, "garctl: sending to %s: %s\n", c->o->socket, strerror(errno));
		return 1;
	}
	char *buf = receive(c);
	if (!buf)
		return 1;
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		fprintf(stderr, "garctl: the reply on %s is not a JSON object\n", c->o->socket);
		not_control_hint(c);
		return 1;
	}
	c->answered = true;
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, CTL_KEY_ERROR);
	if (err) {
		int rc = print_daemon_error(c, err);
		cJSON_Delete(j);
		return rc;
	}
	*reply = j;
	return 0;
}

int conn_call_all(struct conn *c, const cJSON *req, const char *key, cJSON **reply)
{
	cJSON *first = NULL;
	int rc = conn_call(c, req, &first);
	if (rc)
		return rc;
	cJSON *all = cJSON_GetObjectItemCaseSensitive(first, key);
	const cJSON *next = cJSON_GetObjectItemCaseSensitive(first, CTL_KEY_NEXT);
	cJSON *q = cJSON_Duplicate(req, 1);
	for (int pages = 1; cJSON_IsNumber(next) && cJSON_IsArray(all); pages++) {
		if (pages > 1000000) {
			fprintf(stderr, "garctl: garudad keeps paging; giving up\n");
			rc = 1;
			break;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(q, CTL_KEY_START);
		cJSON_AddNumberToObject(q, CTL_KEY_START, next->valuedouble);
		cJSON *page = NULL;
		rc = conn_call(c, q, &page);
		if (rc)
			break;
		cJSON *items = cJSON_GetObjectItemCaseSensitive(page, key);
		while (cJSON_IsArray(items) && items->child) {
			cJSON *it = cJSON_DetachItemViaPointer(items, items->child);
			cJSON_AddItemToArray(all, it);
		}
		cJSON *nn = cJSON_DetachItemFromObjectCaseSensitive(page, CTL_KEY_NEXT);
		cJSON_ReplaceItemInObjectCaseSensitive(first, CTL_KEY_NEXT, nn ? nn : cJSON_CreateNull());
		next = cJSON_GetObjectItemCaseSensitive(first, CTL_KEY_NEXT);
		cJSON_Delete(page);
	}
	cJSON_Delete(q);
	if (rc) {
		cJSON_Delete(first);
		return rc;
	}
	*reply = first;
	return 0;
}
