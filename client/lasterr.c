/* lasterr.c — garuda_last_error()'s text: one buffer per thread, written by the calls
 * that explain a failure in words (connect, segment open, stream creation, a request
 * garudad refused with words) and read by the application. Its own file so that
 * client.c, segment.c and stream.c all depend on it instead of on each other.
 *
 * Promises: never NULL, always NUL-terminated, truncated (never overrun) at 767 bytes;
 * a thread only ever sees its own text. Every failing return of a public call (the
 * host streams' included) goes through client_fail(), which leaves the call's own
 * words, or "" when it wrote none: never an older failure's. Words are written only on
 * the way to a failure (the requests a call makes on its way out use conn_tell_gen()),
 * so a call that succeeds leaves the text as it was; a connect that succeeds clears it.
 * client_debug() writes one line to stderr when $GARUDA_DEBUG is set (and not "0"):
 * what the library chose (docs/client.md). */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h" /* host_stream_on_fail() */

static _Thread_local char last_error[768];
/* words were written since the thread's last client_fail() or client_clear_error() */
static _Thread_local bool explained;

const char *garuda_last_error(void)
{
	return last_error;
}

void client_set_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	explained = true;
}

void client_append_error(const char *fmt, ...)
{
	size_t n = strlen(last_error);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error + n, sizeof(last_error) - n, fmt, ap);
	va_end(ap);
	explained = true;
}

void client_clear_error(void)
{
	last_error[0] = '\0';
	explained = false;
}

int client_fail(int code)
{
	if (!explained)
		last_error[0] = '\0';
	explained = false;
	return code;
}

/* The host streams' public calls are libgaruda's as well: their failures go through
 * client_fail() too. backends/ calls nothing of client/, so libgaruda hands it over
 * once, when it is loaded (before any thread of it runs). */
__attribute__((constructor)) static void host_streams_fail_here(void)
{
	host_stream_on_fail(client_fail);
}

void client_debug(const char *fmt, ...)
{
	const char *env = getenv("GARUDA_DEBUG");
	if (!env || !*env || strcmp(env, "0") == 0)
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "libgaruda: %s\n", line);
}
