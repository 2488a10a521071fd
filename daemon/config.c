/* config.c — see config.h. */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "errcode.h"

#include "log.h"
#include "paths.h"
#include "wordwait.h"


static const struct quota_limits default_quota_connection = {
	.segments = 16, .lines = 4096, .bindings = 1024, .armed = 65536, .outbox_bytes = 262144, .points = 64,
	.connections = 1,
};
static const struct quota_limits default_quota_uid = {
	.segments = 256, .lines = 65536, .bindings = 16384, .armed = 1048576,
	.outbox_bytes = 4194304, .connections = 4096, .points = 4096,
};
/* a cgroup (pod, container, Slurm job, systemd unit) may hold what one uid may */
static const struct quota_limits default_quota_cgroup = {
	.segments = 256, .lines = 65536, .bindings = 16384, .armed = 1048576,
	.outbox_bytes = 4194304, .connections = 4096, .points = 4096,
};

/* Every key the config file accepts, quotas as "quota.SCOPE.NAME": the parser refuses
 * any other (key_known()), garudad --list-config-keys prints this list, and
 * tests/control/test_firstrun.c checks systemd/garudad.json.example against it. A new
 * key goes here and into apply_json()/load_quota(). */
static const char *const config_keys[] = {
	"socket", "control_socket", "socket_group", "control_group", "event_loop", "scanners",
	"plan", "log_level", "wordwait",
	"quota.connection.segments", "quota.connection.lines", "quota.connection.bindings",
	"quota.connection.armed", "quota.connection.outbox_bytes", "quota.connection.points",
	"quota.uid.segments", "quota.uid.lines", "quota.uid.bindings", "quota.uid.armed",
	"quota.uid.outbox_bytes", "quota.uid.connections", "quota.uid.points",
	"quota.cgroup.segments", "quota.cgroup.lines", "quota.cgroup.bindings", "quota.cgroup.armed",
	"quota.cgroup.outbox_bytes", "quota.cgroup.connections", "quota.cgroup.points",
};

/* Keys kept from before wait plans: when set they override the plan's park_us and
 * backstop_us (the sleep ladder's spin window and longest sleep). Accepted, documented
 * in garudad(8), listed by --list-config-keys marked legacy ("KEY (legacy: ...)": the
 * key is the line's first word), but not in the example config: setting them there
 * would silently override the plan a user edits. */
static const char *const config_override_keys[] = { "spin_us", "max_sleep_us" };
static const char *const config_override_what[] = { "park_us", "backstop_us" };
_Static_assert(sizeof(config_override_keys) == sizeof(config_override_what), "one per key");

static bool key_known(const char *path)
{
	for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++)
		if (strcmp(path, config_keys[i]) == 0)
			return true;
	for (size_t i = 0; i < sizeof(config_override_keys) / sizeof(config_override_keys[0]); i++)
		if (strcmp(path, config_override_keys[i]) == 0)
			return true;
	return false;
}

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
	c->event_loop = EVENT_LOOP_AUTO;
	c->scanners = 0;
	garuda_plan_parse(CONFIG_DEFAULT_PLAN, &c->plan, NULL, 0);
	config_settle(c);
	c->log_level = LOG_INFO;
	c->wordwait = true;
	c->quota_connection = default_quota_connection;
	c->quota_uid = default_quota_uid;
	c->quota_cgroup = default_quota_cgroup;
}

void config_settle(struct config *c)
{
	if (!c->spin_us_set)
		c->spin_us = c->plan.kind == GARUDA_PLAN_FLAG ? (unsigned)c->plan.flag.park_us : 0;
	if (!c->max_sleep_us_set)
		c->max_sleep_us = c->plan.kind == GARUDA_PLAN_FLAG ? (unsigned)c->plan.flag.backstop_us : 0;
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

void config_free(struct config *c)
{
	free(c->config_path);
	free(c->socket_path);
	free(c->control_socket_path);
	free(c->socket_group);
	free(c->control_group);
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
	dst->socket_path = dup_or_null(src->socket_path);
	dst->control_socket_path = dup_or_null(src->control_socket_path);
	dst->socket_group = dup_or_null(src->socket_group);
	dst->control_group = dup_or_null(src->control_group);
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

/* An integer in [lo, hi]; name is the key path for messages. */
static int json_uint(const cJSON *v, const char *name, uint64_t lo, uint64_t hi, uint64_t *out,
		     char **err)
{
	if (!cJSON_IsNumber(v))
		return fail(err, "config key \"%s\": expected a number", name);
	double d = v->valuedouble;
	if (d != (double)(uint64_t)d || d < (double)lo || d > (double)hi)
		return fail(err, "config key \"%s\": must be an integer in [%llu, %llu]", name,
			    (unsigned long long)lo, (unsigned long long)hi);
	*out = (uint64_t)d;
	return 0;
}

static int json_string(const cJSON *v, const char *name, const char **out, char **err)
{
	if (!cJSON_IsString(v) || !v->valuestring)
		return fail(err, "config key \"%s\": expected a string", name);
	*out = v->valuestring;
	return 0;
}

static int load_quota(const cJSON *obj, const char *scope, struct quota_limits *q, char **err)
{
	if (!cJSON_IsObject(obj))
		return fail(err, "config key \"quota.%s\": expected an object", scope);
	const cJSON *it;
	cJSON_ArrayForEach(it, obj)
	{
		char name[96];
		uint64_t v;
		snprintf(name, sizeof(name), "quota.%s.%s", scope, it->string);
		if (strcmp(it->string, "connections") == 0 && strcmp(scope, "connection") == 0)
			return fail(err, "config key \"%s\": only quota.uid and quota.cgroup have connections", name);
		if (!key_known(name))
			return fail(err, "config key \"%s\": unknown key", name);
		if (strcmp(it->string, "outbox_bytes") == 0) {
			if (json_uint(it, name, 512, UINT32_MAX, &v, err))
				return -1;
			q->outbox_bytes = v;
			continue;
		}
		if (strcmp(it->string, "connections") == 0) {
			if (json_uint(it, name, 1, UINT32_MAX, &v, err))
				return -1;
			q->connections = (uint32_t)v;
			continue;
		}
		uint32_t *field = strcmp(it->string, "segments") == 0   ? &q->segments
				  : strcmp(it->string, "lines") == 0    ? &q->lines
				  : strcmp(it->string, "bindings") == 0 ? &q->bindings
				  : strcmp(it->string, "armed") == 0    ? &q->armed
				  : strcmp(it->string, "points") == 0   ? &q->points
									: NULL;
		if (!field)
			return fail(err, "config key \"%s\": unknown key", name);
		if (json_uint(it, name, 0, UINT32_MAX, &v, err))
			return -1;
		*field = (uint32_t)v;
	}
	return 0;
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

static int apply_json(struct config *c, const cJSON *root, char **err)
{
	if (!cJSON_IsObject(root))
		return fail(err, "config: top level must be a JSON object");
	const cJSON *it;
	cJSON_ArrayForEach(it, root)
	{
		const char *k = it->string, *s = NULL;
		uint64_t v;
		if (strcmp(k, "quota") != 0 && !key_known(k))
			return fail(err, "config key \"%s\": unknown key (garudad --list-config-keys lists them)", k);
		if (strcmp(k, "socket_group") == 0 && cJSON_IsNumber(it)) { /* a gid: 2046 */
			char gid[16];
			if (json_uint(it, k, 0, 0xfffffffeULL, &v, err))
				return -1;
			snprintf(gid, sizeof(gid), "%llu", (unsigned long long)v);
			set_str(&c->socket_group, gid);
		} else if (strcmp(k, "socket") == 0 || strcmp(k, "control_socket") == 0 ||
		    strcmp(k, "socket_group") == 0 || strcmp(k, "control_group") == 0) {
			if (json_string(it, k, &s, err))
				return -1;
			unsigned gid;
			if (strcmp(k, "socket_group") == 0 && s[0] >= '0' && s[0] <= '9' &&
			    strspn(s, "0123456789") == strlen(s) && !config_numeric_gid(s, &gid))
				return fail(err, "config key \"socket_group\": a gid must be below 4294967295");
			bool is_path = strcmp(k, "socket") == 0 || strcmp(k, "control_socket") == 0;
			if (is_path) {
				if (s[0] != '/' || strlen(s) >= 108)
					return fail(err, "config key \"%s\": must be an absolute path shorter than 108 bytes", k);
			}
			set_str(strcmp(k, "socket") == 0	   ? &c->socket_path
				: strcmp(k, "control_socket") == 0 ? &c->control_socket_path
				: strcmp(k, "socket_group") == 0   ? &c->socket_group
								   : &c->control_group,
				s);
		} else if (strcmp(k, "event_loop") == 0) {
			if (json_string(it, k, &s, err))
				return -1;
			if (event_loop_parse(s, &c->event_loop))
				return fail(err, "config key \"event_loop\": must be auto, io_uring or epoll");
		} else if (strcmp(k, "scanners") == 0) {
			if (json_uint(it, k, 0, 64, &v, err))
				return -1;
			c->scanners = (unsigned)v;
		} else if (strcmp(k, "spin_us") == 0) {
			if (json_uint(it, k, 0, 1000000, &v, err))
				return -1;
			c->spin_us = (unsigned)v;
			c->spin_us_set = true;
		} else if (strcmp(k, "max_sleep_us") == 0) {
			if (json_uint(it, k, 1, 1000000, &v, err))
				return -1;
			c->max_sleep_us = (unsigned)v;
			c->max_sleep_us_set = true;
		} else if (strcmp(k, "plan") == 0) {
			char msg[GARUDA_PLAN_MSG_MAX];
			if (json_string(it, k, &s, err))
				return -1;
			if (daemon_plan_parse(s, &c->plan, msg, sizeof(msg)))
				return fail(err, "config key \"plan\": %s (%s)", msg,
					    garuda_errcode_name(GARUDA_E_BAD_PLAN));
		} else if (strcmp(k, "log_level") == 0) {
			if (json_string(it, k, &s, err))
				return -1;
			int l = log_level_from_string(s);
			if (l < 0)
				return fail(err, "config key \"log_level\": must be err, warning, notice, info or debug");
			c->log_level = l;
		} else if (strcmp(k, "wordwait") == 0) {
			if (json_string(it, k, &s, err))
				return -1;
			if (wordwait_mode_parse(s, &c->wordwait))
				return fail(err, "config key \"wordwait\": must be auto or off");
		} else if (strcmp(k, "quota") == 0) {
			if (!cJSON_IsObject(it))
				return fail(err, "config key \"quota\": expected an object");
			const cJSON *q;
			cJSON_ArrayForEach(q, it)
			{
				if (strcmp(q->string, "connection") == 0) {
					if (load_quota(q, "connection", &c->quota_connection, err))
						return -1;
				} else if (strcmp(q->string, "uid") == 0) {
					if (load_quota(q, "uid", &c->quota_uid, err))
						return -1;
				} else if (strcmp(q->string, "cgroup") == 0) {
					if (load_quota(q, "cgroup", &c->quota_cgroup, err))
						return -1;
				} else {
					return fail(err, "config key \"quota.%s\": unknown key (connection, uid or cgroup)", q->string);
				}
			}
		} else {
			return fail(err, "config key \"%s\": unknown key", k);
		}
	}
	config_settle(c);
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
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(buf, &end, 1);
	if (!root) {
		size_t off = end ? (size_t)(end - buf) : 0;
		free(buf);
		return fail(err, "config file %s: invalid JSON near byte %zu", path, off);
	}
	free(buf);
	int r = apply_json(c, root, err);
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
		"      --socket=PATH          client socket (default DIR/" GARUDA_SOCKET_NAME ")\n"
		"      --control-socket=PATH  control socket (default " GARUDA_CONTROL_SOCKET_NAME " beside the\n"
		"                             client socket)\n"
		"      --check-config         read the configuration, report, exit 0 (valid) or 2\n"
		"      --list-config-keys     print every key the config file accepts (legacy ones\n"
		"                             marked so)\n"
		"      --event-loop=KIND      auto, io_uring or epoll (default auto)\n"
		"      --scanners=N           scanner threads (0 = one per NUMA node)\n"
		"      --plan=TEXT            the scanners' wait plan (docs/plans.md; default\n"
		"                             " CONFIG_DEFAULT_PLAN ")\n"
		"      --spin-us=N            scanner spin budget, microseconds (overrides park_us)\n"
		"      --wordwait=MODE        auto (default): a scanner's spin step parks in a hardware\n"
		"                             word wait (umwait, mwaitx, wfe) where it can; off\n"
		"      --log-level=LEVEL      err, warning, notice, info or debug\n"
		"  -h, --help                 show this help\n"
		"      --version              show the version\n\n"
		"Environment: GARUDA_SOCKET, GARUDA_CONTROL_SOCKET (below the flags and the\n"
		"config file); GARUDAD_DEFAULT_CONFIG replaces " CONFIG_DEFAULT_FILE " (empty:\n"
		"none); GARUDA_SYSFS_ROOT replaces /sys for NUMA discovery (tests).\n"
		"See garudad(8).\n"
		"Socket activation: fds named \"client\" and \"control\".\n");
}

static int parse_uint_flag(const char *name, const char *v, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || !*v || *end || x < lo || x > hi) {
		fprintf(stderr, "garudad: --%s: must be an integer in [%u, %u], got \"%s\"\n", name, lo,
			hi, v);
		return -1;
	}
	*out = (unsigned)x;
	return 0;
}

/* No --config: CONFIG_DEFAULT_FILE (or $GARUDAD_DEFAULT_CONFIG; empty: none) when it
 * exists. Absent is no error; present and bad is, as for --config. */
static int load_default_file(struct config *c)
{
	const char *path = getenv("GARUDAD_DEFAULT_CONFIG");
	if (!path)
		path = CONFIG_DEFAULT_FILE;
	struct stat st;
	if (!*path || (stat(path, &st) < 0 && (errno == ENOENT || errno == ENOTDIR)))
		return 0;
	char *err = NULL;
	if (config_load_file(c, path, &err) == 0)
		return 0;
	const char *why = err ? err : "bad config";
	fprintf(stderr, "garudad: %s%s%s (the default configuration file; --config=FILE reads "
		"another, --no-config none)\n", strstr(why, path) ? "" : path,
		strstr(why, path) ? "" : ": ", why);
	free(err);
	return -1;
}

enum { O_SOCKET = 256, O_CONTROL, O_LOOP, O_SCANNERS, O_SPIN, O_LEVEL, O_VERSION, O_RUNDIR,
       O_CHECK, O_KEYS, O_PLAN, O_NOCONFIG, O_WORDWAIT };
/* garudad's options; config_from_args() reads them in two passes (--config first) */
static const struct option config_opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "socket", required_argument, NULL, O_SOCKET },
	{ "control-socket", required_argument, NULL, O_CONTROL },
	{ "event-loop", required_argument, NULL, O_LOOP },
	{ "scanners", required_argument, NULL, O_SCANNERS },
	{ "spin-us", required_argument, NULL, O_SPIN },
	{ "plan", required_argument, NULL, O_PLAN },
	{ "log-level", required_argument, NULL, O_LEVEL },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, O_VERSION },
	{ "runtime-dir", required_argument, NULL, O_RUNDIR },
	{ "check-config", no_argument, NULL, O_CHECK },
	{ "list-config-keys", no_argument, NULL, O_KEYS },
	{ "no-config", no_argument, NULL, O_NOCONFIG },
	{ "wordwait", required_argument, NULL, O_WORDWAIT },
	{ 0 },
};

static int flags_and_paths(struct config *c);

int config_from_args(struct config *c, int argc, char **argv)
{
	c->argc = argc;
	c->argv = argv;
	/* pass 1: --config and --help, so the file is applied before the other flags */
	int o;
	bool config_chosen = false; /* --config (an empty one too) or --no-config */
	optind = 1;
	opterr = 1;
	while ((o = getopt_long(argc, argv, "c:h", config_opts, NULL)) != -1) {
		switch (o) {
		case O_NOCONFIG:
			config_chosen = true;
			break;
		case 'c': {
			config_chosen = true;
			if (!*optarg)
				break; /* --config= : no file at all */
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
			for (size_t i = 0; i < sizeof(config_keys) / sizeof(config_keys[0]); i++)
				printf("%s\n", config_keys[i]);
			for (size_t i = 0; i < sizeof(config_override_keys) / sizeof(config_override_keys[0]); i++)
				printf("%s (legacy: when set, overrides the plan's %s)\n", config_override_keys[i],
				       config_override_what[i]);
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
	if (!config_chosen && load_default_file(c) < 0)
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
	while ((o = getopt_long(c->argc, c->argv, "c:h", config_opts, NULL)) != -1) {
		switch (o) {
		case O_SOCKET:
		case O_CONTROL:
			if (optarg[0] != '/' || strlen(optarg) >= 108) {
				fprintf(stderr, "garudad: --%s: must be an absolute path shorter than 108 bytes\n",
					o == O_SOCKET ? "socket" : "control-socket");
				return -1;
			}
			set_str(o == O_SOCKET ? &c->socket_path : &c->control_socket_path, optarg);
			*(o == O_SOCKET ? &socket_flag : &control_flag) = true;
			break;
		case O_RUNDIR:
			if (optarg[0] != '/' || strlen(optarg) + sizeof("/" GARUDA_CONTROL_SOCKET_NAME) > 108) {
				fprintf(stderr, "garudad: --runtime-dir: must be an absolute path shorter than %zu bytes\n",
					108 - sizeof("/" GARUDA_CONTROL_SOCKET_NAME));
				return -1;
			}
			rundir = optarg;
			break;
		case O_LOOP:
			if (event_loop_parse(optarg, &c->event_loop)) {
				fprintf(stderr, "garudad: --event-loop: must be auto, io_uring or epoll, got \"%s\"\n", optarg);
				return -1;
			}
			break;
		case O_SCANNERS:
			if (parse_uint_flag("scanners", optarg, 0, 64, &c->scanners))
				return -1;
			break;
		case O_SPIN:
			if (parse_uint_flag("spin-us", optarg, 0, 1000000, &c->spin_us))
				return -1;
			c->spin_us_set = true;
			break;
		case O_PLAN: {
			char msg[GARUDA_PLAN_MSG_MAX];
			if (daemon_plan_parse(optarg, &c->plan, msg, sizeof(msg))) {
				fprintf(stderr, "garudad: --plan: %s (%s)\n", msg,
					garuda_errcode_name(GARUDA_E_BAD_PLAN));
				return -1;
			}
			break;
		}
		case O_WORDWAIT:
			if (wordwait_mode_parse(optarg, &c->wordwait)) {
				fprintf(stderr, "garudad: --wordwait: must be auto or off, got \"%s\"\n", optarg);
				return -1;
			}
			break;
		case O_LEVEL: {
			int l = log_level_from_string(optarg);
			if (l < 0) {
				fprintf(stderr, "garudad: --log-level: must be err, warning, notice, info or debug, got \"%s\"\n", optarg);
				return -1;
			}
			c->log_level = l;
			break;
		}
		default:
			break;
		}
	}
	config_settle(c);
	return config_resolve_paths(c, rundir, socket_flag, control_flag);
}

int config_reload(struct config *next, const struct config *cur, char **err)
{
	*err = NULL;
	config_defaults(next);
	next->argc = cur->argc;
	next->argv = cur->argv;
	if (!cur->config_path) {
		config_free(next);
		return fail(err, "no config file");
	}
	if (config_load_file(next, cur->config_path, err) < 0) {
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

/* One key's value as the log shows it: numbers, names, strings in quotes. */
struct config_item {
	const char *key;
	bool restart_only;
	char value[GARUDA_PLAN_TEXT_MAX + 2];
};

#define CONFIG_ITEMS_MAX 40

static void item(struct config_item *out, size_t *n, const char *key, bool restart_only, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void item(struct config_item *out, size_t *n, const char *key, bool restart_only, const char *fmt, ...)
{
	if (*n >= CONFIG_ITEMS_MAX)
		return;
	struct config_item *it = &out[(*n)++];
	it->key = key;
	it->restart_only = restart_only;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(it->value, sizeof(it->value), fmt, ap);
	va_end(ap);
}

static void quota_items(struct config_item *out, size_t *n, const struct quota_limits *q,
			const char *const keys[7], bool connections)
{
	item(out, n, keys[0], false, "%u", q->segments);
	item(out, n, keys[1], false, "%u", q->lines);
	item(out, n, keys[2], false, "%u", q->bindings);
	item(out, n, keys[3], false, "%u", q->armed);
	item(out, n, keys[4], false, "%llu", (unsigned long long)q->outbox_bytes);
	item(out, n, keys[5], false, "%u", q->points);
	if (connections)
		item(out, n, keys[6], false, "%u", q->connections);
}

/* Every key of c as the config file names it, in one fixed order. */
static size_t config_items(const struct config *c, struct config_item *out)
{
	static const char *const qc[7] = { "quota.connection.segments", "quota.connection.lines",
					   "quota.connection.bindings", "quota.connection.armed",
					   "quota.connection.outbox_bytes", "quota.connection.points", NULL };
	static const char *const qu[7] = { "quota.uid.segments", "quota.uid.lines", "quota.uid.bindings",
					   "quota.uid.armed", "quota.uid.outbox_bytes", "quota.uid.points",
					   "quota.uid.connections" };
	static const char *const qg[7] = { "quota.cgroup.segments", "quota.cgroup.lines",
					   "quota.cgroup.bindings", "quota.cgroup.armed",
					   "quota.cgroup.outbox_bytes", "quota.cgroup.points",
					   "quota.cgroup.connections" };
	size_t n = 0;
	char plan[GARUDA_PLAN_TEXT_MAX];
	garuda_plan_format(&c->plan, plan, sizeof(plan));
	item(out, &n, "socket", true, "%s", c->socket_path ? c->socket_path : "-");
	item(out, &n, "control_socket", true, "%s", c->control_socket_path ? c->control_socket_path : "-");
	item(out, &n, "socket_group", true, "\"%s\"", c->socket_group ? c->socket_group : "");
	item(out, &n, "control_group", false, "\"%s\"", c->control_group ? c->control_group : "");
	item(out, &n, "event_loop", true, "%s", event_loop_name(c->event_loop));
	item(out, &n, "scanners", true, "%u", c->scanners);
	item(out, &n, "plan", false, "%s", plan);
	item(out, &n, "spin_us", false, "%u", c->spin_us);
	item(out, &n, "max_sleep_us", false, "%u", c->max_sleep_us);
	item(out, &n, "log_level", false, "%s", log_level_to_string(c->log_level));
	item(out, &n, "wordwait", false, "%s", c->wordwait ? "auto" : "off");
	quota_items(out, &n, &c->quota_connection, qc, false);
	quota_items(out, &n, &c->quota_uid, qu, true);
	quota_items(out, &n, &c->quota_cgroup, qg, true);
	return n;
}

unsigned config_log_changes(const struct config *old, const struct config *new)
{
	struct config_item a[CONFIG_ITEMS_MAX], b[CONFIG_ITEMS_MAX];
	size_t na = config_items(old, a), nb = config_items(new, b);
	unsigned changed = 0;
	for (size_t i = 0; i < na && i < nb; i++) {
		if (strcmp(a[i].value, b[i].value) == 0)
			continue;
		changed++;
		log_notice("reload: %s: %s -> %s%s", a[i].key, a[i].value, b[i].value,
			   a[i].restart_only ? " (on the next restart; kept until then)" : "");
	}
	return changed;
}

void config_keep_restart_only(struct config *next, const struct config *cur)
{
	set_str(&next->socket_path, cur->socket_path);
	set_str(&next->control_socket_path, cur->control_socket_path);
	set_str(&next->socket_group, cur->socket_group ? cur->socket_group : "");
	next->event_loop = cur->event_loop;
	next->scanners = cur->scanners;
}
