/* scanner.c — see scanner.h. Holds the command queue, the step (scan_step), the
 * wait, the thread's lifecycle and its stats; the armed payload is armed.c's, every
 * write to a client readiness.c's, and every decision of the wait plan the watcher's
 * (proto/watch.h over proto/policy.h; docs/plans.md, "In garudad" and "The watcher"):
 *   - with nothing armed, park in FUTEX_WAIT on the command sequence until the loop
 *     posts a command (every plan);
 *   - a step loads the words the watcher says are due (garuda_watch_due), reports
 *     each (garuda_watch_found: what fired, what each find records, the successor's
 *     clock in stream order) and delivers what fired; what is not due is not loaded;
 *     a step that delivered, when a sleep comes next (not a spin), gives way
 *     (sched_yield) to whoever its deliveries woke on this CPU;
 *   - then garuda_watch_next(): spin (0), or sleep until an absolute time (a
 *     FUTEX_WAIT_BITSET, so a post still wakes it), or park; before a park or a sleep
 *     of CMD_SHED_SLEEP_NS or more, the command arrays a burst grew are freed
 *     (shed_commands: idle arms hold no queue memory);
 *   - every spin step: where the CPU has a hardware word wait (util/wordwait.h),
 *     config wordwait is auto and every armed descriptor is on one cache line, the
 *     step idles parked on that line (at most SCANNER_WORDWAIT_STEP_NS, a store to the
 *     line ends it) instead of in cpu_relax; the plan decides as before, only how a
 *     step idles changes.
 * The wake time is published (wake_at): an ARM wakes a sleeping scanner only when its
 * deadline is earlier. +predict sleeps toward a deadline end early by the running
 * mean of how late timed wakes come (the watcher keeps it: garuda_watch_woke_from(),
 * garuda_watch_early_ns(); the tuning's early_ns).
 */
#include "scanner.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "armed.h"
#include "armed_index.h"
#include "clock.h"
#include "cpu.h"
#include "errcode.h"
#include "futex.h"
#include "log.h"
#include "points.h"
#include "readiness.h"
#include "seq.h"
#include "watch.h"
#include "wordwait.h"

/* The longest a spin step parks in a hardware word wait. Only a store to the watched
 * line ends it early: a command posted meanwhile (an ARM on another line, a DISARM)
 * waits for its end, as it waits for a spin step's end today (~2 us here), so this
 * stays a few microseconds. A variant that cannot wait this short (wfe: the event
 * stream's 100 us) is not used by the scanner. */
#define SCANNER_WORDWAIT_STEP_NS 8000u

/* A sweep that goes on step after step (a tenant's idle words, hundreds of thousands)
 * gives way (sched_yield) once this long, not after every step: a runnable thread on
 * the scanner's CPU waits at most this for it, and the sweep pays one syscall per
 * ~2,500 looks instead of one per step's 512 (a fifth of an idle sweep's CPU here,
 * garuda-bench --only=tenants). */
#define SCANNER_SWEEP_GIVE_WAY_NS 32000u

enum cmd_kind { CMD_ARM, CMD_DISARM, CMD_DROP_SEGMENT, CMD_DROP_BINDING, CMD_DROP_SINK, CMD_LIST, CMD_STOP };

/* CMD_LIST: the loop thread waits on done while the scanner fills views */
struct list_request {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct segment *seg;
	uint64_t session_id; /* seg's session */
	struct armed_view *views;
	int n;
};

struct cmd {
	enum cmd_kind kind;
	struct armed a;   /* ARM: the payload */
	struct garuda_policy_wait pw; /* ARM: its wait (the key is its word's address) */
	const uint64_t *word; /* ARM, DISARM, DROP_BINDING: the slot's word */
	void *obj;        /* DROP_*: segment, binding or sink; DISARM: sink. Compared only,
			   * never dereferenced: a binding or sink may be freed by the time the
			   * scanner reads it; but a DISARM's, which it holds a reference on until
			   * it is taken (its session's untaken count, sink.h). A DROP_SEGMENT holds a reference on its segment
			   * and a DROP_BINDING on its binding (post_drop's callers) until it is
			   * applied whole: carried over (apply_removals), it still names that
			   * object alone, no later one at its address, and a DROP_BINDING's
			   * binding is read (its arms: drop_binding_walk) */
	uint32_t segment_id, index;
	uint32_t id;      /* ARM, once applied: its watcher id */
	uint64_t token, cookie;
	uint64_t session_id; /* DISARM, drops: whose (who gets the answer; a drop walks its words) */
	bool noreply;
	bool answer; /* DROP_SEGMENT / DROP_BINDING: acknowledge once applied whole */
	uint32_t walk_left; /* DROP_SEGMENT / DROP_SINK carried over: its session's words it
			     * has still to pass (0: a new drop, all of them) */
};

struct scanner {
	unsigned index;
	int numa_node;
	cpu_set_t cpus;
	struct scanner_tuning *tuning;
	struct notice_queue *notices;
	pthread_t thread;
	clockid_t cpu_clock;
	/* the thread's start: readiness_init()'s result, posted before it scans */
	sem_t started;
	int start_err;

	/* command queue, filled by the loop thread */
	pthread_mutex_t lock;
	struct cmd *cmds;
	unsigned ncmds, capcmds;
	/* the scanner's: the array it took last, emptied, which the next take hands the
	 * loop thread in exchange (no allocation per batch; freed by scanner_destroy) */
	struct cmd *spare;
	unsigned capspare;
	/* the scanner's: the array taken from the queue, applied SCANNER_TAKE_STEP_CMDS a
	 * take from heldat on, a step between (its rest is older than anything posted
	 * since, and goes first); the spare once applied whole */
	struct cmd *held;
	unsigned nheld, heldat, capheld;
	/* the scanner's: the last take applied a held rest and did not look at the queue,
	 * so the seq loaded before it witnesses nothing about the queue: the thread takes
	 * once more before it sleeps (backlog). Without it, commands posted before that
	 * seq load waited in the queue of a parked scanner, their session paused for them
	 * forever (test_soak's slow reader, once the shares cut takes often) */
	bool queue_unseen;
	/* the loop thread's alone: ARMs and DISARMs staged since its last scanner_flush(),
	 * posted together (one lock, one seq bump, one wake decision for a callback's
	 * requests: per command, the lock's hand-offs with the take were an eighth of
	 * garudad's CPU under an ARM flood, docs/plans.md); empty outside a callback */
	struct cmd *stage;
	unsigned nstage, capstage;
	atomic_uint seq;     /* bumped per post; the futex word */
	atomic_int sleeping; /* the thread is in (or about to enter) FUTEX_WAIT */
	atomic_uint_fast64_t wake_at; /* while sleeping: when it wakes (UINT64_MAX: parked) */

	/* thread-private: the watcher (proto/watch.h: the waits by word, the due
	 * schedule, the owners: sessions by id) and the payload of each wait by its id */
	struct garuda_watch watch;
	struct armed *pay;       /* [paycap >= garuda_watch_capacity()] */
	struct armed_index deep; /* the waits on deep words, for their DISARMs */
	uint32_t paycap;
	uint32_t *due;           /* a step's due words [SCANNER_STEP_MAX] */
	struct garuda_watch_fire *fires; /* one word's fires [firescap] */
	uint32_t firescap;
	struct fired *fired;     /* a step's fired payloads [firedcap] */
	uint32_t firedcap;
	struct armed_releases rel; /* a step's or a take's releases (armed.h), flushed
				    * before it answers or delivers: empty between them */
	struct garuda_watch_tuning wt; /* what the watcher runs with (retuned on change) */
	struct readiness out;
	uintptr_t line; /* the cache line every armed descriptor's word is on; 0: nothing
			 * armed, or several lines (note_line, after every change of the set) */
	/* drops carried over (apply_removals): a session's end takes at most
	 * SCANNER_DROP_STEP_WAITS of its waits a step, its drops waiting here, answered
	 * when its last wait is out; unbudgeted: scanner_stop()'s last take */
	struct cmd *pending;
	unsigned npending, cappending;
	bool unbudgeted;
	bool stop;
	bool check_watch; /* GARUDA_WATCH_CHECK=1: check the watcher after every step */
	unsigned deliver_steps; /* steps that delivered, mod 2^32 (deliver_cpu_ns's sample) */

	/* stats, written by the thread, read by anyone */
	atomic_uint_fast64_t st_armed, st_wake_late_ns;
	atomic_uint_fast64_t st_count[SC_COUNT_]; /* proto/counters.h's table */
	atomic_uint_fast64_t st_hist[SCANNER_LAT_BUCKETS];
	atomic_uint_fast64_t st_detect_ns_sum;
	atomic_uint_fast64_t st_timer_hist[SCANNER_LAT_BUCKETS]; /* timed wakes by lateness */
	atomic_uint_fast64_t st_timer_ns_sum;
	struct form_tally st_by_form;
};

/* Add n to one of the table's counters (proto/counters.h). */
static void count(struct scanner *s, enum garuda_scanner_counter c, uint64_t n)
{
	atomic_fetch_add_explicit(&s->st_count[c], n, memory_order_relaxed);
}

/* ---------------- command queue (loop side) ---------------- */

#define CMD_BACKLOG 4096 /* queued commands that wake even a parked scanner */

/* Room for n elements of size in *p (*cap of them now), doubling from 64. Aborts when
 * out of memory: a command, a carried drop or a fire lost would leave dangling state. */
static void grow_for(struct scanner *s, void **p, uint32_t *cap, uint32_t n, size_t size, const char *what)
{
	if (n <= *cap)
		return;
	uint32_t c = *cap ? *cap : 64;
	while (c < n)
		c *= 2;
	void *q = realloc(*p, (size_t)c * size);
	if (!q) {
		log_err("scanner %u: out of memory for %s", s->index, what);
		abort();
	}
	*p = q;
	*cap = c;
}

/* Append n commands to the queue and wake the scanner if one of them must be taken
 * before its wake. */
static void post_many(struct scanner *s, const struct cmd *c, unsigned n)
{
	pthread_mutex_lock(&s->lock);
	grow_for(s, (void **)&s->cmds, &s->capcmds, s->ncmds + n, sizeof(*c), "a command");
	memcpy(&s->cmds[s->ncmds], c, n * sizeof(*c));
	s->ncmds += n;
	bool backlog = s->ncmds >= CMD_BACKLOG;
	pthread_mutex_unlock(&s->lock);
	atomic_fetch_add(&s->seq, 1);
	count(s, SC_posts, 1);
	if (!atomic_load(&s->sleeping))
		return;
	bool urgent = backlog;
	for (unsigned i = 0; i < n && !urgent; i++) {
		/* drops only release; they wait for the next wake, so a parked scanner with
		 * nothing armed stays parked when sessions end, unless they pile up */
		if (c[i].kind != CMD_ARM) {
			urgent = c[i].answer || (c[i].kind != CMD_DROP_SEGMENT && c[i].kind != CMD_DROP_BINDING &&
						 c[i].kind != CMD_DROP_SINK);
			continue;
		}
		/* an ARM wakes it only when its deadline is earlier than the wake time, or its
		 * target was reached already (a readiness owed at once, protocol.md §9.1) */
		urgent = garuda_policy_deadline(&c[i].pw) < atomic_load(&s->wake_at) ||
			 garuda_reached(__atomic_load_n(c[i].word, __ATOMIC_ACQUIRE), c[i].pw.target);
		count(s, urgent ? SC_arm_wakes : SC_arm_nowakes, 1);
	}
	if (urgent)
		futex_wake((void *)&s->seq, 1, false);
}

void scanner_flush(struct scanner *s)
{
	if (!s->nstage)
		return;
	post_many(s, s->stage, s->nstage);
	s->nstage = 0;
}

/* An ARM or a DISARM waits in the stage for the callback's scanner_flush(); any other
 * command flushes the stage first, so the queue keeps the order they were posted in. */
static void post(struct scanner *s, const struct cmd *c)
{
	/* an answer owed has its room in the notice queue before the command goes */
	if ((c->kind == CMD_DISARM || c->answer) && notice_reserve(s->notices)) {
		log_err("scanner %u: out of memory for an answer", s->index);
		abort(); /* as for the command itself, below */
	}
	if (c->kind != CMD_ARM && c->kind != CMD_DISARM) {
		scanner_flush(s);
		post_many(s, c, 1);
		return;
	}
	grow_for(s, (void **)&s->stage, &s->capstage, s->nstage + 1, sizeof(*c), "a command");
	s->stage[s->nstage++] = *c;
}

void scanner_arm(struct scanner *s, const struct arm_request *r)
{
	struct cmd c = { .kind = CMD_ARM };
	c.a = (struct armed){
		.token = r->token,
		.sink = r->sink,
		.seg = r->segment,
		.bind = r->binding,
		.index = r->index,
		.form = r->form,
		.point = r->point_key & POINT_KEY_NAMED ? (uint32_t)(r->point_key & ~POINT_KEY_NAMED) : 0,
		.point_slot = r->point_slot,
	};
	c.word = segment_word(r->segment, r->index);
	garuda_policy_wait_init(&c.pw, (uintptr_t)c.word, r->target, r->arm_ns, r->arm_ns,
				r->sleep_ns, r->exact_sleep_ns);
	post(s, &c);
}

void scanner_kick(struct scanner *s)
{
	scanner_flush(s);
	atomic_fetch_add(&s->seq, 1); /* as post(): a scanner about to sleep sees it */
	if (atomic_load(&s->sleeping))
		futex_wake((void *)&s->seq, 1, false);
}

void scanner_disarm(struct scanner *s, struct sink *sink, struct segment *seg, uint32_t index,
		    uint64_t token, uint64_t cookie, bool noreply)
{
	/* held until taken (take_commands): its untaken count is the sink's (sink.h) */
	struct cmd c = { .kind = CMD_DISARM, .obj = sink_ref(sink), .segment_id = seg->id, .index = index,
			 .word = segment_word(seg, index), .token = token, .cookie = cookie,
			 .session_id = sink->session_id, .noreply = noreply };
	post(s, &c);
}

static void post_drop(struct scanner *s, enum cmd_kind kind, void *obj, const uint64_t *word,
		      uint64_t session_id, const struct scanner_reply *reply)
{
	struct cmd c = { .kind = kind, .obj = obj, .word = word, .session_id = session_id };
	if (reply) {
		c.answer = true;
		c.session_id = reply->session_id;
		c.cookie = reply->cookie;
		c.noreply = reply->noreply;
	}
	post(s, &c);
}

void scanner_drop_segment(struct scanner *s, struct segment *seg, uint64_t session_id,
			  const struct scanner_reply *reply)
{
	/* given back once applied whole (apply_removals: armed_put, its last on the loop thread) */
	post_drop(s, CMD_DROP_SEGMENT, segment_ref(seg), NULL, session_id, reply);
}

void scanner_drop_binding(struct scanner *s, struct binding *b, struct segment *seg,
			  uint64_t session_id, const struct scanner_reply *reply)
{
	/* given back once applied whole (apply_removals); the drop walks the binding's own
	 * arms (their ids: binding_arms_add), not its slot's word */
	post_drop(s, CMD_DROP_BINDING, binding_ref(b), segment_word(seg, b->index), session_id, reply);
}

void scanner_drop_sink(struct scanner *s, struct sink *sink)
{
	/* the session id now (the loop thread's sink is alive): the scanner never reads
	 * the sink of a DROP_SINK, which may be freed by then */
	post(s, &(struct cmd){ .kind = CMD_DROP_SINK, .obj = sink, .session_id = sink->session_id });
}

/* ---------------- thread side ---------------- */

/* The waits armed on segment sg: its session's (owner's) words alone (a word's waits
 * are all that session's; only it arms on its segments' words), those of sg. It walked
 * every armed wait of every session, twice, the loop thread waiting for it: `garctl
 * segments` of a session with 16 segments, 16 such walks while another held 1,048,576. */
#define FOR_EACH_SEGMENT_ARMED(s, owner, sg, wi, id)                                         \
	for (uint32_t wi = garuda_watch_owner_first_word(&(s)->watch, owner);                  \
	     wi != GARUDA_WATCH_NONE; wi = garuda_watch_owner_next_word(&(s)->watch, wi))       \
		if ((s)->pay[garuda_watch_word_head(&(s)->watch, wi)].seg == (sg))             \
			for (uint32_t id = garuda_watch_word_head(&(s)->watch, wi);            \
			     id != GARUDA_WATCH_NONE; id = garuda_watch_next_on(&(s)->watch, id))

static void answer_list(struct scanner *s, struct list_request *lr)
{
	const struct garuda_watch *w = &s->watch;
	unsigned n = 0;
	uint32_t owner = garuda_watch_owner_find(w, lr->session_id);
	if (owner != GARUDA_WATCH_NONE)
		FOR_EACH_SEGMENT_ARMED(s, owner, lr->seg, wi, id)
			n++;
	lr->views = calloc(n ? n : 1, sizeof(*lr->views));
	lr->n = lr->views ? 0 : -ENOMEM;
	if (lr->views && owner != GARUDA_WATCH_NONE)
		FOR_EACH_SEGMENT_ARMED(s, owner, lr->seg, wi, id) {
			const struct armed *a = &s->pay[id];
			lr->views[lr->n++] = (struct armed_view){
				.index = a->index, .form = a->form,
				.target = garuda_watch_get(w, id)->target, .token = a->token };
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

/* Take wait id out if a removal of t takes it. */
static void remove_if_taken(struct scanner *s, const struct removal_table *t, uint32_t id,
			    uint64_t now)
{
	if (!armed_removals_takes(t, &s->pay[id]))
		return;
	armed_index_del(&s->deep, s->pay, id);
	armed_releases_add(&s->rel, &s->pay[id]);
	garuda_watch_remove(&s->watch, id, now);
}

/* A wait just added: on a word now deep (armed_index.h), index it, and the word's
 * other waits too when it just became deep. */
static void index_if_deep(struct scanner *s, uint32_t id)
{
	uint32_t wi = garuda_watch_get(&s->watch, id)->word;
	uint32_t n = garuda_watch_word_waits(&s->watch, wi);
	if (n < ARMED_INDEX_DEEP)
		return;
	if (armed_index_reserve(&s->deep, s->pay, n == ARMED_INDEX_DEEP ? n : 1) < 0) {
		log_err("scanner %u: out of memory for a deep word's index", s->index);
		abort(); /* a DISARM would miss what it should take */
	}
	if (n > ARMED_INDEX_DEEP) {
		armed_index_add(&s->deep, s->pay, id);
		return;
	}
	for (uint32_t w = garuda_watch_first_on(&s->watch, garuda_watch_word_key(&s->watch, wi));
	     w != GARUDA_WATCH_NONE; w = garuda_watch_next_on(&s->watch, w))
		if (!s->pay[w].indexed)
			armed_index_add(&s->deep, s->pay, w);
}

/* Put wait id (just armed, its payload's bind b) on b's list of arms (struct binding
 * arms). A full list is first compacted (the ids still armed with b, once each: the
 * payloads' `listed` marks those kept, cleared again), then grown if still over half
 * full: O(1) amortized a wait, the list at most about 4x b's armed waits. Aborts when
 * out of memory: b's drop would miss the wait, and write its eventfd after the ACK. */
static void binding_arms_add(struct scanner *s, struct binding *b, uint32_t id)
{
	if (b->narms == b->caparms) {
		uint32_t k = 0;
		for (uint32_t i = 0; i < b->narms; i++) {
			uint32_t x = b->arms[i];
			if (garuda_watch_live(&s->watch, x) && s->pay[x].bind == b && !s->pay[x].listed) {
				s->pay[x].listed = 1;
				b->arms[k++] = x;
			}
		}
		for (uint32_t i = 0; i < k; i++)
			s->pay[b->arms[i]].listed = 0;
		b->narms = k;
		if (k >= b->caparms / 2) {
			uint32_t cap = b->caparms ? 2 * b->caparms : 16;
			uint32_t *p = realloc(b->arms, cap * sizeof(*p));
			if (!p) {
				log_err("scanner %u: out of memory for a binding's arms", s->index);
				abort();
			}
			b->arms = p;
			b->caparms = cap;
		}
	}
	b->arms[b->narms++] = id;
}

/* Charge a removal's walk since t0 to the session of the word with this key (its
 * scan_ns, as a step's looks are), while the word keeps waits, whose sink is then
 * alive. */
static void charge_removal(struct scanner *s, uint64_t key, uint64_t t0)
{
	uint32_t id = garuda_watch_first_on(&s->watch, key);
	if (id != GARUDA_WATCH_NONE)
		sink_count(s->pay[id].sink, SN_scan_ns, garuda_now_ns() - t0);
}

/* A session's end, a close of one of its segments, and an UNBIND take at most this
 * many of its waits a step together (apply_removals; a word of its passed counts as
 * one): the end of one holding 65,535 (~150 ns each) was a 10 ms step, every other
 * session's looks waiting behind it; the rest go in the steps after, looks between. */
#define SCANNER_DROP_STEP_WAITS 1024u

/* One session's share of a step while another session holds waits on this scanner
 * (GARUDA_SCANNER_SHARE_STEP, proto/counters.h): a walk of its drops takes at most this
 * many of its waits, a take applies at most this many of its commands in a row. A
 * tenant that arms 65,536 waits and ends its session, again and again (the tenants
 * bench's dropcycle), kept the scanner on its own work up to 1,024 commands and 1,024
 * waits a step, ~0.3-0.5 ms here, while another tenant's word was due: that tenant's
 * p99 went +0.6 to +0.9 ms, and +0.40 to +0.49 ms with this share (docs/plans.md). A
 * session alone is never cut short: the throughput section's steady state, each of
 * its sessions at most 64 commands queued, does not meet it either. */
#define SCANNER_SHARE_STEP ((unsigned)GARUDA_SCANNER_SHARE_STEP)

/* Whether a session other than the one that owns owner (GARUDA_WATCH_NONE: none yet)
 * holds words on this scanner. */
static bool others_hold(const struct scanner *s, uint32_t owner)
{
	uint32_t mine = owner == GARUDA_WATCH_NONE ? 0 : garuda_watch_owner_words(&s->watch, owner);
	return garuda_watch_words(&s->watch) > mine;
}

/* Take out the waits on one word that a removal of t takes; returns how many it
 * looked at. The walk's time is charged to the word's session (charge_removal): a
 * DISARM that matches nothing on a shallow word costs a walk of its waits (fewer than
 * ARMED_INDEX_DEEP), and a session that sends such DISARMs pays for them in `garctl
 * clients`. */
static uint64_t remove_on_word(struct scanner *s, const struct removal_table *t, uint64_t key,
			       uint64_t now, uint64_t max, bool *rest)
{
	uint64_t looked = 0, t0 = garuda_now_ns();
	uint32_t id = garuda_watch_first_on(&s->watch, key);
	while (id != GARUDA_WATCH_NONE && looked < max) {
		uint32_t next = garuda_watch_next_on(&s->watch, id);
		remove_if_taken(s, t, id, now);
		looked++;
		id = next;
	}
	charge_removal(s, key, t0);
	if (rest)
		*rest = id != GARUDA_WATCH_NONE;
	return looked;
}

/* A binding's drop (its DROP_BINDING holds b): b's own arms (binding_arms_add's list),
 * from where its walk stands, within *budget. Each id counts, one no longer b's too
 * (fired or removed since: not live, or another binding's wait now); b gets no new
 * arms once its drop is posted, so the walk ends. Returns how many it looked at;
 * *rest: the budget ran out first. The walk is charged to the word's session (key). */
static uint64_t drop_binding_walk(struct scanner *s, const struct removal_table *t, struct binding *b,
				  uint64_t key, uint64_t *budget, uint64_t now, bool *rest)
{
	uint64_t looked = 0, t0 = garuda_now_ns();
	for (; b->drop_at < b->narms && looked < *budget; looked++) {
		uint32_t id = b->arms[b->drop_at++];
		if (garuda_watch_live(&s->watch, id) && s->pay[id].bind == b)
			remove_if_taken(s, t, id, now);
	}
	*budget -= looked;
	*rest = b->drop_at < b->narms;
	charge_removal(s, key, t0);
	return looked;
}

/* Is the word with this key deep: are its waits in the index (armed_index.h)? */
static bool word_is_deep(const struct scanner *s, uint64_t key)
{
	uint32_t id = garuda_watch_first_on(&s->watch, key);
	return id != GARUDA_WATCH_NONE &&
	       garuda_watch_word_waits(&s->watch, garuda_watch_get(&s->watch, id)->word) >= ARMED_INDEX_DEEP;
}

/* The DISARMs rem[ix[0..n)] on one deep word (key): each looks at the arms with its
 * sink, slot and token alone. Returns how many it looked at. */
static uint64_t disarm_on_deep_word(struct scanner *s, const struct removal_table *t,
				    const struct removal *rem, const unsigned *ix, unsigned n,
				    uint64_t key, uint64_t now)
{
	uint64_t looked = 0, t0 = garuda_now_ns();
	for (unsigned k = 0; k < n; k++) {
		const struct removal *r = &rem[ix[k]];
		struct armed_index_key q = armed_index_key(&s->deep, s->pay, r->obj, r->segment_id, r->index, r->token);
		for (uint32_t id; (id = armed_index_next(&s->deep, &q)) != ARMED_INDEX_NONE; looked++)
			remove_if_taken(s, t, id, now);
	}
	charge_removal(s, key, t0);
	return looked;
}

/* indices into the removals rem, by their word (qsort_r) */
static int cmp_by_word(const void *a, const void *b, void *rem)
{
	const struct removal *r = rem;
	uintptr_t x = (uintptr_t)r[*(const unsigned *)a].word, y = (uintptr_t)r[*(const unsigned *)b].word;
	return x < y ? -1 : x > y;
}

/* rem and remcmd for up to n removals; false (logged) when out of memory */
static bool removals_room(struct scanner *s, struct removal **rem, const struct cmd ***remcmd, unsigned n)
{
	*rem = malloc(n * sizeof(**rem));
	*remcmd = malloc(n * sizeof(**remcmd));
	if (*rem && *remcmd)
		return true;
	log_err("scanner %u: out of memory for removals", s->index);
	return false;
}

/* Keep a drop for the next step (take_commands() applies it again, after that batch's
 * removals). Aborts when out of memory: a lost drop leaves dangling references. */
static void carry_over(struct scanner *s, const struct cmd *c)
{
	grow_for(s, (void **)&s->pending, &s->cappending, s->npending + 1, sizeof(*c), "a session's end");
	s->pending[s->npending++] = *c;
}

/* What one session's drops of a batch (of its segments, of its sink) walk. Its words
 * are walked from the first, and a word passed and kept (another segment's) goes last
 * (garuda_watch_owner_rotate): a drop's words not yet passed are always its list's
 * first, its new words go last, so a drop carried over goes on where it stopped. */
struct session_walk {
	uint64_t session;
	uint32_t owner;   /* GARUDA_WATCH_NONE: it has no waits */
	uint32_t nwords;  /* its words when the step began: a new drop's to pass */
	uint32_t want;    /* the most any of its drops has still to pass */
	uint32_t passed;  /* passed this step (taken, or kept and moved last) */
	bool ended;       /* its sink is dropped: every wait on its words goes */
};

static int cmp_walk(const void *a, const void *b)
{
	uint64_t x = ((const struct session_walk *)a)->session, y = ((const struct session_walk *)b)->session;
	return x < y ? -1 : x > y;
}

static struct session_walk *walk_of(struct session_walk *v, unsigned n, uint64_t session)
{
	return bsearch(&(struct session_walk){ .session = session }, v, n, sizeof(*v), cmp_walk);
}

static bool is_session_drop(enum removal_kind k)
{
	return k == RM_DROP_SEGMENT || k == RM_DROP_SINK;
}

/* How many of its session's words drop c has still to pass after this step (0: it is
 * applied whole; an ended session's drops, until its last word is gone). */
static uint32_t walk_left(const struct scanner *s, const struct session_walk *w, const struct cmd *c)
{
	if (w->owner == GARUDA_WATCH_NONE ||
	    garuda_watch_owner_first_word(&s->watch, w->owner) == GARUDA_WATCH_NONE)
		return 0; /* no waits of its session left */
	if (w->ended)
		return 1; /* (its walk's want: all) */
	uint32_t start = c->walk_left ? c->walk_left : w->nwords;
	return start > w->passed ? start - w->passed : 0;
}

/* Walk one session's words for its drops, within *budget (UINT64_MAX: none) and, while
 * another session holds waits here, its share (SCANNER_SHARE_STEP): each word a drop
 * takes loses its waits (all of them: a word is one segment's), each other is passed by
 * a look at its head and moved last. Returns the waits looked at. */
static uint64_t walk_session(struct scanner *s, const struct removal_table *t, struct session_walk *w,
			     uint64_t *budget, uint64_t now)
{
	uint64_t looked = 0, left = *budget;
	if (!s->unbudgeted && left > SCANNER_SHARE_STEP && w->owner != GARUDA_WATCH_NONE &&
	    others_hold(s, w->owner))
		left = SCANNER_SHARE_STEP;
	const uint64_t given = left;
	while (w->owner != GARUDA_WATCH_NONE && w->passed < w->want && left) {
		uint32_t wi = garuda_watch_owner_first_word(&s->watch, w->owner);
		if (wi == GARUDA_WATCH_NONE)
			break;
		uint64_t l = 1;
		bool rest = false;
		if (w->ended || armed_removals_drop_segment(t, s->pay[garuda_watch_word_head(&s->watch, wi)].seg))
			l = remove_on_word(s, t, garuda_watch_word_key(&s->watch, wi), now, left, &rest);
		looked += l;
		left -= l < left ? l : left;
		if (rest)
			break; /* the budget ran out on this word: its rest goes first next step */
		if (garuda_watch_owner_first_word(&s->watch, w->owner) == wi)
			garuda_watch_owner_rotate(&s->watch, wi); /* kept: passed */
		w->passed++;
	}
	*budget -= given - left;
	return looked;
}

/* Apply a batch's removals; every DISARM and every answered drop is answered through
 * a notice, after the removal (no step runs in between: this thread runs them). A
 * DISARM looks only at the waits on its word (on a deep word, at its own: armed_index),
 * a binding's drop only at that binding's arms (drop_binding_walk: it walked its
 * slot's word, 65,535 waits of other forms behind one UNBIND); a drop of a segment or a
 * sink (all one session's, and only that session arms on its segments'
 * words) only at the words of its session, one walk per session named in the batch:
 * what another tenant holds is never walked (it was: one walk over every armed wait per
 * batch with a drop, 3 hash lookups each, ~20 ms for 1,048,576 waits here, at each
 * session's end). Those walks take at most SCANNER_DROP_STEP_WAITS a step together;
 * a drop not applied whole waits for the next step (carry_over), unanswered. */
static void apply_removals(struct scanner *s, struct removal *rem, const struct cmd **c, unsigned n,
			   uint64_t now)
{
	struct removal_table t;
	armed_removals_index(&t, rem, n, s->index);
	/* the DISARMs' words, each walked once: the table t takes every removal of the
	 * batch in one walk of a word (64 DISARMs on one word of 65,536 waits were 64 walks,
	 * 163 ms of the scanner; then one, ~2 ms); a deep word's DISARMs are looked up
	 * instead, each finding its own arms */
	unsigned *onword = malloc((n ? n : 1) * sizeof(*onword));
	struct session_walk *walks = malloc((n ? n : 1) * sizeof(*walks));
	if (!onword || !walks) {
		log_err("scanner %u: out of memory for removals", s->index);
		abort();
	}
	unsigned nonword = 0, nwalks = 0;
	uint64_t looked = 0, budget = s->unbudgeted ? UINT64_MAX : SCANNER_DROP_STEP_WAITS;
	for (unsigned i = 0; i < n; i++) {
		if (rem[i].kind == RM_DISARM)
			onword[nonword++] = i;
		else if (is_session_drop(rem[i].kind))
			walks[nwalks++] = (struct session_walk){ .session = c[i]->session_id };
	}
	qsort_r(onword, nonword, sizeof(*onword), cmp_by_word, rem);
	for (unsigned k = 0, e; k < nonword; k = e) {
		uint64_t key = (uintptr_t)rem[onword[k]].word;
		for (e = k + 1; e < nonword && (uintptr_t)rem[onword[e]].word == key; e++)
			;
		looked += word_is_deep(s, key) ? disarm_on_deep_word(s, &t, rem, &onword[k], e - k, key, now)
					       : remove_on_word(s, &t, key, now, UINT64_MAX, NULL);
	}
	free(onword);
	/* the bindings' drops, first in the budget: each walks its binding's arms */
	for (unsigned i = 0; i < n; i++)
		if (rem[i].kind == RM_DROP_BINDING) {
			looked += drop_binding_walk(s, &t, c[i]->obj, (uintptr_t)rem[i].word, &budget, now,
						    &rem[i].rest);
			if (rem[i].rest)
				count(s, SC_drop_steps, 1); /* left for the next step */
		}
	/* the sessions' walks: one each, sorted; a new drop passes all the words its
	 * session has now, a carried one what it had left */
	qsort(walks, nwalks, sizeof(*walks), cmp_walk);
	unsigned m = 0;
	for (unsigned k = 0; k < nwalks; k++)
		if (!m || walks[k].session != walks[m - 1].session) {
			uint32_t o = garuda_watch_owner_find(&s->watch, walks[k].session);
			walks[m++] = (struct session_walk){
				.session = walks[k].session, .owner = o,
				.nwords = o == GARUDA_WATCH_NONE ? 0 : garuda_watch_owner_words(&s->watch, o) };
		}
	nwalks = m;
	for (unsigned i = 0; i < n; i++)
		if (is_session_drop(rem[i].kind)) {
			struct session_walk *w = walk_of(walks, nwalks, c[i]->session_id);
			uint32_t want = c[i]->walk_left ? c[i]->walk_left : w->nwords;
			w->want = want > w->want ? want : w->want;
			w->ended |= rem[i].kind == RM_DROP_SINK;
		}
	for (unsigned k = 0; k < nwalks; k++)
		if (walks[k].ended) /* all its words go, new ones never come */
			walks[k].want = UINT32_MAX;
	for (unsigned k = 0; k < nwalks; k++) {
		looked += walk_session(s, &t, &walks[k], &budget, now);
		if (walks[k].passed < walks[k].want && walks[k].owner != GARUDA_WATCH_NONE &&
		    garuda_watch_owner_first_word(&s->watch, walks[k].owner) != GARUDA_WATCH_NONE)
			count(s, SC_drop_steps, 1); /* left for the next step */
	}
	count(s, SC_removal_looks, looked);
	armed_removals_free(&t);
	armed_releases_flush(&s->rel); /* before any answer: the quota is free again */
	for (unsigned i = 0; i < n; i++) {
		if (is_session_drop(rem[i].kind)) {
			uint32_t left = walk_left(s, walk_of(walks, nwalks, c[i]->session_id), c[i]);
			if (left) {
				struct cmd carried = *c[i];
				carried.walk_left = left;
				carry_over(s, &carried);
				continue;
			}
		}
		if (rem[i].rest) { /* a binding's drop, not walked whole */
			carry_over(s, c[i]);
			continue;
		}
		if (rem[i].kind == RM_DROP_SINK) /* its session is over: forget its owner */
			garuda_watch_owner_drop(&s->watch, c[i]->session_id);
		if (rem[i].kind == RM_DROP_SEGMENT) /* scanner_drop_segment's reference */
			armed_put(s->notices, RELEASE_SEGMENT, c[i]->obj);
		if (rem[i].kind == RM_DROP_BINDING) /* scanner_drop_binding's */
			armed_put(s->notices, RELEASE_BINDING, c[i]->obj);
		if (rem[i].kind != RM_DISARM && !c[i]->answer)
			continue;
		notice_push_answer(s->notices, &(struct notice){ .kind = NOTICE_ANSWER,
							  .session_id = c[i]->session_id,
							  .cookie = c[i]->cookie,
							  .code = rem[i].kind != RM_DISARM || rem[i].found ? 0 : -GARUDA_E_NOT_ARMED,
							  .noreply = c[i]->noreply });
	}
	free(walks);
}

/* The plan's tuning as the watcher takes it (proto/watch.h): the loop thread's
 * scanner_tuning, the early wake the watcher measured. */
static struct garuda_watch_tuning tuning_of(const struct scanner *s)
{
	const struct scanner_tuning *t = s->tuning;
	return (struct garuda_watch_tuning){
		.pol = {
			.park_ns = atomic_load_explicit(&t->park_ns, memory_order_relaxed),
			.forever = atomic_load_explicit(&t->forever, memory_order_relaxed),
			.backstop_ns = atomic_load_explicit(&t->backstop_ns, memory_order_relaxed),
			.early_ns = garuda_watch_early_ns(&s->watch),
		},
		.predict = atomic_load_explicit(&t->predict, memory_order_relaxed),
		.max_sleep_ns = atomic_load_explicit(&t->max_sleep_ns, memory_order_relaxed),
		.margin_ns = atomic_load_explicit(&t->margin_ns, memory_order_relaxed),
		.backoff_div = atomic_load_explicit(&t->backoff_div, memory_order_relaxed),
	};
}

/* Retune the watcher when the plan (a reload) or the early wake changed. */
static void retune(struct scanner *s, uint64_t now)
{
	struct garuda_watch_tuning t = tuning_of(s);
	if (t.pol.park_ns == s->wt.pol.park_ns && t.pol.forever == s->wt.pol.forever &&
	    t.pol.backstop_ns == s->wt.pol.backstop_ns && t.predict == s->wt.predict &&
	    t.max_sleep_ns == s->wt.max_sleep_ns && t.margin_ns == s->wt.margin_ns &&
	    t.backoff_div == s->wt.backoff_div) {
		s->watch.t.pol.early_ns = t.pol.early_ns; /* used from the next placement on */
		return;
	}
	s->wt = t;
	garuda_watch_retune(&s->watch, &t, now);
}

/* Room for n more waits: the watcher's and the payload's. Aborts when out of memory (a
 * lost arm would leak its quota unit and references). */
static void room(struct scanner *s, uint32_t n)
{
	if (garuda_watch_reserve(&s->watch, n) == 0) {
		uint32_t cap = garuda_watch_capacity(&s->watch);
		if (cap <= s->paycap)
			return;
		struct armed *p = realloc(s->pay, cap * sizeof(*p));
		if (p) {
			s->pay = p;
			s->paycap = cap;
			return;
		}
	}
	log_err("scanner %u: out of memory for an armed descriptor", s->index);
	abort();
}

/* The set changed: is every armed word on one cache line? Looked at for a few words
 * only (one busy stream: its descriptors share a word); more: several lines. */
static void note_line(struct scanner *s)
{
	const uintptr_t mask = ~(uintptr_t)63;
	const struct garuda_watch *w = &s->watch;
	uintptr_t line = 0;
	if (garuda_watch_count(w) && garuda_watch_count(w) <= 64) {
		for (uint32_t wi = garuda_watch_first_word(w); wi != GARUDA_WATCH_NONE;
		     wi = garuda_watch_next_word(w, wi)) {
			uintptr_t l = (uintptr_t)garuda_watch_word_key(w, wi) & mask;
			if (line && l != line) {
				line = 0;
				break;
			}
			line = l;
		}
	}
	s->line = line;
}

/* A taken command array larger than this goes back to malloc rather than being kept as
 * the spare: a burst's array (a tenant arming its whole quota) is not held for good. */
#define CMD_SPARE_MAX 2048u

/* A command array larger than this (44 KiB; post()'s first size) is given back when the
 * scanner goes to sleep for CMD_SHED_SLEEP_NS or more: the arrays a burst grew (a
 * tenant arming its quota: ~350 KiB each at CMD_SPARE_MAX, the loop's and the spare)
 * are not held while the burst's arms sit idle (tenants bench: RSS per armed wait). */
#define CMD_KEEP 256u
#define CMD_SHED_SLEEP_NS 1000000u

/* Before a long sleep or a park: free the command arrays a burst grew, and then hand
 * what the burst's other allocations left free in the heaps back to the kernel
 * (malloc_trim: only after a burst, as it walks every arena). */
static void shed_commands(struct scanner *s)
{
	struct cmd *loop_cmds = NULL;
	pthread_mutex_lock(&s->lock);
	if (!s->ncmds && s->capcmds > CMD_KEEP) {
		loop_cmds = s->cmds;
		s->cmds = NULL;
		s->capcmds = 0;
	}
	pthread_mutex_unlock(&s->lock);
	bool shed = loop_cmds || s->capspare > CMD_KEEP;
	free(loop_cmds);
	if (s->capspare > CMD_KEEP) {
		free(s->spare);
		s->spare = NULL;
		s->capspare = 0;
	}
	if (shed)
		malloc_trim(0);
}

/* Commands applied per take, at most (GARUDA_SCANNER_TAKE_STEP_CMDS, proto/counters.h):
 * the rest of the taken array waits for the next take, with a step between, so that
 * every session's due words are looked at while many sessions flood ARMs in. Each
 * session is read only while fewer than SINK_QUEUED_MAX (256) of its commands are
 * untaken, but a take held that many of every flooding session: 16 connections of one
 * uid, ~6,000 ARMs at ~0.26 us each here, a 1.6 ms take; now at most ~270 us. Not
 * fewer: a take of 256 with one session flooding cost its scanner ~10 % more CPU per
 * ARM (more, shorter steps) and did not move the tenants bench's B (docs/plans.md). */
#define SCANNER_TAKE_STEP_CMDS ((unsigned)GARUDA_SCANNER_TAKE_STEP_CMDS)

/* n ARMs and DISARMs of sink taken (none: sink NULL): a session paused for its untaken
 * commands is told to read on (sink.h). */
static void taken(struct scanner *s, struct sink *sink, unsigned n)
{
	if (n && sink_taken(sink, n))
		(void)notice_push(s->notices, &(struct notice){ .kind = NOTICE_RESUME,
								 .session_id = sink->session_id });
}

/* Apply queued commands, SCANNER_TAKE_STEP_CMDS at most, and at most
 * SCANNER_SHARE_STEP of one session's in a row while another session holds waits (all:
 * unbudgeted). Returns true when something was armed. The queue's array and the spare
 * change places once the held array is applied whole: the loop thread posts into an
 * array that already has room, instead of one grown from nothing by realloc under the
 * lock and freed here, at every batch (a malloc trim and brk per batch, and its pages
 * faulted in again: in garuda-bench's throughput section, a few % of the scanner's
 * time). */
static bool take_commands(struct scanner *s)
{
	s->queue_unseen = s->heldat < s->nheld;
	if (!s->queue_unseen) { /* all applied: take the queue */
		pthread_mutex_lock(&s->lock);
		if (s->ncmds) {
			s->held = s->cmds;
			s->nheld = s->ncmds;
			s->capheld = s->capcmds;
			s->heldat = 0;
			s->cmds = s->spare;
			s->capcmds = s->capspare;
			s->ncmds = 0;
		}
		pthread_mutex_unlock(&s->lock);
	}
	unsigned n = s->nheld - s->heldat;
	bool cut = n > SCANNER_TAKE_STEP_CMDS && !s->unbudgeted; /* take_steps: some left */
	if (cut)
		n = SCANNER_TAKE_STEP_CMDS;
	struct cmd *cmds = n ? s->held + s->heldat : NULL;
	s->heldat += n;
	/* the drops of sessions whose end is still being taken (carry_over): applied with
	 * this batch, as the last of its removals */
	struct cmd *carried = s->pending;
	unsigned ncarried = s->npending;
	s->pending = NULL;
	s->npending = s->cappending = 0;
	if (!n && !ncarried)
		return false;

	bool armed = false;
	struct removal *rem = NULL;
	const struct cmd **remcmd = NULL; /* the command of each removal */
	unsigned nrem = 0, nmax = n + ncarried;
	uint64_t now = garuda_now_ns(), ntaken = 0, take_ns = 0;
	struct sink *run = NULL; /* the sink of the batch's last ARMs, and how many */
	unsigned nrun = 0;
	retune(s, now);
	for (unsigned i = 0; i < n; i++) {
		struct cmd *c = &cmds[i];
		uint32_t gen = i + 1; /* armed.c: the removal index */
		/* an ARM's sink is held by its wait from here, a DISARM's by the command */
		struct sink *by = c->kind == CMD_ARM ? c->a.sink : c->kind == CMD_DISARM ? c->obj : NULL;
		if (by && by != run) {
			taken(s, run, nrun);
			run = by;
			nrun = 0;
		}
		nrun += by != NULL;
		/* looked at once a run: within it only its own session's words change */
		if (by && nrun == SCANNER_SHARE_STEP + 1 && !s->unbudgeted &&
		    others_hold(s, garuda_watch_owner_find(&s->watch, by->session_id))) {
			/* its share of this take: the rest of the array waits, in order */
			nrun--;
			s->heldat -= n - i;
			n = i;
			cut = true;
			break;
		}
		switch (c->kind) {
		case CMD_ARM: {
			room(s, 1);
			uint32_t owner = garuda_watch_owner(&s->watch, c->a.sink->session_id);
			if (owner == GARUDA_WATCH_NONE) {
				log_err("scanner %u: out of memory for a session", s->index);
				abort();
			}
			/* whom its looks are charged to (charge_sessions): the session's one
			 * sink, alive while the owner has words (each wait holds it) */
			garuda_watch_owner_set_ctx(&s->watch, owner, c->a.sink);
			c->a.gen = gen;
			c->pw.taken_ns = now;
			/* the take's look: an arm whose work landed before it is owed its
			 * readiness at once, and tells its point nothing (watch.h) */
			c->pw.done = garuda_reached(__atomic_load_n(c->word, __ATOMIC_ACQUIRE), c->pw.target);
			sink_count(c->a.sink, SN_word_loads, 1); /* its session's, as a step's looks */
			ntaken++;
			take_ns += now > c->pw.arm_ns ? now - c->pw.arm_ns : 0;
			uint32_t id = garuda_watch_add(&s->watch, &c->pw, owner, now);
			s->pay[id] = c->a;
			index_if_deep(s, id);
			if (c->a.bind)
				binding_arms_add(s, c->a.bind, id);
			c->id = id;
			armed = true;
			break;
		}
		case CMD_DISARM:
		case CMD_DROP_SEGMENT:
		case CMD_DROP_BINDING:
		case CMD_DROP_SINK:
			if (!rem && !removals_room(s, &rem, &remcmd, nmax))
				abort();
			rem[nrem] = (struct removal){ .kind = removal_kind_of(c->kind), .obj = c->obj,
						      .word = c->word, .segment_id = c->segment_id,
						      .index = c->index, .token = c->token, .gen = gen };
			remcmd[nrem++] = c;
			break;
		case CMD_LIST:
		case CMD_STOP:
			break;
		}
	}
	taken(s, run, nrun); /* before any removal: run is held (an ARM's wait, a DISARM) */
	if (cut)
		count(s, SC_take_steps, 1);
	if (ntaken) { /* the batch's ARMs, counted once */
		count(s, SC_arms_taken, ntaken);
		count(s, SC_take_ns, take_ns);
	}
	if (ncarried && !rem && !removals_room(s, &rem, &remcmd, nmax))
		abort();
	for (unsigned j = 0; j < ncarried; j++) { /* older than every wait: they take all */
		const struct cmd *c = &carried[j];
		rem[nrem] = (struct removal){ .kind = removal_kind_of(c->kind), .obj = c->obj, .word = c->word,
					      .segment_id = c->segment_id, .index = c->index, .token = c->token,
					      .gen = UINT64_MAX };
		remcmd[nrem++] = c;
	}
	if (nrem)
		apply_removals(s, rem, remcmd, nrem, now);
	free(rem);
	free(remcmd);
	free(carried);
	for (unsigned i = 0; i < n; i++) { /* after the batch: the set as it now stands */
		if (cmds[i].kind == CMD_ARM) /* older than every later removal (a freed id's
					      * payload is nobody's: harmless) */
			s->pay[cmds[i].id].gen = 0;
		if (cmds[i].kind == CMD_DISARM) /* its reference (scanner_disarm) */
			armed_put(s->notices, RELEASE_SINK, cmds[i].obj);
		else if (cmds[i].kind == CMD_LIST)
			answer_list(s, cmds[i].obj);
		else if (cmds[i].kind == CMD_STOP)
			s->stop = true;
	}
	if (n && s->heldat == s->nheld) { /* the taken array, applied whole: the spare */
		if (s->capheld > CMD_SPARE_MAX) {
			free(s->held);
			s->held = NULL;
			s->capheld = 0;
		}
		s->spare = s->held;
		s->capspare = s->capheld;
		s->held = NULL;
		s->nheld = s->heldat = s->capheld = 0;
	}
	note_line(s);
	atomic_store_explicit(&s->st_armed, garuda_watch_count(&s->watch), memory_order_relaxed);
	return armed;
}

/* Work taken but not done: a session's end being walked (carried drops), commands
 * held (SCANNER_TAKE_STEP_CMDS, SCANNER_SHARE_STEP), or a queue not looked at since a
 * held rest was applied (queue_unseen). The thread does not sleep on it. */
static bool backlog(const struct scanner *s)
{
	return s->npending || s->heldat < s->nheld || s->queue_unseen;
}

/* Count the k fires of one word (their payloads at f, the watcher's finds at fires) before
 * anything is sent: whoever sees a readiness can already see it in the counters (a
 * client that got its last READY may ask at once); record each find into its point
 * (the watcher's garuda_policy_find, garuda_policy_record); the detection bound: the store
 * landed since the word's previous look. */
static void count_fired(struct scanner *s, const struct fired *f, const struct garuda_watch_fire *fires,
			unsigned k)
{
	for (unsigned i = 0; i < k; i++) {
		const struct garuda_find *fd = &fires[i].find;
		count(s, fires[i].slept ? SC_censored : SC_exact, 1);
		if (fd->kind == GARUDA_FIND_LATE)
			count(s, SC_late_wakes, 1);
		/* every find, a late one too: a run of late finds is censored
		 * (garuda_policy_record, as every driver records) */
		points_record(sink_points(f[i].a.sink), f[i].a.point_slot, armed_point_key(&f[i].a), fd);
		uint64_t d = fires[i].since_ns;
		unsigned b = sink_lat_bucket(d);
		atomic_fetch_add_explicit(&s->st_hist[b], 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&s->st_detect_ns_sum, d, memory_order_relaxed);
		form_tally_add(&s->st_by_form, f[i].a.form, 1);
		sink_count_fired(f[i].a.sink, f[i].a.form, b);
	}
	count(s, SC_completions, k);
}

/* The step's work charged to the sessions it was done for (the watcher's owners,
 * whose context is their sink): their word looks, and the step's time shared by
 * looks. */
static void charge_sessions(struct scanner *s, uint64_t step_ns)
{
	const struct garuda_watch *w = &s->watch;
	uint32_t no = garuda_watch_step_owners(w), looks, all = 0;
	for (uint32_t i = 0; i < no; i++) {
		garuda_watch_step_owner(w, i, &looks);
		all += looks;
	}
	for (uint32_t i = 0; i < no; i++) {
		struct sink *k = garuda_watch_step_owner(w, i, &looks);
		sink_count(k, SN_word_loads, looks);
		sink_count(k, SN_scan_ns, all ? step_ns * looks / all : 0);
	}
}

#define SCANNER_STEP_MAX 512u /* words looked at per step, at most: a step of other sessions' words
                               * delays a spinning word by at most this many looks */

/* A step may give out hundreds of scattered words (a sweep's words that moved or whose
 * hold ran out; the idle ones it looked at itself), each of them two cache misses (the
 * word, its head wait): ask for their lines SCAN_PREFETCH ahead so that the misses
 * overlap instead of queueing. */
#define SCAN_PREFETCH 16u
static inline void prefetch_word(const struct scanner *s, uint32_t wi)
{
	const struct garuda_watch *w = &s->watch;
	uint32_t head = garuda_watch_word_head(w, wi);
	__builtin_prefetch((const void *)(uintptr_t)garuda_watch_word_key(w, wi));
	__builtin_prefetch(garuda_watch_get(w, head));
}

/* One step: look at the words the watcher says are due (proto/watch.h), fire what
 * reached its target, deliver: O(due words + fired), whatever else is armed. Returns
 * the completions delivered. */
static unsigned scan_step(struct scanner *s, uint64_t now)
{
	struct garuda_watch *w = &s->watch;
	unsigned n = garuda_watch_due(w, now, s->due, SCANNER_STEP_MAX);
	unsigned nf = 0;
	for (unsigned i = 0; i < n && i < SCAN_PREFETCH; i++)
		prefetch_word(s, s->due[i]);
	for (unsigned i = 0; i < n; i++) {
		uint32_t wi = s->due[i];
		if (i + SCAN_PREFETCH < n)
			prefetch_word(s, s->due[i + SCAN_PREFETCH]);
		uint64_t v = __atomic_load_n((const uint64_t *)(uintptr_t)garuda_watch_word_key(w, wi),
					     __ATOMIC_ACQUIRE);
		grow_for(s, (void **)&s->fires, &s->firescap, garuda_watch_word_waits(w, wi),
			 sizeof(*s->fires), "fired descriptors");
		unsigned k = garuda_watch_found(w, wi, v, now, s->fires);
		if (!k)
			continue;
		grow_for(s, (void **)&s->fired, &s->firedcap, nf + k, sizeof(*s->fired), "fired descriptors");
		for (unsigned j = 0; j < k; j++) {
			armed_index_del(&s->deep, s->pay, s->fires[j].id);
			s->fired[nf + j] = (struct fired){ s->pay[s->fires[j].id], v };
		}
		count_fired(s, &s->fired[nf], s->fires, k);
		nf += k;
		/* the successor that starts now takes its point's sleeps as they are now:
		 * they may have changed since its arm (this very find, a shorter kernel) */
		if (garuda_watch_word_waits(w, wi)) {
			uint32_t head = garuda_watch_word_head(w, wi);
			const struct armed *h = &s->pay[head];
			uint64_t sl, ex;
			if (s->wt.predict && points_peek(sink_points(h->sink), h->point_slot, armed_point_key(h), &sl, &ex))
				garuda_watch_resleep(w, head, sl, ex, now);
		}
	}
	count(s, SC_passes, 1);
	uint64_t end = garuda_now_ns();
	charge_sessions(s, end - now);
	if (!nf)
		return 0;
	atomic_store_explicit(&s->st_armed, garuda_watch_count(w), memory_order_relaxed);
	note_line(s);
	/* the armed quota first: a client that got its READY may re-arm at once */
	for (unsigned i = 0; i < nf; i++)
		armed_releases_quota(&s->rel, &s->fired[i].a);
	armed_releases_flush(&s->rel);
	/* the deliveries' CPU, a part of each completion's cost no plan avoids (the bench's
	 * floor, tests/bench/plans.c): one delivering step in GARUDA_SCANNER_DELIVER_SAMPLE
	 * (proto/counters.h) on the thread's CPU clock (two system calls, ~2 us here: ~0.1
	 * us a step amortized; the wall clock would count the waiter a write woke on this
	 * CPU and ran first), counted that many times */
	bool timed = s->deliver_steps++ % GARUDA_SCANNER_DELIVER_SAMPLE == 0;
	uint64_t c0 = timed ? garuda_thread_cpu_ns() : 0;
	readiness_deliver(&s->out, s->fired, nf);
	if (timed)
		count(s, SC_deliver_cpu_ns, (garuda_thread_cpu_ns() - c0) * GARUDA_SCANNER_DELIVER_SAMPLE);
	for (unsigned i = 0; i < nf; i++)
		armed_releases_refs(&s->rel, &s->fired[i].a);
	armed_releases_flush(&s->rel);
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

const struct wordwait *scanner_wordwait(const struct scanner_tuning *tuning)
{
	return atomic_load_explicit(&tuning->wordwait, memory_order_relaxed) ? wordwait_system()
									     : wordwait_off();
}

/* A spin step's idle in a hardware word wait (util/wordwait.h): when every armed
 * descriptor is on one line, watch it, look once more at the command queue (a command
 * posted since the loop took them: the step ends at once), then park until a store to
 * the line or SCANNER_WORDWAIT_STEP_NS. false: no hardware wait here; the caller
 * idles as before (cpu_relax). */
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
	/* a store that landed since the step's look ends the step at once (note_line
	 * keeps a line only for a few waits) */
	const struct garuda_watch *gw = &s->watch;
	for (uint32_t wi = garuda_watch_first_word(gw); wi != GARUDA_WATCH_NONE;
	     wi = garuda_watch_next_word(gw, wi)) {
		/* its head has the lowest target: none of its waits is reached unless it is */
		uint64_t key = garuda_watch_word_key(gw, wi);
		if (garuda_reached(__atomic_load_n((const uint64_t *)(uintptr_t)key, __ATOMIC_ACQUIRE),
				   garuda_watch_get(gw, garuda_watch_word_head(gw, wi))->target))
			return true;
	}
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

	s->start_err = readiness_init(&s->out, s->index, s->notices);
	sem_post(&s->started);
	if (s->start_err)
		return NULL; /* scanner_start() joins it and fails */
	const char *chk = getenv("GARUDA_WATCH_CHECK");
	s->check_watch = chk && strcmp(chk, "1") == 0;
	s->wt = tuning_of(s);
	garuda_watch_init(&s->watch, &s->wt);
	/* idle overdue words are looked at in the watcher's sweeps */
	garuda_watch_set_load(&s->watch, GARUDA_WATCH_LOAD_ADDRESS, NULL);

	uint64_t gave_way = 0; /* when the loop last gave way or slept */
	while (!s->stop) {
		unsigned seq = atomic_load(&s->seq);
		take_commands(s);
		if (s->stop)
			break;
		if (garuda_watch_count(&s->watch) == 0) {
			if (backlog(s))
				continue; /* its waits all fired: the next take answers its drops,
					   * or applies the commands held */
			count(s, SC_parks, 1);
			shed_commands(s);
			scanner_wait(s, seq, UINT64_MAX, true);
			garuda_watch_woke(&s->watch, garuda_now_ns());
			continue;
		}
		uint64_t now = garuda_now_ns();
		unsigned fired = scan_step(s, now);
		if (s->check_watch) {
			char why[160];
			if (garuda_watch_check(&s->watch, why, sizeof(why)) < 0) {
				log_err("scanner %u: watcher broken: %s", s->index, why);
				abort();
			}
		}
		if (fired) {
			/* its waiter may be runnable on this CPU now (watch.h) */
			if (garuda_watch_gives_way(&s->watch, garuda_now_ns())) {
				spin_give_way();
				gave_way = now;
			}
			continue; /* successors may be due at once */
		}
		now = garuda_now_ns();
		uint64_t until = garuda_watch_next(&s->watch, now);
		if (backlog(s)) {
			/* a session's end to go on with (apply_removals), or commands held:
			 * background work, as a sweep's; no sleep until it is done */
			if (now - gave_way >= SCANNER_SWEEP_GIVE_WAY_NS) {
				spin_give_way();
				gave_way = now;
			}
			continue;
		}
		if (!until && garuda_watch_sweeping(&s->watch)) {
			/* a sweep to go on with: due work, no spin's pause; but background
			 * work, so a thread that is runnable on this CPU (a tenant's, another
			 * of garudad's) goes first, within SCANNER_SWEEP_GIVE_WAY_NS */
			if (now - gave_way >= SCANNER_SWEEP_GIVE_WAY_NS) {
				spin_give_way();
				gave_way = now;
			}
			continue;
		}
		if (!until) {
			count(s, SC_spins, 1);
			if (!wordwait_step(s, seq))
				for (int i = 0; i < 16; i++)
					cpu_relax();
			spin_give_way();
			gave_way = now;
			continue;
		}
		count(s, SC_sleeps, 1);
		if (until > now && until - now >= CMD_SHED_SLEEP_NS)
			shed_commands(s);
		/* +predict: an ARM wakes it only when its deadline is earlier (post()) */
		scanner_wait(s, seq, until, !s->wt.predict);
		uint64_t woke = garuda_now_ns();
		gave_way = woke;
		garuda_watch_woke_from(&s->watch, until, woke); /* the early wake learns */
		atomic_store_explicit(&s->st_wake_late_ns, s->watch.wake_late_ns, memory_order_relaxed);
		if (woke >= until) { /* the timer's wake, not a post's: how late the host ran it */
			atomic_fetch_add_explicit(&s->st_timer_hist[sink_lat_bucket(woke - until)], 1,
						  memory_order_relaxed);
			atomic_fetch_add_explicit(&s->st_timer_ns_sum, woke - until, memory_order_relaxed);
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
	s->rel = (struct armed_releases){ .loop = notices };
	s->due = malloc(SCANNER_STEP_MAX * sizeof(*s->due));
	if (!s->due) {
		free(s);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	sem_init(&s->started, 0, 0);
	readiness_install_guard_handler();
	int r = -pthread_create(&s->thread, NULL, scanner_main, s);
	if (!r) {
		while (sem_wait(&s->started) < 0) /* EINTR */
			;
		r = s->start_err;
		if (r)
			pthread_join(s->thread, NULL);
	}
	sem_destroy(&s->started);
	if (r) {
		pthread_mutex_destroy(&s->lock);
		free(s->due);
		free(s);
		return r;
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
	s->unbudgeted = true; /* a session's end still being taken, too */
	take_commands(s); /* the commands held behind the stop */
	take_commands(s); /* anything posted after it */
	for (uint32_t id = 0; id < garuda_watch_capacity(&s->watch); id++)
		if (garuda_watch_live(&s->watch, id))
			armed_release(&s->pay[id]); /* the loop thread: last references */
	garuda_watch_fini(&s->watch);
	armed_index_free(&s->deep);
	free(s->pay);
	free(s->due);
	free(s->fires);
	free(s->fired);
	free(s->cmds);
	free(s->spare);
	free(s->held);
	free(s->stage); /* empty: the STOP flushed it */
	free(s->pending); /* empty: the last take was unbudgeted */
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int scanner_list_armed(struct scanner *s, struct segment *seg, uint64_t session_id, struct armed_view **out)
{
	struct list_request lr = { .seg = seg, .session_id = session_id };
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
	form_tally_read(&s->st_by_form, &o->by_form);
	o->detect_ns_sum = atomic_load_explicit(&s->st_detect_ns_sum, memory_order_relaxed);
	for (int i = 0; i < SCANNER_LAT_BUCKETS; i++)
		o->detect_hist[i] = atomic_load_explicit(&s->st_hist[i], memory_order_relaxed);
	o->timer_ns_sum = atomic_load_explicit(&s->st_timer_ns_sum, memory_order_relaxed);
	for (int i = 0; i < SCANNER_LAT_BUCKETS; i++)
		o->timer_hist[i] = atomic_load_explicit(&s->st_timer_hist[i], memory_order_relaxed);
}
