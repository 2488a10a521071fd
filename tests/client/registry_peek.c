/* registry_peek.c — the proto registry as garuda's own sources see it, in a
 * translation unit of its own (the public header repeats it, and must agree). */
#include <stddef.h>

#include "errcode.h"
#include "registry_peek.h"

const char *peek_registry_name(int code)
{
	return garuda_errcode_name(code);
}

int peek_registry_count(void)
{
	int n = 0;
	while (garuda_errcode_known(GARUDA_ERR_BASE + n))
		n++;
	return n;
}
