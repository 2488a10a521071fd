/* counters.h — the scanner counters, defined once (as errcode.h's registry): each row
 * of GARUDA_SCANNER_COUNTERS(X) is X(field, key, metric, help). It generates
 * garudad's atomics and stats fields (daemon/scanner.c, scanner.h), the control
 * plane's JSON keys of `scanners` (daemon/control_req.c), the Prometheus families with
 * their help text (daemon/control_metrics.c); the JSON keys are control_names.h's
 * CTL_KEY_*, which garctl reads.
 * Adding a counter is one row (plus a garctl column if it should show); its code
 * bumps it with scanner_count(s, SC_field, n).
 *
 * Help texts that restate a constant are built from it (STR() of the constant that
 * defines it), never by hand. libc only, no code. */
#pragma once

#include "control_names.h"
#include "policy.h"

#define GARUDA_STR_(x) #x
#define GARUDA_STR(x) GARUDA_STR_(x)

/* X(field, JSON key of `scanners` (control_names.h), Prometheus family, help) */
#define GARUDA_SCANNER_COUNTERS(X)                                                                   \
	X(completions, CTL_KEY_COMPLETIONS, "garuda_scanner_completions_total", "Readiness delivered, by scanner.") \
	X(passes, CTL_KEY_PASSES, "garuda_scanner_passes_total", "Scan passes over the armed set, by scanner.")   \
	X(parks, CTL_KEY_PARKS, "garuda_scanner_parks_total", "Times a scanner parked with nothing armed.")     \
	X(sleeps, CTL_KEY_SLEEPS, "garuda_scanner_sleeps_total", "Timed sleeps with something armed, by scanner.") \
	X(spins, CTL_KEY_SPINS, "garuda_scanner_spins_total", "Spin steps (a pass, then a pause), by scanner.")  \
	X(wordwait_steps, CTL_KEY_WORDWAIT_STEPS, "garuda_scanner_wordwait_steps_total",                        \
	  "Spin steps that idled in a hardware word wait (umwait, mwaitx, wfe), by scanner.")            \
	X(exact, CTL_KEY_EXACT, "garuda_scanner_exact_total", "Completions seen while spinning (exact residuals).") \
	X(censored, CTL_KEY_CENSORED, "garuda_scanner_censored_total", "Completions found after a sleep (censored).") \
	X(late_wakes, CTL_KEY_LATE_WAKES, "garuda_scanner_late_wakes_total",                                    \
	  "Completions found by a wake over " GARUDA_STR(GARUDA_POLICY_LATE_WAKE_US)                      \
	  " us past their predicted deadline (not recorded).")                                             \
	X(arm_wakes, CTL_KEY_ARM_WAKES, "garuda_scanner_arm_wakes_total", "ARMs that woke a sleeping scanner.")  \
	X(arm_nowakes, CTL_KEY_ARM_NOWAKES, "garuda_scanner_arm_nowakes_total",                                 \
	  "ARMs posted to a sleeping scanner that did not wake it (deadline not earlier).")

/* SC_completions, SC_passes, ...: a counter's index */
enum garuda_scanner_counter {
#define GARUDA_SC_ENUM_(field, key, metric, help) SC_##field,
	GARUDA_SCANNER_COUNTERS(GARUDA_SC_ENUM_)
#undef GARUDA_SC_ENUM_
	SC_COUNT_
};

/* A session's counters: X(field, JSON key of `clients` (control_names.h), help). They
 * live on its sink (daemon/sink.h: count[SN_field]), bumped by the scanner that fires
 * its descriptors; session_describe() reads them; the `clients` entry prints them. */
#define GARUDA_SESSION_COUNTERS(X)                                                                 \
	X(completions, CTL_KEY_COMPLETIONS, "Readiness delivered (armed targets reached).")          \
	X(undelivered, CTL_KEY_UNDELIVERED,                                                          \
	  "Of the completions, eventfd readiness not written: the eventfd would have blocked.")      \
	X(write_retries, CTL_KEY_WRITE_RETRIES,                                                      \
	  "Eventfd writes made again after an interrupted write on a non-blocking eventfd.")         \
	X(word_loads, CTL_KEY_WORD_LOADS,                                                            \
	  "Loads of its words by the scanners (each a look at one due word: the watcher's work).")   \
	X(scan_ns, CTL_KEY_SCAN_NS,                                                                  \
	  "Scanner time attributed to it: each step's time shared by the words it looked at.")

/* SN_completions, SN_undelivered, ...: a session counter's index */
enum garuda_session_counter {
#define GARUDA_SN_ENUM_(field, key, help) SN_##field,
	GARUDA_SESSION_COUNTERS(GARUDA_SN_ENUM_)
#undef GARUDA_SN_ENUM_
	SN_COUNT_
};
