/* wordwait.c — see wordwait.h. The instructions are inline assembly, compiled only
 * where meson found that the compiler and assembler take them (GARUDA_HAVE_*_ASM, set
 * for this file alone by util/meson.build): gcc 12 and clang 14 both do on x86-64
 * (binutils 2.40 and clang's integrated assembler); the aarch64 path is guarded the
 * same way. Mnemonics, not intrinsics: _umwait() and friends need -mwaitpkg (or a
 * target attribute) and differ between compilers, the assembly does not. */
#include "wordwait.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "sysfs.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#if defined(__x86_64__) && defined(GARUDA_HAVE_WAITPKG_ASM)
#define WW_UMWAIT 1
#else
#define WW_UMWAIT 0
#endif
#if defined(__x86_64__) && defined(GARUDA_HAVE_MONITORX_ASM)
#define WW_MWAITX 1
#else
#define WW_MWAITX 0
#endif
#if defined(__aarch64__) && defined(GARUDA_HAVE_WFE_ASM)
#define WW_WFE 1
#else
#define WW_WFE 0
#endif

/* ------------------------------------------------------------------ detection */

/* A decimal number from a file of umwait_control; -1 when absent or not a number. */
static int64_t read_sysfs_uint(const char *root, const char *name)
{
	char path[512];
	if (snprintf(path, sizeof(path), "%s/devices/system/cpu/umwait_control/%s", root, name) >=
	    (int)sizeof(path))
		return -1;
	return sysfs_read_uint(path, UINT32_MAX);
}

void wordwait_read(struct wordwait_probe *p, const char *sysfs_root)
{
	memset(p, 0, sizeof(*p));
	p->built_waitpkg = WW_UMWAIT;
	p->built_monitorx = WW_MWAITX;
	p->built_wfe = WW_WFE;
#if defined(__x86_64__)
	p->arch = WORDWAIT_ARCH_X86_64;
	unsigned a, b, c, d;
	p->cpuid_max = __get_cpuid_max(0, NULL);
	if (p->cpuid_max >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d))
		p->cpuid7_ecx = c;
	/* the TSC's rate where the CPU states it: crystal Hz x EBX / EAX */
	if (p->cpuid_max >= 0x15 && __get_cpuid_count(0x15, 0, &a, &b, &c, &d) && a && b && c)
		p->tsc_hz = (uint64_t)c * b / a;
	p->cpuid_ext_max = __get_cpuid_max(0x80000000u, NULL);
	if (p->cpuid_ext_max >= 0x80000001u && __get_cpuid(0x80000001u, &a, &b, &c, &d))
		p->cpuid_ext1_ecx = c;
#elif defined(__aarch64__)
	p->arch = WORDWAIT_ARCH_AARCH64;
	p->hwcap = getauxval(AT_HWCAP);
#else
	p->arch = WORDWAIT_ARCH_OTHER;
#endif
	const char *root = sysfs_root ? sysfs_root : "/sys";
	int64_t max_time = read_sysfs_uint(root, "max_time");
	int64_t c02 = read_sysfs_uint(root, "enable_c02");
	if (max_time >= 0 && c02 >= 0) {
		p->umwait_control = true;
		p->umwait_max_time = (uint32_t)max_time;
		p->umwait_c02 = c02 != 0;
	}
}

#if defined(__x86_64__)
static inline uint64_t rdtsc(void)
{
	return __builtin_ia32_rdtsc();
}

/* TSC ticks per second against CLOCK_MONOTONIC over ~200 us (a preemption in between
 * costs nothing: both clocks run on) */
static uint64_t measure_tsc_hz(void)
{
	uint64_t t0 = garuda_now_ns(), c0 = rdtsc(), t1, c1;
	do {
		cpu_relax();
		t1 = garuda_now_ns();
		c1 = rdtsc();
	} while (t1 - t0 < 200000);
	return (uint64_t)((unsigned __int128)(c1 - c0) * 1000000000u / (t1 - t0));
}
#endif

static void set_tsc(struct wordwait *w, uint64_t hz, bool measured)
{
	w->ns_to_tsc_q32 = (uint64_t)(((unsigned __int128)hz << 32) / 1000000000u);
	size_t n = strlen(w->detail);
	snprintf(w->detail + n, sizeof(w->detail) - n, "; TSC %.3f GHz%s", (double)hz / 1e9,
		 measured ? " (measured)" : "");
}

void wordwait_choose(const struct wordwait_probe *p, unsigned flags, struct wordwait *out)
{
	memset(out, 0, sizeof(*out));
	out->variant = WORDWAIT_SPIN;
	if (flags & WORDWAIT_OFF) {
		snprintf(out->detail, sizeof(out->detail), "turned off");
		return;
	}
	switch (p->arch) {
	case WORDWAIT_ARCH_X86_64: {
		bool waitpkg = p->cpuid_max >= 7 && (p->cpuid7_ecx & WORDWAIT_CPUID7_ECX_WAITPKG);
		bool monitorx = p->cpuid_ext_max >= 0x80000001u &&
				(p->cpuid_ext1_ecx & WORDWAIT_CPUID_EXT1_ECX_MONITORX);
		if (waitpkg && p->built_waitpkg) {
			out->variant = WORDWAIT_UMWAIT;
			bool c01 = (flags & WORDWAIT_UMWAIT_C01) || (p->umwait_control && !p->umwait_c02);
			out->umwait_state = c01 ? 1 : 0;
			char limit[64];
			if (!p->umwait_control)
				snprintf(limit, sizeof(limit), "no umwait_control in /sys: limit unknown");
			else if (p->umwait_max_time)
				snprintf(limit, sizeof(limit), "kernel limit %" PRIu32 " TSC cycles",
					 p->umwait_max_time);
			else
				snprintf(limit, sizeof(limit), "no kernel limit");
			snprintf(out->detail, sizeof(out->detail), "WAITPKG, %s%s, %s",
				 c01 ? "C0.1" : "C0.2",
				 c01 && !(flags & WORDWAIT_UMWAIT_C01) ? " (the kernel turned C0.2 off)" : "",
				 limit);
		} else if (monitorx && p->built_monitorx) {
			out->variant = WORDWAIT_MWAITX;
			snprintf(out->detail, sizeof(out->detail), "MONITORX, timer in TSC cycles");
		} else if (waitpkg || monitorx) {
			snprintf(out->detail, sizeof(out->detail),
				 "the CPU has %s but this build has no %s (the assembler lacked it)",
				 waitpkg ? "WAITPKG" : "MONITORX", waitpkg ? "umonitor/umwait" : "monitorx/mwaitx");
			return;
		} else {
			snprintf(out->detail, sizeof(out->detail), "the CPU has neither WAITPKG nor MONITORX");
			return;
		}
		uint64_t hz = p->tsc_hz;
		bool measured = false;
#if defined(__x86_64__)
		if (!hz) {
			hz = measure_tsc_hz();
			measured = true;
		}
#endif
		if (!hz) { /* an injected probe on another architecture: nothing to measure */
			out->variant = WORDWAIT_SPIN;
			snprintf(out->detail, sizeof(out->detail), "the TSC's rate is unknown");
			return;
		}
		set_tsc(out, hz, measured);
		return;
	}
	case WORDWAIT_ARCH_AARCH64:
		if (!(p->hwcap & WORDWAIT_HWCAP_EVTSTRM)) {
			snprintf(out->detail, sizeof(out->detail),
				 "no event stream (AT_HWCAP lacks EVTSTRM): a wfe would have no bound");
			return;
		}
		if (!p->built_wfe) {
			snprintf(out->detail, sizeof(out->detail), "this build has no wfe");
			return;
		}
		out->variant = WORDWAIT_WFE;
		out->min_park_ns = WORDWAIT_WFE_BOUND_NS;
		snprintf(out->detail, sizeof(out->detail),
			 "event stream, waits of %llu us or more",
			 (unsigned long long)(WORDWAIT_WFE_BOUND_NS / 1000));
		return;
	case WORDWAIT_ARCH_OTHER:
	default:
		snprintf(out->detail, sizeof(out->detail), "no hardware word wait on this architecture");
		return;
	}
}

static struct wordwait system_ww;
static pthread_once_t system_once = PTHREAD_ONCE_INIT;

static void system_init(void)
{
	struct wordwait_probe p;
	wordwait_read(&p, NULL);
	wordwait_choose(&p, 0, &system_ww);
}

const struct wordwait *wordwait_system(void)
{
	pthread_once(&system_once, system_init);
	return &system_ww;
}

static const struct wordwait off_ww = { .variant = WORDWAIT_SPIN, .detail = "turned off" };

const struct wordwait *wordwait_off(void)
{
	return &off_ww;
}

const char *wordwait_variant_name(enum wordwait_variant v)
{
	switch (v) {
	case WORDWAIT_UMWAIT:
		return "umwait";
	case WORDWAIT_MWAITX:
		return "mwaitx";
	case WORDWAIT_WFE:
		return "wfe";
	case WORDWAIT_SPIN:
	default:
		return "spin";
	}
}

int wordwait_mode_parse(const char *text, bool *on)
{
	if (!text)
		return -1;
	if (strcmp(text, "auto") == 0)
		*on = true;
	else if (strcmp(text, "off") == 0)
		*on = false;
	else
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ the wait */

void wordwait_arm(const struct wordwait *w, const volatile void *addr)
{
	switch (w->variant) {
#if WW_UMWAIT
	case WORDWAIT_UMWAIT:
		__asm__ __volatile__("umonitor %0" : : "r"(addr) : "memory");
		break;
#endif
#if WW_MWAITX
	case WORDWAIT_MWAITX:
		__asm__ __volatile__("monitorx" : : "a"(addr), "c"(0u), "d"(0u) : "memory");
		break;
#endif
#if WW_WFE
	case WORDWAIT_WFE: {
		/* clear the event register (sevl sets it, wfe consumes it), then take the
		 * line exclusive: a store to it by anyone else clears the monitor, which
		 * sends this core an event */
		uint64_t tmp;
		__asm__ __volatile__("sevl\n\twfe\n\tldxr %0, [%1]" : "=&r"(tmp) : "r"(addr) : "memory");
		(void)tmp;
		break;
	}
#endif
	default:
		(void)addr;
		break;
	}
}

int wordwait_park(const struct wordwait *w, uint64_t budget_ns)
{
	if (w->variant == WORDWAIT_SPIN || budget_ns == 0 || budget_ns < w->min_park_ns)
		return 0;
	if (budget_ns > 1000000000u) /* a second at most: the fixed point stays in range */
		budget_ns = 1000000000u;
	switch (w->variant) {
#if WW_UMWAIT || WW_MWAITX
#if WW_UMWAIT
	case WORDWAIT_UMWAIT: {
		uint64_t cycles = (uint64_t)(((unsigned __int128)budget_ns * w->ns_to_tsc_q32) >> 32);
		uint64_t dl = rdtsc() + cycles;
		uint8_t os_limit;
		/* CF = 1: the kernel's limit (IA32_UMWAIT_CONTROL) ended it, not the deadline */
		__asm__ __volatile__("umwait %[st]\n\tsetc %[cf]"
				     : [cf] "=qm"(os_limit)
				     : [st] "r"(w->umwait_state), "a"((uint32_t)dl), "d"((uint32_t)(dl >> 32))
				     : "memory", "cc");
		(void)os_limit;
		return 1;
	}
#endif
#if WW_MWAITX
	case WORDWAIT_MWAITX: {
		uint64_t cycles = (uint64_t)(((unsigned __int128)budget_ns * w->ns_to_tsc_q32) >> 32);
		uint32_t timer = cycles > UINT32_MAX ? UINT32_MAX : cycles ? (uint32_t)cycles : 1;
		/* EAX 0xf0: stay in C0 (the lightest wait, as the kernel's own delays);
		 * ECX bit 1: EBX is a timeout in TSC cycles */
		__asm__ __volatile__("mwaitx" : : "a"(0xf0u), "b"(timer), "c"(2u) : "memory");
		return 1;
	}
#endif
#endif
#if WW_WFE
	case WORDWAIT_WFE:
		__asm__ __volatile__("wfe" : : : "memory");
		return 1;
#endif
	default:
		return 0;
	}
}

enum wordwait_result wordwait_on_line(const struct wordwait *w, const uint64_t *addr,
				      uint64_t expected, uint64_t now_ns, uint64_t deadline_ns)
{
	if (__atomic_load_n(addr, __ATOMIC_ACQUIRE) != expected)
		return WORDWAIT_CHANGED;
	if (now_ns >= deadline_ns)
		return WORDWAIT_DEADLINE;
	if (w->variant == WORDWAIT_SPIN || deadline_ns - now_ns < w->min_park_ns)
		return WORDWAIT_SHORT;
	wordwait_arm(w, addr);
	/* after the arm: a store from here on ends the park */
	if (__atomic_load_n(addr, __ATOMIC_ACQUIRE) != expected)
		return WORDWAIT_CHANGED;
	if (!wordwait_park(w, deadline_ns - now_ns))
		return WORDWAIT_SHORT;
	if (__atomic_load_n(addr, __ATOMIC_ACQUIRE) != expected)
		return WORDWAIT_CHANGED;
	return garuda_now_ns() >= deadline_ns ? WORDWAIT_DEADLINE : WORDWAIT_WOKE;
}
