/* scanner.c — see scanner.h.
 *
 * Wait policy (kept in scanner_main() and scanner_wait()): with nothing armed, park in
 * FUTEX_WAIT on the command sequence until the loop posts a command; with something
 * armed, spin (a pass, then cpu_relax) while the last activity (a completion, or the
 * first arm after idle) is younger than spin_us; after that sleep between passes,
 * starting at 32 us and doubling up to max_sleep_us; a new arm restarts the sleeps
 * at 32 us, a completion restarts spinning. Plans and
 * the deadline estimator will replace the sleep schedule (DESIGN.md, "Waiting").
 */
#include "scanner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "errcode.h"
#include "log.h"
#include "seq.h"
#include "wire.h"

enum cmd_kind { CMD_ARM, CMD_DISARM, CMD_DROP_SEGMENT, CMD_DROP_BINDING, CMD_DROP_SINK, CMD_LIST, CMD_STOP };

/* CMD_LIST: the loop thread waits on done while the scanner fills views */
struct list_request {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct segment *seg;
	struct armed_view *views;
	int n;
};

struct armed {
	const uint64_t *word;
	uint64_t target, token;
	struct sink *sink;
	struct segment *seg;
	struct binding *bind;
	uint32_t index;
	uint8_t form;
	uint64_t value; /* set when fired */
	uint64_t gen;   /* command sequence number of its ARM (see take_commands) */
};

struct hot {
	const uint64_t *word;
	uint64_t target;
};

struct cmd {
	enum cmd_kind kind;
	struct armed a;   /* ARM */
	void *obj;        /* DROP_*: segment, binding or sink; DISARM: sink. Compared only,
			   * never dereferenced: it may be freed by the time the scanner reads it */
	uint32_t segment_id, index;
	uint64_t token, cookie;
	uint64_t session_id; /* DISARM: who gets the answer */
	bool noreply;
};

struct scanner {
	unsigned index;
	int numa_node;
	cpu_set_t cpus;
	struct scanner_tuning *tuning;
	struct notice_queue *notices;
	pthread_t thread;
	clockid_t cpu_clock;
	timer_t guard;
	bool guard_ok;
	uint64_t guard_expiry; /* thread-private: when the armed guard fires */

	/* command queue, filled by the loop thread */
	pthread_mutex_t lock;
	struct cmd *cmds;
	unsigned ncmds, capcmds;
	atomic_uint seq;     /* bumped per posted command; the futex word */
	atomic_int sleeping; /* the thread is in (or about to enter) FUTEX_WAIT */

	/* thread-private. The armed set is two parallel arrays: the pass reads only
	 * `hot` (word pointer and target, 16 bytes), `armed` is touched when one fires. */
	struct hot *hot;
	struct armed *armed;
	unsigned narmed, caparmed;
	struct armed *fired;
	unsigned capfired;
	uint64_t gen; /* commands applied so far */
	bool stop;

	/* stats, written by the thread, read by anyone */
	atomic_uint_fast64_t st_armed, st_passes, st_completions, st_parks;
	atomic_uint_fast64_t st_hist[SCANNER_LAT_BUCKETS];
	atomic_uint_fast64_t st_detect_ns_sum;
	atomic_uint_fast64_t st_by_form[4];
};

int scanner_guard_signal(void)
{
	return SIGRTMIN;
}

static long futex(atomic_uint *uaddr, int op, unsigned val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* ---------------- command queue (loop side) ---------------- */

#define CMD_BACKLOG 4096 /* queued commands that wake even a parked scanner */

static void post(struct scanner *s, const struct cmd *c)
{
	pthread_mutex_lock(&s->lock);
	if (s->ncmds == s->capcmds) {
		unsigned cap = s->capcmds ? s->capcmds * 2 : 256;
		struct cmd *nc = realloc(s->cmds, cap * sizeof(*nc));
		if (!nc) {
			pthread_mutex_unlock(&s->lock);
			log_err("scanner %u: out of memory for a command", s->index);
			abort(); /* losing a DROP would leave dangling state; fail loudly */
		}
		s->cmds = nc;
		s->capcmds = cap;
	}
	s->cmds[s->ncmds++] = *c;
	bool backlog = s->ncmds >= CMD_BACKLOG;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&s->seq, 1);
	/* drops only release; they wait for the next wake, so a parked scanner with
	 * nothing armed stays parked when sessions end, unless they pile up */
	bool urgent = backlog || (c->kind != CMD_DROP_SEGMENT && c->kind != CMD_DROP_BINDING &&
				  c->kind != CMD_DROP_SINK);
	if (urgent && atomic_load(&s->sleeping))
		futex(&s->seq, FUTEX_WAKE_PRIVATE, 1, NULL);
}

void scanner_arm(struct scanner *s, const struct arm_request *r)
{
	struct cmd c = { .kind = CMD_ARM };
	c.a = (struct armed){
		.word = segment_word(r->segment, r->index),
		.target = r->target,
		.token = r->token,
		.sink = r->sink,
		.seg = r->segment,
		.bind = r->binding,
		.index = r->index,
		.form = r->form,
	};
	post(s, &c);
}

void scanner_disarm(struct scanner *s, struct sink *sink, uint32_t segment_id, uint32_t index,
		    uint64_t token, uint64_t cookie, bool noreply)
{
	struct cmd c = { .kind = CMD_DISARM, .obj = sink, .segment_id = segment_id, .index = index,
			 .token = token, .cookie = cookie, .session_id = sink->session_id,
			 .noreply = noreply };
	post(s, &c);
}

void scanner_drop_segment(struct scanner *s, struct segment *seg)
{
	post(s, &(struct cmd){ .kind = CMD_DROP_SEGMENT, .obj = seg });
}

void scanner_drop_binding(struct scanner *s, struct binding *b)
{
	post(s, &(struct cmd){ .kind = CMD_DROP_BINDING, .obj = b });
}

void scanner_drop_sink(struct scanner *s, struct sink *sink)
{
	post(s, &(struct cmd){ .kind = CMD_DROP_SINK, .obj = sink });
}

/* ---------------- thread side ---------------- */

static void release(struct armed *a)
{
	quota_release(&a->sink->usage, &a->sink->uid->usage, Q_ARMED, 1);
	sink_unref(a->sink);
	segment_unref(a->seg);
	binding_unref(a->bind);
}

static void push_armed(struct scanner *s, const struct armed *a)
{
	if (s->narmed == s->caparmed) {
		unsigned cap = s->caparmed ? s->caparmed * 2 : 1024;
		struct armed *na = realloc(s->armed, cap * sizeof(*na));
		if (na)
			s->armed = na;
		struct armed *nf = na ? realloc(s->fired, cap * sizeof(*nf)) : NULL;
		if (nf)
			s->fired = nf;
		struct hot *nh = nf ? realloc(s->hot, cap * sizeof(*nh)) : NULL;
		if (!nh) {
			log_err("scanner %u: out of memory for an armed descriptor", s->index);
			abort();
		}
		s->hot = nh;
		s->caparmed = s->capfired = cap;
	}
	s->hot[s->narmed] = (struct hot){ .word = a->word, .target = a->target };
	s->armed[s->narmed++] = *a;
}

static void remove_at(struct scanner *s, unsigned i)
{
	s->narmed--;
	s->hot[i] = s->hot[s->narmed];
	s->armed[i] = s->armed[s->narmed];
}

static void answer_list(struct scanner *s, struct list_request *lr)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->narmed; i++)
		n += s->armed[i].seg == lr->seg;
	lr->views = calloc(n ? n : 1, sizeof(*lr->views));
	lr->n = lr->views ? 0 : -ENOMEM;
	for (unsigned i = 0; lr->views && i < s->narmed; i++) {
		const struct armed *a = &s->armed[i];
		if (a->seg == lr->seg)
			lr->views[lr->n++] = (struct armed_view){ .index = a->index, .form = a->form,
								  .target = a->target, .token = a->token };
	}
	pthread_mutex_lock(&lr->lock);
	lr->done = true;
	pthread_cond_signal(&lr->cond);
	pthread_mutex_unlock(&lr->lock);
}

/* ---- removals: DISARM and DROP_*, applied to the armed set in one pass per batch ----
 *
 * Every command gets a sequence number (gen) as it is applied, and every armed
 * descriptor remembers the gen of its ARM. A removal applies to the descriptors armed
 * before it (gen smaller than its own), so the removals of a whole batch of commands
 * can wait and be applied together in one pass over the armed set, whatever order they
 * came in relative to ARMs (an ARM after a DROP_SINK of a sink at a reused address is
 * not dropped). That keeps a batch at O(armed + commands): a client that floods
 * DISARMs or closes bindings in a loop costs one pass per batch, not one per command. */

struct removal {
	enum cmd_kind kind;
	const void *obj;
	uint32_t segment_id, index;
	uint64_t token, gen;
	const struct cmd *c; /* DISARM: for the answer */
	int next;            /* DISARM: the next removal with the same key, in gen order */
	bool found;
};

struct removal_table {
	int *slot; /* index into rem[], or -1 */
	unsigned mask;
	struct removal *rem;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t removal_hash(enum cmd_kind kind, const void *obj, uint32_t seg, uint32_t index,
			     uint64_t token)
{
	uint64_t h = mix((uint64_t)kind, (uint64_t)(uintptr_t)obj);
	if (kind == CMD_DISARM)
		h = mix(mix(mix(h, seg), index), token);
	return h;
}

static bool removal_key_eq(const struct removal *r, enum cmd_kind kind, const void *obj,
			   uint32_t seg, uint32_t index, uint64_t token)
{
	return r->kind == kind && r->obj == obj &&
	       (kind != CMD_DISARM || (r->segment_id == seg && r->index == index && r->token == token));
}

/* The first removal with this key (-1: none). */
static int removal_find(const struct removal_table *t, enum cmd_kind kind, const void *obj,
			uint32_t seg, uint32_t index, uint64_t token)
{
	for (uint64_t h = removal_hash(kind, obj, seg, index, token);; h++) {
		int i = t->slot[h & t->mask];
		if (i < 0 || removal_key_eq(&t->rem[i], kind, obj, seg, index, token))
			return i;
	}
}

/* Index rem[0..n): drops keep their latest gen under one key, DISARMs chain in order. */
static int removal_index(struct removal_table *t, struct removal *rem, unsigned n)
{
	unsigned cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	t->slot = malloc(cap * sizeof(*t->slot));
	if (!t->slot)
		return -ENOMEM;
	memset(t->slot, 0xff, cap * sizeof(*t->slot));
	t->mask = cap - 1;
	t->rem = rem;
	int *last = calloc(n ? n : 1, sizeof(*last)); /* DISARM chains: tail per head */
	if (!last) {
		free(t->slot);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		struct removal *r = &rem[i];
		r->next = -1;
		for (uint64_t h = removal_hash(r->kind, r->obj, r->segment_id, r->index, r->token);; h++) {
			int *sl = &t->slot[h & t->mask];
			if (*sl < 0) {
				*sl = (int)i;
				last[i] = (int)i;
				break;
			}
			struct removal *o = &rem[*sl];
			if (removal_key_eq(o, r->kind, r->obj, r->segment_id, r->index, r->token)) {
				if (r->kind == CMD_DISARM) {
					rem[last[*sl]].next = (int)i; /* gens ascend with i */
					last[*sl] = (int)i;
				} else {
					o->gen = r->gen; /* the latest drop covers the earlier ones */
				}
				break;
			}
		}
	}
	free(last);
	return 0;
}

/* Does a removal in t take descriptor a? */
static bool removal_takes(const struct removal_table *t, const struct armed *a)
{
	const struct {
		enum cmd_kind kind;
		const void *obj;
	} drops[] = { { CMD_DROP_SINK, a->sink }, { CMD_DROP_SEGMENT, a->seg }, { CMD_DROP_BINDING, a->bind } };
	for (unsigned k = 0; k < 3; k++) {
		if (!drops[k].obj)
			continue;
		int i = removal_find(t, drops[k].kind, drops[k].obj, 0, 0, 0);
		if (i >= 0 && t->rem[i].gen > a->gen)
			return true;
	}
	/* the first DISARM after the ARM takes it */
	for (int i = removal_find(t, CMD_DISARM, a->sink, a->seg->id, a->index, a->token); i >= 0;
	     i = t->rem[i].next) {
		if (t->rem[i].gen > a->gen) {
			t->rem[i].found = true;
			return true;
		}
	}
	return false;
}

static void apply_removals(struct scanner *s, struct removal *rem, unsigned n)
{
	struct removal_table t;
	if (removal_index(&t, rem, n) < 0) {
		log_err("scanner %u: out of memory applying removals", s->index);
		abort(); /* a lost DROP would leave dangling references */
	}
	for (unsigned i = 0; i < s->narmed;) {
		if (removal_takes(&t, &s->armed[i])) {
			release(&s->armed[i]);
			remove_at(s, i);
		} else {
			i++;
		}
	}
	free(t.slot);
	for (unsigned i = 0; i < n; i++) {
		const struct cmd *c = rem[i].c;
		if (rem[i].kind != CMD_DISARM)
			continue;
		notice_push(s->notices, &(struct notice){ .kind = NOTICE_DISARMED,
							  .session_id = c->session_id,
							  .cookie = c->cookie,
							  .code = rem[i].found ? 0 : -GARUDA_E_NOT_ARMED,
							  .noreply = c->noreply });
	}
}

/* Apply queued commands. Returns true when something was armed. */
static bool take_commands(struct scanner *s)
{
	pthread_mutex_lock(&s->lock);
	struct cmd *cmds = s->cmds;
	unsigned n = s->ncmds;
	s->cmds = NULL;
	s->ncmds = s->capcmds = 0;
	pthread_mutex_unlock(&s->lock);
	if (!n)
		return false;

	bool armed = false;
	struct removal *rem = NULL;
	unsigned nrem = 0;
	for (unsigned i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		uint64_t gen = ++s->gen;
		switch (c->kind) {
		case CMD_ARM:
			c->a.gen = gen;
			push_armed(s, &c->a);
			armed = true;
			break;
		case CMD_DISARM:
		case CMD_DROP_SEGMENT:
		case CMD_DROP_BINDING:
		case CMD_DROP_SINK:
			if (!rem && !(rem = malloc(n * sizeof(*rem)))) {
				log_err("scanner %u: out of memory for removals", s->index);
				abort();
			}
			rem[nrem++] = (struct removal){ .kind = c->kind, .obj = c->obj,
							.segment_id = c->segment_id, .index = c->index,
							.token = c->token, .gen = gen, .c = c };
			break;
		case CMD_LIST:
		case CMD_STOP:
			break;
		}
	}
	if (nrem)
		apply_removals(s, rem, nrem);
	free(rem);
	for (unsigned i = 0; i < n; i++) { /* after the batch: the set as it now stands */
		if (cmds[i].kind == CMD_LIST)
			answer_list(s, cmds[i].obj);
		else if (cmds[i].kind == CMD_STOP)
			s->stop = true;
	}
	free(cmds);
	atomic_store_explicit(&s->st_armed, s->narmed, memory_order_relaxed);
	return armed;
}

/* The write guard: a one-shot timer whose signal interrupts an eventfd write that
 * blocks. Arming it around every delivery cost two timer_settime calls per pass (the
 * largest item in eventfd wake latency on the benchmark machine), so it is armed for
 * GUARD_NS (1 ms), refreshed after a batch of writes when less than half of it is left
 * (before writes only when it is about to run out), never cancelled (cancelling at
 * every park would put a syscall back on the ping-pong path). So an
 * idle scanner takes at most one signal, within GUARD_NS of its last eventfd
 * delivery, and then none. A write that blocks is interrupted within GUARD_NS. */
#define GUARD_NS 1000000ull

/* Arm the guard unless it has more than `left` ns to run. Before writes: left =
 * GUARD_MIN_NS (any running guard will do); after them: left = GUARD_NS / 2 (refresh
 * it off the delivery path, so in steady state no timer_settime precedes a write). */
#define GUARD_MIN_NS 100000ull

static void guard_ensure(struct scanner *s, uint64_t now, uint64_t left)
{
	if (!s->guard_ok || now + left < s->guard_expiry)
		return;
	struct itimerspec its = { .it_value.tv_nsec = (long)GUARD_NS };
	timer_settime(s->guard, 0, &its, NULL);
	s->guard_expiry = now + GUARD_NS;
}


static void offender(struct scanner *s, struct sink *sink, int code)
{
	notice_push(s->notices, &(struct notice){ .kind = NOTICE_OFFENDER,
						  .session_id = sink->session_id, .code = code });
}

/* One write of b->pending to the client's eventfd, never blocking. */
static void deliver_eventfd(struct scanner *s, struct binding *b, struct sink *sink)
{
	uint64_t add = b->pending;
	b->pending = 0;
	if (b->broken)
		return;
	int fl = fcntl(b->fd, F_GETFL);
	if (fl < 0 || !(fl & O_NONBLOCK)) {
		b->broken = true;
		log_client(LOG_WARNING, "session %llu: bound eventfd lost O_NONBLOCK; disconnecting",
			   (unsigned long long)sink->session_id);
		offender(s, sink, GARUDA_E_BAD_FD);
		return;
	}
	ssize_t r = write(b->fd, &add, sizeof(add));
	if (r < 0 && errno == EINTR) {
		b->broken = true;
		log_client(LOG_WARNING, "session %llu: eventfd write blocked; disconnecting",
			   (unsigned long long)sink->session_id);
		offender(s, sink, GARUDA_E_BAD_FD);
	}
	/* EAGAIN: the counter is saturated, so the eventfd is readable: delivered */
}

static void deliver_doorbell(struct segment *seg)
{
	uint32_t *bell = &seg->map->hdr.doorbell;
	__atomic_fetch_add(bell, seg->doorbell_pending, __ATOMIC_RELEASE);
	seg->doorbell_pending = 0;
	syscall(SYS_futex, bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static int cmp_sink(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct armed *)a)->sink;
	uintptr_t y = (uintptr_t)((const struct armed *)b)->sink;
	return x < y ? -1 : x > y;
}

#define SEND_BATCH 64 /* datagrams per sendmmsg */

/* Encode the READY (n == 1, or the client did not ask for batches: one record each)
 * or READY_BATCH (up to GARUDA_BATCH_MAX records) for f[0..n) into buf; returns its
 * length. */
static size_t encode_ready(const struct armed *f, unsigned n, uint8_t *buf, size_t cap)
{
	struct garuda_msg m;
	struct garuda_ready *rec;
	if (n == 1) {
		garuda_msg_init(&m, GARUDA_MSG_READY, 0);
		rec = &m.ready;
	} else {
		garuda_msg_init(&m, GARUDA_MSG_READY_BATCH, 0);
		m.ready_batch.count = n;
		rec = m.ready_batch.ready;
	}
	for (unsigned i = 0; i < n; i++)
		rec[i] = (struct garuda_ready){ .token = f[i].token, .value = f[i].value,
						.slot = { f[i].seg->id, f[i].index } };
	return (size_t)garuda_msg_encode(&m, buf, cap);
}

/* READY messages of one sink: f[0..n), as few datagrams as the client accepts,
 * sendmmsg in batches; on EAGAIN the rest coalesce into the sink's overflow flag. */
static void deliver_messages(struct scanner *s, struct armed *f, unsigned n)
{
	struct sink *sink = f[0].sink;
	unsigned per = sink->features & GARUDA_FEATURE_READY_BATCH ? GARUDA_BATCH_MAX : 1;
	static _Thread_local uint8_t bufs[SEND_BATCH][GARUDA_MSG_MAX];
	struct mmsghdr mm[SEND_BATCH];
	struct iovec iov[SEND_BATCH];

	for (unsigned done = 0; done < n;) {
		unsigned k = 0, at = done;
		while (k < SEND_BATCH && at < n) {
			unsigned take = n - at < per ? n - at : per;
			size_t len = encode_ready(f + at, take, bufs[k], sizeof(bufs[k]));
			iov[k] = (struct iovec){ .iov_base = bufs[k], .iov_len = len };
			mm[k] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[k], .msg_iovlen = 1 } };
			at += take;
			k++;
		}
		int sent = sendmmsg(sink->fd, mm, k, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sent < 0 && errno == EINTR)
			continue;
		if (sent < 0) {
			if (errno == EAGAIN || errno == ENOBUFS) {
				if (!atomic_exchange(&sink->overflow, true))
					notice_push(s->notices, &(struct notice){ .kind = NOTICE_OVERFLOW,
										  .session_id = sink->session_id });
			}
			return; /* EPIPE etc.: the session is ending */
		}
		for (int i = 0; i < sent; i++) /* records carried by the datagrams that went */
			done += n - done < per ? n - done : per;
	}
}

static void deliver(struct scanner *s, unsigned nf, unsigned bucket, uint64_t now)
{
	struct armed *f = s->fired;
	bool binds = false;
	struct segment *bells = NULL;
	unsigned nmsg = 0;

	/* counted before anything is sent: whoever sees a readiness can already see it in
	 * the counters (a client that got its last READY may ask at once) */
	for (unsigned i = 0; i < nf; i++) {
		atomic_fetch_add_explicit(&f[i].sink->completions, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&f[i].sink->by_form[f[i].form & 3], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->st_by_form[f[i].form & 3], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&f[i].sink->detect_hist[bucket], 1, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&s->st_completions, nf, memory_order_relaxed);

	for (unsigned i = 0; i < nf; i++) {
		struct armed *a = &f[i];
		switch (a->form) {
		case GARUDA_FORM_EVENTFD:
			a->bind->pending++;
			binds = true;
			break;
		case GARUDA_FORM_DOORBELL:
			if (a->seg->doorbell_pending++ == 0) {
				a->seg->batch_next = bells;
				bells = a->seg;
			}
			break;
		default:
			nmsg++;
			break;
		}
	}
	if (binds) {
		guard_ensure(s, now, GUARD_MIN_NS);
		for (unsigned i = 0; i < nf; i++) /* in order; each binding once */
			if (f[i].form == GARUDA_FORM_EVENTFD && f[i].bind->pending)
				deliver_eventfd(s, f[i].bind, f[i].sink);
		guard_ensure(s, garuda_now_ns(), GUARD_NS / 2);
	}
	for (struct segment *g = bells; g; g = g->batch_next)
		deliver_doorbell(g);
	if (nmsg) {
		/* message-form entries to the front, grouped by sink */
		unsigned m = 0;
		for (unsigned i = 0; i < nf; i++)
			if (f[i].form == GARUDA_FORM_MESSAGE) {
				struct armed t = f[m];
				f[m++] = f[i];
				f[i] = t;
			}
		if (m > 1)
			qsort(f, m, sizeof(*f), cmp_sink);
		for (unsigned i = 0, j; i < m; i = j) {
			for (j = i + 1; j < m && f[j].sink == f[i].sink; j++)
				;
			deliver_messages(s, f + i, j - i);
		}
	}
	for (unsigned i = 0; i < nf; i++)
		release(&f[i]);
}

/* One pass over the armed set: O(armed). Returns completions delivered. */
static unsigned scan_pass(struct scanner *s, uint64_t prev_pass)
{
	unsigned nf = 0;
	for (unsigned i = 0; i < s->narmed;) {
		uint64_t v = __atomic_load_n(s->hot[i].word, __ATOMIC_ACQUIRE);
		if (garuda_reached(v, s->hot[i].target)) {
			s->fired[nf] = s->armed[i];
			s->fired[nf++].value = v;
			remove_at(s, i);
		} else {
			i++;
		}
	}
	atomic_fetch_add_explicit(&s->st_passes, 1, memory_order_relaxed);
	if (nf) {
		uint64_t now = garuda_now_ns();
		/* the stores landed within (prev_pass, now]: record that bound */
		uint64_t d = now - prev_pass;
		unsigned b = d ? 63 - (unsigned)__builtin_clzll(d) : 0;
		if (b >= SCANNER_LAT_BUCKETS)
			b = SCANNER_LAT_BUCKETS - 1;
		atomic_fetch_add_explicit(&s->st_hist[b], nf, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->st_detect_ns_sum, d * nf, memory_order_relaxed);
		atomic_store_explicit(&s->st_armed, s->narmed, memory_order_relaxed);
		deliver(s, nf, b, now);
	}
	return nf;
}

/* Sleep until a command is posted or timeout_ns passes (0 = no timeout). */
static void scanner_wait(struct scanner *s, unsigned seq, uint64_t timeout_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000ull),
			       .tv_nsec = (long)(timeout_ns % 1000000000ull) };
	atomic_store(&s->sleeping, 1);
	futex(&s->seq, FUTEX_WAIT_PRIVATE, seq, timeout_ns ? &ts : NULL);
	atomic_store(&s->sleeping, 0);
}

#define SLEEP_MIN_NS 32000ull

static void guard_handler(int sig)
{
	(void)sig;
}

static void *scanner_main(void *arg)
{
	struct scanner *s = arg;
	char name[16];
	snprintf(name, sizeof(name), "garuda-scan%u", s->index);
	pthread_setname_np(pthread_self(), name);
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0); /* short sleeps must be short */
	if (CPU_COUNT(&s->cpus) > 0 &&
	    pthread_setaffinity_np(pthread_self(), sizeof(s->cpus), &s->cpus) != 0)
		log_warning("scanner %u: cannot pin to node %d's CPUs", s->index, s->numa_node);

	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = scanner_guard_signal() };
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	s->guard_ok = timer_create(CLOCK_MONOTONIC, &sev, &s->guard) == 0;
	if (!s->guard_ok)
		log_warning("scanner %u: no write guard timer: %s", s->index, strerror(errno));

	uint64_t last_active = garuda_now_ns(), prev_pass = last_active, sleep_ns = 0;
	while (!s->stop) {
		unsigned seq = atomic_load(&s->seq);
		bool was_idle = s->narmed == 0;
		if (take_commands(s)) {
			/* new work: sleep short again; only the first arm after idle restarts
			 * the spin window (arms trickling in must not keep it spinning) */
			sleep_ns = 0;
			if (was_idle)
				last_active = garuda_now_ns();
		}
		if (s->stop)
			break;
		if (s->narmed == 0) {
			atomic_fetch_add_explicit(&s->st_parks, 1, memory_order_relaxed);
			scanner_wait(s, seq, 0);
			prev_pass = last_active = garuda_now_ns();
			sleep_ns = 0;
			continue;
		}
		uint64_t start = garuda_now_ns();
		unsigned fired = scan_pass(s, prev_pass);
		prev_pass = start;
		uint64_t now = garuda_now_ns();
		if (fired) {
			last_active = now;
			sleep_ns = 0;
			continue;
		}
		uint64_t spin_ns = (uint64_t)atomic_load_explicit(&s->tuning->spin_us, memory_order_relaxed) * 1000;
		if (now - last_active < spin_ns) {
			for (int i = 0; i < 16; i++)
				cpu_relax();
			continue;
		}
		uint64_t max_ns = (uint64_t)atomic_load_explicit(&s->tuning->max_sleep_us, memory_order_relaxed) * 1000;
		/* a timed futex wait costs ~15 us of CPU whatever its length: start at
		 * SLEEP_MIN_NS, shorter steps only burn CPU */
		sleep_ns = sleep_ns ? sleep_ns * 2 : SLEEP_MIN_NS;
		if (sleep_ns > max_ns)
			sleep_ns = max_ns;
		scanner_wait(s, seq, sleep_ns);
	}
	if (s->guard_ok)
		timer_delete(s->guard);
	return NULL;
}

int scanner_start(struct scanner **out, unsigned index, int numa_node, const cpu_set_t *cpus,
		  struct scanner_tuning *tuning, struct notice_queue *notices)
{
	struct scanner *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->index = index;
	s->numa_node = numa_node;
	if (cpus)
		s->cpus = *cpus;
	s->tuning = tuning;
	s->notices = notices;
	pthread_mutex_init(&s->lock, NULL);
	struct sigaction sa = { .sa_handler = guard_handler }; /* no SA_RESTART: EINTR */
	sigemptyset(&sa.sa_mask);
	sigaction(scanner_guard_signal(), &sa, NULL);
	int r = pthread_create(&s->thread, NULL, scanner_main, s);
	if (r) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return -r;
	}
	pthread_getcpuclockid(s->thread, &s->cpu_clock);
	*out = s;
	return 0;
}

void scanner_stop(struct scanner *s)
{
	if (!s)
		return;
	post(s, &(struct cmd){ .kind = CMD_STOP });
	pthread_join(s->thread, NULL);
	take_commands(s); /* anything posted after the stop */
	for (unsigned i = 0; i < s->narmed; i++)
		release(&s->armed[i]);
	free(s->armed);
	free(s->hot);
	free(s->fired);
	free(s->cmds);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int scanner_list_armed(struct scanner *s, struct segment *seg, struct armed_view **out)
{
	struct list_request lr = { .seg = seg };
	pthread_mutex_init(&lr.lock, NULL);
	pthread_cond_init(&lr.cond, NULL);
	post(s, &(struct cmd){ .kind = CMD_LIST, .obj = &lr });
	pthread_mutex_lock(&lr.lock);
	while (!lr.done)
		pthread_cond_wait(&lr.cond, &lr.lock);
	pthread_mutex_unlock(&lr.lock);
	pthread_cond_destroy(&lr.cond);
	pthread_mutex_destroy(&lr.lock);
	*out = lr.views;
	return lr.n;
}

void scanner_get_stats(struct scanner *s, struct scanner_stats *o)
{
	memset(o, 0, sizeof(*o));
	o->numa_node = s->numa_node;
	o->armed = atomic_load_explicit(&s->st_armed, memory_order_relaxed);
	o->passes = atomic_load_explicit(&s->st_passes, memory_order_relaxed);
	o->completions = atomic_load_explicit(&s->st_completions, memory_order_relaxed);
	o->parks = atomic_load_explicit(&s->st_parks, memory_order_relaxed);
	struct timespec ts;
	if (clock_gettime(s->cpu_clock, &ts) == 0)
		o->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	for (int i = 0; i < 4; i++)
		o->by_form[i] = atomic_load_explicit(&s->st_by_form[i], memory_order_relaxed);
	o->detect_ns_sum = atomic_load_explicit(&s->st_detect_ns_sum, memory_order_relaxed);
	for (int i = 0; i < SCANNER_LAT_BUCKETS; i++)
		o->detect_hist[i] = atomic_load_explicit(&s->st_hist[i], memory_order_relaxed);
}
