/* fuzz_sysfs.c — libFuzzer target over the parsers of the kernel's small text files:
 * util/sysfs.c's number and CPU list (garudad's NUMA topology, a GPU's NUMA node, the
 * word wait's umwait_control) and daemon/quota.c's /proc/PID/cgroup line.
 *
 * The first byte picks the parser (mod 3), the rest is the file's text. Each parser is
 * checked against a model written here from the form the kernel writes, not from the
 * code: the model walks the text by its grammar and says what the parser must return.
 * Aborts (a finding) when:
 *   - sysfs_parse_uint: the value or the refusal differs from the model (digits only,
 *     an optional final newline, at most max: tried with the input's own limit and
 *     with 2^63 - 1);
 *   - sysfs_parse_cpulist: the count, the refusal or (accepted) the set differs from
 *     the model's; the count is not CPU_COUNT of the set;
 *   - quota_cgroup_line: the path differs from the model's first "0::" line (to its
 *     newline or a NUL byte), or it answers anything but 0 or -ENODATA.
 * Built with -fsanitize=fuzzer,address,undefined under -Dfuzz=true (clang); the same
 * function replays tests/fuzz/corpus-sysfs in the ordinary test suite
 * (test_corpus_sysfs.c).
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "quota.h"
#include "sysfs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the text up to its first NUL, as a C string (the parsers take C strings) */
static char *c_text(const uint8_t *data, size_t size)
{
	char *t = malloc(size + 1);
	CHECK(t);
	memcpy(t, data, size);
	t[size] = '\0';
	return t;
}

/* ---- a number: DIGITS [\n] ---- */

static int64_t model_uint(const char *t, uint64_t max)
{
	size_t n = strlen(t), d = 0;
	while (d < n && t[d] >= '0' && t[d] <= '9')
		d++;
	if (d == 0 || !(d == n || (d == n - 1 && t[d] == '\n')))
		return -1;
	/* the value, digit by digit in 128 bits: no overflow to miss */
	unsigned __int128 v = 0;
	for (size_t i = 0; i < d; i++) {
		v = v * 10 + (unsigned)(t[i] - '0');
		if (v > max)
			return -1;
	}
	return (int64_t)v;
}

static void check_uint(const char *t, uint64_t max)
{
	CHECK(sysfs_parse_uint(t, max) == model_uint(t, max));
}

/* ---- a CPU list: [ITEM (, ITEM)* [,]] [\n ...], ITEM = N | N-M, N <= M < CPU_SETSIZE ---- */

/* The model's verdict: -1, or the distinct CPUs, their set in want. */
static int model_cpulist(const char *t, cpu_set_t *want)
{
	CPU_ZERO(want);
	size_t end = strcspn(t, "\n"); /* what follows a newline is not the list's */
	char *list = strndup(t, end);
	CHECK(list);
	/* an empty item (",," or a leading comma) is malformed: strtok would skip it */
	int r = list[0] == ',' || strstr(list, ",,") ? -1 : 0;
	size_t len = strlen(list);
	if (len && list[len - 1] == ',')
		list[--len] = '\0'; /* one trailing comma */
	char *save = NULL;
	for (char *item = len && r == 0 ? strtok_r(list, ",", &save) : NULL; item && r == 0;
	     item = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(item, '-');
		if (dash)
			*dash = '\0';
		int64_t a = model_uint(item, CPU_SETSIZE - 1);
		int64_t b = dash ? model_uint(dash + 1, CPU_SETSIZE - 1) : a;
		/* model_uint takes a final newline: the list has none (cut above) */
		if (a < 0 || b < 0 || b < a)
			r = -1;
		for (int64_t c = a; r == 0 && c <= b; c++)
			CPU_SET((int)c, want);
	}
	free(list);
	return r < 0 ? -1 : CPU_COUNT(want);
}

static void check_cpulist(const char *t)
{
	cpu_set_t got, want;
	int r = sysfs_parse_cpulist(t, &got), m = model_cpulist(t, &want);
	CHECK(r == m);
	if (r >= 0) {
		CHECK(CPU_EQUAL(&got, &want));
		CHECK(r == CPU_COUNT(&got));
	}
}

/* ---- /proc/PID/cgroup: the path of its first line that starts "0::" ---- */

static void check_cgroup(const uint8_t *data, size_t size)
{
	/* the model: lines end at '\n'; the first starting "0::" gives its rest, to its
	 * end or a NUL byte (a C string) */
	char *want = NULL;
	for (size_t at = 0; at < size;) {
		const uint8_t *nl = memchr(data + at, '\n', size - at);
		size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
		if (len >= 3 && memcmp(data + at, "0::", 3) == 0) {
			want = strndup((const char *)data + at + 3, len - 3);
			CHECK(want);
			break;
		}
		at += len + 1;
	}
	static char empty[] = "\n"; /* fmemopen() takes no empty buffer: a line with no "0::" */
	FILE *f = size ? fmemopen((void *)data, size, "r") : fmemopen(empty, 1, "r");
	CHECK(f);
	char *path = (char *)1;
	int r = quota_cgroup_line(f, &path);
	fclose(f);
	if (want) {
		CHECK(r == 0 && path && strcmp(path, want) == 0);
	} else {
		CHECK(r == -ENODATA && path == NULL);
	}
	free(path);
	free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	unsigned pick = data[0] % 3;
	data++;
	size--;
	if (pick == 2) {
		check_cgroup(data, size);
		return 0;
	}
	char *t = c_text(data, size);
	if (pick == 0) {
		/* a limit from the text's own length, so that limits near values are met */
		check_uint(t, (uint64_t)1 << (size % 63)); /* below 2^63: sysfs.h */
		check_uint(t, INT64_MAX);
		check_uint(t, 1023);
	} else {
		check_cpulist(t);
	}
	free(t);
	return 0;
}
