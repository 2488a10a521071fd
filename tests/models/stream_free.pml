/* stream_free.pml — stream free and word reuse against a pending arm (issue 16).
 *
 * Models, as of commit 6f997f7 (citations are file:function:line of that commit):
 *   client/stream.c garuda_stream_new() stream.c:369-415 -> stream_publish()
 *       stream.c:327-367 — takes a free word, stores 0 into it (:352);
 *       garuda_stream_signal() stream.c:648-692 — enqueues the device store of seq
 *       (:668), sends ARM seq (NOREPLY) through arm_locked() stream.c:174-192, which
 *       records armed_gen (:190); garuda_stream_free() stream.c:461-531 /
 *       forget_daemon_side() stream.c:431-459 — the DISARM round trip whenever the
 *       stream sent an ARM in the session (:506, :436-443), then the word is free
 *       again unless a store is still to land (:520-525)
 *   daemon/scanner.c take_commands() scanner.c:256-310 / apply_removals()
 *       scanner.c:241-254 — ARM joins the armed set (:275-279), a DISARM removes its
 *       arm (armed_apply_removals() armed.c:208-225; removal_takes() armed.c:197-204:
 *       the first DISARM after the ARM, matched by sink, segment, index and token) and
 *       is answered (NOTICE_ANSWER, :246-252) after the removal; scan_pass()
 *       scanner.c:344-377 — fires the arms whose word reached their target
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
 * (take_commands() pushes a batch's ARMs as it reads them and applies its removals
 * after the loop, each removal taking only arms older than itself by command number
 * (gen, scanner.c:273 and armed.c:200): the same outcome as applying the commands one
 * by one in order, which also allows more interleavings); readiness delivery itself is one step (delivered[]); arm
 * identity is the stream (A or B) — the per-stream serial in the token (libgaruda's
 * router, client/router.c, also routes READY by that serial, never to a newer stream
 * on the same word; the model checks the daemon side, which must not fire at all).
 *
 * Variants that must fail:
 *   -DBUGGY_FREE            the protocol at f40e556 (forget_daemon_side() stream.c:347
 *                           there): no DISARM when the word already reached the last
 *                           signalled seq
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
	/* the backend's enqueued store (enqueue_store, garuda_stream_signal() stream.c:668) lands */
	:: d_step { pending_store[0] -> word = 1; reached[0] = 1; pending_store[0] = 0 }
	:: d_step { pending_store[1] -> word = 1; reached[1] = 1; pending_store[1] = 0 }
	od
}

/* one stream's life on the word: new, maybe signal, free. Sets `keep` when the word is
 * left free for another stream. */
inline stream_life(s, keep)
{
	/* garuda_stream_new() -> stream_publish() stream.c:352: __atomic_store_n(s->word, 0, RELEASE) */
	word = 0;
	if
	:: s == 1 -> reused = 1
	:: else -> skip
	fi;
	sig = 0;
	if
	:: /* garuda_stream_signal(): stream.c:668 enqueue_store(word, 1) */
		pending_store[s] = 1;
		sig = 1; /* stream.c:675: signalled = next */
		/* stream.c:683 arm_locked() :174-192: ARM target 1, NOREPLY, armed_gen = gen */
		live[s] = 1;
		cmdq!ARM,s
	:: skip /* never signalled */
	fi;
	/* garuda_stream_free() stream.c:501-515 -> forget_daemon_side() stream.c:431-459 */
#ifdef BUGGY_FREE
	/* f40e556 stream.c:347: if (sig && !garuda_reached(word_load(s->word), sig)) DISARM */
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
	/* garuda_stream_free() stream.c:506: armed = s->armed_gen == gen (it sent an ARM
	 * in this session); forget_daemon_side() stream.c:436-443: DISARM, and
	 * conn_request_gen() waits for the answer (0 or NOT_ARMED: word_safe) */
	if
	:: sig -> cmdq!DISARM,s; answer?eval(s)
	:: else -> skip
	fi;
#endif
	/* garuda_stream_free() stream.c:520-525: outstanding = !reached(word, sig); the
	 * word is free again only when nothing is outstanding (and word_safe, true here:
	 * one session, the round trip completes) */
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
	:: /* scanner_main() scanner.c:466-487: each round takes the queued commands, then
	    * makes a pass (parking and sleeping are scanner_park.pml's business) */
		/* take_commands() scanner.c:258-263: the batch queued at this moment */
		n = len(cmdq);
		do
		:: n > 0 ->
			n--;
			cmdq?kind,s; /* take_commands() scanner.c:270-297, in order */
			if
			:: kind == ARM ->
				armed[s] = 1 /* take_commands() scanner.c:277: armed_push() */
			:: kind == DISARM ->
				/* apply_removals() scanner.c:243 -> armed_apply_removals()
				 * armed.c:208-225: the first DISARM after the ARM takes it
				 * (removal_takes() armed.c:197-204) */
				d_step {
					if
					:: armed[s] -> armed[s] = 0; live[s] = 0
					:: else -> skip /* fired already: answered NOT_ARMED */
					fi
				}
				/* apply_removals() scanner.c:244-253: NOTICE_ANSWER after the
				 * removal (code 0, or NOT_ARMED when it had fired); the loop
				 * answers the client */
				answer!s
			fi
		:: else -> break
		od;
		skip; /* (Promela: a break may not jump into a d_step) */
		/* scan_pass() scanner.c:348-356: acquire load of each armed word, fire the
		 * reached ones (delivery: readiness_deliver() scanner.c:374) */
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
