/* numa.c — see numa.h. mbind is called through syscall(2): libnuma would be one more
 * dependency for a single call. */
#include "numa.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sysfs.h"

#define MPOL_PREFERRED 1

static int cmp_node(const void *a, const void *b)
{
	return ((const struct numa_node *)a)->id - ((const struct numa_node *)b)->id;
}

void numa_discover(struct numa_topology *t)
{
	const char *root = getenv("GARUDA_SYSFS_ROOT");
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/devices/system/node", root && *root ? root : "/sys");
	memset(t, 0, sizeof(*t));

	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) && t->nnodes < NUMA_MAX_NODES) {
		char *end;
		if (strncmp(e->d_name, "node", 4) != 0 || !isdigit((unsigned char)e->d_name[4]))
			continue;
		long id = strtol(e->d_name + 4, &end, 10);
		if (*end || id < 0 || id > NUMA_MAX_ID)
			continue;
		t->present[id / (8 * sizeof(unsigned long))] |= 1ul << (id % (8 * sizeof(unsigned long)));
		char path[800], buf[4096];
		snprintf(path, sizeof(path), "%s/%s/cpulist", dir, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		struct numa_node *node = &t->node[t->nnodes];
		int c = sysfs_parse_cpulist(buf, &node->cpus);
		if (c <= 0)
			continue; /* memory-only node: no CPU to run a scanner on */
		node->id = (int)id;
		node->ncpus = c;
		t->nnodes++;
	}
	if (d)
		closedir(d);
	if (t->nnodes == 0) {
		t->present[0] |= 1ul; /* the one node of a machine without NUMA */
		t->nnodes = 1;
		t->node[0].id = 0;
		sched_getaffinity(0, sizeof(t->node[0].cpus), &t->node[0].cpus);
		t->node[0].ncpus = CPU_COUNT(&t->node[0].cpus);
	}
	qsort(t->node, (size_t)t->nnodes, sizeof(t->node[0]), cmp_node);
}

int numa_index(const struct numa_topology *t, int id)
{
	for (int i = 0; i < t->nnodes; i++)
		if (t->node[i].id == id)
			return i;
	return -1;
}

int numa_present(const struct numa_topology *t, int id)
{
	return id >= 0 && id <= NUMA_MAX_ID &&
	       (t->present[id / (8 * sizeof(unsigned long))] >> (id % (8 * sizeof(unsigned long))) & 1);
}

int numa_place(void *addr, size_t len, int id)
{
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = { 0 };
	if (id < 0 || id >= 1024)
		return -EINVAL;
	mask[id / (8 * sizeof(unsigned long))] |= 1ul << (id % (8 * sizeof(unsigned long)));
	long r = syscall(SYS_mbind, addr, len, MPOL_PREFERRED, mask, 1024ul, 0u);
	return r < 0 ? -errno : 0;
}
