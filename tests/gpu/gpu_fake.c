/* gpu_fake.c — gpu_kernel.h over the FAKE libcuda.so.1 of tests/fakes, for a rehearsal
 * of gpu_latency without a GPU (run.sh --check): the "kernel" is fakeLaunchSleep on a fake stream and
 * cudaStreamSynchronize is a cuStreamQuery poll. It checks the program's plumbing
 * (libgaruda, garudad, the cuda backend's calls), not GPU latency: its numbers mean
 * nothing. The fake is $GARUDA_CUDA_LIBRARY, as for the cuda backend. */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#include "gpu_kernel.h"

#define GK_FAKE_MISSING 998
#define CUDA_ERROR_NOT_READY 600

typedef int (*fn_init_t)(unsigned);
typedef int (*fn_retain_t)(void **ctx, int dev);
typedef int (*fn_push_t)(void *ctx);
typedef int (*fn_create_t)(void **stream, unsigned flags);
typedef int (*fn_destroy_t)(void *stream);
typedef int (*fn_sleep_t)(void *stream, uint64_t ns);
typedef int (*fn_query_t)(void *stream);

static struct {
	fn_create_t create;
	fn_destroy_t destroy;
	fn_sleep_t sleep;
	fn_query_t query;
} fk;

int gk_init(int device, int sched)
{
	(void)sched;
	const char *path = getenv("GARUDA_CUDA_LIBRARY");
	void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) : NULL;
	if (!lib)
		return GK_FAKE_MISSING;
	fn_init_t init = (fn_init_t)dlsym(lib, "cuInit");
	fn_retain_t retain = (fn_retain_t)dlsym(lib, "cuDevicePrimaryCtxRetain");
	fn_push_t push = (fn_push_t)dlsym(lib, "cuCtxPushCurrent_v2");
	fk.create = (fn_create_t)dlsym(lib, "cuStreamCreate");
	fk.destroy = (fn_destroy_t)dlsym(lib, "cuStreamDestroy_v2");
	fk.sleep = (fn_sleep_t)dlsym(lib, "fakeLaunchSleep");
	fk.query = (fn_query_t)dlsym(lib, "cuStreamQuery");
	if (!init || !retain || !push || !fk.create || !fk.destroy || !fk.sleep || !fk.query)
		return GK_FAKE_MISSING;
	void *ctx;
	int r = init(0);
	if (!r)
		r = retain(&ctx, device);
	if (!r)
		r = push(ctx); /* the main thread queries the stream (context kept for good) */
	return r;
}

int gk_stream_new(void **stream)
{
	return fk.create(stream, 0);
}

int gk_stream_free(void *stream)
{
	return fk.destroy(stream);
}

int gk_launch_sleep(void *stream, uint64_t ns)
{
	return fk.sleep(stream, ns);
}

int gk_stream_sync(void *stream)
{
	int r;
	while ((r = fk.query(stream)) == CUDA_ERROR_NOT_READY)
		nanosleep(&(struct timespec){ 0, 20000 }, NULL);
	return r;
}

const char *gk_error_string(int err)
{
	return err == GK_FAKE_MISSING ? "fake libcuda not found ($GARUDA_CUDA_LIBRARY)"
				      : "fake CUDA error";
}
