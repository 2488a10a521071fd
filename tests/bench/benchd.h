/* benchd.h — a real garudad for one benchmark: started from the build tree on sockets
 * in a fresh mkdtemp directory with a given JSON configuration, ready when it says
 * READY=1 on our NOTIFY_SOCKET; its control socket (status, scanners) and its /proc
 * numbers; stopped with SIGTERM and checked for a clean exit.
 *
 * Promises: the daemon dies with the benchmark (PR_SET_PDEATHSIG); its stderr goes to
 * a log file in the directory and is printed when something fails; bd_stop() removes
 * the directory. The daemon inherits a raised RLIMIT_NOFILE.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdint.h>
#include <sys/types.h>

struct bench;

struct bd {
	pid_t pid;
	int ctl_fd; /* connected control socket, or -1 */
	char dir[64];
	char sock[108];
	char ctl[108];
	char config[128];
	char log[128];
	char notify[108];
	char *config_text;
};

/* Start garudad with config_json (a JSON object; socket paths, socket_group and
 * log_level are added). Returns 0, or -1 after recording a failure. */
int bd_start(struct bench *b, struct bd *d, const char *config_json);

/* SIGTERM, wait, require exit 0, remove the directory. Returns 0 or -1 (recorded). */
int bd_stop(struct bench *b, struct bd *d);

/* {"request": name} on the control socket; the parsed reply (caller deletes) or NULL. */
cJSON *bd_control(struct bd *d, const char *request);

/* Counters from the control socket, summed over scanners. */
struct bd_counters {
	double armed, completions, arms, passes, parks, scanner_cpu_s, clients, segments;
};
int bd_counters(struct bd *d, struct bd_counters *out);

/* Wait until the control socket reports status field `field` >= value (or, with
 * at_most, <= value). Returns 0 or -ETIMEDOUT. */
int bd_wait_status(struct bd *d, const char *field, double value, int at_most, unsigned timeout_ms);

/* Print the daemon's log (for a failure). */
void bd_dump_log(struct bd *d);
