/* test_cuda.c — the cuda backend against the FAKE libcuda.so.1 (tests/fakes).
 *
 * Pins: entry points come from cuGetProcAddress_v2 / cuGetProcAddress with CUDA 12.0
 * and explicit flags, or from the _v2 symbol names by dlsym (no cuGetProcAddress, or
 * a driver older than 12.0); the unversioned legacy stream memop is never called;
 * registration is DEVICEMAP|PORTABLE, balanced, and keeps the primary context alive;
 * stores target the device address and land only after the stream's earlier work;
 * query and every error maps as backend.h says; a missing library is NO_DRIVER.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "clock.h"
#include "errcode.h"
#include "fake_cuda.h"
#include "fdcheck.h"
#include "testutil.h"

TestSuite(cuda, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 60);

static const struct garuda_backend_ops *ops = &garuda_backend_cuda;

static uint64_t area[64] __attribute__((aligned(64)));

struct fk {
	void *lib;
	fakeCudaStats_t stats;
	fake_cuStreamCreate_t create;
	fake_cuStreamDestroy_t destroy;
	fakeLaunchSleep_t sleep;
	fakeLaunchGate_t gate;
	fakeStreamFault_t fault;
};

static void fk_open(struct fk *f)
{
	f->lib = tu_dlopen_env("GARUDA_CUDA_LIBRARY");
	f->stats = (fakeCudaStats_t)tu_sym(f->lib, "fakeCudaStats");
	f->create = (fake_cuStreamCreate_t)tu_sym(f->lib, "cuStreamCreate");
	f->destroy = (fake_cuStreamDestroy_t)tu_sym(f->lib, "cuStreamDestroy_v2");
	f->sleep = (fakeLaunchSleep_t)tu_sym(f->lib, "fakeLaunchSleep");
	f->gate = (fakeLaunchGate_t)tu_sym(f->lib, "fakeLaunchGate");
	f->fault = (fakeStreamFault_t)tu_sym(f->lib, "fakeStreamFault");
}

static struct fake_cuda_stats fk_stats(struct fk *f)
{
	struct fake_cuda_stats st;
	f->stats(&st);
	return st;
}

static void fk_close(struct fk *f)
{
	dlclose(f->lib);
}

static fake_CUstream fk_stream(struct fk *f)
{
	fake_CUstream s;
	cr_assert_eq(f->create(&s, 0), 0);
	return s;
}

/* Everything balanced, nothing legacy, every call had its context. */
static void assert_clean(struct fk *f)
{
	struct fake_cuda_stats st = fk_stats(f);
	cr_assert_eq(st.legacy_calls, 0, "an unversioned legacy entry point was called");
	cr_assert_eq(st.no_context, 0, "%d calls without a current context", st.no_context);
	cr_assert_eq(st.pushes, st.pops, "context pushes %d != pops %d", st.pushes, st.pops);
	cr_assert_eq(st.registered, 0, "ranges left registered");
	cr_assert_eq(st.registers, st.unregisters);
	cr_assert_eq(st.primary_refs, 0, "primary context still retained");
	cr_assert_eq(st.primary_retains, st.primary_releases);
	cr_assert_eq(st.bad_addresses, 0, "a store aimed at a non-device address");
}

/* open, register area, one store through a stream, check, tear down. */
static void roundtrip(struct fk *f)
{
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	fake_CUstream s = fk_stream(f);
	cr_assert_eq(f->sleep(s, 100000), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[3], 33), 0);
	cr_assert_eq(tu_settle(ops, b, s), 0);
	cr_assert_eq(tu_load(&area[3]), 33);
	cr_assert_eq(f->destroy(s), 0);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	cr_assert_eq(fk_stats(f).writes, 1);
}

Test(cuda, missing_library_is_no_driver)
{
	struct garuda_backend *b = (void *)1;
	setenv("GARUDA_CUDA_LIBRARY", "/nonexistent/garuda/libcuda.so.1", 1);
	cr_assert_eq(ops->open(0, &b), -GARUDA_E_NO_DRIVER);
	cr_assert_null(b);
}

Test(cuda, default_library_name)
{
	/* Unset, the backend dlopens "libcuda.so.1" by name. Under meson test, LD_LIBRARY_PATH
	 * leads that name to the fake; elsewhere there may be none (NO_DRIVER) or a real
	 * runtime (nothing to check here). */
	unsetenv("GARUDA_CUDA_LIBRARY");
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	struct garuda_backend *b;
	if (!lib) {
		cr_assert_eq(ops->open(0, &b), -GARUDA_E_NO_DRIVER);
		return;
	}
	if (!dlsym(lib, "fakeCudaStats")) {
		dlclose(lib);
		cr_skip_test("a real libcuda.so.1 is installed here");
	}
	cr_assert_eq(ops->open(0, &b), 0, "the fake found by name");
	ops->close(b);
	dlclose(lib);
}

Test(cuda, resolves_through_getproc_v2_with_version)
{
	struct fk f;
	fk_open(&f);
	roundtrip(&f);
	struct fake_cuda_stats st = fk_stats(&f);
	cr_assert_eq(st.init_calls, 1);
	cr_assert_gt(st.getproc_v2_calls, 0);
	cr_assert_eq(st.getproc_calls, 0, "cuGetProcAddress_v2 is preferred");
	cr_assert_eq(st.getproc_version, 12000);
	cr_assert_eq(st.getproc_flags, 1ull, "CU_GET_PROC_ADDRESS_LEGACY_STREAM");
	cr_assert_eq(st.write_flags, 0u, "default flags fence earlier work");
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, resolves_through_getproc_v1)
{
	tu_use_variant("GARUDA_CUDA_LIBRARY", "FAKE_CUDA_GETPROC_V1_LIBRARY");
	struct fk f;
	fk_open(&f);
	cr_assert_null(dlsym(f.lib, "cuGetProcAddress_v2"));
	roundtrip(&f);
	struct fake_cuda_stats st = fk_stats(&f);
	cr_assert_gt(st.getproc_calls, 0);
	cr_assert_eq(st.getproc_version, 12000);
	cr_assert_eq(st.getproc_flags, 1ull);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, falls_back_to_v2_symbols_without_getproc)
{
	tu_use_variant("GARUDA_CUDA_LIBRARY", "FAKE_CUDA_NO_GETPROC_LIBRARY");
	struct fk f;
	fk_open(&f);
	cr_assert_null(dlsym(f.lib, "cuGetProcAddress"));
	roundtrip(&f);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, driver_before_12_uses_v2_symbols)
{
	setenv("FAKE_CUDA_DRIVER_VERSION", "11080", 1);
	struct fk f;
	fk_open(&f);
	roundtrip(&f);
	struct fake_cuda_stats st = fk_stats(&f);
	cr_assert_eq(st.getproc_calls + st.getproc_v2_calls, 0,
		     "below 12.0, cuGetProcAddress could hand out legacy memops");
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, old_driver_without_v2_memops_is_too_old)
{
	tu_use_variant("GARUDA_CUDA_LIBRARY", "FAKE_CUDA_OLD_LIBRARY");
	struct fk f;
	fk_open(&f);
	cr_assert_not_null(dlsym(f.lib, "cuStreamWriteValue64"), "the legacy name is there");
	struct garuda_backend *b = (void *)1;
	cr_assert_eq(ops->open(0, &b), -GARUDA_E_DRIVER_TOO_OLD);
	cr_assert_null(b);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, entry_point_missing_from_getproc_is_too_old)
{
	const char *hide[] = { "cuStreamWriteValue64", "cuMemHostRegister", "cuStreamQuery",
			       "cuDevicePrimaryCtxRetain" };
	struct fk f;
	fk_open(&f);
	for (size_t i = 0; i < sizeof(hide) / sizeof(hide[0]); i++) {
		setenv("FAKE_CUDA_HIDE", hide[i], 1);
		struct garuda_backend *b;
		cr_assert_eq(ops->open(0, &b), -GARUDA_E_DRIVER_TOO_OLD, "%s hidden", hide[i]);
		/* the words name the missing symbol and the library */
		cr_assert_not_null(strstr(garuda_backend_why(), hide[i]), "%s hidden: \"%s\"", hide[i],
				   garuda_backend_why());
		const char *lib = getenv("GARUDA_CUDA_LIBRARY");
		cr_assert(!lib || strstr(garuda_backend_why(), lib), "\"%s\"", garuda_backend_why());
	}
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, memops_attribute_zero_is_unsupported)
{
	setenv("FAKE_CUDA_ATTR122", "0", 1);
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), -GARUDA_E_UNSUPPORTED);
	cr_assert_not_null(strstr(garuda_backend_why(), "cuStreamWriteValue64"), "\"%s\"",
			   garuda_backend_why());
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, init_errors)
{
	static const struct {
		const char *result;
		int expect;
	} cases[] = {
		{ "100", -ENODEV },                  /* CUDA_ERROR_NO_DEVICE */
		{ "35", -GARUDA_E_DRIVER_TOO_OLD },  /* CUDA_ERROR_INSUFFICIENT_DRIVER */
		{ "999", -GARUDA_E_NO_DRIVER },      /* CUDA_ERROR_UNKNOWN */
	};
	struct fk f;
	fk_open(&f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("FAKE_CUDA_INIT_RESULT", cases[i].result, 1);
		struct garuda_backend *b;
		cr_assert_eq(ops->open(0, &b), cases[i].expect, "cuInit -> %s", cases[i].result);
	}
	fk_close(&f);
}

Test(cuda, device_ordinal_checked)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	cr_assert_eq(ops->open(1, &b), -ENODEV);
	cr_assert_eq(ops->open(-1, &b), -ENODEV);
	cr_assert_eq(ops->open(0, NULL), -EINVAL);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, no_devices)
{
	setenv("FAKE_CUDA_DEVICES", "0", 1);
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), -ENODEV);
}

Test(cuda, registration_lifecycle_keeps_context)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	struct fake_cuda_stats st = fk_stats(&f);
	cr_assert_eq(st.primary_refs, 1, "open retains the primary context");

	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	st = fk_stats(&f);
	cr_assert_eq(st.registers, 1);
	cr_assert_eq(st.registered, 1);
	cr_assert_eq(st.register_flags, 0x3u, "DEVICEMAP | PORTABLE");
	cr_assert_eq(st.primary_refs, 2, "the registration retains the context too");

	ops->close(b);
	st = fk_stats(&f);
	cr_assert_geq(st.primary_refs, 1, "a live registration keeps the context alive");
	cr_assert_eq(st.registered, 1);

	/* the registration still works after close() */
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[0], 8), 0);
	cr_assert_eq(tu_load(&area[0]), 8);

	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, register_refused)
{
	setenv("FAKE_CUDA_REGISTER_RESULT", "2", 1); /* CUDA_ERROR_OUT_OF_MEMORY */
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg = (void *)1;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), -GARUDA_E_REGISTER_FAILED);
	cr_assert_null(reg);
	cr_assert_not_null(strstr(garuda_backend_why(), "cuMemHostRegister"), "\"%s\"",
			   garuda_backend_why());
	cr_assert_eq(fk_stats(&f).primary_refs, 1, "the failed registration released its retain");
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, device_pointer_refused_undoes_registration)
{
	setenv("FAKE_CUDA_DEVPTR_RESULT", "1", 1);
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), -GARUDA_E_REGISTER_FAILED);
	struct fake_cuda_stats st = fk_stats(&f);
	cr_assert_eq(st.registers, 1);
	cr_assert_eq(st.unregisters, 1, "registered then unregistered again");
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, register_argument_checks)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b, *other;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->open(0, &other), 0);
	cr_assert_eq(ops->register_memory(b, NULL, 64, &reg), -EINVAL);
	cr_assert_eq(ops->register_memory(b, area, 0, &reg), -EINVAL);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	struct garuda_backend_reg *again;
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &again), -GARUDA_E_REGISTER_FAILED,
		     "the driver refuses a range registered twice");
	cr_assert_eq(ops->unregister_memory(other, reg), -EINVAL);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(other);
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, store_lands_after_queued_work)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	fake_CUstream s = fk_stream(&f);
	static int gate;

	cr_assert_eq(ops->query(b, s), 0);
	cr_assert_eq(f.gate(s, &gate), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[5], 55), 0);
	cr_assert_eq(ops->query(b, s), -EAGAIN);
	tu_nap();
	cr_assert_eq(tu_load(&area[5]), 0, "the store waits for the kernel before it");
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	cr_assert_eq(tu_settle(ops, b, s), 0);
	cr_assert_eq(tu_load(&area[5]), 55);

	/* a kernel of known length: the store comes no earlier */
	uint64_t t0 = garuda_now_ns();
	cr_assert_eq(f.sleep(s, 5000000), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[5], 56), 0);
	while (tu_load(&area[5]) != 56)
		;
	cr_assert_geq(garuda_now_ns() - t0, 5000000ull);

	cr_assert_eq(f.destroy(s), 0);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, null_stream_and_word_checks)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, &area[8], 8 * sizeof(uint64_t), &reg), 0);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[15], 4), 0);
	cr_assert_eq(tu_load(&area[15]), 4);
	cr_assert_eq(ops->query(b, NULL), 0);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[16], 4), -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[7], 4), -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, (uint64_t *)((char *)&area[9] + 1), 4), -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, NULL, NULL, &area[9], 4), -EINVAL);
	/* CU_STREAM_LEGACY, CU_STREAM_PER_THREAD: the calling thread's streams, each thread
	 * another one (the fake would have dereferenced them) */
	for (uintptr_t special = 1; special <= 2; special++) {
		cr_assert_eq(ops->enqueue_store(b, (void *)special, reg, &area[9], 4), -EINVAL);
		cr_assert_eq(ops->query(b, (void *)special), -EINVAL);
	}
	cr_assert_eq(fk_stats(&f).writes, 1, "rejected words never reach the driver");
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, fault_maps_to_stream_fault)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	fake_CUstream s = fk_stream(&f);
	static int gate;

	cr_assert_eq(f.gate(s, &gate), 0);
	cr_assert_eq(f.fault(s), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[6], 66), 0, "accepted before the fault");
	cr_assert_eq(ops->query(b, s), -EAGAIN);
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	cr_assert_eq(tu_settle(ops, b, s), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(ops->query(b, s), -GARUDA_E_STREAM_FAULT, "sticky");
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[6], 67), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(tu_load(&area[6]), 0, "a faulted context never stores");

	cr_assert_eq(f.destroy(s), 0);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
}

Test(cuda, numa_node_from_pci_bus_id)
{
	struct tu_sysfs sys;
	tu_sysfs_make(&sys, "0000:3b:00.0", "1\n");
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), 1, "bus id 0000:3B:00.0 looked up lower-case");
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
	tu_sysfs_free(&sys);
}

Test(cuda, numa_node_long_domain)
{
	struct tu_sysfs sys;
	tu_sysfs_make(&sys, "0000:3b:00.0", "0\n");
	setenv("FAKE_CUDA_PCI_BUS_ID", "00000000:3B:00.0", 1);
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), 0);
	ops->close(b);
	tu_sysfs_free(&sys);
}

Test(cuda, numa_node_unknown)
{
	struct tu_sysfs sys;
	tu_sysfs_make(&sys, "0000:3b:00.0", "-1\n");
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), -1, "sysfs says -1");
	ops->close(b);
	tu_sysfs_free(&sys);
	setenv("GARUDA_SYSFS_ROOT", "/nonexistent", 1);
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), -1);
	ops->close(b);
	cr_assert_eq(ops->numa_node(NULL), -1);
}

struct worker {
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	struct fk *f;
	uint64_t *word;
	int rc;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	fake_CUstream s;
	if (w->f->create(&s, 0)) {
		w->rc = -1;
		return NULL;
	}
	for (uint64_t v = 1; v <= 200 && w->rc == 0; v++)
		w->rc = ops->enqueue_store(w->b, s, w->reg, w->word, v);
	if (w->rc == 0)
		w->rc = tu_settle(ops, w->b, s);
	w->f->destroy(s);
	return NULL;
}

Test(cuda, concurrent_threads_share_a_backend)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	struct worker w[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ b, reg, &f, &area[8 * i], 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(w[i].rc, 0);
		cr_assert_eq(tu_load(&area[8 * i]), 200);
	}
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	assert_clean(&f);
	fk_close(&f);
}
