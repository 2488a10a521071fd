/* counters.h — the scanner's and the sessions' counters, defined once (as errcode.h's
 * registry): each row of GARUDA_SCANNER_COUNTERS(X) is X(field, metric, help), each
 * row of GARUDA_SESSION_COUNTERS(X) is X(field, help). A row generates garudad's
 * atomics and stats fields (daemon/scanner.c and scanner.h; daemon/sink.h), the
 * control plane's JSON key (the field's name, in `scanners` and `clients`:
 * daemon/control_req.c; garctl names one with CTL_SCANNER_KEY(field) or
 * CTL_SESSION_KEY(field)) and the scanner's Prometheus family with its help text
 * (daemon/control_metrics.c).
 * Adding a counter is one row (plus a garctl column if it should show); its code bumps
 * it with count(s, SC_field, n) (daemon/scanner.c) or sink_count(k, SN_field, n)
 * (daemon/sink.h).
 *
 * Help texts that restate a constant are built from it (STR() of the constant that
 * defines it), never by hand. A counter of nanoseconds is named field_ns with a family
 * that ends in _seconds_total: the family gives it in seconds, as Prometheus's base
 * unit. libc only, no code. */
#pragma once

#include "policy.h"

#define GARUDA_STR_(x) #x
#define GARUDA_STR(x) GARUDA_STR_(x)

/* deliver_cpu_ns's sample: one delivering step in this many has its deliveries timed
 * on the thread's CPU clock (two system calls), and counts that many times */
#define GARUDA_SCANNER_DELIVER_SAMPLE 16

/* take_steps's bound: a scanner applies at most this many queued commands a take
 * (daemon/scanner.c), the rest in the takes after, a step between */
#define GARUDA_SCANNER_TAKE_STEP_CMDS 1024

/* one session's share of a step while another session holds waits on the scanner: a
 * take applies at most this many of its commands in a row, a walk of its drops takes at
 * most this many of its waits (daemon/scanner.c) */
#define GARUDA_SCANNER_SHARE_STEP 128

/* X(field, Prometheus family, help); the JSON key of `scanners` is "field" */
#define GARUDA_SCANNER_COUNTERS(X)                                                                 \
	X(completions, "garuda_scanner_completions_total", "Readiness delivered, by scanner.")     \
	X(passes, "garuda_scanner_passes_total", "Scan passes over the armed set, by scanner.")    \
	X(parks, "garuda_scanner_parks_total", "Times a scanner parked with nothing armed.")       \
	X(sleeps, "garuda_scanner_sleeps_total", "Timed sleeps with something armed, by scanner.") \
	X(spins, "garuda_scanner_spins_total", "Spin steps (a pass, then a pause), by scanner.")   \
	X(wordwait_steps, "garuda_scanner_wordwait_steps_total",                                   \
	  "Spin steps that idled in a hardware word wait (umwait, mwaitx, wfe), by scanner.")      \
	X(exact, "garuda_scanner_exact_total", "Completions seen while spinning (exact residuals).") \
	X(censored, "garuda_scanner_censored_total", "Completions found after a sleep (censored).") \
	X(late_wakes, "garuda_scanner_late_wakes_total",                                           \
	  "Completions found by a wake past their predicted window (not recorded).")             \
	X(arm_wakes, "garuda_scanner_arm_wakes_total", "ARMs that woke a sleeping scanner.")       \
	X(arm_nowakes, "garuda_scanner_arm_nowakes_total",                                         \
	  "ARMs posted to a sleeping scanner that did not wake it (deadline not earlier).")       \
	X(arms_taken, "garuda_scanner_arms_taken_total", "ARMs the scanner took into its watcher.") \
	X(take_ns, "garuda_scanner_take_seconds_total",                                            \
	  "Time from each ARM's send to its take by the scanner, summed (over arms_taken: the "   \
	  "loop's and the queue's delay).")                                                        \
	X(removal_looks, "garuda_scanner_removal_looks_total",                                     \
	  "Armed descriptors looked at to apply DISARMs and drops (those on a DISARM's word; "     \
	  "a drop's session's own), by scanner.")                                                  \
	X(drop_steps, "garuda_scanner_drop_steps_total",                                           \
	  "Steps that took part of a session's end or a segment's close and left the rest to the " \
	  "next (at most 1,024 armed descriptors a step; " GARUDA_STR(GARUDA_SCANNER_SHARE_STEP)     \
	  " of one session's while another holds waits), by scanner.")                            \
	X(deliver_cpu_ns, "garuda_scanner_deliver_cpu_seconds_total",                              \
	  "CPU time the scanner spent handing readiness to clients (eventfd writes, READY "        \
	  "messages, line stores; one delivering step in "                                         \
	  GARUDA_STR(GARUDA_SCANNER_DELIVER_SAMPLE) " timed on the thread's CPU clock, counted "   \
	  GARUDA_STR(GARUDA_SCANNER_DELIVER_SAMPLE) " times): a write that wakes a waiter on "     \
	  "another CPU pays that wake.")                                                           \
	X(posts, "garuda_scanner_posts_total",                                                     \
	  "Times the loop thread posted commands to the scanner's queue (the ARMs and DISARMs "   \
	  "of one callback's requests go in one post), by scanner.")                          \
	X(take_steps, "garuda_scanner_take_steps_total",                                           \
	  "Takes that applied " GARUDA_STR(GARUDA_SCANNER_TAKE_STEP_CMDS) " queued commands (or " \
	  GARUDA_STR(GARUDA_SCANNER_SHARE_STEP) " of one session's in a row while another holds " \
	  "waits) and left the rest to the next step (other sessions' due words looked at "       \
	  "between), by scanner.")

/* SC_completions, SC_passes, ...: a counter's index */
enum garuda_scanner_counter {
#define GARUDA_SC_ENUM_(field, metric, help) SC_##field,
	GARUDA_SCANNER_COUNTERS(GARUDA_SC_ENUM_)
#undef GARUDA_SC_ENUM_
	SC_COUNT_
};

/* A session's counters: X(field, help); the JSON key of `clients` is "field". They live
 * on its sink (daemon/sink.h: count[SN_field], bumped with sink_count() by the scanner
 * that fires its descriptors and writes its readiness); session_describe() reads them;
 * the `clients` entry prints them. */
#define GARUDA_SESSION_COUNTERS(X)                                                                 \
	X(completions, "Readiness delivered (armed targets reached).")                             \
	X(undelivered,                                                                             \
	  "Of the completions, eventfd readiness not written: the eventfd would have blocked.")    \
	X(write_retries,                                                                           \
	  "Eventfd writes made again after an interrupted write on a non-blocking eventfd.")       \
	X(word_loads,                                                                              \
	  "Loads of its words by the scanners (each a look at one due word: the watcher's work).") \
	X(scan_ns,                                                                                 \
	  "Scanner time attributed to it: each step's time shared by the words it looked at.")     \
	X(pauses,                                                                                  \
	  "Times garudad stopped reading its requests: 256 of its ARMs/DISARMs not yet taken.")

/* SN_completions, SN_undelivered, ...: a session counter's index */
enum garuda_session_counter {
#define GARUDA_SN_ENUM_(field, help) SN_##field,
	GARUDA_SESSION_COUNTERS(GARUDA_SN_ENUM_)
#undef GARUDA_SN_ENUM_
	SN_COUNT_
};

/* A counter's JSON key, for code that names one (garctl's columns): "field", checked:
 * CTL_SCANNER_KEY(passes) is "passes", and a field that is no row does not compile. */
#define CTL_SCANNER_KEY(field) (&#field[0 * SC_##field])
#define CTL_SESSION_KEY(field) (&#field[0 * SN_##field])
