/* control_internal.h — what the control plane's files share: control.c (connections,
 * access, parsing, dispatch), control_req.c (the requests) and control_metrics.c
 * (Prometheus text exposition). Not used outside daemon/control*.c.
 *
 * Conventions every reply follows (they are garctl's and scripts' stable interface):
 * an object with "version": CONTROL_VERSION and lower_snake_case keys; counters are
 * exact JSON integers; 64-bit values a client chooses or the GPU writes (word values,
 * targets, tokens) are decimal strings, so no JSON reader rounds them; lists that may
 * be long are paged: the request takes "start" and the reply carries "next" (the
 * "start" of the next page, or null when the list is complete). */
#pragma once

#include <cjson/cJSON.h>
#include <stdint.h>

#include "daemon.h"
#include "form.h"
#include "wire.h"

#define CONTROL_VERSION 1
#define CONTROL_MAX_REQUEST 4096       /* bytes of one request datagram */
#define CONTROL_PAGE_BYTES (64 * 1024) /* a paged list stops adding items past this */
#define CONTROL_MAX_REPLY (384 * 1024) /* larger replies become TOO_LONG errors */
#define CONTROL_MAX_ID 9007199254740991.0 /* 2^53 - 1: largest exact JSON integer */
#define CTL_MESSAGE_MAX 512 /* bytes of an error message, its NUL included */
#define CTL_ECHO_MAX 64     /* bytes of a request's name or key quoted in an error */

/* A new reply object carrying "version". */
cJSON *ctl_reply_new(void);
/* {"version":1,"error":{"code","name","message"}} from -GARUDA_E_* (code: the
 * positive registry code, name: its registry name) or -errno (code: -errno, name: the
 * errno's name, e.g. "ENOMEM"). The message as ctl_escape() writes it, cut to
 * CTL_MESSAGE_MAX. */
cJSON *ctl_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Text from outside (a client's comm or cgroup path, a request's names, a config
 * file's keys) as a reply may carry it: valid UTF-8 with no control character, and
 * reversible: a backslash as \\, each byte that is not part of a printable UTF-8
 * character (not UTF-8; C0 and C1 controls, DEL) as \xHH (upper-case hex), the rest
 * as it is. Writes at most cap - 1 bytes and a NUL into out (cap 0: nothing), cut
 * before the first character or escape that does not fit; returns the length of the
 * whole escaped text (>= cap: out was cut). */
size_t ctl_escape(char *out, size_t cap, const char *s);
/* ctl_escape() into a malloc'ed string; NULL out of memory. */
char *ctl_escape_dup(const char *s);
/* Length of the longest prefix of s of at most max bytes that ends at a character
 * (an invalid byte counts as one): where "%.*s" may cut s. */
size_t ctl_utf8_prefix(const char *s, size_t max);
/* printf arguments of "%.*s" for s cut to at most max bytes at a character */
#define CTL_CUT(s, max) (int)ctl_utf8_prefix((s), (max)), (s)

/* Exact unsigned integer as a JSON number / as a decimal string. */
void ctl_add_uint(cJSON *o, const char *key, uint64_t v);
void ctl_add_int(cJSON *o, const char *key, int64_t v);
void ctl_add_u64_string(cJSON *o, const char *key, uint64_t v);
/* Bytes cJSON_PrintUnformatted(item) takes (the item is printed once). */
size_t ctl_printed_size(const cJSON *item);

/* Arguments, already checked by the dispatcher against the request's table (known keys
 * only, no duplicates, the declared type, required ones present). */
bool ctl_arg_uint(const cJSON *req, const char *key, uint64_t *out);
const char *ctl_arg_string(const cJSON *req, const char *key);

/* Requests (control_req.c). */
cJSON *ctl_req_status(struct daemon *d, const cJSON *req);
cJSON *ctl_req_clients(struct daemon *d, const cJSON *req);
cJSON *ctl_req_segments(struct daemon *d, const cJSON *req);
cJSON *ctl_req_lines(struct daemon *d, const cJSON *req);
cJSON *ctl_req_scanners(struct daemon *d, const cJSON *req);
cJSON *ctl_req_points(struct daemon *d, const cJSON *req);
cJSON *ctl_req_config(struct daemon *d, const cJSON *req);
cJSON *ctl_req_disconnect(struct daemon *d, const cJSON *req);
cJSON *ctl_req_log_level(struct daemon *d, const cJSON *req);
cJSON *ctl_req_reload(struct daemon *d, const cJSON *req);

/* Shared by status, scanners and metrics. */
struct ctl_totals {
	uint64_t armed, completions, passes, parks, cpu_ns;
	struct form_counts by_form;
	unsigned bindings;
};
void ctl_totals(struct daemon *d, struct ctl_totals *t);
/* Upper edge in ns of detection-delay bucket b (bucket b holds [2^b, 2^(b+1)) ns;
 * the last bucket is open-ended and has no edge: returns 0). */
uint64_t ctl_bucket_le_ns(unsigned b);

/* Metrics (control_metrics.c): Prometheus text exposition format 0.0.4, malloc'ed.
 * fold_all: every uid and cgroup key under "(other)" (for a reply that would not fit
 * otherwise). */
char *ctl_metrics_text(struct daemon *d, bool fold_all);
cJSON *ctl_req_metrics(struct daemon *d, const cJSON *req);
