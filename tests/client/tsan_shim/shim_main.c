/* shim_main.c — the test runner of the Criterion shim (see criterion/criterion.h):
 * runs every registered test, or those whose "suite::name" contains argv[1], in
 * registration order, with the suite's init and fini around each. Options Criterion
 * takes (--jobs=N, --verbose) are accepted and ignored. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
	int n = 0;
	for (struct shim_test *t = head; t; t = t->next) {
		char full[256];
		snprintf(full, sizeof(full), "%s::%s", t->suite, t->name);
		if (filter && !strstr(full, filter))
			continue;
		fprintf(stderr, "[RUN ] %s\n", full);
		if (t->opts->init)
			t->opts->init();
		t->fn();
		if (t->opts->fini)
			t->opts->fini();
		fprintf(stderr, "[PASS] %s\n", full);
		n++;
	}
	fprintf(stderr, "[====] %d tests passed\n", n);
	return 0;
}
