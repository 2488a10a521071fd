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
#include "closer.h"
#include "control_internal.h"
#include "control_names.h"
#include "log.h"
#include "points.h"
#include "service.h"
#include "session.h"
#include "wordwait.h"

#define LIST_ARMED_PER_WORD 64 /* armed targets listed per word; "armed_count" has all */

uint64_t ctl_bucket_le_ns(unsigned b)
{
	return b + 1 < SCANNER_LAT_BUCKETS ? 2ull << b : 0;
}

/* key: {"buckets": [{"le_ns", "count"}...], "count"} from a log2 histogram */
static void add_hist(cJSON *o, const char *key, const uint64_t hist[SCANNER_LAT_BUCKETS])
{
	cJSON *lat = cJSON_AddObjectToObject(o, key);
	uint64_t total = 0;
	cJSON *buckets = cJSON_AddArrayToObject(lat, CTL_KEY_BUCKETS);
	for (unsigned b = 0; b < SCANNER_LAT_BUCKETS; b++) {
		cJSON *bo = cJSON_CreateObject();
		uint64_t le = ctl_bucket_le_ns(b);
		if (le)
			ctl_add_uint(bo, CTL_KEY_LE_NS, le);
		else
			cJSON_AddNullToObject(bo, CTL_KEY_LE_NS);
		ctl_add_uint(bo, CTL_KEY_COUNT, hist[b]);
		cJSON_AddItemToArray(buckets, bo);
		total += hist[b];
	}
	ctl_add_uint(lat, CTL_KEY_COUNT, total);
}

void ctl_totals(struct daemon *d, struct ctl_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		t->armed += st.armed;
		t->completions += st.counters[SC_completions];
		t->passes += st.counters[SC_passes];
		t->parks += st.counters[SC_parks];
		t->cpu_ns += st.cpu_ns;
		form_counts_add(&t->by_form, &st.by_form);
	}
	for (struct session *s = d->sessions; s; s = s->next)
		for (const struct segment *g = s->segments; g; g = g->next)
			t->bindings += g->nbindings;
}

static void add_forms(cJSON *o, const char *key, const struct form_counts *by_form)
{
	cJSON *f = cJSON_AddObjectToObject(o, key);
	FORM_EACH(i)
		ctl_add_uint(f, form_name(i), by_form->n[i]);
}

/* key: v, text from outside, as ctl_escape() writes it; null for NULL (or out of
 * memory) */
static void add_text_or_null(cJSON *o, const char *key, const char *v)
{
	char *t = v ? ctl_escape_dup(v) : NULL;
	if (t)
		cJSON_AddStringToObject(o, key, t);
	else
		cJSON_AddNullToObject(o, key);
	free(t);
}

/* Every string under o as ctl_escape() writes it. */
static void escape_strings(cJSON *o)
{
	cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		if (!cJSON_IsString(it) || !it->valuestring) {
			escape_strings(it);
			continue;
		}
		size_t n = ctl_escape(NULL, 0, it->valuestring);
		if (n == strlen(it->valuestring))
			continue; /* nothing to escape */
		char *t = cJSON_malloc(n + 1);
		if (!t)
			continue;
		ctl_escape(t, n + 1, it->valuestring);
		cJSON_free(it->valuestring);
		it->valuestring = t;
	}
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
		ctl_add_uint(r, CTL_KEY_NEXT, next);
	else
		cJSON_AddNullToObject(r, CTL_KEY_NEXT);
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
	cJSON_AddStringToObject(r, CTL_KEY_DAEMON_VERSION, GARUDA_VERSION);
	ctl_add_int(r, CTL_KEY_PID, getpid());
	cJSON_AddStringToObject(r, CTL_KEY_EVENT_LOOP, event_loop_name(loop_kind(d->loop)));
	cJSON_AddNumberToObject(r, CTL_KEY_UPTIME_S, (double)(garuda_now_ns() - d->started_ns) / 1e9);
	cJSON_AddStringToObject(r, CTL_KEY_LOG_LEVEL, log_level_to_string(log_get_level()));
	add_text_or_null(r, CTL_KEY_CONFIG_PATH, d->cfg.config_path);
	cJSON *w = cJSON_AddArrayToObject(r, CTL_KEY_WARNINGS);
	for (unsigned i = 0; w && i < d->nwarnings; i++)
		cJSON_AddItemToArray(w, cJSON_CreateString(d->warnings[i]));
	escape_strings(w); /* they may quote the config's paths and groups */
	ctl_add_uint(r, CTL_KEY_CLIENTS, d->nsessions);
	ctl_add_uint(r, CTL_KEY_SEGMENTS, segment_count());
	ctl_add_uint(r, CTL_KEY_BINDINGS, t.bindings);
	ctl_add_uint(r, CTL_KEY_ARMED, t.armed);
	ctl_add_uint(r, CTL_KEY_ARMS, d->arms_total);
	ctl_add_uint(r, CTL_KEY_COMPLETIONS, t.completions);
	add_forms(r, CTL_KEY_READINESS, &t.by_form);
	ctl_add_uint(r, CTL_KEY_SESSIONS_TOTAL, d->sessions_total);
	ctl_add_uint(r, CTL_KEY_HELD_SESSIONS, d->nholds);
	ctl_add_uint(r, CTL_KEY_ERRORS, errors);
	ctl_add_uint(r, CTL_KEY_QUOTA_REFUSALS, d->quota_refusals);
	ctl_add_uint(r, CTL_KEY_SCANNERS, d->nscanners);
	/* fds clients sent that nobody took, handed to the closer thread, and those it has
	 * not closed yet (one stuck: a FUSE file, a lingering socket; closer.h) */
	struct closer_stats cs;
	closer_stats(&cs);
	ctl_add_uint(r, CTL_KEY_CLOSER_HANDED, cs.handed);
	ctl_add_uint(r, CTL_KEY_CLOSER_PENDING, cs.pending);
	return r;
}

/* ---------------- clients ---------------- */

static int cmp_session(const void *a, const void *b)
{
	uint64_t x = (*(struct session *const *)a)->id, y = (*(struct session *const *)b)->id;
	return x < y ? -1 : x > y;
}

static cJSON *client_object(const struct session *s)
{
	struct session_view v;
	session_describe(s, &v);
	cJSON *o = cJSON_CreateObject();
	ctl_add_uint(o, CTL_KEY_ID, v.id);
	ctl_add_int(o, CTL_KEY_PID, v.pid);
	ctl_add_uint(o, CTL_KEY_UID, v.uid);
	ctl_add_uint(o, CTL_KEY_GID, v.gid);
	add_text_or_null(o, CTL_KEY_COMM, v.comm);
	add_text_or_null(o, CTL_KEY_CGROUP, v.cgroup);
	cJSON_AddNumberToObject(o, CTL_KEY_CONNECTED_S, (double)(garuda_now_ns() - v.connected_ns) / 1e9);
	ctl_add_uint(o, CTL_KEY_SEGMENTS, v.segments);
	ctl_add_uint(o, CTL_KEY_LINES, v.lines);
	ctl_add_uint(o, CTL_KEY_BINDINGS, v.bindings);
	ctl_add_uint(o, CTL_KEY_ARMED, v.armed);
	ctl_add_uint(o, CTL_KEY_ARMS, v.arms);
	ctl_add_uint(o, CTL_KEY_POINTS, v.points);
	/* every counter of proto/counters.h's session table under its key, its name */
#define SESSION_COUNTER_JSON_(field, help) ctl_add_uint(o, #field, v.counters[SN_##field]);
	GARUDA_SESSION_COUNTERS(SESSION_COUNTER_JSON_)
#undef SESSION_COUNTER_JSON_
	add_forms(o, CTL_KEY_READINESS, &v.by_form);
	ctl_add_uint(o, CTL_KEY_ERRORS, v.errors);
	ctl_add_uint(o, CTL_KEY_OUTBOX_BYTES, v.outbox_bytes);
	add_hist(o, CTL_KEY_WAKE_LATENCY, v.detect_hist);
	return o;
}

cJSON *ctl_req_clients(struct daemon *d, const cJSON *req)
{
	uint64_t start = 0;
	ctl_arg_uint(req, CTL_KEY_START, &start);
	size_t n = 0;
	struct session **v = malloc((d->nsessions ? d->nsessions : 1) * sizeof(*v));
	if (!v)
		return ctl_error(-ENOMEM, "%s", garuda_strerror(-ENOMEM));
	for (struct session *s = d->sessions; s && n < d->nsessions; s = s->next)
		if (s->id >= start)
			v[n++] = s;
	qsort(v, n, sizeof(*v), cmp_session);
	cJSON *r = ctl_reply_new();
	cJSON *arr = cJSON_AddArrayToObject(r, CTL_KEY_CLIENTS);
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
	ctl_arg_uint(req, CTL_KEY_CLIENT, &id);
	struct session *s = session_find(d, id);
	if (!s || s->closed)
		*err = ctl_error(-GARUDA_E_NO_CLIENT, "no client %llu", (unsigned long long)id);
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
	ctl_arg_uint(req, CTL_KEY_START, &start);
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
	ctl_add_uint(r, CTL_KEY_CLIENT, s->id);
	cJSON *arr = cJSON_AddArrayToObject(r, CTL_KEY_SEGMENTS);
	size_t bytes = 0, i;
	for (i = 0; i < n; i++) {
		struct segment *g = v[i];
		unsigned nbind = g->nbindings;
		struct armed_view *views = NULL;
		int armed = scanner_list_armed(d->scanner[g->scanner], g, s->id, &views);
		free(views);
		uint32_t bell = __atomic_load_n(&g->map->hdr.doorbell, __ATOMIC_ACQUIRE);
		cJSON *o = cJSON_CreateObject();
		ctl_add_uint(o, CTL_KEY_ID, g->id);
		ctl_add_uint(o, CTL_KEY_LINES, g->lines);
		ctl_add_uint(o, CTL_KEY_BYTES, g->bytes);
		ctl_add_int(o, CTL_KEY_NUMA_NODE, g->numa_node);
		ctl_add_uint(o, CTL_KEY_SCANNER, g->scanner);
		ctl_add_uint(o, CTL_KEY_BINDINGS, nbind);
		if (armed >= 0)
			ctl_add_uint(o, CTL_KEY_ARMED, (uint64_t)armed);
		else
			cJSON_AddNullToObject(o, CTL_KEY_ARMED);
		ctl_add_uint(o, CTL_KEY_DOORBELL, bell);
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
	ctl_arg_uint(req, CTL_KEY_SEGMENT, &seg_id);
	ctl_arg_uint(req, CTL_KEY_START, &start);
	ctl_arg_uint(req, CTL_KEY_COUNT, &count);
	struct segment *g = s->segments;
	while (g && g->id != seg_id)
		g = g->next;
	if (!g)
		return ctl_error(-GARUDA_E_NO_SEGMENT, "client %llu has no segment %llu",
				 (unsigned long long)s->id, (unsigned long long)seg_id);
	if (start >= g->lines)
		return ctl_error(-GARUDA_E_BAD_ARGUMENT, "argument \"start\" is beyond the segment's %u lines",
				 g->lines);
	uint64_t end = start + count < g->lines ? start + count : g->lines;

	struct armed_view *views = NULL;
	int nv = scanner_list_armed(d->scanner[g->scanner], g, s->id, &views);
	if (nv < 0)
		return ctl_error(nv, "%s", garuda_strerror(nv));
	qsort(views, (size_t)nv, sizeof(*views), cmp_view);

	cJSON *r = ctl_reply_new();
	ctl_add_uint(r, CTL_KEY_CLIENT, s->id);
	ctl_add_uint(r, CTL_KEY_SEGMENT, g->id);
	ctl_add_uint(r, CTL_KEY_LINE_COUNT, g->lines);
	cJSON *arr = cJSON_AddArrayToObject(r, CTL_KEY_LINES);
	size_t bytes = 0;
	int vi = 0;
	uint64_t line;
	for (line = start; line < end; line++) {
		cJSON *lo = cJSON_CreateObject();
		ctl_add_uint(lo, CTL_KEY_LINE, line);
		cJSON *words = cJSON_AddArrayToObject(lo, CTL_KEY_WORDS);
		for (uint32_t w = 0; w < GARUDA_WORDS_PER_LINE; w++) {
			uint32_t index = (uint32_t)line * GARUDA_WORDS_PER_LINE + w;
			uint64_t value = __atomic_load_n(segment_word(g, index), __ATOMIC_ACQUIRE);
			bool bound = session_binding(s, g->id, index) != NULL;
			while (vi < nv && views[vi].index < index)
				vi++;
			int first = vi;
			while (vi < nv && views[vi].index == index)
				vi++;
			cJSON *wo = cJSON_CreateObject();
			ctl_add_uint(wo, CTL_KEY_INDEX, index);
			ctl_add_u64_string(wo, CTL_KEY_VALUE, value);
			cJSON_AddBoolToObject(wo, CTL_KEY_BOUND, bound);
			ctl_add_uint(wo, CTL_KEY_ARMED_COUNT, (uint64_t)(vi - first));
			cJSON *armed = cJSON_AddArrayToObject(wo, CTL_KEY_ARMED);
			for (int k = first; k < vi && k - first < LIST_ARMED_PER_WORD; k++) {
				cJSON *a = cJSON_CreateObject();
				ctl_add_u64_string(a, CTL_KEY_TARGET, views[k].target);
				ctl_add_u64_string(a, CTL_KEY_TOKEN, views[k].token);
				const char *form = form_name(views[k].form);
				cJSON_AddStringToObject(a, CTL_KEY_FORM, form ? form : "unknown");
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
	cJSON *arr = cJSON_AddArrayToObject(r, CTL_KEY_SCANNERS);
	const struct wordwait *ww = scanner_wordwait(&d->tuning);
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		cJSON *o = cJSON_CreateObject();
		ctl_add_uint(o, CTL_KEY_INDEX, i);
		ctl_add_int(o, CTL_KEY_NUMA_NODE, st.numa_node);
		ctl_add_uint(o, CTL_KEY_ARMED, st.armed);
		ctl_add_uint(o, CTL_KEY_SEGMENTS, segs[i]);
		/* every counter of proto/counters.h's table under its key, its name */
#define SCANNER_COUNTER_JSON_(field, metric, help) ctl_add_uint(o, #field, st.counters[SC_##field]);
		GARUDA_SCANNER_COUNTERS(SCANNER_COUNTER_JSON_)
#undef SCANNER_COUNTER_JSON_
		cJSON_AddStringToObject(o, CTL_KEY_WORDWAIT, wordwait_variant_name(ww->variant));
		cJSON_AddStringToObject(o, CTL_KEY_WORDWAIT_DETAIL, ww->detail);
		ctl_add_uint(o, CTL_KEY_WAKE_LATE_NS, st.wake_late_ns);
		add_forms(o, CTL_KEY_READINESS, &st.by_form);
		cJSON_AddNumberToObject(o, CTL_KEY_CPU_S, (double)st.cpu_ns / 1e9);
		add_hist(o, CTL_KEY_WAKE_LATENCY, st.detect_hist);
		add_hist(o, CTL_KEY_TIMER_LATENESS, st.timer_hist);
		cJSON_AddItemToArray(arr, o);
	}
	return r;
}

/* ---------------- points ---------------- */

/* A client's deadline-estimator points (points.h): its key (the word: segment and
 * index, or a named point), the prediction and sleep they give now, the records. */
cJSON *ctl_req_points(struct daemon *d, const cJSON *req)
{
	cJSON *err = NULL;
	struct session *s = find_client(d, req, &err);
	if (!s)
		return err;
	struct point_view *v = NULL;
	int n = points_list(s->sink->points, &v);
	if (n < 0) {
		free(v);
		return ctl_error(n, "%s", garuda_strerror(n));
	}
	cJSON *r = ctl_reply_new();
	cJSON *arr = cJSON_AddArrayToObject(r, CTL_KEY_POINTS);
	for (int i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		if (v[i].key & POINT_KEY_NAMED) {
			ctl_add_uint(o, CTL_KEY_POINT, v[i].key & ~POINT_KEY_NAMED);
		} else {
			ctl_add_uint(o, CTL_KEY_SEGMENT, point_key_segment(v[i].key));
			ctl_add_uint(o, CTL_KEY_INDEX, point_key_index(v[i].key));
		}
		if (v[i].predicted)
			ctl_add_uint(o, CTL_KEY_PREDICTION_NS, v[i].prediction_ns);
		else
			cJSON_AddNullToObject(o, CTL_KEY_PREDICTION_NS);
		ctl_add_uint(o, CTL_KEY_SLEEP_NS, v[i].sleep_ns);
		ctl_add_uint(o, CTL_KEY_EXACT, v[i].exact);
		ctl_add_uint(o, CTL_KEY_CENSORED, v[i].censored);
		cJSON_AddItemToArray(arr, o);
	}
	ctl_add_uint(r, CTL_KEY_COUNT, (uint64_t)n);
	free(v);
	return r;
}

/* ---------------- config ---------------- */

/* The config file's keys as it names them (config_to_json: the key table's rows). */
cJSON *ctl_req_config(struct daemon *d, const cJSON *req)
{
	(void)req;
	cJSON *r = ctl_reply_new();
	config_to_json(&d->cfg, r);
	escape_strings(r); /* the file's paths and groups are text from outside */
	add_text_or_null(r, CTL_KEY_CONFIG_PATH, d->cfg.config_path);
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
	ctl_add_uint(r, CTL_KEY_CLIENT, id);
	cJSON_AddBoolToObject(r, CTL_KEY_DISCONNECTED, true);
	return r;
}

cJSON *ctl_req_log_level(struct daemon *d, const cJSON *req)
{
	(void)d;
	const char *level = ctl_arg_string(req, CTL_KEY_LEVEL);
	int old = log_get_level();
	cJSON *r;
	if (!level) {
		r = ctl_reply_new();
		cJSON_AddStringToObject(r, CTL_KEY_LOG_LEVEL, log_level_to_string(old));
		return r;
	}
	int l = log_level_from_string(level);
	if (l < 0)
		return ctl_error(-GARUDA_E_BAD_ARGUMENT,
				 "argument \"level\" must be err, warning, notice, info or debug, "
				 "not \"%.*s\"", CTL_CUT(level, 32));
	log_set_level(l);
	log_notice("control: log level %s (was %s)", log_level_to_string(l), log_level_to_string(old));
	r = ctl_reply_new();
	cJSON_AddStringToObject(r, CTL_KEY_LOG_LEVEL, log_level_to_string(l));
	cJSON_AddStringToObject(r, CTL_KEY_PREVIOUS, log_level_to_string(old));
	return r;
}

cJSON *ctl_req_reload(struct daemon *d, const cJSON *req)
{
	(void)req;
	cJSON *r;
	if (!config_reloadable(&d->cfg)) {
		/* nothing read: where a file would have been looked for (null: --config= or
		 * --no-config, so nowhere) */
		r = ctl_reply_new();
		cJSON_AddBoolToObject(r, CTL_KEY_RELOADED, false);
		cJSON_AddNullToObject(r, CTL_KEY_CONFIG_PATH);
		add_text_or_null(r, CTL_KEY_DEFAULT_CONFIG_PATH, config_default_path(&d->cfg));
		return r;
	}
	log_info("control: reload requested");
	char *why = NULL;
	if (daemon_reload(d, &why) < 0) {
		/* why names the file ("PATH: KEY: reason") */
		r = ctl_error(-GARUDA_E_BAD_ARGUMENT, "%s; the running configuration is kept",
			      why ? why : "the config file");
		free(why);
		return r;
	}
	r = ctl_reply_new();
	cJSON_AddBoolToObject(r, CTL_KEY_RELOADED, true);
	add_text_or_null(r, CTL_KEY_CONFIG_PATH, d->cfg.config_path);
	add_text_or_null(r, CTL_KEY_DEFAULT_CONFIG_PATH, config_default_path(&d->cfg));
	return r;
}
