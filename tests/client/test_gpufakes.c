/* test_gpufakes.c — libgaruda through the cuda and hip backends, against the FAKE
 * vendor runtimes of tests/fakes (no GPU here: the fakes check our use of the ABI, and
 * store from a thread after the queued work). A segment is registered with the
 * "device", signals are stores queued on a native stream, waits see them through
 * garudad; a faulted native stream fails the wait; closing everything leaves no
 * registration behind. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fake_cuda.h"
#include "fake_hip.h"

TestSuite(gpufakes, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 120);

static void *sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	cr_assert_not_null(p, "fake runtime lacks %s", name);
	return p;
}

static int cuda_registered(void *lib)
{
	struct fake_cuda_stats st;
	((fakeCudaStats_t)sym(lib, "fakeCudaStats"))(&st);
	cr_assert_eq(st.bad_addresses, 0, "a store aimed at a non-device address");
	cr_assert_eq(st.legacy_calls, 0, "a legacy entry point was called");
	return st.registered;
}

static int hip_registered(void *lib)
{
	struct fake_hip_stats st;
	((fakeHipStats_t)sym(lib, "fakeHipStats"))(&st);
	cr_assert_eq(st.bad_addresses, 0, "a store aimed at a non-device address");
	return st.registered;
}

static void run_backend(const char *backend, const char *env, bool cuda)
{
	struct fixture f = { 0 };
	struct garuda_seg *seg;
	const char *path = getenv(env);
	cr_assert_not_null(path, "%s not set (the meson test sets it)", env);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "%s: %s", path, dlerror());
	fx_up(&f, NULL, 0);
	ok(garuda_segment_open(f.c, backend, 0, 1, &seg));
	int regs = cuda ? cuda_registered(lib) : hip_registered(lib);
	cr_assert_eq(regs, 1, "the segment is registered with the device");

	static const enum garuda_readiness forms[] = { GARUDA_READINESS_EVENTFD,
						       GARUDA_READINESS_MESSAGE,
						       GARUDA_READINESS_DOORBELL, GARUDA_READINESS_POLL };
	for (size_t i = 0; i < 4; i++) {
		void *ns;
		int (*sleep_fn)(void *, uint64_t);
		int (*fault_fn)(void *);
		int (*destroy_fn)(void *);
		if (cuda) {
			cr_assert_eq(((fake_cuStreamCreate_t)sym(lib, "cuStreamCreate"))((fake_CUstream *)&ns, 0), 0);
			sleep_fn = (int (*)(void *, uint64_t))sym(lib, "fakeLaunchSleep");
			fault_fn = (int (*)(void *))sym(lib, "fakeStreamFault");
			destroy_fn = (int (*)(void *))sym(lib, "cuStreamDestroy_v2");
		} else {
			cr_assert_eq(((fake_hipStreamCreate_t)sym(lib, "hipStreamCreate"))((fake_hipStream_t *)&ns), 0);
			sleep_fn = (int (*)(void *, uint64_t))sym(lib, "fakeHipLaunchSleep");
			fault_fn = (int (*)(void *))sym(lib, "fakeHipStreamFault");
			destroy_fn = (int (*)(void *))sym(lib, "hipStreamDestroy");
		}
		struct garuda_stream *s;
		uint64_t seq = 0;
		ok(garuda_stream_new(seg, ns, forms[i], &s));
		for (int k = 0; k < 20; k++) {
			cr_assert_eq(sleep_fn(ns, (uint64_t)(k % 4) * 100000), 0);
			ok(garuda_stream_signal(s, &seq));
			ok(garuda_stream_wait(s, seq, 30 * NS_PER_S));
		}
		cr_assert_eq(seq, 20);
		/* a faulted context never stores: the backstop query reports it */
		cr_assert_eq(sleep_fn(ns, 1000000), 0);
		cr_assert_eq(fault_fn(ns), 0);
		int r = garuda_stream_signal(s, &seq);
		if (r == 0)
			fails(garuda_stream_wait(s, seq, 60 * NS_PER_S), -GARUDA_E_STREAM_FAULT);
		else
			fails(r, -GARUDA_E_STREAM_FAULT);
		fails(garuda_stream_query(s), -GARUDA_E_STREAM_FAULT);
		garuda_stream_free(s);
		destroy_fn(ns);
	}
	ok(garuda_segment_close(seg));
	regs = cuda ? cuda_registered(lib) : hip_registered(lib);
	cr_assert_eq(regs, 0, "closing the segment unregistered it");
	garuda_disconnect(f.c);
	f.c = NULL;
	td_stop(&f.d);
	dlclose(lib);
}

Test(gpufakes, cuda)
{
	run_backend("cuda", "GARUDA_CUDA_LIBRARY", true);
}

Test(gpufakes, hip)
{
	run_backend("hip", "GARUDA_HIP_LIBRARY", false);
}

/* The backend's refusals come back from garuda_segment_open unchanged, and the
 * segment the daemon made for it is given back. */
static void open_fails(const char *env, const char *value, int code)
{
	struct fixture f = { 0 };
	struct garuda_seg *seg = NULL;
	const char *saved = getenv(env);
	char *keep = saved ? strdup(saved) : NULL;
	setenv(env, value, 1);
	fx_up(&f, NULL, 0);
	fails(garuda_segment_open(f.c, "cuda", 0, 1, &seg), code);
	/* and says why (client.md, Errors): an empty text left users guessing */
	cr_assert_neq(garuda_last_error()[0], '\0', "%s=%s: no words", env, value);
	cr_assert_null(seg);
	/* the connection is fine and nothing is left over: a host segment opens */
	ok(garuda_segment_open(f.c, "host", 0, 1, &f.seg));
	fx_down(&f);
	if (keep)
		setenv(env, keep, 1);
	else
		unsetenv(env);
	free(keep);
}

Test(gpufakes, driver_too_old)
{
	open_fails("GARUDA_CUDA_LIBRARY", FAKE_CUDA_OLD, -GARUDA_E_DRIVER_TOO_OLD);
}

Test(gpufakes, no_64bit_memops_is_unsupported)
{
	open_fails("FAKE_CUDA_ATTR122", "0", -GARUDA_E_UNSUPPORTED);
}

Test(gpufakes, registration_refused)
{
	open_fails("FAKE_CUDA_REGISTER_RESULT", "2", -GARUDA_E_REGISTER_FAILED);
}
