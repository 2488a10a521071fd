/* service.h — the daemon as a systemd service: non-blocking sd_notify (STATUS=,
 * RELOADING=1, READY=1, WATCHDOG=1), the STATUS= line, and configuration reload
 * (SIGHUP, the control plane's "reload"). Loop thread only.
 *
 * Promises: nothing here blocks the loop (a notification that does not fit is
 * dropped; the next STATUS= supersedes it); a failed reload keeps the running
 * configuration. */
#pragma once

#include "daemon.h"

/* Send text to $NOTIFY_SOCKET without blocking (nothing when it is not set). */
void service_notify(struct daemon *d, const char *text);
/* STATUS=clients=N armed=N completions=N. */
void service_update_status(struct daemon *d);
/* Push the reloadable tuning (spin, sleep, log level) from d->cfg to where it acts. */
void service_apply_tuning(struct daemon *d);

/* Log a warning and keep it for the control plane's status ("warnings"); the first
 * DAEMON_MAX_WARNINGS are kept. Loop thread. */
void service_warn(struct daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Warn when RLIMIT_MEMLOCK (without CAP_IPC_LOCK) is below what one uid's quotas let
 * it lock: quota.uid.segments pages plus quota.uid.lines lines. */
void service_check_memlock(struct daemon *d);
/* Raise RLIMIT_NOFILE's soft limit to its hard one, and warn when it is below what
 * SERVICE_NOFILE_UIDS uids at their full quotas hold (a session's socket and its
 * event-loop watches, a binding's eventfd, a segment's memfd and a queued reply's). */
#define SERVICE_NOFILE_UIDS 4
void service_check_nofile(struct daemon *d);
/* Re-read the config file; keeps the running config on error (-GARUDA_E_BAD_ARGUMENT,
 * *why = a malloc'ed message naming the key and the reason, when why is not NULL). */
int daemon_reload(struct daemon *d, char **why);
