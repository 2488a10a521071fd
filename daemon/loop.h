/* loop.h — garudad's event loop: "call fn when fd is readable/writable".
 *
 * Two implementations behind one interface: io_uring (multishot POLL_ADD, one
 * io_uring_submit_and_wait per iteration) and epoll. loop_new(AUTO) tries io_uring and
 * falls back to epoll with one log line when the kernel refuses it (seccomp,
 * kernel.io_uring_disabled, ENOSYS/EPERM).
 *
 * Semantics both share: callbacks run on the loop thread; a watch fires when its fd
 * may be ready, and the callback must consume until EAGAIN or call loop_again(w)
 * to be called again on the next iteration without waiting (fairness cap); after
 * loop_remove(w) the callback is never called again, even for events already
 * collected, and the loop frees w when the kernel no longer references it.
 * Signals and timers are fds too (signalfd, timerfd) registered as watches.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct loop;
struct loop_watch;

typedef void (*loop_fn)(struct loop_watch *w, void *data, uint32_t events);

/* kind AUTO, URING or EPOLL. Returns NULL with errno set. */
struct loop *loop_new(enum event_loop_kind kind);
void loop_free(struct loop *l);
enum event_loop_kind loop_kind(const struct loop *l);

/* events: POLLIN and/or POLLOUT (poll.h). Returns NULL with errno set. */
struct loop_watch *loop_add(struct loop *l, int fd, uint32_t events, loop_fn fn, void *data);
void loop_remove(struct loop *l, struct loop_watch *w);
/* Call w's callback again next iteration (with the same events) without waiting. */
void loop_again(struct loop *l, struct loop_watch *w);

/* Run one iteration: wait (at most timeout_ms, -1 = forever) and dispatch. */
int loop_run_once(struct loop *l, int timeout_ms);
