/* main.c — garudad: configuration, start-up order, the loop, systemd glue
 * (READY=1 once sockets and scanners are up, STATUS=, WATCHDOG=1), signals
 * (SIGTERM/SIGINT stop, SIGHUP reloads), and an orderly shutdown. */
#include <errno.h>
#include <fcntl.h>
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
#include "daemon.h"
#include "log.h"
#include "session.h"

static uint64_t completions(struct daemon *d)
{
	uint64_t c = 0;
	for (unsigned i = 0; i < d->nscanners; i++) {
		struct scanner_stats st;
		scanner_get_stats(d->scanner[i], &st);
		c += st.completions;
	}
	return c;
}

/* A notification that must never block the loop (sd_notify's send blocks when the
 * notify socket's queue is full): our own non-blocking datagram socket; a message
 * that does not fit is dropped, the next STATUS= supersedes it anyway. */
static void notify_nowait(struct daemon *d, const char *text)
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

void daemon_update_status(struct daemon *d)
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
	notify_nowait(d, text);
}

static void apply_tuning(struct daemon *d)
{
	atomic_store(&d->tuning.spin_us, d->cfg.spin_us);
	atomic_store(&d->tuning.max_sleep_us, d->cfg.max_sleep_us);
	log_set_level(d->cfg.log_level);
}

int daemon_reload(struct daemon *d, char **why)
{
	struct config next;
	char *err = NULL;
	if (why)
		*why = NULL;
	if (!d->cfg.config_path) {
		log_notice("reload: no config file to reload");
		return 0;
	}
	notify_nowait(d, "RELOADING=1");
	config_copy(&next, &d->cfg);
	if (config_load_file(&next, d->cfg.config_path, &err)) {
		log_err("reload failed, keeping the running configuration: %s", err ? err : "?");
		if (why)
			*why = err;
		else
			free(err);
		config_free(&next);
		notify_nowait(d, "READY=1");
		return -GARUDA_E_BAD_ARGUMENT;
	}
	if (strcmp(next.socket_path, d->cfg.socket_path) || next.scanners != d->cfg.scanners ||
	    strcmp(next.control_socket_path, d->cfg.control_socket_path) || next.event_loop != d->cfg.event_loop)
		log_notice("reload: socket paths, scanners and event loop change only on restart");
	/* keep what only a restart can change */
	free(next.socket_path);
	free(next.control_socket_path);
	next.socket_path = strdup(d->cfg.socket_path);
	next.control_socket_path = strdup(d->cfg.control_socket_path);
	next.scanners = d->cfg.scanners;
	next.event_loop = d->cfg.event_loop;
	config_free(&d->cfg);
	d->cfg = next;
	apply_tuning(d);
	log_info("configuration reloaded from %s", d->cfg.config_path);
	notify_nowait(d, "READY=1");
	return 0;
}

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
		notify_nowait(d, "WATCHDOG=1");
		daemon_update_status(d);
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

static int start_scanners(struct daemon *d)
{
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
	return 0;
}

static void shutdown_daemon(struct daemon *d)
{
	if (d->notify)
		sd_notify(0, "STOPPING=1");
	control_close_all(d);
	session_close_all(d);
	for (unsigned i = 0; i < d->nscanners; i++)
		scanner_stop(d->scanner[i]);
	d->nscanners = 0;
	session_reap(d);
	loop_remove(d->loop, d->client_w);
	loop_remove(d->loop, d->control_w);
	loop_remove(d->loop, d->signal_w);
	loop_remove(d->loop, d->notice_w);
	loop_remove(d->loop, d->watchdog_w);
	loop_run_once(d->loop, 0); /* collect the removals' completions */
	loop_free(d->loop);
	server_close_sockets(d);
	if (d->signal_fd >= 0)
		close(d->signal_fd);
	if (d->watchdog_fd >= 0)
		close(d->watchdog_fd);
	if (d->notify_fd >= 0)
		close(d->notify_fd);
	if (d->spare_fd >= 0)
		close(d->spare_fd);
	notice_queue_destroy(&d->notices);
	quota_table_free(&d->quotas);
	config_free(&d->cfg);
}

int main(int argc, char **argv)
{
	struct daemon d = { .client_fd = -1, .control_fd = -1, .signal_fd = -1, .watchdog_fd = -1,
			    .notify_fd = -1, .spare_fd = -1, .lock_fd = -1 };
	int r;

	log_init();
	config_defaults(&d.cfg);
	r = config_from_args(&d.cfg, argc, argv);
	if (r) {
		config_free(&d.cfg);
		return r > 0 ? 0 : 2;
	}
	d.started_ns = garuda_now_ns();
	d.next_session_id = 1;
	d.notify = getenv("NOTIFY_SOCKET") != NULL;
	d.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	apply_tuning(&d);

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
	if (start_scanners(&d) < 0 || server_open_sockets(&d) < 0) {
		shutdown_daemon(&d);
		return 1;
	}
	d.client_w = loop_add(d.loop, d.client_fd, POLLIN, server_on_client_accept, &d);
	d.control_w = loop_add(d.loop, d.control_fd, POLLIN, control_on_accept, &d);
	d.signal_w = loop_add(d.loop, d.signal_fd, POLLIN, on_signal, &d);
	d.notice_w = loop_add(d.loop, d.notices.efd, POLLIN, on_notice, &d);
	if (!d.client_w || !d.control_w || !d.signal_w || !d.notice_w || setup_watchdog(&d) < 0) {
		log_err("cannot watch the daemon's fds: %s", strerror(errno));
		shutdown_daemon(&d);
		return 1;
	}
	if (d.notify)
		sd_notifyf(0, "READY=1\nMAINPID=%d\nSTATUS=clients=0 armed=0 completions=0", (int)getpid());
	log_info("listening on %s (control %s)", d.cfg.socket_path, d.cfg.control_socket_path);

	while (!d.stopping) {
		r = loop_run_once(d.loop, -1);
		session_reap(&d);
		if (r < 0) {
			log_err("event loop failed: %s", strerror(-r));
			break;
		}
	}
	shutdown_daemon(&d);
	return r < 0 ? 1 : 0;
}
