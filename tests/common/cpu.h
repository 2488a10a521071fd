/* cpu.h — cpu_relax() for the tests' and the bench's spin loops: the one copy under
 * tests/ (daemon/ and client/ have their own until util/ holds one for everybody). */
#pragma once

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#else
	__asm__ volatile("" ::: "memory");
#endif
}
