/* test_cost.c — who costs garudad what (issue 29 item 4, issue 30 items 7 and 11),
 * with real sessions doing real work: clients connected from cgroup v2 groups of
 * their own (tests/common/cgroup.h), arms fired by stores and arms left waiting.
 *
 * Asserted: each client's word_loads and scan_ns in the control plane's `clients`
 * JSON (a client whose arms fired on 3 words has at least 3 word loads); garctl top's
 * LOADS/S and SCAN% columns ("-" in the first frame, numbers after) and its -j keys
 * (the totals equal the clients reply's, the rate times the interval equals the
 * difference); the per-cgroup Prometheus families (garuda_cgroup_clients, _armed,
 * _completions_total, _word_loads_total, _scan_seconds_total) equal the sum over the
 * cgroup's sessions, read between two clients replies; garuda_quota_refusals_total
 * by uid, cgroup and quota key; garuda_quota_limit equal to `config`; the process
 * series; the wake-latency family's help and top's legend say what GAP50/GAP99
 * measure; cgroup names of any bytes as valid, printable, distinct labels (and comm
 * and cgroup in the clients reply); the metrics reply fitting with many long cgroup
 * paths (labels cut with a hash, keys past 16 summed in "(other)"); and `promtool
 * check metrics` accepts the text where promtool is installed.
 * No timing is asserted: counts are compared with counts read before and after. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "ctl_harness.h"

static struct cg_group cg_t;

/* The groups of the label tests: odd names, and a chain of long ones (removed leaves
 * first: unlinkat() on each one's parent directory fd, as the chain is too long for
 * one path) */
#define ODD_GROUPS 6
#define LONG_LEVELS 13
#define LONG_LEAVES 20
static struct cg_group cg_odd[ODD_GROUPS];
static int long_fd[LONG_LEVELS + 1]; /* [0]: the base group, then the chain; 0: none */
static int leaf_fd[LONG_LEAVES];
static char long_name[LONG_LEVELS + 1][256];

static void long_groups_remove(void)
{
	for (int i = 0; i < LONG_LEAVES; i++)
		if (leaf_fd[i] > 0) {
			char name[32];
			snprintf(name, sizeof(name), "leaf-%02d", i);
			close(leaf_fd[i]);
			leaf_fd[i] = 0;
			unlinkat(long_fd[LONG_LEVELS], name, AT_REMOVEDIR);
		}
	for (int i = LONG_LEVELS; i > 0; i--)
		if (long_fd[i] > 0) {
			close(long_fd[i]);
			long_fd[i] = 0;
			unlinkat(long_fd[i - 1], long_name[i], AT_REMOVEDIR);
		}
	if (long_fd[0] > 0)
		close(long_fd[0]);
	long_fd[0] = 0;
}

static void cost_fini(void)
{
	long_groups_remove(); /* under cg_t in metrics_fit_with_many_long_cgroup_paths */
	cg_remove(&cg_t); /* empty: cg_open_in()'s children have exited */
	for (int i = 0; i < ODD_GROUPS; i++)
		cg_remove(&cg_odd[i]);
	ctl_test_fini();
}

TestSuite(cost, .init = ctl_test_init, .fini = cost_fini, .timeout = 120);

#define GARCTL(r, d, ...)                                                                   \
	do {                                                                                \
		char sockarg_[160];                                                         \
		snprintf(sockarg_, sizeof(sockarg_), "--socket=%s", (d)->ctl);              \
		const char *args_[] = { sockarg_, "--no-pager", __VA_ARGS__, NULL };        \
		ctl_garctl((r), args_);                                                     \
	} while (0)

/* A fresh cgroup v2 group for the tenant, or the test is skipped. */
static void tenant_group(void)
{
	char why[300];
	memset(&cg_t, 0, sizeof(cg_t));
	if (cg_make(&cg_t, "tenant", why, sizeof(why)))
		cr_skip_test("no writable cgroup2 to make a test group in: %s", why);
}

/* A client connected from group g (accepted). */
static void group_client(const struct cg_group *g, const char *sock, struct ctl_client *c)
{
	memset(c, 0, sizeof(*c));
	bool refused = false;
	int r = cg_open_in(g, sock, &c->raw, &refused, NULL, 0);
	if (r == -EACCES || r == -EPERM || r == -EROFS || r == -EOPNOTSUPP || r == -EBUSY)
		cr_skip_test("cannot move a process into %s: %s", g->dir, strerror(-r));
	cr_assert_eq(r, 0, "client from cgroup %s: %s", g->dir, gd_strerr(r));
	cr_assert(!refused, "the client from %s was refused at accept", g->dir);
	c->session_id = c->raw.welcome.session_id;
}

/* A client connected from the tenant's group (accepted). */
static void tenant_client(const char *sock, struct ctl_client *c)
{
	group_client(&cg_t, sock, c);
}

/* The `clients` entry of session id in reply j. */
static const cJSON *client_of(const cJSON *j, uint64_t id)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "clients"))
		if ((uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "id")) == id)
			return it;
	cr_assert_fail("no client %llu in the clients reply", (unsigned long long)id);
	return NULL;
}

static double jnum_(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert(cJSON_IsNumber(v), "\"%s\" is missing or not a number", key);
	return v->valuedouble;
}

static char *metrics_text(const char *ctl)
{
	cJSON *j = ctl_json(ctl, "{\"request\":\"metrics\"}");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "text");
	cr_assert(cJSON_IsString(t));
	char *text = strdup(t->valuestring);
	cJSON_Delete(j);
	char *e = prom_check(text);
	cr_assert_null(e, "%s\n%s", e, text);
	return text;
}

/* `promtool check metrics` on text, where promtool is installed (it lints what
 * prom_check does not: names, units, help). */
static void promtool_check(const char *text)
{
	if (system("command -v promtool >/dev/null 2>&1") != 0) {
		cr_log_warn("promtool not installed: promtool check metrics skipped");
		return;
	}
	char path[] = "/tmp/garuda-cost-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	size_t n = strlen(text);
	cr_assert_eq(write(fd, text, n), (ssize_t)n);
	close(fd);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "promtool check metrics <%s 2>&1", path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char out[4096] = "";
	size_t got = fread(out, 1, sizeof(out) - 1, p);
	out[got] = '\0';
	int st = pclose(p);
	unlink(path);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "promtool check metrics failed:\n%s\n%s", out, text);
}

/* The series name{cgroup="path"} (path as a label value: the test's groups need no
 * escaping). */
static double cgroup_series(const char *text, const char *name, const char *path)
{
	char series[512];
	snprintf(series, sizeof(series), "%s{cgroup=\"%s\"}", name, path);
	return prom_value(text, series);
}

/* A tenant of two sessions in one cgroup (T1: arms fired on 3 words; T2: 2 arms left
 * waiting) and a client of the test's own (B: one arm fired). */
Test(cost, per_session_and_per_cgroup)
{
	tenant_group();
	struct gd_daemon d;
	ctl_start(&d, NULL);
	struct ctl_client t1, t2, b;
	tenant_client(d.sock, &t1);
	tenant_client(d.sock, &t2);
	ctl_client_open(&b, d.sock);
	struct gd_seg s1, s2, sb;
	cr_assert_eq(ctl_segment_open(&t1, 1, &s1), 0);
	cr_assert_eq(ctl_segment_open(&t2, 1, &s2), 0);
	cr_assert_eq(ctl_segment_open(&b, 1, &sb), 0);
	for (uint32_t w = 0; w < 3; w++) {
		ctl_arm(&t1, s1.id, w, 1, 100 + w, GARUDA_FORM_DOORBELL);
		gd_store(&s1, w, 1);
	}
	ctl_arm(&t2, s2.id, 0, 1, 200, GARUDA_FORM_MESSAGE); /* never stored: waits */
	ctl_arm(&t2, s2.id, 1, 1, 201, GARUDA_FORM_MESSAGE);
	ctl_arm(&b, sb.id, 0, 7, 300, GARUDA_FORM_DOORBELL);
	gd_store(&sb, 0, 7);
	cr_assert_eq(ctl_wait_status(d.ctl, "completions", 4), 4);

	/* the control plane's JSON: every session has its counters; T1's 3 fired words
	 * were each loaded (looked at) at least once, on its behalf */
	cJSON *before = ctl_json(d.ctl, "{\"request\":\"clients\"}");
	const cJSON *c1 = client_of(before, t1.session_id), *c2 = client_of(before, t2.session_id),
		    *cb = client_of(before, b.session_id);
	cr_assert_geq(jnum_(c1, "word_loads"), 3, "T1's fires on 3 words cost %.0f word loads", jnum_(c1, "word_loads"));
	cr_assert_gt(jnum_(c1, "scan_ns"), 0, "T1's word loads are attributed no scanner time");
	cr_assert_geq(jnum_(cb, "word_loads"), 1);
	cr_assert_geq(jnum_(c2, "word_loads"), 0);
	cr_assert_geq(jnum_(c2, "scan_ns"), 0);
	cr_assert_eq(jnum_(c1, "completions"), 3);
	cr_assert_eq(jnum_(c2, "armed"), 2);
	const char *tpath = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(c1, "cgroup"));
	cr_assert_not_null(tpath, "the tenant's session has no cgroup key");
	cr_assert_str_eq(tpath, cg_t.path);
	const char *bpath = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cb, "cgroup"));

	/* per cgroup: the sum over the cgroup's sessions, between two readings (T2's
	 * waits may still be looked at meanwhile: its counts only grow) */
	char *m = metrics_text(d.ctl);
	cJSON *after = ctl_json(d.ctl, "{\"request\":\"clients\"}");
	const cJSON *a1 = client_of(after, t1.session_id), *a2 = client_of(after, t2.session_id),
		    *ab = client_of(after, b.session_id);
	cr_assert_eq(cgroup_series(m, "garuda_cgroup_clients", tpath), 2, "%s", m);
	cr_assert_eq(cgroup_series(m, "garuda_cgroup_armed", tpath), 2);
	cr_assert_eq(cgroup_series(m, "garuda_cgroup_completions_total", tpath), 3);
	double loads = cgroup_series(m, "garuda_cgroup_word_loads_total", tpath);
	cr_assert_geq(loads, jnum_(c1, "word_loads") + jnum_(c2, "word_loads"), "%s", m);
	cr_assert_leq(loads, jnum_(a1, "word_loads") + jnum_(a2, "word_loads"), "%s", m);
	double scan = cgroup_series(m, "garuda_cgroup_scan_seconds_total", tpath) * 1e9;
	cr_assert_geq(scan + 0.5, jnum_(c1, "scan_ns") + jnum_(c2, "scan_ns"), "%s", m);
	cr_assert_leq(scan - 0.5, jnum_(a1, "scan_ns") + jnum_(a2, "scan_ns"), "%s", m);
	/* B: under its own key, or under "" when it has none */
	const char *bl = bpath ? bpath : "";
	cr_assert_eq(cgroup_series(m, "garuda_cgroup_clients", bl), 1, "%s", m);
	cr_assert_eq(cgroup_series(m, "garuda_cgroup_completions_total", bl), 1);
	double bloads = cgroup_series(m, "garuda_cgroup_word_loads_total", bl);
	cr_assert(bloads >= jnum_(cb, "word_loads") && bloads <= jnum_(ab, "word_loads"), "B's word loads %.0f", bloads);
	/* every session is under one key */
	cr_assert_eq(prom_sum(m, "garuda_cgroup_clients"), 3);
	cr_assert_eq(prom_sum(m, "garuda_cgroup_armed"), 2);
	/* the process */
	cr_assert_gt(prom_value(m, "garuda_process_resident_memory_bytes"), 0);
	cr_assert_geq(prom_value(m, "garuda_process_cpu_seconds_total"), 0);
	/* the histogram's help names what it holds (issue 30, item 11) */
	cr_assert_not_null(strstr(m, "# HELP garuda_wake_latency_seconds Per completion, the gap between its "
				     "scanner's previous look at the word and the look that saw the target reached"),
			   "%s", m);
	cr_assert_not_null(strstr(m, "Not the client's wake latency"));
	promtool_check(m);
	free(m);
	cJSON_Delete(before);
	cJSON_Delete(after);

	/* garctl top: LOADS/S and SCAN% per client, "-" in the first frame, numbers in
	 * the second; the legend names what GAP50/GAP99 measure */
	struct ctl_run r;
	GARCTL(&r, &d, "top", "-b", "-n", "2", "-d", "0.2");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "GAP50/GAP99: per completion, the scanner's gap between its previous look"),
			   "top has no legend for GAP50/GAP99:\n%s", r.out);
	cr_assert_not_null(strstr(r.out, "A client's own wake comes on top."), "%s", r.out);
	char ***t = ctl_table(r.out);
	int frame = 0;
	for (size_t i = 0; t[i]; i++) {
		if (!t[i][0] || strcmp(t[i][0], "CLIENT") != 0)
			continue;
		int cl = ctl_table_col(t + i, "LOADS/S"), cs = ctl_table_col(t + i, "SCAN%");
		cr_assert(cl >= 0 && cs >= 0, "top's client table lacks LOADS/S or SCAN%%:\n%s", r.out);
		cr_assert_geq(ctl_table_col(t + i, "GAP50"), 0);
		cr_assert_geq(ctl_table_col(t + i, "GAP99"), 0);
		int rows = 0;
		for (size_t k = i + 1; t[k] && t[k][0] && t[k][cs] && strspn(t[k][0], "0123456789") == strlen(t[k][0]);
		     k++, rows++) {
			if (frame == 0) {
				cr_assert_str_eq(t[k][cl], "-", "LOADS/S in the first frame");
				cr_assert_str_eq(t[k][cs], "-", "SCAN%% in the first frame");
			} else {
				cr_assert_eq(strspn(t[k][cl], "0123456789."), strlen(t[k][cl]), "LOADS/S %s", t[k][cl]);
				cr_assert_eq(strspn(t[k][cs], "0123456789."), strlen(t[k][cs]), "SCAN%% %s", t[k][cs]);
			}
		}
		cr_assert_eq(rows, 3, "frame %d has %d client rows:\n%s", frame, rows, r.out);
		frame++;
	}
	cr_assert_eq(frame, 2, "%s", r.out);
	ctl_table_free(t);
	ctl_run_free(&r);

	/* top -j: the totals as the clients reply has them, the rates consistent with them */
	cJSON *c0 = ctl_json(d.ctl, "{\"request\":\"clients\"}");
	GARCTL(&r, &d, "-j", "top", "-n", "2", "-d", "0.2");
	cJSON *c9 = ctl_json(d.ctl, "{\"request\":\"clients\"}");
	cr_assert_eq(r.status, 0, "%s", r.err);
	char *save = NULL, *copy = strdup(r.out);
	double loads1[3] = { 0 }, scan1[3] = { 0 };
	int lines = 0;
	const struct ctl_client *all[] = { &t1, &t2, &b };
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
		cJSON *j = cJSON_Parse(l);
		cr_assert(cJSON_IsObject(j), "%s", l);
		double dt = lines ? jnum_(j, "interval_s") : 0;
		for (int k = 0; k < 3; k++) {
			const cJSON *o = NULL, *it;
			cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "clients_detail"))
				if ((uint64_t)jnum_(it, "id") == all[k]->session_id)
					o = it;
			cr_assert_not_null(o, "frame %d lacks client %d", lines, k);
			double wl = jnum_(o, "word_loads"), sn = jnum_(o, "scan_ns");
			cr_assert_geq(wl, jnum_(client_of(c0, all[k]->session_id), "word_loads"));
			cr_assert_leq(wl, jnum_(client_of(c9, all[k]->session_id), "word_loads"));
			cr_assert_geq(sn, jnum_(client_of(c0, all[k]->session_id), "scan_ns"));
			cr_assert_leq(sn, jnum_(client_of(c9, all[k]->session_id), "scan_ns"));
			const cJSON *wr = cJSON_GetObjectItemCaseSensitive(o, "word_loads_per_s");
			const cJSON *sp = cJSON_GetObjectItemCaseSensitive(o, "scan_percent");
			if (lines == 0) {
				cr_assert(cJSON_IsNull(wr) && cJSON_IsNull(sp), "rates in the first frame");
				loads1[k] = wl;
				scan1[k] = sn;
			} else {
				cr_assert(cJSON_IsNumber(wr) && cJSON_IsNumber(sp), "no rates in the second frame");
				cr_assert(fabs(wr->valuedouble * dt - (wl - loads1[k])) <= 1e-6 * (1 + wl),
					  "word_loads_per_s %g x %g s != %g", wr->valuedouble, dt, wl - loads1[k]);
				cr_assert(fabs(sp->valuedouble / 100 * 1e9 * dt - (sn - scan1[k])) <= 1e-6 * (1 + sn),
					  "scan_percent %g over %g s != %g ns", sp->valuedouble, dt, sn - scan1[k]);
			}
		}
		cJSON_Delete(j);
	}
	cr_assert_eq(lines, 2);
	free(copy);
	cJSON_Delete(c0);
	cJSON_Delete(c9);
	ctl_run_free(&r);

	gd_seg_unmap(&s1);
	gd_seg_unmap(&s2);
	gd_seg_unmap(&sb);
	ctl_client_close(&t1);
	ctl_client_close(&t2);
	ctl_client_close(&b);
	cr_assert_eq(ctl_wait_status(d.ctl, "clients", 0), 0);
	/* no session, no per-cgroup series */
	m = metrics_text(d.ctl);
	cr_assert(isnan(prom_sum(m, "garuda_cgroup_clients")), "per-cgroup series with no session:\n%s", m);
	free(m);
	ctl_stop(&d);
}

/* garuda_quota_refusals_total by uid, cgroup key and quota key: the tenant's second
 * segment is refused by quota.cgroup.segments (its cgroup), a client of the test's own
 * is refused its second by quota.connection.segments; garuda_quota_limit is the
 * config's. */
Test(cost, refusals_by_uid_cgroup_and_key)
{
	tenant_group();
	struct gd_daemon d;
	ctl_start(&d, "{\"quota\":{\"cgroup\":{\"segments\":1},\"connection\":{\"segments\":1}}}");
	struct ctl_client t1, t2, b;
	tenant_client(d.sock, &t1);
	tenant_client(d.sock, &t2);
	ctl_client_open(&b, d.sock);
	struct gd_seg s1, sx, sb;
	cr_assert_eq(ctl_segment_open(&t1, 1, &s1), 0);
	cr_assert_eq(ctl_segment_open(&t2, 1, &sx), GARUDA_E_QUOTA, "the cgroup's second segment");
	cr_assert_eq(ctl_segment_open(&t2, 1, &sx), GARUDA_E_QUOTA);
	cr_assert_eq(ctl_segment_open(&b, 1, &sb), 0);
	cr_assert_eq(ctl_segment_open(&b, 1, &sx), GARUDA_E_QUOTA, "the connection's second segment");

	char *m = metrics_text(d.ctl);
	cJSON *cl = ctl_json(d.ctl, "{\"request\":\"clients\"}");
	const char *bpath = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(client_of(cl, b.session_id), "cgroup"));
	char series[512];
	snprintf(series, sizeof(series),
		 "garuda_quota_refusals_total{uid=\"%u\",cgroup=\"%s\",key=\"quota.cgroup.segments\"}",
		 (unsigned)geteuid(), cg_t.path);
	cr_assert_eq(prom_value(m, series), 2, "no %s == 2:\n%s", series, m);
	snprintf(series, sizeof(series),
		 "garuda_quota_refusals_total{uid=\"%u\",cgroup=\"%s\",key=\"quota.connection.segments\"}",
		 (unsigned)geteuid(), bpath ? bpath : "");
	cr_assert_eq(prom_value(m, series), 1, "no %s == 1:\n%s", series, m);
	cr_assert_eq(prom_sum(m, "garuda_quota_refusals_total"), ctl_status_num(d.ctl, "quota_refusals"),
		     "the labelled refusals do not add up to status' quota_refusals");
	cr_assert_eq(prom_sum(m, "garuda_quota_refusals_total"), 3);

	/* the limits: each as `config` has it */
	cJSON *cfg = ctl_json(d.ctl, "{\"request\":\"config\"}");
	static const char *const scopes[] = { "connection", "uid", "cgroup" };
	static const char *const kinds[] = { "segments", "lines",       "bindings",   "armed",
					     "points",   "outbox_bytes", "connections" };
	int n = 0;
	for (int s = 0; s < 3; s++)
		for (int k = 0; k < 7; k++) {
			const cJSON *q = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cfg, "quota"), scopes[s]),
				kinds[k]);
			snprintf(series, sizeof(series), "garuda_quota_limit{scope=\"%s\",quota=\"%s\"}", scopes[s], kinds[k]);
			if (s == 0 && k == 6) { /* a connection is one session: no config key (garudad(8)) */
				cr_assert_null(q, "config shows quota.connection.connections");
				cr_assert_eq(prom_value(m, series), 1, "%s", series);
				n++;
				continue;
			}
			cr_assert(cJSON_IsNumber(q), "config lacks quota.%s.%s", scopes[s], kinds[k]);
			cr_assert_eq(prom_value(m, series), q->valuedouble, "%s", series);
			n++;
		}
	cr_assert_eq(n, 21);
	cr_assert_eq(prom_value(m, "garuda_quota_limit{scope=\"cgroup\",quota=\"segments\"}"), 1);
	promtool_check(m);
	free(m);
	cJSON_Delete(cfg);
	cJSON_Delete(cl);

	gd_seg_unmap(&s1);
	gd_seg_unmap(&sb);
	ctl_client_close(&t1);
	ctl_client_close(&t2);
	ctl_client_close(&b);
	/* the counts outlive the sessions: a counter never goes down */
	cr_assert_eq(ctl_wait_status(d.ctl, "clients", 0), 0);
	m = metrics_text(d.ctl);
	cr_assert_eq(prom_sum(m, "garuda_quota_refusals_total"), 3, "%s", m);
	free(m);
	ctl_stop(&d);
}

/* garctl(1) names each key, column and family this file asserts, and says what the
 * look gap is (issue 30, item 11: the figure's meaning in top, the man page and the
 * metrics' help). */
Test(cost, man_page_names_them)
{
	const char *man = getenv("GARCTL_MAN");
	cr_assert(man && *man, "GARCTL_MAN is not set");
	FILE *f = fopen(man, "re");
	cr_assert_not_null(f, "%s", man);
	static char text[1 << 17];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	cr_assert_lt(n, sizeof(text) - 1, "garctl(1) is larger than the test's buffer");
	static const char *const names[] = {
		"word_loads", "scan_ns", "word_loads_per_s", "scan_percent", "LOADS/S", "SCAN%", "GAP50",
		"GAP99", "garuda_cgroup_clients", "garuda_cgroup_armed", "garuda_cgroup_completions_total",
		"garuda_cgroup_word_loads_total", "garuda_cgroup_scan_seconds_total",
		"garuda_quota_refusals_total{uid,cgroup,key}", "garuda_quota_limit{scope,quota}",
		"garuda_process_cpu_seconds_total", "garuda_process_resident_memory_bytes", "look gap",
		"not what a\nclient measures",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_assert_not_null(strstr(text, names[i]), "garctl(1) does not name %s", names[i]);
}

/* The reload status (issue 30, item 7): none before a reload; after a good one
 * garuda_config_last_reload_successful 1; after a bad file 0, with the failures
 * counted and the timestamp not going back. */
Test(cost, reload_status)
{
	struct gd_daemon d;
	ctl_start(&d, "{}");
	char *m = metrics_text(d.ctl);
	cr_assert_eq(prom_value(m, "garuda_config_reloads_total"), 0);
	cr_assert(isnan(prom_value(m, "garuda_config_last_reload_successful")));
	free(m);
	cJSON *r = ctl_json(d.ctl, "{\"request\":\"reload\"}");
	cJSON_Delete(r);
	m = metrics_text(d.ctl);
	cr_assert_eq(prom_value(m, "garuda_config_reloads_total"), 1);
	cr_assert_eq(prom_value(m, "garuda_config_reload_failures_total"), 0);
	cr_assert_eq(prom_value(m, "garuda_config_last_reload_successful"), 1);
	double t1 = prom_value(m, "garuda_config_last_reload_timestamp_seconds");
	cr_assert_gt(t1, 1e9);
	free(m);
	ctl_write_config(&d, "{not json");
	r = ctl_json(d.ctl, "{\"request\":\"reload\"}");
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(r, "error"), "a bad file reloaded");
	cJSON_Delete(r);
	m = metrics_text(d.ctl);
	cr_assert_eq(prom_value(m, "garuda_config_reloads_total"), 2);
	cr_assert_eq(prom_value(m, "garuda_config_reload_failures_total"), 1);
	cr_assert_eq(prom_value(m, "garuda_config_last_reload_successful"), 0);
	cr_assert_geq(prom_value(m, "garuda_config_last_reload_timestamp_seconds"), t1);
	promtool_check(m);
	free(m);
	ctl_write_config(&d, "{}");
	ctl_stop(&d);
}

/* The reply to req, raw: asserted valid UTF-8, then parsed (no "error"). */
static cJSON *utf8_reply(const char *ctl, const char *req)
{
	char *text = ctl_raw(ctl, req, strlen(req));
	cr_assert(ctl_valid_utf8(text, strlen(text)), "the %s reply is not UTF-8: %s", req, text);
	cJSON *j = cJSON_Parse(text);
	cr_assert(cJSON_IsObject(j), "%s", text);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "error"), "%s", text);
	free(text);
	return j;
}

/* Cgroup names may hold any byte but '/' and NUL, comm any but NUL. In the replies
 * they are valid UTF-8 and reversible: a byte that is not UTF-8, a control byte (C0,
 * DEL, C1) as \xHH, a backslash as \\. So two names differing in bytes that are not
 * UTF-8 keep two series (a node_exporter drops duplicates), and no escape byte of a
 * name reaches a terminal through garctl metrics. */
Test(cost, odd_names_keep_distinct_printable_labels)
{
	static const struct {
		const char *name;  /* the group's name after "garuda-test-PID-" */
		const char *json;  /* its escaped form: the clients reply's cgroup */
		const char *label; /* ... as the exposition text writes the label */
	} odd[ODD_GROUPS] = {
		{ "u\xff", "u\\xFF", "u\\\\xFF" },
		{ "u\xfe", "u\\xFE", "u\\\\xFE" },
		{ "e\x1b[31m", "e\\x1B[31m", "e\\\\x1B[31m" },
		{ "c\xc2\x9b" "1m", "c\\xC2\\x9B1m", "c\\\\xC2\\\\x9B1m" },
		{ "b\\s", "b\\\\s", "b\\\\\\\\s" },
		{ "q\"t\xc3\xa9", "q\"t\xc3\xa9", "q\\\"t\xc3\xa9" },
	};
	char why[300];
	for (int i = 0; i < ODD_GROUPS; i++)
		if (cg_make(&cg_odd[i], odd[i].name, why, sizeof(why)))
			cr_skip_test("no cgroup group named %s: %s", odd[i].json, why);
	struct gd_daemon d;
	ctl_start(&d, NULL);
	struct ctl_client c[ODD_GROUPS], self;
	for (int i = 0; i < ODD_GROUPS; i++)
		group_client(&cg_odd[i], d.sock, &c[i]);
	/* a comm of odd bytes: ours, while we connect (garudad reads /proc/PID/comm) */
	char comm[17] = "", back[32] = "";
	cr_assert_eq(prctl(PR_GET_NAME, comm), 0);
	cr_assert_eq(prctl(PR_SET_NAME, "\xff\xfe\"A\\\x1b"), 0);
	FILE *f = fopen("/proc/self/comm", "re");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(back, sizeof(back), f));
	fclose(f);
	ctl_client_open(&self, d.sock);
	prctl(PR_SET_NAME, comm);
	cr_assert_str_eq(back, "\xff\xfe\"A\\\x1b\n", "the test does not run on its process's main thread");

	cJSON *cl = utf8_reply(d.ctl, "{\"request\":\"clients\"}");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(client_of(cl, self.session_id), "comm")),
			 "\\xFF\\xFE\"A\\\\\\x1B");
	for (int i = 0; i < ODD_GROUPS; i++) {
		const char *got = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(client_of(cl, c[i].session_id),
											 "cgroup"));
		cr_assert_not_null(got);
		size_t plen = strlen(cg_odd[i].path) - strlen(odd[i].name); /* ".../garuda-test-PID-" */
		cr_assert(strncmp(got, cg_odd[i].path, plen) == 0 && strcmp(got + plen, odd[i].json) == 0,
			  "cgroup %s, expected the prefix %.*s and %s", got, (int)plen, cg_odd[i].path, odd[i].json);
	}
	cJSON_Delete(cl);

	cJSON *mj = utf8_reply(d.ctl, "{\"request\":\"metrics\"}");
	const char *m = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mj, "text"));
	cr_assert_not_null(m);
	char *e = prom_check(m);
	cr_assert_null(e, "%s\n%s", e, m);
	for (const char *p = m; *p; p++)
		cr_assert((unsigned char)*p >= 0x20 || *p == '\n', "a control byte 0x%02x in the metrics text",
			  (unsigned)*p);
	for (int i = 0; i < ODD_GROUPS; i++) {
		size_t plen = strlen(cg_odd[i].path) - strlen(odd[i].name);
		char series[512];
		snprintf(series, sizeof(series), "garuda_cgroup_clients{cgroup=\"%.*s%s\"}", (int)plen, cg_odd[i].path,
			 odd[i].label);
		cr_assert_eq(prom_value(m, series), 1, "no %s 1:\n%s", series, m);
		snprintf(series, sizeof(series), "garuda_quota_cgroup_used{cgroup=\"%.*s%s\",quota=\"connections\"}",
			 (int)plen, cg_odd[i].path, odd[i].label);
		cr_assert_eq(prom_value(m, series), 1, "no %s 1:\n%s", series, m);
	}
	cr_assert_eq(prom_sum(m, "garuda_cgroup_clients"), ODD_GROUPS + 1);
	promtool_check(m);
	cJSON_Delete(mj);

	for (int i = 0; i < ODD_GROUPS; i++)
		ctl_client_close(&c[i]);
	ctl_client_close(&self);
	cr_assert_eq(ctl_wait_status(d.ctl, "clients", 0), 0);
	ctl_stop(&d);
}

/* The label value of a series line (its first label), unescaped from the exposition
 * format, into out. */
static void first_label(const char *line, char *out, size_t cap)
{
	const char *p = strchr(line, '"');
	cr_assert_not_null(p, "%s", line);
	size_t n = 0;
	for (p++; *p && *p != '"'; p++) {
		if (*p == '\\')
			p++;
		cr_assert_lt(n + 1, cap, "a label longer than %zu bytes: %s", cap, line);
		out[n++] = *p;
	}
	out[n] = '\0';
}

/* Many cgroups with long paths (20 clients, each in a group 3.4 KB deep: a container
 * runtime's, or a tenant's hostile names) do not make the metrics reply too long for
 * the control socket (garctl metrics failed with TOO_LONG and garuda-textfile wrote
 * garuda_up 0): a label is at most 128 bytes, a cut path keeps its own label (a hash of
 * the whole path after "\#"), and the 16 cgroup keys with the most lines keep series
 * of their own, the rest are summed in cgroup="(other)". */
Test(cost, metrics_fit_with_many_long_cgroup_paths)
{
	char why[300];
	struct cg_group base;
	if (cg_make(&base, "long", why, sizeof(why)))
		cr_skip_test("no writable cgroup2 to make a test group in: %s", why);
	long_fd[0] = open(base.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(long_fd[0], 0);
	snprintf(cg_t.dir, sizeof(cg_t.dir), "%s", base.dir); /* cost_fini removes it */
	char path[8192];
	size_t at = (size_t)snprintf(path, sizeof(path), "%s", base.path);
	for (int i = 1; i <= LONG_LEVELS; i++) {
		/* 253 bytes, a quote and a backslash in each: escaping doubles them */
		snprintf(long_name[i], sizeof(long_name[i]), "q\"\\%0250d", i);
		cr_assert_eq(mkdirat(long_fd[i - 1], long_name[i], 0755), 0, "mkdir: %s", strerror(errno));
		long_fd[i] = openat(long_fd[i - 1], long_name[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(long_fd[i], 0);
		at += (size_t)snprintf(path + at, sizeof(path) - at, "/%s", long_name[i]);
	}
	struct gd_daemon d;
	ctl_start(&d, NULL);
	struct ctl_client c[LONG_LEAVES];
	for (int i = 0; i < LONG_LEAVES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "leaf-%02d", i);
		cr_assert_eq(mkdirat(long_fd[LONG_LEVELS], name, 0755), 0, "mkdir: %s", strerror(errno));
		leaf_fd[i] = openat(long_fd[LONG_LEVELS], name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cr_assert_geq(leaf_fd[i], 0);
		struct cg_group leaf; /* too deep for a path: the child reaches it by our fd */
		memset(&leaf, 0, sizeof(leaf));
		snprintf(leaf.dir, sizeof(leaf.dir), "/proc/self/fd/%d", leaf_fd[i]);
		group_client(&leaf, d.sock, &c[i]);
	}
	/* the daemon keys them by the whole path */
	cJSON *cl = ctl_json(d.ctl, "{\"request\":\"clients\"}");
	const char *got = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(client_of(cl, c[0].session_id), "cgroup"));
	cr_assert(got && strlen(got) > 3300, "the leaf's cgroup key: %s", got ? got : "null");
	cJSON_Delete(cl);

	char *m = metrics_text(d.ctl); /* asserts a reply, not TOO_LONG */
	char labels[LONG_LEAVES + 1][256];
	int n = 0;
	for (const char *p = m; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "garuda_cgroup_clients{", 22) != 0)
			continue;
		cr_assert_lt(n, LONG_LEAVES + 1, "more series than keys:\n%s", m);
		first_label(p, labels[n], sizeof(labels[n]));
		size_t len = strlen(labels[n]);
		cr_assert_leq(len, 128, "a label of %zu bytes: %s", len, labels[n]);
		if (strcmp(labels[n], "(other)") != 0)
			cr_assert_not_null(strstr(labels[n], "\\#"), "a long path's label lacks its hash: %s", labels[n]);
		for (int k = 0; k < n; k++)
			cr_assert_str_neq(labels[k], labels[n], "two series with one label:\n%s", m);
		n++;
	}
	cr_assert_eq(n, 17, "%d cgroup series, expected 16 and (other):\n%s", n, m);
	cr_assert_eq(prom_value(m, "garuda_cgroup_clients{cgroup=\"(other)\"}"), LONG_LEAVES - 16, "%s", m);
	cr_assert_eq(prom_sum(m, "garuda_cgroup_clients"), LONG_LEAVES);
	cr_assert_eq(prom_value(m, "garuda_quota_cgroup_used{cgroup=\"(other)\",quota=\"connections\"}"),
		     LONG_LEAVES - 16);
	cr_assert_eq(prom_value(m, "garuda_metrics_folded{keys=\"cgroup\"}"), LONG_LEAVES - 16, "%s", m);
	free(m);

	/* garctl metrics, as garuda-textfile runs it */
	char sockarg[160];
	snprintf(sockarg, sizeof(sockarg), "--socket=%s", d.ctl);
	const char *args[] = { sockarg, "metrics", NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	cr_assert_eq(r.status, 0, "garctl metrics: exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.out, "garuda_cgroup_clients{cgroup=\"(other)\"} 4\n"));
	ctl_run_free(&r);

	for (int i = 0; i < LONG_LEAVES; i++)
		ctl_client_close(&c[i]);
	cr_assert_eq(ctl_wait_status(d.ctl, "clients", 0), 0);
	ctl_stop(&d);
	long_groups_remove();
	cg_remove(&cg_t);
}
