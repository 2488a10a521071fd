/* gpu_kernel.h — the CUDA side of the GPU latency check (tests/gpu/run.sh), behind a
 * plain C interface so gpu_latency.c builds without the CUDA SDK.
 *
 * gpu_kernel.cu implements it with the CUDA runtime (nvcc; gpu-latency); gpu_fake.c
 * over the FAKE libcuda of tests/fakes (gpu-latency-fake, run.sh --check); gpu_stub.c
 * as "no CUDA here" (gpu-latency-stub), so the C program builds everywhere. Every function returns 0 or a CUDA error number (gk_error_string() names it).
 */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How the host waits in cudaStreamSynchronize: the primary context's scheduling flag
 * (CU_CTX_SCHED_* / cudaDeviceSchedule*; same numbers). */
enum gk_sched {
	GK_SCHED_AUTO = 0,
	GK_SCHED_SPIN = 1,
	GK_SCHED_YIELD = 2,
	GK_SCHED_BLOCKING_SYNC = 4,
};

/* Set device `device`'s primary-context scheduling flag to `sched` before anything
 * activates it, then make it current for the runtime. */
int gk_init(int device, int sched);
/* A non-blocking CUDA stream (a cudaStream_t, which is a CUstream). */
int gk_stream_new(void **stream);
int gk_stream_free(void *stream);
/* A one-thread kernel that busy-waits ns nanoseconds of the GPU's global timer. */
int gk_launch_sleep(void *stream, uint64_t ns);
/* cudaStreamSynchronize. */
int gk_stream_sync(void *stream);
const char *gk_error_string(int err);

#ifdef __cplusplus
}
#endif
