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

/* session_out.c: queue m (and fd, or -1) on the session's socket; replies; end the
 * session with an ERROR (protocol violations, offenders) */
void session_send(struct session *s, const struct garuda_msg *m, int fd);
void reply_error(struct session *s, uint64_t cookie, int code, const char *text);
/* NOT_ARMED answering a DISARM: sent, not counted in the errors */
void reply_not_armed(struct session *s, uint64_t cookie);
void reply_ack(struct session *s, const struct garuda_msg *req);
void fail_session(struct session *s, uint64_t cookie, int code, const char *text);

/* session_out.c: the wire's form of an error (a registry code positive, an errno
 * negative: the one conversion), and the daemon's count of it */
void session_error_msg(struct garuda_msg *m, uint64_t cookie, int code, const char *text);
void session_count_error(struct daemon *d, int code);
/* session_out.c: charge the session's account (its own, its uid's, its cgroup's);
 * on a refusal session_quota_why has the words (the loop thread's last); give back */
extern char session_quota_why[];
int session_charge(struct session *s, enum quota_kind k, uint64_t n);
void session_release_quota(struct session *s, enum quota_kind k, uint64_t n);

/* session_out.c: the one log line of a re-attaching session (what it presented again)
 * and how its re-attach ended (", quiet", ", then closed") */
void session_log_reattached(struct session *s, const char *how);
