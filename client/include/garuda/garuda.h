/* garuda.h — libgaruda: wait on GPU (or CPU) stream completion like I/O.
 *
 * A stream (struct garuda_stream) owns one 64-bit word in a segment: a shared-memory
 * region that garudad created for this client and that the client registered with its
 * GPU runtime through a backend ("host", "cuda", "hip"). garuda_stream_signal() enqueues,
 * behind the work already queued on the native stream, a store of the next sequence
 * number into the word, and arms it with garudad. Completion can then be observed in
 * whatever way fits the program:
 *
 *   - garuda_stream_reached() / garuda_stream_value(): read the word (memory is the
 *     truth; these never block and never talk to the daemon);
 *   - garuda_stream_wait(): spin on the word for a short budget, then block on the
 *     stream's readiness form, with a timeout and a backstop that queries the native
 *     stream so a faulted stream fails instead of hanging;
 *   - garuda_stream_fd(): an eventfd to put in epoll, io_uring or asyncio (readiness
 *     form GARUDA_READINESS_EVENTFD), then garuda_stream_drain();
 *   - garuda_stream_set_callback() + garuda_client_fd() + garuda_dispatch(): callbacks
 *     driven by READY messages on the socket (form GARUDA_READINESS_MESSAGE).
 *
 * Readiness from garudad is a hint: every function decides from an acquire load of the
 * word. When garudad goes away, waits keep working by polling the words, and the
 * library reconnects in the background with backoff, presents its segments again,
 * re-binds its eventfds and re-arms what is still outstanding.
 *
 * Return values: 0 or a non-negative count on success; on failure a negative errno
 * (system failures, forwarded unchanged; -EINVAL for invalid arguments), or a negative
 * garuda error code (enum garuda_error below). garuda_strerror() gives the text of any.
 *
 * Threads: a client may be shared by any number of threads. Different streams may be
 * used concurrently from different threads. One stream is signalled, waited on and
 * drained by one thread at a time (or under the caller's lock);
 * garuda_stream_reached() and garuda_stream_value() may be called from any thread at
 * any time. Each function below states its own rules where they differ.
 *
 * The library starts one background thread per client (it reads the socket, routes
 * replies and READY messages, and reconnects), and one reactor thread per process
 * while it has GARUDA_FALLBACK=reactor clients, and one worker thread per host
 * stream. They block all signals. Do not use a client in a child after fork();
 * connect again there (the child has no reactor thread until it connects a fallback
 * client). The library is never unloaded: dlclose() leaves it mapped.
 */
#ifndef GARUDA_GARUDA_H
#define GARUDA_GARUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GARUDA_VERSION_MAJOR 0
#define GARUDA_VERSION_MINOR 1
#define GARUDA_VERSION_PATCH 0

/* Default socket of garudad; the environment variable GARUDA_SOCKET overrides it. */
#define GARUDA_DEFAULT_SOCKET "/run/garuda/garuda.sock"

/* garuda's own error codes (returned negated): enum garuda_error, generated from the
 * append-only registry (proto/errcode.h). */
#include <garuda/errcodes.h>

/* How a stream's waiter is told that its word may have reached a target.
 * Whatever the form, garuda_stream_wait() works; the form decides what it blocks on
 * and what else the program can watch. */
enum garuda_readiness {
	/* No readiness from garudad: waits spin, then sleep and re-read the word. Costs
	 * no messages; latency is the polling interval. */
	GARUDA_READINESS_POLL = 0,
	/* An eventfd bound to the stream's word; +1 per reached target. garuda_stream_fd()
	 * returns it (for epoll, io_uring, asyncio add_reader). */
	GARUDA_READINESS_EVENTFD = 1,
	/* A READY message on the client's socket per reached target; drives
	 * garuda_stream_set_callback() callbacks through garuda_dispatch(). */
	GARUDA_READINESS_MESSAGE = 2,
	/* garudad bumps and futex-wakes the segment's doorbell word; waiters block on it
	 * with no fd. Shared by all streams of a segment. */
	GARUDA_READINESS_DOORBELL = 3,
};

struct garuda_client; /* one connection to garudad */
struct garuda_seg;    /* one segment (shared memory of words) for one backend device */
struct garuda_stream; /* one word, signalled by one native stream */

/* ------------------------------------------------------------------------------
 * Library
 */

/* Version of the library, "MAJOR.MINOR.PATCH". Never NULL. Thread-safe. */
const char *garuda_version(void);

/* Text for any return value of this library: a negative errno, a negative garuda
 * code (either sign of a garuda code is accepted), or 0 ("success"). Never NULL; an
 * unknown value gives "unknown error". Thread-safe. */
const char *garuda_strerror(int err);

/* ------------------------------------------------------------------------------
 * Client: one connection to garudad
 */

/* Connect to garudad, say HELLO and start the client's background thread. *out gets
 * the client. The socket, first match: $GARUDA_SOCKET when set and non-empty; when
 * not root, $XDG_RUNTIME_DIR/garuda/garuda.sock if it exists (a garudad the user
 * started without flags); GARUDA_DEFAULT_SOCKET. With $GARUDA_CONNECT_TIMEOUT=MS set,
 * waits up to MS milliseconds for a daemon that is not (yet) listening, as
 * garuda_connect_wait() does.
 * Errors: -EINVAL (out NULL; socket path too long; a bad GARUDA_CONNECT_TIMEOUT),
 * -ENOENT / -ECONNREFUSED / -EACCES (no daemon listening there, or no permission),
 * -GARUDA_E_BAD_VERSION (the daemon speaks another protocol version),
 * -GARUDA_E_PROTOCOL (the daemon's answer was not a valid WELCOME),
 * -GARUDA_E_DISCONNECTED (the daemon closed the connection during the handshake),
 * -GARUDA_E_TIMEOUT (no answer to HELLO within 5 s), another negative code the daemon
 * sent, -ENOMEM, or a negative errno from socket(), eventfd() or pthread_create().
 * On failure garuda_last_error() says which socket and what to do. Thread-safe.
 * GARUDA_WAIT_PLAN, when set and not empty, is the wait plan text of the client's new
 * streams (garuda_stream_set_plan); a text it refuses fails the connect (both
 * functions) with -GARUDA_E_BAD_PLAN before any socket is opened, and
 * garuda_plan_message() says why.
 * GARUDA_FALLBACK, read once per connect, declares the fallback chain (docs/client.md
 * "Fallback"): unset, empty or "strict" (the default) refuses to run without garudad
 * (the errors above); "reactor" runs without it when it cannot be reached (-ENOENT,
 * -ENOTDIR, -ECONNREFUSED, -ECONNRESET, -GARUDA_E_DISCONNECTED, -GARUDA_E_TIMEOUT):
 * the connect succeeds in local mode (segments are memfds made in this process, an
 * in-process reactor delivers readiness in every form: one thread per process, shared
 * by all its fallback clients, started by the first one's connect and joined by the
 * last one's disconnect), garuda_client_warning()
 * reports GARUDA_E_FALLBACK_REACTOR, and when garudad is back the background thread
 * presents the segments and streams to it and clears the warning. Any other value
 * fails the connect with -EINVAL. */
int garuda_connect(struct garuda_client **out);

/* As garuda_connect(), at socket path `path` (an AF_UNIX path), without waiting. */
int garuda_connect_to(const char *path, struct garuda_client **out);

/* As garuda_connect() (path NULL: the same search) or garuda_connect_to(), retrying
 * every 50 ms for up to timeout_ms milliseconds while nothing listens at the socket
 * (-ENOENT, -ECONNREFUSED); any other error returns at once. timeout_ms <= 0: one
 * attempt. Thread-safe. */
int garuda_connect_wait(const char *path, int timeout_ms, struct garuda_client **out);

/* The calling thread's last failure in words. Exactly:
 *  - a call fails when it returns a negative code (-EAGAIN and -GARUDA_E_TIMEOUT, "not
 *    yet", included), and every call that fails, garuda_host_stream_*() included,
 *    leaves here its own words, or "" when it has none: never an older failure's;
 *  - a call that succeeds leaves the text as it was, except the connects: "" after a
 *    successful garuda_connect*(). Calls that return no code (garuda_stream_free(),
 *    garuda_disconnect(), the getters) and garuda_segment_numa_node()'s -1 ("any
 *    node") never touch it.
 * The failures with words: garuda_connect*() (the socket path, how it was chosen, what
 * went wrong and what to do); garuda_segment_open() refused -EINVAL (an unknown
 * backend: the known ones; lines out of range) or whose backend failed (e.g.
 * -GARUDA_E_NO_DRIVER: which library, and GARUDA_CUDA_LIBRARY / GARUDA_HIP_LIBRARY to
 * point at another); garuda_stream_new() refused -ENOSPC (the segment's size, and what
 * to do); garuda_stream_wait() refused -EINVAL (a sequence 0, or one not signalled
 * yet); garuda_stream_set_plan() refused -GARUDA_E_BAD_PLAN (garuda_plan_message()'s
 * text); and a request garudad refused with words (a quota's key, limit and usage; an
 * arm refused, reported by the next garuda_stream_signal()). Never NULL; the text is
 * the thread's own, and changes with its next failure or connect. */
const char *garuda_last_error(void);

/* Stop the background thread, free every stream and close every segment still open
 * on the client (as garuda_stream_free() and garuda_segment_close() do), close the
 * connection and free the client. Pointers to those streams and segments become
 * invalid. NULL is a no-op. Must not race with any other call on the client or its
 * streams and segments, and must not be called from a callback. */
void garuda_disconnect(struct garuda_client *c);

/* 1 while the client has a working session with garudad, 0 while it is reconnecting
 * (waits then poll the words). Thread-safe. -EINVAL if c is NULL. */
int garuda_client_connected(const struct garuda_client *c);

/* The session id garudad gave the current connection (changes on reconnect), or 0
 * while disconnected. Thread-safe. */
uint64_t garuda_client_session(const struct garuda_client *c);

/* Ask garudad about this client's own session (a client may query nothing else):
 * writes one NUL-terminated JSON object into buf (at most len bytes; 544 always fits)
 * with "version" and the keys of docs/protocol.md §4.14 (id, pid, uid, segments,
 * bindings, armed, arms, completions, errors, outbox_bytes, overflow), and, last, the
 * client's own "stray_errors": asynchronous errors garudad sent for an arm that no live
 * stream of this client signalled (an arm of a freed stream), dropped and counted.
 * Returns the JSON's length, -EINVAL, -ENOBUFS (buf too small),
 * -GARUDA_E_DISCONNECTED (no session right now), -GARUDA_E_TIMEOUT. Thread-safe. */
int garuda_client_query(struct garuda_client *c, char *buf, size_t len);

/* The client's coded warning: 0 when there is none, else its registry code, positive:
 * GARUDA_E_FALLBACK_REACTOR while a GARUDA_FALLBACK=reactor client runs without
 * garudad. buf (len bytes, NUL-terminated; may be NULL when len is 0) gets its text,
 * "requested: ...; unavailable: ...; running: ..." ("" when none). Cleared when a
 * session with garudad is up again. Returns the code, or -EINVAL (c NULL, buf NULL with
 * len > 0). Thread-safe. */
int garuda_client_warning(const struct garuda_client *c, char *buf, size_t len);

/* Number of successful reconnections since garuda_connect() (a fallback client's
 * first session counts as one). Thread-safe. */
uint64_t garuda_client_reconnects(const struct garuda_client *c);

/* A file descriptor that becomes readable when garuda_dispatch() has callbacks to run.
 * It stays the same for the life of the client, across reconnections; put it in
 * epoll/poll/io_uring for POLLIN and call garuda_dispatch() when it fires. Do not read,
 * write or close it. Returns the fd, or -EINVAL if c is NULL. Thread-safe. */
int garuda_client_fd(const struct garuda_client *c);

/* Run the callbacks of message-form streams (garuda_stream_set_callback()) whose words
 * advanced, and clear garuda_client_fd()'s readiness. Never blocks on the daemon.
 * Callbacks run on the calling thread, one at a time. Returns the number of callbacks
 * run (>= 0), -EINVAL (c NULL), or -GARUDA_E_BUSY when called from inside a callback.
 * Thread-safe: concurrent callers take turns. */
int garuda_dispatch(struct garuda_client *c);

/* ------------------------------------------------------------------------------
 * Segments: words in shared memory, registered with a backend device
 */

/* Open backend `backend` ("host", "cuda" or "hip") for device ordinal `device`, ask
 * garudad for a segment of `lines` lines (8 words each; one stream uses one word)
 * on the device's NUMA node, map it, and register the mapping with the device.
 * Errors: -EINVAL (c, backend or out NULL, unknown backend name, lines 0 or above
 * 65536), the backend's errors (-GARUDA_E_NO_DRIVER, -GARUDA_E_DRIVER_TOO_OLD,
 * -GARUDA_E_UNSUPPORTED, -GARUDA_E_REGISTER_FAILED, -ENODEV...), the daemon's
 * (-GARUDA_E_QUOTA: too many segments or lines; -GARUDA_E_NO_MEMLOCK),
 * -GARUDA_E_DISCONNECTED (no session right now: retry later), -GARUDA_E_PROTOCOL (the
 * daemon's segment does not match what was asked), -ENOMEM, or a negative errno from
 * mmap(). Thread-safe. */
int garuda_segment_open(struct garuda_client *c, const char *backend, int device, uint32_t lines,
			struct garuda_seg **out);

/* Close a segment: tell garudad, unregister it from the device, unmap it, close the
 * backend. Fails with -GARUDA_E_BUSY (nothing done) while streams of the segment are
 * alive, and while a store a freed stream signalled has not landed yet (its native
 * stream would write into the unmapped segment): synchronize or free the native
 * stream (garuda_host_stream_free() lets queued stores finish) and close again. NULL is a no-op (0). Must not race with other calls on the segment or its
 * streams. */
int garuda_segment_close(struct garuda_seg *seg);

/* The NUMA node the segment was placed for (-1: any). Thread-safe. */
int garuda_segment_numa_node(const struct garuda_seg *seg);

/* Words of the segment not used by a stream. Thread-safe. */
uint32_t garuda_segment_free_words(const struct garuda_seg *seg);

/* The segment's doorbell, for a program that waits on it itself (io_uring's
 * IORING_OP_FUTEX_WAIT, futex(2), futex_waitv(2)) instead of in garuda_stream_wait():
 * *word gets the address of the 32-bit futex word garudad bumps (+1, wrapping) and
 * wakes for every DOORBELL-form readiness of the segment's streams; it is in shared
 * memory, so wait without FUTEX_PRIVATE_FLAG / FUTEX2_PRIVATE. *value gets its value
 * now (an acquire load). The rule that misses no ring: take *value, then check your
 * streams (garuda_stream_drain(), garuda_stream_reached()), then wait while the word
 * still holds *value; a wait that finds it changed returns at once (EAGAIN); after
 * any return take the value again. docs/client.md, "io_uring".
 * Errors: -EINVAL (seg, word or value NULL). Thread-safe. */
int garuda_segment_doorbell(const struct garuda_seg *seg, uint32_t **word, uint32_t *value);

/* ------------------------------------------------------------------------------
 * Streams: one word signalled by one native stream
 */

/* Create a stream on a free word of seg, signalled through `native`: a CUstream for
 * "cuda", a hipStream_t for "hip", a struct garuda_host_stream * for "host" (or NULL
 * on "host": signals then store immediately from the calling thread, for CPU
 * producers). `form` is the stream's readiness form. The word starts at 0; the first
 * signal stores 1. Defaults: spin 20 us, backstop 1 ms (garuda_stream_set_wait()).
 * Errors: -EINVAL (seg or out NULL, bad form), -ENOSPC (no free word in seg),
 * -GARUDA_E_QUOTA (too many eventfd bindings), -ENOMEM, a negative errno from
 * eventfd(). A stream may be created while the client is reconnecting; it is
 * presented to garudad when the session is back. Thread-safe. */
int garuda_stream_new(struct garuda_seg *seg, void *native, enum garuda_readiness form,
		      struct garuda_stream **out);

/* Forget the stream: disarm what is still outstanding, drop its eventfd binding,
 * close its eventfd, and return its word to the segment (a word whose last signalled
 * store has not landed yet is not reused: a late store must not disturb another
 * stream). NULL is a no-op. Must not race with other calls on the same stream; may be
 * called from a callback (also for the stream whose callback is running). */
void garuda_stream_free(struct garuda_stream *s);

/* Set the wait plan: spin on the word for spin_ns (0: no spin) before blocking, and
 * query the native stream every backstop_ns while blocked (at least 10 us, capped to
 * one hour; after the wait's first backstop_ns x 32, every 1/32 of its age: only that
 * growth stops at 524 ms, a larger backstop_ns is used as it is: docs/client.md).
 * Errors: -EINVAL (s NULL, backstop_ns < 10000). */
int garuda_stream_set_wait(struct garuda_stream *s, uint64_t spin_ns, uint64_t backstop_ns);

/* Set the wait plan from its text (docs/plans.md gives the grammar):
 *   block                       the backend's synchronize (the host backend drains the
 *                               host stream; backends without one, and waits with a
 *                               finite timeout, poll with queries instead);
 *   poll                        poll the word and query the native stream, no readiness;
 *   flag:park_us=P,backstop_us=B  park on the readiness form, query the native stream
 *                               every B us (at least 10 us); P is garudad's spin
 *                               window (docs/plans.md), not read by a stream's wait;
 *   ...+predict:margin_us=M,min_sleep_us=m,max_sleep_us=X,window=W
 *                               (poll or flag) sleep until M us before the completion
 *                               the stream's estimator predicts, then spin on the word
 *                               (at most max(X, 2M) us) before the kind's wait.
 * The estimator's point is the stream: a spin that was running when the word reached
 * the sequence records an exact residual (completion - wait start), a sleep that
 * wakes to find it reached records a censored one; garuda_stream_stats() shows both.
 * Setting a plan resets the estimator and set_wait's spin (plans have none).
 * Errors: -EINVAL (s or text NULL), -GARUDA_E_BAD_PLAN (text refused; the stream
 * keeps its plan; garuda_plan_message() gives the offending key). Must not race with
 * waits on the stream. garuda_stream_set_wait(s, spin, backstop) is shorthand for
 * flag:park_us=10000,backstop_us=B (B = backstop in us, at most 1000000; the stream
 * keeps the exact backstop) plus a spin of spin_ns before the first park. New streams
 * get GARUDA_WAIT_PLAN's plan when it was set at garuda_connect(), else
 * garuda_stream_set_wait(s, 20000, 1000000). */
int garuda_stream_set_plan(struct garuda_stream *s, const char *text);

/* Print the stream's plan text (as set_plan accepts it) into buf (cap bytes,
 * NUL-terminated). Returns its length, -EINVAL (s or buf NULL), -ENOSPC (cap too
 * small; 192 always suffices). Thread-safe. */
int garuda_stream_get_plan(struct garuda_stream *s, char *buf, size_t cap);

/* Why the last refused plan text (garuda_stream_set_plan, GARUDA_WAIT_PLAN) of this
 * thread was refused, starting with the offending key; "" when none was. */
const char *garuda_plan_message(void);

/* What a stream's waits did since its plan was last set. */
struct garuda_stream_stats {
	uint64_t exact;         /* exact residuals recorded (+predict) */
	uint64_t censored;      /* censored residuals recorded (+predict) */
	uint64_t sleeps;        /* +predict waits that slept before spinning */
	uint64_t spin_outs;     /* +predict spins that ran out before the word moved */
	uint64_t prediction_ns; /* the estimator's prediction, 0: none (or no +predict) */
	uint64_t sleep_ns;      /* what the next wait would sleep, 0: none */
};

/* Fill *out. Errors: -EINVAL (s or out NULL). Thread-safe. */
int garuda_stream_stats(struct garuda_stream *s, struct garuda_stream_stats *out);

/* Callback for message-form streams: all sequences up to and including `seq` have
 * completed. Every signalled sequence is covered by exactly one callback (callbacks
 * coalesce: one call may cover several sequences). */
typedef void (*garuda_stream_cb)(struct garuda_stream *s, uint64_t seq, void *user);

/* Call cb(s, seq, user) from garuda_dispatch() when the word advances. cb NULL removes
 * it. Errors: -EINVAL (s NULL), -EOPNOTSUPP (stream's form is not MESSAGE). */
int garuda_stream_set_callback(struct garuda_stream *s, garuda_stream_cb cb, void *user);

/* Enqueue on the native stream, behind everything already queued there, a store of
 * the next sequence number into the stream's word; arm it with garudad (no round
 * trip); *seq gets the sequence. While the client reconnects, the store is enqueued
 * and the arm is sent when the session is back.
 * Errors: -EINVAL (s or seq NULL), the backend's enqueue errors (-GARUDA_E_STREAM_FAULT
 * on a faulted stream, -EAGAIN on a full non-blocking host stream...), or
 * -GARUDA_E_QUOTA / another daemon code when garudad refused an earlier arm of this
 * stream (reported once, garudad's words in garuda_last_error(); this call enqueued
 * nothing). A refused arm still ends in the stream's readiness form: the refusal makes
 * the stream ready at once, and libgaruda watches its word from then on and makes it
 * ready again when it moves (docs/client.md, "A refused arm never ends in silence"). */
int garuda_stream_signal(struct garuda_stream *s, uint64_t *seq);

/* The sequence the last garuda_stream_signal() returned (0 before the first). */
uint64_t garuda_stream_last(const struct garuda_stream *s);

/* The word's current value (acquire load): every sequence up to it has completed.
 * Thread-safe, never blocks. */
uint64_t garuda_stream_value(const struct garuda_stream *s);

/* true when the word has reached seq (wrapping order). Thread-safe, never blocks. */
bool garuda_stream_reached(const struct garuda_stream *s, uint64_t seq);

/* Wait until the word reaches seq, as the stream's plan says (garuda_stream_set_plan:
 * by default spin, then block on the readiness form, polling while garudad is away),
 * querying the native stream every backstop interval.
 * timeout_ns < 0 waits without limit; 0 only checks. Returns 0 as soon as an acquire
 * load sees the word at seq, whatever readiness says.
 * Errors: -EINVAL (s NULL, seq 0 or not yet signalled), -GARUDA_E_TIMEOUT,
 * -GARUDA_E_STREAM_FAULT (the native stream failed: the store will never come).
 * Consumes the stream's eventfd counts (eventfd form). */
int garuda_stream_wait(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns);

/* The stream's eventfd (non-blocking, close-on-exec): readable after a signalled
 * sequence completes, or once after its native stream faulted with work outstanding
 * (the client's fault watch: docs/client.md, "A fault never ends in silence"), and,
 * spuriously, after a reconnection or an overflow: check with garuda_stream_drain(). Owned by the stream: do not close it. Stays the same
 * across reconnections. Errors: -EINVAL (s NULL), -EOPNOTSUPP (form is not EVENTFD). */
int garuda_stream_fd(const struct garuda_stream *s);

/* Clear the eventfd's readiness (eventfd form; other forms: nothing to clear) and
 * report progress: *seq (may be NULL) gets the word's value; returns 1 when it moved
 * since the previous garuda_stream_drain() (every sequence in between completed and is
 * reported exactly once this way), 0 when not. Errors: -EINVAL (s NULL);
 * -GARUDA_E_STREAM_FAULT once the fault watch found the native stream faulted with the
 * word behind the last signal (the eventfd cleared and *seq set first; sticky). */
int garuda_stream_drain(struct garuda_stream *s, uint64_t *seq);

/* Ask the backend about the native stream: 0 all queued work finished, -EAGAIN still
 * running, -GARUDA_E_STREAM_FAULT failed (also once the fault watch marked it faulted
 * with the word behind). (The wait backstop does this itself.) */
int garuda_stream_query(struct garuda_stream *s);

/* Host streams, the CPU as a device (backend "host"): garuda_host_stream_*(), declared
 * in <garuda/host.h>. Pass one as `native` to garuda_stream_new() on a "host" segment. */
#include <garuda/host.h>

#ifdef __cplusplus
}
#endif

#endif /* GARUDA_GARUDA_H */
