/* criterion/criterion.h (shim) — the slice of Criterion the backend tests use, for
 * builds where real Criterion cannot run: under ThreadSanitizer its BoxFort arena
 * cannot be mapped ("Could not initialize inheritable arena", Snaipe/Criterion#274).
 *
 * Same source, other runner: Test()/TestSuite() register functions; shim_main.c runs
 * each test in a forked child (so setenv and a fake runtime's global state stay per
 * test, as under Criterion), with the suite's .init/.fini and .timeout, and fails on
 * a failed assertion, a crash, a timeout, or a sanitizer's non-zero exit (which is
 * also how LeakSanitizer reports, something Criterion's runner does not surface).
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shim_suite {
	void (*init)(void);
	void (*fini)(void);
	int timeout;
};

void shim_register(const char *suite, const char *name, void (*fn)(void),
		   const struct shim_suite *s);
__attribute__((noreturn)) void shim_fail(const char *file, int line, const char *expr,
						const char *fmt, ...);
__attribute__((noreturn)) void shim_skip(const char *why);

#define TestSuite(suite, ...) static const struct shim_suite shim_suite_##suite = { __VA_ARGS__ }

#define Test(suite, name, ...)                                                              \
	static void suite##_##name(void);                                                   \
	__attribute__((constructor)) static void shim_reg_##suite##_##name(void)            \
	{                                                                                   \
		shim_register(#suite, #name, suite##_##name, &shim_suite_##suite);          \
	}                                                                                   \
	static void suite##_##name(void)

#define SHIM_CHECK_(cond, expr, ...)                                                   \
	do {                                                                           \
		if (!(cond))                                                           \
			shim_fail(__FILE__, __LINE__, expr, "" __VA_ARGS__);           \
	} while (0)

#define cr_assert(c, ...) SHIM_CHECK_((c), #c, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) SHIM_CHECK_((a) == (b), #a " == " #b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) SHIM_CHECK_((a) != (b), #a " != " #b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) SHIM_CHECK_((a) < (b), #a " < " #b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) SHIM_CHECK_((a) <= (b), #a " <= " #b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) SHIM_CHECK_((a) > (b), #a " > " #b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) SHIM_CHECK_((a) >= (b), #a " >= " #b, __VA_ARGS__)
#define cr_assert_null(p, ...) SHIM_CHECK_((p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) SHIM_CHECK_((p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) SHIM_CHECK_(strcmp((a), (b)) == 0, #a " eq " #b, __VA_ARGS__)
#define cr_skip_test(...) shim_skip("" __VA_ARGS__)
#define cr_log_error(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr))
