/* notice.c — see notice.h. */
#include "notice.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"

int notice_queue_init(struct notice_queue *q)
{
	pthread_mutex_init(&q->lock, NULL);
	q->items = NULL;
	q->n = q->cap = 0;
	q->lost = false;
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return q->efd < 0 ? -errno : 0;
}

void notice_queue_destroy(struct notice_queue *q)
{
	free(q->items);
	if (q->efd >= 0)
		close(q->efd);
	pthread_mutex_destroy(&q->lock);
}

bool notice_push(struct notice_queue *q, const struct notice *n)
{
	bool was_empty;
	pthread_mutex_lock(&q->lock);
	if (q->n == q->cap) {
		unsigned cap = q->cap ? q->cap * 2 : 64;
		struct notice *ni = realloc(q->items, cap * sizeof(*ni));
		if (!ni) {
			q->lost = true; /* the next take says so: wake the loop for it */
			pthread_mutex_unlock(&q->lock);
			uint64_t one = 1;
			ssize_t r = write(q->efd, &one, sizeof(one));
			(void)r;
			log_err("notice queue: out of memory, notice dropped");
			return false;
		}
		q->items = ni;
		q->cap = cap;
	}
	was_empty = q->n == 0;
	q->items[q->n++] = *n;
	pthread_mutex_unlock(&q->lock);
	if (was_empty) {
		uint64_t one = 1;
		ssize_t r = write(q->efd, &one, sizeof(one));
		(void)r; /* EAGAIN: already signalled */
	}
	return true;
}

unsigned notice_take(struct notice_queue *q, struct notice **out, bool *lost)
{
	uint64_t v;
	ssize_t r = read(q->efd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&q->lock);
	unsigned n = q->n;
	*out = q->items;
	q->items = NULL;
	q->n = q->cap = 0;
	*lost = q->lost;
	q->lost = false;
	pthread_mutex_unlock(&q->lock);
	return n;
}
