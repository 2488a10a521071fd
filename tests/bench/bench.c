/* bench.c — garuda-bench: the benchmarks of issue 6, side by side in one run.
 *
 *   1. wake latency (lat.c)      2. CPU per completion (cpu.c)
 *   3. throughput (thru.c)       4. scale: pass cost, memory, idle (scale.c)
 *   5. wait plans against real kernel lengths (plans.c, issue 11)
 *   6. a spin step: hardware word wait vs pause (wordwait.c, issue 25)
 *   7. tenants: one tenant's idle and churning arms against another's waits (tenants.c,
 *      issue 29)
 *
 * Each section starts its own garudad from the build tree (benchd.h) with the tuning
 * it states, prints its table, and adds its numbers to one JSON document. At the end
 * the targets are printed as ratios of numbers from this same run.
 *
 * Exit status: 0 when every measurement ran (whatever the timings), 1 when a run was
 * broken (a daemon that did not start or exit cleanly, a readiness that never came or
 * came before its store, a count that does not add up, or an fd open at the end that
 * was not at the start: a leak), 2 on a usage error. So the quick mode can run as a
 * test on a noisy machine: it fails only on a broken run.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fdscan.h"
#include "bench.h"
#include "wordwait.h"

#ifndef GARUDAD_PATH
#define GARUDAD_PATH "garudad"
#endif
#ifndef BENCH_DEFAULT_JSON
#define BENCH_DEFAULT_JSON "garuda-bench.json"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: garuda-bench [OPTION]...\n"
		"Benchmarks garudad against per-process baselines: wake latency, CPU per completion,\n"
		"throughput of one scanner, scale (pass cost, memory, idle), wait plans, tenants (one\n"
		"tenant's idle and churning arms against another's waits). Prints a table and writes JSON.\n\n"
		"  --quick               short run (under 2 minutes; fewer samples and clients)\n"
		"  --json=PATH           JSON output (default %s)\n"
		"  --daemon=PATH         garudad to run (default %s)\n"
		"  --only=LIST           sections to run: latency,cpu,throughput,scale,plans,wordwait,\n"
		"                        tenants (default all)\n"
		"  --gap-us=N            simulated kernel time between arm and store, latency (default 20)\n"
		"  --spin-us=N           garudad spin_us for the latency-tuned daemon (default 100)\n"
		"  --max-sleep-us=N      garudad max_sleep_us (default 1000)\n"
		"  --samples=N           completions per latency row (default 100000; quick 5000)\n"
		"  --clients=N           client processes of the CPU benchmark (default 16)\n"
		"  --help\n\n"
		"Exit status: 0 every measurement ran (timings never fail), 1 broken run, 2 usage.\n",
		BENCH_DEFAULT_JSON, GARUDAD_PATH);
}

static bool want(const struct bench *b, const char *section)
{
	return !b->o.only || bench_list_has(b->o.only, section);
}

static int parse_uint(const char *name, const char *v, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long x = strtoul(v, &end, 10);
	if (errno || *end || end == v || x < lo || x > hi) {
		fprintf(stderr, "garuda-bench: --%s must be an integer in [%u, %u]\n", name, lo, hi);
		return -1;
	}
	*out = (unsigned)x;
	return 0;
}

struct target {
	const char *what, *goal;
	double value;
	bool met, measured;
	const char *fmt;
};

static void add_target(cJSON *arr, struct target *t)
{
	const char *verdict = !t->measured ? "n/a" : t->met ? "met" : "MISSED";
	char val[32];
	if (t->measured)
		snprintf(val, sizeof(val), t->fmt, t->value);
	else
		snprintf(val, sizeof(val), "-");
	printf("  %-52s %12s %14s  %s\n", t->what, val, t->goal, verdict);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "target", t->what);
	cJSON_AddStringToObject(o, "goal", t->goal);
	if (t->measured)
		cJSON_AddNumberToObject(o, "value", t->value);
	cJSON_AddStringToObject(o, "verdict", verdict);
	cJSON_AddItemToArray(arr, o);
}

static void targets(struct bench *b)
{
	const struct bench_key_numbers *k = &b->keys;
	cJSON *arr = cJSON_AddArrayToObject(b->json, "targets");
	printf("\nTargets (ratios of numbers from this run)\n");
	printf("  %-52s %12s %14s  %s\n", "", "measured", "target", "verdict");
	struct target t[] = {
		{ "garuda eventfd p50 / (b) eventfd-from-storer p50", "<= 1.3x", k->lat_p50_efd / k->lat_p50_b,
		  0, 0, "%.2fx" },
		{ "garuda eventfd p50 / (c) per-process reactor p50", "<= 1.0x", k->lat_p50_efd / k->lat_p50_c, 0, 0,
		  "%.2fx" },
		{ "CPU/completion garuda / (c), 16 clients, 1 ms", "<= 0.125x",
		  k->cpu_per_k_garuda / k->cpu_per_k_reactor, 0, 0, "%.3fx" },
		{ "  same, garuda with spin_us=0", "(info)", k->cpu_per_k_garuda_eco / k->cpu_per_k_reactor, 0, 0,
		  "%.3fx" },
		{ "  same, (c) if each reactor had a CPU of its own", "(info)",
		  k->cpu_per_k_garuda / k->cpu_per_k_reactor_uncapped, 0, 0, "%.3fx" },
		{ "  same, 100 us period", "(info)", k->cpu_per_k_garuda_100us / k->cpu_per_k_reactor_100us, 0, 0,
		  "%.3fx" },
		{ "  same, 100 us period, spin_us=0", "(info)",
		  k->cpu_per_k_garuda_eco_100us / k->cpu_per_k_reactor_100us, 0, 0, "%.3fx" },
		{ "completions/s by one scanner (steady state)", ">= 1000000", k->thru_max, 0, 0, "%.0f" },
		{ "  completions/s, burst of armed descriptors", "(info)", k->thru_burst, 0, 0, "%.0f" },
		{ "ns per armed descriptor per scan pass", "<= 5", k->ns_per_desc, 0, 0, "%.2f" },
		{ "idle: daemon context switches over the idle window", "== 0", k->idle_ctxt, 0, 0, "%.0f" },
		{ "idle: daemon CPU seconds over the idle window", "== 0", k->idle_cpu_s, 0, 0, "%.3f" },
	};
	size_t n = sizeof(t) / sizeof(t[0]);
	for (size_t i = 0; i < n; i++) {
		t[i].measured = !isnan(t[i].value) && !isinf(t[i].value);
		double v = t[i].value;
		if (strncmp(t[i].goal, "<= ", 3) == 0)
			t[i].met = v <= strtod(t[i].goal + 3, NULL);
		else if (strncmp(t[i].goal, ">= ", 3) == 0)
			t[i].met = v >= strtod(t[i].goal + 3, NULL);
		else if (strncmp(t[i].goal, "== ", 3) == 0)
			t[i].met = v == strtod(t[i].goal + 3, NULL);
		else
			t[i].met = true; /* informational */
		if (strcmp(t[i].goal, "(info)") == 0 && t[i].measured) {
			char val[32];
			snprintf(val, sizeof(val), t[i].fmt, v);
			printf("  %-52s %12s %14s\n", t[i].what, val, "");
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "info", t[i].what);
			cJSON_AddNumberToObject(o, "value", v);
			cJSON_AddItemToArray(arr, o);
			continue;
		}
		if (strcmp(t[i].goal, "(info)") == 0)
			continue;
		add_target(arr, &t[i]);
	}
}

int main(int argc, char **argv)
{
	struct bench b = { 0 };
	unsigned samples = 0, clients = 16;
	b.o = (struct bench_opts){
		.garudad = GARUDAD_PATH,
		.json_path = BENCH_DEFAULT_JSON,
		.gap_us = 20,
		.spin_us = 100,
		.max_sleep_us = 1000,
	};
	enum { O_QUICK = 256, O_JSON, O_DAEMON, O_ONLY, O_GAP, O_SPIN, O_SLEEP, O_SAMPLES, O_CLIENTS };
	static const struct option opts[] = {
		{ "quick", no_argument, NULL, O_QUICK },
		{ "json", required_argument, NULL, O_JSON },
		{ "daemon", required_argument, NULL, O_DAEMON },
		{ "only", required_argument, NULL, O_ONLY },
		{ "gap-us", required_argument, NULL, O_GAP },
		{ "spin-us", required_argument, NULL, O_SPIN },
		{ "max-sleep-us", required_argument, NULL, O_SLEEP },
		{ "samples", required_argument, NULL, O_SAMPLES },
		{ "clients", required_argument, NULL, O_CLIENTS },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case O_QUICK: b.o.quick = true; break;
		case O_JSON: b.o.json_path = optarg; break;
		case O_DAEMON: b.o.garudad = optarg; break;
		case O_ONLY: b.o.only = optarg; break;
		case O_GAP: bad = parse_uint("gap-us", optarg, 0, 1000000, &b.o.gap_us); break;
		case O_SPIN: bad = parse_uint("spin-us", optarg, 0, 1000000, &b.o.spin_us); break;
		case O_SLEEP: bad = parse_uint("max-sleep-us", optarg, 1, 1000000, &b.o.max_sleep_us); break;
		case O_SAMPLES: bad = parse_uint("samples", optarg, 10, 10000000, &samples); break;
		case O_CLIENTS: bad = parse_uint("clients", optarg, 1, 256, &clients); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (bad)
			return 2;
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	if (access(b.o.garudad, X_OK) != 0) {
		fprintf(stderr, "garuda-bench: cannot run the daemon %s: %s (use --daemon=PATH)\n", b.o.garudad,
			strerror(errno));
		return 2;
	}
	b.o.lat_samples = samples ? samples : b.o.quick ? 5000 : 100000;
	b.o.cpu_clients = clients;
	b.o.cpu_ms = b.o.quick ? 500 : 5000;
	b.o.thru_ms = b.o.quick ? 300 : 1000;
	b.o.scale_clients = b.o.quick ? 200 : 1000;
	b.o.scale_max_armed = b.o.quick ? 10000 : 100000;
	b.o.idle_s = b.o.quick ? 2 : 10;
	b.keys = (struct bench_key_numbers){
		.lat_p50_b = NAN, .lat_p50_c = NAN, .lat_p50_efd = NAN,
		.cpu_per_k_garuda = NAN, .cpu_per_k_reactor = NAN,
		.cpu_per_k_garuda_100us = NAN, .cpu_per_k_reactor_100us = NAN,
		.cpu_per_k_garuda_eco = NAN, .cpu_per_k_garuda_eco_100us = NAN,
		.cpu_per_k_reactor_uncapped = NAN,
		.thru_max = NAN, .thru_burst = NAN, .ns_per_desc = NAN,
		.idle_cpu_s = NAN, .idle_ctxt = NAN,
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* the fd-leak check of every test (tests/common/fdscan.h) */
	static unsigned char fds_before[FDSCAN_MAX];
	if (fdscan(0, fds_before) < 0) {
		fprintf(stderr, "garuda-bench: cannot list /proc/self/fd\n");
		return 1;
	}

	struct utsname u;
	uname(&u);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	time_t now = time(NULL);
	char when[32];
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	b.json = cJSON_CreateObject();
	cJSON_AddStringToObject(b.json, "tool", "garuda-bench");
	cJSON_AddStringToObject(b.json, "mode", b.o.quick ? "quick" : "full");
	cJSON_AddStringToObject(b.json, "when", when);
	cJSON_AddNumberToObject(b.json, "cpus", (double)cpus);
	cJSON_AddStringToObject(b.json, "kernel", u.release);
	cJSON_AddStringToObject(b.json, "garudad", b.o.garudad);
	char load[64] = "?";
	FILE *lf = fopen("/proc/loadavg", "re");
	if (lf) {
		if (!fgets(load, sizeof(load), lf))
			snprintf(load, sizeof(load), "?");
		load[strcspn(load, "\n")] = '\0';
		fclose(lf);
	}
	cJSON_AddStringToObject(b.json, "loadavg_at_start", load);
	/* the spin steps' hardware word wait (util/wordwait.h): libgaruda's in this
	 * environment, and garudad's under its default config (wordwait auto) */
	const struct wordwait *ww = bench_wordwait();
	cJSON_AddStringToObject(b.json, "wordwait_variant", wordwait_variant_name(ww->variant));
	cJSON_AddStringToObject(b.json, "wordwait_detail", ww->detail);
	printf("garuda-bench (%s mode): %ld CPUs, kernel %s, %s, load average %s, word wait %s (%s)\n",
	       b.o.quick ? "quick" : "full", cpus, u.release, when, load, wordwait_variant_name(ww->variant),
	       ww->detail);

	uint64_t t0 = now_ns();
	if (want(&b, "latency"))
		bench_latency(&b);
	if (want(&b, "cpu"))
		bench_cpu(&b);
	if (want(&b, "throughput"))
		bench_throughput(&b);
	if (want(&b, "plans"))
		bench_plans(&b);
	if (want(&b, "scale"))
		bench_scale(&b);
	if (want(&b, "wordwait"))
		bench_wordwait_section(&b);
	if (want(&b, "tenants"))
		bench_tenants(&b);
	targets(&b);
	double secs = (double)(now_ns() - t0) / 1e9;
	cJSON_AddNumberToObject(b.json, "seconds", secs);
	cJSON_AddNumberToObject(b.json, "broken_runs", b.failures);

	int rc = b.failures ? 1 : 0;
	char *text = cJSON_Print(b.json);
	FILE *f = text ? fopen(b.o.json_path, "we") : NULL;
	bool written = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
	if (f && fclose(f) != 0)
		written = false;
	if (!written) {
		fprintf(stderr, "garuda-bench: cannot write %s: %s\n", b.o.json_path, strerror(errno));
		rc = 1;
	}
	free(text);
	cJSON_Delete(b.json);
	bool leaked = fdscan_report_new(fds_before, "garuda-bench", NULL) > 0;
	if (leaked)
		rc = 1;
	printf("\n%s in %.0f s; JSON: %s%s\n", b.failures || leaked ? "BROKEN RUN" : "done", secs,
	       b.o.json_path, b.failures || leaked ? " (see the messages above)" : "");
	return rc;
}
