/* top.c — `garctl top`: status, scanners and clients sampled every -d seconds and
 * shown as rates: completions per second per client and per scanner, scanner CPU
 * share, and wake-latency p50/p99 from the histogram deltas between two samples.
 * On a terminal it redraws in place; with -b (or when stdout is not a terminal) it
 * prints one frame after another, each headed by its UTC time; with -j, one JSON object
 * per frame, one per line (JSON lines). -n stops after that many frames.
 *
 * Promises: the first frame has no previous sample, so its rates print as "-" and its
 * percentiles cover everything since the daemon started; later frames cover only the
 * interval since the previous one. Per-client percentiles show when the daemon's
 * clients reply carries a per-client "wake_latency" histogram, else "-". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "control_names.h"
#include "garctl.h"

struct sample {
	double t; /* CLOCK_MONOTONIC seconds */
	cJSON *status, *clients, *scanners;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sample_free(struct sample *s)
{
	cJSON_Delete(s->status);
	cJSON_Delete(s->clients);
	cJSON_Delete(s->scanners);
	memset(s, 0, sizeof(*s));
}

static int sample_take(struct conn *c, struct sample *s)
{
	cJSON *req;
	int rc;
	memset(s, 0, sizeof(*s));
	s->t = now_s();
	req = request_new(CTL_REQ_STATUS);
	rc = conn_call(c, req, &s->status);
	cJSON_Delete(req);
	if (!rc) {
		req = request_new(CTL_REQ_CLIENTS);
		rc = conn_call_all(c, req, CTL_KEY_CLIENTS, &s->clients);
		cJSON_Delete(req);
	}
	if (!rc) {
		req = request_new(CTL_REQ_SCANNERS);
		rc = conn_call(c, req, &s->scanners);
		cJSON_Delete(req);
	}
	if (rc)
		sample_free(s);
	return rc;
}

/* The element of arr whose key equals v. */
static const cJSON *find_by(const cJSON *arr, const char *key, double v)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
		if (jnum(it, key) == v)
			return it;
	return NULL;
}

/* Bucket counts of cur's wake_latency minus prev's (prev may be NULL). */
static int latency_delta(const cJSON *cur, const cJSON *prev, double *out, int cap)
{
	const cJSON *cb = jarr(cJSON_GetObjectItemCaseSensitive(cur, CTL_KEY_WAKE_LATENCY), "buckets");
	const cJSON *pb = prev ? jarr(cJSON_GetObjectItemCaseSensitive(prev, CTL_KEY_WAKE_LATENCY), "buckets") : NULL;
	int n = cb ? cJSON_GetArraySize(cb) : 0;
	if (n > cap)
		n = cap;
	for (int i = 0; i < n; i++) {
		out[i] = jnum(cJSON_GetArrayItem(cb, i), "count");
		if (pb)
			out[i] -= jnum(cJSON_GetArrayItem(pb, i), "count");
		if (out[i] < 0)
			out[i] = 0; /* the daemon restarted between samples */
	}
	return n;
}

static void percentiles(const cJSON *cur, const cJSON *prev, char *p50, char *p99, size_t len)
{
	const cJSON *lat = cJSON_GetObjectItemCaseSensitive(cur, CTL_KEY_WAKE_LATENCY);
	double counts[64];
	if (!lat) {
		snprintf(p50, len, "-");
		snprintf(p99, len, "-");
		return;
	}
	latency_delta(cur, prev, counts, 64);
	fmt_percentile(p50, len, lat, counts, 0.50);
	fmt_percentile(p99, len, lat, counts, 0.99);
}

static void rate(char *buf, size_t len, const cJSON *cur, const cJSON *prev, const char *key, double dt)
{
	if (!prev || dt <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", (jnum(cur, key) - jnum(prev, key)) / dt);
}

struct client_row {
	const cJSON *cur, *prev;
	double rate;
};

static int cmp_rows(const void *a, const void *b)
{
	const struct client_row *x = a, *y = b;
	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	double i = jnum(x->cur, CTL_KEY_ID), j = jnum(y->cur, CTL_KEY_ID);
	return i < j ? -1 : i > j;
}

static void frame(const struct options *o, const struct sample *cur, const struct sample *prev)
{
	double dt = prev ? cur->t - prev->t : 0;
	const cJSON *st = cur->status;
	char total_rate[32];
	rate(total_rate, sizeof(total_rate), st, prev ? prev->status : NULL, "completions", dt);
	printf("garudad %s, pid %.0f, %s: %.0f clients, %.0f segments, %.0f armed, %.0f completions (%s/s)\n\n",
	       jstr(st, CTL_KEY_DAEMON_VERSION), jnum(st, CTL_KEY_PID), jstr(st, CTL_KEY_EVENT_LOOP), jnum(st, CTL_KEY_CLIENTS),
	       jnum(st, CTL_KEY_SEGMENTS), jnum(st, CTL_KEY_ARMED), jnum(st, CTL_KEY_COMPLETIONS), total_rate);

	static const char *const sh[] = { "SCANNER", "NODE", "SEGMENTS", "ARMED", "COMPL/S", "CPU%", "P50", "P99" };
	struct table *t = table_new(8, sh);
	for (unsigned i = 0; i < 6; i++)
		table_right(t, i);
	const cJSON *sc;
	cJSON_ArrayForEach(sc, jarr(cur->scanners, CTL_KEY_SCANNERS))
	{
		const cJSON *ps = prev ? find_by(jarr(prev->scanners, CTL_KEY_SCANNERS), "index", jnum(sc, CTL_KEY_INDEX)) : NULL;
		char r[32], cpu[32], p50[32], p99[32];
		rate(r, sizeof(r), sc, ps, "completions", dt);
		if (ps && dt > 0)
			snprintf(cpu, sizeof(cpu), "%.1f", 100 * (jnum(sc, CTL_KEY_CPU_S) - jnum(ps, CTL_KEY_CPU_S)) / dt);
		else
			snprintf(cpu, sizeof(cpu), "-");
		percentiles(sc, ps, p50, p99, sizeof(p50));
		table_cell(t, "%.0f", jnum(sc, CTL_KEY_INDEX));
		table_cell(t, "%.0f", jnum(sc, CTL_KEY_NUMA_NODE));
		table_cell(t, "%.0f", jnum(sc, CTL_KEY_SEGMENTS));
		table_cell(t, "%.0f", jnum(sc, CTL_KEY_ARMED));
		table_cell(t, "%s", r);
		table_cell(t, "%s", cpu);
		table_cell(t, "%s", p50);
		table_cell(t, "%s", p99);
	}
	table_print(t, stdout, o->legend);
	table_free(t);
	putchar('\n');

	const cJSON *clients = jarr(cur->clients, CTL_KEY_CLIENTS);
	int n = clients ? cJSON_GetArraySize(clients) : 0;
	struct client_row *rows = calloc(n ? (size_t)n : 1, sizeof(*rows));
	if (!rows)
		abort();
	int k = 0;
	const cJSON *cl;
	cJSON_ArrayForEach(cl, clients)
	{
		rows[k].cur = cl;
		rows[k].prev = prev ? find_by(jarr(prev->clients, CTL_KEY_CLIENTS), "id", jnum(cl, CTL_KEY_ID)) : NULL;
		rows[k].rate = rows[k].prev && dt > 0
				       ? (jnum(cl, CTL_KEY_COMPLETIONS) - jnum(rows[k].prev, CTL_KEY_COMPLETIONS)) / dt
				       : -1;
		k++;
	}
	qsort(rows, (size_t)k, sizeof(*rows), cmp_rows);
	static const char *const ch[] = { "CLIENT", "PID", "COMM", "SEGMENTS", "ARMED", "COMPL/S", "P50", "P99" };
	t = table_new(8, ch);
	table_right(t, 0);
	table_right(t, 1);
	for (unsigned i = 3; i < 6; i++)
		table_right(t, i);
	for (int i = 0; i < k; i++) {
		char r[32], p50[32], p99[32];
		rate(r, sizeof(r), rows[i].cur, rows[i].prev, "completions", dt);
		percentiles(rows[i].cur, rows[i].prev, p50, p99, sizeof(p50));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_ID));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_PID));
		table_cell(t, "%s", jstr(rows[i].cur, CTL_KEY_COMM));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_SEGMENTS));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_ARMED));
		table_cell(t, "%s", r);
		table_cell(t, "%s", p50);
		table_cell(t, "%s", p99);
	}
	table_print(t, stdout, o->legend);
	table_free(t);
	free(rows);
}

/* now as UTC ISO 8601, for frame headings and JSON lines */
static void utc_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *rate_json(const cJSON *cur, const cJSON *prev, const char *key, double dt)
{
	if (!prev || dt <= 0)
		return cJSON_CreateNull();
	return cJSON_CreateNumber((jnum(cur, key) - jnum(prev, key)) / dt);
}

/* -j: one JSON object per frame, on one line (JSON lines): the time, the interval, and
 * per scanner and per client the rates and percentiles the table shows. */
static void frame_json(const struct sample *cur, const struct sample *prev)
{
	double dt = prev ? cur->t - prev->t : 0;
	char when[32], p50[32], p99[32];
	utc_now(when, sizeof(when));
	cJSON *f = cJSON_CreateObject();
	cJSON_AddNumberToObject(f, "version", 1);
	cJSON_AddStringToObject(f, "time", when);
	cJSON_AddItemToObject(f, "interval_s", prev ? cJSON_CreateNumber(dt) : cJSON_CreateNull());
	cJSON_AddNumberToObject(f, "clients", jnum(cur->status, CTL_KEY_CLIENTS));
	cJSON_AddNumberToObject(f, "armed", jnum(cur->status, CTL_KEY_ARMED));
	cJSON_AddItemToObject(f, "completions_per_s",
			      rate_json(cur->status, prev ? prev->status : NULL, "completions", dt));
	cJSON *scs = cJSON_AddArrayToObject(f, "scanners");
	const cJSON *sc;
	cJSON_ArrayForEach(sc, jarr(cur->scanners, CTL_KEY_SCANNERS))
	{
		const cJSON *ps = prev ? find_by(jarr(prev->scanners, CTL_KEY_SCANNERS), "index", jnum(sc, CTL_KEY_INDEX)) : NULL;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "index", jnum(sc, CTL_KEY_INDEX));
		cJSON_AddNumberToObject(o, "armed", jnum(sc, CTL_KEY_ARMED));
		cJSON_AddItemToObject(o, "completions_per_s", rate_json(sc, ps, "completions", dt));
		cJSON_AddItemToObject(o, "cpu_percent", ps && dt > 0 ? cJSON_CreateNumber(100 * (jnum(sc, CTL_KEY_CPU_S) - jnum(ps, CTL_KEY_CPU_S)) / dt)
								: cJSON_CreateNull());
		percentiles(sc, ps, p50, p99, sizeof(p50));
		cJSON_AddStringToObject(o, "p50", p50);
		cJSON_AddStringToObject(o, "p99", p99);
		cJSON_AddItemToArray(scs, o);
	}
	cJSON *cls = cJSON_AddArrayToObject(f, "clients_detail");
	const cJSON *cl;
	cJSON_ArrayForEach(cl, jarr(cur->clients, CTL_KEY_CLIENTS))
	{
		const cJSON *pc = prev ? find_by(jarr(prev->clients, CTL_KEY_CLIENTS), "id", jnum(cl, CTL_KEY_ID)) : NULL;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "id", jnum(cl, CTL_KEY_ID));
		cJSON_AddNumberToObject(o, "pid", jnum(cl, CTL_KEY_PID));
		cJSON_AddStringToObject(o, "comm", jstr(cl, CTL_KEY_COMM));
		cJSON_AddNumberToObject(o, "armed", jnum(cl, CTL_KEY_ARMED));
		cJSON_AddItemToObject(o, "completions_per_s", rate_json(cl, pc, "completions", dt));
		percentiles(cl, pc, p50, p99, sizeof(p50));
		cJSON_AddStringToObject(o, "p50", p50);
		cJSON_AddStringToObject(o, "p99", p99);
		cJSON_AddItemToArray(cls, o);
	}
	char *text = cJSON_PrintUnformatted(f);
	if (text)
		puts(text);
	free(text);
	cJSON_Delete(f);
}

static void sleep_s(double s)
{
	struct timespec ts = { .tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int cmd_top(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	bool batch = o->batch || !isatty(STDOUT_FILENO);
	struct sample prev = { 0 }, cur;
	bool have_prev = false;
	for (long i = 1; o->iterations <= 0 || i <= o->iterations; i++) {
		if (i > 1)
			sleep_s(o->delay_s);
		int rc = sample_take(c, &cur);
		if (rc) {
			sample_free(&prev);
			return rc;
		}
		if (o->json != JSON_OFF) {
			frame_json(&cur, have_prev ? &prev : NULL);
		} else {
			if (!batch) {
				fputs("\033[H\033[2J", stdout); /* home, clear */
			} else {
				char when[32];
				utc_now(when, sizeof(when));
				printf("%s%s\n", i > 1 ? "\n" : "", when); /* each batch frame headed by its time */
			}
			frame(o, &cur, have_prev ? &prev : NULL);
		}
		fflush(stdout);
		sample_free(&prev);
		prev = cur;
		have_prev = true;
	}
	sample_free(&prev);
	return 0;
}
