/* session_internal.h — what the connection (session.c) and the requests
 * (session_req.c) share inside the session module. Loop thread. */
#pragma once

#include <stdint.h>

#include "quota.h"
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

/* The handler of a request type, or NULL: not a request (session_req.c). */
const struct request_handler *session_request(uint8_t type);

/* session.c: queue m (and fd, or -1) on the session's socket; replies; end the
 * session with an ERROR (protocol violations, offenders) */
void session_send(struct session *s, const struct garuda_msg *m, int fd);
void reply_error(struct session *s, uint64_t cookie, int code, const char *text);
/* NOT_ARMED answering a DISARM: sent, not counted in the errors */
void reply_not_armed(struct session *s, uint64_t cookie);
void reply_ack(struct session *s, const struct garuda_msg *req);
void fail_session(struct session *s, uint64_t cookie, int code, const char *text);

/* session_req.c: give back quota the session holds */
void session_release_quota(struct session *s, enum quota_kind k, uint64_t n);
