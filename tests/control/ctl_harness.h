/* ctl_harness.h — what the control-plane tests share on top of tests/common (the
 * garudad launcher and the raw-protocol client of harness.h): a garudad started with
 * a verbatim config and two scanners, asserting control requests, known clients made
 * over the raw protocol, garctl run as a child with its output captured, a reader for
 * garctl's tables, and a Prometheus text checker.
 *
 * Everything here asserts (Criterion) except where a function's comment says it
 * returns an error. Deadlines only detect hangs: no test depends on timing to pass.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define CTL_DEADLINE_MS GD_DEADLINE_MS

/* Criterion hooks for every suite: the fd-leak check (tests/common) around each test,
 * and after a failed one, the daemon it left running killed and its directory removed. */
#define ctl_test_init gd_test_init_any_loop
#define ctl_test_fini gd_test_fini

/* ------------------------------------------------------------------ daemon ---- */

/* Start garudad (tests/common) with config_json (NULL: "{}") as its whole config file,
 * --scanners=2, sockets in a fresh 0755 directory; returns once it is READY. */
void ctl_start(struct gd_daemon *d, const char *config_json);
/* SIGTERM, wait, assert exit 0, remove the directory. */
void ctl_stop(struct gd_daemon *d);
/* Overwrite the daemon's config file. */
void ctl_write_config(struct gd_daemon *d, const char *config_json);

/* One request datagram on a fresh connection; the reply text (malloc'ed). */
char *ctl_raw(const char *ctl_path, const void *req, size_t len);
/* ctl_raw + parse; asserts the reply is a JSON object with "version": 1. */
cJSON *ctl_json(const char *ctl_path, const char *req);
/* Assert reply is {"version":1,"error":{"code":code,"name":NAME,"message":"..."}}. */
void ctl_assert_error(const cJSON *reply, int code, const char *what);
/* Whether the n bytes at s are valid UTF-8 (no overlong form, surrogate or code point
 * past U+10FFFF). */
bool ctl_valid_utf8(const char *s, size_t n);
/* Number under key of {"request":"status"}. */
double ctl_status_num(const char *ctl_path, const char *key);
/* Wait until status key == v (deadline); returns the last value. */
double ctl_wait_status(const char *ctl_path, const char *key, double v);

/* --------------------------------------- known clients (tests/common rawclient) ---- */

struct ctl_client {
	struct gd_client raw;
	uint64_t session_id;
};

void ctl_client_open(struct ctl_client *c, const char *sock);
void ctl_client_close(struct ctl_client *c);
/* Send m with the next cookie (and fd when >= 0); wait for its reply. Returns 0 for
 * ACK/SEGMENT/WELCOME (the reply in *reply when not NULL, a fd that came with it in
 * *fd when not NULL), or the ERROR's code; asserts on a broken connection. */
int ctl_client_call(struct ctl_client *c, struct garuda_msg *m, int fd, struct garuda_msg *reply, int *rfd);
/* SEGMENT_OPEN and map it; returns 0 or the ERROR's code (then s is untouched).
 * Unmap with gd_seg_unmap; play the GPU with gd_store. */
int ctl_segment_open(struct ctl_client *c, uint32_t lines, struct gd_seg *s);
/* A new non-blocking eventfd bound to (seg, index). */
int ctl_bind(struct ctl_client *c, uint32_t seg, uint32_t index);
void ctl_arm(struct ctl_client *c, uint32_t seg, uint32_t index, uint64_t target, uint64_t token,
	     uint8_t form);
/* Wait until the daemon closed c (EOF); true when it did within the deadline. */
bool ctl_client_wait_closed(struct ctl_client *c);

/* ------------------------------------------------------------- the fixture ---- */

/* A daemon with two known clients (config: at most 2 segments per connection):
 *   A: segment a1 (4 lines) and a2 (2 lines); word a1[0] bound to an eventfd, armed
 *      target 5 (eventfd, token 11) and stored 5: fired; a1[1] armed 10 (message, token
 *      12): pending; a1[2] = 7; a1[3] = 2^64-2, armed 2^64-1 (message, token
 *      0xfedcba9876543210): pending; a1[9] armed 3 (doorbell, token 13) and stored 3:
 *      fired; a third segment refused (QUOTA).
 *   B: segment b1 (8 lines); b1[0] armed 100 (message, token 21): pending; b1[3] armed
 *      1 (message, token 22) and stored 1: fired; an arm on segment 99 (NO_SEGMENT).
 * Totals: 2 clients, 3 segments, 1 binding, 3 armed, 6 arms, 3 completions (one of each
 * form), 2 errors (QUOTA, NO_SEGMENT), 1 quota refusal. ctl_fixture_up returns once the
 * daemon's status shows all of it. */
struct ctl_fixture {
	struct gd_daemon d;
	struct ctl_client a, b;
	struct gd_seg a1, a2, b1;
	int efd;
};
#define FIXTURE_CONFIG "{\"quota\":{\"connection\":{\"segments\":2}}}"
#define FIXTURE_BIG_TARGET 18446744073709551615ull
#define FIXTURE_BIG_TOKEN 0xfedcba9876543210ull
void ctl_fixture_up(struct ctl_fixture *f);
/* Clients closed, segments unmapped, daemon stopped (exit 0 asserted). */
void ctl_fixture_down(struct ctl_fixture *f);

/* --------------------------------------------------------------- garctl ---- */

struct ctl_run {
	int status; /* exit code, or 128 + signal */
	char *out, *err;
};

/* Run $GARCTL with args (NULL-terminated) and env additions (NAME=VALUE, may be NULL);
 * when uid != (uid_t)-1 the child first drops to uid/gid with the given supplementary
 * groups. Captures stdout and stderr. */
void ctl_garctl_as(struct ctl_run *r, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
		   const char *const *env, const char *const *args);
void ctl_garctl(struct ctl_run *r, const char *const *args);
/* ctl_garctl with garctl's stdout opened on out_path (such as /dev/full); r->out is "". */
void ctl_garctl_to(struct ctl_run *r, const char *out_path, const char *const *args);
void ctl_run_free(struct ctl_run *r);
/* Parse r->out as JSON (asserts exit 0 and an object with "version": 1). */
cJSON *ctl_run_json(const struct ctl_run *r);

/* Table rows of text: each line split at runs of blanks. rows[i][j], NULL-terminated
 * per row; the array ends with a NULL row. Free with ctl_table_free. */
char ***ctl_table(const char *text);
void ctl_table_free(char ***t);
size_t ctl_table_rows(char ***t);
/* The first row whose column col equals v, or NULL. */
char **ctl_table_find(char ***t, int col, const char *v);
/* Column index of header name in row 0, or -1. */
int ctl_table_col(char ***t, const char *name);

/* --------------------------------------------------------------- Prometheus ---- */

/* Check text against the exposition format: every line a comment (# HELP / # TYPE),
 * blank, or a sample `name{labels} value`; every sample's family has one # TYPE line,
 * before its samples, and its samples are contiguous; counters end in _total; each
 * histogram series has le buckets increasing, cumulative, ending with +Inf, and a
 * _count equal to +Inf. Returns NULL, or a malloc'ed description of the first fault. */
char *prom_check(const char *text);
/* Value of the sample written exactly as `series` (e.g. "garuda_clients" or
 * "garuda_readiness_total{form=\"eventfd\"}"); NaN when absent. */
double prom_value(const char *text, const char *series);
/* Sum of all samples of metric name (any labels); NaN when there is none. */
double prom_sum(const char *text, const char *name);
