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

/* client-triggered messages (log_client): the buckets, under bucket_lock */
static pthread_mutex_t bucket_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_limiter limiter;

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

/* Take a token from b (rate a second, at most burst held) at now: false, none left. */
static bool bucket_take(struct log_bucket *b, uint64_t now, double rate, double burst)
{
	if (!b->stamp)
		b->tokens = burst;
	else if (now > b->stamp)
		b->tokens += (double)(now - b->stamp) * rate / 1e9;
	if (b->tokens > burst)
		b->tokens = burst;
	b->stamp = now;
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

/* uid's slot: its own, else the one whose bucket went untouched longest (a bucket
 * untouched for LOG_BURST / LOG_RATE seconds is full again: its uid loses nothing) */
static struct log_tenant *tenant_of(struct log_limiter *l, uid_t uid)
{
	struct log_tenant *old = &l->tenant[0];
	for (unsigned i = 0; i < LOG_TENANTS; i++) {
		struct log_tenant *t = &l->tenant[i];
		if (t->b.stamp && t->uid == uid)
			return t;
		if (!t->b.stamp || (old->b.stamp && t->b.stamp < old->b.stamp))
			old = t;
	}
	if (old->b.stamp && old->suppressed)
		l->suppressed += old->suppressed; /* reported with the next line allowed */
	*old = (struct log_tenant){ .uid = uid };
	return old;
}

bool log_limiter_allow(struct log_limiter *l, uid_t uid, uint64_t now, struct log_report *report)
{
	struct log_tenant *t = tenant_of(l, uid);
	*report = (struct log_report){ 0 };
	if (!bucket_take(&t->b, now, LOG_RATE, LOG_BURST)) {
		t->suppressed++;
		return false;
	}
	if (!bucket_take(&l->all, now, LOG_ALL_RATE, LOG_ALL_BURST)) {
		t->b.tokens += 1.0; /* not its doing: its token back */
		l->suppressed++;
		return false;
	}
	report->uid_suppressed = t->suppressed;
	report->others_suppressed = l->suppressed;
	t->suppressed = 0;
	l->suppressed = 0;
	return true;
}

void log_client(uid_t uid, int level, const char *fmt, ...)
{
	struct log_report rep;
	pthread_mutex_lock(&bucket_lock);
	bool allow = log_limiter_allow(&limiter, uid, garuda_now_ns(), &rep);
	pthread_mutex_unlock(&bucket_lock);

	if (!allow)
		return;
	if (rep.uid_suppressed && uid != LOG_UID_NONE)
		log_msg(LOG_WARNING, "uid %u: %lu client-triggered messages suppressed", (unsigned)uid,
			rep.uid_suppressed);
	else if (rep.uid_suppressed)
		log_msg(LOG_WARNING, "%lu client-triggered messages suppressed", rep.uid_suppressed);
	if (rep.others_suppressed)
		log_msg(LOG_WARNING, "%lu more client-triggered messages suppressed (garudad's limit for all "
			"clients, or uids no longer tracked)", rep.others_suppressed);
	va_list ap;
	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}
