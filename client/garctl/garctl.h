/* garctl.h — what garctl's files share: the options, the control-socket connection
 * (conn.c), tables and the pager (table.c), the commands (commands.c, top.c).
 *
 * Exit codes everywhere: 0 ok, 1 a daemon error or no daemon (a message is printed),
 * 2 usage. Functions that can fail print their own message and return 1 or 2. */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "paths.h"

#define GARCTL_DEFAULT_SOCKET GARUDA_CONTROL_SOCKET_PATH
#define GARCTL_MAX_ID 9007199254740991ull /* 2^53 - 1: largest exact JSON integer */

enum json_mode { JSON_OFF, JSON_PRETTY, JSON_SHORT };

struct options {
	const char *socket;
	const char *socket_why; /* how socket was chosen (--socket, $GARUDA_CONTROL_SOCKET...) */
	enum json_mode json;
	bool legend;
	bool pager;
	double delay_s;     /* top */
	bool batch;         /* top */
	long iterations;    /* top; 0 = until interrupted */
	double timeout_s;   /* per reply; 0 = wait forever */
};

/* ---- conn.c ---- */

struct conn {
	int fd;
	const struct options *o;
	bool answered; /* a JSON reply came: this is a control socket */
};

/* Connect to o->socket (or, when that was the user's own socket and nobody listens
 * there, to the system one: o->socket and o->socket_why then name it). 0, or 1 after
 * printing why (not running, permission). */
int conn_open(struct conn *c, struct options *o);
void conn_close(struct conn *c);
/* Send req (not consumed) and read the reply into *reply. 0, or 1 after printing the
 * daemon's error or the failure. */
int conn_call(struct conn *c, const cJSON *req, cJSON **reply);
/* Like conn_call for a paged list: asks for every page ("start" = the previous reply's
 * "next") and appends each page's array under key to the first reply. */
int conn_call_all(struct conn *c, const cJSON *req, const char *key, cJSON **reply);
/* {"request": name} */
cJSON *request_new(const char *name);

/* ---- table.c ---- */

struct table;
struct table *table_new(unsigned ncols, const char *const *headers);
/* Right-align column col (numbers). */
void table_right(struct table *t, unsigned col);
/* Append a cell to the current row; a row ends after ncols cells. Text is sanitized
 * (control characters become '?'). */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t table_rows(const struct table *t);
void table_print(const struct table *t, FILE *f, bool legend);
void table_free(struct table *t);

/* Start the pager when stdout is a terminal and the pager is wanted; pager_close()
 * flushes, ends the pipe and waits for the pager. */
void pager_open(const struct options *o);
void pager_close(void);

/* Print a JSON reply in the chosen mode. */
void print_json(const cJSON *j, enum json_mode mode);
/* Replace control and non-ASCII bytes with '?' in place. */
void sanitize(char *s);

/* JSON accessors that tolerate absent keys. */
double jnum(const cJSON *o, const char *key);
const char *jstr(const cJSON *o, const char *key); /* "-" when absent or null */
const cJSON *jarr(const cJSON *o, const char *key);

/* Duration in ns as text ("850ns", "4.1us", "2.0ms", "1.5s"). */
void fmt_ns(char *buf, size_t len, double ns);
/* Percentile p (0..1) of a wake_latency object's buckets as the upper edge of the
 * bucket that holds it, written as text ("-" with no samples, ">8.4ms" in the open
 * last bucket). counts may be NULL: then the object's own counts are used. */
void fmt_percentile(char *buf, size_t len, const cJSON *latency, const double *counts, double p);
/* The same percentile as a number: PCT_LE when it is at most *ns (the upper edge of
 * its bucket, in ns), PCT_GT when it lies in the open last bucket, above *ns (the last
 * finite edge), PCT_NONE (and *ns = 0) with no samples. */
enum pct_bound { PCT_NONE, PCT_LE, PCT_GT };
enum pct_bound percentile_bound(const cJSON *latency, const double *counts, double p, double *ns);

/* ---- commands.c, top.c ---- */

int cmd_status(struct conn *c, const struct options *o, char **args);
int cmd_clients(struct conn *c, const struct options *o, char **args);
int cmd_segments(struct conn *c, const struct options *o, char **args);
int cmd_lines(struct conn *c, const struct options *o, char **args);
int cmd_scanners(struct conn *c, const struct options *o, char **args);
int cmd_points(struct conn *c, const struct options *o, char **args);
int cmd_config(struct conn *c, const struct options *o, char **args);
int cmd_metrics(struct conn *c, const struct options *o, char **args);
int cmd_disconnect(struct conn *c, const struct options *o, char **args);
int cmd_log_level(struct conn *c, const struct options *o, char **args);
int cmd_reload(struct conn *c, const struct options *o, char **args);
int cmd_top(struct conn *c, const struct options *o, char **args);

/* Parse an id argument of kind 'c' (CLIENT: 1 to 2^53 - 1) or 's' (SEGMENT: 0 to
 * 2^32 - 1), the ranges garudad takes; prints a usage error and returns false. */
bool parse_id(char kind, const char *s, uint64_t *out);
