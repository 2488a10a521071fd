/* main.c — garudad: configuration, start-up order, the loop, systemd glue
 * (READY=1 once sockets and scanners are up, STATUS=, WATCHDOG=1), signals
 * (SIGTERM/SIGINT stop, SIGHUP reloads), and an orderly shutdown. The closer thread
 * (closer.h: closes the fds clients sent that nobody took) starts before the first
 * session can exist and stops after the last one is gone. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "clock.h"
#include "closer.h"
#include "control.h"
#include "daemon.h"
#include "log.h"
#include "server.h"
#include "service.h"
#include "session.h"
#include "session_conn.h"
#include "wordwait.h"

static void on_signal(struct loop_watch *w, void *data, uint32_t events)
{
	struct daemon *d = data;
	struct signalfd_siginfo si;
	(void)w;
	(void)events;
	while (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			daemon_reload(d, NULL);
		} else {
			log_info("signal %d: stopping", (int)si.ssi_signo);
			d->stopping = true;
		}
	}
}

static void on_notice(struct loop_watch *w, void *data, uint32_t events)
{
	(void)w;
	(void)events;
	session_handle_notices(data);
}

static void on_watchdog(struct loop_watch *w, void *data, uint32_t events)
{
	struct daemon *d = data;
	uint64_t ticks;
	(void)w;
	(void)events;
	if (read(d->watchdog_fd, &ticks, sizeof(ticks)) > 0) {
		service_notify(d, "WATCHDOG=1");
		service_update_status(d);
	}
}

static int setup_watchdog(struct daemon *d)
{
	uint64_t usec;
	d->watchdog_fd = -1;
	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	d->watchdog_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->watchdog_fd < 0)
		return -errno;
	uint64_t half = usec / 2;
	struct itimerspec its = {
		.it_value = { .tv_sec = (time_t)(half / 1000000), .tv_nsec = (long)(half % 1000000) * 1000 },
	};
	its.it_interval = its.it_value;
	timerfd_settime(d->watchdog_fd, 0, &its, NULL);
	d->watchdog_w = loop_add(d->loop, d->watchdog_fd, POLLIN, on_watchdog, d);
	return d->watchdog_w ? 0 : -errno;
}

static void on_reattach(struct loop_watch *w, void *data, uint32_t events)
{
	(void)w;
	(void)events;
	session_reattach_tick(data);
}

static void on_hold(struct loop_watch *w, void *data, uint32_t events)
{
	(void)w;
	(void)events;
	session_hold_tick(data);
}

/* A one-shot timer of the loop (its owner arms it); *fd -1 and the warning when there
 * is none: garudad still runs, without what `without` says. */
static void setup_timer(struct daemon *d, int *fd, struct loop_watch **w, loop_fn fn,
			const char *without)
{
	*fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (*fd >= 0)
		*w = loop_add(d->loop, *fd, POLLIN, fn, d);
	if (*fd >= 0 && !*w) {
		close(*fd);
		*fd = -1;
	}
	if (*fd < 0)
		log_warning("no timer (%s): %s", strerror(errno), without);
}

static int start_scanners(struct daemon *d)
{
	/* the word wait is detected once, here, before a scanner may need it */
	const struct wordwait *w = wordwait_system();
	numa_discover(&d->topo);
	d->nscanners = d->cfg.scanners ? d->cfg.scanners : (unsigned)d->topo.nnodes;
	if (d->nscanners > NUMA_MAX_NODES)
		d->nscanners = NUMA_MAX_NODES;
	for (unsigned i = 0; i < d->nscanners; i++) {
		const struct numa_node *n = &d->topo.node[i % (unsigned)d->topo.nnodes];
		d->scanner_node[i] = n->id;
		int r = scanner_start(&d->scanner[i], i, n->id, &n->cpus, &d->tuning, &d->notices);
		if (r < 0) {
			log_err("cannot start scanner %u: %s", i, strerror(-r));
			d->nscanners = i;
			return r;
		}
	}
	log_info("%u scanner(s) over %d NUMA node(s)", d->nscanners, d->topo.nnodes);
	log_info("word wait: %s (%s)%s", wordwait_variant_name(w->variant), w->detail,
		 d->cfg.wordwait ? "" : "; turned off by config wordwait: off");
	return 0;
}

static void shutdown_daemon(struct daemon *d)
{
	if (d->notify)
		sd_notify(0, "STOPPING=1");
	control_close_all(d);
	session_close_all(d);
	session_holds_free(d);
	for (unsigned i = 0; i < d->nscanners; i++)
		scanner_stop(d->scanner[i]);
	d->nscanners = 0;
	session_handle_notices(d); /* last references the scanners handed back */
	session_reap(d);
	loop_remove(d->loop, d->client_w);
	loop_remove(d->loop, d->control_w);
	loop_remove(d->loop, d->signal_w);
	loop_remove(d->loop, d->notice_w);
	loop_remove(d->loop, d->watchdog_w);
	loop_remove(d->loop, d->reattach_w);
	loop_remove(d->loop, d->hold_w);
	loop_run_once(d->loop, 0); /* collect the removals' completions */
	loop_free(d->loop);
	server_close_sockets(d);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->watchdog_fd >= 0)
		close(d->watchdog_fd);
	if (d->reattach_fd >= 0)
		close(d->reattach_fd);
	if (d->hold_fd >= 0)
		close(d->hold_fd);
	if (d->notify_fd >= 0)
		close(d->notify_fd);
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	/* after the last session: what they sent is queued by now. A close still blocked
	 * after CLOSER_STOP_WAIT_MS is left to the process's exit (closer.h) */
	closer_stop();
	notice_queue_destroy(&d->notices);
	quota_table_free(&d->quotas);
	config_free(&d->cfg);
}

int main(int argc, char **argv)
{
	struct daemon d = { .client_fd = -1, .control_fd = -1, .signal_fd = -1, .watchdog_fd = -1,
			  .reattach_fd = -1,
			  .hold_fd = -1,
			    .notify_fd = -1, .spare_fd = -1, .lock_fd = -1 };
	int r;

	/* A scanner's arrays (its waits and payloads, its watcher's words, hash and
	 * levels) grow by doubling. As mappings of their own they grow by mremap and go
	 * back to the kernel when outgrown; in the heap every outgrown copy would stay
	 * resident (tenants bench: RSS per armed wait, 180 -> 165 B at 65,536 arms).
	 * glibc raises its threshold by itself after such a free: fixing it keeps them
	 * mapped. */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	log_init();
	config_defaults(&d.cfg);
	r = config_from_args(&d.cfg, argc, argv);
	if (r) {
		config_free(&d.cfg);
		return r > 0 ? 0 : 2;
	}
	if (d.cfg.check_only) {
		printf("garudad: configuration OK: %s; client socket %s; control socket %s\n",
		       d.cfg.config_path ? d.cfg.config_path : "no config file (defaults and flags)",
		       d.cfg.socket_path, d.cfg.control_socket_path);
		config_free(&d.cfg);
		return 0;
	}
	d.started_ns = garuda_now_ns();
	d.next_session_id = 1;
	d.notify = getenv("NOTIFY_SOCKET") != NULL;
	d.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	service_apply_tuning(&d);

	/* signals: SIGTERM/SIGINT/SIGHUP through a signalfd; SIGPIPE never */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL); /* before any thread starts */
	signal(SIGPIPE, SIG_IGN);
	d.signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	r = notice_queue_init(&d.notices);
	d.loop = r == 0 ? loop_new(d.cfg.event_loop) : NULL;
	if (d.signal_fd < 0 || !d.loop) {
		log_err("cannot set up the event loop: %s", strerror(errno));
		return 1;
	}
	log_info("event loop: %s", event_loop_name(loop_kind(d.loop)));
	/* before any session: the loop thread never closes an fd a client sent */
	r = closer_start();
	if (r < 0) {
		log_err("cannot start the closer thread: %s", strerror(-r));
		shutdown_daemon(&d);
		return 1;
	}
	if (start_scanners(&d) < 0 || server_open_sockets(&d) < 0) {
		shutdown_daemon(&d);
		return 1;
	}
	service_check_memlock(&d);
	service_check_nofile(&d);
	d.client_w = loop_add(d.loop, d.client_fd, POLLIN, server_on_client_accept, &d);
	/* no control socket only when activation passed none and none could be made */
	d.control_w = d.control_fd >= 0 ? loop_add(d.loop, d.control_fd, POLLIN, control_on_accept, &d)
					 : NULL;
	d.signal_w = loop_add(d.loop, d.signal_fd, POLLIN, on_signal, &d);
	d.notice_w = loop_add(d.loop, d.notices.efd, POLLIN, on_notice, &d);
	if (!d.client_w || (d.control_fd >= 0 && !d.control_w) || !d.signal_w || !d.notice_w ||
	    setup_watchdog(&d) < 0) {
		log_err("cannot watch the daemon's fds: %s", strerror(errno));
		shutdown_daemon(&d);
		return 1;
	}
	setup_timer(&d, &d.reattach_fd, &d.reattach_w, on_reattach,
		    "re-attaching sessions are logged when they close");
	setup_timer(&d, &d.hold_fd, &d.hold_w, on_hold,
		    "a session's unread SEGMENT replies are not held against its quota");
	if (d.notify)
		sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=clients=0 armed=0 completions=0", (int)getpid());
	server_log_listening(&d);

	while (!d.stopping) {
		r = loop_run_once(d.loop, -1);
		session_reap(&d);
		if (d.status_dirty) {
			d.status_dirty = false;
			service_update_status(&d);
		}
		if (r < 0) {
			log_err("event loop failed: %s", strerror(-r));
			break;
		}
	}
	shutdown_daemon(&d);
	return r < 0 ? 1 : 0;
}
