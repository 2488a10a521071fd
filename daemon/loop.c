/* loop.c — the two event-loop implementations behind loop.h.
 *
 * Watches are loop-owned. epoll: level-triggered, one registration per fd (keyed by
 * the fd, its events the union of its watches': a POLLOUT watch beside a POLLIN one
 * costs no fd, so a loop at RLIMIT_NOFILE can still watch a full socket); a removed
 * watch is freed at the end of the iteration (events already collected may still name
 * its fd); every watch is removed before its fd is closed (epoll forgets an fd only
 * with its last open file description). io_uring:
 * multishot POLL_ADD with the watch as user_data; a removed watch is freed when its
 * poll's final CQE (no IORING_CQE_F_MORE) arrives, so no CQE can reach freed memory;
 * a multishot poll the kernel ended on its own is re-armed.
 */
#include "loop.h"
#include "list.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "log.h"

struct loop_watch {
	int fd;
	uint32_t events;
	loop_fn fn;
	void *data;
	bool dead;
	bool queued_again;
	bool kernel_done; /* io_uring: final CQE seen while on the again list */
	struct loop_watch *next; /* again list or graveyard */
	struct loop_watch *fd_next; /* epoll: the other watches on its fd */
	struct loop_watch *all_prev, *all_next; /* every watch not yet freed */
};

struct loop {
	enum event_loop_kind kind;
	int epfd;
	struct io_uring ring;
	struct loop_watch *again;
	struct loop_watch *graveyard;
	struct loop_watch *all; /* so loop_free can free what the kernel still held */
	struct loop_watch **byfd; /* epoll: the watches on each fd (fd_next lists) */
	unsigned nbyfd;
};

static void track(struct loop *l, struct loop_watch *w)
{
	LIST_PREPEND(l->all, w, all_prev, all_next);
}

/* Unlink from the loop's list and free. */
static void watch_free(struct loop *l, struct loop_watch *w)
{
	LIST_UNLINK(l->all, w, all_prev, all_next);
	free(w);
}

#define MAX_EVENTS 64

/* ---------------- io_uring ---------------- */

static struct io_uring_sqe *uring_sqe(struct loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	if (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	return sqe;
}

static int uring_arm(struct loop *l, struct loop_watch *w)
{
	struct io_uring_sqe *sqe = uring_sqe(l);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_multishot(sqe, w->fd, w->events);
	io_uring_sqe_set_data(sqe, w);
	return 0;
}

static int uring_init(struct loop *l)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_COOP_TASKRUN;
	int r = io_uring_queue_init_params(256, &l->ring, &p);
	if (r == -EINVAL) {
		memset(&p, 0, sizeof(p));
		r = io_uring_queue_init_params(256, &l->ring, &p);
	}
	if (r < 0)
		return r;
	/* multishot poll needs 5.13; probe for it */
	if (!(p.features & IORING_FEAT_FAST_POLL)) {
		io_uring_queue_exit(&l->ring);
		return -EOPNOTSUPP;
	}
	/* a ring set up is not a ring that runs: a seccomp filter may allow
	 * io_uring_setup and refuse io_uring_enter (then the first iteration would fail
	 * and garudad exit after it said it was ready). One NOP through the ring. */
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	struct io_uring_cqe *cqe = NULL;
	io_uring_prep_nop(sqe);
	r = io_uring_submit_and_wait(&l->ring, 1);
	if (r >= 0)
		r = io_uring_peek_cqe(&l->ring, &cqe);
	if (r >= 0 && cqe)
		io_uring_cqe_seen(&l->ring, cqe);
	if (r < 0) {
		io_uring_queue_exit(&l->ring);
		return r;
	}
	return 0;
}

static void dispatch(struct loop_watch *w, uint32_t ev)
{
	if (!w->dead)
		w->fn(w, w->data, ev);
}

/* io_uring: the kernel holds no more reference to w; free it unless the again list
 * still does (then loop_run_once frees it). */
static void release(struct loop *l, struct loop_watch *w)
{
	if (w->queued_again)
		w->kernel_done = true;
	else
		watch_free(l, w);
}

static int uring_run(struct loop *l, int timeout_ms)
{
	struct io_uring_cqe *cqe;
	int r;
	if (timeout_ms < 0) {
		r = io_uring_submit_and_wait(&l->ring, 1);
	} else {
		struct __kernel_timespec ts = { .tv_sec = timeout_ms / 1000,
						.tv_nsec = (timeout_ms % 1000) * 1000000L };
		r = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
	}
	if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		return r;

	unsigned head, n = 0;
	struct loop_watch *rearm[MAX_EVENTS];
	unsigned nrearm = 0;
	io_uring_for_each_cqe(&l->ring, head, cqe)
	{
		n++;
		struct loop_watch *w = io_uring_cqe_get_data(cqe);
		if (!w)
			continue; /* a poll_remove's own completion */
		bool more = cqe->flags & IORING_CQE_F_MORE;
		if (cqe->res > 0)
			dispatch(w, (uint32_t)cqe->res);
		else if (cqe->res < 0 && cqe->res != -ECANCELED && !w->dead)
			dispatch(w, POLLERR);
		if (!more) {
			if (w->dead)
				release(l, w);
			else if (nrearm < MAX_EVENTS)
				rearm[nrearm++] = w;
			else
				uring_arm(l, w);
		}
	}
	io_uring_cq_advance(&l->ring, n);
	for (unsigned i = 0; i < nrearm; i++)
		if (!rearm[i]->dead)
			uring_arm(l, rearm[i]);
		else
			release(l, rearm[i]); /* removed by a callback after its final CQE */
	return 0;
}

/* ---------------- epoll ---------------- */

static uint32_t to_epoll(uint32_t ev)
{
	return (ev & POLLIN ? EPOLLIN : 0) | (ev & POLLOUT ? EPOLLOUT : 0);
}

static uint32_t from_epoll(uint32_t ev)
{
	return (ev & EPOLLIN ? POLLIN : 0) | (ev & EPOLLOUT ? POLLOUT : 0) |
	       (ev & EPOLLERR ? POLLERR : 0) | (ev & EPOLLHUP ? POLLHUP : 0);
}

#define WATCHES_PER_FD 4 /* POLLIN and POLLOUT are all that is used */

static int epoll_run(struct loop *l, int timeout_ms)
{
	struct epoll_event evs[MAX_EVENTS];
	int n = epoll_wait(l->epfd, evs, MAX_EVENTS, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		int fd = evs[i].data.fd;
		uint32_t ev = from_epoll(evs[i].events);
		/* the fd's watches as they are now: a callback may remove one (freed only
		 * at the iteration's end: dispatch skips it) or add one. An event collected
		 * for an fd closed and reused since, in this batch, reaches the new fd's
		 * watches: a spurious wake-up, which every callback takes (it reads or
		 * writes until EAGAIN). */
		struct loop_watch *ws[WATCHES_PER_FD];
		unsigned k = 0;
		for (struct loop_watch *w = fd >= 0 && (unsigned)fd < l->nbyfd ? l->byfd[fd] : NULL;
		     w && k < WATCHES_PER_FD; w = w->fd_next)
			ws[k++] = w;
		for (unsigned j = 0; j < k; j++)
			if (ev & (ws[j]->events | POLLERR | POLLHUP))
				dispatch(ws[j], ev & (ws[j]->events | POLLERR | POLLHUP));
	}
	return 0;
}

/* The events fd's watches ask for, all together */
static uint32_t fd_events(const struct loop *l, int fd)
{
	uint32_t ev = 0;
	for (const struct loop_watch *w = l->byfd[fd]; w; w = w->fd_next)
		ev |= w->events;
	return ev;
}

/* (Re-)register fd for its watches' events: ADD for its first watch, MOD after, DEL
 * when none is left. */
static int epoll_sync(struct loop *l, int fd, int op)
{
	struct epoll_event e = { .events = to_epoll(fd_events(l, fd)), .data.fd = fd };
	return epoll_ctl(l->epfd, op, fd, op == EPOLL_CTL_DEL ? NULL : &e) < 0 ? -errno : 0;
}

static int epoll_add(struct loop *l, struct loop_watch *w)
{
	if (w->fd < 0)
		return -EBADF;
	if ((unsigned)w->fd >= l->nbyfd) {
		unsigned cap = l->nbyfd ? l->nbyfd : 64;
		while (cap <= (unsigned)w->fd)
			cap *= 2;
		struct loop_watch **b = realloc(l->byfd, cap * sizeof(*b));
		if (!b)
			return -ENOMEM;
		memset(b + l->nbyfd, 0, (cap - l->nbyfd) * sizeof(*b));
		l->byfd = b;
		l->nbyfd = cap;
	}
	unsigned k = 0;
	for (struct loop_watch *o = l->byfd[w->fd]; o; o = o->fd_next)
		k++;
	if (k >= WATCHES_PER_FD)
		return -EBUSY;
	int op = k ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	w->fd_next = l->byfd[w->fd];
	l->byfd[w->fd] = w;
	int r = epoll_sync(l, w->fd, op);
	if (r < 0)
		l->byfd[w->fd] = w->fd_next;
	return r;
}

static void epoll_forget(struct loop *l, struct loop_watch *w)
{
	struct loop_watch **pp = &l->byfd[w->fd];
	while (*pp && *pp != w)
		pp = &(*pp)->fd_next;
	if (*pp)
		*pp = w->fd_next;
	w->fd_next = NULL;
	epoll_sync(l, w->fd, l->byfd[w->fd] ? EPOLL_CTL_MOD : EPOLL_CTL_DEL);
}

/* ---------------- common ---------------- */

struct loop *loop_new(enum event_loop_kind kind)
{
	struct loop *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->epfd = -1;
	if (kind != EVENT_LOOP_EPOLL) {
		int r = uring_init(l);
		if (r == 0) {
			l->kind = EVENT_LOOP_URING;
			return l;
		}
		if (kind == EVENT_LOOP_URING) {
			log_err("io_uring refused by the kernel: %s", strerror(-r));
			free(l);
			errno = -r;
			return NULL;
		}
		log_notice("io_uring unavailable (%s); using epoll", strerror(-r));
	}
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int e = errno;
		free(l);
		errno = e;
		return NULL;
	}
	l->kind = EVENT_LOOP_EPOLL;
	return l;
}

enum event_loop_kind loop_kind(const struct loop *l)
{
	return l->kind;
}

static void bury(struct loop *l)
{
	while (l->graveyard) {
		struct loop_watch *w = l->graveyard;
		l->graveyard = w->next;
		watch_free(l, w);
	}
}

void loop_free(struct loop *l)
{
	if (!l)
		return;
	if (l->kind == EVENT_LOOP_URING)
		io_uring_queue_exit(&l->ring); /* the kernel drops every poll with the ring */
	else
		close(l->epfd);
	/* whatever is left (removed watches whose final CQE never came, or watches
	 * never removed) is referenced by nothing now */
	while (l->all)
		watch_free(l, l->all);
	free(l->byfd);
	free(l);
}

struct loop_watch *loop_add(struct loop *l, int fd, uint32_t events, loop_fn fn, void *data)
{
	struct loop_watch *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	*w = (struct loop_watch){ .fd = fd, .events = events, .fn = fn, .data = data };
	int r = l->kind == EVENT_LOOP_URING ? uring_arm(l, w) : epoll_add(l, w);
	if (r < 0) {
		free(w);
		errno = -r;
		return NULL;
	}
	track(l, w);
	return w;
}

void loop_remove(struct loop *l, struct loop_watch *w)
{
	if (!w || w->dead)
		return;
	w->dead = true;
	if (l->kind == EVENT_LOOP_URING) {
		struct io_uring_sqe *sqe = uring_sqe(l);
		if (sqe) {
			io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)w);
			io_uring_sqe_set_data(sqe, NULL);
		}
		/* freed when the poll's final CQE arrives */
	} else {
		epoll_forget(l, w);
		if (!w->queued_again) {
			w->next = l->graveyard;
			l->graveyard = w;
		}
	}
}

void loop_again(struct loop *l, struct loop_watch *w)
{
	if (w->dead || w->queued_again)
		return;
	w->queued_again = true;
	w->next = l->again;
	l->again = w;
}

int loop_run_once(struct loop *l, int timeout_ms)
{
	struct loop_watch *again = l->again;
	l->again = NULL;
	int r = l->kind == EVENT_LOOP_URING ? uring_run(l, again ? 0 : timeout_ms)
					    : epoll_run(l, again ? 0 : timeout_ms);
	while (again) {
		struct loop_watch *w = again;
		again = w->next;
		w->queued_again = false;
		if (!w->dead) {
			w->fn(w, w->data, w->events);
		} else if (l->kind == EVENT_LOOP_EPOLL || w->kernel_done) {
			w->next = l->graveyard;
			l->graveyard = w;
		}
	}
	bury(l);
	return r;
}
