/* config.h — garudad's configuration: defaults, one JSON file (cJSON; a second
 * --config is refused), then command-line flags on top. Every key is checked for type
 * and range, and may appear once; a bad value gives an error that names the key and
 * the reason (a NUL byte in the file: its offset). Reload (SIGHUP, garctl reload)
 * builds a fresh struct from the defaults, the file and the flags, so a bad file leaves
 * the running configuration untouched and a key removed from the file returns to its
 * default; started with neither --config nor --no-config, it looks for the default
 * file again, as a restart would. The keys are rows of one table
 * (proto/config_keys.h): this module walks it for the loader, the flags, --help,
 * --list-config-keys, the reload log and the control plane's reply. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

struct quota_limits {
	uint32_t segments;
	uint32_t lines;
	uint32_t bindings;
	uint32_t armed;
	uint64_t outbox_bytes;
	uint32_t connections; /* uid, cgroup scopes: sessions at once (connection scope: always 1) */
	uint32_t points;      /* deadline-estimator points (daemon/points.h) */
};

enum event_loop_kind { EVENT_LOOP_AUTO, EVENT_LOOP_URING, EVENT_LOOP_EPOLL };

struct config {
	char *config_path; /* the file read, or NULL */
	/* --config or --no-config was given: the file (or none) is what it says; else a
	 * reload looks for the default file again, as a restart would */
	bool file_chosen;
	char *socket_path;
	char *control_socket_path;
	char *socket_group;  /* group of the client socket, a name or a decimal gid ("" = leave) */
	char *control_group; /* group admitted to the control socket ("" = root only) */
	char *control_read_group; /* group admitted to its read-only requests ("" = none) */
	enum event_loop_kind event_loop;
	unsigned scanners; /* 0 = one per NUMA node */
	/* The scanners' wait plan (docs/plans.md, "In garudad"); plan key / --plan. */
	struct garuda_plan plan;
	/* The legacy keys spin_us and max_sleep_us (and --spin-us): when set they replace
	 * the plan's park_us and backstop_us, without the plan's bounds
	 * (config_plan_in_force()). */
	struct garuda_plan_flag legacy;
	int log_level;
	/* The scanners' spin step idles in a hardware word wait where the CPU has one
	 * (util/wordwait.h) and every armed descriptor is on one cache line: true (key
	 * wordwait "auto", the default) or false ("off"); reloadable. */
	bool wordwait;
	struct quota_limits quota_connection;
	struct quota_limits quota_uid;
	struct quota_limits quota_cgroup; /* per peer cgroup v2 path (quota.h) */
	struct quota_limits quota_daemon; /* all clients together (quota.h) */
	bool check_only; /* --check-config: parse, report, exit */
	uint64_t keys_set; /* bit i: row i of GARUDA_CONFIG_KEYS was given (file or flag) */
	/* The command line garudad started with (main's argv, alive as long as the
	 * process): a reload applies its flags again, over the defaults and the file. */
	int argc;
	char **argv;
};

/* The configuration file read when no --config (and no --no-config) is given, only
 * when it exists; $GARUDAD_DEFAULT_CONFIG replaces it (empty: none; tests use it). */
#define CONFIG_DEFAULT_FILE "/etc/garuda/garudad.json"

/* garudad's default plan: the best policy measured (tests/bench "plans" section). */
#define CONFIG_DEFAULT_PLAN GARUDA_PLAN_GARUDAD_DEFAULT

/* Fill defaults. */
void config_defaults(struct config *c);

/* Parse argv (flags and --config); reads the file first, then applies flags.
 * Returns 0, 1 when --help/--version was printed (exit 0), or -1 after printing an
 * error (exit 2). */
int config_from_args(struct config *c, int argc, char **argv);

/* Read a JSON config file into c (on top of what c holds). On error, *err gets a
 * malloc'ed message "PATH: KEY: reason" (PATH: the file; KEY as the file names it:
 * "quota.uid.segments"; a key given twice is one) or "config file PATH: reason" (not
 * JSON, a NUL byte: its offset); returns -1. */
int config_load_file(struct config *c, const char *path, char **err);

/* Whether a reload has a file to read or to forget: the file garudad runs with, or,
 * started with neither --config nor --no-config, the default file once it exists. */
bool config_reloadable(const struct config *c);
/* The default file a reload looks for (CONFIG_DEFAULT_FILE or its stand-in), or NULL
 * when --config or --no-config chose. */
const char *config_default_path(const struct config *c);

/* The configuration a restart would start with, built afresh into next: the defaults,
 * then cur's config file as it is now (started with neither --config nor --no-config:
 * the default file when it exists now), then cur's command-line flags, then the socket
 * paths resolved as at start. A key removed from the file returns to its default.
 * Socket paths, socket_group, event_loop and scanners are what a restart changes:
 * next has the new values (config_log_changes() says so), config_keep_restart_only()
 * puts the running ones back. Returns 0, or -1 with *err set (next then empty). */
int config_reload(struct config *next, const struct config *cur, char **err);

/* Log, at notice, each key whose value differs between old and new as
 * "reload: KEY: OLD -> NEW" (a key that only a restart changes says so); returns
 * how many differ. */
unsigned config_log_changes(const struct config *old, const struct config *new);

/* Put cur's socket paths, socket_group, event_loop and scanners back into next. */
void config_keep_restart_only(struct config *next, const struct config *cur);

/* Deep copy / free. */
int config_copy(struct config *dst, const struct config *src);
void config_free(struct config *c);
/* socket_group given as a decimal gid ("2046"): true and *gid set; a name: false. */
bool config_numeric_gid(const char *s, unsigned *gid);

/* The plan the scanners run: c->plan, with the legacy keys' values in place of its
 * park_us / backstop_us where they are set (then *out may exceed the plan's bounds:
 * it is for garuda_watch_tuning_of(), not for garuda_plan_check()). */
void config_plan_in_force(const struct config *c, struct garuda_plan *out);

/* Log, at warning, one line per legacy key c sets: what it replaces, what to write. */
void config_log_legacy(const struct config *c);

/* Add every key of c to obj as the config file names it (nested at the dots): numbers
 * as numbers, the rest as strings (a path not resolved: null); a legacy key only when
 * set. The control plane's config reply. */
struct cJSON;
void config_to_json(const struct config *c, struct cJSON *obj);

const char *event_loop_name(enum event_loop_kind k);
