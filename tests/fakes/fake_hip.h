/* fake_hip.h — what tests see of the FAKE libamdhip64.so (tests/fakes/fake_hip.c).
 *
 * The fake implements only the HIP runtime entry points garuda's hip backend uses,
 * plus hipStreamCreate/hipStreamDestroy and fakeHip* test controls. It checks our use
 * of the ABI (device addresses, mapped registrations, the current device during
 * registration, balanced register/unregister); it is not a GPU. Tests dlopen
 * $GARUDA_HIP_LIBRARY and dlsym what is below.
 *
 * Knobs, read from the environment at the first successful hipInit():
 *   FAKE_HIP_INIT_RESULT      hipError_t hipInit returns (default 0)
 *   FAKE_HIP_VERSION          hipRuntimeGetVersion (default 60200000 = 6.2)
 *   FAKE_HIP_DEVICES          device count (default 1, at most 8)
 *   FAKE_HIP_WAIT_VALUE       hipDeviceAttributeCanUseStreamWaitValue (default 1)
 *   FAKE_HIP_REGISTER_RESULT  hipError_t hipHostRegister returns (default 0)
 *   FAKE_HIP_PCI_BUS_ID       hipDeviceGetPCIBusId (default "0000:c1:00.0")
 * A variant without hipStreamWriteValue64 models a runtime that lacks it.
 */
#pragma once

#include <stdint.h>

struct fake_hip_stats {
	int init_calls;
	int registers, unregisters, registered;
	unsigned register_flags;   /* flags of the last hipHostRegister */
	int register_device;       /* the current device during the last hipHostRegister */
	int writes;                /* accepted hipStreamWriteValue64 */
	unsigned write_flags;
	int bad_addresses;         /* writes to an address that is no registered device address */
	int queries;
};

typedef struct ihipStream_t *fake_hipStream_t;
typedef int (*fake_hipStreamCreate_t)(fake_hipStream_t *stream);
typedef int (*fake_hipStreamDestroy_t)(fake_hipStream_t stream);
typedef int (*fake_hipSetDevice_t)(int device);
typedef int (*fake_hipGetDevice_t)(int *device);
typedef void (*fakeHipStats_t)(struct fake_hip_stats *out);
typedef int (*fakeHipLaunchSleep_t)(fake_hipStream_t stream, uint64_t ns);
typedef int (*fakeHipLaunchGate_t)(fake_hipStream_t stream, const int *gate);
typedef int (*fakeHipStreamFault_t)(fake_hipStream_t stream);

/* hipErrorLaunchFailure: what every call on a faulted stream returns. */
#define FAKE_HIP_FAULT_RESULT 719
