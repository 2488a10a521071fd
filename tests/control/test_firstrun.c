/* test_firstrun.c — the first hour with garuda (issue 17): a user starts garudad with
 * no socket flags and it listens in $XDG_RUNTIME_DIR/garuda, where garctl (same
 * resolver as libgaruda, proto/paths.c) finds it and is admitted as the daemon's own
 * uid; --check-config exits 0 or 2 naming the key; a bad option says "Try 'garudad
 * --help'" instead of printing the whole help; one config file (a second --config, a
 * key given twice, a NUL byte refused); a reload finds the default file written after
 * the start. The non-root test needs root (to become uid 65534) and is skipped
 * otherwise, saying so. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl_harness.h"
#include "paths.h"

#define NOBODY 65534

/* The garudad a test forked itself (as uid NOBODY, or without --config: not through
 * tests/common's launcher, so not in its registry), 0 once reaped: the suite's fini
 * kills what a failed test left. */
static pid_t nobody_pid;

static void firstrun_fini(void)
{
	if (nobody_pid > 0) {
		kill(nobody_pid, SIGKILL);
		waitpid(nobody_pid, NULL, 0);
		nobody_pid = 0;
	}
	ctl_test_fini();
}

TestSuite(firstrun, .init = ctl_test_init, .fini = firstrun_fini, .timeout = 120);

/* In a child about to exec garudad as uid/gid NOBODY: drop to it, then ask to die with
 * the parent (setuid() clears PR_SET_PDEATHSIG, so it comes after) and make sure the
 * parent did not die before that (then nobody would send the signal). */
static void become_nobody(pid_t parent)
{
	if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
		_exit(126);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(126);
}

/* A fresh 0755 directory for a copy of garudad that uid NOBODY runs (the build may lie
 * under a 0700 home), under $TMPDIR (else /tmp), into dir (PATH_MAX bytes). Skips,
 * saying why, where that is a noexec mount (the copy could not run). */
static void exec_dir(char *dir, const char *prefix)
{
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	cr_assert_lt((size_t)snprintf(dir, PATH_MAX, "%s/%sXXXXXX", tmp, prefix), (size_t)PATH_MAX);
	cr_assert_not_null(mkdtemp(dir), "mkdtemp under %s: %s", tmp, strerror(errno));
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC)) {
		rmdir(dir);
		cr_skip_test("%s is mounted noexec: no place for a copy of garudad that uid %d "
			     "can run (set TMPDIR)", tmp, NOBODY);
	}
	cr_assert_eq(chmod(dir, 0755), 0);
}

/* The mount namespace (and cwd) the test goes back to from a private /run/garuda */
struct private_run {
	int ns, cwd;
};

/* Hide the host's /run/garuda (a system garudad, or something that never answers, may
 * listen there) from this test process and the programs it starts: a private mount
 * namespace with an empty tmpfs on /run/garuda, where that directory exists (where it
 * does not, nothing listens there). Returns 0 (leave_private_run() goes back to the
 * namespace the test started in), -2 (nothing to hide) or -1 (no namespace can be made
 * here: logged why, and the caller leaves its step out). */
static int enter_private_run(struct private_run *p)
{
	struct stat st;
	p->ns = p->cwd = -1;
	if (stat(GARUDA_SOCKET_DIR, &st) != 0)
		return -2;
	p->ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	p->cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(p->ns >= 0 && p->cwd >= 0, "/proc/self/ns/mnt, .: %s", strerror(errno));
	if (unshare(CLONE_NEWNS) < 0) {
		cr_log_warn("cannot hide the host's %s (unshare: %s)", GARUDA_SOCKET_DIR, strerror(errno));
		close(p->ns);
		close(p->cwd);
		return -1;
	}
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0, "mount --make-rprivate /: %s",
		     strerror(errno));
	cr_assert_eq(mount("tmpfs", GARUDA_SOCKET_DIR, "tmpfs", 0, "mode=0755"), 0,
		     "mount tmpfs on %s: %s", GARUDA_SOCKET_DIR, strerror(errno));
	return 0;
}

static void leave_private_run(struct private_run *p)
{
	if (p->ns < 0)
		return;
	/* setns() moves the cwd to the namespace's root: back to where the test was */
	cr_assert_eq(setns(p->ns, CLONE_NEWNS), 0, "setns: %s", strerror(errno));
	cr_assert_eq(fchdir(p->cwd), 0);
	close(p->ns);
	close(p->cwd);
	p->ns = p->cwd = -1;
}

static void copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(in, 0, "%s: %s", from, strerror(errno));
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	cr_assert_geq(out, 0, "%s: %s", to, strerror(errno));
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	cr_assert_eq(n, 0);
	close(in);
	cr_assert_eq(fchmod(out, 0755), 0);
	cr_assert_eq(close(out), 0);
}

/* Run garudad with args; stdout and stderr into *out (one buffer); exit status back. */
static int run_garudad(const char *const *args, char *out, size_t cap)
{
	const char *bin = getenv("GARUDAD");
	cr_assert(bin && *bin, "GARUDAD is not set");
	const char *argv[16] = { "garudad" };
	int n = 1;
	for (int i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		unsetenv("GARUDA_SOCKET");
		unsetenv("GARUDA_CONTROL_SOCKET");
		setenv("GARUDAD_DEFAULT_CONFIG", "", 0); /* no host file (a test may set its own) */
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	size_t len = 0;
	ssize_t r;
	while (len + 1 < cap && (r = read(p[0], out + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Whether the control socket at ctl answers a status request. The path exists from
 * garudad's bind() on, and a connect is refused until its listen(): a refusal means "not
 * yet", as a missing path does. */
static bool ctl_answers(const char *ctl)
{
	static const char req[] = "{\"request\":\"status\"}";
	int err = 0;
	char *reply = gd_control_path(ctl, req, sizeof(req) - 1, &err);
	bool ok = reply != NULL;
	free(reply);
	return ok;
}

Test(firstrun, check_config)
{
	char dir[] = "/tmp/garuda-check.XXXXXX", good[96], bad[96], out[8192];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.json", dir);
	snprintf(bad, sizeof(bad), "%s/bad.json", dir);
	FILE *f = fopen(good, "we");
	fputs("{\"spin_us\": 20, \"quota\": {\"uid\": {\"connections\": 8}}}", f);
	fclose(f);
	f = fopen(bad, "we");
	fputs("{\"spin_us\": 20, \"max_sleep_usec\": 5}", f);
	fclose(f);
	char cg[128], cb[128];
	snprintf(cg, sizeof(cg), "--config=%s", good);
	snprintf(cb, sizeof(cb), "--config=%s", bad);

	const char *a1[] = { "--check-config", cg, "--runtime-dir=/tmp/nowhere-garuda", NULL };
	int st = run_garudad(a1, out, sizeof(out));
	cr_assert_eq(st, 0, "exit %d: %s", st, out);
	cr_assert_not_null(strstr(out, "configuration OK"), "%s", out);
	cr_assert_not_null(strstr(out, "/tmp/nowhere-garuda/garuda.sock"), "%s", out);
	cr_assert_not_null(strstr(out, "/tmp/nowhere-garuda/control.sock"), "%s", out);
	struct stat sb;
	cr_assert_neq(stat("/tmp/nowhere-garuda", &sb), 0, "--check-config created the runtime directory");

	const char *a2[] = { "--check-config", cb, NULL };
	st = run_garudad(a2, out, sizeof(out));
	cr_assert_eq(st, 2, "exit %d: %s", st, out);
	cr_assert_not_null(strstr(out, "max_sleep_usec"), "the error does not name the key: %s", out);
	/* a key's error names the --config file, then the key (issue 30, item 16) */
	static const struct {
		const char *json, *error; /* the error after "garudad: FILE: " */
	} keyerr[] = {
		{ "{\"max_sleep_usec\": 5}", "max_sleep_usec: unknown key (garudad --list-config-keys lists them)\n" },
		{ "{\"quota\": {\"uid\": {\"segments\": -1}}}",
		  "quota.uid.segments: must be an integer in [0, 4294967295]\n" },
		{ "{\"quota\": {\"connection\": {\"connections\": 2}}}", /* garudad(8): no such key */
		  "quota.connection.connections: unknown key (a connection is one session: only "
		  "quota.uid and quota.cgroup have connections)\n" },
	};
	for (size_t i = 0; i < sizeof(keyerr) / sizeof(keyerr[0]); i++) {
		f = fopen(bad, "we");
		fputs(keyerr[i].json, f);
		fclose(f);
		st = run_garudad(a2, out, sizeof(out));
		cr_assert_eq(st, 2, "%s: exit %d: %s", keyerr[i].json, st, out);
		char want[512];
		snprintf(want, sizeof(want), "garudad: %s: %s", bad, keyerr[i].error);
		cr_assert_str_eq(out, want);
	}

	const char *a3[] = { "--frobnicate", NULL };
	st = run_garudad(a3, out, sizeof(out));
	cr_assert_eq(st, 2, "exit %d: %s", st, out);
	cr_assert_not_null(strstr(out, "Try 'garudad --help'"), "%s", out);
	cr_assert_null(strstr(out, "Usage:"), "a bad option printed the whole help: %s", out);
	unlink(good);
	unlink(bad);
	rmdir(dir);
}

/* uid 65534 with XDG_RUNTIME_DIR=<its own 0700 dir> starts garudad with no socket
 * flag: both sockets appear in $XDG_RUNTIME_DIR/garuda, and garctl, run as the same
 * uid with only XDG_RUNTIME_DIR set, finds the control socket and is admitted. */
Test(firstrun, nonroot_default_runtime_dir)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to run garudad as uid %d", NOBODY);
	if (!getgrgid(NOBODY))
		cr_skip_test("no group with gid %d", NOBODY);
	char dir[PATH_MAX];
	exec_dir(dir, "garuda-first.");
	char xdg[PATH_MAX + 8], bin[PATH_MAX + 16], sock[PATH_MAX + 48], ctl[PATH_MAX + 48],
		rundir[PATH_MAX + 32], env[PATH_MAX + 32], log[PATH_MAX + 16];
	snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
	snprintf(bin, sizeof(bin), "%s/garudad", dir);
	snprintf(log, sizeof(log), "%s/garudad.log", dir);
	snprintf(rundir, sizeof(rundir), "%s/garuda", xdg);
	snprintf(sock, sizeof(sock), "%s/garuda.sock", rundir);
	snprintf(ctl, sizeof(ctl), "%s/control.sock", rundir);
	snprintf(env, sizeof(env), "XDG_RUNTIME_DIR=%s", xdg);
	cr_assert_eq(mkdir(xdg, 0700), 0);
	cr_assert_eq(chown(xdg, NOBODY, NOBODY), 0);
	copy_file(getenv("GARUDAD"), bin);

	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		dup2(lf, 1);
		dup2(lf, 2);
		/* a memlock limit below the default quotas: garudad warns at start */
		struct rlimit rl = { .rlim_cur = 65536, .rlim_max = 65536 };
		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0)
			_exit(126);
		become_nobody(parent);
		unsetenv("GARUDA_SOCKET");
		unsetenv("GARUDA_CONTROL_SOCKET");
		unsetenv("NOTIFY_SOCKET");
		unsetenv("LISTEN_FDS");
		setenv("XDG_RUNTIME_DIR", xdg, 1);
		setenv("GARUDAD_DEFAULT_CONFIG", "", 0);
		execl(bin, "garudad", "--scanners=1", (char *)NULL);
		_exit(127);
	}
	nobody_pid = pid;
	struct stat st;
	bool up = false;
	for (int i = 0; i < CTL_DEADLINE_MS / 20 && !up; i++) {
		up = ctl_answers(ctl) && stat(sock, &st) == 0;
		if (!up) {
			int ws = 0;
			pid_t w = waitpid(pid, &ws, WNOHANG);
			if (w == pid)
				nobody_pid = 0; /* reaped: never signal that pid again */
			cr_assert_eq(w, 0, "garudad exited (status 0x%x); see %s", ws, log);
			struct timespec ts = { .tv_nsec = 20000000L };
			nanosleep(&ts, NULL);
		}
	}
	cr_assert(up, "no sockets in %s", rundir);
	cr_assert(S_ISSOCK(st.st_mode));
	cr_assert_eq(st.st_uid, (uid_t)NOBODY);

	const char *env_add[] = { env, NULL };
	const char *args[] = { "-j", "status", NULL };
	struct ctl_run r;
	ctl_garctl_as(&r, NOBODY, NOBODY, NULL, 0, env_add, args);
	cr_assert_eq(r.status, 0, "garctl exit %d: %s", r.status, r.err);
	cJSON *j = ctl_run_json(&r);
	const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "warnings"), 0);
	cr_assert(cJSON_IsString(w), "status lists no warning: %s", r.out);
	cr_assert_not_null(strstr(w->valuestring, "RLIMIT_MEMLOCK is 65536 bytes"), "%s", w->valuestring);
	cr_assert_not_null(strstr(w->valuestring, "LimitMEMLOCK"), "%s", w->valuestring);
	cJSON_Delete(j);
	ctl_run_free(&r);
	const char *args_t[] = { "status", NULL };
	ctl_garctl_as(&r, NOBODY, NOBODY, NULL, 0, env_add, args_t);
	cr_assert_eq(r.status, 0, "garctl exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.out, "Warnings:"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "RLIMIT_MEMLOCK"), "%s", r.out);
	ctl_run_free(&r);

	/* the same uid without XDG_RUNTIME_DIR looks at the system path and says so:
	 * nothing listens there (the host's /run/garuda out of sight) */
	struct private_run pr;
	if (enter_private_run(&pr) != -1) {
		const char *args2[] = { "status", NULL };
		const char *env_none[] = { "XDG_RUNTIME_DIR=", NULL };
		ctl_garctl_as(&r, NOBODY, NOBODY, NULL, 0, env_none, args2);
		leave_private_run(&pr);
		cr_assert_neq(r.status, 0);
		cr_assert_not_null(strstr(r.err, "/run/garuda/control.sock"), "%s", r.err);
		cr_assert_not_null(strstr(r.err, "XDG_RUNTIME_DIR"), "%s", r.err);
		ctl_run_free(&r);
	}

	cr_assert_eq(kill(pid, SIGTERM), 0);
	int ws;
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	nobody_pid = 0;
	cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "garudad status 0x%x", ws);
	cr_assert_neq(stat(sock, &st), 0, "the client socket was left behind");
	unlink(log);
	unlink(bin);
	rmdir(rundir);
	rmdir(xdg);
	rmdir(dir);
}

/* Run a copy of garudad (bin) as uid/gid NOBODY with no socket flag and xdg as
 * XDG_RUNTIME_DIR (NULL: unset); its output into out. A garudad that starts (it
 * should not) is stopped after a few seconds: exit status -1. */
static int run_garudad_nobody(const char *bin, const char *xdg, char *out, size_t cap)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		become_nobody(parent);
		unsetenv("GARUDA_SOCKET");
		unsetenv("GARUDA_CONTROL_SOCKET");
		unsetenv("NOTIFY_SOCKET");
		unsetenv("LISTEN_FDS");
		unsetenv("LISTEN_FDNAMES");
		if (xdg)
			setenv("XDG_RUNTIME_DIR", xdg, 1);
		else
			unsetenv("XDG_RUNTIME_DIR");
		setenv("GARUDAD_DEFAULT_CONFIG", "", 1);
		execl(bin, "garudad", "--scanners=1", (char *)NULL);
		_exit(127);
	}
	nobody_pid = pid;
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	size_t len = 0;
	int ws = 0;
	bool done = false;
	bool eof = false;
	for (int i = 0; i < CTL_DEADLINE_MS / 20 && !done; i++) {
		if (eof) { /* its output ended: it is exiting */
			struct timespec ts = { .tv_nsec = 20000000L };
			nanosleep(&ts, NULL);
		} else {
			struct pollfd pf = { .fd = p[0], .events = POLLIN };
			poll(&pf, 1, 20);
		}
		ssize_t r = 0;
		while (len + 1 < cap && (r = read(p[0], out + len, cap - 1 - len)) > 0)
			len += (size_t)r;
		eof = eof || r == 0;
		done = waitpid(pid, &ws, WNOHANG) == pid;
	}
	if (!done) {
		kill(pid, SIGTERM);
		cr_assert_eq(waitpid(pid, &ws, 0), pid);
	}
	nobody_pid = 0;
	ssize_t r;
	while (len + 1 < cap && (r = read(p[0], out + len, cap - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	close(p[0]);
	if (!done)
		return -1;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* A user's garudad without XDG_RUNTIME_DIR (sudo -u, su, cron) and no socket flag
 * falls back to the system directory /run/garuda, which it cannot write: it exits 1
 * and says why and what to do (--runtime-dir, XDG_RUNTIME_DIR), though the first file
 * it fails to create is the single-instance lock, before any socket (issue "first
 * hour", round 2, item 5). With XDG_RUNTIME_DIR naming a directory it cannot write,
 * it names --runtime-dir too. */
Test(firstrun, nonroot_without_xdg_runtime_dir_hints)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to run garudad as uid %d", NOBODY);
	if (!getgrgid(NOBODY))
		cr_skip_test("no group with gid %d", NOBODY);
	if (access("/run", F_OK) == 0) {
		struct stat rs;
		cr_assert_eq(stat("/run", &rs), 0);
		if ((rs.st_mode & S_IWOTH) || rs.st_uid == (uid_t)NOBODY)
			cr_skip_test("uid %d may write /run here", NOBODY);
	}
	char dir[PATH_MAX], bin[PATH_MAX + 16], out[8192];
	exec_dir(dir, "garuda-noxdg.");
	snprintf(bin, sizeof(bin), "%s/garudad", dir);
	copy_file(getenv("GARUDAD"), bin);

	int st = run_garudad_nobody(bin, NULL, out, sizeof(out));
	cr_assert_eq(st, 1, "exit %d (-1: it started): %s", st, out);
	cr_assert_not_null(strstr(out, GARUDA_SOCKET_DIR "/"), "%s", out);
	cr_assert_not_null(strstr(out, "Permission denied"), "%s", out);
	cr_assert_not_null(strstr(out, "--runtime-dir=DIR"), "no --runtime-dir hint: %s", out);
	cr_assert_not_null(strstr(out, "XDG_RUNTIME_DIR is not set"), "no XDG_RUNTIME_DIR hint: %s", out);
	cr_assert_not_null(strstr(out, "garudad(8)"), "%s", out);

	/* XDG_RUNTIME_DIR set, but to a directory this user cannot write */
	st = run_garudad_nobody(bin, dir, out, sizeof(out));
	cr_assert_eq(st, 1, "exit %d (-1: it started): %s", st, out);
	cr_assert_not_null(strstr(out, dir), "%s", out);
	cr_assert_not_null(strstr(out, "Permission denied"), "%s", out);
	cr_assert_not_null(strstr(out, "--runtime-dir=DIR"), "no --runtime-dir hint: %s", out);
	cr_assert_not_null(strstr(out, "$XDG_RUNTIME_DIR/garuda"), "%s", out);
	cr_assert_null(strstr(out, "is not set"), "%s", out);
	unlink(bin);
	rmdir(dir);
}

static void flatten(const cJSON *o, const char *prefix, char *out, size_t cap)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		char name[128];
		snprintf(name, sizeof(name), "%s%s%s", prefix, *prefix ? "." : "", it->string);
		if (cJSON_IsObject(it)) {
			flatten(it, name, out, cap);
		} else {
			size_t n = strlen(out);
			snprintf(out + n, cap - n, "%s\n", name);
		}
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted lines of text, joined again. */
static void sort_lines(char *text)
{
	char *lines[256], *copy = strdup(text), *save = NULL;
	size_t n = 0;
	for (char *l = strtok_r(copy, "\n", &save); l && n < 256; l = strtok_r(NULL, "\n", &save))
		lines[n++] = l;
	qsort(lines, n, sizeof(lines[0]), cmp_str);
	text[0] = '\0';
	for (size_t i = 0; i < n; i++)
		strcat(strcat(text, lines[i]), "\n");
	free(copy);
}

/* The keys of --list-config-keys's output (the first word of each line that is not
 * indented), one a line, in place; the legacy ones (the line ends in " legacy") only
 * when legacy_too. */
static void key_names(char *text, bool legacy_too)
{
	char *w = text;
	for (char *l = text, *e; *l; l = e) {
		e = strchr(l, '\n');
		e = e ? e + 1 : l + strlen(l);
		size_t n = (size_t)(e - l), k = strcspn(l, " \n");
		bool legacy = n > 8 && memcmp(e - 8, " legacy\n", 8) == 0;
		if (l[0] == ' ' || k == 0 || (legacy && !legacy_too))
			continue;
		memmove(w, l, k);
		w += k;
		*w++ = '\n';
	}
	*w = '\0';
}

/* systemd/garudad.json.example lists exactly the keys the parser accepts (its table,
 * printed by --list-config-keys), and --check-config accepts it. The legacy keys the
 * parser still accepts (spin_us, max_sleep_us: they replace the plan's park_us and
 * backstop_us) are listed too, marked legacy, and are not in the example. */
Test(firstrun, config_example_matches_the_parser)
{
	const char *path = getenv("GARUDAD_CONFIG_EXAMPLE");
	cr_assert(path && *path, "GARUDAD_CONFIG_EXAMPLE is not set");
	FILE *f = fopen(path, "re");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	char text[16384];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	cJSON *j = cJSON_Parse(text);
	cr_assert(cJSON_IsObject(j), "%s is not a JSON object", path);
	char listed[8192] = "", parser[8192];
	flatten(j, "", listed, sizeof(listed));
	cJSON_Delete(j);
	const char *a1[] = { "--list-config-keys", NULL };
	cr_assert_eq(run_garudad(a1, parser, sizeof(parser)), 0, "%s", parser);
	static const char *const legacy[] = { "\nspin_us ", "\nmax_sleep_us " };
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
		const char *l = strstr(parser, legacy[i]);
		cr_assert_not_null(l, "--list-config-keys does not list %s:\n%s", legacy[i] + 1, parser);
		cr_assert_eq(strncmp(strchr(l + 1, '\n') - 7, " legacy", 7), 0, "%s is not marked legacy:\n%s",
			     legacy[i] + 1, parser);
	}
	key_names(parser, false);
	sort_lines(listed);
	sort_lines(parser);
	cr_assert_str_eq(listed, parser, "the example lists:\n%s\nthe parser accepts:\n%s", listed, parser);
	char cfg[512];
	snprintf(cfg, sizeof(cfg), "--config=%s", path);
	const char *a2[] = { "--check-config", cfg, NULL };
	char out[4096];
	int st = run_garudad(a2, out, sizeof(out));
	cr_assert_eq(st, 0, "--check-config on the example: exit %d: %s", st, out);
}

/* The text of the file named by $env (a man page), in a static buffer. */
static char *read_man(const char *env)
{
	const char *man = getenv(env);
	cr_assert(man && *man, "%s is not set", env);
	FILE *f = fopen(man, "re");
	cr_assert_not_null(f, "%s: %s", man, strerror(errno));
	static char text[131072];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	return text;
}

/* garudad(8)'s key list under CONFIGURATION is --list-config-keys's output (troff's
 * "\-" read as "-"), so a key added to the table and not to the man page fails here,
 * and so does a stale flag, help line or reload column. Its prose names every key. */
Test(firstrun, garudad_man_lists_every_config_key)
{
	char *text = read_man("GARUDAD_MAN");
	static const char begin[] = ".\\\" BEGIN garudad --list-config-keys\n.nf\n";
	char *b = strstr(text, begin), *e = b ? strstr(b, ".fi\n.\\\" END garudad --list-config-keys\n") : NULL;
	cr_assert(b && e, "garudad(8) has no key list between the BEGIN and END comments");
	b += strlen(begin);
	*e = '\0';
	static char copy[16384];
	size_t k = 0;
	for (const char *c = b; *c && k + 1 < sizeof(copy); c++) {
		if (c[0] == '\\' && c[1] == '-')
			continue; /* "\-" is "-" */
		if (c[0] == '\\' && c[1] == '\\')
			c++;
		copy[k++] = *c;
	}
	copy[k] = '\0';
	static char keys[16384];
	const char *a[] = { "--list-config-keys", NULL };
	cr_assert_eq(run_garudad(a, keys, sizeof(keys)), 0, "%s", keys);
	cr_assert_str_eq(copy, keys, "garudad(8)'s key list is stale; garudad --list-config-keys prints:\n%s", keys);
	*e = '.';
	const char *prose = strstr(e, "\nWhat each key does:\n");
	cr_assert_not_null(prose);
	key_names(keys, true);
	for (char *l = keys, *nl; *l; l = nl + 1) {
		nl = strchr(l, '\n');
		*nl = '\0';
		const char *last = strrchr(l, '.');
		cr_assert_not_null(strstr(prose, last ? last + 1 : l), "garudad(8) does not describe %s", l);
	}
}

/* garctl(1)'s SYNOPSIS names every command of garctl --help's "Commands:" list (the
 * command table; it lacked points and help). */
Test(firstrun, garctl_man_synopsis_lists_every_command)
{
	char *text = read_man("GARCTL_MAN");
	char *syn = strstr(text, "\n.SH SYNOPSIS\n");
	cr_assert_not_null(syn, "garctl(1) has no SYNOPSIS");
	syn += strlen("\n.SH SYNOPSIS\n");
	char *end = strstr(syn, "\n.SH ");
	cr_assert_not_null(end);
	*end = '\0';
	/* the first word of each .B/.BI/.BR line, "\-" read as "-", between spaces */
	char words[2048] = " ";
	for (char *l = syn; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, ".B", 2) != 0)
			continue;
		const char *w = l + 2;
		while (*w && *w != ' ' && *w != '\n')
			w++; /* the rest of the macro's name */
		while (*w == ' ')
			w++;
		size_t k = strlen(words);
		for (; *w && *w != ' ' && *w != '\n' && *w != '"' && k + 2 < sizeof(words); w++)
			if (!(w[0] == '\\' && w[1] == '-'))
				words[k++] = *w;
		words[k++] = ' ';
		words[k] = '\0';
	}

	const char *args[] = { "--help", NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	cr_assert_eq(r.status, 0, "garctl --help: exit %d: %s", r.status, r.err);
	const char *c = strstr(r.out, "Commands:\n");
	cr_assert_not_null(c, "%s", r.out);
	int count = 0;
	for (c += strlen("Commands:\n"); *c == ' '; c = strchr(c, '\n') + 1) {
		while (*c == ' ')
			c++;
		char cmd[40], want[48];
		size_t k = 0;
		while (*c && *c != ' ' && *c != '\n' && k + 1 < sizeof(cmd))
			cmd[k++] = *c++;
		cmd[k] = '\0';
		snprintf(want, sizeof(want), " %s ", cmd);
		cr_assert_not_null(strstr(words, want), "garctl(1) SYNOPSIS lacks %s (it names:%s)", cmd, words);
		count++;
		if (!strchr(c, '\n'))
			break;
	}
	cr_assert_geq(count, 12, "garctl --help lists %d commands: %s", count, r.out);
	ctl_run_free(&r);
}

/* garctl aimed at the client socket says so and names the control socket. */
Test(firstrun, garctl_on_the_client_socket)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	char sock[160];
	snprintf(sock, sizeof(sock), "--socket=%s", d.sock);
	const char *args[] = { sock, "status", NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "client socket"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, d.ctl), "the hint does not name the control socket %s: %s", d.ctl, r.err);
	cr_assert_str_eq(r.out, "");
	ctl_run_free(&r);
	ctl_stop(&d);
}

/* garctl CMD --help and garctl help CMD print that command's help (not the global
 * list), exit 0 and need no daemon; log-level checks its level before connecting. */
Test(firstrun, garctl_per_command_help_and_log_level)
{
	static const char *const cmds[] = { "status", "clients", "segments", "lines", "scanners",
					    "config", "metrics", "top", "disconnect", "log-level",
					    "reload", NULL };
	for (int i = 0; cmds[i]; i++) {
		for (int form = 0; form < 2; form++) {
			const char *a1[] = { "--socket=/nonexistent/control.sock", cmds[i], "--help", NULL };
			const char *a2[] = { "--socket=/nonexistent/control.sock", "help", cmds[i], NULL };
			struct ctl_run r;
			ctl_garctl(&r, form ? a2 : a1);
			cr_assert_eq(r.status, 0, "garctl %s help: exit %d: %s", cmds[i], r.status, r.err);
			char want[64];
			snprintf(want, sizeof(want), "Usage: garctl [OPTIONS] %s", cmds[i]);
			cr_assert(strncmp(r.out, want, strlen(want)) == 0, "%s help: %s", cmds[i], r.out);
			cr_assert_null(strstr(r.out, "Commands:"), "%s --help printed the global help", cmds[i]);
			ctl_run_free(&r);
		}
	}
	/* -o json is -j; -o anything else is a usage error */
	struct ctl_run o;
	const char *oj[] = { "--socket=/nonexistent/control.sock", "-o", "yaml", "status", NULL };
	ctl_garctl(&o, oj);
	cr_assert_eq(o.status, 2);
	cr_assert_not_null(strstr(o.err, "json or table"), "%s", o.err);
	ctl_run_free(&o);
	const char *bad[] = { "--socket=/nonexistent/control.sock", "log-level", "warn", NULL };
	struct ctl_run r;
	ctl_garctl(&r, bad);
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "did you mean warning?"), "%s", r.err);
	cr_assert_null(strstr(r.err, "not running"), "log-level warn went to the daemon: %s", r.err);
	ctl_run_free(&r);
}

/* No --config: garudad reads the default file ($GARUDAD_DEFAULT_CONFIG stands in for
 * /etc/garuda/garudad.json) when it exists; a missing one is no error; a bad one fails
 * as --config does, naming the key and the file; --no-config and --config= skip it. */
Test(firstrun, default_config_file)
{
	char dir[] = "/tmp/garuda-defcfg.XXXXXX", path[96], out[8192];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/garudad.json", dir);
	setenv("GARUDAD_DEFAULT_CONFIG", path, 1);
	const char *check[] = { "--check-config", "--runtime-dir=/tmp/nowhere-garuda", NULL };

	int st = run_garudad(check, out, sizeof(out)); /* absent: defaults */
	cr_assert_eq(st, 0, "exit %d: %s", st, out);
	cr_assert_not_null(strstr(out, "no config file"), "%s", out);

	FILE *f = fopen(path, "we");
	fputs("{\"socket\": \"/tmp/from-the-default-file/garuda.sock\"}", f);
	fclose(f);
	const char *check2[] = { "--check-config", NULL };
	st = run_garudad(check2, out, sizeof(out)); /* present: read */
	cr_assert_eq(st, 0, "exit %d: %s", st, out);
	cr_assert_not_null(strstr(out, path), "the file read is not named: %s", out);
	cr_assert_not_null(strstr(out, "/tmp/from-the-default-file/garuda.sock"), "the file was not applied: %s", out);

	const char *none1[] = { "--check-config", "--no-config", "--runtime-dir=/tmp/nowhere-garuda", NULL };
	const char *none2[] = { "--check-config", "--config=", "--runtime-dir=/tmp/nowhere-garuda", NULL };
	for (int i = 0; i < 2; i++) {
		st = run_garudad(i ? none2 : none1, out, sizeof(out));
		cr_assert_eq(st, 0, "exit %d: %s", st, out);
		cr_assert_not_null(strstr(out, "no config file"), "%s: %s", i ? "--config=" : "--no-config", out);
		cr_assert_null(strstr(out, "from-the-default-file"), "%s", out);
	}

	f = fopen(path, "we");
	fputs("{\"spin_us\": 20, \"max_sleep_usec\": 5}", f);
	fclose(f);
	st = run_garudad(check2, out, sizeof(out)); /* bad: --check-config's error */
	cr_assert_eq(st, 2, "exit %d: %s", st, out);
	cr_assert_not_null(strstr(out, "max_sleep_usec"), "the error does not name the key: %s", out);
	cr_assert_not_null(strstr(out, path), "the error does not name the file: %s", out);
	cr_assert_not_null(strstr(out, "--no-config"), "%s", out);
	const char *start[] = { "--runtime-dir=/tmp/nowhere-garuda", NULL };
	st = run_garudad(start, out, sizeof(out)); /* and garudad does not start on it */
	cr_assert_eq(st, 2, "exit %d: %s", st, out);
	struct stat sb;
	cr_assert_neq(stat("/tmp/nowhere-garuda", &sb), 0, "a bad default file still created the runtime directory");
	unsetenv("GARUDAD_DEFAULT_CONFIG");
	unlink(path);
	rmdir(dir);
}

/* garudad reads one config file: a second --config (or --config with --no-config)
 * is refused, naming both, instead of the first being read and the second read over
 * it at start and alone at each reload (which silently dropped the first's keys). */
Test(firstrun, a_second_config_is_refused)
{
	char dir[] = "/tmp/garuda-twocfg.XXXXXX", a[96], b[96], ca[128], cb[128], out[8192];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(a, sizeof(a), "%s/a.json", dir);
	snprintf(b, sizeof(b), "%s/b.json", dir);
	FILE *f = fopen(a, "we");
	fputs("{\"quota\": {\"uid\": {\"armed\": 1111}}}", f);
	fclose(f);
	f = fopen(b, "we");
	fputs("{\"log_level\": \"notice\"}", f);
	fclose(f);
	snprintf(ca, sizeof(ca), "--config=%s", a);
	snprintf(cb, sizeof(cb), "--config=%s", b);
	const char *const cases[][5] = {
		{ "--check-config", ca, cb, "--runtime-dir=/tmp/nowhere-garuda", NULL },
		{ "--check-config", ca, "--no-config", "--runtime-dir=/tmp/nowhere-garuda", NULL },
		{ "--check-config", "--config=", cb, "--runtime-dir=/tmp/nowhere-garuda", NULL },
	};
	static const char *const named[][2] = { { "a.json", "b.json" }, { "a.json", "--no-config" },
						{ "--config=", "b.json" } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int st = run_garudad(cases[i], out, sizeof(out));
		cr_assert_eq(st, 2, "case %zu: exit %d: %s", i, st, out);
		cr_assert_not_null(strstr(out, "reads one config file"), "case %zu: %s", i, out);
		for (int k = 0; k < 2; k++)
			cr_assert_not_null(strstr(out, named[i][k]), "case %zu does not name %s: %s", i, named[i][k], out);
	}
	const char *one[] = { "--check-config", cb, "--runtime-dir=/tmp/nowhere-garuda", NULL };
	int st = run_garudad(one, out, sizeof(out));
	cr_assert_eq(st, 0, "exit %d: %s", st, out);
	unlink(a);
	unlink(b);
	rmdir(dir);
}

/* The config file is JSON text, each key once: a key given twice (which one won was
 * cJSON's order) and anything after a NUL byte (cJSON stopped reading there, unseen)
 * are refused, naming the key, or the offset of the NUL. */
Test(firstrun, config_duplicate_key_and_nul_are_refused)
{
	char dir[] = "/tmp/garuda-dupcfg.XXXXXX", path[96], carg[128], out[8192];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/garudad.json", dir);
	snprintf(carg, sizeof(carg), "--config=%s", path);
	static const struct {
		const char *text;
		size_t len; /* 0: strlen */
		const char *error;
	} cases[] = {
		{ "{\"log_level\": \"debug\", \"log_level\": \"info\"}", 0, ": log_level: given twice" },
		{ "{\"quota\": {\"uid\": {\"armed\": 5, \"segments\": 2, \"armed\": 6}}}", 0,
		  ": quota.uid.armed: given twice" },
		{ "{\"quota\": {\"uid\": {}}, \"quota\": {\"cgroup\": {}}}", 0, ": quota: given twice" },
		{ "{\"log_level\": \"debug\"}\0{\"bogus\": 1}", sizeof("{\"log_level\": \"debug\"}\0{\"bogus\": 1}") - 1,
		  ": a NUL byte at offset 22" },
		/* the escape: cJSON's C string ends there, and the plan was taken for "poll" */
		{ "{\"plan\": \"poll\\u0000junk\"}", 0, ": a string holds \\u0000" },
	};
	const char *args[] = { "--check-config", carg, "--runtime-dir=/tmp/nowhere-garuda", NULL };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(path, "we");
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].text);
		cr_assert_eq(fwrite(cases[i].text, 1, len, f), len);
		fclose(f);
		int st = run_garudad(args, out, sizeof(out));
		cr_assert_eq(st, 2, "case %zu: exit %d: %s", i, st, out);
		cr_assert_not_null(strstr(out, cases[i].error), "case %zu: %s", i, out);
		cr_assert_not_null(strstr(out, path), "case %zu does not name the file: %s", i, out);
	}
	unlink(path);
	rmdir(dir);
}

/* Started with neither --config nor --no-config and no default file (the packages
 * ship none), garudad reloads the default file once it is written: the usual first
 * edit, /etc/garuda/garudad.json then systemctl reload ($GARUDAD_DEFAULT_CONFIG stands
 * in for the path). Before it exists, garctl reload says where it looked (and exits 0:
 * the defaults stand); once it is gone again, a reload returns to the defaults, as a
 * restart would. */
Test(firstrun, reload_finds_the_default_file_created_after_start)
{
	char dir[] = "/tmp/garuda-reldef.XXXXXX", path[96], rundir[96], ctl[128], log[96], sockarg[160];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/garudad.json", dir);
	snprintf(rundir, sizeof(rundir), "%s/rt", dir);
	snprintf(ctl, sizeof(ctl), "%s/control.sock", rundir);
	snprintf(log, sizeof(log), "%s/garudad.log", dir);
	snprintf(sockarg, sizeof(sockarg), "--socket=%s", ctl);
	const char *bin = getenv("GARUDAD");
	cr_assert(bin && *bin, "GARUDAD is not set");
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int lf = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		dup2(lf, 1);
		dup2(lf, 2);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(126);
		unsetenv("GARUDA_SOCKET");
		unsetenv("GARUDA_CONTROL_SOCKET");
		unsetenv("NOTIFY_SOCKET");
		unsetenv("LISTEN_FDS");
		setenv("GARUDAD_DEFAULT_CONFIG", path, 1);
		char rd[128];
		snprintf(rd, sizeof(rd), "--runtime-dir=%s", rundir);
		execl(bin, "garudad", "--scanners=1", rd, (char *)NULL);
		_exit(127);
	}
	nobody_pid = pid; /* killed by the fini when the test fails */
	bool up = false;
	for (int i = 0; i < CTL_DEADLINE_MS / 20 && !up; i++) {
		up = ctl_answers(ctl);
		if (!up) {
			cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "garudad exited; see %s", log);
			struct timespec ts = { .tv_nsec = 20000000L };
			nanosleep(&ts, NULL);
		}
	}
	cr_assert(up, "no control socket %s; see %s", ctl, log);

	const char *reload[] = { sockarg, "reload", NULL };
	struct ctl_run r;
	ctl_garctl(&r, reload);
	cr_assert_eq(r.status, 0, "a reload with no file to read (the defaults stand): exit %d: %s",
		     r.status, r.err);
	cr_assert_not_null(strstr(r.err, "nothing reloaded"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, path), "garctl does not say where garudad looked: %s", r.err);
	ctl_run_free(&r);

	FILE *f = fopen(path, "we");
	fputs("{\"log_level\": \"debug\"}", f);
	fclose(f);
	ctl_garctl(&r, reload);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	ctl_run_free(&r);
	cJSON *j = ctl_json(ctl, "{\"request\":\"status\"}");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "log_level")), "debug");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "config_path")), path);
	cJSON_Delete(j);

	unlink(path);
	const char *reload_j[] = { sockarg, "-j", "reload", NULL };
	ctl_garctl(&r, reload_j);
	j = ctl_run_json(&r);
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "reloaded")), "%s", r.out);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "config_path")), "%s", r.out);
	cJSON_Delete(j);
	ctl_run_free(&r);
	j = ctl_json(ctl, "{\"request\":\"status\"}");
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "log_level")), "info");
	cJSON_Delete(j);

	cr_assert_eq(kill(pid, SIGTERM), 0);
	int ws;
	cr_assert_eq(waitpid(pid, &ws, 0), pid);
	nobody_pid = 0;
	cr_assert(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "garudad status 0x%x; see %s", ws, log);
	unlink(log);
	rmdir(rundir);
	rmdir(dir);
}
