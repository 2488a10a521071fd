/* garudad.c — the tests' garudad launcher; see garudad.h. */
#include "garudad.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdio.h"

#ifndef GARUDAD_PATH
#define GARUDAD_PATH ""
#endif

/* record why the last call failed; returns e */
__attribute__((format(printf, 3, 4))) static int fail(struct gd_daemon *d, int e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->err, sizeof(d->err), fmt, ap);
	va_end(ap);
	return e;
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
static int registry_set(const struct gd_daemon *d)
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
	if (slot < 0)
		return -EMFILE;
	registry[slot].pid = d->pid > 0 ? d->pid : 0;
	registry[slot].notifier = d->notifier;
	snprintf(registry[slot].dir, sizeof(registry[slot].dir), "%s", d->dir);
	return 0;
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

static void notifier_stop(struct gd_notifier *n);

void gd_kill_all(void)
{
	for (int i = 0; i < GD_MAX_DAEMONS; i++) {
		if (registry[i].dir[0]) {
			/* the test did not get to stop it: show what the daemon said */
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
}

bool gd_any_running(void)
{
	for (int i = 0; i < GD_MAX_DAEMONS; i++)
		if (registry[i].dir[0])
			return true;
	return false;
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
	if (!n)
		return NULL;
	pthread_mutex_init(&n->lock, NULL);
	n->stop = -1;
	n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (n->fd < 0 || bind(n->fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	n->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (n->stop < 0 || pthread_create(&n->thread, NULL, notifier_main, n) != 0)
		goto fail;
	return n;
fail:
	if (n->fd >= 0)
		close(n->fd);
	if (n->stop >= 0)
		close(n->stop);
	pthread_mutex_destroy(&n->lock);
	free(n);
	return NULL;
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
	if (d->pid > 0) { /* still running: a caller's mistake; do not leave it behind */
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		registry_reaped(d->pid);
	}
	notifier_stop(d->notifier);
	d->notifier = NULL;
	unlink(d->notify);
	d->pid = 0;
	(void)registry_set(d);
}
/* ----------------------------------------------------------------- daemon ---- */

const char *gd_event_loop(void)
{
	const char *m = getenv("GARUDA_TEST_EVENT_LOOP");
	return m && *m ? m : "auto";
}

int gd_prepare_dir(struct gd_daemon *d)
{
	if (d->dir[0])
		return 0;
	memset(d, 0, sizeof(*d));
	d->notifier = NULL;
	d->fd_baseline = -1;
	d->ctl_fd = -1;
	snprintf(d->dir, sizeof(d->dir), "/tmp/garuda-dt-XXXXXX");
	if (!mkdtemp(d->dir)) {
		d->dir[0] = '\0';
		return fail(d, -errno, "mkdtemp: %s", strerror(errno));
	}
	/* tests connect as other uids (tests/control/test_access.c) */
	if (chmod(d->dir, 0755) < 0)
		return fail(d, -errno, "chmod %s: %s", d->dir, strerror(errno));
	snprintf(d->sock, sizeof(d->sock), "%s/garuda.sock", d->dir);
	snprintf(d->ctl, sizeof(d->ctl), "%s/control.sock", d->dir);
	snprintf(d->config, sizeof(d->config), "%s/garudad.json", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/garudad.log", d->dir);
	snprintf(d->notify, sizeof(d->notify), "%s/notify.sock", d->dir);
	snprintf(d->sysfs, sizeof(d->sysfs), "%s/sysfs", d->dir);
	snprintf(d->extra, sizeof(d->extra), "%s/extra.sock", d->dir);
	if (registry_set(d) < 0) {
		rmdir(d->dir);
		d->dir[0] = '\0';
		return fail(d, -EMFILE, "too many daemons in one test");
	}
	return 0;
}

/* The config text: the base merged with the caller's JSON object (or that verbatim). */
static char *make_config(struct gd_daemon *d, const struct gd_opts *o)
{
	(void)d;
	if (o->config_verbatim)
		return strdup(o->config ? o->config : "{}");
	cJSON *base = cJSON_Parse(o->quiet ? "{\"socket_group\":\"\",\"control_group\":\"\","
					     "\"log_level\":\"warning\"}" :
					     "{\"socket_group\":\"\",\"control_group\":\"\","
					     "\"log_level\":\"info\"}");
	if (!base)
		return NULL;
	const char *extra = o->config;
	if (extra) {
		cJSON *x = cJSON_Parse(extra);
		if (!x || !cJSON_IsObject(x)) {
			cJSON_Delete(x);
			cJSON_Delete(base);
			return NULL;
		}
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
	return s;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

int gd_write_config(struct gd_daemon *d, const char *text)
{
	char tmp[160];
	snprintf(tmp, sizeof(tmp), "%s.new", d->config);
	int r = write_file(tmp, text ? text : "{}");
	if (r < 0)
		return fail(d, r, "%s: %s", tmp, strerror(-r));
	if (rename(tmp, d->config) < 0)
		return fail(d, -errno, "rename %s: %s", tmp, strerror(errno));
	return 0;
}

static const char *garudad_binary(const struct gd_opts *o)
{
	if (o->garudad && *o->garudad)
		return o->garudad;
	const char *bin = getenv("GARUDAD");
	if (bin && *bin)
		return bin;
	return GARUDAD_PATH;
}

/* kill what gd_launch started after a failure; keep the directory for gd_cleanup */
static int launch_failed(struct gd_daemon *d, int e)
{
	gd_dump_log(d);
	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		registry_reaped(d->pid);
		d->pid = -1;
	}
	return e;
}

#define MAX_ARGV 64

/* A seccomp filter that fails system call nr with err (SECCOMP_RET_ERRNO), every other
 * call allowed; kept across exec (no_new_privs). The child's, before exec. */
static int refuse_syscall(long nr, int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((uint32_t)err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* In the forked child, before exec: die with the parent, stdin /dev/null, stdout and
 * stderr to out, no other fd, default SIGPIPE and signal mask, no socket activation
 * handed down from whoever started the tests. */
static void child_setup(pid_t parent, int out)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	int in = open("/dev/null", O_RDONLY);
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
}

/* Is e (NAME=value) the variable named like x (NAME or NAME=value)? */
static bool env_is(const char *e, const char *x)
{
	size_t n = strcspn(x, "=");
	return strncmp(e, x, n) == 0 && e[n] == '=';
}

/* The environment garudad is started with, made before fork(): after it the child of
 * this threaded process (the notifier runs) calls only async-signal-safe functions, no
 * setenv() and so no malloc(), whose lock another thread may have held at the fork.
 * The inherited environment less what the harness sets or drops, then the test's own
 * (NAME=value, replacing an inherited NAME), then extra up to its first NULL. The
 * array is the caller's to free; its strings are borrowed. NULL: out of memory. */
static char **daemon_env(const char *const *own, char *const *extra)
{
	static const char *const dropped[] = { "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "WATCHDOG_USEC",
					       "WATCHDOG_PID", "JOURNAL_STREAM", "NOTIFY_SOCKET", NULL };
	size_t n = 0, cap = 1;
	for (char **e = environ; *e; e++)
		cap++;
	for (const char *const *e = own; e && *e; e++)
		cap++;
	for (char *const *e = extra; *e; e++)
		cap++;
	char **envp = calloc(cap, sizeof(*envp));
	if (!envp)
		return NULL;
	for (char **e = environ; *e; e++) {
		bool drop = false;
		for (const char *const *x = dropped; *x && !drop; x++)
			drop = env_is(*e, *x);
		for (const char *const *x = own; x && *x && !drop; x++)
			drop = env_is(*e, *x);
		if (!drop)
			envp[n++] = *e;
	}
	for (const char *const *e = own; e && *e; e++)
		envp[n++] = (char *)*e;
	for (char *const *e = extra; *e; e++)
		envp[n++] = *e;
	return envp;
}

/* pid in decimal at out (room for 11 digits and the NUL): async-signal-safe */
static void put_pid(char *out, pid_t pid)
{
	char digits[12];
	int n = 0;
	unsigned long v = (unsigned long)pid;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 11);
	while (n)
		*out++ = digits[--n];
	*out = '\0';
}

/* Does a socket listen on path? The socket file appears at bind(), a moment before
 * listen(): a connect() in between is refused (/proc/net/unix: flag __SO_ACCEPTCON). */
static bool listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "re");
	if (!f)
		return access(path, F_OK) == 0;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long flags;
		char name[256] = "";
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %255s", &flags, name) == 2)
			found = (flags & 0x10000) && strcmp(name, path) == 0;
	}
	fclose(f);
	return found;
}

static int launch(struct gd_daemon *d, const struct gd_opts *o, bool relaunch);

int gd_launch(struct gd_daemon *d, const struct gd_opts *o)
{
	return launch(d, o, false);
}

static int launch(struct gd_daemon *d, const struct gd_opts *o, bool relaunch)
{
	static const struct gd_opts none;
	if (!o)
		o = &none;
	struct gd_opts keep = *o; /* gd_prepare_dir may clear d (and d->opts) */
	int r = gd_prepare_dir(d);
	if (r < 0)
		return r;
	d->opts = keep;
	o = &d->opts;
	const char *bin = garudad_binary(o);
	if (!*bin)
		return fail(d, -EINVAL, "GARUDAD (path of the garudad binary) is not set");
	if (access(bin, X_OK) < 0)
		return fail(d, -errno, "GARUDAD=%s: %s", bin, strerror(errno));

	d->activation = o->socket_activation;
	snprintf(d->event_loop, sizeof(d->event_loop), "%s",
		 o->event_loop ? o->event_loop : gd_event_loop());

	/* a restart keeps the config file as it is (a test may have rewritten it) */
	if (!relaunch) {
		char *cfg = make_config(d, o);
		if (!cfg)
			return fail(d, -EINVAL, "daemon config is not a JSON object: %s",
				    o->config ? o->config : "(none)");
		r = write_file(d->config, cfg);
		free(cfg);
		if (r < 0)
			return fail(d, r, "%s: %s", d->config, strerror(-r));
	}
	d->opts.config = NULL; /* the caller's text need not outlive this call */

	/* our NOTIFY_SOCKET */
	unlink(d->notify);
	d->notifier = notifier_start(d->notify);
	if (!d->notifier)
		return fail(d, -errno ? -errno : -EIO, "notify socket %s: %s", d->notify,
			    strerror(errno));
	(void)registry_set(d);
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
		if (o->no_control) {
			/* garudad binds the control socket itself, so it takes the one-per-path
			 * lock: on the client socket's path, which must be this test's (the
			 * default /run/garuda/garuda.sock.lock is shared with every other run) */
			argv[n++] = arg_sock;
			argv[n++] = arg_ctl;
		}
	} else {
		argv[n++] = bin;
		argv[n++] = arg_config;
		argv[n++] = arg_sock;
		argv[n++] = arg_ctl;
	}
	argv[n++] = arg_loop;
	for (const char *const *x = o->args; x && *x; x++) {
		if (n >= MAX_ARGV - 1)
			return fail(d, -E2BIG, "too many daemon arguments");
		argv[n++] = *x;
	}
	argv[n] = NULL;

	/* the daemon's environment, made before fork (daemon_env) */
	char env_notify_sock[300], env_wd_usec[40], env_wd_pid[32] = "WATCHDOG_PID=";
	snprintf(env_notify_sock, sizeof(env_notify_sock), "NOTIFY_SOCKET=%s", d->notify);
	snprintf(env_wd_usec, sizeof(env_wd_usec), "WATCHDOG_USEC=%u", o->watchdog_usec);
	/* without a watchdog the list ends after NOTIFY_SOCKET; with one, WATCHDOG_PID's
	 * digits are the child's pid, which it writes there */
	char *extra[] = { env_notify_sock, o->watchdog_usec ? env_wd_usec : NULL, env_wd_pid, NULL };
	char **envp = daemon_env(o->env, extra);
	if (!envp)
		return fail(d, -ENOMEM, "out of memory");

	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		free(envp);
		return fail(d, -e, "fork: %s", strerror(e));
	}
	if (pid == 0) {
		child_setup(parent, open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644));
		if (o->watchdog_usec)
			put_pid(env_wd_pid + strlen("WATCHDOG_PID="), getpid());
		if (o->refuse_syscall > 0 && refuse_syscall(o->refuse_syscall, o->refuse_errno) < 0)
			_exit(127);
		if (o->blocked_signal > 0) { /* as a launcher that left it blocked */
			sigset_t b;
			sigemptyset(&b);
			sigaddset(&b, o->blocked_signal);
			sigprocmask(SIG_BLOCK, &b, NULL);
		}
		execvpe(argv[0], (char *const *)argv, envp);
		static const char msg[] = "garudad test harness: exec failed\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		_exit(127);
	}
	free(envp);
	d->pid = pid;
	(void)registry_set(d);

	if (o->socket_activation) {
		/* systemd-socket-activate execs the daemon at the first connection: wait
		 * for both listening sockets to exist */
		uint64_t dl = gd_deadline(GD_DEADLINE_MS);
		while (!listening(d->sock) || (!o->no_control && !listening(d->ctl))) {
			if (!gd_alive(d))
				return launch_failed(d, fail(d, -ECHILD,
					"systemd-socket-activate exited before listening"));
			if (gd_left_ms(dl) == 0)
				return launch_failed(d, fail(d, -ETIMEDOUT,
					"systemd-socket-activate never listened"));
			gd_sleep_ms(5);
		}
		return 0;
	}
	r = gd_wait_ready_notify(d);
	return r < 0 ? launch_failed(d, r) : 0;
}

int gd_relaunch(struct gd_daemon *d)
{
	if (d->pid > 0)
		return fail(d, -EBUSY, "garudad is still running");
	return launch(d, &d->opts, true);
}

static bool can_connect(const char *path)
{
	int fd = fdio_connect(path);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* What a process that never got ready is: its executable (the harness's child before
 * exec, or garudad) and the kernel function it sleeps in */
static void proc_peek(pid_t pid, char *exe, size_t exe_cap, char *wchan, size_t wchan_cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, exe_cap - 1);
	if (n > 0)
		exe[n] = '\0';
	else
		snprintf(exe, exe_cap, "?");
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	snprintf(wchan, wchan_cap, "?");
	FILE *f = fopen(path, "re");
	if (f) {
		if (!fgets(wchan, (int)wchan_cap, f))
			snprintf(wchan, wchan_cap, "?");
		fclose(f);
	}
}

int gd_wait_ready_notify(struct gd_daemon *d)
{
	/* READY=1 normally comes within milliseconds; wait for it until the hang deadline
	 * (a loaded machine may take long: no shorter fallback, so that a daemon that
	 * never sends READY=1 fails here instead of passing on its sockets) */
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	while (!(d->ready_seen = atomic_load(&d->notifier->ready))) {
		if (!gd_alive(d))
			return fail(d, -ECHILD, "garudad exited during startup");
		if (gd_left_ms(dl) == 0) {
			char exe[256], wchan[64];
			proc_peek(d->pid, exe, sizeof(exe), wchan, sizeof(wchan));
			return fail(d, -ETIMEDOUT, "no READY=1 from garudad within %d ms%s (pid %d: exe %s, waiting in %s)",
				    GD_DEADLINE_MS, can_connect(d->ctl) ? " though its control socket accepts" : "",
				    (int)d->pid, exe, wchan);
		}
		gd_sleep_ms(2);
	}
	return 0;
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
		fprintf(stderr, "garudad (pid %d) exited: %s %d\n", d->pid,
			     WIFEXITED(st) ? "status" : "signal",
			     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
		registry_reaped(d->pid);
		d->pid = -1;
	}
	return false;
}

bool gd_log_has(struct gd_daemon *d, const char *text)
{
	FILE *f = fopen(d->log, "re");
	char line[1024];
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return found;
}

bool gd_wait_log(struct gd_daemon *d, const char *text)
{
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	while (!gd_log_has(d, text)) {
		if (gd_left_ms(dl) == 0)
			return false;
		gd_sleep_ms(20);
	}
	return true;
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
	fprintf(stderr, "---- garudad log (%s, last %ld bytes) ----\n", d->log, size - from);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		fprintf(stderr, "| %s\n", line);
	}
	fclose(f);
}

int gd_signal_and_wait(struct gd_daemon *d, int sig)
{
	if (d->pid <= 0) {
		fail(d, -ESRCH, "garudad is not running");
		return -1;
	}
	if (kill(d->pid, sig) < 0) {
		fail(d, -errno, "kill: %s", strerror(errno));
		return -1;
	}
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
		gd_sleep_ms(5);
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
	if (d->ctl_fd >= 0)
		close(d->ctl_fd);
	d->ctl_fd = -1;
	notifier_stop(d->notifier);
	d->notifier = NULL;
	rm_rf(d->dir);
	registry_forget(d);
	d->dir[0] = '\0';
}

int gd_terminate(struct gd_daemon *d)
{
	int st = gd_signal_and_wait(d, SIGTERM);
	int r = 0;
	if (st == -1)
		r = fail(d, -ETIMEDOUT, "garudad did not exit within %d ms of SIGTERM",
			 GD_DEADLINE_MS);
	else if (!WIFEXITED(st))
		r = fail(d, -ECHILD, "garudad killed by signal %d (%s) instead of exiting",
			 WTERMSIG(st), strsignal(WTERMSIG(st)));
	else if (WEXITSTATUS(st) != 0)
		r = fail(d, -ECHILD, "garudad exit status %d after SIGTERM", WEXITSTATUS(st));
	if (r)
		gd_dump_log(d);
	gd_cleanup(d);
	return r;
}

/* ---------------------------------------------------------------- control ---- */

char *gd_control_path(const char *path, const void *req, size_t len, int *err)
{
	int e = 0;
	char *out = NULL;
	int fd = fdio_connect(path);
	if (fd < 0) {
		e = fd;
		goto done;
	}
	/* refused at accept (out of fds, not admitted, busy), the connection may be closed
	 * before the request goes: EPIPE, and the reply waits to be read (protocol.md §11) */
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len && errno != EPIPE &&
	    errno != ECONNRESET) {
		e = -errno;
		goto done;
	}
	int w = gd_wait_in(fd, GD_DEADLINE_MS);
	if (w <= 0) {
		e = w < 0 ? w : -ETIMEDOUT;
		goto done;
	}
	ssize_t n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n <= 0) {
		e = n == 0 ? -EPIPE : -errno;
		goto done;
	}
	out = malloc((size_t)n + 1);
	if (!out) {
		e = -ENOMEM;
		goto done;
	}
	if (recv(fd, out, (size_t)n, MSG_DONTWAIT) != n) {
		e = -EIO;
		free(out);
		out = NULL;
		goto done;
	}
	out[n] = '\0';
done:
	if (fd >= 0)
		close(fd);
	if (err)
		*err = e;
	return out;
}

char *gd_control_raw(struct gd_daemon *d, const void *req, size_t len, bool *closed)
{
	int err;
	char *r = gd_control_path(d->ctl, req, len, &err);
	if (closed)
		*closed = err == -EPIPE;
	return r;
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



/* request's reply on a fresh connection to ctl_path, parsed (NULL: none) */
static cJSON *control_json_path(const char *ctl_path, const char *request)
{
	char *r = gd_control_path(ctl_path, request, strlen(request), NULL);
	if (!r)
		return NULL;
	cJSON *j = cJSON_Parse(r);
	free(r);
	return j;
}

double gd_status_path(const char *ctl_path, const char *key)
{
	cJSON *j = control_json_path(ctl_path, "{\"request\":\"status\"}");
	cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	double out = cJSON_IsNumber(v) ? v->valuedouble : -1;
	cJSON_Delete(j);
	return out;
}

double gd_scanner_sum(const char *ctl_path, const char *key)
{
	cJSON *j = control_json_path(ctl_path, "{\"request\":\"scanners\"}");
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "scanners"), *sc;
	double out = cJSON_GetArraySize(list) > 0 ? 0 : -1;
	cJSON_ArrayForEach(sc, list)
	{
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(sc, key);
		if (cJSON_IsObject(v)) /* a histogram: its count */
			v = cJSON_GetObjectItemCaseSensitive(v, "count");
		if (!cJSON_IsNumber(v)) {
			out = -1;
			break;
		}
		out += v->valuedouble;
	}
	cJSON_Delete(j);
	return out;
}

double gd_session_num(const char *ctl_path, uint64_t id, const char *key)
{
	cJSON *j = control_json_path(ctl_path, "{\"request\":\"clients\"}");
	double v = -1;
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(j, "clients"))
	{
		const cJSON *x = cJSON_GetObjectItemCaseSensitive(c, key);
		if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "id")) == (double)id && cJSON_IsNumber(x))
			v = x->valuedouble;
	}
	cJSON_Delete(j);
	return v;
}

cJSON *gd_control_keep(struct gd_daemon *d, const char *request)
{
	if (d->ctl_fd < 0) {
		int fd = fdio_connect(d->ctl);
		if (fd < 0)
			return NULL;
		d->ctl_fd = fd;
	}
	size_t len = strlen(request);
	if (send(d->ctl_fd, request, len, MSG_NOSIGNAL) != (ssize_t)len)
		goto broken;
	if (gd_wait_in(d->ctl_fd, GD_DEADLINE_MS) <= 0)
		goto broken;
	ssize_t n = recv(d->ctl_fd, NULL, 0, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
	if (n <= 0)
		goto broken;
	char *buf = malloc((size_t)n);
	if (!buf)
		return NULL;
	if (recv(d->ctl_fd, buf, (size_t)n, MSG_DONTWAIT) != n) {
		free(buf);
		goto broken;
	}
	cJSON *r = cJSON_ParseWithLength(buf, (size_t)n);
	free(buf);
	return r;
broken:
	close(d->ctl_fd);
	d->ctl_fd = -1;
	return NULL;
}

long long gd_status_num(struct gd_daemon *d, const char *key)
{
	return (long long)gd_status_path(d->ctl, key);
}

enum { WAIT_EQ, WAIT_AT_LEAST, WAIT_AT_MOST };

/* What wait_num reads on a fresh connection: a status key, a scanners' sum, a
 * session's number (session: its id, else unused). */
typedef double (*num_read_fn)(const char *ctl_path, const char *key, uint64_t session);
static double read_status(const char *ctl_path, const char *key, uint64_t session)
{
	(void)session;
	return gd_status_path(ctl_path, key);
}
static double read_scanners(const char *ctl_path, const char *key, uint64_t session)
{
	(void)session;
	return gd_scanner_sum(ctl_path, key);
}
static double read_session(const char *ctl_path, const char *key, uint64_t session)
{
	return gd_session_num(ctl_path, session, key);
}

/* The one control-plane poll: until key (how) value or the deadline; the last value
 * seen (-1: no reply or no such number). A status key on d's kept connection (the
 * bench samples often; tests that count the daemon's fds use a fresh one each time:
 * d NULL), or with read on a fresh one. */
static double wait_num(struct gd_daemon *d, const char *ctl_path, num_read_fn read, uint64_t session,
		       const char *key, int how, double value, int timeout_ms)
{
	uint64_t dl = gd_deadline(timeout_ms);
	double v;
	for (;;) {
		if (d) {
			cJSON *st = gd_control_keep(d, "{\"request\":\"status\"}");
			const cJSON *x = cJSON_GetObjectItemCaseSensitive(st, key);
			v = cJSON_IsNumber(x) ? x->valuedouble : -1;
			cJSON_Delete(st);
		} else {
			v = read(ctl_path, key, session);
		}
		bool done = how == WAIT_EQ ? v == value : how == WAIT_AT_LEAST ? v >= value : v <= value;
		if (done || gd_left_ms(dl) == 0)
			return v;
		gd_sleep_ms(how == WAIT_EQ ? 5 : 1);
	}
}

double gd_wait_status_path(const char *ctl_path, const char *key, double value)
{
	return wait_num(NULL, ctl_path, read_status, 0, key, WAIT_EQ, value, GD_DEADLINE_MS);
}

double gd_wait_scanner(const char *ctl_path, const char *key, double value)
{
	return wait_num(NULL, ctl_path, read_scanners, 0, key, WAIT_AT_LEAST, value, GD_DEADLINE_MS);
}

double gd_wait_session(const char *ctl_path, uint64_t id, const char *key, double value)
{
	return wait_num(NULL, ctl_path, read_session, id, key, WAIT_AT_LEAST, value, GD_DEADLINE_MS);
}

long long gd_wait_status(struct gd_daemon *d, const char *key, long long value)
{
	return (long long)gd_wait_status_path(d->ctl, key, (double)value);
}

int gd_wait_status_cmp(struct gd_daemon *d, const char *key, double value, bool at_most,
		       unsigned timeout_ms)
{
	int how = at_most ? WAIT_AT_MOST : WAIT_AT_LEAST;
	double v = wait_num(d, NULL, NULL, 0, key, how, value, (int)timeout_ms);
	return (at_most ? v <= value : v >= value) ? 0 : -ETIMEDOUT;
}

int gd_run_argv(const char *const *argv, const struct gd_run_opts *o, char *out, size_t cap)
{
	static const struct gd_run_opts none = { 0 };
	if (!o)
		o = &none;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		child_setup(parent, p[1]);
		if (o->child)
			o->child(o->arg);
		if (o->as_bytes)
			setrlimit(RLIMIT_AS, &(struct rlimit){ o->as_bytes, o->as_bytes });
		execv(argv[0], (char *const *)argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	size_t len = 0;
	uint64_t dl = gd_deadline(o->timeout_ms ? o->timeout_ms : INT_MAX);
	bool timed_out = false;
	for (;;) {
		int w = gd_wait_in(p[0], gd_left_ms(dl));
		if (w <= 0) {
			timed_out = w == 0;
			break;
		}
		char buf[4096];
		ssize_t got = read(p[0], buf, sizeof(buf));
		if (got <= 0)
			break;
		size_t take = cap && len < cap - 1 ? cap - 1 - len : 0;
		if ((size_t)got < take)
			take = (size_t)got;
		memcpy(out + len, buf, take);
		len += take;
	}
	if (cap)
		out[len] = '\0';
	close(p[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (timed_out)
		return 124; /* as timeout(1) says it */
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* garudad run by gd_run(): no notify socket, no host config file (a test may set its
 * own GARUDAD_DEFAULT_CONFIG) */
static void garudad_child(void *arg)
{
	(void)arg;
	unsetenv("NOTIFY_SOCKET");
	setenv("GARUDAD_DEFAULT_CONFIG", "", 0);
}

int gd_run(struct gd_daemon *d, const char *args, char *out, size_t cap)
{
	const char *bin = garudad_binary(&d->opts);
	if (!*bin)
		return fail(d, -EINVAL, "GARUDAD (path of the garudad binary) is not set");
	char *copy = strdup(args ? args : "");
	if (!copy)
		return fail(d, -ENOMEM, "out of memory");
	const char *argv[MAX_ARGV];
	int n = 0;
	argv[n++] = bin;
	char *save = NULL;
	for (char *a = strtok_r(copy, " ", &save); a && n < MAX_ARGV - 1; a = strtok_r(NULL, " ", &save))
		argv[n++] = a;
	argv[n] = NULL;
	int r = gd_run_argv(argv, &(struct gd_run_opts){ .timeout_ms = 20000, .child = garudad_child },
			    out, cap);
	free(copy);
	if (r < 0)
		return fail(d, r, "pipe or fork: %s", strerror(-r));
	return r;
}
