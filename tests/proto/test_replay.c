/* test_replay.c — garuda-replay's trace (proto/replay.h garuda_replay_trace_parse) and
 * the command itself (client/replay/garuda-replay.c, GARUDA_REPLAY: the built binary
 * run on small traces written to a temporary directory). The replay's simulation is
 * test_policy.c's.
 *
 * The trace's rules: comments and blank lines skipped whatever their length, line
 * numbers counted from 1 over every line, a header optional (a first line that starts
 * with a digit is a row), each field decimal digits alone, the times the simulation
 * can hold. The command: a malformed trace names its line, a replay that fails says
 * why, a ninth --plan is refused in words. And named points numbered by a sort: a
 * trace of 300,000 distinct points replays in well under a second (~14 s before).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdcheck.h"
#include "garudad.h"
#include "plan.h"
#include "replay.h"

TestSuite(replay, .init = fdcheck_begin, .fini = fdcheck_end);

static int parse(const char *text, struct garuda_replay_trace *t, char *msg, size_t len)
{
	return garuda_replay_trace_parse(text, strlen(text), t, msg, len);
}

/* ------------------------------------------------------------ the trace */

Test(replay, a_trace_with_a_header_comments_and_a_busy_bound)
{
	struct garuda_replay_trace t;
	char msg[160];
	const char *text =
		"# one stream\r\n# busy<=0.25\n\nword,point,arm_ns,store_ns\r\n"
		"1,0,1000,2000\n  \t\n 7 ,\t3 , 3000 ,4000\r\n18446744073709551615,4294967295,5,6";
	cr_assert_eq(parse(text, &t, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(t.n, 3);
	cr_assert_eq(t.busy_bound, 0.25);
	cr_assert_eq(t.rows[0].word, 1);
	cr_assert_eq(t.rows[0].arm_ns, 1000);
	cr_assert_eq(t.rows[0].store_ns, 2000);
	cr_assert_eq(t.rows[1].word, 7);
	cr_assert_eq(t.rows[1].point, 3);
	cr_assert_eq(t.rows[1].arm_ns, 3000);
	cr_assert_eq(t.rows[1].store_ns, 4000);
	cr_assert_eq(t.rows[2].word, UINT64_MAX);
	cr_assert_eq(t.rows[2].point, UINT32_MAX);
	garuda_replay_trace_free(&t);
	cr_assert_null(t.rows);
}

/* a first line that starts with a digit is a row: a trace without a header loses none
 * (before, its first row was taken for the header) */
Test(replay, a_trace_without_a_header_starts_with_a_row)
{
	struct garuda_replay_trace t;
	char msg[160];
	cr_assert_eq(parse("# no header\n1,0,1000,2000\n1,0,1000,3000\n", &t, msg, sizeof(msg)), 0,
		     "%s", msg);
	cr_assert_eq(t.n, 2);
	cr_assert_eq(t.rows[0].store_ns, 2000);
	garuda_replay_trace_free(&t);
	/* a header is a header whatever its words, and only the first line is one */
	cr_assert_eq(parse("w,p,a,s\n1,0,1,2\n", &t, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(t.n, 1);
	garuda_replay_trace_free(&t);
	cr_assert_eq(parse("word,point,arm_ns,store_ns\nword,point,arm_ns,store_ns\n1,0,1,2\n", &t,
			   msg, sizeof(msg)),
		     -EINVAL);
	cr_assert_str_eq(msg, "line 2: word: 'word' is not a decimal number");
	cr_assert_null(t.rows);
}

/* A comment longer than any buffer is one line: the header and rows after it are
 * where they are, and an error names its own line (before, fgets of 256 bytes split
 * it, took its tail for the header and the header for a malformed row) */
Test(replay, a_long_comment_is_one_line)
{
	size_t clen = 5000;
	char *text = malloc(clen + 200);
	cr_assert_not_null(text);
	text[0] = '#';
	memset(text + 1, 'x', clen - 1);
	strcpy(text + clen, "\nword,point,arm_ns,store_ns\n1,0,1000,2000\n");
	struct garuda_replay_trace t;
	char msg[160];
	cr_assert_eq(parse(text, &t, msg, sizeof(msg)), 0, "%s", msg);
	cr_assert_eq(t.n, 1);
	garuda_replay_trace_free(&t);
	strcat(text, "1,0,3000,2000\n");
	cr_assert_eq(parse(text, &t, msg, sizeof(msg)), -EINVAL);
	cr_assert_str_eq(msg, "line 4: store_ns is before arm_ns");
	free(text);
}

/* each field is decimal digits alone: no sign (strtoull's and %llu's "-5" is 2^64 - 5),
 * nothing after the number, four fields */
Test(replay, a_field_is_digits_alone)
{
	static const struct {
		const char *text;
		int r;
		const char *msg;
	} bad[] = {
		{ "h\n1,0,-5,-1\n", -EINVAL, "line 2: arm_ns: '-5' is not a decimal number" },
		{ "h\n1,0,1000,2000garbage\n", -EINVAL,
		  "line 2: store_ns: '2000garbage' is not a decimal number" },
		{ "h\n1,0,+1000,2000\n", -EINVAL,
		  "line 2: arm_ns: '+1000' is not a decimal number" },
		{ "h\n1,0,1 000,2000\n", -EINVAL,
		  "line 2: arm_ns: '1 000' is not a decimal number" },
		{ "h\n1,0,0x10,2000\n", -EINVAL, "line 2: arm_ns: '0x10' is not a decimal number" },
		{ "h\n1,0,,2000\n", -EINVAL, "line 2: arm_ns: '' is not a decimal number" },
		{ "h\n1,0,1000\n", -EINVAL, "line 2: expected word,point,arm_ns,store_ns" },
		{ "h\n1,0,1000,2000,5\n", -EINVAL, "line 2: expected word,point,arm_ns,store_ns" },
		{ "h\n1,4294967296,1000,2000\n", -ERANGE,
		  "line 2: point: '4294967296' is out of range" },
		{ "h\n18446744073709551616,0,1,2\n", -ERANGE,
		  "line 2: word: '18446744073709551616' is out of range" },
		{ "h\n1,0,4611686018427387905,4611686018427387905\n", -ERANGE,
		  "line 2: a time past 2^62 ns (146 years)" },
		{ "h\n1,0,0,3600000000001\n", -ERANGE,
		  "line 2: stored more than an hour after its arm" },
		{ "# only comments\n\nh\n", -EINVAL, "no completions" },
		{ "", -EINVAL, "no completions" },
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct garuda_replay_trace t;
		char msg[160];
		cr_assert_eq(parse(bad[i].text, &t, msg, sizeof(msg)), bad[i].r, "%s", bad[i].text);
		cr_assert_str_eq(msg, bad[i].msg, "%s", bad[i].text);
		cr_assert_null(t.rows);
		cr_assert_eq(t.n, 0);
	}
	/* a NUL byte is no end of the text */
	struct garuda_replay_trace t;
	char msg[160];
	static const char nul[] = "h\n1,0,1,2\n1,0,1\0,2\n";
	cr_assert_eq(garuda_replay_trace_parse(nul, sizeof(nul) - 1, &t, msg, sizeof(msg)),
		     -EINVAL);
	cr_assert_str_eq(msg, "line 3: a NUL byte");
	/* the limits themselves are taken */
	cr_assert_eq(parse("h\n1,0,4611686018427383504,4611686018427387904\n1,0,0,3600000000000\n",
			   &t, msg, sizeof(msg)),
		     0, "%s", msg);
	cr_assert_eq(t.n, 2);
	garuda_replay_trace_free(&t);
}

/* 300,000 rows, each its own named point: numbered by a sort, not a search per row
 * (~14 s of CPU on a build machine before, 0.25 s now). What it asserts is that they
 * all replay; the time is not asserted (a timed unit test breaks on a loaded machine
 * or under valgrind): a return to the search would show as this test's duration. */
Test(replay, many_named_points_replay_in_rows_log_rows)
{
	size_t n = 300000;
	struct garuda_replay_row *rows = calloc(n, sizeof(*rows));
	cr_assert_not_null(rows);
	for (size_t i = 0; i < n; i++)
		rows[i] = (struct garuda_replay_row){ .word = 1 + i % 4,
						      .point = 1 + (uint32_t)i,
						      .arm_ns = 1000000 + 1000 * i,
						      .store_ns = 1000000 + 1000 * i + 500 };
	struct garuda_plan plan;
	cr_assert_eq(garuda_plan_parse(GARUDA_PLAN_GARUDAD_DEFAULT, &plan, NULL, 0), 0);
	struct garuda_replay_cost cost = garuda_replay_default_cost();
	struct garuda_replay_result r;
	cr_assert_eq(garuda_replay_run(&plan, rows, n, &cost, &r), 0);
	cr_assert_eq(r.completions, n);
	free(rows);
}

/* ---------------------------------------------------------- the command */

static char dir[64];

static void dir_make(void)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/garuda-replay-XXXXXX",
		 tmp && strlen(tmp) < 30 ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(dir));
}

static void dir_remove(const char *const *names, unsigned n)
{
	char path[128];
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* dir/name with text; its path into path */
static void write_trace(const char *name, const char *text, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, name);
	FILE *f = fopen(path, "we");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0, true);
	cr_assert_eq(fclose(f), 0);
}

/* run argv (argv[0]: the binary), its address space limited to as_bytes (0: not);
 * stdout and stderr together into out; the exit status */
static int run(const char *const *argv, size_t as_bytes, char *out, size_t cap)
{
	int st = gd_run_argv(argv, &(struct gd_run_opts){ .timeout_ms = GD_DEADLINE_MS,
							  .as_bytes = as_bytes }, out, cap);
	cr_assert_geq(st, 0, "cannot run %s: %s", argv[0], strerror(-st));
	cr_log_info("%s:\n%s", argv[0], out);
	return st;
}

/* a long comment, no header, strict fields: what the command reads, and the line its
 * error names */
Test(replay, command_reads_the_trace_line_by_line)
{
	dir_make();
	char good[128], bad[128], junk[128], out[8192];
	char *text = malloc(1000);
	cr_assert_not_null(text);
	text[0] = '#';
	memset(text + 1, 'y', 599);
	strcpy(text + 600, "\n1,0,1000000,1500000\n1,0,2000000,2600000\n1,0,3000000,3700000\n");
	write_trace("good.csv", text, good, sizeof(good));
	strcat(text, "1,0,4000000,3000000\n");
	write_trace("bad.csv", text, bad, sizeof(bad));
	free(text);
	write_trace("junk.csv", "word,point,arm_ns,store_ns\n1,0,1000,2000garbage\n", junk,
		    sizeof(junk));
	const char *a1[] = { GARUDA_REPLAY, good, NULL };
	cr_assert_eq(run(a1, 0, out, sizeof(out)), 0, "%s", out);
	/* all three rows: none taken for a header */
	cr_assert_not_null(strstr(out, "good.csv                     poll            3 "), "%s",
			   out);
	const char *a2[] = { GARUDA_REPLAY, bad, NULL };
	cr_assert_eq(run(a2, 0, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "bad.csv: line 5: store_ns is before arm_ns\n"), "%s", out);
	const char *a3[] = { GARUDA_REPLAY, junk, NULL };
	cr_assert_eq(run(a3, 0, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(
		strstr(out, "junk.csv: line 2: store_ns: '2000garbage' is not a decimal number"),
		"%s", out);
	static const char *const names[] = { "good.csv", "bad.csv", "junk.csv" };
	dir_remove(names, 3);
}

/* a replay that fails (here out of memory: 100,000 words of ~3.7 KB each under a
 * 192 MiB address space) says so, naming the trace and the plan; before, exit 2
 * without a word */
Test(replay, command_says_why_a_replay_failed)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	cr_skip_test("a sanitizer's build maps terabytes of shadow memory: it cannot start under "
		     "the address-space limit that runs the replay out of memory");
#endif
	dir_make();
	size_t n = 100000;
	char *text = malloc(40 * n + 64), path[128], out[8192];
	cr_assert_not_null(text);
	size_t len = (size_t)sprintf(text, "word,point,arm_ns,store_ns\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(text + len, "%zu,0,%zu,%zu\n", i + 1, 1000000 + 1000 * i,
				       1500000 + 1000 * i);
	write_trace("words.csv", text, path, sizeof(path));
	free(text);
	const char *argv[] = { GARUDA_REPLAY, path, NULL };
	cr_assert_eq(run(argv, 192u << 20, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "words.csv: replaying poll: out of memory\n"), "%s", out);
	static const char *const names[] = { "words.csv" };
	dir_remove(names, 1);
}

/* up to 8 plans; a ninth is refused in words (before: the bare usage line) */
Test(replay, command_refuses_a_ninth_plan)
{
	dir_make();
	char path[128], out[8192];
	write_trace("t.csv", "1,0,1000,2000\n", path, sizeof(path));
	const char *argv[12] = { GARUDA_REPLAY };
	for (unsigned i = 1; i <= 8; i++)
		argv[i] = "--plan=poll";
	argv[9] = path;
	cr_assert_eq(run(argv, 0, out, sizeof(out)), 0, "%s", out);
	cr_assert_not_null(strstr(out, "plan 8: poll\n"), "%s", out);
	argv[9] = "--plan=poll";
	argv[10] = path;
	cr_assert_eq(run(argv, 0, out, sizeof(out)), 2, "%s", out);
	cr_assert_not_null(strstr(out, "garuda-replay: --plan=poll: at most 8 --plan\n"), "%s",
			   out);
	static const char *const names[] = { "t.csv" };
	dir_remove(names, 1);
}
