/* notice.h — scanner threads tell the loop thread about things only the loop may act
 * on (it owns sessions): a DISARM's outcome, an overflowed outbox, an offending
 * client. A mutex-protected queue plus an eventfd the loop watches; the eventfd is
 * written only on the empty -> non-empty transition. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum notice_kind { NOTICE_DISARMED, NOTICE_OVERFLOW, NOTICE_OFFENDER };

struct notice {
	enum notice_kind kind;
	uint64_t session_id;
	uint64_t cookie; /* DISARMED */
	int code;        /* DISARMED: 0 or -GARUDA_E_NOT_ARMED; OFFENDER: the (negative) error code */
	bool noreply;    /* DISARMED */
};

struct notice_queue {
	pthread_mutex_t lock;
	struct notice *items;
	unsigned n, cap;
	int efd;
};

int notice_queue_init(struct notice_queue *q);
void notice_queue_destroy(struct notice_queue *q);
void notice_push(struct notice_queue *q, const struct notice *n);
/* Take all queued notices (caller frees *out). Returns the count. */
unsigned notice_take(struct notice_queue *q, struct notice **out);
