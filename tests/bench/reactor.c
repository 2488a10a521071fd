/* reactor.c — see reactor.h. */
#include "reactor.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
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
	bool guard;
	timer_t timer;
	bool timer_ok;
	uint64_t guard_expiry; /* thread-private */
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

/* garudad's eventfd delivery sequence (daemon/scanner.c): a one-shot 10 ms guard timer
 * re-armed when less than half of it is left, then fcntl(F_GETFL), then the write. */
#define GUARD_NS 10000000ull

static void fire(struct reactor *r, const struct rarm *a)
{
	uint64_t one = 1;
	if (r->timer_ok) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		if (now + GUARD_NS / 2 >= r->guard_expiry) {
			struct itimerspec its = { .it_value.tv_nsec = (long)GUARD_NS };
			timer_settime(r->timer, 0, &its, NULL);
			r->guard_expiry = now + GUARD_NS;
		}
		if (fcntl(a->efd, F_GETFL) < 0)
			return;
	}
	ssize_t n = write(a->efd, &one, sizeof(one));
	(void)n; /* EAGAIN: saturated, readable anyway */
}

static void guard_handler(int sig)
{
	(void)sig;
}

static void *reactor_main(void *arg)
{
	struct reactor *r = arg;
	if (r->guard) {
		struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN + 1 };
		sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
		r->timer_ok = timer_create(CLOCK_MONOTONIC, &sev, &r->timer) == 0;
	}
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
				fire(r, a);
				*a = r->armed[--r->narmed];
			} else {
				i++;
			}
		}
		cpu_relax();
	}
	r->cpu_ns = thread_cpu_ns();
	if (r->timer_ok)
		timer_delete(r->timer);
	return NULL;
}

int reactor_start(struct reactor **out, bool guard)
{
	struct reactor *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->guard = guard;
	if (guard) { /* a no-op handler without SA_RESTART, as garudad installs */
		struct sigaction sa = { .sa_handler = guard_handler };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGRTMIN + 1, &sa, NULL);
	}
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
