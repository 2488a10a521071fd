/* testutil.h — small helpers for the backend tests: load a fake runtime's test
 * controls, wait for a stream to settle, and build a fake sysfs tree for NUMA lookups.
 * Header-only; every helper fails the test (cr_assert) instead of returning errors. */
#pragma once

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

/* dlopen the library named by environment variable env (the one the backend loads). */
static inline void *tu_dlopen_env(const char *env)
{
	const char *path = getenv(env);
	cr_assert(path && *path, "%s is not set (run through meson test)", env);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(lib, "dlopen %s: %s", path, dlerror());
	return lib;
}

static inline void *tu_sym(void *lib, const char *name)
{
	void *p = dlsym(lib, name);
	cr_assert_not_null(p, "fake lacks %s", name);
	return p;
}

/* Point env at the library path held in variable `from` (a variant of a fake). */
static inline void tu_use_variant(const char *env, const char *from)
{
	const char *path = getenv(from);
	cr_assert(path && *path, "%s is not set (run through meson test)", from);
	setenv(env, path, 1);
}

static inline void tu_nap(void)
{
	struct timespec ts = { 0, 200000 };
	nanosleep(&ts, NULL);
}

/* Query until the stream is no longer busy; returns the final query result. */
static inline int tu_settle(const struct garuda_backend_ops *ops, struct garuda_backend *b,
			    void *stream)
{
	int r;
	while ((r = ops->query(b, stream)) == -EAGAIN)
		tu_nap();
	return r;
}

static inline uint64_t tu_load(const uint64_t *w)
{
	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

/* snprintf into an array, failing the test on truncation. */
#define tu_path(buf, ...) \
	cr_assert_lt((size_t)snprintf((buf), sizeof(buf), __VA_ARGS__), sizeof(buf), "path too long")

/* A fake sysfs root with one PCI device's numa_node; tu_sysfs_free removes it. */
struct tu_sysfs {
	char root[PATH_MAX];
	char dir[PATH_MAX];
	char file[PATH_MAX];
};

static inline void tu_sysfs_make(struct tu_sysfs *s, const char *busid, const char *numa_text)
{
	snprintf(s->root, sizeof(s->root), "/tmp/garuda-sysfs-XXXXXX");
	cr_assert_not_null(mkdtemp(s->root));
	char p[PATH_MAX];
	tu_path(p, "%s/bus", s->root);
	cr_assert_eq(mkdir(p, 0700), 0);
	tu_path(p, "%s/bus/pci", s->root);
	cr_assert_eq(mkdir(p, 0700), 0);
	tu_path(p, "%s/bus/pci/devices", s->root);
	cr_assert_eq(mkdir(p, 0700), 0);
	tu_path(s->dir, "%s/bus/pci/devices/%s", s->root, busid);
	cr_assert_eq(mkdir(s->dir, 0700), 0);
	tu_path(s->file, "%s/numa_node", s->dir);
	int fd = open(s->file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	size_t len = strlen(numa_text);
	cr_assert_eq(write(fd, numa_text, len), (ssize_t)len);
	close(fd);
	setenv("GARUDA_SYSFS_ROOT", s->root, 1);
}

static inline void tu_sysfs_free(struct tu_sysfs *s)
{
	char p[PATH_MAX];
	unlink(s->file);
	rmdir(s->dir);
	tu_path(p, "%s/bus/pci/devices", s->root);
	rmdir(p);
	tu_path(p, "%s/bus/pci", s->root);
	rmdir(p);
	tu_path(p, "%s/bus", s->root);
	rmdir(p);
	rmdir(s->root);
	unsetenv("GARUDA_SYSFS_ROOT");
}
