/* <garuda/host.h> — the CPU as a device: host streams for the `host` backend.
 * Public (installed with <garuda/garuda.h>, which includes it); the one declaration
 * of this API.
 *
 * A host stream models a GPU stream on the CPU. It is one worker thread that executes
 * a bounded FIFO of items strictly in order: a simulated kernel of a given duration,
 * a store of a value into a word, a fault, a timestamp, or a host callback. Tests and
 * benchmarks use it to stand in for a CUDA or HIP stream; the `host` backend's
 * enqueue_store() takes a struct garuda_host_stream * as its `stream` argument, and a
 * NULL stream there means "store now, from the calling thread" (a CPU producer).
 *
 * Promises:
 *  - Items run one at a time, in the order their enqueue calls took the stream's lock;
 *    an item starts only after the one before it has finished.
 *  - A store is a release store (__ATOMIC_RELEASE) of the whole 64-bit word, done
 *    after everything queued before it finished; a reader that sees the value with an
 *    acquire load also sees every effect of the earlier items.
 *  - A fault models a failed GPU context: when the worker reaches it, the stream is
 *    faulted for good. Every item still queued is discarded (their stores never
 *    happen), later enqueues fail with -GARUDA_E_STREAM_FAULT, and query/drain report
 *    -GARUDA_E_STREAM_FAULT.
 *  - The FIFO holds at most `depth` items. When it is full, enqueue waits for room
 *    (as a GPU launch queue does), or fails with -EAGAIN on a stream created with
 *    `nonblock`.
 *  - garuda_host_stream_free() lets the queued items finish (as a device finishes work
 *    on a destroyed stream), then joins the worker; nothing leaks.
 *
 * Thread safety: every function may be called from any thread, concurrently, except
 * that garuda_host_stream_free() must not race with other calls on the same stream.
 * A host stream does not depend on a backend object; it may outlive one.
 *
 * Errors: 0 on success, -EINVAL for bad arguments, -ENOMEM, -EAGAIN (full, nonblock),
 * -GARUDA_E_STREAM_FAULT (the stream has faulted), or a negative errno from pthreads.
 */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GARUDA_HOST_STREAM_DEPTH 1024u      /* default FIFO depth, in items */
#define GARUDA_HOST_STREAM_DEPTH_MAX 1048576u

struct garuda_host_stream;

struct garuda_host_stream_config {
	unsigned depth;   /* FIFO capacity in items; 0 = GARUDA_HOST_STREAM_DEPTH */
	uint64_t spin_ns; /* the last spin_ns of a work item are spun, the rest slept
			   * (clock_nanosleep); 0 = sleep only */
	int nonblock;     /* nonzero: enqueue on a full FIFO returns -EAGAIN */
};

/* Create a stream and start its worker. cfg NULL = all defaults. */
int garuda_host_stream_new(const struct garuda_host_stream_config *cfg,
			   struct garuda_host_stream **out);

/* Let queued items finish (a faulted stream has none left), stop and join the worker,
 * free the stream. NULL is a no-op. */
void garuda_host_stream_free(struct garuda_host_stream *s);

/* A simulated kernel: the worker is busy for duration_ns (measured on CLOCK_MONOTONIC
 * from the moment it starts the item). */
int garuda_host_stream_enqueue_work(struct garuda_host_stream *s, uint64_t duration_ns);

/* A faulted context: see the promises above. */
int garuda_host_stream_enqueue_fault(struct garuda_host_stream *s);

/* Release-store garuda_now_ns() into *out_ns when the worker reaches this item (e.g.
 * "the kernel ended here", for latency measurements). */
int garuda_host_stream_enqueue_stamp(struct garuda_host_stream *s, uint64_t *out_ns);

/* Call fn(arg) on the worker thread when it reaches this item (like cuLaunchHostFunc).
 * fn must not call back into this stream's enqueue functions on a full FIFO. */
int garuda_host_stream_enqueue_call(struct garuda_host_stream *s, void (*fn)(void *arg),
				    void *arg);

/* 0: every item enqueued so far has finished; -EAGAIN: some are queued or running;
 * -GARUDA_E_STREAM_FAULT: the stream has faulted. Does not block. */
int garuda_host_stream_query(struct garuda_host_stream *s);

/* Block until every item enqueued so far has finished (0) or the stream has faulted
 * (-GARUDA_E_STREAM_FAULT). */
int garuda_host_stream_drain(struct garuda_host_stream *s);

#ifdef __cplusplus
}
#endif
