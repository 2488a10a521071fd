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
enum notice_kind { NOTICE_ANSWER, NOTICE_OVERFLOW, NOTICE_OFFENDER, NOTICE_RELEASE, NOTICE_RESUME };
/* NOTICE_RESUME: a scanner took enough of a paused session's ARMs (sink.h sink_taken):
 * read its requests again. */

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
	/* answers owed: each has a place in items already (cap >= n + reserved), so an
	 * ANSWER is never lost to memory; the loop reserves it when it posts the command
	 * (notice_reserve), the scanner spends it (notice_push_answer) */
	unsigned reserved;
	bool lost; /* a push failed (out of memory) since the last take */
	int efd;
	/* the loop thread's: the array it took last, handed back at the next take in
	 * exchange (capspare >= reserved: a take never leaves an answer without room) */
	struct notice *spare;
	unsigned capspare;
};

int notice_queue_init(struct notice_queue *q);
void notice_queue_destroy(struct notice_queue *q);
/* Loop thread: room for one more ANSWER, before posting the command that owes it.
 * 0, or -ENOMEM (nothing reserved). */
int notice_reserve(struct notice_queue *q);
/* Scanner: an answer notice_reserve() made room for; never fails, never allocates. */
void notice_push_answer(struct notice_queue *q, const struct notice *n);
/* Anything but an ANSWER. false when out of memory: the notice is dropped and logged,
 * and the next take says so (the loop is woken for it). */
bool notice_push(struct notice_queue *q, const struct notice *n);
/* Loop thread: take all queued notices into *out (the queue's, valid until the next
 * take; not to be freed). Returns the count. *lost: some were dropped since the last
 * take. What an OVERFLOW or an OFFENDER said is also in its sink's flags (overflow,
 * eventfd_broken), which the taker then reads in every session
 * (session_handle_notices): a READY lost to a full socket still ends in an OVERFLOW,
 * an offender still in its ERROR. An ANSWER is never lost (reserved). */
unsigned notice_take(struct notice_queue *q, struct notice **out, bool *lost);
