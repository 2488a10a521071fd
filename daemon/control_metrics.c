/* control_metrics.c — the "metrics" request: garudad's counters and gauges in the
 * Prometheus text exposition format (version 0.0.4), carried as the "text" of a JSON
 * reply so that the control socket speaks JSON only; `garctl metrics` prints the text
 * as is, for node_exporter's textfile collector.
 *
 * Promises: every family has # HELP and # TYPE lines before its samples, and its
 * samples are contiguous; a family with no sample is left out; counter names end in
 * _total; label values are escaped; the wake-latency histogram's buckets are
 * cumulative, their le edges are in seconds and increase, and the last is +Inf (equal
 * to _count); its _sum is the sum of the recorded bounds. Who costs what: quota
 * refusals by uid, cgroup key and quota key; per cgroup key (sessions without one
 * under cgroup=""), the scanner's work for the cgroup's connected sessions. */
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

/* Bytes of the valid UTF-8 sequence at s (1..4), or 0 for an invalid byte. */
static unsigned utf8_len(const unsigned char *s)
{
	unsigned n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		   : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	for (unsigned i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))) ||
	    (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))))
		return 0; /* overlong, surrogate, beyond U+10FFFF */
	return n;
}

/* A label value with \, " and newline escaped, and each byte that is not UTF-8 (a
 * cgroup name may hold any byte but /) as U+FFFD: the format wants UTF-8. */
static void label_value(FILE *f, const char *str)
{
	for (const unsigned char *s = (const unsigned char *)str; *s;) {
		unsigned n = utf8_len(s);
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else if (!n)
			fputs("\xef\xbf\xbd", f);
		else
			fwrite(s, 1, n, f);
		s += n ? n : 1;
	}
}

struct cgroup_samples {
	FILE *f;
	bool head; /* the family's # lines are out */
};

static void cgroup_samples(const struct quota_cgroup *c, void *arg)
{
	struct cgroup_samples *cs = arg;
	if (!cs->head)
		family(cs->f, "garuda_quota_cgroup_used", "gauge",
		       "Quota in use, by client cgroup (v2 path) and quota (quota.cgroup.NAME).");
	cs->head = true;
	for (unsigned k = 0; k < Q_KINDS_; k++) {
		fputs("garuda_quota_cgroup_used{cgroup=\"", cs->f);
		label_value(cs->f, c->path);
		fprintf(cs->f, "\",quota=\"%s\"} %llu\n", quota_kind_name(k),
			(unsigned long long)atomic_load(&c->usage.used[k]));
	}
}


/* ---- who costs what ---- */

/* One connected session's cost, under its cgroup key (NULL: none). */
struct cost_row {
	const char *cgroup;
	uint64_t clients, armed, completions, word_loads, scan_ns;
};

static int cmp_cost(const void *a, const void *b)
{
	const char *x = ((const struct cost_row *)a)->cgroup, *y = ((const struct cost_row *)b)->cgroup;
	if (!x || !y)
		return (y == NULL) - (x == NULL); /* no key first */
	return strcmp(x, y);
}

/* The per-cgroup families: the connected sessions' counters (proto/counters.h's session
 * table) summed by cgroup key, one series per key in path order; sessions without a key
 * under cgroup="". A sum over connected sessions, so it falls when one of a cgroup's
 * sessions ends: the help texts say so. */
static void cgroup_costs(FILE *f, struct daemon *d)
{
	if (!d->nsessions)
		return;
	struct cost_row *v = calloc(d->nsessions, sizeof(*v));
	if (!v)
		return; /* out of memory: these families are left out of this scrape */
	size_t n = 0;
	for (struct session *s = d->sessions; s && n < d->nsessions; s = s->next) {
		struct session_view sv;
		session_describe(s, &sv);
		v[n++] = (struct cost_row){ sv.cgroup, 1, sv.armed, sv.counters[SN_completions],
					    sv.counters[SN_word_loads], sv.counters[SN_scan_ns] };
	}
	qsort(v, n, sizeof(*v), cmp_cost);
	/* one group per run of equal keys */
	size_t ng = 0;
	for (size_t i = 0; i < n; i++) {
		if (ng && !cmp_cost(&v[ng - 1], &v[i])) {
			v[ng - 1].clients += v[i].clients;
			v[ng - 1].armed += v[i].armed;
			v[ng - 1].completions += v[i].completions;
			v[ng - 1].word_loads += v[i].word_loads;
			v[ng - 1].scan_ns += v[i].scan_ns;
			continue;
		}
		v[ng++] = v[i];
	}
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "garuda_cgroup_clients", "gauge",
		  "Connected client sessions, by cgroup key (v2 path; \"\": sessions without one)." },
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
	for (unsigned k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
		family(f, fam[k].name, fam[k].type, fam[k].help);
		for (size_t g = 0; g < ng; g++) {
			fprintf(f, "%s{cgroup=\"", fam[k].name);
			label_value(f, v[g].cgroup ? v[g].cgroup : "");
			fputs("\"} ", f);
			switch (k) {
			case 0: fprintf(f, "%llu\n", (unsigned long long)v[g].clients); break;
			case 1: fprintf(f, "%llu\n", (unsigned long long)v[g].armed); break;
			case 2: fprintf(f, "%llu\n", (unsigned long long)v[g].completions); break;
			case 3: fprintf(f, "%llu\n", (unsigned long long)v[g].word_loads); break;
			default: fprintf(f, "%.9f\n", (double)v[g].scan_ns / 1e9); break;
			}
		}
	}
	free(v);
}

/* garuda_quota_refusals_total{uid,cgroup,key}: each uid's refusal rows (quota.h), the
 * counts that are not 0; left out while nothing was refused. */
static void quota_refusals(FILE *f, struct daemon *d)
{
	bool head = false;
	for (const struct quota_uid *q = d->quotas.head; q; q = q->next)
		for (const struct quota_refusals *r = q->refusals; r; r = r->next)
			for (unsigned sc = 0; sc < QS_SCOPES_; sc++)
				for (unsigned k = 0; k < Q_KINDS_; k++) {
					if (!r->n[sc][k])
						continue;
					if (!head)
						family(f, "garuda_quota_refusals_total", "counter",
						       "Requests and connections refused by a quota, by client uid, "
						       "cgroup key (\"\": none; \"" QUOTA_REFUSAL_OTHER "\": a uid's "
						       "cgroup keys past its first " GARUDA_STR(QUOTA_REFUSAL_KEYS)
						       ", \"\" counting as one) and the quota key that refused "
						       "(quota.SCOPE.NAME).");
					head = true;
					fprintf(f, "garuda_quota_refusals_total{uid=\"%u\",cgroup=\"", (unsigned)q->uid);
					label_value(f, r->cgroup ? r->cgroup : "");
					fprintf(f, "\",key=\"quota.%s.%s\"} %llu\n", quota_scope_name(sc),
						quota_kind_name(k), (unsigned long long)r->n[sc][k]);
				}
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

char *ctl_metrics_text(struct daemon *d)
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
	label_value(f, GARUDA_VERSION);
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
	quota_refusals(f, d);
	family(f, "garuda_quota_limit", "gauge",
	       "The quota limits in force, by scope (quota.SCOPE: connection, uid, cgroup) and quota "
	       "(quota.SCOPE.NAME).");
	for (unsigned sc = 0; sc < QS_SCOPES_; sc++)
		for (unsigned k = 0; k < Q_KINDS_; k++)
			fprintf(f, "garuda_quota_limit{scope=\"%s\",quota=\"%s\"} %llu\n", quota_scope_name(sc),
				quota_kind_name(k),
				(unsigned long long)quota_limit(quota_scope_limits(&d->cfg, sc), k));

	/* per quota key: uids with a session, cgroups with a live sink (quota.h); a family
	 * with no sample is left out (with no client, both are) */
	bool head = false;
	for (const struct quota_uid *q = d->quotas.head; q; q = q->next) {
		if (!atomic_load(&q->usage.used[Q_CONNECTIONS]))
			continue;
		if (!head)
			family(f, "garuda_quota_uid_used", "gauge",
			       "Quota in use, by client uid and quota (quota.uid.NAME).");
		head = true;
		for (unsigned k = 0; k < Q_KINDS_; k++)
			fprintf(f, "garuda_quota_uid_used{uid=\"%u\",quota=\"%s\"} %llu\n", (unsigned)q->uid,
				quota_kind_name(k), (unsigned long long)atomic_load(&q->usage.used[k]));
	}
	struct cgroup_samples cs = { f, false };
	quota_cgroups_each(&d->quotas, cgroup_samples, &cs);
	cgroup_costs(f, d);
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

cJSON *ctl_req_metrics(struct daemon *d, const cJSON *req)
{
	(void)req;
	char *text = ctl_metrics_text(d);
	if (!text)
		return ctl_error(-ENOMEM, "%s", garuda_strerror(-ENOMEM));
	cJSON *r = ctl_reply_new();
	cJSON_AddStringToObject(r, CTL_KEY_CONTENT_TYPE, "text/plain; version=0.0.4");
	cJSON_AddStringToObject(r, CTL_KEY_TEXT, text);
	free(text);
	return r;
}
