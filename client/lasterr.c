/* lasterr.c — garuda_last_error()'s text: one buffer per thread, written by the calls
 * that explain a failure in words (connect, segment open, stream creation) and read by
 * the application. Its own file so that client.c, segment.c and stream.c all depend
 * on it instead of on each other.
 *
 * Promises: never NULL, always NUL-terminated, truncated (never overrun) at 767 bytes;
 * a thread only ever sees its own text. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[768];

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
}

void client_append_error(const char *fmt, ...)
{
	size_t n = strlen(last_error);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error + n, sizeof(last_error) - n, fmt, ap);
	va_end(ap);
}

void client_clear_error(void)
{
	last_error[0] = '\0';
}
