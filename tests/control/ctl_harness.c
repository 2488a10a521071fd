/* ctl_harness.c — see ctl_harness.h. The daemon and the raw client are tests/common's
 * (garudad.h, rawclient.h); this file asserts around them for the control tests. */
#include "ctl_harness.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdcheck.h"
#include "fdio.h"

/* ------------------------------------------------------------------ daemon ---- */

void ctl_write_config(struct gd_daemon *d, const char *config_json)
{
	int r = gd_write_config(d, config_json);
	cr_assert_eq(r, 0, "%s", d->err);
}

void ctl_start(struct gd_daemon *d, const char *config_json)
{
	static const char *const args[] = { "--scanners=2", NULL };
	struct gd_opts o = { .config = config_json, .config_verbatim = true, .args = args };
	memset(d, 0, sizeof(*d));
	gd_start(d, &o);
}

void ctl_stop(struct gd_daemon *d)
{
	int r = gd_terminate(d);
	cr_assert_eq(r, 0, "%s", d->err);
}

char *ctl_raw(const char *ctl_path, const void *req, size_t len)
{
	int err;
	char *r = gd_control_path(ctl_path, req, len, &err);
	cr_assert_not_null(r, "control request on %s: %s", ctl_path, strerror(-err));
	return r;
}

cJSON *ctl_json(const char *ctl_path, const char *req)
{
	char *text = ctl_raw(ctl_path, req, strlen(req));
	cJSON *j = cJSON_Parse(text);
	cr_assert(cJSON_IsObject(j), "reply to %s is not a JSON object: %s", req, text);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "version");
	cr_assert(cJSON_IsNumber(v) && v->valuedouble == 1, "reply to %s has no \"version\":1: %s", req, text);
	free(text);
	return j;
}

void ctl_assert_error(const cJSON *reply, int code, const char *what)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(reply, "version");
	cr_assert(cJSON_IsNumber(v) && v->valuedouble == 1, "%s: error reply without \"version\":1", what);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(reply, "error");
	cr_assert(cJSON_IsObject(e), "%s: no \"error\" object", what);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
	cr_assert(cJSON_IsNumber(c), "%s: error without a numeric code", what);
	cr_assert_eq((int)c->valuedouble, code, "%s: error code %d (%s), expected %d (%s)", what,
		     (int)c->valuedouble, cJSON_IsString(n) ? n->valuestring : "?", code,
		     garuda_errcode_name(code));
	cr_assert(cJSON_IsString(n), "%s: error without a name", what);
	cr_assert_str_eq(n->valuestring, garuda_errcode_name(code), "%s: error name", what);
	cr_assert(cJSON_IsString(m) && m->valuestring[0], "%s: error without a message", what);
}

double ctl_status_num(const char *ctl_path, const char *key)
{
	cJSON *j = ctl_json(ctl_path, "{\"request\":\"status\"}");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	cr_assert(cJSON_IsNumber(v), "status has no number \"%s\"", key);
	double x = v->valuedouble;
	cJSON_Delete(j);
	return x;
}

double ctl_wait_status(const char *ctl_path, const char *key, double want)
{
	return gd_wait_status_path(ctl_path, key, want);
}

/* ------------------------------------------------------- raw-protocol client ---- */

void ctl_client_open(struct ctl_client *c, const char *sock)
{
	memset(c, 0, sizeof(*c));
	int r = gd_open(&c->raw, sock);
	cr_assert_eq(r, 0, "connect + HELLO on %s: %s", sock, gd_strerr(r));
	c->session_id = c->raw.welcome.session_id;
}

void ctl_client_close(struct ctl_client *c)
{
	gd_close(&c->raw);
}

int ctl_client_call(struct ctl_client *c, struct garuda_msg *m, int fd, struct garuda_msg *reply, int *rfd)
{
	int r = gd_request(&c->raw, m, fd >= 0 ? &fd : NULL, fd >= 0 ? 1 : 0, reply, rfd);
	cr_assert_geq(r, 0, "%s: %s", garuda_msg_type_name(m->type), gd_strerr(r));
	return r;
}

int ctl_segment_open(struct ctl_client *c, uint32_t lines, struct gd_seg *s)
{
	struct gd_seg got;
	int r = gd_segment_open(&c->raw, lines, -1, &got);
	cr_assert_geq(r, 0, "SEGMENT_OPEN: %s", gd_strerr(r));
	if (r == 0)
		*s = got;
	return r;
}

int ctl_bind(struct ctl_client *c, uint32_t seg, uint32_t index)
{
	int efd = -1;
	int r = gd_bind_new(&c->raw, (struct garuda_slot){ .segment = seg, .index = index }, &efd);
	cr_assert_eq(r, 0, "BIND refused: %s", gd_strerr(r));
	return efd;
}

void ctl_arm(struct ctl_client *c, uint32_t seg, uint32_t index, uint64_t target, uint64_t token,
	     uint8_t form)
{
	int r = gd_arm(&c->raw, (struct garuda_slot){ .segment = seg, .index = index }, target, token,
		       form);
	cr_assert_eq(r, 0, "ARM refused: %s", gd_strerr(r));
}

bool ctl_client_wait_closed(struct ctl_client *c)
{
	uint64_t deadline = gd_deadline(CTL_DEADLINE_MS);
	for (;;) {
		struct garuda_msg m;
		int r = gd_recv(&c->raw, &m, NULL, gd_left_ms(deadline));
		if (r == -EPIPE)
			return true;
		if (r == 0 || gd_left_ms(deadline) == 0)
			return false;
	}
}

/* ------------------------------------------------------------- the fixture ---- */

void ctl_fixture_up(struct ctl_fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->a1.memfd = f->a2.memfd = f->b1.memfd = f->efd = -1;
	ctl_start(&f->d, FIXTURE_CONFIG);
	ctl_client_open(&f->a, f->d.sock);
	ctl_client_open(&f->b, f->d.sock);
	cr_assert_eq(ctl_segment_open(&f->a, 4, &f->a1), 0);
	cr_assert_eq(ctl_segment_open(&f->a, 2, &f->a2), 0);
	cr_assert_eq(ctl_segment_open(&f->b, 8, &f->b1), 0);
	struct gd_seg extra;
	cr_assert_eq(ctl_segment_open(&f->a, 1, &extra), GARUDA_E_QUOTA, "a third segment was not refused");

	f->efd = ctl_bind(&f->a, f->a1.id, 0);
	ctl_arm(&f->a, f->a1.id, 0, 5, 11, GARUDA_FORM_EVENTFD);
	ctl_arm(&f->a, f->a1.id, 1, 10, 12, GARUDA_FORM_MESSAGE);
	gd_store(&f->a1, 2, 7);
	gd_store(&f->a1, 3, FIXTURE_BIG_TARGET - 1);
	ctl_arm(&f->a, f->a1.id, 3, FIXTURE_BIG_TARGET, FIXTURE_BIG_TOKEN, GARUDA_FORM_MESSAGE);
	ctl_arm(&f->a, f->a1.id, 9, 3, 13, GARUDA_FORM_DOORBELL);
	ctl_arm(&f->b, f->b1.id, 0, 100, 21, GARUDA_FORM_MESSAGE);
	ctl_arm(&f->b, f->b1.id, 3, 1, 22, GARUDA_FORM_MESSAGE);
	/* the stores that complete 3 of them after the scanners took all 6: an arm that
	 * landed before its take teaches its point nothing (docs/plans.md), and the
	 * points tests count each completion's record */
	cr_assert_eq(ctl_wait_status(f->d.ctl, "armed", 6), 6, "the scanners did not take the 6 arms");
	gd_store(&f->a1, 0, 5);
	gd_store(&f->a1, 9, 3);
	gd_store(&f->b1, 3, 1);
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.arm.slot = (struct garuda_slot){ .segment = 99, .index = 0 };
	m.arm.target = 1;
	m.arm.form = GARUDA_FORM_MESSAGE;
	cr_assert_eq(ctl_client_call(&f->b, &m, -1, NULL, NULL), GARUDA_E_NO_SEGMENT);

	cr_assert_eq(ctl_wait_status(f->d.ctl, "completions", 3), 3, "the fixture's 3 completions did not happen");
	cr_assert_eq(ctl_wait_status(f->d.ctl, "armed", 3), 3, "the scanners do not show 3 armed");
	/* the scanner counts a completion before its eventfd write lands: wait for it */
	uint64_t v;
	struct pollfd pfd = { .fd = f->efd, .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, CTL_DEADLINE_MS), 1, "the eventfd-form arm did not fire");
	cr_assert_eq(read(f->efd, &v, sizeof(v)), (ssize_t)sizeof(v), "the eventfd-form arm did not fire");
	cr_assert_eq(v, 1);
}

void ctl_fixture_down(struct ctl_fixture *f)
{
	ctl_client_close(&f->a);
	ctl_client_close(&f->b);
	gd_seg_unmap(&f->a1);
	gd_seg_unmap(&f->a2);
	gd_seg_unmap(&f->b1);
	if (f->efd >= 0)
		close(f->efd);
	f->efd = -1;
	ctl_stop(&f->d);
}

/* --------------------------------------------------------------- garctl ---- */

static char *slurp_two(int a, int b, char **out_b, pid_t pid)
{
	char *buf[2] = { NULL, NULL };
	size_t len[2] = { 0, 0 };
	struct pollfd p[2] = { { .fd = a, .events = POLLIN }, { .fd = b, .events = POLLIN } };
	uint64_t deadline = gd_deadline(2 * CTL_DEADLINE_MS);
	int open_ = 2;
	while (open_) {
		int left = gd_left_ms(deadline);
		if (left <= 0 || poll(p, 2, left) <= 0) {
			kill(pid, SIGKILL);
			cr_log_error("garctl did not finish within %d ms; killed", 2 * CTL_DEADLINE_MS);
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			char tmp[4096];
			ssize_t n = read(p[i].fd, tmp, sizeof(tmp));
			if (n <= 0) {
				p[i].fd = -1;
				open_--;
				continue;
			}
			buf[i] = realloc(buf[i], len[i] + (size_t)n + 1);
			cr_assert_not_null(buf[i]);
			memcpy(buf[i] + len[i], tmp, (size_t)n);
			len[i] += (size_t)n;
			buf[i][len[i]] = '\0';
		}
	}
	for (int i = 0; i < 2; i++)
		if (!buf[i])
			buf[i] = calloc(1, 1);
	*out_b = buf[1];
	return buf[0];
}

/* A copy of garctl that uid 65534 can execute: the build tree may lie under a 0700
 * home directory. A fresh 0755 directory under $TMPDIR (else /tmp) holds a 0755 copy
 * of the binary (garctl needs no library from the build tree: only libc and
 * libcjson). The path goes to out; the directory is removed by peer_garctl_remove.
 * Skips, saying why, when $TMPDIR offers no such place (none made, or a noexec mount). */
static void peer_garctl_copy(const char *bin, char *dir, size_t dcap, char *out, size_t ocap)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	cr_assert_lt((size_t)snprintf(dir, dcap, "%s/garctl-peer.XXXXXX", tmp), dcap,
		     "TMPDIR %s: too long", tmp);
	if (!mkdtemp(dir))
		cr_skip_test("no directory for a copy of garctl that uid %d can run (mkdtemp "
			     "under %s: %s)", 65534, tmp, strerror(errno));
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC)) {
		rmdir(dir);
		cr_skip_test("no directory for a copy of garctl that uid %d can run: %s is "
			     "mounted noexec (set TMPDIR)", 65534, tmp);
	}
	cr_assert_eq(chmod(dir, 0755), 0, "chmod %s: %s", dir, strerror(errno));
	snprintf(out, ocap, "%s/garctl", dir);
	int in = open(bin, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(in, 0, "%s: %s", bin, strerror(errno));
	int to = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	cr_assert_geq(to, 0, "%s: %s", out, strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(to, buf, (size_t)n), n, "copying garctl: %s", strerror(errno));
	cr_assert_eq(n, 0, "reading %s: %s", bin, strerror(errno));
	close(in);
	cr_assert_eq(fchmod(to, 0755), 0);
	cr_assert_eq(close(to), 0);
}

static void peer_garctl_remove(const char *dir, const char *copy)
{
	unlink(copy);
	rmdir(dir);
}

bool ctl_valid_utf8(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
				      : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
		if (!len || i + len > n)
			return false;
		for (unsigned k = 1; k < len; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		if ((len == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f))) ||
		    (len == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))))
			return false;
		i += len;
	}
	return true;
}

/* ctl_garctl_as(), with stdout into the file out_path instead when it is not NULL. */
static void run_garctl(struct ctl_run *r, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
		       const char *const *env, const char *out_path, const char *const *args)
{
	const char *bin = getenv("GARCTL");
	cr_assert(bin && *bin, "GARCTL (path of garctl) is not set");
	char peer_dir[PATH_MAX] = "", peer_bin[PATH_MAX + 16];
	if (uid != (uid_t)-1) {
		peer_garctl_copy(bin, peer_dir, sizeof(peer_dir), peer_bin, sizeof(peer_bin));
		bin = peer_bin;
	}
	const char *argv[32] = { "garctl" };
	int n = 1;
	for (int i = 0; args[i]; i++) {
		cr_assert_lt(n, 31);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	int out[2], err[2];
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		dup2(null, 0);
		int to = out_path ? open(out_path, O_WRONLY | O_CLOEXEC) : out[1];
		if (to < 0) {
			dprintf(err[1], "%s: %s\n", out_path, strerror(errno));
			_exit(126);
		}
		dup2(to, 1);
		dup2(err[1], 2);
		/* garctl finds its socket from these (proto/paths.c): only what the test
		 * passes in env may point it anywhere */
		unsetenv("GARUDA_CONTROL_SOCKET");
		unsetenv("GARUDA_SOCKET");
		unsetenv("PAGER");
		unsetenv("GARUDA_PAGER");
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		if (uid != (uid_t)-1) {
			if (setgroups((size_t)ngroups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0) {
				dprintf(2, "cannot drop to uid %u: %s\n", (unsigned)uid, strerror(errno));
				_exit(126);
			}
		}
		/* after setuid(), which clears it; the parent may have died before this */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(126);
		execv(bin, (char *const *)argv);
		dprintf(2, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	r->out = slurp_two(out[0], err[0], &r->err, pid);
	close(out[0]);
	close(err[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	if (peer_dir[0])
		peer_garctl_remove(peer_dir, peer_bin);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

void ctl_garctl_as(struct ctl_run *r, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
		   const char *const *env, const char *const *args)
{
	run_garctl(r, uid, gid, groups, ngroups, env, NULL, args);
}

void ctl_garctl_to(struct ctl_run *r, const char *out_path, const char *const *args)
{
	run_garctl(r, (uid_t)-1, 0, NULL, 0, NULL, out_path, args);
}

void ctl_garctl(struct ctl_run *r, const char *const *args)
{
	ctl_garctl_as(r, (uid_t)-1, 0, NULL, 0, NULL, args);
}

void ctl_run_free(struct ctl_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

cJSON *ctl_run_json(const struct ctl_run *r)
{
	cr_assert_eq(r->status, 0, "garctl exit %d: %s", r->status, r->err);
	cJSON *j = cJSON_Parse(r->out);
	cr_assert(cJSON_IsObject(j), "garctl -j output is not a JSON object: %s", r->out);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "version");
	cr_assert(cJSON_IsNumber(v) && v->valuedouble == 1, "garctl -j output has no \"version\":1");
	return j;
}

/* ------------------------------------------------------------------ tables ---- */

char ***ctl_table(const char *text)
{
	size_t nrows = 0, cap = 8;
	char ***rows = calloc(cap, sizeof(*rows));
	cr_assert_not_null(rows);
	const char *p = text;
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char *line = strndup(p, len);
		cr_assert_not_null(line);
		char **cols = calloc(len / 2 + 2, sizeof(char *));
		cr_assert_not_null(cols);
		size_t nc = 0;
		for (char *save = NULL, *tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			cols[nc++] = strdup(tok);
		free(line);
		if (nrows + 2 > cap) {
			cap *= 2;
			rows = realloc(rows, cap * sizeof(*rows));
			cr_assert_not_null(rows);
		}
		rows[nrows++] = cols;
		rows[nrows] = NULL;
		p = eol ? eol + 1 : p + len;
	}
	return rows;
}

void ctl_table_free(char ***t)
{
	for (size_t i = 0; t && t[i]; i++) {
		for (size_t j = 0; t[i][j]; j++)
			free(t[i][j]);
		free(t[i]);
	}
	free(t);
}

size_t ctl_table_rows(char ***t)
{
	size_t n = 0;
	while (t[n])
		n++;
	return n;
}

char **ctl_table_find(char ***t, int col, const char *v)
{
	for (size_t i = 0; t[i]; i++) {
		int n = 0;
		while (t[i][n])
			n++;
		if (col < n && strcmp(t[i][col], v) == 0)
			return t[i];
	}
	return NULL;
}

int ctl_table_col(char ***t, const char *name)
{
	if (!t[0])
		return -1;
	for (int j = 0; t[0][j]; j++)
		if (strcmp(t[0][j], name) == 0)
			return j;
	return -1;
}

/* -------------------------------------------------------------- Prometheus ---- */

#define PROM_MAX_FAMILIES 256
#define PROM_MAX_SERIES 2048

struct prom_family {
	char name[128];
	char type[16];
	bool has_samples;
};

struct prom_series { /* one histogram series: its labels other than le */
	char family[128];
	char labels[512];
	double last_le, last_value, inf_value, count;
	bool any, inf, has_count;
};

struct prom_state {
	struct prom_family fam[PROM_MAX_FAMILIES];
	int nfam;
	int current; /* family of the last # TYPE line */
	struct prom_series ser[PROM_MAX_SERIES];
	int nser;
};

static char *prom_fail(int lineno, const char *fmt, const char *a, const char *b)
{
	char *s = NULL;
	char msg[512];
	snprintf(msg, sizeof(msg), fmt, a, b);
	if (asprintf(&s, "line %d: %s", lineno, msg) < 0)
		return strdup("out of memory");
	return s;
}

static bool name_char(char c, bool first, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
	       (!first && c >= '0' && c <= '9');
}

/* Parse a name at *p; copies it to out. false when there is none. */
static bool parse_name(const char **p, char *out, size_t cap, bool colon)
{
	size_t n = 0;
	if (!name_char(**p, true, colon))
		return false;
	while (name_char(**p, n == 0, colon)) {
		if (n + 1 < cap)
			out[n++] = **p;
		(*p)++;
	}
	out[n] = '\0';
	return true;
}

static bool parse_float(const char *s, const char **end, double *v)
{
	if (strncmp(s, "+Inf", 4) == 0) {
		*v = INFINITY;
		*end = s + 4;
		return true;
	}
	if (strncmp(s, "-Inf", 4) == 0) {
		*v = -INFINITY;
		*end = s + 4;
		return true;
	}
	if (strncmp(s, "NaN", 3) == 0) {
		*v = NAN;
		*end = s + 3;
		return true;
	}
	char *e;
	*v = strtod(s, &e);
	if (e == s || *s == ' ')
		return false;
	*end = e;
	return true;
}

static int find_family(struct prom_state *st, const char *name)
{
	for (int i = 0; i < st->nfam; i++)
		if (strcmp(st->fam[i].name, name) == 0)
			return i;
	return -1;
}

static bool ends_with(const char *s, const char *suffix, char *base, size_t cap)
{
	size_t n = strlen(s), m = strlen(suffix);
	if (n <= m || strcmp(s + n - m, suffix) != 0)
		return false;
	snprintf(base, cap, "%.*s", (int)(n - m), s);
	return true;
}

static char *prom_sample(struct prom_state *st, int lineno, const char *line)
{
	const char *p = line;
	char name[128], labels[512] = "", le[256] = "";
	bool has_le = false;
	if (!parse_name(&p, name, sizeof(name), true))
		return prom_fail(lineno, "not a sample: \"%s\"%s", line, "");
	if (*p == '{') {
		p++;
		size_t ln = 0;
		while (*p != '}') {
			char lname[128];
			if (!parse_name(&p, lname, sizeof(lname), false))
				return prom_fail(lineno, "bad label name in \"%s\"%s", line, "");
			if (*p++ != '=' || *p++ != '"')
				return prom_fail(lineno, "label %s without =\"value\" in %s", lname, name);
			char val[256];
			size_t vn = 0;
			while (*p && *p != '"') {
				if (*p == '\\') {
					p++;
					if (*p != '\\' && *p != '"' && *p != 'n')
						return prom_fail(lineno, "bad escape in label %s of %s", lname, name);
				} else if (*p == '\n') {
					return prom_fail(lineno, "raw newline in label %s of %s", lname, name);
				}
				if (vn + 1 < sizeof(val))
					val[vn++] = *p;
				p++;
			}
			val[vn] = '\0';
			if (*p++ != '"')
				return prom_fail(lineno, "unterminated label value in %s%s", name, "");
			if (strcmp(lname, "le") == 0) {
				has_le = true;
				snprintf(le, sizeof(le), "%s", val);
			} else {
				ln += (size_t)snprintf(labels + ln, sizeof(labels) - ln, "%s=%s,", lname, val);
				if (ln >= sizeof(labels))
					ln = sizeof(labels) - 1;
			}
			if (*p == ',')
				p++;
			else if (*p != '}')
				return prom_fail(lineno, "expected , or } in the labels of %s%s", name, "");
		}
		p++;
	}
	if (*p++ != ' ')
		return prom_fail(lineno, "no blank between %s and its value%s", name, "");
	double v;
	const char *e;
	if (!parse_float(p, &e, &v))
		return prom_fail(lineno, "value of %s is not a number: \"%s\"", name, p);
	if (*e == ' ') { /* optional timestamp */
		char *te;
		strtoll(e + 1, &te, 10);
		if (te == e + 1 || *te)
			return prom_fail(lineno, "bad timestamp after %s%s", name, "");
	} else if (*e) {
		return prom_fail(lineno, "trailing text after the value of %s: \"%s\"", name, e);
	}

	/* family */
	char base[128];
	int f = find_family(st, name);
	const char *part = "";
	if (f < 0 && ends_with(name, "_bucket", base, sizeof(base)) && (f = find_family(st, base)) >= 0)
		part = "bucket";
	else if (f < 0 && ends_with(name, "_count", base, sizeof(base)) && (f = find_family(st, base)) >= 0)
		part = "count";
	else if (f < 0 && ends_with(name, "_sum", base, sizeof(base)) && (f = find_family(st, base)) >= 0)
		part = "sum";
	if (f < 0)
		return prom_fail(lineno, "sample %s has no # TYPE line before it%s", name, "");
	struct prom_family *fam = &st->fam[f];
	if (*part && strcmp(fam->type, "histogram") != 0 && strcmp(fam->type, "summary") != 0)
		return prom_fail(lineno, "%s: a _bucket/_count/_sum sample of a %s", name, fam->type);
	if (f != st->current)
		return prom_fail(lineno, "samples of %s are not contiguous under its # TYPE line%s", fam->name, "");
	fam->has_samples = true;
	if (strcmp(fam->type, "counter") == 0 && !ends_with(name, "_total", base, sizeof(base)))
		return prom_fail(lineno, "counter %s does not end in _total%s", name, "");
	if (strcmp(fam->type, "histogram") != 0)
		return NULL;
	if (!*part)
		return prom_fail(lineno, "histogram sample %s is not _bucket, _count or _sum%s", name, "");

	struct prom_series *s = NULL;
	for (int i = 0; i < st->nser; i++)
		if (strcmp(st->ser[i].family, fam->name) == 0 && strcmp(st->ser[i].labels, labels) == 0)
			s = &st->ser[i];
	if (!s) {
		if (st->nser == PROM_MAX_SERIES)
			return prom_fail(lineno, "too many histogram series%s%s", "", "");
		s = &st->ser[st->nser++];
		memset(s, 0, sizeof(*s));
		memcpy(s->family, fam->name, sizeof(s->family));
		snprintf(s->labels, sizeof(s->labels), "%s", labels);
	}
	if (strcmp(part, "bucket") == 0) {
		double lev;
		if (!has_le || !parse_float(le, &e, &lev) || *e)
			return prom_fail(lineno, "bucket of %s without a numeric le: \"%s\"", fam->name, le);
		if (s->inf)
			return prom_fail(lineno, "bucket of %s{%s} after le=\"+Inf\"", fam->name, labels);
		if (s->any && !(lev > s->last_le))
			return prom_fail(lineno, "le of %s{%s} does not increase", fam->name, labels);
		if (s->any && v < s->last_value)
			return prom_fail(lineno, "buckets of %s{%s} are not cumulative", fam->name, labels);
		s->any = true;
		s->last_le = lev;
		s->last_value = v;
		if (isinf(lev) && lev > 0) {
			s->inf = true;
			s->inf_value = v;
		}
	} else if (strcmp(part, "count") == 0) {
		s->has_count = true;
		s->count = v;
	} else if (has_le) {
		return prom_fail(lineno, "%s_sum with an le label%s", fam->name, "");
	}
	return NULL;
}

char *prom_check(const char *text)
{
	struct prom_state *st = calloc(1, sizeof(*st));
	cr_assert_not_null(st);
	st->current = -1;
	char *err = NULL;
	int lineno = 0;
	const char *p = text;
	if (!*text || text[strlen(text) - 1] != '\n')
		err = strdup("the text does not end in a newline");
	while (!err && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char *line = strndup(p, len);
		lineno++;
		p = eol ? eol + 1 : p + len;
		if (!*line) {
			free(line);
			continue;
		}
		if (line[0] == '#') {
			char kw[8], name[128], rest[64] = "";
			if (sscanf(line, "# %7s %127s %63s", kw, name, rest) >= 2 &&
			    (strcmp(kw, "TYPE") == 0 || strcmp(kw, "HELP") == 0)) {
				const char *q = name;
				char check[128];
				if (!parse_name(&q, check, sizeof(check), true) || *q)
					err = prom_fail(lineno, "bad metric name \"%s\" in a # %s line", name, kw);
				else if (strcmp(kw, "TYPE") == 0) {
					static const char *const types[] = { "counter", "gauge", "histogram", "summary", "untyped" };
					bool ok = false;
					for (size_t i = 0; i < 5; i++)
						ok |= strcmp(rest, types[i]) == 0;
					if (!ok)
						err = prom_fail(lineno, "unknown type \"%s\" of %s", rest, name);
					else if (find_family(st, name) >= 0)
						err = prom_fail(lineno, "second # TYPE line for %s%s", name, "");
					else if (st->nfam == PROM_MAX_FAMILIES)
						err = prom_fail(lineno, "too many families%s%s", "", "");
					else {
						struct prom_family *f = &st->fam[st->nfam];
						snprintf(f->name, sizeof(f->name), "%s", name);
						snprintf(f->type, sizeof(f->type), "%s", rest);
						st->current = st->nfam++;
					}
				}
			}
		} else {
			err = prom_sample(st, lineno, line);
		}
		free(line);
	}
	for (int i = 0; !err && i < st->nser; i++) {
		struct prom_series *s = &st->ser[i];
		if (!s->inf)
			err = prom_fail(0, "histogram %s{%s} has no le=\"+Inf\" bucket", s->family, s->labels);
		else if (!s->has_count)
			err = prom_fail(0, "histogram %s{%s} has no _count", s->family, s->labels);
		else if (s->count != s->inf_value)
			err = prom_fail(0, "histogram %s{%s}: _count differs from the +Inf bucket", s->family, s->labels);
	}
	for (int i = 0; !err && i < st->nfam; i++)
		if (!st->fam[i].has_samples)
			err = prom_fail(0, "family %s has a # TYPE line and no samples%s", st->fam[i].name, "");
	free(st);
	return err;
}

double prom_value(const char *text, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, series, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

double prom_sum(const char *text, const char *name)
{
	size_t n = strlen(name);
	double sum = 0;
	bool any = false;
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, name, n) != 0 || (p[n] != ' ' && p[n] != '{'))
			continue;
		const char *v = p[n] == ' ' ? p + n : strchr(p, '}');
		if (!v)
			continue;
		sum += strtod(v + 1 + (v[0] == '}'), NULL);
		any = true;
	}
	return any ? sum : NAN;
}
