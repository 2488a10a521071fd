/* gpu_stub.c — gpu_kernel.h without CUDA: every call fails with "built without CUDA".
 * Lets gpu_latency.c compile and link in CI (no nvcc there); run.sh uses gpu_kernel.cu. */
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
