/* fuzz_control.c — libFuzzer target over the control plane's request handling: the
 * whole input is one request datagram, sent on a SOCK_SEQPACKET pair and taken by
 * control.c's on_request() as garudad takes it (recv, the size bound, dispatch(): the
 * JSON, the request table, the argument checks; the real handlers of control_req.c and
 * control_metrics.c; send). on_request() is static: this file includes control.c. The
 * daemon is a fake with no sessions and no scanners (--no-config, defaults; a group
 * and a warning with bytes to escape); what needs a session or a scanner is stubbed
 * and aborts if reached.
 *
 * Aborts (a finding) when:
 *   - the reply is not one datagram of at most 384 KiB, not valid UTF-8, not a JSON
 *     object with "version": 1, or the connection was closed;
 *   - its outcome differs from an independent model of garctl(1) "JSON REPLIES" and
 *     protocol.md §11: an empty datagram, text cJSON does not take (the JSON oracle;
 *     trailing bytes other than JSON whitespace) or a non-object BAD_JSON; a string
 *     holding U+0000 (raw or \u0000), no "request" or a non-string one, a duplicate,
 *     unknown, mistyped, non-integral or out-of-range argument, a missing required one,
 *     an unknown log level BAD_ARGUMENT; an unknown name UNKNOWN_REQUEST (its message
 *     quoting the name cut to 64 bytes at a character, escaped); over 4096 bytes
 *     TOO_LONG; a request naming a client NO_CLIENT (there are none); else a reply
 *     with the request's keys (status, clients, scanners, config, metrics, reload,
 *     log_level: the level set and the previous one);
 *   - an error's name is not its registry code's, or its message is empty, over 511
 *     bytes, holds a control character or a backslash that is no escape;
 *   - ctl_escape() of the input (as a C string) differs from a model of the escaping
 *     (backslash as \\, each byte not part of a printable UTF-8 character as \xHH),
 *     is not cut at a piece when short of room, or does not reverse;
 *     ctl_utf8_prefix() is not the longest prefix that ends at a character.
 * Built with -fsanitize=fuzzer,address,undefined under -Dfuzz=true (clang); the same
 * function replays tests/fuzz/corpus-control in the ordinary test suite
 * (test_corpus_control.c).
 */
#include "control.c"

#include <syslog.h>

#include "clock.h"
#include "points.h"
#include "segment.h"
#include "service.h"
#include "session.h"
#include "wordwait.h"
#include "jsontext.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int fuzz_control_reply_code(const uint8_t *data, size_t size);

#define UNREACHED(what)                                                                            \
	do {                                                                                       \
		fprintf(stderr, "fuzz_control: %s reached with no sessions or scanners\n", what);  \
		abort();                                                                           \
	} while (0)

/* ---------------- the fake daemon's other modules */

int daemon_reload(struct daemon *d, char **why)
{
	(void)d;
	(void)why;
	UNREACHED("daemon_reload");
}

enum event_loop_kind loop_kind(const struct loop *l)
{
	(void)l;
	return EVENT_LOOP_EPOLL;
}

int points_list(struct points *t, struct point_view **out)
{
	(void)t;
	(void)out;
	UNREACHED("points_list");
}

void scanner_get_stats(struct scanner *s, struct scanner_stats *out)
{
	(void)s;
	(void)out;
	UNREACHED("scanner_get_stats");
}

int scanner_list_armed(struct scanner *s, struct segment *seg, uint64_t session_id, struct armed_view **out)
{
	(void)s;
	(void)seg;
	(void)session_id;
	(void)out;
	UNREACHED("scanner_list_armed");
}

const struct wordwait *scanner_wordwait(const struct scanner_tuning *tuning)
{
	static const struct wordwait spin = { .variant = WORDWAIT_SPIN, .detail = "fake" };
	(void)tuning;
	return &spin;
}

unsigned segment_count(void)
{
	return 0;
}

struct session *session_find(struct daemon *d, uint64_t id)
{
	(void)d;
	(void)id;
	return NULL;
}

struct binding *session_binding(const struct session *s, uint32_t segment_id, uint32_t index)
{
	(void)s;
	(void)segment_id;
	(void)index;
	UNREACHED("session_binding");
}

void session_close(struct session *s)
{
	(void)s;
	UNREACHED("session_close");
}

void session_describe(const struct session *s, struct session_view *v)
{
	(void)s;
	(void)v;
	UNREACHED("session_describe");
}

struct loop_watch *loop_add(struct loop *l, int fd, uint32_t events, loop_fn fn, void *data)
{
	(void)l;
	(void)fd;
	(void)events;
	(void)fn;
	(void)data;
	UNREACHED("loop_add");
}

static bool conn_closed; /* conn_close() ran: the connection was dropped */
void loop_remove(struct loop *l, struct loop_watch *w)
{
	(void)l;
	(void)w;
	conn_closed = true;
}

void loop_again(struct loop *l, struct loop_watch *w)
{
	(void)l;
	(void)w;
	UNREACHED("loop_again");
}

int server_accept(struct daemon *d, int listen_fd, server_refuse_fn *refuse)
{
	(void)d;
	(void)listen_fd;
	(void)refuse;
	UNREACHED("server_accept");
}

void server_accept_failed(struct daemon *d, struct loop_watch *w)
{
	(void)d;
	(void)w;
	UNREACHED("server_accept_failed");
}

#define FAKE_GROUP   "adm\\in\x01\xc3\xa9\xff" /* a backslash, C0, é, not UTF-8 */
#define FAKE_WARNING "socket_group \"gr\x7f\xc2\x85p\" does not exist" /* DEL, C1 */
#define BASE_LEVEL   LOG_WARNING

static struct daemon *fake_daemon(void)
{
	static struct daemon d;
	static bool ready;
	if (!ready) {
		config_defaults(&d.cfg);
		d.cfg.file_chosen = true; /* --no-config: nothing to reload */
		free(d.cfg.socket_group);
		d.cfg.socket_group = strdup(FAKE_GROUP);
		snprintf(d.warnings[0], sizeof(d.warnings[0]), "%s", FAKE_WARNING);
		d.nwarnings = 1;
		d.client_fd = d.control_fd = d.lock_fd = -1;
		d.started_ns = garuda_now_ns();
		ready = true;
	}
	return &d;
}

/* ---------------- text: UTF-8 and the escaping, modelled */

/* Bytes of the UTF-8 character at s (n bytes left), its code point in *cp; 0: none */
static size_t u8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c, min;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0)
		len = 2, c = s[0] & 0x1fu, min = 0x80;
	else if ((s[0] & 0xf0) == 0xe0)
		len = 3, c = s[0] & 0x0fu, min = 0x800;
	else if ((s[0] & 0xf8) == 0xf0)
		len = 4, c = s[0] & 0x07u, min = 0x10000;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3fu);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f);
}

/* Valid UTF-8 (n bytes, no NUL); with printable: no control character either */
static bool u8_valid(const char *t, size_t n, bool printable)
{
	const unsigned char *s = (const unsigned char *)t;
	for (size_t i = 0, l; i < n; i += l) {
		uint32_t cp;
		if (!(l = u8_decode(s + i, n - i, &cp)) || cp == 0 || (printable && is_control(cp)))
			return false;
	}
	return true;
}

/* s escaped as garctl(1) says; bounds[k] (when not NULL): where piece k ends */
static char *model_escape(const char *s, size_t *bounds, size_t *nb)
{
	size_t n = strlen(s), len = 0, k = 0;
	char *out = malloc(4 * n + 1);
	CHECK(out != NULL);
	for (size_t i = 0, l; i < n; i += l) {
		uint32_t cp;
		l = u8_decode((const unsigned char *)s + i, n - i, &cp);
		if (s[i] == '\\') {
			memcpy(out + len, "\\\\", 2);
			len += 2, l = 1;
		} else if (!l || is_control(cp)) {
			len += (size_t)sprintf(out + len, "\\x%02X", (unsigned char)s[i]);
			l = 1;
		} else {
			memcpy(out + len, s + i, l);
			len += l;
		}
		if (bounds)
			bounds[k++] = len;
	}
	out[len] = '\0';
	if (nb)
		*nb = k;
	return out;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The bytes an escaped text stands for (malloc'ed), or NULL: not a well-formed escape */
static char *unescape(const char *t)
{
	char *out = malloc(strlen(t) + 1), *o = out;
	CHECK(out != NULL);
	for (; *t; t++) {
		if (*t != '\\') {
			*o++ = *t;
		} else if (t[1] == '\\') {
			*o++ = '\\', t++;
		} else if (t[1] == 'x' && hexval(t[2]) >= 0 && hexval(t[3]) >= 0) {
			*o++ = (char)(hexval(t[2]) << 4 | hexval(t[3])), t += 3;
		} else {
			free(out);
			return NULL;
		}
	}
	*o = '\0';
	return out;
}

/* The longest prefix of s of at most max bytes that ends at a character */
static size_t model_prefix(const char *s, size_t max)
{
	size_t n = strlen(s), at = 0;
	while (at < n) {
		uint32_t cp;
		size_t l = u8_decode((const unsigned char *)s + at, n - at, &cp);
		if (at + (l ? l : 1) > max)
			break;
		at += l ? l : 1;
	}
	return at;
}

static void check_escape(const char *s)
{
	size_t n = strlen(s), nb;
	size_t *bounds = malloc((n + 1) * sizeof(*bounds));
	CHECK(bounds != NULL);
	char *want = model_escape(s, bounds, &nb);
	size_t wl = strlen(want);
	CHECK(u8_valid(want, wl, true));
	CHECK(ctl_escape(NULL, 0, s) == wl);
	char *dup = ctl_escape_dup(s);
	CHECK(dup != NULL && strcmp(dup, want) == 0);
	char *back = unescape(dup);
	CHECK(back != NULL && strcmp(back, s) == 0);
	free(back);
	free(dup);
	/* short of room: cut before the first piece that does not fit, never overrun */
	size_t caps[] = { 1, 2, 3, 4, 5, 7, wl / 2 + 1, wl, wl + 1 };
	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		if (!caps[i])
			continue; /* (cap 0 writes nothing: ctl_escape(NULL, 0, s) above) */
		char *buf = malloc(caps[i]);
		CHECK(buf != NULL);
		CHECK(ctl_escape(buf, caps[i], s) == wl);
		size_t kept = 0;
		for (size_t k = 0; k < nb && bounds[k] <= caps[i] - 1; k++)
			kept = bounds[k];
		CHECK(strlen(buf) == kept && memcmp(buf, want, kept) == 0);
		free(buf);
	}
	size_t maxes[] = { 0, 1, 2, 3, 4, 5, CTL_ECHO_MAX - 1, CTL_ECHO_MAX, CTL_ECHO_MAX + 1, n };
	for (size_t i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++)
		CHECK(ctl_utf8_prefix(s, maxes[i]) == model_prefix(s, maxes[i]));
	free(want);
	free(bounds);
}

/* ---------------- requests, modelled */

enum m_type {
	M_UINT,
	M_STRING
};
enum m_outcome {
	M_OK,
	M_NO_CLIENT,
	M_LEVEL
};
struct m_arg {
	const char *name;
	enum m_type type;
	bool required;
	double lo, hi;
};
struct m_req {
	const char *name;
	enum m_outcome outcome;
	struct m_arg args[4];
};
#define M_MAX_ID 9007199254740991.0 /* 2^53 - 1 */
#define M_CLIENT                                                                                   \
	{                                                                                          \
		"client", M_UINT, true, 1, M_MAX_ID                                                \
	}
static const struct m_req m_reqs[] = {
	{ "status", M_OK, { { 0 } } },
	{ "clients", M_OK, { { "start", M_UINT, false, 0, M_MAX_ID } } },
	{ "segments", M_NO_CLIENT, { M_CLIENT, { "start", M_UINT, false, 0, 4294967295.0 } } },
	{ "lines",
	  M_NO_CLIENT,
	  { M_CLIENT,
	    { "segment", M_UINT, true, 0, 4294967295.0 },
	    { "start", M_UINT, false, 0, GARUDA_SEGMENT_MAX_LINES - 1 },
	    { "count", M_UINT, false, 1, GARUDA_SEGMENT_MAX_LINES } } },
	{ "scanners", M_OK, { { 0 } } },
	{ "points", M_NO_CLIENT, { M_CLIENT } },
	{ "config", M_OK, { { 0 } } },
	{ "metrics", M_OK, { { 0 } } },
	{ "disconnect", M_NO_CLIENT, { M_CLIENT } },
	{ "log_level", M_LEVEL, { { "level", M_STRING, false, 0, 0 } } },
	{ "reload", M_OK, { { 0 } } },
};
static const char *const m_levels[] = { [LOG_ERR] = "err",
					[LOG_WARNING] = "warning",
					[LOG_NOTICE] = "notice",
					[LOG_INFO] = "info",
					[LOG_DEBUG] = "debug" };

static int m_level(const char *s)
{
	for (int i = 0; i < (int)(sizeof(m_levels) / sizeof(m_levels[0])); i++)
		if (m_levels[i] && strcmp(m_levels[i], s) == 0)
			return i;
	return -1;
}

/* A string of the (well-formed) JSON text holds U+0000: a raw NUL or \u0000 */
static bool holds_nul(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i] != '"')
			continue;
		for (i++; i < n && t[i] != '"'; i++) {
			if (t[i] == '\0')
				return true;
			if (t[i] != '\\')
				continue;
			if (n - i >= 6 && memcmp(t + i + 1, "u0000", 5) == 0)
				return true;
			i++;
		}
	}
	return false;
}

struct expect {
	int code; /* 0: a reply; else the registry code of the error */
	const struct m_req *rq;
	const char *name;  /* "request"'s string */
	const char *level; /* log_level's "level" */
};

/* What the daemon answers to text (len bytes); *tree: the parse the strings point into */
static void model(const char *text, size_t len, struct expect *e, cJSON **tree)
{
	memset(e, 0, sizeof(*e));
	*tree = NULL;
	if (len > CONTROL_MAX_REQUEST) {
		e->code = GARUDA_E_TOO_LONG;
		return;
	}
	/* raw control characters: cJSON takes them, JSON does not (util/jsontext.h; its
	 * seeds pin the rule: bad-control-*, ok-control-whitespace) */
	if (len && json_text_control_at(text, len) < len) {
		e->code = GARUDA_E_BAD_JSON;
		return;
	}
	const char *end = NULL;
	cJSON *req = *tree = len ? cJSON_ParseWithLengthOpts(text, len, &end, 0) : NULL;
	bool trailing = false;
	for (const char *p = end; req && p < text + len; p++)
		trailing |= *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r';
	e->code = GARUDA_E_BAD_ARGUMENT;
	if (!req || trailing || !cJSON_IsObject(req)) {
		e->code = GARUDA_E_BAD_JSON;
		return;
	}
	if (holds_nul(text, len))
		return;
	const cJSON *name = req->child;
	while (name && strcmp(name->string, "request") != 0)
		name = name->next;
	if (!name || !cJSON_IsString(name))
		return;
	e->name = name->valuestring;
	for (size_t i = 0; i < sizeof(m_reqs) / sizeof(m_reqs[0]); i++)
		if (strcmp(m_reqs[i].name, e->name) == 0)
			e->rq = &m_reqs[i];
	if (!e->rq) {
		e->code = GARUDA_E_UNKNOWN_REQUEST;
		return;
	}
	for (const cJSON *it = req->child; it; it = it->next) {
		for (const cJSON *p = req->child; p != it; p = p->next)
			if (strcmp(p->string, it->string) == 0)
				return;
		if (strcmp(it->string, "request") == 0)
			continue;
		const struct m_arg *a = e->rq->args;
		while (a < e->rq->args + 4 && a->name && strcmp(a->name, it->string) != 0)
			a++;
		if (a == e->rq->args + 4 || !a->name)
			return;
		if (a->type == M_STRING && !cJSON_IsString(it))
			return;
		if (a->type == M_STRING) {
			e->level = it->valuestring;
			continue;
		}
		double v = it->valuedouble;
		if (!cJSON_IsNumber(it) || !(v >= a->lo && v <= a->hi) || v != (double)(uint64_t)v)
			return;
	}
	for (const struct m_arg *a = e->rq->args; a < e->rq->args + 4 && a->name; a++)
		if (a->required && !cJSON_GetObjectItemCaseSensitive(req, a->name))
			return;
	if (e->rq->outcome == M_LEVEL && e->level && m_level(e->level) < 0)
		return;
	e->code = e->rq->outcome == M_NO_CLIENT ? GARUDA_E_NO_CLIENT : 0;
}

/* ---------------- the reply */

static const cJSON *member(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	CHECK(v != NULL);
	return v;
}

static bool str_is(const cJSON *v, const char *s)
{
	return cJSON_IsString(v) && strcmp(v->valuestring, s) == 0;
}

static bool escaped_is(const cJSON *v, const char *raw)
{
	char *want = model_escape(raw, NULL, NULL);
	bool same = str_is(v, want);
	free(want);
	return same;
}

static void check_error(const cJSON *r, const struct expect *e)
{
	const cJSON *err = member(r, "error");
	const cJSON *code = member(err, "code"), *msg = member(err, "message");
	CHECK(cJSON_IsNumber(code) && code->valuedouble == e->code);
	CHECK(str_is(member(err, "name"), garuda_errcode_name(e->code)));
	CHECK(cJSON_IsString(msg));
	const char *m = msg->valuestring;
	size_t n = strlen(m);
	CHECK(n > 0 && n < CTL_MESSAGE_MAX && u8_valid(m, n, true));
	char *back = unescape(m);
	CHECK(back != NULL);
	free(back);
	if (e->code == GARUDA_E_UNKNOWN_REQUEST) {
		/* the name cut to 64 bytes at a character, the message escaped as a whole */
		char *raw, *want;
		CHECK(asprintf(&raw, "unknown request \"%.*s\"",
			       (int)model_prefix(e->name, CTL_ECHO_MAX), e->name) >= 0);
		size_t bounds[128], nb, kept = 0; /* a piece a byte of raw, at most */
		CHECK(strlen(raw) < sizeof(bounds) / sizeof(bounds[0]));
		want = model_escape(raw, bounds, &nb);
		for (size_t k = 0; k < nb && bounds[k] < CTL_MESSAGE_MAX; k++)
			kept = bounds[k];
		CHECK(n == kept && memcmp(m, want, kept) == 0);
		free(want);
		free(raw);
	}
}

static void check_reply(const cJSON *r, const struct expect *e)
{
	CHECK(cJSON_GetObjectItemCaseSensitive(r, "error") == NULL);
	const char *name = e->rq->name;
	if (strcmp(name, "status") == 0) {
		CHECK(str_is(member(r, "daemon_version"), GARUDA_VERSION));
		CHECK(member(r, "clients")->valuedouble == 0 &&
		      member(r, "scanners")->valuedouble == 0);
		const cJSON *w = member(r, "warnings");
		CHECK(cJSON_GetArraySize(w) == 1 &&
		      escaped_is(cJSON_GetArrayItem(w, 0), FAKE_WARNING));
		CHECK(cJSON_IsNull(member(r, "config_path")));
	} else if (strcmp(name, "clients") == 0) {
		CHECK(cJSON_IsArray(member(r, "clients")) &&
		      cJSON_GetArraySize(member(r, "clients")) == 0);
		CHECK(cJSON_IsNull(member(r, "next")));
	} else if (strcmp(name, "scanners") == 0) {
		CHECK(cJSON_IsArray(member(r, "scanners")) &&
		      cJSON_GetArraySize(member(r, "scanners")) == 0);
	} else if (strcmp(name, "config") == 0) {
		CHECK(escaped_is(member(r, "socket_group"), FAKE_GROUP));
		CHECK(cJSON_IsNull(member(r, "socket")) && cJSON_IsNull(member(r, "config_path")));
		CHECK(cJSON_IsString(member(r, "plan")));
	} else if (strcmp(name, "metrics") == 0) {
		CHECK(str_is(member(r, "content_type"), "text/plain; version=0.0.4"));
		CHECK(cJSON_IsString(member(r, "text")) && member(r, "text")->valuestring[0]);
	} else if (strcmp(name, "reload") == 0) {
		CHECK(cJSON_IsFalse(member(r, "reloaded")) &&
		      cJSON_IsNull(member(r, "config_path")));
	} else if (strcmp(name, "log_level") == 0) {
		int want = e->level ? m_level(e->level) : BASE_LEVEL;
		CHECK(str_is(member(r, "log_level"), m_levels[want]));
		CHECK(log_get_level() == want);
		if (e->level)
			CHECK(str_is(member(r, "previous"), m_levels[BASE_LEVEL]));
		else
			CHECK(!cJSON_GetObjectItemCaseSensitive(r, "previous"));
	} else {
		CHECK(!"a reply to a request the model does not know");
	}
}

/* The datagram through on_request(); the reply's bytes (malloc'ed, NUL-terminated) */
static char *deliver(const uint8_t *data, size_t size, size_t *rlen)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
	int sndbuf = CONTROL_SNDBUF;
	CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) == 0);
	CHECK(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) == 0);
	CHECK(send(sv[1], data, size, 0) == (ssize_t)size);
	struct daemon *d = fake_daemon();
	struct control_conn *c = calloc(1, sizeof(*c));
	CHECK(c != NULL);
	c->d = d;
	c->fd = sv[0];
	c->uid = 0; /* root: admitted */
	d->controls = c;
	conn_closed = false;
	on_request(NULL, c, POLLIN);
	CHECK(!conn_closed);
	d->controls = NULL;
	conn_free(c);
	char *buf = malloc(CONTROL_MAX_REPLY + 2);
	CHECK(buf != NULL);
	ssize_t n = recv(sv[1], buf, CONTROL_MAX_REPLY + 1, MSG_DONTWAIT | MSG_TRUNC);
	CHECK(n > 0 && n <= CONTROL_MAX_REPLY);
	buf[n] = '\0';
	char more;
	CHECK(recv(sv[1], &more, 1, MSG_DONTWAIT) == 0); /* one reply, then the close */
	close(sv[1]);
	*rlen = (size_t)n;
	return buf;
}

/* The error code of the daemon's reply to the datagram (0: no error), for the corpus
 * test's ok-* and bad-* */
int fuzz_control_reply_code(const uint8_t *data, size_t size)
{
	log_set_level(BASE_LEVEL);
	size_t n;
	char *reply = deliver(data, size, &n);
	cJSON *r = cJSON_ParseWithLength(reply, n);
	CHECK(cJSON_IsObject(r));
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(r, "error");
	int code = err ? (int)member(err, "code")->valuedouble : 0;
	log_set_level(BASE_LEVEL);
	cJSON_Delete(r);
	free(reply);
	return code;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so ASan sees any read past the datagram */
	char *text = malloc(size ? size : 1);
	CHECK(text != NULL);
	if (size)
		memcpy(text, data, size);
	struct expect e;
	cJSON *tree;
	model(text, size, &e, &tree);

	log_set_level(BASE_LEVEL);
	size_t n;
	char *reply = deliver((const uint8_t *)text, size, &n);
	CHECK(strlen(reply) == n && u8_valid(reply, n, false));
	cJSON *r = cJSON_ParseWithLength(reply, n);
	CHECK(cJSON_IsObject(r));
	CHECK(r->child && strcmp(r->child->string, "version") == 0 && r->child->valuedouble == 1);
	const cJSON *got = cJSON_GetObjectItemCaseSensitive(r, "error");
	if (e.code != (got ? (int)member(got, "code")->valuedouble : 0))
		fprintf(stderr, "fuzz_control: the model expects %d, the reply: %s\n", e.code,
			reply);
	if (e.code)
		check_error(r, &e);
	else
		check_reply(r, &e);
	log_set_level(BASE_LEVEL);
	cJSON_Delete(r);
	free(reply);
	cJSON_Delete(tree);

	/* the escaping, over the input as a C string */
	char *s = malloc(size + 1);
	CHECK(s != NULL);
	memcpy(s, text, size);
	s[size] = '\0';
	check_escape(s);
	free(s);
	free(text);
	return 0;
}
