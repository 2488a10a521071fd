/* wordwait.c — section 6, the row "spin step: hardware wait vs pause": one thread
 * waits for a word (alone on its cache line) that another thread of the process stores
 * every gap; the waiter's spin steps idle either in PAUSE (16 cpu_relax() between two
 * looks, as garudad's scanner) or parked in the hardware word wait (util/wordwait.h:
 * umwait, mwaitx, wfe; a step at most 20 us, as libgaruda's). Measured per way: the
 * store to wake latency (the storer stamps the clock, then stores with release; the
 * waiter reads the clock right after the load that saw the word) and the CPU time the
 * kernel charges the waiting thread over the run (a hardware wait keeps the thread
 * running as far as the kernel knows: the saving is the core's power and an SMT
 * sibling's share, not this figure). Where the CPU has no hardware word wait (or
 * GARUDA_WORDWAIT=off), the row says "not available on this CPU" and shows pause
 * alone. No daemon. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "wordwait.h"

#define WW_GAP_NS 50000ull    /* between the waiter's start and the store */
#define WW_STEP_NS 20000ull   /* the longest hardware park of one step */

enum ww_way { WW_PAUSE, WW_HARDWARE };

struct ww_run {
	enum ww_way way;
	const struct wordwait *w;
	unsigned n;
	uint64_t *word;             /* 64-byte aligned, alone on its line */
	uint64_t *t0;               /* [1..n]: the storer's stamps */
	uint64_t *lat;              /* [1..n]: store to wake */
	_Atomic unsigned waiting;   /* the sequence the waiter waits for now */
	_Atomic bool stop;          /* the waiter gave up (a hang): the storer ends */
	uint64_t parks;             /* hardware parks */
	uint64_t cpu_ns, wall_ns;   /* the waiter's, over the run */
	bool hung;
};

static void *storer_main(void *arg)
{
	struct ww_run *r = arg;
	for (unsigned i = 1; i <= r->n; i++) {
		/* the waiter is in its wait before the gap starts */
		while (atomic_load_explicit(&r->waiting, memory_order_acquire) < i) {
			if (atomic_load_explicit(&r->stop, memory_order_relaxed))
				return NULL;
			sleep_ns(2000);
		}
		sleep_ns(WW_GAP_NS);
		__atomic_store_n(&r->t0[i], now_ns(), __ATOMIC_RELAXED);
		__atomic_store_n(r->word, (uint64_t)i, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* the waiter: this thread */
static void wait_all(struct ww_run *r)
{
	uint64_t cpu0 = thread_cpu_ns(), wall0 = now_ns();
	for (unsigned i = 1; i <= r->n && !r->hung; i++) {
		atomic_store_explicit(&r->waiting, i, memory_order_release);
		uint64_t give_up = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
		for (unsigned k = 0;; k++) {
			uint64_t v = __atomic_load_n(r->word, __ATOMIC_ACQUIRE);
			if (v >= i) {
				uint64_t t1 = now_ns();
				r->lat[i] = t1 - __atomic_load_n(&r->t0[i], __ATOMIC_RELAXED);
				break;
			}
			if (r->way == WW_HARDWARE) {
				uint64_t t = now_ns();
				if (t >= give_up) {
					r->hung = true;
					break;
				}
				/* watch the line, look again (a store since the load ends the step),
				 * park: wfe only in steps of its bound */
				uint64_t step = r->w->min_park_ns > WW_STEP_NS ? r->w->min_park_ns : WW_STEP_NS;
				wordwait_arm(r->w, r->word);
				if (__atomic_load_n(r->word, __ATOMIC_ACQUIRE) == v)
					r->parks += (uint64_t)wordwait_park(r->w, step);
			} else {
				for (int j = 0; j < 16; j++)
					cpu_relax();
				if ((k & 4095) == 0 && now_ns() >= give_up) {
					r->hung = true;
					break;
				}
			}
		}
	}
	r->cpu_ns = thread_cpu_ns() - cpu0;
	r->wall_ns = now_ns() - wall0;
}

/* One way; 0, or -1 after bench_fail (a broken run) */
static int run_way(struct bench *b, struct ww_run *r, struct lat_stats *st)
{
	r->word = aligned_alloc(64, 64);
	r->t0 = calloc(r->n + 1, sizeof(*r->t0));
	r->lat = calloc(r->n + 1, sizeof(*r->lat));
	int rc = -1;
	if (!r->word || !r->t0 || !r->lat) {
		bench_fail(b, "spin step: out of memory");
		goto out;
	}
	memset(r->word, 0, 64);
	pthread_t t;
	int e = pthread_create(&t, NULL, storer_main, r);
	if (e) {
		bench_fail(b, "spin step: cannot start the storer: %s", strerror(e));
		goto out;
	}
	wait_all(r);
	atomic_store(&r->stop, true);
	pthread_join(t, NULL);
	if (r->hung) {
		bench_fail(b, "spin step (%s): a store never woke the waiter",
			   r->way == WW_HARDWARE ? "hardware wait" : "pause");
		goto out;
	}
	lat_compute(r->lat + 1, r->n, st);
	rc = 0;
out:
	free(r->word);
	free(r->t0);
	free(r->lat);
	r->word = NULL;
	return rc;
}

/* The word wait this run (and libgaruda in this environment) would use */
const struct wordwait *bench_wordwait(void)
{
	const char *env = getenv("GARUDA_WORDWAIT");
	bool on = true;
	if (env && *env && wordwait_mode_parse(env, &on) < 0)
		on = true; /* libgaruda refuses the connect; the bench reports auto */
	return on ? wordwait_system() : wordwait_off();
}

int bench_wordwait_section(struct bench *b)
{
	cJSON *sec = cJSON_AddObjectToObject(b->json, "wordwait");
	const struct wordwait *w = bench_wordwait();
	bool hw = w->variant != WORDWAIT_SPIN;
	unsigned n = b->o.quick ? 2000 : 20000;
	cJSON_AddStringToObject(sec, "variant", wordwait_variant_name(w->variant));
	cJSON_AddStringToObject(sec, "detail", w->detail);
	cJSON_AddNumberToObject(sec, "waits", n);
	cJSON_AddNumberToObject(sec, "gap_us", (double)WW_GAP_NS / 1e3);
	printf("\n6. Spin step: one thread waits for a word another stores %llu us after it started, %u times;\n"
	       "   idle in PAUSE (16 per look) or parked in the hardware word wait (steps of at most %llu us)\n",
	       (unsigned long long)(WW_GAP_NS / 1000), n, (unsigned long long)(WW_STEP_NS / 1000));
	printf("  %-36s %s\n", "", "store->wake p50 / p99 us, waiter CPU (share of wall), steps parked");

	struct ww_run p = { .way = WW_PAUSE, .w = w, .n = n };
	struct lat_stats ps;
	if (run_way(b, &p, &ps))
		return -1;
	double pcpu = p.wall_ns ? (double)p.cpu_ns / (double)p.wall_ns : 0;
	cJSON *pj = lat_json(&ps);
	cJSON_AddNumberToObject(pj, "waiter_cpu_share", pcpu);
	cJSON_AddItemToObject(sec, "pause", pj);

	if (!hw) {
		cJSON_AddBoolToObject(sec, "available", false);
		printf("  %-36s not available on this CPU (%s: %s); pause alone: %.2f / %.2f us, CPU %.0f%%\n",
		       "spin step: hardware wait vs pause", wordwait_variant_name(w->variant), w->detail,
		       ps.p50 / 1e3, ps.p99 / 1e3, pcpu * 100);
		return 0;
	}
	struct ww_run h = { .way = WW_HARDWARE, .w = w, .n = n };
	struct lat_stats hs;
	if (run_way(b, &h, &hs))
		return -1;
	double hcpu = h.wall_ns ? (double)h.cpu_ns / (double)h.wall_ns : 0;
	cJSON_AddBoolToObject(sec, "available", true);
	cJSON *hj = lat_json(&hs);
	cJSON_AddNumberToObject(hj, "waiter_cpu_share", hcpu);
	cJSON_AddNumberToObject(hj, "parks", (double)h.parks);
	cJSON_AddItemToObject(sec, "hardware", hj);
	printf("  %-36s %s %.2f / %.2f us, CPU %.0f%%, %llu parked  vs  pause %.2f / %.2f us, CPU %.0f%%\n",
	       "spin step: hardware wait vs pause", wordwait_variant_name(w->variant), hs.p50 / 1e3,
	       hs.p99 / 1e3, hcpu * 100, (unsigned long long)h.parks, ps.p50 / 1e3, ps.p99 / 1e3, pcpu * 100);
	printf("  (%s: %s; the kernel charges a parked thread as running)\n", wordwait_variant_name(w->variant),
	       w->detail);
	return 0;
}
