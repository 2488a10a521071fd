/* sink.h — what a scanner needs to deliver readiness to a session, shared between
 * the loop thread (which owns the session) and the scanner threads (which fire
 * armed descriptors): the sink (the session's socket and its counters) and bindings
 * (a slot's eventfd). Both are reference-counted; each armed descriptor holds a
 * reference, so a session can end while scanners still hold its descriptors: their
 * sends then fail harmlessly (the socket is shut down) and the last reference closes
 * the fd, on the loop thread (a scanner hands its last references over:
 * docs/architecture.md). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cleanup.h"
#include "counters.h"
#include "form.h"
#include "quota.h"
#include "wire.h"

struct points;

#define GARUDA_LAT_BUCKETS 24 /* log2(ns) buckets of the detection delay bound */

struct sink {
	atomic_uint refs;
	int fd; /* the session's socket; closed with the last reference */
	uint64_t session_id;
	uint32_t features;        /* GARUDA_FEATURE_* agreed at HELLO (set before any arm) */
	struct quota_account quota; /* what it is charged to: its own, its uid's, its cgroup's */
	atomic_bool overflow;     /* a READY could not be sent: send READY{OVERFLOW} */
	atomic_bool eventfd_broken; /* one of its eventfds blocked a scanner: write none */
	/* proto/counters.h's session table (sink_count(), sink_count_fired()) */
	atomic_uint_fast64_t count[SN_COUNT_];
	struct form_tally by_form;
	atomic_uint_fast64_t detect_hist[GARUDA_LAT_BUCKETS]; /* per completion, see scanner.h */
	/* deadline-estimator points (points.h), NULL until used: made lazily by the loop
	 * thread (points_lookup, release store) while scanners read it for arms armed
	 * before (acquire load: sink_points()) */
	struct points *_Atomic points;
	/* Its ARMs and DISARMs posted to scanners and not yet taken (the loop thread adds,
	 * at post_arm and on_disarm; a scanner subtracts, at its take). At SINK_QUEUED_MAX
	 * the loop stops reading the session (sink_pause) until a scanner's take brings it
	 * down to SINK_QUEUED_RESUME (sink_taken): an ARM flood waits in its own socket,
	 * not in garudad's memory nor in one long scanner step that every other session's
	 * readiness waits behind (a flood of NOREPLY DISARMs too). */
	atomic_uint queued;
	atomic_bool paused; /* the loop stopped reading it; whoever clears it resumes it */
};

struct binding {
	atomic_uint refs;
	int fd; /* the client's eventfd */
	uint32_t segment_id, index;
	/* set by the one scanner that watches the slot's segment (readiness.c) once the
	 * eventfd would block it: stop writing; no other thread reads it */
	atomic_bool broken;
	/* its segment's list (struct segment bindings): the loop thread's, unlinked in O(1) */
	struct binding *next, *prev;
	/* the scanner's (the one that watches its slot's segment): the ids of its armed
	 * waits, appended as they are armed, those since fired or removed left in until a
	 * compaction (scanner.c, binding_arms_add), and where its drop's walk of them stands
	 * (drop_at): a drop looks at these alone, not at every wait on its slot's word.
	 * Freed with the binding (binding_unref). */
	uint32_t *arms;
	uint32_t narms, caparms, drop_at;
};

/* The sink's points table (NULL: none made yet), for a scanner or the control plane:
 * an acquire load, pairing with points_lookup()'s release store, so that the table's
 * mutex and contents are seen initialised. */
static inline struct points *sink_points(struct sink *s)
{
	return atomic_load_explicit(&s->points, memory_order_acquire);
}

/* Takes the reference cgroup (may be NULL) in every case; drops it when freed. */
struct sink *sink_new(int fd, uint64_t session_id, struct quota_uid *uid, struct quota_cgroup *cgroup);
static inline struct sink *sink_ref(struct sink *s)
{
	atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
	return s;
}
void sink_unref(struct sink *s);
DEFINE_CLEANUP(struct sink, sink_unref)

/* The session's counters are the sink's own: bumped here, by the scanner that fires
 * its descriptors and writes its readiness, and read by session_describe(). */
static inline void sink_count(struct sink *k, enum garuda_session_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&k->count[c], n, memory_order_relaxed);
}

/* The log2(ns) bucket of a detection delay bound (GARUDA_LAT_BUCKETS, the last one
 * open-ended). */
static inline unsigned sink_lat_bucket(uint64_t ns)
{
	unsigned b = ns ? 63 - (unsigned)__builtin_clzll(ns) : 0;
	return b < GARUDA_LAT_BUCKETS ? b : GARUDA_LAT_BUCKETS - 1;
}

/* One readiness fired for the session, in form (enum garuda_form), with its detection
 * delay bound in bucket (sink_lat_bucket()): counted before it is sent, so whoever
 * sees the readiness can already see it in the counters. */
static inline void sink_count_fired(struct sink *k, uint8_t form, unsigned bucket)
{
	sink_count(k, SN_completions, 1);
	form_tally_add(&k->by_form, form, 1);
	atomic_fetch_add_explicit(&k->detect_hist[bucket], 1, memory_order_relaxed);
}

/* A session's untaken ARMs and DISARMs that stop garudad reading its requests, and the
 * count that lets it read again. 256 bounds what one session adds to a scanner's step to ~0.1-0.4
 * ms of takes (0.3-1.7 us each, measured: docs/plans.md, "A flood of ARMs
 * waits in its own socket"). */
#define SINK_QUEUED_MAX 256u
#define SINK_QUEUED_RESUME (SINK_QUEUED_MAX / 2)

/* Loop thread, before it posts an ARM or a DISARM of the session. */
static inline void sink_queued_add(struct sink *k, unsigned n)
{
	atomic_fetch_add(&k->queued, n);
}

/* Loop thread, before it reads the session's next requests: true when SINK_QUEUED_MAX
 * of its commands are still untaken; the caller then stops reading it (and wakes the
 * scanners) until the RESUME notice that sink_taken() asks for. The pair with
 * sink_taken(): paused is stored before queued is loaded again, and a scanner's take
 * subtracts before it loads paused (all seq_cst): either this load sees the take, or
 * that take sees paused. Whoever clears paused owns the resume. Model-checked:
 * tests/models/flow_pause.pml (docs/models.md). */
static inline bool sink_pause(struct sink *k)
{
	if (atomic_load(&k->queued) < SINK_QUEUED_MAX)
		return false;
	atomic_store(&k->paused, true);
	if (atomic_load(&k->queued) <= SINK_QUEUED_RESUME && atomic_exchange(&k->paused, false))
		return false; /* taken meanwhile: read on */
	return true;
}

/* A scanner took n of the session's commands: true when the caller must post NOTICE_RESUME
 * (it cleared paused). */
static inline bool sink_taken(struct sink *k, unsigned n)
{
	unsigned left = atomic_fetch_sub(&k->queued, n) - n;
	return left <= SINK_QUEUED_RESUME && atomic_load(&k->paused) && atomic_exchange(&k->paused, false);
}

struct binding *binding_new(int fd, uint32_t segment_id, uint32_t index);
static inline struct binding *binding_ref(struct binding *b)
{
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	return b;
}
void binding_unref(struct binding *b);
DEFINE_CLEANUP(struct binding, binding_unref)
