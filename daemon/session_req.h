/* session_req.h — the client request table (session_req.c): per request type its
 * handler, the state it is valid in and the fds it takes; the connection
 * (session_conn.c) dispatches through it. Loop thread.
 *
 * Promises: a handler acts only on a decoded, validated message in its state; quotas
 * are charged before anything is allocated. */
#pragma once

#include <stdint.h>

#include "session.h"
#include "wire.h"

enum session_state {
	ST_NEW,
	ST_WELCOMED
}; /* before / after HELLO */

/* One client request: its handler, the state it is valid in, and the fds it takes
 * (fds[0..nfds): the handler sets fds[i] = -1 for one it keeps; the rest are closed
 * after it returns). The decoder has already checked the fd count per type. */
struct request_handler {
	void (*fn)(struct session *s, const struct garuda_msg *m, int *fds);
	enum session_state state;
	uint8_t nfds;
};

/* The handler of a request type, or NULL: not a request. */
const struct request_handler *session_request(uint8_t type);
