/* shim_main.c — the test runner of the Criterion shim (see criterion/criterion.h):
 * runs every registered test, or those whose "suite::name" contains argv[1], in
 * registration order, each in a child process of its own (as Criterion does: a test
 * starts from a fresh process state) with the suite's init and fini around it. The
 * runner itself starts no thread, so forking is safe under TSan. Exit status 1 when
 * any test failed. Options Criterion takes (--jobs=N, --verbose) are ignored. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct shim_test *head, **tail = &head;

void shim_register(struct shim_test *t)
{
	*tail = t;
	tail = &t->next;
}

void shim_fail(const char *file, int line, const char *what, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "[FAIL] %s:%d: %s: ", file, line, what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	abort();
}

void shim_skip(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "[SKIP] ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	exit(0); /* each test runs in its own child: skipping ends only this one */
}

void shim_log(const char *level, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "[%s] ", level);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	const char *filter = NULL;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '-')
			filter = argv[i];
	int n = 0, failed = 0;
	for (struct shim_test *t = head; t; t = t->next) {
		char full[256];
		snprintf(full, sizeof(full), "%s::%s", t->suite, t->name);
		if (filter && !strstr(full, filter))
			continue;
		fprintf(stderr, "[RUN ] %s\n", full);
		fflush(stderr);
		pid_t pid = fork();
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0) {
			if (t->opts->init)
				t->opts->init();
			t->fn();
			if (t->opts->fini)
				t->opts->fini();
			exit(0); /* not _exit: TSan turns reports into the exit status at exit */
		}
		int st = 0;
		while (waitpid(pid, &st, 0) < 0)
			;
		bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		fprintf(stderr, "[%s] %s\n", ok ? "PASS" : "FAIL", full);
		failed += !ok;
		n++;
	}
	fprintf(stderr, "[====] %d tests, %d failed\n", n, failed);
	return failed ? 1 : 0;
}
