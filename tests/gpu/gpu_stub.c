/* gpu_stub.c — gpu_kernel.h without CUDA: every call fails with "built without CUDA".
 * Keeps gpu_latency.c compiling and linking where there is no nvcc (gpu-latency-stub). */
#include "gpu_kernel.h"

#define GK_NO_CUDA 999

int gk_init(int device, int sched)
{
	(void)device, (void)sched;
	return GK_NO_CUDA;
}

int gk_stream_new(void **stream)
{
	*stream = 0;
	return GK_NO_CUDA;
}

int gk_stream_free(void *stream)
{
	(void)stream;
	return GK_NO_CUDA;
}

int gk_launch_sleep(void *stream, uint64_t ns)
{
	(void)stream, (void)ns;
	return GK_NO_CUDA;
}

int gk_stream_sync(void *stream)
{
	(void)stream;
	return GK_NO_CUDA;
}

const char *gk_error_string(int err)
{
	return err == GK_NO_CUDA ? "built without CUDA (gpu_stub.c)" : "unknown error";
}
