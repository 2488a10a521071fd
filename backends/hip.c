/* hip.c — the `hip` backend: stores into a garuda word behind the work queued on a
 * hipStream_t, through the HIP runtime loaded with dlopen (nothing links ROCm; the few
 * types and constants used are declared below from the runtime's ABI, ROCm >= 5).
 *
 * Promises:
 *  - The library is $GARUDA_HIP_LIBRARY when set, else "libamdhip64.so"; it cannot be
 *    loaded -> -GARUDA_E_NO_DRIVER. It is opened RTLD_NODELETE (never unloaded under
 *    the runtime's own threads). Every entry point is resolved by dlsym at open();
 *    one missing -> -GARUDA_E_DRIVER_TOO_OLD, as is a runtime older than HIP 5.0
 *    (hipRuntimeGetVersion), whose device-attribute numbering differs.
 *  - open() fails with -GARUDA_E_UNSUPPORTED unless the device reports
 *    hipDeviceAttributeCanUseStreamWaitValue = 1. HIP has no attribute for stream
 *    writes alone; this one is what HIP gates all its stream memory operations
 *    (hipStreamWriteValue32/64, hipStreamWaitValue32/64, batch memops) on, and it is 0
 *    exactly where the runtime cannot put memory packets in a stream's queue (e.g.
 *    Windows PAL). Asking is a cheap, honest refusal instead of a late failure.
 *  - register_memory: hipHostRegister(Mapped | Portable), then hipHostGetDevicePointer,
 *    with the backend's device made current for the call and the caller's current
 *    device restored; either refused -> -GARUDA_E_REGISTER_FAILED, nothing stays
 *    registered. A registration holds a reference on the backend object, so close()
 *    with registrations alive defers the dlclose until the last is unregistered.
 *  - enqueue_store: hipStreamWriteValue64(stream, device address of word, value, 0),
 *    ordered after the stream's earlier work. A NULL stream is the null stream of the
 *    backend's device (made current for the call).
 *  - query: hipStreamQuery: hipSuccess -> 0, hipErrorNotReady -> -EAGAIN, any other
 *    result -> -GARUDA_E_STREAM_FAULT.
 *  - numa_node: hipDeviceGetPCIBusId -> sysfs (see internal.h), read once at open().
 * Thread safety: after open() the backend's state is read-only (plus an atomic
 * reference count); every operation may run concurrently from any thread.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "backend.h"
#include "errcode.h"
#include "internal.h"

/* ---- the slice of the HIP runtime ABI this file uses --------------------------- */

typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;

enum {
	hipSuccess = 0,
	hipErrorInvalidValue = 1,
	hipErrorOutOfMemory = 2,
	hipErrorInsufficientDriver = 35,
	hipErrorNoDevice = 100,
	hipErrorInvalidDevice = 101,
	hipErrorInvalidContext = 201,
	hipErrorInvalidHandle = 400,
	hipErrorNotReady = 600,
	hipErrorNotSupported = 801,
};

#define hipDeviceAttributeCanUseStreamWaitValue 10013 /* ROCm >= 5 numbering */
#define hipHostRegisterPortable 0x1u
#define hipHostRegisterMapped 0x2u
#define GBK_HIP_MIN_VERSION 50000000 /* HIP 5.0: major * 10000000 + minor * 100000 */
#define GBK_HIP_BUSID_LEN 32

/* X(member, symbol, parameters) */
#define HIP_ENTRY_POINTS(X)                                                                \
	X(init, "hipInit", (unsigned flags))                                                \
	X(runtime_get_version, "hipRuntimeGetVersion", (int *version))                      \
	X(get_device_count, "hipGetDeviceCount", (int *count))                              \
	X(get_device, "hipGetDevice", (int *device))                                        \
	X(set_device, "hipSetDevice", (int device))                                         \
	X(device_get_attribute, "hipDeviceGetAttribute", (int *value, int attr, int device)) \
	X(device_get_pci_bus_id, "hipDeviceGetPCIBusId", (char *busid, int len, int device)) \
	X(host_register, "hipHostRegister", (void *p, size_t bytes, unsigned flags))        \
	X(host_unregister, "hipHostUnregister", (void *p))                                  \
	X(host_get_device_pointer, "hipHostGetDevicePointer",                               \
	  (void **dptr, void *p, unsigned flags))                                            \
	X(stream_write_value64, "hipStreamWriteValue64",                                    \
	  (hipStream_t stream, void *p, uint64_t value, unsigned flags))                     \
	X(stream_query, "hipStreamQuery", (hipStream_t stream))

struct hip_api {
#define HIP_MEMBER_(member, name, params) hipError_t (*member) params;
	HIP_ENTRY_POINTS(HIP_MEMBER_)
#undef HIP_MEMBER_
};

struct garuda_backend {
	atomic_int refs; /* 1 for the opener + 1 per live registration */
	void *lib;
	struct hip_api api;
	int device;
	int numa;
};

struct garuda_backend_reg {
	struct garuda_backend *b;
	void *addr;
	size_t bytes;
	uintptr_t dptr;
};

/* ---- current device save/restore ----------------------------------------------- */

/* Make the backend's device current on this thread; *saved gets the previous one
 * (-1 when it could not be read). Returns false when the device cannot be set. */
static bool device_enter(struct garuda_backend *b, int *saved)
{
	if (b->api.get_device(saved) != hipSuccess)
		*saved = -1;
	if (*saved == b->device)
		return true;
	return b->api.set_device(b->device) == hipSuccess;
}

static void device_leave(struct garuda_backend *b, int saved)
{
	if (saved >= 0 && saved != b->device)
		b->api.set_device(saved);
}

/* ---- lifetime -------------------------------------------------------------------- */

static void hip_free(struct garuda_backend *b)
{
	if (b->lib)
		dlclose(b->lib);
	free(b);
}

static void hip_unref(struct garuda_backend *b)
{
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
		hip_free(b);
}

static int hip_setup(struct garuda_backend *b, int device)
{
	const char *path = gbk_library_path("GARUDA_HIP_LIBRARY", "libamdhip64.so");
	gbk_set_why("%s", "");
	b->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!b->lib) {
		gbk_set_why("cannot load HIP's library %s (%s; %s): install ROCm, or set GARUDA_HIP_LIBRARY to the "
			    "library's path", path, dlerror(), gbk_library_path("GARUDA_HIP_LIBRARY", NULL) ? "from $GARUDA_HIP_LIBRARY" : "the default");
		return -GARUDA_E_NO_DRIVER;
	}
	void *fn;
#define HIP_RESOLVE_(member, name, params)                                               \
	if (!(fn = dlsym(b->lib, name))) {                                               \
		gbk_set_why("HIP's library %s has no %s: ROCm is older than garuda needs; "  \
			    "update it, or set GARUDA_HIP_LIBRARY to a newer libamdhip64.so",  \
			    path, name);                                                     \
		return -GARUDA_E_DRIVER_TOO_OLD;                                          \
	}                                                                                 \
	b->api.member = (hipError_t(*) params)fn;
	HIP_ENTRY_POINTS(HIP_RESOLVE_)
#undef HIP_RESOLVE_

	hipError_t he = b->api.init(0);
	switch (he) {
	case hipSuccess:
		break;
	case hipErrorNoDevice:
		gbk_set_why("hipInit(0) in %s: no HIP device (hipError_t %d)", path, (int)he);
		return -ENODEV;
	case hipErrorInsufficientDriver:
		gbk_set_why("hipInit(0) in %s: the driver is too old (hipError_t %d)", path, (int)he);
		return -GARUDA_E_DRIVER_TOO_OLD;
	default:
		gbk_set_why("hipInit(0) in %s failed with hipError_t %d: no working driver", path,
			    (int)he);
		return -GARUDA_E_NO_DRIVER;
	}
	int version = 0;
	if ((he = b->api.runtime_get_version(&version)) != hipSuccess ||
	    version < GBK_HIP_MIN_VERSION) {
		gbk_set_why("HIP's runtime in %s is version %d (hipError_t %d); garuda needs %d or "
			    "newer", path, version, (int)he, GBK_HIP_MIN_VERSION);
		return -GARUDA_E_DRIVER_TOO_OLD;
	}

	int count = 0;
	if (b->api.get_device_count(&count) != hipSuccess || device >= count)
		return -ENODEV;
	b->device = device;

	int memops = 0;
	if (b->api.device_get_attribute(&memops, hipDeviceAttributeCanUseStreamWaitValue,
					device) != hipSuccess) {
		gbk_set_why("HIP's runtime in %s does not know hipDeviceAttributeCanUseStreamWaitValue: "
			    "it is older than garuda needs", path);
		return -GARUDA_E_DRIVER_TOO_OLD;
	}
	if (memops != 1) {
		gbk_set_why("HIP device %d cannot use stream memory operations "
			    "(hipStreamWriteValue64): garuda's hip backend needs them", device);
		return -GARUDA_E_UNSUPPORTED;
	}

	char busid[GBK_HIP_BUSID_LEN] = "";
	if (b->api.device_get_pci_bus_id(busid, (int)sizeof(busid) - 1, device) == hipSuccess)
		b->numa = gbk_pci_numa_node(busid);
	return 0;
}

static int hip_open(int device, struct garuda_backend **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (device < 0)
		return -ENODEV;
	struct garuda_backend *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	atomic_init(&b->refs, 1);
	b->numa = -1;
	int r = hip_setup(b, device);
	if (r < 0) {
		hip_free(b);
		return r;
	}
	*out = b;
	return 0;
}

static void hip_close(struct garuda_backend *b)
{
	if (b)
		hip_unref(b);
}

static int hip_numa_node(struct garuda_backend *b)
{
	return b ? b->numa : -1;
}

/* ---- registration ------------------------------------------------------------------ */

static int hip_register(struct garuda_backend *b, void *addr, size_t bytes,
			struct garuda_backend_reg **out)
{
	int r0 = gbk_register_args(b, addr, bytes, out);
	if (r0)
		return r0;
	struct garuda_backend_reg *reg = calloc(1, sizeof(*reg));
	if (!reg)
		return -ENOMEM;
	reg->b = b;
	reg->addr = addr;
	reg->bytes = bytes;

	int r = -GARUDA_E_REGISTER_FAILED, saved;
	gbk_set_why("%s", "");
	if (!device_enter(b, &saved)) {
		gbk_set_why("hipSetDevice(%d) failed", b->device);
	} else {
		hipError_t he = b->api.host_register(addr, bytes,
						     hipHostRegisterMapped | hipHostRegisterPortable);
		void *dptr = NULL;
		if (he != hipSuccess) {
			gbk_set_why("hipHostRegister of the segment's %zu bytes failed with "
				    "hipError_t %d", bytes, (int)he);
		} else if ((he = b->api.host_get_device_pointer(&dptr, addr, 0)) != hipSuccess || !dptr) {
			gbk_set_why("hipHostGetDevicePointer of the registered segment failed with "
				    "hipError_t %d", (int)he);
			b->api.host_unregister(addr);
		} else {
			reg->dptr = (uintptr_t)dptr;
			r = 0;
		}
	}
	device_leave(b, saved);
	if (r < 0) {
		free(reg);
		return r;
	}
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	*out = reg;
	return 0;
}

static int hip_unregister(struct garuda_backend *b, struct garuda_backend_reg *reg)
{
	if (!b || !reg || reg->b != b)
		return -EINVAL;
	int r = b->api.host_unregister(reg->addr) == hipSuccess ? 0 : -EIO;
	/* Gone from our side even when the runtime refused: the range is being unmapped. */
	free(reg);
	hip_unref(b);
	return r;
}

/* ---- stores and queries -------------------------------------------------------------- */

static int map_stream_error(hipError_t r)
{
	switch (r) {
	case hipSuccess:
		return 0;
	case hipErrorNotSupported:
		return -GARUDA_E_UNSUPPORTED;
	case hipErrorInvalidValue:
	case hipErrorInvalidHandle:
	case hipErrorInvalidContext:
	case hipErrorInvalidDevice:
		return -EINVAL;
	case hipErrorOutOfMemory:
		return -ENOMEM;
	default:
		return -GARUDA_E_STREAM_FAULT;
	}
}

static int hip_enqueue_store(struct garuda_backend *b, void *stream,
			     struct garuda_backend_reg *reg, uint64_t *word, uint64_t value)
{
	if (!b || !reg || reg->b != b)
		return -EINVAL;
	int r = gbk_word_check(reg->addr, reg->bytes, word);
	if (r < 0)
		return r;
	void *dptr = (void *)(reg->dptr + ((uintptr_t)word - (uintptr_t)reg->addr));
	if (stream)
		return map_stream_error(b->api.stream_write_value64(stream, dptr, value, 0));
	int saved;
	r = device_enter(b, &saved) ? map_stream_error(b->api.stream_write_value64(NULL, dptr, value, 0))
				    : -EINVAL;
	device_leave(b, saved);
	return r;
}

static int hip_query(struct garuda_backend *b, void *stream)
{
	if (!b)
		return -EINVAL;
	hipError_t hr;
	if (stream) {
		hr = b->api.stream_query(stream);
	} else {
		int saved;
		hr = device_enter(b, &saved) ? b->api.stream_query(NULL) : hipErrorInvalidDevice;
		device_leave(b, saved);
	}
	switch (hr) {
	case hipSuccess:
		return 0;
	case hipErrorNotReady:
		return -EAGAIN;
	default:
		return -GARUDA_E_STREAM_FAULT;
	}
}

const struct garuda_backend_ops garuda_backend_hip = {
	.name = "hip",
	.open = hip_open,
	.close = hip_close,
	.numa_node = hip_numa_node,
	.register_memory = hip_register,
	.unregister_memory = hip_unregister,
	.enqueue_store = hip_enqueue_store,
	.query = hip_query,
};
