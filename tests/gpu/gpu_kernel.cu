/* gpu_kernel.cu — the CUDA side of the GPU latency check (see gpu_kernel.h). Compiled
 * by nvcc in the meson build where nvcc is found (tests/gpu/meson.build: gpu-latency). */
#include <cuda.h>
#include <cuda_runtime.h>

#include "gpu_kernel.h"

static __device__ __forceinline__ unsigned long long global_timer_ns(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __global__ void sleep_kernel(unsigned long long ns)
{
	unsigned long long end = global_timer_ns() + ns;
	while (global_timer_ns() < end) {
#if __CUDA_ARCH__ >= 700
		__nanosleep(256);
#endif
	}
}

extern "C" int gk_init(int device, int sched)
{
	CUresult cr = cuInit(0);
	if (cr != CUDA_SUCCESS)
		return (int)cr;
	CUdevice dev;
	if ((cr = cuDeviceGet(&dev, device)) != CUDA_SUCCESS)
		return (int)cr;
	/* The flag must be in place before the primary context is activated; the runtime
	 * and garuda's cuda backend then share that context. */
	if ((cr = cuDevicePrimaryCtxSetFlags(dev, (unsigned)sched)) != CUDA_SUCCESS)
		return (int)cr;
	cudaError_t e = cudaSetDevice(device);
	if (e == cudaSuccess)
		e = cudaFree(0);
	return (int)e;
}

extern "C" int gk_stream_new(void **stream)
{
	cudaStream_t s;
	cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	if (e == cudaSuccess)
		*stream = (void *)s;
	return (int)e;
}

extern "C" int gk_stream_free(void *stream)
{
	return (int)cudaStreamDestroy((cudaStream_t)stream);
}

extern "C" int gk_launch_sleep(void *stream, uint64_t ns)
{
	sleep_kernel<<<1, 1, 0, (cudaStream_t)stream>>>((unsigned long long)ns);
	return (int)cudaGetLastError();
}

extern "C" int gk_stream_sync(void *stream)
{
	return (int)cudaStreamSynchronize((cudaStream_t)stream);
}

extern "C" const char *gk_error_string(int err)
{
	return cudaGetErrorString((cudaError_t)err);
}
