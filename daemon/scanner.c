/* scanner.c — see scanner.h. Holds the command queue, the pass (scan_pass), the
 * wait, the thread's lifecycle and its stats; the armed set is armed.c's, every write
 * to a client readiness.c's, and every decision of the wait plan proto/policy.c's
 * (docs/plans.md, "In garudad"):
 *   - with nothing armed, park in FUTEX_WAIT on the command sequence until the loop
 *     posts a command (every plan);
 *   - poll: spin (a pass, cpu_relax, then spin_give_way(): see util/cpu.h);
 *   - every spin step (poll's, the ladder's, +predict's): where the CPU has a hardware
 *     word wait (util/wordwait.h), config wordwait is auto and every armed descriptor
 *     is on one cache line, the step idles parked on that line (at most
 *     SCANNER_WORDWAIT_STEP_NS, a store to the line ends it) instead of in cpu_relax;
 *     the plan decides as before, only how a step idles changes;
 *   - flag without +predict: garuda_policy_ladder();
 *   - +predict: garuda_policy_next() over the armed set's waits: spin, or sleep
 *     until an absolute time (a FUTEX_WAIT_BITSET, so a post still wakes it);
 *   - what each find records: garuda_policy_find();
 *   - stream order: after every change of the set (commands taken, descriptors
 *     fired) garuda_policy_order() queues a descriptor behind an armed predecessor on
 *     its word, and the pass that finds the predecessor starts its clock.
 * The wake time is published (wake_at): an ARM wakes a sleeping scanner only when its
 * deadline is earlier. +predict sleeps toward a deadline end early by the running
 * mean of how late timed wakes come (wake_late_ns, thread-private; the tuning's
 * early_ns).
 */
#include "scanner.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "armed.h"
#include "clock.h"
#include "cpu.h"
#include "errcode.h"
#include "futex.h"
#include "log.h"
#include "points.h"
#include "readiness.h"
#include "seq.h"
#include "wordwait.h"

/* The longest a spin step parks in a hardware word wait. Only a store to the watched
 * line ends it early: a command posted meanwhile (an ARM on another line, a DISARM)
 * waits for its end, as it waits for a spin step's end today (~2 us here), so this
 * stays a few microseconds. A variant that cannot wait this short (wfe: the event
 * stream's 100 us) is not used by the scanner. */
#define SCANNER_WORDWAIT_STEP_NS 8000u

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

struct cmd {
	enum cmd_kind kind;
	struct armed a;   /* ARM */
	void *obj;        /* DROP_*: segment, binding or sink; DISARM: sink. Compared only,
			   * never dereferenced: it may be freed by the time the scanner reads it */
	uint32_t segment_id, index;
	uint64_t token, cookie;
	uint64_t session_id; /* DISARM, answered drops: who gets the answer */
	bool noreply;
	bool answer; /* DROP_SEGMENT / DROP_BINDING: acknowledge once applied */
};

struct scanner {
	unsigned index;
	int numa_node;
	cpu_set_t cpus;
	struct scanner_tuning *tuning;
	struct notice_queue *notices;
	pthread_t thread;
	clockid_t cpu_clock;

	/* command queue, filled by the loop thread */
	pthread_mutex_t lock;
	struct cmd *cmds;
	unsigned ncmds, capcmds;
	atomic_uint seq;     /* bumped per posted command; the futex word */
	atomic_int sleeping; /* the thread is in (or about to enter) FUTEX_WAIT */
	atomic_uint_fast64_t wake_at; /* while sleeping: when it wakes (UINT64_MAX: parked) */

	/* thread-private */
	struct armed_set set;
	struct readiness out;
	uint64_t gen; /* commands applied so far */
	uint64_t wake_late_ns; /* +predict: how late timed wakes come, a running mean */
	uintptr_t line; /* the cache line every armed descriptor's word is on; 0: nothing
			 * armed, or several lines (note_line, after every change of the set) */
	struct garuda_policy_wait **waits; /* waits on touched words, for garuda_policy_order() */
	uint64_t *scratch;                 /* garuda_policy_order()'s table */
	size_t waits_cap, scratch_cap;
	bool stop;

	/* stats, written by the thread, read by anyone */
	atomic_uint_fast64_t st_armed, st_wake_late_ns;
	atomic_uint_fast64_t st_count[SC_COUNT_]; /* proto/counters.h's table */
	atomic_uint_fast64_t st_hist[SCANNER_LAT_BUCKETS];
	atomic_uint_fast64_t st_detect_ns_sum;
	atomic_uint_fast64_t st_by_form[GARUDA_FORM_COUNT];
};

/* Add n to one of the table's counters (proto/counters.h). */
static void count(struct scanner *s, enum garuda_scanner_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&s->st_count[c], n, memory_order_relaxed);
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
	bool urgent = backlog || c->answer ||
		      (c->kind != CMD_DROP_SEGMENT && c->kind != CMD_DROP_BINDING && c->kind != CMD_DROP_SINK);
	if (!atomic_load(&s->sleeping))
		return;
	/* an ARM wakes it only when its deadline is earlier than the wake time */
	if (!backlog && c->kind == CMD_ARM) {
		urgent = garuda_policy_deadline(&c->a.wait) < atomic_load(&s->wake_at);
		count(s, urgent ? SC_arm_wakes : SC_arm_nowakes, 1);
	}
	if (urgent)
		futex_wake((void *)&s->seq, 1, false);
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
		.point_key = r->point_key,
		.point_slot = r->point_slot,
	};
	garuda_policy_wait_init(&c.a.wait, (uintptr_t)c.a.word, r->target, r->arm_ns, r->arm_ns,
				r->sleep_ns, r->exact_sleep_ns);
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

static void post_drop(struct scanner *s, enum cmd_kind kind, void *obj, const struct scanner_reply *reply)
{
	struct cmd c = { .kind = kind, .obj = obj };
	if (reply) {
		c.answer = true;
		c.session_id = reply->session_id;
		c.cookie = reply->cookie;
		c.noreply = reply->noreply;
	}
	post(s, &c);
}

void scanner_drop_segment(struct scanner *s, struct segment *seg, const struct scanner_reply *reply)
{
	post_drop(s, CMD_DROP_SEGMENT, seg, reply);
}

void scanner_drop_binding(struct scanner *s, struct binding *b, const struct scanner_reply *reply)
{
	post_drop(s, CMD_DROP_BINDING, b, reply);
}

void scanner_drop_sink(struct scanner *s, struct sink *sink)
{
	post(s, &(struct cmd){ .kind = CMD_DROP_SINK, .obj = sink });
}

/* ---------------- thread side ---------------- */

static void answer_list(struct scanner *s, struct list_request *lr)
{
	unsigned n = 0;
	for (unsigned i = 0; i < s->set.n; i++)
		n += s->set.armed[i].seg == lr->seg;
	lr->views = calloc(n ? n : 1, sizeof(*lr->views));
	lr->n = lr->views ? 0 : -ENOMEM;
	for (unsigned i = 0; lr->views && i < s->set.n; i++) {
		const struct armed *a = &s->set.armed[i];
		if (a->seg == lr->seg)
			lr->views[lr->n++] = (struct armed_view){ .index = a->index, .form = a->form,
								  .target = a->target, .token = a->token };
	}
	pthread_mutex_lock(&lr->lock);
	lr->done = true;
	pthread_cond_signal(&lr->cond);
	pthread_mutex_unlock(&lr->lock);
}

static enum removal_kind removal_kind_of(enum cmd_kind k)
{
	switch (k) {
	case CMD_DROP_SEGMENT:
		return RM_DROP_SEGMENT;
	case CMD_DROP_BINDING:
		return RM_DROP_BINDING;
	case CMD_DROP_SINK:
		return RM_DROP_SINK;
	default:
		return RM_DISARM;
	}
}

/* Apply a batch's removals; every DISARM and every answered drop is answered through
 * a notice, after the removal (no pass runs in between: this thread runs them). */
static void apply_removals(struct scanner *s, struct removal *rem, const struct cmd **c, unsigned n)
{
	armed_apply_removals(&s->set, rem, n, s->index, s->notices);
	for (unsigned i = 0; i < n; i++) {
		if (rem[i].kind != RM_DISARM && !c[i]->answer)
			continue;
		notice_push(s->notices, &(struct notice){ .kind = NOTICE_ANSWER,
							  .session_id = c[i]->session_id,
							  .cookie = c[i]->cookie,
							  .code = rem[i].kind != RM_DISARM || rem[i].found ? 0 : -GARUDA_E_NOT_ARMED,
							  .noreply = c[i]->noreply });
	}
}

/* +predict sleeps end early by the running mean of how late timed wakes come (on a
 * loaded or virtual machine tens of microseconds), at most this much */
#define WAKE_LATE_MAX_NS 200000ull

/* The plan's tuning as the policy takes it (proto/policy.h). */
static struct garuda_policy_tuning tuning_of(const struct scanner *s)
{
	const struct scanner_tuning *t = s->tuning;
	return (struct garuda_policy_tuning){
		.spin_ns = (uint64_t)atomic_load_explicit(&t->spin_us, memory_order_relaxed) * 1000,
		.forever = atomic_load_explicit(&t->spin_forever, memory_order_relaxed),
		.max_step_ns = (uint64_t)atomic_load_explicit(&t->max_sleep_us, memory_order_relaxed) * 1000,
		.early_ns = s->wake_late_ns < WAKE_LATE_MAX_NS ? s->wake_late_ns : WAKE_LATE_MAX_NS,
	};
}

/* Room for the armed set's waits and the policy's scratch. false when out of memory
 * (the waits keep their clocks). */
static bool waits_room(struct scanner *s)
{
	unsigned n = s->set.n;
	size_t scratch = garuda_policy_order_scratch(n);
	if (n > s->waits_cap || scratch > s->scratch_cap) {
		struct garuda_policy_wait **w = realloc(s->waits, (n ? n : 1) * sizeof(*w));
		if (w)
			s->waits = w;
		uint64_t *sc = realloc(s->scratch, scratch * sizeof(*sc));
		if (sc)
			s->scratch = sc;
		if (!w || !sc)
			return false;
		s->waits_cap = n;
		s->scratch_cap = scratch;
	}
	return true;
}

/* The words a change of the set touched (arms taken, descriptors fired): stream order
 * is per word, so only the waits on them need ordering again. Up to TOUCH_MAX words,
 * else all (a removal, a big batch). */
#define TOUCH_MAX 8
struct touched {
	unsigned n;
	bool all;
	const uint64_t *word[TOUCH_MAX];
};

static void touch(struct touched *t, const uint64_t *word)
{
	for (unsigned i = 0; i < t->n && !t->all; i++)
		if (t->word[i] == word)
			return;
	if (t->n == TOUCH_MAX)
		t->all = true;
	else if (!t->all)
		t->word[t->n++] = word;
}

static bool touched(const struct touched *t, const uint64_t *word)
{
	for (unsigned i = 0; i < t->n && !t->all; i++)
		if (t->word[i] == word)
			return true;
	return t->all;
}

/* Stream order on the touched words: the pass that found a predecessor starts its
 * successor's clock at landing_ns (policy.h). O(armed) pointer compares, the policy's
 * O(waits on those words). */
static void order_touched(struct scanner *s, const struct touched *t, uint64_t landing_ns)
{
	if ((!t->n && !t->all) || !s->set.n || !waits_room(s))
		return;
	unsigned k = 0;
	for (unsigned i = 0; i < s->set.n; i++)
		if (touched(t, s->set.hot[i].word))
			s->waits[k++] = &s->set.armed[i].wait;
	if (k)
		garuda_policy_order(s->waits, k, landing_ns, s->scratch);
}

/* The set changed: is every armed word on one cache line? O(armed) at most, and it
 * stops at the second line it finds (one busy stream: its descriptors share a word). */
static void note_line(struct scanner *s)
{
	const uintptr_t mask = ~(uintptr_t)63;
	uintptr_t line = s->set.n ? (uintptr_t)s->set.hot[0].word & mask : 0;
	for (unsigned i = 1; line && i < s->set.n; i++)
		if (((uintptr_t)s->set.hot[i].word & mask) != line)
			line = 0;
	s->line = line;
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
	const struct cmd **remcmd = NULL; /* the command of each removal */
	unsigned nrem = 0;
	struct touched words = { 0 };
	uint64_t now = garuda_now_ns();
	for (unsigned i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		uint64_t gen = ++s->gen;
		switch (c->kind) {
		case CMD_ARM:
			c->a.gen = gen;
			c->a.wait.taken_ns = now;
			armed_push(&s->set, &c->a, s->index);
			touch(&words, c->a.word);
			armed = true;
			break;
		case CMD_DISARM:
		case CMD_DROP_SEGMENT:
		case CMD_DROP_BINDING:
		case CMD_DROP_SINK:
			if (!rem && (!(rem = malloc(n * sizeof(*rem))) ||
				     !(remcmd = malloc(n * sizeof(*remcmd))))) {
				log_err("scanner %u: out of memory for removals", s->index);
				abort();
			}
			rem[nrem] = (struct removal){ .kind = removal_kind_of(c->kind), .obj = c->obj,
						      .segment_id = c->segment_id, .index = c->index,
						      .token = c->token, .gen = gen };
			remcmd[nrem++] = c;
			words.all = true; /* a successor of what goes may start */
			break;
		case CMD_LIST:
		case CMD_STOP:
			break;
		}
	}
	if (nrem)
		apply_removals(s, rem, remcmd, nrem);
	free(rem);
	free(remcmd);
	for (unsigned i = 0; i < n; i++) { /* after the batch: the set as it now stands */
		if (cmds[i].kind == CMD_LIST)
			answer_list(s, cmds[i].obj);
		else if (cmds[i].kind == CMD_STOP)
			s->stop = true;
	}
	free(cmds);
	order_touched(s, &words, now); /* new arms queue behind armed predecessors; removals start successors */
	note_line(s);
	atomic_store_explicit(&s->st_armed, s->set.n, memory_order_relaxed);
	return armed;
}

/* Count f[0..nf) before anything is sent: whoever sees a readiness can already see
 * it in the counters (a client that got its last READY may ask at once); record each
 * into its point, exact or censored. */
static void count_fired(struct scanner *s, const struct armed *f, unsigned nf, unsigned bucket,
			uint64_t now, uint64_t prev_pass, bool slept)
{
	count(s, slept ? SC_censored : SC_exact, nf);
	struct garuda_policy_tuning t = tuning_of(s);
	for (unsigned i = 0; i < nf; i++) {
		/* the store landed in (prev_pass, now]: what that tells its point is the
		 * policy's (garuda_policy_find) */
		struct garuda_find fd = garuda_policy_find(&f[i].wait, &t, now, prev_pass, slept);
		if (fd.kind == GARUDA_FIND_LATE)
			count(s, SC_late_wakes, 1);
		else if (fd.kind != GARUDA_FIND_UNKNOWN)
			points_record(f[i].sink, f[i].point_slot, f[i].point_key,
				      fd.kind == GARUDA_FIND_EXACT, fd.ns);
		atomic_fetch_add_explicit(&f[i].sink->count[SN_completions], 1, memory_order_relaxed);
		unsigned form = garuda_form_index(f[i].form);
		atomic_fetch_add_explicit(&f[i].sink->by_form[form], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->st_by_form[form], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&f[i].sink->detect_hist[bucket], 1, memory_order_relaxed);
	}
	count(s, SC_completions, nf);
}

/* One pass over the armed set: O(armed). Returns completions delivered. slept: the
 * thread slept since the previous pass (its completions are censored). */
/* Move descriptor i into set->fired[nf] (its word read as v); the last one takes its
 * place. */
static inline unsigned fire_at(struct armed_set *set, unsigned i, unsigned nf, uint64_t v)
{
	set->fired[nf] = set->armed[i];
	set->fired[nf].value = v;
	armed_remove_at(set, i);
	return nf + 1;
}

/* Move every descriptor whose word reached its target into set->fired[nf..): the
 * pass's loop, one load and one compare a descriptor. */
static unsigned sweep(struct armed_set *set, unsigned nf)
{
	for (unsigned i = 0; i < set->n;) {
		uint64_t v = __atomic_load_n(set->hot[i].word, __ATOMIC_ACQUIRE);
		if (garuda_reached(v, set->hot[i].target))
			nf = fire_at(set, i, nf, v);
		else
			i++;
	}
	return nf;
}

/* The same over the descriptors on the words t names only. */
static unsigned sweep_touched(struct armed_set *set, unsigned nf, const struct touched *t)
{
	for (unsigned i = 0; i < set->n;) {
		if (!touched(t, set->hot[i].word)) {
			i++;
			continue;
		}
		uint64_t v = __atomic_load_n(set->hot[i].word, __ATOMIC_ACQUIRE);
		if (garuda_reached(v, set->hot[i].target))
			nf = fire_at(set, i, nf, v);
		else
			i++;
	}
	return nf;
}

static unsigned scan_pass(struct scanner *s, uint64_t prev_pass, bool slept)
{
	struct armed_set *set = &s->set;
	unsigned nf = sweep(set, 0);
	count(s, SC_passes, 1);
	if (!nf)
		return 0;
	/* a store that landed during the sweep fired the descriptors read after it, not
	 * those read before: the words that fired are looked at once more, so that
	 * whatever a readiness of this pass tells a client (a word reached v) holds for
	 * all its descriptors (their quota and count released before it is sent; a
	 * 65,536-descriptor pass left ~40,000 armed behind its READY) */
	struct touched words = { 0 };
	for (unsigned i = 0; i < nf; i++)
		touch(&words, set->fired[i].word);
	if (set->n)
		nf = sweep_touched(set, nf, &words);
	note_line(s);
	uint64_t now = garuda_now_ns();
	/* the stores landed within (prev_pass, now]: record that bound */
	uint64_t d = now - prev_pass;
	unsigned b = d ? 63 - (unsigned)__builtin_clzll(d) : 0;
	if (b >= SCANNER_LAT_BUCKETS)
		b = SCANNER_LAT_BUCKETS - 1;
	atomic_fetch_add_explicit(&s->st_hist[b], nf, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->st_detect_ns_sum, d * nf, memory_order_relaxed);
	atomic_store_explicit(&s->st_armed, set->n, memory_order_relaxed);
	count_fired(s, set->fired, nf, b, now, prev_pass, slept);
	/* the armed quota first: a client that got its READY may re-arm at once */
	for (unsigned i = 0; i < nf; i++)
		armed_release_quota(&set->fired[i]);
	readiness_deliver(&s->out, set->fired, nf);
	order_touched(s, &words, now); /* the successors of what landed start their clocks */
	for (unsigned i = 0; i < nf; i++)
		armed_release_refs(&set->fired[i], s->notices);
	return nf;
}

/* Sleep until a command is posted or CLOCK_MONOTONIC reaches until_ns (UINT64_MAX:
 * park, no timeout). wake_at tells post() when it wakes anyway. */
static void scanner_wait(struct scanner *s, unsigned seq, uint64_t until_ns, bool arms_wake)
{
	readiness_quiesce(&s->out); /* no guard tick may cut the sleep short */
	atomic_store(&s->wake_at, arms_wake ? UINT64_MAX : until_ns);
	atomic_store(&s->sleeping, 1);
	/* The pair with post(): it bumps seq, then loads sleeping; we store sleeping, then
	 * FUTEX_WAIT compares seq. The fence orders our store before the kernel's read of
	 * seq explicitly instead of relying on the barrier inside futex_wait_setup(): either
	 * post() sees sleeping and wakes us, or the kernel sees the new seq and returns at
	 * once (tests/models/scanner_park.pml, variant BROKEN_NO_FENCE, loses the wake). */
	atomic_thread_fence(memory_order_seq_cst);
	futex_wait_until((void *)&s->seq, seq, until_ns, false); /* UINT64_MAX: park */
	atomic_store(&s->sleeping, 0);
}

/* The plan's answer after a pass that fired nothing: 0 = spin, else sleep until.
 * +predict: the policy's look over the armed set (proto/policy.h); flag: the ladder. */
static uint64_t plan_wait(struct scanner *s, uint64_t now, uint64_t last_active, uint64_t *sleep_ns)
{
	struct garuda_policy_tuning t = tuning_of(s);
	if (atomic_load_explicit(&s->tuning->predict, memory_order_relaxed))
		return garuda_policy_next(&s->set.armed[0].wait, sizeof(struct armed), s->set.n, &t, now,
					  sleep_ns);
	return garuda_policy_ladder(&t, now, last_active, sleep_ns);
}

const struct wordwait *scanner_wordwait(const struct scanner_tuning *tuning)
{
	return atomic_load_explicit(&tuning->wordwait, memory_order_relaxed) ? wordwait_system()
									     : wordwait_off();
}

/* A spin step's idle in a hardware word wait (util/wordwait.h): when every armed
 * descriptor is on one line, watch it, look once more at what the pass looked at
 * (a store that landed since, a command posted since the loop took them: the step
 * ends at once), then park until a store to the line or SCANNER_WORDWAIT_STEP_NS.
 * false: no hardware wait here; the caller idles as before (cpu_relax). */
static bool wordwait_step(struct scanner *s, unsigned seq)
{
	if (!s->line)
		return false;
	const struct wordwait *w = scanner_wordwait(s->tuning);
	if (w->variant == WORDWAIT_SPIN || w->min_park_ns > SCANNER_WORDWAIT_STEP_NS)
		return false;
	wordwait_arm(w, (const void *)s->line);
	if (atomic_load(&s->seq) != seq)
		return true;
	for (unsigned i = 0; i < s->set.n; i++)
		if (garuda_reached(__atomic_load_n(s->set.hot[i].word, __ATOMIC_ACQUIRE), s->set.hot[i].target))
			return true;
	if (wordwait_park(w, SCANNER_WORDWAIT_STEP_NS))
		count(s, SC_wordwait_steps, 1);
	return true;
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

	readiness_init(&s->out, s->index, s->notices);

	uint64_t last_active = garuda_now_ns(), prev_pass = last_active, sleep_ns = 0;
	bool slept = false;
	while (!s->stop) {
		unsigned seq = atomic_load(&s->seq);
		bool was_idle = s->set.n == 0;
		if (take_commands(s)) {
			/* new work: sleep short again; only the first arm after idle restarts
			 * the spin window (arms trickling in must not keep it spinning) */
			sleep_ns = 0;
			if (was_idle)
				last_active = garuda_now_ns();
		}
		if (s->stop)
			break;
		if (s->set.n == 0) {
			count(s, SC_parks, 1);
			scanner_wait(s, seq, UINT64_MAX, true);
			prev_pass = last_active = garuda_now_ns();
			sleep_ns = 0;
			slept = true;
			continue;
		}
		uint64_t start = garuda_now_ns();
		unsigned fired = scan_pass(s, prev_pass, slept);
		prev_pass = start;
		slept = false;
		uint64_t now = garuda_now_ns();
		if (fired) {
			last_active = now;
			sleep_ns = 0;
			continue;
		}
		uint64_t until = plan_wait(s, now, last_active, &sleep_ns);
		if (!until) {
			count(s, SC_spins, 1);
			if (!wordwait_step(s, seq))
				for (int i = 0; i < 16; i++)
					cpu_relax();
			spin_give_way();
			continue;
		}
		bool predict = atomic_load_explicit(&s->tuning->predict, memory_order_relaxed);
		count(s, SC_sleeps, 1);
		scanner_wait(s, seq, until, !predict);
		slept = true;
		uint64_t woke = garuda_now_ns();
		if (predict && woke >= until) { /* a timed wake (a post wakes it early) */
			s->wake_late_ns = s->wake_late_ns - s->wake_late_ns / 8 + (woke - until) / 8;
			atomic_store_explicit(&s->st_wake_late_ns, s->wake_late_ns, memory_order_relaxed);
		}
	}
	readiness_fini(&s->out);
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
	readiness_install_guard_handler();
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
	armed_set_free(&s->set);
	free(s->waits);
	free(s->scratch);
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
	for (unsigned c = 0; c < SC_COUNT_; c++)
		o->counters[c] = atomic_load_explicit(&s->st_count[c], memory_order_relaxed);
	o->wake_late_ns = atomic_load_explicit(&s->st_wake_late_ns, memory_order_relaxed);
	struct timespec ts;
	if (clock_gettime(s->cpu_clock, &ts) == 0)
		o->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	for (int i = 0; i < GARUDA_FORM_COUNT; i++)
		o->by_form[i] = atomic_load_explicit(&s->st_by_form[i], memory_order_relaxed);
	o->detect_ns_sum = atomic_load_explicit(&s->st_detect_ns_sum, memory_order_relaxed);
	for (int i = 0; i < SCANNER_LAT_BUCKETS; i++)
		o->detect_hist[i] = atomic_load_explicit(&s->st_hist[i], memory_order_relaxed);
}
