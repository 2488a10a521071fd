/* doorbell.pml — the client's doorbell wait against the scanner's bump and futex wake.
 *
 * Models, as of commit 6f997f7 (citations are file:function:line of that commit):
 *   client/stream.c garuda_stream_wait() stream.c:849-933 — per round of its loop
 *       (:890): sample the segment's doorbell (acquire, :897-900), read the word
 *       (acquire, :901), return when reached (:902), else block() stream.c:719-750 =
 *       FUTEX_WAIT(&hdr.doorbell, bell_seen) (:739)
 *   daemon/scanner.c scan_pass() scanner.c:344-377 — acquire load of each armed word
 *       (:349), fire the reached ones (:350-353), then readiness_deliver() (:374);
 *   daemon/readiness.c readiness_deliver() groups the fired doorbell arms per
 *       segment (the doorbell row's group key, daemon/form.c) and calls
 *       readiness_doorbell() once per segment — fetch_add(&hdr.doorbell, count,
 *       release), then FUTEX_WAKE(INT_MAX)
 *   (client/form.c doorbell_nudge(), libgaruda's own nudge, bumps and wakes in the
 *       same order: the same scanner side)
 *   the device — stores the target into the word (the backend's enqueued store).
 *
 * NSTREAM streams share one segment, hence one doorbell; each has one waiter thread
 * waiting for its target 1 and one arm (target 1) already in the scanner's armed set
 * (the ARM's way in is scanner_park.pml's business).
 *
 * Memory model: sequentially consistent. That is sound for these accesses: the device
 * store -> scanner acquire load -> scanner release bump -> waiter acquire sample ->
 * waiter load of the word is a release/acquire chain (message passing), so a waiter
 * that samples the bumped doorbell reads the reached word; and FUTEX_WAIT compares and
 * enqueues atomically against FUTEX_WAKE (the kernel's guarantee).
 *
 * Abstractions: the wait's spin phase (reads the word only), the backstop query and
 * every timeout are left out: the model shows the wait returns through the doorbell
 * alone, without the backstop (which would only bound a lost wake-up's delay). No
 * spurious futex returns. The doorbell counter is unbounded in the code; here it
 * counts at most NSTREAM bumps (byte).
 *
 * Broken variants (each must fail):
 *   -DBROKEN_WAKE_BEFORE_BUMP  readiness_doorbell() wakes, then bumps
 *   -DBROKEN_SAMPLE_AFTER_WORD garuda_stream_wait() reads the word, then samples the
 *                              doorbell
 */
#ifndef NSTREAM
#define NSTREAM 2
#endif

byte bell;               /* hdr.doorbell, the futex word */
bit word[NSTREAM];       /* each stream's word: 0, or its target 1 */
bit armed[NSTREAM];      /* the scanner's armed set (hot[]: word, target 1) */
bit queued[NSTREAM];     /* waiter i is queued on the doorbell futex */
bit returned[NSTREAM];   /* garuda_stream_wait() of stream i returned 0 */
bit delivered[NSTREAM];  /* readiness_doorbell() for stream i's firing has returned */

/* "No lost wake-up": a waiter sleeps on the doorbell although the scanner finished
 * delivering its stream's readiness (the bump and the wake are both done). */
#define lost0 (queued[0] && delivered[0])
#define lost1 (queued[1] && delivered[1])
ltl no_lost_wakeup { [] !(lost0 || lost1) }
/* "Every wait returns" (and, for the scanner's side, every reached arm is delivered). */
ltl every_wait_returns { <> (returned[0] && returned[1]) }
ltl every_reached_arm_delivered { [] ((word[0] -> <> delivered[0]) && (word[1] -> <> delivered[1])) }

proctype device(byte i)
{
	/* the stream's enqueued store (garuda_stream_signal() stream.c:668,
	 * backend enqueue_store) lands: word = target 1 */
	word[i] = 1
}

proctype waiter(byte i)
{
	byte seen;
	bit w;
	do
	:: /* garuda_stream_wait() stream.c:890: for (;;) — the blocking loop */
#ifndef BROKEN_SAMPLE_AFTER_WORD
		/* garuda_stream_wait() stream.c:897-900: bell_seen = acquire load of the doorbell */
		seen = bell;
		/* garuda_stream_wait() stream.c:901: garuda_reached(word_load(s->word), seq) */
		w = word[i];
#else
		w = word[i]; /* (broken) the word first ... */
		seen = bell; /* ... then the doorbell sample */
#endif
		if
		:: w -> break /* garuda_stream_wait() stream.c:902: return 0 */
		:: else -> skip
		fi;
		/* block() stream.c:739: FUTEX_WAIT(&hdr.doorbell, bell_seen): compare and
		 * enqueue in one step; EAGAIN when the doorbell moved */
		atomic {
			if
			:: bell == seen -> queued[i] = 1
			:: else -> skip
			fi
		}
		queued[i] == 0 /* until FUTEX_WAKE */
	od;
	returned[i] = 1
}

/* FUTEX_WAKE(INT_MAX): every queued waiter wakes */
inline futex_wake_all()
{
	d_step {
		for (k : 0 .. NSTREAM - 1) { queued[k] = 0 }
		k = 0
	}
}

proctype scanner()
{
	byte i, k, nf;
	bit fired[NSTREAM];
	do
	:: /* scanner_main() scanner.c:466/487: passes while something is armed */
		nf = 0;
		/* scan_pass() scanner.c:348-356: each armed word, acquire load; fire the reached */
		for (i : 0 .. NSTREAM - 1) {
			if
			:: armed[i] && word[i] -> armed[i] = 0; fired[i] = 1; nf++
			:: else -> skip
			fi
		}
		if
		:: nf > 0 ->
			/* readiness_deliver() readiness.c:251-261: the fired doorbell arms of one
			 * segment -> one readiness_doorbell() with their count */
#ifndef BROKEN_WAKE_BEFORE_BUMP
			bell = bell + nf;  /* readiness.c:152: __atomic_fetch_add(bell, add, RELEASE) */
			futex_wake_all();  /* readiness.c:153: FUTEX_WAKE, INT_MAX */
#else
			futex_wake_all();  /* (broken) the wake first ... */
			bell = bell + nf;  /* ... then the bump */
#endif
			d_step {
				for (i : 0 .. NSTREAM - 1) {
					if
					:: fired[i] -> delivered[i] = 1; fired[i] = 0
					:: else -> skip
					fi
				}
				i = 0
			}
		:: else -> skip
		fi;
		/* scanner_main() scanner.c:478-480: nothing armed -> park (scanner_park.pml) */
		if
		:: (armed[0] || armed[1]) -> skip
		:: else -> break
		fi
	od
}

init
{
	byte i;
	atomic {
		for (i : 0 .. NSTREAM - 1) {
			armed[i] = 1; /* the ARM is applied: take_commands() scanner.c:277 armed_push() armed.c:12 */
			run device(i);
			run waiter(i)
		}
		run scanner()
	}
}
