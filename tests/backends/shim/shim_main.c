/* shim_main.c — the runner for the Criterion shim (see criterion/criterion.h).
 * Runs every registered test in its own forked child, one after another; prints one
 * line per test; exits 1 when any test failed, crashed, timed out or exited non-zero.
 * Promises: a test's child never returns into the runner; the parent stays single-
 * threaded, so fork() is safe under ThreadSanitizer. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHIM_MAX_TESTS 256
#define SHIM_SKIP_EXIT 77

struct shim_test {
	const char *suite, *name;
	void (*fn)(void);
	const struct shim_suite *s;
};

static struct shim_test tests[SHIM_MAX_TESTS];
static int ntests;

void shim_register(const char *suite, const char *name, void (*fn)(void),
		   const struct shim_suite *s)
{
	if (ntests == SHIM_MAX_TESTS) {
		fprintf(stderr, "shim: too many tests\n");
		abort();
	}
	tests[ntests++] = (struct shim_test){ suite, name, fn, s };
}

void shim_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	fprintf(stderr, "%s:%d: assertion failed: %s", file, line, expr);
	if (*fmt) {
		va_list ap;
		va_start(ap, fmt);
		fputs(": ", stderr);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	fflush(stderr);
	_exit(1);
}

void shim_skip(const char *why)
{
	fprintf(stderr, "skipped: %s\n", why);
	fflush(stderr);
	_exit(SHIM_SKIP_EXIT);
}

int main(int argc, char **argv)
{
	const char *filter = argc > 1 ? argv[1] : NULL;
	int failed = 0, ran = 0;
	for (int i = 0; i < ntests; i++) {
		const struct shim_test *t = &tests[i];
		if (filter && !strstr(t->name, filter))
			continue;
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			alarm(t->s->timeout > 0 ? (unsigned)t->s->timeout : 60);
			if (t->s->init)
				t->s->init();
			t->fn();
			if (t->s->fini)
				t->s->fini();
			exit(0); /* exit, not _exit: sanitizers report at exit */
		}
		int st;
		while (waitpid(pid, &st, 0) < 0)
			;
		ran++;
		const char *verdict = "ok";
		if (WIFEXITED(st) && WEXITSTATUS(st) == SHIM_SKIP_EXIT)
			verdict = "skipped";
		else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			verdict = "FAILED", failed++;
		if (WIFSIGNALED(st))
			printf("[%s] %s::%s (signal %d%s)\n", verdict, t->suite, t->name, WTERMSIG(st),
			       WTERMSIG(st) == SIGALRM ? ": timeout" : "");
		else
			printf("[%s] %s::%s (exit %d)\n", verdict, t->suite, t->name, WEXITSTATUS(st));
	}
	printf("shim: %d tests, %d failed\n", ran, failed);
	return failed ? 1 : 0;
}
