/* notice.c — see notice.h. */
#include "notice.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "log.h"

int notice_queue_init(struct notice_queue *q)
{
	*q = (struct notice_queue){ .efd = -1 };
	pthread_mutex_init(&q->lock, NULL);
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return q->efd < 0 ? -errno : 0;
}

void notice_queue_destroy(struct notice_queue *q)
{
	free(q->items);
	free(q->spare);
	if (q->efd >= 0)
		close(q->efd);
	pthread_mutex_destroy(&q->lock);
}

/* Grow *items to hold at least `need` (doubling, at least 64). Under q->lock for the
 * queue's own array. */
static bool room(struct notice **items, unsigned *cap, unsigned need)
{
	if (need <= *cap)
		return true;
	unsigned c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	struct notice *ni = realloc(*items, c * sizeof(*ni));
	if (!ni)
		return false;
	*items = ni;
	*cap = c;
	return true;
}

static void wake(struct notice_queue *q)
{
	uint64_t one = 1;
	ssize_t r = write(q->efd, &one, sizeof(one));
	(void)r; /* EAGAIN: already signalled */
}

int notice_reserve(struct notice_queue *q)
{
	pthread_mutex_lock(&q->lock); /* reserved: the scanners spend it */
	unsigned want = q->reserved + 1;
	bool ok = room(&q->items, &q->cap, q->n + want);
	if (ok)
		q->reserved = want;
	pthread_mutex_unlock(&q->lock);
	/* the spare: only this thread touches it; it holds at least what is reserved now
	 * (spending only lowers that) */
	if (ok && !room(&q->spare, &q->capspare, want)) {
		pthread_mutex_lock(&q->lock);
		q->reserved--;
		pthread_mutex_unlock(&q->lock);
		ok = false;
	}
	return ok ? 0 : -ENOMEM;
}

/* Append n (there is room); wake the loop on empty -> non-empty. Unlocks q. */
static void append_unlock(struct notice_queue *q, const struct notice *n)
{
	bool was_empty = q->n == 0;
	q->items[q->n++] = *n;
	pthread_mutex_unlock(&q->lock);
	if (was_empty)
		wake(q);
}

void notice_push_answer(struct notice_queue *q, const struct notice *n)
{
	pthread_mutex_lock(&q->lock);
	/* cap >= n + reserved, reserved >= 1: the room is there */
	q->reserved--;
	append_unlock(q, n);
}

bool notice_push(struct notice_queue *q, const struct notice *n)
{
	pthread_mutex_lock(&q->lock);
	if (!room(&q->items, &q->cap, q->n + q->reserved + 1)) {
		q->lost = true; /* the next take says so: wake the loop for it */
		pthread_mutex_unlock(&q->lock);
		wake(q);
		log_err("notice queue: out of memory, notice dropped");
		return false;
	}
	append_unlock(q, n);
	return true;
}

unsigned notice_take(struct notice_queue *q, struct notice **out, bool *lost)
{
	uint64_t v;
	ssize_t r = read(q->efd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&q->lock);
	unsigned n = q->n;
	/* exchange: the queue gets the spare (capspare >= reserved), the loop the full
	 * array (its cap >= n + reserved, so it serves as the next spare) */
	struct notice *items = q->items;
	unsigned cap = q->cap;
	q->items = q->spare;
	q->cap = q->capspare;
	q->spare = items;
	q->capspare = cap;
	q->n = 0;
	*lost = q->lost;
	q->lost = false;
	pthread_mutex_unlock(&q->lock);
	*out = items;
	return n;
}
