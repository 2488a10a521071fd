/* cgroup.c — see cgroup.h. */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdio.h"

int cg_mount(char *dir, size_t dcap, char *root, size_t rcap, char *why, size_t wcap)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		int e = errno;
		snprintf(why, wcap, "/proc/self/mountinfo: %s", strerror(e));
		return -e;
	}
	char *line = NULL;
	size_t cap = 0;
	int r = -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER */
		char mroot[256], mpoint[256];
		if (sscanf(line, "%*s %*s %*s %255s %255s", mroot, mpoint) != 2)
			continue;
		const char *dash = strstr(line, " - ");
		if (!dash || strncmp(dash, " - cgroup2 ", 11) != 0)
			continue;
		snprintf(dir, dcap, "%s", mpoint);
		snprintf(root, rcap, "%s", mroot);
		r = 0;
		break;
	}
	free(line);
	fclose(f);
	if (r)
		snprintf(why, wcap, "no cgroup2 mount in /proc/self/mountinfo");
	return r;
}

int cg_make(struct cg_group *g, const char *name, char *why, size_t wcap)
{
	char mdir[200], mroot[200];
	g->dir[0] = g->path[0] = '\0';
	int r = cg_mount(mdir, sizeof(mdir), mroot, sizeof(mroot), why, wcap);
	if (r)
		return r;
	char dir[sizeof(g->dir)];
	snprintf(dir, sizeof(dir), "%s/garuda-test-%d-%s", mdir, (int)getpid(), name);
	if (mkdir(dir, 0755) < 0) {
		int e = errno;
		snprintf(why, wcap, "mkdir %s: %s (no writable cgroup2)", dir, strerror(e));
		return -e;
	}
	snprintf(g->dir, sizeof(g->dir), "%s", dir);
	snprintf(g->path, sizeof(g->path), "%s/garuda-test-%d-%s", strcmp(mroot, "/") == 0 ? "" : mroot,
		 (int)getpid(), name);
	return 0;
}

int cg_remove(struct cg_group *g)
{
	if (!g->dir[0])
		return 0;
	int r = rmdir(g->dir) < 0 ? -errno : 0;
	if (r == 0)
		g->dir[0] = '\0';
	return r;
}

/* what the child hands back with the socket */
struct handover {
	int err; /* 0 or -errno */
	bool refused;
	uint64_t cookie;
	struct garuda_welcome welcome;
	char text[GARUDA_ERROR_TEXT_MAX + 1]; /* the ERROR{QUOTA}'s, when refused */
};

static void child(const struct cg_group *g, const char *sock, bool expect_refusal, int back,
		  int keep)
{
	gd_keepers_close_inherited(); /* other clients' keepers must see their end */
	struct handover h = { 0 };
	char procs[300];
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", g->dir);
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		h.err = -errno;
	if (fd >= 0)
		close(fd);
	struct gd_client c;
	memset(&c, 0, sizeof(c));
	c.fd = -1;
	if (!h.err)
		h.err = gd_connect(&c, sock);
	if (!h.err) {
		/* expecting a refusal, no HELLO: the daemon closing a socket with a datagram
		 * unread would make ours ECONNRESET; else HELLO and its WELCOME */
		struct garuda_msg m;
		if (!expect_refusal) {
			garuda_msg_init(&m, GARUDA_MSG_HELLO, ++c.cookie);
			gd_send(&c, &m, NULL, 0);
		}
		int r = gd_recv(&c, &m, NULL, GD_DEADLINE_MS);
		if (r != 1)
			h.err = r < 0 ? r : -ETIMEDOUT;
		else if (m.type == GARUDA_MSG_WELCOME && m.cookie == c.cookie)
			h.welcome = m.welcome;
		else if (m.type == GARUDA_MSG_ERROR && m.cookie == 0 && m.error.code == GARUDA_E_QUOTA) {
			h.refused = true;
			snprintf(h.text, sizeof(h.text), "%.*s", (int)m.error.text_len, m.error.text);
		} else
			h.err = -EPROTO;
		h.cookie = c.cookie;
	}
	int n = c.fd >= 0 ? 1 : 0;
	bool sent = fdio_send(back, &h, sizeof(h), &c.fd, (unsigned)n, 0) == (ssize_t)sizeof(h);
	/* a session belongs to the process that connected (garudad ends it when that
	 * process exits, protocol.md §6.1 item 7): live on, without a copy of the socket,
	 * until the test closes the client (gd_close: end of file on keep) */
	if (c.fd >= 0)
		close(c.fd);
	char b;
	while (read(keep, &b, 1) > 0)
		;
	_exit(sent ? 0 : 1);
}

int cg_open_in(const struct cg_group *g, const char *sock, struct gd_client *c, bool *refused,
	       char *text, size_t tcap)
{
	int sv[2], keep[2];
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	if (pipe2(keep, O_CLOEXEC) < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		close(keep[0]);
		close(keep[1]);
		return -e;
	}
	if (pid == 0) {
		close(sv[0]);
		close(keep[1]);
		child(g, sock, *refused, sv[1], keep[0]);
	}
	close(sv[1]);
	close(keep[0]);
	struct handover h;
	int fds[1] = { -1 };
	unsigned nfds = 0;
	ssize_t n = fdio_recv(sv[0], &h, sizeof(h), fds, 1, &nfds, 0);
	close(sv[0]);
	/* the child lives while the client is used (gd_close() ends it): a refused or
	 * failed one is ended here */
	gd_keeper_set(c, pid, keep[1]);
	if (n != (ssize_t)sizeof(h) || h.err || h.refused || nfds != 1)
		gd_keeper_end(c);
	if (n != (ssize_t)sizeof(h)) {
		fdio_close_all(fds, nfds);
		return n < 0 ? (int)n : -EPROTO;
	}
	if (h.err) {
		fdio_close_all(fds, nfds);
		return h.err;
	}
	if (nfds != 1)
		return -EPROTO;
	c->fd = fds[0];
	c->welcome = h.welcome;
	c->cookie = h.cookie;
	*refused = h.refused;
	if (text)
		snprintf(text, tcap, "%s", h.text);
	return 0;
}

int cg_self(char *path, size_t cap)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	char *line = NULL;
	size_t lcap = 0;
	ssize_t n;
	int r = -ENOENT;
	while ((n = getline(&line, &lcap, f)) > 0)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, cap, "%s", line + 3);
			r = 0;
			break;
		}
	free(line);
	fclose(f);
	return r;
}
