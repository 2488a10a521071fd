/* thru.c — benchmark 3: throughput of one scanner.
 *
 * Steady state (C clients x S streams): every client is a process with one connection
 * (HELLO offers READY_BATCH) and one segment of S words; it keeps one arm outstanding
 * per stream (READY-message form), and as READYs come (READY, or READY_BATCH records
 * when a scanner pass fired several of its arms) it re-arms the next sequence of each of
 * those streams with NOREPLY ARM_BATCHes of up to 15 (sendmmsg) and stores it (a stream
 * whose work is already done: the daemon's full path per completion, arm -> loop ->
 * scanner -> READY). Completions/s
 * is the daemon's own "completions" counter over the window; its scanner counters
 * (passes, cpu_s) and the daemon's and the machine's CPU tell where the time goes.
 *
 * Arms/s: C clients send NOREPLY doorbell-form arms on distinct, not yet reached words
 * as fast as sendmmsg goes; the rate is the daemon's "arms" counter. Then every client
 * stores all its words at once and the burst of completions is timed to the last one
 * (doorbell form: one futex wake per segment per scan pass).
 *
 * GARUDA_BENCH_THRU_CELLS=8x64 (CLIENTSxSTREAMS, comma-separated) runs only those
 * steady cells: one cell under a profiler (development).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "benchd.h"
#include "raw.h"
#include "seq.h"

struct thru_client {
	uint64_t completions;
	uint64_t datagrams; /* READY and READY_BATCH datagrams that brought them */
	uint64_t window_cpu_ns; /* process CPU between the parent's two marks */
	char err[128];
};

struct thru_shm {
	_Alignas(64) uint32_t ready;
	_Alignas(64) uint32_t start;
	_Alignas(64) uint32_t stop;
	_Alignas(64) uint32_t fire; /* arms benchmark: store all words now */
	_Alignas(64) uint32_t done;
	_Alignas(64) uint32_t mark; /* 1: measuring window began, 2: it ended */
	/* then struct thru_client[n] */
};

struct thru_run {
	struct thru_shm *sh;
	struct thru_client *cl;
	size_t bytes;
	unsigned n, streams, idx;
	const char *sock;
};

/* machine-wide busy time (all CPUs) from /proc/stat, ns */
static uint64_t machine_busy_ns(void)
{
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	unsigned long long u = 0, ni = 0, s = 0, idle = 0, io = 0, irq = 0, sirq = 0, st = 0;
	int k = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &u, &ni, &s, &idle, &io, &irq, &sirq, &st);
	fclose(f);
	if (k < 4)
		return 0;
	long tck = sysconf(_SC_CLK_TCK);
	return (u + ni + s + irq + sirq) * (1000000000ull / (uint64_t)(tck > 0 ? tck : 100));
}

static int setup(struct thru_run *r, struct rc *c, uint32_t words)
{
	struct thru_client *me = &r->cl[r->idx];
	int e = rc_connect_features(c, r->sock, GARUDA_FEATURE_READY_BATCH);
	if (!e)
		e = rc_segment_open(c, (words + 7) / 8, true, NULL);
	if (e) {
		snprintf(me->err, sizeof(me->err), "set-up failed (%d)", e);
		return -1;
	}
	if (!(rc_features(c) & GARUDA_FEATURE_READY_BATCH)) {
		snprintf(me->err, sizeof(me->err), "garudad did not grant READY_BATCH");
		return -1;
	}
	__atomic_fetch_add(&r->sh->ready, 1, __ATOMIC_ACQ_REL);
	futex_wake(&r->sh->ready, 1);
	if (futex_wait_ge(&r->sh->start, 1, 6ull * BENCH_HANG_MS * 1000000ull) < 0) {
		snprintf(me->err, sizeof(me->err), "never started");
		return -1;
	}
	return 0;
}

static int steady_main(void *arg)
{
	struct thru_run *r = arg;
	struct thru_client *me = &r->cl[r->idx];
	struct rc c = { .raw.fd = -1, .seg.memfd = -1 };
	unsigned S = r->streams;
	uint64_t *next = calloc(S, sizeof(*next));
	struct rc_arm_req *reqs = calloc(S, sizeof(*reqs));
	/* room for S datagrams of a full READY_BATCH each (at most S records come at once) */
	unsigned rb_cap = S * GARUDA_BATCH_MAX;
	struct garuda_ready *rb = calloc(rb_cap, sizeof(*rb));
	int rc = 1;
	if (!next || !reqs || !rb || setup(r, &c, S) < 0)
		goto out;
	for (unsigned i = 0; i < S; i++) {
		next[i] = 1;
		reqs[i] = (struct rc_arm_req){ .index = i, .target = 1, .token = i, .form = GARUDA_FORM_MESSAGE };
	}
	if (rc_arm_batched(&c, reqs, S) < 0)
		goto out;
	for (unsigned i = 0; i < S; i++)
		__atomic_store_n(rc_word(&c, i), 1, __ATOMIC_RELEASE);
	uint64_t outstanding = S;
	bool stopping = false;
	uint64_t deadline = 0, cpu_mark[3] = { 0 };
	unsigned marked = 0;
	while (outstanding) {
		uint32_t mark = __atomic_load_n(&r->sh->mark, __ATOMIC_ACQUIRE);
		while (marked < mark && marked < 2)
			cpu_mark[++marked] = process_cpu_ns();
		if (!stopping && __atomic_load_n(&r->sh->stop, __ATOMIC_ACQUIRE)) {
			stopping = true;
			deadline = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
		}
		if (stopping && now_ns() > deadline) {
			snprintf(me->err, sizeof(me->err), "%llu READY never came", (unsigned long long)outstanding);
			goto out;
		}
		struct pollfd p = { .fd = c.raw.fd, .events = POLLIN };
		if (poll(&p, 1, 50) <= 0)
			continue;
		unsigned dgrams = 0;
		int n = rc_recv_ready(&c, rb, rb_cap, &dgrams);
		if (n < 0) {
			snprintf(me->err, sizeof(me->err), "receive failed (%d)", n);
			goto out;
		}
		me->datagrams += dgrams;
		unsigned k = 0;
		for (int j = 0; j < n; j++) {
			uint64_t i = rb[j].token;
			if (i >= S || rb[j].flags || !garuda_reached(rb[j].value, next[i])) {
				snprintf(me->err, sizeof(me->err), "bad READY (token %llu flags %u)",
					 (unsigned long long)i, rb[j].flags);
				goto out;
			}
			me->completions++;
			outstanding--;
			if (stopping)
				continue;
			next[i]++;
			reqs[k++] = (struct rc_arm_req){ .index = (uint32_t)i, .target = next[i], .token = i,
							 .form = GARUDA_FORM_MESSAGE };
		}
		if (k && rc_arm_batched(&c, reqs, k) < 0) {
			snprintf(me->err, sizeof(me->err), "ARM failed");
			goto out;
		}
		for (unsigned j = 0; j < k; j++)
			__atomic_store_n(rc_word(&c, reqs[j].index), reqs[j].target, __ATOMIC_RELEASE);
		outstanding += k;
	}
	if (marked == 2)
		me->window_cpu_ns = cpu_mark[2] - cpu_mark[1];
	rc = 0;
out:
	rc_close(&c);
	free(next);
	free(reqs);
	free(rb);
	return rc;
}

struct thru_cell {
	bool ok;
	double comp_per_s, arms_per_s, passes_per_s, comp_per_pass;
	double scanner_busy, daemon_cpu, clients_cpu, machine_cpu; /* CPUs' worth */
	double window_s;
	double ready_per_datagram; /* whole run: READY records per READY/READY_BATCH datagram */
};

static void run_steady(struct bench *b, const char *cfg, unsigned clients, unsigned streams, struct thru_cell *cell)
{
	memset(cell, 0, sizeof(*cell));
	struct thru_run r = { .n = clients, .streams = streams };
	r.bytes = sizeof(struct thru_shm) + clients * sizeof(struct thru_client);
	r.sh = shm_alloc(r.bytes);
	if (!r.sh) {
		bench_fail(b, "throughput: out of memory");
		return;
	}
	r.cl = (struct thru_client *)(r.sh + 1);
	struct gd_daemon d;
	if (bd_start(b, &d, cfg) < 0) {
		shm_free(r.sh, r.bytes);
		return;
	}
	r.sock = d.sock;
	pid_t *pids = calloc(clients, sizeof(*pids));
	unsigned started = 0;
	for (; pids && started < clients; started++) {
		r.idx = started;
		if ((pids[started] = child_start(steady_main, &r)) < 0)
			break;
	}
	bool ok = pids && started == clients &&
		  futex_wait_ge(&r.sh->ready, clients, (uint64_t)BENCH_HANG_MS * 1000000ull) == 0;
	if (ok) {
		futex_set(&r.sh->start, 1);
		sleep_ns(100000000ull); /* warm-up */
		struct bd_counters c0, c1;
		struct proc_sample p0, p1;
		futex_set(&r.sh->mark, 1);
		uint64_t m0 = machine_busy_ns(), t0 = now_ns();
		ok = bd_counters(&d, &c0) == 0 && proc_read(d.pid, &p0) == 0;
		sleep_ns((uint64_t)b->o.thru_ms * 1000000ull);
		ok = ok && bd_counters(&d, &c1) == 0 && proc_read(d.pid, &p1) == 0;
		uint64_t t1 = now_ns(), m1 = machine_busy_ns();
		futex_set(&r.sh->mark, 2);
		double w = (double)(t1 - t0) / 1e9;
		if (ok) {
			cell->comp_per_s = (c1.completions - c0.completions) / w;
			cell->arms_per_s = (c1.arms - c0.arms) / w;
			cell->passes_per_s = (c1.passes - c0.passes) / w;
			cell->comp_per_pass = c1.passes > c0.passes
						      ? (c1.completions - c0.completions) / (c1.passes - c0.passes)
						      : NAN;
			cell->scanner_busy = (c1.scanner_cpu_s - c0.scanner_cpu_s) / w;
			cell->daemon_cpu = (double)(p1.cpu_ns - p0.cpu_ns) / 1e9 / w;
			cell->machine_cpu = (double)(m1 - m0) / 1e9 / w;
			cell->window_s = w;
		} else {
			bench_fail(b, "throughput: control socket did not answer");
		}
	}
	futex_set(&r.sh->stop, 1);
	for (unsigned i = 0; i < started; i++)
		if (child_wait(pids[i], 3 * BENCH_HANG_MS) != 0) {
			ok = false;
			bench_fail(b, "throughput %ux%u: client %u failed: %s", clients, streams, i,
				   r.cl[i].err[0] ? r.cl[i].err : "died");
		}
	if (ok) {
		/* every READY the clients got is one the daemon counted, and none was lost */
		uint64_t got = 0, cpu = 0, dgrams = 0;
		for (unsigned i = 0; i < clients; i++) {
			got += r.cl[i].completions;
			cpu += r.cl[i].window_cpu_ns;
			dgrams += r.cl[i].datagrams;
		}
		cell->clients_cpu = cell->window_s > 0 ? (double)cpu / 1e9 / cell->window_s : NAN;
		cell->ready_per_datagram = dgrams ? (double)got / (double)dgrams : NAN;
		struct bd_counters cf;
		if (bd_counters(&d, &cf) == 0 && (double)got != cf.completions) {
			bench_fail(b, "throughput %ux%u: clients got %llu READY, daemon counted %.0f", clients, streams,
				   (unsigned long long)got, cf.completions);
			ok = false;
		}
	}
	cell->ok = ok;
	free(pids);
	bd_stop(b, &d);
	shm_free(r.sh, r.bytes);
}

/* ------------------------------------------------------------------ arms/s and burst */

static int armer_main(void *arg)
{
	struct thru_run *r = arg;
	struct thru_client *me = &r->cl[r->idx];
	struct rc c = { .raw.fd = -1, .seg.memfd = -1 };
	unsigned M = r->streams;
	struct rc_arm_req *reqs = calloc(M, sizeof(*reqs));
	int rc = 1;
	if (!reqs || setup(r, &c, M) < 0)
		goto out;
	for (unsigned i = 0; i < M; i++)
		reqs[i] = (struct rc_arm_req){ .index = i, .target = 1, .token = i, .form = GARUDA_FORM_DOORBELL };
	if (rc_arm_many(&c, reqs, M) < 0) {
		snprintf(me->err, sizeof(me->err), "ARM failed");
		goto out;
	}
	if (futex_wait_ge(&r->sh->fire, 1, 6ull * BENCH_HANG_MS * 1000000ull) < 0) {
		snprintf(me->err, sizeof(me->err), "never told to fire");
		goto out;
	}
	for (unsigned i = 0; i < M; i++)
		__atomic_store_n(rc_word(&c, i), 1, __ATOMIC_RELEASE);
	futex_wait_ge(&r->sh->stop, 1, 6ull * BENCH_HANG_MS * 1000000ull);
	rc = 0;
out:
	rc_close(&c);
	free(reqs);
	return rc;
}

struct arms_result {
	bool ok;
	double arms_per_s, burst_per_s;
	unsigned total;
};

static void run_arms(struct bench *b, const char *cfg, unsigned clients, unsigned per_client, struct arms_result *res)
{
	memset(res, 0, sizeof(*res));
	struct thru_run r = { .n = clients, .streams = per_client };
	r.bytes = sizeof(struct thru_shm) + clients * sizeof(struct thru_client);
	r.sh = shm_alloc(r.bytes);
	if (!r.sh)
		return;
	r.cl = (struct thru_client *)(r.sh + 1);
	struct gd_daemon d;
	if (bd_start(b, &d, cfg) < 0) {
		shm_free(r.sh, r.bytes);
		return;
	}
	r.sock = d.sock;
	pid_t *pids = calloc(clients, sizeof(*pids));
	unsigned started = 0;
	for (; pids && started < clients; started++) {
		r.idx = started;
		if ((pids[started] = child_start(armer_main, &r)) < 0)
			break;
	}
	double total = (double)clients * per_client;
	res->total = clients * per_client;
	bool ok = pids && started == clients &&
		  futex_wait_ge(&r.sh->ready, clients, (uint64_t)BENCH_HANG_MS * 1000000ull) == 0;
	if (ok) {
		uint64_t t0 = now_ns();
		futex_set(&r.sh->start, 1);
		ok = bd_wait_status(&d, "arms", total, 0, 6 * BENCH_HANG_MS) == 0;
		uint64_t t1 = now_ns();
		/* the scanner takes the last arms on its next pass */
		ok = ok && bd_wait_status(&d, "armed", total, 0, 6 * BENCH_HANG_MS) == 0;
		uint64_t t2 = now_ns();
		futex_set(&r.sh->fire, 1);
		ok = ok && bd_wait_status(&d, "completions", total, 0, 6 * BENCH_HANG_MS) == 0;
		uint64_t t3 = now_ns();
		if (ok) {
			res->arms_per_s = total / ((double)(t1 - t0) / 1e9);
			res->burst_per_s = total / ((double)(t3 - t2) / 1e9);
		} else {
			bench_fail(b, "arms/s: the daemon did not count all %.0f arms and completions", total);
		}
	}
	futex_set(&r.sh->fire, 1);
	futex_set(&r.sh->stop, 1);
	for (unsigned i = 0; i < started; i++)
		if (child_wait(pids[i], 3 * BENCH_HANG_MS) != 0) {
			ok = false;
			bench_fail(b, "arms/s: client %u failed: %s", i, r.cl[i].err[0] ? r.cl[i].err : "died");
		}
	res->ok = ok;
	free(pids);
	bd_stop(b, &d);
	shm_free(r.sh, r.bytes);
}

/* ------------------------------------------------------------------ section */

/* Where the time goes, from the daemon's counters and /proc (CPUs' worth over the
 * window): the box (2 CPUs here) is the limit when daemon + clients use it all. */
static const char *bottleneck(const struct thru_cell *c, double ncpu)
{
	double loop = c->daemon_cpu - c->scanner_busy, ours = c->daemon_cpu + c->clients_cpu;
	if (ours >= 0.85 * ncpu)
		return c->clients_cpu > c->daemon_cpu ? "CPUs full; clients use most" : "CPUs full; daemon uses most";
	if (c->machine_cpu >= 0.9 * ncpu)
		return "CPUs full (other load on the box)";
	if (c->scanner_busy >= 0.9 && c->comp_per_pass >= 2)
		return "scanner thread";
	if (loop >= 0.9)
		return "loop thread (arm intake)";
	return "wake-up round trips";
}

int bench_throughput(struct bench *b)
{
	cJSON *sec = cJSON_AddObjectToObject(b->json, "throughput");
	char cfg[512];
	snprintf(cfg, sizeof(cfg),
		 "{\"spin_us\":%u,\"max_sleep_us\":%u,\"scanners\":1,\"quota\":{\"connection\":{\"segments\":16,"
		 "\"lines\":65536,\"bindings\":65536,\"armed\":1048576,\"outbox_bytes\":4194304},\"uid\":{"
		 "\"segments\":100000,\"lines\":4000000000,\"bindings\":1000000,\"armed\":100000000,"
		 "\"outbox_bytes\":4000000000},\"daemon\":{\"segments\":100000,\"lines\":4000000000,"
		 "\"bindings\":1000000,\"armed\":100000000,\"outbox_bytes\":4000000000}}}",
		 b->o.spin_us, b->o.max_sleep_us);
	cJSON_AddStringToObject(sec, "garudad_config", cfg);
	cJSON_AddNumberToObject(sec, "window_ms", b->o.thru_ms);
	cJSON_AddStringToObject(sec, "steady_protocol",
				"HELLO features READY_BATCH; re-arm with NOREPLY ARM_BATCH (up to 15 per datagram)");
	cJSON *cells = cJSON_AddArrayToObject(sec, "steady");

	static const unsigned full_clients[] = { 1, 8, 64 }, full_streams[] = { 1, 8, 64 };
	static const unsigned quick_clients[] = { 1, 8, 64 }, quick_streams[] = { 1, 64 };
	const unsigned *cl = b->o.quick ? quick_clients : full_clients;
	const unsigned *st = b->o.quick ? quick_streams : full_streams;
	unsigned ncl = 3, nst = b->o.quick ? 2 : 3;

	printf("\n3. Throughput, one scanner (READY-message form with feature READY_BATCH; each stream re-armed\n"
	       "   (NOREPLY ARM_BATCH) and stored as soon as its READY comes; rates per second;\n"
	       "   scanner/daemon/clients/machine = CPUs' worth used; r/dgram = READYs per datagram received)\n");
	double ncpu = (double)sysconf(_SC_NPROCESSORS_ONLN);
	printf("  %7s %7s %10s %10s %9s %7s %7s %7s %7s %7s %7s  %s\n", "clients", "streams", "complet/s", "arms/s",
	       "passes/s", "c/pass", "r/dgram", "scanner", "daemon", "clients", "machine", "bottleneck");
	double best = 0;
	const char *only = getenv("GARUDA_BENCH_THRU_CELLS");
	for (unsigned i = 0; i < ncl; i++)
		for (unsigned j = 0; j < nst; j++) {
			struct thru_cell c;
			char name[32];
			snprintf(name, sizeof(name), "%ux%u", cl[i], st[j]);
			if (only && !bench_list_has(only, name))
				continue;
			run_steady(b, cfg, cl[i], st[j], &c);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "clients", cl[i]);
			cJSON_AddNumberToObject(o, "streams_per_client", st[j]);
			if (!c.ok) {
				printf("  %7u %7u   (broken run)\n", cl[i], st[j]);
				cJSON_AddBoolToObject(o, "ok", false);
				cJSON_AddItemToArray(cells, o);
				continue;
			}
			const char *bn = bottleneck(&c, ncpu);
			printf("  %7u %7u %10.0f %10.0f %9.0f %7.1f %7.1f %7.2f %7.2f %7.2f %7.2f  %s\n", cl[i], st[j],
			       c.comp_per_s, c.arms_per_s, c.passes_per_s, c.comp_per_pass, c.ready_per_datagram,
			       c.scanner_busy, c.daemon_cpu, c.clients_cpu, c.machine_cpu, bn);
			fflush(stdout);
			cJSON_AddBoolToObject(o, "ok", true);
			cJSON_AddNumberToObject(o, "completions_per_s", c.comp_per_s);
			cJSON_AddNumberToObject(o, "arms_per_s", c.arms_per_s);
			cJSON_AddNumberToObject(o, "passes_per_s", c.passes_per_s);
			cJSON_AddNumberToObject(o, "completions_per_pass", c.comp_per_pass);
			cJSON_AddNumberToObject(o, "ready_per_datagram", c.ready_per_datagram);
			cJSON_AddNumberToObject(o, "scanner_cpus", c.scanner_busy);
			cJSON_AddNumberToObject(o, "daemon_cpus", c.daemon_cpu);
			cJSON_AddNumberToObject(o, "clients_cpus", c.clients_cpu);
			cJSON_AddNumberToObject(o, "machine_cpus", c.machine_cpu);
			cJSON_AddStringToObject(o, "bottleneck", bn);
			cJSON_AddItemToArray(cells, o);
			if (c.comp_per_s > best)
				best = c.comp_per_s;
		}

	unsigned aclients = b->o.quick ? 4 : 8, per = b->o.quick ? 8192 : 32768;
	struct arms_result ar;
	run_arms(b, cfg, aclients, per, &ar);
	cJSON *ao = cJSON_AddObjectToObject(sec, "arms");
	cJSON_AddNumberToObject(ao, "clients", aclients);
	cJSON_AddNumberToObject(ao, "arms_per_client", per);
	if (ar.ok) {
		printf("  arms accepted (NOREPLY, sendmmsg, %u clients x %u): %.0f arms/s;\n"
		       "  then all %u fire at once (doorbell form): %.0f completions/s\n",
		       aclients, per, ar.arms_per_s, ar.total, ar.burst_per_s);
		cJSON_AddNumberToObject(ao, "arms_per_s", ar.arms_per_s);
		cJSON_AddNumberToObject(ao, "burst_completions_per_s", ar.burst_per_s);
		b->keys.thru_burst = ar.burst_per_s;
	} else {
		printf("  arms accepted: (broken run)\n");
	}
	cJSON_AddNumberToObject(sec, "max_steady_completions_per_s", best);
	b->keys.thru_max = best > 0 ? best : NAN;
	return 0;
}
