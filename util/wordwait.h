/* wordwait.h — park a spinning thread on the cache line of a word, in hardware, where
 * the CPU can: umonitor/umwait (Intel, CPUID WAITPKG), monitorx/mwaitx (AMD, CPUID
 * MONITORX), or a load-exclusive then wfe (aarch64, with the kernel's event stream).
 * A store to the line (by any CPU or device) ends the wait; so do the deadline, an
 * interrupt, and the limits the OS puts on it. The core idles meanwhile (a light
 * C-state; an SMT sibling gets its resources back) instead of executing PAUSE.
 *
 * Detection is run time: wordwait_read() gathers what the CPU and the kernel say
 * (CPUID, AT_HWCAP, /sys/devices/system/cpu/umwait_control), wordwait_choose() picks
 * the variant from those values alone (the unit tests inject them), what this build
 * compiled in (meson checks that the compiler and assembler take each instruction)
 * and the mode (auto or off). WORDWAIT_SPIN, the fallback, means: no hardware wait,
 * the caller keeps today's spin step (cpu_relax() and spin_give_way(), util/cpu.h).
 *
 * Use: a spin step whose caller already loaded the words it waits on —
 *
 *     wordwait_arm(w, addr);              // watch addr's line
 *     if (the condition still does not hold)   // loads after the arm: no lost store
 *             wordwait_park(w, budget_ns);
 *
 * or wordwait_on_line() for one word. Only waits of at least w->min_park_ns may park
 * (wfe cannot end before the event stream's next tick: 100 us on Linux); shorter ones
 * are the caller's to spin.
 *
 * No I/O except wordwait_read(), which reads two files under /sys. Thread-safe: a
 * struct wordwait is read-only once chosen. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum wordwait_variant {
	WORDWAIT_SPIN = 0, /* no hardware wait: the caller spins (cpu_relax) */
	WORDWAIT_UMWAIT,
	WORDWAIT_MWAITX,
	WORDWAIT_WFE,
};

enum wordwait_arch { WORDWAIT_ARCH_OTHER = 0, WORDWAIT_ARCH_X86_64, WORDWAIT_ARCH_AARCH64 };

/* The bits detection reads */
#define WORDWAIT_CPUID7_ECX_WAITPKG (1u << 5)        /* CPUID.(EAX=7,ECX=0):ECX */
#define WORDWAIT_CPUID_EXT1_ECX_MONITORX (1u << 29)  /* CPUID.80000001H:ECX */
#define WORDWAIT_HWCAP_EVTSTRM (1ul << 2)            /* aarch64 AT_HWCAP: the event stream */

/* How long a wfe may take at most without a store: the event stream's period, which
 * Linux sets to 100 us (ARCH_TIMER_EVT_STREAM_PERIOD_US) and does not export. */
#define WORDWAIT_WFE_BOUND_NS 100000ull

/* What detection sees. wordwait_read() fills it from the machine; tests fill it. */
struct wordwait_probe {
	enum wordwait_arch arch;
	uint32_t cpuid_max;      /* x86: CPUID.0:EAX, the highest basic leaf */
	uint32_t cpuid7_ecx;     /* x86: CPUID.(7,0):ECX (0 when cpuid_max < 7) */
	uint32_t cpuid_ext_max;  /* x86: CPUID.80000000H:EAX, the highest extended leaf */
	uint32_t cpuid_ext1_ecx; /* x86: CPUID.80000001H:ECX (0 when cpuid_ext_max < it) */
	unsigned long hwcap;     /* aarch64: getauxval(AT_HWCAP) */
	/* The kernel's umwait control (Linux 5.3+, on CPUs with WAITPKG): whether
	 * /sys/devices/system/cpu/umwait_control exists, and its values. max_time is the
	 * longest umwait the kernel allows, in TSC cycles (0: no limit); enable_c02 0:
	 * C0.2 is off, a C0.2 request waits in C0.1. */
	bool umwait_control;
	uint32_t umwait_max_time;
	bool umwait_c02;
	/* What this build compiled in (the meson checks; wordwait_read() sets them) */
	bool built_waitpkg, built_monitorx, built_wfe;
	/* x86: TSC ticks per second, from CPUID leaf 0x15 where it gives them; 0: measured
	 * by wordwait_choose() against CLOCK_MONOTONIC when a TSC variant is chosen */
	uint64_t tsc_hz;
};

/* wordwait_choose()'s flags */
#define WORDWAIT_OFF 1u      /* mode off: always WORDWAIT_SPIN */
#define WORDWAIT_UMWAIT_C01 2u /* umwait in C0.1 (faster wake, less saving) instead of C0.2 */

struct wordwait {
	enum wordwait_variant variant;
	uint32_t umwait_state;   /* umwait's operand: 0 C0.2, 1 C0.1 */
	uint64_t ns_to_tsc_q32;  /* TSC ticks per ns, 32.32 fixed point (umwait, mwaitx) */
	uint64_t min_park_ns;    /* shortest wait that may park (wfe: its bound) */
	char detail[128];        /* why this variant, for people: "C0.2, kernel limit ..." */
};

/* Gather the probe from this machine: CPUID (x86), AT_HWCAP (aarch64), and
 * sysfs_root/devices/system/cpu/umwait_control/{max_time,enable_c02} (sysfs_root NULL:
 * "/sys"). */
void wordwait_read(struct wordwait_probe *p, const char *sysfs_root);

/* Choose from p alone (and, for a TSC variant with p->tsc_hz 0, a ~200 us
 * measurement of the TSC): umwait where WAITPKG is present and built, else mwaitx
 * where MONITORX is, else wfe where the event stream is; else, or with WORDWAIT_OFF,
 * WORDWAIT_SPIN. out->detail says why. */
void wordwait_choose(const struct wordwait_probe *p, unsigned flags, struct wordwait *out);

/* This process's choice in mode auto: wordwait_read(NULL) and wordwait_choose(0) the
 * first time (pthread_once), the same object after. */
const struct wordwait *wordwait_system(void);
/* The mode off: WORDWAIT_SPIN, "off". */
const struct wordwait *wordwait_off(void);

/* "spin", "umwait", "mwaitx", "wfe" */
const char *wordwait_variant_name(enum wordwait_variant v);

/* The mode's text: "auto" (true) or "off" (false). 0, or -1 for anything else. */
int wordwait_mode_parse(const char *text, bool *on);

/* Watch the cache line of addr: umonitor / monitorx / sevl, wfe, ldxr. Nothing for
 * WORDWAIT_SPIN. The loads that decide whether to park come after this. */
void wordwait_arm(const struct wordwait *w, const volatile void *addr);

/* Park after wordwait_arm() until the line is written, budget_ns pass, an interrupt,
 * or the OS's limit. Returns 1 when it parked, 0 when it did not (WORDWAIT_SPIN, or a
 * budget under w->min_park_ns). wfe: ends at the event stream's next tick at the
 * latest, so never more than min_park_ns (<= budget_ns) late. */
int wordwait_park(const struct wordwait *w, uint64_t budget_ns);

/* wordwait_on_line()'s outcomes */
enum wordwait_result {
	WORDWAIT_CHANGED = 0, /* *addr != expected (before or after parking) */
	WORDWAIT_DEADLINE,    /* deadline_ns reached, *addr still expected */
	WORDWAIT_WOKE,        /* parked and woke early, *addr still expected: another word
			       * of the line, an interrupt, the OS's limit */
	WORDWAIT_SHORT,       /* not parked: WORDWAIT_SPIN, or less than min_park_ns left */
};

/* One word: watch its line, and park unless *addr already differs from expected,
 * until deadline_ns (CLOCK_MONOTONIC, garuda_now_ns(); now_ns: the caller's reading of
 * it). */
enum wordwait_result wordwait_on_line(const struct wordwait *w, const uint64_t *addr,
				      uint64_t expected, uint64_t now_ns, uint64_t deadline_ns);
