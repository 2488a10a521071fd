/* fake_cuda.c — a FAKE libcuda.so.1 for tests. NOT the NVIDIA driver.
 *
 * It implements the driver entry points garuda's cuda backend resolves, with their
 * real names and versions, so tests can check how we use the ABI: that entry points
 * come from cuGetProcAddress_v2/cuGetProcAddress with an explicit version or from the
 * explicitly versioned _v2 symbols, never from the unversioned legacy stream memops
 * (exported here returning CUDA_ERROR_NOT_SUPPORTED and counted); that a context is
 * current where the driver needs one; that stores target device addresses of
 * registered ranges; that registrations and primary-context references balance.
 * Streams are fake_device.h threads. See fake_cuda.h for knobs and test controls.
 *
 * Build variants: FAKE_NO_GETPROC_V2 (no cuGetProcAddress_v2), FAKE_NO_GETPROC (no
 * cuGetProcAddress at all), FAKE_NO_MEMOP_V2 (a driver older than 11.7: no
 * cuStreamWriteValue64_v2, only the legacy name).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "fake_device.h"

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
	CUDA_ERROR_NOT_SUPPORTED = 801,
};

#define MAX_DEVICES 8
#define CTX_STACK 16

struct CUctx_st {
	int device;
};
struct CUstream_st {
	struct fake_stream *s;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_cuda_stats stats;
static struct CUctx_st primary[MAX_DEVICES];
static int primary_refs[MAX_DEVICES];
static struct {
	int initialized;
	int driver_version, devices, attr122, register_result, devptr_result;
	char busid[32];
} k;

static __thread CUcontext ctx_stack[CTX_STACK];
static __thread int ctx_depth;

#define BUMP(field)                    \
	do {                           \
		pthread_mutex_lock(&mu); \
		stats.field++;         \
		pthread_mutex_unlock(&mu); \
	} while (0)

static int initialized(void)
{
	pthread_mutex_lock(&mu);
	int r = k.initialized;
	pthread_mutex_unlock(&mu);
	return r;
}

/* The context current on this thread, if it is still alive. */
static int have_context(void)
{
	int ok = 0;
	if (ctx_depth > 0) {
		pthread_mutex_lock(&mu);
		ok = primary_refs[ctx_stack[ctx_depth - 1]->device] > 0;
		if (!ok)
			stats.no_context++;
		pthread_mutex_unlock(&mu);
	} else {
		BUMP(no_context);
	}
	return ok;
}

/* ---- initialization ---- */

FAKE_EXPORT CUresult cuInit(unsigned flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	CUresult r = (CUresult)fake_env_long("FAKE_CUDA_INIT_RESULT", 0);
	pthread_mutex_lock(&mu);
	stats.init_calls++;
	if (!k.initialized) { /* knobs are read once, by the first successful cuInit */
		k.driver_version = (int)fake_env_long("FAKE_CUDA_DRIVER_VERSION", 12040);
		k.devices = (int)fake_env_long("FAKE_CUDA_DEVICES", 1);
		if (k.devices < 0 || k.devices > MAX_DEVICES)
			k.devices = 1;
		k.attr122 = (int)fake_env_long("FAKE_CUDA_ATTR122", 1);
		k.register_result = (int)fake_env_long("FAKE_CUDA_REGISTER_RESULT", 0);
		k.devptr_result = (int)fake_env_long("FAKE_CUDA_DEVPTR_RESULT", 0);
		const char *busid = getenv("FAKE_CUDA_PCI_BUS_ID");
		strncpy(k.busid, busid ? busid : "0000:3B:00.0", sizeof(k.busid) - 1);
		for (int i = 0; i < MAX_DEVICES; i++)
			primary[i].device = i;
	}
	if (r == CUDA_SUCCESS)
		k.initialized = 1;
	pthread_mutex_unlock(&mu);
	return r;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = (int)fake_env_long("FAKE_CUDA_DRIVER_VERSION", 12040);
	return CUDA_SUCCESS;
}

/* ---- devices ---- */

FAKE_EXPORT CUresult cuDeviceGetCount(int *count)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	*count = k.devices;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= k.devices)
		return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= k.devices)
		return CUDA_ERROR_INVALID_DEVICE;
	if (attr != 122)
		return CUDA_ERROR_INVALID_VALUE; /* the only attribute this fake knows */
	*value = k.attr122;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetPCIBusId(char *busid, int len, CUdevice dev)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= k.devices || !busid || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	strncpy(busid, k.busid, (size_t)len - 1);
	busid[len - 1] = '\0';
	return CUDA_SUCCESS;
}

/* ---- primary context ---- */

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= k.devices)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	primary_refs[dev]++;
	stats.primary_retains++;
	pthread_mutex_unlock(&mu);
	*ctx = &primary[dev];
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= k.devices)
		return CUDA_ERROR_INVALID_DEVICE;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&mu);
	if (primary_refs[dev] == 0) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		primary_refs[dev]--;
		stats.primary_releases++;
	}
	pthread_mutex_unlock(&mu);
	return r;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	BUMP(legacy_calls);
	return cuDevicePrimaryCtxRelease_v2(dev);
}

FAKE_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	if (!ctx || ctx_depth == CTX_STACK)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	int alive = primary_refs[ctx->device] > 0;
	if (alive)
		stats.pushes++;
	pthread_mutex_unlock(&mu);
	if (!alive)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
	if (ctx_depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	CUcontext top = ctx_stack[--ctx_depth];
	if (ctx)
		*ctx = top;
	BUMP(pops);
	return CUDA_SUCCESS;
}

/* ---- host memory ---- */

FAKE_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!have_context())
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!p || !bytes || (flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	stats.register_flags = flags;
	CUresult r = k.register_result;
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS)
		return r;
	if (fake_reg_add(p, bytes, flags) < 0)
		return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	pthread_mutex_lock(&mu);
	stats.registers++;
	stats.registered = fake_reg_count();
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostRegister(void *p, size_t bytes, unsigned flags)
{
	BUMP(legacy_calls);
	return cuMemHostRegister_v2(p, bytes, flags);
}

FAKE_EXPORT CUresult cuMemHostUnregister(void *p)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!have_context())
		return CUDA_ERROR_INVALID_CONTEXT;
	if (fake_reg_remove(p) < 0)
		return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	pthread_mutex_lock(&mu);
	stats.unregisters++;
	stats.registered = fake_reg_count();
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned flags)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!have_context())
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!dptr || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&mu);
	CUresult r = k.devptr_result;
	pthread_mutex_unlock(&mu);
	if (r != CUDA_SUCCESS)
		return r;
	uint64_t dev = fake_reg_device_address(p);
	if (!dev)
		return CUDA_ERROR_INVALID_VALUE;
	*dptr = dev;
	return CUDA_SUCCESS;
}

/* ---- streams ---- */

FAKE_EXPORT CUresult cuStreamCreate(CUstream *out, unsigned flags)
{
	(void)flags;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	struct CUstream_st *st = calloc(1, sizeof(*st));
	if (!st)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!(st->s = fake_stream_new())) {
		free(st);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = st;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream st)
{
	if (!st)
		return CUDA_ERROR_INVALID_HANDLE;
	fake_stream_destroy(st->s);
	free(st);
	return CUDA_SUCCESS;
}

#ifndef FAKE_NO_MEMOP_V2
FAKE_EXPORT CUresult cuStreamWriteValue64_v2(CUstream st, CUdeviceptr addr, uint64_t value,
					     unsigned flags)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!have_context())
		return CUDA_ERROR_INVALID_CONTEXT;
	if (flags & ~1u)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned reg_flags = 0;
	uint64_t *word = fake_reg_host_word(addr, &reg_flags);
	if (!word || !(reg_flags & 0x2u /* DEVICEMAP */)) {
		BUMP(bad_addresses);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (st) {
		if (fake_stream_state(st->s) < 0 || fake_stream_write(st->s, word, value) < 0)
			return FAKE_CUDA_FAULT_RESULT;
	} else {
		__atomic_store_n(word, value, __ATOMIC_RELEASE); /* the fake's NULL stream is idle */
	}
	pthread_mutex_lock(&mu);
	stats.writes++;
	stats.write_flags = flags;
	pthread_mutex_unlock(&mu);
	return CUDA_SUCCESS;
}
#endif

/* The legacy (pre-11.7) ABI: stock drivers answer NOT_SUPPORTED unless a module
 * parameter enables stream memops. garuda must never call it. */
FAKE_EXPORT CUresult cuStreamWriteValue64(CUstream st, CUdeviceptr addr, uint64_t value,
					  unsigned flags)
{
	(void)st, (void)addr, (void)value, (void)flags;
	BUMP(legacy_calls);
	return CUDA_ERROR_NOT_SUPPORTED;
}

FAKE_EXPORT CUresult cuStreamQuery(CUstream st)
{
	if (!initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!have_context())
		return CUDA_ERROR_INVALID_CONTEXT;
	BUMP(queries);
	if (!st)
		return CUDA_SUCCESS;
	switch (fake_stream_state(st->s)) {
	case 0:
		return CUDA_SUCCESS;
	case 1:
		return CUDA_ERROR_NOT_READY;
	default:
		return FAKE_CUDA_FAULT_RESULT;
	}
}

/* ---- cuGetProcAddress ---- */
#ifndef FAKE_NO_GETPROC

struct entry {
	const char *name;
	int version; /* the CUDA version that introduced this variant */
	void *fn;
};

static const struct entry entries[] = {
	{ "cuInit", 2000, (void *)cuInit },
	{ "cuDriverGetVersion", 2020, (void *)cuDriverGetVersion },
	{ "cuDeviceGetCount", 2000, (void *)cuDeviceGetCount },
	{ "cuDeviceGet", 2000, (void *)cuDeviceGet },
	{ "cuDeviceGetAttribute", 2000, (void *)cuDeviceGetAttribute },
	{ "cuDeviceGetPCIBusId", 4010, (void *)cuDeviceGetPCIBusId },
	{ "cuDevicePrimaryCtxRetain", 7000, (void *)cuDevicePrimaryCtxRetain },
	{ "cuDevicePrimaryCtxRelease", 7000, (void *)cuDevicePrimaryCtxRelease },
	{ "cuDevicePrimaryCtxRelease", 11000, (void *)cuDevicePrimaryCtxRelease_v2 },
	{ "cuCtxPushCurrent", 4000, (void *)cuCtxPushCurrent_v2 },
	{ "cuCtxPopCurrent", 4000, (void *)cuCtxPopCurrent_v2 },
	{ "cuMemHostRegister", 4000, (void *)cuMemHostRegister },
	{ "cuMemHostRegister", 6050, (void *)cuMemHostRegister_v2 },
	{ "cuMemHostUnregister", 4000, (void *)cuMemHostUnregister },
	{ "cuMemHostGetDevicePointer", 3020, (void *)cuMemHostGetDevicePointer_v2 },
	{ "cuStreamWriteValue64", 9000, (void *)cuStreamWriteValue64 },
#ifndef FAKE_NO_MEMOP_V2
	{ "cuStreamWriteValue64", 11070, (void *)cuStreamWriteValue64_v2 },
#endif
	{ "cuStreamQuery", 2000, (void *)cuStreamQuery },
};

enum { SYMBOL_SUCCESS = 0, SYMBOL_NOT_FOUND = 1, VERSION_NOT_SUFFICIENT = 2 };

static CUresult lookup(const char *symbol, void **pfn, int version, unsigned long long flags,
		       int *status)
{
	pthread_mutex_lock(&mu);
	stats.getproc_version = version;
	stats.getproc_flags = flags;
	pthread_mutex_unlock(&mu);
	*status = SYMBOL_NOT_FOUND;
	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (fake_env_lists("FAKE_CUDA_HIDE", symbol))
		return CUDA_ERROR_NOT_FOUND;
	const struct entry *best = NULL;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		if (strcmp(entries[i].name, symbol))
			continue;
		*status = VERSION_NOT_SUFFICIENT;
		if (entries[i].version <= version && (!best || entries[i].version > best->version))
			best = &entries[i];
	}
	if (!best)
		return CUDA_ERROR_NOT_FOUND;
	*status = SYMBOL_SUCCESS;
	*pfn = best->fn;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version,
				      unsigned long long flags)
{
	int status;
	BUMP(getproc_calls);
	return lookup(symbol, pfn, version, flags, &status);
}

#ifndef FAKE_NO_GETPROC_V2
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
					 unsigned long long flags, int *status)
{
	int st;
	BUMP(getproc_v2_calls);
	CUresult r = lookup(symbol, pfn, version, flags, &st);
	if (status)
		*status = st;
	return r;
}
#endif
#endif

/* ---- test controls ---- */

FAKE_EXPORT void fakeCudaStats(struct fake_cuda_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = stats;
	out->primary_refs = primary_refs[0];
	pthread_mutex_unlock(&mu);
}

FAKE_EXPORT int fakeLaunchSleep(CUstream st, uint64_t ns)
{
	return st && fake_stream_sleep(st->s, ns) == 0 ? CUDA_SUCCESS : FAKE_CUDA_FAULT_RESULT;
}

FAKE_EXPORT int fakeLaunchGate(CUstream st, const int *gate)
{
	return st && fake_stream_gate(st->s, gate) == 0 ? CUDA_SUCCESS : FAKE_CUDA_FAULT_RESULT;
}

FAKE_EXPORT int fakeStreamFault(CUstream st)
{
	return st && fake_stream_fault(st->s) == 0 ? CUDA_SUCCESS : FAKE_CUDA_FAULT_RESULT;
}
