/* registry_peek.c — the proto registry and host.h as garuda's own sources see them, in
 * a translation unit of their own (the public header repeats both, and must agree). */
#include <stddef.h>

#include "errcode.h"
#include "host.h"
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

void peek_host_config(size_t out[4])
{
	out[0] = sizeof(struct garuda_host_stream_config);
	out[1] = offsetof(struct garuda_host_stream_config, depth);
	out[2] = offsetof(struct garuda_host_stream_config, spin_ns);
	out[3] = offsetof(struct garuda_host_stream_config, nonblock);
}
