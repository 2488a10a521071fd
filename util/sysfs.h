/* sysfs.h — the kernel's small text files (sysfs, procfs): a decimal number, a CPU
 * list. One parser per form, shared by garudad (its NUMA topology), libgaruda's
 * backends (a GPU's NUMA node) and the word wait's probe (umwait_control), and fuzzed
 * (tests/fuzz/fuzz_sysfs.c) against models of the forms.
 *
 * Promises: the parsers are pure (a NUL-terminated text in, a value out) and take
 * only the form the kernel writes, a trailing newline allowed: anything else is
 * refused whole, never read in part; the reader reads one file, at most 63 bytes of
 * it, and never blocks on anything but that read. */
#pragma once

#include <sched.h>
#include <stdint.h>

/* "N" or "N\n", N decimal digits only (no sign, space or base prefix) and at most max
 * (max < 2^63): N, else -1. */
int64_t sysfs_parse_uint(const char *text, uint64_t max);

/* sysfs_parse_uint() of the file at path: N, or -1 (absent, unreadable, empty, or not
 * that form). */
int64_t sysfs_read_uint(const char *path, uint64_t max);

/* A cpulist ("0-3,8,10-11", as /sys/devices/system/node/nodeN/cpulist writes it; a
 * trailing comma and the text after a newline are ignored; empty: no CPU) into set:
 * the number of distinct CPUs in it, or -1 (a malformed list, a range backwards, or a
 * CPU at or past CPU_SETSIZE; set then holds what came before). */
int sysfs_parse_cpulist(const char *s, cpu_set_t *set);
