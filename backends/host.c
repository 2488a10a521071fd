/* host.c — the `host` backend (the CPU as a device) and host streams (host.h).
 *
 * A host stream is a worker thread draining a bounded ring of items under one mutex;
 * see host.h for what it promises (FIFO order, release stores after earlier work,
 * sticky faults, bounded depth, free() lets queued work finish).
 *
 * The backend: open() accepts device 0 only (the CPU). numa_node() is -1 unless
 * GARUDA_HOST_NUMA_NODE names a node (0..GARUDA_NUMA_MAX), which lets tests place a
 * simulated device on a NUMA node. register_memory() is bookkeeping: the CPU can
 * store anywhere it has mapped. enqueue_store() checks that the word lies inside the
 * registration, then stores now (stream NULL, a release store from the calling
 * thread) or enqueues a store on the host stream. query() on NULL is always 0.
 * A registration holds a reference on its backend, so close() with registrations
 * still alive defers the free until the last one is unregistered.
 *
 * The public host-stream calls (<garuda/host.h>) are libgaruda's too, so they keep
 * garuda_last_error()'s contract: each failing return goes through the hook libgaruda
 * installs (host_stream_on_fail()); the backend's own calls (query, synchronize,
 * enqueue_store) bypass it, so a libgaruda call that succeeds never touches the text.
 */
#include "host.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "backend.h"
#include "clock.h"
#include "cpu.h"
#include "errcode.h"
#include "internal.h"
#include "wire.h" /* GARUDA_NUMA_MAX */

/* ---- host streams ---------------------------------------------------------- */

/* libgaruda's client_fail(), or NULL (the backends alone, in their tests) */
static int (*fail_hook)(int code);

void host_stream_on_fail(int (*fail)(int code))
{
	fail_hook = fail;
}

/* r as a public host-stream call returns it */
static int public_return(int r)
{
	return r < 0 && fail_hook ? fail_hook(r) : r;
}

enum item_kind { ITEM_WORK, ITEM_STORE, ITEM_FAULT, ITEM_STAMP, ITEM_CALL };

struct item {
	enum item_kind kind;
	uint64_t value;        /* WORK: duration; STORE: value */
	uint64_t *word;        /* STORE, STAMP */
	void (*fn)(void *arg); /* CALL */
	void *arg;
};

struct garuda_host_stream {
	pthread_mutex_t mu;
	pthread_cond_t wake; /* worker: an item arrived, or stop */
	pthread_cond_t room; /* producers: the ring has room, or the stream faulted */
	pthread_cond_t idle; /* drain: nothing queued or running, or faulted */
	struct item *ring;
	unsigned depth, head, count;
	bool busy;    /* the worker is running an item it has taken off the ring */
	bool faulted; /* sticky */
	bool stop;
	bool nonblock;
	uint64_t spin_ns;
	pthread_t worker;
};

static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000ull),
			       .tv_nsec = (long)(deadline_ns % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void run_work(const struct garuda_host_stream *s, uint64_t duration_ns)
{
	uint64_t start = garuda_now_ns();
	uint64_t deadline = start + duration_ns;
	if (duration_ns > s->spin_ns)
		sleep_until(deadline - s->spin_ns);
	while (garuda_now_ns() < deadline)
		cpu_relax();
}

static void run_item(const struct garuda_host_stream *s, const struct item *it)
{
	switch (it->kind) {
	case ITEM_WORK:
		run_work(s, it->value);
		break;
	case ITEM_STORE:
		__atomic_store_n(it->word, it->value, __ATOMIC_RELEASE);
		break;
	case ITEM_STAMP:
		__atomic_store_n(it->word, garuda_now_ns(), __ATOMIC_RELEASE);
		break;
	case ITEM_CALL:
		it->fn(it->arg);
		break;
	case ITEM_FAULT:
		break; /* the worker marks the stream faulted under the lock */
	}
}

static void *worker_main(void *arg)
{
	struct garuda_host_stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->count == 0 && !s->stop)
			pthread_cond_wait(&s->wake, &s->mu);
		if (s->count == 0)
			break; /* stop requested and nothing left */
		struct item it = s->ring[s->head];
		s->head = (s->head + 1) % s->depth;
		s->count--;
		s->busy = true;
		pthread_cond_broadcast(&s->room);
		pthread_mutex_unlock(&s->mu);

		run_item(s, &it);

		pthread_mutex_lock(&s->mu);
		s->busy = false;
		if (it.kind == ITEM_FAULT) {
			s->faulted = true;
			s->count = 0; /* discard: a faulted context runs nothing more */
			pthread_cond_broadcast(&s->room);
		}
		if (s->count == 0)
			pthread_cond_broadcast(&s->idle);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static int stream_new(const struct garuda_host_stream_config *cfg,
		      struct garuda_host_stream **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	unsigned depth = cfg && cfg->depth ? cfg->depth : GARUDA_HOST_STREAM_DEPTH;
	if (depth > GARUDA_HOST_STREAM_DEPTH_MAX)
		return -EINVAL;

	struct garuda_host_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ring = calloc(depth, sizeof(*s->ring));
	if (!s->ring) {
		free(s);
		return -ENOMEM;
	}
	s->depth = depth;
	s->spin_ns = cfg ? cfg->spin_ns : 0;
	s->nonblock = cfg && cfg->nonblock;

	int r;
	pthread_condattr_t ca;
	if ((r = pthread_condattr_init(&ca)))
		goto fail_ring;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->wake, &ca);
	pthread_cond_init(&s->room, &ca);
	pthread_cond_init(&s->idle, &ca);
	pthread_condattr_destroy(&ca);
	/* the worker runs with every signal blocked, as libgaruda's own threads do
	 * (garuda.h): a process-directed signal (a SIGTERM the program reads from a
	 * signalfd, with it blocked in its own threads) must never land here */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&s->worker, NULL, worker_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		goto fail_sync;
	*out = s;
	return 0;

fail_sync:
	pthread_cond_destroy(&s->idle);
	pthread_cond_destroy(&s->room);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->mu);
fail_ring:
	free(s->ring);
	free(s);
	return -r;
}

int garuda_host_stream_new(const struct garuda_host_stream_config *cfg,
			   struct garuda_host_stream **out)
{
	return public_return(stream_new(cfg, out));
}

void garuda_host_stream_free(struct garuda_host_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->wake);
	pthread_cond_broadcast(&s->room);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->worker, NULL);
	pthread_cond_destroy(&s->idle);
	pthread_cond_destroy(&s->room);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->mu);
	free(s->ring);
	free(s);
}

static int enqueue(struct garuda_host_stream *s, const struct item *it)
{
	if (!s)
		return -EINVAL;
	int r = 0;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (s->faulted) {
			r = -GARUDA_E_STREAM_FAULT;
			break;
		}
		if (s->stop) {
			r = -EINVAL; /* enqueue racing free(): a caller bug, refused */
			break;
		}
		if (s->count < s->depth) {
			s->ring[(s->head + s->count) % s->depth] = *it;
			s->count++;
			pthread_cond_signal(&s->wake);
			break;
		}
		if (s->nonblock) {
			r = -EAGAIN;
			break;
		}
		pthread_cond_wait(&s->room, &s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return r;
}

int garuda_host_stream_enqueue_work(struct garuda_host_stream *s, uint64_t duration_ns)
{
	return public_return(enqueue(s, &(struct item){ .kind = ITEM_WORK, .value = duration_ns }));
}

int garuda_host_stream_enqueue_store(struct garuda_host_stream *s, uint64_t *word,
				     uint64_t value)
{
	if (!word || ((uintptr_t)word & 7u))
		return -EINVAL;
	return enqueue(s, &(struct item){ .kind = ITEM_STORE, .word = word, .value = value });
}

int garuda_host_stream_enqueue_fault(struct garuda_host_stream *s)
{
	return public_return(enqueue(s, &(struct item){ .kind = ITEM_FAULT }));
}

int garuda_host_stream_enqueue_stamp(struct garuda_host_stream *s, uint64_t *out_ns)
{
	if (!out_ns || ((uintptr_t)out_ns & 7u))
		return public_return(-EINVAL);
	return public_return(enqueue(s, &(struct item){ .kind = ITEM_STAMP, .word = out_ns }));
}

int garuda_host_stream_enqueue_call(struct garuda_host_stream *s, void (*fn)(void *arg),
				    void *arg)
{
	if (!fn)
		return public_return(-EINVAL);
	return public_return(enqueue(s, &(struct item){ .kind = ITEM_CALL, .fn = fn, .arg = arg }));
}

static int stream_query(struct garuda_host_stream *s)
{
	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->mu);
	int r = s->faulted ? -GARUDA_E_STREAM_FAULT : (s->count || s->busy) ? -EAGAIN : 0;
	pthread_mutex_unlock(&s->mu);
	return r;
}

static int stream_drain(struct garuda_host_stream *s)
{
	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->mu);
	while (!s->faulted && (s->count || s->busy))
		pthread_cond_wait(&s->idle, &s->mu);
	int r = s->faulted ? -GARUDA_E_STREAM_FAULT : 0;
	pthread_mutex_unlock(&s->mu);
	return r;
}

int garuda_host_stream_query(struct garuda_host_stream *s)
{
	return public_return(stream_query(s));
}

int garuda_host_stream_drain(struct garuda_host_stream *s)
{
	return public_return(stream_drain(s));
}

/* ---- the host backend ------------------------------------------------------- */

struct garuda_backend {
	atomic_int refs; /* 1 for the opener + 1 per live registration */
	int numa;
};

struct garuda_backend_reg {
	struct garuda_backend *b;
	void *addr;
	size_t bytes;
};

static void host_unref(struct garuda_backend *b)
{
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
		free(b);
}

static int host_env_numa(void)
{
	const char *v = getenv("GARUDA_HOST_NUMA_NODE");
	if (!v || !*v)
		return -1;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < 0 || n > GARUDA_NUMA_MAX)
		return -1;
	return (int)n;
}

static int host_open(int device, struct garuda_backend **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (device != 0)
		return -ENODEV; /* the CPU is device 0, the only one */
	struct garuda_backend *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	atomic_init(&b->refs, 1);
	b->numa = host_env_numa();
	*out = b;
	return 0;
}

static void host_close(struct garuda_backend *b)
{
	if (b)
		host_unref(b);
}

static int host_numa_node(struct garuda_backend *b)
{
	return b ? b->numa : -1;
}

static int host_register(struct garuda_backend *b, void *addr, size_t bytes,
			 struct garuda_backend_reg **out)
{
	int r0 = gbk_register_args(b, addr, bytes, out);
	if (r0)
		return r0;
	struct garuda_backend_reg *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	reg->b = b;
	reg->addr = addr;
	reg->bytes = bytes;
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	*out = reg;
	return 0;
}

static int host_unregister(struct garuda_backend *b, struct garuda_backend_reg *reg)
{
	if (!b || !reg || reg->b != b)
		return -EINVAL;
	free(reg);
	host_unref(b);
	return 0;
}

static int host_enqueue_store(struct garuda_backend *b, void *stream,
			      struct garuda_backend_reg *reg, uint64_t *word, uint64_t value)
{
	if (!b || !reg || reg->b != b)
		return -EINVAL;
	int r = gbk_word_check(reg->addr, reg->bytes, word);
	if (r < 0)
		return r;
	if (!stream) {
		__atomic_store_n(word, value, __ATOMIC_RELEASE);
		return 0;
	}
	return garuda_host_stream_enqueue_store(stream, word, value);
}

static int host_synchronize(struct garuda_backend *b, void *stream)
{
	(void)b;
	return stream ? stream_drain(stream) : 0;
}

static int host_query(struct garuda_backend *b, void *stream)
{
	if (!b)
		return -EINVAL;
	return stream ? stream_query(stream) : 0;
}

const struct garuda_backend_ops garuda_backend_host = {
	.name = "host",
	.open = host_open,
	.close = host_close,
	.numa_node = host_numa_node,
	.register_memory = host_register,
	.unregister_memory = host_unregister,
	.enqueue_store = host_enqueue_store,
	.query = host_query,
	.synchronize = host_synchronize,
};
