/* cpu.c — benchmark 2: CPU cost per completion with many client processes.
 *
 * N client processes (16 in full mode), each with one stream whose word completes
 * every period (1 ms, then 100 us): 1, 2, 3, ... stored on an absolute schedule by
 * one simulated GPU — a thread of the benchmark process that maps every client's word
 * and notes t0 just before each store (at 1 ms the clients' phases are spread evenly
 * over the period; at 100 us they complete together, because a 2-CPU guest cannot
 * wake a timer every 6 us). The simulated GPU's CPU is shown, never counted. A
 * client's waiter thread arms the next sequence, blocks in poll() on an eventfd, takes
 * t1 when it wakes, reads the word and records t1 - t0 for every sequence it covers.
 *
 * Rows: (c) every client runs its own reactor thread (reactor.h); garuda: every client
 * has a connection, a one-line segment (its memfd passed to the simulated GPU) and an
 * eventfd binding, and arms over the raw protocol (NOREPLY), against one garudad —
 * once with the latency benchmark's tuning and once with spin_us=0 (sleep ladder
 * only). The rows take turns in rounds so that background load hits each alike.
 *
 * CPU counted: (c) waiter + reactor threads (thread CPU clocks); garuda: waiter
 * threads + the whole daemon (utime+stime from /proc/PID/stat, all threads).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "benchd.h"
#include "fdio.h"
#include "raw.h"
#include "reactor.h"
#include "seq.h"

enum cpu_kind { CPU_REACTOR, CPU_GARUDA };

struct cpu_client {
	uint64_t completions;
	uint64_t waiter_cpu_ns, reactor_cpu_ns;
	uint64_t nlat;
	char err[128];
};

struct cpu_shm {
	_Alignas(64) uint32_t ready;  /* clients set up */
	_Alignas(64) uint32_t start;  /* parent: the simulated GPU runs */
	_Alignas(64) uint32_t done;   /* clients finished measuring */
	_Alignas(64) uint32_t finish; /* parent: you may exit */
	/* then struct garuda_line words[n] (the reactors' words), struct cpu_client[n],
	 * t0[n][per_client + 1], lat[n][per_client] */
};

struct cpu_run {
	struct cpu_shm *sh;
	size_t bytes;
	struct garuda_line *words;
	struct cpu_client *cl;
	uint64_t *t0;  /* per client: per_client + 1 */
	uint64_t *lat; /* per client: per_client samples */
	unsigned n, per_client;
	uint64_t period_ns;
	enum cpu_kind kind;
	const char *sock;
	int fd_sock; /* client -> parent: the segment's memfd */
	unsigned idx; /* in the child: which client */
};

/* ------------------------------------------------------------------ client process */

static int client_main(void *arg)
{
	struct cpu_run *r = arg;
	struct cpu_client *me = &r->cl[r->idx];
	uint64_t *lat = r->lat + (size_t)r->idx * r->per_client;
	uint64_t *t0 = r->t0 + (size_t)r->idx * (r->per_client + 1);
	struct rc c = { .raw.fd = -1, .seg.memfd = -1 };
	struct reactor *re = NULL;
	uint64_t *word = NULL;
	int e, rc = 1, memfd = -1;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (efd < 0) {
		snprintf(me->err, sizeof(me->err), "eventfd: %s", strerror(errno));
		goto out;
	}
	if (r->kind == CPU_GARUDA) {
		if ((e = rc_connect(&c, r->sock)) || (e = rc_segment_open(&c, 1, true, &memfd)) ||
		    (e = rc_bind(&c, 0, efd))) {
			snprintf(me->err, sizeof(me->err), "client set-up failed (%d)", e);
			goto out;
		}
		word = rc_word(&c, 0);
		uint32_t idx = r->idx;
		if (fdio_send(r->fd_sock, &idx, sizeof(idx), &memfd, 1, 0) < 0) {
			snprintf(me->err, sizeof(me->err), "cannot pass the segment to the simulated GPU");
			goto out;
		}
	} else {
		if (reactor_start(&re, false) < 0) {
			snprintf(me->err, sizeof(me->err), "reactor_start failed");
			goto out;
		}
		word = &r->words[r->idx].word[0];
	}
	__atomic_fetch_add(&r->sh->ready, 1, __ATOMIC_ACQ_REL);
	futex_wake(&r->sh->ready, 1);
	if (futex_wait_ge(&r->sh->start, 1, 6ull * BENCH_HANG_MS * 1000000ull) < 0) {
		snprintf(me->err, sizeof(me->err), "never started");
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
		if (!garuda_reached(v, target) || v > r->per_client) {
			snprintf(me->err, sizeof(me->err), "readiness before the store (%llu < %llu)",
				 (unsigned long long)v, (unsigned long long)target);
			rc = 1;
			break;
		}
		/* stores that landed after the wake (while this thread ran) were seen at t2 */
		uint64_t t2 = now_ns();
		for (uint64_t j = target; j <= v; j++) {
			uint64_t s = __atomic_load_n(&t0[j], __ATOMIC_ACQUIRE);
			lat[nlat++] = s <= t1 ? t1 - s : t2 - s;
		}
		consumed = v;
	}
	me->waiter_cpu_ns = thread_cpu_ns() - cpu0;
	me->completions = consumed;
	me->nlat = nlat;
	if (re) {
		me->reactor_cpu_ns = reactor_stop(re);
		re = NULL;
	}
	__atomic_fetch_add(&r->sh->done, 1, __ATOMIC_ACQ_REL);
	futex_wake(&r->sh->done, 1);
	futex_wait_ge(&r->sh->finish, 1, 6ull * BENCH_HANG_MS * 1000000ull);
out:
	if (re)
		reactor_stop(re);
	if (memfd >= 0)
		close(memfd);
	if (c.raw.fd >= 0)
		rc_close(&c);
	if (efd >= 0)
		close(efd);
	return rc;
}

/* ------------------------------------------------------------------ simulated GPU */

struct gpu {
	struct cpu_run *r;
	uint64_t **word; /* per client */
	uint64_t t_start;
	bool aligned;    /* all clients complete together */
	uint64_t cpu_ns;
};

static void *gpu_main(void *arg)
{
	struct gpu *g = arg;
	struct cpu_run *r = g->r;
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	for (uint64_t k = 1; k <= r->per_client; k++)
		for (unsigned i = 0; i < r->n; i++) {
			uint64_t phase = g->aligned ? 0 : r->period_ns * i / r->n;
			uint64_t due = g->t_start + phase + k * r->period_ns;
			if (now_ns() < due)
				sleep_until_ns(due);
			uint64_t *t0 = r->t0 + (size_t)i * (r->per_client + 1);
			__atomic_store_n(&t0[k], now_ns(), __ATOMIC_RELEASE);
			__atomic_store_n(g->word[i], k, __ATOMIC_RELEASE);
		}
	g->cpu_ns = thread_cpu_ns();
	return NULL;
}

/* ------------------------------------------------------------------ one row */

/* One row, summed over its rounds. */
struct cpu_result {
	bool ok, broken;
	uint64_t completions;
	double cpu_s, daemon_cpu_s, clients_cpu_s, gpu_cpu_s, wall_s;
	double per_k; /* CPU seconds per 1,000 completions */
	uint64_t *samples; /* latencies of all rounds */
	size_t nsamples, capsamples;
	struct lat_stats lat;
};

static int wait_counter(uint32_t *ctr, uint32_t want, unsigned timeout_ms)
{
	return futex_wait_ge(ctr, want, (uint64_t)timeout_ms * 1000000ull);
}

/* Receive the clients' memfds and map them; words[i] gets client i's word. */
static int map_client_words(struct cpu_run *r, int sock, uint64_t **words, void **maps, size_t *sizes)
{
	for (unsigned k = 0; k < r->n; k++) {
		struct pollfd p = { .fd = sock, .events = POLLIN };
		if (poll(&p, 1, BENCH_HANG_MS) <= 0)
			return -ETIMEDOUT;
		uint32_t idx;
		int fd = -1;
		unsigned nfds = 0;
		ssize_t n = fdio_recv(sock, &idx, sizeof(idx), &fd, 1, &nfds, 0);
		if (n != sizeof(idx) || nfds != 1 || idx >= r->n || maps[idx]) {
			if (nfds)
				close(fd);
			return -EPROTO;
		}
		struct stat st;
		void *m = fstat(fd, &st) == 0 ? mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
					      : MAP_FAILED;
		close(fd);
		if (m == MAP_FAILED)
			return -errno;
		maps[idx] = m;
		sizes[idx] = (size_t)st.st_size;
		words[idx] = garuda_segment_word(m, 0);
	}
	return 0;
}

/* One round of one row: adds to res (res->broken on a broken run). */
static void run_round(struct bench *b, enum cpu_kind kind, const char *daemon_cfg, uint64_t period_ns,
		      unsigned duration_ms, struct cpu_result *res)
{
	struct cpu_run r = { .n = b->o.cpu_clients, .period_ns = period_ns, .kind = kind, .fd_sock = -1 };
	r.per_client = (unsigned)((uint64_t)duration_ms * 1000000ull / period_ns);
	r.bytes = sizeof(struct cpu_shm) + r.n * (sizeof(struct garuda_line) + sizeof(struct cpu_client)) +
		  (size_t)r.n * (2 * r.per_client + 1) * sizeof(uint64_t);
	r.sh = shm_alloc(r.bytes);
	uint64_t **words = calloc(r.n, sizeof(*words));
	void **maps = calloc(r.n, sizeof(*maps));
	size_t *sizes = calloc(r.n, sizeof(*sizes));
	pid_t *pids = calloc(r.n, sizeof(*pids));
	int sp[2] = { -1, -1 };
	struct gd_daemon d = { .pid = -1, .ctl_fd = -1 };
	bool daemon = kind == CPU_GARUDA;
	unsigned started = 0;
	bool ok = false;
	if (!r.sh || !words || !maps || !sizes || !pids ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		bench_fail(b, "cpu: out of memory or fds");
		goto out;
	}
	r.words = (struct garuda_line *)(r.sh + 1);
	r.cl = (struct cpu_client *)(r.words + r.n);
	r.t0 = (uint64_t *)(r.cl + r.n);
	r.lat = r.t0 + (size_t)r.n * (r.per_client + 1);
	r.fd_sock = sp[1];
	if (daemon && bd_start(b, &d, daemon_cfg) < 0)
		goto out;
	r.sock = d.sock;
	for (; started < r.n; started++) {
		r.idx = started;
		pids[started] = child_start(client_main, &r);
		if (pids[started] < 0)
			break;
	}
	ok = started == r.n;
	if (ok && daemon)
		ok = map_client_words(&r, sp[0], words, maps, sizes) == 0;
	else if (ok)
		for (unsigned i = 0; i < r.n; i++)
			words[i] = &r.words[i].word[0];
	ok = ok && wait_counter(&r.sh->ready, r.n, BENCH_HANG_MS) == 0;
	struct proc_sample p0 = { 0 }, p1 = { 0 };
	if (ok) {
		if (daemon)
			proc_read(d.pid, &p0);
		uint64_t w0 = now_ns();
		struct gpu g = { .r = &r, .word = words, .t_start = w0 + 20000000ull, .aligned = period_ns < 1000000 };
		pthread_t th;
		futex_set(&r.sh->start, 1);
		if (pthread_create(&th, NULL, gpu_main, &g) != 0) {
			bench_fail(b, "cpu: cannot start the simulated GPU");
			ok = false;
		} else {
			ok = wait_counter(&r.sh->done, r.n, duration_ms * 4 + 6 * BENCH_HANG_MS) == 0;
			uint64_t w1 = now_ns();
			if (daemon)
				proc_read(d.pid, &p1);
			pthread_join(th, NULL);
			res->wall_s += (double)(w1 - g.t_start) / 1e9;
			res->gpu_cpu_s += (double)g.cpu_ns / 1e9;
		}
	}
	futex_set(&r.sh->finish, 1);
	for (unsigned i = 0; i < started; i++)
		if (child_wait(pids[i], BENCH_HANG_MS) != 0) {
			ok = false;
			bench_fail(b, "cpu: client %u failed: %s", i, r.cl[i].err[0] ? r.cl[i].err : "died");
		}
	if (!ok && started == r.n)
		bench_fail(b, "cpu: the round did not complete");
	if (ok) {
		uint64_t waiter = 0, reactor = 0;
		for (unsigned i = 0; i < r.n; i++) {
			res->completions += r.cl[i].completions;
			waiter += r.cl[i].waiter_cpu_ns;
			reactor += r.cl[i].reactor_cpu_ns;
			size_t need = res->nsamples + r.cl[i].nlat;
			if (need > res->capsamples) {
				size_t cap = need * 2;
				uint64_t *ns = realloc(res->samples, cap * sizeof(*ns));
				if (!ns) {
					bench_fail(b, "cpu: out of memory");
					ok = false;
					break;
				}
				res->samples = ns;
				res->capsamples = cap;
			}
			memcpy(res->samples + res->nsamples, r.lat + (size_t)i * r.per_client,
			       r.cl[i].nlat * sizeof(uint64_t));
			res->nsamples += r.cl[i].nlat;
		}
		res->daemon_cpu_s += daemon ? (double)(p1.cpu_ns - p0.cpu_ns) / 1e9 : 0;
		res->clients_cpu_s += (double)(waiter + reactor) / 1e9;
	}
out:
	if (!ok)
		res->broken = true;
	for (unsigned i = 0; maps && i < r.n; i++)
		if (maps[i])
			munmap(maps[i], sizes[i]);
	if (sp[0] >= 0)
		close(sp[0]);
	if (sp[1] >= 0)
		close(sp[1]);
	free(words);
	free(maps);
	free(sizes);
	free(pids);
	if (d.pid > 0)
		bd_stop(b, &d);
	if (r.sh)
		shm_free(r.sh, r.bytes);
}

static void finish_row(struct cpu_result *res)
{
	res->ok = !res->broken && res->completions > 0;
	res->cpu_s = res->daemon_cpu_s + res->clients_cpu_s;
	res->per_k = res->completions ? res->cpu_s / ((double)res->completions / 1000.0) : NAN;
	lat_compute(res->samples, res->nsamples, &res->lat);
	free(res->samples);
	res->samples = NULL;
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
	       res->cpu_s, res->daemon_cpu_s, res->clients_cpu_s, res->gpu_cpu_s, res->per_k,
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
	cJSON_AddNumberToObject(o, "simulated_gpu_cpu_s_not_counted", res->gpu_cpu_s);
	cJSON_AddNumberToObject(o, "cpu_s_per_1000_completions", res->per_k);
	cJSON_AddItemToObject(o, "latency", lat_json(&res->lat));
	cJSON_AddItemToArray(rows, o);
}

int bench_cpu(struct bench *b)
{
	unsigned rounds = b->o.quick ? 1 : 5, per_round = b->o.cpu_ms / rounds;
	cJSON *sec = cJSON_AddObjectToObject(b->json, "cpu");
	cJSON_AddNumberToObject(sec, "clients", b->o.cpu_clients);
	cJSON_AddNumberToObject(sec, "duration_ms", b->o.cpu_ms);
	cJSON_AddNumberToObject(sec, "rounds", rounds);
	cJSON *rows = cJSON_AddArrayToObject(sec, "rows");
	cJSON *uncapped = cJSON_AddArrayToObject(sec, "reactor_if_each_had_a_cpu");
	char cfg_lat[160], cfg_eco[160];
	snprintf(cfg_lat, sizeof(cfg_lat), "{\"spin_us\":%u,\"max_sleep_us\":%u,\"scanners\":1}", b->o.spin_us,
		 b->o.max_sleep_us);
	snprintf(cfg_eco, sizeof(cfg_eco), "{\"spin_us\":0,\"max_sleep_us\":%u,\"scanners\":1}", b->o.max_sleep_us);

	printf("\n2. CPU cost: %u client processes, one stream each (CPU s; latency us, store -> wake;\n"
	       "   rows interleaved in %u rounds of %u ms)\n",
	       b->o.cpu_clients, rounds, per_round);
	printf("  %-28s %5s %7s %6s %7s %7s %7s %7s %8s %8s %8s %8s\n", "", "per", "compl", "wall", "cpu_s",
	       "daemon", "clients", "sim.gpu", "s/1000", "p50", "p99", "p99.9");
	static const uint64_t periods[] = { 1000000, 100000 };
	for (unsigned pi = 0; pi < 2; pi++) {
		struct cpu_result re = { 0 }, gl = { 0 }, ge = { 0 };
		for (unsigned k = 0; k < rounds; k++) {
			if (!re.broken)
				run_round(b, CPU_REACTOR, NULL, periods[pi], per_round, &re);
			if (!gl.broken)
				run_round(b, CPU_GARUDA, cfg_lat, periods[pi], per_round, &gl);
			if (!ge.broken)
				run_round(b, CPU_GARUDA, cfg_eco, periods[pi], per_round, &ge);
		}
		finish_row(&re);
		finish_row(&gl);
		finish_row(&ge);
		print_row(rows, "(c) per-process reactors", "c_reactor", periods[pi], &re, NULL);
		char label[64];
		snprintf(label, sizeof(label), "garuda eventfd, spin_us=%u", b->o.spin_us);
		print_row(rows, label, "garuda_latency_tuning", periods[pi], &gl, cfg_lat);
		print_row(rows, "garuda eventfd, spin_us=0", "garuda_spin0", periods[pi], &ge, cfg_eco);
		double r_c = re.ok ? re.per_k : NAN, r_l = gl.ok ? gl.per_k : NAN, r_e = ge.ok ? ge.per_k : NAN;
		/* each reactor spins whenever its stream has an arm out, i.e. all the time: with a
		 * core of its own it would burn one CPU per client over the whole run; this box
		 * caps that at its CPU count */
		double demand = re.ok ? b->o.cpu_clients * re.wall_s / ((double)re.completions / 1000.0) : NAN;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "period_us", (double)periods[pi] / 1e3);
		cJSON_AddNumberToObject(o, "reactor_uncapped_cpu_s_per_1000", demand);
		cJSON_AddItemToArray(uncapped, o);
		if (pi == 0) {
			b->keys.cpu_per_k_reactor_uncapped = demand;
			b->keys.cpu_per_k_reactor = r_c;
			b->keys.cpu_per_k_garuda = r_l;
			b->keys.cpu_per_k_garuda_eco = r_e;
		} else {
			b->keys.cpu_per_k_reactor_100us = r_c;
			b->keys.cpu_per_k_garuda_100us = r_l;
			b->keys.cpu_per_k_garuda_eco_100us = r_e;
		}
	}
	printf("  (per = stream period, us: at 1000 the clients' completions are spread over the period, at\n"
	       "   100 they land together; s/1000 = CPU seconds per 1,000 completions, counting garuda =\n"
	       "   daemon + waiter threads, (c) = waiter + reactor threads; sim.gpu = the thread that plays\n"
	       "   the GPU's stores, shown, not counted. Each reactor spins all the time: this box caps the\n"
	       "   %u of them at %ld CPUs, which is what (c) pays here; with a CPU each, (c) would cost\n"
	       "   %.4f s/1000 at 1 ms)\n",
	       b->o.cpu_clients, sysconf(_SC_NPROCESSORS_ONLN), b->keys.cpu_per_k_reactor_uncapped);
	return 0;
}
