/* cpu.h — cpu_relax(): the spin-wait hint (PAUSE on x86, YIELD on arm64, nothing
 * elsewhere). Also a compiler barrier, so a spin loop re-reads what it polls.
 * spin_give_way(): what a long spin does between two looks: sched_yield(), so that a
 * task woken on the spinner's CPU runs now. A spinner that never enters the kernel
 * keeps it waiting up to a scheduler slice: on this project's 2-CPU test machine
 * (EEVDF, base slice 0.75 ms x 2) the simulated kernel's producer, woken on the
 * scanner's CPU, finished 1 ms kernels at 2.6-3.3 ms on every other completion while
 * the scanner spun for them (bench --only=plans, docs/plans.md). With nothing else
 * runnable it returns at once: one syscall (~1.2 us in the test machine's guest). */
#pragma once

#include <sched.h>

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
	__asm__ __volatile__("" ::: "memory");
}

static inline void spin_give_way(void)
{
	sched_yield();
}
