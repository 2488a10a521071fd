/* reactor.c — see reactor.h. */
#include "reactor.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "seq.h"

#define REACTOR_MAX 256

struct rarm {
	const uint64_t *word;
	uint64_t target;
	int efd;
};

struct reactor {
	pthread_t thread;
	uint64_t cpu_ns; /* set by the thread when it ends */

	pthread_mutex_t lock;
	struct rarm queue[REACTOR_MAX];
	unsigned nqueue;
	atomic_uint seq;   /* bumped per arm; the futex word */
	atomic_int parked;
	atomic_bool stop;

	struct rarm armed[REACTOR_MAX]; /* thread-private */
	unsigned narmed;
};

static void fire(const struct rarm *a)
{
	uint64_t one = 1;
	ssize_t n = write(a->efd, &one, sizeof(one));
	(void)n; /* EAGAIN: saturated, readable anyway */
}

static void *reactor_main(void *arg)
{
	struct reactor *r = arg;
	unsigned seen = atomic_load(&r->seq) - 1; /* take the queue on the first turn */
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		unsigned seq = atomic_load(&r->seq);
		if (seq != seen) {
			seen = seq;
			pthread_mutex_lock(&r->lock);
			for (unsigned i = 0; i < r->nqueue && r->narmed < REACTOR_MAX; i++)
				r->armed[r->narmed++] = r->queue[i];
			r->nqueue = 0;
			pthread_mutex_unlock(&r->lock);
		}
		if (r->narmed == 0) {
			atomic_store(&r->parked, 1);
			if (atomic_load(&r->seq) == seen && !atomic_load(&r->stop))
				syscall(SYS_futex, &r->seq, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
			atomic_store(&r->parked, 0);
			continue;
		}
		for (unsigned i = 0; i < r->narmed;) {
			struct rarm *a = &r->armed[i];
			if (garuda_reached(__atomic_load_n(a->word, __ATOMIC_ACQUIRE), a->target)) {
				fire(a);
				*a = r->armed[--r->narmed];
			} else {
				i++;
			}
		}
		cpu_relax();
	}
	r->cpu_ns = thread_cpu_ns();
	return NULL;
}

int reactor_start(struct reactor **out)
{
	struct reactor *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	int e = pthread_create(&r->thread, NULL, reactor_main, r);
	if (e) {
		pthread_mutex_destroy(&r->lock);
		free(r);
		return -e;
	}
	*out = r;
	return 0;
}

static void kick(struct reactor *r)
{
	atomic_fetch_add(&r->seq, 1);
	if (atomic_load(&r->parked))
		syscall(SYS_futex, &r->seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void reactor_arm(struct reactor *r, const uint64_t *word, uint64_t target, int efd)
{
	pthread_mutex_lock(&r->lock);
	if (r->nqueue < REACTOR_MAX)
		r->queue[r->nqueue++] = (struct rarm){ .word = word, .target = target, .efd = efd };
	pthread_mutex_unlock(&r->lock);
	kick(r);
}

uint64_t reactor_stop(struct reactor *r)
{
	atomic_store(&r->stop, true);
	kick(r);
	pthread_join(r->thread, NULL);
	uint64_t cpu = r->cpu_ns;
	pthread_mutex_destroy(&r->lock);
	free(r);
	return cpu;
}
