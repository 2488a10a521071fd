/* internal.h — helpers shared by the backends; not part of any public interface.
 *
 * Everything here has hidden visibility and a gbk_ prefix, so a shared library that
 * links the backends (libgaruda, whose version script exports garuda_*) never exports
 * it. Promises: no global mutable state; environment variables are only read.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define GBK_HIDDEN __attribute__((visibility("hidden")))

/* 0 when word is 8-aligned and [word, word + 8) lies inside [base, base + bytes),
 * else -EINVAL. */
GBK_HIDDEN int gbk_word_check(const void *base, size_t bytes, const uint64_t *word);

/* NUMA node of the PCI device with bus id `busid` ("0000:3B:00.0"; any case, domain of
 * 4 or 8 hex digits) read from $GARUDA_SYSFS_ROOT/bus/pci/devices/<dddd:bb:dd.f>/numa_node
 * (GARUDA_SYSFS_ROOT unset or empty: /sys). -1 when unknown, unreadable or out of range. */
GBK_HIDDEN int gbk_pci_numa_node(const char *busid);

struct garuda_backend;
struct garuda_backend_reg;

/* The checks every register_memory() starts with: *out = NULL (out not NULL), then 0
 * when b and addr are set and [addr, addr + bytes) is non-empty and does not wrap,
 * else -EINVAL. */
GBK_HIDDEN int gbk_register_args(const struct garuda_backend *b, const void *addr, size_t bytes,
				 struct garuda_backend_reg **out);

/* Set garuda_backend_why()'s text (per thread); "" clears it. */
GBK_HIDDEN void gbk_set_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The library path a backend dlopens: $env_name when set and not empty, else dflt. */
GBK_HIDDEN const char *gbk_library_path(const char *env_name, const char *dflt);
