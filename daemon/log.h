/* log.h — garudad's logging: the journal when stderr is connected to journald
 * (JOURNAL_STREAM matches), else stderr with a level prefix. Messages a client can
 * trigger go through log_client(), which is rate-limited per uid so a hostile peer
 * can neither flood the journal nor hide the lines about another; suppressed messages
 * are counted and reported. Every line has its
 * control characters (C0 and DEL: a client's comm, a cgroup path) written as \xHH, and
 * is cut at 1023 bytes before that. Thread-safe. */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <syslog.h>

void log_init(void);
void log_set_level(int level);
int log_get_level(void);

/* "err", "warning", "notice", "info", "debug" -> LOG_*; -1 if unknown */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line a client can trigger, about the client of this uid (LOG_UID_NONE: not known,
 * or not one client's doing): rate-limited per uid, LOG_BURST lines at once and
 * LOG_RATE a second, so that a client that floods the journal with lines about itself
 * never hides the lines about another uid's; and LOG_ALL_BURST / LOG_ALL_RATE for all
 * uids together (many uids). The lines dropped are counted and said with the next line
 * allowed (per uid). The last LOG_TENANTS uids to log are tracked (one whose bucket
 * went untouched longest, so full again, makes room). */
void log_client(uid_t uid, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define LOG_UID_NONE ((uid_t)-1)

#define LOG_RATE 10
#define LOG_BURST 20
#define LOG_ALL_RATE 100
#define LOG_ALL_BURST 200
#define LOG_TENANTS 64

/* The limiter as pure code (log_client's, under a lock; tests run it on a simulated
 * clock): a token bucket per uid and one for all. */
struct log_bucket {
	double tokens;
	uint64_t stamp; /* ns; 0: never used (full) */
};
struct log_tenant {
	uid_t uid;
	struct log_bucket b;
	unsigned long suppressed; /* its lines dropped since its last one allowed */
};
struct log_limiter {
	struct log_tenant tenant[LOG_TENANTS];
	struct log_bucket all;
	unsigned long suppressed; /* dropped by the limit for all, or of uids that lost
				   * their slot */
};
struct log_report {
	unsigned long uid_suppressed, others_suppressed; /* to say with the line allowed */
};
/* May a line about uid go out at now (ns)? true: yes, and report says what was dropped
 * since the last one that did. */
bool log_limiter_allow(struct log_limiter *l, uid_t uid, uint64_t now, struct log_report *report);

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
