/* closer.c — the closer thread: see closer.h. */
#include "closer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"
#include "log.h"

/* The one closer of the process: fdio's hook (fdio_set_closer) takes no context, so
 * its queue cannot hang off struct daemon. Everything below `lock` is under it. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t work; /* the thread waits here: an fd queued, or stopping */
	pthread_cond_t done; /* closer_stop() waits here (CLOCK_MONOTONIC): the thread ended */
	int *q;              /* queued fds, q[0..n): a stack; the order of closes is moot */
	size_t n, cap;       /* cap >= CLOSER_QUEUE_MAX from the start: the bound never allocates */
	bool running;        /* started and not stopped: closer_close() queues */
	bool stopping;       /* closer_stop(): close what is queued, then end */
	bool exited;         /* the thread is past its last close */
	bool busy;           /* the thread is in a close (it owns that fd) */
	pthread_t thread;
	uint64_t handed, closed_here, over_bound;
} C = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void *closer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "garuda-closer");
	pthread_mutex_lock(&C.lock);
	for (;;) {
		while (!C.n && !C.stopping)
			pthread_cond_wait(&C.work, &C.lock);
		if (!C.n)
			break; /* stopping, and nothing left */
		int fd = C.q[--C.n];
		C.busy = true;
		pthread_mutex_unlock(&C.lock);
		close(fd); /* may block as long as the fd's owner likes: that is the point */
		pthread_mutex_lock(&C.lock);
		C.busy = false;
	}
	C.exited = true;
	pthread_cond_broadcast(&C.done);
	pthread_mutex_unlock(&C.lock);
	return NULL;
}

/* fdio's hook: the fds it closes itself come here */
static void closer_hook(int fd)
{
	(void)closer_close(fd);
}

int closer_start(void)
{
	pthread_mutex_lock(&C.lock);
	bool already = C.running || C.q;
	pthread_mutex_unlock(&C.lock);
	if (already)
		return -EALREADY;
	int *q = malloc(CLOSER_QUEUE_MAX * sizeof(*q));
	if (!q)
		return -ENOMEM;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&C.done, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&C.work, NULL);
	C.q = q;
	C.cap = CLOSER_QUEUE_MAX;
	/* no signal is ever the closer's: created with all of them blocked */
	sigset_t all, was;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	int r = -pthread_create(&C.thread, NULL, closer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (r) {
		pthread_cond_destroy(&C.work);
		pthread_cond_destroy(&C.done);
		free(C.q);
		C.q = NULL;
		C.cap = 0;
		return r;
	}
	pthread_mutex_lock(&C.lock);
	C.running = true;
	pthread_mutex_unlock(&C.lock);
	fdio_set_closer(closer_hook);
	return 0;
}

void closer_stop(void)
{
	pthread_mutex_lock(&C.lock);
	bool running = C.running;
	pthread_mutex_unlock(&C.lock);
	if (!running)
		return;
	fdio_set_closer(NULL);
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += CLOSER_STOP_WAIT_MS / 1000;
	dl.tv_nsec += (long)(CLOSER_STOP_WAIT_MS % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&C.lock);
	C.running = false; /* from now on closer_close() closes on the spot */
	C.stopping = true;
	pthread_cond_signal(&C.work);
	while (!C.exited)
		if (pthread_cond_timedwait(&C.done, &C.lock, &dl) == ETIMEDOUT)
			break;
	bool exited = C.exited;
	size_t left = C.n + (C.busy ? 1 : 0);
	pthread_mutex_unlock(&C.lock);
	if (!exited) {
		/* blocked in a close (a FUSE server that never answers, a TCP linger): left
		 * behind; its queue and lock stay as they are for it, and the process's exit
		 * ends the close */
		pthread_detach(C.thread);
		log_warning("closer: %zu fd(s) that clients sent still being closed after %d ms "
			    "(a FUSE file whose server does not answer, a TCP socket lingering); "
			    "exiting without them",
			    left, CLOSER_STOP_WAIT_MS);
		return;
	}
	pthread_join(C.thread, NULL);
	pthread_cond_destroy(&C.work);
	pthread_cond_destroy(&C.done);
	pthread_mutex_lock(&C.lock);
	free(C.q);
	C.q = NULL;
	C.cap = 0;
	pthread_mutex_unlock(&C.lock);
}

/* Whether closing fd on this thread cannot block, told without asking the fd's file
 * system anything (fstat or fstatfs would: a FUSE file's GETATTR or STATFS waits on
 * its server as its FLUSH does). Only kinds whose last close neither calls into a
 * peer nor drops files the fd holds (an AF_UNIX socket's queue can carry fds, and
 * their last references would drop on this thread: not here): a shmem file (a memfd:
 * F_GET_SEALS answers only for those), a pipe, and the anon inodes of eventfd, timerfd,
 * signalfd and epoll (the link's name; /proc's readlink never reaches a file system). */
static bool close_cannot_block(int fd)
{
	if (fcntl(fd, F_GET_SEALS) >= 0)
		return true;
	char path[40], target[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = '\0';
	static const char *const safe[] = { "anon_inode:[eventfd]", "anon_inode:[timerfd]",
					    "anon_inode:[signalfd]", "anon_inode:[eventpoll]" };
	if (strncmp(target, "pipe:[", 6) == 0)
		return true;
	for (size_t i = 0; i < sizeof(safe) / sizeof(safe[0]); i++)
		if (strcmp(target, safe[i]) == 0)
			return true;
	return false;
}

/* Queue fd past the bound: the queue grows (doubling). false: no memory. */
static bool push_over(int fd)
{
	if (C.n == C.cap) {
		size_t cap = C.cap * 2;
		int *q = realloc(C.q, cap * sizeof(*q));
		if (!q)
			return false;
		C.q = q;
		C.cap = cap;
	}
	C.q[C.n++] = fd;
	return true;
}

int closer_close(int fd)
{
	if (fd < 0)
		return 0;
	pthread_mutex_lock(&C.lock);
	if (!C.running) {
		pthread_mutex_unlock(&C.lock);
		close(fd);
		return 0;
	}
	C.handed++;
	if (C.n < CLOSER_QUEUE_MAX) {
		C.q[C.n++] = fd;
		pthread_cond_signal(&C.work);
		pthread_mutex_unlock(&C.lock);
		return 0;
	}
	pthread_mutex_unlock(&C.lock);
	/* the queue is full: the closer is stuck in closes (or far behind) */
	bool safe = close_cannot_block(fd);
	pthread_mutex_lock(&C.lock);
	bool queued = !safe && C.running && push_over(fd);
	if (queued) {
		C.over_bound++;
		pthread_cond_signal(&C.work);
	} else {
		C.closed_here++;
	}
	size_t pending = C.n + (C.busy ? 1 : 0);
	bool running = C.running;
	pthread_mutex_unlock(&C.lock);
	if (queued) {
		log_client(LOG_UID_NONE, LOG_WARNING, "closer: %zu fds that clients sent wait to be closed, over "
			   "the bound of %d (closes that block: FUSE files, lingering TCP sockets); "
			   "the session that sent the last one is ended",
			   pending, CLOSER_QUEUE_MAX);
		return -ENOSPC;
	}
	if (!safe && running)
		log_warning("closer: out of memory for its queue: closing an fd a client sent on "
			    "the loop thread (it may block)");
	close(fd);
	return 0;
}

int closer_close_all(int *fds, unsigned n)
{
	int r = 0;
	for (unsigned i = 0; i < n; i++) {
		if (fds[i] >= 0 && closer_close(fds[i]) == -ENOSPC)
			r = -ENOSPC;
		fds[i] = -1;
	}
	return r;
}

void closer_stats(struct closer_stats *out)
{
	pthread_mutex_lock(&C.lock);
	*out = (struct closer_stats){ .handed = C.handed,
				      .closed_here = C.closed_here,
				      .over_bound = C.over_bound,
				      .pending = C.n + (C.busy ? 1 : 0) };
	pthread_mutex_unlock(&C.lock);
}
