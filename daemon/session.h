/* session.h — the session object: one client connection's state (its credentials,
 * what it holds: segments, bindings; its armed descriptors live in the scanners), its
 * outbox and the replies, ERRORs and failure it sends, its quota account, what it is
 * (session_describe) and its end (session_close, session_reap). Defined in session.c,
 * the session module's lowest layer: the requests (session_req.h) and the connection
 * (session_conn.h) build on it, and it includes neither.
 *
 * Threads: the loop thread owns the session and everything in it. The scanners write
 * READY to its socket through the sink (sink.h), which the session holds one reference
 * of; session_close() drops that reference (the socket closes with the sink's last
 * one, on the loop thread: a scanner hands its last references over as notices) and
 * session_reap(), at the end of the loop iteration, frees the struct.
 *
 * Promises: a peer that does not drain its socket is disconnected once its outbox
 * passes its quota; a failed session sends its ERROR before it closes, holding
 * nothing but its socket meanwhile; when a session ends, everything it held is
 * released (scanners drop its descriptors) and its account is given back, except the
 * quota of segments whose SEGMENT reply (and memfd) the client may not have read:
 * that stays charged, with its connection, until the client has read everything it
 * was sent or closed its socket (session_hold_tick looks every SESSION_HOLD_TICK_MS).
 * A segment's pages are never alive in a client's socket uncharged. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"
#include "keymap.h"
#include "quota.h"
#include "segment.h"
#include "sink.h"
#include "wire.h"

struct outmsg {
	struct outmsg *next;
	size_t len;
	int fd; /* rides along, or -1 */
	uint32_t segment_id; /* a SEGMENT reply's segment (0: none): its SEGMENT_CLOSE drops it */
	bool overflow; /* the READY{OVERFLOW} (clears overflow_queued when it leaves) */
	uint8_t buf[];
};

/* What a queued message costs the outbox quota: its bytes and its bookkeeping (an ACK
 * of 24 bytes takes 56 of heap) */
static inline uint64_t outmsg_cost(size_t len)
{
	return sizeof(struct outmsg) + len;
}

struct session {
	struct daemon *d;
	uint64_t id;
	struct sink *sink; /* owns the socket */
	int fd;            /* = sink->fd */
	/* w_in: NULL while garudad does not read it: paused for its untaken ARMs
	 * (session_conn.c pause_reading; sink.h), or its holdings released */
	struct loop_watch *w_in, *w_out;
	bool released; /* release_holdings() ran: it reads nothing more, arms nothing */
	/* the connecting process's pidfd (SO_PEERPIDFD, Linux 6.5; -1: none) and its
	 * watch: the session ends when that process exits, whoever else holds the socket
	 * (a fork()ed child) */
	int pidfd;
	struct loop_watch *w_pid;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char comm[17];
	bool welcomed;
	bool closed; /* session_close() ran; freed by session_reap() */
	bool lingering; /* failed: holds only its socket until its ERROR is sent */
	bool overflow_queued;
	uint64_t connected_ns;
	struct segment *segments;
	uint32_t next_segment_id;
	/* its bindings (each on its segment's list: struct segment bindings) by slot (session_binding_key(): segment id << 32 | index), so
	 * that an eventfd-form ARM finds its binding in O(1), not O(bindings) */
	struct garuda_keymap binding_index;
	struct outmsg *out_head, *out_tail;
	uint64_t arms, errors;
	/* SEGMENT replies carrying a memfd (session_send_segment), queued or sent, and
	 * fds_sent as it was when garudad last saw the client had read everything it was
	 * sent (its outbox empty and SIOCOUTQ 0). A segment released while its reply may
	 * be unread leaves its quota charged (held_*) until then: unread, the reply keeps
	 * the memfd and its pages alive in the client's socket. */
	uint64_t fds_sent, fds_read;
	uint32_t held_segments;
	uint64_t held_lines;
	/* the datagram being handled: the kernel's stamp of when its sender sent it
	 * (CLOCK_REALTIME: fdio_stamp_sends; 0: none, or outside take_datagram()). An
	 * ARM's wait starts there (post_arm): a loop thread that read it late does not
	 * shorten the kernel's residual by its own delay. */
	uint64_t rx_sent_ns;
	/* a re-attaching session (its first SEGMENT_ATTACH): what it presented again, logged
	 * in one line once it sent no ATTACH/BIND/ARM for REATTACH_QUIET_MS */
	bool reattach_pending;
	uint32_t reattached_segments, rebound, rearmed;
	uint64_t reattach_last_ns;
	struct session *next, *prev;
	struct session *hnext; /* d->by_id chain */
};

struct session *session_find(struct daemon *d, uint64_t id);

/* What a session is and holds, at one moment: the one description QUERY (its stable
 * keys, docs/protocol.md §4.14) and the control plane's `clients` both render. */
struct session_view {
	uint64_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	const char *comm;
	const char *cgroup; /* NULL: no cgroup key */
	uint64_t connected_ns;
	unsigned segments, bindings;
	uint64_t lines, armed, arms, points, errors;
	uint64_t counters[SN_COUNT_]; /* proto/counters.h's session table */
	uint64_t outbox_bytes;
	bool overflow;
	struct form_counts by_form;
	uint64_t detect_hist[GARUDA_LAT_BUCKETS];
};
void session_describe(const struct session *s, struct session_view *v);
/* Its binding of a slot, or NULL: through binding_index, O(1) (an eventfd-form ARM,
 * BIND's duplicate check, the control plane's lines). */
static inline uint64_t session_binding_key(uint32_t segment_id, uint32_t index)
{
	return (uint64_t)segment_id << 32 | index;
}
struct binding *session_binding(const struct session *s, uint32_t segment_id, uint32_t index);

/* Queue m (and fd, which stays the caller's, or -1) on the session's socket: sent now,
 * or behind what is queued. */
void session_send(struct session *s, const struct garuda_msg *m, int fd);
/* The segment is closed: its SEGMENT reply, still queued (a client that does not read),
 * goes unsent, and with it the memfd it holds (the segment's quota is given back at
 * close: a queued copy of its memfd must not outlive that, or a client opening and
 * closing without reading would pin memory no quota counts). */
void session_unsend_segment(struct session *s, struct segment *g);
/* The SEGMENT reply m of a segment the daemon created, with its memfd (counted in
 * fds_sent: g->reply_no). */
void session_send_segment(struct session *s, struct segment *g, const struct garuda_msg *m);
/* g leaves the session (SEGMENT_CLOSE, the session's end; g is unref'd by the
 * caller): its quota (one segment, its lines) is given back, or held while its
 * SEGMENT reply may be unread. */
void session_release_segment(struct session *s, struct segment *g);
/* Has the client read everything it was sent (its outbox empty, SIOCOUTQ 0)? Then what
 * was held for unread SEGMENT replies is given back. true: nothing is held. */
bool session_unread_check(struct session *s);
#define SESSION_HOLD_TICK_MS 50
/* The hold timer (d->hold_fd) fired: look at the sessions that hold, and at the ended
 * sessions' holds; re-armed while any remains. */
void session_hold_tick(struct daemon *d);
/* Shutdown: give back every ended session's hold. */
void session_holds_free(struct daemon *d);
void reply_error(struct session *s, uint64_t cookie, int code, const char *text);
/* NOT_ARMED answering a DISARM: sent, not counted in the errors */
void reply_not_armed(struct session *s, uint64_t cookie);
void reply_ack(struct session *s, const struct garuda_msg *req);
/* End the session with an ERROR (protocol violations, offenders). */
void fail_session(struct session *s, uint64_t cookie, int code, const char *text);

/* The wire's form of an error (a registry code positive, an errno negative: the one
 * conversion), and the daemon's count of it. */
void session_error_msg(struct garuda_msg *m, uint64_t cookie, int code, const char *text);
void session_count_error(struct daemon *d, int code);

/* Charge the session's account (its own, its uid's, its cgroup's); on a refusal
 * session_quota_why has the words (the loop thread's last); give back. */
extern char session_quota_why[];
int session_charge(struct session *s, enum quota_kind k, uint64_t n);
void session_release_quota(struct session *s, enum quota_kind k, uint64_t n);

/* The one log line of a re-attaching session (what it presented again) and how its
 * re-attach ended (", quiet", ", then closed"). */
void session_log_reattached(struct session *s, const char *how);

/* End a session: release what it holds, close its socket; freed by session_reap(). */
void session_close(struct session *s);
void session_close_all(struct daemon *d);
/* Free the sessions closed during this loop iteration (callers up the stack may have
 * held them until then). */
void session_reap(struct daemon *d);
