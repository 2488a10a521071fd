/* test_errcode.c — the error-code registry: append-only numbering (every code pinned
 * by number and name, as clients in other languages hard-code them), a name and a
 * message for each, and garuda_strerror() for errno, registry codes and garbage. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "errcode.h"
#include "fdcheck.h"

TestSuite(errcode, .init = fdcheck_begin, .fini = fdcheck_end);

/* the registry as published in docs/protocol.md: never renumber, never remove */
static const struct {
	int code;
	const char *name;
} published[] = {
	{ 1000, "PROTOCOL" },	     { 1001, "TOO_SHORT" },	  { 1002, "TOO_LONG" },
	{ 1003, "BAD_LENGTH" },	     { 1004, "UNKNOWN_TYPE" },	  { 1005, "BAD_VERSION" },
	{ 1006, "FD_COUNT" },	     { 1007, "SLOT_RANGE" },	  { 1008, "RESERVED_SET" },
	{ 1009, "BAD_VALUE" },	     { 1010, "UNEXPECTED" },	  { 1011, "NO_SEGMENT" },
	{ 1012, "BAD_FD" },	     { 1013, "NOT_BOUND" },	  { 1014, "ALREADY_BOUND" },
	{ 1015, "NOT_ARMED" },	     { 1016, "QUOTA" },		  { 1017, "NO_MEMLOCK" },
	{ 1018, "BAD_SEGMENT" },     { 1019, "SLOW_PEER" },	  { 1020, "TIMEOUT" },
	{ 1021, "DISCONNECTED" },    { 1022, "BAD_PLAN" },	  { 1023, "STREAM_FAULT" },
	{ 1024, "NO_DRIVER" },	     { 1025, "DRIVER_TOO_OLD" },  { 1026, "UNSUPPORTED" },
	{ 1027, "REGISTER_FAILED" }, { 1028, "BAD_JSON" },	  { 1029, "UNKNOWN_REQUEST" },
	{ 1030, "BAD_ARGUMENT" },    { 1031, "ACCESS_DENIED" },	  { 1032, "NO_CLIENT" },
	{ 1033, "BUSY" },	     { 1034, "CLOSED" },	  { 1035, "FALLBACK_REACTOR" },
};
#define N_PUBLISHED (sizeof(published) / sizeof(published[0]))

/* rows of the X-macro table, counted independently of errcode.c */
#define COUNT_ROW_(name, num, msg) +1
enum { N_ROWS = 0 GARUDA_ERRCODES(COUNT_ROW_) };
#undef COUNT_ROW_

Test(errcode, codes_are_contiguous_from_the_base)
{
	cr_assert_eq(GARUDA_ERR_BASE, 1000);
	static const int nums[] = {
#define NUM_ROW_(name, num, msg) num,
		GARUDA_ERRCODES(NUM_ROW_)
#undef NUM_ROW_
	};
	for (int i = 0; i < N_ROWS; i++)
		cr_assert_eq(nums[i], GARUDA_ERR_BASE + i, "row %d has number %d", i, nums[i]);
	for (int i = 0; i < N_ROWS; i++)
		cr_assert(garuda_errcode_known(GARUDA_ERR_BASE + i));
	cr_assert_not(garuda_errcode_known(GARUDA_ERR_BASE - 1));
	cr_assert_not(garuda_errcode_known(GARUDA_ERR_BASE + N_ROWS));
	cr_assert_not(garuda_errcode_known(0));
	cr_assert_not(garuda_errcode_known(-GARUDA_E_QUOTA), "known() takes the positive code");
	cr_assert_not(garuda_errcode_known(INT_MAX));
}

Test(errcode, published_numbers_never_change)
{
	cr_assert_geq(N_ROWS, (int)N_PUBLISHED, "a code was removed");
	for (size_t i = 0; i < N_PUBLISHED; i++) {
		const char *name = garuda_errcode_name(published[i].code);
		cr_assert_not_null(name, "%d has no name", published[i].code);
		cr_assert_str_eq(name, published[i].name, "code %d", published[i].code);
	}
	cr_assert_eq(GARUDA_E_PROTOCOL, 1000);
	cr_assert_eq(GARUDA_E_TOO_SHORT, 1001);
	cr_assert_eq(GARUDA_E_SLOT_RANGE, 1007);
	cr_assert_eq(GARUDA_E_QUOTA, 1016);
	cr_assert_eq(GARUDA_E_CLOSED, 1034);
	cr_assert_eq(GARUDA_E_FALLBACK_REACTOR, 1035);
}

Test(errcode, every_code_has_a_name_and_a_message)
{
	for (int i = 0; i < N_ROWS; i++) {
		int code = GARUDA_ERR_BASE + i;
		const char *name = garuda_errcode_name(code);
		cr_assert_not_null(name, "%d", code);
		cr_assert_gt(strlen(name), 0);
		for (const char *p = name; *p; p++)
			cr_assert(isupper((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_',
				  "name %s is not UPPER_CASE", name);
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(name, garuda_errcode_name(GARUDA_ERR_BASE + j), "duplicate name");
		const char *msg = garuda_strerror(code);
		cr_assert_not_null(msg);
		cr_assert_gt(strlen(msg), 0);
		cr_assert_str_neq(msg, "unknown error", "%s has no message", name);
		cr_assert_lt(strlen(msg), 256, "fits an ERROR text");
	}
	cr_assert_null(garuda_errcode_name(GARUDA_ERR_BASE - 1));
	cr_assert_null(garuda_errcode_name(GARUDA_ERR_BASE + N_ROWS));
	cr_assert_null(garuda_errcode_name(0));
	cr_assert_null(garuda_errcode_name(-1));
}

Test(errcode, strerror_of_a_registry_code_either_sign)
{
	cr_assert_str_eq(garuda_strerror(GARUDA_E_QUOTA), "quota exceeded");
	cr_assert_str_eq(garuda_strerror(-GARUDA_E_QUOTA), "quota exceeded");
	for (int i = 0; i < N_ROWS; i++)
		cr_assert_str_eq(garuda_strerror(GARUDA_ERR_BASE + i),
				 garuda_strerror(-(GARUDA_ERR_BASE + i)));
}

Test(errcode, strerror_of_a_negative_errno)
{
	cr_assert_str_eq(garuda_strerror(-ENOENT), "No such file or directory");
	cr_assert_str_eq(garuda_strerror(-EAGAIN), "Resource temporarily unavailable");
	cr_assert_str_eq(garuda_strerror(-EMSGSIZE), "Message too long");
	cr_assert_str_eq(garuda_strerror(-EPERM), "Operation not permitted");
}

Test(errcode, strerror_of_unknown_values)
{
	static const int unknown[] = {
		999,		       /* positive, below the base: not an errno form */
		ENOENT,		       /* positive errno: errno travels negative */
		-999,		       /* no such errno */
		GARUDA_ERR_BASE + N_ROWS, -(GARUDA_ERR_BASE + N_ROWS), 100000, -100000, INT_MAX,
		-INT_MAX,
	};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		const char *s = garuda_strerror(unknown[i]);
		cr_assert_not_null(s);
		cr_assert_str_eq(s, "unknown error", "%d gave \"%s\"", unknown[i], s);
	}
	cr_assert_str_eq(garuda_strerror(0), "success"); /* was "unknown error" */
}

/* INT_MIN has no positive counterpart: no negation may overflow on the way (the
 * ASan+UBSan build halts on signed overflow). */
Test(errcode, strerror_of_int_min)
{
	cr_assert_str_eq(garuda_strerror(INT_MIN), "unknown error");
	cr_assert_not(garuda_errcode_known(INT_MIN));
	cr_assert_null(garuda_errcode_name(INT_MIN));
}
