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
