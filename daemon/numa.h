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

#define NUMA_MAX_ID 1023 /* the protocol's numa_node range */

struct numa_topology {
	int nnodes; /* the nodes with CPUs (a scanner can run there) */
	struct numa_node node[NUMA_MAX_NODES];
	/* every node sysfs lists, memory-only ones (no CPUs: CXL memory, a GPU's memory
	 * exposed as a node) too: a bit per id */
	unsigned long present[(NUMA_MAX_ID + 1) / (8 * sizeof(unsigned long))];
};

/* Discover nodes; always yields at least one node. */
void numa_discover(struct numa_topology *t);

/* Index into t->node[] of node id, or -1 (none, or one without CPUs). */
int numa_index(const struct numa_topology *t, int id);

/* Whether node id exists on the host, with CPUs or without. */
int numa_present(const struct numa_topology *t, int id);

/* Prefer node `id` for the pages of [addr, addr+len) before first touch.
 * Returns 0 or -errno (-ENOSYS where the kernel has no NUMA). */
int numa_place(void *addr, size_t len, int id);
