/* criterion.h (shim) — just enough of Criterion's API for tests/client to run under
 * ThreadSanitizer, where real Criterion cannot start (its inheritable arena collides
 * with TSan's memory layout: Snaipe/Criterion#274). Used only by -Db_sanitize=thread
 * builds: tests run in-process, one after another; a failed assertion prints where
 * and why and aborts, so TSan and the test runner both see the failure. */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct shim_suite {
	void (*init)(void);
	void (*fini)(void);
	double timeout;
	const char *description;
};

struct shim_test {
	const char *suite, *name;
	void (*fn)(void);
	const struct shim_suite *opts;
	struct shim_test *next;
};

void shim_register(struct shim_test *t);
void shim_fail(const char *file, int line, const char *what, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));
void shim_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void shim_skip(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#define TestSuite(suite, ...) static const struct shim_suite shim_suite_##suite = { __VA_ARGS__ }

#define Test(suite, name, ...)                                                       \
	static void suite##_##name##_impl(void);                                     \
	static struct shim_test shim_test_##suite##_##name = {                       \
		#suite, #name, suite##_##name##_impl, &shim_suite_##suite, NULL };    \
	__attribute__((constructor)) static void shim_reg_##suite##_##name(void)     \
	{                                                                            \
		shim_register(&shim_test_##suite##_##name);                          \
	}                                                                            \
	static void suite##_##name##_impl(void)

/* the message arguments are optional, as in Criterion */
#define SHIM_MSG_(...) " " __VA_ARGS__
#define cr_assert(cond, ...)                                                              \
	do {                                                                              \
		if (!(cond))                                                              \
			shim_fail(__FILE__, __LINE__, #cond, SHIM_MSG_(__VA_ARGS__));    \
	} while (0)
#define SHIM_CMP_(a, op, b, ...) cr_assert((a) op (b), __VA_ARGS__)
#define cr_assert_eq(a, b, ...) SHIM_CMP_(a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) SHIM_CMP_(a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) SHIM_CMP_(a, <, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) SHIM_CMP_(a, <=, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) SHIM_CMP_(a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) SHIM_CMP_(a, >=, b, __VA_ARGS__)
#define cr_assert_null(p, ...) cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_assert((p) != NULL, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) cr_assert(strcmp((a), (b)) != 0, __VA_ARGS__)
#define cr_assert_fail(...) shim_fail(__FILE__, __LINE__, "cr_assert_fail", SHIM_MSG_(__VA_ARGS__))

#define cr_skip_test(...) shim_skip(__VA_ARGS__)
#define cr_log_info(...) shim_log("info", __VA_ARGS__)
#define cr_log_warn(...) shim_log("warn", __VA_ARGS__)
#define cr_log_error(...) shim_log("error", __VA_ARGS__)
