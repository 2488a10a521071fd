/* tdaemon.c — see tdaemon.h. */
#include "tdaemon.h"
#include "fdio.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef GARUDAD_PATH
#define GARUDAD_PATH "garudad"
#endif

long long td_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool can_connect(const char *path)
{
	int fd = fdio_connect(path);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static void spawn(struct tdaemon *d)
{
	const char *bin = getenv("GARUDAD");
	if (!bin || !*bin)
		bin = GARUDAD_PATH;
	char a_cfg[256], a_sock[256], a_ctl[256];
	snprintf(a_cfg, sizeof(a_cfg), "--config=%s", d->cfg);
	snprintf(a_sock, sizeof(a_sock), "--socket=%s", d->sock);
	snprintf(a_ctl, sizeof(a_ctl), "--control-socket=%s", d->ctl);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		int log = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (log >= 0) {
			dup2(log, 1);
			dup2(log, 2);
		}
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		unsetenv("NOTIFY_SOCKET");
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_PID");
		execl(bin, bin, a_cfg, a_sock, a_ctl, (char *)NULL);
		_exit(127);
	}
	d->pid = pid;
	long long end = td_now_ms() + TD_DEADLINE_MS;
	while (!can_connect(d->sock)) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			d->pid = 0;
			td_dump_log(d);
			cr_assert_fail("garudad exited during start-up (status 0x%x)", st);
		}
		if (td_now_ms() > end) {
			td_dump_log(d);
			cr_assert_fail("garudad did not accept on %s", d->sock);
		}
		usleep(2000);
	}
}

void td_start(struct tdaemon *d, const char *extra_json)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/garuda-client-test.XXXXXX");
	cr_assert_not_null(mkdtemp(d->dir), "mkdtemp: %s", strerror(errno));
	snprintf(d->sock, sizeof(d->sock), "%s/g.sock", d->dir);
	snprintf(d->ctl, sizeof(d->ctl), "%s/c.sock", d->dir);
	snprintf(d->cfg, sizeof(d->cfg), "%s/garudad.json", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/garudad.log", d->dir);
	FILE *f = fopen(d->cfg, "we");
	cr_assert_not_null(f);
	fprintf(f, "{\"socket_group\":\"\",\"control_group\":\"\",\"log_level\":\"info\"%s%s}\n",
		extra_json ? "," : "", extra_json ? extra_json : "");
	fclose(f);
	spawn(d);
}

void td_restart(struct tdaemon *d)
{
	cr_assert_eq(d->pid, 0, "daemon still running");
	spawn(d);
}

void td_kill(struct tdaemon *d)
{
	if (d->pid <= 0)
		return;
	kill(d->pid, SIGKILL);
	int st;
	while (waitpid(d->pid, &st, 0) < 0 && errno == EINTR)
		;
	d->pid = 0;
}

static void rm_dir(struct tdaemon *d)
{
	char p[256];
	const char *names[] = { "g.sock", "g.sock.lock", "c.sock", "garudad.json", "garudad.log" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", d->dir, names[i]);
		unlink(p);
	}
	rmdir(d->dir);
}

void td_stop(struct tdaemon *d)
{
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		int st = 0;
		long long end = td_now_ms() + TD_DEADLINE_MS;
		pid_t r;
		while ((r = waitpid(d->pid, &st, WNOHANG)) == 0 && td_now_ms() < end)
			usleep(2000);
		if (r == 0) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
			d->pid = 0;
			td_dump_log(d);
			cr_assert_fail("garudad did not exit on SIGTERM");
		}
		d->pid = 0;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			td_dump_log(d);
			cr_assert_fail("garudad did not exit cleanly: status 0x%x", st);
		}
	}
	rm_dir(d);
}

void td_dump_log(struct tdaemon *d)
{
	FILE *f = fopen(d->log, "re");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		cr_log_info("garudad: %s", line);
	}
	fclose(f);
}

void td_export(struct tdaemon *d)
{
	setenv("GARUDA_SOCKET", d->sock, 1);
}

long long td_status(struct tdaemon *d, const char *key)
{
	int fd = fdio_connect(d->ctl);
	if (fd < 0)
		return -1;
	long long v = -1;
	static const char req[] = "{\"request\":\"status\"}";
	char out[8192], pat[96];
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(req) - 1)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t got;
		if (poll(&p, 1, TD_DEADLINE_MS) == 1 && (got = recv(fd, out, sizeof(out) - 1, 0)) > 0) {
			out[got] = '\0';
			snprintf(pat, sizeof(pat), "\"%s\":", key);
			const char *at = strstr(out, pat);
			if (at)
				v = strtoll(at + strlen(pat), NULL, 10);
		}
	}
	close(fd);
	return v;
}

long long td_wait_status(struct tdaemon *d, const char *key, long long value)
{
	long long end = td_now_ms() + TD_DEADLINE_MS, v;
	while ((v = td_status(d, key)) != value && td_now_ms() < end)
		usleep(2000);
	return v;
}
