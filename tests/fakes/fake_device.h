/* fake_device.h — the "device" shared by the FAKE vendor runtimes in tests/fakes.
 *
 * Not a GPU and not a model of one: just enough to check garuda's use of the CUDA and
 * HIP ABIs. A fake stream is a thread that executes its queued operations in order
 * (sleep, wait on a gate, store a value, fault); a store is a release store. After a
 * fault the stream is faulted for good and its queued stores never happen. The fake
 * registry maps host ranges to made-up device addresses (host + FAKE_DEV_OFFSET, never
 * a valid user address) so a caller that passes a host pointer where a device pointer
 * belongs is caught. Everything here is internal to each fake library (hidden).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKE_HIDDEN __attribute__((visibility("hidden")))
#define FAKE_EXPORT __attribute__((visibility("default")))

#define FAKE_DEV_OFFSET 0x4000000000000000ull
#define FAKE_MAX_REGS 64

struct fake_stream;

FAKE_HIDDEN struct fake_stream *fake_stream_new(void);
/* Lets queued operations finish (none if faulted), joins the thread, frees. */
FAKE_HIDDEN void fake_stream_destroy(struct fake_stream *s);
FAKE_HIDDEN int fake_stream_sleep(struct fake_stream *s, uint64_t ns);
FAKE_HIDDEN int fake_stream_gate(struct fake_stream *s, const int *gate);
FAKE_HIDDEN int fake_stream_write(struct fake_stream *s, uint64_t *p, uint64_t value);
FAKE_HIDDEN int fake_stream_fault(struct fake_stream *s);
/* 0 idle, 1 operations pending or running, -1 faulted. */
FAKE_HIDDEN int fake_stream_state(struct fake_stream *s);

/* Host range registry. add: 0, or -1 when the range overlaps one or the table is full.
 * remove: 0, or -1 when host is not the start of a registration. */
FAKE_HIDDEN int fake_reg_add(void *host, size_t bytes, unsigned flags);
FAKE_HIDDEN int fake_reg_remove(void *host);
/* The device address of host (which must lie in a registration), or 0. */
FAKE_HIDDEN uint64_t fake_reg_device_address(void *host);
/* The 8-aligned host word behind device address dev with its 8 bytes inside one
 * registration, or NULL; *flags gets the registration's flags. */
FAKE_HIDDEN uint64_t *fake_reg_host_word(uint64_t dev, unsigned *flags);
FAKE_HIDDEN int fake_reg_count(void);

/* Integer from environment variable name, or dflt when unset or not a number. */
FAKE_HIDDEN long fake_env_long(const char *name, long dflt);
/* True when name appears in the comma-separated list in environment variable env. */
FAKE_HIDDEN bool fake_env_lists(const char *env, const char *name);
