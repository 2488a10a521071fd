/* backend.h — the client-side interface to whatever stores into a word: the CPU
 * (`host`), CUDA or HIP. libgaruda talks to a device only through this table.
 *
 * A backend makes "after the work already queued on this native stream, store value
 * into this host word" happen, and can ask the stream whether it has failed. Vendor
 * runtimes are loaded with dlopen at open() time; nothing links a GPU SDK.
 *
 * Errors: negative errno for system failures; -GARUDA_E_NO_DRIVER (library absent),
 * -GARUDA_E_DRIVER_TOO_OLD (entry point missing), -GARUDA_E_UNSUPPORTED (device cannot
 * do 64-bit stream memops), -GARUDA_E_REGISTER_FAILED, -GARUDA_E_STREAM_FAULT.
 *
 * Thread safety: one struct garuda_backend may be used from several threads; the
 * backend serialises what its runtime needs serialised.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct garuda_backend;  /* one opened runtime + device */
struct garuda_backend_reg; /* one registered host range */

struct garuda_backend_ops {
	const char *name; /* "host", "cuda", "hip" */

	/* Load the runtime and select device `device` (ordinal). */
	int (*open)(int device, struct garuda_backend **out);
	/* Release the device/runtime. All registrations must be gone. */
	void (*close)(struct garuda_backend *b);

	/* NUMA node of the device (from its PCI bus id through sysfs), or -1. */
	int (*numa_node)(struct garuda_backend *b);

	/* Register the client's own mapping [addr, addr + bytes) so the device can store
	 * into it (cuMemHostRegister DEVICEMAP|PORTABLE / hipHostRegister mapped). */
	int (*register_memory)(struct garuda_backend *b, void *addr, size_t bytes,
			       struct garuda_backend_reg **out);
	/* Undo register_memory; must be called before the range is unmapped. */
	int (*unregister_memory)(struct garuda_backend *b, struct garuda_backend_reg *reg);

	/* Enqueue on native stream `stream` (CUstream, hipStream_t, or a host stream):
	 * after all work queued before it, store `value` into `word`, which lies inside
	 * reg's range. `stream` NULL on the host backend stores immediately (release). */
	int (*enqueue_store)(struct garuda_backend *b, void *stream, struct garuda_backend_reg *reg,
			     uint64_t *word, uint64_t value);

	/* 0: all work queued on stream has finished; -EAGAIN: still running;
	 * -GARUDA_E_STREAM_FAULT: the stream (its context) failed. */
	int (*query)(struct garuda_backend *b, void *stream);

	/* Optional (NULL: the backend has none; a `block` wait plan then polls): wait
	 * until all work queued on stream has finished. 0, or -GARUDA_E_STREAM_FAULT. */
	int (*synchronize)(struct garuda_backend *b, void *stream);
};

extern const struct garuda_backend_ops garuda_backend_host;
extern const struct garuda_backend_ops garuda_backend_cuda;
extern const struct garuda_backend_ops garuda_backend_hip;

/* Words for the calling thread's last failed open() (which library, and how to point
 * at another: GARUDA_CUDA_LIBRARY / GARUDA_HIP_LIBRARY); "" when it said nothing. */
const char *garuda_backend_why(void);

/* The backend named `name`, or NULL. */
const struct garuda_backend_ops *garuda_backend_find(const char *name);
