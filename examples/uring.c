/* uring.c — a server loop on io_uring that waits on GPU streams in the same ring as its
 * other I/O (here a periodic timeout standing in for sockets), written against the
 * public header and liburing only.
 *
 * Three streams; each keeps two sequences in flight until it has completed N. The ring
 * waits on them one of two ways (docs/client.md, "io_uring"):
 *   - doorbell: DOORBELL-form streams and one IORING_OP_FUTEX_WAIT (Linux 6.7) on the
 *     segment's doorbell word: no eventfd, no thread, and garudad writes no eventfd;
 *   - eventfd (the fallback, where IORING_REGISTER_PROBE says the kernel lacks the
 *     opcode): EVENTFD-form streams and one IORING_OP_READ per stream's eventfd.
 * Either way a wake only says "look": completions are taken from the words with
 * garuda_stream_drain(), each sequence reported exactly once.
 *
 *   GARUDA_SOCKET=/path/to/garuda.sock ./uring [sequences_per_stream] [--eventfd]
 *
 * --eventfd (or URING_NO_FUTEX=1, as the tests do) takes the fallback as if the probe
 * had said no. Prints the way it waited; exit status 0 when every signalled sequence
 * was reported exactly once.
 */
#include <errno.h>
#include <garuda/garuda.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTREAMS  3
#define IN_FLIGHT 2
#define KERNEL_NS 300000ull /* each simulated kernel: 300 us */

#include "uring_futex.h" /* the futex wait's SQE for liburing 2.3 */

enum {
	TAG_TICK = 1,
	TAG_BELL = 2,
	TAG_EFD = 16
}; /* TAG_EFD + stream index */

/* the probe, unless URING_NO_FUTEX asks for the fallback (the tests) */
static bool futex_wait_supported(struct io_uring *ring)
{
	const char *no = getenv("URING_NO_FUTEX");
	if (no && *no && strcmp(no, "0") != 0)
		return false;
	return uring_futex_wait_supported(ring);
}

static int fail(const char *what, int r)
{
	/* garuda_strerror() words errno values too, and garuda's codes (-GARUDA_E_QUOTA:
	 * strerror said "Unknown error 1016") */
	fprintf(stderr, "uring: %s: %s\n", what, garuda_strerror(r < 0 ? r : -r));
	return 1;
}

struct server {
	struct io_uring ring;
	struct garuda_stream *stream[NSTREAMS];
	struct garuda_host_stream *gpu[NSTREAMS];
	uint64_t reported[NSTREAMS], signalled[NSTREAMS];
	uint64_t want, done;
	uint64_t efd_buf[NSTREAMS];
	struct garuda_seg *seg;
	bool doorbell;
};

static struct io_uring_sqe *sqe_of(struct server *sv)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sv->ring);
	if (!sqe) { /* full: hand what is queued to the kernel first */
		io_uring_submit(&sv->ring);
		sqe = io_uring_get_sqe(&sv->ring);
	}
	return sqe;
}

/* one more simulated kernel and a signal behind it, while the stream wants more */
static int launch(struct server *sv, int i)
{
	if (sv->signalled[i] >= sv->want)
		return 0;
	int r = garuda_host_stream_enqueue_work(sv->gpu[i], KERNEL_NS);
	uint64_t seq;
	if (r >= 0)
		r = garuda_stream_signal(sv->stream[i], &seq);
	if (r >= 0)
		sv->signalled[i] = seq;
	return r < 0 ? r : 0;
}

/* take what stream i completed from its word; keep IN_FLIGHT sequences queued */
static int take(struct server *sv, int i)
{
	uint64_t upto;
	int r = garuda_stream_drain(sv->stream[i], &upto);
	if (r <= 0)
		return r;
	if (upto <= sv->reported[i] || upto > sv->signalled[i]) {
		fprintf(stderr, "uring: stream %d reported %llu after %llu (signalled %llu)\n", i,
			(unsigned long long)upto, (unsigned long long)sv->reported[i],
			(unsigned long long)sv->signalled[i]);
		return -EPROTO;
	}
	sv->done += upto - sv->reported[i];
	sv->reported[i] = upto;
	while (sv->signalled[i] - sv->reported[i] < IN_FLIGHT && sv->signalled[i] < sv->want)
		if ((r = launch(sv, i)) < 0)
			return r;
	return 0;
}

/* the wait for readiness: the doorbell's futex (value taken before the streams are
 * looked at: a bump after it fails the wait at once, no ring is missed), or a read of
 * stream i's eventfd */
static int rearm(struct server *sv, int i)
{
	struct io_uring_sqe *sqe = sqe_of(sv);
	if (!sqe)
		return -EBUSY;
	if (sv->doorbell) {
		uint32_t *bell, value;
		int r = garuda_segment_doorbell(sv->seg, &bell, &value);
		for (int k = 0; k < NSTREAMS && r >= 0; k++)
			r = take(sv, k);
		if (r < 0)
			return r;
		uring_prep_futex_wait(sqe, bell, value);
		io_uring_sqe_set_data64(sqe, TAG_BELL);
	} else {
		io_uring_prep_read(sqe, garuda_stream_fd(sv->stream[i]), &sv->efd_buf[i],
				   sizeof(sv->efd_buf[i]), 0);
		io_uring_sqe_set_data64(sqe, TAG_EFD + (uint64_t)i);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct server sv = { .want = 50 };
	bool force_efd = false;
	for (int a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--eventfd") == 0)
			force_efd = true;
		else
			sv.want = strtoull(argv[a], NULL, 10);
	}
	if (sv.want == 0)
		return fail("arguments", -EINVAL);
	int r = io_uring_queue_init(16, &sv.ring, 0);
	if (r < 0)
		return fail("io_uring_queue_init", r);
	sv.doorbell = !force_efd && futex_wait_supported(&sv.ring);
	printf("uring: waiting %s\n",
	       sv.doorbell ? "on the segment's doorbell with IORING_OP_FUTEX_WAIT"
	       : force_efd
		       ? "on the streams' eventfds with IORING_OP_READ (asked)"
		       : "on the streams' eventfds with IORING_OP_READ (the probe says this kernel "
			 "has no IORING_OP_FUTEX_WAIT: Linux 6.7 or later has it)");

	struct garuda_client *client;
	if ((r = garuda_connect(&client)) < 0) {
		fprintf(stderr, "uring: %s\n", garuda_last_error());
		return 1;
	}
	if ((r = garuda_segment_open(client, "host", 0, 1, &sv.seg)) < 0)
		return fail("segment", r);
	enum garuda_readiness form =
		sv.doorbell ? GARUDA_READINESS_DOORBELL : GARUDA_READINESS_EVENTFD;
	for (int i = 0; i < NSTREAMS; i++) {
		if ((r = garuda_host_stream_new(NULL, &sv.gpu[i])) < 0)
			return fail("host stream", r);
		if ((r = garuda_stream_new(sv.seg, sv.gpu[i], form, &sv.stream[i])) < 0)
			return fail("stream", r);
		for (int k = 0; k < IN_FLIGHT; k++)
			if ((r = launch(&sv, i)) < 0)
				return fail("signal", r);
	}

	/* the other I/O of the ring: a tick every 10 ms */
	struct __kernel_timespec tick = { .tv_nsec = 10000000 };
	struct io_uring_sqe *sqe = sqe_of(&sv);
	io_uring_prep_timeout(sqe, &tick, 0, 0);
	io_uring_sqe_set_data64(sqe, TAG_TICK);
	for (int i = 0; i < (sv.doorbell ? 1 : NSTREAMS); i++)
		if ((r = rearm(&sv, i)) < 0)
			return fail("rearm", r);

	uint64_t ticks = 0, wakes = 0, total = sv.want * NSTREAMS;
	while (sv.done < total) {
		struct io_uring_cqe *cqe;
		io_uring_submit(&sv.ring);
		if ((r = io_uring_wait_cqe(&sv.ring, &cqe)) < 0)
			return fail("io_uring_wait_cqe", r);
		uint64_t tag = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&sv.ring, cqe);
		if (tag == TAG_TICK) {
			ticks++;
			if (res != -ETIME)
				return fail("timeout", res);
			sqe = sqe_of(&sv);
			io_uring_prep_timeout(sqe, &tick, 0, 0);
			io_uring_sqe_set_data64(sqe, TAG_TICK);
			continue;
		}
		wakes++;
		if (tag == TAG_BELL) {
			if (res < 0 && res != -EAGAIN && res != -EINTR)
				return fail("IORING_OP_FUTEX_WAIT", res);
			if ((r = rearm(&sv, 0)) < 0) /* takes every stream's progress first */
				return fail("rearm", r);
		} else {
			int i = (int)(tag - TAG_EFD);
			if (res < 0 && res != -EAGAIN)
				return fail("eventfd read", res);
			if ((r = take(&sv, i)) < 0 || (r = rearm(&sv, i)) < 0)
				return fail("rearm", r);
		}
	}
	printf("uring: %llu sequences on %d streams, reported once each; %llu wakes, %llu ticks\n",
	       (unsigned long long)sv.done, NSTREAMS, (unsigned long long)wakes,
	       (unsigned long long)ticks);
	io_uring_queue_exit(&sv.ring); /* cancels the waits still queued */
	for (int i = 0; i < NSTREAMS; i++) {
		garuda_stream_free(sv.stream[i]);
		garuda_host_stream_free(sv.gpu[i]);
	}
	garuda_segment_close(sv.seg);
	garuda_disconnect(client);
	return 0;
}
