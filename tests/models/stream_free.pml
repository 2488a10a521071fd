/* stream_free.pml — stream free and word reuse against a pending arm (issue 16).
 *
 * Models, as of commit f40e556 (line numbers are that commit's; each citation names
 * the function too, since the code moves):
 *   client/stream.c garuda_stream_new() — takes a free word, stores 0 into it;
 *       garuda_stream_signal() — enqueues the device store of seq, sends ARM seq
 *       (NOREPLY); garuda_stream_free() / forget_daemon_side() — DISARM round trip or
 *       not, then the word is free again unless a store is still to land
 *   daemon/scanner.c take_commands() / apply_removals() — ARM joins the armed set, a
 *       DISARM removes its arm and is answered (NOTICE_DISARMED) after the removal;
 *       scan_pass() — fires the arms whose word reached their target
 *   the device — lands the enqueued store.
 *
 * The protocol modelled by default is the FIXED one: garuda_stream_free() completes the
 * DISARM round trip whenever the stream signalled anything in the session, whatever the
 * word says; the daemon answers the DISARM only after the arm is out of the armed set
 * (removed, or fired earlier). So a word is handed to a new stream only when no arm of
 * the old stream is left in the daemon.
 *
 * Two streams, A (0) then B (1), take the same word one after the other (B only if A
 * left the word free); each may signal once (target 1) or not at all. Words hold 0 or 1.
 *
 * Abstractions: one session (a reconnect drops every arm; sessions are not modelled);
 * the loop thread relays client requests to the scanner's command queue in order and
 * relays the DISARM answer back (cmdq, answer); the scanner applies one command per step
 * (take_commands() applies a batch; one per step allows more interleavings, so it is a
 * sound over-approximation); readiness delivery itself is one step (delivered[]); arm
 * identity is the stream (A or B) — the per-stream serial in the token.
 *
 * Variants that must fail:
 *   -DBUGGY_FREE            today's protocol (f40e556 forget_daemon_side() stream.c:347):
 *                           no DISARM when the word already reached the last signalled seq
 *   -DBROKEN_DISARM_NO_WAIT free sends the DISARM but reuses the word without waiting for
 *                           its answer
 */
#define ARM 1
#define DISARM 2

chan cmdq = [4] of { byte, byte };   /* loop -> scanner: s->cmds, in order (kind, stream) */
chan answer = [2] of { byte };        /* scanner -> loop -> client: DISARM answers */

bit word;            /* the shared word (garuda_segment_word()) */
bit live[2];         /* an arm of stream s is in the daemon: queued or in the armed set */
bit armed[2];        /* ... in the scanner's armed set */
bit reached[2];      /* stream s's store landed (its target 1 reached) */
bit freed[2];        /* garuda_stream_free(s) returned */
bit reused;          /* the word was handed to B (garuda_stream_new() stored 0) */
bit stale;           /* an arm fired after its stream was freed and its word reused */
bit pending_store[2];/* stream s's device store is enqueued, not landed */

/* "No arm stranded": when the word is handed to a new stream, no arm of the old stream
 * is left in the daemon (queued or armed) — else it can stay armed for good (the word
 * was reset below its target) or fire stale readiness on the new stream's stores. */
ltl no_arm_stranded { [] (reused -> !live[0]) }
/* No readiness is ever delivered for a stream that is gone and whose word is reused. */
ltl no_stale_delivery { [] !stale }
/* "Every reached arm is delivered": an arm whose target is reached leaves the daemon
 * (it fires, or its own stream's DISARM takes it). */
ltl every_reached_arm_delivered {
	[] (((reached[0] && live[0]) -> <> !live[0]) && ((reached[1] && live[1]) -> <> !live[1])) }

proctype device()
{
end:	do
	/* the backend's enqueued store (enqueue_store, garuda_stream_signal() stream.c:482) lands */
	:: d_step { pending_store[0] -> word = 1; reached[0] = 1; pending_store[0] = 0 }
	:: d_step { pending_store[1] -> word = 1; reached[1] = 1; pending_store[1] = 0 }
	od
}

/* one stream's life on the word: new, maybe signal, free. Sets `keep` when the word is
 * left free for another stream. */
inline stream_life(s, keep)
{
	/* garuda_stream_new() stream.c:292: __atomic_store_n(s->word, 0, RELEASE) */
	word = 0;
	if
	:: s == 1 -> reused = 1
	:: else -> skip
	fi;
	sig = 0;
	if
	:: /* garuda_stream_signal(): stream.c:482 enqueue_store(word, 1) */
		pending_store[s] = 1;
		sig = 1; /* stream.c:487: signalled = next */
		/* stream.c:493 arm_locked(): ARM target 1, NOREPLY, relayed in order */
		live[s] = 1;
		cmdq!ARM,s
	:: skip /* never signalled */
	fi;
	/* garuda_stream_free() stream.c:401-408 -> forget_daemon_side() stream.c:341-353 */
#ifdef BUGGY_FREE
	/* stream.c:347: if (sig && !garuda_reached(word_load(s->word), sig)) DISARM */
	if
	:: sig && !word -> cmdq!DISARM,s; answer?eval(s) /* conn_request_gen() waits */
	:: else -> skip
	fi;
#elif defined(BROKEN_DISARM_NO_WAIT)
	if
	:: sig -> cmdq!DISARM,s /* (broken) the answer is not awaited */
	:: else -> skip
	fi;
#else
	/* FIXED: the DISARM round trip whenever the stream signalled anything */
	if
	:: sig -> cmdq!DISARM,s; answer?eval(s)
	:: else -> skip
	fi;
#endif
	/* garuda_stream_free() stream.c:419-424: outstanding = !reached(word, sig); the
	 * word is free again only when nothing is outstanding */
	atomic {
		keep = !(sig && !word);
		freed[s] = 1
	}
}

proctype client()
{
	bit sig, keep;
	stream_life(0, keep);
	if
	:: keep -> stream_life(1, keep)
	:: else -> skip /* seg->used = 2: the word is never handed out again */
	fi
}

proctype scanner()
{
	byte kind, s, n;
end:	do
	:: /* scanner_main() scanner.c:727-747: each round takes the queued commands, then
	    * makes a pass (parking and sleeping are scanner_park.pml's business) */
		/* take_commands() scanner.c:415-420: the batch queued at this moment */
		n = len(cmdq);
		do
		:: n > 0 ->
			n--;
			cmdq?kind,s; /* take_commands() scanner.c:426-449, in order */
			if
			:: kind == ARM ->
				armed[s] = 1 /* push_armed() scanner.c:227-228 */
			:: kind == DISARM ->
				/* apply_removals() scanner.c:391-398: the first DISARM after the
				 * ARM takes it */
				d_step {
					if
					:: armed[s] -> armed[s] = 0; live[s] = 0
					:: else -> skip /* fired already: answered NOT_ARMED */
					fi
				}
				/* apply_removals() scanner.c:400-408: NOTICE_DISARMED after the
				 * removal; the loop answers the client */
				answer!s
			fi
		:: else -> break
		od;
		skip; /* (Promela: a break may not jump into a d_step) */
		/* scan_pass() scanner.c:666-675: acquire load of each armed word, fire the
		 * reached ones (delivery: deliver() scanner.c:597) */
		d_step {
			if
			:: armed[0] && word -> armed[0] = 0; live[0] = 0; stale = stale || (freed[0] && reused)
			:: else -> skip
			fi
		}
		d_step {
			if
			:: armed[1] && word -> armed[1] = 0; live[1] = 0
			:: else -> skip
			fi
		}
	od
}

init
{
	atomic { run device(); run client(); run scanner() }
}
