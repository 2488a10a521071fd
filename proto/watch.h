/* watch.h — the watcher: the whole watch state of one thread that waits on many words
 * (garudad's scanner, garuda-replay's simulated scanner), and the questions its driver
 * asks of it: which words are due now, what a find records, spin or sleep until when.
 * The driver keeps only the edges: it loads the words, sleeps, delivers. The rules of
 * each decision are proto/policy.h's (the spin window, stream order, the find); this
 * module adds where each word waits until its next look (the due schedule) and whose
 * work it is (owners: garudad's sessions). docs/plans.md, "The watcher".
 *
 * The due schedule. Waits are indexed by word (a hash of the word's key, the driver's
 * address of it); a word is looked at for its head wait (the lowest target; the others
 * are queued behind it, stream order), and waits in one of three places:
 *   - SPIN: its head is in its spin window: looked at every step;
 *   - AT: its head's deadline (or window) is ahead: a timer, in its owner's min-heap
 *     of times (its earliest one entry in the watcher's heap), O(log n); a way of
 *     GARUDA_POLICY_PROBE_MIN_NS or more first at its probe (policy.h), 3/4 of it; or
 *     (+predict) its window has closed less than its prediction's uncertainty
 *     (sleep/backoff_div) ago: a timer every GARUDA_WATCH_FINE_NS, for at most
 *     GARUDA_WATCH_FINE_WORDS words of a session at once (the rest: LEVEL);
 *   - LEVEL L of its owner: its head is overdue by t (past its deadline, outside its
 *     window; t counts from the window's opening once a window that opened past the
 *     deadline, the second look, has closed): looked at every
 *     P_L = GARUDA_WATCH_PERIOD_NS(L) (32 us x 2^(L/2), x 3/2 for odd L), the largest not above
 *     backoff(t) = min(P_max, max(min(backstop, max(STEP_MIN, t/2)), r t)),
 *     r = 1/backoff_div (the plan's key, default 1/32). So a store to an overdue word
 *     is found within max(backstop, r t) of landing (by default 3.1 % of how long the
 *     wait has been overdue), at most P_max = 524 ms; a word that never moves is
 *     looked at ~ln(t)/r + t/P_max times in its first t. Stretches: a level's sweeps
 *     come its youngest word's backoff apart (at least P_L, at most P_L+1), so a
 *     tenant's idle words, of one age, are looked at by their bound itself, and a
 *     word whose hold ran out waits on its level, held, while its level's youngest's
 *     runs out within P_L+1 (the level moves on whole). Each owner's levels are one
 *     timer each in the heap, as its timers' earliest is (periods fall on a 1/16 grid
 *     of absolute time, so the levels of one period share a wake); a level's sweep is a
 *     walk in order of its array of entries, one per word, each with what an idle
 *     look needs (key, head target, hold). With the driver's load
 *     (garuda_watch_set_load) the sweep looks at idle words itself: one found idle
 *     stays until its age reaches the next level (its hold), then moves there, and
 *     only words that moved (or have a window ahead) reach the driver; a word that
 *     leaves marks its entry dead, squeezed out once the dead outnumber the live. Why
 *     levels and a heap, not a heap of every word: the overdue words of a tenant can
 *     be hundreds of thousands, and a level costs one heap entry and a sequential walk
 *     per period, where a heap would cost O(log n) per word per look; the few words
 *     that sleep toward a predicted deadline keep an exact time. Why a heap of timers
 *     per owner: a tenant's words on one prediction fall due together, thousands at
 *     once, and a heap of every word served them in due order before another
 *     session's word due a microsecond later (65,536 of them: 256 steps of 512 looks).
 * A step looks at the SPIN words, a session at a time (each owner's SPIN words are a
 * circular list; GARUDA_WATCH_CHUNK of one owner per turn, the first owner rotating
 * step to step; half the step at most while a timer is due, the rest after the
 * timers), and at the heap's due timers, in due order, at most
 * max words in all (given out or looked at idle), GARUDA_WATCH_CHUNK of one level per turn
 * (or GARUDA_WATCH_IDLE_PER_WORD times as many idle looks), or of one owner's due timers,
 * earliest first (a level left half-swept, or an owner's timers with more due, is due
 * again within the step, behind every timer due in it: equal times leave first in,
 * first out): every owner's due words are served in turn, and a
 * session's backlog never stands in front of another session's due word for more than
 * a chunk. Words that are not due are never loaded.
 *
 * Promises:
 *   - Pure: no clock, no atomics, no I/O; libc only (but for GARUDA_WATCH_LOAD_ADDRESS,
 *     the driver's own words loaded for it). Allocation in garuda_watch_reserve() and
 *     owner creation (the driver calls them off its hot path), and else only as an
 *     owner's level arrays and timers' heap grow (doubling, their room kept while in
 *     use; rare): out of memory there, a word takes a timer of its own in the
 *     watcher's heap, where reserve() keeps room for every word (served in due order,
 *     outside its owner's turn). Deterministic.
 *   - An add and a removal are O(1) whatever the waits on the word and their order
 *     (a wait's place in its queue is looked for at most GARUDA_WATCH_ORDER_WALK from
 *     each end).
 *   - Every wait that is added is either fired (its word read at or past its target
 *     by garuda_watch_found()) or removed by the driver: never lost, never twice.
 *   - A wait whose word the driver reports reached fires in that same call, with
 *     every lower wait on the word (a word that jumped fires them all), whatever the
 *     targets: a word read half the range (2^62 or more) from its head's target fires
 *     its reached waits behind the head in that look, a sweep's too, at O(1) a wait
 *     fired. But for a wide word: one whose targets once spanned 2^62 or more (no one
 *     wrapping order holds them), or whose ARMs came out of order deeper than
 *     GARUDA_WATCH_ORDER_WALK into its queue. It is looked at on a timer (its own),
 *     never on a level, and each look takes a share of its waits (all of up to
 *     GARUDA_WATCH_WIDE_SHARE, else a 1/GARUDA_WATCH_WIDE_LOOKS share), the next look
 *     going on from there: a reached wait of a wide word fires within
 *     GARUDA_WATCH_WIDE_LOOKS (32) of its looks, and its head's at once. Only a client's own hostile or disordered ARMs make a word wide.
 *   - garuda_watch_next() says spin (0) only while some word is SPIN or a timer is due
 *     within GARUDA_POLICY_SPIN_AHEAD_NS (a timer's time has the early wake taken off
 *     already), and never under a plan that does not spin (park_ns 0, not poll); with
 *     nothing added it says UINT64_MAX (park).
 *   - Work counted per owner: every word look is charged to its word's owner, the
 *     idle looks of a sweep too (garuda_watch_step_owners: a step's, per owner).
 *   - A sweep with a load fires, records and charges exactly as one without (the
 *     idle words it keeps are the ones garuda_watch_found() would keep).
 *   - Memory: a wait is 40 bytes, a word 64 and its spin links 8, a level entry 32, a
 *     timer 16 (in its owner's heap: the watcher's holds an owner's earliest alone)
 *     (garudad adds a 48-byte payload per wait: ~117 B of RSS per armed wait at 4
 *     waits a word).
 *
 * Threads: none of its own; a struct garuda_watch belongs to the one thread that
 * drives it (garudad: its scanner thread; replay: its caller). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "keymap.h"
#include "plan.h"
#include "policy.h"

#define GARUDA_WATCH_STEP_MIN_NS  GARUDA_POLICY_STEP_MIN_NS /* level 0's period */
/* how often a predicted wait whose window closed is looked at while within its
 * prediction's uncertainty (place_for): a timed wake each, ~15 us of CPU */
#define GARUDA_WATCH_FINE_NS      64000ull
/* at most this many of one session's words on such timers at once (the rest back off) */
#define GARUDA_WATCH_FINE_WORDS   16u
#define GARUDA_WATCH_LEVELS       29u   /* periods 32 us .. 524 ms, half an octave apart */
#define GARUDA_WATCH_CHUNK        64u   /* words of one level given out per turn */
#define GARUDA_WATCH_IDLE_PER_WORD 4u   /* idle looks (a sweep's own) a turn takes per word
					 * given out: 256 a turn */
#define GARUDA_WATCH_NONE         UINT32_MAX
/* an ARM whose target belongs deeper than this in its word's queue, from both ends, makes
 * the word wide (unordered) instead of walking there: a tenant's ARMs in a hostile order
 * cost the scanner O(1) each, not O(waits on the word) */
#define GARUDA_WATCH_ORDER_WALK   64u
/* a look at a wide word looks at a 1/GARUDA_WATCH_WIDE_LOOKS share of its waits, at
 * least GARUDA_WATCH_WIDE_SHARE (all of a smaller word), and the next look goes on from
 * there: a tenant's wide word of 65,535 waits costs the scanner 2,048 waits' walk a look
 * (~5 us), not all of them (garuda_watch_found) */
#define GARUDA_WATCH_WIDE_SHARE   1024u
#define GARUDA_WATCH_WIDE_LOOKS   32u
/* Level l's period: STEP_MIN x 2^(l/2), x 3/2 on the odd levels (32, 48, 64, 96, ...
 * us; the top one, l = 28, is 524 ms). Half an octave apart, a wait's period is at
 * least 2/3 of its bound (a whole octave: 1/2), which cuts an idle word's looks by a
 * sixth at the same bound. */
#define GARUDA_WATCH_PERIOD_NS(l) \
	(((uint64_t)GARUDA_WATCH_STEP_MIN_NS << ((l) >> 1)) * (2u + ((l) & 1u)) / 2u)
#define GARUDA_WATCH_PERIOD_MAX_NS GARUDA_WATCH_PERIOD_NS(GARUDA_WATCH_LEVELS - 1)
/* +predict: sleeps toward a deadline end early by the running mean of how late timed
 * wakes come (garuda_watch_woke_from), at most this */
#define GARUDA_WATCH_WAKE_LATE_MAX_NS 200000ull

/* A plan as the watcher takes it: the plan's keys under the plan's names, in
 * nanoseconds. garuda_watch_tuning_of() is the one conversion, for every driver. */
struct garuda_watch_tuning {
	struct garuda_policy_tuning pol; /* park_ns: park_us, how long a spin window lasts;
					  * forever: poll; backstop_ns: backstop_us, the
					  * short ladder's top; early_ns: timed wakes end this
					  * early */
	bool predict; /* +predict: heads sleep toward their deadlines */
	uint64_t max_sleep_ns; /* +predict's max_sleep_us: the longest single sleep (a far
				* deadline is slept toward in steps of at most this) */
	uint64_t margin_ns; /* +predict's margin_us: a spin window that opens at most this
			     * past its deadline is slept to, not laddered to */
	uint64_t backoff_div; /* the plan's backoff_div: an overdue word's period is at most
			       * max(backstop, its age / this); 0: the default,
			       * GARUDA_PLAN_BACKOFF_DIV_DEFAULT */
};

/* The tuning of plan p, early_ns 0: park_us -> pol.park_ns, backstop_us ->
 * pol.backstop_ns (p->flag as it is, whatever the kind: zero but for flag, unless the
 * driver put values there), poll -> pol.forever, +predict -> predict and max_sleep_us
 * -> max_sleep_ns; microseconds to nanoseconds saturating at 2^64 - 1. p need not pass
 * garuda_plan_check(): garudad's legacy keys put values beyond the plan's bounds into
 * p->flag (daemon/config.h config_plan_in_force). garudad (service.c) and garuda-replay
 * call it. */
void garuda_watch_tuning_of(const struct garuda_plan *p, struct garuda_watch_tuning *out);

/* A sleep as a wait keeps it, in 32 bits: a 27-bit mantissa of ns and a 5-bit shift.
 * Exact below 2^27 ns (134 ms); above, rounded down by less than 2^-26 of itself (a
 * 10 s sleep by at most 128 ns: the wait looks that much early, never late); the
 * largest is ~2.9e17 ns (9 years), which longer sleeps saturate to. */
typedef uint32_t garuda_watch_sleep;
#define GARUDA_WATCH_SLEEP_MANT_BITS 27u
garuda_watch_sleep garuda_watch_sleep_pack(uint64_t ns);
static inline uint64_t garuda_watch_sleep_ns(garuda_watch_sleep s)
{
	return (uint64_t)(s & ((1u << GARUDA_WATCH_SLEEP_MANT_BITS) - 1)) << (s >> GARUDA_WATCH_SLEEP_MANT_BITS);
}

/* One wait, as the watcher keeps it: 40 bytes (garudad holds one per armed
 * descriptor; RSS per armed wait, issue 29). What the policy's wait (policy.h) adds
 * is its word's: the key, and the head run's start (the waits of a word's lowest
 * target are STARTED at the word's start_ns, every other wait is QUEUED: stream
 * order), given by garuda_watch_policy_wait(). */
struct garuda_watch_wait {
	uint64_t target;         /* the sequence it waits for */
	uint64_t arm_ns;         /* when the waiter armed */
	garuda_watch_sleep sleep;       /* its point's sleep (0: cold), packed */
	garuda_watch_sleep exact_sleep; /* its point's exact sleep, packed */
	uint32_t taken_after;    /* the watcher's first look at it (its take), ns after
				  * arm_ns, at most UINT32_MAX: a take 4.3 s or more after
				  * its arm counts as taken then (garuda_watch_taken_ns) */
	uint32_t word;           /* its word's index; GARUDA_WATCH_NONE while the id is free */
	uint32_t next;           /* private: the next wait on the word (ascending target) */
	uint32_t prev;           /* private: the one before (a removal is O(1), not a walk) */
};

/* A wait's take as the watcher keeps it (taken_after). A take 4.3 s or more after its
 * arm (a client's +predict wait on work submitted long before) counted earlier only
 * widens what its first find brackets: a wait taken unfinished lands after its take,
 * so a look between the two times (policy.h, seen) is still before the landing. */
static inline uint64_t garuda_watch_taken_ns(const struct garuda_watch_wait *a)
{
	return a->arm_ns + a->taken_after;
}

/* What the watcher keeps per owner (garudad: a session). */
struct garuda_watch_owner_stats {
	uint64_t loads;  /* word looks charged to it */
	uint64_t fired;  /* waits of it fired */
	uint64_t steps;  /* steps in which at least one of its words was looked at */
};

/* The driver's load of the word with this key at now (garudad: the word at that
 * address; garuda-replay: its simulated word). */
typedef uint64_t (*garuda_watch_load_fn)(void *ctx, uint64_t key, uint64_t now);

struct garuda_watch_word;
struct garuda_watch_ownerrec;
struct garuda_watch_timer;
struct garuda_watch_slink;

struct garuda_watch {
	struct garuda_watch_tuning t;
	/* waits by id (0 .. cap): the driver keeps its own payload by the same id */
	struct garuda_watch_wait *waits;
	uint32_t cap, nlive, free_head; /* free ids chain through .next */
	uint32_t top; /* ids at and above it were never used (untouched: no RSS) */
	/* words: a pool (free chain through head) and a hash of key -> index */
	struct garuda_watch_word *words;
	uint32_t wcap, nwords, wfree, wtop; /* words at and above wtop were never used */
	uint32_t *hash; /* open addressing, GARUDA_WATCH_NONE: empty; tombstones rebuilt.
			 * Not a keymap.h: 4 bytes a slot, the key read from the word it
			 * names, where a keymap slot holds 16 (+6 B of RSS an armed wait) */
	uint32_t hcap, hused;
	/* the schedule: the SPIN words, a circular list per owner (links by word index,
	 * [wcap]) and the owners that have some (by owner index, [ocap]; each owner's
	 * spin_opos), served in turn by a step; nspin counts them all */
	struct garuda_watch_slink *slink;
	uint32_t slinkcap, nspin;
	uint32_t *spin_own, nspin_own, spin_owncap, spin_orr;
	/* the timers: each owner's levels and its timers' earliest (its words' own timers
	 * are its heap: watch.c), and words whose owner's heap could not grow (alone) */
	struct garuda_watch_timer *heap;
	uint32_t nheap, heapcap, heap_seq;
	/* owners, dense (a drop moves the last into the hole), and key -> index
	 * (keymap.h): an ARM finds its session's owner in O(1), not O(sessions) */
	struct garuda_watch_ownerrec *owners;
	uint32_t nowners, ocap;
	struct garuda_keymap owner_index;
	/* the step in progress, and what the previous ones tell a find */
	uint64_t step_ns;  /* when the current step began */
	uint64_t woke_ns;  /* when the watcher last ended a sleep */
	uint64_t steps;
	uint32_t *touched, ntouched; /* the owners this step looked at [ocap] */
	uint32_t nsweeping;          /* levels whose sweep a step left half done */
	garuda_watch_load_fn load;   /* the driver's load (garuda_watch_set_load) */
	void *load_ctx;
	uint64_t wake_late_ns; /* +predict: how late timed wakes come, a running mean */
	/* idle words moved on to their next level by sweeps: in the array their level
	 * lent the next (watch.c, shares), or copied into the next level's own */
	uint64_t promoted_in_place, promoted_copied;
	/* the backoff's level boundaries under t: an overdue word is on level l while its
	 * age is in [span[l - 1], span[l]) (span[-1] = 0; the top level's is UINT64_MAX),
	 * set by init and retune (a look computes no division) */
	uint64_t span[GARUDA_WATCH_LEVELS];
};

/* An empty watcher with tuning t. garuda_watch_fini() frees it. */
void garuda_watch_init(struct garuda_watch *w, const struct garuda_watch_tuning *t);
void garuda_watch_fini(struct garuda_watch *w);
/* A new tuning: every word is placed again at now. */
void garuda_watch_retune(struct garuda_watch *w, const struct garuda_watch_tuning *t, uint64_t now);

/* Room for n more waits (and their words): 0 or -ENOMEM. The driver grows its payload
 * to garuda_watch_capacity() after it. */
int garuda_watch_reserve(struct garuda_watch *w, uint32_t n);
static inline uint32_t garuda_watch_capacity(const struct garuda_watch *w)
{
	return w->cap;
}
static inline uint32_t garuda_watch_count(const struct garuda_watch *w)
{
	return w->nlive;
}
static inline uint32_t garuda_watch_words(const struct garuda_watch *w)
{
	return w->nwords;
}
static inline bool garuda_watch_live(const struct garuda_watch *w, uint32_t id)
{
	return id < w->top && w->waits[id].word != GARUDA_WATCH_NONE;
}
static inline const struct garuda_watch_wait *garuda_watch_get(const struct garuda_watch *w,
							       uint32_t id)
{
	return &w->waits[id];
}
/* Wait id as the policy sees it (policy.h): its word's key, and STARTED at its word's
 * start when it is of the head run, else QUEUED. */
struct garuda_policy_wait garuda_watch_policy_wait(const struct garuda_watch *w, uint32_t id);

/* The owner with this key (garudad: the session id), made on first use: its index, or
 * GARUDA_WATCH_NONE out of memory. */
uint32_t garuda_watch_owner(struct garuda_watch *w, uint64_t key);
/* The owner with this key, or GARUDA_WATCH_NONE (none made). */
uint32_t garuda_watch_owner_find(const struct garuda_watch *w, uint64_t key);
/* Its words (those its waits are on: a word is its first wait's owner's), one by one:
 * the first (GARUDA_WATCH_NONE: none), then the next of each, oldest first: a new word
 * goes last. A removal of a word's last wait unlinks that word alone: take the next
 * before removing a word's waits. */
uint32_t garuda_watch_owner_first_word(const struct garuda_watch *w, uint32_t owner);
uint32_t garuda_watch_owner_next_word(const struct garuda_watch *w, uint32_t word);
/* How many words it has (those on its list). */
uint32_t garuda_watch_owner_words(const struct garuda_watch *w, uint32_t owner);
/* Move a word to its owner's list's end, in O(1): a walk that stops part way (garudad:
 * a drop taken a share a step) and moves each word it passed and kept there finds the
 * words it has not passed first, however many are added or removed meanwhile (a new
 * word goes last too). */
void garuda_watch_owner_rotate(struct garuda_watch *w, uint32_t word);
/* Every word that has waits, every owner's, one by one (GARUDA_WATCH_NONE ends), in
 * O(owners + such words): not in the ids or words ever used, which a tenant that once
 * armed 65,536 waits and left would make every walk pay for (garuda-bench tenants:
 * another tenant's p50 25 -> 140 us while garudad walked 65,536 ids per command batch). */
uint32_t garuda_watch_first_word(const struct garuda_watch *w);
uint32_t garuda_watch_next_word(const struct garuda_watch *w, uint32_t word);
/* Its counts; false for an unknown key. */
bool garuda_watch_owner_stats(const struct garuda_watch *w, uint64_t key,
			      struct garuda_watch_owner_stats *out);
/* The driver's context of an owner (garudad: its session's sink), for
 * garuda_watch_step_owner(). */
void garuda_watch_owner_set_ctx(struct garuda_watch *w, uint32_t owner, void *ctx);
/* Forget an owner that has no waits left (its session ended). */
void garuda_watch_owner_drop(struct garuda_watch *w, uint64_t key);

/* Add a wait (room reserved): the policy wait pw (garuda_policy_wait_init; its word is
 * the key; its state and start are the watcher's to set), for owner (an index: a word's
 * owner is the one its first wait was added for, and its looks and fires are charged
 * there). It queues behind the waits on its word with lower targets (stream order)
 * and its word is placed at now. Returns its id. A driver that read the word when it
 * took the arm and saw the target reached sets pw->done: the word is then given out
 * by the next step, however long its point predicts. A done arm that heads its word
 * records nothing at its find (policy.h); one that queues behind a run taken before
 * it landed leaves that run's find to be judged as any early look's (censored) and
 * records nothing itself; one that joins such a run is judged with it. Without the
 * look, an arm made after its work landed would wait out its whole prediction. */
uint32_t garuda_watch_add(struct garuda_watch *w, const struct garuda_policy_wait *pw,
			  uint32_t owner, uint64_t now);
/* Add the waits for every target in (from, to] on the word with this key (room
 * reserved for to - from more), each as garuda_policy_wait_init(key, target, arm,
 * taken, sleep_ns, exact_sleep_ns) would make it, for owner: a driver that learns of
 * several sequences on one word at once (libgaruda's reactor and +predict wait);
 * stream order queues each behind the one before. Returns how many it added. */
uint32_t garuda_watch_add_run(struct garuda_watch *w, uint64_t key, uint64_t from, uint64_t to,
			      uint64_t arm, uint64_t taken, uint64_t sleep_ns,
			      uint64_t exact_sleep_ns, uint32_t owner, uint64_t now);
/* Remove a live wait; the rest of its word is ordered (landing: now) and placed. */
void garuda_watch_remove(struct garuda_watch *w, uint32_t id, uint64_t now);
/* The first wait on the word with this key (GARUDA_WATCH_NONE: none), then the next. */
uint32_t garuda_watch_first_on(const struct garuda_watch *w, uint64_t key);
static inline uint32_t garuda_watch_next_on(const struct garuda_watch *w, uint32_t id)
{
	return w->waits[id].next;
}

/* With a load (set once, before the first step), a level's sweep looks at its idle
 * overdue words itself: a word that did not reach its head's target and is still
 * held (level_hold) stays where it is, as garuda_watch_found() would leave it, and
 * costs the step one entry and one load; only the others are given out. Without one
 * (the default) every word due is given out. */
void garuda_watch_set_load(struct garuda_watch *w, garuda_watch_load_fn load, void *ctx);
/* The load of a driver whose keys are the words' addresses (garudad, libgaruda): an
 * acquire load, made inline by the sweep (the watcher's one touch of driver memory). */
uint64_t garuda_watch_load_address(void *ctx, uint64_t key, uint64_t now);
#define GARUDA_WATCH_LOAD_ADDRESS garuda_watch_load_address

/* A step: the words due at now that the driver must look at, into words[] (word
 * indices; garuda_watch_word_key() gives each one's key), after at most max looks
 * (those and the idle ones looked at by the load). The driver loads each and reports
 * it with garuda_watch_found(), every one, before the next step. */
unsigned garuda_watch_due(struct garuda_watch *w, uint64_t now, uint32_t *words, unsigned max);
/* The owners whose words this step looked at (the last garuda_watch_due() and the
 * finds after it): how many, and the i-th's context and looks in the step. */
uint32_t garuda_watch_step_owners(const struct garuda_watch *w);
void *garuda_watch_step_owner(const struct garuda_watch *w, uint32_t i, uint32_t *looks);
uint64_t garuda_watch_word_key(const struct garuda_watch *w, uint32_t word);
/* The first wait on a word (its lowest target): whose word it is. */
uint32_t garuda_watch_word_head(const struct garuda_watch *w, uint32_t word);
/* How many waits are on a word (garuda_watch_found() fires at most that many). */
uint32_t garuda_watch_word_waits(const struct garuda_watch *w, uint32_t word);

/* Is the word on a backoff level (its head past its deadline and outside its window:
 * the watcher gave it up)? */
bool garuda_watch_word_overdue(const struct garuda_watch *w, uint32_t word);
/* The driver learnt from outside that the word with this key may have moved (a
 * readiness woke it: libgaruda's +predict wait): the word is due at once (the next
 * garuda_watch_due() gives it out, and its look places it again). No-op for a key with
 * no waits. */
void garuda_watch_poke(struct garuda_watch *w, uint64_t key, uint64_t now);

/* One fired wait and what its find records (policy.h garuda_policy_find). */
struct garuda_watch_fire {
	uint32_t id;
	struct garuda_find find;
	uint64_t since_ns; /* the store landed at most this long ago (the word's previous
			    * look, or the wait's first) */
	bool slept;        /* the watcher was not spinning on the word: censored */
};

/* Word `word` (from this step's garuda_watch_due) was read as v at now: fire every wait
 * on it whose target v reached, into out[0..) (room: garuda_watch_word_waits()), order the rest (the new head starts at now) and place the
 * word. Returns the number fired. The fired waits are removed (their ids free) once
 * this returns; their payload is the driver's to release. */
unsigned garuda_watch_found(struct garuda_watch *w, uint32_t word, uint64_t v, uint64_t now,
			    struct garuda_watch_fire *out);

/* The point of wait id (a head that just started) gives other sleeps now than at its
 * arm: take them and place its word again at now. */
void garuda_watch_resleep(struct garuda_watch *w, uint32_t id, uint64_t sleep_ns,
			  uint64_t exact_sleep_ns, uint64_t now);

/* After a step: 0 = spin (look again now), else the absolute time of the next step
 * (UINT64_MAX: nothing added, park). */
uint64_t garuda_watch_next(const struct garuda_watch *w, uint64_t now);

/* After a step that fired: does the driver give the CPU away (sched_yield) before it
 * goes on? Yes when a sleep or a park comes next (garuda_watch_next() not 0): the
 * readiness it just delivered may have woken its waiter onto the driver's CPU (the
 * scheduler puts a wakee beside its waker), and that waiter then runs now, not after
 * the driver's way into its sleep. No while a spin comes next: the next look must not
 * wait behind a woken process. docs/plans.md, "Giving way after a find"; garudad's
 * scanner and libgaruda's reactor both follow it. */
bool garuda_watch_gives_way(const struct garuda_watch *w, uint64_t now);
/* A sweep the last step left half done (its step budget ran out): the next step is
 * work due now, not a spin's wait, and needs no pause before it. */
static inline bool garuda_watch_sweeping(const struct garuda_watch *w)
{
	return w->nsweeping != 0;
}
/* The driver slept and woke at now (finds after it are censored: policy.h). */
void garuda_watch_woke(struct garuda_watch *w, uint64_t now);
/* The same, for a sleep until `until` (garuda_watch_next()'s time): under +predict a
 * timed wake (now >= until) also moves the running mean of how late wakes come by
 * 1/8 of its lateness. */
void garuda_watch_woke_from(struct garuda_watch *w, uint64_t until, uint64_t now);
/* The early wake a driver runs with (the tuning's early_ns, set when it takes new
 * waits): that mean, at most GARUDA_WATCH_WAKE_LATE_MAX_NS. */
uint64_t garuda_watch_early_ns(const struct garuda_watch *w);

/* Check the watcher's own invariants (every word with waits placed exactly once, the
 * lists, the heap): 0, or -1 with why. O(words + owners x levels): tests and
 * GARUDA_WATCH_CHECK=1 in garudad (after every step), never the hot path. */
int garuda_watch_check(const struct garuda_watch *w, char *why, size_t cap);
