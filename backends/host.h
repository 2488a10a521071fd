/* host.h — the host backend's view of host streams: the public API
 * (<garuda/host.h>) plus the store item that the backend's enqueue_store() queues. */
#pragma once

#include <stdint.h>

#include <garuda/host.h>

/* Release-store value into *word after the items before it. word must be 8-aligned.
 * (The host backend's enqueue_store() checks the word against a registration and
 * lands here.) */
int garuda_host_stream_enqueue_store(struct garuda_host_stream *s, uint64_t *word,
				     uint64_t value);

/* Every failing return of a public host-stream call (<garuda/host.h>) goes through
 * fail (libgaruda installs its client_fail() when it is loaded, so that these calls
 * keep garuda_last_error()'s contract); NULL, the default: returned as they are. The
 * backend's own uses of a host stream never go through it. */
void host_stream_on_fail(int (*fail)(int code));
