/* segment.h — a segment as the daemon holds it: a sealed memfd, the daemon's own
 * MAP_SHARED mapping of it (mlock'ed, placed on its NUMA node), and its size and line
 * count as the daemon decided them (never read back from shared memory).
 *
 * Reference-counted: the owning session holds one reference, every armed descriptor
 * on the segment holds one; the mapping and the memfd go away with the last, on the
 * loop thread (docs/architecture.md). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "segment_layout.h"

struct segment {
	atomic_uint refs;
	int fd;
	struct garuda_segment *map;
	size_t bytes;
	uint32_t id; /* unique within its session */
	uint32_t lines;
	int numa_node;
	unsigned scanner; /* index of the scanner that watches it */
	struct segment *next; /* session's list */
	/* its session's bindings of its slots (session_req.c): the loop thread's, like
	 * next; an UNBIND unlinks one in O(1), a SEGMENT_CLOSE walks its own alone */
	struct binding *bindings;
	uint32_t nbindings;
	/* its SEGMENT reply carrying the memfd: its session's fds_sent then (session.h);
	 * 0: none (an ATTACH's reply carries no fd), or it went unsent. Loop thread. */
	uint64_t reply_no;
	dev_t dev;            /* the file's identity: one live segment per file */
	ino_t ino;
	struct segment *lnext, *lprev; /* every held segment (segment.c's registry) */
	bool registered; /* in the registry (under its lock) */
};

/* Create a new segment for client pid: memfd, size, seals, map, place, mlock, header.
 * Returns 0 or -errno / -GARUDA_E_NO_MEMLOCK. */
int segment_create(uint32_t id, uint32_t lines, int numa_node, pid_t pid, struct segment **out);

/* Adopt a memfd a client presents again (after a daemon restart): it must be a memfd
 * sealed against shrink and grow, of exactly the size `lines` needs, with a valid
 * header. Takes ownership of fd on success only. Returns 0 or -GARUDA_E_BAD_SEGMENT,
 * -GARUDA_E_NO_MEMLOCK, -errno. */
int segment_attach(int fd, uint32_t id, uint32_t lines, int numa_node, struct segment **out);

/* After segment_create/segment_attach failed with -GARUDA_E_NO_MEMLOCK: the reason in
 * words (bytes asked, RLIMIT_MEMLOCK, bytes locked already, the remedy), at most
 * GARUDA_SEGMENT_WHY_MAX - 1 bytes, fit for an ERROR's text; "" after other failures.
 * The calling thread's own (the loop thread's). */
#define GARUDA_SEGMENT_WHY_MAX 256
const char *segment_why(void);

/* Its session let go of it (SEGMENT_CLOSE, the session's end): its file may back a new
 * segment at once (a client re-attaching after garudad ended its session), while the
 * scanner still drops this one's waits. Loop thread; idempotent. */
void segment_retire(struct segment *s);

static inline struct segment *segment_ref(struct segment *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}
void segment_unref(struct segment *s);
DEFINE_CLEANUP(struct segment, segment_unref)

/* The daemon's pointer to word `index`; index < lines * 8 must be checked before. */
static inline const uint64_t *segment_word(struct segment *s, uint32_t index)
{
	return garuda_segment_word(s->map, index);
}

/* Number of segments alive in this process (for status and leak tests). */
unsigned segment_count(void);
