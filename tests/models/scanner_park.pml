/* scanner_park.pml — the scanner's sleep decision against the loop's post and wake,
 * including the published wake time (wake_at) that decides whether an ARM wakes it.
 *
 * Models daemon/scanner.c as of commit 6f997f7 (file:function:line of that commit):
 *   loop thread:    post() scanner.c:113-145 — push the command under s->lock (:127),
 *                   fetch_add s->seq (:130, seq_cst), load s->sleeping (:135, seq_cst;
 *                   not sleeping -> return); an ARM (no backlog) is urgent only when
 *                   its deadline is earlier than atomic_load(&s->wake_at) (:137-141);
 *                   every other modelled command is urgent (:133-134); urgent ->
 *                   FUTEX_WAKE (:143-144)
 *   scanner thread: scanner_main() scanner.c:451-509 — snapshot s->seq (:467),
 *                   take_commands() (:469; scanner.c:256-263 takes the whole queue
 *                   under s->lock), then park (nothing armed, :478-480:
 *                   scanner_wait(s, seq, UINT64_MAX, true)) or, after a pass, a timed
 *                   sleep to plan_wait()'s `until` (:496-504); scanner_wait()
 *                   scanner.c:382-400 — store wake_at (:386; UINT64_MAX when parked or
 *                   when arms always wake, else until), store sleeping = 1 (:387),
 *                   atomic_thread_fence(seq_cst) (:393), FUTEX_WAIT(&s->seq, snapshot)
 *                   (:395) or the absolute FUTEX_WAIT_BITSET to until (:397-398), store
 *                   sleeping = 0 (:399)
 *
 * Time. Deadlines and wake times are abstract values ordered by `<`: a command's
 * deadline dl is 0 for a command that always wakes (DISARM, answered drop, LIST, STOP;
 * drops without an answer wake nobody by design, post() :131-134, and are left out) or
 * 1..2 for an ARM (arm_ns + the predicted sleep); a sleep's wake time W is 1..2 (timed,
 * +predict: wake_at = until) or INF (parked: wake_at = UINT64_MAX). The ladder without
 * +predict publishes UINT64_MAX with a finite timeout (arms_wake): post() then wakes
 * for every ARM, a subset of the model's behaviours (parked publishes the same). A
 * timed sleep may end by timeout at any moment (time passes while it sleeps; it ends
 * at W, which the model need not know).
 *
 * Property (the wake rule). A command must be taken by max(its deadline, when it was
 * posted) unless the scanner's sleep in progress ends sooner: an ARM whose deadline is
 * earlier than the sleeping scanner's wake time must wake it; one whose deadline is
 * not earlier is safe without a wake, for the scanner takes it at W <= deadline. So a
 * state is a lost wake-up when the scanner is queued on the futex to a wake time W
 * with some queued command whose deadline is earlier than W, and no post() is under
 * way (none that could still wake it). With W = INF that is the old "parked with a
 * command queued". The liveness property: every command is eventually taken.
 *
 * Memory model. Every access is sequentially consistent except the scanner's two
 * stores before FUTEX_WAIT: they go through a FIFO store buffer that drains at any
 * time, so the kernel's read of s->seq (not a C11 access) may pass them. The correct
 * model drains the buffer before that read: scanner_wait()'s explicit
 * atomic_thread_fence(memory_order_seq_cst) (:393; the kernel's smp_mb() in
 * futex_wait_setup() would do it too). The loop's fetch_add is a full barrier on its
 * side.
 *
 * Abstractions: s->seq is bounded (NCMD posts); FUTEX_WAIT is "compare and enqueue"
 * atomically, FUTEX_WAKE dequeues the waiter, as the kernel guarantees; no spurious
 * returns; the backlog rule (CMD_BACKLOG queued commands always wake) is left out (it
 * only adds wakes); the pass and plan_wait() are a nondeterministic choice of W.
 *
 * Variants:
 *   -DBROKEN_NO_FENCE           no fence between the stores and the read of s->seq
 *   -DBROKEN_WAKE_BEFORE_BUMP   post() checks `sleeping` and wakes before bumping s->seq
 *   -DBROKEN_LATE_SNAPSHOT      the scanner snapshots s->seq after take_commands()
 *   -DBROKEN_WAKE_AT_AFTER_FENCE scanner_wait() stores wake_at after the fence: post()
 *                               can see sleeping = 1 with the previous sleep's wake_at
 *   -DBROKEN_STALE_WAKE_AT      post() loads wake_at before it pushes and bumps (a
 *                               wake time read ahead of time, e.g. cached)
 *   -DSLEEPING_FIRST            (must verify) scanner_wait() stores sleeping before
 *                               wake_at, both before the fence: the order of the two
 *                               stores does not matter, the fence and the seq compare do
 */
#ifndef NCMD
#define NCMD 3
#endif
#define INF 3 /* wake_at = UINT64_MAX (parked) */

byte seq;        /* s->seq, the futex word (scanner.c:86) */
byte posted;     /* commands pushed (s->cmds[s->ncmds++], post() :127) */
byte taken;      /* commands taken by take_commands(): the queue is [taken, posted) */
byte dl[NCMD];   /* each command's deadline: 0 = always wakes, 1..2 = an ARM's */
bit sleeping;    /* s->sleeping as the loop can see it (scanner.c:87) */
byte wake_at;    /* s->wake_at as the loop can see it (scanner.c:88; calloc: 0) */
bit sb_sleeping; /* the store sleeping = 1, still in the scanner's store buffer */
byte sb_wake;    /* the store of wake_at still in the store buffer (0: none) */
bit waiter;      /* the scanner is queued on the futex word */
byte timer_at;   /* the wake time W of the sleep it is queued in */
bit in_post;     /* the loop is inside post() */

#define late(i) (taken <= i && i < posted && dl[i] < timer_at)
#define lost (waiter && !in_post && (late(0) || late(1) || late(2)))
ltl no_lost_wakeup { [] !lost }
ltl every_command_taken { <> (taken == NCMD) }

active proctype loop()
{
	byte i, d, seen;
	for (i : 0 .. NCMD - 1) {
		/* the command: one that always wakes, or an ARM with deadline 1 or 2 */
		if
		:: d = 0
		:: d = 1
		:: d = 2
		fi;
		in_post = 1;
#ifdef BROKEN_STALE_WAKE_AT
		seen = wake_at; /* (broken) the wake time read before the push and bump */
#endif
		/* post() scanner.c:115-129: s->cmds[s->ncmds++] = *c under s->lock */
		d_step { dl[i] = d; posted++; d = 0 };
#ifdef BROKEN_WAKE_BEFORE_BUMP
		/* (broken) post(): the sleeping check and FUTEX_WAKE before the bump */
		if
		:: sleeping -> waiter = 0
		:: else -> skip
		fi;
		seq++
#else
		/* post() scanner.c:130: atomic_fetch_add(&s->seq, 1), seq_cst RMW (full barrier) */
		seq++;
		/* post() scanner.c:135: if (!atomic_load(&s->sleeping)) return */
		if
		:: sleeping ->
#ifndef BROKEN_STALE_WAKE_AT
			/* post() scanner.c:139: an ARM is urgent when deadline < wake_at */
			seen = wake_at;
#endif
			if
			:: dl[i] == 0 || dl[i] < seen ->
				/* post() scanner.c:143-144: futex(&s->seq, FUTEX_WAKE_PRIVATE, 1) */
				waiter = 0
			:: else -> skip /* st_arm_nowakes: it wakes at wake_at anyway */
			fi
		:: else -> skip
		fi;
#endif
		d_step { in_post = 0; seen = 0 }
	}
}

active proctype scanner()
{
	byte snap, until;
	do
	:: /* scanner_main() scanner.c:466: while (!s->stop) — runs for ever */
#ifndef BROKEN_LATE_SNAPSHOT
		snap = seq; /* scanner_main() scanner.c:467: seq = atomic_load(&s->seq) */
#endif
		/* take_commands() scanner.c:258-263: take the whole queue under s->lock */
		taken = posted;
#ifdef BROKEN_LATE_SNAPSHOT
		snap = seq; /* (broken) the snapshot after take_commands() */
#endif
		/* park (scanner_main() :478-480) or a pass and a timed sleep to plan_wait()'s
		 * until (:496-504) */
		if
		:: until = INF
		:: until = 1
		:: until = 2
		fi;
#if defined(SLEEPING_FIRST)
		sb_sleeping = 1;  /* scanner_wait() :387, moved first */
		sb_wake = until;  /* scanner_wait() :386 */
#elif defined(BROKEN_WAKE_AT_AFTER_FENCE)
		sb_sleeping = 1;  /* scanner_wait() :387 */
#else
		sb_wake = until;  /* scanner_wait() scanner.c:386: atomic_store(&s->wake_at, ..) */
		sb_sleeping = 1;  /* scanner_wait() scanner.c:387: atomic_store(&s->sleeping, 1) */
#endif
#ifndef BROKEN_NO_FENCE
		/* scanner_wait() scanner.c:393: atomic_thread_fence(memory_order_seq_cst) */
		sb_wake == 0 && sb_sleeping == 0;
#endif
#ifdef BROKEN_WAKE_AT_AFTER_FENCE
		sb_wake = until;  /* (broken) wake_at stored after the fence */
#endif
		/* scanner_wait() scanner.c:394-398: FUTEX_WAIT(_BITSET) on s->seq, expecting
		 * snap: compare and enqueue in one step */
		atomic {
			if
			:: seq == snap -> waiter = 1; timer_at = until
			:: else -> skip /* EAGAIN */
			fi
		}
		/* blocked until FUTEX_WAKE, or (timed) until the timeout */
end_parked:	if
		:: waiter == 0
		:: atomic { until != INF && waiter -> waiter = 0 }
		fi;
		timer_at = 0;
		/* scanner_wait() scanner.c:399: atomic_store(&s->sleeping, 0); a store after
		 * buffered ones lands after them (FIFO): drain first */
		sb_wake == 0 && sb_sleeping == 0;
		d_step { sleeping = 0; until = 0 }
	od
}

/* The store buffer drains at any time, first in first out. */
active proctype store_buffer()
{
end:	do
#ifdef SLEEPING_FIRST
	:: d_step { sb_sleeping == 1 -> sleeping = 1; sb_sleeping = 0 }
	:: d_step { sb_wake != 0 && sb_sleeping == 0 -> wake_at = sb_wake; sb_wake = 0 }
#else
	:: d_step { sb_wake != 0 -> wake_at = sb_wake; sb_wake = 0 }
	:: d_step { sb_sleeping == 1 && sb_wake == 0 -> sleeping = 1; sb_sleeping = 0 }
#endif
	od
}
