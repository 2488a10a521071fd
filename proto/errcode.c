/* errcode.c — lookup over the registry in errcode.h. */
#include "errcode.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

struct errcode_entry {
	int code;
	const char *name;
	const char *message;
};

static const struct errcode_entry registry[] = {
#define GARUDA_ERR_ROW_(name, num, msg) { num, #name, msg },
	GARUDA_ERRCODES(GARUDA_ERR_ROW_)
#undef GARUDA_ERR_ROW_
};

/* The public enum is generated from the table (scripts/gen-errcodes.py): a stale
 * proto/include/garuda/errcodes.h fails the build here, not at a user. */
#define GARUDA_ERR_SAME_(name, num, msg) \
	_Static_assert(GARUDA_E_##name == (num), "errcodes.h is stale: run scripts/gen-errcodes.py");
GARUDA_ERRCODES(GARUDA_ERR_SAME_)
#undef GARUDA_ERR_SAME_

static const struct errcode_entry *lookup(int code)
{
	if (code < GARUDA_ERR_BASE)
		return NULL; /* also keeps code - BASE from overflowing for INT_MIN */
	size_t i = (size_t)(code - GARUDA_ERR_BASE);
	if (i >= sizeof(registry) / sizeof(registry[0]))
		return NULL;
	return &registry[i];
}

bool garuda_errcode_known(int code)
{
	return lookup(code) != NULL;
}

const char *garuda_errcode_name(int code)
{
	const struct errcode_entry *e = lookup(code);
	return e ? e->name : NULL;
}

const char *garuda_strerror(int err)
{
	if (err == 0)
		return "success"; /* a return value of 0, printed as is (issue 30, item 16) */
	if (err == INT_MIN)
		return "unknown error";
	int code = err < 0 ? -err : err;
	const struct errcode_entry *e = lookup(code);
	if (e)
		return e->message;
	if (err < 0 && code < GARUDA_ERR_BASE)
		return strerrordesc_np(code) ? strerrordesc_np(code) : "unknown error";
	return "unknown error";
}
