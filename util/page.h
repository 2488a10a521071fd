/* page.h — page_size(): this host's page size, the unit a segment's size is rounded
 * to (proto/segment_layout.h's garuda_segment_bytes()), so that garudad and libgaruda
 * size a segment of N lines alike. */
#pragma once

#include <stddef.h>
#include <unistd.h>

static inline size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}
