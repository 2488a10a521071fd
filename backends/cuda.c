/* cuda.c — the `cuda` backend: stores into a garuda word behind the work queued on a
 * CUstream, through the CUDA driver API loaded with dlopen (nothing links the SDK;
 * the few types and constants used are declared below from the driver's ABI).
 *
 * Promises:
 *  - The library is $GARUDA_CUDA_LIBRARY when set, else "libcuda.so.1"; it cannot be
 *    loaded -> -GARUDA_E_NO_DRIVER. It is opened RTLD_NODELETE: a driver is never
 *    unloaded under its own threads.
 *  - Entry points: cuInit and cuDriverGetVersion by dlsym; the rest through
 *    cuGetProcAddress_v2 (else cuGetProcAddress) asking for CUDA 12.0 semantics
 *    (GBK_CUDA_API_VERSION) with CU_GET_PROC_ADDRESS_LEGACY_STREAM, on drivers >= 12.0.
 *    On older drivers, or without cuGetProcAddress, the explicitly versioned symbol
 *    names (cuStreamWriteValue64_v2, cuMemHostRegister_v2, ...) by dlsym. The
 *    unversioned stream-memop names (the legacy ABI, CUDA_ERROR_NOT_SUPPORTED on stock
 *    drivers) are never used. Any required entry point missing -> DRIVER_TOO_OLD.
 *  - open() retains the device's primary context; every registration retains it
 *    again and releases it when unregistered, so the context outlives every
 *    registration. A registration also holds a reference on the backend object:
 *    close() with registrations alive defers the final release and dlclose.
 *  - Each call that needs a context pushes the primary context on the calling thread
 *    and pops it before returning; the caller's own current context is untouched.
 *  - open() fails with -GARUDA_E_UNSUPPORTED unless the device reports
 *    CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS (122) = 1.
 *  - register_memory: cuMemHostRegister(DEVICEMAP | PORTABLE) then
 *    cuMemHostGetDevicePointer; either refused -> -GARUDA_E_REGISTER_FAILED, and
 *    nothing stays registered.
 *  - enqueue_store: cuStreamWriteValue64(stream, device address of word, value,
 *    flags 0): the default flags order the write after the stream's earlier work.
 *  - query: cuStreamQuery: CUDA_SUCCESS -> 0, CUDA_ERROR_NOT_READY -> -EAGAIN, any
 *    other result -> -GARUDA_E_STREAM_FAULT.
 *  - numa_node: cuDeviceGetPCIBusId -> sysfs (see internal.h), read once at open().
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

/* ---- the slice of the CUDA driver ABI this file uses ------------------------ */

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 */
typedef unsigned long long cuuint64_t;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
	CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
};

#define CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS 122
#define CU_MEMHOSTREGISTER_PORTABLE 0x01u
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02u
#define CU_STREAM_WRITE_VALUE_DEFAULT 0x0u
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM 0x1ull
#define CU_GET_PROC_ADDRESS_SUCCESS 0

/* The CUDA version whose entry-point semantics we ask cuGetProcAddress for: 12.0 is
 * where the _v2 stream memops became the default cuStreamWriteValue64. */
#define GBK_CUDA_API_VERSION 12000
#define GBK_CUDA_BUSID_LEN 32

typedef CUresult (*cu_init_t)(unsigned flags);
typedef CUresult (*cu_driver_get_version_t)(int *version);
typedef CUresult (*cu_get_proc_address_t)(const char *symbol, void **pfn, int cuda_version,
					  cuuint64_t flags);
typedef CUresult (*cu_get_proc_address_v2_t)(const char *symbol, void **pfn,
					     int cuda_version, cuuint64_t flags,
					     int *symbol_status);

/* X(member, name for cuGetProcAddress, versioned name for dlsym, parameters) */
#define CUDA_ENTRY_POINTS(X)                                                                \
	X(device_get_count, "cuDeviceGetCount", "cuDeviceGetCount", (int *count))            \
	X(device_get, "cuDeviceGet", "cuDeviceGet", (CUdevice *dev, int ordinal))            \
	X(device_get_attribute, "cuDeviceGetAttribute", "cuDeviceGetAttribute",              \
	  (int *value, int attribute, CUdevice dev))                                         \
	X(device_get_pci_bus_id, "cuDeviceGetPCIBusId", "cuDeviceGetPCIBusId",               \
	  (char *busid, int len, CUdevice dev))                                              \
	X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain",        \
	  (CUcontext *ctx, CUdevice dev))                                                    \
	X(primary_ctx_release, "cuDevicePrimaryCtxRelease", "cuDevicePrimaryCtxRelease_v2",  \
	  (CUdevice dev))                                                                    \
	X(ctx_push_current, "cuCtxPushCurrent", "cuCtxPushCurrent_v2", (CUcontext ctx))      \
	X(ctx_pop_current, "cuCtxPopCurrent", "cuCtxPopCurrent_v2", (CUcontext *ctx))        \
	X(mem_host_register, "cuMemHostRegister", "cuMemHostRegister_v2",                    \
	  (void *p, size_t bytes, unsigned flags))                                           \
	X(mem_host_unregister, "cuMemHostUnregister", "cuMemHostUnregister", (void *p))      \
	X(mem_host_get_device_pointer, "cuMemHostGetDevicePointer",                          \
	  "cuMemHostGetDevicePointer_v2", (CUdeviceptr *dptr, void *p, unsigned flags))      \
	X(stream_write_value64, "cuStreamWriteValue64", "cuStreamWriteValue64_v2",           \
	  (CUstream stream, CUdeviceptr addr, cuuint64_t value, unsigned flags))             \
	X(stream_query, "cuStreamQuery", "cuStreamQuery", (CUstream stream))

struct cuda_api {
#define CUDA_MEMBER_(member, name, dlname, params) CUresult (*member) params;
	CUDA_ENTRY_POINTS(CUDA_MEMBER_)
#undef CUDA_MEMBER_
};

struct garuda_backend {
	atomic_int refs; /* 1 for the opener + 1 per live registration */
	void *lib;
	struct cuda_api api;
	CUdevice dev;
	CUcontext ctx; /* the primary context, retained while refs > 0 */
	bool ctx_retained;
	int numa;
};

struct garuda_backend_reg {
	struct garuda_backend *b;
	void *addr;
	size_t bytes;
	CUdeviceptr dptr;
};

/* ---- entry points ------------------------------------------------------------ */

enum resolve_path { PATH_GETPROC_V2, PATH_GETPROC, PATH_DLSYM };

struct resolver {
	void *lib;
	enum resolve_path path;
	cu_get_proc_address_v2_t getproc_v2;
	cu_get_proc_address_t getproc;
};

static void *resolve_one(const struct resolver *rs, const char *name, const char *dlname)
{
	void *fn = NULL;
	switch (rs->path) {
	case PATH_GETPROC_V2: {
		int status = -1;
		if (rs->getproc_v2(name, &fn, GBK_CUDA_API_VERSION,
				   CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS ||
		    status != CU_GET_PROC_ADDRESS_SUCCESS)
			fn = NULL;
		break;
	}
	case PATH_GETPROC:
		if (rs->getproc(name, &fn, GBK_CUDA_API_VERSION,
				CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS)
			fn = NULL;
		break;
	case PATH_DLSYM:
		fn = dlsym(rs->lib, dlname);
		break;
	}
	return fn;
}

static int resolve_all(struct garuda_backend *b, int driver_version, const char *path)
{
	struct resolver rs = { .lib = b->lib, .path = PATH_DLSYM };
	if (driver_version >= GBK_CUDA_API_VERSION) {
		rs.getproc_v2 = (cu_get_proc_address_v2_t)dlsym(b->lib, "cuGetProcAddress_v2");
		rs.getproc = (cu_get_proc_address_t)dlsym(b->lib, "cuGetProcAddress");
		if (rs.getproc_v2)
			rs.path = PATH_GETPROC_V2;
		else if (rs.getproc)
			rs.path = PATH_GETPROC;
	}
	void *fn;
#define CUDA_RESOLVE_(member, name, dlname, params)                                      \
	if (!(fn = resolve_one(&rs, name, dlname))) {                                     \
		gbk_set_why("CUDA's library %s (driver version %d) has no %s (%s): the "     \
			    "driver is older than garuda needs; update it, or set "          \
			    "GARUDA_CUDA_LIBRARY to a newer libcuda.so.1",                   \
			    path, driver_version, rs.path == PATH_DLSYM ? dlname : name,     \
			    rs.path == PATH_DLSYM ? "dlsym" : "cuGetProcAddress");           \
		return -GARUDA_E_DRIVER_TOO_OLD;                                          \
	}                                                                                 \
	b->api.member = (CUresult(*) params)fn;
	CUDA_ENTRY_POINTS(CUDA_RESOLVE_)
#undef CUDA_RESOLVE_
	return 0;
}

/* ---- context push/pop --------------------------------------------------------- */

static bool ctx_push(struct garuda_backend *b)
{
	return b->api.ctx_push_current(b->ctx) == CUDA_SUCCESS;
}

static void ctx_pop(struct garuda_backend *b)
{
	CUcontext popped;
	b->api.ctx_pop_current(&popped);
}

/* ---- lifetime ------------------------------------------------------------------ */

static void cuda_free(struct garuda_backend *b)
{
	if (b->ctx_retained)
		b->api.primary_ctx_release(b->dev);
	if (b->lib)
		dlclose(b->lib);
	free(b);
}

static void cuda_unref(struct garuda_backend *b)
{
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
		cuda_free(b);
}

static int map_init_error(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_NO_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_INSUFFICIENT_DRIVER:
	case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
		return -GARUDA_E_DRIVER_TOO_OLD;
	default:
		return -GARUDA_E_NO_DRIVER; /* a library is there but no working driver */
	}
}

static int cuda_setup(struct garuda_backend *b, int device)
{
	const char *path = gbk_library_path("GARUDA_CUDA_LIBRARY", "libcuda.so.1");
	gbk_set_why("%s", "");
	b->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!b->lib) {
		gbk_set_why("cannot load CUDA's library %s (%s; %s): install the NVIDIA driver, or set GARUDA_CUDA_LIBRARY to the "
			    "library's path", path, dlerror(), gbk_library_path("GARUDA_CUDA_LIBRARY", NULL) ? "from $GARUDA_CUDA_LIBRARY" : "the default");
		return -GARUDA_E_NO_DRIVER;
	}

	cu_init_t init = (cu_init_t)dlsym(b->lib, "cuInit");
	cu_driver_get_version_t get_version =
		(cu_driver_get_version_t)dlsym(b->lib, "cuDriverGetVersion");
	if (!init || !get_version) {
		gbk_set_why("CUDA's library %s has no %s: not a CUDA driver library, or one older "
			    "than garuda needs (GARUDA_CUDA_LIBRARY names another)", path,
			    init ? "cuDriverGetVersion" : "cuInit");
		return -GARUDA_E_DRIVER_TOO_OLD;
	}
	CUresult cr = init(0);
	int r = map_init_error(cr);
	if (r < 0) {
		gbk_set_why("cuInit(0) in %s failed with CUresult %d (%s)", path, (int)cr,
			    r == -ENODEV ? "no CUDA device" : r == -GARUDA_E_DRIVER_TOO_OLD
			    ? "the driver is too old for this device or toolkit" : "no working driver");
		return r;
	}
	int version = 0;
	if ((cr = get_version(&version)) != CUDA_SUCCESS) {
		gbk_set_why("cuDriverGetVersion in %s failed with CUresult %d", path, (int)cr);
		return -GARUDA_E_NO_DRIVER;
	}
	if ((r = resolve_all(b, version, path)) < 0)
		return r;

	int count = 0;
	if (b->api.device_get_count(&count) != CUDA_SUCCESS || device >= count)
		return -ENODEV;
	if (b->api.device_get(&b->dev, device) != CUDA_SUCCESS)
		return -ENODEV;

	int memops = 0;
	if (b->api.device_get_attribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
					b->dev) != CUDA_SUCCESS) {
		/* the driver does not know attribute 122 */
		gbk_set_why("CUDA's driver in %s does not know attribute %d (64-bit stream memory "
			    "operations): it is older than garuda needs", path,
			    (int)CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS);
		return -GARUDA_E_DRIVER_TOO_OLD;
	}
	if (memops != 1) {
		gbk_set_why("CUDA device %d cannot use 64-bit stream memory operations "
			    "(cuStreamWriteValue64): garuda's cuda backend needs them", device);
		return -GARUDA_E_UNSUPPORTED;
	}

	switch (b->api.primary_ctx_retain(&b->ctx, b->dev)) {
	case CUDA_SUCCESS:
		break;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_DEVICE_UNAVAILABLE:
		return -EBUSY;
	default:
		return -ENODEV;
	}
	b->ctx_retained = true;

	char busid[GBK_CUDA_BUSID_LEN] = "";
	if (b->api.device_get_pci_bus_id(busid, (int)sizeof(busid) - 1, b->dev) == CUDA_SUCCESS)
		b->numa = gbk_pci_numa_node(busid);
	return 0;
}

static int cuda_open(int device, struct garuda_backend **out)
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
	int r = cuda_setup(b, device);
	if (r < 0) {
		cuda_free(b);
		return r;
	}
	*out = b;
	return 0;
}

static void cuda_close(struct garuda_backend *b)
{
	if (b)
		cuda_unref(b);
}

static int cuda_numa_node(struct garuda_backend *b)
{
	return b ? b->numa : -1;
}

/* ---- registration ---------------------------------------------------------------- */

static int cuda_register(struct garuda_backend *b, void *addr, size_t bytes,
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

	/* The registration keeps the primary context alive until it is unregistered. */
	gbk_set_why("%s", "");
	CUcontext ctx;
	CUresult cr = b->api.primary_ctx_retain(&ctx, b->dev);
	if (cr != CUDA_SUCCESS) {
		gbk_set_why("cuDevicePrimaryCtxRetain failed with CUresult %d", (int)cr);
		free(reg);
		return -GARUDA_E_REGISTER_FAILED;
	}
	int r = -GARUDA_E_REGISTER_FAILED;
	if (!ctx_push(b)) {
		gbk_set_why("cuCtxPushCurrent failed: the device's primary context is unusable");
	} else {
		cr = b->api.mem_host_register(addr, bytes, CU_MEMHOSTREGISTER_DEVICEMAP |
								   CU_MEMHOSTREGISTER_PORTABLE);
		if (cr != CUDA_SUCCESS) {
			gbk_set_why("cuMemHostRegister of the segment's %zu bytes failed with "
				    "CUresult %d", bytes, (int)cr);
		} else if ((cr = b->api.mem_host_get_device_pointer(&reg->dptr, addr, 0)) != CUDA_SUCCESS) {
			gbk_set_why("cuMemHostGetDevicePointer of the registered segment failed with "
				    "CUresult %d", (int)cr);
			b->api.mem_host_unregister(addr);
		} else {
			r = 0;
		}
		ctx_pop(b);
	}
	if (r < 0) {
		b->api.primary_ctx_release(b->dev);
		free(reg);
		return r;
	}
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	*out = reg;
	return 0;
}

static int cuda_unregister(struct garuda_backend *b, struct garuda_backend_reg *reg)
{
	if (!b || !reg || reg->b != b)
		return -EINVAL;
	int r = -EIO;
	if (ctx_push(b)) {
		if (b->api.mem_host_unregister(reg->addr) == CUDA_SUCCESS)
			r = 0;
		ctx_pop(b);
	}
	/* Even when the driver refused (a faulted context), the registration is gone
	 * from our side: the caller is about to unmap the range. */
	b->api.primary_ctx_release(b->dev);
	free(reg);
	cuda_unref(b);
	return r;
}

/* ---- stores and queries ------------------------------------------------------------ */

static int map_stream_error(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -GARUDA_E_UNSUPPORTED;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_HANDLE:
	case CUDA_ERROR_INVALID_CONTEXT:
		return -EINVAL;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	default:
		return -GARUDA_E_STREAM_FAULT; /* sticky context errors */
	}
}

/* CU_STREAM_LEGACY (0x1) and CU_STREAM_PER_THREAD (0x2) name "the legacy stream of
 * the context current to the calling thread" and "the calling thread's per-thread
 * stream" (cuStreamGetCtx; the driver API's stream synchronization behavior): the
 * store, and the queries libgaruda makes on other threads (the I/O thread's fault
 * watch, waits), would each mean another stream. Refused; NULL is the primary
 * context's legacy stream (pushed around every call). */
static bool special_stream(const void *stream)
{
	return (uintptr_t)stream == 0x1 || (uintptr_t)stream == 0x2;
}

static int cuda_enqueue_store(struct garuda_backend *b, void *stream,
			      struct garuda_backend_reg *reg, uint64_t *word, uint64_t value)
{
	if (!b || !reg || reg->b != b || special_stream(stream))
		return -EINVAL;
	int r = gbk_word_check(reg->addr, reg->bytes, word);
	if (r < 0)
		return r;
	CUdeviceptr dptr = reg->dptr + (CUdeviceptr)((uintptr_t)word - (uintptr_t)reg->addr);
	if (!ctx_push(b))
		return -GARUDA_E_STREAM_FAULT;
	r = map_stream_error(b->api.stream_write_value64((CUstream)stream, dptr, value,
							 CU_STREAM_WRITE_VALUE_DEFAULT));
	ctx_pop(b);
	return r;
}

static int cuda_query(struct garuda_backend *b, void *stream)
{
	if (!b || special_stream(stream))
		return -EINVAL;
	if (!ctx_push(b))
		return -GARUDA_E_STREAM_FAULT;
	CUresult cr = b->api.stream_query((CUstream)stream);
	ctx_pop(b);
	switch (cr) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_NOT_READY:
		return -EAGAIN;
	default:
		return -GARUDA_E_STREAM_FAULT;
	}
}

const struct garuda_backend_ops garuda_backend_cuda = {
	.name = "cuda",
	.open = cuda_open,
	.close = cuda_close,
	.numa_node = cuda_numa_node,
	.register_memory = cuda_register,
	.unregister_memory = cuda_unregister,
	.enqueue_store = cuda_enqueue_store,
	.query = cuda_query,
};
