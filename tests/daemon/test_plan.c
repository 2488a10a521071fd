/* test_plan.c — garudad's wait plan (issue 11): the plan key and --plan flag (BAD_PLAN
 * refusals naming the key, reload applies a new plan and keeps the old one on a bad
 * text), the scanners' exact/censored accounting, the per-session points (bounded,
 * charged to the quota, listed with their predictions), and the rule that an ARM
 * wakes a sleeping scanner only when its deadline is earlier than the wake time
 * (observed through the scanner's arm_wakes / arm_nowakes counters), or when its
 * target landed already: such an arm fires without a sleep and records nothing.
 *
 * No assertion depends on timing: where a test needs a scanner that sleeps, the plan
 * gives it no spin at all (park_us=0), so every completion it finds is censored
 * whatever the machine's load. What a find records (exact, censored, late, the second
 * look, stream order) is the pure policy's, tested on a simulated clock in
 * tests/proto/test_policy.c; here only the daemon's end of it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "counters.h"
#include "harness.h"

TestSuite(plan, .init = gd_test_init, .fini = gd_test_fini, .timeout = 180);

/* ---------------------------------------------------------------- helpers ---- */

static int run_garudad(struct gd_daemon *d, const char *args, char *out, size_t cap)
{
	const char *bin = getenv("GARUDAD");
	cr_assert_not_null(bin);
	char cmd[2048], path[192];
	snprintf(path, sizeof(path), "%s/run.out", d->dir);
	snprintf(cmd, sizeof(cmd), "timeout 20 %s %s >%s 2>&1 </dev/null", bin, args, path);
	int st = system(cmd);
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(out, 1, cap - 1, f);
		out[n] = '\0';
		fclose(f);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *config_plan(struct gd_daemon *d)
{
	cJSON *j = gd_control(d, "{\"request\":\"config\"}");
	cr_assert_not_null(j);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "plan");
	cr_assert(cJSON_IsString(p), "config has no plan");
	char *s = strdup(p->valuestring);
	cJSON_Delete(j);
	return s;
}

/* wait (deadline) until garudad's scanner thread ("garuda-scan0") is blocked in
 * futex(2): parked, or asleep until a deadline. An event, read from
 * /proc/PID/task/TID/syscall, not a time. */
static bool wait_scanner_asleep(struct gd_daemon *d)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)d->pid);
	for (uint64_t dl = gd_deadline(GD_DEADLINE_MS); gd_left_ms(dl) > 0; usleep(1000)) {
		DIR *t = opendir(dir);
		struct dirent *e;
		bool asleep = false;
		while (t && (e = readdir(t)) && !asleep) {
			char path[384], buf[64] = "";
			snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
			FILE *f = fopen(path, "re");
			bool scanner = f && fgets(buf, sizeof(buf), f) && strncmp(buf, "garuda-scan", 11) == 0;
			if (f)
				fclose(f);
			snprintf(path, sizeof(path), "%s/%s/syscall", dir, e->d_name);
			if (scanner && (f = fopen(path, "re"))) {
				asleep = fgets(buf, sizeof(buf), f) && strtol(buf, NULL, 10) == SYS_futex;
				fclose(f);
			}
		}
		if (t)
			closedir(t);
		if (asleep)
			return true;
	}
	return false;
}

/* the "points" reply of client id (caller deletes) */
static cJSON *points_of(struct gd_daemon *d, uint64_t client)
{
	char req[96];
	snprintf(req, sizeof(req), "{\"request\":\"points\",\"client\":%llu}", (unsigned long long)client);
	cJSON *j = gd_control(d, req);
	cr_assert_not_null(j);
	return j;
}

static uint64_t first_client_id(struct gd_daemon *d, int nth)
{
	cJSON *j = gd_control(d, "{\"request\":\"clients\"}");
	cr_assert_not_null(j);
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "clients"), nth);
	cr_assert_not_null(c, "no client %d", nth);
	uint64_t id = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "id"));
	cJSON_Delete(j);
	return id;
}

static double client_num(struct gd_daemon *d, int nth, const char *key)
{
	cJSON *j = gd_control(d, "{\"request\":\"clients\"}");
	cr_assert_not_null(j);
	const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "clients"), nth);
	cr_assert_not_null(c, "no client %d", nth);
	double v = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, key));
	cJSON_Delete(j);
	return v;
}

/* arm (message form), store, and take the READY */
static void complete(struct gd_client *c, struct gd_seg *s, uint32_t idx, uint64_t token)
{
	uint64_t v = gd_load(s, idx) + 1;
	gd_ok(gd_arm(c, gd_slot(s, idx), v, token, GARUDA_FORM_MESSAGE));
	gd_store(s, idx, v);
	struct garuda_ready rd;
	int r = gd_wait_ready(c, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "READY: %s", gd_strerr(r));
	cr_assert_eq(rd.token, token);
}

/* ------------------------------------------------------- config and flag ---- */

Test(plan, flag_and_config_refusals_name_the_key)
{
	struct gd_daemon d = { 0 };
	gd_prepare(&d);
	char out[8192], args[1024], cfg[192];
	snprintf(cfg, sizeof(cfg), "%s/bad.json", d.dir);
	static const struct {
		const char *plan, *key;
	} bad[] = {
		{ "block", "block" }, /* the daemon has no blocking wait */
		{ "flag:park_us=5", "backstop_us" },
		{ "poll+predict:margin_us=1,min_sleep_us=1,max_sleep_us=2,window=17", "window" },
		{ "poll+predict:margin_us=1,min_sleep_us=9,max_sleep_us=2,window=4", "min_sleep_us" },
		{ "flag:park_us=10001,backstop_us=1", "park_us" },
		{ "spin", "spin" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(args, sizeof(args), "'--plan=%s' --socket=%s --control-socket=%s", bad[i].plan,
			 d.sock, d.ctl);
		int st = run_garudad(&d, args, out, sizeof(out));
		cr_assert_eq(st, 2, "--plan=%s: exit %d, expected 2: %s", bad[i].plan, st, out);
		cr_assert(strstr(out, "--plan") && strstr(out, bad[i].key) && strstr(out, "BAD_PLAN"),
			  "--plan=%s: the error names neither the key %s nor BAD_PLAN: %s", bad[i].plan,
			  bad[i].key, out);

		FILE *f = fopen(cfg, "w");
		cr_assert_not_null(f);
		fprintf(f, "{\"plan\": \"%s\"}", bad[i].plan);
		fclose(f);
		snprintf(args, sizeof(args), "--config=%s --socket=%s --control-socket=%s", cfg, d.sock, d.ctl);
		st = run_garudad(&d, args, out, sizeof(out));
		cr_assert_eq(st, 2, "config plan %s: exit %d: %s", bad[i].plan, st, out);
		cr_assert(strstr(out, cfg) && strstr(out, ": plan: ") && strstr(out, bad[i].key) &&
			  strstr(out, "BAD_PLAN"),
			  "config plan %s: the error names not the file, plan, %s and BAD_PLAN: %s", bad[i].plan,
			  bad[i].key, out);
	}
	FILE *f = fopen(cfg, "w");
	cr_assert_not_null(f);
	fputs("{\"plan\": 7}", f);
	fclose(f);
	snprintf(args, sizeof(args), "--config=%s --socket=%s --control-socket=%s", cfg, d.sock, d.ctl);
	int st = run_garudad(&d, args, out, sizeof(out));
	cr_assert(st == 2 && strstr(out, "plan"), "a non-string plan: exit %d: %s", st, out);
	st = run_garudad(&d, "--help", out, sizeof(out));
	cr_assert(st == 0 && strstr(out, "--plan"), "--help does not list --plan: %s", out);
	gd_cleanup(&d);
	gd_check_fds();
}

Test(plan, flag_sets_the_plan_and_reload_applies_one)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .args = (const char *const[]){ "--plan=poll", NULL } });
	char *p = config_plan(&d);
	cr_assert_str_eq(p, "poll");
	free(p);
	gd_stop(&d);

	/* the config key, then a reload to another plan, then a bad one (kept) */
	struct gd_daemon e = { 0 };
	gd_start(&e, &(struct gd_opts){ .config = "{\"plan\": \"flag:park_us=50,backstop_us=1000\"}" });
	p = config_plan(&e);
	cr_assert_str_eq(p, "flag:park_us=50,backstop_us=1000");
	free(p);
	cJSON *j = gd_control(&e, "{\"request\":\"config\"}");
	/* the plan's park_us and backstop_us are in its text: the legacy keys that would
	 * replace them are not set, so not shown */
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "spin_us"));
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "max_sleep_us"));
	cJSON_Delete(j);

	static const char *next =
		"flag:park_us=0,backstop_us=300+predict:margin_us=10,min_sleep_us=0,max_sleep_us=5000,window=2";
	FILE *f = fopen(e.config, "w");
	cr_assert_not_null(f);
	fprintf(f, "{\"scanners\": 1, \"plan\": \"%s\"}", next);
	fclose(f);
	j = gd_control(&e, "{\"request\":\"reload\"}");
	cr_assert_not_null(j);
	cJSON_Delete(j);
	p = config_plan(&e);
	cr_assert_str_eq(p, next, "reload did not apply the plan");
	free(p);

	f = fopen(e.config, "w");
	cr_assert_not_null(f);
	fputs("{\"plan\": \"block\"}", f);
	fclose(f);
	j = gd_control(&e, "{\"request\":\"reload\"}");
	cr_assert_not_null(j);
	const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
	cr_assert_not_null(err, "a reload with plan block was not refused");
	cJSON_Delete(j);
	p = config_plan(&e);
	cr_assert_str_eq(p, next, "a refused reload changed the plan");
	free(p);
	gd_stop(&e);
}

/* ------------------------------------------------- exact and censored ---- */

/* A plan with no spin at all (park_us=0, and min_sleep_us so large that no predicted
 * sleep is taken, so no spin past a deadline either): the scanner sleeps between
 * every pass, so each completion is found after a sleep: censored, and it gives the
 * point a prediction (each found past its spin bound, so recorded as a lower bound).
 * The counts add up under any plan: exact + censored == completions. */
Test(plan, censored_counted_and_recorded)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){
			     .config = "{\"scanners\": 1, \"plan\": \"flag:park_us=0,backstop_us=200"
				       "+predict:margin_us=0,min_sleep_us=1000000,max_sleep_us=1000000,window=4\"}" });
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	gd_ok(gd_segment_open(&c, 2, -1, &s));
	for (unsigned i = 0; i < 3; i++) {
		/* wait until the scanner has slept with the arm in its set, then store */
		double sl = gd_scanner_sum(d.ctl, "sleeps");
		uint64_t v = gd_load(&s, 0) + 1;
		gd_ok(gd_arm(&c, gd_slot(&s, 0), v, 100 + i, GARUDA_FORM_MESSAGE));
		cr_assert_geq(gd_wait_scanner(d.ctl, "sleeps", sl + 1), sl + 1);
		gd_store(&s, 0, v);
		struct garuda_ready rd;
		cr_assert_eq(gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1);
	}
	cr_assert_eq(gd_wait_scanner(d.ctl, "completions", 3), 3);
	cr_assert_eq(gd_scanner_sum(d.ctl, "censored"), 3, "a completion found after a sleep is censored");
	cr_assert_eq(gd_scanner_sum(d.ctl, "exact"), 0);
	cr_assert_eq(gd_scanner_sum(d.ctl, "spins"), 0, "park_us=0 never spins");

	cJSON *j = points_of(&d, first_client_id(&d, 0));
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "points");
	cr_assert_eq(cJSON_GetArraySize(list), 1, "one word, one point");
	const cJSON *pt = cJSON_GetArrayItem(list, 0);
	cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "segment")), s.id);
	cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "index")), 0);
	/* found by the short schedule past a spin bound of 0: each is a lower bound */
	cr_assert_eq(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "exact")) +
			     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "censored")), 3,
		     "each completion is one record of its point");
	cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(pt, "prediction_ns")),
		  "the records give the point a prediction");
	cJSON_Delete(j);

	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* poll: the scanner never sleeps with something armed; every completion is exact or
 * censored (which one depends on preemption, so only the sum is asserted). No points
 * without +predict. */
Test(plan, poll_spins_and_counts_add_up)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\": 1, \"plan\": \"poll\"}" });
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	for (unsigned i = 0; i < 5; i++)
		complete(&c, &s, 0, i + 1);
	cr_assert_eq(gd_wait_scanner(d.ctl, "completions", 5), 5);
	cr_assert_eq(gd_scanner_sum(d.ctl, "exact") + gd_scanner_sum(d.ctl, "censored"), 5);
	cr_assert_eq(gd_scanner_sum(d.ctl, "sleeps"), 0, "poll never sleeps with something armed");
	cJSON *j = points_of(&d, first_client_id(&d, 0));
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "points")), 0,
		     "a plan without +predict keeps no points");
	cJSON_Delete(j);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* deliver_cpu_ns (part of the floor the bench prices, tests/bench/plans.c) times the
 * writes of readiness and nothing else: a scanner that spins on a word that never
 * moves counts none, and the first delivering step (one the scanner samples) counts. */
Test(plan, deliver_time_counts_deliveries_only)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\": 1, \"plan\": \"poll\"}" });
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	gd_ok(gd_segment_open(&c, 2, -1, &s));
	gd_ok(gd_arm(&c, gd_slot(&s, 1), gd_load(&s, 1) + 1, 7, GARUDA_FORM_MESSAGE));
	double p0 = gd_scanner_sum(d.ctl, "passes");
	cr_assert_geq(gd_wait_scanner(d.ctl, "passes", p0 + 100), p0 + 100, "the scanner never looked");
	cr_assert_eq(gd_scanner_sum(d.ctl, "deliver_cpu_ns"), 0, "looks at a word that never moved timed a delivery");
	complete(&c, &s, 0, 1);
	/* counted once the write returned: the READY may reach the client first */
	cr_assert_gt(gd_wait_scanner(d.ctl, "deliver_cpu_ns", 1), 0, "a delivery was not timed");
	cr_assert_eq(gd_scanner_sum(d.ctl, "completions"), 1);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* ------------------------------------------------------ points bounded ---- */

/* quota.connection.points = 2, quota.uid.points = 3: a session never holds more than
 * 2 (the least recently used point is reused), the uid's sessions together never more
 * than 3, the clients view shows the charge, and a session's end gives it back. */
Test(plan, points_bounded_and_charged)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){
			     .config = "{\"scanners\": 1, \"quota\": {\"connection\": {\"points\": 2},"
				       " \"uid\": {\"points\": 3}}}" });
	struct gd_client a, b;
	struct gd_seg sa, sb;
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_segment_open(&a, 4, -1, &sa));
	for (uint32_t i = 0; i < 4; i++)
		complete(&a, &sa, i, 10 + i);
	cr_assert_eq(client_num(&d, 0, "points"), 2, "a session holds at most quota.connection.points");
	uint64_t ida = first_client_id(&d, 0);
	cJSON *j = points_of(&d, ida);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "points");
	cr_assert_eq(cJSON_GetArraySize(list), 2);
	/* LRU: the last two words used are the ones kept */
	unsigned seen = 0;
	const cJSON *pt;
	cJSON_ArrayForEach(pt, list)
	seen |= 1u << (unsigned)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "index"));
	cr_assert_eq(seen, (1u << 2) | (1u << 3), "the least recently used points were not the ones reused");
	cJSON_Delete(j);
	/* a point used again is the newest: word 2 again, then word 0 takes word 3's */
	complete(&a, &sa, 2, 14);
	complete(&a, &sa, 0, 15);
	j = points_of(&d, ida);
	seen = 0;
	cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(j, "points"))
	seen |= 1u << (unsigned)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "index"));
	cr_assert_eq(seen, (1u << 0) | (1u << 2), "the point used again was reused (%#x)", seen);
	cJSON_Delete(j);

	gd_ok(gd_open(&b, d.sock));
	gd_ok(gd_segment_open(&b, 4, -1, &sb));
	for (uint32_t i = 0; i < 3; i++)
		complete(&b, &sb, i, 20 + i);
	cr_assert_eq(client_num(&d, 1, "points"), 1, "the uid's quota (3) leaves b one point");
	gd_seg_unmap(&sa);
	gd_close(&a);
	cr_assert_eq(gd_wait_status(&d, "clients", 1), 1);
	complete(&b, &sb, 3, 30);
	cr_assert_eq(client_num(&d, 0, "points"), 2, "a's points went back to the uid's quota");
	gd_seg_unmap(&sb);
	gd_close(&b);
	gd_stop(&d);
}

/* ----------------------------------------- arm wakes only if earlier ---- */

/* Train word 0 to a long prediction (a censored wake after ~2 s gives ~1 s), then:
 * an ARM on it puts the scanner to sleep until its deadline; a second ARM on the same
 * point has a later deadline and must not wake it (arm_nowakes); an ARM on a cold word
 * (deadline: now) must (arm_wakes). */
/* garudad whose plan sleeps a point's whole prediction (no margin, window 1, no spin),
 * a client with a segment of `lines`, and word 0 trained by one completion `ms` after
 * its arm (found by the short schedule: its point learns ~ms) */
/* the plan of start_trained(): no spinning past a deadline, no margin, one record */
#define TRAINED_PLAN "flag:park_us=0,backstop_us=200+predict:margin_us=0,min_sleep_us=0,max_sleep_us=60000000,window=1"

/* Start garudad with plan (one scanner), open a segment of `lines` and train word 0
 * with one cold completion stored after `ms` (found past park_us: its lower bound is
 * recorded as exact). */
static void start_trained(struct gd_daemon *d, struct gd_client *c, struct gd_seg *s, uint32_t lines,
			  unsigned ms, const char *plan)
{
	char config[256];
	snprintf(config, sizeof(config), "{\"scanners\": 1, \"plan\": \"%s\"}", plan);
	gd_start(d, &(struct gd_opts){ .config = config });
	gd_ok(gd_open(c, d->sock));
	gd_ok(gd_segment_open(c, lines, -1, s));
	/* its first park: from here each completion that empties the set adds one
	 * (wait_parked()) */
	cr_assert_geq(gd_wait_scanner(d->ctl, "parks", 1), 1, "the scanner never parked");
	gd_ok(gd_arm(c, gd_slot(s, 0), 1, 1, GARUDA_FORM_MESSAGE));
	usleep(ms * 1000);
	gd_store(s, 0, 1);
	struct garuda_ready rd;
	cr_assert_eq(gd_wait_ready(c, &rd, GD_DEADLINE_MS), 1);
}

/* start_trained() with word 0 trained to ~2 s (TRAINED_PLAN), until the scanner is
 * parked again: once at start, once after the training's completion (the READY can
 * reach us before the scanner is back in its wait) */
static void start_parked_2s(struct gd_daemon *d, struct gd_client *c, struct gd_seg *s)
{
	start_trained(d, c, s, 2, 2000, TRAINED_PLAN);
	cr_assert_eq(gd_scanner_sum(d->ctl, "censored"), 1);
	cr_assert_geq(gd_wait_scanner(d->ctl, "parks", 2), 2);
	cr_assert(wait_scanner_asleep(d), "the scanner did not park");
}

Test(plan, arm_wakes_only_if_earlier)
{
	struct gd_daemon d = { 0 };
	struct gd_client c;
	struct gd_seg s;
	struct garuda_ready rd;
	start_parked_2s(&d, &c, &s);

	/* the scanner is parked: this ARM wakes it; it then sleeps until the deadline */
	double w0 = gd_scanner_sum(d.ctl, "arm_wakes"), n0 = gd_scanner_sum(d.ctl, "arm_nowakes");
	double sl = gd_scanner_sum(d.ctl, "sleeps");
	double a0 = gd_scanner_sum(d.ctl, "arms_taken"), t0 = gd_scanner_sum(d.ctl, "take_ns");
	gd_ok(gd_arm(&c, gd_slot(&s, 0), 2, 2, GARUDA_FORM_MESSAGE));
	cr_assert_geq(gd_wait_scanner(d.ctl, "sleeps", sl + 1), sl + 1);
	cr_assert(wait_scanner_asleep(&d), "the scanner did not go to sleep"); /* its deadline: ~1 s away */
	cr_assert_eq(gd_scanner_sum(d.ctl, "arm_wakes"), w0 + 1, "an ARM to a parked scanner wakes it");

	/* (no check that the scanner made no pass meanwhile: its trained deadline ends the
	 * sleep by itself, on a loaded machine possibly before this ARM; arm_nowakes and
	 * arm_wakes say what the ARM did) */
	gd_ok(gd_arm(&c, gd_slot(&s, 0), 3, 3, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_scanner(d.ctl, "arm_nowakes", n0 + 1), n0 + 1,
		     "an ARM with a later deadline woke the sleeping scanner");
	cr_assert_eq(gd_scanner_sum(d.ctl, "arm_wakes"), w0 + 1);

	gd_ok(gd_arm(&c, gd_slot(&s, 1), 1, 4, GARUDA_FORM_MESSAGE)); /* cold: deadline now */
	cr_assert_eq(gd_wait_scanner(d.ctl, "arm_wakes", w0 + 2), w0 + 2, "an earlier deadline did not wake it");

	gd_store(&s, 1, 1);
	gd_store(&s, 0, 3);
	unsigned got = 0;
	while (got < 3) {
		int r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "READY: %s", gd_strerr(r));
		got++;
	}
	/* each ARM was taken once, the one that did not wake it at the next wake; each
	 * take adds its delay since the client sent it */
	cr_assert_eq(gd_scanner_sum(d.ctl, "arms_taken"), a0 + 3);
	cr_assert_gt(gd_scanner_sum(d.ctl, "take_ns"), t0);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* the records of client 0's point number i (exact + censored, as listed) */
static double point_records(struct gd_daemon *d, int i)
{
	cJSON *j = points_of(d, first_client_id(d, 0));
	const cJSON *pt = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "points"), i);
	cr_assert_not_null(pt, "no point %d", i);
	double n = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "exact")) +
		   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "censored"));
	cJSON_Delete(j);
	return n;
}

/* protocol.md §9.1, "Immediately when already reached", under a prediction: with its
 * point trained to ~2 s, an arm sent after its store wakes the parked scanner, which
 * fires it without sleeping toward the deadline 2 s on (the take's look, watch.h),
 * and the point learns nothing from it (the arm says nothing of its work's length). */
Test(plan, a_landed_arm_fires_at_once_and_teaches_its_point_nothing)
{
	struct gd_daemon d = { 0 };
	struct gd_client c;
	struct gd_seg s;
	struct garuda_ready rd;
	start_parked_2s(&d, &c, &s);
	double sl = gd_scanner_sum(d.ctl, "sleeps"), parks = gd_scanner_sum(d.ctl, "parks");
	double rec = point_records(&d, 0);
	cr_assert_eq(rec, 1, "the training's completion is the point's one record");

	gd_store(&s, 0, 2);
	gd_ok(gd_arm(&c, gd_slot(&s, 0), 2, 2, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1);
	cr_assert_eq(rd.token, 2);
	cr_assert_geq(gd_wait_scanner(d.ctl, "parks", parks + 1), parks + 1, "the scanner did not park again");
	cr_assert_eq(gd_scanner_sum(d.ctl, "sleeps"), sl, "the scanner slept toward a landed arm's deadline");
	cr_assert_eq(point_records(&d, 0), rec, "a landed arm was recorded in its point");
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* client 0's point i: its prediction (ns) and its censored records since it was made */
static void point_state(struct gd_daemon *d, int i, double *prediction_ns, double *censored)
{
	cJSON *j = points_of(d, first_client_id(d, 0));
	const cJSON *pt = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "points"), i);
	cr_assert_not_null(pt, "no point %d", i);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(pt, "prediction_ns");
	cr_assert(cJSON_IsNumber(p), "point %d has no prediction", i);
	*prediction_ns = cJSON_GetNumberValue(p);
	*censored = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "censored"));
	cJSON_Delete(j);
}

/* A late find (policy.h: a wake past its window's opening, or the wake aimed at the
 * opening after the probe saw the wait unfinished: a near miss) records nothing alone;
 * the third in a row is censored (estimator.h, record_late). garudad's scanner dropped
 * every late find, so a point whose wakes all came late never learnt there (the
 * replay and libgaruda recorded them). Each wait here is a near miss, made by events
 * alone: the point is trained to ~1 s (TRAINED_PLAN: no margin, so the window opens at
 * arm + prediction, and a way of 4 ms or more is probed 3/4 of the way); the scanner
 * takes the arm and sleeps toward the probe, the probe looks and the scanner sleeps
 * again (its second sleep since the arm: the `sleeps` counter), and only then is the
 * word stored, so the wake aimed at the opening finds it done after the probe saw it
 * unfinished. The store has a quarter of the prediction (~250 ms) to land before that
 * wake; a store after it would be found on the backoff, a lower bound, and the test
 * would say the wait was not found late. */
Test(plan, a_run_of_late_finds_is_recorded_censored)
{
	struct gd_daemon d = { 0 };
	struct gd_client c;
	struct gd_seg s;
	struct garuda_ready rd;
	start_trained(&d, &c, &s, 2, 1000, TRAINED_PLAN);
	cr_assert_eq(point_records(&d, 0), 1, "the training's completion is the point's one record");
	double pred, censored;
	point_state(&d, 0, &pred, &censored);
	cr_assert_eq(censored, 0, "the training's completion is a lower bound, not censored");
	cr_assert_geq(pred, (double)GARUDA_POLICY_PROBE_MIN_NS, "a way this long is probed");
	for (uint64_t v = 2; v <= 4; v++) {
		double sl = gd_scanner_sum(d.ctl, "sleeps");
		gd_ok(gd_arm(&c, gd_slot(&s, 0), v, v, GARUDA_FORM_MESSAGE));
		/* asleep toward the probe, then (the probe looked) toward the opening */
		cr_assert_geq(gd_wait_scanner(d.ctl, "sleeps", sl + 2), sl + 2);
		gd_store(&s, 0, v);
		cr_assert_eq(gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1);
		cr_assert_eq(rd.token, v);
		cr_assert_eq(gd_wait_scanner(d.ctl, "late_wakes", (double)v - 1), (double)v - 1,
			     "wait %llu was not found late", (unsigned long long)v);
	}
	point_state(&d, 0, &pred, &censored);
	cr_assert_eq(censored, 1, "the third late find in a row was not recorded censored");
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* ------------------------------------------------------------ pipelines ---- */

/* Stream order end to end (the rule itself is tests/proto/test_policy.c's): four
 * sequences queued on one word, armed together, land one by one; each READY comes
 * once, in order, after its own store, and none is left armed. */
Test(plan, a_pipeline_on_one_word_is_delivered_in_order)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\": 1}" });
	struct gd_client c;
	struct gd_seg s;
	gd_ok(gd_open(&c, d.sock));
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	for (unsigned round = 0; round < 3; round++) {
		uint64_t base = gd_load(&s, 0);
		for (uint64_t k = 1; k <= 4; k++)
			gd_ok(gd_arm(&c, gd_slot(&s, 0), base + k, base + k, GARUDA_FORM_MESSAGE));
		for (uint64_t k = 1; k <= 4; k++) {
			struct garuda_ready rd;
			struct garuda_msg m;
			cr_assert_eq(gd_quiet(&c, 0, &m), 0, "a READY before its store");
			gd_store(&s, 0, base + k);
			cr_assert_eq(gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1);
			cr_assert_eq(rd.token, base + k, "READY out of order");
		}
	}
	cr_assert_eq(gd_wait_scanner(d.ctl, "completions", 12), 12);
	cr_assert_eq(gd_wait_status(&d, "armed", 0), 0);
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* ---------------------------------------------------------- named points ---- */

static void hello_features(struct gd_client *c, const char *sock, uint32_t features)
{
	gd_ok(gd_connect(c, sock));
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 0);
	m.hello.features = features;
	gd_ok(gd_request(c, &m, NULL, 0, &rep, NULL));
	cr_assert_eq(rep.type, GARUDA_MSG_WELCOME);
	c->welcome = rep.welcome;
}

static int arm_point(struct gd_client *c, struct gd_seg *s, uint32_t idx, uint64_t target,
		     uint64_t token, uint32_t point)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.arm = (struct garuda_arm){ .slot = gd_slot(s, idx), .target = target, .token = token,
				     .form = GARUDA_FORM_MESSAGE, .point = point };
	return gd_request(c, &m, NULL, 0, &rep, NULL);
}

/* POINTS is granted when offered; an ARM (and an ARM_BATCH record) may then name a
 * point: two kernel kinds on one word learn as two points. Without the feature a
 * point id is a reserved byte set: RESERVED_SET, and the connection is closed. */
Test(plan, named_points_negotiated_and_used)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\": 1}" });
	struct gd_client c;
	struct gd_seg s;
	hello_features(&c, d.sock, GARUDA_FEATURE_POINTS | 0x80000000u);
	cr_assert_eq(c.welcome.features, GARUDA_FEATURE_POINTS, "POINTS not granted (or an unknown bit was)");
	gd_ok(gd_segment_open(&c, 1, -1, &s));
	/* each store after the scanner took its arm: one that landed before the take would
	 * teach its point nothing (a_landed_arm_fires_at_once_and_teaches_its_point_nothing) */
	for (uint64_t v = 1; v <= 4; v++) {
		double taken = gd_scanner_sum(d.ctl, "arms_taken");
		gd_ok(arm_point(&c, &s, 0, v, v, v % 2 ? 7 : 9)); /* prefill 7, decode 9, one word */
		cr_assert_geq(gd_wait_scanner(d.ctl, "arms_taken", taken + 1), taken + 1);
		gd_store(&s, 0, v);
		struct garuda_ready rd;
		cr_assert_eq(gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1);
		cr_assert_eq(rd.token, v);
	}
	/* an ARM_BATCH record names a point too */
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 0);
	m.arm_batch.count = 1;
	m.arm_batch.arm[0] = (struct garuda_arm){ .slot = gd_slot(&s, 0), .target = 5, .token = 5,
						  .form = GARUDA_FORM_MESSAGE, .point = 11 };
	double taken = gd_scanner_sum(d.ctl, "arms_taken");
	gd_ok(gd_request(&c, &m, NULL, 0, &rep, NULL));
	cr_assert_geq(gd_wait_scanner(d.ctl, "arms_taken", taken + 1), taken + 1);
	gd_store(&s, 0, 5);
	struct garuda_ready rd;
	cr_assert_eq(gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1);

	cJSON *j = points_of(&d, first_client_id(&d, 0));
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "points");
	cr_assert_eq(cJSON_GetArraySize(list), 3, "points 7, 9 and 11, and not the word's own");
	unsigned seen = 0;
	double total = 0;
	const cJSON *pt;
	cJSON_ArrayForEach(pt, list)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(pt, "point");
		cr_assert(cJSON_IsNumber(id), "a named point is listed by its id");
		cr_assert_null(cJSON_GetObjectItemCaseSensitive(pt, "segment"));
		double recs = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "exact")) +
			      cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(pt, "censored"));
		unsigned pid = (unsigned)id->valuedouble;
		/* a point's first arm is cold and always recorded; its second sleeps, and a
		 * wake that comes late (a loaded machine) is not recorded (late_wakes) */
		cr_assert(recs >= 1 && recs <= (pid == 11 ? 1 : 2), "point %u: %g records", pid, recs);
		total += recs;
		seen |= 1u << pid;
	}
	cr_assert_eq(seen, (1u << 7) | (1u << 9) | (1u << 11));
	cr_assert_eq(total + gd_scanner_sum(d.ctl, "late_wakes"), 5, "each completion recorded or late");
	cJSON_Delete(j);
	gd_seg_unmap(&s);
	gd_close(&c);

	/* not offered: a point id is malformed */
	struct gd_client o;
	hello_features(&o, d.sock, 0);
	cr_assert_eq(o.welcome.features, 0);
	gd_ok(gd_segment_open(&o, 1, -1, &s));
	gd_ok(arm_point(&o, &s, 0, 1, 1, 0)); /* point 0: the word's, fine */
	gd_refused(arm_point(&o, &s, 0, 2, 2, 7), GARUDA_E_RESERVED_SET);
	struct garuda_msg x;
	int r;
	while ((r = gd_recv(&o, &x, NULL, GD_DEADLINE_MS)) == 1)
		;
	cr_assert_eq(r, -EPIPE, "the connection was not closed: %s", gd_strerr(r));
	gd_seg_unmap(&s);
	gd_close(&o);
	cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
	gd_stop(&d);
}

/* ------------------------------------------------------------- tenants ---- */

/* The word loads garudad charged to session id. */
static double session_loads(struct gd_daemon *d, uint64_t id)
{
	double v = gd_session_num(d->ctl, id, "word_loads");
	cr_assert_geq(v, 0, "session %llu has no word_loads", (unsigned long long)id);
	return v;
}

enum { HELD = 65536, HELD_WORDS = 8192 };

/* A daemon of one scanner whose session a holds HELD idle arms: 8 targets on each of
 * HELD_WORDS words of its segment sa that never move (as pipelined streams queue
 * them), in the message form. */
static void start_holding(struct gd_daemon *d, struct gd_client *a, struct gd_seg *sa)
{
	gd_start(d, &(struct gd_opts){ .config = "{\"scanners\":1,\"quota\":{\"connection\":{\"armed\":70000,\"lines\":8192}}}" });
	gd_ok(gd_open(a, d->sock));
	gd_ok(gd_segment_open(a, 1024, -1, sa));
	static struct gd_arm_req reqs[HELD];
	for (uint32_t i = 0; i < HELD; i++)
		reqs[i] = (struct gd_arm_req){ .index = i % HELD_WORDS, .target = 1 + i / HELD_WORDS,
					       .token = i, .form = GARUDA_FORM_MESSAGE };
	cr_assert_eq(gd_arm_batched(a, sa->id, reqs, HELD), HELD);
	cr_assert_eq(gd_wait_status(d, "armed", HELD), HELD);
}

/* One session holds 65,536 idle arms (8 targets on each of 8,192 words that never
 * move); another session's waits complete 1,000 times. The scanner's work follows what
 * is due: the second session's completions load its own word, not the first session's
 * (before the watcher every pass loaded every armed descriptor: 1,000 completions cost
 * >= 1,000 x 65,536 loads of the first session's). Counted by garudad itself
 * (word_loads per session), so no timing is asserted: the idle words are looked at on
 * their own backoff schedule (a queued target never), ~32 ln(age) times each, under
 * valgrind too: 1,000 x 65,536 / 10 leaves room for 800 looks of each idle word. */
/* start_holding(), then a second session b with a one-line segment sb */
static void start_holding_and_another(struct gd_daemon *d, struct gd_client *a, struct gd_seg *sa,
				      struct gd_client *b, struct gd_seg *sb)
{
	start_holding(d, a, sa);
	gd_ok(gd_open(b, d->sock));
	gd_ok(gd_segment_open(b, 1, -1, sb));
}

Test(plan, idle_arms_of_one_session_cost_nothing_per_completion_of_another)
{
	struct gd_daemon d = { 0 };
	struct gd_client a, b;
	struct gd_seg sa, sb;
	start_holding_and_another(&d, &a, &sa, &b, &sb);
	enum { N = HELD, DONE = 1000 };
	double a0 = session_loads(&d, a.welcome.session_id);
	for (uint64_t k = 0; k < DONE; k++)
		complete(&b, &sb, 0, 1000 + k);
	double a1 = session_loads(&d, a.welcome.session_id);
	double b1 = session_loads(&d, b.welcome.session_id);
	cr_log_info("idle session: %.0f word loads during %d completions of another (%.0f its own)",
		    a1 - a0, DONE, b1);
	cr_assert_geq(b1, DONE, "the completing session's own loads: %.0f", b1);
	/* a tenth of one load per idle word per completion at most; the old pass did one */
	cr_assert_lt(a1 - a0, (double)DONE * N / 10,
		     "%.0f loads of the idle session's words during %d completions of another",
		     a1 - a0, DONE);
	gd_seg_unmap(&sa);
	gd_seg_unmap(&sb);
	gd_close(&a);
	gd_close(&b);
	gd_stop(&d);
}

/* garudad's scanner thread (the test runs one), stopped with ptrace while it is parked
 * in FUTEX_WAIT with nothing armed, so that it holds no lock: 0 and its tid, or why not
 * in *why (ptrace refused here; valgrind, whose threads share one lock). */
static pid_t freeze_scanner(struct gd_daemon *d, char *why, size_t cap)
{
	const char *bin = getenv("GARUDAD");
	if (bin && strstr(bin, "valgrind")) {
		snprintf(why, cap, "under valgrind a stopped thread may hold its lock of all threads");
		return -1;
	}
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)d->pid);
	DIR *dir = opendir(path);
	cr_assert_not_null(dir, "%s: %m", path);
	pid_t tid = -1;
	for (struct dirent *e; tid < 0 && (e = readdir(dir));) {
		char comm[32] = "", p[384];
		snprintf(p, sizeof(p), "%s/%s/comm", path, e->d_name);
		FILE *f = fopen(p, "r");
		if (f && fgets(comm, sizeof(comm), f) && strncmp(comm, "garuda-scan0", 12) == 0)
			tid = atoi(e->d_name);
		if (f)
			fclose(f);
	}
	closedir(dir);
	cr_assert_gt(tid, 0, "garudad has no thread garuda-scan0");
	/* parked: the parks counter moved past the start-up, and it is blocked in FUTEX_WAIT;
	 * from here it only wakes for a command, and the test sends none */
	gd_wait_scanner(d->ctl, "parks", 1);
	cr_assert(gd_wait_blocked_in(tid, SYS_futex, NULL), "garuda-scan0 never parked in futex");
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
		snprintf(why, cap, "ptrace refused here (%m)");
		return -1;
	}
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, tid, 0, 0), 0, "PTRACE_INTERRUPT: %m");
	int st;
	cr_assert_eq(waitpid(tid, &st, __WALL), tid, "waitpid(scanner): %m");
	return tid;
}

/* The flooding session's sender (a child process: it blocks once garudad stops
 * reading): N ARMs on sa's word 0, never reached, as ARM_BATCHes; or with pairs, each
 * ARM alone followed by a NOREPLY DISARM of it (N/2 pairs). Exits 0 when all went out. */
enum { FLOOD = 4096 };
static void flood(struct gd_client *a, struct gd_seg *sa, bool pairs)
{
	static struct gd_arm_req reqs[FLOOD];
	for (uint32_t i = 0; i < FLOOD; i++)
		reqs[i] = (struct gd_arm_req){ .index = 0, .target = 1 + i, .token = i,
					       .form = GARUDA_FORM_MESSAGE };
	if (!pairs)
		_exit(gd_arm_batched(a, sa->id, reqs, FLOOD) == FLOOD ? 0 : 1);
	for (uint32_t i = 0; i < FLOOD / 2; i++) {
		struct garuda_msg m;
		garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
		m.flags = GARUDA_F_NOREPLY;
		m.disarm.slot = gd_slot(sa, 0);
		m.disarm.token = i;
		if (gd_arm_many(a, sa->id, &reqs[i], 1) != 1 || gd_send(a, &m, NULL, 0) < 0)
			_exit(1);
	}
	_exit(0);
}

/* A garudad of one scanner, sessions a and b with a one-line segment each, and the
 * scanner stopped (freeze_scanner): its tid; the test is skipped where it cannot be. */
static pid_t start_two_frozen(struct gd_daemon *d, struct gd_client *a, struct gd_seg *sa, struct gd_client *b,
			      struct gd_seg *sb)
{
	gd_start(d, &(struct gd_opts){ .config = "{\"scanners\":1}" });
	gd_ok(gd_open(a, d->sock));
	gd_ok(gd_segment_open(a, 1, -1, sa));
	gd_ok(gd_open(b, d->sock));
	gd_ok(gd_segment_open(b, 1, -1, sb));
	char why[128];
	pid_t tid = freeze_scanner(d, why, sizeof(why));
	if (tid < 0) {
		gd_seg_unmap(sa);
		gd_seg_unmap(sb);
		gd_close(a);
		gd_close(b);
		gd_stop(d);
		cr_skip_test("%s", why);
	}
	return tid;
}

/* A session that sends ARMs (and DISARMs) faster than the scanner takes them (here: not
 * at all, the scanner is stopped) is read no further once 256 of them wait untaken
 * (sink.h SINK_QUEUED_MAX, protocol.md §6.2 "Flow control"): its flood waits in its own
 * socket, not in garudad's memory nor in one long scanner step. Meanwhile another
 * session is served; when the scanner takes them, the session is read again and every
 * request is applied. Before, garudad read all 4,096 for the stopped scanner; a NOREPLY
 * DISARM was not counted (pairs: 256 ARMs and 256 DISARMs read). */
static void flood_a_stopped_scanner(bool pairs)
{
	struct gd_daemon d = { 0 };
	struct gd_client a, b;
	struct gd_seg sa, sb, sb2;
	enum { MAX = 256, OVER = 8 * GARUDA_BATCH_MAX }; /* a read's 8 datagrams */
	pid_t tid = start_two_frozen(&d, &a, &sa, &b, &sb);
	pid_t sender = fork();
	cr_assert_geq(sender, 0);
	if (sender == 0)
		flood(&a, &sa, pairs);
	uint64_t id = a.welcome.session_id;
	double pauses = gd_wait_session(d.ctl, id, "pauses", 1), arms = gd_session_num(d.ctl, id, "arms");
	/* the others are served meanwhile (by the loop: the scanner is stopped) */
	int opened = gd_segment_open(&b, 1, -1, &sb2);
	double later = gd_session_num(d.ctl, id, "arms");
	/* the scanner goes on before any assertion: a failed one must not leave it stopped */
	int detached = ptrace(PTRACE_DETACH, tid, 0, 0);
	cr_log_info("scanner stopped: the flooding session (%s) paused %.0f times, %.0f of its %d ARMs read",
		    pairs ? "ARM, DISARM pairs" : "ARM_BATCHes", pauses, arms, pairs ? FLOOD / 2 : FLOOD);
	cr_assert_eq(detached, 0, "PTRACE_DETACH: %m");
	cr_assert_geq(pauses, 1, "garudad never stopped reading the flooding session (%.0f ARMs read)", arms);
	/* pairs: one command a datagram, half of them ARMs */
	double bound = pairs ? (MAX + 8) / 2 + 1 : MAX + OVER;
	cr_assert_leq(arms, bound, "%.0f ARMs read past the bound (%.0f)", arms, bound);
	gd_ok(opened);
	cr_assert_eq(later, arms, "the paused session was read on");
	int st;
	cr_assert_eq(waitpid(sender, &st, 0), sender);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the flooding sender failed");
	unsigned armed = pairs ? 0 : FLOOD;
	double want = pairs ? FLOOD / 2 : FLOOD;
	cr_assert_eq(gd_wait_session(d.ctl, id, "arms", want), want, "not every ARM was read");
	cr_assert_eq(gd_wait_status(&d, "armed", armed), armed, "the flood's requests were not all applied");
	complete(&b, &sb, 0, 7); /* and the scanner serves the others */
	gd_seg_unmap(&sa);
	gd_seg_unmap(&sb);
	gd_seg_unmap(&sb2);
	gd_close(&a);
	gd_close(&b);
	gd_stop(&d);
}

Test(plan, an_arm_flood_waits_in_its_own_socket_while_others_are_served)
{
	flood_a_stopped_scanner(false);
}

Test(plan, a_disarm_flood_counts_as_well)
{
	flood_a_stopped_scanner(true);
}

/* The scanner applies at most 1,024 queued commands a take (GARUDA_SCANNER_TAKE_STEP_CMDS),
 * the rest in the takes after, a step between: a session is read only while fewer
 * than 256 of its commands wait untaken, but one take held that many of every
 * flooding session. With the scanner stopped, eight sessions flood to their bound (four
 * with ARM_BATCHes, two with ARM and DISARM pairs on one word); once it goes on, the
 * takes that left commands for the next (take_steps) are at least what the queue
 * held over 1,024, less one, and every request is applied in the order it came: each
 * pair's DISARM finds its ARM wherever the takes cut the queue (none of those stays
 * armed), and every batch's arm stays. Counted by garudad, so no timing is asserted. */
Test(plan, a_take_applies_at_most_1024_commands_in_their_order)
{
	struct gd_daemon d = { 0 };
	enum { K = 8 };
	struct gd_client c[K];
	struct gd_seg sg[K];
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\":1}" });
	for (unsigned i = 0; i < K; i++) {
		gd_ok(gd_open(&c[i], d.sock));
		gd_ok(gd_segment_open(&c[i], 1, -1, &sg[i]));
	}
	char why[128];
	pid_t tid = freeze_scanner(&d, why, sizeof(why));
	if (tid < 0) {
		for (unsigned i = 0; i < K; i++) {
			gd_seg_unmap(&sg[i]);
			gd_close(&c[i]);
		}
		gd_stop(&d);
		cr_skip_test("%s", why);
	}
	pid_t sender[K];
	for (unsigned i = 0; i < K; i++) {
		sender[i] = fork();
		cr_assert_geq(sender[i], 0);
		if (sender[i] == 0)
			flood(&c[i], &sg[i], i % 2);
	}
	double queued = 0; /* commands read, none taken: pairs send one a datagram, half ARMs */
	for (unsigned i = 0; i < K; i++) {
		uint64_t id = c[i].welcome.session_id;
		gd_wait_session(d.ctl, id, "pauses", 1);
		queued += gd_session_num(d.ctl, id, "arms") * (i % 2 ? 2 : 1) - (i % 2);
	}
	double s0 = gd_scanner_sum(d.ctl, "take_steps");
	int detached = ptrace(PTRACE_DETACH, tid, 0, 0);
	cr_assert_eq(detached, 0, "PTRACE_DETACH: %m");
	for (unsigned i = 0; i < K; i++) {
		int st;
		cr_assert_eq(waitpid(sender[i], &st, 0), sender[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "flooding sender %u failed", i);
	}
	unsigned armed = K / 2 * FLOOD; /* the batches' */
	cr_assert_eq(gd_wait_status(&d, "armed", armed), armed,
		     "a pair's DISARM missed its ARM, or a request was lost");
	double steps = gd_scanner_sum(d.ctl, "take_steps") - s0;
	double least = (double)(unsigned)(queued / GARUDA_SCANNER_TAKE_STEP_CMDS) - 1;
	cr_log_info("%.0f commands queued for the stopped scanner; %.0f takes left some for the next",
		    queued, steps);
	cr_assert_geq(steps, least, "%.0f takes left commands for the next, %.0f queued: a take applied more than %d",
		      steps, queued, GARUDA_SCANNER_TAKE_STEP_CMDS);
	complete(&c[0], &sg[0], 1, 7); /* and the scanner serves on */
	for (unsigned i = 0; i < K; i++) {
		gd_seg_unmap(&sg[i]);
		gd_close(&c[i]);
	}
	gd_stop(&d);
}

/* While another session holds waits, a take applies at most 128 of one session's
 * commands in a row (GARUDA_SCANNER_SHARE_STEP), the rest in the takes after, the
 * other's due words looked at between: a tenant's flood no longer keeps the scanner
 * ~0.3 ms a take on its own work. With the scanner stopped, b arms one wait (NOREPLY,
 * queued first) or none, then a floods ARM_BATCHes to its bound (~376 queued); once the
 * scanner goes on, the takes that left some for the next (take_steps) are at least
 * a's queue in shares of 128, less one, when b holds a wait, and none when a is alone
 * (its queue is under the 1,024 a take): a session alone is never cut short. Every ARM
 * is applied either way. Counted by garudad, so no timing is asserted. */
static void flood_beside(bool other_holds)
{
	struct gd_daemon d = { 0 };
	struct gd_client a, b;
	struct gd_seg sa, sb;
	pid_t tid = start_two_frozen(&d, &a, &sa, &b, &sb);
	if (other_holds) {
		struct gd_arm_req one = { .index = 0, .target = 1, .token = 7, .form = GARUDA_FORM_MESSAGE };
		int sent = gd_arm_many(&b, sb.id, &one, 1);
		double read = gd_wait_session(d.ctl, b.welcome.session_id, "arms", 1);
		if (sent != 1 || read != 1)
			ptrace(PTRACE_DETACH, tid, 0, 0);
		cr_assert_eq(sent, 1);
		cr_assert_eq(read, 1, "b's ARM was not read");
	}
	pid_t sender = fork();
	cr_assert_geq(sender, 0);
	if (sender == 0)
		flood(&a, &sa, false);
	uint64_t id = a.welcome.session_id;
	gd_wait_session(d.ctl, id, "pauses", 1);
	double queued = gd_session_num(d.ctl, id, "arms");
	double s0 = gd_scanner_sum(d.ctl, "take_steps");
	int detached = ptrace(PTRACE_DETACH, tid, 0, 0);
	cr_assert_eq(detached, 0, "PTRACE_DETACH: %m");
	int st;
	cr_assert_eq(waitpid(sender, &st, 0), sender);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the flooding sender failed");
	unsigned armed = FLOOD + other_holds;
	cr_assert_eq(gd_wait_status(&d, "armed", armed), armed, "a request was lost");
	double steps = gd_scanner_sum(d.ctl, "take_steps") - s0;
	cr_log_info("%s: %.0f of one session's commands queued for the stopped scanner; %.0f takes left some",
		    other_holds ? "another session holding a wait" : "alone", queued, steps);
	if (other_holds) {
		double least = (double)(unsigned)((queued + GARUDA_SCANNER_SHARE_STEP - 1) / GARUDA_SCANNER_SHARE_STEP) - 1;
		cr_assert_geq(least, 1, "only %.0f queued", queued);
		cr_assert_geq(steps, least, "%.0f takes left commands for the next, %.0f queued: one session had more than %d in a row",
			      steps, queued, GARUDA_SCANNER_SHARE_STEP);
		complete(&a, &sa, 1, 9); /* both served on */
		gd_store(&sb, 0, 1);
		struct garuda_ready rd;
		int r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "the other session: %s", gd_strerr(r));
		cr_assert_eq(rd.token, 7);
	} else {
		cr_assert_eq(steps, 0, "a session alone was cut short %.0f times (%.0f queued)", steps, queued);
	}
	gd_seg_unmap(&sa);
	gd_seg_unmap(&sb);
	gd_close(&a);
	gd_close(&b);
	gd_stop(&d);
}

Test(plan, a_take_gives_one_session_128_in_a_row_while_another_holds_waits)
{
	flood_beside(true);
}

Test(plan, a_session_alone_is_not_cut_short)
{
	flood_beside(false);
}

/* One session holds 32,768 arms on one word (a deep queue: targets 1..32,768, tokens
 * 0..32,767 in pairs), and DISARMs some. A DISARM looks at the arms with its slot and
 * token alone, however many wait on the word: before, each walked every wait on its word
 * (65,536 of them: ~2 ms of the scanner, during which no other tenant's word was looked
 * at). Counted by garudad itself (removal_looks), so no timing is asserted. Both arms of
 * a token go (DISARM takes all of them), a missing token answers NOT_ARMED, and the
 * word's other arms all stay, and fire. */
Test(plan, a_disarm_on_a_deep_word_looks_at_its_own_arms_only)
{
	struct gd_daemon d = { 0 };
	struct gd_client a;
	struct gd_seg sa;
	enum { N = 32768, GONE = 64 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\":1,\"quota\":{\"connection\":{\"armed\":40000}}}" });
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_segment_open(&a, 1, -1, &sa));
	static struct gd_arm_req reqs[N];
	for (uint32_t i = 0; i < N; i++)
		reqs[i] = (struct gd_arm_req){ .index = 0, .target = 1 + i, .token = i / 2,
					       .form = GARUDA_FORM_MESSAGE };
	cr_assert_eq(gd_arm_batched(&a, sa.id, reqs, N), N);
	cr_assert_eq(gd_wait_status(&d, "armed", N), N);
	double r0 = gd_scanner_sum(d.ctl, "removal_looks");
	for (uint64_t t = 0; t < GONE; t++) /* tokens 0..63: targets 1..128, the head */
		gd_ok(gd_disarm(&a, gd_slot(&sa, 0), t));
	gd_refused(gd_disarm(&a, gd_slot(&sa, 0), N), GARUDA_E_NOT_ARMED);
	gd_refused(gd_disarm(&a, gd_slot(&sa, 0), 0), GARUDA_E_NOT_ARMED); /* gone */
	double looked = gd_scanner_sum(d.ctl, "removal_looks") - r0;
	cr_log_info("%d DISARMs on a word of %d arms: %.0f armed descriptors looked at", GONE + 2, N, looked);
	cr_assert_geq(looked, 2 * GONE, "each DISARM looked at the arms it took");
	cr_assert_leq(looked, 4 * GONE + 8, "%.0f looked at: the DISARMs walked the word", looked);
	cr_assert_eq(gd_status_num(&d, "armed"), N - 2 * GONE);
	/* the rest still fire (in no promised order: protocol.md 9.3), each once; the
	 * word jumps past the disarmed ones */
	enum { TO = 200 }; /* targets 129..200 fire: tokens 64..99, twice each */
	gd_store(&sa, 0, TO);
	uint8_t seen[TO / 2] = { 0 };
	struct garuda_ready rd;
	for (unsigned k = 0; k < TO - 2 * GONE; k++) {
		cr_assert_eq(gd_wait_ready(&a, &rd, GD_DEADLINE_MS), 1, "ready %u of %d", k, TO - 2 * GONE);
		cr_assert(rd.token >= GONE && rd.token < TO / 2, "token %llu fired", (unsigned long long)rd.token);
		seen[rd.token]++;
	}
	for (unsigned t = GONE; t < TO / 2; t++)
		cr_assert_eq(seen[t], 2, "token %u fired %u times", t, seen[t]);
	cr_assert_eq(gd_wait_status(&d, "armed", N - TO), N - TO);
	gd_seg_unmap(&sa);
	gd_close(&a);
	gd_stop(&d);
}

/* A session that ends holding 65,536 arms is taken out 128 a step while another
 * session holds waits (GARUDA_SCANNER_SHARE_STEP; 1,024 alone), other sessions' looks in
 * between (its end in one step held them up ~10 ms): garudad counts the steps
 * that left part of it for the next (drop_steps), so no timing is asserted; another
 * session's arms stay and fire afterwards, and every one of the first's is gone. */
Test(plan, a_sessions_end_is_taken_a_share_a_step)
{
	struct gd_daemon d = { 0 };
	struct gd_client a, b;
	struct gd_seg sa, sb;
	start_holding_and_another(&d, &a, &sa, &b, &sb);
	gd_ok(gd_arm(&b, gd_slot(&sb, 0), 1, 7, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_status(&d, "armed", HELD + 1), HELD + 1);
	double s0 = gd_scanner_sum(d.ctl, "drop_steps");
	gd_seg_unmap(&sa);
	gd_close(&a);
	cr_assert_eq(gd_wait_status(&d, "armed", 1), 1, "the ended session's arms are not all gone");
	cr_assert_eq(gd_wait_status(&d, "clients", 1), 1);
	double steps = gd_scanner_sum(d.ctl, "drop_steps") - s0;
	cr_log_info("a session's end of %d arms left part for the next step %.0f times", HELD, steps);
	cr_assert_geq(steps, HELD / GARUDA_SCANNER_SHARE_STEP - 1, "%.0f steps: the end was taken in fewer shares",
		      steps);
	gd_store(&sb, 0, 1);
	struct garuda_ready rd;
	int r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s", gd_strerr(r));
	cr_assert_eq(rd.token, 7);
	gd_seg_unmap(&sb);
	gd_close(&b);
	gd_stop(&d);
}

/* A session that goes on closes segments, and a close is taken at most 128 waits a step
 * too while another session holds waits (before, one step: ~10 ms for 65,536 arms,
 * every other session's looks behind it), answered once all of its waits are out.
 * First a one-arm segment whose word is behind the 8,192 words of the session's big
 * segment (the drop passes them over ~64 steps and keeps them), then the big segment
 * itself (65,536 arms, ~512 steps);
 * the session's arm on a third segment, armed after, stays and fires, and so does
 * another session's. */
Test(plan, a_segments_close_is_taken_a_share_a_step)
{
	struct gd_daemon d = { 0 };
	struct gd_client a, b;
	struct gd_seg sa, sb, sc, sd;
	start_holding_and_another(&d, &a, &sa, &b, &sb);
	gd_ok(gd_segment_open(&a, 1, -1, &sc));
	gd_ok(gd_arm(&a, gd_slot(&sc, 0), 1, 4, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&b, gd_slot(&sb, 0), 1, 7, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_status(&d, "armed", HELD + 2), HELD + 2);
	double s0 = gd_scanner_sum(d.ctl, "drop_steps");
	gd_ok(gd_segment_close(&a, sc.id)); /* answered once applied whole */
	double passing = gd_scanner_sum(d.ctl, "drop_steps") - s0;
	cr_assert_geq(passing, HELD_WORDS / GARUDA_SCANNER_SHARE_STEP - 1,
		      "%.0f steps: the words before it were not passed a share a step", passing);
	cr_assert_eq(gd_wait_status(&d, "armed", HELD + 1), HELD + 1, "the closed segment's arm is still armed");
	gd_seg_unmap(&sc);
	gd_ok(gd_segment_open(&a, 1, -1, &sd));
	gd_ok(gd_arm(&a, gd_slot(&sd, 0), 1, 5, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_status(&d, "armed", HELD + 2), HELD + 2);
	s0 = gd_scanner_sum(d.ctl, "drop_steps");
	gd_ok(gd_segment_close(&a, sa.id));
	double steps = gd_scanner_sum(d.ctl, "drop_steps") - s0;
	cr_log_info("a close of 1 arm behind %d words took %.0f more steps; of %d arms, %.0f", HELD_WORDS,
		    passing, HELD, steps);
	cr_assert_geq(steps, HELD / GARUDA_SCANNER_SHARE_STEP - 1, "%.0f steps: the close was taken in fewer shares",
		      steps);
	cr_assert_eq(gd_wait_status(&d, "armed", 2), 2, "the closed segment's arms are not all gone");
	gd_seg_unmap(&sa);
	struct garuda_ready rd;
	gd_store(&sd, 0, 1);
	int r = gd_wait_ready(&a, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "the session's other segment: %s", gd_strerr(r));
	cr_assert_eq(rd.token, 5);
	gd_store(&sb, 0, 1);
	r = gd_wait_ready(&b, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "the other session: %s", gd_strerr(r));
	cr_assert_eq(rd.token, 7);
	gd_seg_unmap(&sb);
	gd_seg_unmap(&sd);
	gd_close(&a);
	gd_close(&b);
	gd_stop(&d);
}

/* A close carried over names its segment alone. A session arms one wait on segment
 * x, then one on each of 262,144 words of another; it closes x (NOREPLY): the first
 * step takes x's wait, and the drop goes on passing the other words for ~250 steps.
 * Meanwhile the session opens 8 new segments and arms on each: those waits stay, and
 * fire, and the other segment's all stay. (The drop holds x until it is applied whole,
 * so that no new segment can take x's address while a carried drop names it; malloc
 * did not hand x's place back to one of the 8 in three tries here, so this test does
 * not catch a drop without that reference: it catches a carried drop that takes more
 * than its own segment's waits.) */
Test(plan, a_carried_close_names_its_segment_alone)
{
	enum { WORDS = 262144, NEW = 8 };
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\":1,\"quota\":{\"connection\":{\"armed\":270000,\"lines\":32800},"
						   "\"uid\":{\"armed\":270000,\"lines\":32800}}}" });
	struct gd_client a;
	struct gd_seg sx, sa, sy[NEW];
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_segment_open(&a, 1, -1, &sx));
	gd_ok(gd_arm(&a, gd_slot(&sx, 0), 1, 1, GARUDA_FORM_MESSAGE));
	gd_ok(gd_segment_open(&a, WORDS / GARUDA_WORDS_PER_LINE, -1, &sa));
	static struct gd_arm_req reqs[WORDS];
	for (uint32_t i = 0; i < WORDS; i++)
		reqs[i] = (struct gd_arm_req){ .index = i, .target = 1, .token = 100 + i, .form = GARUDA_FORM_MESSAGE };
	cr_assert_eq(gd_arm_batched(&a, sa.id, reqs, WORDS), WORDS);
	cr_assert_eq(gd_wait_status(&d, "armed", WORDS + 1), WORDS + 1);
	double s0 = gd_scanner_sum(d.ctl, "drop_steps");
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, 0);
	m.flags = GARUDA_F_NOREPLY;
	m.segment_close.segment_id = sx.id;
	gd_ok(gd_request(&a, &m, NULL, 0, NULL, NULL));
	gd_seg_unmap(&sx);
	gd_wait_scanner(d.ctl, "drop_steps", s0 + 1); /* x's wait is out, the drop carried */
	for (unsigned k = 0; k < NEW; k++) {
		gd_ok(gd_segment_open(&a, 1, -1, &sy[k]));
		gd_ok(gd_arm(&a, gd_slot(&sy[k], 0), 1, 2 + k, GARUDA_FORM_MESSAGE));
	}
	for (unsigned k = 0; k < NEW; k++) {
		gd_store(&sy[k], 0, 1);
		struct garuda_ready rd;
		int r = gd_wait_ready(&a, &rd, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "new segment %u's arm: %s", k, gd_strerr(r));
		cr_assert_eq(rd.token, 2 + k);
	}
	cr_assert_eq(gd_wait_status(&d, "armed", WORDS), WORDS, "the other segment's arms all stay");
	gd_seg_unmap(&sa);
	for (unsigned k = 0; k < NEW; k++)
		gd_seg_unmap(&sy[k]);
	gd_close(&a);
	gd_stop(&d);
}

/* One session holds 65,536 arms; other sessions come, arm, and go, half of them
 * closing their segment first (DROP_SEGMENT, answered), the rest just closing their
 * socket (DROP_SINK). A drop looks at its own session's armed descriptors alone: the
 * scanner walks that session's words (before, a batch with a drop walked every armed
 * descriptor, 65,536 here per session that ended). Counted by garudad itself
 * (removal_looks), so no timing is asserted; the first session's arms all stay. */
Test(plan, a_sessions_drops_look_at_its_own_arms_only)
{
	struct gd_daemon d = { 0 };
	struct gd_client a;
	struct gd_seg sa;
	start_holding(&d, &a, &sa);
	enum { N = HELD, GUESTS = 8, EACH = 2 };
	double r0 = gd_scanner_sum(d.ctl, "removal_looks");
	for (unsigned k = 0; k < GUESTS; k++) {
		struct gd_client b;
		struct gd_seg sb;
		gd_ok(gd_open(&b, d.sock));
		gd_ok(gd_segment_open(&b, 1, -1, &sb));
		for (unsigned t = 1; t <= EACH; t++)
			gd_ok(gd_arm(&b, (struct garuda_slot){ .segment = sb.id, .index = 0 }, t, t,
				     GARUDA_FORM_MESSAGE));
		cr_assert_eq(gd_wait_status(&d, "armed", N + EACH), N + EACH);
		if (k % 2)
			gd_ok(gd_segment_close(&b, sb.id)); /* answered once the drop is applied */
		gd_seg_unmap(&sb);
		gd_close(&b);
		cr_assert_eq(gd_wait_status(&d, "armed", N), N);
	}
	cr_assert_eq(gd_wait_status(&d, "clients", 1), 1);
	double looked = gd_scanner_sum(d.ctl, "removal_looks") - r0;
	cr_log_info("%d sessions of %d arms each ended: %.0f armed descriptors looked at", GUESTS, EACH, looked);
	cr_assert_geq(looked, GUESTS * EACH, "each guest's arms were looked at to drop them");
	cr_assert_leq(looked, 2 * GUESTS * EACH, "%.0f looked at: the other session's arms were walked", looked);
	cr_assert_eq(gd_status_num(&d, "armed"), N, "the first session's arms all stay");
	gd_seg_unmap(&sa);
	gd_close(&a);
	gd_stop(&d);
}

/* n arms of a's on word `index` of sa, targets from first up, tokens 0..n-1, in the
 * given form; waits until garudad counts `armed` in all. */
static void arm_one_word(struct gd_daemon *d, struct gd_client *a, struct gd_seg *sa, uint32_t index,
			 uint32_t n, uint64_t first, uint8_t form, long long armed)
{
	static struct gd_arm_req reqs[HELD];
	cr_assert_leq(n, HELD);
	for (uint32_t i = 0; i < n; i++)
		reqs[i] = (struct gd_arm_req){ .index = index, .target = first + i, .token = i, .form = form };
	cr_assert_eq(gd_arm_batched(a, sa->id, reqs, n), (int)n);
	cr_assert_eq(gd_wait_status(d, "armed", armed), armed);
}

/* One session holds 65,536 arms of the message form on one word, binds that slot's
 * eventfd, arms a few waits of the eventfd form on it and UNBINDs, again and again. An
 * UNBIND looks at its binding's own arms, not at the word's other waits: before, each
 * walked the whole word (65,536 waits, ~10 ms of the scanner in one step, every other
 * tenant's looks behind it, as often as the session could BIND and UNBIND). Counted
 * by garudad itself (removal_looks), so no timing is asserted; the word's other arms
 * all stay, and the eventfd is not written. */
Test(plan, an_unbind_looks_at_its_bindings_arms_only)
{
	struct gd_daemon d = { 0 };
	struct gd_client a;
	struct gd_seg sa;
	enum { N = HELD, ROUNDS = 8, EACH = 4 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\":1,\"quota\":{\"connection\":{\"armed\":70000}}}" });
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_segment_open(&a, 1, -1, &sa));
	arm_one_word(&d, &a, &sa, 0, N, 1000, GARUDA_FORM_MESSAGE, N);
	double r0 = gd_scanner_sum(d.ctl, "removal_looks");
	for (unsigned k = 0; k < ROUNDS; k++) {
		int efd;
		gd_ok(gd_bind_new(&a, gd_slot(&sa, 0), &efd));
		for (unsigned t = 0; t < EACH; t++) /* in the word's middle and at its tail */
			gd_ok(gd_arm(&a, gd_slot(&sa, 0), t % 2 ? 1000 + N / 2 : 2000 + N, t, GARUDA_FORM_EVENTFD));
		cr_assert_eq(gd_wait_status(&d, "armed", N + EACH), N + EACH);
		gd_ok(gd_unbind(&a, gd_slot(&sa, 0))); /* answered once applied whole */
		/* (the count is the scanner's, stored after the ACK went out) */
		cr_assert_eq(gd_wait_status(&d, "armed", N), N, "round %u: the binding's arms stay", k);
		uint64_t v;
		cr_assert_eq(read(efd, &v, sizeof(v)), -1, "round %u: the eventfd was written", k);
		close(efd);
	}
	double looked = gd_scanner_sum(d.ctl, "removal_looks") - r0;
	cr_log_info("%d UNBINDs of %d arms each on a word of %d: %.0f armed descriptors looked at", ROUNDS, EACH,
		    N, looked);
	cr_assert_geq(looked, ROUNDS * EACH, "each UNBIND looked at its binding's arms");
	cr_assert_leq(looked, 2 * ROUNDS * EACH, "%.0f looked at: the UNBINDs walked the word", looked);
	gd_seg_unmap(&sa);
	gd_close(&a);
	gd_stop(&d);
}

/* A binding with 4,096 arms is UNBOUND: its drop takes 1,024 of them a step, like a
 * session's end (drop_steps counts the steps that left part of it), and is answered
 * once the last is out: a store that reaches every target after the ACK writes nothing
 * to the eventfd (protocol.md 4.6), and nothing stays armed. */
Test(plan, an_unbind_is_taken_a_share_a_step)
{
	struct gd_daemon d = { 0 };
	struct gd_client a;
	struct gd_seg sa;
	enum { N = 4096 };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\":1}" });
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_segment_open(&a, 1, -1, &sa));
	int efd;
	gd_ok(gd_bind_new(&a, gd_slot(&sa, 3), &efd));
	arm_one_word(&d, &a, &sa, 3, N, 1, GARUDA_FORM_EVENTFD, N);
	double s0 = gd_scanner_sum(d.ctl, "drop_steps");
	gd_ok(gd_unbind(&a, gd_slot(&sa, 3)));
	cr_assert_eq(gd_wait_status(&d, "armed", 0), 0, "the binding's arms stay");
	double steps = gd_scanner_sum(d.ctl, "drop_steps") - s0;
	cr_log_info("an UNBIND of %d arms left part for the next step %.0f times", N, steps);
	cr_assert_geq(steps, N / 1024 - 1, "%.0f steps: the UNBIND was taken in fewer shares", steps);
	gd_store(&sa, 3, N);
	/* a wait that fires now tells us a step ran after the store */
	gd_ok(gd_arm(&a, gd_slot(&sa, 3), N, 1, GARUDA_FORM_MESSAGE));
	struct garuda_ready rd;
	int r = gd_wait_ready(&a, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s", gd_strerr(r));
	uint64_t v;
	cr_assert_eq(read(efd, &v, sizeof(v)), -1, "the eventfd was written %llu times after the ACK",
		     (unsigned long long)v);
	close(efd);
	gd_seg_unmap(&sa);
	gd_close(&a);
	gd_stop(&d);
}

/* The loop thread posts a callback's ARMs and DISARMs to the scanner in one go
 * (scanner_flush): one ARM_BATCH of GARUDA_BATCH_MAX arms is one post, not one per arm
 * (each post takes the queue's lock against the scanner's take: under an ARM flood, an
 * eighth of garudad's CPU). Counted by garudad (posts), so no timing is asserted. And
 * staged commands keep their order: an ARM and its DISARM sent back to back find each
 * other (the DISARM is acknowledged, not NOT_ARMED), and the word's store then fires
 * nothing. */
Test(plan, a_callbacks_arms_go_in_one_post)
{
	struct gd_daemon d = { 0 };
	struct gd_client a;
	struct gd_seg sa;
	enum { N = GARUDA_BATCH_MAX };
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\":1}" });
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_segment_open(&a, 2, -1, &sa)); /* a word for each arm */
	double p0 = gd_scanner_sum(d.ctl, "posts");
	struct gd_arm_req reqs[N];
	for (uint32_t i = 0; i < N; i++)
		reqs[i] = (struct gd_arm_req){ .index = i, .target = 1, .token = i, .form = GARUDA_FORM_MESSAGE };
	cr_assert_eq(gd_arm_batched(&a, sa.id, reqs, N), N); /* one ARM_BATCH datagram */
	cr_assert_eq(gd_wait_status(&d, "armed", N), N);
	double posts = gd_scanner_sum(d.ctl, "posts") - p0;
	cr_assert_eq(posts, 1, "%.0f posts for one ARM_BATCH of %d arms", posts, N);

	for (unsigned k = 0; k < 8; k++) {
		gd_ok(gd_arm_flags(&a, gd_slot(&sa, 0), 2 + k, 100 + k, GARUDA_FORM_MESSAGE, GARUDA_F_NOREPLY));
		int r = gd_disarm(&a, gd_slot(&sa, 0), 100 + k);
		cr_assert_eq(r, 0, "round %u: the DISARM right behind its ARM: %s", k, gd_strerr(r));
	}
	cr_assert_eq(gd_wait_status(&d, "armed", N), N, "the disarmed waits stay armed");
	gd_store(&sa, 0, 100);
	struct garuda_ready rd;
	int r = gd_wait_ready(&a, &rd, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s", gd_strerr(r));
	cr_assert_eq(rd.token, 0, "token %llu fired: a disarmed wait", (unsigned long long)rd.token);
	struct garuda_msg m;
	cr_assert_eq(gd_quiet(&a, 100, &m), 0, "more than word 0's one wait fired");
	gd_seg_unmap(&sa);
	gd_close(&a);
	gd_stop(&d);
}

/* the "armed" of each of client id's segments (control request "segments"), in
 * segment order, into out[0..n): how many segments it listed */
static unsigned segments_armed(struct gd_daemon *d, uint64_t client, double *out, unsigned n)
{
	char req[96];
	snprintf(req, sizeof(req), "{\"request\":\"segments\",\"client\":%llu}", (unsigned long long)client);
	cJSON *j = gd_control(d, req);
	cr_assert_not_null(j);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "segments");
	unsigned k = 0;
	for (const cJSON *g = list ? list->child : NULL; g && k < n; g = g->next)
		out[k++] = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(g, "armed"));
	cJSON_Delete(j);
	return k;
}

/* A segment's armed list (garctl segments, lines) walks its session's words and keeps
 * that segment's: with one scanner, two sessions of two segments each, every segment
 * holding a different number of arms (some on the same word index as another
 * segment's), each lists its own count, none another segment's or session's. */
Test(plan, a_segments_armed_list_is_its_own)
{
	struct gd_daemon d = { 0 };
	struct gd_client c[2];
	struct gd_seg g[2][2];
	gd_start(&d, &(struct gd_opts){ .config = "{\"scanners\":1}" });
	for (unsigned i = 0; i < 2; i++) {
		gd_ok(gd_open(&c[i], d.sock));
		for (unsigned k = 0; k < 2; k++)
			gd_ok(gd_segment_open(&c[i], 1, -1, &g[i][k]));
	}
	/* segment (i, k) holds 1 + 2i + k arms, on words 0.. */
	long long total = 0;
	for (unsigned i = 0; i < 2; i++)
		for (unsigned k = 0; k < 2; k++)
			for (unsigned a = 0; a < 1 + 2 * i + k; a++, total++)
				gd_ok(gd_arm(&c[i], gd_slot(&g[i][k], a), 1, a, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_status(&d, "armed", total), total);
	for (unsigned i = 0; i < 2; i++) {
		double armed[2];
		cr_assert_eq(segments_armed(&d, first_client_id(&d, (int)i), armed, 2), 2);
		for (unsigned k = 0; k < 2; k++)
			cr_assert_eq(armed[k], 1 + 2 * i + k, "session %u's segment %u lists %.0f armed", i, k,
				     armed[k]);
	}
	for (unsigned i = 0; i < 2; i++) {
		for (unsigned k = 0; k < 2; k++)
			gd_seg_unmap(&g[i][k]);
		gd_close(&c[i]);
	}
	gd_stop(&d);
}
