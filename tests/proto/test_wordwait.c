/* test_wordwait.c — util/wordwait: detection from injected CPUID / AT_HWCAP / sysfs
 * values chooses each variant where it should and the fallback (WORDWAIT_SPIN)
 * otherwise; on this machine the variant is what /proc/cpuinfo says it must be (the
 * development machine has neither WAITPKG nor MONITORX: the fallback); where the CPU
 * has a variant, a store from another thread ends a wait, and so does the deadline
 * (skipped, with the reason, elsewhere). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fdcheck.h"
#include "wordwait.h"

TestSuite(wordwait, .init = fdcheck_begin, .fini = fdcheck_end);

/* an x86-64 CPU with everything built and a stated TSC, nothing else */
static struct wordwait_probe x86(void)
{
	return (struct wordwait_probe){
		.arch = WORDWAIT_ARCH_X86_64,
		.cpuid_max = 0x16,
		.cpuid_ext_max = 0x80000008u,
		.built_waitpkg = true,
		.built_monitorx = true,
		.built_wfe = false,
		.tsc_hz = 3000000000ull,
	};
}

static struct wordwait choose(const struct wordwait_probe *p, unsigned flags)
{
	struct wordwait w;
	memset(&w, 0xa5, sizeof(w)); /* every field set by choose */
	wordwait_choose(p, flags, &w);
	cr_assert(memchr(w.detail, '\0', sizeof(w.detail)), "detail is a string");
	cr_assert_neq(w.detail[0], '\0', "the variant says why");
	return w;
}

Test(wordwait, waitpkg_chooses_umwait_in_c02)
{
	struct wordwait_probe p = x86();
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.umwait_control = true;
	p.umwait_max_time = 100000;
	p.umwait_c02 = true;
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_UMWAIT, "%s", w.detail);
	cr_assert_eq(w.umwait_state, 0, "C0.2 by default");
	cr_assert_eq(w.min_park_ns, 0);
	cr_assert(strstr(w.detail, "C0.2") && strstr(w.detail, "100000"), "%s", w.detail);
	/* 3 GHz: 3 ticks per ns in 32.32 */
	cr_assert_eq(w.ns_to_tsc_q32, 3ull << 32);
	cr_assert_str_eq(wordwait_variant_name(w.variant), "umwait");
}

Test(wordwait, umwait_c01_selected_or_forced_by_the_kernel)
{
	struct wordwait_probe p = x86();
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.umwait_control = true;
	p.umwait_c02 = true;
	struct wordwait w = choose(&p, WORDWAIT_UMWAIT_C01);
	cr_assert_eq(w.variant, WORDWAIT_UMWAIT);
	cr_assert_eq(w.umwait_state, 1, "C0.1 when asked");
	p.umwait_c02 = false; /* enable_c02 = 0: a C0.2 request would wait in C0.1 anyway */
	w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_UMWAIT);
	cr_assert_eq(w.umwait_state, 1);
	cr_assert(strstr(w.detail, "C0.1") && strstr(w.detail, "kernel"), "%s", w.detail);
	/* no umwait_control (an older kernel): umwait still runs, its limit unknown */
	p.umwait_control = false;
	w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_UMWAIT);
	cr_assert_eq(w.umwait_state, 0);
	cr_assert(strstr(w.detail, "unknown"), "%s", w.detail);
}

Test(wordwait, monitorx_chooses_mwaitx)
{
	struct wordwait_probe p = x86();
	p.cpuid_ext1_ecx = WORDWAIT_CPUID_EXT1_ECX_MONITORX;
	p.tsc_hz = 2000000000ull;
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_MWAITX, "%s", w.detail);
	cr_assert_eq(w.ns_to_tsc_q32, 2ull << 32);
	cr_assert_eq(w.min_park_ns, 0);
	cr_assert_str_eq(wordwait_variant_name(w.variant), "mwaitx");
}

Test(wordwait, umwait_before_mwaitx_when_both)
{
	struct wordwait_probe p = x86();
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.cpuid_ext1_ecx = WORDWAIT_CPUID_EXT1_ECX_MONITORX;
	cr_assert_eq(choose(&p, 0).variant, WORDWAIT_UMWAIT);
	p.built_waitpkg = false; /* the assembler lacked umwait: the next one built */
	cr_assert_eq(choose(&p, 0).variant, WORDWAIT_MWAITX);
}

Test(wordwait, x86_without_the_features_falls_back)
{
	struct wordwait_probe p = x86();
	p.cpuid7_ecx = ~WORDWAIT_CPUID7_ECX_WAITPKG;         /* every other bit */
	p.cpuid_ext1_ecx = ~WORDWAIT_CPUID_EXT1_ECX_MONITORX;
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_SPIN, "%s", w.detail);
	cr_assert(strstr(w.detail, "neither WAITPKG nor MONITORX"), "%s", w.detail);
	cr_assert_str_eq(wordwait_variant_name(w.variant), "spin");
	/* the bits count only where their leaf exists */
	p = x86();
	p.cpuid_max = 6;
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.cpuid_ext_max = 0x80000000u;
	p.cpuid_ext1_ecx = WORDWAIT_CPUID_EXT1_ECX_MONITORX;
	cr_assert_eq(choose(&p, 0).variant, WORDWAIT_SPIN);
}

Test(wordwait, a_feature_not_built_falls_back)
{
	struct wordwait_probe p = x86();
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.built_waitpkg = false;
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_SPIN);
	cr_assert(strstr(w.detail, "WAITPKG") && strstr(w.detail, "build"), "%s", w.detail);
	p = x86();
	p.cpuid_ext1_ecx = WORDWAIT_CPUID_EXT1_ECX_MONITORX;
	p.built_monitorx = false;
	w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_SPIN);
	cr_assert(strstr(w.detail, "MONITORX") && strstr(w.detail, "build"), "%s", w.detail);
}

Test(wordwait, aarch64_event_stream_chooses_wfe)
{
	struct wordwait_probe p = { .arch = WORDWAIT_ARCH_AARCH64, .built_wfe = true,
				    .hwcap = WORDWAIT_HWCAP_EVTSTRM | 0x3 /* fp, asimd */ };
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_WFE, "%s", w.detail);
	cr_assert_eq(w.min_park_ns, WORDWAIT_WFE_BOUND_NS, "a wfe may end only at the next tick");
	cr_assert_str_eq(wordwait_variant_name(w.variant), "wfe");
	/* on this machine: a wait shorter than the bound does not park, and the longer
	 * one finds no wfe compiled in here unless this is aarch64 */
	cr_assert_eq(wordwait_park(&w, WORDWAIT_WFE_BOUND_NS - 1), 0);
	alignas(64) uint64_t word = 7;
	cr_assert_eq(wordwait_on_line(&w, &word, 7, 1000, 1000 + WORDWAIT_WFE_BOUND_NS - 1), WORDWAIT_SHORT);
	cr_assert_eq(wordwait_on_line(&w, &word, 6, 1000, 1000 + WORDWAIT_WFE_BOUND_NS), WORDWAIT_CHANGED);
	cr_assert_eq(wordwait_on_line(&w, &word, 7, 2000, 2000), WORDWAIT_DEADLINE);
}

Test(wordwait, aarch64_without_event_stream_or_build_falls_back)
{
	struct wordwait_probe p = { .arch = WORDWAIT_ARCH_AARCH64, .built_wfe = true, .hwcap = 0x3 };
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_SPIN);
	cr_assert(strstr(w.detail, "EVTSTRM"), "%s", w.detail);
	p.hwcap |= WORDWAIT_HWCAP_EVTSTRM;
	p.built_wfe = false;
	cr_assert_eq(choose(&p, 0).variant, WORDWAIT_SPIN);
	/* x86 bits mean nothing on aarch64, nor aarch64's on x86 */
	p.built_wfe = true;
	p.arch = WORDWAIT_ARCH_X86_64;
	p.cpuid_max = 0x16;
	cr_assert_eq(choose(&p, 0).variant, WORDWAIT_SPIN);
	struct wordwait_probe q = x86();
	q.arch = WORDWAIT_ARCH_AARCH64;
	q.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	cr_assert_eq(choose(&q, 0).variant, WORDWAIT_SPIN);
}

Test(wordwait, other_architectures_fall_back)
{
	struct wordwait_probe p = x86();
	p.arch = WORDWAIT_ARCH_OTHER;
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.hwcap = WORDWAIT_HWCAP_EVTSTRM;
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_SPIN);
	cr_assert(strstr(w.detail, "architecture"), "%s", w.detail);
}

Test(wordwait, off_always_falls_back)
{
	struct wordwait_probe p = x86();
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.cpuid_ext1_ecx = WORDWAIT_CPUID_EXT1_ECX_MONITORX;
	struct wordwait w = choose(&p, WORDWAIT_OFF);
	cr_assert_eq(w.variant, WORDWAIT_SPIN);
	cr_assert_str_eq(w.detail, "turned off");
	struct wordwait_probe a = { .arch = WORDWAIT_ARCH_AARCH64, .built_wfe = true,
				    .hwcap = WORDWAIT_HWCAP_EVTSTRM };
	cr_assert_eq(choose(&a, WORDWAIT_OFF).variant, WORDWAIT_SPIN);
	cr_assert_eq(wordwait_off()->variant, WORDWAIT_SPIN);
	cr_assert_str_eq(wordwait_off()->detail, "turned off");
}

/* A TSC variant with no stated rate measures it: only where there is a TSC */
Test(wordwait, tsc_rate_measured_when_not_stated)
{
#if defined(__x86_64__)
	struct wordwait_probe p = x86();
	p.cpuid7_ecx = WORDWAIT_CPUID7_ECX_WAITPKG;
	p.tsc_hz = 0;
	struct wordwait w = choose(&p, 0);
	cr_assert_eq(w.variant, WORDWAIT_UMWAIT);
	cr_assert(strstr(w.detail, "(measured)"), "%s", w.detail);
	double ghz = (double)w.ns_to_tsc_q32 / 4294967296.0;
	cr_assert(ghz > 0.1 && ghz < 10, "a TSC of %.3f GHz", ghz);
#else
	cr_skip_test("no TSC on this architecture");
#endif
}

Test(wordwait, mode_text)
{
	bool on = false;
	cr_assert_eq(wordwait_mode_parse("auto", &on), 0);
	cr_assert(on);
	cr_assert_eq(wordwait_mode_parse("off", &on), 0);
	cr_assert(!on);
	on = true;
	static const char *const bad[] = { "", "on", "Auto", "off ", "umwait", "0", "1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(wordwait_mode_parse(bad[i], &on), -1, "\"%s\" accepted", bad[i]);
		cr_assert(on, "a refused text changes nothing");
	}
	cr_assert_eq(wordwait_mode_parse(NULL, &on), -1);
}

/* ------------------------------------------------------------------ /sys */

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "we");
	cr_assert(f, "%s: %m", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static void rm_tree(const char *root)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

Test(wordwait, umwait_control_read_from_sysfs)
{
	char root[] = "/tmp/wordwait-sysfs.XXXXXX";
	cr_assert(mkdtemp(root), "%m");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/devices/system/cpu/umwait_control", root);
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	struct wordwait_probe p;
	/* absent */
	wordwait_read(&p, root);
	cr_assert(!p.umwait_control);
	/* as Linux writes it */
	put(dir, "max_time", "100000\n");
	put(dir, "enable_c02", "1\n");
	wordwait_read(&p, root);
	cr_assert(p.umwait_control);
	cr_assert_eq(p.umwait_max_time, 100000);
	cr_assert(p.umwait_c02);
	put(dir, "max_time", "0\n");
	put(dir, "enable_c02", "0\n");
	wordwait_read(&p, root);
	cr_assert(p.umwait_control);
	cr_assert_eq(p.umwait_max_time, 0);
	cr_assert(!p.umwait_c02);
	/* garbage or half of it: no control */
	put(dir, "max_time", "lots\n");
	wordwait_read(&p, root);
	cr_assert(!p.umwait_control);
	put(dir, "max_time", "99999999999\n");
	wordwait_read(&p, root);
	cr_assert(!p.umwait_control, "beyond 32 bits");
	put(dir, "max_time", "5\n");
	snprintf(cmd, sizeof(cmd), "rm '%s/enable_c02'", dir);
	cr_assert_eq(system(cmd), 0);
	wordwait_read(&p, root);
	cr_assert(!p.umwait_control);
	rm_tree(root);
	/* the real /sys: whatever it holds, a consistent probe */
	wordwait_read(&p, NULL);
#if defined(__x86_64__)
	cr_assert_eq(p.arch, WORDWAIT_ARCH_X86_64);
	cr_assert_geq(p.cpuid_max, 1);
#elif defined(__aarch64__)
	cr_assert_eq(p.arch, WORDWAIT_ARCH_AARCH64);
#endif
}

/* ------------------------------------------------------------------ this CPU */

/* /proc/cpuinfo's first "flags" (x86) or "Features" (arm64) line has word w */
static bool cpu_flag(const char *w)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	cr_assert(f, "/proc/cpuinfo: %m");
	char *line = NULL;
	size_t cap = 0;
	bool found = false, seen = false;
	while (!seen && getline(&line, &cap, f) > 0) {
		if (strncmp(line, "flags", 5) && strncmp(line, "Features", 8))
			continue;
		seen = true;
		for (char *save = NULL, *t = strtok_r(strchr(line, ':'), " :\t\n", &save); t;
		     t = strtok_r(NULL, " \t\n", &save))
			if (strcmp(t, w) == 0)
				found = true;
	}
	free(line);
	fclose(f);
	return found;
}

Test(wordwait, this_cpu_runs_what_cpuinfo_says)
{
	const struct wordwait *w = wordwait_system();
	cr_assert_eq(w, wordwait_system(), "one choice per process");
	printf("wordwait on this machine: %s (%s)\n", wordwait_variant_name(w->variant), w->detail);
#if defined(__x86_64__)
	bool waitpkg = cpu_flag("waitpkg"), monitorx = cpu_flag("monitorx") || cpu_flag("mwaitx");
	if (!waitpkg && !monitorx) { /* the development machine: the fallback */
		cr_assert_eq(w->variant, WORDWAIT_SPIN, "%s", w->detail);
		cr_assert_str_eq(w->detail, "the CPU has neither WAITPKG nor MONITORX");
	} else if (waitpkg) {
		cr_assert(w->variant == WORDWAIT_UMWAIT || strstr(w->detail, "build"), "%s", w->detail);
	} else {
		cr_assert(w->variant == WORDWAIT_MWAITX || strstr(w->detail, "build"), "%s", w->detail);
	}
#elif defined(__aarch64__)
	if (!cpu_flag("evtstrm"))
		cr_assert_eq(w->variant, WORDWAIT_SPIN, "%s", w->detail);
	else
		cr_assert(w->variant == WORDWAIT_WFE || strstr(w->detail, "build"), "%s", w->detail);
#else
	cr_assert_eq(w->variant, WORDWAIT_SPIN);
#endif
	if (w->variant != WORDWAIT_SPIN)
		return;
	/* the fallback never parks: the caller keeps its cpu_relax() spin step */
	alignas(64) uint64_t word = 3;
	uint64_t now = garuda_now_ns();
	cr_assert_eq(wordwait_park(w, 1000000), 0);
	cr_assert_eq(wordwait_on_line(w, &word, 3, now, now + 1000000), WORDWAIT_SHORT);
	cr_assert_eq(wordwait_on_line(w, &word, 2, now, now + 1000000), WORDWAIT_CHANGED);
	cr_assert_eq(wordwait_on_line(w, &word, 3, now, now), WORDWAIT_DEADLINE);
	wordwait_arm(w, &word); /* nothing to watch */
	cr_assert_lt(garuda_now_ns() - now, 1000000000ull, "nothing above waited");
}

/* ------------------------------------------------------------------ a capable CPU */

static const struct wordwait *capable(void)
{
	const struct wordwait *w = wordwait_system();
	if (w->variant == WORDWAIT_SPIN)
		cr_skip_test("no hardware word wait on this CPU (%s): the fallback spins, tested above",
			     w->detail);
	return w;
}

/* how long a wait that a store must end may run: a hang deadline only (a loaded
 * machine may run the storer late; no test asserts an upper bound on a wait) */
#define HANG_NS 30000000000ull

struct storer {
	uint64_t *word;
	uint64_t delay_ns, value;
	uint64_t stored_ns;
};

static void *storer_main(void *arg)
{
	struct storer *st = arg;
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)st->delay_ns };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	__atomic_store_n(&st->stored_ns, garuda_now_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(st->word, st->value, __ATOMIC_RELEASE);
	return NULL;
}

Test(wordwait, a_store_from_another_thread_ends_the_wait)
{
	const struct wordwait *w = capable();
	alignas(64) static uint64_t line[8];
	for (int round = 0; round < 5; round++) {
		__atomic_store_n(&line[3], 0, __ATOMIC_RELEASE);
		struct storer st = { .word = &line[3], .delay_ns = 3000000, .value = 1 };
		pthread_t t;
		cr_assert_eq(pthread_create(&t, NULL, storer_main, &st), 0);
		uint64_t t0 = garuda_now_ns(), deadline = t0 + HANG_NS;
		enum wordwait_result r;
		unsigned parks = 0;
		do { /* WOKE: an interrupt or the kernel's limit; wait on */
			r = wordwait_on_line(w, &line[3], 0, garuda_now_ns(), deadline);
			parks += r != WORDWAIT_SHORT;
		} while (r == WORDWAIT_WOKE);
		uint64_t t1 = garuda_now_ns();
		cr_assert_eq(pthread_join(t, NULL), 0);
		/* CHANGED: the store, not the deadline, ended it */
		cr_assert_eq(r, WORDWAIT_CHANGED, "round %d: %d, not the store", round, r);
		cr_assert_eq(__atomic_load_n(&line[3], __ATOMIC_ACQUIRE), 1);
		cr_assert_geq(parks, 1, "it parked");
		uint64_t stored = __atomic_load_n(&st.stored_ns, __ATOMIC_RELAXED);
		cr_assert_geq(t1 + 1000, stored, "woke before the store");
		printf("%s: store to wake %.1f us (round %d)\n", wordwait_variant_name(w->variant),
		       (double)(t1 - stored) / 1e3, round);
	}
}

Test(wordwait, the_deadline_ends_the_wait)
{
	const struct wordwait *w = capable();
	alignas(64) static uint64_t line[8];
	line[0] = 5;
	/* longer than the wfe bound, so that every variant parks */
	uint64_t budget = 2 * WORDWAIT_WFE_BOUND_NS + 3000000;
	for (int round = 0; round < 5; round++) {
		uint64_t t0 = garuda_now_ns(), deadline = t0 + budget;
		enum wordwait_result r;
		unsigned parks = 0;
		do {
			r = wordwait_on_line(w, &line[0], 5, garuda_now_ns(), deadline);
			parks += r == WORDWAIT_WOKE || r == WORDWAIT_DEADLINE;
		} while (r == WORDWAIT_WOKE);
		uint64_t t1 = garuda_now_ns();
		cr_assert_eq(r, WORDWAIT_DEADLINE, "round %d: %d", round, r);
		cr_assert_geq(parks, 1);
		cr_assert_geq(t1, deadline, "ended %llu ns before its deadline",
			      (unsigned long long)(deadline - t1));
		/* how late past it (a park ends at its deadline, umwait and mwaitx, or at the
		 * event stream's tick, wfe; the rest is this machine's scheduling) is printed,
		 * not asserted */
		printf("%s: deadline overshoot %.1f us (round %d)\n", wordwait_variant_name(w->variant),
		       (double)(t1 - deadline) / 1e3, round);
	}
}

/* another word of the watched line wakes the park too (the caller looks again) */
Test(wordwait, a_store_to_another_word_of_the_line_wakes_it)
{
	const struct wordwait *w = capable();
	alignas(64) static uint64_t line[8];
	line[0] = 9;
	line[7] = 0;
	struct storer st = { .word = &line[7], .delay_ns = 3000000, .value = 1 };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, storer_main, &st), 0);
	uint64_t deadline = garuda_now_ns() + HANG_NS;
	enum wordwait_result r;
	do
		r = wordwait_on_line(w, &line[0], 9, garuda_now_ns(), deadline);
	while (r == WORDWAIT_WOKE && !__atomic_load_n(&line[7], __ATOMIC_ACQUIRE));
	cr_assert_eq(pthread_join(t, NULL), 0);
	/* WOKE with line[7] stored (not DEADLINE): the line's store ended it */
	cr_assert_eq(r, WORDWAIT_WOKE, "%d: not woken by the store to the line", r);
	cr_assert_eq(__atomic_load_n(&line[7], __ATOMIC_ACQUIRE), 1);
}
