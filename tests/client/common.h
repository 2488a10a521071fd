/* common.h — shared bits of libgaruda's tests: assertion helpers that print garuda
 * error text, the daemon (tests/common's launcher, harness.h), and a connected fixture
 * (daemon + client + host segment). */
#pragma once

#include <criterion/criterion.h>
#include <garuda/garuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "fdcheck.h"
#include "launcher.h"

#define TD_DEADLINE_MS GD_DEADLINE_MS

/* Milliseconds now (monotonic), for deadlines. */
static inline long long td_now_ms(void)
{
	return (long long)(garuda_now_ns() / 1000000ull);
}

/* garudad on a private socket (tests/common); extra_json: members merged into the base
 * config object, e.g. "\"quota\":{...}", or NULL. Returns once it is READY. */
static inline void td_start(struct gd_daemon *d, const char *extra_json)
{
	char cfg[1024];
	snprintf(cfg, sizeof(cfg), "{%s}", extra_json ? extra_json : "");
	struct gd_opts o = { .config = cfg };
	memset(d, 0, sizeof(*d));
	gd_start(d, &o);
}

/* SIGTERM, reap, assert exit 0, remove the directory (the fd check is the suite's). */
static inline void td_stop(struct gd_daemon *d)
{
	int r = gd_terminate(d);
	cr_assert_eq(r, 0, "%s", d->err);
}

#define NS_PER_MS 1000000ll
#define NS_PER_S 1000000000ll

/* r must be 0 (or >= 0) */
#define ok(expr)                                                                        \
	do {                                                                            \
		int ok_r_ = (expr);                                                     \
		cr_assert(ok_r_ >= 0, "%s -> %d (%s)", #expr, ok_r_, garuda_strerror(ok_r_)); \
	} while (0)

/* r must be exactly the negative code */
#define fails(expr, code)                                                                   \
	do {                                                                                \
		int fails_r_ = (expr);                                                      \
		cr_assert_eq(fails_r_, (code), "%s -> %d (%s), expected %d (%s)", #expr,    \
			     fails_r_, garuda_strerror(fails_r_), (code), garuda_strerror(code)); \
	} while (0)

struct fixture {
	struct gd_daemon d;
	struct garuda_client *c;
	struct garuda_seg *seg;
};

/* daemon with extra config (NULL: defaults), a client, one host segment of `lines` */
static inline void fx_up(struct fixture *f, const char *extra, uint32_t lines)
{
	td_start(&f->d, extra);
	ok(garuda_connect_to(f->d.sock, &f->c));
	if (lines)
		ok(garuda_segment_open(f->c, "host", 0, lines, &f->seg));
}

static inline void fx_down(struct fixture *f)
{
	if (f->seg)
		ok(garuda_segment_close(f->seg));
	garuda_disconnect(f->c);
	td_stop(&f->d);
}

/* A gate: a host-stream item that blocks the stream's worker until the test opens it,
 * so work stays outstanding exactly as long as a test needs (no timing). */
#include <pthread.h>

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool open;
};

static inline void gate_init(struct gate *g)
{
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	g->open = false;
}

static inline void gate_pass_(void *arg)
{
	struct gate *g = arg;
	pthread_mutex_lock(&g->mu);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

/* queue the gate on a host stream */
static inline void gate_enqueue(struct gate *g, struct garuda_host_stream *hs)
{
	ok(garuda_host_stream_enqueue_call(hs, gate_pass_, g));
}

static inline void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->open = true;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

static inline void gate_destroy(struct gate *g)
{
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
}

/* Wait until cond holds (an event: a state, a count), re-evaluating it every
 * millisecond, for at most TD_DEADLINE_MS; the value of cond at the end. For threads and
 * forked children, which cannot assert. */
#define settles(cond)                                                           \
	({                                                                      \
		long long ev_end_ = td_now_ms() + TD_DEADLINE_MS;               \
		while (!(cond) && td_now_ms() < ev_end_)                        \
			usleep(1000);                                           \
		(cond);                                                         \
	})

/* settles(cond), asserted. */
#define eventually(cond, what) cr_assert(settles(cond), "never happened: %s", what)
