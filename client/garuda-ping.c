/* garuda-ping.c — the client path, checked end to end on a node or in a pod: connect
 * to garudad as any libgaruda program does, open a host segment and an eventfd stream,
 * store a sequence behind a short simulated kernel, and wait for garudad's readiness
 * on the stream's eventfd (poll), COUNT times. Prints the socket it used (and how it
 * was chosen) and each wake's latency, store -> wake.
 *
 *   garuda-ping [--socket=PATH] [-n COUNT] [--json]
 *
 * Built against libgaruda's public header only, as a user's program is (garctl never
 * links libgaruda). Promises: exit 0 only when every wait was woken through garudad
 * (GARUDA_FALLBACK is forced to strict: no in-process reactor stands in for it); 1 on
 * any failure, with libgaruda's words (a failed connect: which socket and what to do,
 * as examples/minimal.c prints them); 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <garuda/garuda.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define KERNEL_NS 1000000ull /* the simulated kernel before each store: the arm is in first */
#define WAIT_MS 10000        /* one wake, at most */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what, int r)
{
	fprintf(stderr, "garuda-ping: %s: %s\n", what, garuda_strerror(r));
	return 1;
}

/* Whether something listens at path (a raw connect, closed at once). */
static bool answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EACCES;
	close(fd);
	return ok;
}

/* The socket garuda_connect() used, by the search garuda.h documents: $GARUDA_SOCKET;
 * not root, your own garudad's $XDG_RUNTIME_DIR/garuda/garuda.sock where it exists
 * (and answers: a stale one is passed over); GARUDA_DEFAULT_SOCKET. */
static const char *searched_socket(char *buf, size_t len)
{
	const char *env = getenv("GARUDA_SOCKET"), *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return "$GARUDA_SOCKET";
	}
	if (geteuid() != 0 && x && x[0] == '/') {
		snprintf(buf, len, "%s/garuda/garuda.sock", x);
		if (stat(buf, &st) == 0 && answers(buf))
			return "your own garudad in $XDG_RUNTIME_DIR/garuda";
	}
	snprintf(buf, len, "%s", GARUDA_DEFAULT_SOCKET);
	return "the system default";
}

/* s as a JSON string's contents (the path may hold any byte but NUL) */
static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* The wakes were garudad's: the same session all along, and garudad counts count
 * completions for it (QUERY). libgaruda makes a wait ready by itself where garudad
 * cannot (it refused the arm: a quota; it went away), so a wake alone proves nothing;
 * a refusal would be reported only by a next signal, which the last ping has not. */
static int check_delivered(struct garuda_client *client, uint64_t session, long count)
{
	if (garuda_client_session(client) != session) {
		fprintf(stderr, "garuda-ping: garudad's session %llu ended during the run (garudad "
				"restarted or closed it); see garctl status and garudad's log\n",
			(unsigned long long)session);
		return 1;
	}
	char q[1024];
	int r = garuda_client_query(client, q, sizeof(q));
	if (r < 0)
		return fail("query", r);
	const char *c = strstr(q, "\"completions\":");
	unsigned long long done = c ? strtoull(c + strlen("\"completions\":"), NULL, 10) : 0;
	if (!c || done < (unsigned long long)count) {
		fprintf(stderr, "garuda-ping: garudad completed %llu of the %ld wait(s): libgaruda "
				"woke the rest by itself (garudad refused an arm: a quota? see garctl "
				"status and garudad's log)\n", done, count);
		return 1;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One sequence: a kernel, a stamp ("the store is next"), the store; then poll the
 * stream's eventfd until garudad's readiness shows the word at the sequence. */
static int ping_once(struct garuda_host_stream *gpu, struct garuda_stream *stream, uint64_t *wake_ns)
{
	uint64_t stamp = 0, seq;
	int r;
	if ((r = garuda_host_stream_enqueue_work(gpu, KERNEL_NS)) < 0 ||
	    (r = garuda_host_stream_enqueue_stamp(gpu, &stamp)) < 0)
		return fail("launch", r);
	if ((r = garuda_stream_signal(stream, &seq)) < 0)
		return fail("signal", r);
	struct pollfd p = { .fd = garuda_stream_fd(stream), .events = POLLIN };
	uint64_t deadline = now_ns() + WAIT_MS * 1000000ull;
	for (;;) {
		uint64_t t = now_ns();
		if (t >= deadline) {
			fprintf(stderr, "garuda-ping: wait: no readiness from garudad within %d s (the word "
					"is %llu, sequence %llu was signalled); see garctl status\n",
				WAIT_MS / 1000, (unsigned long long)garuda_stream_value(stream),
				(unsigned long long)seq);
			return 1;
		}
		int n = poll(&p, 1, (int)((deadline - t + 999999) / 1000000));
		if (n < 0 && errno != EINTR)
			return fail("poll", -errno);
		if (n <= 0)
			continue;
		uint64_t woke = now_ns();
		garuda_stream_drain(stream, NULL);
		/* a spurious wake (a reconnection) is followed by the real one */
		if (garuda_stream_reached(stream, seq)) {
			uint64_t landed = __atomic_load_n(&stamp, __ATOMIC_ACQUIRE);
			*wake_ns = woke > landed ? woke - landed : 0;
			return 0;
		}
	}
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: garuda-ping [--socket=PATH] [-n COUNT] [--json]\n"
		   "Wait on one host stream through garudad COUNT times (default 3) and print the\n"
		   "socket used and each wake's latency (store -> wake).\n\n"
		   "  -s, --socket=PATH  garudad's client socket (default: $GARUDA_SOCKET; else, not\n"
		   "                     root, $XDG_RUNTIME_DIR/garuda/garuda.sock if it exists;\n"
		   "                     else " GARUDA_DEFAULT_SOCKET ")\n"
		   "  -n, --count=COUNT  waits to complete, 1 to 100000 (default 3)\n"
		   "  -j, --json         one JSON object instead of lines\n"
		   "  -h, --help         this help\n\n"
		   "Exit status: 0 every wait woken through garudad, 1 a failure (the message\n"
		   "says what and what to do), 2 usage. See garuda-ping(1).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "count", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },         { "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *given = NULL;
	long count = 3;
	bool json = false;
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, ":s:n:jh", opts, NULL)) != -1) {
		char *end;
		switch (o) {
		case 's':
			given = optarg;
			break;
		case 'n':
			count = strtol(optarg, &end, 10);
			if (!*optarg || *end || count < 1 || count > 100000) {
				fprintf(stderr, "garuda-ping: --count: a number from 1 to 100000, not \"%s\"\n"
						"Try 'garuda-ping --help'.\n", optarg);
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "garuda-ping: %s %s\nTry 'garuda-ping --help'.\n",
				o == ':' ? "option needs an argument:" : "unknown option", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "garuda-ping: unexpected argument \"%s\"\nTry 'garuda-ping --help'.\n", argv[optind]);
		return 2;
	}

	setenv("GARUDA_FALLBACK", "strict", 1); /* garudad or nothing: this checks garudad */
	struct garuda_client *client;
	struct garuda_seg *seg;
	struct garuda_host_stream *gpu;
	struct garuda_stream *stream;
	char path[4096];
	const char *why = "--socket";
	int r = given ? garuda_connect_to(given, &client) : garuda_connect(&client);
	if (r < 0) {
		fprintf(stderr, "garuda-ping: %s\n", garuda_last_error()); /* which socket, what to do */
		return 1;
	}
	if (given)
		snprintf(path, sizeof(path), "%s", given);
	else
		why = searched_socket(path, sizeof(path));
	uint64_t session = garuda_client_session(client);
	if ((r = garuda_segment_open(client, "host", 0, 1, &seg)) < 0) {
		garuda_disconnect(client);
		return fail("segment", r);
	}
	if ((r = garuda_host_stream_new(NULL, &gpu)) < 0) {
		garuda_disconnect(client);
		return fail("host stream", r);
	}
	if ((r = garuda_stream_new(seg, gpu, GARUDA_READINESS_EVENTFD, &stream)) < 0) {
		garuda_host_stream_free(gpu);
		garuda_disconnect(client);
		return fail("stream", r);
	}
	if (!json)
		printf("garuda-ping: garudad at %s (%s), session %llu\n", path, why, (unsigned long long)session);
	uint64_t *wake = calloc((size_t)count, sizeof(*wake));
	int rc = wake ? 0 : fail("memory", -ENOMEM);
	for (long i = 0; i < count && rc == 0; i++) {
		rc = ping_once(gpu, stream, &wake[i]);
		if (rc == 0 && !json)
			printf("sequence %ld: store -> wake %.1f us\n", i + 1, wake[i] / 1000.0);
	}
	if (rc == 0)
		rc = check_delivered(client, session, count);
	garuda_stream_free(stream);
	garuda_host_stream_free(gpu);
	garuda_disconnect(client); /* closes the segment */
	if (rc) {
		free(wake);
		return rc;
	}
	qsort(wake, (size_t)count, sizeof(*wake), cmp_u64);
	double lo = wake[0] / 1000.0, p50 = wake[(count - 1) / 2] / 1000.0, hi = wake[count - 1] / 1000.0;
	if (json) {
		printf("{\"socket\":");
		json_str(path);
		printf(",\"socket_from\":");
		json_str(why);
		printf(",\"session\":%llu,\"count\":%ld,\"wake_us\":{\"min\":%.1f,\"p50\":%.1f,\"max\":%.1f}}\n",
		       (unsigned long long)session, count, lo, p50, hi);
	} else {
		printf("%ld wait(s) woken through garudad: store -> wake min %.1f us, p50 %.1f us, max %.1f us\n",
		       count, lo, p50, hi);
	}
	free(wake);
	return fflush(stdout) == 0 ? 0 : 1;
}
