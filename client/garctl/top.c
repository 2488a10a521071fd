/* top.c — `garctl top`: status, scanners and clients sampled every -d seconds and
 * shown as rates: completions per second per client and per scanner, scanner CPU
 * share, and wake-latency p50/p99 from the histogram deltas between two samples.
 * On a terminal it redraws in place; with -b (or when stdout is not a terminal) it
 * prints one frame after another, each headed by its UTC time; with -j, one JSON object
 * per frame, one per line (JSON lines). -n stops after that many frames.
 *
 * What the columns measure: COMPL/S readiness delivered per second; LOADS/S the
 * scanners' word loads per second on a client's behalf and SCAN% the scanner time
 * attributed to it, in % of one core (proto/counters.h's word_loads and scan_ns: who
 * costs garudad what); GAP50/GAP99 percentiles of the "wake_latency" histogram, which
 * holds, per completion, the gap between the scanner's previous look at the word and
 * the look that saw it reached: the store landed inside that gap, so it bounds word
 * reached -> scanner saw it from above (after a timed sleep it spans the sleep), and it
 * is not the client's wake latency. A legend under the tables says so (not with
 * --no-legend).
 *
 * Promises: the first frame has no previous sample, so its rates print as "-" and its
 * percentiles cover everything since the daemon started; later frames cover only the
 * interval since the previous one. Per-client percentiles show when the daemon's
 * clients reply carries a per-client "wake_latency" histogram, else "-" (null in -j).
 * In -j the percentiles are numbers: p50_ns/p99_ns, the bucket bound in ns, with
 * p50_bound/p99_bound saying which bound ("le" or, in the open last bucket, "gt"); each
 * client also has its word_loads and scan_ns (totals), word_loads_per_s and
 * scan_percent (null in the first frame).
 *
 * Keys: when stdin and stdout are both a terminal, top puts the terminal in
 * non-canonical mode without echo while it runs and `q` quits (exit 0) at once, even
 * between refreshes. The terminal's settings are restored on every way out: q, -n,
 * an error, and SIGINT/SIGTERM/SIGHUP/SIGQUIT (restored, then the signal's default
 * action); SIGTSTP restores them while stopped and SIGCONT sets them again. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "control_names.h"
#include "counters.h"
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

/* Add "<name>_ns" and "<name>_bound" for percentile p of cur's wake_latency over the
 * interval since prev: numbers, or both null with no histogram or no samples. */
static void percentile_json(cJSON *o, const char *name, const cJSON *cur, const cJSON *prev, double p)
{
	const cJSON *lat = cJSON_GetObjectItemCaseSensitive(cur, CTL_KEY_WAKE_LATENCY);
	double counts[64], ns = 0;
	enum pct_bound b = PCT_NONE;
	char key[32];
	if (lat) {
		latency_delta(cur, prev, counts, 64);
		b = percentile_bound(lat, counts, p, &ns);
	}
	snprintf(key, sizeof(key), "%s_ns", name);
	cJSON_AddItemToObject(o, key, b == PCT_NONE ? cJSON_CreateNull() : cJSON_CreateNumber(ns));
	snprintf(key, sizeof(key), "%s_bound", name);
	cJSON_AddItemToObject(o, key, b == PCT_NONE ? cJSON_CreateNull() : cJSON_CreateString(b == PCT_LE ? "le" : "gt"));
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

/* The share of one core that the ns counter key grew by over dt, in %. */
static void share(char *buf, size_t len, const cJSON *cur, const cJSON *prev, const char *key, double dt)
{
	if (!prev || dt <= 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", 100 * (jnum(cur, key) - jnum(prev, key)) / 1e9 / dt);
}

/* Under the tables (with the header rows): what the columns that are easy to misread
 * measure (top.c's head, garctl(1)). */
static void legend(void)
{
	puts("GAP50/GAP99: per completion, the scanner's gap between its previous look at the word and"
	     " the look\n  that saw it reached (the store landed inside it): an upper bound on word reached ->"
	     " seen, <=EDGE\n  of a power-of-two bucket; after a sleep it spans the sleep. A client's own"
	     " wake comes on top.\nLOADS/S: word loads by the scanners for the client; SCAN%: scanner time"
	     " attributed to it, % of a core.");
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

	static const char *const sh[] = { "SCANNER", "NODE", "SEGMENTS", "ARMED", "COMPL/S", "CPU%", "GAP50", "GAP99" };
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
	static const char *const ch[] = { "CLIENT", "PID", "COMM", "SEGMENTS", "ARMED", "COMPL/S",
					  "LOADS/S", "SCAN%", "GAP50", "GAP99" };
	t = table_new(10, ch);
	table_right(t, 0);
	table_right(t, 1);
	for (unsigned i = 3; i < 8; i++)
		table_right(t, i);
	for (int i = 0; i < k; i++) {
		char r[32], loads[32], scan[32], p50[32], p99[32];
		rate(r, sizeof(r), rows[i].cur, rows[i].prev, "completions", dt);
		rate(loads, sizeof(loads), rows[i].cur, rows[i].prev, CTL_SESSION_KEY(word_loads), dt);
		share(scan, sizeof(scan), rows[i].cur, rows[i].prev, CTL_SESSION_KEY(scan_ns), dt);
		percentiles(rows[i].cur, rows[i].prev, p50, p99, sizeof(p50));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_ID));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_PID));
		table_cell(t, "%s", jstr(rows[i].cur, CTL_KEY_COMM));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_SEGMENTS));
		table_cell(t, "%.0f", jnum(rows[i].cur, CTL_KEY_ARMED));
		table_cell(t, "%s", r);
		table_cell(t, "%s", loads);
		table_cell(t, "%s", scan);
		table_cell(t, "%s", p50);
		table_cell(t, "%s", p99);
	}
	table_print(t, stdout, o->legend);
	table_free(t);
	free(rows);
	if (o->legend) {
		putchar('\n');
		legend();
	}
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
	char when[32];
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
		percentile_json(o, "p50", sc, ps, 0.50);
		percentile_json(o, "p99", sc, ps, 0.99);
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
		cJSON_AddNumberToObject(o, CTL_SESSION_KEY(word_loads), jnum(cl, CTL_SESSION_KEY(word_loads)));
		cJSON_AddNumberToObject(o, CTL_SESSION_KEY(scan_ns), jnum(cl, CTL_SESSION_KEY(scan_ns)));
		cJSON_AddItemToObject(o, "word_loads_per_s", rate_json(cl, pc, CTL_SESSION_KEY(word_loads), dt));
		cJSON *pct = rate_json(cl, pc, CTL_SESSION_KEY(scan_ns), dt);
		if (cJSON_IsNumber(pct))
			cJSON_SetNumberValue(pct, pct->valuedouble * 100 / 1e9);
		cJSON_AddItemToObject(o, "scan_percent", pct);
		percentile_json(o, "p50", cl, pc, 0.50);
		percentile_json(o, "p99", cl, pc, 0.99);
		cJSON_AddItemToArray(cls, o);
	}
	char *text = cJSON_PrintUnformatted(f);
	if (text)
		puts(text);
	free(text);
	cJSON_Delete(f);
}

/* ------------------------------------------------------------------ keys ---- */

static struct termios term_saved, term_keys;
static volatile sig_atomic_t term_wanted; /* top reads keys: set its mode when in the foreground */
static volatile sig_atomic_t term_set;    /* stdin is in top's mode now */

static void term_restore(void)
{
	if (term_set) {
		tcsetattr(STDIN_FILENO, TCSANOW, &term_saved);
		term_set = 0;
	}
}

/* Only in the foreground: a background process group changing the terminal's settings
 * is stopped (SIGTTOU), and reading it too (SIGTTIN). */
static void term_apply(void)
{
	if (term_wanted && tcgetpgrp(STDIN_FILENO) == getpgrp() &&
	    tcsetattr(STDIN_FILENO, TCSANOW, &term_keys) == 0)
		term_set = 1;
}

static const int term_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGCONT };
#define N_TERM_SIGNALS (sizeof(term_signals) / sizeof(term_signals[0]))

static void term_on_signal(int sig)
{
	int saved_errno = errno;
	if (sig == SIGCONT) { /* after a stop (^Z, then fg or bg), or a fg of a job started with & */
		term_apply();
		errno = saved_errno;
		return;
	}
	term_restore();
	struct sigaction dfl = { .sa_handler = SIG_DFL }, self = { .sa_handler = term_on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&dfl.sa_mask);
	sigemptyset(&self.sa_mask);
	sigaction(sig, &dfl, NULL);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	raise(sig);
	/* the signal is blocked in its handler: unblocking it runs its default action now
	 * (terminate; or, for SIGTSTP, stop until SIGCONT, whose handler sets the mode
	 * again, and come back here) */
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	sigaction(sig, &self, NULL); /* continued */
	errno = saved_errno;
}

/* Keys when stdin and stdout are a terminal: non-canonical, no echo (signals from the
 * keyboard stay on: ^C, ^Z, ^\). Returns whether top reads keys. */
static bool keys_start(void)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) || tcgetattr(STDIN_FILENO, &term_saved) < 0)
		return false;
	term_keys = term_saved;
	term_keys.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	term_keys.c_cc[VMIN] = 1;
	term_keys.c_cc[VTIME] = 0;
	struct sigaction sa = { .sa_handler = term_on_signal, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_TERM_SIGNALS; i++) {
		struct sigaction old;
		/* a signal ignored by whoever started garctl (nohup) stays ignored */
		if (sigaction(term_signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(term_signals[i], &sa, NULL);
	}
	term_wanted = 1;
	term_apply();
	return true;
}

static void keys_stop(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigemptyset(&dfl.sa_mask);
	sigset_t all, old;
	sigemptyset(&all);
	for (size_t i = 0; i < N_TERM_SIGNALS; i++)
		sigaddset(&all, term_signals[i]);
	sigprocmask(SIG_BLOCK, &all, &old);
	term_wanted = 0;
	term_restore();
	for (size_t i = 0; i < N_TERM_SIGNALS; i++) {
		struct sigaction cur;
		if (sigaction(term_signals[i], NULL, &cur) == 0 && cur.sa_handler == term_on_signal)
			sigaction(term_signals[i], &dfl, NULL);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Wait s seconds. With keys, read the terminal meanwhile (while top is in the
 * foreground and the terminal in its mode): true as soon as q (or Q) is typed; other
 * keys are ignored; at the terminal's end (hangup) stop reading it. */
static bool wait_or_quit(double s, bool *keys)
{
	double end = now_s() + s;
	for (;;) {
		double left = end - now_s();
		if (left <= 0)
			return false;
		if (!*keys || !term_set) {
			/* with keys but in the background: slices of at most 0.25 s, so that
			 * keys are read soon after a SIGCONT that lands just before the sleep */
			double nap = *keys && left > 0.25 ? 0.25 : left;
			struct timespec ts = { .tv_sec = (time_t)nap,
					       .tv_nsec = (long)((nap - (double)(time_t)nap) * 1e9) };
			nanosleep(&ts, NULL); /* EINTR: the loop sleeps what is left */
			continue;
		}
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		int n = poll(&p, 1, (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR)
			*keys = false;
		if (n <= 0)
			continue;
		char buf[64];
		ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0) {
			*keys = false;
			continue;
		}
		if (memchr(buf, 'q', (size_t)r) || memchr(buf, 'Q', (size_t)r))
			return true;
	}
}

int cmd_top(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	bool batch = o->batch || !isatty(STDOUT_FILENO);
	struct sample prev = { 0 }, cur;
	bool have_prev = false;
	bool keys = keys_start();
	int rc = 0;
	for (long i = 1; o->iterations <= 0 || i <= o->iterations; i++) {
		if (i > 1 && wait_or_quit(o->delay_s, &keys))
			break;
		rc = sample_take(c, &cur);
		if (rc)
			break;
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
	keys_stop();
	return rc;
}
