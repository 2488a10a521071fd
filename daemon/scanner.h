/* scanner.h — one thread per NUMA node that watches the armed descriptors of the
 * segments on its node and delivers readiness.
 *
 * Promises: a descriptor fires only after an acquire load of its word saw the target
 * reached, and exactly once (unless dropped by disarm or by its session ending); a
 * scan pass costs O(armed descriptors); with nothing armed the thread is parked in
 * FUTEX_WAIT and uses no CPU; completions found in one pass are delivered batched
 * (one eventfd write per binding, one doorbell wake per segment, sendmmsg per
 * session). Writes to client fds never block the thread: an eventfd without
 * O_NONBLOCK, or a write that blocks anyway, marks its client as an offender.
 *
 * The loop thread talks to a scanner through its command queue only; every object an
 * armed descriptor points at is held by reference.
 */
#pragma once

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "counters.h"
#include "sink.h"
#include "notice.h"
#include "segment.h"

struct scanner;

/* The wait policy, set by the loop thread from the plan in force
 * (service_apply_tuning: garuda_watch_tuning_of()); the fields of struct
 * garuda_watch_tuning, under the plan's names. */
struct scanner_tuning {
	_Atomic uint64_t park_ns;      /* park_us: how long a spin window lasts */
	_Atomic uint64_t backstop_ns;  /* backstop_us: the short ladder's longest sleep */
	_Atomic uint64_t max_sleep_ns; /* +predict's max_sleep_us: the longest single sleep
					* toward a far deadline (proto/watch.h) */
	_Atomic uint64_t margin_ns;    /* +predict's margin_us: a window that opens at most this
					* past its deadline is slept to */
	_Atomic uint64_t backoff_div;  /* the plan's backoff_div (0: its default) */
	atomic_bool predict;	       /* +predict: sleep until the earliest deadline */
	atomic_bool forever;	       /* poll: never sleep while something is armed */
	atomic_bool wordwait;	       /* config wordwait auto: a spin step may park in a
					* hardware word wait (scanner.c, wordwait_step) */
};

struct arm_request {
	struct sink *sink;       /* reference passed to the scanner */
	struct segment *segment; /* reference passed to the scanner */
	struct binding *binding; /* reference passed (EVENTFD form), else NULL */
	uint32_t index;
	uint8_t form;
	uint64_t target, token;
	uint64_t arm_ns, sleep_ns; /* the wait's start and its predicted sleep (0: none) */
	uint64_t exact_sleep_ns;   /* the exact records' sleep: the second look (scanner.c) */
	uint64_t point_key;
	uint32_t point_slot;       /* POINT_NONE: no point */
};

/* Detection delay bound: a completion found by a pass is counted in bucket
 * floor(log2(ns since the previous pass began)): its store landed in that window. */
#define SCANNER_LAT_BUCKETS GARUDA_LAT_BUCKETS

struct scanner_stats {
	int numa_node;
	uint64_t armed;
	uint64_t counters[SC_COUNT_]; /* proto/counters.h's table: SC_passes, SC_spins... */
	uint64_t wake_late_ns; /* how late timed wakes come (running mean): +predict
				* sleeps end this much early */
	uint64_t cpu_ns;
	struct form_counts by_form; /* completions by form */
	uint64_t detect_hist[SCANNER_LAT_BUCKETS];
	uint64_t detect_ns_sum; /* sum of the bounds over all completions */
	/* timed sleeps that ran to their time, by how late the wake came (woke - the
	 * time asked; log2 buckets as above): the host's timer and scheduling, which
	 * every sleeping plan's lateness includes; a sleep a post ended is not counted */
	uint64_t timer_hist[SCANNER_LAT_BUCKETS];
	uint64_t timer_ns_sum;
};

int scanner_start(struct scanner **out, unsigned index, int numa_node, const cpu_set_t *cpus,
		  struct scanner_tuning *tuning, struct notice_queue *notices);
/* Stop and join; drops (releases) everything still armed. */
void scanner_stop(struct scanner *s);

/* ARMs and DISARMs (scanner_arm, scanner_disarm) are staged on the loop thread and
 * posted by the next scanner_flush(), which the callback that staged them calls before
 * it returns (session_conn.c on_in); any other command of s flushes them first. */
void scanner_arm(struct scanner *s, const struct arm_request *req);
/* Post what is staged, in one go; wake s if some of it is due before s wakes. */
void scanner_flush(struct scanner *s);
/* Wake s if it sleeps, so that it takes what is queued now (a session paused for its
 * untaken ARMs: sink.h sink_pause; an ARM alone wakes a sleeping scanner only when it
 * is due before the wake). */
void scanner_kick(struct scanner *s);
/* Remove not-yet-fired arms of (sink, segment_id, index, token); the outcome comes
 * back as NOTICE_ANSWER with cookie. */
void scanner_disarm(struct scanner *s, struct sink *sink, struct segment *seg, uint32_t index,
		    uint64_t token, uint64_t cookie, bool noreply);
/* Drop every arm on a segment / a binding's slot (eventfd form) / of a sink. The
 * segment and the binding are session_id's (its arms are the only ones on them: the
 * scanner walks that session's words alone, a binding's one word alone). A segment's
 * drop and a sink's are taken at most SCANNER_DROP_STEP_WAITS a step (scanner.c); a
 * segment's holds a reference on it until it is applied whole. */
/* reply (or NULL): the request to acknowledge (NOTICE_ANSWER, code 0) once the drop is
 * applied, so that no readiness of what it dropped can follow the ACK. */
struct scanner_reply {
	uint64_t session_id, cookie;
	bool noreply;
};
void scanner_drop_segment(struct scanner *s, struct segment *seg, uint64_t session_id,
			  const struct scanner_reply *reply);
void scanner_drop_binding(struct scanner *s, struct binding *b, struct segment *seg,
			  uint64_t session_id, const struct scanner_reply *reply);
void scanner_drop_sink(struct scanner *s, struct sink *sink);

void scanner_get_stats(struct scanner *s, struct scanner_stats *out);

/* The word wait the scanners' spin steps use under this tuning: the process's
 * hardware variant (util/wordwait.h: wordwait_system()) when tuning->wordwait is on,
 * else wordwait_off(). */
struct wordwait;
const struct wordwait *scanner_wordwait(const struct scanner_tuning *tuning);

/* One armed descriptor as the control plane shows it. */
struct armed_view {
	uint32_t index;
	uint8_t form;
	uint64_t target, token;
};

/* Copy (synchronously, through the command queue) the descriptors armed on seg, of the
 * session session_id. *out is malloc'ed (caller frees). Returns the count or -errno.
 * Control plane only: it waits for the scanner's next step, which walks that session's
 * armed words alone. */
int scanner_list_armed(struct scanner *s, struct segment *seg, uint64_t session_id, struct armed_view **out);
