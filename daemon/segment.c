/* segment.c — see segment.h. */
#include "segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdio.h"
#include "errcode.h"
#include "log.h"
#include "numa.h"
#include "page.h"

#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

static atomic_uint live_segments;

/* Every segment a session holds, by file identity, so that one file backs at most one
 * held segment (an attach of a file another segment uses, in any session, is refused;
 * a segment its session let go of leaves at once: segment_retire). A mutex:
 * the last reference normally drops on the loop thread, but may drop on a scanner
 * when the notice queue is out of memory (armed.c). */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct segment *registry;

static bool registry_add(struct segment *s)
{
	pthread_mutex_lock(&registry_lock);
	for (struct segment *o = registry; o; o = o->lnext) {
		if (o->dev == s->dev && o->ino == s->ino) {
			pthread_mutex_unlock(&registry_lock);
			return false;
		}
	}
	s->lnext = registry;
	s->lprev = NULL;
	if (registry)
		registry->lprev = s;
	registry = s;
	s->registered = true;
	pthread_mutex_unlock(&registry_lock);
	return true;
}

static void registry_remove(struct segment *s)
{
	pthread_mutex_lock(&registry_lock);
	if (s->registered) {
		if (s->lprev)
			s->lprev->lnext = s->lnext;
		else if (registry == s)
			registry = s->lnext;
		if (s->lnext)
			s->lnext->lprev = s->lprev;
		s->registered = false;
	}
	pthread_mutex_unlock(&registry_lock);
}

void segment_retire(struct segment *s)
{
	registry_remove(s);
}

unsigned segment_count(void)
{
	return atomic_load(&live_segments);
}

/* Why the loop thread's last segment_create/segment_attach failed, in words (only
 * NO_MEMLOCK says more than the code). */
static _Thread_local char last_why[GARUDA_SEGMENT_WHY_MAX];

const char *segment_why(void)
{
	return last_why;
}

/* Bytes this process has locked (VmLck of /proc/self/status), or -1. */
static long long locked_bytes(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	long long kib, r = -1;
	while (f && r < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %lld kB", &kib) == 1)
			r = kib * 1024;
	if (f)
		fclose(f);
	return r;
}

/* The words for a refused mlock of `bytes` (errno e): the bytes asked, the limit and
 * what garudad holds locked already, and the remedy. */
static void explain_memlock(size_t bytes, int e)
{
	struct rlimit rl;
	char limit[48] = "unknown";
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
		if (rl.rlim_cur == RLIM_INFINITY)
			snprintf(limit, sizeof(limit), "unlimited");
		else
			snprintf(limit, sizeof(limit), "%llu bytes", (unsigned long long)rl.rlim_cur);
	}
	long long held = locked_bytes();
	char heldtxt[48] = "";
	if (held >= 0)
		snprintf(heldtxt, sizeof(heldtxt), ", %lld locked already", held);
	snprintf(last_why, sizeof(last_why),
		 "cannot mlock %zu bytes for the segment (%s): RLIMIT_MEMLOCK is %s%s; raise "
		 "LimitMEMLOCK= (ulimit -l) or grant garudad CAP_IPC_LOCK",
		 bytes, strerror(e), limit, heldtxt);
}

/* Map fd, place it, lock it. */
static int map_segment(int fd, size_t bytes, int numa_node, struct garuda_segment **out)
{
	last_why[0] = '\0';
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (numa_node >= 0) {
		int r = numa_place(p, bytes, numa_node);
		if (r < 0 && r != -ENOSYS && r != -EINVAL)
			log_debug("mbind to node %d: %s", numa_node, strerror(-r));
	}
	if (mlock(p, bytes) < 0) {
		int e = errno;
		munmap(p, bytes);
		if (e != ENOMEM && e != EPERM && e != EAGAIN)
			return -e;
		explain_memlock(bytes, e);
		return -GARUDA_E_NO_MEMLOCK;
	}
	*out = p;
	return 0;
}

static struct segment *segment_new(int fd, struct garuda_segment *map, size_t bytes, uint32_t id,
				   uint32_t lines, int numa_node)
{
	struct segment *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	s->fd = fd;
	s->map = map;
	s->bytes = bytes;
	s->id = id;
	s->lines = lines;
	s->numa_node = numa_node;
	atomic_fetch_add(&live_segments, 1);
	return s;
}

int segment_create(uint32_t id, uint32_t lines, int numa_node, pid_t pid, struct segment **out)
{
	char name[64];
	snprintf(name, sizeof(name), "garuda-seg:pid=%d,lines=%u", (int)pid, lines);
	size_t bytes = garuda_segment_bytes(lines, page_size());
	_cleanup_close_ int fd = fdio_sealed_memfd(name, bytes); /* the same seals either side */
	if (fd < 0)
		return fd;
	struct garuda_segment *map;
	int r = map_segment(fd, bytes, numa_node, &map);
	if (r < 0)
		return r;
	garuda_segment_header_init(map, lines, id, numa_node);
	struct segment *s = segment_new(fd, map, bytes, id, lines, numa_node);
	if (!s) {
		munmap(map, bytes);
		return -ENOMEM;
	}
	struct stat st;
	if (fstat(fd, &st) == 0) {
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		registry_add(s); /* a new file: nobody else has it */
	}
	TAKE_FD(fd);
	*out = s;
	return 0;
}

int segment_attach(int fd, uint32_t id, uint32_t lines, int numa_node, struct segment **out)
{
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0) /* not a memfd (EINVAL), or an fd that is no file to read (an O_PATH
			* one: EBADF) */
		return -GARUDA_E_BAD_SEGMENT;
	if ((seals & REQUIRED_SEALS) != REQUIRED_SEALS)
		return -GARUDA_E_BAD_SEGMENT;
	/* the daemon writes the header and its stores must never fault */
	if (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE))
		return -GARUDA_E_BAD_SEGMENT;
	/* shmem only: a hugetlbfs file's page can be punched out and not come back (the
	 * next access in a scanner would SIGBUS); a shmem page always can */
	struct statfs sfs;
	if (fstatfs(fd, &sfs) < 0)
		return -errno;
	if (sfs.f_type != TMPFS_MAGIC)
		return -GARUDA_E_BAD_SEGMENT;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	size_t bytes = garuda_segment_bytes(lines, page_size());
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != bytes)
		return -GARUDA_E_BAD_SEGMENT;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_ACCMODE) != O_RDWR)
		return -GARUDA_E_BAD_SEGMENT;
	struct garuda_segment *map;
	int r = map_segment(fd, bytes, -1, &map);
	if (r < 0)
		return r;
	/* shared memory: read each field once, check it, never trust it afterwards */
	uint64_t magic = __atomic_load_n(&map->hdr.magic, __ATOMIC_RELAXED);
	uint32_t layout = __atomic_load_n(&map->hdr.layout, __ATOMIC_RELAXED);
	uint32_t hdr_lines = __atomic_load_n(&map->hdr.lines, __ATOMIC_RELAXED);
	if (magic != GARUDA_SEGMENT_MAGIC || layout != GARUDA_SEGMENT_LAYOUT || hdr_lines != lines) {
		munmap(map, bytes);
		return -GARUDA_E_BAD_SEGMENT;
	}
	struct segment *s = segment_new(fd, map, bytes, id, lines, numa_node);
	if (!s) {
		munmap(map, bytes);
		return -ENOMEM;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	if (!registry_add(s)) { /* another segment (any session's) uses this file */
		s->fd = -1; /* the caller keeps its fd */
		segment_unref(s);
		return -GARUDA_E_BAD_SEGMENT;
	}
	__atomic_store_n(&map->hdr.segment_id, id, __ATOMIC_RELAXED);
	*out = s;
	return 0;
}

void segment_unref(struct segment *s)
{
	if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	registry_remove(s);
	munmap(s->map, s->bytes);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	atomic_fetch_sub(&live_segments, 1);
}
