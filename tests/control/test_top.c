/* test_top.c — garctl top as a person at a terminal runs it, and top -j as a program
 * reads it (issue "First hour, round 2", item 7).
 *
 * Under a pseudo-terminal (forkpty: stdin and stdout a terminal, so top redraws and
 * reads keys): `q` quits with exit 0 within a bound, also in the middle of a long -d
 * (the key is read between refreshes, not at the next one); while top runs the
 * terminal is non-canonical without echo, and after q, and after a SIGTERM, the
 * terminal has its settings back. With -j, every scanner and client carries its
 * percentiles as numbers (p50_ns/p99_ns, with p50_bound/p99_bound "le" or "gt"), null
 * exactly where the table prints "-", and the same bucket bound as the table's cell. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pty.h>
#include <utmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ctl_harness.h"

TestSuite(top, .init = ctl_test_init, .fini = ctl_test_fini, .timeout = 120);

/* q must end top within this (a hang bound a loaded machine does not reach; -d is 20
 * times longer: a top that only looks at keys when it refreshes, or not at all, fails) */
#define QUIT_BOUND_MS 30000
#define LONG_DELAY "600"

static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* garctl top on a pseudo-terminal; its output accumulates in out. */
struct pty_run {
	pid_t pid;
	int master;
	char *out;
	size_t len, cap;
	struct termios initial; /* the terminal's settings before garctl ran */
};

static void pty_start(struct pty_run *p, const char *ctl, const char *const *extra)
{
	const char *bin = getenv("GARCTL");
	cr_assert(bin && *bin, "GARCTL (path of garctl) is not set");
	char sockarg[160];
	snprintf(sockarg, sizeof(sockarg), "--socket=%s", ctl);
	const char *argv[16] = { "garctl", sockarg, "--no-pager" };
	int n = 3;
	for (int i = 0; extra[i]; i++) {
		cr_assert_lt(n, 15);
		argv[n++] = extra[i];
	}
	argv[n] = NULL;
	memset(p, 0, sizeof(*p));
	struct winsize ws = { .ws_row = 40, .ws_col = 120 };
	int slave;
	cr_assert_eq(openpty(&p->master, &slave, NULL, NULL, &ws), 0, "openpty: %s", strerror(errno));
	cr_assert_eq(tcgetattr(slave, &p->initial), 0);
	p->pid = fork(); /* forkpty, with the settings read before the child can change them */
	cr_assert_geq(p->pid, 0, "fork: %s", strerror(errno));
	if (p->pid == 0) {
		close(p->master);
		if (login_tty(slave) < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		unsetenv("GARUDA_CONTROL_SOCKET");
		unsetenv("GARUDA_SOCKET");
		unsetenv("PAGER");
		unsetenv("GARUDA_PAGER");
		setenv("TERM", "xterm", 1);
		execv(bin, (char *const *)argv);
		dprintf(2, "exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(slave);
	p->cap = 4096;
	p->out = calloc(1, p->cap);
	cr_assert_not_null(p->out);
}

/* Read what the child wrote for up to ms (less once it is gone); false at the
 * terminal's end (EIO: no process has the slave open). */
static bool pty_read(struct pty_run *p, int ms)
{
	struct pollfd pf = { .fd = p->master, .events = POLLIN };
	int r = poll(&pf, 1, ms);
	if (r <= 0)
		return true;
	char buf[4096];
	ssize_t k = read(p->master, buf, sizeof(buf));
	if (k <= 0)
		return false;
	if (p->len + (size_t)k + 1 > p->cap) {
		p->cap = 2 * (p->len + (size_t)k + 1);
		p->out = realloc(p->out, p->cap);
		cr_assert_not_null(p->out);
	}
	memcpy(p->out + p->len, buf, (size_t)k);
	p->len += (size_t)k;
	p->out[p->len] = 0;
	return true;
}

/* Read until the output holds `what` (deadline). */
static void pty_expect(struct pty_run *p, const char *what)
{
	double end = mono_ms() + CTL_DEADLINE_MS;
	while (!strstr(p->out, what)) {
		cr_assert_lt(mono_ms(), end, "no \"%s\" from garctl top on a terminal:\n%s", what, p->out);
		cr_assert(pty_read(p, 100), "the terminal ended before \"%s\":\n%s", what, p->out);
	}
}

/* Wait up to ms for the child to end, draining the terminal meanwhile. Returns the
 * wait status, or -1 (the child killed) when it outlived ms. */
static int pty_wait(struct pty_run *p, double ms)
{
	double end = mono_ms() + ms;
	for (;;) {
		int st;
		pid_t w = waitpid(p->pid, &st, WNOHANG);
		cr_assert_neq(w, -1, "waitpid: %s", strerror(errno));
		if (w == p->pid)
			return st;
		if (mono_ms() >= end) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &st, 0);
			return -1;
		}
		if (!pty_read(p, 20))
			usleep(10 * 1000);
	}
}

static void pty_free(struct pty_run *p)
{
	close(p->master);
	free(p->out);
	p->out = NULL;
}

static void expect_keys_mode(const struct pty_run *p)
{
	struct termios t;
	cr_assert_eq(tcgetattr(p->master, &t), 0);
	cr_assert_eq(t.c_lflag & (ICANON | ECHO), 0,
		     "top runs with the terminal still canonical or echoing (lflag %#x)", (unsigned)t.c_lflag);
	cr_assert(t.c_lflag & ISIG, "top turned off the keyboard's signals");
}

static void expect_restored(const struct pty_run *p, const char *after)
{
	struct termios t;
	cr_assert_eq(tcgetattr(p->master, &t), 0);
	cr_assert_eq(t.c_lflag, p->initial.c_lflag, "after %s the terminal's lflag is %#x, was %#x", after,
		     (unsigned)t.c_lflag, (unsigned)p->initial.c_lflag);
	cr_assert_eq(t.c_cc[VMIN], p->initial.c_cc[VMIN], "after %s: VMIN not restored", after);
	cr_assert_eq(t.c_cc[VTIME], p->initial.c_cc[VTIME], "after %s: VTIME not restored", after);
}

/* Wait (deadline) until the terminal is in top's mode: garctl sets it before its first
 * frame, but the frame's text can reach us first only if it set it before printing. */
static void wait_keys_mode(const struct pty_run *p)
{
	double end = mono_ms() + CTL_DEADLINE_MS;
	struct termios t;
	while (tcgetattr(p->master, &t) == 0 && (t.c_lflag & (ICANON | ECHO)) && mono_ms() < end)
		usleep(10 * 1000);
	expect_keys_mode(p);
}

Test(top, q_quits_on_a_terminal)
{
	struct ctl_fixture f;
	ctl_fixture_up(&f);
	struct pty_run p;
	/* a long delay: q has to be read between refreshes */
	pty_start(&p, f.d.ctl, (const char *const[]){ "top", "-d", LONG_DELAY, NULL });
	pty_expect(&p, "COMPL/S");
	pty_expect(&p, "CLIENT");
	cr_assert_not_null(strstr(p.out, "\033[H\033[2J"), "top on a terminal does not redraw in place:\n%s", p.out);
	wait_keys_mode(&p);
	double t0 = mono_ms();
	cr_assert_eq(write(p.master, "q", 1), 1);
	int st = pty_wait(&p, QUIT_BOUND_MS);
	double took = mono_ms() - t0;
	cr_assert_neq(st, -1, "garctl top did not quit within %d ms of q (-d " LONG_DELAY "):\n%s", QUIT_BOUND_MS,
		      p.out);
	cr_assert(WIFEXITED(st), "garctl top ended by signal %d on q", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	cr_assert_eq(WEXITSTATUS(st), 0, "garctl top exit %d on q:\n%s", WEXITSTATUS(st), p.out);
	cr_log_info("q -> exit 0 in %.0f ms", took);
	expect_restored(&p, "q");
	/* one frame: q came before the next refresh */
	int frames = 0;
	for (const char *s = p.out; (s = strstr(s, "\033[H\033[2J")); s++)
		frames++;
	cr_assert_eq(frames, 1, "%d frames for a q typed during the first -d " LONG_DELAY, frames);
	pty_free(&p);
	ctl_fixture_down(&f);
}

Test(top, other_keys_do_not_quit_q_does)
{
	struct ctl_fixture f;
	ctl_fixture_up(&f);
	struct pty_run p;
	pty_start(&p, f.d.ctl, (const char *const[]){ "top", "-d", "0.2", NULL });
	pty_expect(&p, "CLIENT");
	wait_keys_mode(&p);
	/* x (and a newline) reach garctl and do not end it: it keeps refreshing (a second
	 * at least, and until a frame came after x: how soon is the machine's business) */
	cr_assert_eq(write(p.master, "x\n", 2), 2);
	size_t before = p.len;
	double t0 = mono_ms(), end = t0 + 1000, hang = t0 + CTL_DEADLINE_MS;
	while (mono_ms() < end || (p.len == before && mono_ms() < hang)) {
		int st;
		cr_assert_eq(waitpid(p.pid, &st, WNOHANG), 0, "garctl top ended on x (status %#x):\n%s",
			     (unsigned)st, p.out);
		pty_read(&p, 20);
	}
	cr_assert_gt(p.len, before, "garctl top stopped refreshing after x");
	cr_assert_eq(write(p.master, "q", 1), 1);
	int st = pty_wait(&p, QUIT_BOUND_MS);
	cr_assert_neq(st, -1, "garctl top did not quit within %d ms of q", QUIT_BOUND_MS);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "garctl top on q: status %#x", (unsigned)st);
	expect_restored(&p, "q");
	pty_free(&p);
	ctl_fixture_down(&f);
}

Test(top, sigterm_restores_the_terminal)
{
	struct ctl_fixture f;
	ctl_fixture_up(&f);
	struct pty_run p;
	pty_start(&p, f.d.ctl, (const char *const[]){ "top", "-d", LONG_DELAY, NULL });
	pty_expect(&p, "CLIENT");
	wait_keys_mode(&p);
	cr_assert_eq(kill(p.pid, SIGTERM), 0);
	int st = pty_wait(&p, QUIT_BOUND_MS);
	cr_assert_neq(st, -1, "garctl top outlived SIGTERM by %d ms", QUIT_BOUND_MS);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "garctl top did not end by SIGTERM (status %#x)",
		  (unsigned)st);
	expect_restored(&p, "SIGTERM");
	pty_free(&p);
	ctl_fixture_down(&f);
}

/* ------------------------------------------------------------------- -j ---- */

/* A table cell ("<=2.0us", ">8.4ms", "-") as its bound: '<' for <=, '>' for >, 0 for
 * "-"; *ns the value in ns (to the cell's one decimal). */
static char cell_bound(const char *cell, double *ns)
{
	*ns = 0;
	if (strcmp(cell, "-") == 0)
		return 0;
	char kind = 0;
	const char *num = cell;
	if (strncmp(cell, "<=", 2) == 0) {
		kind = '<';
		num = cell + 2;
	} else if (cell[0] == '>') {
		kind = '>';
		num = cell + 1;
	}
	cr_assert(kind, "percentile cell \"%s\" is neither <=X, >X nor -", cell);
	char *unit;
	double v = strtod(num, &unit);
	double mult = strcmp(unit, "ns") == 0 ? 1 : strcmp(unit, "us") == 0 ? 1e3 : strcmp(unit, "ms") == 0 ? 1e6
		      : strcmp(unit, "s") == 0 ? 1e9 : -1;
	cr_assert_gt(mult, 0, "percentile cell \"%s\": unknown unit", cell);
	*ns = v * mult;
	return kind;
}

/* o's percentile `name` (p50, p99): numbers with a bound, or both null. Returns the
 * bound as cell_bound does. */
static char json_bound(const cJSON *o, const char *name, double *ns, const char *where)
{
	char key[32];
	snprintf(key, sizeof(key), "%s_ns", name);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	snprintf(key, sizeof(key), "%s_bound", name);
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert_not_null(v, "%s lacks %s_ns", where, name);
	cr_assert_not_null(b, "%s lacks %s_bound", where, name);
	/* numbers instead of the text ("<=2.0us"), not beside it */
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(o, name), "%s still has \"%s\"", where, name);
	*ns = 0;
	if (cJSON_IsNull(v)) {
		cr_assert(cJSON_IsNull(b), "%s: %s_ns is null but %s_bound is not", where, name, name);
		return 0;
	}
	cr_assert(cJSON_IsNumber(v), "%s: %s_ns is neither a number nor null", where, name);
	cr_assert(cJSON_IsString(b), "%s: %s_bound is not a string", where, name);
	cr_assert_geq(v->valuedouble, 0, "%s: %s_ns < 0", where, name);
	cr_assert_eq(v->valuedouble, floor(v->valuedouble), "%s: %s_ns %g is not whole ns", where, name,
		     v->valuedouble);
	*ns = v->valuedouble;
	if (strcmp(b->valuestring, "le") == 0) {
		cr_assert_gt(*ns, 0, "%s: %s_ns is 0 with bound le", where, name);
		return '<';
	}
	cr_assert_str_eq(b->valuestring, "gt", "%s: %s_bound", where, name);
	return '>';
}

/* The same percentile in JSON and in a table cell. */
static void same_percentile(const cJSON *o, const char *name, const char *cell, const char *where)
{
	double jns, tns;
	char jb = json_bound(o, name, &jns, where), tb = cell_bound(cell, &tns);
	cr_assert_eq(jb, tb, "%s %s: JSON bound %c, table \"%s\"", where, name, jb ? jb : '-', cell);
	/* the cell prints one decimal of its unit */
	cr_assert(fabs(jns - tns) <= 0.051 * (tns >= 1e9 ? 1e9 : tns >= 1e6 ? 1e6 : tns >= 1e3 ? 1e3 : 20),
		  "%s %s: JSON %.0f ns, table \"%s\"", where, name, jns, cell);
}

#define GARCTL(r, d, ...)                                                                   \
	do {                                                                                \
		char sockarg_[160];                                                         \
		snprintf(sockarg_, sizeof(sockarg_), "--socket=%s", (d)->ctl);              \
		const char *args_[] = { sockarg_, "--no-pager", __VA_ARGS__, NULL };        \
		ctl_garctl((r), args_);                                                     \
	} while (0)

/* The row of table t (from row `from` on) whose first column is key, after the header
 * row whose first column is header. */
static char **row_after(char ***t, const char *header, const char *key)
{
	size_t i = 0;
	while (t[i] && !(t[i][0] && strcmp(t[i][0], header) == 0))
		i++;
	cr_assert_not_null(t[i], "no %s table", header);
	char **r = ctl_table_find(t + i + 1, 0, key);
	cr_assert_not_null(r, "no %s row %s", header, key);
	for (int c = 0; c < 8; c++)
		cr_assert_not_null(r[c], "%s row %s is short", header, key);
	return r;
}

/* Column index of name in the header row whose first column is header. */
static int col_after(char ***t, const char *header, const char *name)
{
	size_t i = 0;
	while (t[i] && !(t[i][0] && strcmp(t[i][0], header) == 0))
		i++;
	cr_assert_not_null(t[i], "no %s table", header);
	int c = ctl_table_col(t + i, name);
	cr_assert_geq(c, 0, "the %s table has no column %s", header, name);
	return c;
}

Test(top, json_percentiles_are_numbers)
{
	struct ctl_fixture f;
	ctl_fixture_up(&f);
	struct ctl_run r, tr;
	/* nothing completes after the fixture: the first frame (everything since the
	 * daemon started) of -j and of the table cover the same histograms */
	GARCTL(&tr, &f.d, "top", "-b", "-n", "1");
	cr_assert_eq(tr.status, 0, "%s", tr.err);
	char ***t = ctl_table(tr.out);
	GARCTL(&r, &f.d, "-j", "top", "-n", "2", "-d", "0.2");
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	char *save = NULL, *copy = strdup(r.out);
	int lines = 0, numeric = 0;
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
		cJSON *j = cJSON_Parse(l);
		cr_assert(cJSON_IsObject(j), "line %d is not a JSON object: %s", lines, l);
		const cJSON *it;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "scanners"))
		{
			char where[64], key[24];
			double idx = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "index"));
			snprintf(where, sizeof(where), "frame %d scanner %.0f", lines, idx);
			snprintf(key, sizeof(key), "%.0f", idx);
			double p50, p99;
			char b50 = json_bound(it, "p50", &p50, where), b99 = json_bound(it, "p99", &p99, where);
			cr_assert_eq(!b50, !b99, "%s: p50 and p99 not both null", where);
			if (b50)
				cr_assert_leq(p50, p99, "%s: p50_ns %.0f > p99_ns %.0f", where, p50, p99);
			if (lines == 0) {
				numeric += b50 != 0;
				char **row = row_after(t, "SCANNER", key);
				same_percentile(it, "p50", row[6], where);
				same_percentile(it, "p99", row[7], where);
			} else {
				cr_assert_eq(b50, 0, "%s: no wake between the frames, yet p50_ns %.0f", where, p50);
			}
		}
		int nclients = 0;
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "clients_detail"))
		{
			char where[64], key[24];
			double id = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "id"));
			snprintf(where, sizeof(where), "frame %d client %.0f", lines, id);
			snprintf(key, sizeof(key), "%.0f", id);
			double p50, p99;
			char b50 = json_bound(it, "p50", &p50, where), b99 = json_bound(it, "p99", &p99, where);
			cr_assert_eq(!b50, !b99, "%s: p50 and p99 not both null", where);
			if (lines == 0) {
				char **row = row_after(t, "CLIENT", key);
				same_percentile(it, "p50", row[col_after(t, "CLIENT", "GAP50")], where);
				same_percentile(it, "p99", row[col_after(t, "CLIENT", "GAP99")], where);
			}
			nclients++;
		}
		cr_assert_eq(nclients, 2, "frame %d: %d clients", lines, nclients);
		cJSON_Delete(j);
	}
	cr_assert_eq(lines, 2, "top -j -n 2 printed %d lines:\n%s", lines, r.out);
	cr_assert_geq(numeric, 1, "the first frame has no numeric scanner percentile:\n%s", r.out);
	free(copy);
	ctl_table_free(t);
	ctl_run_free(&r);
	ctl_run_free(&tr);
	ctl_fixture_down(&f);
}
