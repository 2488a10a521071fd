/* fake_cuda.h — what tests see of the FAKE libcuda.so.1 (tests/fakes/fake_cuda.c).
 *
 * The fake implements only the driver entry points garuda's cuda backend uses, plus
 * cuStreamCreate/cuStreamDestroy_v2 and a few fake* test controls. It checks our use
 * of the ABI (versioned entry points, a current context, device addresses, balanced
 * registrations); it is not a GPU. Tests dlopen the same path the backend uses
 * ($GARUDA_CUDA_LIBRARY) and dlsym the functions below; both see one library state.
 *
 * Knobs, read from the environment at cuInit():
 *   FAKE_CUDA_INIT_RESULT     CUresult cuInit returns (default 0)
 *   FAKE_CUDA_DRIVER_VERSION  cuDriverGetVersion (default 12040)
 *   FAKE_CUDA_DEVICES         device count (default 1, at most 8)
 *   FAKE_CUDA_ATTR122         CAN_USE_64_BIT_STREAM_MEM_OPS (default 1)
 *   FAKE_CUDA_REGISTER_RESULT CUresult cuMemHostRegister returns (default 0)
 *   FAKE_CUDA_DEVPTR_RESULT   CUresult cuMemHostGetDevicePointer returns (default 0)
 *   FAKE_CUDA_HIDE            comma list of names cuGetProcAddress* will not find
 *   FAKE_CUDA_PCI_BUS_ID      cuDeviceGetPCIBusId (default "0000:3B:00.0")
 * Variants built from the same source (see meson.build): without cuGetProcAddress_v2,
 * without any cuGetProcAddress, and an "old driver" without the _v2 stream memops.
 */
#pragma once

#include <stdint.h>

struct fake_cuda_stats {
	int init_calls;
	int getproc_calls;        /* cuGetProcAddress (4 arguments) */
	int getproc_v2_calls;     /* cuGetProcAddress_v2 */
	int getproc_version;      /* cudaVersion of the last cuGetProcAddress* call */
	unsigned long long getproc_flags; /* flags of the last cuGetProcAddress* call */
	int legacy_calls;         /* calls into unversioned legacy entry points */
	int primary_retains;
	int primary_releases;
	int primary_refs;         /* device 0's primary context reference count now */
	int pushes, pops;
	int no_context;           /* calls that needed a current context and had none */
	int registers;            /* successful cuMemHostRegister */
	int unregisters;          /* successful cuMemHostUnregister */
	int registered;           /* ranges registered now */
	unsigned register_flags;  /* flags of the last cuMemHostRegister */
	int writes;               /* accepted cuStreamWriteValue64_v2 */
	unsigned write_flags;     /* flags of the last one */
	int bad_addresses;        /* writes to an address that is no registered device address */
	int queries;
};

typedef struct CUstream_st *fake_CUstream;
typedef int (*fake_cuStreamCreate_t)(fake_CUstream *stream, unsigned flags);
typedef int (*fake_cuStreamDestroy_t)(fake_CUstream stream);
typedef void (*fakeCudaStats_t)(struct fake_cuda_stats *out);
typedef int (*fakeLaunchSleep_t)(fake_CUstream stream, uint64_t ns);
typedef int (*fakeLaunchGate_t)(fake_CUstream stream, const int *gate);
typedef int (*fakeStreamFault_t)(fake_CUstream stream);

/* CUDA_ERROR_LAUNCH_FAILED: what every call on a faulted stream returns. */
#define FAKE_CUDA_FAULT_RESULT 719
