/* reactor.h — baseline (c): the per-process reactor thread of NVIDIA's cuda-async
 * design, which is what each process does alone today. One thread per process spins
 * over the words it has been asked to watch while anything is armed, wakes each
 * waiter through the waiter's eventfd when its word reaches the target, and parks on
 * a futex when nothing is armed.
 *
 * Promises: exactly one eventfd +1 per arm, after an acquire load saw the target
 * reached; reactor_arm() never blocks on the reactor (a mutex-protected queue and a
 * futex wake only when the reactor is parked).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct reactor;

/* guard: deliver the way garudad's scanner delivers an eventfd readiness today (a
 * 200 us write-guard timer armed and disarmed around an fcntl(F_GETFL) check and the
 * write) — a diagnostic variant that isolates what that sequence costs. */
int reactor_start(struct reactor **out, bool guard);
/* Stop and join; returns the reactor thread's CPU time in ns. */
uint64_t reactor_stop(struct reactor *r);
/* Watch word until it reaches target, then +1 on efd. Any thread. */
void reactor_arm(struct reactor *r, const uint64_t *word, uint64_t target, int efd);
