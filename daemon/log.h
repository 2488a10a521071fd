/* log.h — garudad's logging: the journal when stderr is connected to journald
 * (JOURNAL_STREAM matches), else stderr with a level prefix. Messages a client can
 * trigger go through log_client(), which is rate-limited so a hostile peer cannot
 * flood the journal; suppressed messages are counted and reported. Every line has its
 * control characters (C0 and DEL: a client's comm, a cgroup path) written as \xHH, and
 * is cut at 1023 bytes before that. Thread-safe. */
#pragma once

#include <stdarg.h>
#include <syslog.h>

void log_init(void);
void log_set_level(int level);
int log_get_level(void);

/* "err", "warning", "notice", "info", "debug" -> LOG_*; -1 if unknown */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Rate-limited (token bucket shared by all clients). */
void log_client(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
