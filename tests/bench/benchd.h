/* benchd.h — a real garudad for one benchmark, through tests/common's launcher
 * (garudad.h): the binary the bench was given (--daemon), a fresh private directory,
 * the benchmark's JSON configuration over a quiet base config (log_level "warning"),
 * ready when it says READY=1; its control socket (status, scanners) kept open for
 * sampling; stopped with SIGTERM and checked for a clean exit.
 *
 * Promises: the daemon dies with the benchmark (PR_SET_PDEATHSIG); its log is printed
 * when something fails; bd_stop() removes the directory. The daemon inherits a raised
 * RLIMIT_NOFILE. Failures are recorded with bench_fail (the bench has no Criterion).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "garudad.h"

struct bench;

/* Start garudad with config_json (a JSON object). Returns 0, or -1 after recording a
 * failure. d need not be initialised. */
int bd_start(struct bench *b, struct gd_daemon *d, const char *config_json);

/* SIGTERM, wait, require exit 0, remove the directory. Returns 0 or -1 (recorded). */
int bd_stop(struct bench *b, struct gd_daemon *d);

/* Counters from the control socket, summed over scanners. */
struct bd_counters {
	double armed, completions, arms, passes, parks, scanner_cpu_s, clients, segments;
};
int bd_counters(struct gd_daemon *d, struct bd_counters *out);

/* Wait until the control socket reports status field `field` >= value (or, with
 * at_most, <= value). Returns 0 or -ETIMEDOUT. */
static inline int bd_wait_status(struct gd_daemon *d, const char *field, double value, int at_most,
				 unsigned timeout_ms)
{
	return gd_wait_status_cmp(d, field, value, at_most != 0, timeout_ms);
}
