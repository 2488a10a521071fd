/* readiness.h — everything that writes readiness to a client, behind one call used
 * by a scanner's pass: eventfd writes (under the write guard), doorbell bumps and
 * futex wakes, READY / READY_BATCH encoding and sendmmsg batching, and the hand-off
 * of what could not be sent (READY{OVERFLOW}, offenders) to the loop thread as
 * notices.
 *
 * Promises: one readiness_deliver() writes each binding's eventfd once (the sum of
 * its completions), bumps each segment's doorbell once and wakes it once, and sends
 * each session's READYs in as few datagrams as it accepts (READY_BATCH when it asked
 * for it), sendmmsg'ed in batches of READINESS_SEND_BATCH. The forms go in the order
 * of their rank (form.h): doorbells and messages before eventfds (they cannot block). An eventfd write never blocks for more than
 * the guard's 1 ms: an eventfd without O_NONBLOCK, or a write that blocks anyway
 * (its client cleared O_NONBLOCK after the check; interrupted by the guard's signal:
 * the guard is a periodic timer, ticking while the scanner works, so a write that
 * blocks is interrupted within one period however late it began), marks the session an offender (NOTICE_OFFENDER, once) and no eventfd of
 * that session is written again, so one session costs a scanner at most one guard
 * period (1 ms) however many slots it bound to the same eventfd. EINTR alone is not a
 * block: a write interrupted on an eventfd that is still O_NONBLOCK did not happen
 * (valgrind ends it so before it starts) and is made again, up to 4 times, under the
 * short guard below (so a client flipping the flag costs at most 1 ms + 4 x 50 us); the sink
 * counts those retries (write_retries) and the completions it could not write
 * (undelivered), for garctl clients. After a blocked
 * write the rest of the pass runs under a 50 us guard (more sessions blocking in the
 * same pass cost 50 us each). A full socket sets the sink's overflow flag and posts one
 * NOTICE_OVERFLOW until the loop clears it.
 *
 * Thread: a struct readiness belongs to one scanner thread; readiness_init() must run
 * on that thread (the guard timer signals it). readiness_overflow_msg() is for the
 * loop thread. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "armed.h"
#include "notice.h"
#include "wire.h"

struct readiness {
	unsigned index; /* the scanner's, for logs */
	struct notice_queue *notices;
	timer_t guard;
	bool guard_ok;
	uint64_t guard_period; /* the guard ticks every this many ns; 0: disarmed */
	bool blocked; /* a write of this readiness_deliver() blocked: short guard */
};

/* Create the write guard for the calling thread. Never fails (without a guard timer
 * a blocked write is not interrupted; it logs that). */
/* 0, or -errno: the write guard cannot run on this thread (its signal cannot be
 * unblocked, or no timer: RLIMIT_SIGPENDING), and garudad must not start, for an
 * eventfd write could then block the scanner for good. Logged. */
int readiness_init(struct readiness *r, unsigned index, struct notice_queue *notices);
void readiness_fini(struct readiness *r);

/* Deliver f[0..n) (fired descriptors, value set); reorders f. The caller releases the
 * descriptors afterwards. */
void readiness_deliver(struct readiness *r, struct fired *f, unsigned n);

/* One form's writes (form.c's table): f[0..n), fired descriptors of that form with one
 * group key (one binding, one sink, one segment). */
void readiness_eventfd(struct readiness *r, struct fired *f, unsigned n);
void readiness_messages(struct readiness *r, struct fired *f, unsigned n);
void readiness_doorbell(struct readiness *r, struct fired *f, unsigned n);

/* The scanner is about to sleep or park: disarm the guard (one syscall, only when it
 * was armed), so that no tick wakes it. */
void readiness_quiesce(struct readiness *r);

/* Install the no-op handler (without SA_RESTART, so a blocked write returns EINTR)
 * for the guard's signal (SIGRTMIN); process-wide, before any guard can fire. */
void readiness_install_guard_handler(void);

/* The READY{OVERFLOW} a session gets after its sink overflowed. */
void readiness_overflow_msg(struct garuda_msg *m);
