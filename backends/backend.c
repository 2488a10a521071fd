/* backend.c — the registry of backends: maps a name ("host", "cuda", "hip") to its
 * operations table (backend.h). Promises: pure lookup, exact and case-sensitive
 * match, NULL for anything else; loads no runtime (that happens at open()). */
#include <stddef.h>
#include <string.h>

#include "backend.h"

static const struct garuda_backend_ops *const backends[] = {
	&garuda_backend_host,
	&garuda_backend_cuda,
	&garuda_backend_hip,
};

const struct garuda_backend_ops *garuda_backend_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}
