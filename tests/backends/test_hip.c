/* test_hip.c — the hip backend against the FAKE libamdhip64.so (tests/fakes).
 *
 * Pins: every entry point resolved or DRIVER_TOO_OLD; HIP < 5.0 refused; the
 * stream-memop attribute checked; hipHostRegister(Mapped|Portable) made with the
 * backend's device current and the caller's device restored; balanced registrations;
 * stores aimed at the device address, landing after the stream's earlier work; query
 * and error mapping; a missing library is NO_DRIVER.
 */
#include <criterion/criterion.h>

#include "errcode.h"
#include "fake_hip.h"
#include "fdcheck.h"
#include "testutil.h"

TestSuite(hip, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 60);

static const struct garuda_backend_ops *ops = &garuda_backend_hip;

static uint64_t area[64] __attribute__((aligned(64)));

struct fk {
	void *lib;
	fakeHipStats_t stats;
	fake_hipStreamCreate_t create;
	fake_hipStreamDestroy_t destroy;
	fake_hipSetDevice_t set_device;
	fake_hipGetDevice_t get_device;
	fakeHipLaunchSleep_t sleep;
	fakeHipLaunchGate_t gate;
	fakeHipStreamFault_t fault;
};

static void fk_open(struct fk *f)
{
	f->lib = tu_dlopen_env("GARUDA_HIP_LIBRARY");
	f->stats = (fakeHipStats_t)tu_sym(f->lib, "fakeHipStats");
	f->create = (fake_hipStreamCreate_t)tu_sym(f->lib, "hipStreamCreate");
	f->destroy = (fake_hipStreamDestroy_t)tu_sym(f->lib, "hipStreamDestroy");
	f->set_device = (fake_hipSetDevice_t)tu_sym(f->lib, "hipSetDevice");
	f->get_device = (fake_hipGetDevice_t)tu_sym(f->lib, "hipGetDevice");
	f->sleep = (fakeHipLaunchSleep_t)tu_sym(f->lib, "fakeHipLaunchSleep");
	f->gate = (fakeHipLaunchGate_t)tu_sym(f->lib, "fakeHipLaunchGate");
	f->fault = (fakeHipStreamFault_t)tu_sym(f->lib, "fakeHipStreamFault");
}

static struct fake_hip_stats fk_stats(struct fk *f)
{
	struct fake_hip_stats st;
	f->stats(&st);
	return st;
}

static void assert_clean(struct fk *f)
{
	struct fake_hip_stats st = fk_stats(f);
	cr_assert_eq(st.registered, 0, "ranges left registered");
	cr_assert_eq(st.registers, st.unregisters);
	cr_assert_eq(st.bad_addresses, 0, "a store aimed at a non-device address");
}

Test(hip, missing_library_is_no_driver)
{
	struct garuda_backend *b = (void *)1;
	setenv("GARUDA_HIP_LIBRARY", "/nonexistent/garuda/libamdhip64.so", 1);
	cr_assert_eq(ops->open(0, &b), -GARUDA_E_NO_DRIVER);
	cr_assert_null(b);
}

Test(hip, default_library_name)
{
	/* Unset, the backend dlopens "libamdhip64.so" by name. Under meson test, LD_LIBRARY_PATH
	 * leads that name to the fake; elsewhere there may be none (NO_DRIVER) or a real
	 * runtime (nothing to check here). */
	unsetenv("GARUDA_HIP_LIBRARY");
	void *lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
	struct garuda_backend *b;
	if (!lib) {
		cr_assert_eq(ops->open(0, &b), -GARUDA_E_NO_DRIVER);
		return;
	}
	if (!dlsym(lib, "fakeHipStats")) {
		dlclose(lib);
		cr_skip_test("a real libamdhip64.so is installed here");
	}
	cr_assert_eq(ops->open(0, &b), 0, "the fake found by name");
	ops->close(b);
	dlclose(lib);
}

Test(hip, runtime_without_write_value_is_too_old)
{
	tu_use_variant("GARUDA_HIP_LIBRARY", "FAKE_HIP_OLD_LIBRARY");
	struct garuda_backend *b = (void *)1;
	cr_assert_eq(ops->open(0, &b), -GARUDA_E_DRIVER_TOO_OLD);
	cr_assert_null(b);
}

Test(hip, runtime_before_5_is_too_old)
{
	setenv("FAKE_HIP_VERSION", "40200000", 1);
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), -GARUDA_E_DRIVER_TOO_OLD);
	cr_assert_not_null(strstr(garuda_backend_why(), "version 40200000"), "\"%s\"",
			   garuda_backend_why());
}

Test(hip, memops_attribute_zero_is_unsupported)
{
	setenv("FAKE_HIP_WAIT_VALUE", "0", 1);
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), -GARUDA_E_UNSUPPORTED);
}

Test(hip, init_errors)
{
	static const struct {
		const char *result;
		int expect;
	} cases[] = {
		{ "100", -ENODEV },                 /* hipErrorNoDevice */
		{ "35", -GARUDA_E_DRIVER_TOO_OLD }, /* hipErrorInsufficientDriver */
		{ "999", -GARUDA_E_NO_DRIVER },     /* hipErrorUnknown */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("FAKE_HIP_INIT_RESULT", cases[i].result, 1);
		struct garuda_backend *b;
		cr_assert_eq(ops->open(0, &b), cases[i].expect, "hipInit -> %s", cases[i].result);
	}
}

Test(hip, device_ordinal_checked)
{
	struct garuda_backend *b;
	cr_assert_eq(ops->open(1, &b), -ENODEV);
	cr_assert_eq(ops->open(-1, &b), -ENODEV);
	cr_assert_eq(ops->open(0, NULL), -EINVAL);
}

Test(hip, registration_lifecycle_on_the_backends_device)
{
	setenv("FAKE_HIP_DEVICES", "2", 1);
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(1, &b), 0);
	cr_assert_eq(f.set_device(0), 0); /* the caller works on device 0 */

	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	struct fake_hip_stats st = fk_stats(&f);
	cr_assert_eq(st.registers, 1);
	cr_assert_eq(st.register_flags, 0x3u, "hipHostRegisterMapped | hipHostRegisterPortable");
	cr_assert_eq(st.register_device, 1, "registered with the backend's device current");
	int dev = -1;
	cr_assert_eq(f.get_device(&dev), 0);
	cr_assert_eq(dev, 0, "the caller's current device is restored");

	ops->close(b);
	cr_assert_eq(ops->enqueue_store(b, NULL, reg, &area[1], 11), 0, "alive after close()");
	cr_assert_eq(tu_load(&area[1]), 11);
	cr_assert_eq(f.get_device(&dev), 0);
	cr_assert_eq(dev, 0);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	assert_clean(&f);
	dlclose(f.lib);
}

Test(hip, register_refused)
{
	setenv("FAKE_HIP_REGISTER_RESULT", "2", 1);
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg = (void *)1;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), -GARUDA_E_REGISTER_FAILED);
	cr_assert_null(reg);
	ops->close(b);
	assert_clean(&f);
	dlclose(f.lib);
}

Test(hip, register_twice_refused)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg, *again;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &again), -GARUDA_E_REGISTER_FAILED);
	cr_assert_eq(ops->register_memory(b, NULL, 8, &again), -EINVAL);
	cr_assert_eq(ops->unregister_memory(b, NULL), -EINVAL);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	assert_clean(&f);
	dlclose(f.lib);
}

Test(hip, store_lands_after_queued_work)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	fake_hipStream_t s;
	cr_assert_eq(f.create(&s), 0);
	static int gate;

	cr_assert_eq(ops->query(b, s), 0);
	cr_assert_eq(f.gate(s, &gate), 0);
	cr_assert_eq(f.sleep(s, 100000), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[2], 22), 0);
	cr_assert_eq(ops->query(b, s), -EAGAIN);
	tu_nap();
	cr_assert_eq(tu_load(&area[2]), 0, "the store waits for the kernel before it");
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	cr_assert_eq(tu_settle(ops, b, s), 0);
	cr_assert_eq(tu_load(&area[2]), 22);
	struct fake_hip_stats st = fk_stats(&f);
	cr_assert_eq(st.writes, 1);
	cr_assert_eq(st.write_flags, 0u);

	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[64 - 1] + 1, 1), -EINVAL);
	cr_assert_eq(ops->enqueue_store(b, s, reg, (uint64_t *)((char *)&area[2] + 2), 1), -EINVAL);
	cr_assert_eq(fk_stats(&f).writes, 1, "rejected words never reach the runtime");

	cr_assert_eq(f.destroy(s), 0);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	assert_clean(&f);
	dlclose(f.lib);
}

Test(hip, fault_maps_to_stream_fault)
{
	struct fk f;
	fk_open(&f);
	struct garuda_backend *b;
	struct garuda_backend_reg *reg;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->register_memory(b, area, sizeof(area), &reg), 0);
	fake_hipStream_t s;
	cr_assert_eq(f.create(&s), 0);
	static int gate;

	cr_assert_eq(f.gate(s, &gate), 0);
	cr_assert_eq(f.fault(s), 0);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[4], 44), 0);
	cr_assert_eq(ops->query(b, s), -EAGAIN);
	__atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
	cr_assert_eq(tu_settle(ops, b, s), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(ops->enqueue_store(b, s, reg, &area[4], 45), -GARUDA_E_STREAM_FAULT);
	cr_assert_eq(tu_load(&area[4]), 0, "a faulted stream never stores");

	cr_assert_eq(f.destroy(s), 0);
	cr_assert_eq(ops->unregister_memory(b, reg), 0);
	ops->close(b);
	assert_clean(&f);
	dlclose(f.lib);
}

Test(hip, numa_node_from_pci_bus_id)
{
	struct tu_sysfs sys;
	tu_sysfs_make(&sys, "0000:c1:00.0", "1\n");
	struct garuda_backend *b;
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), 1);
	ops->close(b);
	tu_sysfs_free(&sys);
	setenv("GARUDA_SYSFS_ROOT", "/nonexistent", 1);
	cr_assert_eq(ops->open(0, &b), 0);
	cr_assert_eq(ops->numa_node(b), -1);
	ops->close(b);
}
