/* commands.c — garctl's commands except top: each sends its request, then prints the
 * reply as a table (the default) or as JSON (-j). The JSON printed is the daemon's
 * reply, with a paged list's pages joined into one array.
 *
 * Promises: a table shows what the reply holds and nothing derived from guesses; a
 * value the reply lacks prints as "-". */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config_keys.h"
#include "control_names.h"
#include "counters.h"
#include "garctl.h"

bool parse_id(char kind, const char *s, uint64_t *out)
{
	/* as garudad's request table: sessions are numbered from 1, segments from 0 */
	const char *what = kind == 'c' ? "CLIENT" : "SEGMENT";
	uint64_t min = kind == 'c' ? 1 : 0, max = kind == 'c' ? GARCTL_MAX_ID : UINT32_MAX;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || !*s || *end || s[0] == '-' || s[0] == '+' || v < min || v > max) {
		fprintf(stderr, "garctl: %s must be a number in [%" PRIu64 ", %" PRIu64 "], not \"%s\"\n",
			what, min, max, s);
		return false;
	}
	*out = v;
	return true;
}

/* Print reply as JSON when asked; true when it did. */
static bool maybe_json(const struct options *o, const cJSON *reply)
{
	if (o->json == JSON_OFF)
		return false;
	pager_open(o);
	print_json(reply, o->json);
	pager_close();
	return true;
}

static void print_table(const struct options *o, struct table *t)
{
	pager_open(o);
	table_print(t, stdout, o->legend);
	pager_close();
	table_free(t);
}

/* "%.0f" of a JSON number (counters are exact integers up to 2^53). */
#define N(obj, key) jnum(obj, key)

static void fmt_duration(char *buf, size_t len, double s)
{
	unsigned long long t = (unsigned long long)s;
	if (t >= 86400)
		snprintf(buf, len, "%llud %lluh %llumin", t / 86400, t % 86400 / 3600, t % 3600 / 60);
	else if (t >= 3600)
		snprintf(buf, len, "%lluh %llumin %llus", t / 3600, t % 3600 / 60, t % 60);
	else if (t >= 60)
		snprintf(buf, len, "%llumin %llus", t / 60, t % 60);
	else
		snprintf(buf, len, "%.1fs", s);
}

/* ---------------- status ---------------- */

int cmd_status(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	cJSON *req = request_new(CTL_REQ_STATUS), *r = NULL;
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		static const char *const hdr[] = { "FIELD", "VALUE" };
		struct table *t = table_new(2, hdr);
		char up[64];
		fmt_duration(up, sizeof(up), N(r, CTL_KEY_UPTIME_S));
		const cJSON *rd = cJSON_GetObjectItemCaseSensitive(r, CTL_KEY_READINESS);
		table_cell(t, "Socket:"), table_cell(t, "%s (%s)", o->socket, o->socket_why ? o->socket_why : "default");
		table_cell(t, "Version:"), table_cell(t, "%s", jstr(r, CTL_KEY_DAEMON_VERSION));
		/* the pid garudad reports is its own namespace's (1 in a container): say so,
		 * with its pid here from SO_PEERCRED (0: outside our pid namespace) */
		struct ucred peer;
		socklen_t plen = sizeof(peer);
		double said = N(r, CTL_KEY_PID);
		if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0 || (double)peer.pid == said)
			table_cell(t, "PID:"), table_cell(t, "%.0f", said);
		else if (peer.pid > 0)
			table_cell(t, "PID:"), table_cell(t, "%.0f (in its own pid namespace; %d here)", said,
							  (int)peer.pid);
		else
			table_cell(t, "PID:"), table_cell(t, "%.0f (in another pid namespace, not visible "
							  "from here)", said);
		table_cell(t, "Event loop:"), table_cell(t, "%s", jstr(r, CTL_KEY_EVENT_LOOP));
		table_cell(t, "Uptime:"), table_cell(t, "%s", up);
		table_cell(t, "Log level:"), table_cell(t, "%s", jstr(r, CTL_KEY_LOG_LEVEL));
		table_cell(t, "Config file:"), table_cell(t, "%s", jstr(r, CTL_KEY_CONFIG_PATH));
		table_cell(t, "Clients:"), table_cell(t, "%.0f", N(r, CTL_KEY_CLIENTS));
		table_cell(t, "Segments:"), table_cell(t, "%.0f", N(r, CTL_KEY_SEGMENTS));
		table_cell(t, "Bindings:"), table_cell(t, "%.0f", N(r, CTL_KEY_BINDINGS));
		table_cell(t, "Armed:"), table_cell(t, "%.0f", N(r, CTL_KEY_ARMED));
		table_cell(t, "Arms:"), table_cell(t, "%.0f", N(r, CTL_KEY_ARMS));
		table_cell(t, "Completions:");
		char by_form[160] = ""; /* "eventfd 1, message 0, ...": every form garudad names */
		size_t at = 0;
		const cJSON *fm;
		cJSON_ArrayForEach(fm, rd)
			if (at < sizeof(by_form))
				at += (size_t)snprintf(by_form + at, sizeof(by_form) - at, "%s%s %.0f",
						       at ? ", " : "", fm->string, fm->valuedouble);
		table_cell(t, "%.0f (%s)", N(r, CTL_KEY_COMPLETIONS), by_form);
		table_cell(t, "Sessions:"), table_cell(t, "%.0f accepted", N(r, CTL_KEY_SESSIONS_TOTAL));
		if (N(r, CTL_KEY_HELD_SESSIONS) > 0) /* ended, their SEGMENT replies unread */
			table_cell(t, "Held:"),
				table_cell(t, "%.0f ended session(s) with SEGMENT replies unread "
					      "(their lines and connection stay charged)",
					   N(r, CTL_KEY_HELD_SESSIONS));
		table_cell(t, "Errors:"), table_cell(t, "%.0f", N(r, CTL_KEY_ERRORS));
		table_cell(t, "Quota refusals:"), table_cell(t, "%.0f", N(r, CTL_KEY_QUOTA_REFUSALS));
		table_cell(t, "Scanners:"), table_cell(t, "%.0f", N(r, CTL_KEY_SCANNERS));
		const cJSON *ws = cJSON_GetObjectItemCaseSensitive(r, CTL_KEY_WARNINGS), *w;
		unsigned nw = 0;
		cJSON_ArrayForEach(w, ws)
		{
			if (!cJSON_IsString(w))
				continue;
			table_cell(t, nw++ ? "" : "Warnings:"), table_cell(t, "%s", w->valuestring);
		}
		if (!nw)
			table_cell(t, "Warnings:"), table_cell(t, "none");
		table_right(t, 0);
		pager_open(o);
		table_print(t, stdout, false); /* a field list: no header row */
		pager_close();
		table_free(t);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- clients ---------------- */

int cmd_clients(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	cJSON *req = request_new(CTL_REQ_CLIENTS), *r = NULL;
	int rc = conn_call_all(c, req, CTL_KEY_CLIENTS, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		static const char *const hdr[] = { "ID", "PID", "UID", "GID", "COMM", "CGROUP", "SEGMENTS",
						   "LINES", "BINDINGS", "ARMED", "ARMS", "COMPLETIONS",
						   "WORDLOADS", "SCAN", "ERRORS", "GAP50", "GAP99",
						   "CONNECTED" };
		struct table *t = table_new(18, hdr);
		for (unsigned i = 0; i < 15; i++)
			if (i != 4 && i != 5) /* COMM, CGROUP: left */
				table_right(t, i);
		const cJSON *it;
		unsigned no_key = 0;
		cJSON_ArrayForEach(it, jarr(r, CTL_KEY_CLIENTS))
		{
			char up[64];
			fmt_duration(up, sizeof(up), N(it, CTL_KEY_CONNECTED_S));
			no_key += !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_CGROUP));
			table_cell(t, "%.0f", N(it, CTL_KEY_ID));
			table_cell(t, "%.0f", N(it, CTL_KEY_PID));
			table_cell(t, "%.0f", N(it, CTL_KEY_UID));
			table_cell(t, "%.0f", N(it, CTL_KEY_GID));
			table_cell(t, "%s", jstr(it, CTL_KEY_COMM));
			table_cell(t, "%s", jstr(it, CTL_KEY_CGROUP)); /* "-": no cgroup key */
			table_cell(t, "%.0f", N(it, CTL_KEY_SEGMENTS));
			table_cell(t, "%.0f", N(it, CTL_KEY_LINES));
			table_cell(t, "%.0f", N(it, CTL_KEY_BINDINGS));
			table_cell(t, "%.0f", N(it, CTL_KEY_ARMED));
			table_cell(t, "%.0f", N(it, CTL_KEY_ARMS));
			table_cell(t, "%.0f", N(it, CTL_SESSION_KEY(completions)));
			/* what it cost the scanners: word loads, scanner time (garctl(1)) */
			char scan[32];
			fmt_ns(scan, sizeof(scan), N(it, CTL_SESSION_KEY(scan_ns)));
			table_cell(t, "%.0f", N(it, CTL_SESSION_KEY(word_loads)));
			table_cell(t, "%s", scan);
			table_cell(t, "%.0f", N(it, CTL_KEY_ERRORS));
			/* wake latency since the client connected, as <=EDGE (see garctl(1)) */
			char p50[32], p99[32];
			const cJSON *lat = cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_WAKE_LATENCY);
			fmt_percentile(p50, sizeof(p50), lat, NULL, 0.50);
			fmt_percentile(p99, sizeof(p99), lat, NULL, 0.99);
			table_cell(t, "%s", p50);
			table_cell(t, "%s", p99);
			table_cell(t, "%s ago", up);
		}
		pager_open(o);
		table_print(t, stdout, o->legend);
		if (no_key && o->legend) /* issue 30, item 6: say what "-" means */
			printf("\nCGROUP -: no cgroup key, so quota.cgroup does not apply (charged per "
			       "connection and per uid only): the client is in the root cgroup or in "
			       "garudad's own, which unrelated clients share, or garudad could not read "
			       "its cgroup; garudad's log says which (garudad(8), \"The cgroup key\")\n");
		pager_close();
		table_free(t);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- segments ---------------- */

int cmd_segments(struct conn *c, const struct options *o, char **args)
{
	uint64_t client;
	if (!parse_id('c', args[0], &client))
		return 2;
	cJSON *req = request_new(CTL_REQ_SEGMENTS), *r = NULL;
	cJSON_AddNumberToObject(req, CTL_KEY_CLIENT, (double)client);
	int rc = conn_call_all(c, req, CTL_KEY_SEGMENTS, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		static const char *const hdr[] = { "ID", "LINES", "BYTES", "NODE", "SCANNER", "BINDINGS",
						   "ARMED", "DOORBELL" };
		struct table *t = table_new(8, hdr);
		for (unsigned i = 0; i < 8; i++)
			table_right(t, i);
		const cJSON *it;
		cJSON_ArrayForEach(it, jarr(r, CTL_KEY_SEGMENTS))
		{
			table_cell(t, "%.0f", N(it, CTL_KEY_ID));
			table_cell(t, "%.0f", N(it, CTL_KEY_LINES));
			table_cell(t, "%.0f", N(it, CTL_KEY_BYTES));
			table_cell(t, "%.0f", N(it, CTL_KEY_NUMA_NODE));
			table_cell(t, "%.0f", N(it, CTL_KEY_SCANNER));
			table_cell(t, "%.0f", N(it, CTL_KEY_BINDINGS));
			const cJSON *armed = cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_ARMED);
			if (cJSON_IsNumber(armed))
				table_cell(t, "%.0f", armed->valuedouble);
			else
				table_cell(t, "-");
			table_cell(t, "%.0f", N(it, CTL_KEY_DOORBELL));
		}
		print_table(o, t);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- lines ---------------- */

/* "TARGET/FORM/TOKEN ..." of a word's armed list. */
static char *armed_text(const cJSON *word)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		abort();
	const cJSON *a;
	int n = 0;
	cJSON_ArrayForEach(a, jarr(word, CTL_KEY_ARMED))
		fprintf(f, "%s%s/%s/%s", n++ ? " " : "", jstr(a, CTL_KEY_TARGET), jstr(a, CTL_KEY_FORM), jstr(a, CTL_KEY_TOKEN));
	double total = N(word, CTL_KEY_ARMED_COUNT);
	if (total > n)
		fprintf(f, "%s+%.0f more", n ? " " : "", total - n);
	if (!n && total <= 0)
		fputc('-', f);
	fclose(f);
	return buf;
}

int cmd_lines(struct conn *c, const struct options *o, char **args)
{
	uint64_t client, segment;
	if (!parse_id('c', args[0], &client) ||
	    !parse_id('s', args[1], &segment))
		return 2;
	cJSON *req = request_new(CTL_REQ_LINES), *r = NULL;
	cJSON_AddNumberToObject(req, CTL_KEY_CLIENT, (double)client);
	cJSON_AddNumberToObject(req, CTL_KEY_SEGMENT, (double)segment);
	int rc = conn_call_all(c, req, CTL_KEY_LINES, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		static const char *const hdr[] = { "INDEX", "LINE", "WORD", "VALUE", "BOUND", "ARMED",
						   "TARGET/FORM/TOKEN" };
		struct table *t = table_new(7, hdr);
		for (unsigned i = 0; i < 4; i++)
			table_right(t, i);
		table_right(t, 5);
		const cJSON *line;
		cJSON_ArrayForEach(line, jarr(r, CTL_KEY_LINES))
		{
			const cJSON *w;
			cJSON_ArrayForEach(w, jarr(line, CTL_KEY_WORDS))
			{
				double index = N(w, CTL_KEY_INDEX);
				const cJSON *bound = cJSON_GetObjectItemCaseSensitive(w, CTL_KEY_BOUND);
				char *armed = armed_text(w);
				table_cell(t, "%.0f", index);
				table_cell(t, "%.0f", N(line, CTL_KEY_LINE));
				table_cell(t, "%.0f", index - 8 * N(line, CTL_KEY_LINE));
				table_cell(t, "%s", jstr(w, CTL_KEY_VALUE));
				table_cell(t, "%s", cJSON_IsTrue(bound) ? "yes" : "no");
				table_cell(t, "%.0f", N(w, CTL_KEY_ARMED_COUNT));
				table_cell(t, "%s", armed);
				free(armed);
			}
		}
		print_table(o, t);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- scanners ---------------- */

int cmd_scanners(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	cJSON *req = request_new(CTL_REQ_SCANNERS), *r = NULL;
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		/* WORDWAIT: the hardware word wait of spin steps (spin: none), HWSTEPS: the
		 * spin steps that parked in it, TAKE: the mean time from an ARM's send to the
		 * scanner's take (the loop thread's and the queue's delay), TIMER99: the p99
		 * of how late its timed sleeps woke (the host's figure) */
		static const char *const hdr[] = { "INDEX",   "NODE",     "SEGMENTS", "ARMED",	 "PASSES",
						   "PARKS",   "SLEEPS",   "SPINS",	  "WORDWAIT",	 "HWSTEPS",
						   "EXACT",   "CENSORED", "LATE",	  "COMPLETIONS", "TAKE",
						   "CPU",     "GAP50",	  "GAP99",	  "TIMER99" };
		struct table *t = table_new(19, hdr);
		for (unsigned i = 0; i < 19; i++)
			if (i != 8)
				table_right(t, i);
		const cJSON *it;
		cJSON_ArrayForEach(it, jarr(r, CTL_KEY_SCANNERS))
		{
			const cJSON *lat = cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_WAKE_LATENCY);
			const cJSON *tl = cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_TIMER_LATENESS);
			char cpu[32], p50[32], p99[32], t99[32], take[32] = "-";
			fmt_ns(cpu, sizeof(cpu), N(it, CTL_KEY_CPU_S) * 1e9);
			double taken = N(it, CTL_SCANNER_KEY(arms_taken));
			if (taken > 0)
				fmt_ns(take, sizeof(take), N(it, CTL_SCANNER_KEY(take_ns)) / taken);
			fmt_percentile(p50, sizeof(p50), lat, NULL, 0.50);
			fmt_percentile(p99, sizeof(p99), lat, NULL, 0.99);
			fmt_percentile(t99, sizeof(t99), tl, NULL, 0.99);
			table_cell(t, "%.0f", N(it, CTL_KEY_INDEX));
			table_cell(t, "%.0f", N(it, CTL_KEY_NUMA_NODE));
			table_cell(t, "%.0f", N(it, CTL_KEY_SEGMENTS));
			table_cell(t, "%.0f", N(it, CTL_KEY_ARMED));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(passes)));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(parks)));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(sleeps)));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(spins)));
			const cJSON *ww = cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_WORDWAIT);
			table_cell(t, "%s", cJSON_IsString(ww) ? ww->valuestring : "-");
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(wordwait_steps)));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(exact)));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(censored)));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(late_wakes)));
			table_cell(t, "%.0f", N(it, CTL_SCANNER_KEY(completions)));
			table_cell(t, "%s", take);
			table_cell(t, "%s", cpu);
			table_cell(t, "%s", p50);
			table_cell(t, "%s", p99);
			table_cell(t, "%s", t99);
		}
		print_table(o, t);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- points ---------------- */

int cmd_points(struct conn *c, const struct options *o, char **args)
{
	uint64_t client;
	if (!parse_id('c', args[0], &client))
		return 2;
	cJSON *req = request_new(CTL_REQ_POINTS), *r = NULL;
	cJSON_AddNumberToObject(req, CTL_KEY_CLIENT, (double)client);
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		static const char *const hdr[] = { "POINT", "PREDICTION", "SLEEP", "EXACT", "CENSORED" };
		struct table *t = table_new(5, hdr);
		for (unsigned i = 1; i < 5; i++)
			table_right(t, i);
		const cJSON *it;
		cJSON_ArrayForEach(it, jarr(r, CTL_KEY_POINTS))
		{
			char pred[32], sleep[32];
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_PREDICTION_NS);
			if (cJSON_IsNumber(p))
				fmt_ns(pred, sizeof(pred), p->valuedouble);
			else
				snprintf(pred, sizeof(pred), "-");
			fmt_ns(sleep, sizeof(sleep), N(it, CTL_KEY_SLEEP_NS));
			if (cJSON_GetObjectItemCaseSensitive(it, CTL_KEY_POINT))
				table_cell(t, "p%.0f", N(it, CTL_KEY_POINT));
			else
				table_cell(t, "%.0f:%.0f", N(it, CTL_KEY_SEGMENT), N(it, CTL_KEY_INDEX));
			table_cell(t, "%s", pred);
			table_cell(t, "%s", sleep);
			table_cell(t, "%.0f", N(it, CTL_KEY_EXACT));
			table_cell(t, "%.0f", N(it, CTL_KEY_CENSORED));
		}
		print_table(o, t);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- config ---------------- */

/* The value at a dotted key ("quota.uid.segments") of the reply, or NULL. */
static const cJSON *dotted(const cJSON *o, const char *key)
{
	char part[64];
	const char *dot;
	while (o && (dot = strchr(key, '.'))) {
		snprintf(part, sizeof(part), "%.*s", (int)(dot - key), key);
		o = cJSON_GetObjectItemCaseSensitive(o, part);
		key = dot + 1;
	}
	return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

/* A row for key when the reply holds it (not: a legacy key not set, a key of another
 * garudad version); true when it did. */
static bool config_row(struct table *t, const cJSON *r, const char *key)
{
	const cJSON *it = dotted(r, key);
	if (!it)
		return false;
	table_cell(t, "%s", key);
	if (cJSON_IsString(it))
		table_cell(t, "%s", *it->valuestring ? it->valuestring : "\"\"");
	else if (cJSON_IsNumber(it))
		table_cell(t, "%.0f", it->valuedouble);
	else
		table_cell(t, "-");
	return true;
}

/* The keys in the order of garudad's key table (proto/config_keys.h), as the reply
 * holds them: garudad sends a legacy key only when it is set, and a note under the
 * table says what each one shown replaces. */
int cmd_config(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	cJSON *req = request_new(CTL_REQ_CONFIG), *r = NULL;
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		static const char *const hdr[] = { "KEY", "VALUE" };
#define KEY_(key, flag, type, field, lo, hi, reload, legacy, help) { key, legacy },
		static const struct {
			const char *key, *legacy;
		} keys[] = { GARUDA_CONFIG_KEYS(KEY_) };
#undef KEY_
		struct table *t = table_new(2, hdr);
		char note[256] = "";
		config_row(t, r, CTL_KEY_CONFIG_PATH);
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (config_row(t, r, keys[i].key) && keys[i].legacy)
				snprintf(note + strlen(note), sizeof(note) - strlen(note),
					 "%s is a legacy key: it replaces the plan's %s (garudad(8))\n",
					 keys[i].key, keys[i].legacy);
		pager_open(o);
		table_print(t, stdout, o->legend);
		if (*note && o->legend)
			printf("\n%s", note);
		pager_close();
		table_free(t);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- metrics ---------------- */

int cmd_metrics(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	cJSON *req = request_new(CTL_REQ_METRICS), *r = NULL;
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r)) {
		const cJSON *text = cJSON_GetObjectItemCaseSensitive(r, CTL_KEY_TEXT);
		if (!cJSON_IsString(text)) {
			fprintf(stderr, "garctl: the metrics reply has no text\n");
			cJSON_Delete(r);
			return 1;
		}
		/* exposition text goes out as is: it is for a collector, not a terminal */
		fputs(text->valuestring, stdout);
	}
	cJSON_Delete(r);
	return 0;
}

/* ---------------- admin actions ---------------- */

int cmd_disconnect(struct conn *c, const struct options *o, char **args)
{
	uint64_t client;
	if (!parse_id('c', args[0], &client))
		return 2;
	cJSON *req = request_new(CTL_REQ_DISCONNECT), *r = NULL;
	cJSON_AddNumberToObject(req, CTL_KEY_CLIENT, (double)client);
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	maybe_json(o, r);
	cJSON_Delete(r);
	return 0;
}

int cmd_log_level(struct conn *c, const struct options *o, char **args)
{
	cJSON *req = request_new(CTL_REQ_LOG_LEVEL), *r = NULL;
	if (args[0])
		cJSON_AddStringToObject(req, CTL_KEY_LEVEL, args[0]);
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	if (!maybe_json(o, r) && !args[0])
		printf("%s\n", jstr(r, CTL_KEY_LOG_LEVEL));
	cJSON_Delete(r);
	return 0;
}

int cmd_reload(struct conn *c, const struct options *o, char **args)
{
	(void)args;
	cJSON *req = request_new(CTL_REQ_RELOAD), *r = NULL;
	int rc = conn_call(c, req, &r);
	cJSON_Delete(req);
	if (rc)
		return rc;
	maybe_json(o, r);
	/* nothing read: say where garudad looks. Not a failure: with no file, the
	 * defaults are the config (systemctl reload succeeds on a host that has none) */
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, CTL_KEY_RELOADED))) {
		const cJSON *def = cJSON_GetObjectItemCaseSensitive(r, CTL_KEY_DEFAULT_CONFIG_PATH);
		if (cJSON_IsString(def)) {
			char *path = strdup(def->valuestring);
			if (path)
				sanitize(path);
			fprintf(stderr, "garctl: nothing reloaded: garudad runs without a config file and "
				"there is none at %s, where it looks (write it, then reload)\n",
				path ? path : "-");
			free(path);
		} else {
			fprintf(stderr, "garctl: nothing reloaded: garudad was started with --no-config (or "
				"--config=), so it reads no config file; restart it with --config=FILE, or "
				"without either to use the default file\n");
		}
	}
	cJSON_Delete(r);
	return rc;
}
