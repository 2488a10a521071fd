/* benchd.c — see benchd.h. */
#include "benchd.h"
#include "fdio.h"

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
#include <unistd.h>

#include "bench.h"

static int unix_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(a->sun_path))
		return -ENAMETOOLONG;
	strcpy(a->sun_path, path);
	return 0;
}

void bd_dump_log(struct bd *d)
{
	FILE *f = fopen(d->log, "re");
	if (!f)
		return;
	char line[512];
	fprintf(stderr, "---- garudad log (%s) ----\n", d->log);
	while (fgets(line, sizeof(line), f))
		fputs(line, stderr);
	fprintf(stderr, "---- end of log ----\n");
	fclose(f);
}

static int write_config(struct bd *d, const char *config_json)
{
	cJSON *c = cJSON_Parse(config_json ? config_json : "{}");
	if (!c || !cJSON_IsObject(c)) {
		cJSON_Delete(c);
		return -EINVAL;
	}
	cJSON_DeleteItemFromObject(c, "socket");
	cJSON_DeleteItemFromObject(c, "control_socket");
	cJSON_DeleteItemFromObject(c, "socket_group");
	cJSON_AddStringToObject(c, "socket", d->sock);
	cJSON_AddStringToObject(c, "control_socket", d->ctl);
	cJSON_AddStringToObject(c, "socket_group", "");
	if (!cJSON_GetObjectItem(c, "log_level"))
		cJSON_AddStringToObject(c, "log_level", "warning");
	char *text = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	if (!text)
		return -ENOMEM;
	FILE *f = fopen(d->config, "we");
	if (!f) {
		free(text);
		return -errno;
	}
	fputs(text, f);
	fclose(f);
	d->config_text = text;
	return 0;
}

static void remove_dir(struct bd *d)
{
	char lock[sizeof(d->sock) + 8];
	snprintf(lock, sizeof(lock), "%s.lock", d->sock);
	unlink(lock);
	unlink(d->sock);
	unlink(d->ctl);
	unlink(d->config);
	unlink(d->log);
	unlink(d->notify);
	rmdir(d->dir);
}

int bd_start(struct bench *b, struct bd *d, const char *config_json)
{
	memset(d, 0, sizeof(*d));
	d->pid = -1;
	d->ctl_fd = -1;
	snprintf(d->dir, sizeof(d->dir), "/tmp/garuda-bench.XXXXXX");
	if (!mkdtemp(d->dir)) {
		bench_fail(b, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	snprintf(d->sock, sizeof(d->sock), "%s/garuda.sock", d->dir);
	snprintf(d->ctl, sizeof(d->ctl), "%s/control.sock", d->dir);
	snprintf(d->config, sizeof(d->config), "%s/garudad.json", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/garudad.log", d->dir);
	snprintf(d->notify, sizeof(d->notify), "%s/notify", d->dir);
	if (write_config(d, config_json) < 0) {
		bench_fail(b, "bad daemon config %s", config_json);
		remove_dir(d);
		return -1;
	}

	int nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un a;
	if (nfd < 0 || unix_addr(&a, d->notify) < 0 || bind(nfd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		bench_fail(b, "notify socket: %s", strerror(errno));
		if (nfd >= 0)
			close(nfd);
		remove_dir(d);
		return -1;
	}

	raise_nofile();
	char cfgarg[160];
	snprintf(cfgarg, sizeof(cfgarg), "--config=%s", d->config);
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		bench_fail(b, "fork: %s", strerror(errno));
		close(nfd);
		remove_dir(d);
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(99);
		int lfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (lfd >= 0) {
			dup2(lfd, STDERR_FILENO);
			dup2(lfd, STDOUT_FILENO);
		}
		setenv("NOTIFY_SOCKET", d->notify, 1);
		execl(b->o.garudad, b->o.garudad, cfgarg, (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", b->o.garudad, strerror(errno));
		_exit(127);
	}
	d->pid = pid;

	/* READY=1, or the daemon's death, or the deadline */
	uint64_t deadline = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
	bool ready = false;
	while (!ready && now_ns() < deadline) {
		struct pollfd p = { .fd = nfd, .events = POLLIN };
		if (poll(&p, 1, 100) > 0) {
			char buf[512];
			ssize_t n = recv(nfd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
			if (n > 0) {
				buf[n] = '\0';
				ready = strstr(buf, "READY=1") != NULL;
			}
		}
		int st;
		if (!ready && waitpid(pid, &st, WNOHANG) == pid) {
			d->pid = -1;
			bench_fail(b, "garudad exited during start-up (status %d)", st);
			bd_dump_log(d);
			close(nfd);
			remove_dir(d);
			return -1;
		}
	}
	close(nfd);
	if (!ready) {
		bench_fail(b, "garudad did not say READY=1 within %d ms", BENCH_HANG_MS);
		bd_dump_log(d);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		d->pid = -1;
		remove_dir(d);
		return -1;
	}
	return 0;
}

int bd_stop(struct bench *b, struct bd *d)
{
	int rc = 0;
	if (d->ctl_fd >= 0)
		close(d->ctl_fd);
	d->ctl_fd = -1;
	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		uint64_t deadline = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
		int st = 0;
		pid_t r;
		while ((r = waitpid(d->pid, &st, WNOHANG)) == 0 && now_ns() < deadline)
			sleep_ns(2000000);
		if (r != d->pid) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &st, 0);
			bench_fail(b, "garudad did not exit within %d ms of SIGTERM", BENCH_HANG_MS);
			bd_dump_log(d);
			rc = -1;
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			bench_fail(b, "garudad exited uncleanly (status 0x%x)", st);
			bd_dump_log(d);
			rc = -1;
		}
		d->pid = -1;
	}
	free(d->config_text);
	d->config_text = NULL;
	remove_dir(d);
	return rc;
}

cJSON *bd_control(struct bd *d, const char *request)
{
	if (d->ctl_fd < 0) {
		int fd = fdio_connect(d->ctl);
		if (fd < 0)
			return NULL;
		d->ctl_fd = fd;
	}
	char req[128];
	int len = snprintf(req, sizeof(req), "{\"request\":\"%s\"}", request);
	if (send(d->ctl_fd, req, (size_t)len, MSG_NOSIGNAL) != len)
		goto broken;
	struct pollfd p = { .fd = d->ctl_fd, .events = POLLIN };
	if (poll(&p, 1, BENCH_HANG_MS) <= 0)
		goto broken;
	static const size_t cap = 1 << 20;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	ssize_t n = recv(d->ctl_fd, buf, cap - 1, 0);
	if (n <= 0) {
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

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int bd_counters(struct bd *d, struct bd_counters *out)
{
	memset(out, 0, sizeof(*out));
	cJSON *st = bd_control(d, "status");
	if (!st)
		return -EIO;
	out->armed = num(st, "armed");
	out->completions = num(st, "completions");
	out->arms = num(st, "arms");
	out->clients = num(st, "clients");
	out->segments = num(st, "segments");
	cJSON_Delete(st);
	cJSON *sc = bd_control(d, "scanners");
	if (!sc)
		return -EIO;
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(sc, "scanners"), *it;
	cJSON_ArrayForEach(it, arr)
	{
		out->passes += num(it, "passes");
		out->parks += num(it, "parks");
		out->scanner_cpu_s += num(it, "cpu_s");
	}
	cJSON_Delete(sc);
	return 0;
}

int bd_wait_status(struct bd *d, const char *field, double value, int at_most, unsigned timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	do {
		cJSON *st = bd_control(d, "status");
		if (st) {
			double v = num(st, field);
			cJSON_Delete(st);
			if (at_most ? v <= value : v >= value)
				return 0;
		}
		sleep_ns(1000000);
	} while (now_ns() < deadline);
	return -ETIMEDOUT;
}
