/* client.c — libgaruda's client object: connect (socket path from garuda_socket_path(),
 * proto/paths.h; optionally waiting for the daemon; the failure in words from
 * garuda_last_error()), disconnect, the dispatch of message-form callbacks, and the small
 * accessors. The connection machinery itself lives in conn.c.
 *
 * Promises: garuda_connect() returns a client only after a WELCOME, with its I/O
 * thread running, or (GARUDA_FALLBACK=reactor, garudad unreachable) in local mode
 * with its I/O thread running and the coded warning set; a GARUDA_FALLBACK=reactor
 * client is registered with the process's reactor (reactor.c) from connect to
 * disconnect. garuda_disconnect() frees everything the client owns (streams,
 * segments, fds, the thread) and drops its reference to the reactor (the last one
 * joins the reactor's thread). Callbacks run only inside garuda_dispatch(), one at a
 * time, never with a library lock held.
 */
#include "internal.h"

#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "paths.h"

/* the public header repeats the contract's default path: they must agree */
_Static_assert(sizeof(GARUDA_DEFAULT_SOCKET) == sizeof(GARUDA_SOCKET_PATH) &&
		       __builtin_memcmp(GARUDA_DEFAULT_SOCKET, GARUDA_SOCKET_PATH, sizeof(GARUDA_SOCKET_PATH)) == 0,
	       "garuda.h's GARUDA_DEFAULT_SOCKET differs from proto/paths.h");

const char *garuda_version(void)
{
	return "0.1.0";
}

static void client_free(struct garuda_client *c)
{
	/* the session ends here, also where a fork()'s child (which never touches the
	 * client, docs/client.md) still holds a copy of the socket: shutdown, then close */
	conn_end_socket(c, c->sock);
	if (c->dispatch_efd >= 0)
		close(c->dispatch_efd);
	if (c->wake_efd >= 0)
		close(c->wake_efd);
	pthread_mutex_destroy(&c->reg_lock);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->dispatch_lock);
	pthread_cond_destroy(&c->cond);
	free(c->streams);
	free(c->path);
	free(c);
}

#define set_error client_set_error

static const char *env_refused(void);

/* Whether this process runs in a container or a Kubernetes pod (where systemctl is
 * not the remedy): podman's /run/.containerenv, docker's /.dockerenv, the service
 * variable every pod gets, or $container (systemd-nspawn, LXC, podman). */
static bool in_container(void)
{
	const char *c = getenv("container");
	return (c && *c) || getenv("KUBERNETES_SERVICE_HOST") || access("/run/.containerenv", F_OK) == 0 ||
	       access("/.dockerenv", F_OK) == 0;
}

/* Words for a failed connect to `path` (chosen by `why`): what is wrong and the remedy. */
static void explain_connect(int r, const char *path, const char *why)
{
	const char *how = in_container()
		? "in a container or pod, garudad runs on the host: mount the host's /run/garuda "
		  "into it (a hostPath volume or a bind mount, see deploy.md) and point "
		  "GARUDA_SOCKET at garuda.sock there (or start garudad in the container)"
		: "start garudad (systemctl start garuda.socket; or run garudad as "
		  "yourself: it then listens in $XDG_RUNTIME_DIR/garuda, where clients look "
		  "first), or point GARUDA_SOCKET at its socket";
	switch (-r) {
	case ENOENT:
	case ENOTDIR:
		set_error("cannot connect to garudad at %s (%s): no such socket, garudad is not "
			  "running there; %s", path, why, how);
		return;
	case ECONNREFUSED:
		set_error("cannot connect to garudad at %s (%s): nothing listens there (garudad "
			  "stopped and left a stale socket); %s", path, why, how);
		return;
	case EACCES:
	case EPERM: {
		struct stat st;
		struct group *g = stat(path, &st) == 0 ? getgrgid(st.st_gid) : NULL;
		if (g) {
			/* the name is this system's for the gid; in a pod the gid is the host's,
			 * and the pod's own name for it (if any) is not what to ask for */
			set_error("cannot connect to garudad at %s (%s): permission denied; the socket "
				  "admits its owner and group \"%s\" (gid %u, mode %04o): join that group "
				  "(usermod -aG %s $USER, then log in again)", path, why, g->gr_name,
				  (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777), g->gr_name);
			if (in_container())
				client_append_error("; in a container or pod, run with gid %u as a "
						    "supplementary group (Kubernetes: securityContext."
						    "supplementalGroups: [%u]; podman/docker: --group-add %u)",
						    (unsigned)st.st_gid, (unsigned)st.st_gid, (unsigned)st.st_gid);
		} else if (stat(path, &st) == 0)
			/* a gid with no name here: a pod or container, garudad's group is the
			 * host's (deploy.md: 61000) */
			set_error("cannot connect to garudad at %s (%s): permission denied; the socket "
				  "admits its owner and gid %u (mode %04o), which has no name here (a "
				  "container?): run with gid %u as a supplementary group (Kubernetes: "
				  "securityContext.supplementalGroups: [%u]; podman/docker: --group-add "
				  "%u)", path, why, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
				  (unsigned)st.st_gid, (unsigned)st.st_gid, (unsigned)st.st_gid);
		else
			set_error("cannot connect to garudad at %s (%s): permission denied on the socket "
				  "or a directory above it; garudad's config key socket_group names the "
				  "group the socket admits (\"garuda\" by default): join it", path, why);
		return;
	}
	case EINVAL:
		if (env_refused()) {
			set_error("cannot connect to garudad: %s", env_refused());
			return;
		}
		set_error("cannot connect to garudad at %s (%s): the path is empty or longer than "
			  "107 bytes", path, why);
		return;
	case GARUDA_E_BAD_PLAN: {
		/* GARUDA_WAIT_PLAN was refused before any socket: name the variable, its text
		 * and the key (garuda_plan_message()), not garudad */
		const char *env = getenv("GARUDA_WAIT_PLAN");
		set_error("cannot connect to garudad: $GARUDA_WAIT_PLAN=\"%.96s\": %s (see docs/plans.md; "
			  "unset it for the built-in plan)", env ? env : "", garuda_plan_message());
		return;
	}
	default: {
		/* garudad's own words, when it refused us (conn_handshake() set them) */
		char said[GARUDA_ERROR_TEXT_MAX + 1];
		snprintf(said, sizeof(said), "%s", garuda_last_error());
		set_error("cannot connect to garudad at %s (%s): %s%s%s", path, why, garuda_strerror(r),
			  said[0] ? ": " : "", said);
		return;
	}
	}
}

/* One attempt at path. local: under GARUDA_FALLBACK=reactor, an unreachable garudad
 * gives a client running on its reactor (the I/O thread keeps trying path); without
 * it, the attempt fails (a search goes on to the next place, a wait tries again). */
static int connect_once(const char *path, bool local, struct garuda_client **out);

/* GARUDA_FALLBACK, resolved once per connect: 0 strict (unset, empty, "strict"), 1
 * reactor, -EINVAL anything else. */
static int fallback_policy(void)
{
	const char *env = getenv("GARUDA_FALLBACK");
	if (!env || !*env || strcmp(env, "strict") == 0)
		return 0;
	if (strcmp(env, "reactor") == 0)
		return 1;
	return -EINVAL;
}

/* GARUDA_WORDWAIT, resolved once per connect: 1 auto (unset, empty, "auto"), 0 off,
 * -EINVAL anything else. */
static int wordwait_policy(void)
{
	const char *env = getenv("GARUDA_WORDWAIT");
	bool on = true;
	if (env && *env && wordwait_mode_parse(env, &on) < 0)
		return -EINVAL;
	return on;
}

/* What makes a connect fail with -EINVAL before any socket: a bad environment
 * variable (NULL: none) */
static const char *env_refused(void)
{
	static const char *const names[] = { "GARUDA_FALLBACK", "GARUDA_WORDWAIT" };
	static const char *const allowed[] = { "strict or reactor", "auto or off" };
	if (fallback_policy() < 0 || wordwait_policy() < 0) {
		static __thread char text[256];
		int i = fallback_policy() < 0 ? 0 : 1;
		snprintf(text, sizeof(text), "$%s=\"%.64s\": must be %s (or unset)", names[i],
			 getenv(names[i]), allowed[i]);
		return text;
	}
	return NULL;
}

/* A connect failure that means "garudad cannot be reached" (nobody listens, it went
 * away during the handshake, or does not answer): the fallback chain may run the
 * reactor instead. Anything else (permission, another protocol version, a bad
 * answer, no memory) is a misconfiguration and is returned in every mode. */
static bool unreachable(int err)
{
	return err == -ENOENT || err == -ENOTDIR || err == -ECONNREFUSED || err == -ECONNRESET ||
	       err == -GARUDA_E_DISCONNECTED || err == -GARUDA_E_TIMEOUT;
}

int garuda_connect_to(const char *path, struct garuda_client **out)
{
	int r = connect_once(path, true, out);
	if (r < 0) {
		explain_connect(r, path ? path : "(null)", "the path given");
		return client_fail(r);
	}
	client_clear_error();
	return r;
}

static bool connect_retryable(int r)
{
	return r == -ENOENT || r == -ECONNREFUSED || r == -ENOTDIR;
}

static int connect_wait(const char *path, const char *why, int timeout_ms,
			struct garuda_client **out)
{
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int r = connect_once(path, false, out);
		if (r >= 0) {
			client_clear_error();
			return r;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t spent = (int64_t)(now.tv_sec - t0.tv_sec) * 1000000000 + (now.tv_nsec - t0.tv_nsec);
		int64_t left = (int64_t)timeout_ms * 1000000 - spent;
		if (!connect_retryable(r) || timeout_ms <= 0 || left <= 0) {
			explain_connect(r, path, why);
			if (connect_retryable(r) && timeout_ms > 0)
				client_append_error(" (waited %d ms)", timeout_ms);
			return r;
		}
		struct timespec nap = { .tv_nsec = (long)(left < 50000000 ? left : 50000000) };
		nanosleep(&nap, NULL);
	}
}

static int connect_search(const char *path, int timeout_ms, struct garuda_client **out)
{
	char buf[108], next[108];
	const char *why = "the path given", *next_why;
	if (path)
		return connect_wait(path, why, timeout_ms, out);
	if (garuda_socket_path(GARUDA_SOCKET_CLIENT, buf, sizeof(buf), &why) < 0) {
		set_error("cannot connect to garudad: the socket path from $GARUDA_SOCKET is longer than 107 bytes");
		return -EINVAL;
	}
	/* the user's own socket, left by a garudad that is gone, must not hide the
	 * system garudad: on a refusal try the next place (proto/paths.h) */
	bool has_next = garuda_socket_path_next(GARUDA_SOCKET_CLIENT, why, next, sizeof(next), &next_why) == 0;
	int r = connect_wait(buf, why, has_next ? 0 : timeout_ms, out);
	if (r < 0 && has_next && connect_retryable(r)) {
		r = connect_wait(next, next_why, timeout_ms, out);
		if (r < 0 && connect_retryable(r)) {
			/* nobody anywhere: lead with what the user can act on, their own
			 * garudad, and name the system one once */
			set_error("cannot connect to garudad: your own garudad (%s) is gone and left "
				  "its socket: start it again (garudad, as yourself); the system "
				  "garudad (%s) is not running either (systemctl start garuda.socket), "
				  "or point GARUDA_SOCKET at a running garudad's socket", buf, next);
			if (timeout_ms > 0)
				client_append_error(" (waited %d ms)", timeout_ms);
		} else if (r < 0) {
			client_append_error("; your own garudad (%s) is gone: start it again (garudad, "
					    "as yourself)", buf);
		} else {
			buf[0] = '\0', why = next_why;
		}
	}
	if (r >= 0)
		client_debug("connected to garudad at %s (%s)", buf[0] ? buf : next, why);
	return r;
}

/* The search (and the wait) with garudad alone; then, where nothing answered anywhere
 * and GARUDA_FALLBACK=reactor, a client on its reactor, retrying the last place tried:
 * a stale socket of the user's own garudad no longer hides the system one, and
 * GARUDA_CONNECT_TIMEOUT waits before the fallback is taken. */
static int connect_search_or_local(const char *path, int timeout_ms, struct garuda_client **out)
{
	int r = connect_search(path, timeout_ms, out);
	if (r >= 0 || !unreachable(r) || fallback_policy() != 1)
		return r;
	char buf[108], next[108];
	const char *why = "the path given", *next_why;
	const char *last = path;
	if (!last) {
		if (garuda_socket_path(GARUDA_SOCKET_CLIENT, buf, sizeof(buf), &why) < 0)
			return r;
		last = garuda_socket_path_next(GARUDA_SOCKET_CLIENT, why, next, sizeof(next), &next_why) == 0
			       ? next
			       : buf;
	}
	r = connect_once(last, true, out);
	if (r >= 0)
		client_debug("garudad not reachable: running on the fallback reactor, retrying %s", last);
	return r;
}

int garuda_connect_wait(const char *path, int timeout_ms, struct garuda_client **out)
{
	return client_return(connect_search_or_local(path, timeout_ms, out));
}

static int connect_once(const char *path, bool local, struct garuda_client **out)
{
	if (out)
		*out = NULL;
	client_clear_error(); /* what explains this attempt's failure is set by it */
	if (!path || !*path || !out)
		return -EINVAL;
	int fallback = fallback_policy();
	if (fallback < 0)
		return fallback;
	int wordwait = wordwait_policy();
	if (wordwait < 0)
		return wordwait;
	struct garuda_plan plan;
	const char *env = getenv("GARUDA_WAIT_PLAN");
	bool has_plan = env && *env;
	if (has_plan) {
		int pr = plan_parse_tls(env, &plan);
		if (pr < 0)
			return pr;
	}
	struct garuda_client *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ww = wordwait ? wordwait_system() : wordwait_off();
	client_debug("word wait: %s (%s)", wordwait_variant_name(c->ww->variant), c->ww->detail);
	c->has_plan = has_plan;
	if (has_plan)
		c->default_plan = plan;
	c->sock = c->dispatch_efd = c->wake_efd = -1;
	c->owner = getpid();
	pthread_mutex_init(&c->reg_lock, NULL);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->dispatch_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca); /* conn_request_gen's timed wait */
	c->fallback = fallback == 1;
	pthread_condattr_destroy(&ca);
	c->path = strdup(path);
	if (!c->path) {
		client_free(c);
		return -ENOMEM;
	}
	c->dispatch_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->wake_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->dispatch_efd < 0 || c->wake_efd < 0) {
		int r = -errno;
		client_free(c);
		return r;
	}
	int sock = conn_handshake(path, &c->welcome);
	if (sock < 0 && !(c->fallback && local && unreachable(sock))) {
		client_free(c);
		return sock;
	}
	c->router = &client_router;
	if (sock >= 0) {
		c->sock = sock;
		c->gen = 1;
		c->session_id = c->welcome.session_id;
		c->state = CONN_UP;
		atomic_store(&c->atomic_state, CONN_UP);
	} else {
		/* the declared fallback: run without garudad (gen 0: nothing presented),
		 * the I/O thread keeps trying to reach it */
		memset(&c->welcome, 0, sizeof(c->welcome));
		c->state = CONN_DOWN;
		atomic_store(&c->atomic_state, CONN_DOWN);
		fallback_warn_locked(c, sock);
	}
	int r = c->fallback ? reactor_acquire(c) : 0;
	if (r == 0)
		r = io_start(c);
	if (r < 0) {
		pthread_mutex_lock(&c->lock);
		c->state = CONN_CLOSING;
		pthread_mutex_unlock(&c->lock);
		reactor_release(c);
		client_free(c);
		return r;
	}
	*out = c;
	return 0;
}

int garuda_connect(struct garuda_client **out)
{
	int timeout_ms = 0;
	const char *t = getenv("GARUDA_CONNECT_TIMEOUT");
	if (t && *t) {
		char *end;
		long v = strtol(t, &end, 10);
		if (*end || v < 0 || v > INT32_MAX) {
			if (out)
				*out = NULL;
			set_error("GARUDA_CONNECT_TIMEOUT=\"%s\": must be milliseconds, an integer in [0, %d]",
				  t, INT32_MAX);
			return client_fail(-EINVAL);
		}
		timeout_ms = (int)v;
	}
	return garuda_connect_wait(NULL, timeout_ms, out);
}

void garuda_disconnect(struct garuda_client *c)
{
	if (!c)
		return;
	client_debug("word wait %s: %llu of %llu spin steps were hardware waits",
		     wordwait_variant_name(c->ww->variant), (unsigned long long)atomic_load(&c->ww_steps),
		     (unsigned long long)atomic_load(&c->spin_steps));
	io_stop(c); /* state CLOSING: nothing is sent from here on */
	reactor_release(c); /* the process's reactor never looks at c again */
	seg_close_all(c);
	client_free(c);
}

int garuda_client_connected(const struct garuda_client *c)
{
	if (!c)
		return client_fail(-EINVAL);
	return atomic_load_explicit(&((struct garuda_client *)c)->atomic_state,
				    memory_order_acquire) == CONN_UP;
}

uint64_t garuda_client_session(const struct garuda_client *c)
{
	if (!c)
		return 0;
	struct garuda_client *m = (struct garuda_client *)c;
	pthread_mutex_lock(&m->lock);
	uint64_t id = m->state == CONN_UP ? m->session_id : 0;
	pthread_mutex_unlock(&m->lock);
	return id;
}

uint64_t garuda_client_reconnects(const struct garuda_client *c)
{
	return c ? atomic_load(&((struct garuda_client *)c)->reconnects) : 0;
}

int garuda_client_warning(const struct garuda_client *c, char *buf, size_t len)
{
	if (!c || (!buf && len))
		return client_fail(-EINVAL);
	struct garuda_client *m = (struct garuda_client *)c;
	pthread_mutex_lock(&m->lock);
	int code = m->warn_code;
	if (len)
		snprintf(buf, len, "%s", m->warn);
	pthread_mutex_unlock(&m->lock);
	return code;
}

int garuda_client_fd(const struct garuda_client *c)
{
	return c ? c->dispatch_efd : client_fail(-EINVAL);
}

int garuda_dispatch(struct garuda_client *c)
{
	if (!c)
		return client_fail(-EINVAL);
	pthread_mutex_lock(&c->lock);
	bool nested = c->dispatching && pthread_equal(c->dispatcher, pthread_self());
	pthread_mutex_unlock(&c->lock);
	if (nested)
		return client_fail(-GARUDA_E_BUSY);

	pthread_mutex_lock(&c->dispatch_lock);
	uint64_t v;
	while (read(c->dispatch_efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
	pthread_mutex_lock(&c->lock);
	c->dispatching = true;
	c->dispatcher = pthread_self();
	/* run what is queued now; later arrivals re-arm the fd for the next call. The
	 * stream stays on the queue until popped, so garuda_stream_free() from a
	 * callback can take any other stream off it. */
	unsigned budget = 0;
	for (struct garuda_stream *q = c->cbq_head; q; q = q->cb.next)
		budget++;
	int n = 0;
	while (budget-- && c->cbq_head) {
		struct garuda_stream *s = c->cbq_head;
		c->cbq_head = s->cb.next;
		if (!c->cbq_head)
			c->cbq_tail = NULL;
		s->cb.next = NULL;
		s->cb.queued = false;
		garuda_stream_cb cb = s->cb.fn;
		void *user = s->cb.user;
		/* a fault the watch found (router.c fault_watch): the callback runs once
		 * for it even though the word did not move; garuda_stream_query() and
		 * garuda_stream_drain() in it say -GARUDA_E_STREAM_FAULT */
		bool fault = cb && !s->cb.fault_told &&
			     atomic_load_explicit(&s->faulted, memory_order_acquire);
		if (fault)
			s->cb.fault_told = true;
		s->cb.busy++;
		pthread_mutex_unlock(&c->lock);

		uint64_t w = word_load(s->word);
		bool moved = w != s->cb.delivered && garuda_reached(w, s->cb.delivered);
		if (cb && (moved || fault)) {
			if (moved)
				s->cb.delivered = w;
			cb(s, w, user);
			n++;
		}

		pthread_mutex_lock(&c->lock);
		s->cb.busy--;
		bool free_now = s->cb.free_pending && !s->cb.busy;
		pthread_cond_broadcast(&c->cond);
		if (free_now) {
			pthread_mutex_unlock(&c->lock);
			s->cb.free_pending = false;
			/* still "dispatching": a nested free of another stream is fine */
			garuda_stream_free(s);
			pthread_mutex_lock(&c->lock);
		}
	}
	c->dispatching = false;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->dispatch_lock);
	return n;
}

static int query(struct garuda_client *c, char *buf, size_t len)
{
	if (!c || !buf || len == 0)
		return -EINVAL;
	struct garuda_msg m, reply;
	garuda_msg_init(&m, GARUDA_MSG_QUERY, 0);
	int r = conn_request(c, &m, -1, &reply, NULL);
	if (r < 0)
		return r;
	if (reply.type != GARUDA_MSG_QUERY_REPLY)
		return -GARUDA_E_UNEXPECTED;
	/* the daemon's object, with the client's own counter added as its last member */
	size_t n = reply.query_reply.json_len;
	if (n < 2 || reply.query_reply.json[n - 1] != '}')
		return -GARUDA_E_PROTOCOL;
	int w = snprintf(buf, len, "%.*s%s\"stray_errors\":%llu}", (int)(n - 1),
			 reply.query_reply.json, n > 2 ? "," : "",
			 (unsigned long long)atomic_load(&c->stray_errors));
	if (w < 0 || (size_t)w >= len)
		return -ENOBUFS;
	return w;
}

int garuda_client_query(struct garuda_client *c, char *buf, size_t len)
{
	return client_return(query(c, buf, len));
}
