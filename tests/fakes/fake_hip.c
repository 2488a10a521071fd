/* fake_hip.c — a FAKE libamdhip64.so for tests. NOT AMD's HIP runtime.
 *
 * It implements the HIP entry points garuda's hip backend resolves, so tests can
 * check how we use the ABI: mapped registrations made with the backend's device
 * current, stores aimed at device addresses of registered ranges, balanced
 * register/unregister, error mapping. Streams are fake_device.h threads. See
 * fake_hip.h for knobs and test controls. FAKE_NO_MEMOP builds a runtime without
 * hipStreamWriteValue64.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fake_device.h"
#include "fake_hip.h"

typedef int hipError_t;
typedef struct ihipStream_t *hipStream_t;

enum {
	hipSuccess = 0,
	hipErrorInvalidValue = 1,
	hipErrorOutOfMemory = 2,
	hipErrorNotInitialized = 3,
	hipErrorInvalidDevice = 101,
	hipErrorInvalidHandle = 400,
	hipErrorNotReady = 600,
	hipErrorHostMemoryAlreadyRegistered = 712,
	hipErrorHostMemoryNotRegistered = 713,
};

#define MAX_DEVICES 8

struct ihipStream_t {
	struct fake_stream *s;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct fake_hip_stats stats;
static struct {
	int initialized;
	int version, devices, wait_value, register_result;
	char busid[32];
} k;
static __thread int current_device; /* HIP's per-thread current device, 0 at start */

static int initialized(void)
{
	pthread_mutex_lock(&mu);
	int r = k.initialized;
	pthread_mutex_unlock(&mu);
	return r;
}

FAKE_EXPORT hipError_t hipInit(unsigned flags)
{
	if (flags)
		return hipErrorInvalidValue;
	hipError_t r = (hipError_t)fake_env_long("FAKE_HIP_INIT_RESULT", 0);
	pthread_mutex_lock(&mu);
	stats.init_calls++;
	if (!k.initialized) {
		k.version = (int)fake_env_long("FAKE_HIP_VERSION", 60200000);
		k.devices = (int)fake_env_long("FAKE_HIP_DEVICES", 1);
		if (k.devices < 0 || k.devices > MAX_DEVICES)
			k.devices = 1;
		k.wait_value = (int)fake_env_long("FAKE_HIP_WAIT_VALUE", 1);
		k.register_result = (int)fake_env_long("FAKE_HIP_REGISTER_RESULT", 0);
		const char *busid = getenv("FAKE_HIP_PCI_BUS_ID");
		strncpy(k.busid, busid ? busid : "0000:c1:00.0", sizeof(k.busid) - 1);
	}
	if (r == hipSuccess)
		k.initialized = 1;
	pthread_mutex_unlock(&mu);
	return r;
}

FAKE_EXPORT hipError_t hipRuntimeGetVersion(int *version)
{
	if (!initialized())
		return hipErrorNotInitialized;
	*version = k.version;
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDeviceCount(int *count)
{
	if (!initialized())
		return hipErrorNotInitialized;
	*count = k.devices;
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDevice(int *device)
{
	if (!device)
		return hipErrorInvalidValue;
	*device = current_device;
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipSetDevice(int device)
{
	if (!initialized())
		return hipErrorNotInitialized;
	if (device < 0 || device >= k.devices)
		return hipErrorInvalidDevice;
	current_device = device;
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceGetAttribute(int *value, int attr, int device)
{
	if (!initialized())
		return hipErrorNotInitialized;
	if (device < 0 || device >= k.devices)
		return hipErrorInvalidDevice;
	if (attr != 10013)
		return hipErrorInvalidValue; /* only hipDeviceAttributeCanUseStreamWaitValue */
	*value = k.wait_value;
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceGetPCIBusId(char *busid, int len, int device)
{
	if (!initialized())
		return hipErrorNotInitialized;
	if (device < 0 || device >= k.devices || !busid || len <= 0)
		return hipErrorInvalidValue;
	strncpy(busid, k.busid, (size_t)len - 1);
	busid[len - 1] = '\0';
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostRegister(void *p, size_t bytes, unsigned flags)
{
	if (!initialized())
		return hipErrorNotInitialized;
	if (!p || !bytes || (flags & ~0xfu))
		return hipErrorInvalidValue;
	pthread_mutex_lock(&mu);
	stats.register_flags = flags;
	stats.register_device = current_device;
	hipError_t r = k.register_result;
	pthread_mutex_unlock(&mu);
	if (r != hipSuccess)
		return r;
	if (fake_reg_add(p, bytes, flags) < 0)
		return hipErrorHostMemoryAlreadyRegistered;
	pthread_mutex_lock(&mu);
	stats.registers++;
	stats.registered = fake_reg_count();
	pthread_mutex_unlock(&mu);
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostUnregister(void *p)
{
	if (!initialized())
		return hipErrorNotInitialized;
	if (fake_reg_remove(p) < 0)
		return hipErrorHostMemoryNotRegistered;
	pthread_mutex_lock(&mu);
	stats.unregisters++;
	stats.registered = fake_reg_count();
	pthread_mutex_unlock(&mu);
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostGetDevicePointer(void **dptr, void *p, unsigned flags)
{
	if (!initialized())
		return hipErrorNotInitialized;
	if (!dptr || flags)
		return hipErrorInvalidValue;
	uint64_t dev = fake_reg_device_address(p);
	if (!dev)
		return hipErrorInvalidValue;
	*dptr = (void *)(uintptr_t)dev;
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamCreate(hipStream_t *out)
{
	if (!out)
		return hipErrorInvalidValue;
	struct ihipStream_t *st = calloc(1, sizeof(*st));
	if (!st)
		return hipErrorOutOfMemory;
	if (!(st->s = fake_stream_new())) {
		free(st);
		return hipErrorOutOfMemory;
	}
	*out = st;
	return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamDestroy(hipStream_t st)
{
	if (!st)
		return hipErrorInvalidHandle;
	fake_stream_destroy(st->s);
	free(st);
	return hipSuccess;
}

#ifndef FAKE_NO_MEMOP
FAKE_EXPORT hipError_t hipStreamWriteValue64(hipStream_t st, void *ptr, uint64_t value,
					     unsigned flags)
{
	if (!initialized())
		return hipErrorNotInitialized;
	if (flags & ~1u)
		return hipErrorInvalidValue;
	unsigned reg_flags = 0;
	uint64_t *word = fake_reg_host_word((uint64_t)(uintptr_t)ptr, &reg_flags);
	if (!word || !(reg_flags & 0x2u /* hipHostRegisterMapped */)) {
		pthread_mutex_lock(&mu);
		stats.bad_addresses++;
		pthread_mutex_unlock(&mu);
		return hipErrorInvalidValue;
	}
	if (st) {
		if (fake_stream_state(st->s) < 0 || fake_stream_write(st->s, word, value) < 0)
			return FAKE_HIP_FAULT_RESULT;
	} else {
		__atomic_store_n(word, value, __ATOMIC_RELEASE); /* the fake's null stream is idle */
	}
	pthread_mutex_lock(&mu);
	stats.writes++;
	stats.write_flags = flags;
	pthread_mutex_unlock(&mu);
	return hipSuccess;
}
#endif

FAKE_EXPORT hipError_t hipStreamQuery(hipStream_t st)
{
	if (!initialized())
		return hipErrorNotInitialized;
	pthread_mutex_lock(&mu);
	stats.queries++;
	pthread_mutex_unlock(&mu);
	if (!st)
		return hipSuccess;
	switch (fake_stream_state(st->s)) {
	case 0:
		return hipSuccess;
	case 1:
		return hipErrorNotReady;
	default:
		return FAKE_HIP_FAULT_RESULT;
	}
}

FAKE_EXPORT void fakeHipStats(struct fake_hip_stats *out)
{
	pthread_mutex_lock(&mu);
	*out = stats;
	pthread_mutex_unlock(&mu);
}

FAKE_EXPORT int fakeHipLaunchSleep(hipStream_t st, uint64_t ns)
{
	return st && fake_stream_sleep(st->s, ns) == 0 ? hipSuccess : FAKE_HIP_FAULT_RESULT;
}

FAKE_EXPORT int fakeHipLaunchGate(hipStream_t st, const int *gate)
{
	return st && fake_stream_gate(st->s, gate) == 0 ? hipSuccess : FAKE_HIP_FAULT_RESULT;
}

FAKE_EXPORT int fakeHipStreamFault(hipStream_t st)
{
	return st && fake_stream_fault(st->s) == 0 ? hipSuccess : FAKE_HIP_FAULT_RESULT;
}
