/* plans.c — benchmark 5 (issue 11): wait plans against real kernel lengths.
 *
 * A "stream" is a forked process that, completion after completion, arms its word,
 * launches a simulated kernel and waits for readiness. The kernel is a producer
 * process of its own (the host backend's GPU): woken by the stream's launch, it
 * sleeps the kernel's length, takes t0, release-stores the sequence number into the
 * word (and, for the eventfd row, writes the stream's eventfd). The stream takes t1
 * right after its wait returns, checks the word reached the target, and records
 * t1 - t0 (store -> wake). The producer's CPU is the "GPU's" and is not counted.
 *
 * Kernels: fixed 100 us, 1 ms, 2 ms, 10 ms; 2 ms +-10 % (uniform); a bimodal mix (a
 * 30 ms prefill then three 8 ms decodes, repeated). 1 stream and 16 streams. Pipelined
 * (garudad's poll and +predict rows): 2 ms kernels, 4 and 10 queued per stream per
 * round (armed together, launched together, run back to back by the producer, their
 * readiness taken in order), 1 and 4 streams. Long kernels (issue 29, full mode only,
 * the poll and +predict rows' daemons): one stream of three 10 s kernels (run_long).
 *
 * Rows, in one run:
 *   spin      the stream spins on the word itself (the floor of detection)
 *   efd       the producer writes an eventfd right after the store; the stream
 *             blocks in poll() (the cross-process delivery floor)
 *   reactor   per-process reactor faithful to cuda-async: a thread per process
 *             spins 10,000 passes over what is armed, then sched_yield()s every
 *             pass; parks on a futex when nothing is armed; wakes the stream through
 *             its eventfd
 *   g-poll    garudad with plan poll (a scanner that always spins)
 *   g-ladder  garudad with flag:park_us=50,backstop_us=1000 (the old ladder)
 *   g-predict garudad with its default plan (+predict)
 *   g-uring   garudad with its default plan, the stream arming the DOORBELL form and
 *             awaiting the segment's doorbell in an io_uring ring (IORING_OP_FUTEX_WAIT,
 *             Linux 6.7; skipped where the kernel lacks it): no eventfd at all
 *   lg-predict libgaruda's client-side +predict: the stream is a libgaruda client of
 *             the g-predict daemon with an eventfd stream whose plan is LG_PLAN
 *             (flag, +predict with the seed's parameters), waiting with
 *             garuda_stream_wait(): it sleeps to its own estimator's predicted
 *             completion less the margin, then spins on the process's view of the
 *             word, then parks on the eventfd garudad makes readable. Its "GPU" is
 *             a host stream (a worker thread of the stream process: sleeps the
 *             kernel with 1 ns timer slack, stamps t0, stores), whose CPU is
 *             subtracted from the stream's (lgwait.c). Built only with libgaruda.
 * g- rows use the eventfd form over the raw protocol (raw.h); in the bimodal mix
 * the stream names its two kernel kinds as points 1 and 2 (feature POINTS), as an
 * inference server would name prefill and decode. libgaruda's estimator has one
 * point per stream, so in the bimodal mix its client-side prediction is the 8 ms
 * decode's and a prefill is spun on for its last ~22 ms.
 *
 * Per cell: store -> wake p50 and p99 (the first WARMUP completions of each stream
 * are not counted: a cold point is learning), daemon CPU per completion (garudad's
 * /proc delta; over the whole cell, and over its steady window, steady_watch(): the
 * completions the latency figures count, which every CPU ratio against poll and
 * replay's busy use, so that a cold point's learning weighs on neither) and total CPU
 * per completion (daemon + stream processes, producers excluded), and of the daemon's
 * the scanner's deliveries (deliver_cpu_ns). Targets are ratios of cells of this run;
 * each CPU target is followed by its floor (floor_ratio: what no plan avoids, from the
 * poll cell). Next to each garudad row's daemon
 * CPU per completion against the poll row's on the same cell, the line shows replay's
 * busy / poll (proto/replay.h: the same watcher, plan and estimator on a simulated
 * clock) over a trace of the cell's shape (replay_cell: the same streams, kernels and
 * queue depth); issue 29 wants the two within 25 %, and a table after the targets
 * compares them (never failing). GARUDA_BENCH_PLAN_ROWS (row
 * numbers 0-7, e.g. "3,5") runs only some rows, GARUDA_BENCH_PLAN_CELLS (e.g.
 * "16x1ms,16x10ms") only some unpipelined cells, GARUDA_BENCH_PREDICT_PLAN replaces
 * the +predict row's plan (the daemon's default) to compare plans (development).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"
#include "benchd.h"
#include "cpu.h"
#include "lat.h"
#include "raw.h"
#include "replay.h"
#include "seq.h"
#include "uring_futex.h"

#define PLAN_MAX_STREAMS 16
#define WARMUP 16

/* (K_10S runs only in the long-kernel cell, run_long: not in the table's loops) */
enum kernel { K_100US, K_1MS, K_2MS, K_10MS, K_JITTER, K_BIMODAL, K_N_, K_10S = K_N_ };
static const char *const kernel_name[K_N_ + 1] = { "100us", "1ms", "2ms", "10ms", "2ms+-10%", "30ms/8ms", "10s" };

enum prow { R_SPIN, R_EFD, R_REACTOR, R_GPOLL, R_GLADDER, R_GPREDICT, R_LGPREDICT, R_GURING, R_N_ };
static const char *const row_name[R_N_] = { "spin reader",     "eventfd x-process", "reactor (cuda-async)",
					    "garuda poll",     "garuda ladder",     "garuda +predict",
					    "libgaruda +predict (client)", "garuda +predict, io_uring bell" };
/* the libgaruda row's stream plan: flag (park on the eventfd, backstop 1 s) and the
 * seed's +predict parameters, as the reactor and garudad use them */
#define LG_PLAN                                                                              \
	"flag:park_us=10000,backstop_us=1000000+predict:margin_us=150,min_sleep_us=20,"      \
	"max_sleep_us=50000,window=8"
static const char *const row_plan[R_N_] = {
	[R_GPOLL] = "poll",
	[R_GLADDER] = "flag:park_us=50,backstop_us=1000",
	[R_GPREDICT] = NULL, /* the daemon's default */
	[R_GURING] = NULL,   /* the daemon's default; the stream awaits the doorbell */
};

static uint64_t kernel_ns(enum kernel k, unsigned i, uint64_t *rng)
{
	switch (k) {
	case K_100US: return 100000;
	case K_1MS: return 1000000;
	case K_2MS: return 2000000;
	case K_10MS: return 10000000;
	case K_10S: return 10000000000ull;
	case K_JITTER: {
		*rng ^= *rng << 13;
		*rng ^= *rng >> 7;
		*rng ^= *rng << 17;
		return 1800000 + *rng % 400001;
	}
	default: return i % 4 == 0 ? 30000000 : 8000000;
	}
}

/* shared between a stream, its producer and the parent */
struct pstream {
	_Alignas(64) uint32_t go;   /* stream -> producer: sequence launched; n + 1: exit */
	_Alignas(64) uint32_t fin;  /* st[0]'s: the cell's streams past their last completion */
	_Alignas(64) uint32_t err;
	_Alignas(64) uint64_t word; /* baselines' word (garuda rows use the segment's) */
	uint64_t cpu_ns;            /* the stream process's CPU (producer excluded) */
	uint64_t lg[4];             /* libgaruda row: its estimator's exact, censored,
				     * sleeps, spin_outs */
	uint64_t overran;           /* the producer's kernels past WARMUP whose sleep ended
				     * KERNEL_STALL_NS or more late (the host's stalls) */
	char msg[160];
	/* then t0[n + 1], lat[n + 1], kns[n + 1], arm[n + 1] */
};

struct pcell {
	enum prow row;
	enum kernel k;
	unsigned streams, n;
	unsigned depth; /* kernels queued per stream per round (1: one at a time) */
	const char *sock;
	struct pstream *st[PLAN_MAX_STREAMS];
	size_t bytes;
};

static uint64_t *t0_of(struct pstream *s) { return (uint64_t *)(s + 1); }
static uint64_t *lat_of(struct pstream *s, unsigned n) { return t0_of(s) + n + 1; }
static uint64_t *kns_of(struct pstream *s, unsigned n) { return t0_of(s) + 2 * (n + 1); }
/* when the stream sent each ARM (garuda rows; t0 is when its store landed): the cell's
 * own completion trace, which replay runs as well (live_trace) */
static uint64_t *arm_of(struct pstream *s, unsigned n) { return t0_of(s) + 3 * (n + 1); }

static void pfail(struct pstream *s, const char *what, long v)
{
	if (__atomic_exchange_n(&s->err, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(s->msg, sizeof(s->msg), "%s (%ld)", what, v);
	futex_set(&s->go, UINT32_MAX);
}

/* ---------------------------------------------------------------- producer */

/* a kernel whose sleep ends this late or later ran long through a stall of the host (the
 * "GPU" here is a process that sleeps): the timer stalls' bound (TIMER_STALL_BUCKET) */
#define KERNEL_STALL_NS 500000ull

struct producer {
	struct pstream *s;
	unsigned n;
	uint64_t *word;
	int efd, close_fd;
};

static int producer_main(void *arg)
{
	struct producer *p = arg;
	if (p->close_fd >= 0)
		close(p->close_fd);
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	uint64_t *kns = kns_of(p->s, p->n), *t0 = t0_of(p->s);
	for (uint32_t i = 1; i <= p->n; i++) {
		if (futex_wait_ge(&p->s->go, i, (uint64_t)BENCH_HANG_MS * 1000000ull) < 0) {
			pfail(p->s, "producer: no launch came", (long)i);
			return 1;
		}
		if (__atomic_load_n(&p->s->err, __ATOMIC_ACQUIRE))
			return 0;
		uint64_t slept = now_ns();
		sleep_ns(kns[i]);
		t0[i] = now_ns();
		__atomic_store_n(p->word, (uint64_t)i, __ATOMIC_RELEASE);
		if (i > WARMUP && t0[i] - slept >= kns[i] + KERNEL_STALL_NS)
			p->s->overran++; /* read by the parent once the producer has exited */
		if (p->efd >= 0) {
			uint64_t one = 1;
			if (write(p->efd, &one, sizeof(one)) != sizeof(one)) {
				pfail(p->s, "producer: eventfd write failed", (long)i);
				return 1;
			}
		}
	}
	/* its exit (an address space torn down) waits until the cell's last wake is
	 * measured (cell_hold) */
	futex_wait_ge(&p->s->go, p->n + 1, (uint64_t)BENCH_HANG_MS * 1000000ull);
	return 0;
}

/* ---------------------------------------------------------------- reactor (c) */

/* cuda-async's reactor, one word: spin 10,000 passes, then yield every pass; park
 * on a futex when nothing is armed. */
struct mini_reactor {
	_Alignas(64) uint32_t armed_seq; /* futex: bumped per arm */
	uint32_t stop;
	const uint64_t *word;
	uint64_t target;
	int efd;
	uint32_t done_seq;
};

static void *reactor_main(void *arg)
{
	struct mini_reactor *r = arg;
	uint32_t seen = 0;
	for (;;) {
		uint32_t a = __atomic_load_n(&r->armed_seq, __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
			return NULL;
		if (a == seen) { /* nothing armed: park */
			futex_wait(&r->armed_seq, a, (uint64_t)BENCH_HANG_MS * 1000000ull);
			continue;
		}
		uint64_t target = r->target;
		for (unsigned pass = 0;; pass++) {
			if (garuda_reached(__atomic_load_n(r->word, __ATOMIC_ACQUIRE), target))
				break;
			if (__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
				return NULL;
			if (pass >= 10000)
				sched_yield();
			else
				cpu_relax();
		}
		uint64_t one = 1;
		if (write(r->efd, &one, sizeof(one)) != sizeof(one))
			return NULL;
		seen = a;
	}
}

/* ---------------------------------------------------------------- stream */

struct stream_arg {
	struct pcell *c;
	unsigned idx;
};

/* readiness on fd within BENCH_HANG_MS past a kernel of kernel_ns */
static int wait_in(int fd, uint64_t kernel_ns)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;
	while ((n = poll(&p, 1, BENCH_HANG_MS + (int)(kernel_ns / 1000000))) < 0 && errno == EINTR)
		;
	return n > 0 ? 0 : -ETIMEDOUT;
}

/* the libgaruda row's stream (lgwait.c does the libgaruda part) */
static int lg_stream_main(struct pcell *c, struct pstream *s)
{
#ifdef HAVE_LIBGARUDA
	struct plan_lgstream a = { .sock = c->sock, .plan = LG_PLAN, .n = c->n,
				   .kns = kns_of(s, c->n), .t0 = t0_of(s), .lat = lat_of(s, c->n),
				   .cpu_ns = &s->cpu_ns, .msg = s->msg, .msg_cap = sizeof(s->msg) };
	int r = plan_lgstream_run(&a);
	s->lg[0] = a.exact;
	s->lg[1] = a.censored;
	s->lg[2] = a.sleeps;
	s->lg[3] = a.spin_outs;
	if (r < 0)
		__atomic_store_n(&s->err, 1, __ATOMIC_RELEASE);
	return r < 0;
#else
	(void)c;
	snprintf(s->msg, sizeof(s->msg), "built without libgaruda");
	return 1;
#endif
}

/* The end of a stream's cell: it waits until every stream of the cell has taken its
 * last completion (or failed), then lets its producer exit. Without it the streams'
 * and producers' exits (address spaces torn down, garudad's disconnects) fall on the
 * other streams' last completions: in the 4-stream pipelined cells those were the 4
 * latest of 176 (255-572 us late against a p50 of 28-37), so the p99 measured the
 * teardown, not the daemon. */
static void cell_hold(struct pcell *c, struct pstream *s)
{
	uint32_t *fin = &c->st[0]->fin;
	if (__atomic_add_fetch(fin, 1, __ATOMIC_ACQ_REL) >= c->streams)
		futex_wake(fin, INT32_MAX);
	else
		futex_wait_ge(fin, c->streams, (uint64_t)BENCH_HANG_MS * 1000000ull);
	futex_set(&s->go, c->n + 1);
}

static int stream_main(void *arg)
{
	struct stream_arg *a = arg;
	struct pcell *c = a->c;
	struct pstream *s = c->st[a->idx];
	if (c->row == R_LGPREDICT)
		return lg_stream_main(c, s);
	unsigned n = c->n;
	uint64_t *lat = lat_of(s, n), *t0 = t0_of(s);
	uint64_t cpu0 = process_cpu_ns();
	bool garuda = c->row >= R_GPOLL;
	bool bell = c->row == R_GURING; /* the doorbell form, awaited in an io_uring ring */
	uint8_t form = bell ? GARUDA_FORM_DOORBELL : GARUDA_FORM_EVENTFD;
	struct rc rc = { .raw.fd = -1 };
	int efd = -1, e;
	uint64_t *word = &s->word;
	struct io_uring ring;
	if (bell && (e = io_uring_queue_init(4, &ring, 0))) {
		pfail(s, "io_uring_queue_init", e);
		return 1;
	}
	if (c->row != R_SPIN && !bell && (efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		pfail(s, "eventfd", errno);
		return 1;
	}
	if (garuda) {
		if ((e = rc_connect_features(&rc, c->sock, GARUDA_FEATURE_POINTS)) || (e = rc_segment_open(&rc, 1, true, NULL)) ||
		    (!bell && (e = rc_bind(&rc, 0, efd)))) {
			pfail(s, "stream: garudad set-up failed", e);
			return 1;
		}
		word = rc_word(&rc, 0);
	}
	struct mini_reactor mr = { .word = word, .efd = efd };
	pthread_t rth;
	if (c->row == R_REACTOR && pthread_create(&rth, NULL, reactor_main, &mr)) {
		pfail(s, "stream: reactor thread", EAGAIN);
		return 1;
	}
	struct producer p = { .s = s, .n = n, .word = word, .efd = c->row == R_EFD ? efd : -1,
			      .close_fd = rc.raw.fd };
	pid_t pp = child_start(producer_main, &p);
	if (pp < 0) {
		pfail(s, "stream: fork", pp);
		return 1;
	}
	int rc_ = 0;
	uint64_t readiness = 0; /* eventfd counts so far */
	/* a round: arm `depth` sequences, launch them all (the producer runs them back to
	 * back, in stream order), then take their readiness in order: one wake may cover
	 * several (the eventfd counts), each is timed from its own store */
	for (uint32_t i = 1; i <= n && !rc_; i += c->depth) {
		uint32_t last = i + c->depth - 1 <= n ? i + c->depth - 1 : n;
		for (uint32_t j = i; j <= last && garuda; j++) {
			/* the bimodal mix names its two kernel kinds as two points */
			uint32_t point = c->k == K_BIMODAL ? (kns_of(s, n)[j] > 10000000 ? 1 : 2) : 0;
			if ((e = rc_arm_point(&rc, 0, j, j, form, point))) {
				pfail(s, "stream: ARM failed", e);
				rc_ = 1;
				break;
			}
			arm_of(s, n)[j] = now_ns();
		}
		if (rc_)
			break;
		if (c->row == R_REACTOR) {
			mr.target = last;
			__atomic_fetch_add(&mr.armed_seq, 1, __ATOMIC_RELEASE);
			futex_wake(&mr.armed_seq, 1);
		}
		futex_set(&s->go, last); /* launch the kernels */
		for (uint32_t j = i; j <= last && !rc_;) {
			if (c->row == R_SPIN || bell) {
				/* spin on the word, or (bell) take the doorbell's value, look at the
				 * word, wait in the ring while the doorbell holds that value */
				uint32_t *db = bell ? &rc.seg.map->hdr.doorbell : NULL;
				uint64_t dl = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
				for (;;) {
					uint32_t v = db ? __atomic_load_n(db, __ATOMIC_ACQUIRE) : 0;
					if (garuda_reached(__atomic_load_n(word, __ATOMIC_ACQUIRE), j))
						break;
					uint64_t now = now_ns();
					if (now > dl || __atomic_load_n(&s->err, __ATOMIC_RELAXED)) {
						pfail(s, "stream: no completion", (long)j);
						rc_ = 1;
						break;
					}
					if (db)
						uring_bell_wait(&ring, db, v, dl - now);
					else
						cpu_relax();
				}
			} else if (wait_in(efd, kns_of(s, n)[j]) < 0) {
				pfail(s, "stream: no readiness", (long)j);
				rc_ = 1;
			}
			uint64_t t1 = now_ns();
			if (rc_)
				break;
			if (efd >= 0) {
				uint64_t v;
				if (read(efd, &v, sizeof(v)) != sizeof(v)) {
					pfail(s, "stream: eventfd read", errno);
					rc_ = 1;
				}
				readiness += v;
			}
			/* every +1 is one fired target, in order: the word has reached them all.
			 * A count may come after its sequence was taken (its landing seen with
			 * an earlier one): the next wake then finds nothing new */
			uint64_t w = __atomic_load_n(word, __ATOMIC_ACQUIRE);
			if (efd >= 0 && !garuda_reached(w, readiness)) {
				pfail(s, "stream: readiness before the store", (long)readiness);
				rc_ = 1;
			}
			/* the producer's t0 is written before its store; wait for it to be visible */
			for (; j <= last && garuda_reached(w, j); j++)
				lat[j] = t1 - __atomic_load_n(&t0[j], __ATOMIC_ACQUIRE);
		}
	}
	cell_hold(c, s);
	if (c->row == R_REACTOR) {
		__atomic_store_n(&mr.stop, 1, __ATOMIC_RELEASE);
		__atomic_fetch_add(&mr.armed_seq, 1, __ATOMIC_RELEASE);
		futex_wake(&mr.armed_seq, 1);
		pthread_join(rth, NULL);
	}
	if (child_wait(pp, BENCH_HANG_MS) != 0 && !rc_) {
		pfail(s, "stream: producer failed", 0);
		rc_ = 1;
	}
	s->cpu_ns = process_cpu_ns() - cpu0;
	if (bell)
		io_uring_queue_exit(&ring);
	if (garuda)
		rc_close(&rc);
	if (efd >= 0)
		close(efd);
	return rc_;
}

/* ---------------------------------------------------------------- one cell */

/* the scanners' wait counters, summed */
struct pwaits {
	double sleeps, spins, exact, censored, late_wakes, arm_wakes, arm_nowakes;
	double arms_taken, take_ns; /* the ARMs the scanners took, their send -> take summed */
	double deliver_cpu_ns; /* the scanners' CPU writing readiness (sampled; part of the floor) */
	double hist[24]; /* detection bound (store -> scanner saw it), log2 ns buckets */
	double timer[24]; /* timed sleeps that ran to their time, by lateness (same buckets) */
};

/* timed wakes this late or later are stalls: bucket 19 holds [2^19, 2^20) ns, so from
 * ~0.5 ms on */
#define TIMER_STALL_BUCKET 19

/* p50 of a detection-bound histogram delta, as the bucket's upper edge in us */
static double detect_p50_us(const struct pwaits *a, const struct pwaits *b)
{
	double total = 0, cum = 0;
	for (int i = 0; i < 24; i++)
		total += b->hist[i] - a->hist[i];
	for (int i = 0; i < 24 && total > 0; i++) {
		cum += b->hist[i] - a->hist[i];
		if (cum >= total / 2)
			return ldexp(1, i + 1) / 1e3;
	}
	return NAN;
}

/* h[] += the counts of scanner s's log2 histogram key (control plane: scanners) */
static void add_buckets(double h[24], const cJSON *s, const char *key)
{
	const cJSON *bk, *bl = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, key), "buckets");
	int i = 0;
	cJSON_ArrayForEach(bk, bl)
	{
		if (i < 24)
			h[i] += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(bk, "count"));
		i++;
	}
}

static void read_waits(struct gd_daemon *d, struct pwaits *w)
{
	memset(w, 0, sizeof(*w));
	cJSON *r = d ? gd_control_keep(d, "{\"request\":\"scanners\"}") : NULL;
	const cJSON *it, *list = r ? cJSON_GetObjectItemCaseSensitive(r, "scanners") : NULL;
	cJSON_ArrayForEach(it, list)
	{
#define F(k) w->k += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, #k))
		F(sleeps);
		F(spins);
		F(exact);
		F(censored);
		F(late_wakes);
		F(arm_wakes);
		F(arm_nowakes);
		F(arms_taken);
		F(take_ns);
		F(deliver_cpu_ns);
#undef F
		add_buckets(w->hist, it, "wake_latency");
		add_buckets(w->timer, it, "timer_lateness");
	}
	cJSON_Delete(r);
}

struct presult {
	struct pwaits waits; /* per completion */
	double lg[4]; /* libgaruda row: its estimators' exact, censored, sleeps, spin_outs
		       * per completion */
	double detect_p50_us; /* garuda rows: the scanner's detection bound, p50 (bucket edge) */
	/* garuda rows, over the whole cell: the scanner's timed sleeps that ran to their
	 * time, and of them those that woke TIMER_STALL_BUCKET's bound or more late (the
	 * host's stalls, which a sleeping plan's p99 takes in and poll's does not) */
	double timed_wakes, timer_stalls;
	/* every row: kernels past WARMUP, and of them those the producer's sleep ran
	 * KERNEL_STALL_NS or more long (host stalls in the simulated GPU: a late store
	 * that poll's p99 and a sleeping plan's take in alike, but that stretches the
	 * kernel past a predicted window) */
	double kernels, kernel_stalls;
	bool ok;
	struct lat_stats lat;
	double daemon_us, total_us; /* CPU per completion */
	double scan_us;             /* of daemon_us, the scanner threads' */
	double steady_us; /* daemon CPU per completion in the steady window (steady_watch();
			   * NAN: none, e.g. the libgaruda row): what vs_poll compares */
	double steady_scan_us; /* of it, the scanner threads' (the rest: the loop thread's) */
	double steady_wall_us; /* the window's wall time per completion */
	/* garudad rows but poll: daemon CPU per completion / the poll row's on the same
	 * cell, and replay's busy / poll on a trace of the cell's shape (NAN: none) */
	double vs_poll, replay_vs_poll;
	double replay_sleeps, replay_spins; /* replay's, per completion */
	double replay_arm_us, replay_spin_us, replay_spin_wall_us, replay_take_us; /* the costs of an ARM, a spin
								* step and an ARM's way to the
								* scanner replay ran at
								* (against_poll) */
	/* garudad rows that replay judges: the cell's own completion trace (each ARM's send,
	 * each store's landing: live_trace()), and replay's busy / poll on it (NAN: none) */
	struct garuda_replay_row *trace;
	size_t ntrace;
	double trace_vs_poll, trace_sleeps, trace_spins;
};

static unsigned cell_n(const struct bench *b, enum kernel k, unsigned streams, unsigned depth)
{
	if (depth > 1) /* pipelined rows: whole rounds */
		return (b->o.quick ? 160 : 480) / streams / depth * depth + depth * (WARMUP / depth + 1);
	unsigned n = k == K_10MS || k == K_BIMODAL ? 120 : k == K_100US ? 2000 : 600;
	if (b->o.quick)
		n = k == K_10MS || k == K_BIMODAL ? 48 : k == K_100US ? 400 : 150;
	if (streams > 1)
		n = n / 2 > WARMUP * 2 ? n / 2 : WARMUP * 2;
	return n;
}

/* The steady window of a live cell, the latency figures' own: from the moment every
 * stream has launched past its WARMUP (its warm-up completions are behind it) to the
 * first stream's last launch (one of them ends). The daemon's CPU and its scanner
 * counters are read at both ends; the launches between them (each stream's go) count
 * the completions in it. The parent looks every STEADY_LOOK_NS; replay takes the same
 * window on its trace (replay.h). Not for the libgaruda row: its streams launch on
 * their own. */
#define STEADY_LOOK_NS 2000000ull
struct steady {
	bool ok;
	struct proc_sample p0, p1;
	struct pwaits w0, w1;
	uint64_t t0, t1;   /* when p0 and p1 were read */
	uint64_t launched; /* in the window, all streams */
};

static void steady_watch(struct pcell *c, struct gd_daemon *d, uint64_t limit_ns, struct steady *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t end = now_ns() + limit_ns, go0 = 0;
	bool in = false;
	while (now_ns() < end) {
		uint64_t sum = 0;
		uint32_t lo = UINT32_MAX, hi = 0;
		for (unsigned i = 0; i < c->streams; i++) {
			if (__atomic_load_n(&c->st[i]->err, __ATOMIC_ACQUIRE))
				return; /* a broken stream: the cell says so */
			uint32_t g = __atomic_load_n(&c->st[i]->go, __ATOMIC_ACQUIRE);
			sum += g;
			lo = g < lo ? g : lo;
			hi = g > hi ? g : hi;
		}
		if (!in && hi >= c->n)
			return; /* one stream ended before all were past their warm-up: no window */
		if (!in && lo > WARMUP) {
			proc_read(d->pid, &out->p0);
			out->t0 = now_ns();
			read_waits(d, &out->w0);
			go0 = sum;
			in = true;
		} else if (in && hi >= c->n) {
			proc_read(d->pid, &out->p1);
			out->t1 = now_ns();
			read_waits(d, &out->w1);
			out->launched = sum - go0;
			out->ok = out->launched > 0;
			return;
		}
		sleep_ns(STEADY_LOOK_NS);
	}
}

/* One cell of n completions per stream (n > WARMUP); a stream still running after
 * per_ms per completion and 2 hang deadlines more is killed (a broken run). */
/* The cell as it ran, as a completion trace (proto/replay.h): stream i's word i + 1,
 * each row armed when the stream sent its ARM and stored when the producer's store
 * landed (the bimodal mix's two points as the stream named them). NULL trace: out of
 * memory (no column). GARUDA_BENCH_TRACE_DIR=DIR also writes it as a garuda-replay
 * trace. */
static void live_trace(const struct pcell *c, struct presult *out)
{
	size_t m = (size_t)c->streams * c->n;
	struct garuda_replay_row *rows = malloc(m * sizeof(*rows));
	if (!rows)
		return;
	for (unsigned i = 0, r = 0; i < c->streams; i++)
		for (unsigned j = 1; j <= c->n; j++, r++) {
			uint64_t kn = kns_of(c->st[i], c->n)[j];
			rows[r] = (struct garuda_replay_row){
				.word = i + 1, .point = c->k == K_BIMODAL ? (kn > 10000000 ? 1 : 2) : 0,
				.arm_ns = arm_of(c->st[i], c->n)[j], .store_ns = t0_of(c->st[i])[j] };
		}
	out->trace = rows;
	out->ntrace = m;
	/* GARUDA_BENCH_TRACE_DIR=DIR: each as a garuda-replay trace, DIR/KERNEL-STREAMSs-xDEPTH-ROW.csv
	 * (development: replay a live cell with other plans) */
	const char *dir = getenv("GARUDA_BENCH_TRACE_DIR");
	char path[512];
	if (!dir || snprintf(path, sizeof(path), "%s/%s-%us-x%u-%d.csv", dir, kernel_name[c->k], c->streams,
			     c->depth, (int)c->row) >= (int)sizeof(path))
		return;
	for (char *q = path + strlen(dir) + 1; *q; q++)
		if (*q == '/' || *q == '+')
			*q = '_';
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "# garuda-bench plans cell: %s, %u streams, %u queued, %s\nword,point,arm_ns,store_ns\n",
		kernel_name[c->k], c->streams, c->depth, row_name[c->row]);
	for (size_t i = 0; i < m; i++)
		fprintf(f, "%llu,%u,%llu,%llu\n", (unsigned long long)rows[i].word, rows[i].point,
			(unsigned long long)rows[i].arm_ns, (unsigned long long)rows[i].store_ns);
	fclose(f);
}

static int run_cell_n(struct bench *b, struct gd_daemon *d, enum prow row, enum kernel k, unsigned streams,
		      unsigned depth, unsigned n, unsigned per_ms, struct presult *out)
{
	memset(out, 0, sizeof(*out));
	out->vs_poll = out->replay_vs_poll = out->steady_us = out->trace_vs_poll = NAN;
	struct pcell c = { .row = row, .k = k, .streams = streams, .n = n, .depth = depth,
			   .sock = d ? d->sock : NULL };
	c.bytes = sizeof(struct pstream) + 4 * (c.n + 1) * sizeof(uint64_t);
	for (unsigned i = 0; i < streams; i++) {
		c.st[i] = shm_alloc(c.bytes);
		if (!c.st[i]) {
			bench_fail(b, "plans: out of shared memory");
			goto out;
		}
		uint64_t rng = 0x9e3779b97f4a7c15ull * (i + 1);
		for (unsigned j = 1; j <= c.n; j++)
			kns_of(c.st[i], c.n)[j] = kernel_ns(k, j + i, &rng);
	}
	struct proc_sample p0 = { 0 }, p1 = { 0 };
	struct pwaits w0, w1;
	read_waits(d, &w0);
	if (d)
		proc_read(d->pid, &p0);
	pid_t pid[PLAN_MAX_STREAMS];
	struct stream_arg args[PLAN_MAX_STREAMS];
	for (unsigned i = 0; i < streams; i++) {
		args[i] = (struct stream_arg){ .c = &c, .idx = i };
		pid[i] = child_start(stream_main, &args[i]);
	}
	struct steady sw = { 0 };
	if (d && row != R_LGPREDICT)
		steady_watch(&c, d, ((uint64_t)c.n * per_ms + 2 * BENCH_HANG_MS) * 1000000ull, &sw);
	bool ok = true;
	for (unsigned i = 0; i < streams; i++) {
		unsigned limit = c.n * per_ms + 2 * BENCH_HANG_MS;
		if (pid[i] < 0 || child_wait(pid[i], limit) != 0) {
			bench_fail(b, "plans: %s, %s, stream %u broke: %s", row_name[row], kernel_name[k], i,
				   c.st[i]->msg[0] ? c.st[i]->msg : "(no message)");
			ok = false;
		}
	}
	if (d)
		proc_read(d->pid, &p1);
	read_waits(d, &w1);
	if (!ok)
		goto out;
	size_t per = c.n - WARMUP, total = per * streams;
	uint64_t *all = malloc(total * sizeof(*all));
	if (!all)
		goto out;
	uint64_t cpu = 0;
	for (unsigned i = 0; i < streams; i++) {
		memcpy(all + i * per, lat_of(c.st[i], c.n) + 1 + WARMUP, per * sizeof(*all));
		cpu += c.st[i]->cpu_ns;
		out->kernels += per;
		out->kernel_stalls += (double)c.st[i]->overran;
		for (int j = 0; j < 4; j++)
			out->lg[j] += (double)c.st[i]->lg[j] / ((double)c.n * streams);
	}
	lat_compute(all, total, &out->lat);
	free(all);
	double compl = (double)c.n * streams;
	double dcpu = d ? (double)(p1.cpu_ns - p0.cpu_ns) : 0;
	out->daemon_us = dcpu / compl / 1e3;
	out->scan_us = d ? (double)(p1.scan_ns - p0.scan_ns) / compl / 1e3 : 0;
	out->total_us = (dcpu + (double)cpu) / compl / 1e3;
	out->detect_p50_us = detect_p50_us(&w0, &w1);
	for (int i = 0; i < 24; i++) {
		double dt = w1.timer[i] - w0.timer[i];
		out->timed_wakes += dt;
		if (i >= TIMER_STALL_BUCKET)
			out->timer_stalls += dt;
	}
	out->steady_us = NAN;
	if (sw.ok) { /* the scanner's counts too are the window's */
		out->steady_us = (double)(sw.p1.cpu_ns - sw.p0.cpu_ns) / (double)sw.launched / 1e3;
		out->steady_scan_us = (double)(sw.p1.scan_ns - sw.p0.scan_ns) / (double)sw.launched / 1e3;
		out->steady_wall_us = (double)(sw.t1 - sw.t0) / (double)sw.launched / 1e3;
		w0 = sw.w0;
		w1 = sw.w1;
		compl = (double)sw.launched;
	}
	out->waits = (struct pwaits){
		.sleeps = (w1.sleeps - w0.sleeps) / compl, .spins = (w1.spins - w0.spins) / compl,
		.exact = (w1.exact - w0.exact) / compl, .censored = (w1.censored - w0.censored) / compl,
		.late_wakes = (w1.late_wakes - w0.late_wakes) / compl,
		.arm_wakes = (w1.arm_wakes - w0.arm_wakes) / compl,
		.arm_nowakes = (w1.arm_nowakes - w0.arm_nowakes) / compl,
		.arms_taken = (w1.arms_taken - w0.arms_taken) / compl,
		.take_ns = (w1.take_ns - w0.take_ns) / compl,
		.deliver_cpu_ns = (w1.deliver_cpu_ns - w0.deliver_cpu_ns) / compl,
	};
	out->ok = true;
	if (row == R_GPOLL || row == R_GLADDER || row == R_GPREDICT || row == R_GURING)
		live_trace(&c, out);
out:
	for (unsigned i = 0; i < streams; i++)
		if (c.st[i])
			shm_free(c.st[i], c.bytes);
	return out->ok ? 0 : -1;
}

/* Issue 29's long kernels (full mode): one stream of 10 s kernels, LONG_WAITS waits one
 * after another, under garudad's default plan and, as the baseline, under poll. Under
 * the default plan the first is cold (no prediction yet); from the second on the plan
 * sleeps toward the prediction in steps and opens one short window. Measured from the
 * second's launch to the stream's end: garudad's CPU as a share of a core, its
 * scanner's sleeps and spin steps per wait, and each wait's store -> wake. Poll's own
 * run is the lateness baseline: a stream that slept 10 s wakes slower than one that
 * slept 10 ms (this 2-vCPU guest: ~155 us against ~75 us store -> wake under poll,
 * the scanner seeing the store within 2 us both times), so the 10 ms cell's poll p50
 * would charge garudad for the client's own wake. */
#define LONG_WAITS 3u
struct long_result {
	bool ok;
	double cpu_core;      /* garudad's CPU over the window / its wall time */
	double window_s;
	double sleeps, spins; /* per wait in the window */
	double late_us[LONG_WAITS + 1]; /* [j]: wait j's store -> wake */
	struct lat_stats lat;           /* of all LONG_WAITS waits' store -> wake */
};

static void run_long(struct bench *b, struct gd_daemon *d, struct long_result *out)
{
	memset(out, 0, sizeof(*out));
	struct pcell c = { .row = R_GPREDICT, .k = K_10S, .streams = 1, .n = LONG_WAITS, .depth = 1,
			   .sock = d->sock };
	c.bytes = sizeof(struct pstream) + 4 * (c.n + 1) * sizeof(uint64_t);
	if (!(c.st[0] = shm_alloc(c.bytes))) {
		bench_fail(b, "plans: out of shared memory");
		return;
	}
	struct pstream *s = c.st[0];
	for (unsigned j = 1; j <= c.n; j++)
		kns_of(s, c.n)[j] = kernel_ns(K_10S, j, &(uint64_t){ 0 });
	struct stream_arg arg = { .c = &c, .idx = 0 };
	unsigned limit_ms = LONG_WAITS * 10000 + 2 * BENCH_HANG_MS;
	uint64_t give_up = now_ns() + (uint64_t)limit_ms * 1000000ull;
	pid_t pid = child_start(stream_main, &arg);
	/* the window opens when the stream launches its second kernel (its first wait
	 * returned, its second ARM sent) */
	while (pid > 0 && __atomic_load_n(&s->go, __ATOMIC_ACQUIRE) < 2 && now_ns() < give_up &&
	       !__atomic_load_n(&s->err, __ATOMIC_ACQUIRE))
		sleep_ns(10000000ull);
	struct proc_sample p0 = { 0 }, p1 = { 0 };
	struct pwaits w0, w1;
	proc_read(d->pid, &p0);
	read_waits(d, &w0);
	uint64_t t0 = now_ns();
	if (pid < 0 || child_wait(pid, limit_ms) != 0) {
		bench_fail(b, "plans: 10 s kernels: the stream broke: %s", s->msg[0] ? s->msg : "(no message)");
		shm_free(s, c.bytes);
		return;
	}
	uint64_t t1 = now_ns();
	proc_read(d->pid, &p1);
	read_waits(d, &w1);
	out->window_s = (double)(t1 - t0) / 1e9;
	out->cpu_core = (double)(p1.cpu_ns - p0.cpu_ns) / (double)(t1 - t0);
	out->sleeps = (w1.sleeps - w0.sleeps) / (LONG_WAITS - 1);
	out->spins = (w1.spins - w0.spins) / (LONG_WAITS - 1);
	for (unsigned j = 1; j <= LONG_WAITS; j++)
		out->late_us[j] = (double)lat_of(s, c.n)[j] / 1e3;
	uint64_t late[LONG_WAITS];
	memcpy(late, lat_of(s, c.n) + 1, sizeof(late));
	lat_compute(late, LONG_WAITS, &out->lat);
	out->ok = true;
	shm_free(s, c.bytes);
}

static int run_cell(struct bench *b, struct gd_daemon *d, enum prow row, enum kernel k, unsigned streams,
		    unsigned depth, struct presult *out)
{
	return run_cell_n(b, d, row, k, streams, depth, cell_n(b, k, streams, depth), 40, out);
}

/* The cell's workload as a completion trace (proto/replay.h): stream i's word i + 1,
 * its kernels kernel_ns() as the cell gives them (the same seeds); a round of `depth`
 * is armed at once, the producer starts REPLAY_LAUNCH_NS after the launch and runs them
 * back to back (each REPLAY_OVERSLEEP_NS + up to REPLAY_JITTER_NS longer, uniform: its
 * sleep's own lateness; the live scanner's spins per completion, which follow the
 * spread of the kernels' ends, need about that spread on a loaded 2-CPU guest), the next
 * round is armed REPLAY_GAP_NS after the last store (the stream's wake and re-arm);
 * streams start within the first 2 ms, as forked processes do. Figures: the bench's
 * store -> wake p50 on this machine is ~60-80 us, a producer's 1 ns-slack sleep ends
 * ~50 us late. */
#define REPLAY_LAUNCH_NS 20000ull
#define REPLAY_OVERSLEEP_NS 50000ull
#define REPLAY_GAP_NS 70000ull
#define REPLAY_JITTER_NS 200000ull

/* Replay's costs for this machine, measured at the section's start (calibrate()):
 * replay models garudad's scanner on a simulated clock, and the live rows run on this
 * machine's timers and syscalls, so the model takes their figures from here, not the
 * build machine's defaults (garuda_replay_default_cost()). */
static struct garuda_replay_cost replay_cost;

#define CAL_SLEEPS 400
#define CAL_LONG_SLEEPS 60
#define CAL_LONG_NS 5000000ull
#define CAL_SPINS 20000

/* n timed waits, each ahead_ns ahead, as the scanner sleeps (util/futex.h's
 * futex_wait_until: an absolute FUTEX_WAIT_BITSET; that header's futex_wake clashes with
 * bench.h's): how late each woke into late[], and their mean CPU (this thread's clock) */
static uint64_t time_sleeps(uint64_t ahead_ns, unsigned n, uint64_t *late)
{
	uint32_t word = 0;
	uint64_t c0 = thread_cpu_ns();
	for (unsigned i = 0; i < n; i++) {
		uint64_t until = now_ns() + ahead_ns;
		struct timespec ts = { .tv_sec = (time_t)(until / 1000000000ull),
				       .tv_nsec = (long)(until % 1000000000ull) };
		syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &ts, NULL,
			FUTEX_BITSET_MATCH_ANY);
		uint64_t now = now_ns();
		late[i] = now > until ? now - until : 0;
	}
	return (thread_cpu_ns() - c0) / n;
}

/* The scanner's own primitives, timed as it uses them (daemon/scanner.c), timer slack
 * 1 ns: a timed wait 200 us ahead, how late it wakes (p50) and its CPU (mean); the same
 * CAL_LONG_NS ahead (replay's long sleep figures); a spin step (16 cpu_relax() and a
 * spin_give_way()): its CPU, which each cell replaces with its poll cell's
 * (against_poll), as it does the ARM's cost. The rest stay replay's defaults. */
static void calibrate(cJSON *sec)
{
	replay_cost = garuda_replay_default_cost();
	int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	static uint64_t late[CAL_SLEEPS], late_long[CAL_LONG_SLEEPS];
	uint64_t sleep_cpu = time_sleeps(GARUDA_REPLAY_SHORT_SLEEP_NS, CAL_SLEEPS, late);
	/* the CPU idles deeper and wakes later */
	uint64_t long_cpu = time_sleeps(CAL_LONG_NS, CAL_LONG_SLEEPS, late_long);
	uint64_t c0 = thread_cpu_ns();
	for (unsigned i = 0; i < CAL_SPINS; i++) {
		for (int j = 0; j < 16; j++)
			cpu_relax();
		spin_give_way();
	}
	uint64_t spin_cpu = (thread_cpu_ns() - c0) / CAL_SPINS;
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
	struct lat_stats ls, ll;
	lat_compute(late, CAL_SLEEPS, &ls);
	lat_compute(late_long, CAL_LONG_SLEEPS, &ll);
	struct garuda_replay_cost dflt = replay_cost;
	replay_cost.wake_late_ns = (uint64_t)ls.p50;
	replay_cost.wake_cpu_ns = sleep_cpu;
	replay_cost.long_sleep_ns = CAL_LONG_NS;
	replay_cost.wake_late_long_ns = (uint64_t)ll.p50;
	replay_cost.wake_cpu_long_ns = long_cpu;
	/* lat_compute() sorted them: their p90s, the replay's spread (replay.h) */
	replay_cost.wake_late_p90_ns = late[(CAL_SLEEPS - 1) * 90 / 100];
	replay_cost.wake_late_long_p90_ns = late_long[(CAL_LONG_SLEEPS - 1) * 90 / 100];
	replay_cost.spin_ns = spin_cpu;
	printf("  replay's costs, measured here: a timed wake 200 us ahead %.1f us late (p50; p90 %.1f, p99 %.1f) and "
	       "%.1f us of CPU, %.0f ms ahead %.1f us late (p50; p90 %.1f, p99 %.1f) and %.1f us; a spin step %.2f us "
	       "(replay's defaults: %.0f, %.0f, %.2f, at any length, no spread)\n",
	       ls.p50 / 1e3, replay_cost.wake_late_p90_ns / 1e3, ls.p99 / 1e3, sleep_cpu / 1e3, CAL_LONG_NS / 1e6,
	       ll.p50 / 1e3, replay_cost.wake_late_long_p90_ns / 1e3, ll.p99 / 1e3, long_cpu / 1e3, spin_cpu / 1e3,
	       dflt.wake_late_ns / 1e3, dflt.wake_cpu_ns / 1e3, dflt.spin_ns / 1e3);
	printf("  (garuda-replay --cost=wake_late_ns=%llu,wake_cpu_ns=%llu,long_sleep_ns=%llu,wake_late_long_ns=%llu,"
	       "wake_cpu_long_ns=%llu,wake_late_p90_ns=%llu,wake_late_long_p90_ns=%llu,spin_ns=%llu replays a trace "
	       "at these)\n",
	       (unsigned long long)replay_cost.wake_late_ns, (unsigned long long)replay_cost.wake_cpu_ns,
	       (unsigned long long)replay_cost.long_sleep_ns, (unsigned long long)replay_cost.wake_late_long_ns,
	       (unsigned long long)replay_cost.wake_cpu_long_ns, (unsigned long long)replay_cost.wake_late_p90_ns,
	       (unsigned long long)replay_cost.wake_late_long_p90_ns, (unsigned long long)replay_cost.spin_ns);
	cJSON *o = cJSON_AddObjectToObject(sec, "replay_cost");
	cJSON_AddNumberToObject(o, "wake_late_ns", (double)replay_cost.wake_late_ns);
	cJSON_AddNumberToObject(o, "wake_late_p99_ns", ls.p99);
	cJSON_AddNumberToObject(o, "wake_cpu_ns", (double)replay_cost.wake_cpu_ns);
	cJSON_AddNumberToObject(o, "spin_ns", (double)replay_cost.spin_ns);
	cJSON_AddNumberToObject(o, "long_sleep_ns", (double)replay_cost.long_sleep_ns);
	cJSON_AddNumberToObject(o, "wake_late_long_ns", (double)replay_cost.wake_late_long_ns);
	cJSON_AddNumberToObject(o, "wake_cpu_long_ns", (double)replay_cost.wake_cpu_long_ns);
	cJSON_AddNumberToObject(o, "wake_late_p90_ns", (double)replay_cost.wake_late_p90_ns);
	cJSON_AddNumberToObject(o, "wake_late_long_p90_ns", (double)replay_cost.wake_late_long_p90_ns);
	cJSON_AddNumberToObject(o, "wake_late_long_p99_ns", ll.p99);
}

/* Replay's busy per completion under plan over rows (m of them) at c, and its sleeps and
 * spins per completion: over the steady window as the live cell takes it (steady_watch),
 * when there is one. NAN when replay fails. */
static double replay_per_completion(const struct garuda_plan *plan, const struct garuda_replay_row *rows,
				    size_t m, const struct garuda_replay_cost *c, double *sleeps, double *spins)
{
	struct garuda_replay_result a;
	*sleeps = *spins = NAN;
	if (garuda_replay_run(plan, rows, m, c, &a) != 0)
		return NAN;
	bool st = a.steady_rows > 0;
	double counted = st ? (double)a.steady_rows : (double)m;
	*sleeps = (double)(st ? a.steady_sleeps : a.sleeps) / counted;
	*spins = (double)(st ? a.steady_spins : a.spins) / counted;
	return (double)(st ? a.steady_busy_ns : a.busy_ns) / counted;
}

/* Replay's busy under plan / under poll on rows (m of them) at c, with plan's sleeps and
 * spins per completion (the steady window is the trace's, the same for both). NAN when
 * replay fails. */
static double replay_ratio(const struct garuda_plan *plan, const struct garuda_plan *poll,
			   const struct garuda_replay_row *rows, size_t m, const struct garuda_replay_cost *c,
			   double *sleeps, double *spins)
{
	double ps, pp;
	double busy = replay_per_completion(plan, rows, m, c, sleeps, spins);
	double pbusy = replay_per_completion(poll, rows, m, c, &ps, &pp);
	return pbusy > 0 ? busy / pbusy : NAN;
}

static double replay_cell(const char *plan_text, enum kernel k, unsigned streams, unsigned depth, unsigned n,
			  const struct garuda_replay_cost *cost, double *sleeps, double *spins)
{
	struct garuda_plan plan, poll;
	if (garuda_plan_parse(plan_text ? plan_text : GARUDA_PLAN_GARUDAD_DEFAULT, &plan, NULL, 0) < 0 ||
	    garuda_plan_parse("poll", &poll, NULL, 0) < 0)
		return NAN;
	struct garuda_replay_row *rows = calloc((size_t)streams * n, sizeof(*rows));
	if (!rows)
		return NAN;
	size_t m = 0;
	uint64_t mix = 0x2545f4914f6cdd1dull;
	for (unsigned i = 0; i < streams; i++) {
		uint64_t rng = 0x9e3779b97f4a7c15ull * (i + 1); /* run_cell_n's seeds */
		mix ^= mix << 13;
		mix ^= mix >> 7;
		mix ^= mix << 17;
		uint64_t t = 1000000 + mix % 2000000, end = 0;
		for (unsigned j = 1; j <= n; j += depth) {
			unsigned last = j + depth - 1 <= n ? j + depth - 1 : n;
			for (unsigned q = j; q <= last; q++) {
				uint64_t kn = kernel_ns(k, q + i, &rng);
				uint64_t start = end > t + REPLAY_LAUNCH_NS ? end : t + REPLAY_LAUNCH_NS;
				mix ^= mix << 13;
				mix ^= mix >> 7;
				mix ^= mix << 17;
				end = start + kn + REPLAY_OVERSLEEP_NS + mix % REPLAY_JITTER_NS;
				rows[m++] = (struct garuda_replay_row){
					.word = i + 1, .point = k == K_BIMODAL ? (kn > 10000000 ? 1 : 2) : 0,
					.arm_ns = t, .store_ns = end };
			}
			t = end + REPLAY_GAP_NS;
		}
	}
	double r = replay_ratio(&plan, &poll, rows, m, cost, sleeps, spins);
	free(rows);
	return r;
}

/* Daemon CPU per completion of p against q's: over the steady window where both have
 * one (the completions their latency figures count), else over the whole cells. */
static double cpu_ratio(const struct presult *p, const struct presult *q)
{
	if (!p->ok || !q->ok)
		return NAN;
	if (!isnan(p->steady_us) && !isnan(q->steady_us))
		return q->steady_us > 0 ? p->steady_us / q->steady_us : NAN;
	return q->daemon_us > 0 ? p->daemon_us / q->daemon_us : NAN;
}

/* Replay's busy per completion of plan on the row's own trace against poll's on the
 * poll cell's own trace: each on the cadence its row ran at live, as the live ratio
 * takes each row's CPU per completion. (Both on the row's trace, as before, priced poll
 * at the row's cadence: a ladder's late finds slow its streams by up to 1.5x at 16 x
 * 1 ms, and a spinning poll's busy per completion grows with the gap between
 * completions, so the ratio came out up to that much low: 0.50 against the live 0.94.)
 * Without a poll trace: both on the row's. */
static double replay_own_ratio(const struct garuda_plan *plan, const struct garuda_plan *poll,
			       const struct presult *r, const struct presult *pr,
			       const struct garuda_replay_cost *c, double *sleeps, double *spins)
{
	if (!pr->trace)
		return replay_ratio(plan, poll, r->trace, r->ntrace, c, sleeps, spins);
	double ps, pp;
	double busy = replay_per_completion(plan, r->trace, r->ntrace, c, sleeps, spins);
	double pbusy = replay_per_completion(poll, pr->trace, pr->ntrace, c, &ps, &pp);
	return pbusy > 0 ? busy / pbusy : NAN;
}

/* The cell's two columns (presult): against the poll row's cell, and replay's. Replay's
 * ARM and spin step costs are the poll cell's, the same workload under a plan replay is
 * not judged on, over its steady window: an ARM, its loop thread's CPU per completion
 * (all of garudad's but its scanners': the receive, the post and the scanner's wake,
 * which no plan changes); a spin step, its scanner's CPU per spin step, less its parks
 * at calibrate()'s sleep (a spin step under this load, its step's work and the
 * sched_yield that gives the CPU to the cell's other processes, costs up to ~2x the
 * idle calibration's) and its time on the clock (spin_wall_ns, the window's wall time
 * over its spin steps); and an ARM's way from its send to the scanner's take (replay's
 * arm_wake_ns), the scanners' take_ns over arms_taken. */
static void against_poll(struct presult *r, const struct presult *poll, const char *plan, enum kernel k,
			 unsigned streams, unsigned depth, unsigned n)
{
	r->vs_poll = cpu_ratio(r, poll);
	struct garuda_replay_cost cost = replay_cost;
	double loop_us = poll->ok ? poll->steady_us - poll->steady_scan_us : NAN;
	if (isfinite(loop_us) && loop_us > 0)
		cost.arm_cpu_ns = (uint64_t)(loop_us * 1e3);
	double spin_us = poll->ok && poll->waits.spins >= 1
				 ? (poll->steady_scan_us - poll->waits.arm_wakes * replay_cost.wake_cpu_ns / 1e3) /
					   poll->waits.spins
				 : NAN;
	if (isfinite(spin_us) && spin_us > 0)
		cost.spin_ns = (uint64_t)(spin_us * 1e3);
	/* and a spin step's time on the clock: the window's wall time over its spin steps
	 * (the poll scanner does little else), longer than its CPU where the cell's
	 * processes share the CPUs (each sched_yield runs one of them) */
	double wall_us = poll->ok && poll->waits.spins >= 1 ? poll->steady_wall_us / poll->waits.spins : NAN;
	if (isfinite(wall_us) && wall_us * 1e3 > (double)cost.spin_ns)
		cost.spin_wall_ns = (uint64_t)(wall_us * 1e3);
	if (poll->ok && poll->waits.arms_taken > 0 && poll->waits.take_ns > 0)
		cost.arm_wake_ns = (uint64_t)(poll->waits.take_ns / poll->waits.arms_taken);
	r->replay_take_us = cost.arm_wake_ns / 1e3;
	r->replay_arm_us = cost.arm_cpu_ns / 1e3;
	r->replay_spin_us = cost.spin_ns / 1e3;
	r->replay_spin_wall_us = (cost.spin_wall_ns > cost.spin_ns ? cost.spin_wall_ns : cost.spin_ns) / 1e3;
	r->replay_vs_poll = replay_cell(plan, k, streams, depth, n, &cost, &r->replay_sleeps, &r->replay_spins);
	struct garuda_plan p, pp;
	if (r->trace && garuda_plan_parse(plan ? plan : GARUDA_PLAN_GARUDAD_DEFAULT, &p, NULL, 0) == 0 &&
	    garuda_plan_parse("poll", &pp, NULL, 0) == 0)
		r->trace_vs_poll = replay_own_ratio(&p, &pp, r, poll, &cost, &r->trace_sleeps, &r->trace_spins);
	free(r->trace);
	r->trace = NULL;
}

int plans_garuda_streams(struct bench *b, struct gd_daemon *d, unsigned streams, unsigned n,
			 struct plans_streams_result *out)
{
	struct presult r;
	memset(out, 0, sizeof(*out));
	if (streams < 1 || streams > PLAN_MAX_STREAMS || n <= WARMUP) {
		bench_fail(b, "plans: %u streams of %u completions asked (1..%d streams, more than %d each)",
			   streams, n, PLAN_MAX_STREAMS, WARMUP);
		return -1;
	}
	/* other tenants may make a wait slow: 250 ms per completion before it counts as broken
	 * (a single wait still has the hang deadline) */
	if (run_cell_n(b, d, R_GPREDICT, K_1MS, streams, 1, n, 250, &r) < 0)
		return -1;
	free(r.trace); /* (no replay here) */
	*out = (struct plans_streams_result){ .ok = true, .lat = r.lat, .completions = (uint64_t)n * streams,
					      .daemon_us = r.daemon_us, .scan_us = r.scan_us,
					      .total_us = r.total_us, .timed_wakes = r.timed_wakes,
					      .timer_stalls = r.timer_stalls };
	return 0;
}

/* ---------------------------------------------------------------- the section */

/* One cell's line and its JSON object (cells[]): kernel kname, depth queued per round. */
static void emit_cell(cJSON *cells, const char *kname, unsigned depth, unsigned streams, enum prow row,
		      const struct presult *r, bool dp)
{
	char kd[24];
	if (depth > 1)
		snprintf(kd, sizeof(kd), "%s x%u", kname, depth);
	else
		snprintf(kd, sizeof(kd), "%s", kname);
	printf("  %-9s %-3u %-27s %10.1f %10.1f %12.1f %12.1f", kd, streams, row_name[row], r->lat.p50 / 1e3,
	       r->lat.p99 / 1e3, r->daemon_us, r->total_us);
	if (dp)
		printf("   %.1f %.0f %.2f %.2f %.2f %.2f %.2f detect-p50<=%.0fus", r->waits.sleeps, r->waits.spins,
		       r->waits.exact, r->waits.censored, r->waits.late_wakes, r->waits.arm_wakes,
		       r->waits.arm_nowakes, r->detect_p50_us);
	if (dp && r->timed_wakes > 0)
		printf(" timer-stalls %.0f/%.0f", r->timer_stalls, r->timed_wakes);
	if (r->kernel_stalls > 0)
		printf(" kernel-stalls %.0f/%.0f", r->kernel_stalls, r->kernels);
	if (row == R_LGPREDICT)
		printf(" [client: %.2f %.2f %.2f %.2f]", r->lg[2], r->lg[3], r->lg[0], r->lg[1]);
	if (!isnan(r->steady_us))
		printf(" | steady %.1f us/c (scanner %.1f, its deliveries %.1f)", r->steady_us, r->steady_scan_us,
		       r->waits.deliver_cpu_ns / 1e3);
	if (!isnan(r->replay_vs_poll))
		printf(" | cpu/poll %.3f replay %.3f", r->vs_poll, r->replay_vs_poll);
	if (!isnan(r->trace_vs_poll))
		printf(" its trace %.3f", r->trace_vs_poll);
	printf("\n");
	fflush(stdout);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kernel", kname);
	cJSON_AddNumberToObject(o, "queued_per_stream", depth);
	cJSON_AddNumberToObject(o, "streams", streams);
	cJSON_AddStringToObject(o, "row", row_name[row]);
	cJSON_AddItemToObject(o, "store_to_wake", lat_json(&r->lat));
	cJSON_AddNumberToObject(o, "daemon_cpu_us_per_completion", r->daemon_us);
	cJSON_AddNumberToObject(o, "total_cpu_us_per_completion", r->total_us);
	if (!isnan(r->steady_us)) {
		cJSON_AddNumberToObject(o, "daemon_cpu_us_per_completion_steady", r->steady_us);
		cJSON_AddNumberToObject(o, "scanner_cpu_us_per_completion_steady", r->steady_scan_us);
		cJSON_AddNumberToObject(o, "deliver_cpu_us_per_completion", r->waits.deliver_cpu_ns / 1e3);
	}
	if (!isnan(r->vs_poll))
		cJSON_AddNumberToObject(o, "daemon_cpu_vs_poll", r->vs_poll);
	if (!isnan(r->replay_vs_poll))
		cJSON_AddNumberToObject(o, "replay_busy_vs_poll", r->replay_vs_poll);
	if (!isnan(r->trace_vs_poll))
		cJSON_AddNumberToObject(o, "replay_own_trace_busy_vs_poll", r->trace_vs_poll);
	if (dp) {
		cJSON *wj = cJSON_AddObjectToObject(o, "scanner_per_completion");
		cJSON_AddNumberToObject(wj, "sleeps", r->waits.sleeps);
		cJSON_AddNumberToObject(wj, "spins", r->waits.spins);
		cJSON_AddNumberToObject(wj, "exact", r->waits.exact);
		cJSON_AddNumberToObject(wj, "censored", r->waits.censored);
		cJSON_AddNumberToObject(wj, "late_wakes", r->waits.late_wakes);
		cJSON_AddNumberToObject(wj, "arm_wakes", r->waits.arm_wakes);
		cJSON_AddNumberToObject(wj, "arm_nowakes", r->waits.arm_nowakes);
		if (!isnan(r->detect_p50_us))
			cJSON_AddNumberToObject(o, "detect_p50_us_le", r->detect_p50_us);
		/* the whole cell's, not per completion */
		cJSON_AddNumberToObject(o, "timed_wakes", r->timed_wakes);
		cJSON_AddNumberToObject(o, "timed_wakes_0_5ms_late", r->timer_stalls);
	}
	cJSON_AddNumberToObject(o, "kernels_0_5ms_long", r->kernel_stalls);
	if (row == R_LGPREDICT) {
		cJSON *lj = cJSON_AddObjectToObject(o, "client_per_completion");
		cJSON_AddStringToObject(lj, "plan", LG_PLAN);
		cJSON_AddNumberToObject(lj, "sleeps", r->lg[2]);
		cJSON_AddNumberToObject(lj, "spin_outs", r->lg[3]);
		cJSON_AddNumberToObject(lj, "exact", r->lg[0]);
		cJSON_AddNumberToObject(lj, "censored", r->lg[1]);
	}
	cJSON_AddItemToArray(cells, o);
}

static double ratio(const struct presult *a, const struct presult *b, double av, double bv)
{
	return a->ok && b->ok && bv > 0 ? av / bv : NAN;
}

static void verdict(cJSON *arr, const char *what, double v, double goal)
{
	const char *vd = isnan(v) ? "n/a" : v <= goal ? "met" : "MISSED";
	printf("  %-60s %8.3fx  <= %-6g %s\n", what, v, goal, vd);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "target", what);
	cJSON_AddNumberToObject(o, "goal", goal);
	if (!isnan(v))
		cJSON_AddNumberToObject(o, "value", v);
	cJSON_AddStringToObject(o, "verdict", vd);
	cJSON_AddItemToArray(arr, o);
}

/* a ratio shown without a goal */
static void compare(cJSON *arr, const char *what, double v)
{
	printf("  %-60s %8.3fx\n", what, v);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "ratio", what);
	if (!isnan(v))
		cJSON_AddNumberToObject(o, "value", v);
	cJSON_AddItemToArray(arr, o);
}

/* The part of a completion's daemon CPU that no plan avoids, as a share of poll's, from
 * the poll cell of the same workload (its steady window): the loop thread's receive
 * and post of each ARM (poll's scanner never sleeps, so no ARM pays to wake it: a
 * sleeping plan's ARMs cost more), and the scanner's writes of readiness (deliver_cpu_ns:
 * where the waiter sleeps on another CPU, the write pays that CPU's wake). A CPU target
 * below it cannot be met on this machine by any plan; NAN: no poll cell. */
static double floor_ratio(const struct presult *poll)
{
	if (!poll->ok)
		return NAN;
	bool steady = !isnan(poll->steady_us); /* else the whole cell's, as cpu_ratio() */
	double all = steady ? poll->steady_us : poll->daemon_us;
	double loop_us = all - (steady ? poll->steady_scan_us : poll->scan_us);
	return all > 0 ? (loop_us + poll->waits.deliver_cpu_ns / 1e3) / all : NAN;
}

/* the CPU target's line, then its floor's (floor_ratio) */
static void cpu_verdict(cJSON *arr, const char *what, const struct presult *p, const struct presult *poll,
			double goal)
{
	verdict(arr, what, cpu_ratio(p, poll), goal);
	compare(arr, "  floor (poll cell: ARM receive + deliveries) / poll's CPU", floor_ratio(poll));
}

/* within 25 % of live: "agree" */
static const char *agreement(double replay, double live)
{
	return isnan(replay) || isnan(live) ? "n/a" : fabs(replay - live) <= 0.25 * live ? "agree" : "DISAGREE";
}

/* one line of the replay-against-live table, and its JSON object; counts the cells whose
 * synthetic trace and own trace agree (agree[0], agree[1]) out of *cells */
static void replay_row(cJSON *arr, const char *kname, unsigned depth, unsigned streams, enum prow row,
		       const struct presult *r, unsigned agree[2], unsigned *cells)
{
	if (!r->ok || isnan(r->replay_vs_poll))
		return;
	char kd[24];
	snprintf(kd, sizeof(kd), depth > 1 ? "%s x%u" : "%s", kname, depth);
	const char *vd = agreement(r->replay_vs_poll, r->vs_poll), *vt = agreement(r->trace_vs_poll, r->vs_poll);
	(*cells)++;
	agree[0] += strcmp(vd, "agree") == 0;
	agree[1] += strcmp(vt, "agree") == 0;
	printf("  %-13s %-3u %-27s %7.3f %7.3f %-8s %7.3f %-8s %5.1f %5.1f %5.1f %5.0f %5.0f %5.0f %6.1f %5.2f %5.1f\n",
	       kd, streams, row_name[row], r->vs_poll, r->replay_vs_poll, vd, r->trace_vs_poll, vt, r->waits.sleeps,
	       r->replay_sleeps, r->trace_sleeps, r->waits.spins, r->replay_spins, r->trace_spins, r->replay_arm_us,
	       r->replay_spin_us, r->replay_take_us);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kernel", kname);
	cJSON_AddNumberToObject(o, "queued_per_stream", depth);
	cJSON_AddNumberToObject(o, "streams", streams);
	cJSON_AddStringToObject(o, "row", row_name[row]);
	if (!isnan(r->vs_poll))
		cJSON_AddNumberToObject(o, "live", r->vs_poll);
	cJSON_AddNumberToObject(o, "replay", r->replay_vs_poll);
	cJSON_AddStringToObject(o, "verdict", vd);
	if (!isnan(r->trace_vs_poll)) {
		cJSON_AddNumberToObject(o, "replay_own_trace", r->trace_vs_poll);
		cJSON_AddStringToObject(o, "verdict_own_trace", vt);
		cJSON_AddNumberToObject(o, "replay_own_trace_sleeps_per_completion", r->trace_sleeps);
		cJSON_AddNumberToObject(o, "replay_own_trace_spins_per_completion", r->trace_spins);
	}
	cJSON_AddNumberToObject(o, "replay_arm_cpu_us", r->replay_arm_us);
	cJSON_AddNumberToObject(o, "replay_spin_step_us", r->replay_spin_us);
	cJSON_AddNumberToObject(o, "replay_spin_step_wall_us", r->replay_spin_wall_us);
	cJSON_AddNumberToObject(o, "replay_arm_take_us", r->replay_take_us);
	cJSON_AddNumberToObject(o, "live_sleeps_per_completion", r->waits.sleeps);
	cJSON_AddNumberToObject(o, "replay_sleeps_per_completion", r->replay_sleeps);
	cJSON_AddNumberToObject(o, "live_spins_per_completion", r->waits.spins);
	cJSON_AddNumberToObject(o, "replay_spins_per_completion", r->replay_spins);
	cJSON_AddItemToArray(arr, o);
}

int bench_plans(struct bench *b)
{
	static const unsigned stream_counts[2] = { 1, 16 };
	static const unsigned pipe_depths[2] = { 4, 10 }, pipe_streams[2] = { 1, 4 };
	struct presult res[2][K_N_][R_N_];
	struct presult pipe[2][2][2]; /* [depth][streams][poll, +predict] */
	memset(res, 0, sizeof(res));
	memset(pipe, 0, sizeof(pipe));
	struct long_result longk[2] = { { 0 } }; /* [0]: poll, [1]: +predict */
	cJSON *sec = cJSON_AddObjectToObject(b->json, "plans");
	cJSON *cells = cJSON_AddArrayToObject(sec, "cells");
	printf("\nWait plans (issue 11): store -> wake, CPU per completion; host backend, producer process stores after the kernel\n");
	printf("  %-9s %-3s %-27s %10s %10s %12s %12s   %s\n", "kernel", "str", "row", "p50 us", "p99 us",
	       "daemon us/c", "total us/c",
	       "per completion: sleeps spins exact censored late armwake armnowake (scanners)"
	       " [client: sleeps spin-outs exact censored]; timer-stalls: the cell's timed sleeps\n"
	       "  that woke >= 0.5 ms late / all that ran to their time; kernel-stalls: the producer's kernels that\n"
	       "  ran >= 0.5 ms long / all measured (host stalls in the simulated GPU, shown when any)");
	calibrate(sec);
	const char *only_rows = getenv("GARUDA_BENCH_PLAN_ROWS"); /* e.g. "3,5": rows by number */
	/* e.g. "16x1ms,16x10ms": only those unpipelined cells (STREAMSxKERNEL), and no
	 * pipelined or long-kernel cell (development) */
	const char *only_cells = getenv("GARUDA_BENCH_PLAN_CELLS");
	for (enum prow row = 0; row < R_N_; row++) {
		struct gd_daemon d, *dp = NULL;
		if (only_rows && !strchr(only_rows, '0' + (int)row))
			continue;
		/* the plan garudad runs in this row (NULL: its default), for replay's column */
		const char *rplan = row == R_GPREDICT && getenv("GARUDA_BENCH_PREDICT_PLAN")
					    ? getenv("GARUDA_BENCH_PREDICT_PLAN")
					    : row_plan[row];
		bool replayed = row == R_GLADDER || row == R_GPREDICT || row == R_GURING;
		if (row == R_GURING) {
			struct io_uring pr;
			bool have = io_uring_queue_init(2, &pr, 0) == 0;
			bool futex = have && uring_futex_wait_supported(&pr);
			if (have)
				io_uring_queue_exit(&pr);
			if (!futex) {
				printf("  (%s: skipped, this kernel has no IORING_OP_FUTEX_WAIT: Linux 6.7)\n",
				       row_name[row]);
				continue;
			}
		}
#ifndef HAVE_LIBGARUDA
		if (row == R_LGPREDICT) {
			printf("  (%s: skipped, garuda-bench built without libgaruda)\n", row_name[row]);
			continue;
		}
#endif
		if (row >= R_GPOLL) {
			char cfg[256];
			const char *plan = row_plan[row];
			if (row == R_GPREDICT && getenv("GARUDA_BENCH_PREDICT_PLAN"))
				plan = getenv("GARUDA_BENCH_PREDICT_PLAN");
			if (plan)
				snprintf(cfg, sizeof(cfg), "{\"scanners\": 1, \"plan\": \"%s\"}", plan);
			else
				snprintf(cfg, sizeof(cfg), "{\"scanners\": 1}");
			if (bd_start(b, &d, cfg) < 0)
				continue;
			dp = &d;
		}
		for (unsigned si = 0; si < 2; si++) {
			/* 16 spinning readers on a small machine starve everything else; the
			 * spin row runs at 16 streams only where there are 16 CPUs */
			if (row == R_SPIN && stream_counts[si] > (unsigned)sysconf(_SC_NPROCESSORS_ONLN))
				continue;
			for (enum kernel k = 0; k < K_N_; k++) {
				struct presult *r = &res[si][k][row];
				char cname[32];
				snprintf(cname, sizeof(cname), "%ux%s", stream_counts[si], kernel_name[k]);
				if (only_cells && !bench_list_has(only_cells, cname))
					continue;
				if (run_cell(b, dp, row, k, stream_counts[si], 1, r) < 0)
					continue;
				if (replayed)
					against_poll(r, &res[si][k][R_GPOLL], rplan, k, stream_counts[si], 1,
						     cell_n(b, k, stream_counts[si], 1));
				emit_cell(cells, kernel_name[k], 1, stream_counts[si], row, r, dp != NULL);
			}
		}
		/* pipelined: 2 ms kernels, PIPE_DEPTHS queued per stream per round, 1 and 4
		 * streams, garudad's rows (the targets compare +predict with poll) */
		for (unsigned di = 0; dp && !only_cells && (row == R_GPOLL || row == R_GPREDICT) && di < 2; di++)
			for (unsigned si = 0; si < 2; si++) {
				struct presult *r = &pipe[di][si][row == R_GPREDICT];
				if (run_cell(b, dp, row, K_2MS, pipe_streams[si], pipe_depths[di], r) < 0)
					continue;
				if (row == R_GPREDICT)
					against_poll(r, &pipe[di][si][0], rplan, K_2MS, pipe_streams[si], pipe_depths[di],
						     cell_n(b, K_2MS, pipe_streams[si], pipe_depths[di]));
				emit_cell(cells, kernel_name[K_2MS], pipe_depths[di], pipe_streams[si], row, r,
						  true);
			}
		/* issue 29's long kernels: the poll and default plans' daemons, full mode (~30 s
		 * each) */
		if (dp && (row == R_GPOLL || row == R_GPREDICT) && !b->o.quick && !only_cells) {
			struct long_result *l = &longk[row == R_GPREDICT];
			run_long(b, dp, l);
			if (l->ok)
				printf("  %-9s %-3u %-27s %u waits, store -> wake %.1f us (the first%s), then "
				       "%.1f, %.1f us; from the second: garudad %.2f %% of a core over %.1f s, "
				       "%.1f sleeps and %.0f spin steps per wait\n",
				       kernel_name[K_10S], 1u, row_name[row], LONG_WAITS, l->late_us[1],
				       row == R_GPREDICT ? ", cold" : "", l->late_us[2], l->late_us[3],
				       100 * l->cpu_core, l->window_s, l->sleeps, l->spins);
		}
		if (dp)
			bd_stop(b, dp);
	}
	for (unsigned i = 0; i < 2; i++) {
		const struct long_result *l = &longk[i];
		if (!l->ok)
			continue;
		cJSON *lk = cJSON_AddObjectToObject(sec, i ? "long_kernels" : "long_kernels_poll");
		cJSON_AddNumberToObject(lk, "kernel_s", 10);
		cJSON_AddNumberToObject(lk, "waits", LONG_WAITS);
		cJSON *la = cJSON_AddArrayToObject(lk, "store_to_wake_us");
		for (unsigned j = 1; j <= LONG_WAITS; j++)
			cJSON_AddItemToArray(la, cJSON_CreateNumber(l->late_us[j]));
		cJSON_AddNumberToObject(lk, "daemon_cpu_of_core_from_second", l->cpu_core);
		cJSON_AddNumberToObject(lk, "window_s", l->window_s);
		cJSON_AddNumberToObject(lk, "sleeps_per_wait", l->sleeps);
		cJSON_AddNumberToObject(lk, "spin_steps_per_wait", l->spins);
	}

	cJSON *tg = cJSON_AddArrayToObject(sec, "targets");
	printf("\nWait-plan targets (ratios of this run's cells)\n");
	char what[128];
	for (enum kernel k = 0; k < K_N_; k++) {
		const struct presult *p = &res[0][k][R_GPREDICT], *s = &res[0][k][R_GPOLL];
		snprintf(what, sizeof(what), "+predict / poll store->wake p50, %s, 1 stream", kernel_name[k]);
		verdict(tg, what, ratio(p, s, p->lat.p50, s->lat.p50), 1.3);
		snprintf(what, sizeof(what), "+predict / poll store->wake p99, %s, 1 stream", kernel_name[k]);
		verdict(tg, what, ratio(p, s, p->lat.p99, s->lat.p99), 2.0);
	}
	for (unsigned di = 0; di < 2; di++)
		for (unsigned si = 0; si < 2; si++) {
			const struct presult *p = &pipe[di][si][1], *q = &pipe[di][si][0];
			snprintf(what, sizeof(what), "+predict / poll p50, 2ms x%u queued, %u stream(s)", pipe_depths[di],
				 pipe_streams[si]);
			verdict(tg, what, ratio(p, q, p->lat.p50, q->lat.p50), 1.3);
			snprintf(what, sizeof(what), "+predict / poll p99, 2ms x%u queued, %u stream(s)", pipe_depths[di],
				 pipe_streams[si]);
			verdict(tg, what, ratio(p, q, p->lat.p99, q->lat.p99), 2.0);
			snprintf(what, sizeof(what), "+predict / poll daemon CPU, 2ms x%u queued, %u stream(s)",
				 pipe_depths[di], pipe_streams[si]);
			cpu_verdict(tg, what, p, q, 1.0 / 3);
		}
	const struct presult *p1 = &res[0][K_1MS][R_GPREDICT], *s1 = &res[0][K_1MS][R_GPOLL];
	cpu_verdict(tg, "+predict / poll daemon CPU per completion, 1 ms", p1, s1, 0.2);
	const struct presult *p10 = &res[0][K_10MS][R_GPREDICT], *s10 = &res[0][K_10MS][R_GPOLL];
	cpu_verdict(tg, "+predict / poll daemon CPU per completion, 10 ms", p10, s10, 0.05);
	/* issue 29: 16 streams, p50 <= 1.3x, p99 <= 2x, daemon CPU <= 1/3 at 1 ms, 1/10 at 10 ms */
	const enum kernel many[2] = { K_1MS, K_10MS };
	const double many_cpu[2] = { 1.0 / 3, 0.1 };
	for (unsigned i = 0; i < 2; i++) {
		const struct presult *p = &res[1][many[i]][R_GPREDICT], *s = &res[1][many[i]][R_GPOLL];
		snprintf(what, sizeof(what), "+predict / poll store->wake p50, %s, 16 streams", kernel_name[many[i]]);
		verdict(tg, what, ratio(p, s, p->lat.p50, s->lat.p50), 1.3);
		snprintf(what, sizeof(what), "+predict / poll store->wake p99, %s, 16 streams", kernel_name[many[i]]);
		verdict(tg, what, ratio(p, s, p->lat.p99, s->lat.p99), 2.0);
		snprintf(what, sizeof(what), "+predict / poll daemon CPU per completion, %s, 16 streams",
			 kernel_name[many[i]]);
		cpu_verdict(tg, what, p, s, many_cpu[i]);
	}
	/* issue 29: one stream of 10 s kernels, from the second wait on, <= 1 % of a core
	 * averaged over a wait, found within 1.3x poll's p50 + 100 us (poll's p50 over its
	 * own run of the same 10 s kernels, this run: the same stream, poll spinning) */
	if (longk[1].ok) {
		verdict(tg, "+predict garudad CPU (of a core) from the 2nd wait, 10 s kernels", longk[1].cpu_core,
			0.01);
		double worst = 0;
		for (unsigned j = 2; j <= LONG_WAITS; j++)
			worst = longk[1].late_us[j] > worst ? longk[1].late_us[j] : worst;
		verdict(tg, "+predict 10 s kernels: worst wake from the 2nd / (1.3 poll p50 + 100us)",
			longk[0].ok ? worst / (1.3 * longk[0].lat.p50 / 1e3 + 100) : NAN, 1.0);
	}
	for (enum kernel k = 0; k < K_N_; k++) {
		const struct presult *p = &res[1][k][R_GPREDICT], *c = &res[1][k][R_REACTOR];
		snprintf(what, sizeof(what), "+predict / reactor total CPU per completion, %s, 16 streams",
			 kernel_name[k]);
		verdict(tg, what, ratio(p, c, p->total_us, c->total_us), 0.125);
	}
	const struct presult *g = &res[0][K_100US][R_GPOLL], *e = &res[0][K_100US][R_EFD];
	verdict(tg, "garuda (poll) eventfd p50 / cross-process eventfd p50, 100us", ratio(g, e, g->lat.p50, e->lat.p50),
		1.5);
	/* what the 16-stream target can reach on this machine: the streams' own CPU with the
	 * cheapest delivery there is (the producer writes their eventfd; no daemon, no
	 * reactor) against (c). Where this is above 0.125 no daemon can meet the target. */
	cJSON *floor = cJSON_AddArrayToObject(sec, "floor_16_streams");
	printf("\nFloor of the 16-stream CPU target (no target)\n");
	for (enum kernel k = 0; k < K_N_; k++) {
		const struct presult *x = &res[1][k][R_EFD], *c = &res[1][k][R_REACTOR];
		snprintf(what, sizeof(what), "eventfd x-process / reactor total CPU per completion, %s, 16 streams",
			 kernel_name[k]);
		compare(floor, what, ratio(x, c, x->total_us, c->total_us));
	}
	/* the issue sets no target for the client-side row: its ratios, for comparison */
	cJSON *cmp = cJSON_AddArrayToObject(sec, "client_predict");
	printf("\nlibgaruda +predict (client), compared (no target)\n");
	for (enum kernel k = 0; k < K_N_; k++) {
		const struct presult *l = &res[0][k][R_LGPREDICT], *p = &res[0][k][R_GPREDICT],
				     *s = &res[0][k][R_GPOLL];
		snprintf(what, sizeof(what), "client / garuda poll store->wake p50, %s, 1 stream", kernel_name[k]);
		compare(cmp, what, ratio(l, s, l->lat.p50, s->lat.p50));
		snprintf(what, sizeof(what), "client / garuda +predict total CPU per completion, %s, 1 stream",
			 kernel_name[k]);
		compare(cmp, what, ratio(l, p, l->total_us, p->total_us));
	}
	/* the io_uring doorbell row: the same daemon and plan as +predict's, so the ratio is
	 * the cost of the client's wait (FUTEX_WAIT in a ring, doorbell form) alone */
	cJSON *ur = cJSON_AddArrayToObject(sec, "uring_doorbell");
	printf("\nio_uring doorbell (FUTEX_WAIT) against +predict's eventfd, compared (no target)\n");
	for (enum kernel k = 0; k < K_N_; k++) {
		const struct presult *u = &res[0][k][R_GURING], *p = &res[0][k][R_GPREDICT];
		snprintf(what, sizeof(what), "io_uring bell / eventfd store->wake p50, %s, 1 stream", kernel_name[k]);
		compare(ur, what, ratio(u, p, u->lat.p50, p->lat.p50));
		snprintf(what, sizeof(what), "io_uring bell / eventfd total CPU per completion, %s, 1 stream",
			 kernel_name[k]);
		compare(ur, what, ratio(u, p, u->total_us, p->total_us));
	}
	for (enum kernel k = 0; k < K_N_; k++) {
		const struct presult *l = &res[1][k][R_LGPREDICT], *c = &res[1][k][R_REACTOR];
		snprintf(what, sizeof(what), "client / reactor total CPU per completion, %s, 16 streams",
			 kernel_name[k]);
		compare(cmp, what, ratio(l, c, l->total_us, c->total_us));
	}
	/* issue 29, item 7: replay's busy / poll against the live daemon CPU / poll, cell by
	 * cell (the same workload: replay_cell); within 25 % of the live ratio agrees */
	cJSON *rj = cJSON_AddArrayToObject(sec, "replay_vs_live");
	printf("\nReplay against the live daemon: CPU per completion / poll's, same workload (issue 29: within 25 %%);\n"
	       "replay runs the cell's shape (a synthetic trace, replay_cell) and the cell's own trace (each ARM sent,\n"
	       "each store landed: live_trace; poll's busy on the poll cell's own trace, replay_own_ratio); replay's\n"
	       "costs of an ARM, a spin step and an ARM's send -> take\n"
	       "(arm, spin, take us) are the same workload's poll cell's (against_poll)\n");
	printf("  %-13s %-3s %-27s %7s %7s %-8s %7s %-8s %17s %17s %6s %5s %5s\n", "kernel", "str", "row", "live",
	       "shape", "", "own", "", "sleeps/c l s o", "spins/c l s o", "arm", "spin", "take");
	unsigned agree[2] = { 0, 0 }, ncells = 0;
	for (unsigned si = 0; si < 2; si++)
		for (enum kernel k = 0; k < K_N_; k++)
			for (enum prow row = R_GLADDER; row < R_N_; row++)
				if (row != R_LGPREDICT)
					replay_row(rj, kernel_name[k], 1, stream_counts[si], row, &res[si][k][row], agree,
						   &ncells);
	for (unsigned di = 0; di < 2; di++)
		for (unsigned si = 0; si < 2; si++)
			replay_row(rj, kernel_name[K_2MS], pipe_depths[di], pipe_streams[si], R_GPREDICT, &pipe[di][si][1],
				   agree, &ncells);
	printf("  replay within 25 %% of live: %u of %u cells on their shape, %u of %u on their own trace\n", agree[0],
	       ncells, agree[1], ncells);
	cJSON *ag = cJSON_AddObjectToObject(sec, "replay_agreement");
	cJSON_AddNumberToObject(ag, "cells", ncells);
	cJSON_AddNumberToObject(ag, "agree_shape", agree[0]);
	cJSON_AddNumberToObject(ag, "agree_own_trace", agree[1]);
	/* the poll cells' traces (replay_own_ratio's); the judged rows' went in against_poll */
	for (unsigned si = 0; si < 2; si++)
		for (enum kernel k = 0; k < K_N_; k++)
			free(res[si][k][R_GPOLL].trace);
	for (unsigned di = 0; di < 2; di++)
		for (unsigned si = 0; si < 2; si++)
			free(pipe[di][si][0].trace);
	return 0;
}
