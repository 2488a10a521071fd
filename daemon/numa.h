/* numa.h — NUMA topology from sysfs: which nodes exist and which CPUs each has.
 * Read from $GARUDA_SYSFS_ROOT/devices/system/node (default /sys), so tests can
 * present a fake two-node machine. A machine without that directory is one node (0)
 * with every online CPU. Placement (mbind) lives here too. */
#pragma once

#include <sched.h>
#include <stddef.h>

#define NUMA_MAX_NODES 64

struct numa_node {
	int id;
	cpu_set_t cpus;
	int ncpus;
};

struct numa_topology {
	int nnodes;
	struct numa_node node[NUMA_MAX_NODES];
};

/* Discover nodes; always yields at least one node. */
void numa_discover(struct numa_topology *t);

/* Parse a sysfs cpulist ("0-3,8,10-11") into set; returns CPUs set or -1. */
int numa_parse_cpulist(const char *s, cpu_set_t *set);

/* Index into t->node[] of node id, or -1. */
int numa_index(const struct numa_topology *t, int id);

/* Prefer node `id` for the pages of [addr, addr+len) before first touch.
 * Returns 0 or -errno (-ENOSYS where the kernel has no NUMA). */
int numa_place(void *addr, size_t len, int id);
