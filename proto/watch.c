/* watch.c — the watcher (watch.h): waits by word, the due schedule, owners. */
#include "watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "seq.h"

enum place { P_NONE, P_SPIN, P_AT, P_LEVEL };

/* what garudad keeps per armed wait and per word (RSS per armed wait, issue 29) */
_Static_assert(sizeof(struct garuda_watch_wait) == 40, "a wait is 40 bytes (watch.h, Memory)");

/* a sweep asks for the entry this many ahead of the one it looks at, and for the word
 * of the one GARUDA_WATCH_KEY_AHEAD ahead */
#define GARUDA_WATCH_AHEAD 64u
#define GARUDA_WATCH_KEY_AHEAD 16u

struct garuda_watch_word {
	uint64_t key;
	uint64_t last_look; /* when it was last looked at (0: never) */
	uint64_t start_ns;  /* the head run's start: the waits of its lowest target are
			     * STARTED there, the rest QUEUED (policy.h, stream order) */
	uint32_t head, tail; /* waits, ascending target (GARUDA_WATCH_NONE: none) */
	uint32_t nwaits;
	uint32_t owner;
	uint32_t pos;       /* index in its owner's timers (alone: the heap), or its level's
			     * entries */
	uint8_t place, level;
	bool spun : 1;      /* its last look was a spin step (not a timed one) */
	bool fine : 1;      /* on a timer of GARUDA_WATCH_FINE_NS (place_for): its owner's nfine */
	bool done : 1;      /* its head run had landed when an arm on it was taken (an add
			     * with pw->done): spun on at once, its finds record nothing;
			     * until the next run starts */
	bool alone : 1;     /* P_AT on a timer of its own in the watcher's heap, not in its
			     * owner's timers (that array could not grow: timer_push) */
	bool wide : 1;      /* its targets once spanned GARUDA_WATCH_WIDE or more (far()):
			     * no wrapping order holds them all; or an ARM's place in its
			     * queue was deeper than GARUDA_WATCH_ORDER_WALK from both ends
			     * (garuda_watch_add): its waits are in no order from then on. A
			     * reached wait may queue behind one that is not: found() looks
			     * at every wait, and it never waits on a level (a sweep looks
			     * at its head alone). Until its last wait goes */
	uint32_t step;      /* the step that last gave it out, mod 2^32 (due(): once per
			     * step; a word looked at again exactly 2^32 steps later waits one) */
	uint32_t onext, oprev; /* its owner's words (GARUDA_WATCH_NONE ends): a drop of a
				* session walks only that session's words */
};
/* (its hold, while on a level, is its entry's: a word stays one cache line) */
_Static_assert(sizeof(struct garuda_watch_word) == 64, "a word is 64 bytes (watch.h, Memory)");

/* an owner's level: an array of entries, one per word on it, appended as words are
 * placed on it, each holding what an idle look needs (the key, its head's target,
 * its hold) so that a sweep with a driver's load (garuda_watch_set_load) reads only
 * its entries, in order, and the words themselves: a word that is idle and held
 * costs one entry and one load, and never reaches the driver. A word that leaves
 * marks its entry dead (word NONE; the word's pos is its entry); the dead are skipped,
 * and squeezed out at the end of a sweep once they outnumber the live. A sweep covers
 * the entries there at its start ([cursor, limit)); entries appended meanwhile wait
 * for the next. */
struct garuda_watch_lent {
	uint64_t key;    /* its word's key */
	uint64_t target; /* its word's head's target */
	uint64_t hold;   /* an idle look before this time leaves it here (level_hold: where
			  * its backoff counts from + its level's span; 0: a window lies ahead,
			  * it is given out at every look) */
	uint32_t word;   /* its word; GARUDA_WATCH_NONE: dead (the word left) */
	uint32_t look;   /* its last idle look, in ns after the sweep that made it began
			  * (level_look); UINT32_MAX: none since it was placed or given out
			  * (the word's last_look is its last look then) */
};
_Static_assert(sizeof(struct garuda_watch_lent) == 32, "a level entry is 32 bytes");
struct garuda_watch_level {
	struct garuda_watch_lent *e;
	uint32_t len, cap;
	uint32_t n;      /* words on it (live entries) */
	uint32_t cursor, limit; /* while sweeping */
	uint64_t next;   /* when its next sweep is due */
	uint64_t began, prev_began; /* when this sweep and the one before it began */
	uint64_t fresh_step; /* a step in which promote() appended entries, from fresh_from:
			      * a sweep that begins in it leaves them to the next (found()
			      * and place() would append them after the step) */
	uint32_t fresh_from;
	uint32_t hpos;   /* its timer's heap position (GARUDA_WATCH_NONE: none) */
	uint32_t kept;   /* entries this sweep left on it (stayed idle, given out) */
	uint64_t young;  /* the latest time any word's backoff counts from, of the words
			  * placed on it since it was last empty (UINT64_MAX: one had a
			  * window ahead; 0: none): its youngest word's is no later, so a
			  * sweep follows the one before it by that word's backoff
			  * (level_next: stretches) */
	bool sweeping;
	/* a share (promote() in place; LV_NONE: none): the level whose entries fill this
	 * array's first [0, that level's len), or the level whose array this one is */
	uint8_t lent_to, borrowed_from;
	struct garuda_watch_lent *spare; /* a borrower's own array, reserved (untouched)
					  * when the share began: ending it never fails */
};
#define LV_NONE ((uint8_t)GARUDA_WATCH_LEVELS)

/* a heap entry, 16 bytes: in the watcher's heap, a word (tag 0: an alone one) or one
 * of an owner's slots (tag 1: a level, or its timers' earliest, SLOT_AT); in an
 * owner's timers, its words (tag 0) */
struct garuda_watch_timer {
	uint64_t due;
	uint32_t what : 31; /* word index, or owner * SLOTS + slot (reserve(): < 2^31) */
	uint32_t tag : 1;
	uint32_t seq;  /* when its time was set: equal times leave the heap first in, first out */
};
_Static_assert(sizeof(struct garuda_watch_timer) == 16, "a timer is 16 bytes (watch.h, Memory)");
/* an owner's entries in the watcher's heap: one per level, and its timers' (SLOT_AT) */
#define SLOTS (GARUDA_WATCH_LEVELS + 1u)
#define SLOT_AT GARUDA_WATCH_LEVELS

struct garuda_watch_ownerrec {
	uint64_t key;
	uint32_t nwords;
	struct garuda_watch_owner_stats st;
	uint64_t last_step; /* the last step that looked at one of its words */
	uint32_t step_looks; /* looks at its words in that step */
	void *ctx;          /* the driver's (garuda_watch_owner_set_ctx) */
	uint32_t first_word, last_word; /* its words' list, oldest first (garuda_watch_owner_first_word) */
	uint32_t nfine;      /* its words looked at every GARUDA_WATCH_FINE_NS (place_for) */
	/* its SPIN words: a circular list from spin_head (the next a step takes), their
	 * count, its index in the watcher's spin_own (while it has some), and how many a
	 * step (spin_step) took so far: a step takes each at most once */
	uint32_t spin_head, nspin, spin_opos, spin_taken;
	uint64_t spin_step;
	/* its P_AT words' timers (but the alone ones): a min-heap of its own, its earliest
	 * one entry (at_hpos; GARUDA_WATCH_NONE: none) in the watcher's heap, so that a
	 * step serves them GARUDA_WATCH_CHUNK a turn, as its levels (timers_sync). The
	 * array grows by doubling and is kept while small, freed once empty */
	struct garuda_watch_timer *at;
	uint32_t nat, atcap, at_hpos;
	struct garuda_watch_level lv[GARUDA_WATCH_LEVELS];
};

/* a SPIN word's links on its owner's circular list (by word index) */
struct garuda_watch_slink {
	uint32_t next, prev;
};

garuda_watch_sleep garuda_watch_sleep_pack(uint64_t ns)
{
	const uint32_t mbits = GARUDA_WATCH_SLEEP_MANT_BITS, emax = (1u << (32 - mbits)) - 1;
	uint32_t e = 0;
	if (ns >> mbits) /* the shift that leaves mbits significant bits */
		e = (uint32_t)(64 - __builtin_clzll(ns)) - mbits;
	if (e > emax)
		return UINT32_MAX; /* the largest: (2^27 - 1) << 31 */
	return e << mbits | (uint32_t)(ns >> e);
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* a's target comes before b's, in wrapping order */
static bool before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/* before() is a total order on targets that span less than 2^63, and a word's waits
 * keep it while each added target is within GARUDA_WATCH_WIDE of its head's and its
 * tail's (their span then stays below 2^62). Counters never come near; a client that
 * arms 2^63 apart (protocol.md §8: each target may still be meaningful against the
 * word) makes its word wide. */
#define GARUDA_WATCH_WIDE (1ull << 62)
static bool far(uint64_t a, uint64_t b)
{
	return (a - b) - GARUDA_WATCH_WIDE <= 2 * GARUDA_WATCH_WIDE; /* a - b in [2^62, 3 x 2^62] */
}

static uint64_t us_to_ns(uint64_t us)
{
	return us > UINT64_MAX / 1000 ? UINT64_MAX : us * 1000;
}

static void spans_set(struct garuda_watch *w);
static void poke_word(struct garuda_watch *w, uint32_t wi, uint64_t now);
static uint64_t level_hold(const struct garuda_watch *w, uint64_t dl, unsigned l);

/* the tuning's backoff_div (0: the default) */
static uint64_t backoff_div(const struct garuda_watch_tuning *t)
{
	return t->backoff_div ? t->backoff_div : GARUDA_PLAN_BACKOFF_DIV_DEFAULT;
}

/* the short ladder's top: the backstop (0: none, level 0's period) */
static uint64_t backoff_top(const struct garuda_watch_tuning *t)
{
	return t->pol.backstop_ns ? t->pol.backstop_ns : GARUDA_WATCH_STEP_MIN_NS;
}

/* backoff(t) (watch.h) but for the top level's cap: the longest a word overdue by t
 * may wait between two looks, max(min(backstop, max(STEP_MIN, t/2)), t/backoff_div) */
static uint64_t backoff_ns(const struct garuda_watch *w, uint64_t t)
{
	uint64_t ladder = min_u64(backoff_top(&w->t), max_u64(GARUDA_WATCH_STEP_MIN_NS, t / 2));
	return max_u64(ladder, t / backoff_div(&w->t));
}

void garuda_watch_tuning_of(const struct garuda_plan *p, struct garuda_watch_tuning *out)
{
	*out = (struct garuda_watch_tuning){ 0 };
	out->predict = p->predict;
	out->pol.forever = p->kind == GARUDA_PLAN_POLL;
	out->pol.park_ns = us_to_ns(p->flag.park_us);
	out->pol.backstop_ns = us_to_ns(p->flag.backstop_us);
	out->backoff_div = p->flag.backoff_div;
	if (p->predict) {
		out->max_sleep_ns = us_to_ns(p->pred.max_sleep_us);
		out->margin_ns = us_to_ns(p->pred.margin_us);
	}
}

void garuda_watch_init(struct garuda_watch *w, const struct garuda_watch_tuning *t)
{
	*w = (struct garuda_watch){ .t = *t, .free_head = GARUDA_WATCH_NONE,
				    .wfree = GARUDA_WATCH_NONE };
	spans_set(w);
}

static void level_free(struct garuda_watch_level *lv);

void garuda_watch_fini(struct garuda_watch *w)
{
	for (uint32_t o = 0; o < w->nowners; o++) {
		for (unsigned l = 0; l < GARUDA_WATCH_LEVELS; l++)
			level_free(&w->owners[o].lv[l]);
		free(w->owners[o].at);
	}
	free(w->owners);
	garuda_keymap_free(&w->owner_index);
	free(w->touched);
	free(w->waits);
	free(w->words);
	free(w->hash);
	free(w->slink);
	free(w->spin_own);
	free(w->heap);
	*w = (struct garuda_watch){ 0 };
}

/* wait id as the policy sees it (watch.h): the head run is STARTED at its word's start */
static struct garuda_policy_wait pw_of(const struct garuda_watch *w, uint32_t id)
{
	const struct garuda_watch_wait *a = &w->waits[id];
	const struct garuda_watch_word *d = &w->words[a->word];
	struct garuda_policy_wait pw;
	garuda_policy_wait_init(&pw, d->key, a->target, a->arm_ns, garuda_watch_taken_ns(a),
				garuda_watch_sleep_ns(a->sleep), garuda_watch_sleep_ns(a->exact_sleep));
	if (w->waits[d->head].target == a->target) {
		garuda_policy_wait_start(&pw, d->start_ns);
		pw.done = d->done;
	} else
		garuda_policy_wait_queue(&pw);
	return pw;
}

struct garuda_policy_wait garuda_watch_policy_wait(const struct garuda_watch *w, uint32_t id)
{
	return pw_of(w, id);
}

/* ---------------------------------------------------------------- the heap */

/* Two kinds of min-heap of timers, one code: the watcher's heap (levels, owners'
 * earliest timers, alone words) and each owner's timers (its P_AT words). e goes to
 * h[i]; its word, level or owner learns where. */
static inline void heap_set(struct garuda_watch *w, struct garuda_watch_timer *h, uint32_t i,
			    struct garuda_watch_timer e)
{
	h[i] = e;
	if (e.tag == 0) {
		w->words[e.what].pos = i;
	} else {
		struct garuda_watch_ownerrec *o = &w->owners[e.what / SLOTS];
		uint32_t slot = e.what % SLOTS;
		if (slot == SLOT_AT)
			o->at_hpos = i;
		else
			o->lv[slot].hpos = i;
	}
}

/* a leaves the heap before b: the earlier time, or the same time set earlier */
static bool heap_before(const struct garuda_watch_timer *a, const struct garuda_watch_timer *b)
{
	return a->due < b->due || (a->due == b->due && (int32_t)(a->seq - b->seq) < 0);
}

/* h[i] (of n) to its place */
static void tsift(struct garuda_watch *w, struct garuda_watch_timer *h, uint32_t n, uint32_t i)
{
	struct garuda_watch_timer e = h[i];
	while (i > 0 && heap_before(&e, &h[(i - 1) / 2])) { /* up */
		heap_set(w, h, i, h[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) { /* down */
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && heap_before(&h[c + 1], &h[c]))
			c++;
		if (!heap_before(&h[c], &e))
			break;
		heap_set(w, h, i, h[c]);
		i = c;
	}
	heap_set(w, h, i, e);
}

static void heap_sift(struct garuda_watch *w, uint32_t i)
{
	tsift(w, w->heap, w->nheap, i);
}

/* room: reserve() keeps heapcap >= words + owners x SLOTS */
static void heap_push(struct garuda_watch *w, uint64_t due, uint32_t what, uint32_t tag)
{
	uint32_t i = w->nheap++;
	w->heap[i] = (struct garuda_watch_timer){ due, what, tag, w->heap_seq++ };
	heap_sift(w, i);
}

/* a new time for heap entry i */
static void heap_retime(struct garuda_watch *w, uint32_t i, uint64_t due)
{
	w->heap[i].due = due;
	w->heap[i].seq = w->heap_seq++;
	heap_sift(w, i);
}

static void heap_del(struct garuda_watch *w, uint32_t i)
{
	uint32_t last = --w->nheap;
	if (i != last) {
		heap_set(w, w->heap, i, w->heap[last]);
		heap_sift(w, i);
	}
}

/* ---------------------------------------------------------------- timers
 *
 * A word on a timer (P_AT: asleep toward its deadline, a window ahead, a fine look)
 * waits in its owner's timers, a min-heap of their own, and the owner's earliest
 * timer is one entry in the watcher's heap (SLOT_AT), as each of its levels is: a
 * step serves an owner's due timers GARUDA_WATCH_CHUNK a turn, then that entry goes
 * behind every other timer due in the step (due()), so one session's thousands of
 * words due together stand in front of another's due word for a chunk at most (a
 * heap of every word served them in due order: 65,536 words on one prediction put
 * another session's word due 1 us later 256 steps of 512 looks behind). O(log n) a
 * timer set, as before, and O(log owners) more when it changes its owner's earliest. */

/* the owner's entry in the watcher's heap follows its earliest timer (none: none) */
static void timers_sync(struct garuda_watch *w, uint32_t oi)
{
	struct garuda_watch_ownerrec *o = &w->owners[oi];
	if (!o->nat) {
		if (o->at_hpos != GARUDA_WATCH_NONE) {
			heap_del(w, o->at_hpos);
			o->at_hpos = GARUDA_WATCH_NONE;
		}
		return;
	}
	uint64_t due = o->at[0].due;
	if (o->at_hpos == GARUDA_WATCH_NONE)
		heap_push(w, due, oi * SLOTS + SLOT_AT, 1);
	else if (w->heap[o->at_hpos].due != due)
		heap_retime(w, o->at_hpos, due);
}

/* a new time for the owner's timer i (the owner's entry is the caller's: timers_sync) */
static void at_retime(struct garuda_watch *w, struct garuda_watch_ownerrec *o, uint32_t i,
		      uint64_t due)
{
	o->at[i].due = due;
	o->at[i].seq = w->heap_seq++;
	tsift(w, o->at, o->nat, i);
}

/* word wi (not placed) onto a timer at due: its owner's, or, when that array cannot
 * grow, one of its own in the watcher's heap (alone; reserve() keeps room there for
 * every word) */
static void timer_push(struct garuda_watch *w, uint32_t wi, uint64_t due)
{
	struct garuda_watch_word *d = &w->words[wi];
	struct garuda_watch_ownerrec *o = &w->owners[d->owner];
	if (o->nat == o->atcap) {
		uint32_t cap = o->atcap ? 2 * o->atcap : 16;
		struct garuda_watch_timer *a = realloc(o->at, (size_t)cap * sizeof(*a));
		if (!a) {
			d->alone = true;
			heap_push(w, due, wi, 0);
			return;
		}
		o->at = a;
		o->atcap = cap;
	}
	uint32_t i = o->nat++;
	o->at[i] = (struct garuda_watch_timer){ due, wi, 0, w->heap_seq++ };
	tsift(w, o->at, o->nat, i);
	timers_sync(w, d->owner);
}

/* a new time for P_AT word wi */
static void timer_retime(struct garuda_watch *w, uint32_t wi, uint64_t due)
{
	struct garuda_watch_word *d = &w->words[wi];
	if (d->alone) {
		heap_retime(w, d->pos, due);
		return;
	}
	at_retime(w, &w->owners[d->owner], d->pos, due);
	timers_sync(w, d->owner);
}

/* P_AT word wi off its timer; an owner left with none frees a big array */
static void timer_del(struct garuda_watch *w, uint32_t wi)
{
	struct garuda_watch_word *d = &w->words[wi];
	if (d->alone) {
		heap_del(w, d->pos);
		d->alone = false;
		return;
	}
	struct garuda_watch_ownerrec *o = &w->owners[d->owner];
	uint32_t i = d->pos, last = --o->nat;
	if (i != last) {
		heap_set(w, o->at, i, o->at[last]);
		tsift(w, o->at, o->nat, i);
	}
	if (!o->nat && o->atcap > GARUDA_WATCH_CHUNK) {
		free(o->at);
		o->at = NULL;
		o->atcap = 0;
	}
	timers_sync(w, d->owner);
}

/* ---------------------------------------------------------------- places */

static struct garuda_watch_level *level_of(struct garuda_watch *w, uint32_t owner, unsigned l)
{
	return &w->owners[owner].lv[l];
}

/* room for one more entry on lv: 0 or -ENOMEM (the only allocation of a look; rare:
 * an array grows by doubling and keeps its room, a sweep compacts it in place) */
static int level_grow(struct garuda_watch_level *lv)
{
	uint32_t cap = lv->cap ? 2 * lv->cap : 64;
	struct garuda_watch_lent *e = realloc(lv->e, (size_t)cap * sizeof(*e));
	if (!e)
		return -ENOMEM;
	lv->e = e;
	lv->cap = cap;
	return 0;
}

/* ---------------------------------------------------------------- shares
 *
 * A tenant's idle words age together, so one sweep moves every word of a level on to
 * the same next level. Appended one by one to that level's array, each entry was
 * copied, and the array (a mapping of its own: daemon/main.c) faulted in fresh pages,
 * ~2,000 for 262,144 words, each sweep that moved them (issue 29's idle tenant: ~8 % of
 * the scanner's time, docs/plans.md). Instead the level being swept lends its array: the next level,
 * empty and without one, borrows it, and each word promoted to it keeps its entry
 * where it is (its hold and level change, nothing moves); the borrower's entries are
 * [0, its len), the lender's from there on. The lender's last word leaving (its sweep
 * moved them all) hands the array over. Anything else ends the share first
 * (level_unshare): a word that stays or is given out, an append to either level. */

/* its own array or the one it borrowed: freed once (fini, an owner's drop) */
static void level_free(struct garuda_watch_level *lv)
{
	if (lv->borrowed_from == LV_NONE)
		free(lv->e);
	free(lv->spare);
	lv->e = lv->spare = NULL;
}

static bool level_shared(const struct garuda_watch_level *lv)
{
	return lv->lent_to != LV_NONE || lv->borrowed_from != LV_NONE;
}

/* End lv's share, from either side, if it has one: the borrower's entries move to its
 * spare at the same positions (its words' pos stay), and die in the lender's array.
 * O(the borrower's len); never fails. */
static void level_unshare(struct garuda_watch *w, uint32_t owner, struct garuda_watch_level *lv)
{
	struct garuda_watch_level *lender = lv, *b;
	if (lv->lent_to != LV_NONE) {
		b = &w->owners[owner].lv[lv->lent_to];
	} else if (lv->borrowed_from != LV_NONE) {
		b = lv;
		lender = &w->owners[owner].lv[lv->borrowed_from];
	} else {
		return;
	}
	memcpy(b->spare, lender->e, (size_t)b->len * sizeof(*b->spare));
	for (uint32_t i = 0; i < b->len; i++)
		lender->e[i].word = GARUDA_WATCH_NONE;
	b->e = b->spare;
	b->cap = lender->cap; /* (the lender's cap: no append grew it during the share) */
	b->spare = NULL;
	lender->lent_to = b->borrowed_from = LV_NONE;
}

/* room for one more entry on lv, in an array of its own: 0 or -ENOMEM */
static int level_room(struct garuda_watch *w, uint32_t owner, struct garuda_watch_level *lv)
{
	level_unshare(w, owner, lv);
	return lv->len < lv->cap ? 0 : level_grow(lv);
}

/* Can nl (level l) borrow lv's array, lv's word at entry from being the first to move
 * on to it? Only while lv's sweep has left none of its words where they were (every
 * entry behind the cursor dead), nothing was appended to lv since its sweep began, nl
 * is empty with no array, lv is mostly live (a borrower keeps the lender's room), and
 * the spare can be reserved. Begins the share when it can. */
static bool share_begin(struct garuda_watch_level *lv, struct garuda_watch_level *nl, unsigned l,
			unsigned from)
{
	if (!lv->sweeping || lv->kept || level_shared(lv) || nl->cap || level_shared(nl) ||
	    lv->limit != lv->len || 2 * (uint64_t)lv->n < lv->len)
		return false;
	/* (a mapping of its own when big: untouched, it costs no RSS) */
	struct garuda_watch_lent *spare = malloc((size_t)lv->cap * sizeof(*spare));
	if (!spare)
		return false;
	nl->spare = spare;
	nl->e = lv->e;
	nl->cap = lv->cap;
	nl->len = 0;
	nl->borrowed_from = from;
	lv->lent_to = (uint8_t)l;
	return true;
}

/* a sweep of lv leaves the word of the entry behind its cursor where it is: that entry
 * is lv's, not a borrower's, so lv's share ends; the walk counts it (kept: none begins
 * while any is) and follows lv's lent_to (lent) in locals */
static inline void walk_keeps(struct garuda_watch *w, uint32_t owner, struct garuda_watch_level *lv,
			      uint32_t *kept, uint8_t *lent)
{
	++*kept;
	if (*lent != LV_NONE) {
		level_unshare(w, owner, lv);
		*lent = LV_NONE;
	}
}

/* When a sweep of level l that begins at t is followed by the next: its period on
 * (young UINT64_MAX), or, stretched, the backoff of a word whose backoff counts from
 * young (its youngest word's, or one younger: no word on it waits past its bound), at
 * most level l + 1's period (a word whose backoff reached that moves on in this sweep);
 * rounded down to a sixteenth of the period in absolute time, so that the levels of
 * one period fall due together and share one wake (a sweep comes at most 1/16 of the
 * period early, never late: the backoff bound holds). Why stretches: a tenant's idle
 * words age together, and a level's period is up to a level apart short of their
 * bound (on average 0.85 of it); stretched, the sweeps follow the bound itself: ~11 %
 * fewer looks (docs/plans.md, "Stretches"). */
static uint64_t level_next(const struct garuda_watch *w, uint64_t t, unsigned l, uint64_t young)
{
	uint64_t p = GARUDA_WATCH_PERIOD_NS(l), g = p / 16;
	if (young < t && l + 1 < GARUDA_WATCH_LEVELS)
		p = min_u64(max_u64(p, backoff_ns(w, t - young)), GARUDA_WATCH_PERIOD_NS(l + 1));
	uint64_t at = add_sat(t, p);
	return at - at % g;
}

/* Does a word of owner's level l whose hold ran out (its age gives level to > l) stay
 * there, held, for the level's youngest word to catch up? (promote() and place(): one
 * rule for a sweep's own look and found()'s.) Only while that one's hold runs out within level l + 1's
 * period of the level's last sweep's beginning (lv->began: the one in progress, or
 * the last). Why: a tenant's idle words, armed over a moment, age together, and a
 * sweep that fell between the oldest's hold and the youngest's (or one that spanned
 * steps while the holds ran out) moved some and kept others: the kept ones ended the
 * share, and the moved ones were copied to a fresh array (garudad: pages faulted in;
 * stretches land sweeps there often). Now such a level moves on whole, a sweep
 * later. Safe for the bound: lv's next sweep comes at most level l + 1's period after
 * its last began (level_next), and the word's backoff is at least that now. Costs it a
 * look or two more, once a level; words that keep joining (a steady stream of new
 * idle words) hold up nobody (their holds run out ~backoff_div periods on). */
static bool level_waits_for_young(const struct garuda_watch *w, uint32_t owner, unsigned l,
				  unsigned to)
{
	const struct garuda_watch_level *lv = &w->owners[owner].lv[l];
	if (to <= l || lv->young == UINT64_MAX || l + 1 >= GARUDA_WATCH_LEVELS)
		return false;
	uint64_t yh = level_hold(w, lv->young, l);
	return yh > lv->began && yh - lv->began <= GARUDA_WATCH_PERIOD_NS(l + 1);
}

/* A word whose backoff counts from dl joins level l (lv) at now: the level's young
 * follows it, and its next sweep comes within a period (a stretch may have put it
 * further: the word is younger than the level's youngest). O(log n) only then. */
static void level_join(struct garuda_watch *w, struct garuda_watch_level *lv, unsigned l,
		       uint64_t dl, uint64_t now)
{
	lv->young = max_u64(lv->young, dl);
	if (lv->hpos == GARUDA_WATCH_NONE || lv->next <= add_sat(now, GARUDA_WATCH_PERIOD_NS(l)))
		return;
	lv->next = level_next(w, now, l, UINT64_MAX);
	if (!lv->sweeping) /* (a sweep in progress takes its next when it ends) */
		heap_retime(w, lv->hpos, lv->next);
}

/* the end of a sweep: once the dead outnumber the live, the live move down in order
 * (each word's pos follows): O(len), paid for by the deaths since the last squeeze */
static void level_squeeze(struct garuda_watch *w, struct garuda_watch_level *lv)
{
	/* (a shared array keeps its dead: the lender's entries begin at the borrower's len) */
	if (lv->len - lv->n <= lv->n || level_shared(lv))
		return;
	lv->fresh_step = 0; /* (indices change) */
	uint32_t k = 0;
	for (uint32_t i = 0; i < lv->len; i++) {
		if (lv->e[i].word == GARUDA_WATCH_NONE)
			continue;
		w->words[lv->e[i].word].pos = k;
		lv->e[k++] = lv->e[i];
	}
	lv->len = k;
}

/* when entry i of lv was last looked at idle (0: not since it was placed or given
 * out): a sweep in progress made the looks before its cursor, the one before it the
 * rest; no sweep in progress: the last one made them all */
static uint64_t level_look(const struct garuda_watch_level *lv, uint32_t i)
{
	uint32_t look = lv->e[i].look;
	if (look == UINT32_MAX)
		return 0;
	return (lv->sweeping && i >= lv->cursor ? lv->prev_began : lv->began) + look;
}

/* a level left with no word: its entries go, its array (RSS follows what is on a level
 * now: a tenant's idle words pass through every level in turn) and its timer */
static void level_drop(struct garuda_watch *w, uint32_t owner, struct garuda_watch_level *lv)
{
	if (lv->lent_to != LV_NONE) { /* its words all moved on: the array is the borrower's */
		struct garuda_watch_level *b = &w->owners[owner].lv[lv->lent_to];
		free(b->spare);
		b->spare = NULL;
		b->borrowed_from = lv->lent_to = LV_NONE;
		lv->e = NULL;
	} else if (lv->borrowed_from != LV_NONE) { /* its words all left: the lender's again */
		w->owners[owner].lv[lv->borrowed_from].lent_to = LV_NONE;
		lv->borrowed_from = LV_NONE;
		lv->e = NULL;
	}
	level_free(lv);
	lv->len = lv->cap = 0;
	lv->young = 0;
	w->nsweeping -= lv->sweeping;
	lv->sweeping = false;
	lv->fresh_step = 0;
	lv->cursor = lv->limit = GARUDA_WATCH_NONE;
	if (lv->hpos != GARUDA_WATCH_NONE)
		heap_del(w, lv->hpos);
	lv->hpos = GARUDA_WATCH_NONE;
}

/* a word on a fine timer (fine) or not: its owner's count follows */
static void set_fine(struct garuda_watch *w, struct garuda_watch_word *d, bool fine)
{
	w->owners[d->owner].nfine += (uint32_t)fine - (uint32_t)d->fine;
	d->fine = fine;
}

/* wi becomes SPIN: the tail of its owner's list (just before the head: taken last),
 * its owner among those with SPIN words */
static void spin_link(struct garuda_watch *w, uint32_t wi)
{
	struct garuda_watch_ownerrec *o = &w->owners[w->words[wi].owner];
	struct garuda_watch_slink *l = &w->slink[wi];
	if (!o->nspin++) {
		o->spin_head = l->next = l->prev = wi;
		o->spin_opos = w->nspin_own;
		w->spin_own[w->nspin_own++] = w->words[wi].owner;
	} else {
		uint32_t h = o->spin_head, t = w->slink[h].prev;
		l->next = h;
		l->prev = t;
		w->slink[t].next = wi;
		w->slink[h].prev = wi;
	}
	w->nspin++;
}

/* wi leaves SPIN: off its owner's list; an owner with none leaves spin_own */
static void spin_unlink(struct garuda_watch *w, uint32_t wi)
{
	uint32_t oi = w->words[wi].owner;
	struct garuda_watch_ownerrec *o = &w->owners[oi];
	struct garuda_watch_slink *l = &w->slink[wi];
	w->nspin--;
	if (!--o->nspin) {
		uint32_t last = w->spin_own[--w->nspin_own];
		w->spin_own[o->spin_opos] = last;
		w->owners[last].spin_opos = o->spin_opos;
		o->spin_head = GARUDA_WATCH_NONE;
		return;
	}
	w->slink[l->prev].next = l->next;
	w->slink[l->next].prev = l->prev;
	if (o->spin_head == wi)
		o->spin_head = l->next;
}

static void unplace(struct garuda_watch *w, uint32_t wi)
{
	struct garuda_watch_word *d = &w->words[wi];
	switch (d->place) {
	case P_SPIN:
		spin_unlink(w, wi);
		break;
	case P_AT:
		timer_del(w, wi);
		set_fine(w, d, false);
		break;
	case P_LEVEL: { /* its entry dies */
		struct garuda_watch_level *lv = level_of(w, d->owner, d->level);
		d->last_look = max_u64(d->last_look, level_look(lv, d->pos)); /* found()'s */
		lv->e[d->pos].word = GARUDA_WATCH_NONE;
		if (!--lv->n)
			level_drop(w, d->owner, lv);
		break;
	}
	}
	d->place = P_NONE;
}

_Static_assert(GARUDA_WATCH_PERIOD_MAX_NS == GARUDA_POLICY_BACKOFF_MAX_NS,
	       "the top level's period is the policy's longest backoff");

/* The levels' boundaries under w->t (watch.h, span[]). A word overdue by t backs off
 * by max(min(backstop, max(STEP_MIN, t/2)), t/backoff_div), which grows with t; span[l]
 * is the least t at which that reaches level l + 1's period P: 2P on the ladder (while
 * P <= backstop) or P x backoff_div, whichever comes first; the top level's is
 * UINT64_MAX (held for good). */
static void spans_set(struct garuda_watch *w)
{
	const struct garuda_watch_tuning *t = &w->t;
	uint64_t top = backoff_top(t), div = backoff_div(t);
	for (unsigned l = 0; l + 1 < GARUDA_WATCH_LEVELS; l++) {
		uint64_t p = GARUDA_WATCH_PERIOD_NS(l + 1);
		uint64_t by_div = p > UINT64_MAX / div ? UINT64_MAX : p * div;
		w->span[l] = top >= p ? min_u64(2 * p, by_div) : by_div;
	}
	w->span[GARUDA_WATCH_LEVELS - 1] = UINT64_MAX;
}

/* The level of a word overdue by t: the largest l whose period is not above its
 * backoff, i.e. the first l with t < span[l] (a binary search of the table: no
 * division). */
static unsigned level_for(const struct garuda_watch *w, uint64_t overdue)
{
	unsigned lo = 0, hi = GARUDA_WATCH_LEVELS - 1; /* the answer is in [lo, hi] */
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (overdue < w->span[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Until when it stays there (its hold). */
static uint64_t level_hold(const struct garuda_watch *w, uint64_t dl, unsigned l)
{
	return add_sat(dl, w->span[l]);
}

/* where the backoff of a word held on level l until hold counts from (UINT64_MAX: a
 * window lies ahead, hold 0; the top level's hold is UINT64_MAX: 0, never stretched) */
static uint64_t hold_from(const struct garuda_watch *w, uint64_t hold, unsigned l)
{
	return hold ? hold - w->span[l] : UINT64_MAX;
}

/* Where the word whose head is h waits, as of now: SPIN, AT *due, or LEVEL *level
 * (held there until *due: level_hold from *from, or 0 while a window lies ahead). */
static enum place place_for(const struct garuda_watch *w, const struct garuda_policy_wait *h,
			    uint64_t now, uint64_t *due, unsigned *level, uint64_t *from, bool fine_ok,
			    bool *fine)
{
	*fine = false;
	const struct garuda_watch_tuning *t = &w->t;
	uint64_t early = t->pol.early_ns;
	uint64_t lead = add_sat(GARUDA_POLICY_SPIN_AHEAD_NS, early);
	uint64_t dl, open;
	if (h->done) /* it landed before its arm was taken: the next step looks */
		return P_SPIN;
	if (!t->predict) {
		/* no prediction: the flag ladder per word, from its last activity (its head's
		 * start, or the last find on the word): park_ns of spin, then the ladder */
		open = garuda_policy_start(h);
		uint64_t end = t->pol.forever ? UINT64_MAX : add_sat(open, t->pol.park_ns);
		if (now < end)
			return P_SPIN;
		dl = end; /* the ladder starts where the spin ends */
		open = UINT64_MAX;
	} else {
		/* the policy's window (policy.h: one definition) */
		if (garuda_policy_in_window(h, &t->pol, now, &open))
			return P_SPIN;
		if (open != UINT64_MAX && open <= add_sat(now, lead) &&
		    (t->pol.park_ns || t->pol.forever))
			return P_SPIN; /* it opens within the lead: spin into it (a window of
					* park_us=0 is none: nothing to spin into) */
		dl = garuda_policy_deadline(h);
		/* a window that opens within the margin past the deadline is the exact
		 * records' tighter margin (estimator.h), not a halving: nothing is expected
		 * before it, so sleep to it rather than start the ladder at the deadline */
		if (open != UINT64_MAX && open > dl && open - dl <= t->margin_ns)
			dl = open;
		/* a window that opened past the deadline (the second look) and has closed:
		 * overdue counts from its opening, where the exact records expect the work,
		 * so the backoff starts afresh there (docs/plans.md, "Lower bounds") */
		uint64_t res = garuda_policy_resume(h);
		if (open == UINT64_MAX && res > dl && now >= res)
			dl = res;
	}
	/* a predicted wait whose window has closed, past its opening by less than the
	 * prediction's own uncertainty (sleep/backoff_div: a prediction from a lower bound
	 * is short by up to a backoff period of the wait that recorded it): looked at every
	 * GARUDA_WATCH_FINE_NS there, not on the backoff (a 10 s kernel's second wait, after
	 * a first found on the backoff: docs/plans.md, "Long kernels, live") */
	if (fine_ok && t->predict && h->sleep_ns && open == UINT64_MAX && now >= dl) {
		if (now - dl < h->sleep_ns / backoff_div(t)) {
			/* on a grid of a sixteenth of the period: every session's fine words
			 * share a wake */
			uint64_t at = add_sat(now, GARUDA_WATCH_FINE_NS);
			*due = at - at % (GARUDA_WATCH_FINE_NS / 16);
			*fine = true;
			return P_AT;
		}
	}
	if (add_sat(now, early) < dl) { /* sleep toward the deadline, in steps */
		uint64_t at = dl - early;
		/* a long way is looked at once on it, 3/4 of the way to the window (policy.h:
		 * the probe tells a near miss from a kernel that got shorter) */
		uint64_t probe = t->predict ? garuda_policy_probe(h) : 0;
		if (probe && add_sat(now, early) < probe)
			at = min_u64(at, probe - early);
		if (t->max_sleep_ns)
			at = min_u64(at, add_sat(now, t->max_sleep_ns));
		*due = at;
		return P_AT;
	}
	uint64_t overdue = now > dl ? now - dl : 0;
	*level = level_for(w, overdue);
	*due = level_hold(w, dl, *level);
	*from = dl;
	if (open != UINT64_MAX) { /* between its deadline and its window: no later than that */
		uint64_t period = GARUDA_WATCH_PERIOD_NS(*level);
		if (open - early <= add_sat(now, period)) {
			*due = open > early ? open - early : 0;
			return P_AT;
		}
		*due = 0;
	}
	return P_LEVEL;
}

static void place(struct garuda_watch *w, uint32_t wi, uint64_t now)
{
	struct garuda_watch_word *d = &w->words[wi];
	uint64_t due = 0;
	unsigned level = 0;
	if (d->done && d->place == P_SPIN)
		return; /* landed, spun on already (place_for: P_SPIN whatever the rest says) */
	struct garuda_policy_wait h = pw_of(w, d->head);
	/* at most GARUDA_WATCH_FINE_WORDS of a session's words on fine timers: a session's
	 * flood of them costs a bounded number of looks a period, and stays behind the
	 * other sessions' due words no more than that (fairness, watch.h) */
	bool fine = false,
	     fine_ok = d->fine || w->owners[d->owner].nfine < GARUDA_WATCH_FINE_WORDS;
	uint64_t from = 0;
	enum place p = place_for(w, &h, now, &due, &level, &from, fine_ok, &fine);
	if (p == P_LEVEL && d->wide) {
		/* a sweep's idle look reads its head alone: a timer of its own, one period
		 * on, whose look is found()'s, over every wait */
		p = P_AT;
		due = add_sat(now, GARUDA_WATCH_PERIOD_NS(level));
		fine = false;
	}
	if (p == P_LEVEL) {
		/* its next look is a sweep's, never a spin step's, whichever path placed it
		 * (a retune, a removal): a sweep's idle looks with a load leave the word
		 * itself untouched, and must find it as found() would leave it */
		d->spun = false;
	}
	if (p == P_LEVEL && d->place == P_LEVEL && due &&
	    level_waits_for_young(w, d->owner, d->level, level)) {
		level = d->level; /* held where it is, as a sweep's promote() holds it */
		due = level_hold(w, from, level);
	}
	if (p == P_LEVEL && d->place == P_LEVEL && level == d->level) {
		/* it stays: its entry takes its head's target and hold as they are now */
		struct garuda_watch_level *lv = level_of(w, d->owner, level);
		struct garuda_watch_lent *x = &lv->e[d->pos];
		x->target = h.target;
		x->hold = due;
		level_join(w, lv, level, hold_from(w, due, level), now);
		return;
	}
	if (p == d->place && p == P_SPIN)
		return;
	if (p == P_AT && d->place == P_AT) {
		timer_retime(w, wi, due);
		set_fine(w, d, fine);
		return;
	}
	unplace(w, wi);
	d->place = (uint8_t)p;
	switch (p) {
	case P_SPIN:
		spin_link(w, wi);
		break;
	case P_AT:
		timer_push(w, wi, due);
		set_fine(w, d, fine);
		break;
	default: {
		struct garuda_watch_level *lv = level_of(w, d->owner, level);
		if (level_room(w, d->owner, lv) < 0) {
			/* no room for its entry: a timer instead, one period on (the heap
			 * always has room for every word) */
			d->place = P_AT;
			timer_push(w, wi, add_sat(now, GARUDA_WATCH_PERIOD_NS(level)));
			break;
		}
		d->level = (uint8_t)level;
		d->pos = lv->len;
		lv->e[lv->len++] = (struct garuda_watch_lent){ .key = d->key, .target = h.target,
							       .hold = due, .word = wi,
							       .look = UINT32_MAX };
		lv->n++;
		if (lv->hpos == GARUDA_WATCH_NONE) {
			/* a new level's first sweep: one period from now */
			lv->next = level_next(w, now, level, UINT64_MAX);
			lv->sweeping = false;
			heap_push(w, lv->next, d->owner * SLOTS + level, 1);
		}
		level_join(w, lv, level, hold_from(w, due, level), now);
		break;
	}
	}
}

void garuda_watch_retune(struct garuda_watch *w, const struct garuda_watch_tuning *t, uint64_t now)
{
	w->t = *t;
	spans_set(w);
	for (uint32_t i = 0; i < w->wtop; i++)
		if (w->words[i].head != GARUDA_WATCH_NONE) {
			unplace(w, i);
			place(w, i, now);
		}
}

/* ---------------------------------------------------------------- storage */

static uint32_t hash_slot(uint64_t key, uint32_t mask)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

/* the slot holding key, or the empty slot where it would go */
static uint32_t hash_find(const struct garuda_watch *w, uint64_t key)
{
	uint32_t mask = w->hcap - 1;
	for (uint32_t i = hash_slot(key, mask);; i = (i + 1) & mask) {
		uint32_t v = w->hash[i];
		if (v == GARUDA_WATCH_NONE || w->words[v].key == key)
			return i;
	}
}

static int hash_rebuild(struct garuda_watch *w, uint32_t cap)
{
	uint32_t *h = malloc((size_t)cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, (size_t)cap * sizeof(*h));
	free(w->hash);
	w->hash = h;
	w->hcap = cap;
	w->hused = 0;
	for (uint32_t i = 0; i < w->wtop; i++)
		if (w->words[i].head != GARUDA_WATCH_NONE) {
			w->hash[hash_find(w, w->words[i].key)] = i;
			w->hused++;
		}
	return 0;
}

static int grow(void **p, uint32_t *cap, uint32_t want, size_t size)
{
	if (want <= *cap)
		return 0;
	uint64_t n = *cap ? *cap : 16; /* (64 bits: doubling past 2^31 ends) */
	while (n < want)
		n *= 2;
	if (n > UINT32_MAX)
		n = want;
	void *q = realloc(*p, (size_t)n * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

int garuda_watch_reserve(struct garuda_watch *w, uint32_t n)
{
	/* room, not entries: an id or a word is written when first used (new_wait,
	 * new_word), so room never used costs no RSS */
	if (grow((void **)&w->waits, &w->cap, w->nlive + n, sizeof(*w->waits)))
		return -ENOMEM;
	/* a word per wait at most; a word's index fits a timer (< 2^31) */
	if (w->nwords + n > (1u << 31))
		return -ENOMEM;
	if (grow((void **)&w->words, &w->wcap, w->nwords + n, sizeof(*w->words)))
		return -ENOMEM;
	/* the hash at most 3/4 full (linear probing: 2.5 probes a hit on average; it is
	 * looked up at arms, removals and pokes, never by a step) */
	uint64_t hwant = ((uint64_t)w->hused + n) * 4 / 3 + 1;
	if (hwant > w->hcap) {
		uint32_t hc = 16;
		while (hc < hwant)
			hc *= 2;
		if (hash_rebuild(w, hc))
			return -ENOMEM;
	}
	if (grow((void **)&w->slink, &w->slinkcap, w->wcap, sizeof(*w->slink)) ||
	    grow((void **)&w->heap, &w->heapcap, w->nwords + n + w->ocap * SLOTS,
		 sizeof(*w->heap)))
		return -ENOMEM;
	return 0;
}

uint32_t garuda_watch_owner_find(const struct garuda_watch *w, uint64_t key)
{
	uint64_t o;
	return garuda_keymap_get(&w->owner_index, key, &o) ? (uint32_t)o : GARUDA_WATCH_NONE;
}

uint32_t garuda_watch_owner(struct garuda_watch *w, uint64_t key)
{
	uint32_t found = garuda_watch_owner_find(w, key);
	if (found != GARUDA_WATCH_NONE)
		return found;
	uint32_t tcap = w->ocap;
	if (w->nowners >= (1u << 31) / SLOTS || /* (a heap entry's what: < 2^31) */
	    grow((void **)&w->owners, &w->ocap, w->nowners + 1, sizeof(*w->owners)) ||
	    grow((void **)&w->touched, &tcap, w->ocap, sizeof(*w->touched)) ||
	    grow((void **)&w->spin_own, &w->spin_owncap, w->ocap, sizeof(*w->spin_own)) ||
	    grow((void **)&w->heap, &w->heapcap, w->wcap + w->ocap * SLOTS,
		 sizeof(*w->heap)) ||
	    garuda_keymap_put(&w->owner_index, key, w->nowners))
		return GARUDA_WATCH_NONE;
	uint32_t o = w->nowners++;
	w->owners[o] = (struct garuda_watch_ownerrec){ .key = key, .last_step = UINT64_MAX,
						       .first_word = GARUDA_WATCH_NONE,
						       .last_word = GARUDA_WATCH_NONE,
						       .spin_head = GARUDA_WATCH_NONE,
						       .spin_step = UINT64_MAX,
						       .at_hpos = GARUDA_WATCH_NONE };
	for (unsigned l = 0; l < GARUDA_WATCH_LEVELS; l++)
		w->owners[o].lv[l] = (struct garuda_watch_level){ .cursor = GARUDA_WATCH_NONE,
								  .limit = GARUDA_WATCH_NONE,
								  .hpos = GARUDA_WATCH_NONE,
								  .lent_to = LV_NONE,
								  .borrowed_from = LV_NONE };
	return o;
}

/* Its words' list: a word goes in last (owner_append) and out from anywhere
 * (owner_unlink), both O(1). */
static void owner_append(struct garuda_watch *w, struct garuda_watch_ownerrec *o, uint32_t wi)
{
	struct garuda_watch_word *d = &w->words[wi];
	d->oprev = o->last_word;
	d->onext = GARUDA_WATCH_NONE;
	if (o->last_word != GARUDA_WATCH_NONE)
		w->words[o->last_word].onext = wi;
	else
		o->first_word = wi;
	o->last_word = wi;
}

static void owner_unlink(struct garuda_watch *w, struct garuda_watch_ownerrec *o, uint32_t wi)
{
	const struct garuda_watch_word *d = &w->words[wi];
	if (d->oprev != GARUDA_WATCH_NONE)
		w->words[d->oprev].onext = d->onext;
	else
		o->first_word = d->onext;
	if (d->onext != GARUDA_WATCH_NONE)
		w->words[d->onext].oprev = d->oprev;
	else
		o->last_word = d->oprev;
}

/* the first word of the first owner from o on that has one */
static uint32_t first_word_from(const struct garuda_watch *w, uint32_t o)
{
	for (; o < w->nowners; o++)
		if (w->owners[o].first_word != GARUDA_WATCH_NONE)
			return w->owners[o].first_word;
	return GARUDA_WATCH_NONE;
}

uint32_t garuda_watch_first_word(const struct garuda_watch *w)
{
	return first_word_from(w, 0);
}

uint32_t garuda_watch_next_word(const struct garuda_watch *w, uint32_t word)
{
	const struct garuda_watch_word *d = &w->words[word];
	return d->onext != GARUDA_WATCH_NONE ? d->onext : first_word_from(w, d->owner + 1);
}

uint32_t garuda_watch_owner_first_word(const struct garuda_watch *w, uint32_t owner)
{
	return w->owners[owner].first_word;
}

uint32_t garuda_watch_owner_next_word(const struct garuda_watch *w, uint32_t word)
{
	return w->words[word].onext;
}

uint32_t garuda_watch_owner_words(const struct garuda_watch *w, uint32_t owner)
{
	return w->owners[owner].nwords;
}

void garuda_watch_owner_rotate(struct garuda_watch *w, uint32_t word)
{
	struct garuda_watch_ownerrec *o = &w->owners[w->words[word].owner];
	if (o->last_word == word)
		return;
	owner_unlink(w, o, word);
	owner_append(w, o, word);
}

bool garuda_watch_owner_stats(const struct garuda_watch *w, uint64_t key,
			      struct garuda_watch_owner_stats *out)
{
	uint32_t o = garuda_watch_owner_find(w, key);
	if (o == GARUDA_WATCH_NONE)
		return false;
	*out = w->owners[o].st;
	return true;
}

void garuda_watch_owner_set_ctx(struct garuda_watch *w, uint32_t owner, void *ctx)
{
	w->owners[owner].ctx = ctx;
}

void garuda_watch_owner_drop(struct garuda_watch *w, uint64_t key)
{
	uint32_t o = garuda_watch_owner_find(w, key);
	if (o == GARUDA_WATCH_NONE || w->owners[o].nwords)
		return;
	for (unsigned l = 0; l < GARUDA_WATCH_LEVELS; l++)
		level_free(&w->owners[o].lv[l]);
	free(w->owners[o].at); /* (no words: no timers, no entry) */
	garuda_keymap_del(&w->owner_index, key);
	uint32_t last = --w->nowners;
	w->ntouched = 0; /* (between steps: the last step's owners are read) */
	if (o == last)
		return;
	/* the last owner takes its index: its key's entry (a replace: never fails), words
	 * and level and timers' entries follow */
	garuda_keymap_put(&w->owner_index, w->owners[last].key, o);
	w->owners[o] = w->owners[last];
	for (uint32_t i = w->owners[o].first_word; i != GARUDA_WATCH_NONE; i = w->words[i].onext)
		w->words[i].owner = o;
	if (w->owners[o].nspin)
		w->spin_own[w->owners[o].spin_opos] = o;
	for (unsigned l = 0; l < GARUDA_WATCH_LEVELS; l++)
		if (w->owners[o].lv[l].hpos != GARUDA_WATCH_NONE)
			w->heap[w->owners[o].lv[l].hpos].what = o * SLOTS + l;
	if (w->owners[o].at_hpos != GARUDA_WATCH_NONE)
		w->heap[w->owners[o].at_hpos].what = o * SLOTS + SLOT_AT;
}

/* ---------------------------------------------------------------- waits */

/* Stream order on word wi (docs/plans.md, "Several outstanding sequences on one word"):
 * its head run (the waits of its lowest target) is STARTED at the word's start, the
 * rest are QUEUED (pw_of). A head run whose waits were queued starts, when its
 * predecessor lands at `landing`, at the earliest max(arm, landing) among its waits. */
static void start_run(struct garuda_watch *w, uint32_t wi, uint64_t landing)
{
	struct garuda_watch_word *d = &w->words[wi];
	uint64_t target = w->waits[d->head].target, start = UINT64_MAX;
	for (uint32_t i = d->head; i != GARUDA_WATCH_NONE && w->waits[i].target == target;
	     i = w->waits[i].next)
		start = min_u64(start, max_u64(w->waits[i].arm_ns, landing));
	d->start_ns = start;
	d->done = false;
}

/* a free id: one given back, else the first never used (reserve() made room) */
static uint32_t new_wait(struct garuda_watch *w)
{
	uint32_t id = w->free_head;
	if (id == GARUDA_WATCH_NONE)
		return w->top++;
	w->free_head = w->waits[id].next;
	return id;
}

static uint32_t new_word(struct garuda_watch *w)
{
	uint32_t wi = w->wfree;
	if (wi == GARUDA_WATCH_NONE)
		return w->wtop++;
	w->wfree = w->words[wi].tail;
	return wi;
}

/* Put wait id (target t) after the last wait of its word at or below t, found within
 * GARUDA_WATCH_ORDER_WALK steps from either end of the word's queue (the word is not
 * wide, its head's target is at or below t and its tail's above: the place is there,
 * and neither walk passes an end); false: not that close to either end. */
static bool insert_between(struct garuda_watch *w, struct garuda_watch_word *d, uint32_t id,
			   uint64_t t)
{
	uint32_t f = d->head, b = w->waits[d->tail].prev, p = GARUDA_WATCH_NONE;
	for (unsigned k = 0; k < GARUDA_WATCH_ORDER_WALK && p == GARUDA_WATCH_NONE; k++) {
		if (before(t, w->waits[w->waits[f].next].target))
			p = f;
		else if (!before(t, w->waits[b].target))
			p = b;
		f = w->waits[f].next;
		b = w->waits[b].prev;
	}
	if (p == GARUDA_WATCH_NONE)
		return false;
	struct garuda_watch_wait *a = &w->waits[id];
	a->next = w->waits[p].next;
	a->prev = p;
	w->waits[a->next].prev = id;
	w->waits[p].next = id;
	return true;
}

uint32_t garuda_watch_add(struct garuda_watch *w, const struct garuda_policy_wait *pw,
			  uint32_t owner, uint64_t now)
{
	uint32_t id = new_wait(w);
	struct garuda_watch_wait *a = &w->waits[id];
	*a = (struct garuda_watch_wait){ .target = pw->target,
					 .arm_ns = pw->arm_ns,
					 .taken_after = pw->taken_ns <= pw->arm_ns ? 0
							: pw->taken_ns - pw->arm_ns > UINT32_MAX
							? UINT32_MAX
							: (uint32_t)(pw->taken_ns - pw->arm_ns),
					 .sleep = garuda_watch_sleep_pack(pw->sleep_ns),
					 .exact_sleep = garuda_watch_sleep_pack(pw->exact_sleep_ns),
					 .next = GARUDA_WATCH_NONE, .prev = GARUDA_WATCH_NONE };
	w->nlive++;
	uint32_t slot = hash_find(w, pw->word), wi = w->hash[slot];
	if (wi == GARUDA_WATCH_NONE) {
		wi = new_word(w);
		struct garuda_watch_word *d = &w->words[wi];
		struct garuda_watch_ownerrec *o = &w->owners[owner];
		*d = (struct garuda_watch_word){ .key = pw->word, .head = id, .tail = id,
						 .owner = owner, .nwaits = 1,
						 .start_ns = pw->arm_ns, .onext = GARUDA_WATCH_NONE,
						 .oprev = GARUDA_WATCH_NONE, .done = pw->done };
		owner_append(w, o, wi);
		w->hash[slot] = wi;
		w->hused++;
		w->nwords++;
		o->nwords++;
		a->word = wi;
		place(w, wi, now);
		return id;
	}
	struct garuda_watch_word *d = &w->words[wi];
	a->word = wi;
	d->nwaits++;
	uint64_t t = pw->target, run = w->waits[d->head].target;
	bool widened = !d->wide && (far(t, run) || far(t, w->waits[d->tail].target));
	d->wide |= widened;
	if (!before(t, w->waits[d->tail].target)) { /* the usual case: behind the rest */
		w->waits[d->tail].next = id;
		a->prev = d->tail;
		d->tail = id;
	} else if (before(t, run)) {
		a->next = d->head;
		w->waits[d->head].prev = id;
		d->head = id;
	} else if (d->wide || !insert_between(w, d, id, t)) {
		/* a wide word keeps no order (found() looks at every wait): behind the
		 * rest; and one whose place is deeper than GARUDA_WATCH_ORDER_WALK from
		 * both ends of its queue becomes wide (its ARMs came out of order: each
		 * walk to its place cost O(waits), 32,768 such ARMs 1.4 s of the scanner) */
		widened |= !d->wide;
		d->wide = true;
		w->waits[d->tail].next = id;
		a->prev = d->tail;
		d->tail = id;
	}
	if (widened)
		place(w, wi, now); /* off its level (place) */
	if (d->head == id && t != run) { /* a new head: the old run queues behind it */
		d->start_ns = pw->arm_ns;
		d->done = pw->done;
		place(w, wi, now);
		return id;
	}
	if (t == run && pw->arm_ns < d->start_ns) {
		/* it joins the head run, STARTED at the earlier of the run's start and its
		 * arm (O(1): 65,536 arms of one target on one word must not cost
		 * 65,536^2 / 2) */
		d->start_ns = pw->arm_ns;
		place(w, wi, now);
	}
	if (pw->done && !d->done) {
		/* it joins or queues behind a run its target passed: so did the run's. The
		 * word is due at once (the arm's readiness is owed at once, protocol.md
		 * §9.1); the run was taken before it landed, so its find is judged as any
		 * early look's (censored: the work landed before its deadline), not
		 * dropped: a point whose prediction is too long learns from it even when
		 * every later arm lands before its take (a pipeline armed ahead) */
		poke_word(w, wi, now);
	} /* else it queues: nothing about the word changes */
	return id;
}

uint32_t garuda_watch_add_run(struct garuda_watch *w, uint64_t key, uint64_t from, uint64_t to,
			      uint64_t arm, uint64_t taken, uint64_t sleep_ns,
			      uint64_t exact_sleep_ns, uint32_t owner, uint64_t now)
{
	uint32_t n = 0;
	for (uint64_t t = from + 1; before(from, to) && !before(to, t); t++, n++) {
		struct garuda_policy_wait pw;
		garuda_policy_wait_init(&pw, key, t, arm, taken, sleep_ns, exact_sleep_ns);
		garuda_watch_add(w, &pw, owner, now);
	}
	return n;
}

/* unlink wait id from its word; drop the word when it was the last */
static void unlink_wait(struct garuda_watch *w, uint32_t id, uint64_t now, bool reorder)
{
	struct garuda_watch_wait *a = &w->waits[id];
	uint32_t wi = a->word;
	struct garuda_watch_word *d = &w->words[wi];
	bool was_head_run = w->waits[d->head].target == a->target;
	uint32_t prev = a->prev; /* both ways linked: O(1) however many wait on the word
				  * (a walk to find it cost ~1 ms at 32,768 for every
				  * DISARM of the word's tail) */
	if (prev == GARUDA_WATCH_NONE)
		d->head = a->next;
	else
		w->waits[prev].next = a->next;
	if (a->next == GARUDA_WATCH_NONE)
		d->tail = prev;
	else
		w->waits[a->next].prev = prev;
	a->word = GARUDA_WATCH_NONE;
	a->next = w->free_head;
	w->free_head = id;
	w->nlive--;
	d->nwaits--;
	if (d->head == GARUDA_WATCH_NONE) {
		unplace(w, wi);
		struct garuda_watch_ownerrec *o = &w->owners[d->owner];
		o->nwords--;
		owner_unlink(w, o, wi);
		/* out of the hash: the chain after it is put back */
		uint32_t mask = w->hcap - 1, s = hash_find(w, d->key);
		w->hash[s] = GARUDA_WATCH_NONE;
		for (uint32_t i = (s + 1) & mask; w->hash[i] != GARUDA_WATCH_NONE; i = (i + 1) & mask) {
			uint32_t v = w->hash[i];
			w->hash[i] = GARUDA_WATCH_NONE;
			w->hash[hash_find(w, w->words[v].key)] = v;
		}
		w->hused--;
		w->nwords--;
		d->tail = w->wfree;
		w->wfree = wi;
		return;
	}
	if (reorder && was_head_run) {
		if (w->waits[d->head].target != a->target)
			start_run(w, wi, now); /* the run went: the next one starts */
		place(w, wi, now);
	}
}

void garuda_watch_remove(struct garuda_watch *w, uint32_t id, uint64_t now)
{
	unlink_wait(w, id, now, true);
}

uint32_t garuda_watch_first_on(const struct garuda_watch *w, uint64_t key)
{
	if (!w->hcap)
		return GARUDA_WATCH_NONE;
	uint32_t wi = w->hash[hash_find(w, key)];
	return wi == GARUDA_WATCH_NONE ? GARUDA_WATCH_NONE : w->words[wi].head;
}

uint64_t garuda_watch_word_key(const struct garuda_watch *w, uint32_t word)
{
	return w->words[word].key;
}

uint32_t garuda_watch_word_head(const struct garuda_watch *w, uint32_t word)
{
	return w->words[word].head;
}

uint32_t garuda_watch_word_waits(const struct garuda_watch *w, uint32_t word)
{
	return w->words[word].nwaits;
}

bool garuda_watch_word_overdue(const struct garuda_watch *w, uint32_t word)
{
	return w->words[word].place == P_LEVEL;
}

void garuda_watch_poke(struct garuda_watch *w, uint64_t key, uint64_t now)
{
	if (!w->hcap)
		return;
	uint32_t wi = w->hash[hash_find(w, key)];
	if (wi != GARUDA_WATCH_NONE)
		poke_word(w, wi, now);
}

/* the word is due at now (the next step gives it out, its look places it again) */
static void poke_word(struct garuda_watch *w, uint32_t wi, uint64_t now)
{
	if (w->words[wi].place == P_SPIN)
		return; /* looked at every step anyway */
	struct garuda_watch_word *d = &w->words[wi];
	if (d->place == P_AT) {
		timer_retime(w, wi, now);
		return;
	}
	unplace(w, wi); /* off its level: a timer, due now */
	d->place = P_AT;
	timer_push(w, wi, now);
}

/* ---------------------------------------------------------------- a step */

/* the driver's word: at the key's address (GARUDA_WATCH_LOAD_ADDRESS: no call), or
 * its load's */
static inline uint64_t load(garuda_watch_load_fn ld, void *ctx, uint64_t key, uint64_t now)
{
	if (ld == GARUDA_WATCH_LOAD_ADDRESS)
		return __atomic_load_n((const uint64_t *)(uintptr_t)key, __ATOMIC_ACQUIRE);
	return ld(ctx, key, now);
}

uint64_t garuda_watch_load_address(void *ctx, uint64_t key, uint64_t now)
{
	(void)ctx;
	(void)now;
	return __atomic_load_n((const uint64_t *)(uintptr_t)key, __ATOMIC_ACQUIRE);
}

/* n looks at owner's words in this step */
static void charge(struct garuda_watch *w, uint32_t owner, uint32_t n)
{
	struct garuda_watch_ownerrec *o = &w->owners[owner];
	o->st.loads += n;
	if (o->last_step != w->steps) {
		o->last_step = w->steps;
		o->st.steps++;
		o->step_looks = 0;
		w->touched[w->ntouched++] = owner; /* room: ocap */
	}
	o->step_looks += n;
}

uint32_t garuda_watch_step_owners(const struct garuda_watch *w)
{
	return w->ntouched;
}

void *garuda_watch_step_owner(const struct garuda_watch *w, uint32_t i, uint32_t *looks)
{
	const struct garuda_watch_ownerrec *o = &w->owners[w->touched[i]];
	*looks = o->step_looks;
	return o->ctx;
}

void garuda_watch_set_load(struct garuda_watch *w, garuda_watch_load_fn load, void *ctx)
{
	w->load = load;
	w->load_ctx = ctx;
}

/* An idle word whose hold ran out (entry x of its owner's level, mid-sweep), onto the
 * level its age now gives, as found() and place() would place it: its look is now.
 * False (nothing done) when the new level has no room. The level it leaves keeps its
 * array and timer (the sweep in progress ends it if it emptied). */
static bool promote(struct garuda_watch *w, uint32_t owner, struct garuda_watch_lent *x,
		    uint64_t now)
{
	struct garuda_watch_word *d = &w->words[x->word];
	/* where its backoff counts from (its hold ran out: not the top level's, never
	 * saturated, never 0) */
	uint64_t dl = hold_from(w, x->hold, d->level);
	unsigned l = level_for(w, now > dl ? now - dl : 0);
	if (level_waits_for_young(w, owner, d->level, l))
		l = d->level;
	/* it stays, as one held: it waits for its level's youngest, or a tuning moved it
	 * nowhere */
	if (l == d->level) {
		struct garuda_watch_level *lv = level_of(w, owner, l);
		level_unshare(w, owner, lv);
		lv->kept++;
		x->hold = level_hold(w, dl, l);
		d->last_look = now;
		x->look = UINT32_MAX;
		level_join(w, lv, l, dl, now);
		return true;
	}
	struct garuda_watch_level *lv = level_of(w, owner, d->level), *nl = level_of(w, owner, l);
	uint32_t at = (uint32_t)(x - lv->e);
	if (nl->fresh_step != w->steps) {
		nl->fresh_step = w->steps;
		nl->fresh_from = nl->len;
	}
	if (lv->lent_to == l || share_begin(lv, nl, l, d->level)) {
		/* in place, in the array lv lent nl: the entries between nl's last and it
		 * are dead (shares) */
		x->hold = level_hold(w, dl, l);
		x->look = UINT32_MAX;
		nl->len = at + 1;
		w->promoted_in_place++;
	} else {
		if (level_room(w, owner, nl) < 0)
			return false;
		struct garuda_watch_lent y = *x;
		x->word = GARUDA_WATCH_NONE;
		y.hold = level_hold(w, dl, l);
		y.look = UINT32_MAX;
		d->pos = nl->len;
		nl->e[nl->len++] = y;
		w->promoted_copied++;
	}
	lv->n--;
	d->level = (uint8_t)l;
	d->last_look = now;
	nl->n++;
	if (nl->hpos == GARUDA_WATCH_NONE) { /* (due a period on: never before the timer
					      * being served) */
		nl->next = level_next(w, now, l, UINT64_MAX);
		nl->sweeping = false;
		heap_push(w, nl->next, owner * SLOTS + l, 1);
	}
	level_join(w, nl, l, dl, now);
	return true;
}

/* Up to `budget` SPIN words into words[n...]: the owners in turn from the step's first
 * (spin_orr), GARUDA_WATCH_CHUNK each per turn, each word at most once a step, each
 * owner's list from where its last turn stopped. Returns how many. */
static unsigned take_spin(struct garuda_watch *w, uint32_t *words, unsigned n, unsigned budget)
{
	unsigned took = 0;
	bool more = true;
	while (took < budget && more) {
		more = false;
		for (uint32_t k = 0; k < w->nspin_own && took < budget; k++) {
			uint32_t oi = w->spin_own[(w->spin_orr + k) % w->nspin_own];
			struct garuda_watch_ownerrec *o = &w->owners[oi];
			if (o->spin_step != w->steps) {
				o->spin_step = w->steps;
				o->spin_taken = 0;
			}
			uint32_t left = o->nspin - o->spin_taken, c = GARUDA_WATCH_CHUNK;
			if (c > left)
				c = left;
			if (c > budget - took)
				c = budget - took;
			uint32_t wi = o->spin_head;
			for (uint32_t i = 0; i < c; i++) {
				w->words[wi].step = (uint32_t)w->steps;
				words[n + took++] = wi;
				wi = w->slink[wi].next;
			}
			o->spin_head = wi;
			o->spin_taken += c;
			more |= o->spin_taken < o->nspin;
		}
	}
	return took;
}

unsigned garuda_watch_due(struct garuda_watch *w, uint64_t now, uint32_t *words, unsigned max)
{
	unsigned n = 0, looks; /* words given out; looks: those and the idle ones */
	w->step_ns = now;
	w->steps++;
	w->ntouched = 0;
	/* timers' times have the early wake taken off already (place_for) */
	uint64_t lead = GARUDA_POLICY_SPIN_AHEAD_NS;
	/* the spin words first (a completion is expected there), the owners in turn; but
	 * half the step at most while a timer is due: SPIN words (one tenant's hundreds of
	 * cold waits, say) never stand in front of another's due timer for a whole step */
	bool timers = w->nheap && w->heap[0].due <= add_sat(now, lead);
	unsigned spun = take_spin(w, words, 0, timers && max > 1 ? max / 2 : max);
	n = looks = spun;
	/* the due timers, in due order; a level, or an owner's timers, gives at most a
	 * chunk per turn */
	while (looks < max && w->nheap && w->heap[0].due <= add_sat(now, lead)) {
		struct garuda_watch_timer e = w->heap[0];
		if (e.tag == 0) { /* an alone word (timer_push) */
			w->words[e.what].step = (uint32_t)w->steps;
			words[n++] = e.what;
			looks++;
			/* it stays in the heap until found() places it again; move it out of
			 * the way of this loop */
			heap_retime(w, 0, UINT64_MAX);
			continue;
		}
		uint32_t owner = e.what / SLOTS, slot = e.what % SLOTS;
		uint64_t horizon = add_sat(now, lead);
		if (slot == SLOT_AT) {
			/* an owner's due timers: a chunk a turn, in due order; each word given
			 * out stays there until found() places it again, out of the way */
			struct garuda_watch_ownerrec *o = &w->owners[owner];
			for (unsigned c = 0; c < GARUDA_WATCH_CHUNK && looks < max && o->at[0].due <= horizon; c++) {
				uint32_t wi = o->at[0].what;
				w->words[wi].step = (uint32_t)w->steps;
				words[n++] = wi;
				looks++;
				at_retime(w, o, 0, UINT64_MAX);
			}
			/* more due: behind every timer due in this step (the same time, set
			 * later: first in, first out), as a level half swept; found() puts
			 * it back at its earliest (timers_sync) */
			uint64_t top = o->at[0].due;
			heap_retime(w, o->at_hpos, top <= horizon ? horizon : top);
			continue;
		}
		struct garuda_watch_level *lv = level_of(w, owner, slot);
		if (!lv->sweeping) { /* a new period: every word it holds now */
			lv->sweeping = true;
			w->nsweeping++;
			lv->cursor = 0;
			lv->kept = 0;
			lv->limit = lv->fresh_step == w->steps ? lv->fresh_from : lv->len;
			lv->prev_began = lv->began;
			lv->began = now;
			lv->next = level_next(w, now, slot, lv->young);
		}
		/* a chunk of its live entries: the idle held ones looked at here (with a
		 * load), the rest given out */
		/* a turn: GARUDA_WATCH_CHUNK words given out, or GARUDA_WATCH_IDLE_PER_WORD
		 * times as many idle looks (one entry and one load each, a few ns: a heap
		 * retime per 64 of them was a tenth of an idle sweep's time) */
		unsigned take = GARUDA_WATCH_CHUNK * GARUDA_WATCH_IDLE_PER_WORD, dead = 0, idle = 0;
		/* the walk's state in locals: nothing in it writes the level's cursor or
		 * limit, nor its array but promote() (read again after it), and the
		 * build's -fno-strict-aliasing would otherwise reload each after every
		 * store */
		struct garuda_watch_lent *ent = lv->e;
		uint32_t cur = lv->cursor;
		const uint32_t lim = lv->limit;
		const uint64_t began = lv->began;
		const garuda_watch_load_fn ld = w->load;
		/* entries it left where they were (a share ends, none begins), and the
		 * level it lends its array to */
		uint32_t kept = 0;
		uint8_t lent = lv->lent_to;
		while (take && cur < lim && looks < max && dead < 4 * GARUDA_WATCH_CHUNK) {
			/* the entries ahead (an address from the cursor alone: nothing waits
			 * on it), and the word of one close ahead, in cache by now (a hint:
			 * never faults, whatever the key) */
			if (cur + GARUDA_WATCH_AHEAD < lim)
				__builtin_prefetch(&ent[cur + GARUDA_WATCH_AHEAD]);
			if (cur + GARUDA_WATCH_KEY_AHEAD < lim)
				__builtin_prefetch((const void *)(uintptr_t)ent[cur + GARUDA_WATCH_KEY_AHEAD].key);
			struct garuda_watch_lent *x = &ent[cur++];
			if (x->word == GARUDA_WATCH_NONE) {
				dead++;
				continue;
			}
			take--;
			looks++;
			uint64_t v;
			if (ld && x->hold && !garuda_reached(v = load(ld, w->load_ctx, x->key, now), x->target) &&
			    !far(v, x->target)) { /* (far: a wait behind its head may be reached) */
				if (now < x->hold) { /* idle and held: it stays, as found() would
						      * leave it */
					uint64_t after = now - began;
					x->look = after < UINT32_MAX ? (uint32_t)after : UINT32_MAX - 1;
					idle++;
					walk_keeps(w, owner, lv, &kept, &lent);
					continue;
				}
				lv->kept += kept; /* (promote() may begin a share) */
				kept = 0;
				bool moved = promote(w, owner, x, now);
				/* (a share of lv's array ended by the move: lv has an array of its
				 * own now, its entries at the same places) */
				lent = lv->lent_to;
				ent = lv->e;
				x = &ent[cur - 1];
				if (moved) { /* idle, on to its next level */
					idle++;
					continue;
				}
			}
			take -= take < GARUDA_WATCH_IDLE_PER_WORD - 1 ? take : GARUDA_WATCH_IDLE_PER_WORD - 1;
			walk_keeps(w, owner, lv, &kept, &lent); /* (until found() places it again) */
			struct garuda_watch_word *d = &w->words[x->word];
			if (d->step != (uint32_t)w->steps) { /* once a step, whatever level it was on */
				d->step = (uint32_t)w->steps;
				/* its last look: its idle look in the previous sweep, if it had
				 * one (a sweep that ran over 4 s: when it began at the latest) */
				if (x->look != UINT32_MAX)
					d->last_look = max_u64(d->last_look, lv->prev_began + x->look);
				x->look = UINT32_MAX;
				words[n++] = x->word;
				/* what its look will read next, while the walk goes on: its head
				 * wait, and its word */
				__builtin_prefetch(&w->waits[d->head]);
				__builtin_prefetch((const void *)(uintptr_t)d->key);
			}
		}
		lv->cursor = cur;
		lv->kept += kept;
		if (idle)
			charge(w, owner, idle);
		if (!lv->n) { /* its sweep moved every word on */
			level_drop(w, owner, lv);
			continue;
		}
		if (lv->cursor == lv->limit) {
			lv->cursor = lv->limit = GARUDA_WATCH_NONE;
			level_squeeze(w, lv);
		}
		/* swept: due again at its next period (never within this step); else due
		 * still in this step, behind every timer due in it (the same time, set
		 * later: first in, first out), so a long sweep goes on in this step, a
		 * chunk per turn, up to max looks, and a step never ends with due work left
		 * for a sleep of a few us (a futex wait each chunk) */
		if (lv->cursor == GARUDA_WATCH_NONE) {
			lv->sweeping = false;
			w->nsweeping--;
			heap_retime(w, lv->hpos, lv->next > horizon ? lv->next : add_sat(horizon, 1));
		} else {
			heap_retime(w, lv->hpos, horizon);
		}
	}
	/* room left: the rest of the spin words */
	if (looks < max && spun < w->nspin) {
		unsigned more = take_spin(w, words, n, max - looks);
		n += more;
		looks += more;
	}
	if (w->nspin_own)
		w->spin_orr = (w->spin_orr + 1) % w->nspin_own; /* the next step's first owner */
	return n;
}

/* How many of a wide word's n waits one look looks at: all of a small word, else a
 * 32nd, at least GARUDA_WATCH_WIDE_SHARE (watch.h): every wait within 32 looks. */
static uint32_t wide_share(uint32_t n)
{
	uint32_t part = n / GARUDA_WATCH_WIDE_LOOKS + (n % GARUDA_WATCH_WIDE_LOOKS != 0);
	return part > GARUDA_WATCH_WIDE_SHARE ? part : GARUDA_WATCH_WIDE_SHARE;
}

/* d's queue from id on first, what stood before it behind its tail (a wide word keeps
 * no order). id is in the queue, not its head. */
static void rotate_to(struct garuda_watch *w, struct garuda_watch_word *d, uint32_t id)
{
	uint32_t last = w->waits[id].prev;
	w->waits[d->tail].next = d->head;
	w->waits[d->head].prev = d->tail;
	w->waits[last].next = GARUDA_WATCH_NONE;
	w->waits[id].prev = GARUDA_WATCH_NONE;
	d->head = id;
	d->tail = last;
}

/* The fire of wait id of d, behind an unreached head: it records nothing. */
static void fire_unknown(struct garuda_watch *w, const struct garuda_watch_word *d, uint32_t id,
			 uint64_t prev, uint64_t now, bool slept, struct garuda_watch_fire *f)
{
	uint64_t since = prev ? prev : garuda_watch_taken_ns(&w->waits[id]);
	*f = (struct garuda_watch_fire){ .id = id,
					 .find = { GARUDA_FIND_UNKNOWN, 0 },
					 .since_ns = now > since ? now - since : 0,
					 .slept = slept };
	w->owners[d->owner].st.fired++;
}

unsigned garuda_watch_found(struct garuda_watch *w, uint32_t wi, uint64_t v, uint64_t now,
			    struct garuda_watch_fire *out)
{
	struct garuda_watch_word *d = &w->words[wi];
	charge(w, d->owner, 1);
	uint64_t prev = d->last_look;
	/* the watcher was not looking closely at this word since its last look: it slept,
	 * or the word was waiting on a timer */
	bool slept = !d->spun || w->woke_ns > prev;
	unsigned nf = 0;
	uint64_t run = d->head == GARUDA_WATCH_NONE ? 0 : w->waits[d->head].target;
	while (d->head != GARUDA_WATCH_NONE && garuda_reached(v, w->waits[d->head].target)) {
		uint32_t id = d->head;
		struct garuda_watch_wait *a = &w->waits[id];
		uint64_t since = prev ? prev : garuda_watch_taken_ns(a);
		out[nf].id = id;
		if (d->done) { /* landed before its take: nothing to learn (policy.h) */
			out[nf].find = (struct garuda_find){ GARUDA_FIND_UNKNOWN, 0 };
		} else {
			/* the run that was STARTED; a word that jumped fires the queued ones too */
			struct garuda_policy_wait pw = pw_of(w, id);
			if (a->target != run)
				garuda_policy_wait_queue(&pw);
			out[nf].find = garuda_policy_find(&pw, &w->t.pol, now, since, slept);
		}
		out[nf].since_ns = now > since ? now - since : 0;
		out[nf].slept = slept;
		nf++;
		w->owners[d->owner].st.fired++;
		bool last = a->next == GARUDA_WATCH_NONE;
		unlink_wait(w, id, now, false);
		if (last)
			return nf; /* the word went with its last wait */
	}
	/* reached waits behind an unreached head fire too (nothing to learn). Not wide, a
	 * word read half the range from its head (a hostile store): the reached ones are a
	 * suffix of its ascending targets, walked back from the tail (a walk from the head
	 * passed every unreached one, each look). Wide: a share of its waits from the head
	 * (wide_share), moved behind the tail unless they fire, so that the next look goes
	 * on where this one stopped (a look at all 65,535 took ~200 us of the scanner from
	 * every other tenant) */
	if (!d->wide) {
		if (d->head != GARUDA_WATCH_NONE && far(v, w->waits[d->head].target))
			while (garuda_reached(v, w->waits[d->tail].target)) {
				uint32_t id = d->tail;
				fire_unknown(w, d, id, prev, now, slept, &out[nf++]);
				bool last = d->nwaits == 1;
				unlink_wait(w, id, now, false);
				if (last)
					return nf;
			}
	} else {
		uint32_t id = d->head, share = wide_share(d->nwaits);
		for (uint32_t looked = 0; id != GARUDA_WATCH_NONE && looked < share; looked++) {
			uint32_t next = w->waits[id].next;
			if (garuda_reached(v, w->waits[id].target)) {
				fire_unknown(w, d, id, prev, now, slept, &out[nf++]);
				bool last = d->nwaits == 1;
				unlink_wait(w, id, now, false);
				if (last)
					return nf;
			}
			id = next;
		}
		if (id != GARUDA_WATCH_NONE && id != d->head)
			rotate_to(w, d, id);
	}
	d->last_look = now;
	if (!nf)
		d->done = false; /* a word that went back since its take (a hostile store) is
				  * placed by its prediction again, not spun on for good */
	if (!nf && d->place == P_LEVEL && now < level_of(w, d->owner, d->level)->e[d->pos].hold) {
		d->spun = false; /* an idle overdue word: nothing to place again */
		return 0;
	}
	if (nf)
		start_run(w, wi, now); /* the successors of what landed start here */
	d->spun = false;
	place(w, wi, now);
	d->spun = d->place == P_SPIN;
	return nf;
}

void garuda_watch_resleep(struct garuda_watch *w, uint32_t id, uint64_t sleep_ns,
			  uint64_t exact_sleep_ns, uint64_t now)
{
	struct garuda_watch_wait *a = &w->waits[id];
	garuda_watch_sleep sl = garuda_watch_sleep_pack(sleep_ns),
			   ex = garuda_watch_sleep_pack(exact_sleep_ns);
	if (a->sleep == sl && a->exact_sleep == ex)
		return;
	a->sleep = sl;
	a->exact_sleep = ex;
	if (w->words[a->word].head == id)
		place(w, a->word, now);
}

bool garuda_watch_gives_way(const struct garuda_watch *w, uint64_t now)
{
	return garuda_watch_next(w, now) != 0;
}

uint64_t garuda_watch_next(const struct garuda_watch *w, uint64_t now)
{
	if (!w->nlive)
		return UINT64_MAX;
	if (w->nspin)
		return 0;
	if (!w->nheap)
		return UINT64_MAX;
	/* timers' times have the early wake taken off already (place_for) */
	uint64_t lead = GARUDA_POLICY_SPIN_AHEAD_NS;
	uint64_t due = w->heap[0].due;
	if (due <= add_sat(now, lead)) /* spin to it, unless the plan never spins (park_us=0):
					* then a wait that returns at once */
		return w->t.pol.park_ns || w->t.pol.forever ? 0 : max_u64(due, add_sat(now, 1));
	return due;
}

void garuda_watch_woke(struct garuda_watch *w, uint64_t now)
{
	w->woke_ns = now;
}

void garuda_watch_woke_from(struct garuda_watch *w, uint64_t until, uint64_t now)
{
	w->woke_ns = now;
	if (w->t.predict && until != UINT64_MAX && now >= until)
		w->wake_late_ns = w->wake_late_ns - w->wake_late_ns / 8 + (now - until) / 8;
}

uint64_t garuda_watch_early_ns(const struct garuda_watch *w)
{
	return min_u64(w->wake_late_ns, GARUDA_WATCH_WAKE_LATE_MAX_NS);
}

/* ---------------------------------------------------------------- self-check */

#include <stdio.h>

int garuda_watch_check(const struct garuda_watch *w, char *why, size_t cap)
{
	uint32_t live = 0, at = 0, owned = 0, timers = 0, onlevel = 0, entries = 0, sweeping = 0;
	for (uint32_t i = 0; i < w->wtop; i++) {
		const struct garuda_watch_word *d = &w->words[i];
		if (d->head == GARUDA_WATCH_NONE)
			continue;
		live++;
		if (w->waits[d->head].word != i)
			return snprintf(why, cap, "word %u: its head wait is not its", i), -1;
		uint32_t n = 0, last = GARUDA_WATCH_NONE;
		for (uint32_t k = d->head; k != GARUDA_WATCH_NONE && n <= d->nwaits; last = k, k = w->waits[k].next, n++)
			if (w->waits[k].word != i || w->waits[k].prev != last)
				return snprintf(why, cap, "word %u: wait %u not linked both ways", i, k), -1;
		if (n != d->nwaits || d->tail != last)
			return snprintf(why, cap, "word %u: %u waits linked, %u counted, or not to its tail", i, n,
					d->nwaits), -1;
		if (d->place == P_SPIN && (w->slink[w->slink[i].prev].next != i ||
					   w->slink[w->slink[i].next].prev != i ||
					   !w->owners[d->owner].nspin))
			return snprintf(why, cap, "word %u: not on its owner's spin list", i), -1;
		if (d->place == P_AT && d->alone &&
		    (d->pos >= w->nheap || w->heap[d->pos].tag || w->heap[d->pos].what != i))
			return snprintf(why, cap, "word %u: not at its heap position", i), -1;
		if (d->place == P_AT && !d->alone &&
		    (d->pos >= w->owners[d->owner].nat || w->owners[d->owner].at[d->pos].what != i))
			return snprintf(why, cap, "word %u: not at its place in its owner's timers", i), -1;
		if (d->alone && d->place != P_AT)
			return snprintf(why, cap, "word %u: alone, not on a timer", i), -1;
		if (d->place == P_NONE)
			return snprintf(why, cap, "word %u: has waits and no place", i), -1;
		at += d->place == P_AT && d->alone;
		owned += d->place == P_AT && !d->alone;
		onlevel += d->place == P_LEVEL;
	}
	if (live != w->nwords)
		return snprintf(why, cap, "%u words with waits, %u counted", live, w->nwords), -1;
	uint32_t listed = 0;
	for (uint32_t o = 0; o < w->nowners; o++) {
		uint32_t c = 0, prev = GARUDA_WATCH_NONE;
		uint32_t fine = 0;
		for (uint32_t i = w->owners[o].first_word; i != GARUDA_WATCH_NONE; i = w->words[i].onext) {
			const struct garuda_watch_word *d = &w->words[i];
			if (i >= w->wtop || d->head == GARUDA_WATCH_NONE || d->owner != o || d->oprev != prev ||
			    ++c > w->owners[o].nwords || (d->fine && d->place != P_AT))
				return snprintf(why, cap, "owner %u: word %u on its list does not belong", o, i), -1;
			fine += d->fine;
			prev = i;
		}
		if (fine != w->owners[o].nfine || fine > GARUDA_WATCH_FINE_WORDS)
			return snprintf(why, cap, "owner %u: %u words on fine timers, %u counted", o, fine,
					w->owners[o].nfine), -1;
		if (c != w->owners[o].nwords)
			return snprintf(why, cap, "owner %u: %u words listed, %u counted", o, c, w->owners[o].nwords), -1;
		if (prev != w->owners[o].last_word)
			return snprintf(why, cap, "owner %u: its last word is not its list's last", o), -1;
		listed += c;
	}
	if (listed != live)
		return snprintf(why, cap, "%u words on owners' lists, %u with waits", listed, live), -1;
	uint32_t spinning = 0, spin_owners = 0;
	for (uint32_t o = 0; o < w->nowners; o++) {
		const struct garuda_watch_ownerrec *r = &w->owners[o];
		if (!r->nspin)
			continue;
		spin_owners++;
		if (r->spin_opos >= w->nspin_own || w->spin_own[r->spin_opos] != o)
			return snprintf(why, cap, "owner %u: not at its place among the spinning", o), -1;
		uint32_t i = r->spin_head;
		for (uint32_t c = 0; c < r->nspin; c++, i = w->slink[i].next)
			if (i >= w->wtop || w->words[i].place != P_SPIN || w->words[i].owner != o)
				return snprintf(why, cap, "owner %u: word %u on its spin list is not its SPIN word", o, i), -1;
		if (i != r->spin_head)
			return snprintf(why, cap, "owner %u: its spin list is not a circle of %u", o, r->nspin), -1;
		spinning += r->nspin;
	}
	if (spinning != w->nspin || spin_owners != w->nspin_own)
		return snprintf(why, cap, "%u SPIN words of %u owners listed, %u of %u counted", spinning,
				spin_owners, w->nspin, w->nspin_own), -1;
	if (w->owner_index.n != w->nowners)
		return snprintf(why, cap, "%u owners indexed, %u owners", w->owner_index.n, w->nowners), -1;
	for (uint32_t o = 0; o < w->nowners; o++)
		if (garuda_watch_owner_find(w, w->owners[o].key) != o)
			return snprintf(why, cap, "owner %u: its key finds another", o), -1;
	uint32_t walked = 0;
	for (uint32_t i = garuda_watch_first_word(w); i != GARUDA_WATCH_NONE; i = garuda_watch_next_word(w, i))
		if (++walked > live)
			break;
	if (walked != live)
		return snprintf(why, cap, "the word walk gave %u words, %u with waits", walked, live), -1;
	for (uint32_t o = 0; o < w->nowners; o++)
		for (unsigned l = 0; l < GARUDA_WATCH_LEVELS; l++) {
			const struct garuda_watch_level *lv = &w->owners[o].lv[l];
			uint32_t c = 0, first = 0;
			if (lv->lent_to != LV_NONE) { /* its entries begin at the borrower's len */
				const struct garuda_watch_level *b = &w->owners[o].lv[lv->lent_to];
				if (lv->lent_to >= GARUDA_WATCH_LEVELS || b->borrowed_from != l || b->e != lv->e ||
				    b->len > lv->len || !b->spare || lv->kept || lv->borrowed_from != LV_NONE ||
				    !lv->sweeping || b->len > lv->cursor)
					return snprintf(why, cap, "owner %u level %u: share with %u broken", o, l,
							lv->lent_to), -1;
				first = b->len;
			} else if (lv->borrowed_from != LV_NONE &&
				   (lv->borrowed_from >= GARUDA_WATCH_LEVELS ||
				    w->owners[o].lv[lv->borrowed_from].lent_to != l)) {
				return snprintf(why, cap, "owner %u level %u: borrowed from %u, not lent", o, l,
						lv->borrowed_from), -1;
			} else if (lv->borrowed_from == LV_NONE && lv->spare) {
				return snprintf(why, cap, "owner %u level %u: a spare with no share", o, l), -1;
			}
			for (uint32_t i = first; i < lv->len; i++) {
				const struct garuda_watch_lent *e = &lv->e[i];
				uint32_t x = e->word;
				if (x == GARUDA_WATCH_NONE)
					continue; /* dead */
				if (x >= w->wtop)
					return snprintf(why, cap, "owner %u level %u: entry %u names word %u", o, l, i, x), -1;
				const struct garuda_watch_word *d = &w->words[x];
				if (d->place != P_LEVEL || d->pos != i || d->head == GARUDA_WATCH_NONE ||
				    d->owner != o || d->level != l)
					return snprintf(why, cap, "owner %u level %u: word %u does not belong", o, l, x), -1;
				if (e->key != d->key || e->target != w->waits[d->head].target)
					return snprintf(why, cap, "owner %u level %u: word %u's entry is stale", o, l, x), -1;
				if (l + 1 < GARUDA_WATCH_LEVELS && hold_from(w, e->hold, l) > lv->young)
					return snprintf(why, cap, "owner %u level %u: word %u younger than its young", o, l,
							x), -1;
				c++;
			}
			entries += c;
			if (lv->sweeping && (lv->cursor > lv->limit || lv->limit > lv->len))
				return snprintf(why, cap, "owner %u level %u: sweep %u/%u of %u", o, l, lv->cursor, lv->limit, lv->len), -1;
			if (c != lv->n)
				return snprintf(why, cap, "owner %u level %u: %u words, n %u", o, l, c, lv->n), -1;
			if ((lv->hpos != GARUDA_WATCH_NONE) != (lv->n != 0))
				return snprintf(why, cap, "owner %u level %u: timer and words disagree", o, l), -1;
			timers += lv->hpos != GARUDA_WATCH_NONE;
			sweeping += lv->sweeping;
		}
	if (sweeping != w->nsweeping)
		return snprintf(why, cap, "%u levels sweeping, %u counted", sweeping, w->nsweeping), -1;
	if (entries != onlevel)
		return snprintf(why, cap, "%u words on levels, %u live entries", onlevel, entries), -1;
	/* the owners' timers: each a heap of its P_AT words (not alone), its earliest one
	 * entry in the watcher's heap, at its earliest's time, or later while a step that
	 * served a chunk of them left the rest behind the other timers due in it (due()) */
	uint32_t in_owners = 0, with_at = 0;
	uint64_t horizon = add_sat(w->step_ns, GARUDA_POLICY_SPIN_AHEAD_NS);
	for (uint32_t o = 0; o < w->nowners; o++) {
		const struct garuda_watch_ownerrec *r = &w->owners[o];
		if (r->nat > r->atcap)
			return snprintf(why, cap, "owner %u: %u timers in room for %u", o, r->nat, r->atcap), -1;
		for (uint32_t i = 0; i < r->nat; i++) {
			uint32_t x = r->at[i].what;
			if (r->at[i].tag || x >= w->wtop || w->words[x].owner != o || w->words[x].place != P_AT ||
			    w->words[x].alone || w->words[x].pos != i)
				return snprintf(why, cap, "owner %u: timer %u (word %u) does not belong", o, i, x), -1;
			if (i && heap_before(&r->at[i], &r->at[(i - 1) / 2]))
				return snprintf(why, cap, "owner %u: timer %u before its parent", o, i), -1;
		}
		in_owners += r->nat;
		if ((r->at_hpos != GARUDA_WATCH_NONE) != (r->nat != 0))
			return snprintf(why, cap, "owner %u: %u timers, heap entry %u", o, r->nat, r->at_hpos), -1;
		if (!r->nat)
			continue;
		with_at++;
		const struct garuda_watch_timer *e = &w->heap[r->at_hpos];
		if (r->at_hpos >= w->nheap || !e->tag || e->what != o * SLOTS + SLOT_AT)
			return snprintf(why, cap, "owner %u: its timers' heap entry is not at %u", o, r->at_hpos), -1;
		if (e->due != r->at[0].due && (e->due < r->at[0].due || r->at[0].due > horizon))
			return snprintf(why, cap, "owner %u: its timers' entry due at %llu, its earliest at %llu",
					o, (unsigned long long)e->due, (unsigned long long)r->at[0].due), -1;
	}
	if (in_owners != owned)
		return snprintf(why, cap, "%u owners' timers, %u words on them", in_owners, owned), -1;
	for (uint32_t i = 0; i < w->nheap; i++) {
		const struct garuda_watch_timer *e = &w->heap[i];
		if (i && heap_before(e, &w->heap[(i - 1) / 2]))
			return snprintf(why, cap, "heap entry %u before its parent", i), -1;
		uint32_t o = e->what / SLOTS, slot = e->what % SLOTS;
		if (e->tag && (o >= w->nowners || (slot == SLOT_AT ? w->owners[o].at_hpos
								   : w->owners[o].lv[slot].hpos) != i))
			return snprintf(why, cap, "heap entry %u names owner %u slot %u, not there", i, o, slot), -1;
	}
	if (w->nheap != at + timers + with_at)
		return snprintf(why, cap, "heap %u entries, %u words alone, %u levels and %u owners' timers",
				w->nheap, at, timers, with_at), -1;
	return 0;
}
