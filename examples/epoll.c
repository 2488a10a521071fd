/* epoll.c — an event loop over several streams' eventfds: GPU completion next to any
 * other fd. Each stream gets a few simulated kernels of different lengths with a
 * signal behind each; the loop reports completions as they come, from the words.
 *
 *   GARUDA_SOCKET=/path/to/garuda.sock ./epoll [streams] [signals_per_stream]
 *
 * Exit status 0 when every signalled sequence was reported exactly once.
 */
#include <errno.h>
#include <garuda/garuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#define MAX_STREAMS 64

static int fail(const char *what, int r)
{
	fprintf(stderr, "epoll: %s: %s\n", what, garuda_strerror(r));
	return 1;
}

int main(int argc, char **argv)
{
	int nstreams = argc > 1 ? atoi(argv[1]) : 4;
	int nsignals = argc > 2 ? atoi(argv[2]) : 8;
	if (nstreams < 1 || nstreams > MAX_STREAMS || nsignals < 1)
		return fail("arguments", -EINVAL);

	struct garuda_client *client;
	struct garuda_seg *seg;
	struct garuda_host_stream *gpu[MAX_STREAMS];
	struct garuda_stream *stream[MAX_STREAMS];
	uint64_t seen[MAX_STREAMS] = { 0 }, last[MAX_STREAMS] = { 0 };
	int r;

	if ((r = garuda_connect(&client)) < 0) { /* $GARUDA_SOCKET, your own garudad, or the system's */
		fprintf(stderr, "epoll: %s\n", garuda_last_error()); /* which socket, what to do */
		return 1;
	}
	/* one line holds 8 words */
	if ((r = garuda_segment_open(client, "host", 0, (uint32_t)(nstreams + 7) / 8, &seg)) < 0)
		return fail("segment", r);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return fail("epoll_create1", -errno);
	for (int i = 0; i < nstreams; i++) {
		if ((r = garuda_host_stream_new(NULL, &gpu[i])) < 0)
			return fail("host stream", r);
		if ((r = garuda_stream_new(seg, gpu[i], GARUDA_READINESS_EVENTFD, &stream[i])) < 0)
			return fail("stream", r);
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, garuda_stream_fd(stream[i]), &ev) < 0)
			return fail("epoll_ctl", -errno);
	}

	/* queue everything up front: kernel lengths differ per stream */
	for (int k = 0; k < nsignals; k++) {
		for (int i = 0; i < nstreams; i++) {
			garuda_host_stream_enqueue_work(gpu[i], (uint64_t)(i + 1) * 200 * 1000);
			if ((r = garuda_stream_signal(stream[i], &last[i])) < 0)
				return fail("signal", r);
		}
	}

	int done = 0;
	uint64_t reported = 0;
	while (done < nstreams) {
		struct epoll_event ev[MAX_STREAMS];
		int n = epoll_wait(ep, ev, MAX_STREAMS, 10000);
		if (n <= 0)
			return fail("epoll_wait", n < 0 ? -errno : -GARUDA_E_TIMEOUT);
		for (int e = 0; e < n; e++) {
			int i = (int)ev[e].data.u32;
			uint64_t now;
			if (garuda_stream_drain(stream[i], &now) != 1)
				continue; /* spurious: nothing new */
			/* every sequence in (seen, now] completed, each reported once here */
			printf("stream %d: sequences %llu..%llu done\n", i,
			       (unsigned long long)seen[i] + 1, (unsigned long long)now);
			reported += now - seen[i];
			seen[i] = now;
			if (now == last[i])
				done++;
		}
	}
	printf("%llu completions from %d streams\n", (unsigned long long)reported, nstreams);

	for (int i = 0; i < nstreams; i++) {
		garuda_stream_free(stream[i]);
		garuda_host_stream_free(gpu[i]);
	}
	close(ep);
	garuda_segment_close(seg);
	garuda_disconnect(client);
	return reported == (uint64_t)nstreams * (uint64_t)nsignals ? 0 : 1;
}
