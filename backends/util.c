/* util.c — small helpers shared by the backends (see internal.h): word range checks,
 * the library path override, and a device's NUMA node from its PCI bus id via sysfs.
 * Promises: never writes anything, reads only the one sysfs file it names. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sysfs.h"
#include "wire.h" /* GARUDA_NUMA_MAX */

int gbk_register_args(const struct garuda_backend *b, const void *addr, size_t bytes,
		      struct garuda_backend_reg **out)
{
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!b || !addr || bytes == 0 || (uintptr_t)addr + bytes < (uintptr_t)addr)
		return -EINVAL;
	return 0;
}

int gbk_word_check(const void *base, size_t bytes, const uint64_t *word)
{
	uintptr_t b = (uintptr_t)base, w = (uintptr_t)word;
	if (!base || !word || (w & 7u))
		return -EINVAL;
	if (w < b || bytes < sizeof(uint64_t) || w - b > bytes - sizeof(uint64_t))
		return -EINVAL;
	return 0;
}

static _Thread_local char why[512];

const char *garuda_backend_why(void)
{
	return why;
}

void gbk_set_why(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
}

const char *gbk_library_path(const char *env_name, const char *dflt)
{
	const char *p = getenv(env_name);
	return p && *p ? p : dflt;
}

int gbk_pci_numa_node(const char *busid)
{
	unsigned dom, bus, dev, fn;
	char tail;
	if (!busid || sscanf(busid, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4)
		return -1;
	if (bus > 0xff || dev > 0x1f || fn > 7)
		return -1;
	const char *root = getenv("GARUDA_SYSFS_ROOT");
	if (!root || !*root)
		root = "/sys";
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/bus/pci/devices/%04x:%02x:%02x.%x/numa_node",
			 root, dom, bus, dev, fn);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	/* "-1" (no NUMA) is no node too */
	return (int)sysfs_read_uint(path, GARUDA_NUMA_MAX);
}
