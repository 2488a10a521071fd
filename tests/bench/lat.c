/* lat.c — benchmark 1: wake latency of a blocked waiter, from just before the store
 * to just after the wake (CLOCK_MONOTONIC on both sides, shared through memory).
 *
 * One completion: the waiter arms target i (how depends on the row), publishes i on a
 * shared futex word and blocks; the storer, woken by that, sleeps the simulated kernel
 * time (gap_us), takes t0, release-stores i into the word (and, for (b), writes the
 * eventfd), then blocks for the next i. The waiter takes t1 right after its wait
 * returns, checks with an acquire load that the word reached i (readiness before the
 * store is a broken run), and records t1 - t0[i].
 *
 * Rows: (a) a reader spinning on the word, a thread of the storing process (the
 * floor); (b) waiter blocked in poll() on an eventfd that the storing thread writes
 * right after the store; (c) a per-process reactor thread (reactor.h) that spins
 * while anything is armed; then garuda across processes — waiter and storer are two
 * forked processes, the daemon a third — in each readiness form over the raw protocol
 * (eventfd, READY message, doorbell futex, and the doorbell awaited in an io_uring ring
 * with IORING_OP_FUTEX_WAIT where the kernel has it); and libgaruda's garuda_stream_wait()
 * (spin, then block) on a host stream, when libgaruda is built (lgwait.c). A
 * diagnostic row runs (c) with garudad's eventfd delivery sequence (write guard timer
 * armed and disarmed around the write), to show what that sequence costs.
 *
 * The rows take turns in rounds (a chunk of each row per round), so background load
 * that drifts over the run hits every row alike. Besides store -> wake, each row
 * reports arm -> store: how long a scanner must bridge before the store lands.
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
#include "lat.h"
#include "raw.h"
#include "reactor.h"
#include "seq.h"
#include "uring_futex.h"

enum row {
	ROW_SPIN,
	ROW_EFD,
	ROW_REACTOR,
	ROW_REACTOR_GUARD,
	ROW_G_EVENTFD,
	ROW_G_MESSAGE,
	ROW_G_DOORBELL,
	ROW_G_URING,
	ROW_LIBGARUDA,
	ROW_N_,
};

static const char *const row_key[ROW_N_] = {
	"a_spin_same_process", "b_eventfd_from_storer", "c_reactor_per_process",
	"c_reactor_with_garudad_write_guard", "garuda_eventfd",
	"garuda_message",      "garuda_doorbell",       "garuda_doorbell_uring_futex_wait",
	"libgaruda_wait",
};
static const char *const row_label[ROW_N_] = {
	"(a) spin reader, storing process", "(b) eventfd from storing thread", "(c) per-process reactor",
	"  (c) + garudad's write guard [diag]",
	"garuda eventfd",                   "garuda READY message",           "garuda doorbell futex",
	"garuda doorbell, io_uring FUTEX_WAIT", "libgaruda spin-then-block",
};

static int lat_run_init(struct lat_run *r, unsigned n, uint64_t gap_ns)
{
	r->n = n;
	r->gap_ns = gap_ns;
	r->bytes = sizeof(struct lat_shm) + 3 * (n + 1) * sizeof(uint64_t);
	r->sh = shm_alloc(r->bytes);
	if (!r->sh)
		return -ENOMEM;
	r->t0 = (uint64_t *)(r->sh + 1);
	r->lat = r->t0 + n + 1;
	r->ta = r->lat + n + 1;
	return 0;
}

static void lat_run_reset(struct lat_run *r)
{
	memset(r->sh, 0, r->bytes);
}

void lat_side_fail(struct lat_run *r, const char *fmt, const char *what, long v)
{
	if (__atomic_exchange_n(&r->sh->err, 1, __ATOMIC_ACQ_REL) == 0)
		snprintf(r->sh->msg, sizeof(r->sh->msg), fmt, what, v);
	futex_set(&r->sh->go, UINT32_MAX); /* release a storer waiting for the next arm */
}

/* ------------------------------------------------------------------ storer */

struct storer {
	struct lat_run *r;
	uint64_t *word;
	int efd; /* >= 0: write it right after the store (baseline b) */
	int close_fd; /* an fd the storer process inherited and must not hold */
};

static int storer_main(void *arg)
{
	struct storer *s = arg;
	struct lat_run *r = s->r;
	if (s->close_fd >= 0)
		close(s->close_fd);
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	for (uint32_t i = 1; i <= r->n; i++) {
		if (futex_wait_ge(&r->sh->go, i, (uint64_t)BENCH_HANG_MS * 1000000ull) < 0) {
			lat_side_fail(r, "storer: no arm of %s %ld came", "sequence", (long)i);
			return 1;
		}
		if (__atomic_load_n(&r->sh->err, __ATOMIC_ACQUIRE))
			return 0;
		if (r->gap_ns)
			sleep_ns(r->gap_ns);
		r->t0[i] = now_ns();
		__atomic_store_n(s->word, (uint64_t)i, __ATOMIC_RELEASE);
		if (s->efd >= 0) {
			uint64_t one = 1;
			if (write(s->efd, &one, sizeof(one)) != sizeof(one)) {
				lat_side_fail(r, "storer: %s write failed at %ld", "eventfd", (long)i);
				return 1;
			}
		}
	}
	return 0;
}

static void *storer_thread(void *arg)
{
	return (void *)(intptr_t)storer_main(arg);
}

/* ------------------------------------------------------------------ waits */

/* poll fd for POLLIN; 0 or -ETIMEDOUT */
static int wait_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;
	while ((n = poll(&p, 1, BENCH_HANG_MS)) < 0 && errno == EINTR)
		;
	return n > 0 ? 0 : -ETIMEDOUT;
}

static int drain_efd(int fd)
{
	uint64_t v;
	return read(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -errno;
}

/* record sample i after a wake at t1; the word must have reached i */
static int record(struct lat_run *r, const uint64_t *word, uint32_t i, uint64_t t1)
{
	uint64_t v = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	if (!garuda_reached(v, i)) {
		lat_side_fail(r, "waiter: readiness before the store (%s %ld)", "sequence", (long)i);
		return -1;
	}
	r->lat[i] = t1 - r->t0[i];
	return 0;
}

/* ------------------------------------------------------------------ baselines (one process) */

static int run_baseline(struct lat_run *r, enum row row)
{
	lat_run_reset(r);
	int efd = -1;
	struct reactor *re = NULL;
	if (row != ROW_SPIN && (efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return -errno;
	if ((row == ROW_REACTOR || row == ROW_REACTOR_GUARD) && reactor_start(&re, row == ROW_REACTOR_GUARD) < 0) {
		close(efd);
		return -ENOMEM;
	}
	struct storer st = { .r = r, .word = &r->sh->word, .efd = row == ROW_EFD ? efd : -1, .close_fd = -1 };
	pthread_t th;
	if (pthread_create(&th, NULL, storer_thread, &st)) {
		if (re)
			reactor_stop(re);
		if (efd >= 0)
			close(efd);
		return -EAGAIN;
	}
	int rc = 0;
	for (uint32_t i = 1; i <= r->n && rc == 0; i++) {
		uint64_t t1;
		if (re)
			reactor_arm(re, &r->sh->word, i, efd);
		r->ta[i] = now_ns();
		futex_set(&r->sh->go, i);
		if (row == ROW_SPIN) {
			uint64_t deadline = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
			while (!garuda_reached(__atomic_load_n(&r->sh->word, __ATOMIC_ACQUIRE), i)) {
				cpu_relax();
				if (__atomic_load_n(&r->sh->err, __ATOMIC_RELAXED) || now_ns() > deadline) {
					rc = -ETIMEDOUT;
					break;
				}
			}
			t1 = now_ns();
		} else {
			if (wait_in(efd) < 0) {
				lat_side_fail(r, "waiter: no %s wake for %ld", "eventfd", (long)i);
				rc = -ETIMEDOUT;
				break;
			}
			t1 = now_ns();
			drain_efd(efd);
		}
		if (rc == 0 && record(r, &r->sh->word, i, t1) < 0)
			rc = -EPROTO;
	}
	if (rc)
		lat_side_fail(r, "waiter: %s stopped at %ld", "run", 0);
	pthread_join(th, NULL);
	if (re)
		reactor_stop(re);
	if (efd >= 0)
		close(efd);
	return rc;
}

/* ------------------------------------------------------------------ garuda, raw protocol */

struct gwaiter {
	struct lat_run *r;
	const char *sock;
	enum row row;
};

static int gwaiter_main(void *arg)
{
	struct gwaiter *g = arg;
	struct lat_run *r = g->r;
	struct rc c;
	int e = rc_connect(&c, g->sock);
	if (e) {
		lat_side_fail(r, "waiter: %s failed (%ld)", "connect", e);
		return 1;
	}
	if ((e = rc_segment_open(&c, 1, true, NULL))) {
		lat_side_fail(r, "waiter: %s failed (%ld)", "SEGMENT_OPEN", e);
		rc_close(&c);
		return 1;
	}
	const uint32_t slot = 0;
	uint8_t form = g->row == ROW_G_EVENTFD ? GARUDA_FORM_EVENTFD
		       : g->row == ROW_G_MESSAGE ? GARUDA_FORM_MESSAGE
						 : GARUDA_FORM_DOORBELL;
	struct io_uring ring;
	bool uring = g->row == ROW_G_URING;
	if (uring && (e = io_uring_queue_init(4, &ring, 0))) {
		lat_side_fail(r, "waiter: %s failed (%ld)", "io_uring_queue_init", e);
		rc_close(&c);
		return 1;
	}
	int efd = -1;
	if (form == GARUDA_FORM_EVENTFD) {
		efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (efd < 0 || (e = rc_bind(&c, slot, efd))) {
			lat_side_fail(r, "waiter: %s failed (%ld)", "BIND", e);
			rc_close(&c);
			return 1;
		}
	}
	uint64_t *word = rc_word(&c, slot);
	uint32_t *bell = &c.seg.map->hdr.doorbell;

	struct storer st = { .r = r, .word = word, .efd = -1, .close_fd = c.raw.fd };
	pid_t sp = child_start(storer_main, &st);
	if (sp < 0) {
		lat_side_fail(r, "waiter: %s failed (%ld)", "fork", sp);
		rc_close(&c);
		return 1;
	}

	int rc = 0;
	for (uint32_t i = 1; i <= r->n && rc == 0; i++) {
		uint32_t bell0 = __atomic_load_n(bell, __ATOMIC_ACQUIRE);
		if ((e = rc_arm(&c, slot, i, i, form))) {
			lat_side_fail(r, "waiter: %s failed (%ld)", "ARM", e);
			rc = 1;
			break;
		}
		r->ta[i] = now_ns();
		futex_set(&r->sh->go, i);
		uint64_t t1 = 0;
		if (form == GARUDA_FORM_EVENTFD) {
			if (wait_in(efd) < 0) {
				lat_side_fail(r, "waiter: no eventfd readiness for %s %ld", "sequence", i);
				rc = 1;
				break;
			}
			t1 = now_ns();
			drain_efd(efd);
		} else if (form == GARUDA_FORM_MESSAGE) {
			if (wait_in(c.raw.fd) < 0) {
				lat_side_fail(r, "waiter: no READY for %s %ld", "sequence", i);
				rc = 1;
				break;
			}
			t1 = now_ns();
			struct garuda_msg m;
			if ((e = rc_recv(&c, &m, 0)) || m.type != GARUDA_MSG_READY || m.ready.token != i) {
				lat_side_fail(r, "waiter: wrong READY (%s %ld)", "error", e ? e : (long)m.type);
				rc = 1;
				break;
			}
		} else {
			uint64_t deadline = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
			/* block on the doorbell until the word is there; t1 after the wake */
			for (;;) {
				if (garuda_reached(__atomic_load_n(word, __ATOMIC_ACQUIRE), i) &&
				    __atomic_load_n(bell, __ATOMIC_ACQUIRE) != bell0)
					break;
				uint64_t now = now_ns();
				if (now > deadline)
					break;
				if (uring)
					uring_bell_wait(&ring, bell, bell0, deadline - now);
				else
					futex_wait(bell, bell0, deadline - now);
			}
			t1 = now_ns();
			if (__atomic_load_n(bell, __ATOMIC_ACQUIRE) == bell0) {
				lat_side_fail(r, "waiter: no doorbell for %s %ld", "sequence", i);
				rc = 1;
				break;
			}
		}
		if (record(r, word, i, t1) < 0)
			rc = 1;
	}
	if (child_wait(sp, BENCH_HANG_MS) != 0 && !rc) {
		lat_side_fail(r, "waiter: the %s process failed (%ld)", "storer", 0);
		rc = 1;
	}
	if (efd >= 0)
		close(efd);
	if (uring)
		io_uring_queue_exit(&ring);
	rc_close(&c);
	return rc;
}

/* ------------------------------------------------------------------ section */

/* What one row gathered over the rounds. */
struct row_acc {
	uint64_t *lat, *gap; /* lat: store -> wake; gap: arm -> store */
	unsigned n;
	const char *skipped; /* not run (why), or NULL */
	char why[200];       /* storage for skipped */
};

static void print_row(cJSON *rows, enum row row, struct row_acc *a, const char *note, double *p50_out)
{
	if (a->skipped || a->n == 0) {
		const char *why = a->skipped ? a->skipped : "no samples";
		printf("  %-36s   (not run: %s)\n", row_label[row], why);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "row", row_key[row]);
		cJSON_AddStringToObject(o, "label", row_label[row]);
		cJSON_AddStringToObject(o, "skipped", why);
		cJSON_AddItemToArray(rows, o);
		return;
	}
	struct lat_stats st, gap;
	lat_compute(a->gap, a->n, &gap);
	lat_compute(a->lat, a->n, &st);
	printf("  %-36s %7llu %8.2f %8.2f %8.2f %9.2f %9.1f\n", row_label[row], (unsigned long long)st.n,
	       st.p50 / 1e3, st.p99 / 1e3, st.p999 / 1e3, st.max / 1e3, gap.p50 / 1e3);
	fflush(stdout);
	cJSON *o = lat_json(&st);
	cJSON_AddNumberToObject(o, "arm_to_store_p50_us", gap.p50 / 1e3);
	cJSON_AddNumberToObject(o, "arm_to_store_p99_us", gap.p99 / 1e3);
	cJSON_AddStringToObject(o, "row", row_key[row]);
	cJSON_AddStringToObject(o, "label", row_label[row]);
	if (note)
		cJSON_AddStringToObject(o, "note", note);
	cJSON_AddItemToArray(rows, o);
	if (p50_out)
		*p50_out = st.p50;
}

/* Append a finished chunk's samples to the row. */
static void take_chunk(struct row_acc *a, struct lat_run *r)
{
	for (unsigned i = 1; i <= r->n; i++) {
		a->lat[a->n] = r->lat[i];
		a->gap[a->n++] = r->t0[i] > r->ta[i] ? r->t0[i] - r->ta[i] : 0;
	}
}

static bool chunk_ok(struct bench *b, struct lat_run *r, enum row row, int rc)
{
	if (rc == 0 && !r->sh->err)
		return true;
	bench_fail(b, "latency %s: %s", row_key[row], r->sh->err ? r->sh->msg : strerror(rc < 0 ? -rc : EIO));
	return false;
}

/* One chunk of one row; returns 0, or -1 after recording why (in a->skipped). */
static int run_chunk(struct bench *b, enum row row, struct lat_run *r, const char *sock, struct row_acc *a)
{
	lat_run_reset(r);
	unsigned limit = (unsigned)(r->n / 1000 + 1) * 1000 + 4 * BENCH_HANG_MS;
	int rc;
	if (row <= ROW_REACTOR_GUARD) {
		rc = run_baseline(r, row);
	} else if (row <= ROW_G_URING) {
		struct gwaiter g = { .r = r, .sock = sock, .row = row };
		pid_t w = child_start(gwaiter_main, &g);
		rc = w < 0 ? (int)w : child_wait(w, limit) == 0 ? 0 : -EIO;
	} else {
#ifdef HAVE_LIBGARUDA
		char *status = r->sh->msg; /* set-up failures land here, without err */
		struct lat_lgwaiter g = { .r = r, .sock = sock, .status = status };
		pid_t w = child_start(lat_lgwaiter_main, &g);
		rc = w < 0 ? (int)w : child_wait(w, limit) == 0 ? 0 : -EIO;
		if (rc && !r->sh->err && status[0]) { /* libgaruda not usable (yet): say so */
			snprintf(a->why, sizeof(a->why), "libgaruda: %s", status);
			a->skipped = a->why;
			return -1;
		}
#else
		a->skipped = "libgaruda not built";
		return -1;
#endif
	}
	if (!chunk_ok(b, r, row, rc)) {
		a->skipped = "broken run";
		return -1;
	}
	take_chunk(a, r);
	return 0;
}

int bench_latency(struct bench *b)
{
	/* the rows take turns in rounds, so background load drifting over the run hits
	 * every row alike */
	unsigned rounds = b->o.quick ? 5 : 10;
	unsigned chunk = (b->o.lat_samples + rounds - 1) / rounds;
	struct lat_run r = { 0 };
	struct row_acc acc[ROW_N_] = { 0 };
	bool mem = lat_run_init(&r, chunk, (uint64_t)b->o.gap_us * 1000) == 0;
	for (enum row row = 0; mem && row < ROW_N_; row++) {
		acc[row].lat = malloc((size_t)chunk * rounds * sizeof(uint64_t));
		acc[row].gap = malloc((size_t)chunk * rounds * sizeof(uint64_t));
		mem = acc[row].lat && acc[row].gap;
	}
	int ret = -1;
	struct gd_daemon d = { .pid = -1, .ctl_fd = -1 };
	if (!mem) {
		bench_fail(b, "latency: out of memory");
		goto out;
	}
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	cJSON *sec = cJSON_AddObjectToObject(b->json, "latency");
	cJSON_AddNumberToObject(sec, "gap_us", b->o.gap_us);
	cJSON_AddNumberToObject(sec, "samples_per_row", chunk * rounds);
	cJSON_AddNumberToObject(sec, "rounds", rounds);
	cJSON *rows = cJSON_AddArrayToObject(sec, "rows");
	char cfg[256];
	snprintf(cfg, sizeof(cfg), "{\"spin_us\":%u,\"max_sleep_us\":%u,\"scanners\":1}", b->o.spin_us,
		 b->o.max_sleep_us);
	cJSON_AddStringToObject(sec, "garudad_config", cfg);

	printf("\n1. Wake latency, waiter blocked (us, store -> wake; %u completions per row in %u interleaved\n"
	       "   rounds; simulated kernel %u us between arm and store; garudad spin_us=%u max_sleep_us=%u)\n",
	       chunk * rounds, rounds, b->o.gap_us, b->o.spin_us, b->o.max_sleep_us);
	bool daemon = bd_start(b, &d, cfg) == 0;
	if (!daemon)
		for (enum row row = ROW_G_EVENTFD; row < ROW_N_; row++)
			acc[row].skipped = "garudad did not start";
	struct io_uring probe_ring;
	if (io_uring_queue_init(2, &probe_ring, 0) == 0) {
		if (!uring_futex_wait_supported(&probe_ring))
			acc[ROW_G_URING].skipped = "this kernel has no IORING_OP_FUTEX_WAIT (Linux 6.7)";
		io_uring_queue_exit(&probe_ring);
	} else {
		acc[ROW_G_URING].skipped = "io_uring refused here";
	}
	for (unsigned round = 0; round < rounds; round++)
		for (enum row row = 0; row < ROW_N_; row++)
			if (!acc[row].skipped)
				run_chunk(b, row, &r, d.sock, &acc[row]);

	printf("  %-36s %7s %8s %8s %8s %9s %9s\n", "", "n", "p50", "p99", "p99.9", "max", "arm>store");
	double bell_p50 = NAN, uring_p50 = NAN;
	double *p50[ROW_N_] = { [ROW_EFD] = &b->keys.lat_p50_b, [ROW_REACTOR] = &b->keys.lat_p50_c,
				[ROW_G_EVENTFD] = &b->keys.lat_p50_efd, [ROW_G_DOORBELL] = &bell_p50,
				[ROW_G_URING] = &uring_p50 };
	for (enum row row = 0; row < ROW_N_; row++)
		print_row(rows, row, &acc[row],
			  row == ROW_LIBGARUDA ? "host stream (a worker thread of the waiter's process) stamps and "
						 "stores; default plan: spin 20 us, backstop 1 ms; eventfd form"
			  : row == ROW_REACTOR_GUARD ? "diagnostic: (c) delivering with garudad's eventfd sequence "
						       "(guard timer re-armed every 5 ms, fcntl F_GETFL, write)"
						     : NULL,
			  p50[row]);
	printf("  (arm>store: p50 us from the arm to the store; garudad's scanner spins spin_us after\n"
	       "   the first arm or a completion, then sleeps 32, 64, ... us up to max_sleep_us)\n");
	/* the io_uring doorbell: the same garudad delivery as the doorbell futex row, so
	 * their ratio is the cost of the client's wait alone */
	double r_bell = uring_p50 / bell_p50, r_efd = uring_p50 / b->keys.lat_p50_efd;
	printf("  io_uring doorbell p50 / doorbell futex p50 %.2fx, / garuda eventfd p50 %.2fx\n", r_bell, r_efd);
	if (!isnan(r_bell))
		cJSON_AddNumberToObject(sec, "uring_doorbell_over_doorbell_p50", r_bell);
	if (!isnan(r_efd))
		cJSON_AddNumberToObject(sec, "uring_doorbell_over_eventfd_p50", r_efd);
	ret = 0;
out:
	if (d.pid > 0)
		bd_stop(b, &d);
	for (enum row row = 0; row < ROW_N_; row++) {
		free(acc[row].lat);
		free(acc[row].gap);
	}
	shm_free(r.sh, r.bytes);
	return ret;
}
