/* log.c — see log.h. */
#include "log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>

#include "clock.h"

static atomic_int log_level = LOG_INFO;
static bool to_journal;

/* client-triggered messages: at most LOG_BURST at once, refilled LOG_RATE per second */
#define LOG_RATE 10
#define LOG_BURST 20
static pthread_mutex_t bucket_lock = PTHREAD_MUTEX_INITIALIZER;
static double bucket_tokens = LOG_BURST;
static uint64_t bucket_stamp;
static unsigned long suppressed;

static const char *const level_names[] = {
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_init(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	struct stat st;
	unsigned long long dev, ino;
	if (js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(2, &st) == 0)
		to_journal = (unsigned long long)st.st_dev == dev &&
			     (unsigned long long)st.st_ino == ino;
}

void log_set_level(int level)
{
	atomic_store(&log_level, level);
}

int log_get_level(void)
{
	return atomic_load(&log_level);
}

int log_level_from_string(const char *s)
{
	for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
		if (level_names[i] && strcmp(level_names[i], s) == 0)
			return i;
	return -1;
}

const char *log_level_to_string(int level)
{
	if (level < 0 || level >= (int)(sizeof(level_names) / sizeof(level_names[0])) ||
	    !level_names[level])
		return "unknown";
	return level_names[level];
}

/* text with each control character (C0, DEL) as \xHH: a client's comm or cgroup path
 * in a line must not move the terminal's cursor, colour it or end the line */
static void escape_controls(const char *in, char *out, size_t cap)
{
	size_t o = 0;
	for (; *in && o + 5 <= cap; in++) {
		unsigned char c = (unsigned char)*in;
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(out + o, cap - o, "\\x%02X", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

static void vlog(int level, const char *fmt, va_list ap)
{
	if (level > atomic_load(&log_level))
		return;
	char buf[1024], line[4 * sizeof(buf) + 1];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	escape_controls(buf, line, sizeof(line));
	if (to_journal)
		sd_journal_print(level, "%s", line);
	else
		fprintf(stderr, "garudad[%s]: %s\n", log_level_to_string(level), line);
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void log_client(int level, const char *fmt, ...)
{
	unsigned long report = 0;
	bool allow;

	pthread_mutex_lock(&bucket_lock);
	uint64_t now = garuda_now_ns();
	if (bucket_stamp)
		bucket_tokens += (double)(now - bucket_stamp) * LOG_RATE / 1e9;
	if (bucket_tokens > LOG_BURST)
		bucket_tokens = LOG_BURST;
	bucket_stamp = now;
	allow = bucket_tokens >= 1.0;
	if (allow) {
		bucket_tokens -= 1.0;
		report = suppressed;
		suppressed = 0;
	} else {
		suppressed++;
	}
	pthread_mutex_unlock(&bucket_lock);

	if (!allow)
		return;
	if (report)
		log_msg(LOG_WARNING, "%lu client-triggered messages suppressed", report);
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}
