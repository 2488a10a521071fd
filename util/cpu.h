/* cpu.h — cpu_relax(): the spin-wait hint (PAUSE on x86, YIELD on arm64, nothing
 * elsewhere). Also a compiler barrier, so a spin loop re-reads what it polls. */
#pragma once

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
	__asm__ __volatile__("" ::: "memory");
}
