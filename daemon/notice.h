/* notice.h — scanner threads tell the loop thread about things only the loop may act
 * on (it owns sessions): a DISARM's outcome, an overflowed outbox, an offending
 * client, a last reference to drop. A mutex-protected queue plus an eventfd the loop watches; the eventfd is
 * written only on the empty -> non-empty transition. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* NOTICE_ANSWER: the scanner answers a command for the client (DISARM; the drops of
 * SEGMENT_CLOSE and UNBIND, acknowledged only once applied: docs/protocol.md §4.5) */
enum notice_kind { NOTICE_ANSWER, NOTICE_OVERFLOW, NOTICE_OFFENDER, NOTICE_RELEASE };

/* NOTICE_RELEASE: a scanner's last reference on an object, for the loop to drop (the
 * destructors close client fds and unmap segments: loop thread only). */
enum notice_release { RELEASE_SINK, RELEASE_SEGMENT, RELEASE_BINDING };

struct notice {
	enum notice_kind kind;
	uint64_t session_id;
	uint64_t cookie; /* ANSWER */
	int code;        /* ANSWER: 0 (ACK) or -GARUDA_E_NOT_ARMED; OFFENDER: the (negative) error code */
	bool noreply;    /* ANSWER: no ACK */
	enum notice_release what; /* RELEASE */
	void *obj;                /* RELEASE: the sink, segment or binding */
};

struct notice_queue {
	pthread_mutex_t lock;
	struct notice *items;
	unsigned n, cap;
	bool lost; /* a push failed (out of memory) since the last take */
	int efd;
};

int notice_queue_init(struct notice_queue *q);
void notice_queue_destroy(struct notice_queue *q);
/* false when out of memory: the notice is dropped and logged, and the next take says
 * so (the loop is woken for it). */
bool notice_push(struct notice_queue *q, const struct notice *n);
/* Take all queued notices (caller frees *out). Returns the count. *lost: some were
 * dropped since the last take. What an OVERFLOW or an OFFENDER said is also in its
 * sink's flags (overflow, eventfd_broken), which the taker then reads in every session
 * (session_handle_notices): a READY lost to a full socket still ends in an OVERFLOW,
 * an offender still in its ERROR. A lost ANSWER is the client's request timing out. */
unsigned notice_take(struct notice_queue *q, struct notice **out, bool *lost);
