/* config.c — see config.h. Every key is a row of proto/config_keys.h; this file gives
 * each row's type its parser (from JSON and from a flag's text), its printed value and
 * its JSON value, and walks the rows for everything else. */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_keys.h"
#include "errcode.h"

#include "jsontext.h"
#include "log.h"
#include "paths.h"
#include "wordwait.h"

static const struct quota_limits default_quota_connection = {
	.segments = 16, .lines = 4096, .bindings = 1024, .armed = 65536, .outbox_bytes = 262144, .points = 64,
	.connections = 1,
};
/* sized so that one uid at its defaults costs garudad at most 64 MiB, whatever the
 * layout: up to ~190 B of RSS an armed wait, one per word (131,072: ~24 MiB; ~118 B at
 * four a word), 5 MiB of lines (256 segments' pages), 4 MiB of outbox, and the kernel's
 * send buffer of each connection whose client stops reading (~208 KiB: 64 of them,
 * 13 MiB) (docs/deploy.md, "Sizing"). 262,144 arms one a word measured 75 MiB. */
static const struct quota_limits default_quota_uid = {
	.segments = 256, .lines = 65536, .bindings = 16384, .armed = 131072,
	.outbox_bytes = 4194304, .connections = 64, .points = 4096,
};
/* a cgroup (pod, container, Slurm job, systemd unit) may hold what one uid may */
static const struct quota_limits default_quota_cgroup = {
	.segments = 256, .lines = 65536, .bindings = 16384, .armed = 131072,
	.outbox_bytes = 4194304, .connections = 64, .points = 4096,
};

/* everything garudad holds for all clients together: eight uids at their defaults
 * (~51 MiB each: ~410 MiB, inside the DaemonSet's 512 MiB memory limit; 8 x ~17,000
 * fds, inside the unit's LimitNOFILE=524288), so that a node's worth of tenants meets
 * a refusal that names this key instead of the OOM killer, which would end every
 * tenant's waits (docs/deploy.md, "Sizing") */
static const struct quota_limits default_quota_daemon = {
	.segments = 2048, .lines = 524288, .bindings = 131072, .armed = 1048576,
	.outbox_bytes = 33554432, .connections = 512, .points = 32768,
};

static const char *const loop_names[] = {
	[EVENT_LOOP_AUTO] = "auto", [EVENT_LOOP_URING] = "io_uring", [EVENT_LOOP_EPOLL] = "epoll",
};

const char *event_loop_name(enum event_loop_kind k)
{
	return loop_names[k];
}

static int event_loop_parse(const char *s, enum event_loop_kind *out)
{
	for (unsigned i = 0; i < sizeof(loop_names) / sizeof(loop_names[0]); i++)
		if (strcmp(s, loop_names[i]) == 0) {
			*out = (enum event_loop_kind)i;
			return 0;
		}
	return -1;
}

void config_defaults(struct config *c)
{
	memset(c, 0, sizeof(*c));
	/* socket paths stay NULL until config_from_args() resolves them */
	c->socket_group = strdup("garuda");
	c->control_group = strdup("");
	c->control_read_group = strdup("");
	c->event_loop = EVENT_LOOP_AUTO;
	c->scanners = 0;
	garuda_plan_parse(CONFIG_DEFAULT_PLAN, &c->plan, NULL, 0);
	c->log_level = LOG_INFO;
	c->wordwait = true;
	c->quota_connection = default_quota_connection;
	c->quota_uid = default_quota_uid;
	c->quota_cgroup = default_quota_cgroup;
	c->quota_daemon = default_quota_daemon;
}

/* A plan garudad can run: block has nothing to block on in the daemon. 0 or -1 with
 * msg set (a BAD_PLAN message naming the key). */
static int daemon_plan_parse(const char *text, struct garuda_plan *out, char *msg, size_t cap)
{
	struct garuda_plan p;
	if (garuda_plan_parse(text, &p, msg, cap) < 0)
		return -1;
	if (p.kind == GARUDA_PLAN_BLOCK) {
		snprintf(msg, cap, "block: garudad has no blocking wait (use poll or flag)");
		return -1;
	}
	*out = p;
	return 0;
}

static int fail(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(err, fmt, ap) < 0)
		*err = NULL;
	va_end(ap);
	return -1;
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
}

bool config_numeric_gid(const char *s, unsigned *gid)
{
	if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 10)
		return false;
	unsigned long long v = strtoull(s, NULL, 10);
	if (v >= 0xffffffffULL) /* (gid_t)-1 means "leave" to chown */
		return false;
	*gid = (unsigned)v;
	return true;
}

/* ---------------------------------------------------------------- the rows */

struct row {
	const char *key, *flag;
	enum garuda_cfg_type type;
	size_t off; /* of the field in struct config */
	uint64_t lo, hi;
	bool reload;
	const char *legacy; /* the plan key it replaces, or NULL */
	const char *help;
};

#define ROW_(key, flag, type, field, lo, hi, reload, legacy, help)                              \
	{ key, flag, GARUDA_CFG_##type, offsetof(struct config, field), lo, hi, reload, legacy, help },
static const struct row rows[] = { GARUDA_CONFIG_KEYS(ROW_) };
#undef ROW_
#define NROWS (sizeof(rows) / sizeof(rows[0]))
_Static_assert(NROWS <= 64, "struct config's keys_set has a bit per row");
_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "scanners is a U32 row");
_Static_assert(sizeof(enum event_loop_kind) == sizeof(int), "event_loop is an int-sized enum");

static void *field_of(struct config *c, const struct row *r)
{
	return (char *)c + r->off;
}

static const void *cfield_of(const struct config *c, const struct row *r)
{
	return (const char *)c + r->off;
}

static bool is_string(const struct row *r)
{
	return r->type == GARUDA_CFG_PATH || r->type == GARUDA_CFG_GROUP || r->type == GARUDA_CFG_STRING;
}

static const struct row *row_named(const char *key)
{
	for (size_t i = 0; i < NROWS; i++)
		if (strcmp(rows[i].key, key) == 0)
			return &rows[i];
	return NULL;
}

static uint64_t bit(const struct row *r)
{
	return 1ull << (r - rows);
}

static bool key_set(const struct config *c, const char *key)
{
	const struct row *r = row_named(key);
	return r && (c->keys_set & bit(r));
}

/* A key's metavariable in --help */
static const char *const metavar[] = {
	[GARUDA_CFG_PATH] = "PATH",   [GARUDA_CFG_GROUP] = "GROUP", [GARUDA_CFG_STRING] = "TEXT",
	[GARUDA_CFG_LOOP] = "KIND",   [GARUDA_CFG_U32] = "N",       [GARUDA_CFG_U64] = "N",
	[GARUDA_CFG_PLAN] = "TEXT",   [GARUDA_CFG_LEVEL] = "LEVEL", [GARUDA_CFG_WORDWAIT] = "MODE",
};

/* ---------------------------------------------------------------- values */

/* Parse text as row r's value into c: 0, or -1 with msg ("must be ..."). Numbers are
 * decimal integers in [lo, hi]. */
static int parse_text(struct config *c, const struct row *r, const char *s, char *msg, size_t cap)
{
	void *f = field_of(c, r);
	switch (r->type) {
	case GARUDA_CFG_PATH:
		if (s[0] != '/' || strlen(s) >= 108) {
			snprintf(msg, cap, "must be an absolute path shorter than 108 bytes");
			return -1;
		}
		set_str(f, s);
		return 0;
	case GARUDA_CFG_GROUP: {
		unsigned gid;
		if (s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789") == strlen(s) &&
		    !config_numeric_gid(s, &gid)) {
			snprintf(msg, cap, "a gid must be below 4294967295");
			return -1;
		}
		set_str(f, s);
		return 0;
	}
	case GARUDA_CFG_STRING:
		set_str(f, s);
		return 0;
	case GARUDA_CFG_LOOP:
		if (event_loop_parse(s, f) == 0)
			return 0;
		snprintf(msg, cap, "must be auto, io_uring or epoll");
		return -1;
	case GARUDA_CFG_U32:
	case GARUDA_CFG_U64: {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (errno || !*s || *end || s[0] == '-' || s[0] == '+' || v < r->lo || v > r->hi) {
			snprintf(msg, cap, "must be an integer in [%llu, %llu]", (unsigned long long)r->lo,
				 (unsigned long long)r->hi);
			return -1;
		}
		if (r->type == GARUDA_CFG_U32)
			*(uint32_t *)f = (uint32_t)v;
		else
			*(uint64_t *)f = v;
		return 0;
	}
	case GARUDA_CFG_PLAN: {
		char why[GARUDA_PLAN_MSG_MAX];
		if (daemon_plan_parse(s, f, why, sizeof(why)) == 0)
			return 0;
		snprintf(msg, cap, "%s (%s)", why, garuda_errcode_name(GARUDA_E_BAD_PLAN));
		return -1;
	}
	case GARUDA_CFG_LEVEL: {
		int l = log_level_from_string(s);
		if (l >= 0) {
			*(int *)f = l;
			return 0;
		}
		snprintf(msg, cap, "must be err, warning, notice, info or debug");
		return -1;
	}
	case GARUDA_CFG_WORDWAIT:
		if (wordwait_mode_parse(s, f) == 0)
			return 0;
		snprintf(msg, cap, "must be auto or off");
		return -1;
	}
	snprintf(msg, cap, "no parser");
	return -1;
}

/* Row r's value from the file's JSON value v: numbers for the number rows (a GROUP
 * takes a gid as a number too), strings for the others. */
static int parse_json(struct config *c, const struct row *r, const cJSON *v, char *msg, size_t cap)
{
	bool number = r->type == GARUDA_CFG_U32 || r->type == GARUDA_CFG_U64;
	if (number || (r->type == GARUDA_CFG_GROUP && cJSON_IsNumber(v))) {
		if (!cJSON_IsNumber(v)) {
			snprintf(msg, cap, "expected a number");
			return -1;
		}
		double d = v->valuedouble;
		uint64_t lo = number ? r->lo : 0, hi = number ? r->hi : 0xfffffffeULL;
		/* the bounds first: a negative or huge double has no uint64_t */
		if (d < (double)lo || d > (double)hi || d != (double)(uint64_t)d) {
			snprintf(msg, cap, "must be an integer in [%llu, %llu]", (unsigned long long)lo,
				 (unsigned long long)hi);
			return -1;
		}
		char text[24];
		snprintf(text, sizeof(text), "%llu", (unsigned long long)d);
		return parse_text(c, r, text, msg, cap);
	}
	if (!cJSON_IsString(v) || !v->valuestring) {
		snprintf(msg, cap, "expected a string");
		return -1;
	}
	return parse_text(c, r, v->valuestring, msg, cap);
}

/* Row r's value in c as the reload log prints it: numbers and names as they are,
 * group names in quotes, a path not resolved yet as "-". */
static void format_value(const struct config *c, const struct row *r, char *buf, size_t cap)
{
	const void *f = cfield_of(c, r);
	const char *s = is_string(r) ? *(char *const *)f : NULL;
	char plan[GARUDA_PLAN_TEXT_MAX];
	switch (r->type) {
	case GARUDA_CFG_PATH:
		snprintf(buf, cap, "%s", s ? s : "-");
		return;
	case GARUDA_CFG_GROUP:
	case GARUDA_CFG_STRING:
		snprintf(buf, cap, "\"%s\"", s ? s : "");
		return;
	case GARUDA_CFG_LOOP:
		snprintf(buf, cap, "%s", event_loop_name(*(const enum event_loop_kind *)f));
		return;
	case GARUDA_CFG_U32:
		snprintf(buf, cap, "%u", *(const uint32_t *)f);
		return;
	case GARUDA_CFG_U64:
		snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)f);
		return;
	case GARUDA_CFG_PLAN:
		garuda_plan_format(f, plan, sizeof(plan));
		snprintf(buf, cap, "%s", plan);
		return;
	case GARUDA_CFG_LEVEL:
		snprintf(buf, cap, "%s", log_level_to_string(*(const int *)f));
		return;
	case GARUDA_CFG_WORDWAIT:
		snprintf(buf, cap, "%s", *(const bool *)f ? "auto" : "off");
		return;
	}
}

/* ---------------------------------------------------------------- the struct */

void config_free(struct config *c)
{
	free(c->config_path);
	for (size_t i = 0; i < NROWS; i++)
		if (is_string(&rows[i]))
			free(*(char **)field_of(c, &rows[i]));
	memset(c, 0, sizeof(*c));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

int config_copy(struct config *dst, const struct config *src)
{
	*dst = *src;
	dst->config_path = dup_or_null(src->config_path);
	for (size_t i = 0; i < NROWS; i++)
		if (is_string(&rows[i]))
			*(char **)field_of(dst, &rows[i]) = dup_or_null(*(char *const *)cfield_of(src, &rows[i]));
	return 0;
}

/* Row r's value from src into dst (a string copied). */
static void copy_value(struct config *dst, const struct config *src, const struct row *r)
{
	static const size_t size[] = {
		[GARUDA_CFG_LOOP] = sizeof(enum event_loop_kind), [GARUDA_CFG_U32] = sizeof(uint32_t),
		[GARUDA_CFG_U64] = sizeof(uint64_t),		   [GARUDA_CFG_PLAN] = sizeof(struct garuda_plan),
		[GARUDA_CFG_LEVEL] = sizeof(int),		   [GARUDA_CFG_WORDWAIT] = sizeof(bool),
	};
	if (is_string(r)) {
		const char *s = *(char *const *)cfield_of(src, r);
		char **d = field_of(dst, r);
		free(*d);
		*d = dup_or_null(s);
	} else {
		memcpy(field_of(dst, r), cfield_of(src, r), size[r->type]);
	}
	dst->keys_set = (dst->keys_set & ~bit(r)) | (src->keys_set & bit(r));
}

void config_keep_restart_only(struct config *next, const struct config *cur)
{
	for (size_t i = 0; i < NROWS; i++)
		if (!rows[i].reload)
			copy_value(next, cur, &rows[i]);
}

void config_plan_in_force(const struct config *c, struct garuda_plan *out)
{
	*out = c->plan;
	if (key_set(c, "spin_us"))
		out->flag.park_us = c->legacy.park_us;
	if (key_set(c, "max_sleep_us"))
		out->flag.backstop_us = c->legacy.backstop_us;
}

void config_log_legacy(const struct config *c)
{
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].legacy && (c->keys_set & bit(&rows[i])))
			log_warning("config: %s is a legacy key: it replaces the plan's %s (set %s in the "
				    "plan instead; see garudad(8))", rows[i].key, rows[i].legacy, rows[i].legacy);
}

/* ---------------------------------------------------------------- the file */

/* The object at the dotted prefix of key in obj, made on the way ("quota.uid.segments":
 * obj.quota.uid); *leaf: the last part. */
static cJSON *parent_of(cJSON *obj, const char *key, const char **leaf)
{
	const char *dot;
	while ((dot = strchr(key, '.'))) {
		char part[64];
		snprintf(part, sizeof(part), "%.*s", (int)(dot - key), key);
		cJSON *o = cJSON_GetObjectItemCaseSensitive(obj, part);
		obj = o ? o : cJSON_AddObjectToObject(obj, part);
		key = dot + 1;
	}
	*leaf = key;
	return obj;
}

void config_to_json(const struct config *c, cJSON *obj)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		if (r->legacy && !(c->keys_set & bit(r)))
			continue;
		const char *leaf;
		cJSON *o = parent_of(obj, r->key, &leaf);
		const void *f = cfield_of(c, r);
		char text[GARUDA_PLAN_TEXT_MAX];
		if (r->type == GARUDA_CFG_U32)
			cJSON_AddNumberToObject(o, leaf, *(const uint32_t *)f);
		else if (r->type == GARUDA_CFG_U64)
			cJSON_AddNumberToObject(o, leaf, (double)*(const uint64_t *)f);
		else if (is_string(r) && !*(char *const *)f)
			cJSON_AddNullToObject(o, leaf);
		else if (is_string(r))
			cJSON_AddStringToObject(o, leaf, *(char *const *)f);
		else {
			format_value(c, r, text, sizeof(text));
			cJSON_AddStringToObject(o, leaf, text);
		}
	}
}

/* Is prefix ("quota", "quota.uid") the start of some key, followed by a dot? */
static bool is_section(const char *prefix)
{
	size_t n = strlen(prefix);
	for (size_t i = 0; i < NROWS; i++)
		if (strncmp(rows[i].key, prefix, n) == 0 && rows[i].key[n] == '.')
			return true;
	return false;
}

/* The members of obj, whose keys start with prefix ("" at the top). */
static int apply_json(struct config *c, const cJSON *obj, const char *prefix, const char *path,
		      char **err)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, obj)
	{
		char key[128], msg[256];
		snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", it->string);
		for (const cJSON *p = obj->child; p != it; p = p->next)
			if (strcmp(p->string, it->string) == 0)
				return fail(err, "%s: %s: given twice (a key may appear once)", path, key);
		const struct row *r = row_named(key);
		if (r) {
			/* spelled another way ({"quota.uid.segments": 1} beside "quota": {"uid":
			 * {"segments": 2}}), a key is given twice all the same */
			if (c->keys_set & bit(r))
				return fail(err, "%s: %s: given twice (a key may appear once)", path, key);
			if (parse_json(c, r, it, msg, sizeof(msg)) < 0)
				return fail(err, "%s: %s: %s", path, key, msg);
			c->keys_set |= bit(r);
		} else if (is_section(key)) {
			if (!cJSON_IsObject(it))
				return fail(err, "%s: %s: expected an object", path, key);
			if (apply_json(c, it, key, path, err) < 0)
				return -1;
		} else {
			return fail(err, "%s: %s: unknown key (%s)", path, key,
				    strcmp(key, "quota.connection.connections") == 0
					    ? "a connection is one session: only quota.uid and quota.cgroup have connections"
					    : "garudad --list-config-keys lists them");
		}
	}
	return 0;
}

int config_load_file(struct config *c, const char *path, char **err)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return fail(err, "config file %s: %s", path, strerror(errno));
	char *buf = NULL;
	size_t cap = 0, len = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			if (cap > (1u << 20)) {
				fclose(f);
				free(buf);
				return fail(err, "config file %s: larger than 1 MiB", path);
			}
			char *nb = realloc(buf, cap);
			if (!nb) {
				fclose(f);
				free(buf);
				return fail(err, "config file %s: out of memory", path);
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	/* cJSON reads up to the first NUL: what follows one would be ignored unseen */
	const char *nul = memchr(buf, '\0', len);
	if (nul) {
		size_t off = (size_t)(nul - buf);
		free(buf);
		return fail(err, "config file %s: a NUL byte at offset %zu (a config file is JSON text)",
			    path, off);
	}
	/* and a string's \u0000 would end its C string: a plan or a path cut short */
	if (json_text_holds_nul(buf, len)) {
		free(buf);
		return fail(err, "config file %s: a string holds \\u0000 (NUL), which no value may", path);
	}
	/* a raw control character, which cJSON would take */
	size_t ctl = json_text_control_at(buf, len);
	if (ctl < len) {
		unsigned byte = (unsigned char)buf[ctl];
		free(buf);
		return fail(err, "config file %s: invalid JSON: a control character (byte 0x%02x) at "
			    "offset %zu (none may stand in a string, only tab, newline and carriage "
			    "return between values)", path, byte, ctl);
	}
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
	if (!root) {
		size_t off = end ? (size_t)(end - buf) : 0;
		free(buf);
		return fail(err, "config file %s: invalid JSON near byte %zu", path, off);
	}
	free(buf);
	/* while the file is applied, keys_set holds its keys alone (a key given twice), then
	 * what c held before as well */
	uint64_t before = c->keys_set;
	c->keys_set = 0;
	int r = cJSON_IsObject(root) ? apply_json(c, root, "", path, err)
				      : fail(err, "%s: the top level must be a JSON object", path);
	c->keys_set |= before;
	cJSON_Delete(root);
	if (r == 0)
		set_str(&c->config_path, path);
	return r;
}

/* Order, first that applies: --socket / --control-socket; --runtime-dir; the config
 * file's socket / control_socket; $GARUDA_SOCKET / $GARUDA_CONTROL_SOCKET; the
 * default runtime directory (garuda_runtime_dir()). The control socket not named by
 * any of these goes beside the client socket. */
static int config_resolve_paths(struct config *c, const char *rundir, bool socket_flag,
				bool control_flag)
{
	char buf[108];
	if (rundir) {
		snprintf(buf, sizeof(buf), "%s/" GARUDA_SOCKET_NAME, rundir);
		if (!socket_flag)
			set_str(&c->socket_path, buf);
		snprintf(buf, sizeof(buf), "%s/" GARUDA_CONTROL_SOCKET_NAME, rundir);
		if (!control_flag)
			set_str(&c->control_socket_path, buf);
	}
	static const char *const envs[2] = { "GARUDA_SOCKET", "GARUDA_CONTROL_SOCKET" };
	char **slot[2] = { &c->socket_path, &c->control_socket_path };
	for (int i = 0; i < 2; i++) {
		const char *e = getenv(envs[i]);
		if (*slot[i] || !e || !*e)
			continue;
		if (e[0] != '/' || strlen(e) >= 108) {
			fprintf(stderr, "garudad: $%s: must be an absolute path shorter than 108 bytes\n", envs[i]);
			return -1;
		}
		set_str(slot[i], e);
	}
	if (!c->socket_path) {
		if (garuda_runtime_dir(buf, sizeof(buf) - sizeof("/" GARUDA_SOCKET_NAME)) < 0) {
			fprintf(stderr, "garudad: the default runtime directory is too long; use --runtime-dir=DIR\n");
			return -1;
		}
		strcat(buf, "/" GARUDA_SOCKET_NAME);
		set_str(&c->socket_path, buf);
	}
	if (!c->control_socket_path) {
		if (garuda_path_beside(c->socket_path, GARUDA_CONTROL_SOCKET_NAME, buf, sizeof(buf)) < 0) {
			fprintf(stderr, "garudad: the control socket beside %s would be too long; use --control-socket=PATH\n",
				c->socket_path);
			return -1;
		}
		set_str(&c->control_socket_path, buf);
	}
	return 0;
}

/* CONFIG_DEFAULT_FILE, or $GARUDAD_DEFAULT_CONFIG in its place (empty: NULL, none). */
static const char *default_path(void)
{
	const char *path = getenv("GARUDAD_DEFAULT_CONFIG");
	return !path ? CONFIG_DEFAULT_FILE : *path ? path : NULL;
}

/* default_path() when the file exists (a path that cannot be looked at counts as
 * there: reading it says why); NULL: none. */
static const char *default_file(void)
{
	const char *path = default_path();
	struct stat st;
	if (!path || (stat(path, &st) < 0 && (errno == ENOENT || errno == ENOTDIR)))
		return NULL;
	return path;
}

/* No --config: the default file when it exists. Absent is no error; present and bad
 * is, as for --config. */
static int load_default_file(struct config *c)
{
	const char *path = default_file();
	char *err = NULL;
	if (!path || config_load_file(c, path, &err) == 0)
		return 0;
	const char *why = err ? err : "bad config";
	fprintf(stderr, "garudad: %s%s%s (the default configuration file; --config=FILE reads "
		"another, --no-config none)\n", strstr(why, path) ? "" : path,
		strstr(why, path) ? "" : ": ", why);
	free(err);
	return -1;
}

const char *config_default_path(const struct config *c)
{
	return c->file_chosen ? NULL : default_path();
}

bool config_reloadable(const struct config *c)
{
	return c->config_path || (!c->file_chosen && default_file());
}

/* ---------------------------------------------------------------- the flags */

#define HELP_COLUMN 29

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: garudad [OPTION]...\n"
		"Per-host daemon that turns GPU completion words into readiness (eventfd,\n"
		"message, doorbell) over a Unix socket.\n\n"
		"  -c, --config=FILE          JSON configuration file (default " CONFIG_DEFAULT_FILE "\n"
		"                             when it exists; --config= or --no-config: none)\n"
		"      --runtime-dir=DIR      directory of both sockets (default " GARUDA_SOCKET_DIR "\n"
		"                             as root, else $XDG_RUNTIME_DIR/garuda)\n"
		"      --check-config         read the configuration, report, exit 0 (valid) or 2\n"
		"      --list-config-keys     print every key the config file accepts: reload or\n"
		"                             restart, its flag, what it is (legacy ones marked)\n"
		"  -h, --help                 show this help\n"
		"      --version              show the version\n\n"
		"Configuration keys that have a flag (the flag wins over the file; garudad(8)):\n");
	for (size_t i = 0; i < NROWS; i++) {
		if (!rows[i].flag)
			continue;
		int n = fprintf(out, "      --%s=%s", rows[i].flag, metavar[rows[i].type]);
		fprintf(out, "%*s%s%s\n", n < HELP_COLUMN ? HELP_COLUMN - n : 1, "", rows[i].help,
			rows[i].legacy ? " (legacy)" : "");
	}
	fprintf(out,
		"Default plan: " CONFIG_DEFAULT_PLAN "\n\n"
		"Environment: GARUDA_SOCKET, GARUDA_CONTROL_SOCKET (below the flags and the\n"
		"config file); GARUDAD_DEFAULT_CONFIG replaces " CONFIG_DEFAULT_FILE " (empty:\n"
		"none); GARUDA_SYSFS_ROOT replaces /sys for NUMA discovery (tests).\n"
		"See garudad(8).\n"
		"Socket activation: fds named \"client\" and \"control\".\n");
}

/* Every key, one a line: the key (the line's first word), reload or restart, its flag
 * (- for none), and "legacy" for a legacy key; then, indented, what it is. At most 72
 * columns: docs/garudad.8 holds a copy (tests/control checks it). */
static void list_keys(FILE *out)
{
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		char flag[40] = "-";
		if (r->flag)
			snprintf(flag, sizeof(flag), "--%s", r->flag);
		fprintf(out, "%-30s %-7s %s%s\n    %s\n", r->key, r->reload ? "reload" : "restart", flag,
			r->legacy ? " legacy" : "", r->help);
	}
}

/* garudad's options: these, then a key's flag per row that has one (index KEY_OPT +
 * its row); config_from_args() reads them in two passes (--config first) */
enum { O_VERSION = 256, O_RUNDIR, O_CHECK, O_KEYS, O_NOCONFIG, KEY_OPT = 512 };
static const struct option fixed_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, O_VERSION },
	{ "runtime-dir", required_argument, NULL, O_RUNDIR },
	{ "check-config", no_argument, NULL, O_CHECK },
	{ "list-config-keys", no_argument, NULL, O_KEYS },
	{ "no-config", no_argument, NULL, O_NOCONFIG },
};
#define NFIXED (sizeof(fixed_opts) / sizeof(fixed_opts[0]))

/* All options into all[NOPTS]: the fixed ones, then one per row with a flag. */
#define NOPTS (NFIXED + NROWS + 1)
static void options(struct option all[NOPTS])
{
	size_t n = 0;
	for (; n < NFIXED; n++)
		all[n] = fixed_opts[n];
	for (size_t i = 0; i < NROWS; i++)
		if (rows[i].flag)
			all[n++] = (struct option){ rows[i].flag, required_argument, NULL, KEY_OPT + (int)i };
	all[n] = (struct option){ 0 };
}

static int flags_and_paths(struct config *c);

/* What the option that chose file said: the file, --config= ("") or --no-config (NULL). */
static const char *file_choice(const char *file)
{
	return !file ? "--no-config" : *file ? file : "--config=";
}

int config_from_args(struct config *c, int argc, char **argv)
{
	c->argc = argc;
	c->argv = argv;
	/* pass 1: --config and --help, so the file is applied before the other flags */
	int o;
	bool chosen = false; /* --config (an empty one too) or --no-config */
	const char *chosen_file = NULL; /* --config's FILE ("" for --config=); NULL: --no-config */
	struct option opts[NOPTS];
	options(opts);
	optind = 1;
	opterr = 1;
	while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (o) {
		case O_NOCONFIG:
		case 'c': {
			const char *file = o == 'c' ? optarg : NULL;
			/* one file: a second would be read over the first at start, while a
			 * reload reads one file only */
			if (chosen) {
				fprintf(stderr, "garudad: --config or --no-config given twice (%s, then "
					"%s): garudad reads one config file\n",
					file_choice(chosen_file), file_choice(file));
				return -1;
			}
			chosen = c->file_chosen = true;
			chosen_file = file;
			if (!file || !*file)
				break; /* --no-config, --config= : no file at all */
			char *err = NULL;
			if (config_load_file(c, optarg, &err)) {
				fprintf(stderr, "garudad: %s\n", err ? err : "bad config");
				free(err);
				return -1;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 1;
		case O_VERSION:
			printf("garudad " GARUDA_VERSION "\n");
			return 1;
		case O_CHECK:
			c->check_only = true;
			break;
		case O_KEYS:
			list_keys(stdout);
			return 1;
		case '?':
			fprintf(stderr, "Try 'garudad --help' for more information.\n");
			return -1;
		default:
			break;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "garudad: unexpected argument \"%s\"\n", argv[optind]);
		return -1;
	}
	if (!chosen && load_default_file(c) < 0)
		return -1;
	return flags_and_paths(c);
}

/* Pass 2 of c->argv: every flag but --config, over what the defaults and the file
 * gave; then the socket paths. At start, and again by every reload. 0, or -1 after
 * printing an error. */
static int flags_and_paths(struct config *c)
{
	int o;
	optind = 1;
	opterr = 0;
	const char *rundir = NULL;
	bool socket_flag = false, control_flag = false;
	struct option opts[NOPTS];
	options(opts);
	while ((o = getopt_long(c->argc, c->argv, "c:h", opts, NULL)) != -1) {
		if (o == O_RUNDIR) {
			if (optarg[0] != '/' || strlen(optarg) + sizeof("/" GARUDA_CONTROL_SOCKET_NAME) > 108) {
				fprintf(stderr, "garudad: --runtime-dir: must be an absolute path shorter than %zu bytes\n",
					108 - sizeof("/" GARUDA_CONTROL_SOCKET_NAME));
				return -1;
			}
			rundir = optarg;
			continue;
		}
		if (o < KEY_OPT || o >= KEY_OPT + (int)NROWS)
			continue;
		const struct row *r = &rows[o - KEY_OPT];
		char msg[256];
		if (parse_text(c, r, optarg, msg, sizeof(msg)) < 0) {
			fprintf(stderr, "garudad: --%s: %s, got \"%s\"\n", r->flag, msg, optarg);
			return -1;
		}
		c->keys_set |= bit(r);
		socket_flag |= r->off == offsetof(struct config, socket_path);
		control_flag |= r->off == offsetof(struct config, control_socket_path);
	}
	return config_resolve_paths(c, rundir, socket_flag, control_flag);
}

int config_reload(struct config *next, const struct config *cur, char **err)
{
	*err = NULL;
	config_defaults(next);
	next->argc = cur->argc;
	next->argv = cur->argv;
	next->file_chosen = cur->file_chosen;
	/* the file garudad was told to read; told nothing, the default file as a restart
	 * would find it now (absent: none, and every key its default) */
	const char *path = cur->file_chosen ? cur->config_path : default_file();
	if (cur->file_chosen && !path) {
		config_free(next);
		return fail(err, "no config file");
	}
	if (path && config_load_file(next, path, err) < 0) {
		config_free(next);
		return -1;
	}
	/* the flags were valid at start and the environment is the same: this fails only
	 * where start would have failed (its message went to stderr) */
	if (flags_and_paths(next) < 0) {
		config_free(next);
		return fail(err, "the command-line flags no longer apply (see the message above)");
	}
	return 0;
}

unsigned config_log_changes(const struct config *old, const struct config *new)
{
	unsigned changed = 0;
	for (size_t i = 0; i < NROWS; i++) {
		const struct row *r = &rows[i];
		char a[GARUDA_PLAN_TEXT_MAX + 2], b[GARUDA_PLAN_TEXT_MAX + 2];
		char unset[64];
		snprintf(unset, sizeof(unset), "unset (the plan's %s)", r->legacy ? r->legacy : "");
		bool seta = !r->legacy || (old->keys_set & bit(r)), setb = !r->legacy || (new->keys_set & bit(r));
		format_value(old, r, a, sizeof(a));
		format_value(new, r, b, sizeof(b));
		if (seta == setb && strcmp(a, b) == 0)
			continue;
		changed++;
		log_notice("reload: %s: %s -> %s%s", r->key, seta ? a : unset, setb ? b : unset,
			   r->reload ? "" : " (on the next restart; kept until then)");
	}
	return changed;
}
