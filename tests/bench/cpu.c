/* cpu.c — benchmark 2: CPU cost per completion with many client processes.
 *
 * N client processes (16 in full mode), each with one simulated stream: a thread that
 * completes every period (1 ms, then 100 us) on an absolute schedule (phases spread
 * evenly across the clients), storing 1, 2, 3, ... into its word and noting t0. The
 * client's waiter thread arms the next sequence, blocks in poll() on an eventfd, takes
 * t1 when it wakes, reads the word and records t1 - t0 for every sequence it covers.
 *
 * Rows: (c) every client runs its own reactor thread (reactor.h); garuda: every client
 * has a connection, a segment and an eventfd binding, and arms over the raw protocol
 * (NOREPLY), against one garudad — once with the latency benchmark's tuning and once
 * with spin_us=0 (sleep ladder only).
 *
 * CPU counted: (c) waiter + reactor threads (thread CPU clocks); garuda: waiter
 * threads + the whole daemon (utime+stime from /proc/PID/stat, all threads). The
 * simulated streams stand for the GPU and are reported apart, not counted.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "bench.h"
#include "benchd.h"
#include "raw.h"
#include "reactor.h"
#include "seq.h"

enum cpu_kind { CPU_REACTOR, CPU_GARUDA };

struct cpu_client {
	uint64_t completions;
	uint64_t waiter_cpu_ns, reactor_cpu_ns, stream_cpu_ns;
	uint64_t nlat;
	char err[128];
};

struct cpu_shm {
	_Alignas(64) uint32_t ready;  /* clients set up */
	_Alignas(64) uint32_t start;  /* parent: go */
	_Alignas(64) uint32_t done;   /* clients finished measuring */
	_Alignas(64) uint32_t finish; /* parent: you may exit */
	uint64_t t_start;
	/* then struct cpu_client[n], then lat[n][per_client] */
};

struct cpu_run {
	struct cpu_shm *sh;
	size_t bytes;
	struct cpu_client *cl;
	uint64_t *lat; /* per client: per_client samples */
	unsigned n, per_client;
	uint64_t period_ns;
	enum cpu_kind kind;
	const char *sock;
	unsigned idx; /* in the child: which client */
};

/* ------------------------------------------------------------------ client process */

struct stream_arg {
	struct cpu_run *r;
	uint64_t *word;
	uint64_t *t0; /* [per_client + 1] */
	uint64_t cpu_ns;
};

static void *stream_main(void *arg)
{
	struct stream_arg *s = arg;
	struct cpu_run *r = s->r;
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	uint64_t phase = r->period_ns * r->idx / r->n;
	for (uint64_t k = 1; k <= r->per_client; k++) {
		sleep_until_ns(r->sh->t_start + phase + k * r->period_ns);
		s->t0[k] = now_ns();
		__atomic_store_n(s->word, k, __ATOMIC_RELEASE);
	}
	s->cpu_ns = thread_cpu_ns();
	return NULL;
}

static int client_main(void *arg)
{
	struct cpu_run *r = arg;
	struct cpu_client *me = &r->cl[r->idx];
	uint64_t *lat = r->lat + (size_t)r->idx * r->per_client;
	struct rc c = { .fd = -1 };
	struct reactor *re = NULL;
	uint64_t *word = NULL, local_word[8] __attribute__((aligned(64))) = { 0 };
	int e, rc = 1;
	uint64_t *t0 = calloc(r->per_client + 1, sizeof(*t0));
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!t0 || efd < 0) {
		snprintf(me->err, sizeof(me->err), "out of memory or fds");
		goto out;
	}
	if (r->kind == CPU_GARUDA) {
		if ((e = rc_connect(&c, r->sock)) || (e = rc_segment_open(&c, 1, true)) || (e = rc_bind(&c, 0, efd))) {
			snprintf(me->err, sizeof(me->err), "client set-up failed (%d)", e);
			goto out;
		}
		word = rc_word(&c, 0);
	} else {
		if (reactor_start(&re, false) < 0) {
			snprintf(me->err, sizeof(me->err), "reactor_start failed");
			goto out;
		}
		word = local_word;
	}
	__atomic_fetch_add(&r->sh->ready, 1, __ATOMIC_ACQ_REL);
	futex_wake(&r->sh->ready, 1);
	if (futex_wait_ge(&r->sh->start, 1, 60ull * BENCH_HANG_MS * 1000000ull) < 0) {
		snprintf(me->err, sizeof(me->err), "never started");
		goto out;
	}

	struct stream_arg sa = { .r = r, .word = word, .t0 = t0 };
	pthread_t th;
	if (pthread_create(&th, NULL, stream_main, &sa)) {
		snprintf(me->err, sizeof(me->err), "pthread_create failed");
		goto out;
	}
	uint64_t cpu0 = thread_cpu_ns();
	uint64_t consumed = 0, nlat = 0;
	rc = 0;
	while (consumed < r->per_client) {
		uint64_t target = consumed + 1;
		if (r->kind == CPU_GARUDA) {
			if ((e = rc_arm(&c, 0, target, target, GARUDA_FORM_EVENTFD))) {
				snprintf(me->err, sizeof(me->err), "ARM failed (%d)", e);
				rc = 1;
				break;
			}
		} else {
			reactor_arm(re, word, target, efd);
		}
		struct pollfd p = { .fd = efd, .events = POLLIN };
		int n;
		while ((n = poll(&p, 1, BENCH_HANG_MS)) < 0 && errno == EINTR)
			;
		uint64_t t1 = now_ns();
		if (n <= 0) {
			snprintf(me->err, sizeof(me->err), "no wake for sequence %llu", (unsigned long long)target);
			rc = 1;
			break;
		}
		uint64_t one;
		if (read(efd, &one, sizeof(one)) != sizeof(one)) {
			snprintf(me->err, sizeof(me->err), "eventfd readable but empty");
			rc = 1;
			break;
		}
		uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
		if (!garuda_reached(v, target)) {
			snprintf(me->err, sizeof(me->err), "readiness before the store (%llu < %llu)",
				 (unsigned long long)v, (unsigned long long)target);
			rc = 1;
			break;
		}
		/* stores that landed after the wake (while this thread ran) were seen at t2 */
		uint64_t t2 = now_ns();
		for (uint64_t j = target; j <= v; j++)
			lat[nlat++] = t0[j] <= t1 ? t1 - t0[j] : t2 - t0[j];
		consumed = v;
	}
	me->waiter_cpu_ns = thread_cpu_ns() - cpu0;
	me->completions = consumed;
	me->nlat = nlat;
	pthread_join(th, NULL);
	me->stream_cpu_ns = sa.cpu_ns;
	if (re) {
		me->reactor_cpu_ns = reactor_stop(re);
		re = NULL;
	}
	__atomic_fetch_add(&r->sh->done, 1, __ATOMIC_ACQ_REL);
	futex_wake(&r->sh->done, 1);
	futex_wait_ge(&r->sh->finish, 1, 60ull * BENCH_HANG_MS * 1000000ull);
out:
	if (re)
		reactor_stop(re);
	if (c.fd >= 0)
		rc_close(&c);
	if (efd >= 0)
		close(efd);
	free(t0);
	return rc;
}

/* ------------------------------------------------------------------ one row */

struct cpu_result {
	bool ok;
	uint64_t completions;
	double cpu_s, daemon_cpu_s, clients_cpu_s, stream_cpu_s, wall_s;
	double per_k; /* CPU seconds per 1,000 completions */
	struct lat_stats lat;
};

static int wait_counter(uint32_t *ctr, uint32_t want, unsigned timeout_ms)
{
	return futex_wait_ge(ctr, want, (uint64_t)timeout_ms * 1000000ull);
}

static void run_row(struct bench *b, enum cpu_kind kind, const char *daemon_cfg, uint64_t period_ns,
		    unsigned duration_ms, struct cpu_result *res)
{
	memset(res, 0, sizeof(*res));
	struct cpu_run r = { .n = b->o.cpu_clients, .period_ns = period_ns, .kind = kind };
	r.per_client = (unsigned)((uint64_t)duration_ms * 1000000ull / period_ns);
	r.bytes = sizeof(struct cpu_shm) + r.n * sizeof(struct cpu_client) +
		  (size_t)r.n * r.per_client * sizeof(uint64_t);
	r.sh = shm_alloc(r.bytes);
	if (!r.sh) {
		bench_fail(b, "cpu: out of memory");
		return;
	}
	r.cl = (struct cpu_client *)(r.sh + 1);
	r.lat = (uint64_t *)(r.cl + r.n);

	struct bd d = { .pid = -1 };
	bool daemon = kind == CPU_GARUDA;
	if (daemon && bd_start(b, &d, daemon_cfg) < 0) {
		shm_free(r.sh, r.bytes);
		return;
	}
	r.sock = d.sock;
	pid_t *pids = calloc(r.n, sizeof(*pids));
	unsigned started = 0;
	for (; pids && started < r.n; started++) {
		r.idx = started;
		pids[started] = child_start(client_main, &r);
		if (pids[started] < 0)
			break;
	}
	bool ok = pids && started == r.n && wait_counter(&r.sh->ready, r.n, BENCH_HANG_MS) == 0;
	struct proc_sample p0 = { 0 }, p1 = { 0 };
	uint64_t w0 = 0, w1 = 0;
	if (ok) {
		if (daemon)
			proc_read(d.pid, &p0);
		w0 = now_ns();
		r.sh->t_start = w0 + 20000000ull;
		futex_set(&r.sh->start, 1);
		ok = wait_counter(&r.sh->done, r.n, duration_ms * 4 + 6 * BENCH_HANG_MS) == 0;
		w1 = now_ns();
		if (daemon)
			proc_read(d.pid, &p1);
	}
	futex_set(&r.sh->finish, 1);
	for (unsigned i = 0; i < started; i++)
		if (child_wait(pids[i], BENCH_HANG_MS) != 0) {
			ok = false;
			bench_fail(b, "cpu: client %u failed: %s", i, r.cl[i].err[0] ? r.cl[i].err : "died");
		}
	if (!ok && started == r.n)
		bench_fail(b, "cpu: the row did not complete");
	if (ok) {
		uint64_t total_lat = 0, waiter = 0, reactor = 0, stream = 0;
		for (unsigned i = 0; i < r.n; i++) {
			res->completions += r.cl[i].completions;
			waiter += r.cl[i].waiter_cpu_ns;
			reactor += r.cl[i].reactor_cpu_ns;
			stream += r.cl[i].stream_cpu_ns;
			/* compact the samples */
			memmove(r.lat + total_lat, r.lat + (size_t)i * r.per_client, r.cl[i].nlat * sizeof(uint64_t));
			total_lat += r.cl[i].nlat;
		}
		lat_compute(r.lat, total_lat, &res->lat);
		res->wall_s = (double)(w1 - w0) / 1e9 - 0.02;
		res->daemon_cpu_s = daemon ? (double)(p1.cpu_ns - p0.cpu_ns) / 1e9 : 0;
		res->clients_cpu_s = (double)(waiter + reactor) / 1e9;
		res->stream_cpu_s = (double)stream / 1e9;
		res->cpu_s = res->daemon_cpu_s + res->clients_cpu_s;
		res->per_k = res->completions ? res->cpu_s / ((double)res->completions / 1000.0) : NAN;
		res->ok = true;
	}
	free(pids);
	if (daemon)
		bd_stop(b, &d);
	shm_free(r.sh, r.bytes);
}

static void print_row(cJSON *rows, const char *label, const char *key, uint64_t period_ns,
		      const struct cpu_result *res, const char *cfg)
{
	if (!res->ok) {
		printf("  %-28s %5llu   (broken run)\n", label, (unsigned long long)(period_ns / 1000));
		return;
	}
	printf("  %-28s %5llu %7llu %6.2f %7.3f %7.3f %7.3f %7.3f %8.4f %8.1f %8.1f %8.1f\n", label,
	       (unsigned long long)(period_ns / 1000), (unsigned long long)res->completions, res->wall_s,
	       res->cpu_s, res->daemon_cpu_s, res->clients_cpu_s, res->stream_cpu_s, res->per_k,
	       res->lat.p50 / 1e3, res->lat.p99 / 1e3, res->lat.p999 / 1e3);
	fflush(stdout);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "row", key);
	cJSON_AddStringToObject(o, "label", label);
	if (cfg)
		cJSON_AddStringToObject(o, "garudad_config", cfg);
	cJSON_AddNumberToObject(o, "period_us", (double)period_ns / 1e3);
	cJSON_AddNumberToObject(o, "completions", (double)res->completions);
	cJSON_AddNumberToObject(o, "wall_s", res->wall_s);
	cJSON_AddNumberToObject(o, "cpu_s", res->cpu_s);
	cJSON_AddNumberToObject(o, "daemon_cpu_s", res->daemon_cpu_s);
	cJSON_AddNumberToObject(o, "clients_cpu_s", res->clients_cpu_s);
	cJSON_AddNumberToObject(o, "streams_cpu_s_not_counted", res->stream_cpu_s);
	cJSON_AddNumberToObject(o, "cpu_s_per_1000_completions", res->per_k);
	cJSON_AddItemToObject(o, "latency", lat_json(&res->lat));
	cJSON_AddItemToArray(rows, o);
}

int bench_cpu(struct bench *b)
{
	cJSON *sec = cJSON_AddObjectToObject(b->json, "cpu");
	cJSON_AddNumberToObject(sec, "clients", b->o.cpu_clients);
	cJSON_AddNumberToObject(sec, "duration_ms", b->o.cpu_ms);
	cJSON *rows = cJSON_AddArrayToObject(sec, "rows");
	char cfg_lat[160], cfg_eco[160];
	snprintf(cfg_lat, sizeof(cfg_lat), "{\"spin_us\":%u,\"max_sleep_us\":%u,\"scanners\":1}", b->o.spin_us,
		 b->o.max_sleep_us);
	snprintf(cfg_eco, sizeof(cfg_eco), "{\"spin_us\":0,\"max_sleep_us\":%u,\"scanners\":1}", b->o.max_sleep_us);

	printf("\n2. CPU cost: %u client processes, one stream each (CPU s; latency us)\n", b->o.cpu_clients);
	printf("  %-28s %5s %7s %6s %7s %7s %7s %7s %8s %8s %8s %8s\n", "", "per", "compl", "wall", "cpu_s",
	       "daemon", "clients", "streams", "s/1000", "p50", "p99", "p99.9");
	static const uint64_t periods[] = { 1000000, 100000 };
	for (unsigned pi = 0; pi < 2; pi++) {
		struct cpu_result re, gl, ge;
		run_row(b, CPU_REACTOR, NULL, periods[pi], b->o.cpu_ms, &re);
		print_row(rows, "(c) per-process reactors", "c_reactor", periods[pi], &re, NULL);
		run_row(b, CPU_GARUDA, cfg_lat, periods[pi], b->o.cpu_ms, &gl);
		char label[64];
		snprintf(label, sizeof(label), "garuda eventfd, spin_us=%u", b->o.spin_us);
		print_row(rows, label, "garuda_latency_tuning", periods[pi], &gl, cfg_lat);
		run_row(b, CPU_GARUDA, cfg_eco, periods[pi], b->o.cpu_ms, &ge);
		print_row(rows, "garuda eventfd, spin_us=0", "garuda_spin0", periods[pi], &ge, cfg_eco);
		double r_c = re.ok ? re.per_k : NAN, r_l = gl.ok ? gl.per_k : NAN, r_e = ge.ok ? ge.per_k : NAN;
		if (pi == 0) {
			b->keys.cpu_per_k_reactor = r_c;
			b->keys.cpu_per_k_garuda = r_l;
			b->keys.cpu_per_k_garuda_eco = r_e;
		} else {
			b->keys.cpu_per_k_reactor_100us = r_c;
			b->keys.cpu_per_k_garuda_100us = r_l;
			b->keys.cpu_per_k_garuda_eco_100us = r_e;
		}
	}
	printf("  (per = stream period, us; s/1000 = CPU seconds per 1,000 completions, counting garuda =\n"
	       "   daemon + waiter threads, (c) = waiter + reactor threads; the simulated streams stand for\n"
	       "   the GPU: their CPU is shown, not counted)\n");
	return 0;
}
