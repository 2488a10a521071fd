/* harness.c — garudad child process and raw protocol client for the daemon tests;
 * see harness.h. */
#include "harness.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fdcheck.h"
#include "fdio.h"

/* ------------------------------------------------------------------ time ---- */

uint64_t gd_deadline(int ms)
{
	return garuda_now_ns() + (uint64_t)ms * 1000000ull;
}

int gd_left_ms(uint64_t deadline)
{
	uint64_t now = garuda_now_ns();
	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > 1000000 ? 1000000 : (int)ms;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* poll one fd for POLLIN: 1 readable (or hung up), 0 timeout, -errno */
static int wait_in(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		int r = poll(&p, 1, timeout_ms < 0 ? -1 : gd_left_ms(dl));
		if (r >= 0)
			return r;
		if (errno != EINTR)
			return -errno;
	}
}

/* --------------------------------------------------------------- registry ---- */

struct gd_notifier;
static void notifier_stop(struct gd_notifier *n);

/* What gd_test_fini must clean up when a test fails half-way (copies: the test's
 * stack is gone by then). */
#define GD_MAX_DAEMONS 16
static struct {
	pid_t pid;
	struct gd_notifier *notifier;
	char dir[64];
} registry[GD_MAX_DAEMONS];

/* record (or update) what d holds */
static void registry_set(const struct gd_daemon *d)
{
	int slot = -1;
	for (int i = 0; i < GD_MAX_DAEMONS; i++) {
		if (registry[i].dir[0] && strcmp(registry[i].dir, d->dir) == 0) {
			slot = i;
			break;
		}
		if (slot < 0 && registry[i].dir[0] == '\0')
			slot = i;
	}
	cr_assert_geq(slot, 0, "too many daemons in one test");
	registry[slot].pid = d->pid > 0 ? d->pid : 0;
	registry[slot].notifier = d->notifier;
	snprintf(registry[slot].dir, sizeof(registry[slot].dir), "%s", d->dir);
}

static void registry_forget(const struct gd_daemon *d)
{
	for (int i = 0; i < GD_MAX_DAEMONS; i++) {
		if (registry[i].dir[0] && strcmp(registry[i].dir, d->dir) == 0) {
			registry[i].pid = 0;
			registry[i].notifier = NULL;
			registry[i].dir[0] = '\0';
		}
	}
}

/* the process was reaped: never signal that pid again; dir and notify fd stay listed */
static void registry_reaped(pid_t pid)
{
	for (int i = 0; i < GD_MAX_DAEMONS; i++)
		if (registry[i].pid == pid)
			registry[i].pid = 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_rf(const char *dir)
{
	if (dir[0] && !getenv("GARUDA_TEST_KEEP"))
		nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void gd_test_init(void)
{
	for (int i = 0; i < GD_MAX_DAEMONS; i++) {
		registry[i].pid = 0;
		registry[i].notifier = NULL;
		registry[i].dir[0] = '\0';
	}
	/* a daemon that dies with SIGPIPE must not take the test with it */
	signal(SIGPIPE, SIG_IGN);
	/* the io_uring run needs a kernel that allows io_uring (seccomp, sysctl
	 * kernel.io_uring_disabled): where it is refused, say so and skip */
	if (strcmp(gd_event_loop(), "io_uring") == 0) {
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		int fd = (int)syscall(__NR_io_uring_setup, 2, &p);
		if (fd < 0)
			cr_skip_test("io_uring refused by this kernel (%s): the epoll run covers the daemon",
				     strerror(errno));
		close(fd);
	}
	fdcheck_begin();
}

void gd_test_fini(void)
{
	for (int i = 0; i < GD_MAX_DAEMONS; i++) {
		if (registry[i].dir[0]) {
			/* the test did not get to gd_stop(): show what the daemon said */
			struct gd_daemon tmp = { 0 };
			snprintf(tmp.log, sizeof(tmp.log), "%s/garudad.log", registry[i].dir);
			gd_dump_log(&tmp);
		}
		if (registry[i].pid > 0) {
			kill(registry[i].pid, SIGKILL);
			waitpid(registry[i].pid, NULL, 0);
		}
		notifier_stop(registry[i].notifier);
		rm_rf(registry[i].dir);
		registry[i].pid = 0;
		registry[i].notifier = NULL;
		registry[i].dir[0] = '\0';
	}
	fdcheck_end();
}

/* -------------------------------------------------------------- notifier ---- */

/* sd_notify() sends blocking datagrams: a NOTIFY_SOCKET nobody reads stops the daemon
 * after a few STATUS= lines. A thread reads ours for the daemon's whole life. */
struct gd_notifier {
	int fd, stop;
	pthread_t thread;
	atomic_bool ready;
	atomic_uint count, watchdogs;
	pthread_mutex_t lock;
	char status[512];
};

static void *notifier_main(void *arg)
{
	struct gd_notifier *n = arg;
	char buf[4096];
	for (;;) {
		struct pollfd p[2] = { { .fd = n->fd, .events = POLLIN },
				       { .fd = n->stop, .events = POLLIN } };
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return NULL;
		if (p[1].revents)
			return NULL;
		ssize_t len;
		while ((len = recv(n->fd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) >= 0) {
			buf[len] = '\0';
			atomic_fetch_add(&n->count, 1);
			char *save = NULL;
			for (char *line = strtok_r(buf, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save)) {
				if (strcmp(line, "READY=1") == 0)
					atomic_store(&n->ready, true);
				else if (strcmp(line, "WATCHDOG=1") == 0)
					atomic_fetch_add(&n->watchdogs, 1);
				else if (strncmp(line, "STATUS=", 7) == 0) {
					pthread_mutex_lock(&n->lock);
					snprintf(n->status, sizeof(n->status), "%s", line + 7);
					pthread_mutex_unlock(&n->lock);
				}
			}
		}
	}
}

static struct gd_notifier *notifier_start(const char *path)
{
	struct gd_notifier *n = calloc(1, sizeof(*n));
	cr_assert_not_null(n);
	pthread_mutex_init(&n->lock, NULL);
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert_geq(n->fd, 0, "socket: %s", strerror(errno));
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	cr_assert_eq(bind(n->fd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %s: %s", path,
		     strerror(errno));
	n->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	cr_assert_geq(n->stop, 0);
	cr_assert_eq(pthread_create(&n->thread, NULL, notifier_main, n), 0);
	return n;
}

static void notifier_stop(struct gd_notifier *n)
{
	if (!n)
		return;
	uint64_t one = 1;
	if (write(n->stop, &one, sizeof(one)) != sizeof(one))
		abort();
	pthread_join(n->thread, NULL);
	close(n->fd);
	close(n->stop);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

unsigned gd_notify_count(struct gd_daemon *d, char *status, size_t cap)
{
	if (!d->notifier)
		return 0;
	if (status && cap) {
		pthread_mutex_lock(&d->notifier->lock);
		snprintf(status, cap, "%s", d->notifier->status);
		pthread_mutex_unlock(&d->notifier->lock);
	}
	return atomic_load(&d->notifier->count);
}

unsigned gd_notify_watchdogs(struct gd_daemon *d)
{
	return d->notifier ? atomic_load(&d->notifier->watchdogs) : 0;
}

void gd_forget_process(struct gd_daemon *d)
{
	cr_assert_leq(d->pid, 0, "the daemon is still running");
	notifier_stop(d->notifier);
	d->notifier = NULL;
	unlink(d->notify);
	d->pid = 0;
	registry_set(d);
}

/* ----------------------------------------------------------------- daemon ---- */

const char *gd_event_loop(void)
{
	const char *m = getenv("GARUDA_TEST_EVENT_LOOP");
	return m && *m ? m : "auto";
}

void gd_prepare(struct gd_daemon *d)
{
	if (d->dir[0])
		return;
	memset(d, 0, sizeof(*d));
	d->notifier = NULL;
	d->fd_baseline = -1;
	snprintf(d->dir, sizeof(d->dir), "/tmp/garuda-dt-XXXXXX");
	cr_assert_not_null(mkdtemp(d->dir), "mkdtemp: %s", strerror(errno));
	snprintf(d->sock, sizeof(d->sock), "%s/garuda.sock", d->dir);
	snprintf(d->ctl, sizeof(d->ctl), "%s/control.sock", d->dir);
	snprintf(d->config, sizeof(d->config), "%s/garudad.json", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/garudad.log", d->dir);
	snprintf(d->notify, sizeof(d->notify), "%s/notify.sock", d->dir);
	snprintf(d->sysfs, sizeof(d->sysfs), "%s/sysfs", d->dir);
	snprintf(d->extra, sizeof(d->extra), "%s/extra.sock", d->dir);
	registry_set(d);
}

/* Base config merged with the test's JSON object. */
static char *make_config(const char *extra)
{
	cJSON *base = cJSON_Parse("{\"socket_group\":\"\",\"control_group\":\"\","
				  "\"log_level\":\"info\"}");
	cr_assert_not_null(base);
	if (extra) {
		cJSON *x = cJSON_Parse(extra);
		cr_assert_not_null(x, "test config is not JSON: %s", extra);
		cJSON *it = x->child;
		while (it) {
			cJSON *next = it->next;
			cJSON_DetachItemViaPointer(x, it);
			cJSON_DeleteItemFromObjectCaseSensitive(base, it->string);
			cJSON_AddItemToObject(base, it->string, it);
			it = next;
		}
		cJSON_Delete(x);
	}
	char *s = cJSON_Print(base);
	cJSON_Delete(base);
	cr_assert_not_null(s);
	return s;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

#define MAX_ARGV 64

/* Does an AF_UNIX socket listen at path? (/proc/net/unix: flag __SO_ACCEPTCON) */
static bool unix_listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "re");
	char line[512];
	bool yes = false;
	if (!f)
		return false;
	while (!yes && fgets(line, sizeof(line), f)) {
		unsigned long flags;
		char p[256];
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %255s", &flags, p) == 2)
			yes = (flags & 0x10000ul) && strcmp(p, path) == 0;
	}
	fclose(f);
	return yes;
}

void gd_start(struct gd_daemon *d, const struct gd_opts *o)
{
	static const struct gd_opts none;
	if (!o)
		o = &none;
	const char *bin = getenv("GARUDAD");
	cr_assert(bin && *bin, "GARUDAD (path of the garudad binary) is not set");
	cr_assert_eq(access(bin, X_OK), 0, "GARUDAD=%s: %s", bin, strerror(errno));

	gd_prepare(d);
	d->activation = o->socket_activation;
	snprintf(d->event_loop, sizeof(d->event_loop), "%s",
		 o->event_loop ? o->event_loop : gd_event_loop());

	char *cfg = make_config(o->config);
	write_file(d->config, cfg);
	free(cfg);

	/* our NOTIFY_SOCKET */
	unlink(d->notify);
	d->notifier = notifier_start(d->notify);
	registry_set(d);
	d->ready_seen = false;

	/* argv */
	char arg_config[256], arg_sock[256], arg_ctl[256], arg_loop[64], env_notify[256];
	char listen_sock[256], listen_ctl[256], listen_extra[256], fdnames[128];
	snprintf(arg_config, sizeof(arg_config), "--config=%s", d->config);
	snprintf(arg_sock, sizeof(arg_sock), "--socket=%s", d->sock);
	snprintf(arg_ctl, sizeof(arg_ctl), "--control-socket=%s", d->ctl);
	snprintf(arg_loop, sizeof(arg_loop), "--event-loop=%s", d->event_loop);
	snprintf(env_notify, sizeof(env_notify), "NOTIFY_SOCKET=%s", d->notify);
	snprintf(listen_sock, sizeof(listen_sock), "--listen=%s", d->sock);
	snprintf(listen_ctl, sizeof(listen_ctl), "--listen=%s", d->ctl);
	snprintf(listen_extra, sizeof(listen_extra), "--listen=%s", d->extra);

	const char *argv[MAX_ARGV];
	int n = 0;
	/* environment variables the sanitizers read must reach the daemon too */
	static const char *const forward[] = { "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
					       "TSAN_OPTIONS", NULL };
	char fwd[4][512];
	if (o->socket_activation) {
		argv[n++] = "systemd-socket-activate";
		argv[n++] = "--seqpacket";
		if (o->activation_reverse && !o->no_control) {
			argv[n++] = listen_ctl;
			argv[n++] = listen_sock;
			snprintf(fdnames, sizeof(fdnames), "--fdname=control:client");
		} else {
			argv[n++] = listen_sock;
			if (!o->no_control)
				argv[n++] = listen_ctl;
			snprintf(fdnames, sizeof(fdnames), "--fdname=%s",
				 o->no_control ? "client" : "client:control");
		}
		if (o->extra_fdname) {
			argv[n++] = listen_extra;
			size_t l = strlen(fdnames);
			snprintf(fdnames + l, sizeof(fdnames) - l, ":%s", o->extra_fdname);
		}
		argv[n++] = fdnames;
		argv[n++] = "-E";
		argv[n++] = env_notify;
		for (const char *const *e = o->env; e && *e; e++) {
			argv[n++] = "-E";
			argv[n++] = *e;
		}
		for (int i = 0; forward[i]; i++) {
			const char *v = getenv(forward[i]);
			if (v) {
				snprintf(fwd[i], sizeof(fwd[i]), "%s=%s", forward[i], v);
				argv[n++] = "-E";
				argv[n++] = fwd[i];
			}
		}
		argv[n++] = bin;
		argv[n++] = arg_config;
		if (o->no_control)
			argv[n++] = arg_ctl;
	} else {
		argv[n++] = bin;
		argv[n++] = arg_config;
		argv[n++] = arg_sock;
		argv[n++] = arg_ctl;
	}
	argv[n++] = arg_loop;
	for (const char *const *x = o->args; x && *x; x++) {
		cr_assert_lt(n, MAX_ARGV - 1);
		argv[n++] = *x;
	}
	argv[n] = NULL;

	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int in = open("/dev/null", O_RDONLY);
		int out = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (in < 0 || out < 0)
			_exit(127);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		syscall(SYS_close_range, 3u, ~0u, 0u);
		signal(SIGPIPE, SIG_DFL);
		sigset_t all;
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_PID");
		unsetenv("LISTEN_FDNAMES");
		unsetenv("WATCHDOG_USEC");
		unsetenv("WATCHDOG_PID");
		unsetenv("JOURNAL_STREAM");
		setenv("NOTIFY_SOCKET", d->notify, 1);
		if (o->watchdog_usec) {
			char v[32];
			snprintf(v, sizeof(v), "%u", o->watchdog_usec);
			setenv("WATCHDOG_USEC", v, 1);
			snprintf(v, sizeof(v), "%d", (int)getpid());
			setenv("WATCHDOG_PID", v, 1);
		}
		for (const char *const *e = o->env; e && *e; e++)
			putenv((char *)*e);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	d->pid = pid;
	registry_set(d);

	if (o->socket_activation) {
		/* systemd-socket-activate execs the daemon at the first connection: wait
		 * for both sockets to listen (a socket file exists from bind() on, and a
		 * connect() before listen() is refused) */
		uint64_t dl = gd_deadline(GD_DEADLINE_MS);
		while (!unix_listening(d->sock) || (!o->no_control && !unix_listening(d->ctl))) {
			if (!gd_alive(d)) {
				gd_dump_log(d);
				cr_assert_fail("systemd-socket-activate exited before listening");
			}
			cr_assert_gt(gd_left_ms(dl), 0, "systemd-socket-activate never listened");
			sleep_ms(5);
		}
		return;
	}
	gd_daemon_ready(d);
}

static bool can_connect(const char *path)
{
	int fd = fdio_connect(path);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

void gd_daemon_ready(struct gd_daemon *d)
{
	/* READY=1 normally comes within milliseconds; only after 10 s without it fall
	 * back to polling the control socket (tests of READY=1 check d->ready_seen) */
	uint64_t dl = gd_deadline(GD_DEADLINE_MS), fallback = gd_deadline(10000);
	while (!(d->ready_seen = atomic_load(&d->notifier->ready))) {
		if (!gd_alive(d)) {
			gd_dump_log(d);
			cr_assert_fail("garudad exited during startup");
		}
		if (gd_left_ms(fallback) == 0 && can_connect(d->ctl)) {
			cr_log_warn("no READY=1 from garudad within 10 s; its control socket "
				    "accepts, going on");
			return;
		}
		if (gd_left_ms(dl) == 0) {
			gd_dump_log(d);
			cr_assert_fail("garudad not ready within %d ms", GD_DEADLINE_MS);
		}
		sleep_ms(2);
	}
}

bool gd_alive(struct gd_daemon *d)
{
	if (d->pid <= 0)
		return false;
	int st;
	pid_t r = waitpid(d->pid, &st, WNOHANG);
	if (r == 0)
		return true;
	if (r == d->pid) {
		cr_log_error("garudad (pid %d) exited: %s %d", d->pid,
			     WIFEXITED(st) ? "status" : "signal",
			     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		registry_reaped(d->pid);
		d->pid = -1;
	}
	return false;
}

void gd_dump_log(struct gd_daemon *d)
{
	FILE *f = fopen(d->log, "r");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	long from = size > 6000 ? size - 6000 : 0;
	fseek(f, from, SEEK_SET);
	char line[1024];
	cr_log_warn("---- garudad log (%s, last %ld bytes) ----", d->log, size - from);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		cr_log_warn("| %s", line);
	}
	fclose(f);
}

int gd_signal_and_wait(struct gd_daemon *d, int sig)
{
	cr_assert_gt(d->pid, 0, "garudad is not running");
	cr_assert_eq(kill(d->pid, sig), 0, "kill: %s", strerror(errno));
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	for (;;) {
		int st;
		pid_t r = waitpid(d->pid, &st, WNOHANG);
		if (r == d->pid) {
			registry_reaped(d->pid);
			d->pid = -1;
			return st;
		}
		if (gd_left_ms(dl) == 0) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, NULL, 0);
			registry_reaped(d->pid);
			d->pid = -1;
			return -1;
		}
		sleep_ms(5);
	}
}

void gd_cleanup(struct gd_daemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		registry_reaped(d->pid);
		d->pid = -1;
	}
	notifier_stop(d->notifier);
	d->notifier = NULL;
	rm_rf(d->dir);
	registry_forget(d);
	d->dir[0] = '\0';
}

void gd_stop(struct gd_daemon *d)
{
	int st = gd_signal_and_wait(d, SIGTERM);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		gd_dump_log(d);
	cr_assert_neq(st, -1, "garudad did not exit within %d ms of SIGTERM", GD_DEADLINE_MS);
	cr_assert(WIFEXITED(st), "garudad killed by signal %d (%s) instead of exiting",
		  WTERMSIG(st), strsignal(WTERMSIG(st)));
	cr_assert_eq(WEXITSTATUS(st), 0, "garudad exit status %d after SIGTERM", WEXITSTATUS(st));
	gd_cleanup(d);
	gd_check_fds();
}

void gd_check_fds(void)
{
	/* Criterion 2.4 ignores assertions in .fini: check in the test body. Only when no
	 * other daemon of this test is alive (its notifier holds fds). */
	for (int i = 0; i < GD_MAX_DAEMONS; i++)
		if (registry[i].dir[0])
			return;
	fdcheck_end();
}

int gd_fd_count(struct gd_daemon *d)
{
	return fdcheck_count(d->pid);
}

int gd_wait_fds_at_most(struct gd_daemon *d, int n)
{
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	int c;
	while ((c = gd_fd_count(d)) > n && gd_left_ms(dl) > 0)
		sleep_ms(5);
	return c;
}

/* ---------------------------------------------------------------- control ---- */

char *gd_control_raw(struct gd_daemon *d, const void *req, size_t len, bool *closed)
{
	if (closed)
		*closed = false;
	int fd = fdio_connect(d->ctl);
	if (fd < 0)
		return NULL;
	char *out = NULL;
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len)
		goto done;
	if (wait_in(fd, GD_DEADLINE_MS) <= 0)
		goto done;
	size_t cap = 1 << 20;
	out = malloc(cap + 1);
	if (!out)
		goto done;
	ssize_t n = recv(fd, out, cap, MSG_DONTWAIT);
	if (n <= 0) {
		if (n == 0 && closed)
			*closed = true;
		free(out);
		out = NULL;
		goto done;
	}
	out[n] = '\0';
done:
	close(fd);
	return out;
}

cJSON *gd_control(struct gd_daemon *d, const char *request)
{
	char *r = gd_control_raw(d, request, strlen(request), NULL);
	if (!r)
		return NULL;
	cJSON *j = cJSON_Parse(r);
	free(r);
	return j;
}

long long gd_status_num(struct gd_daemon *d, const char *key)
{
	cJSON *j = gd_control(d, "{\"request\":\"status\"}");
	if (!j)
		return -1;
	cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	long long r = cJSON_IsNumber(v) ? (long long)v->valuedouble : -1;
	cJSON_Delete(j);
	return r;
}

long long gd_wait_status(struct gd_daemon *d, const char *key, long long value)
{
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	long long v;
	while ((v = gd_status_num(d, key)) != value && gd_left_ms(dl) > 0)
		sleep_ms(5);
	return v;
}

void gd_baseline(struct gd_daemon *d)
{
	struct gd_client c;
	struct gd_seg s;
	int efd = -1, r;
	struct garuda_ready rd;

	r = gd_open(&c, d->sock);
	cr_assert_eq(r, 0, "warm-up connect: %s", gd_strerr(r));
	r = gd_segment_open(&c, 1, -1, &s);
	cr_assert_eq(r, 0, "warm-up SEGMENT_OPEN: %s", gd_strerr(r));
	r = gd_bind_new(&c, gd_slot(&s, 0), &efd);
	cr_assert_eq(r, 0, "warm-up BIND: %s", gd_strerr(r));
	cr_assert_eq(r = gd_arm(&c, gd_slot(&s, 0), 1, 1, GARUDA_FORM_EVENTFD), 0,
		     "warm-up ARM eventfd: %s", gd_strerr(r));
	cr_assert_eq(r = gd_arm(&c, gd_slot(&s, 1), 1, 2, GARUDA_FORM_MESSAGE), 0,
		     "warm-up ARM message: %s", gd_strerr(r));
	gd_store(&s, 0, 1);
	gd_store(&s, 1, 1);
	cr_assert_eq(gd_eventfd_read(efd, GD_DEADLINE_MS), 1, "warm-up: no eventfd readiness");
	cr_assert_eq(r = gd_wait_ready(&c, &rd, GD_DEADLINE_MS), 1, "warm-up: no READY: %s",
		     gd_strerr(r));
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	cr_assert_eq(gd_wait_status(d, "clients", 0), 0, "warm-up client still counted");
	cr_assert_eq(gd_wait_status(d, "segments", 0), 0, "warm-up segment still counted");
	/* the loop may close the last fds a moment after the counters drop: take the
	 * smallest count seen over a short while (only makes the later check stricter) */
	int best = gd_fd_count(d);
	for (int i = 0; i < 20; i++) {
		sleep_ms(5);
		int c2 = gd_fd_count(d);
		if (c2 >= 0 && c2 < best)
			best = c2;
	}
	cr_assert_gt(best, 0, "cannot count the daemon's fds");
	d->fd_baseline = best;
}

/* ----------------------------------------------------------------- client ---- */

const char *gd_strerr(int r)
{
	static __thread char buf[96];
	if (r == 0)
		return "ok";
	if (r > 0) {
		const char *n = garuda_errcode_name(r);
		snprintf(buf, sizeof(buf), "ERROR{%s (%d)}", n ? n : "unregistered code", r);
		return buf;
	}
	switch (-r) {
	case EPIPE:
		return "daemon closed the connection";
	case ETIMEDOUT:
		return "no answer within the deadline";
	case EBADMSG:
		return "daemon sent an undecodable datagram";
	case EPROTO:
		return "unexpected reply type";
	default:
		snprintf(buf, sizeof(buf), "%s", strerror(-r));
		return buf;
	}
}

int gd_connect(struct gd_client *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->fd = fdio_connect(path);
	if (c->fd < 0) {
		int e = c->fd;
		c->fd = -1;
		return e;
	}
	return 0;
}

int gd_hello(struct gd_client *c)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 0);
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	if (r)
		return r;
	if (rep.type != GARUDA_MSG_WELCOME)
		return -EPROTO;
	c->welcome = rep.welcome;
	return 0;
}

int gd_open(struct gd_client *c, const char *path)
{
	int r = gd_connect(c, path);
	if (r)
		return r;
	r = gd_hello(c);
	if (r)
		gd_close(c);
	return r;
}

void gd_close(struct gd_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->q);
	c->q = NULL;
	c->qhead = c->qlen = c->qcap = 0;
}

int gd_send_raw(struct gd_client *c, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	ssize_t n = fdio_send(c->fd, buf, len, fds, nfds, 0);
	if (n == -EPIPE || n == -ECONNRESET)
		return -EPIPE;
	if (n < 0)
		return (int)n;
	return n == (ssize_t)len ? 0 : -EIO;
}

int gd_send(struct gd_client *c, const struct garuda_msg *m, const int *fds, unsigned nfds)
{
	uint8_t buf[GARUDA_MSG_MAX];
	struct garuda_msg copy = *m;
	copy.nfds = (uint16_t)nfds;
	ssize_t len = garuda_msg_encode(&copy, buf, sizeof(buf));
	if (len < 0)
		return -EINVAL;
	return gd_send_raw(c, buf, (size_t)len, fds, nfds);
}

static int queue_push(struct gd_client *c, const struct garuda_msg *m)
{
	if (c->qhead + c->qlen == c->qcap) {
		if (c->qhead > 0) {
			memmove(c->q, c->q + c->qhead, c->qlen * sizeof(*c->q));
			c->qhead = 0;
		} else {
			size_t cap = c->qcap ? c->qcap * 2 : 64;
			struct gd_rx *q = realloc(c->q, cap * sizeof(*q));
			if (!q)
				return -ENOMEM;
			c->q = q;
			c->qcap = cap;
		}
	}
	c->q[c->qhead + c->qlen++].m = *m;
	return 0;
}

/* one datagram from the socket */
static int recv_sock(struct gd_client *c, struct garuda_msg *m, int *fd, int timeout_ms)
{
	if (fd)
		*fd = -1;
	if (c->eof)
		return -EPIPE;
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		int r = wait_in(c->fd, gd_left_ms(dl));
		if (r < 0)
			return r;
		if (r == 0)
			return 0;
		uint8_t buf[GARUDA_MSG_MAX + 64];
		int fds[FDIO_MAX_FDS];
		unsigned n = 0;
		ssize_t len = fdio_recv(c->fd, buf, sizeof(buf), fds, FDIO_MAX_FDS, &n, MSG_DONTWAIT);
		if (len == -EAGAIN)
			continue;
		if (len == 0 || len == -ECONNRESET || len == -EPIPE) {
			c->eof = true;
			return -EPIPE;
		}
		if (len < 0)
			return (int)len;
		int err = garuda_msg_decode(buf, (size_t)len, n, m);
		if (err) {
			fdio_close_all(fds, n);
			return -EBADMSG;
		}
		for (unsigned i = 0; i < n; i++) {
			if (i == 0 && fd)
				*fd = fds[0];
			else
				close(fds[i]);
		}
		return 1;
	}
}

int gd_recv(struct gd_client *c, struct garuda_msg *m, int *fd, int timeout_ms)
{
	if (c->qlen) {
		*m = c->q[c->qhead].m;
		c->qhead++;
		c->qlen--;
		if (fd)
			*fd = -1;
		return 1;
	}
	return recv_sock(c, m, fd, timeout_ms);
}

int gd_await(struct gd_client *c, uint64_t cookie, struct garuda_msg *reply, int *fd)
{
	/* an earlier NOREPLY request's ERROR may already be queued under this cookie */
	for (size_t i = 0; i < c->qlen; i++) {
		struct garuda_msg *q = &c->q[c->qhead + i].m;
		if (q->cookie == cookie && q->type != GARUDA_MSG_READY) {
			*reply = *q;
			memmove(q, q + 1, (c->qlen - i - 1) * sizeof(*c->q));
			c->qlen--;
			if (fd)
				*fd = -1;
			return reply->type == GARUDA_MSG_ERROR ? reply->error.code : 0;
		}
	}
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	for (;;) {
		struct garuda_msg m;
		int rfd = -1;
		int r = recv_sock(c, &m, &rfd, gd_left_ms(dl));
		if (r < 0)
			return r;
		if (r == 0)
			return -ETIMEDOUT;
		if (m.cookie == cookie && m.type != GARUDA_MSG_READY) {
			*reply = m;
			if (fd)
				*fd = rfd;
			else if (rfd >= 0)
				close(rfd);
			return m.type == GARUDA_MSG_ERROR ? m.error.code : 0;
		}
		if (rfd >= 0)
			close(rfd);
		r = queue_push(c, &m);
		if (r)
			return r;
	}
}

int gd_request(struct gd_client *c, struct garuda_msg *m, const int *fds, unsigned nfds,
	       struct garuda_msg *reply, int *reply_fd)
{
	struct garuda_msg dummy;
	if (reply_fd)
		*reply_fd = -1;
	m->cookie = ++c->cookie;
	int r = gd_send(c, m, fds, nfds);
	if (r)
		return r;
	if (m->flags & GARUDA_F_NOREPLY)
		return 0;
	return gd_await(c, m->cookie, reply ? reply : &dummy, reply_fd);
}

static int expect_ack(int r, const struct garuda_msg *rep)
{
	if (r)
		return r;
	return rep->type == GARUDA_MSG_ACK ? 0 : -EPROTO;
}

int gd_segment_open(struct gd_client *c, uint32_t lines, int32_t numa, struct gd_seg *s)
{
	struct garuda_msg m, rep;
	int fd = -1;
	memset(s, 0, sizeof(*s));
	s->memfd = -1;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, 0);
	m.segment_open.lines = lines;
	m.segment_open.numa_node = numa;
	int r = gd_request(c, &m, NULL, 0, &rep, &fd);
	if (r)
		return r;
	if (rep.type != GARUDA_MSG_SEGMENT || fd < 0) {
		if (fd >= 0)
			close(fd);
		return -EPROTO;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < rep.segment.bytes) {
		close(fd);
		return -EPROTO;
	}
	void *p = mmap(NULL, rep.segment.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = -errno;
		close(fd);
		return e;
	}
	s->id = rep.segment.segment_id;
	s->lines = rep.segment.lines;
	s->bytes = rep.segment.bytes;
	s->numa_node = rep.segment.numa_node;
	s->memfd = fd;
	s->map = p;
	return 0;
}

int gd_segment_close(struct gd_client *c, uint32_t id)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, 0);
	m.segment_close.segment_id = id;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	return expect_ack(r, &rep);
}

void gd_seg_unmap(struct gd_seg *s)
{
	if (s->map)
		munmap(s->map, s->bytes);
	s->map = NULL;
	if (s->memfd >= 0)
		close(s->memfd);
	s->memfd = -1;
}

int gd_bind(struct gd_client *c, struct garuda_slot slot, int efd)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_BIND, 0);
	m.bind.slot = slot;
	int r = gd_request(c, &m, &efd, 1, &rep, NULL);
	return expect_ack(r, &rep);
}

int gd_bind_new(struct gd_client *c, struct garuda_slot slot, int *efd)
{
	*efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (*efd < 0)
		return -errno;
	int r = gd_bind(c, slot, *efd);
	if (r) {
		close(*efd);
		*efd = -1;
	}
	return r;
}

int gd_unbind(struct gd_client *c, struct garuda_slot slot)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_UNBIND, 0);
	m.bind.slot = slot;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	return expect_ack(r, &rep);
}

int gd_arm_flags(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
		 uint8_t form, uint16_t flags)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.flags = flags;
	m.arm.slot = slot;
	m.arm.target = target;
	m.arm.token = token;
	m.arm.form = form;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	if (flags & GARUDA_F_NOREPLY)
		return r;
	return expect_ack(r, &rep);
}

int gd_arm(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
	   uint8_t form)
{
	return gd_arm_flags(c, slot, target, token, form, 0);
}

int gd_disarm(struct gd_client *c, struct garuda_slot slot, uint64_t token)
{
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
	m.disarm.slot = slot;
	m.disarm.token = token;
	int r = gd_request(c, &m, NULL, 0, &rep, NULL);
	return expect_ack(r, &rep);
}

int gd_wait_ready(struct gd_client *c, struct garuda_ready *rd, int timeout_ms)
{
	struct garuda_msg m;
	int r = gd_recv(c, &m, NULL, timeout_ms);
	if (r <= 0)
		return r;
	if (m.type == GARUDA_MSG_READY) {
		*rd = m.ready;
		return 1;
	}
	if (m.type == GARUDA_MSG_ERROR)
		return m.error.code;
	return -EPROTO;
}

int gd_quiet(struct gd_client *c, int ms, struct garuda_msg *m)
{
	struct garuda_msg tmp;
	int r = gd_recv(c, m ? m : &tmp, NULL, ms);
	return r == 0 ? 0 : 1;
}

long long gd_eventfd_read(int efd, int timeout_ms)
{
	/* poll first: the eventfd may be a blocking one */
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		int r = wait_in(efd, gd_left_ms(dl));
		if (r < 0)
			return r;
		if (r == 0)
			return 0;
		uint64_t v;
		ssize_t n = read(efd, &v, sizeof(v));
		if (n == sizeof(v))
			return (long long)v;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
	}
}

int gd_doorbell_wait(struct gd_seg *s, uint32_t old, uint32_t *now, int timeout_ms)
{
	uint64_t dl = gd_deadline(timeout_ms);
	for (;;) {
		uint32_t v = gd_doorbell(s);
		if (v != old) {
			if (now)
				*now = v;
			return 1;
		}
		int left = gd_left_ms(dl);
		if (left == 0)
			return 0;
		/* bounded waits: a daemon that bumps without waking is caught by the
		 * dedicated wake test, not here */
		if (left > 100)
			left = 100;
		struct timespec ts = { .tv_sec = left / 1000, .tv_nsec = (long)(left % 1000) * 1000000L };
		syscall(SYS_futex, &s->map->hdr.doorbell, FUTEX_WAIT, old, &ts, NULL, 0);
	}
}
