/* closer.h — garudad's closer thread: it closes the fds a client sent that no handler
 * took (a refused SEGMENT_ATTACH or BIND, fds with a message that takes none, more than
 * a datagram may carry, those of datagrams never read when a session ends or a
 * connection is refused), so that the loop thread never does. Such a close can block for as long as the fd's owner
 * likes: a FUSE file whose server never answers the FLUSH of every close, a TCP socket
 * with SO_LINGER and unsent data (its last close waits up to the linger time). Any
 * member of the client socket's group could otherwise stall the loop (every request,
 * accept, the control socket, the watchdog ping) without even sending HELLO.
 *
 * Promises:
 * - closer_close() never blocks on the fd (nor on the closer thread, beyond a short
 *   mutex), and never leaks it: the fd is closed by the closer thread, or, only when
 *   the queue is full and it is of a kind whose close cannot block (a memfd, a pipe,
 *   an eventfd, timerfd, signalfd or epoll fd; told without asking the fd's file
 *   system: closer.c), on the calling thread.
 * - The queue is bounded: CLOSER_QUEUE_MAX fds wait at most in the bounded part. One
 *   more, when it is not of a kind closed on the spot, is still queued (never closed
 *   on the calling thread) and closer_close() says -ENOSPC: the caller ends the
 *   session that sent it (session_conn.c), so that each fd past the bound costs its
 *   sender a connection. What waits past the bound is held as an fd of garudad, so
 *   RLIMIT_NOFILE bounds it in the end (only if memory for the queue itself runs out
 *   is such an fd closed on the calling thread, logged).
 * - closer_start() installs the hook fdio uses for the fds it closes itself
 *   (fdio_set_closer(): take_fds' refusals and surplus, fdio_discard()); closer_stop()
 *   puts close() back.
 * - closer_stop() lets the thread close what is queued and joins it, waiting at most
 *   CLOSER_STOP_WAIT_MS: a thread still blocked in a close then is detached and left
 *   behind (logged, with how many fds it still had), and garudad exits all the same:
 *   the process's exit ends that close (a TCP linger wait and a FUSE request wait are
 *   interrupted by the exit's SIGKILL; the kernel drops the rest as it closes the
 *   fd table). It never hangs exit.
 *
 * Threads: the queue is the closer module's own (one per process: fdio's hook takes no
 * context), under its mutex; closer_close() and closer_stats() may be called from any
 * thread (in garudad: the loop thread); the closer thread owns the fd it is closing.
 * closer_start() and closer_stop() are main.c's, on the loop thread, once each. */
#pragma once

#include <stdint.h>

#define CLOSER_QUEUE_MAX 1024
#define CLOSER_STOP_WAIT_MS 1000

/* Start the thread and install the fdio hook. 0 or -errno. */
int closer_start(void);

/* Stop it (see the Promises); a no-op when it was never started. */
void closer_stop(void);

/* Hand fd over (ignores -1). 0: queued, or closed here (a kind whose close cannot
 * block); -ENOSPC: past the queue's bound and not such a kind: queued all the same,
 * and its sender should be stopped. Before closer_start() or after closer_stop(): the
 * fd is closed here, with close(). */
int closer_close(int fd);

/* closer_close() for n fds of an array (ignores -1; sets each to -1): -ENOSPC when any
 * one of them said so, else 0. */
int closer_close_all(int *fds, unsigned n);

struct closer_stats {
	uint64_t handed;     /* fds handed over, in all (queued or closed here) */
	uint64_t closed_here; /* of those, closed on the calling thread (queue full, a kind
			       * that cannot block; or no memory) */
	uint64_t over_bound; /* of those, queued past CLOSER_QUEUE_MAX (-ENOSPC) */
	uint64_t pending;    /* queued and not yet closed, the one being closed included */
};
void closer_stats(struct closer_stats *out);
