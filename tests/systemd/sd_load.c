/* sd_load.c — clients that keep work armed across a garudad restart, for the systemd
 * suite (tests/systemd/run.sh runs it inside the test's systemd namespace).
 *
 *   sd_load CLIENTS STREAMS 'DISRUPTION COMMAND'
 *
 * Starts CLIENTS libgaruda clients on $GARUDA_SOCKET. Each opens one host segment with
 * STREAMS streams on one host stream (a simulated GPU stream: 1 ms of "kernel" before
 * every store), a third of them in each readiness form: eventfd (epoll + drain),
 * message (callbacks through garuda_dispatch) and doorbell (garuda_stream_wait with a
 * 60 s backstop, so only the doorbell ends a wait in time). Every stream keeps one
 * sequence signalled and armed; whoever reports a completion signals the next.
 * After a warm-up the program samples each session's armed count (must reach 1,000),
 * runs the disruption command (a SIGKILL, `systemctl restart`, a SIGSTOP for the
 * watchdog), and measures per client, from the command's start: the new session
 * (garuda_client_reconnects becomes 1; session ids restart with a new daemon) and the first readiness the new daemon delivered
 * (garuda_client_query's "completions" > 0). Then it runs on for two seconds, stops
 * signalling and waits (20 s at most) until every signalled sequence was reported
 * through readiness, with no polling sweep of its own.
 * Checked, exit 1 otherwise: every signalled sequence of every stream reported exactly
 * once (none lost, none twice, none beyond what was signalled), each client saw exactly
 * one reconnection and no error, at least 1,000 descriptors armed per client before the
 * disruption (STREAMS/2 when STREAMS < 1,100, for measurements with a light load), readiness from the new daemon, and no fd leaked.
 * Output: one line "gap ..." with the session and first-readiness gaps in ms
 * (min/median/max over clients) and the number of completions checked. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <garuda/garuda.h>

#include "fdcheck.h"

#define WORK_NS 1000000ull
#define SETTLE_MS 20000
#define MIN_ARMED 1000

static atomic_int settling; /* 0: keep signalling; 1: stop, let everything be reported */
static uint64_t settle_deadline_ns;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct cl;

struct st {
	struct cl *cl;
	struct garuda_stream *s;
	enum garuda_readiness form;
	uint64_t sig; /* last signalled */
	uint64_t rep; /* reported up to */
	bool todo;    /* reported up to sig: signal the next one */
};

struct cl {
	int idx;
	struct garuda_client *c;
	struct garuda_seg *seg;
	struct garuda_host_stream *hs;
	struct st *st;
	unsigned n;
	pthread_t main_t, bell_t;
	unsigned *todo; /* main thread's streams to signal again */
	unsigned ntodo;
	atomic_ullong outstanding;
	atomic_ullong reported; /* sequences reported */
	uint64_t t_session, t_ready; /* ns after the disruption started; 0: not yet */
	long long max_armed;
	char err[1536];
	pthread_mutex_t err_lock;
};

static void fail(struct cl *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct cl *cl, const char *fmt, ...)
{
	va_list ap;
	pthread_mutex_lock(&cl->err_lock);
	if (!cl->err[0]) {
		va_start(ap, fmt);
		vsnprintf(cl->err, sizeof(cl->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&cl->err_lock);
}

static int do_signal(struct st *t)
{
	uint64_t seq;
	int r = garuda_host_stream_enqueue_work(t->cl->hs, WORK_NS);
	if (r == 0)
		r = garuda_stream_signal(t->s, &seq);
	if (r < 0) {
		fail(t->cl, "stream %u: signal: %s", (unsigned)(t - t->cl->st), garuda_strerror(r));
		return r;
	}
	if (seq != t->sig + 1) {
		fail(t->cl, "stream %u: signal gave %" PRIu64 " after %" PRIu64, (unsigned)(t - t->cl->st),
		     seq, t->sig);
		return -1;
	}
	t->sig = seq;
	atomic_fetch_add(&t->cl->outstanding, 1);
	return 0;
}

/* `upto` was reported for t: every sequence in (rep, upto] exactly once */
static void report(struct st *t, uint64_t upto)
{
	if (upto <= t->rep)
		fail(t->cl, "stream %u: %" PRIu64 " reported again (already up to %" PRIu64 ")",
		     (unsigned)(t - t->cl->st), upto, t->rep);
	else if (upto > t->sig)
		fail(t->cl, "stream %u: %" PRIu64 " reported, only %" PRIu64 " signalled",
		     (unsigned)(t - t->cl->st), upto, t->sig);
	else {
		atomic_fetch_add(&t->cl->reported, upto - t->rep);
		t->rep = upto;
		if (upto == t->sig) {
			atomic_fetch_sub(&t->cl->outstanding, 1);
			t->todo = true;
		}
	}
}

static void on_ready(struct garuda_stream *s, uint64_t seq, void *user)
{
	struct st *t = user;
	(void)s;
	report(t, seq);
	if (t->todo)
		t->cl->todo[t->cl->ntodo++] = (unsigned)(t - t->cl->st);
}

static bool mine(const struct st *t, bool bell)
{
	return (t->form == GARUDA_READINESS_DOORBELL) == bell;
}

static uint64_t pending(struct cl *cl, bool bell)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < cl->n; i++)
		if (mine(&cl->st[i], bell) && cl->st[i].rep != cl->st[i].sig)
			n++;
	return n;
}

/* eventfd and message streams: epoll over the eventfds and the client's fd */
static void *main_thread(void *arg)
{
	struct cl *cl = arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
	epoll_ctl(ep, EPOLL_CTL_ADD, garuda_client_fd(cl->c), &ev);
	for (unsigned i = 0; i < cl->n; i++) {
		struct st *t = &cl->st[i];
		if (mine(t, true))
			continue;
		if (t->form == GARUDA_READINESS_EVENTFD) {
			ev.data.u32 = i;
			epoll_ctl(ep, EPOLL_CTL_ADD, garuda_stream_fd(t->s), &ev);
		}
		if (do_signal(t) < 0)
			goto out;
	}
	while (!cl->err[0]) {
		struct epoll_event evs[64];
		int n = epoll_wait(ep, evs, 64, 50);
		for (int e = 0; e < n; e++) {
			uint32_t i = evs[e].data.u32;
			if (i == UINT32_MAX) {
				int r = garuda_dispatch(cl->c);
				if (r < 0)
					fail(cl, "dispatch: %s", garuda_strerror(r));
				continue;
			}
			uint64_t v;
			if (garuda_stream_drain(cl->st[i].s, &v) == 1) {
				report(&cl->st[i], v);
				if (cl->st[i].todo)
					cl->todo[cl->ntodo++] = i;
			}
		}
		bool stop = atomic_load(&settling);
		for (unsigned k = 0; k < cl->ntodo; k++) {
			struct st *t = &cl->st[cl->todo[k]];
			t->todo = false;
			if (!stop && do_signal(t) < 0)
				goto out;
		}
		cl->ntodo = 0;
		if (stop) {
			if (pending(cl, false) == 0)
				break;
			if (now_ns() > settle_deadline_ns) {
				unsigned stored = 0, nefd = 0;
				for (unsigned i = 0; i < cl->n; i++) {
					struct st *t = &cl->st[i];
					if (mine(t, true) || t->rep == t->sig)
						continue;
					stored += garuda_stream_reached(t->s, t->sig);
					nefd += t->form == GARUDA_READINESS_EVENTFD;
				}
				char q[1024] = "";
				garuda_client_query(cl->c, q, sizeof(q));
				fail(cl, "%" PRIu64 " eventfd/message streams (%u eventfd) never reported their last "
					 "sequence, %u of them stored (readiness lost); the daemon says %s",
				     pending(cl, false), nefd, stored, q);
				break;
			}
		}
	}
out:
	close(ep);
	return NULL;
}

/* doorbell streams: wait on each in turn (the host stream stores in signal order) */
static void *bell_thread(void *arg)
{
	struct cl *cl = arg;
	for (unsigned i = 0; i < cl->n; i++)
		if (mine(&cl->st[i], true) && do_signal(&cl->st[i]) < 0)
			return NULL;
	while (!cl->err[0]) {
		bool stop = atomic_load(&settling);
		if (stop && pending(cl, true) == 0)
			break;
		for (unsigned i = 0; i < cl->n && !cl->err[0]; i++) {
			struct st *t = &cl->st[i];
			if (!mine(t, true) || t->rep == t->sig)
				continue;
			int64_t tmo = 30000000000ll;
			if (atomic_load(&settling)) {
				uint64_t now = now_ns();
				tmo = now < settle_deadline_ns ? (int64_t)(settle_deadline_ns - now) : 1;
			}
			int r = garuda_stream_wait(t->s, t->sig, tmo);
			if (r == -GARUDA_E_TIMEOUT) {
				fail(cl, "doorbell stream %u: sequence %" PRIu64 " not reported in time (readiness lost)",
				     i, t->sig);
				return NULL;
			}
			if (r < 0) {
				fail(cl, "doorbell stream %u: wait: %s", i, garuda_strerror(r));
				return NULL;
			}
			report(t, t->sig);
			t->todo = false;
			if (!atomic_load(&settling) && do_signal(t) < 0)
				return NULL;
		}
	}
	return NULL;
}

static long long query_num(struct garuda_client *c, const char *key)
{
	char buf[1024], pat[64];
	if (garuda_client_query(c, buf, sizeof(buf)) < 0)
		return -1;
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(buf, pat);
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void spread(uint64_t *v, unsigned n, double out[3])
{
	qsort(v, n, sizeof(*v), cmp_u64);
	out[0] = (double)v[0] / 1e6;
	out[1] = (double)v[n / 2] / 1e6;
	out[2] = (double)v[n - 1] / 1e6;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s CLIENTS STREAMS 'DISRUPTION COMMAND'\n", argv[0]);
		return 2;
	}
	unsigned ncl = (unsigned)atoi(argv[1]), nst = (unsigned)atoi(argv[2]);
	const char *disrupt = argv[3];
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	int fds_before = fdcheck_count(0);

	struct cl *cls = calloc(ncl, sizeof(*cls));
	for (unsigned k = 0; k < ncl; k++) {
		struct cl *cl = &cls[k];
		cl->idx = (int)k;
		cl->n = nst;
		pthread_mutex_init(&cl->err_lock, NULL);
		cl->st = calloc(nst, sizeof(*cl->st));
		cl->todo = calloc(nst, sizeof(*cl->todo));
		struct garuda_host_stream_config hc = { .depth = 2 * nst + 16 };
		int r = garuda_connect(&cl->c);
		if (r == 0)
			r = garuda_host_stream_new(&hc, &cl->hs);
		if (r == 0)
			r = garuda_segment_open(cl->c, "host", 0, (nst + 7) / 8, &cl->seg);
		if (r < 0) {
			fprintf(stderr, "client %u: set-up: %s\n", k, garuda_strerror(r));
			return 1;
		}
		for (unsigned i = 0; i < nst; i++) {
			struct st *t = &cl->st[i];
			t->cl = cl;
			t->form = i % 3 == 0 ? GARUDA_READINESS_EVENTFD
				  : i % 3 == 1 ? GARUDA_READINESS_MESSAGE
					       : GARUDA_READINESS_DOORBELL;
			r = garuda_stream_new(cl->seg, cl->hs, t->form, &t->s);
			if (r == 0)
				r = garuda_stream_set_wait(t->s, 0, 60000000000ull);
			if (r == 0 && t->form == GARUDA_READINESS_MESSAGE)
				r = garuda_stream_set_callback(t->s, on_ready, t);
			if (r < 0) {
				fprintf(stderr, "client %u stream %u: %s\n", k, i, garuda_strerror(r));
				return 1;
			}
		}
	}
	for (unsigned k = 0; k < ncl; k++) {
		pthread_create(&cls[k].main_t, NULL, main_thread, &cls[k]);
		pthread_create(&cls[k].bell_t, NULL, bell_thread, &cls[k]);
	}

	/* warm-up: the armed descriptors, as the daemon counts them */
	for (int round = 0; round < 15; round++) {
		sleep_ms(100);
		for (unsigned k = 0; k < ncl; k++) {
			long long a = query_num(cls[k].c, "armed");
			if (a > cls[k].max_armed)
				cls[k].max_armed = a;
		}
	}

	uint64_t t0 = now_ns();
	int st = system(disrupt);
	if (st != 0)
		fprintf(stderr, "disruption command \"%s\": status %d\n", disrupt, st);
	uint64_t dl = t0 + 60000000000ull;
	unsigned done = 0;
	while (done < ncl && now_ns() < dl) {
		done = 0;
		for (unsigned k = 0; k < ncl; k++) {
			struct cl *cl = &cls[k];
			if (!cl->t_session) {
				if (garuda_client_reconnects(cl->c) > 0 && garuda_client_session(cl->c) != 0)
					cl->t_session = now_ns() - t0;
			}
			if (cl->t_session && !cl->t_ready && query_num(cl->c, "completions") > 0)
				cl->t_ready = now_ns() - t0;
			done += cl->t_ready != 0;
		}
		sleep_ms(1);
	}
	sleep_ms(2000);
	settle_deadline_ns = now_ns() + SETTLE_MS * 1000000ull;
	atomic_store(&settling, 1);
	for (unsigned k = 0; k < ncl; k++) {
		pthread_join(cls[k].main_t, NULL);
		pthread_join(cls[k].bell_t, NULL);
	}

	int bad = 0;
	uint64_t total = 0, *gs = calloc(ncl, 8), *gr = calloc(ncl, 8);
	for (unsigned k = 0; k < ncl; k++) {
		struct cl *cl = &cls[k];
		uint64_t rec = garuda_client_reconnects(cl->c);
		uint64_t sum = 0;
		for (unsigned i = 0; i < cl->n; i++) {
			sum += cl->st[i].sig;
			if (!cl->err[0] && cl->st[i].rep != cl->st[i].sig)
				snprintf(cl->err, sizeof(cl->err), "stream %u: reported %" PRIu64 " of %" PRIu64, i,
					 cl->st[i].rep, cl->st[i].sig);
		}
		if (!cl->err[0] && atomic_load(&cl->reported) != sum)
			snprintf(cl->err, sizeof(cl->err), "reported %llu sequences, signalled %" PRIu64,
				 (unsigned long long)atomic_load(&cl->reported), sum);
		if (!cl->err[0] && rec != 1)
			snprintf(cl->err, sizeof(cl->err), "%" PRIu64 " reconnections, expected 1", rec);
		long long min_armed = nst >= 1100 ? MIN_ARMED : nst / 2;
		if (!cl->err[0] && cl->max_armed < min_armed)
			snprintf(cl->err, sizeof(cl->err), "at most %lld descriptors armed before, expected >= %lld",
				 cl->max_armed, min_armed);
		if (!cl->err[0] && !cl->t_ready)
			snprintf(cl->err, sizeof(cl->err), "no readiness from the new daemon within 60 s");
		if (cl->err[0]) {
			fprintf(stderr, "client %u: FAIL: %s\n", k, cl->err);
			bad = 1;
		}
		total += sum;
		gs[k] = cl->t_session;
		gr[k] = cl->t_ready;
		printf("client %u: %" PRIu64 " completions checked, max armed %lld, session after %.1f ms, "
		       "first readiness after %.1f ms\n",
		       k, sum, cl->max_armed, (double)cl->t_session / 1e6, (double)cl->t_ready / 1e6);
	}
	double s3[3], r3[3];
	spread(gs, ncl, s3);
	spread(gr, ncl, r3);
	printf("gap clients=%u streams=%u completions=%" PRIu64 " session_ms=%.1f/%.1f/%.1f "
	       "first_ready_ms=%.1f/%.1f/%.1f (min/median/max)\n",
	       ncl, nst, total, s3[0], s3[1], s3[2], r3[0], r3[1], r3[2]);
	free(gs);
	free(gr);

	for (unsigned k = 0; k < ncl; k++) {
		struct cl *cl = &cls[k];
		for (unsigned i = 0; i < cl->n; i++)
			garuda_stream_free(cl->st[i].s);
		garuda_segment_close(cl->seg);
		garuda_disconnect(cl->c);
		garuda_host_stream_free(cl->hs);
		free(cl->st);
		free(cl->todo);
		pthread_mutex_destroy(&cl->err_lock);
	}
	free(cls);
	int fds_after = fdcheck_count(0);
	if (fds_after != fds_before) {
		fprintf(stderr, "FAIL: %d fds open at the start, %d at the end\n", fds_before, fds_after);
		bad = 1;
	}
	printf("%s\n", bad ? "FAIL" : "PASS");
	return bad;
}
