/* scale.c — benchmark 4: scale with many clients and many armed descriptors.
 *
 * One garudad, N connected clients (1,000 in full mode; one process holds all the
 * connections), each with one 16-line segment (128 words). Armed descriptors are
 * added in a ladder (1, 10, ..., up to 100,000), descriptor k on client k % N, word
 * k / N, doorbell form, target 2^62 (never reached while measuring). The daemon runs
 * with spin_us at its maximum (1 s), so after the last arm its scanner spins pass
 * after pass: the scanner's own counters over a window inside that second give CPU
 * ns per pass, hence ns per armed descriptor per pass.
 *
 * Memory: the daemon's VmRSS before any client, with N clients, with N segments, and
 * at each rung of the ladder: RSS per client, per segment, per armed descriptor.
 *
 * Idle: then every armed word is stored so all fire, and with N clients still
 * connected and nothing armed the daemon is left alone for idle_s seconds (no control
 * requests either): its CPU time and context switches (voluntary + involuntary,
 * summed over every /proc/PID/task entry) over that window. Idle means both are zero.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "benchd.h"
#include "raw.h"

#define SCALE_LINES 16
#define SCALE_WORDS (SCALE_LINES * 8)
#define FAR_TARGET (1ull << 62)

static double kib_to_bytes(uint64_t kib)
{
	return (double)kib * 1024.0;
}

int bench_scale(struct bench *b)
{
	cJSON *sec = cJSON_AddObjectToObject(b->json, "scale");
	unsigned n = b->o.scale_clients;
	unsigned long lim = raise_nofile();
	if (lim < n + 64) {
		unsigned fit = lim > 128 ? (unsigned)lim - 64 : 64;
		printf("\n(scale: RLIMIT_NOFILE is %lu; using %u clients instead of %u)\n", lim, fit, n);
		n = fit;
	}
	unsigned max_armed = b->o.scale_max_armed;
	if (max_armed > n * SCALE_WORDS)
		max_armed = n * SCALE_WORDS;

	char cfg[768];
	snprintf(cfg, sizeof(cfg),
		 "{\"spin_us\":1000000,\"max_sleep_us\":%u,\"scanners\":1,\"quota\":{\"connection\":{"
		 "\"segments\":4,\"lines\":65536,\"bindings\":1024,\"armed\":1048576,\"outbox_bytes\":262144},"
		 "\"uid\":{\"segments\":1000000,\"lines\":4000000000,\"bindings\":1000000,\"armed\":100000000,"
		 "\"outbox_bytes\":4000000000,\"connections\":100000},"
		 /* one process holds every client: one cgroup (quota.cgroup.segments is
		  * 256 by default: SEGMENT_OPEN 256 was refused) */
		 "\"cgroup\":{\"segments\":1000000,\"lines\":4000000000,\"bindings\":1000000,"
		 "\"armed\":100000000,\"outbox_bytes\":4000000000,\"connections\":100000},"
		 "\"daemon\":{\"segments\":1000000,\"lines\":4000000000,\"bindings\":1000000,"
		 "\"armed\":100000000,\"outbox_bytes\":4000000000,\"connections\":100000}}}",
		 b->o.max_sleep_us);
	cJSON_AddStringToObject(sec, "garudad_config", cfg);
	cJSON_AddNumberToObject(sec, "clients", n);
	printf("\n4. Scale: %u clients, one %u-line segment each; ladder of armed descriptors (doorbell form,\n"
	       "   never reached); scanner spinning (spin_us=1000000) while measured\n",
	       n, SCALE_LINES);

	struct gd_daemon d;
	if (bd_start(b, &d, cfg) < 0)
		return -1;
	struct rc *cl = calloc(n, sizeof(*cl));
	struct rc_arm_req *reqs = calloc(max_armed / n + 2, sizeof(*reqs));
	unsigned connected = 0;
	int rcode = -1;
	if (!cl || !reqs) {
		bench_fail(b, "scale: out of memory");
		goto out;
	}
	sleep_ns(200000000ull);
	struct proc_sample p_empty, p_clients, p_segments;
	proc_read(d.pid, &p_empty);
	for (; connected < n; connected++) {
		int e = rc_connect(&cl[connected], d.sock);
		if (e) {
			bench_fail(b, "scale: client %u could not connect (%d)", connected, e);
			goto out;
		}
	}
	sleep_ns(100000000ull);
	proc_read(d.pid, &p_clients);
	for (unsigned i = 0; i < n; i++) {
		int e = rc_segment_open(&cl[i], SCALE_LINES, true, NULL);
		if (e) {
			bench_fail(b, "scale: SEGMENT_OPEN %u failed (%d)", i, e);
			goto out;
		}
	}
	sleep_ns(100000000ull);
	proc_read(d.pid, &p_segments);
	double per_client = (kib_to_bytes(p_clients.rss_kib) - kib_to_bytes(p_empty.rss_kib)) / n;
	double per_segment = (kib_to_bytes(p_segments.rss_kib) - kib_to_bytes(p_clients.rss_kib)) / n;
	printf("  daemon RSS: %.1f MiB alone, %.1f MiB with %u clients, %.1f MiB with their segments\n"
	       "  => %.0f bytes per client, %.0f bytes per segment (%u lines, mlocked, mapped)\n",
	       kib_to_bytes(p_empty.rss_kib) / 1048576.0, kib_to_bytes(p_clients.rss_kib) / 1048576.0, n,
	       kib_to_bytes(p_segments.rss_kib) / 1048576.0, per_client, per_segment, SCALE_LINES);
	cJSON *mem = cJSON_AddObjectToObject(sec, "rss");
	cJSON_AddNumberToObject(mem, "empty_kib", (double)p_empty.rss_kib);
	cJSON_AddNumberToObject(mem, "clients_kib", (double)p_clients.rss_kib);
	cJSON_AddNumberToObject(mem, "segments_kib", (double)p_segments.rss_kib);
	cJSON_AddNumberToObject(mem, "bytes_per_client", per_client);
	cJSON_AddNumberToObject(mem, "bytes_per_segment", per_segment);

	printf("  %9s %11s %12s %10s %9s %9s\n", "armed", "ns/pass", "ns/armed", "passes/s", "scanner", "RSS MiB");
	cJSON *ladder = cJSON_AddArrayToObject(sec, "ladder");
	unsigned armed = 0;
	double pass_at_1 = NAN, last_pass = NAN, last_rss = 0;
	unsigned last_d = 0;
	for (unsigned dgoal = 1; armed < max_armed; dgoal *= 10) {
		if (dgoal > max_armed)
			dgoal = max_armed;
		/* add descriptors armed .. dgoal-1, grouped per client */
		for (unsigned c = 0; c < n; c++) {
			unsigned k = 0;
			for (unsigned idx = armed + ((c + n - armed % n) % n); idx < dgoal; idx += n)
				reqs[k++] = (struct rc_arm_req){ .index = idx / n, .target = FAR_TARGET, .token = idx,
								 .form = GARUDA_FORM_DOORBELL };
			if (k && rc_arm_many(&cl[c], reqs, k) < 0) {
				bench_fail(b, "scale: arming client %u failed", c);
				goto out;
			}
		}
		armed = dgoal;
		if (bd_wait_status(&d, "armed", armed, 0, 6 * BENCH_HANG_MS) < 0) {
			bench_fail(b, "scale: the daemon did not report %u armed", armed);
			goto out;
		}
		sleep_ns(30000000ull);
		struct bd_counters c0, c1;
		struct proc_sample pr;
		if (bd_counters(&d, &c0) < 0) {
			bench_fail(b, "scale: control socket did not answer");
			goto out;
		}
		uint64_t t0 = now_ns();
		sleep_ns(b->o.quick ? 150000000ull : 400000000ull);
		if (bd_counters(&d, &c1) < 0 || proc_read(d.pid, &pr) < 0) {
			bench_fail(b, "scale: control socket did not answer");
			goto out;
		}
		double w = (double)(now_ns() - t0) / 1e9;
		double passes = c1.passes - c0.passes;
		double ns_pass = passes > 0 ? (c1.scanner_cpu_s - c0.scanner_cpu_s) * 1e9 / passes : NAN;
		double busy = (c1.scanner_cpu_s - c0.scanner_cpu_s) / w;
		if (armed == 1)
			pass_at_1 = ns_pass;
		printf("  %9u %11.0f %12.2f %10.0f %9.2f %9.1f\n", armed, ns_pass, ns_pass / armed, passes / w, busy,
		       kib_to_bytes(pr.rss_kib) / 1048576.0);
		fflush(stdout);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "armed", armed);
		cJSON_AddNumberToObject(o, "ns_per_pass", ns_pass);
		cJSON_AddNumberToObject(o, "ns_per_armed_per_pass", ns_pass / armed);
		cJSON_AddNumberToObject(o, "passes_per_s", passes / w);
		cJSON_AddNumberToObject(o, "scanner_cpus", busy);
		cJSON_AddNumberToObject(o, "rss_kib", (double)pr.rss_kib);
		cJSON_AddItemToArray(ladder, o);
		last_pass = ns_pass;
		last_d = armed;
		last_rss = kib_to_bytes(pr.rss_kib);
	}
	double per_armed = last_d ? (last_rss - kib_to_bytes(p_segments.rss_kib)) / last_d : NAN;
	double marginal = last_d > 1 ? (last_pass - pass_at_1) / (last_d - 1) : NAN;
	printf("  => at %u armed: %.2f ns per armed descriptor per pass (marginal %.2f ns above the\n"
	       "     fixed cost of a pass, %.0f ns); %.0f bytes of RSS per armed descriptor\n",
	       last_d, last_pass / last_d, marginal, pass_at_1, per_armed);
	cJSON_AddNumberToObject(sec, "max_armed", last_d);
	cJSON_AddNumberToObject(sec, "ns_per_armed_per_pass", last_pass / last_d);
	cJSON_AddNumberToObject(sec, "marginal_ns_per_armed", marginal);
	cJSON_AddNumberToObject(sec, "fixed_ns_per_pass", pass_at_1);
	cJSON_AddNumberToObject(mem, "bytes_per_armed", per_armed);
	b->keys.ns_per_desc = last_d ? last_pass / last_d : NAN;

	/* fire everything, then idle */
	for (unsigned k = 0; k < armed; k++)
		__atomic_store_n(rc_word(&cl[k % n], k / n), FAR_TARGET, __ATOMIC_RELEASE);
	if (bd_wait_status(&d, "armed", 0, 1, 6 * BENCH_HANG_MS) < 0 ||
	    bd_wait_status(&d, "completions", armed, 0, 6 * BENCH_HANG_MS) < 0) {
		bench_fail(b, "scale: the %u armed descriptors did not all fire", armed);
		goto out;
	}
	sleep_ns(500000000ull);
	struct proc_sample i0, i1;
	proc_read(d.pid, &i0);
	sleep_ns((uint64_t)b->o.idle_s * 1000000000ull);
	if (proc_read(d.pid, &i1) < 0) {
		bench_fail(b, "scale: the daemon went away while idle");
		goto out;
	}
	double idle_cpu = (double)(i1.cpu_ns - i0.cpu_ns) / 1e9;
	double idle_cs = (double)(i1.vol_ctxt + i1.nonvol_ctxt) - (double)(i0.vol_ctxt + i0.nonvol_ctxt);
	printf("  idle %u s, %u clients connected, nothing armed (after all %u fired): daemon CPU %.3f s,\n"
	       "  %.0f context switches (all threads)\n",
	       b->o.idle_s, n, armed, idle_cpu, idle_cs);
	cJSON *idle = cJSON_AddObjectToObject(sec, "idle");
	cJSON_AddNumberToObject(idle, "seconds", b->o.idle_s);
	cJSON_AddNumberToObject(idle, "cpu_s", idle_cpu);
	cJSON_AddNumberToObject(idle, "context_switches", idle_cs);
	cJSON_AddNumberToObject(idle, "voluntary", (double)(i1.vol_ctxt - i0.vol_ctxt));
	cJSON_AddNumberToObject(idle, "nonvoluntary", (double)(i1.nonvol_ctxt - i0.nonvol_ctxt));
	b->keys.idle_cpu_s = idle_cpu;
	b->keys.idle_ctxt = idle_cs;
	rcode = 0;
out:
	for (unsigned i = 0; i < connected; i++)
		rc_close(&cl[i]);
	free(cl);
	free(reqs);
	bd_stop(b, &d);
	return rcode;
}
