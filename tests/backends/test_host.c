/* test_host.c — the host backend and host streams (backends/host.h).
 *
 * Pins: FIFO order; a store lands only after the work queued before it, as a release
 * store; stream NULL stores at once; a fault is sticky, discards queued stores and is
 * reported by query/drain/enqueue; the bounded FIFO blocks or refuses; free() lets
 * queued work finish; the backend checks words against registrations and refcounts
 * itself across close(). No test depends on timing to pass: waits use gates, and
 * durations are only checked as lower bounds.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "backend.h"
#include "clock.h"
#include "errcode.h"
#include "fdcheck.h"
#include "host.h"

TestSuite(host, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 60);

/* A gate: a call item that blocks the worker until the test opens it. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
	int reached;
};
#define GATE_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 }

static void gate_wait(void *arg)
{
	struct gate *g = arg;
	pthread_mutex_lock(&g->mu);
	g->reached = 1;
	pthread_cond_broadcast(&g->cv);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = 1;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static void gate_await_reached(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	while (!g->reached)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

static uint64_t load(const uint64_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

/* A word-aligned area standing in for a segment's lines. */
static uint64_t area[64] __attribute__((aligned(64)));

Test(host, find_names_each_backend)
{
	cr_assert_eq(garuda_backend_find("host"), &garuda_backend_host);
	cr_assert_eq(garuda_backend_find("cuda"), &garuda_backend_cuda);
	cr_assert_eq(garuda_backend_find("hip"), &garuda_backend_hip);
	cr_assert_null(garuda_backend_find("HOST"));
	cr_assert_null(garuda_backend_find("vulkan"));
	cr_assert_null(garuda_backend_find(""));
	cr_assert_null(garuda_backend_find(NULL));
	cr_assert_str_eq(garuda_backend_host.name, "host");
	cr_assert_str_eq(garuda_backend_cuda.name, "cuda");
	cr_assert_str_eq(garuda_backend_hip.name, "hip");
}

Test(host, open_device_zero_only)
{
	const struct garuda_backend_ops *ops = &garuda_backend_host;
	struct garuda_backend *b = (void *)1;
	cr_assert_eq(ops->open(1, &b), -ENODEV);
	cr_assert_null(b);
	cr_assert_eq(ops->open(-1, &b), -ENODEV);
	cr_assert_eq(ops->open(0, NULL), -EINVAL);
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), -1);
	ops->close(b);
	ops->close(NULL);
}

Test(host, numa_node_from_env)
{
	const struct garuda_backend_ops *ops = &garuda_backend_host;
	struct garuda_backend *b;
	setenv("GARUDA_HOST_NUMA_NODE", "3", 1);
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), 3);
	ops->close(b);
	const char *bad[] = { "x", "-1", "1x", "99999", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("GARUDA_HOST_NUMA_NODE", bad[i], 1);
		cr_assert_eq(ops->open(0, &b), 0);
		cr_assert_eq(ops->numa_node(b), -1, "'%s'", bad[i]);
		ops->close(b);
	}
}

Test(host, register_checks_arguments)
{
	const struct garuda_backend_ops *ops = &garuda_backend_host;
	struct garuda_backend *b, *other;
	struct garuda_backend_reg *reg = (void *)1;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->open(0, &other), 0);
	cr_assert_eq(ops->register_memory(b, NULL, 64, &reg), -EINVAL);
	cr_assert_null(reg);
	cr_assert_eq(ops->register_memory(b, area, 0, &reg), -EINVAL);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), NULL), -EINVAL);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	cr_assert_eq(ops->unregister_memory(other, reg), -EINVAL, "reg belongs to b");
	cr_assert_eq(ops->unregister_memory(b, NULL), -EINVAL);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(other);
	ops->close(b);
}

Test(host, immediate_store_and_word_checks)
{
	const struct garuda_backend_ops *ops = &garuda_backend_host;
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, &area[8], 8 * sizeof(uint64_t), &reg), 0);

	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[8], 41), 0);
	cr_assert_eq(load(&area[8]), 41, "NULL stream stores before returning");
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[15], 42), 0);
	cr_assert_eq(load(&area[15]), 42);
	cr_assert_eq(ops->query(b, NULL), 0);

	/* outside the registration, unaligned, NULL */
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[7], 1), -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[16], 1), -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, (uint64_t *)((char *)&area[9] + 4), 1),
		     -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, NULL, 1), -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, NULL, NULL, &area[8], 1), -EINVAL);
	cr_assert_eq(load(&area[7]), 0);
	cr_assert_eq(load(&area[16]), 0);
	cr_assert_eq(load(&area[8]), 41);

	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
}

Test(host, close_with_live_registration_defers_free)
{
	const struct garuda_backend_ops *ops = &garuda_backend_host;
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	ops->close(b);
	/* still usable through the registration (ASan would flag a use after free) */
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[0], 5), 0);
	cr_assert_eq(load(&area[0]), 5);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
}

Test(host, store_lands_after_queued_work)
{
	const struct garuda_backend_ops *ops = &garuda_backend_host;
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	struct garuda_host_stream *s;
	struct gate g = GATE_INIT;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	cr_assert_eq(garuda_host_stream_new(NULL, &s), 0);

	cr_assert_eq(ops->query(b, s), 0, "a new stream is idle");
	cr_assert_eq(garuda_host_stream_enqueue_call(s, gate_wait, &g), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[1], 7), 0);
	gate_await_reached(&g);
	cr_assert_eq(load(&area[1]), 0, "the store waits for the work before it");
	cr_assert_eq(ops->query(b, s), -EAGAIN);
	gate_open(&g);
	cr_assert_eq(garuda_host_stream_drain(s), 0);
	cr_assert_eq(load(&area[1]), 7);
	cr_assert_eq(ops->query(b, s), 0);

	garuda_host_stream_free(s);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
}

Test(host, work_lasts_at_least_its_duration)
{
	struct garuda_host_stream *s;
	uint64_t word = 0, before = 0, after = 0;
	const uint64_t dur = 5000000; /* 5 ms */
	struct garuda_host_stream_config cfg = { .spin_ns = 200000 };
	cr_assert_eq(garuda_host_stream_new(&cfg, &s), 0);
	uint64_t t0 = garuda_now_ns();
	cr_assert_eq(garuda_host_stream_enqueue_stamp(s, &before), 0);
	cr_assert_eq(garuda_host_stream_enqueue_work(s, dur), 0);
	cr_assert_eq(garuda_host_stream_enqueue_stamp(s, &after), 0);
	cr_assert_eq(garuda_host_stream_enqueue_store(s, &word, 1), 0);
	while (load(&word) != 1)
		;
	uint64_t seen = garuda_now_ns();
	cr_assert_geq(seen - t0, dur, "the store came %llu ns after enqueue",
		      (unsigned long long)(seen - t0));
	uint64_t b = load(&before), a = load(&after);
	cr_assert_geq(a - b, dur);
	cr_assert_leq(a, seen, "the stamp after the work precedes the store");
	garuda_host_stream_free(s);
}

struct order_log {
	pthread_mutex_t mu;
	int n;
	int seen[256];
};

struct order_item {
	struct order_log *log;
	int id;
};

static void record(void *arg)
{
	struct order_item *it = arg;
	pthread_mutex_lock(&it->log->mu);
	it->log->seen[it->log->n++] = it->id;
	pthread_mutex_unlock(&it->log->mu);
}

Test(host, fifo_order)
{
	struct garuda_host_stream *s;
	static struct order_log log = { .mu = PTHREAD_MUTEX_INITIALIZER };
	static struct order_item items[200];
	static uint64_t word;
	cr_assert_eq(garuda_host_stream_new(NULL, &s), 0);
	for (int i = 0; i < 200; i++) {
		items[i] = (struct order_item){ &log, i };
		if (i % 10 == 0)
			cr_assert_eq(garuda_host_stream_enqueue_work(s, 1000), 0);
		cr_assert_eq(garuda_host_stream_enqueue_call(s, record, &items[i]), 0);
		cr_assert_eq(garuda_host_stream_enqueue_store(s, &word, (uint64_t)i + 1), 0);
	}
	cr_assert_eq(garuda_host_stream_drain(s), 0);
	cr_assert_eq(log.n, 200);
	for (int i = 0; i < 200; i++)
		cr_assert_eq(log.seen[i], i, "item %d ran at position %d", log.seen[i], i);
	cr_assert_eq(load(&word), 200, "the last store wins");
	garuda_host_stream_free(s);
}

struct watcher {
	const uint64_t *word;
	uint64_t last;
	int went_back;
};

static void *watch(void *arg)
{
	struct watcher *w = arg;
	uint64_t prev = 0;
	while (prev < w->last) {
		uint64_t v = load(w->word);
		if (v < prev)
			w->went_back = 1;
		prev = v;
	}
	return NULL;
}

Test(host, stores_seen_in_order_by_another_thread)
{
	struct garuda_host_stream *s;
	static uint64_t word;
	struct watcher w = { &word, 5000, 0 };
	pthread_t t;
	cr_assert_eq(garuda_host_stream_new(NULL, &s), 0);
	cr_assert_eq(pthread_create(&t, NULL, watch, &w), 0);
	for (uint64_t v = 1; v <= w.last; v++)
		cr_assert_eq(garuda_host_stream_enqueue_store(s, &word, v), 0);
	pthread_join(t, NULL);
	cr_assert_eq(w.went_back, 0, "a reader saw the word go backwards");
	garuda_host_stream_free(s);
}

Test(host, fault_is_sticky_and_discards_stores)
{
	const struct garuda_backend_ops *ops = &garuda_backend_host;
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	struct garuda_host_stream *s;
	struct gate g = GATE_INIT;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	cr_assert_eq(garuda_host_stream_new(NULL, &s), 0);

	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[2], 1), 0);
	cr_assert_eq(garuda_host_stream_enqueue_call(s, gate_wait, &g), 0);
	cr_assert_eq(garuda_host_stream_enqueue_fault(s), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[2], 2), 0, "accepted: not yet faulted");
	gate_await_reached(&g);
	cr_assert_eq(ops->query(b, s), -EAGAIN);
	gate_open(&g);
	cr_assert_eq(garuda_host_stream_drain(s), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(ops->query(b, s), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(garuda_host_stream_query(s), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(load(&area[2]), 1, "the store behind the fault never happened");
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[2], 3), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(garuda_host_stream_enqueue_work(s, 1), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(load(&area[2]), 1);

	garuda_host_stream_free(s);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
}

Test(host, nonblocking_fifo_refuses_when_full)
{
	struct garuda_host_stream *s;
	struct gate g = GATE_INIT;
	uint64_t word = 0;
	struct garuda_host_stream_config cfg = { .depth = 2, .nonblock = 1 };
	cr_assert_eq(garuda_host_stream_new(&cfg, &s), 0);
	cr_assert_eq(garuda_host_stream_enqueue_call(s, gate_wait, &g), 0);
	gate_await_reached(&g); /* the gate left the ring: two free places */
	cr_assert_eq(garuda_host_stream_enqueue_store(s, &word, 1), 0);
	cr_assert_eq(garuda_host_stream_enqueue_store(s, &word, 2), 0);
	cr_assert_eq(garuda_host_stream_enqueue_store(s, &word, 3), -EAGAIN);
	gate_open(&g);
	cr_assert_eq(garuda_host_stream_drain(s), 0);
	cr_assert_eq(load(&word), 2);
	garuda_host_stream_free(s);
}

struct producer {
	struct garuda_host_stream *s;
	uint64_t *word;
	uint64_t n;
	int rc;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	for (uint64_t v = 1; v <= p->n && p->rc == 0; v++)
		p->rc = garuda_host_stream_enqueue_store(p->s, p->word, v);
	return NULL;
}

Test(host, blocking_fifo_waits_for_room)
{
	struct garuda_host_stream *s;
	struct gate g = GATE_INIT;
	static uint64_t word;
	struct garuda_host_stream_config cfg = { .depth = 4 };
	cr_assert_eq(garuda_host_stream_new(&cfg, &s), 0);
	cr_assert_eq(garuda_host_stream_enqueue_call(s, gate_wait, &g), 0);
	struct producer p = { s, &word, 100, 0 };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, produce, &p), 0);
	gate_await_reached(&g);
	gate_open(&g);
	pthread_join(t, NULL);
	cr_assert_eq(p.rc, 0);
	cr_assert_eq(garuda_host_stream_drain(s), 0);
	cr_assert_eq(load(&word), 100);
	garuda_host_stream_free(s);
}

Test(host, concurrent_producers)
{
	struct garuda_host_stream *s;
	static uint64_t words[4][8] __attribute__((aligned(64)));
	struct producer p[4];
	pthread_t t[4];
	struct garuda_host_stream_config cfg = { .depth = 16 };
	cr_assert_eq(garuda_host_stream_new(&cfg, &s), 0);
	for (int i = 0; i < 4; i++) {
		p[i] = (struct producer){ s, &words[i][0], 2000, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, produce, &p[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(p[i].rc, 0);
	}
	cr_assert_eq(garuda_host_stream_drain(s), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(load(&words[i][0]), 2000);
	garuda_host_stream_free(s);
}

Test(host, free_lets_queued_work_finish)
{
	struct garuda_host_stream *s;
	uint64_t word = 0;
	cr_assert_eq(garuda_host_stream_new(NULL, &s), 0);
	cr_assert_eq(garuda_host_stream_enqueue_work(s, 2000000), 0);
	cr_assert_eq(garuda_host_stream_enqueue_store(s, &word, 9), 0);
	garuda_host_stream_free(s);
	cr_assert_eq(load(&word), 9);
	garuda_host_stream_free(NULL);
}

Test(host, stream_argument_checks)
{
	struct garuda_host_stream *s = (void *)1;
	uint64_t word[2] = { 0, 0 };
	cr_assert_eq(garuda_host_stream_new(NULL, NULL), -EINVAL);
	struct garuda_host_stream_config big = { .depth = GARUDA_HOST_STREAM_DEPTH_MAX + 1 };
	cr_assert_eq(garuda_host_stream_new(&big, &s), -EINVAL);
	cr_assert_null(s);
	cr_assert_eq(garuda_host_stream_new(NULL, &s), 0);
	cr_assert_eq(garuda_host_stream_enqueue_store(s, NULL, 1), -EINVAL);
	cr_assert_eq(garuda_host_stream_enqueue_store(s, (uint64_t *)((char *)word + 4), 1), -EINVAL);
	cr_assert_eq(garuda_host_stream_enqueue_stamp(s, NULL), -EINVAL);
	cr_assert_eq(garuda_host_stream_enqueue_call(s, NULL, NULL), -EINVAL);
	cr_assert_eq(garuda_host_stream_enqueue_work(NULL, 1), -EINVAL);
	cr_assert_eq(garuda_host_stream_query(NULL), -EINVAL);
	cr_assert_eq(garuda_host_stream_drain(NULL), -EINVAL);
	garuda_host_stream_free(s);
}

/* A program that takes its signals from a signalfd blocks them in its own threads; a
 * host stream's worker, a thread libgaruda started, must not take them either: its
 * signals all stay blocked (garuda.h), so a SIGTERM sent to the process waits in the
 * signalfd instead of killing it there. */
Test(host, the_worker_takes_no_process_signal)
{
	struct garuda_host_stream *s;
	sigset_t none, m;
	sigemptyset(&none);
	/* the worker is made while this thread takes every signal (what it would inherit) */
	cr_assert_eq(pthread_sigmask(SIG_SETMASK, &none, NULL), 0);
	cr_assert_eq(garuda_host_stream_new(NULL, &s), 0);
	sigemptyset(&m);
	sigaddset(&m, SIGTERM);
	cr_assert_eq(pthread_sigmask(SIG_BLOCK, &m, NULL), 0);
	int sfd = signalfd(-1, &m, SFD_CLOEXEC);
	cr_assert_geq(sfd, 0);
	cr_assert_eq(kill(getpid(), SIGTERM), 0);
	/* a worker that takes it (woken for it) ends the process meanwhile; the signal stays
	 * pending when no thread takes it, however long this lasts (no false failure) */
	usleep(200000);
	struct pollfd p = { .fd = sfd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 10000), 1, "SIGTERM did not reach the signalfd");
	struct signalfd_siginfo si;
	cr_assert_eq(read(sfd, &si, sizeof(si)), (ssize_t)sizeof(si));
	cr_assert_eq(si.ssi_signo, (uint32_t)SIGTERM);
	close(sfd);
	garuda_host_stream_free(s);
	cr_assert_eq(pthread_sigmask(SIG_UNBLOCK, &m, NULL), 0);
}
