/* wait.c — libgaruda's waiting (docs/client.md, "Waiting"): garuda_stream_wait() by
 * the stream's plan (spin; +predict: the watcher of proto/watch.h, as garudad's
 * scanner drives it, on the stream's word: its sleeps, windows, stream order, backoff
 * and what a find records; block on the readiness form; the backstop query), and the
 * eventfd form's fd and drain. The memory-ordering rules it relies on are stream.c's
 * head comment.
 *
 * Threads: the caller's; a stream is waited on by one thread at a time (garuda.h); a
 * thread's +predict watcher is its own (thread-specific). */
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cpu.h"
#include "futex.h"
#include "watch.h"

static struct timespec ns_to_ts(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* Block on the readiness form until `until` (monotonic ns) or a wake. */
static void block(struct garuda_stream *s, uint64_t now, uint64_t until, uint64_t ready_seen,
		  uint32_t bell_seen)
{
	stream_form(s)->block(s, now, until, ready_seen, bell_seen);
}

/* The longest a spin step parks in a hardware word wait: then, as after 64
 * cpu_relax()es, spin_give_way() and a look at the clock and the backstop. */
#define SPIN_WORDWAIT_STEP_NS 20000u

/* Spin on the word until it reaches seq or `end`; every backstop_ns, query the native
 * stream. 0 reached (*seen_ns: the clock right after the load that saw it), 1 ran
 * out, or -GARUDA_E_STREAM_FAULT. A step idles in cpu_relax(), or, where the client
 * has a hardware word wait (GARUDA_WORDWAIT, util/wordwait.h), parked on the word's
 * line until a store to it, the end, the backstop or SPIN_WORDWAIT_STEP_NS. */
static int spin_until(struct garuda_stream *s, uint64_t seq, uint64_t end, uint64_t backstop_ns,
		      uint64_t *seen_ns)
{
	const struct wordwait *ww = s->client->ww;
	uint64_t step_ns =
		ww->min_park_ns > SPIN_WORDWAIT_STEP_NS ? ww->min_park_ns : SPIN_WORDWAIT_STEP_NS;
	uint64_t now = garuda_now_ns();
	uint64_t backstop_at = now + backstop_ns;
	uint64_t steps = 0, parks = 0;
	int r = 1;
	for (unsigned i = 1; now < end; i++) {
		uint64_t v = word_load(s->word);
		if (garuda_reached(v, seq)) {
			*seen_ns = garuda_now_ns();
			r = 0;
			goto out;
		}
		bool hw = false;
		if (ww->variant != WORDWAIT_SPIN) {
			uint64_t t = garuda_now_ns();
			uint64_t until = end < backstop_at ? end : backstop_at;
			if (until > t + step_ns)
				until = t + step_ns;
			hw = until > t && until - t >= ww->min_park_ns;
			if (hw) {
				wordwait_arm(ww, s->word);
				if (word_load(s->word) ==
				    v) /* after the arm: nothing landed since */
					parks += (unsigned)wordwait_park(ww, until - t);
			}
		}
		if (!hw)
			cpu_relax();
		if (hw || (i & 63) == 0) {
			steps++;
			spin_give_way(); /* a thread of this process may be waiting for the CPU */
			now = garuda_now_ns();
			if (now >= backstop_at) {
				int q = s->seg->ops->query(s->seg->backend, s->native);
				if (q == -GARUDA_E_STREAM_FAULT &&
				    !garuda_reached(word_load(s->word), seq)) {
					r = q;
					goto out;
				}
				backstop_at = now + backstop_ns;
			}
		}
	}
	if (garuda_reached(word_load(s->word), seq)) {
		*seen_ns = garuda_now_ns();
		r = 0;
	}
out:
	if (steps)
		atomic_fetch_add_explicit(&s->client->spin_steps, steps, memory_order_relaxed);
	if (parks)
		atomic_fetch_add_explicit(&s->client->ww_steps, parks, memory_order_relaxed);
	return r;
}

/* +predict's waits ahead of the word at most: a wait for a sequence further on adds
 * the rest as the first ones land */
#define PREDICT_AHEAD 64u
/* a spin step of the +predict wait: spin_until() this long at most, then the watcher
 * looks (it looks at the word at once when the spin saw it land) */
#define PREDICT_SPIN_SLICE_NS 20000ull

/* The calling thread's watcher (proto/watch.h) for its +predict waits: a thread waits
 * on one stream at a time, and each wait leaves it empty. Reserved once for
 * PREDICT_AHEAD waits, so a wait allocates nothing after its thread's first; freed
 * at thread exit (the key's destructor). */
struct predict_watch {
	struct garuda_watch w;
	uint32_t owner;
	struct garuda_watch_fire fires[PREDICT_AHEAD];
};

static pthread_key_t predict_key;
static bool predict_key_ok;
static pthread_once_t predict_once = PTHREAD_ONCE_INIT;

static void predict_free(void *p)
{
	struct predict_watch *pw = p;
	garuda_watch_fini(&pw->w);
	free(pw);
}

static void predict_key_init(void)
{
	predict_key_ok = pthread_key_create(&predict_key, predict_free) == 0;
}

/* The thread's watcher, or NULL (out of memory: the plan's own wait goes on). */
static struct predict_watch *predict_watch(void)
{
	pthread_once(&predict_once, predict_key_init);
	if (!predict_key_ok)
		return NULL;
	struct predict_watch *pw = pthread_getspecific(predict_key);
	if (pw)
		return pw;
	if (!(pw = calloc(1, sizeof(*pw))))
		return NULL;
	garuda_watch_init(&pw->w, &(struct garuda_watch_tuning){ .predict = true });
	pw->owner = garuda_watch_owner(&pw->w, 0);
	if (pw->owner == GARUDA_WATCH_NONE || garuda_watch_reserve(&pw->w, PREDICT_AHEAD) < 0 ||
	    pthread_setspecific(predict_key, pw) != 0) {
		predict_free(pw);
		return NULL;
	}
	return pw;
}

/* Waits for (from, to] on s's word, their clock from arm, with the stream's estimator's
 * sleeps as they are now (garudad's ARM: its point's horizon; the watcher sleeps toward
 * it in steps of max_sleep_us). */
static void predict_add(struct predict_watch *pw, struct garuda_stream *s, uint64_t from,
			uint64_t to, uint64_t arm, uint64_t now)
{
	pthread_mutex_lock(&s->plan_lock);
	uint64_t sl = garuda_estimator_horizon_ns(&s->pl.est);
	uint64_t ex = garuda_estimator_exact_horizon_ns(&s->pl.est);
	pthread_mutex_unlock(&s->plan_lock);
	garuda_watch_add_run(&pw->w, (uintptr_t)s->word, from, to, arm, now, sl, ex, pw->owner, now);
}

/* What the k finds tell the stream's estimator (the watcher's garuda_policy_find, as
 * garudad's scanner records them). */
static void predict_record(struct garuda_stream *s, const struct garuda_watch_fire *f, unsigned k)
{
	pthread_mutex_lock(&s->plan_lock);
	for (unsigned i = 0; i < k && s->pl.plan.predict; i++)
		garuda_policy_record(&s->pl.est, &f[i].find);
	pthread_mutex_unlock(&s->plan_lock);
}

static void plan_count(struct garuda_stream *s, uint64_t *counter)
{
	pthread_mutex_lock(&s->plan_lock);
	(*counter)++;
	pthread_mutex_unlock(&s->plan_lock);
}

/* What a sleep of the flag plan's wait compares against: the readiness seen so far,
 * sampled before the word is loaded (see the head comment). */
static void sample_form(struct garuda_stream *s, uint64_t *ready_seen, uint32_t *bell_seen)
{
	pthread_mutex_lock(&s->client->lock);
	*ready_seen = s->ses.ready_count;
	pthread_mutex_unlock(&s->client->lock);
	*bell_seen = stream_sample(s); /* the form's row says what (internal.h) */
}

/* +predict: the watcher's wait (proto/watch.h), driven as garudad's scanner drives it,
 * on one word: a wait for every sequence from the word's next up to seq, queued in
 * stream order (each one's clock starts at its predecessor's find, the first at t0),
 * each with the stream's estimator's sleeps; spin while the watcher says spin, else
 * sleep until its time (flag: on the readiness form, which ends the sleep early and
 * has the word looked at at once; a word past its deadline and outside its window is
 * looked at on the watcher's backoff, with a backstop query at least every
 * backstop_ns). What each find records goes to the estimator. 0 reached,
 * -GARUDA_E_TIMEOUT, -GARUDA_E_STREAM_FAULT, or 1: no watcher (out of memory), the
 * plan's own wait goes on. */
static int predict_wait(struct garuda_stream *s, const struct garuda_plan *p, uint64_t seq,
			uint64_t t0, uint64_t deadline, uint64_t backstop_ns)
{
	struct predict_watch *pw = predict_watch();
	if (!pw)
		return 1;
	struct garuda_watch *w = &pw->w;
	const uint64_t key = (uintptr_t)s->word;
	struct garuda_watch_tuning t;
	garuda_watch_tuning_of(p, &t);
	t.pol.early_ns = garuda_watch_early_ns(w);
	garuda_watch_retune(w, &t, t0);
	uint64_t v = word_load(s->word);
	if (garuda_reached(v, seq))
		return 0;
	predict_add(pw, s, v, seq - v > PREDICT_AHEAD ? v + PREDICT_AHEAD : seq, t0, t0);
	bool flag = p->kind == GARUDA_PLAN_FLAG;
	uint64_t backstop_at = t0 + backstop_ns, now = t0;
	uint64_t slept_head = v, out_head = v; /* heads whose sleep / give-up was counted */
	int r;
	for (;;) {
		uint64_t ready_seen = 0;
		uint32_t bell_seen = 0;
		if (flag)
			sample_form(s, &ready_seen, &bell_seen);
		now = garuda_now_ns();
		uint32_t wi;
		if (garuda_watch_due(w, now, &wi, 1)) {
			v = word_load(s->word);
			unsigned k = garuda_watch_found(w, wi, v, now, pw->fires);
			predict_record(s, pw->fires, k);
			if (garuda_reached(v, seq)) {
				r = 0;
				break;
			}
			if (k) {
				uint32_t head = garuda_watch_first_on(w, key);
				if (head == GARUDA_WATCH_NONE) { /* all it had landed: the next ones */
					uint64_t to = seq - v > PREDICT_AHEAD ? v + PREDICT_AHEAD : seq;
					predict_add(pw, s, v, to, now, now);
				} else { /* the successor that starts now: the sleeps as they are now */
					pthread_mutex_lock(&s->plan_lock);
					uint64_t sl = garuda_estimator_horizon_ns(&s->pl.est);
					uint64_t ex = garuda_estimator_exact_horizon_ns(&s->pl.est);
					pthread_mutex_unlock(&s->plan_lock);
					garuda_watch_resleep(w, head, sl, ex, now);
				}
				continue; /* the successor may be due at once */
			}
		}
		if (now >= deadline) {
			r = -GARUDA_E_TIMEOUT;
			break;
		}
		if (now >= backstop_at) {
			int q = s->seg->ops->query(s->seg->backend, s->native);
			if (q == -GARUDA_E_STREAM_FAULT && !garuda_reached(word_load(s->word), seq)) {
				r = q;
				break;
			}
			backstop_at = now + backstop_ns;
		}
		uint32_t head = garuda_watch_first_on(w, key);
		uint64_t head_target = garuda_watch_get(w, head)->target;
		uint64_t until = garuda_watch_next(w, now);
		if (!until) { /* a spin step */
			uint64_t seen, end = now + PREDICT_SPIN_SLICE_NS;
			if ((r = spin_until(s, head_target, end < deadline ? end : deadline, backstop_ns,
					    &seen)) < 0)
				break;
			continue;
		}
		bool overdue = garuda_watch_word_overdue(w, garuda_watch_get(w, head)->word);
		if (overdue && out_head != head_target) { /* the watcher gave it up */
			out_head = head_target;
			plan_count(s, &s->pl.spin_outs);
		} else if (!overdue && slept_head != head_target) { /* toward its deadline */
			slept_head = head_target;
			plan_count(s, &s->pl.sleeps);
		}
		uint64_t end = until < deadline ? until : deadline;
		if (overdue && backstop_at < end)
			end = backstop_at;
		if (flag) {
			block(s, now, end, ready_seen, bell_seen);
		} else {
			struct timespec ts = ns_to_ts(end);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
		now = garuda_now_ns();
		garuda_watch_woke_from(w, until, now);
		if (word_load(s->word) != v) /* a readiness, or a store: look now */
			garuda_watch_poke(w, key, now);
	}
	for (uint32_t id; (id = garuda_watch_first_on(w, key)) != GARUDA_WATCH_NONE;)
		garuda_watch_remove(w, id, now);
	return r;
}

/* block: the backend's synchronize, when it has one and the wait has no limit. 0
 * reached, 1 go on polling, or a negative code. */
static int sync_phase(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns)
{
	const struct garuda_backend_ops *ops = s->seg->ops;
	if (timeout_ns >= 0 || !ops->synchronize)
		return 1;
	int r = ops->synchronize(s->seg->backend, s->native);
	if (garuda_reached(word_load(s->word), seq))
		return 0;
	return r == -GARUDA_E_STREAM_FAULT ? r : 1;
}

/* The backstop after a wait has run for `age` (garuda_policy_backstop_ns: it grows with
 * the age as garudad's backoff does, so that a 10 s wait costs its thread ~250
 * wake-ups instead of 10,000 at the default 1 ms) */
static uint64_t backstop_for(const struct garuda_plan *p, uint64_t backstop_ns, uint64_t age)
{
	return garuda_policy_backstop_ns(backstop_ns, p->kind == GARUDA_PLAN_FLAG ? p->flag.backoff_div : 0,
					 age);
}

uint64_t stream_fault_interval_ns(struct garuda_stream *s, uint64_t age_ns)
{
	pthread_mutex_lock(&s->plan_lock);
	uint64_t r = backstop_for(&s->pl.plan, s->pl.backstop_ns, age_ns);
	pthread_mutex_unlock(&s->plan_lock);
	return r > STREAM_FAULT_WATCH_MIN_NS ? r : STREAM_FAULT_WATCH_MIN_NS;
}

/* A wait for the sequence it ran out of time on, begun within this of its end, goes on
 * from there (struct garuda_stream's resume) */
#define GARUDA_WAIT_RESUME_NS 50000000ull

static int wait_phases(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns, uint64_t now,
		       uint64_t begun, uint64_t deadline, bool resumed, uint64_t *next_backstop);

static int stream_wait(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns)
{
	if (!s) {
		client_set_error("garuda_stream_wait: the stream is NULL");
		return -EINVAL;
	}
	/* a sequence never signalled would never complete */
	uint64_t signalled = atomic_load_explicit(&s->signalled, memory_order_acquire);
	if (seq == 0 || !garuda_reached(signalled, seq)) {
		if (signalled == 0)
			client_set_error("a wait before any signal on this stream: garuda_stream_signal() "
					 "gives the sequence to wait for");
		else if (seq == 0)
			client_set_error("a wait for sequence 0: sequences start at 1 (the stream's last "
					 "signal gave %llu)", (unsigned long long)signalled);
		else
			client_set_error("a wait for sequence %llu, which was not signalled on this "
					 "stream (its last signal gave %llu): it would never complete",
					 (unsigned long long)seq, (unsigned long long)signalled);
		return -EINVAL;
	}
	if (garuda_reached(word_load(s->word), seq))
		return 0;
	if (timeout_ns == 0)
		return -GARUDA_E_TIMEOUT;

	uint64_t now = garuda_now_ns(), begun = now;
	uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : now + (uint64_t)timeout_ns;
	/* the same wait again, right after it ran out of time: its age goes on, and its
	 * first phase (the prediction's sleep and window, the sync, the spin) is over */
	bool resumed = s->resume.seq == seq && now - s->resume.left <= GARUDA_WAIT_RESUME_NS;
	if (resumed)
		begun = s->resume.begun;
	s->resume.seq = 0;
	uint64_t backstop_at = resumed ? s->resume.backstop_at : 0;
	int r = wait_phases(s, seq, timeout_ns, now, begun, deadline, resumed, &backstop_at);
	if (r == -GARUDA_E_TIMEOUT)
		s->resume = (typeof(s->resume)){ .seq = seq, .begun = begun, .left = garuda_now_ns(),
						 .backstop_at = backstop_at };
	return r;
}

/* stream_wait() past its checks: the plan's first phase (unless resumed), then the
 * park on the readiness form with backstop queries, the backstop growing with the
 * wait's age (from begun). *next_backstop: resumed, the next backstop query's time
 * (0: none yet); out of time, the one that was next then */
static int wait_phases(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns, uint64_t now,
		       uint64_t begun, uint64_t deadline, bool resumed, uint64_t *next_backstop)
{
	struct garuda_client *c = s->client;
	pthread_mutex_lock(&s->plan_lock);
	struct garuda_plan plan = s->pl.plan;
	uint64_t spin_ns = s->pl.spin_ns, backstop_ns = s->pl.backstop_ns;
	pthread_mutex_unlock(&s->plan_lock);

	int r;
	if (resumed) {
		/* straight to the park below */
	} else if (plan.predict) {
		if ((r = predict_wait(s, &plan, seq, now, deadline, backstop_ns)) <= 0)
			return r;
	} else if (plan.kind == GARUDA_PLAN_BLOCK) {
		if ((r = sync_phase(s, seq, timeout_ns)) <= 0)
			return r;
	} else if (spin_ns) {
		uint64_t seen;
		uint64_t end = spin_ns > deadline - now ? deadline : now + spin_ns;
		if ((r = spin_until(s, seq, end, backstop_ns, &seen)) <= 0)
			return r;
	}
	now = garuda_now_ns();

	/* flag: park on the readiness form; block and poll: poll the word and the native
	 * stream on the growing schedule. Either way query every backstop. */
	bool flag = plan.kind == GARUDA_PLAN_FLAG;
	uint64_t backstop_at = *next_backstop ? *next_backstop
					      : now + backstop_for(&plan, backstop_ns, now - begun);
	uint64_t step = POLL_STEP_MIN_NS;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		bool armed = flag && stream_form(s)->wire && c->state == CONN_UP &&
			     s->ses.gen == c->gen && !s->ses.arm_lost;
		uint64_t ready_seen = s->ses.ready_count;
		pthread_mutex_unlock(&c->lock);
		/* the sample first (acquire), then the word: see the head comment */
		uint32_t bell_seen = stream_sample(s);
		if (garuda_reached(word_load(s->word), seq))
			return 0;
		now = garuda_now_ns();
		if (now >= deadline) {
			*next_backstop = backstop_at;
			return -GARUDA_E_TIMEOUT;
		}
		if (now >= backstop_at || !flag) {
			int q = s->seg->ops->query(s->seg->backend, s->native);
			if (garuda_reached(word_load(s->word), seq))
				return 0;
			if (q == -GARUDA_E_STREAM_FAULT)
				return q;
			backstop_at = now + backstop_for(&plan, backstop_ns, now - begun);
		}
		/* flag, armed: park on the form until the backstop (park_us is the
		 * watcher's spin window, docs/plans.md "One name per quantity": not read
		 * here; the readiness ends the park) */
		uint64_t until = deadline < backstop_at ? deadline : backstop_at;
		if (!armed) {
			if (now + step < until)
				until = now + step;
			step = step * 2 > POLL_STEP_MAX_NS ? POLL_STEP_MAX_NS : step * 2;
		}
		if (flag) {
			/* unarmed too: the I/O thread nudges the form while garudad is away */
			block(s, now, until, ready_seen, bell_seen);
		} else {
			struct timespec ts = ns_to_ts(until);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
	}
}

int garuda_stream_wait(struct garuda_stream *s, uint64_t seq, int64_t timeout_ns)
{
	return client_return(stream_wait(s, seq, timeout_ns));
}

int garuda_stream_fd(const struct garuda_stream *s)
{
	if (!s)
		return client_fail(-EINVAL);
	/* only a form that opens one has one */
	return s->efd >= 0 ? s->efd : client_fail(-EOPNOTSUPP);
}

int garuda_stream_drain(struct garuda_stream *s, uint64_t *seq)
{
	if (!s)
		return client_fail(-EINVAL);
	if (s->efd >= 0) {
		uint64_t v;
		ssize_t n = read(s->efd, &v, sizeof(v));
		(void)n;
		/* the count first, then the word: a write after this read leaves the fd
		 * readable, a write before it is followed by a store we now see */
		atomic_thread_fence(memory_order_acquire);
	}
	uint64_t v = word_load(s->word);
	if (seq)
		*seq = v;
	bool moved = v != s->drained && garuda_reached(v, s->drained);
	if (moved)
		s->drained = v;
	if (stream_fault_stands(s)) {
		client_set_error("the stream's native stream faulted: sequences after %llu will "
				 "never land (garuda_stream_drain)", (unsigned long long)v);
		return client_fail(-GARUDA_E_STREAM_FAULT);
	}
	return moved ? 1 : 0;
}
