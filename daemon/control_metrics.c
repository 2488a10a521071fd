/* control_metrics.c — the "metrics" request: garudad's counters and gauges in the
 * Prometheus text exposition format (version 0.0.4), carried as the "text" of a JSON
 * reply so that the control socket speaks JSON only; `garctl metrics` prints the text
 * as is, for node_exporter's textfile collector.
 *
 * Promises: every family has # HELP and # TYPE lines before its samples, and its
 * samples are contiguous; a family with no sample is left out; counter names end in
 * _total; the wake-latency histogram's buckets are cumulative, their le edges are in
 * seconds and increase, and the last is +Inf (equal to _count); its _sum is the sum of
 * the recorded bounds. Who costs what: quota refusals by uid, cgroup key and quota
 * key; per cgroup key (sessions without one under cgroup=""), the scanner's work for
 * the cgroup's connected sessions.
 *
 * The text always fits in one control reply, however many clients, uids and cgroups:
 * a label from outside (a cgroup path) is valid UTF-8 with no control character, one
 * label per path and at most METRICS_LABEL_MAX bytes (label_of()); the families keyed
 * by cgroup or uid name at most so many keys each and sum the rest into "(other)"
 * series, and where even that would not fit, every key is summed there
 * (garuda_metrics_folded says how many keys were). */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "clock.h"
#include "control_internal.h"
#include "control_names.h"
#include "session.h"
#include "wordwait.h"

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A histogram family of every scanner's (labels scanner, numa_node): each one's log2
 * histogram (scanner.h's buckets, ctl_bucket_le_ns) at hist_off in its struct
 * scanner_stats and the sum in ns of what it counted at sum_off. */
static void scanner_hist(FILE *f, const char *name, const char *help, const struct scanner_stats *st,
			 unsigned n, size_t hist_off, size_t sum_off)
{
	family(f, name, "histogram", help);
	for (unsigned i = 0; i < n; i++) {
		const uint64_t *hist = (const uint64_t *)((const char *)&st[i] + hist_off);
		uint64_t sum_ns = *(const uint64_t *)((const char *)&st[i] + sum_off);
		int node = st[i].numa_node;
		uint64_t cum = 0;
		for (unsigned b = 0; b < SCANNER_LAT_BUCKETS; b++) {
			cum += hist[b];
			uint64_t le = ctl_bucket_le_ns(b);
			if (!le)
				continue; /* the open last bucket counts under +Inf only */
			fprintf(f, "%s_bucket{scanner=\"%u\",numa_node=\"%d\",le=\"%.9g\"} %llu\n", name,
				i, node, (double)le / 1e9, (unsigned long long)cum);
		}
		fprintf(f, "%s_bucket{scanner=\"%u\",numa_node=\"%d\",le=\"+Inf\"} %llu\n", name, i,
			node, (unsigned long long)cum);
		fprintf(f, "%s_sum{scanner=\"%u\",numa_node=\"%d\"} %.9f\n", name, i, node,
			(double)sum_ns / 1e9);
		fprintf(f, "%s_count{scanner=\"%u\",numa_node=\"%d\"} %llu\n", name, i, node,
			(unsigned long long)cum);
	}
}

/* ---- labels from outside, and the families keyed by them ---- */

#define METRICS_LABEL_MAX 128 /* bytes of a label value from outside (a cgroup path) */
#define METRICS_LABEL_HEAD (METRICS_LABEL_MAX - 18) /* of a longer one, before \#HASH */
#define METRICS_CGROUPS 16       /* cgroup keys with series of their own */
#define METRICS_UIDS 64          /* uids with garuda_quota_uid_used series of their own */
#define METRICS_REFUSAL_ROWS 32  /* (uid, cgroup key) rows of garuda_quota_refusals_total */
#define METRICS_OTHER QUOTA_REFUSAL_OTHER /* the label of what was folded */

/* The series' label value for path, a cgroup path: ctl_escape()'s text (valid UTF-8,
 * no control character, reversible: \\ and \xHH), and where that is longer than
 * METRICS_LABEL_MAX, its first METRICS_LABEL_HEAD bytes at most (cut at a character or
 * escape), "\#" and the 64-bit FNV-1a hash of the whole path in 16 hex digits: a
 * path's own backslash is "\\", so "\#" marks a cut one, and distinct paths keep
 * distinct labels (two that collide are summed into one series, never two). */
static void label_of(char out[METRICS_LABEL_MAX + 1], const char *path)
{
	if (ctl_escape(out, METRICS_LABEL_MAX + 1, path) <= METRICS_LABEL_MAX)
		return;
	uint64_t h = 0xcbf29ce484222325ull;
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	ctl_escape(out, METRICS_LABEL_HEAD + 1, path);
	size_t n = strlen(out);
	snprintf(out + n, METRICS_LABEL_MAX + 1 - n, "\\#%016llx", (unsigned long long)h);
}

/* A label value as the exposition format writes it: \ and " escaped (label_of()'s
 * text holds no newline). */
static void put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		fputc(*v, f);
	}
}

/* What a scrape folded into "(other)" series, by key kind: garuda_metrics_folded. */
struct folded {
	size_t cgroups, uids, refusal_rows;
};

/* One cgroup key's row of the per-cgroup families: its quota usage (from its quota
 * record, quota.h) and the costs of its connected sessions (proto/counters.h's session
 * table); the sessions without a key are the row with label "". */
struct cg_row {
	char label[METRICS_LABEL_MAX + 1];
	bool quota; /* has a quota record: garuda_quota_cgroup_used's series */
	uint64_t used[Q_KINDS_];
	uint64_t clients, armed, completions, word_loads, scan_ns;
};

struct cg_table {
	struct cg_row *v;
	size_t n, cap;
	bool oom; /* a row could not be added: the families are left out of this scrape */
};

/* A new zeroed row labelled for path (NULL: no key), or NULL out of memory. */
static struct cg_row *cg_push(struct cg_table *t, const char *path)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct cg_row *v = realloc(t->v, cap * sizeof(*v));
		if (!v) {
			t->oom = true;
			return NULL;
		}
		t->v = v;
		t->cap = cap;
	}
	struct cg_row *r = memset(&t->v[t->n++], 0, sizeof(*r));
	if (path)
		label_of(r->label, path);
	return r;
}

static void cg_quota_row(const struct quota_cgroup *c, void *arg)
{
	struct cg_row *r = cg_push(arg, c->path);
	if (!r)
		return;
	r->quota = true;
	for (unsigned k = 0; k < Q_KINDS_; k++)
		r->used[k] = atomic_load(&c->usage.used[k]);
}

/* Add b's figures into a. */
static void cg_add(struct cg_row *a, const struct cg_row *b)
{
	a->quota |= b->quota;
	for (unsigned k = 0; k < Q_KINDS_; k++)
		a->used[k] += b->used[k];
	a->clients += b->clients;
	a->armed += b->armed;
	a->completions += b->completions;
	a->word_loads += b->word_loads;
	a->scan_ns += b->scan_ns;
}

static int cmp_cg_label(const void *a, const void *b)
{
	return strcmp(((const struct cg_row *)a)->label, ((const struct cg_row *)b)->label);
}

/* The keys that keep series of their own: most lines in use, then most scanner time,
 * then most sessions; the sessions without a key ("") always. */
static int cmp_cg_rank(const void *a, const void *b)
{
	const struct cg_row *x = a, *y = b;
	if (!*x->label != !*y->label)
		return *x->label ? 1 : -1;
	if (x->used[Q_LINES] != y->used[Q_LINES])
		return x->used[Q_LINES] > y->used[Q_LINES] ? -1 : 1;
	if (x->scan_ns != y->scan_ns)
		return x->scan_ns > y->scan_ns ? -1 : 1;
	if (x->clients != y->clients)
		return x->clients > y->clients ? -1 : 1;
	return strcmp(x->label, y->label);
}

/* The per-cgroup families, from one table of cgroup keys: the quota records (cgroups
 * with a live sink) and the connected sessions' costs summed by key. The first
 * `named` keys by cmp_cg_rank() keep series of their own, the rest are summed into
 * cgroup="(other)" (counted in fold->cgroups); series in label order. The cost
 * families are sums over the sessions connected now, so they fall when one of a
 * cgroup's sessions ends: the help texts say so. */
static void cgroup_families(FILE *f, struct daemon *d, size_t named, struct folded *fold)
{
	struct cg_table t = { 0 };
	quota_cgroups_each(&d->quotas, cg_quota_row, &t);
	for (struct session *s = d->sessions; s; s = s->next) {
		struct session_view sv;
		session_describe(s, &sv);
		struct cg_row *r = cg_push(&t, NULL);
		if (!r)
			break;
		*r = (struct cg_row){ .clients = 1,
				      .armed = sv.armed,
				      .completions = sv.counters[SN_completions],
				      .word_loads = sv.counters[SN_word_loads],
				      .scan_ns = sv.counters[SN_scan_ns] };
		if (sv.cgroup)
			label_of(r->label, sv.cgroup);
	}
	if (t.oom) {
		free(t.v);
		return;
	}
	/* one row per label */
	if (t.n > 1)
		qsort(t.v, t.n, sizeof(*t.v), cmp_cg_label);
	size_t n = 0;
	for (size_t i = 0; i < t.n; i++) {
		if (n && strcmp(t.v[n - 1].label, t.v[i].label) == 0)
			cg_add(&t.v[n - 1], &t.v[i]);
		else
			t.v[n++] = t.v[i];
	}
	/* the first `named` ("" apart) keep their own; the rest become the last row */
	if (n > 1)
		qsort(t.v, n, sizeof(*t.v), cmp_cg_rank);
	size_t keep = n && !*t.v[0].label ? named + 1 : named;
	if (n > keep) {
		struct cg_row other = { .label = METRICS_OTHER };
		for (size_t i = keep; i < n; i++)
			cg_add(&other, &t.v[i]);
		fold->cgroups += n - keep;
		t.v[keep] = other;
		n = keep + 1;
	}
	if (n > 1)
		qsort(t.v, n, sizeof(*t.v), cmp_cg_label);

	bool head = false;
	for (size_t i = 0; i < n; i++) {
		if (!t.v[i].quota)
			continue;
		if (!head)
			family(f, "garuda_quota_cgroup_used", "gauge",
			       "Quota in use, by client cgroup (v2 path; \"" METRICS_OTHER "\": the cgroups "
			       "past the first " GARUDA_STR(METRICS_CGROUPS) " by lines in use) and quota "
			       "(quota.cgroup.NAME).");
		head = true;
		for (unsigned k = 0; k < Q_KINDS_; k++) {
			fputs("garuda_quota_cgroup_used{cgroup=\"", f);
			put_label(f, t.v[i].label);
			fprintf(f, "\",quota=\"%s\"} %llu\n", quota_kind_name(k),
				(unsigned long long)t.v[i].used[k]);
		}
	}
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "garuda_cgroup_clients", "gauge",
		  "Connected client sessions, by cgroup key (v2 path; \"\": sessions without one; \""
		  METRICS_OTHER "\": the keys past the first " GARUDA_STR(METRICS_CGROUPS) " by lines in "
		  "use)." },
		{ "garuda_cgroup_armed", "gauge", "Armed waits of the connected sessions, by cgroup key." },
		{ "garuda_cgroup_completions_total", "counter",
		  "Readiness delivered to the connected sessions, by cgroup key (summed over the sessions "
		  "connected now: falls when one ends)." },
		{ "garuda_cgroup_word_loads_total", "counter",
		  "Loads of the words of the connected sessions by the scanners (a look at one due word: "
		  "the scanner's work), by cgroup key (summed over the sessions connected now: falls "
		  "when one ends)." },
		{ "garuda_cgroup_scan_seconds_total", "counter",
		  "Scanner time attributed to the connected sessions (each step's time shared by the "
		  "words it looked at), by cgroup key (summed over the sessions connected now: falls "
		  "when one ends)." },
	};
	for (unsigned k = 0; d->nsessions && k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(f, fam[k].name, fam[k].type, fam[k].help);
		for (size_t g = 0; g < n; g++) {
			const struct cg_row *r = &t.v[g];
			if (!r->clients)
				continue; /* a quota record whose sessions ended */
			fprintf(f, "%s{cgroup=\"", fam[k].name);
			put_label(f, r->label);
			fputs("\"} ", f);
			switch (k) {
			case 0: fprintf(f, "%llu\n", (unsigned long long)r->clients); break;
			case 1: fprintf(f, "%llu\n", (unsigned long long)r->armed); break;
			case 2: fprintf(f, "%llu\n", (unsigned long long)r->completions); break;
			case 3: fprintf(f, "%llu\n", (unsigned long long)r->word_loads); break;
			default: fprintf(f, "%.9f\n", (double)r->scan_ns / 1e9); break;
			}
		}
	}
	free(t.v);
}

/* One (uid, cgroup key) row of garuda_quota_refusals_total. */
struct refusal_row {
	uid_t uid;
	bool other; /* uid="(other)" */
	char label[METRICS_LABEL_MAX + 1];
	uint64_t n[QS_SCOPES_][Q_KINDS_];
};

/* garuda_quota_refusals_total{uid,cgroup,key}: each uid's refusal rows (quota.h), the
 * counts that are not 0; left out while nothing was refused. The first `named` rows,
 * oldest first (uids in the order they first connected, a uid's rows in the order of
 * their first refusal: a row never moves up, so the folded counts only grow), keep
 * series of their own; the rest are summed under uid="(other)",cgroup="(other)". */
static void quota_refusals(FILE *f, struct daemon *d, size_t named, struct folded *fold)
{
	size_t nuids = 0, nrows = 0;
	for (const struct quota_uid *q = d->quotas.head; q; q = q->next, nuids++)
		nrows += q->nrefusals;
	if (!nrows)
		return;
	const struct quota_uid **uids = malloc(nuids * sizeof(*uids));
	struct refusal_row *v = calloc(named + 1, sizeof(*v));
	if (!uids || !v) {
		free(uids);
		free(v);
		return; /* out of memory: left out of this scrape */
	}
	size_t i = nuids, n = 0;
	for (const struct quota_uid *q = d->quotas.head; q; q = q->next)
		uids[--i] = q; /* the list is newest first */
	struct refusal_row other = { .other = true, .label = METRICS_OTHER };
	bool folded = false;
	for (i = 0; i < nuids; i++)
		for (const struct quota_refusals *r = uids[i]->refusals; r; r = r->next) {
			struct refusal_row *to = &other;
			if (n < named) {
				char label[METRICS_LABEL_MAX + 1] = "";
				if (r->cgroup)
					label_of(label, r->cgroup);
				size_t j = 0; /* two cgroup keys of one uid with one label: one series */
				while (j < n && (v[j].uid != uids[i]->uid || strcmp(v[j].label, label) != 0))
					j++;
				to = &v[j];
				if (j == n) {
					n++;
					to->uid = uids[i]->uid;
					memcpy(to->label, label, sizeof(label));
				}
			} else {
				folded = true;
				fold->refusal_rows++;
			}
			for (unsigned sc = 0; sc < QS_SCOPES_; sc++)
				for (unsigned k = 0; k < Q_KINDS_; k++)
					to->n[sc][k] += r->n[sc][k];
		}
	if (folded)
		v[n++] = other;
	bool head = false;
	for (i = 0; i < n; i++)
		for (unsigned sc = 0; sc < QS_SCOPES_; sc++)
			for (unsigned k = 0; k < Q_KINDS_; k++) {
				if (!v[i].n[sc][k])
					continue;
				if (!head)
					family(f, "garuda_quota_refusals_total", "counter",
					       "Requests and connections refused by a quota, by client uid, "
					       "cgroup key (\"\": none; \"" QUOTA_REFUSAL_OTHER "\": a uid's "
					       "cgroup keys past its first " GARUDA_STR(QUOTA_REFUSAL_KEYS)
					       ", \"\" counting as one) and the quota key that refused "
					       "(quota.SCOPE.NAME); uid and cgroup \"" METRICS_OTHER "\": the "
					       "(uid, cgroup key) rows past the first "
					       GARUDA_STR(METRICS_REFUSAL_ROWS) ".");
				head = true;
				if (v[i].other)
					fputs("garuda_quota_refusals_total{uid=\"" METRICS_OTHER "\",cgroup=\"",
					      f);
				else
					fprintf(f, "garuda_quota_refusals_total{uid=\"%u\",cgroup=\"",
						(unsigned)v[i].uid);
				put_label(f, v[i].label);
				fprintf(f, "\",key=\"quota.%s.%s\"} %llu\n", quota_scope_name(sc),
					quota_kind_name(k), (unsigned long long)v[i].n[sc][k]);
			}
	free(uids);
	free(v);
}

static int cmp_uid_rank(const void *a, const void *b)
{
	const struct quota_uid *x = *(const struct quota_uid *const *)a;
	const struct quota_uid *y = *(const struct quota_uid *const *)b;
	uint64_t cx = atomic_load(&x->usage.used[Q_CONNECTIONS]);
	uint64_t cy = atomic_load(&y->usage.used[Q_CONNECTIONS]);
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return x->uid < y->uid ? -1 : x->uid > y->uid;
}

/* garuda_quota_uid_used{uid,quota} for the uids with a session: the first `named` by
 * connections keep series of their own; the rest are summed under
 * uid="(other)". Left out with no session. */
static void quota_uids(FILE *f, struct daemon *d, size_t named, struct folded *fold)
{
	size_t n = 0;
	for (const struct quota_uid *q = d->quotas.head; q; q = q->next)
		n += atomic_load(&q->usage.used[Q_CONNECTIONS]) != 0;
	const struct quota_uid **v = n ? malloc(n * sizeof(*v)) : NULL;
	if (!v)
		return; /* none, or out of memory: left out of this scrape */
	n = 0;
	for (const struct quota_uid *q = d->quotas.head; q; q = q->next)
		if (atomic_load(&q->usage.used[Q_CONNECTIONS]))
			v[n++] = q;
	qsort(v, n, sizeof(*v), cmp_uid_rank);
	size_t keep = n < named ? n : named;
	uint64_t other[Q_KINDS_] = { 0 };
	for (size_t i = keep; i < n; i++)
		for (unsigned k = 0; k < Q_KINDS_; k++)
			other[k] += atomic_load(&v[i]->usage.used[k]);
	fold->uids += n - keep;
	family(f, "garuda_quota_uid_used", "gauge",
	       "Quota in use, by client uid (\"" METRICS_OTHER "\": the uids past the first "
	       GARUDA_STR(METRICS_UIDS) " by connections) and quota (quota.uid.NAME).");
	for (size_t i = 0; i < keep; i++)
		for (unsigned k = 0; k < Q_KINDS_; k++)
			fprintf(f, "garuda_quota_uid_used{uid=\"%u\",quota=\"%s\"} %llu\n",
				(unsigned)v[i]->uid, quota_kind_name(k),
				(unsigned long long)atomic_load(&v[i]->usage.used[k]));
	for (unsigned k = 0; keep < n && k < Q_KINDS_; k++)
		fprintf(f, "garuda_quota_uid_used{uid=\"" METRICS_OTHER "\",quota=\"%s\"} %llu\n",
			quota_kind_name(k), (unsigned long long)other[k]);
	free(v);
}

/* ---- the process ---- */

/* Resident bytes from /proc/self/statm (its second field, in pages); -1 when unread. */
static long long resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	unsigned long long size, res;
	int n = f ? fscanf(f, "%llu %llu", &size, &res) : 0;
	if (f)
		fclose(f);
	long page = sysconf(_SC_PAGESIZE);
	return n == 2 && page > 0 ? (long long)(res * (unsigned long long)page) : -1;
}

static void process_families(FILE *f)
{
	/* garuda_-prefixed: node_exporter, whose textfile collector reads these, exports
	 * process_* of its own */
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		family(f, "garuda_process_cpu_seconds_total", "counter",
		       "CPU time garudad used, user and system, all threads (scanners, loop).");
		fprintf(f, "garuda_process_cpu_seconds_total %.6f\n",
			(double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
				(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	}
	long long rss = resident_bytes();
	if (rss >= 0) {
		family(f, "garuda_process_resident_memory_bytes", "gauge", "garudad's resident memory in bytes.");
		fprintf(f, "garuda_process_resident_memory_bytes %lld\n", rss);
	}
}

char *ctl_metrics_text(struct daemon *d, bool fold_all)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	struct ctl_totals t;
	ctl_totals(d, &t);
	struct scanner_stats st[NUMA_MAX_NODES];
	for (unsigned i = 0; i < d->nscanners; i++)
		scanner_get_stats(d->scanner[i], &st[i]);

	family(f, "garuda_info", "gauge", "garudad build and event loop (always 1).");
	fprintf(f, "garuda_info{version=\"");
	put_label(f, GARUDA_VERSION);
	fprintf(f, "\",event_loop=\"%s\"} 1\n", event_loop_name(loop_kind(d->loop)));
	const struct wordwait *ww = scanner_wordwait(&d->tuning);
	family(f, "garuda_wordwait_info", "gauge",
	       "The hardware word wait of the scanners' spin steps (spin: none) and config wordwait (always 1).");
	fprintf(f, "garuda_wordwait_info{variant=\"%s\",mode=\"%s\"} 1\n", wordwait_variant_name(ww->variant),
		d->cfg.wordwait ? "auto" : "off");
	family(f, "garuda_uptime_seconds", "gauge", "Seconds since garudad started.");
	fprintf(f, "garuda_uptime_seconds %.3f\n", (double)(garuda_now_ns() - d->started_ns) / 1e9);

	/* gauges */
	family(f, "garuda_clients", "gauge", "Connected client sessions.");
	fprintf(f, "garuda_clients %u\n", d->nsessions);
	family(f, "garuda_segments", "gauge", "Segments alive (mapped by the daemon).");
	fprintf(f, "garuda_segments %u\n", segment_count());
	family(f, "garuda_bindings", "gauge", "Slots bound to an eventfd.");
	fprintf(f, "garuda_bindings %u\n", t.bindings);
	family(f, "garuda_armed", "gauge", "Armed descriptors the scanners watch.");
	fprintf(f, "garuda_armed %llu\n", (unsigned long long)t.armed);

	/* counters */
	family(f, "garuda_completions_total", "counter", "Readiness delivered (armed targets reached).");
	fprintf(f, "garuda_completions_total %llu\n", (unsigned long long)t.completions);
	family(f, "garuda_arms_total", "counter", "ARM requests accepted.");
	fprintf(f, "garuda_arms_total %llu\n", (unsigned long long)d->arms_total);
	family(f, "garuda_readiness_total", "counter", "Readiness delivered, by form.");
	FORM_EACH(i)
		fprintf(f, "garuda_readiness_total{form=\"%s\"} %llu\n", form_name(i),
			(unsigned long long)t.by_form.n[i]);
	family(f, "garuda_sessions_total", "counter", "Client connections accepted.");
	fprintf(f, "garuda_sessions_total %llu\n", (unsigned long long)d->sessions_total);
	family(f, "garuda_errors_total", "counter", "Errors sent to clients, by registry code.");
	for (int i = 0; i < ERRCOUNT_SLOTS; i++) {
		const char *name = garuda_errcode_name(GARUDA_ERR_BASE + i);
		if (name)
			fprintf(f, "garuda_errors_total{code=\"%d\",name=\"%s\"} %llu\n", GARUDA_ERR_BASE + i,
				name, (unsigned long long)d->errors_by_code[i]);
	}
	struct folded fold = { 0 };
	quota_refusals(f, d, fold_all ? 0 : METRICS_REFUSAL_ROWS, &fold);
	family(f, "garuda_quota_limit", "gauge",
	       "The quota limits in force, by scope (quota.SCOPE: connection, uid, cgroup, daemon) and "
	       "quota (quota.SCOPE.NAME).");
	for (unsigned sc = 0; sc < QS_SCOPES_; sc++)
		for (unsigned k = 0; k < Q_KINDS_; k++)
			fprintf(f, "garuda_quota_limit{scope=\"%s\",quota=\"%s\"} %llu\n", quota_scope_name(sc),
				quota_kind_name(k),
				(unsigned long long)quota_limit(quota_scope_limits(&d->cfg, sc), k));
	family(f, "garuda_quota_daemon_used", "gauge",
	       "Quota in use by all clients together, by quota (quota.daemon.NAME).");
	for (unsigned k = 0; k < Q_KINDS_; k++)
		fprintf(f, "garuda_quota_daemon_used{quota=\"%s\"} %llu\n", quota_kind_name(k),
			(unsigned long long)atomic_load(&d->quotas.usage.used[k]));

	/* per quota key: uids with a session, cgroups with a live sink (quota.h); a family
	 * with no sample is left out (with no client, both are) */
	quota_uids(f, d, fold_all ? 0 : METRICS_UIDS, &fold);
	cgroup_families(f, d, fold_all ? 0 : METRICS_CGROUPS, &fold);
	family(f, "garuda_metrics_folded", "gauge",
	       "Keys whose series this scrape summed into \"" METRICS_OTHER "\" ones, by kind: cgroup "
	       "keys past the first " GARUDA_STR(METRICS_CGROUPS) ", uids past the first "
	       GARUDA_STR(METRICS_UIDS) ", refusal rows past the first " GARUDA_STR(METRICS_REFUSAL_ROWS)
	       "; all of them when the text would not fit in one control reply otherwise.");
	fprintf(f, "garuda_metrics_folded{keys=\"cgroup\"} %zu\n", fold.cgroups);
	fprintf(f, "garuda_metrics_folded{keys=\"uid\"} %zu\n", fold.uids);
	fprintf(f, "garuda_metrics_folded{keys=\"refusal_row\"} %zu\n", fold.refusal_rows);
	process_families(f);
	family(f, "garuda_config_reloads_total", "counter", "Reloads of the config file (garctl reload, SIGHUP).");
	fprintf(f, "garuda_config_reloads_total %llu\n", (unsigned long long)d->reloads_total);
	family(f, "garuda_config_reload_failures_total", "counter",
	       "Reloads that failed: the file was bad, the running configuration was kept.");
	fprintf(f, "garuda_config_reload_failures_total %llu\n", (unsigned long long)d->reload_failures_total);
	if (d->reloads_total) { /* none yet: left out */
		family(f, "garuda_config_last_reload_successful", "gauge",
		       "Whether the last reload applied the file (1) or failed (0).");
		fprintf(f, "garuda_config_last_reload_successful %d\n", d->reload_ok ? 1 : 0);
		family(f, "garuda_config_last_reload_timestamp_seconds", "gauge",
		       "When the last reload ended, successful or not (Unix time).");
		fprintf(f, "garuda_config_last_reload_timestamp_seconds %.3f\n", (double)d->reload_realtime_ns / 1e9);
	}

	/* per scanner */
	family(f, "garuda_scanner_armed", "gauge", "Armed descriptors, by scanner.");
	for (unsigned i = 0; i < d->nscanners; i++)
		fprintf(f, "garuda_scanner_armed{scanner=\"%u\",numa_node=\"%d\"} %llu\n", i, st[i].numa_node,
			(unsigned long long)st[i].armed);
	/* every counter of proto/counters.h's table: its family, help text and samples */
	static const struct {
		const char *name, *help;
		enum garuda_scanner_counter c;
	} counters[] = {
#define SCANNER_COUNTER_METRIC_(field, metric, help) { metric, help, SC_##field },
		GARUDA_SCANNER_COUNTERS(SCANNER_COUNTER_METRIC_)
#undef SCANNER_COUNTER_METRIC_
	};
	for (unsigned k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
		family(f, counters[k].name, "counter", counters[k].help);
		size_t len = strlen(counters[k].name);
		bool secs = len > 14 && strcmp(counters[k].name + len - 14, "_seconds_total") == 0;
		for (unsigned i = 0; i < d->nscanners; i++) {
			uint64_t v = st[i].counters[counters[k].c];
			if (secs) /* a field_ns counter (counters.h) */
				fprintf(f, "%s{scanner=\"%u\",numa_node=\"%d\"} %.9f\n", counters[k].name, i,
					st[i].numa_node, (double)v / 1e9);
			else
				fprintf(f, "%s{scanner=\"%u\",numa_node=\"%d\"} %llu\n", counters[k].name, i,
					st[i].numa_node, (unsigned long long)v);
		}
	}
	family(f, "garuda_scanner_cpu_seconds_total", "counter", "CPU time used by a scanner thread.");
	for (unsigned i = 0; i < d->nscanners; i++)
		fprintf(f, "garuda_scanner_cpu_seconds_total{scanner=\"%u\",numa_node=\"%d\"} %.9f\n", i,
			st[i].numa_node, (double)st[i].cpu_ns / 1e9);

	/* the figure garctl's GAP50/GAP99 show (scanner.c count_fired(): since_ns) */
	/* the scanners' histograms: the look gap per completion (the figure garctl's
	 * GAP50/GAP99 show: scanner.c count_fired(), since_ns), and the timer's lateness */
	static const struct {
		const char *name, *help;
		size_t hist_off, sum_off;
	} hists[] = {
		{ "garuda_wake_latency_seconds",
		  "Per completion, the gap between its scanner's previous look at the word and the look "
		  "that saw the target reached, by scanner (log2 buckets): the store landed inside it, so "
		  "it bounds word reached -> scanner saw it from above, and after a timed sleep it spans "
		  "the sleep. Not the client's wake latency: the store may have landed anywhere inside "
		  "the gap, and delivery and the client's own wake come after it.",
		  offsetof(struct scanner_stats, detect_hist), offsetof(struct scanner_stats, detect_ns_sum) },
		{ "garuda_timer_lateness_seconds",
		  "Per timed sleep of a scanner that ran to its time, how late the wake came (log2 "
		  "buckets): the host's timer and scheduling. Every sleeping plan's lateness includes it; "
		  "a tail of milliseconds here is the host's (a virtual machine without halt polling), "
		  "not garudad's.",
		  offsetof(struct scanner_stats, timer_hist), offsetof(struct scanner_stats, timer_ns_sum) },
	};
	for (size_t h = 0; h < sizeof(hists) / sizeof(hists[0]); h++)
		scanner_hist(f, hists[h].name, hists[h].help, st, d->nscanners, hists[h].hist_off,
			     hists[h].sum_off);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Bytes s takes inside a JSON string as cJSON prints it. */
static size_t json_len(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += strchr("\"\\\b\f\n\r\t", *p) ? 2 : *p < 0x20 ? 6 : 1;
	return n;
}

cJSON *ctl_req_metrics(struct daemon *d, const cJSON *req)
{
	(void)req;
	/* the reply must fit (garuda-textfile has nothing else): past the bounds on the
	 * keys, folded as a whole; 256 bytes for the reply's other keys */
	char *text = ctl_metrics_text(d, false);
	if (text && json_len(text) + 256 > CONTROL_MAX_REPLY) {
		free(text);
		text = ctl_metrics_text(d, true);
	}
	if (!text)
		return ctl_error(-ENOMEM, "%s", garuda_strerror(-ENOMEM));
	cJSON *r = ctl_reply_new();
	cJSON_AddStringToObject(r, CTL_KEY_CONTENT_TYPE, "text/plain; version=0.0.4");
	cJSON_AddStringToObject(r, CTL_KEY_TEXT, text);
	free(text);
	return r;
}
