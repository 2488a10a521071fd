/* minimal.c — the smallest libgaruda program: connect to garudad, make a stream on the
 * host backend (a CPU thread that stands in for a GPU stream), queue a simulated
 * kernel, signal behind it, and wait for it.
 *
 *   GARUDA_SOCKET=/path/to/garuda.sock ./minimal [kernel_us]
 *
 * With a GPU, the same program opens a "cuda" segment and passes its CUstream instead
 * of the host stream. Exit status 0 on success.
 */
#include <garuda/garuda.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, int r)
{
	fprintf(stderr, "minimal: %s: %s\n", what, garuda_strerror(r));
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t kernel_ns = (argc > 1 ? strtoull(argv[1], NULL, 10) : 1000) * 1000;
	struct garuda_client *client;
	struct garuda_seg *seg;
	struct garuda_host_stream *gpu; /* stands in for a CUstream */
	struct garuda_stream *stream;
	uint64_t seq;
	int r;

	if ((r = garuda_connect(&client)) < 0) { /* $GARUDA_SOCKET, your own garudad, or the system's */
		fprintf(stderr, "minimal: %s\n", garuda_last_error()); /* which socket, what to do */
		return 1;
	}
	if ((r = garuda_segment_open(client, "host", 0, 1, &seg)) < 0)
		return fail("segment", r);
	if ((r = garuda_host_stream_new(NULL, &gpu)) < 0)
		return fail("host stream", r);
	if ((r = garuda_stream_new(seg, gpu, GARUDA_READINESS_EVENTFD, &stream)) < 0)
		return fail("stream", r);

	/* "launch a kernel", then ask for a signal behind it */
	if ((r = garuda_host_stream_enqueue_work(gpu, kernel_ns)) < 0)
		return fail("launch", r);
	if ((r = garuda_stream_signal(stream, &seq)) < 0)
		return fail("signal", r);

	r = garuda_stream_wait(stream, seq, 10ll * 1000 * 1000 * 1000);
	if (r < 0)
		return fail("wait", r);
	printf("sequence %llu completed (word = %llu)\n", (unsigned long long)seq,
	       (unsigned long long)garuda_stream_value(stream));

	garuda_stream_free(stream);
	garuda_host_stream_free(gpu);
	garuda_segment_close(seg);
	garuda_disconnect(client);
	return 0;
}
