/* control_req.c — the control plane's requests: what each one reads from the daemon
 * and the reply it builds (the keys are garctl's stable interface; docs/garctl.1
 * lists them). Runs on the loop thread, like everything that touches sessions.
 *
 * Promises: a request only reads, except disconnect, log_level (with "level") and
 * reload; a word of a segment is read once (an acquire load from the daemon's own
 * mapping) and shown as read, never interpreted; armed targets come from the owning
 * scanner (scanner_list_armed), so they are a consistent snapshot of that scanner's
 * set; paged lists stop at CONTROL_PAGE_BYTES and say where the next page starts. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "control_internal.h"
#include "log.h"
#include "service.h"
#include "session.h"

#define LIST_ARMED_PER_WORD 64 /* armed targets listed per word; "armed_count" has all */

static const char *const form_names[] = {
	[GARUDA_FORM_EVENTFD] = "eventfd",
	[GARUDA_FORM_MESSAGE] = "message",
	[GARUDA_FORM_DOORBELL] = "doorbell",
};

const char *ctl_form_name(unsigned form)
{
	return form < sizeof(form_names) / sizeof(form_names[0]) ? form_names[form] : NULL;
}

uint64_t ctl_bucket_le_ns(unsigned b)
{
	return b + 1 < SCANNER_LAT_BUCKETS ? 2ull << b : 0;
}

/* "wake_latency": {"buckets": [{"le_ns", "count"}...], "count"} from a log2 histogram */
static void add_latency(cJSON *o, const uint64_t hist[SCANNER_LAT_BUCKETS])
{
	cJSON *lat = cJSON_AddObjectToObject(o, "wake_latency");
	uint64_t total = 0;
	cJSON *buckets = cJSON_AddArrayToObject(lat, "buckets");
	for (unsigned b = 0; b < SCANNER_LAT_BUCKETS; b++) {
		cJSON *bo = cJSON_CreateObject();
		uint64_t le = ctl_bucket_le_ns(b);
		if (le)
			ctl_add_uint(bo, "le_ns", le);
		else
			cJSON_AddNullToObject(bo, "le_ns");
		ctl_add_uint(bo, "count", hist[b]);
		cJSON_AddItemToArray(buckets, bo);
		total += hist[b];
	}
	ctl_add_uint(lat, "count", total);
}

void ctl_totals(struct daemon *d, struct ctl_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		t->armed += st.armed;
		t->completions += st.completions;
		t->passes += st.passes;
		t->parks += st.parks;
		t->cpu_ns += st.cpu_ns;
		for (int f = 0; f < 4; f++)
			t->by_form[f] += st.by_form[f];
	}
	for (struct session *s = d->sessions; s; s = s->next)
		for (struct binding *b = s->bindings; b; b = b->next)
			t->bindings++;
}

static void add_forms(cJSON *o, const char *key, const uint64_t by_form[4])
{
	cJSON *f = cJSON_AddObjectToObject(o, key);
	for (unsigned i = GARUDA_FORM_EVENTFD; i <= GARUDA_FORM_DOORBELL; i++)
		ctl_add_uint(f, ctl_form_name(i), by_form[i]);
}

static void add_string_or_null(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* Add item to arr unless the page is full; *bytes tracks the page's size. */
static bool page_add(cJSON *arr, cJSON *item, size_t *bytes)
{
	size_t n = ctl_printed_size(item) + 1;
	if (cJSON_GetArraySize(arr) > 0 && *bytes + n > CONTROL_PAGE_BYTES) {
		cJSON_Delete(item);
		return false;
	}
	*bytes += n;
	cJSON_AddItemToArray(arr, item);
	return true;
}

static void set_next(cJSON *r, bool more, uint64_t next)
{
	if (more)
		ctl_add_uint(r, "next", next);
	else
		cJSON_AddNullToObject(r, "next");
}

/* ---------------- status ---------------- */

cJSON *ctl_req_status(struct daemon *d, const cJSON *req)
{
	(void)req;
	struct ctl_totals t;
	ctl_totals(d, &t);
	uint64_t errors = 0;
	for (int i = 0; i < ERRCOUNT_SLOTS; i++)
		errors += d->errors_by_code[i];
	cJSON *r = ctl_reply_new();
	cJSON_AddStringToObject(r, "daemon_version", GARUDA_VERSION);
	ctl_add_int(r, "pid", getpid());
	cJSON_AddStringToObject(r, "event_loop", event_loop_name(loop_kind(d->loop)));
	cJSON_AddNumberToObject(r, "uptime_s", (double)(garuda_now_ns() - d->started_ns) / 1e9);
	cJSON_AddStringToObject(r, "log_level", log_level_to_string(log_get_level()));
	add_string_or_null(r, "config_path", d->cfg.config_path);
	ctl_add_uint(r, "clients", d->nsessions);
	ctl_add_uint(r, "segments", segment_count());
	ctl_add_uint(r, "bindings", t.bindings);
	ctl_add_uint(r, "armed", t.armed);
	ctl_add_uint(r, "arms", d->arms_total);
	ctl_add_uint(r, "completions", t.completions);
	add_forms(r, "readiness", t.by_form);
	ctl_add_uint(r, "sessions_total", d->sessions_total);
	ctl_add_uint(r, "errors", errors);
	ctl_add_uint(r, "quota_refusals", d->quota_refusals);
	ctl_add_uint(r, "scanners", d->nscanners);
	return r;
}

/* ---------------- clients ---------------- */

static int cmp_session(const void *a, const void *b)
{
	uint64_t x = (*(struct session *const *)a)->id, y = (*(struct session *const *)b)->id;
	return x < y ? -1 : x > y;
}

static cJSON *client_object(struct session *s)
{
	unsigned nseg = 0, nbind = 0;
	for (struct segment *g = s->segments; g; g = g->next)
		nseg++;
	for (struct binding *b = s->bindings; b; b = b->next)
		nbind++;
	const struct quota_usage *u = &s->sink->usage;
	uint64_t by_form[4];
	for (int f = 0; f < 4; f++)
		by_form[f] = atomic_load_explicit(&s->sink->by_form[f], memory_order_relaxed);
	cJSON *o = cJSON_CreateObject();
	ctl_add_uint(o, "id", s->id);
	ctl_add_int(o, "pid", s->pid);
	ctl_add_uint(o, "uid", s->uid);
	ctl_add_uint(o, "gid", s->gid);
	cJSON_AddStringToObject(o, "comm", s->comm);
	cJSON_AddNumberToObject(o, "connected_s", (double)(garuda_now_ns() - s->connected_ns) / 1e9);
	ctl_add_uint(o, "segments", nseg);
	ctl_add_uint(o, "lines", atomic_load(&u->used[Q_LINES]));
	ctl_add_uint(o, "bindings", nbind);
	ctl_add_uint(o, "armed", atomic_load(&u->used[Q_ARMED]));
	ctl_add_uint(o, "arms", s->arms);
	ctl_add_uint(o, "completions", atomic_load(&s->sink->completions));
	add_forms(o, "readiness", by_form);
	ctl_add_uint(o, "errors", s->errors);
	ctl_add_uint(o, "outbox_bytes", atomic_load(&u->used[Q_OUTBOX]));
	uint64_t hist[SCANNER_LAT_BUCKETS];
	for (unsigned b = 0; b < SCANNER_LAT_BUCKETS; b++)
		hist[b] = atomic_load_explicit(&s->sink->detect_hist[b], memory_order_relaxed);
	add_latency(o, hist);
	return o;
}

cJSON *ctl_req_clients(struct daemon *d, const cJSON *req)
{
	uint64_t start = 0;
	ctl_arg_uint(req, "start", &start);
	size_t n = 0;
	struct session **v = malloc((d->nsessions ? d->nsessions : 1) * sizeof(*v));
	if (!v)
		return ctl_error(-ENOMEM, "%s", garuda_strerror(-ENOMEM));
	for (struct session *s = d->sessions; s && n < d->nsessions; s = s->next)
		if (s->id >= start)
			v[n++] = s;
	qsort(v, n, sizeof(*v), cmp_session);
	cJSON *r = ctl_reply_new();
	cJSON *arr = cJSON_AddArrayToObject(r, "clients");
	size_t bytes = 0, i;
	for (i = 0; i < n; i++)
		if (!page_add(arr, client_object(v[i]), &bytes))
			break;
	set_next(r, i < n, i < n ? v[i]->id : 0);
	free(v);
	return r;
}

/* ---------------- segments ---------------- */

static struct session *find_client(struct daemon *d, const cJSON *req, cJSON **err)
{
	uint64_t id = 0;
	ctl_arg_uint(req, "client", &id);
	struct session *s = session_find(d, id);
	if (!s || s->closed)
		*err = ctl_error(GARUDA_E_NO_CLIENT, "no client %llu", (unsigned long long)id);
	return s && !s->closed ? s : NULL;
}

static int cmp_segment(const void *a, const void *b)
{
	uint32_t x = (*(struct segment *const *)a)->id, y = (*(struct segment *const *)b)->id;
	return x < y ? -1 : x > y;
}

cJSON *ctl_req_segments(struct daemon *d, const cJSON *req)
{
	cJSON *err = NULL;
	struct session *s = find_client(d, req, &err);
	if (!s)
		return err;
	uint64_t start = 0;
	ctl_arg_uint(req, "start", &start);
	size_t n = 0, cap = 0;
	struct segment **v = NULL;
	for (struct segment *g = s->segments; g; g = g->next) {
		if (g->id < start)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			struct segment **nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				free(v);
				return ctl_error(-ENOMEM, "%s", garuda_strerror(-ENOMEM));
			}
			v = nv;
		}
		v[n++] = g;
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_segment);
	cJSON *r = ctl_reply_new();
	ctl_add_uint(r, "client", s->id);
	cJSON *arr = cJSON_AddArrayToObject(r, "segments");
	size_t bytes = 0, i;
	for (i = 0; i < n; i++) {
		struct segment *g = v[i];
		unsigned nbind = 0;
		for (struct binding *b = s->bindings; b; b = b->next)
			nbind += b->segment_id == g->id;
		struct armed_view *views = NULL;
		int armed = scanner_list_armed(d->scanner[g->scanner], g, &views);
		free(views);
		uint32_t bell = __atomic_load_n(&g->map->hdr.doorbell, __ATOMIC_ACQUIRE);
		cJSON *o = cJSON_CreateObject();
		ctl_add_uint(o, "id", g->id);
		ctl_add_uint(o, "lines", g->lines);
		ctl_add_uint(o, "bytes", g->bytes);
		ctl_add_int(o, "numa_node", g->numa_node);
		ctl_add_uint(o, "scanner", g->scanner);
		ctl_add_uint(o, "bindings", nbind);
		if (armed >= 0)
			ctl_add_uint(o, "armed", (uint64_t)armed);
		else
			cJSON_AddNullToObject(o, "armed");
		ctl_add_uint(o, "doorbell", bell);
		if (!page_add(arr, o, &bytes))
			break;
	}
	set_next(r, i < n, i < n ? v[i]->id : 0);
	free(v);
	return r;
}

/* ---------------- lines ---------------- */

static int cmp_view(const void *a, const void *b)
{
	const struct armed_view *x = a, *y = b;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	return x->target < y->target ? -1 : x->target > y->target;
}

cJSON *ctl_req_lines(struct daemon *d, const cJSON *req)
{
	cJSON *err = NULL;
	struct session *s = find_client(d, req, &err);
	if (!s)
		return err;
	uint64_t seg_id = 0, start = 0, count = GARUDA_SEGMENT_MAX_LINES;
	ctl_arg_uint(req, "segment", &seg_id);
	ctl_arg_uint(req, "start", &start);
	ctl_arg_uint(req, "count", &count);
	struct segment *g = s->segments;
	while (g && g->id != seg_id)
		g = g->next;
	if (!g)
		return ctl_error(GARUDA_E_NO_SEGMENT, "client %llu has no segment %llu",
				 (unsigned long long)s->id, (unsigned long long)seg_id);
	if (start >= g->lines)
		return ctl_error(GARUDA_E_BAD_ARGUMENT, "argument \"start\" is beyond the segment's %u lines",
				 g->lines);
	uint64_t end = start + count < g->lines ? start + count : g->lines;

	struct armed_view *views = NULL;
	int nv = scanner_list_armed(d->scanner[g->scanner], g, &views);
	if (nv < 0)
		return ctl_error(nv, "%s", garuda_strerror(nv));
	qsort(views, (size_t)nv, sizeof(*views), cmp_view);

	cJSON *r = ctl_reply_new();
	ctl_add_uint(r, "client", s->id);
	ctl_add_uint(r, "segment", g->id);
	ctl_add_uint(r, "line_count", g->lines);
	cJSON *arr = cJSON_AddArrayToObject(r, "lines");
	size_t bytes = 0;
	int vi = 0;
	uint64_t line;
	for (line = start; line < end; line++) {
		cJSON *lo = cJSON_CreateObject();
		ctl_add_uint(lo, "line", line);
		cJSON *words = cJSON_AddArrayToObject(lo, "words");
		for (uint32_t w = 0; w < GARUDA_WORDS_PER_LINE; w++) {
			uint32_t index = (uint32_t)line * GARUDA_WORDS_PER_LINE + w;
			uint64_t value = __atomic_load_n(segment_word(g, index), __ATOMIC_ACQUIRE);
			bool bound = false;
			for (struct binding *b = s->bindings; b && !bound; b = b->next)
				bound = b->segment_id == g->id && b->index == index;
			while (vi < nv && views[vi].index < index)
				vi++;
			int first = vi;
			while (vi < nv && views[vi].index == index)
				vi++;
			cJSON *wo = cJSON_CreateObject();
			ctl_add_uint(wo, "index", index);
			ctl_add_u64_string(wo, "value", value);
			cJSON_AddBoolToObject(wo, "bound", bound);
			ctl_add_uint(wo, "armed_count", (uint64_t)(vi - first));
			cJSON *armed = cJSON_AddArrayToObject(wo, "armed");
			for (int k = first; k < vi && k - first < LIST_ARMED_PER_WORD; k++) {
				cJSON *a = cJSON_CreateObject();
				ctl_add_u64_string(a, "target", views[k].target);
				ctl_add_u64_string(a, "token", views[k].token);
				const char *form = ctl_form_name(views[k].form);
				cJSON_AddStringToObject(a, "form", form ? form : "unknown");
				cJSON_AddItemToArray(armed, a);
			}
			cJSON_AddItemToArray(words, wo);
		}
		if (!page_add(arr, lo, &bytes))
			break;
	}
	free(views);
	set_next(r, line < g->lines, line);
	return r;
}

/* ---------------- scanners ---------------- */

cJSON *ctl_req_scanners(struct daemon *d, const cJSON *req)
{
	(void)req;
	unsigned segs[NUMA_MAX_NODES] = { 0 };
	for (struct session *s = d->sessions; s; s = s->next)
		for (struct segment *g = s->segments; g; g = g->next)
			if (g->scanner < NUMA_MAX_NODES)
				segs[g->scanner]++;
	cJSON *r = ctl_reply_new();
	cJSON *arr = cJSON_AddArrayToObject(r, "scanners");
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		cJSON *o = cJSON_CreateObject();
		ctl_add_uint(o, "index", i);
		ctl_add_int(o, "numa_node", st.numa_node);
		ctl_add_uint(o, "armed", st.armed);
		ctl_add_uint(o, "segments", segs[i]);
		ctl_add_uint(o, "passes", st.passes);
		ctl_add_uint(o, "parks", st.parks);
		ctl_add_uint(o, "completions", st.completions);
		add_forms(o, "readiness", st.by_form);
		cJSON_AddNumberToObject(o, "cpu_s", (double)st.cpu_ns / 1e9);
		add_latency(o, st.detect_hist);
		cJSON_AddItemToArray(arr, o);
	}
	return r;
}

/* ---------------- config ---------------- */

static void add_quota(cJSON *o, const char *key, const struct quota_limits *q)
{
	cJSON *x = cJSON_AddObjectToObject(o, key);
	ctl_add_uint(x, "segments", q->segments);
	ctl_add_uint(x, "lines", q->lines);
	ctl_add_uint(x, "bindings", q->bindings);
	ctl_add_uint(x, "armed", q->armed);
	ctl_add_uint(x, "outbox_bytes", q->outbox_bytes);
	ctl_add_uint(x, "connections", q->connections);
}

cJSON *ctl_req_config(struct daemon *d, const cJSON *req)
{
	(void)req;
	const struct config *c = &d->cfg;
	cJSON *r = ctl_reply_new();
	add_string_or_null(r, "config_path", c->config_path);
	add_string_or_null(r, "socket", c->socket_path);
	add_string_or_null(r, "control_socket", c->control_socket_path);
	add_string_or_null(r, "socket_group", c->socket_group);
	add_string_or_null(r, "control_group", c->control_group);
	cJSON_AddStringToObject(r, "event_loop", event_loop_name(c->event_loop));
	ctl_add_uint(r, "scanners", c->scanners);
	ctl_add_uint(r, "spin_us", c->spin_us);
	ctl_add_uint(r, "max_sleep_us", c->max_sleep_us);
	cJSON_AddStringToObject(r, "log_level", log_level_to_string(c->log_level));
	cJSON *q = cJSON_AddObjectToObject(r, "quota");
	add_quota(q, "connection", &c->quota_connection);
	add_quota(q, "uid", &c->quota_uid);
	return r;
}

/* ---------------- admin actions ---------------- */

cJSON *ctl_req_disconnect(struct daemon *d, const cJSON *req)
{
	cJSON *err = NULL;
	struct session *s = find_client(d, req, &err);
	if (!s)
		return err;
	uint64_t id = s->id;
	log_notice("control: disconnecting client %llu (pid %d %s)", (unsigned long long)id, (int)s->pid,
		   s->comm);
	session_close(s);
	cJSON *r = ctl_reply_new();
	ctl_add_uint(r, "client", id);
	cJSON_AddBoolToObject(r, "disconnected", true);
	return r;
}

cJSON *ctl_req_log_level(struct daemon *d, const cJSON *req)
{
	(void)d;
	const char *level = ctl_arg_string(req, "level");
	int old = log_get_level();
	cJSON *r;
	if (!level) {
		r = ctl_reply_new();
		cJSON_AddStringToObject(r, "log_level", log_level_to_string(old));
		return r;
	}
	int l = log_level_from_string(level);
	if (l < 0)
		return ctl_error(GARUDA_E_BAD_ARGUMENT,
				 "argument \"level\" must be err, warning, notice, info or debug, not \"%.32s\"", level);
	log_set_level(l);
	log_notice("control: log level %s (was %s)", log_level_to_string(l), log_level_to_string(old));
	r = ctl_reply_new();
	cJSON_AddStringToObject(r, "log_level", log_level_to_string(l));
	cJSON_AddStringToObject(r, "previous", log_level_to_string(old));
	return r;
}

cJSON *ctl_req_reload(struct daemon *d, const cJSON *req)
{
	(void)req;
	cJSON *r;
	if (!d->cfg.config_path) {
		r = ctl_reply_new();
		cJSON_AddBoolToObject(r, "reloaded", false);
		cJSON_AddNullToObject(r, "config_path");
		return r;
	}
	log_info("control: reload requested");
	char *why = NULL;
	if (daemon_reload(d, &why) < 0) {
		r = ctl_error(GARUDA_E_BAD_ARGUMENT, "config file %s: %s; the running configuration is kept",
			      d->cfg.config_path, why ? why : "invalid");
		free(why);
		return r;
	}
	r = ctl_reply_new();
	cJSON_AddBoolToObject(r, "reloaded", true);
	add_string_or_null(r, "config_path", d->cfg.config_path);
	return r;
}
