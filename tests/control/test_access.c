/* test_access.c — who may use the control socket. Peers run as nobody (65534) in a
 * forked child: refused with one ACCESS_DENIED, as they connect, for every request,
 * read-only ones included, when the socket is reachable but the peer is not
 * admitted, and the connection closed, so refused peers hold none of the 64 control
 * connections; admitted by control_group through the primary or a supplementary
 * group, and closed after its next request once a reload takes the group away;
 * garctl names the socket and the permission needed both when connect() fails (0600)
 * and when the daemon refuses, and says BUSY past the connection limit. Needs root
 * (to change uid); skipped otherwise, but for the limit. */
#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_harness.h"

TestSuite(access, .init = ctl_test_init, .fini = ctl_test_fini, .timeout = 240);

#define NOBODY 65534
#define OTHER_GID 1 /* a group nobody is not in ("daemon" on Debian) */

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to run peers as another uid");
}

static const char *nogroup(void)
{
	struct group *g = getgrgid(NOBODY);
	if (!g)
		cr_skip_test("no group with gid %d", NOBODY);
	return g->gr_name;
}

/* Connect to ctl; the fd, or -errno. */
static int peer_connect(const char *ctl)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", ctl);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return -e;
	}
	return fd;
}

/* The next datagram on fd into buf (NUL-terminated): its length, 0 at end of file, or
 * -errno (-ETIMEDOUT: none within the deadline). Where garudad closed the connection
 * with our request unread, the reset is said once, before the reply it queued: read
 * past it. */
static ssize_t peer_recv(int fd, char *buf, size_t cap)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, CTL_DEADLINE_MS) != 1)
		return -ETIMEDOUT;
	ssize_t n = recv(fd, buf, cap - 1, 0);
	if (n < 0 && errno == ECONNRESET)
		n = recv(fd, buf, cap - 1, MSG_DONTWAIT);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return n;
}

/* In a child running as uid/gid/groups: send each request on a connection of its own
 * (garudad closes a refused one after its one reply) and write each reply (one line
 * each) to the pipe. Returns the replies, one per line; a connect failure comes back
 * as "connect: <errno>". */
static char *as_peer_on(const char *ctl, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
			const char *const *reqs, bool one_conn);

static char *as_peer(const char *ctl, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
		     const char *const *reqs)
{
	return as_peer_on(ctl, uid, gid, groups, ngroups, reqs, false);
}

/* As as_peer(); one_conn: every request on one connection (a peer that is answered,
 * refused or not, and carries on). */
static char *as_peer_on(const char *ctl, uid_t uid, gid_t gid, const gid_t *groups, int ngroups,
			const char *const *reqs, bool one_conn)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		if (setgroups((size_t)ngroups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			_exit(126);
		int fd = -1;
		for (int i = 0; reqs[i]; i++) {
			if (fd < 0)
				fd = peer_connect(ctl);
			if (fd < 0) {
				dprintf(p[1], "connect: %d\n", -fd);
				_exit(0);
			}
			char buf[65536];
			/* a refused peer's send may find the connection closed already */
			if (send(fd, reqs[i], strlen(reqs[i]), MSG_NOSIGNAL) < 0 && errno != EPIPE &&
			    errno != ECONNRESET)
				_exit(1);
			if (peer_recv(fd, buf, sizeof(buf)) <= 0)
				_exit(3);
			dprintf(p[1], "%s\n", buf);
			if (!one_conn) {
				close(fd);
				fd = -1;
			}
		}
		_exit(0);
	}
	close(p[1]);
	char *out = NULL;
	size_t len = 0;
	FILE *f = fdopen(p[0], "r");
	cr_assert_not_null(f);
	char line[65536];
	while (fgets(line, sizeof(line), f)) {
		out = realloc(out, len + strlen(line) + 1);
		memcpy(out + len, line, strlen(line) + 1);
		len += strlen(line);
	}
	fclose(f);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "peer child failed: status 0x%x", st);
	return out ? out : strdup("");
}

/* Assert every line of out is an ACCESS_DENIED error whose message contains word. */
static void all_denied(const char *out, int expected, const char *word)
{
	int n = 0;
	char *copy = strdup(out), *save = NULL;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++) {
		cJSON *j = cJSON_Parse(l);
		cr_assert_not_null(j, "not JSON: %s", l);
		ctl_assert_error(j, GARUDA_E_ACCESS_DENIED, l);
		const char *msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"), "message")->valuestring;
		cr_assert_not_null(strstr(msg, word), "message \"%s\" does not mention %s", msg, word);
		cr_assert_not_null(strstr(msg, "read-only"), "message \"%s\" does not say read-only requests are refused too", msg);
		cJSON_Delete(j);
	}
	free(copy);
	cr_assert_eq(n, expected, "%d replies, expected %d:\n%s", n, expected, out);
}

static const char *const every_request[] = {
	"{\"request\":\"status\"}",
	"{\"request\":\"clients\"}",
	"{\"request\":\"scanners\"}",
	"{\"request\":\"config\"}",
	"{\"request\":\"metrics\"}",
	"{\"request\":\"segments\",\"client\":1}",
	"{\"request\":\"lines\",\"client\":1,\"segment\":1}",
	"{\"request\":\"log_level\"}",
	"{\"request\":\"log_level\",\"level\":\"debug\"}",
	"{\"request\":\"disconnect\",\"client\":1}",
	"{\"request\":\"reload\"}",
	"not even JSON",
	"{\"request\":\"frobnicate\"}",
	NULL,
};
#define N_REQUESTS 13

Test(access, non_admin_refused_every_request)
{
	need_root();
	struct gd_daemon d;
	ctl_start(&d, NULL);
	struct ctl_client c;
	ctl_client_open(&c, d.sock);
	struct stat st;
	cr_assert_eq(stat(d.ctl, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "the control socket is not 0600 by default");
	chmod(d.ctl, 0666); /* reachable, so the daemon itself must refuse */
	char *out = as_peer(d.ctl, NOBODY, NOBODY, NULL, 0, every_request);
	all_denied(out, N_REQUESTS, "root");
	free(out);
	/* nothing happened: the client is still there, the level unchanged */
	cr_assert_eq(ctl_status_num(d.ctl, "clients"), 1);
	cJSON *j = ctl_json(d.ctl, "{\"request\":\"log_level\"}");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "log_level")->valuestring, "info");
	cJSON_Delete(j);
	ctl_client_close(&c);
	ctl_stop(&d);
}

Test(access, garctl_names_socket_and_permission)
{
	need_root();
	struct gd_daemon d;
	ctl_start(&d, NULL);
	char sock[160];
	snprintf(sock, sizeof(sock), "--socket=%s", d.ctl);
	const char *args[] = { sock, "status", NULL };
	struct ctl_run r;
	/* 0600 root: connect() itself fails */
	ctl_garctl_as(&r, NOBODY, NOBODY, NULL, 0, NULL, args);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "permission denied"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, d.ctl), "the message does not name the socket: %s", r.err);
	cr_assert_not_null(strstr(r.err, "root"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "control_group"), "%s", r.err);
	ctl_run_free(&r);
	/* reachable, refused by the daemon */
	chmod(d.ctl, 0666);
	const char *args2[] = { sock, "metrics", NULL };
	ctl_garctl_as(&r, NOBODY, NOBODY, NULL, 0, NULL, args2);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "ACCESS_DENIED"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, d.ctl), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "control_group"), "%s", r.err);
	cr_assert_str_eq(r.out, "");
	ctl_run_free(&r);
	ctl_stop(&d);
}

Test(access, admin_group_primary_and_supplementary)
{
	need_root();
	const char *grp = nogroup();
	char config[256];
	snprintf(config, sizeof(config), "{\"control_group\": \"%s\"}", grp);
	struct gd_daemon d;
	ctl_start(&d, config);
	struct stat st;
	cr_assert_eq(stat(d.ctl, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0660, "with control_group the socket is 0660");
	cr_assert_eq(st.st_gid, NOBODY, "with control_group the socket belongs to that group");
	static const char *const reqs[] = { "{\"request\":\"status\"}", "{\"request\":\"log_level\",\"level\":\"notice\"}", NULL };

	/* primary group */
	char *out = as_peer(d.ctl, NOBODY, NOBODY, NULL, 0, reqs);
	cr_assert_null(strstr(out, "\"error\":{"), "a member of %s was refused: %s", grp, out);
	cr_assert_not_null(strstr(out, "\"log_level\":\"notice\""), "%s", out);
	free(out);
	/* supplementary group only */
	gid_t sup[] = { NOBODY };
	out = as_peer(d.ctl, NOBODY, OTHER_GID, sup, 1, reqs);
	cr_assert_null(strstr(out, "\"error\":{"), "a supplementary member of %s was refused: %s", grp, out);
	free(out);
	/* garctl too */
	char sock[160];
	snprintf(sock, sizeof(sock), "--socket=%s", d.ctl);
	const char *args[] = { sock, "-j", "clients", NULL };
	struct ctl_run r;
	ctl_garctl_as(&r, NOBODY, OTHER_GID, sup, 1, NULL, args);
	cJSON *j = ctl_run_json(&r);
	cJSON_Delete(j);
	ctl_run_free(&r);

	/* not a member: the socket's mode keeps it out; opened up, the daemon refuses */
	out = as_peer(d.ctl, NOBODY, OTHER_GID, NULL, 0, reqs);
	cr_assert_eq(strncmp(out, "connect: ", 9), 0, "a non-member connected to a 0660 socket: %s", out);
	free(out);
	chmod(d.ctl, 0666);
	out = as_peer(d.ctl, NOBODY, OTHER_GID, NULL, 0, reqs);
	all_denied(out, 2, grp);
	free(out);
	ctl_stop(&d);
}

/* control_read_group: its members get every reading request and, on the same
 * connection, ACCESS_DENIED for each that changes something (naming the tier and the
 * admin group), and nothing changes; the socket belongs to that group; a member of
 * control_group as well is an admin; anyone else is refused at accept, as before. */
Test(access, read_only_group_reads_and_changes_nothing)
{
	need_root();
	const char *grp = nogroup();
	char config[256];
	snprintf(config, sizeof(config), "{\"control_group\": \"%u\", \"control_read_group\": \"%s\"}",
		 (unsigned)OTHER_GID, grp);
	struct gd_daemon d;
	ctl_start(&d, config);
	struct ctl_client c;
	ctl_client_open(&c, d.sock);
	struct stat st;
	cr_assert_eq(stat(d.ctl, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0660);
	cr_assert_eq(st.st_gid, NOBODY, "with control_read_group the socket belongs to that group");
	static const char *const reqs[] = {
		"{\"request\":\"status\"}",
		"{\"request\":\"log_level\",\"level\":\"debug\"}",
		"{\"request\":\"clients\"}",
		"{\"request\":\"disconnect\",\"client\":1}",
		"{\"request\":\"reload\"}",
		"{\"request\":\"scanners\"}",
		"{\"request\":\"config\"}",
		"{\"request\":\"metrics\"}",
		"{\"request\":\"segments\",\"client\":1}",
		"{\"request\":\"log_level\"}",
		NULL,
	};
	static const bool refused[] = { false, true, false, true, true, false, false, false, false, false };
	char *out = as_peer_on(d.ctl, NOBODY, NOBODY, NULL, 0, reqs, true);
	char *save = NULL;
	int n = 0;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save), n++) {
		cr_assert_lt(n, 10, "more replies than requests: %s", l);
		cJSON *j = cJSON_Parse(l);
		cr_assert_not_null(j, "not JSON: %s", l);
		if (!refused[n]) {
			cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "error"), "%s refused: %s", reqs[n], l);
		} else {
			ctl_assert_error(j, GARUDA_E_ACCESS_DENIED, l);
			const char *msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"),
									   "message")->valuestring;
			cr_assert_not_null(strstr(msg, "read-only"), "%s", msg);
			cr_assert_not_null(strstr(msg, "control_group"), "%s", msg);
		}
		if (n == 9)
			cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "log_level")->valuestring, "info");
		cJSON_Delete(j);
	}
	cr_assert_eq(n, 10, "%d replies to 10 requests on one connection", n);
	free(out);
	cr_assert_eq(ctl_status_num(d.ctl, "clients"), 1, "a read-only peer disconnected a client");

	/* in the admin group too: an admin */
	gid_t sup[] = { OTHER_GID };
	static const char *const set[] = { "{\"request\":\"log_level\",\"level\":\"notice\"}", NULL };
	out = as_peer(d.ctl, NOBODY, NOBODY, sup, 1, set);
	cr_assert_not_null(strstr(out, "\"log_level\":\"notice\""), "%s", out);
	free(out);
	/* in neither: refused at accept, naming both groups */
	chmod(d.ctl, 0666);
	gid_t none[] = { 2 };
	out = as_peer(d.ctl, NOBODY, 2, none, 1, reqs);
	all_denied(out, 10, grp);
	free(out);
	ctl_client_close(&c);
	ctl_stop(&d);
}

/* control_group as a number is a gid, as it is for the socket's chown: the group
 * the socket was given is the group admitted (a numeric one used to admit nobody) */
Test(access, admin_group_by_number)
{
	need_root();
	char config[256];
	snprintf(config, sizeof(config), "{\"control_group\": \"%u\"}", (unsigned)NOBODY);
	struct gd_daemon d;
	ctl_start(&d, config);
	struct stat st;
	cr_assert_eq(stat(d.ctl, &st), 0);
	cr_assert_eq(st.st_gid, NOBODY, "control_group %u: the socket belongs to gid %u", (unsigned)NOBODY,
		     (unsigned)NOBODY);
	static const char *const reqs[] = { "{\"request\":\"status\"}", NULL };
	char *out = as_peer(d.ctl, NOBODY, NOBODY, NULL, 0, reqs);
	cr_assert_null(strstr(out, "\"error\":{"), "a member of gid %u was refused: %s", (unsigned)NOBODY, out);
	free(out);
	chmod(d.ctl, 0666);
	out = as_peer(d.ctl, NOBODY, OTHER_GID, NULL, 0, reqs);
	cr_assert_not_null(strstr(out, "\"error\":{"), "a non-member was answered: %s", out);
	free(out);
	ctl_stop(&d);
}

Test(access, reload_changes_the_admin_group)
{
	need_root();
	struct gd_daemon d;
	ctl_start(&d, NULL);
	chmod(d.ctl, 0666);
	static const char *const reqs[] = { "{\"request\":\"status\"}", NULL };
	char *out = as_peer(d.ctl, NOBODY, NOBODY, NULL, 0, reqs);
	all_denied(out, 1, "root");
	free(out);
	char config[256];
	snprintf(config, sizeof(config), "{\"control_group\": \"%s\"}", nogroup());
	ctl_write_config(&d, config);
	cJSON *j = ctl_json(d.ctl, "{\"request\":\"reload\"}");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "reloaded")));
	cJSON_Delete(j);
	out = as_peer(d.ctl, NOBODY, NOBODY, NULL, 0, reqs);
	cr_assert_null(strstr(out, "\"error\":{"), "still refused after the reload: %s", out);
	free(out);
	ctl_stop(&d);
}

/* A peer that is not admitted gets its one ACCESS_DENIED at accept, before it sends
 * anything, and the connection is closed: it holds none of the 64 control
 * connections, so 70 of them held open by nobody do not lock root out (garctl, and
 * with it systemctl reload). The child keeps its connections until the parent is done
 * (it reads the pipe to its end). */
Test(access, refused_peers_are_closed_and_do_not_count)
{
	need_root();
	struct gd_daemon d;
	ctl_start(&d, NULL);
	chmod(d.ctl, 0666);
	int up[2], hold[2];
	cr_assert_eq(pipe(up), 0);
	cr_assert_eq(pipe(hold), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(up[0]);
		close(hold[1]);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(126);
		enum { N = 70 };
		int fds[N], denied = 0, closed = 0, n = 0;
		for (; n < N; n++) {
			char buf[4096];
			fds[n] = peer_connect(d.ctl);
			if (fds[n] < 0)
				_exit(1);
			/* the reply comes unasked, then the end of the connection (the first
			 * one that does not ends the count) */
			bool d1 = peer_recv(fds[n], buf, sizeof(buf)) > 0 && strstr(buf, "\"ACCESS_DENIED\"");
			bool c1 = d1 && peer_recv(fds[n], buf, sizeof(buf)) == 0;
			denied += d1;
			closed += c1;
			if (!c1) {
				n++;
				break;
			}
		}
		dprintf(up[1], "%d %d\n", denied, closed);
		close(up[1]);
		char c;
		while (read(hold[0], &c, 1) > 0)
			;
		for (int i = 0; i < n; i++)
			close(fds[i]);
		_exit(0);
	}
	close(up[1]);
	close(hold[0]);
	char line[64] = "";
	ssize_t n = read(up[0], line, sizeof(line) - 1);
	close(up[0]);
	int denied = -1, closed = -1;
	cr_assert(n > 0 && sscanf(line, "%d %d", &denied, &closed) == 2, "the peer child said nothing");
	cr_assert_eq(denied, 70, "%d of 70 refused connections got ACCESS_DENIED unasked", denied);
	cr_assert_eq(closed, 70, "%d of 70 refused connections were closed", closed);
	/* nobody still holds its 70 sockets: root gets in */
	char sock[160];
	snprintf(sock, sizeof(sock), "--socket=%s", d.ctl);
	const char *args[] = { sock, "-j", "status", NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	cJSON *j = ctl_run_json(&r);
	cJSON_Delete(j);
	ctl_run_free(&r);
	close(hold[1]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "peer child failed: status 0x%x", st);
	ctl_stop(&d);
}

/* Past the limit of 64 control connections, garudad says so (BUSY) before closing
 * the one it refuses, and garctl prints it: not "closed the connection without a
 * reply", which reads as a daemon that stopped. Once one closes, garctl gets in. */
Test(access, garctl_says_when_the_connection_limit_refuses)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	enum { N = 64 };
	int fds[N];
	for (int i = 0; i < N; i++) {
		fds[i] = peer_connect(d.ctl);
		cr_assert_geq(fds[i], 0, "connect: %s", strerror(-fds[i]));
		/* answered: accepted and counted */
		static const char req[] = "{\"request\":\"log_level\"}";
		char buf[4096];
		cr_assert_eq(send(fds[i], req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(req) - 1);
		cr_assert_gt(peer_recv(fds[i], buf, sizeof(buf)), 0, "connection %d got no reply", i);
	}
	char sock[160];
	snprintf(sock, sizeof(sock), "--socket=%s", d.ctl);
	const char *args[] = { sock, "status", NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "BUSY"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "64 control connections open, its limit"), "%s", r.err);
	cr_assert_null(strstr(r.err, "without a reply"), "%s", r.err);
	ctl_run_free(&r);
	close(fds[0]);
	/* the daemon sees the close in its own time: ask until it has */
	bool in = false;
	for (int i = 0; i < CTL_DEADLINE_MS / 20 && !in; i++) {
		ctl_garctl(&r, args);
		in = r.status == 0;
		ctl_run_free(&r);
		if (!in)
			poll(NULL, 0, 20);
	}
	cr_assert(in, "garctl still refused after a connection closed");
	for (int i = 1; i < N; i++)
		close(fds[i]);
	ctl_stop(&d);
}

/* A reload that takes the admin group away answers an admitted connection's next
 * request with ACCESS_DENIED and closes it: no peer outside the group keeps one. */
Test(access, a_reload_closes_a_connection_no_longer_admitted)
{
	need_root();
	char config[256];
	snprintf(config, sizeof(config), "{\"control_group\": \"%s\"}", nogroup());
	struct gd_daemon d;
	ctl_start(&d, config);
	chmod(d.ctl, 0666);
	int go[2], back[2];
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(back), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(go[1]);
		close(back[0]);
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(126);
		static const char req[] = "{\"request\":\"status\"}";
		char buf[65536], c;
		int fd = peer_connect(d.ctl);
		if (fd < 0 || send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0 || peer_recv(fd, buf, sizeof(buf)) <= 0)
			_exit(1);
		dprintf(back[1], "%s\n", strstr(buf, "\"error\"") ? "refused" : "admitted");
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) < 0 || peer_recv(fd, buf, sizeof(buf)) <= 0)
			_exit(3);
		bool denied = strstr(buf, "\"ACCESS_DENIED\"") != NULL;
		dprintf(back[1], "%s %s\n", denied ? "denied" : "answered",
			peer_recv(fd, buf, sizeof(buf)) == 0 ? "closed" : "open");
		_exit(0);
	}
	close(go[0]);
	close(back[1]);
	FILE *f = fdopen(back[0], "r");
	cr_assert_not_null(f);
	char line[128] = "";
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert_str_eq(line, "admitted\n");
	ctl_write_config(&d, "{}");
	cJSON *j = ctl_json(d.ctl, "{\"request\":\"reload\"}");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "reloaded")));
	cJSON_Delete(j);
	cr_assert_eq(write(go[1], "x", 1), 1);
	close(go[1]);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	cr_assert_str_eq(line, "denied closed\n");
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "peer child failed: status 0x%x", st);
	ctl_stop(&d);
}
