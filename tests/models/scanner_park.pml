/* scanner_park.pml — the scanner's park decision against the loop's post and wake.
 *
 * Models daemon/scanner.c as of commit f40e556 (line numbers are that commit's; the
 * code moves, so each citation names the function too):
 *   loop thread:    post()          — push the command under s->lock, fetch_add s->seq
 *                                     (seq_cst), load s->sleeping (seq_cst), FUTEX_WAKE
 *   scanner thread: scanner_main()  — snapshot s->seq, take_commands(), park when
 *                                     nothing is armed: scanner_wait() stores
 *                                     sleeping = 1, then FUTEX_WAIT(&s->seq, snapshot)
 *
 * Memory model. Every access is sequentially consistent except the one reordering that
 * matters here: the scanner's store to `sleeping` may sit in a store buffer while its
 * FUTEX_WAIT reads s->seq (a seq_cst store followed by a read of another location may
 * be reordered: store buffering; the loop's fetch_add is a full barrier on its side).
 * The correct model drains that buffer before the read: that is the full fence the
 * protocol needs between the two — at f40e556 the smp_mb() the kernel executes in
 * futex_wait_setup() before it reads the futex word, or an explicit
 * atomic_thread_fence(memory_order_seq_cst) in scanner_wait().
 *
 * Abstractions: commands are opaque (the park decision does not look at their kind; a
 * command that arms leaves the scanner in its timed-sleep path, which cannot lose a
 * wake-up for longer than max_sleep_us and is not modelled: every command here leaves
 * nothing armed, so the scanner always parks, untimed — the case where a lost wake-up
 * is forever). Drops (no wake by design, post() line 153) are not modelled. s->seq is
 * bounded (NCMD posts); FUTEX_WAIT is "compare and enqueue" atomically, FUTEX_WAKE
 * dequeues the waiter, as the kernel guarantees. No spurious returns (they only help).
 *
 * Broken variants (each must fail):
 *   -DBROKEN_NO_FENCE        no fence between storing `sleeping` and reading s->seq
 *   -DBROKEN_WAKE_BEFORE_BUMP post() checks `sleeping` and wakes before bumping s->seq
 *   -DBROKEN_LATE_SNAPSHOT   the scanner snapshots s->seq after take_commands()
 */
#ifndef NCMD
#define NCMD 3
#endif

byte seq;        /* s->seq, the futex word (scanner.c:90) */
byte queued;     /* s->ncmds: posted, not yet taken (scanner.c:89) */
byte posted;     /* commands whose post() has begun */
byte taken;      /* commands applied by take_commands() */
bit sleeping;    /* s->sleeping as the loop can see it (scanner.c:91) */
bit sb_sleeping; /* the scanner's store sleeping = 1, still in its store buffer */
bit waiter;      /* the scanner is queued on the futex word */
bit in_post;     /* the loop is inside post() */

/* "No lost wake-up": the loop has finished a post() (so no post is under way that
 * could still wake the scanner), a command is queued, and the scanner sleeps on a
 * futex word nobody will wake. */
#define lost (waiter && queued > 0 && !in_post)
ltl no_lost_wakeup { [] !lost }
/* "Every command is taken": all NCMD commands are eventually applied. */
ltl every_command_taken { <> (taken == NCMD) }

active proctype loop()
{
	byte i;
	for (i : 1 .. NCMD) {
		in_post = 1;
		/* post() scanner.c:135-149: s->cmds[s->ncmds++] = *c under s->lock */
		d_step { queued++; posted++ }
#ifdef BROKEN_WAKE_BEFORE_BUMP
		/* (broken) post(): the sleeping check and FUTEX_WAKE before the bump */
		if
		:: sleeping -> waiter = 0 /* post() scanner.c:155-156 */
		:: else -> skip
		fi;
		seq++ /* post() scanner.c:150: atomic_fetch_add(&s->seq, 1) */
#else
		/* post() scanner.c:150: atomic_fetch_add(&s->seq, 1), seq_cst RMW (full barrier) */
		seq++;
		/* post() scanner.c:155: urgent && atomic_load(&s->sleeping) */
		if
		:: sleeping ->
			/* post() scanner.c:156: futex(&s->seq, FUTEX_WAKE_PRIVATE, 1) */
			waiter = 0
		:: else -> skip
		fi;
#endif
		in_post = 0
	}
}

active proctype scanner()
{
	byte snap;
	do
	:: /* scanner_main() scanner.c:727: while (!s->stop) — runs for ever */
#ifndef BROKEN_LATE_SNAPSHOT
		snap = seq; /* scanner_main() scanner.c:728: seq = atomic_load(&s->seq) */
#endif
		/* take_commands() scanner.c:415-420: take the whole queue under s->lock */
		d_step { taken = taken + queued; queued = 0 };
#ifdef BROKEN_LATE_SNAPSHOT
		snap = seq; /* (broken) the snapshot after take_commands() */
#endif
		/* scanner_main() scanner.c:739-741: s->narmed == 0 -> scanner_wait(s, seq, 0) */
		/* scanner_wait() scanner.c:697: atomic_store(&s->sleeping, 1) — buffered */
		sb_sleeping = 1;
#ifndef BROKEN_NO_FENCE
		/* the full fence before FUTEX_WAIT reads s->seq (kernel futex_wait_setup()
		 * smp_mb(), or atomic_thread_fence(seq_cst) in scanner_wait()) */
		sb_sleeping == 0;
#endif
		/* scanner_wait() scanner.c:698: FUTEX_WAIT_PRIVATE on s->seq, expecting snap:
		 * compare and enqueue in one step */
		atomic {
			if
			:: seq == snap -> waiter = 1
			:: else -> skip /* EAGAIN */
			fi
		}
end_parked:	waiter == 0; /* blocked until FUTEX_WAKE */
		/* scanner_wait() scanner.c:699: atomic_store(&s->sleeping, 0); a store after
		 * a buffered one lands after it (TSO order): drain first */
		sb_sleeping == 0;
		sleeping = 0
	od
}

/* The store buffer drains at any time (the scanner's store becomes visible). */
active proctype store_buffer()
{
end:	do
	:: d_step { sb_sleeping == 1 -> sleeping = 1; sb_sleeping = 0 }
	od
}
