/* garuda-replay — run wait plans over completion traces on a simulated clock, through
 * the watcher, policy and estimator garudad's scanner drives (proto/replay.h), against
 * `poll` (the always-spinning scanner) on the same trace. docs/plans.md, "Replaying a
 * trace".
 *
 *   garuda-replay [--plan=TEXT]... [--cost=KEY=NS,...]... [--check=P50,P99,BUSY] [--verbose]
 *                 TRACE.csv...
 *
 * A trace is CSV: a header line, then word,point,arm_ns,store_ns per completion
 * ('#' lines are comments). Without --plan it replays garudad's default plan. For
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
 * usage or trace. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "replay.h"

#define MAX_PLANS 8

struct trace {
	struct garuda_replay_row *rows;
	size_t n, cap;
	double busy_bound; /* "# busy<=R"; 0: none */
};

static int load(const char *path, struct trace *t)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "garuda-replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char line[256];
	unsigned lineno = 0;
	bool header = false;
	*t = (struct trace){ 0 };
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		double r;
		if (sscanf(line, "# busy<=%lf", &r) == 1)
			t->busy_bound = r;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!header) { /* word,point,arm_ns,store_ns */
			header = true;
			continue;
		}
		struct garuda_replay_row row;
		unsigned long long w, a, s;
		unsigned p;
		if (sscanf(line, "%llu,%u,%llu,%llu", &w, &p, &a, &s) != 4 || s < a) {
			fprintf(stderr,
				"garuda-replay: %s:%u: expected word,point,arm_ns,store_ns\n", path,
				lineno);
			fclose(f);
			free(t->rows);
			return -1;
		}
		row = (struct garuda_replay_row){
			.word = w, .point = p, .arm_ns = a, .store_ns = s
		};
		if (t->n == t->cap) {
			t->cap = t->cap ? 2 * t->cap : 1024;
			struct garuda_replay_row *nr = realloc(t->rows, t->cap * sizeof(*nr));
			if (!nr) {
				fclose(f);
				free(t->rows);
				return -1;
			}
			t->rows = nr;
		}
		t->rows[t->n++] = row;
	}
	fclose(f);
	if (!t->n) {
		fprintf(stderr, "garuda-replay: %s: no completions\n", path);
		return -1;
	}
	return 0;
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
		if (strncmp(argv[i], "--plan=", 7) == 0 && nplans < MAX_PLANS) {
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
		struct trace t;
		if (load(argv[i], &t) < 0)
			return 2;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		struct garuda_replay_result base;
		if (garuda_replay_run(&poll, t.rows, t.n, &cost, &base) < 0) {
			free(t.rows);
			return 2;
		}
		printf("%-28s %-10s %6zu %9.1f %9.1f %9.1f %10.2f\n", name, "poll",
		       base.completions, base.late_p50_ns / 1e3, base.late_p90_ns / 1e3,
		       base.late_p99_ns / 1e3, base.busy_ns / 1e6);
		for (int p = 0; p < nplans; p++) {
			struct garuda_replay_result r;
			if (garuda_replay_run(&plans[p], t.rows, t.n, &cost, &r) < 0) {
				free(t.rows);
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
		free(t.rows);
	}
	for (int p = 0; p < nplans; p++)
		printf("plan %d: %s\n", p + 1, texts[p]);
	return failed;
}
