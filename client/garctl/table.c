/* table.c — garctl's output helpers: aligned tables (a header row as the legend, as
 * busctl prints them), the pager (less, as busctl starts it), JSON printing, and the
 * small formatters the commands share.
 *
 * Promises: nothing a client chose (a comm, a string from the daemon) reaches the
 * terminal unsanitized: control and non-ASCII bytes are printed as '?'. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control_names.h"
#include "garctl.h"

struct table {
	unsigned ncols;
	char **headers;
	bool *right;
	char **cells; /* row-major */
	size_t ncells, cap;
};

void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

struct table *table_new(unsigned ncols, const char *const *headers)
{
	struct table *t = calloc(1, sizeof(*t));
	if (!t)
		abort();
	t->ncols = ncols;
	t->headers = calloc(ncols, sizeof(char *));
	t->right = calloc(ncols, sizeof(bool));
	if (!t->headers || !t->right)
		abort();
	for (unsigned i = 0; i < ncols; i++)
		if (!(t->headers[i] = strdup(headers[i])))
			abort();
	return t;
}

void table_right(struct table *t, unsigned col)
{
	if (col < t->ncols)
		t->right[col] = true;
}

void table_cell(struct table *t, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	sanitize(s);
	if (t->ncells == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->cells = realloc(t->cells, t->cap * sizeof(char *));
		if (!t->cells)
			abort();
	}
	t->cells[t->ncells++] = s;
}

size_t table_rows(const struct table *t)
{
	return t->ncells / t->ncols;
}

static void print_row(const struct table *t, FILE *f, char *const *row, const size_t *width)
{
	for (unsigned c = 0; c < t->ncols; c++) {
		bool last = c + 1 == t->ncols;
		int w = (int)width[c];
		if (t->right[c])
			fprintf(f, "%*s", w, row[c]);
		else if (last)
			fputs(row[c], f); /* no trailing blanks */
		else
			fprintf(f, "%-*s", w, row[c]);
		fputs(last ? "\n" : " ", f);
	}
}

void table_print(const struct table *t, FILE *f, bool legend)
{
	size_t *width = calloc(t->ncols, sizeof(size_t));
	if (!width)
		abort();
	for (unsigned c = 0; c < t->ncols; c++)
		width[c] = legend ? strlen(t->headers[c]) : 0;
	size_t rows = table_rows(t);
	for (size_t r = 0; r < rows; r++)
		for (unsigned c = 0; c < t->ncols; c++) {
			size_t n = strlen(t->cells[r * t->ncols + c]);
			if (n > width[c])
				width[c] = n;
		}
	if (legend)
		print_row(t, f, t->headers, width);
	for (size_t r = 0; r < rows; r++)
		print_row(t, f, t->cells + r * t->ncols, width);
	free(width);
}

void table_free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	for (unsigned i = 0; i < t->ncols; i++)
		free(t->headers[i]);
	free(t->cells);
	free(t->headers);
	free(t->right);
	free(t);
}

/* ---------------- pager ---------------- */

static pid_t pager_pid = -1;

void pager_open(const struct options *o)
{
	if (!o->pager || !isatty(STDOUT_FILENO))
		return;
	const char *pager = getenv("GARUDA_PAGER");
	if (!pager)
		pager = getenv("PAGER");
	if (pager && (!*pager || strcmp(pager, "cat") == 0))
		return;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		dup2(p[0], STDIN_FILENO);
		setenv("LESS", "FRSXMK", 0); /* quit if one screen, raw colours, no init */
		if (pager)
			execl("/bin/sh", "sh", "-c", pager, (char *)NULL);
		execlp("less", "less", (char *)NULL);
		execlp("more", "more", (char *)NULL);
		char buf[4096]; /* no pager at all: copy through */
		ssize_t n;
		while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0)
			if (write(STDOUT_FILENO, buf, (size_t)n) != n)
				break;
		_exit(0);
	}
	dup2(p[1], STDOUT_FILENO);
	close(p[0]);
	close(p[1]);
	pager_pid = pid;
}

void pager_close(void)
{
	if (pager_pid < 0)
		return;
	fflush(stdout);
	close(STDOUT_FILENO);
	while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
		;
	pager_pid = -1;
}

/* ---------------- JSON ---------------- */

/* cJSON_Print indents with tabs and puts a tab after each key's colon; pretty output is
 * indented by 2 spaces, "key": value. A raw tab in cJSON's text is always layout (a tab
 * inside a string is escaped as \t). */
static void put_pretty(const char *s)
{
	bool line_start = true;
	for (; *s; s++) {
		if (*s == '\t')
			fputs(line_start ? "  " : " ", stdout);
		else
			fputc(*s, stdout);
		line_start = *s == '\n' || (line_start && *s == '\t');
	}
}

void print_json(const cJSON *j, enum json_mode mode)
{
	char *s = mode == JSON_PRETTY ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
	if (s) {
		if (mode == JSON_PRETTY)
			put_pretty(s);
		else
			fputs(s, stdout);
		fputc('\n', stdout);
	}
	free(s);
}

double jnum(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) && v->valuestring ? v->valuestring : "-";
}

const cJSON *jarr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsArray(v) ? v : NULL;
}

/* ---------------- formatting ---------------- */

void fmt_ns(char *buf, size_t len, double ns)
{
	if (ns < 1e3)
		snprintf(buf, len, "%.0fns", ns);
	else if (ns < 1e6)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, len, "%.1fms", ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", ns / 1e9);
}

enum pct_bound percentile_bound(const cJSON *latency, const double *counts, double p, double *ns)
{
	const cJSON *buckets = jarr(latency, CTL_KEY_BUCKETS);
	int n = buckets ? cJSON_GetArraySize(buckets) : 0;
	double total = 0;
	*ns = 0;
	for (int i = 0; i < n; i++)
		total += counts ? counts[i] : jnum(cJSON_GetArrayItem(buckets, i), "count");
	if (total <= 0)
		return PCT_NONE;
	double rank = ceil(p * total), cum = 0, prev_le = 0;
	if (rank < 1)
		rank = 1;
	for (int i = 0; i < n; i++) {
		const cJSON *b = cJSON_GetArrayItem(buckets, i);
		cum += counts ? counts[i] : jnum(b, CTL_KEY_COUNT);
		const cJSON *le = cJSON_GetObjectItemCaseSensitive(b, CTL_KEY_LE_NS);
		if (cum >= rank) {
			if (cJSON_IsNumber(le)) {
				/* an upper bound, said as one: the bucket's upper edge */
				*ns = le->valuedouble;
				return PCT_LE;
			}
			*ns = prev_le; /* the open last bucket: above the last edge */
			return PCT_GT;
		}
		if (cJSON_IsNumber(le))
			prev_le = le->valuedouble;
	}
	return PCT_NONE;
}

void fmt_percentile(char *buf, size_t len, const cJSON *latency, const double *counts, double p)
{
	double ns;
	char t[32];
	switch (percentile_bound(latency, counts, p, &ns)) {
	case PCT_LE:
		fmt_ns(t, sizeof(t), ns);
		snprintf(buf, len, "<=%s", t);
		break;
	case PCT_GT:
		fmt_ns(t, sizeof(t), ns);
		snprintf(buf, len, ">%s", t);
		break;
	default:
		snprintf(buf, len, "-");
	}
}
