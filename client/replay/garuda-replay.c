/* garuda-replay — run wait plans over completion traces on a simulated clock, through
 * the watcher, policy and estimator garudad's scanner drives (proto/replay.h), against
 * `poll` (the always-spinning scanner) on the same trace. docs/plans.md, "Replaying a
 * trace".
 *
 *   garuda-replay [--plan=TEXT]... [--cost=KEY=NS,...]... [--check=P50,P99,BUSY] [--verbose]
 *                 TRACE.csv...
 *
 * A trace is CSV: a header line, then word,point,arm_ns,store_ns per completion
 * ('#' lines are comments; a first line that starts with a digit is a row: no header;
 * garuda_replay_trace_parse() has the rules). Without --plan it replays garudad's
 * default plan (up to MAX_PLANS plans). For
 * each trace and plan it prints lateness p50/p90/p99 (us), busy time (ms) and the
 * ratios to poll's, the busy one also over the steady window alone (replay.h: every
 * word past its warm-up; "-" where there is none). --check: exit 1 unless every
 * plan's p50 <= P50 x poll's, p99 <= P99 x poll's and busy <= BUSY x poll's (a BUSY
 * of 0 skips that one); a trace may
 * name its own busy bound on a "# busy<=R" line. --cost: replay's figures for this
 * host instead of its defaults (garuda_replay_cost_parse(): step_ns, spin_ns, spin_wall_ns,
 * wake_late_ns, wake_cpu_ns, long_sleep_ns, ... as the bench measures them).
 * --verbose: what the finds recorded
 * (exact, censored, late, unknown), sleeps, spins and the worst lateness. Exit 2: bad
 * usage or trace, or a replay that failed (each with a message). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "replay.h"

#define MAX_PLANS 8

/* The trace at path, parsed (garuda_replay_trace_parse): 0, or -1 with a message */
static int load(const char *path, struct garuda_replay_trace *t)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "garuda-replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char *text = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (cap - len < 65536) {
			char *nt = cap > SIZE_MAX / 2 ? NULL : realloc(text, cap ? 2 * cap : 65536);
			if (!nt) {
				fprintf(stderr, "garuda-replay: %s: out of memory\n", path);
				free(text);
				fclose(f);
				return -1;
			}
			text = nt;
			cap = cap ? 2 * cap : 65536;
		}
		size_t got = fread(text + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "garuda-replay: %s: read error\n", path);
		free(text);
		return -1;
	}
	char msg[160];
	int r = garuda_replay_trace_parse(text, len, t, msg, sizeof(msg));
	free(text);
	if (r < 0) {
		fprintf(stderr, "garuda-replay: %s: %s\n", path, msg);
		return -1;
	}
	return 0;
}

/* garuda_replay_run()'s failure r, in words */
static const char *run_error(int r)
{
	switch (r) {
	case -ENOMEM:
		return "out of memory";
	case -ERANGE:
		return "a row the replay cannot simulate (garuda_replay_rows_check)";
	case -EDEADLK:
		return "the watcher left a wait that is never due (a bug: please report it)";
	default:
		return strerror(-r);
	}
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : (a ? 1e9 : 1.0);
}

int main(int argc, char **argv)
{
	const char *texts[MAX_PLANS];
	int nplans = 0, ntraces = 0;
	struct garuda_replay_cost cost = garuda_replay_default_cost();
	double c50 = 0, c99 = 0, cbusy = 0;
	bool check = false, verbose = false;
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--plan=", 7) == 0) {
			if (nplans == MAX_PLANS) {
				fprintf(stderr, "garuda-replay: %s: at most %d --plan\n", argv[i],
					MAX_PLANS);
				return 2;
			}
			texts[nplans++] = argv[i] + 7;
		} else if (strncmp(argv[i], "--cost=", 7) == 0) {
			char msg[128];
			if (garuda_replay_cost_parse(&cost, argv[i] + 7, msg, sizeof(msg)) < 0) {
				fprintf(stderr, "garuda-replay: --cost: %s\n", msg);
				return 2;
			}
		} else if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
			verbose = true;
		} else if (strncmp(argv[i], "--check=", 8) == 0) {
			check = sscanf(argv[i] + 8, "%lf,%lf,%lf", &c50, &c99, &cbusy) == 3;
			if (!check) {
				fprintf(stderr, "garuda-replay: --check=P50,P99,BUSY\n");
				return 2;
			}
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: garuda-replay [--plan=TEXT]... [--cost=KEY=NS,...]... "
					"[--check=P50,P99,BUSY] TRACE.csv...\n");
			return 2;
		} else {
			ntraces++;
		}
	}
	if (!nplans)
		texts[nplans++] = GARUDA_PLAN_GARUDAD_DEFAULT;
	if (!ntraces) {
		fprintf(stderr, "usage: garuda-replay [--plan=TEXT]... [--cost=KEY=NS,...]... "
				"[--check=P50,P99,BUSY] TRACE.csv...\n");
		return 2;
	}
	struct garuda_plan plans[MAX_PLANS], poll;
	garuda_plan_parse("poll", &poll, NULL, 0);
	for (int p = 0; p < nplans; p++) {
		char msg[GARUDA_PLAN_MSG_MAX];
		if (garuda_plan_parse(texts[p], &plans[p], msg, sizeof(msg)) < 0 ||
		    plans[p].kind == GARUDA_PLAN_BLOCK) {
			fprintf(stderr, "garuda-replay: --plan=%s: %s\n", texts[p],
				plans[p].kind == GARUDA_PLAN_BLOCK
					? "block has no watcher to replay"
					: msg);
			return 2;
		}
	}
	int failed = 0;
	printf("%-28s %-10s %6s %9s %9s %9s %10s %8s %8s %8s %11s\n", "trace", "plan", "n", "p50_us",
	       "p90_us", "p99_us", "busy_ms", "p50/poll", "p99/poll", "busy/poll", "steady/poll");
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-')
			continue;
		struct garuda_replay_trace t;
		if (load(argv[i], &t) < 0)
			return 2;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		struct garuda_replay_result base;
		int r = garuda_replay_run(&poll, t.rows, t.n, &cost, &base);
		if (r < 0) {
			fprintf(stderr, "garuda-replay: %s: replaying poll: %s\n", argv[i],
				run_error(r));
			garuda_replay_trace_free(&t);
			return 2;
		}
		printf("%-28s %-10s %6zu %9.1f %9.1f %9.1f %10.2f\n", name, "poll",
		       base.completions, base.late_p50_ns / 1e3, base.late_p90_ns / 1e3,
		       base.late_p99_ns / 1e3, base.busy_ns / 1e6);
		for (int p = 0; p < nplans; p++) {
			struct garuda_replay_result r;
			int rr = garuda_replay_run(&plans[p], t.rows, t.n, &cost, &r);
			if (rr < 0) {
				fprintf(stderr, "garuda-replay: %s: replaying plan %d (%s): %s\n",
					argv[i], p + 1, texts[p], run_error(rr));
				garuda_replay_trace_free(&t);
				return 2;
			}
			double r50 = ratio(r.late_p50_ns, base.late_p50_ns),
			       r99 = ratio(r.late_p99_ns, base.late_p99_ns);
			double rb = ratio(r.busy_ns, base.busy_ns);
			char label[24];
			snprintf(label, sizeof(label), "plan %d", p + 1);
			printf("%-28s %-10s %6zu %9.1f %9.1f %9.1f %10.2f %8.2f %8.2f %8.3f", name,
			       label, r.completions, r.late_p50_ns / 1e3, r.late_p90_ns / 1e3,
			       r.late_p99_ns / 1e3, r.busy_ns / 1e6, r50, r99, rb);
			if (r.steady_rows && base.steady_busy_ns) /* the same trace: the same window */
				printf(" %11.3f\n", (double)r.steady_busy_ns / (double)base.steady_busy_ns);
			else
				printf(" %11s\n", "-");
			if (verbose)
				printf("%-28s %-10s finds: exact %zu, censored %zu, late %zu, "
				       "unknown %zu; "
				       "sleeps %zu, spins %zu, parks %zu; steps %zu, words looked "
				       "at %zu; max lateness %.1f us\n",
				       "", "", r.exact, r.censored, r.late, r.unknown, r.sleeps,
				       r.spins, r.parks, r.steps, r.looks, r.late_max_ns / 1e3);
			double bb = t.busy_bound ? t.busy_bound : cbusy;
			if (check && (r50 > c50 || r99 > c99 || (bb > 0 && rb > bb))) {
				printf("  ^ over target: p50 <= %.2fx, p99 <= %.2fx, busy <= %.3fx "
				       "poll's\n",
				       c50, c99, bb);
				failed = 1;
			}
		}
		garuda_replay_trace_free(&t);
	}
	for (int p = 0; p < nplans; p++)
		printf("plan %d: %s\n", p + 1, texts[p]);
	return failed;
}
