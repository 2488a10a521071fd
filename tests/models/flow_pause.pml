/* flow_pause.pml — a session's flow control: the loop stops reading a session with
 * MAX of its commands untaken and a scanner's take asks for it to be read again
 * (docs/protocol.md §6.2 "Flow control").
 *
 * Models the code of commit f3c6560 (file:function:line of that commit):
 *   loop thread:    on_in() session_conn.c:231 calls pause_reading() (:191) before each
 *                   read: sink_pause() sink.h:123-131 loads queued (:125; below MAX:
 *                   read on), stores paused = 1 (:127), loads queued again and, at or
 *                   below RESUME, exchanges paused with 0 (:128; it got 1: read on);
 *                   else the watch is removed (session_conn.c:196) and the scanners
 *                   kicked. A read posts commands: sink_queued_add() (sink.h:112-114,
 *                   fetch_add) before the post (session_req.c:332, :384).
 *                   session_handle_notices() takes NOTICE_RESUME (session_conn.c:606)
 *                   and resume_reading() (:207) adds the watch again.
 *   scanner thread: take_commands() takes what is queued, and taken()
 *                   (scanner.c:739-745) calls sink_taken() (sink.h:135-139): fetch_sub
 *                   of the n taken (:137), then, at or below RESUME, a load of paused and
 *                   its exchange with 0 (:138); it got 1: notice_push(NOTICE_RESUME).
 *
 * Property. The loop stops reading a session only while someone will ask it to read
 * again: never a state where the watch is gone, no RESUME is queued or being pushed,
 * no take is between its fetch_sub and its exchange, and either paused is 0 (nobody
 * owns the resume) or nothing is left for a scanner to take (no take can come to
 * claim it). Liveness: every command is read and taken.
 *
 * Memory model. Every access is sequentially consistent, as the code's atomics are
 * (no explicit memory orders): what the property needs is the store of paused before
 * the loop's second load of queued, and the scanner's fetch_sub before its load of
 * paused, which seq_cst gives (the store-load pair of each side). The exchange makes
 * exactly one side the owner of a resume.
 *
 * Abstractions: MAX = 2 and RESUME = 1 stand for 256 and 128; a read posts one
 * command (the code's read of 8 datagrams only overshoots MAX); a take takes one or
 * all of what is queued; one session, one scanner (several scanners each run
 * sink_taken() on the one count: the same interleavings, more of them); the lost-
 * notice sweep (session_conn.c:626) is left out (it only adds resumes).
 *
 * Variants:
 *   -DBROKEN_NO_RECHECK     sink_pause() stops reading once it saw MAX, without the
 *                           second load: a take between the two runs past RESUME
 *                           while paused is still 0, and nobody resumes it
 *   -DBROKEN_LOAD_BEFORE_SUB sink_taken() loads paused before its fetch_sub: it may
 *                           read 0 before the loop's store, and subtract after the
 *                           loop's second load
 */
#define N 5
#define MAX 2
#define RESUME 1

byte queued;     /* sink->queued */
bit paused;      /* sink->paused */
bit reading = 1; /* the session's watch (s->w_in) is there */
byte notices;    /* NOTICE_RESUMEs queued for the loop */
bit in_taken;    /* the scanner is inside sink_taken(), after its fetch_sub */
bit pushing;     /* the scanner won the exchange and has not pushed the notice yet */
byte posted;     /* commands read and posted */
byte taken;      /* commands taken */

#define stuck (!reading && notices == 0 && !in_taken && !pushing && (paused == 0 || queued == 0))
ltl no_lost_resume { [] !stuck }
ltl every_command_taken { <> (taken == N) }

active proctype loop()
{
	byte q;
	do
	:: posted == N -> break
	:: reading && posted < N ->
		/* sink.h:125 */
		q = queued;
		if
		:: q < MAX ->
			/* read one: sink_queued_add() before the post */
			d_step { queued++; posted++ }
		:: else ->
			paused = 1; /* sink.h:127 */
#ifdef BROKEN_NO_RECHECK
			reading = 0
#else
			q = queued; /* sink.h:128, the second load */
			if
			:: q <= RESUME ->
				atomic {
					if
					:: paused -> paused = 0 /* it got 1: read on */
					:: else -> reading = 0 /* the scanner owns the resume */
					fi
				}
			:: else -> reading = 0 /* session_conn.c:196: the watch removed */
			fi
#endif
		fi
	:: !reading && notices > 0 ->
		/* session_conn.c:606: resume_reading() */
		d_step { notices--; reading = 1 }
	od;
	/* the RESUMEs still queued are taken later too */
	do
	:: notices > 0 -> notices--
	:: else -> break
	od
}

active proctype scanner()
{
	byte left, p;
	do
	:: taken == N -> break
	:: queued > 0 ->
#ifdef BROKEN_LOAD_BEFORE_SUB
		p = paused;
#endif
		/* take_commands(): one, or all that is queued; sink.h:137 fetch_sub */
		atomic {
			if
			:: left = queued - 1
			:: left = 0
			fi;
			taken = taken + queued - left;
			queued = left;
			in_taken = 1
		}
		if
		:: left <= RESUME ->
#ifndef BROKEN_LOAD_BEFORE_SUB
			p = paused; /* sink.h:138 */
#endif
			if
			:: p ->
				atomic {
					if
					:: paused -> paused = 0; pushing = 1
					:: else -> skip
					fi;
					in_taken = 0
				}
				if
				:: pushing -> d_step { notices++; pushing = 0 } /* scanner.c:742 */
				:: else -> skip
				fi
			:: else -> in_taken = 0
			fi
		:: else -> in_taken = 0
		fi
	od
}
