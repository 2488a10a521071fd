/* service.c — see service.h. */
#include "service.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "errcode.h"
#include "log.h"
#include "segment_layout.h"
#include "watch.h"

static uint64_t completions(struct daemon *d)
{
	uint64_t c = 0;
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		c += st.counters[SC_completions];
	}
	return c;
}

/* A notification that must never block the loop (sd_notify's send blocks when the
 * notify socket's queue is full): our own non-blocking datagram socket; a message
 * that does not fit is dropped, the next STATUS= supersedes it anyway. */
void service_notify(struct daemon *d, const char *text)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return;
	if (d->notify_fd < 0)
		d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (d->notify_fd < 0)
		return;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = strlen(path);
	memcpy(a.sun_path, path, n);
	if (path[0] == '@')
		a.sun_path[0] = '\0'; /* abstract namespace */
	socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
	if (sendto(d->notify_fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, alen) < 0)
		log_debug("notify (%s) not sent: %s", text, strerror(errno));
}

void service_update_status(struct daemon *d)
{
	if (!d->notify || d->stopping)
		return;
	uint64_t armed = 0; /* O(scanners): this runs on every connect and disconnect */
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		armed += st.armed;
	}
	char text[160];
	snprintf(text, sizeof(text), "STATUS=clients=%u armed=%llu completions=%llu", d->nsessions,
		 (unsigned long long)armed, (unsigned long long)completions(d));
	service_notify(d, text);
}

void service_apply_tuning(struct daemon *d)
{
	struct garuda_plan plan;
	struct garuda_watch_tuning t;
	config_plan_in_force(&d->cfg, &plan);
	garuda_watch_tuning_of(&plan, &t);
	atomic_store(&d->tuning.park_ns, t.pol.park_ns);
	atomic_store(&d->tuning.backstop_ns, t.pol.backstop_ns);
	atomic_store(&d->tuning.max_sleep_ns, t.max_sleep_ns);
	atomic_store(&d->tuning.margin_ns, t.margin_ns);
	atomic_store(&d->tuning.backoff_div, t.backoff_div);
	atomic_store(&d->tuning.predict, t.predict);
	atomic_store(&d->tuning.forever, t.pol.forever);
	atomic_store(&d->tuning.wordwait, d->cfg.wordwait);
	log_set_level(d->cfg.log_level);
	config_log_legacy(&d->cfg);
}

/* The reload status the metrics export (daemon.h). */
static void reload_done(struct daemon *d, bool ok)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	d->reload_ok = ok;
	d->reload_failures_total += !ok;
	d->reload_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int daemon_reload(struct daemon *d, char **why)
{
	struct config next;
	char *err = NULL;
	if (why)
		*why = NULL;
	if (!config_reloadable(&d->cfg)) {
		const char *def = config_default_path(&d->cfg);
		log_notice("reload: no config file to reload%s%s%s", def ? " (none at " : "", def ? def : "",
			   def ? ")" : "");
		return 0;
	}
	service_notify(d, "RELOADING=1");
	d->reloads_total++;
	/* afresh: the defaults, the file, the flags; a key gone from the file is its
	 * default again (as after a restart) */
	if (config_reload(&next, &d->cfg, &err) < 0) {
		log_err("reload failed, keeping the running configuration: %s", err ? err : "?");
		reload_done(d, false);
		if (why)
			*why = err;
		else
			free(err);
		service_notify(d, "READY=1");
		return -GARUDA_E_BAD_ARGUMENT;
	}
	unsigned changed = config_log_changes(&d->cfg, &next);
	config_keep_restart_only(&next, &d->cfg);
	if (!garuda_plan_equal(&next.plan, &d->cfg.plan))
		d->plan_gen++; /* points re-initialise under the new plan */
	config_free(&d->cfg);
	d->cfg = next;
	service_apply_tuning(d);
	log_info("configuration reloaded from %s: %u key(s) changed",
		 d->cfg.config_path ? d->cfg.config_path : "the defaults and flags (the default file is gone)",
		 changed);
	reload_done(d, true);
	service_notify(d, "READY=1");
	return 0;
}

void service_warn(struct daemon *d, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_warning("%s", text);
	if (d->nwarnings < DAEMON_MAX_WARNINGS)
		snprintf(d->warnings[d->nwarnings++], sizeof(d->warnings[0]), "%s", text);
}

/* CAP_IPC_LOCK in the effective set (/proc/self/status CapEff, bit 14) */
static bool have_ipc_lock(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	unsigned long long eff = 0;
	bool found = false;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = true;
			break;
		}
	if (f)
		fclose(f);
	return found && (eff & (1ull << 14));
}

void service_check_nofile(struct daemon *d)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_cur < rl.rlim_max) { /* (select() is not used: no reason to keep 1024) */
		rlim_t cur = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			rl.rlim_cur = cur;
	}
	if (rl.rlim_cur == RLIM_INFINITY)
		return;
	const struct quota_limits *q = &d->cfg.quota_uid;
	/* a connection: its socket and its process's pidfd (session.h) */
	uint64_t one = (uint64_t)q->connections * 2 + q->bindings + (uint64_t)q->segments * 2;
	uint64_t need = one * SERVICE_NOFILE_UIDS + 64; /* and garudad's own */
	if ((uint64_t)rl.rlim_cur < need)
		service_warn(d, "RLIMIT_NOFILE is %llu, below the %llu fds %d uids at full quota hold "
			     "(%llu each); past it requests that pass an fd get EMFILE and connections "
			     "are refused; raise LimitNOFILE or lower quota.uid.bindings",
			     (unsigned long long)rl.rlim_cur, (unsigned long long)need,
			     SERVICE_NOFILE_UIDS, (unsigned long long)one);
}

void service_check_memlock(struct daemon *d)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY || have_ipc_lock())
		return;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t need = (uint64_t)d->cfg.quota_uid.segments * page +
			(uint64_t)d->cfg.quota_uid.lines * GARUDA_LINE_BYTES;
	if ((uint64_t)rl.rlim_cur < need)
		service_warn(d, "RLIMIT_MEMLOCK is %llu bytes, below the %llu bytes one uid's quotas "
			     "(quota.uid.segments %u, quota.uid.lines %u) may lock: segment opens will fail "
			     "with NO_MEMLOCK; raise LimitMEMLOCK (ulimit -l), grant CAP_IPC_LOCK, or lower "
			     "the quotas", (unsigned long long)rl.rlim_cur, (unsigned long long)need,
			     d->cfg.quota_uid.segments, d->cfg.quota_uid.lines);
}
