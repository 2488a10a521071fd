/* test_readiness.c — daemon/readiness.c's eventfd writes, as a unit (linked with the
 * module itself, write() wrapped with -Wl,--wrap=write so that a test can make it end
 * with EINTR before it started, as valgrind does when the write guard's signal lands at
 * the syscall instruction; natively a non-blocking eventfd write never returns EINTR).
 *
 * Checked: a write interrupted before it started on a still non-blocking eventfd is
 * made again: the client's eventfd counts its completions, the session is not taken
 * for an offender, the sink counts one write retry (the chaos soak lost a completion
 * when such an EINTR was taken for a blocked write); a write interrupted again and
 * again is given up and its session disconnected, with its completions counted as
 * undelivered; an eventfd without O_NONBLOCK is never written and its session is an
 * offender, once; a broken session's eventfds are skipped, counted undelivered.
 * The form table (daemon/form.c): every form the wire accepts has a complete row and a
 * name, nothing else has one; a pass groups by the row's key: descriptors of one
 * binding fired in any order are one write of their sum.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "errcode.h"
#include "fdcheck.h"
#include "form.h"
#include "readiness.h"

static int eintr_fd = -1;     /* the fd whose writes are interrupted */
static unsigned eintr_left;   /* how many more times */
static unsigned writes_to_fd; /* writes that reached the kernel */

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
	if (fd == eintr_fd && eintr_left) {
		eintr_left--;
		errno = EINTR;
		return -1;
	}
	if (fd == eintr_fd)
		writes_to_fd++;
	return __real_write(fd, buf, n);
}

/* realloc wrapped too (-Wl,--wrap=realloc): the notice queue's growth fails while set */
static bool realloc_fails;
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	if (realloc_fails) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

struct fixture {
	struct notice_queue q;
	struct readiness r;
	struct sink sink;
	struct binding bind;
	struct fired fired[3];
};

static void setup(struct fixture *f, int efd_flags)
{
	cr_assert_eq(notice_queue_init(&f->q), 0);
	readiness_install_guard_handler();
	readiness_init(&f->r, 0, &f->q);
	f->sink = (struct sink){ .fd = -1, .session_id = 7 };
	f->bind = (struct binding){ .fd = eventfd(0, EFD_CLOEXEC | efd_flags) };
	cr_assert_geq(f->bind.fd, 0);
	for (unsigned i = 0; i < 3; i++)
		f->fired[i] = (struct fired){ .a = { .sink = &f->sink,
						     .bind = &f->bind,
						     .index = i,
						     .form = GARUDA_FORM_EVENTFD },
					      .value = 1 };
	eintr_fd = f->bind.fd;
	eintr_left = 0;
	writes_to_fd = 0;
}

/* The eventfd's count (0: nothing written), read without blocking. */
static uint64_t count_of(struct fixture *f)
{
	int fl = fcntl(f->bind.fd, F_GETFL);
	fcntl(f->bind.fd, F_SETFL, fl | O_NONBLOCK);
	uint64_t v = 0;
	if (read(f->bind.fd, &v, sizeof(v)) != sizeof(v))
		v = 0;
	return v;
}

/* The offender notices queued for the loop. */
static unsigned offenders(struct fixture *f)
{
	struct notice *n;
	bool lost;
	unsigned k = notice_take(&f->q, &n, &lost), off = 0;
	cr_assert(!lost);
	for (unsigned i = 0; i < k; i++)
		off += n[i].kind == NOTICE_OFFENDER && n[i].session_id == 7 &&
		       n[i].code == -GARUDA_E_BAD_FD;
	return off;
}

static void teardown(struct fixture *f)
{
	eintr_fd = -1;
	close(f->bind.fd);
	readiness_fini(&f->r);
	notice_queue_destroy(&f->q);
}

TestSuite(readiness, .init = fdcheck_begin, .fini = fdcheck_end);

Test(readiness, a_write_interrupted_before_it_started_is_made_again)
{
	struct fixture f;
	setup(&f, EFD_NONBLOCK);
	eintr_left = 2;
	readiness_deliver(&f.r, f.fired, 3);
	cr_assert_eq(count_of(&f), 3, "the three completions reach the eventfd in one write");
	cr_assert_eq(writes_to_fd, 1);
	cr_assert_eq(offenders(&f), 0, "a good client taken for an offender");
	cr_assert_eq(atomic_load(&f.sink.count[SN_write_retries]), 1);
	cr_assert_eq(atomic_load(&f.sink.count[SN_undelivered]), 0);
	cr_assert(!atomic_load(&f.sink.eventfd_broken));
	teardown(&f);
}

Test(readiness, a_write_interrupted_again_and_again_disconnects_its_session)
{
	struct fixture f;
	setup(&f, EFD_NONBLOCK);
	eintr_left = 1000;
	readiness_deliver(&f.r, f.fired, 3);
	cr_assert_eq(count_of(&f), 0);
	cr_assert_eq(offenders(&f), 1);
	cr_assert_eq(atomic_load(&f.sink.count[SN_undelivered]), 3);
	cr_assert(atomic_load(&f.sink.eventfd_broken));
	/* and nothing more is written to that session's eventfds, nor reported again */
	eintr_left = 0;
	readiness_deliver(&f.r, f.fired, 1);
	cr_assert_eq(writes_to_fd, 0);
	cr_assert_eq(offenders(&f), 0);
	cr_assert_eq(atomic_load(&f.sink.count[SN_undelivered]), 4);
	teardown(&f);
}

Test(readiness, a_blocking_eventfd_is_never_written)
{
	struct fixture f;
	setup(&f, 0);
	readiness_deliver(&f.r, f.fired, 2);
	cr_assert_eq(writes_to_fd, 0, "a write that could block the scanner");
	cr_assert_eq(offenders(&f), 1);
	cr_assert_eq(atomic_load(&f.sink.count[SN_undelivered]), 2);
	teardown(&f);
}

/* Out of memory for the notice: the loop is woken and told notices were lost, and
 * the sink keeps what the notice said (eventfd_broken), for the loop to act on
 * (session_handle_notices) */
Test(readiness, an_offender_notice_lost_out_of_memory_leaves_its_flag_and_wakes_the_loop)
{
	struct fixture f;
	setup(&f, 0);
	realloc_fails = true;
	readiness_deliver(&f.r, f.fired, 2);
	realloc_fails = false;
	cr_assert_eq(writes_to_fd, 0);
	uint64_t woke = 0;
	cr_assert_eq(read(f.q.efd, &woke, sizeof(woke)), (ssize_t)sizeof(woke), "the loop was not woken");
	struct notice *n;
	bool lost;
	cr_assert_eq(notice_take(&f.q, &n, &lost), 0);
	cr_assert(lost, "the take does not say a notice was lost");
	cr_assert(atomic_load(&f.sink.eventfd_broken), "the sink forgot it is an offender");
	cr_assert_eq(notice_take(&f.q, &n, &lost), 0);
	cr_assert(!lost, "a loss is told once");
	teardown(&f);
}

/* A DISARM's or a SEGMENT_CLOSE's answer has its room before the command is posted:
 * out of memory when the scanner answers, the answer still reaches the loop (it was
 * dropped, and the client's request timed out), across takes, while other notices are
 * lost */
Test(readiness, an_answer_is_never_lost_to_memory)
{
	struct notice_queue q;
	cr_assert_eq(notice_queue_init(&q), 0);
	struct notice *n;
	bool lost;
	for (unsigned round = 0; round < 3; round++) {
		/* more answers owed than the queue's first array holds, and as many as
		 * its array holds now: an unreserved push needs memory */
		for (unsigned i = 0; i < 128; i++)
			cr_assert_eq(notice_reserve(&q), 0);
		realloc_fails = true;
		cr_assert(!notice_push(&q, &(struct notice){ .kind = NOTICE_OVERFLOW, .session_id = 9 }),
			  "an unreserved notice took an answer's room");
		for (unsigned i = 0; i < 128; i++)
			notice_push_answer(&q, &(struct notice){ .kind = NOTICE_ANSWER, .session_id = 7,
								 .cookie = round * 1000 + i });
		realloc_fails = false;
		unsigned k = notice_take(&q, &n, &lost);
		cr_assert(lost, "the overflow's loss is not told");
		cr_assert_eq(k, 128, "round %u: %u of 128 answers", round, k);
		for (unsigned i = 0; i < k; i++)
			cr_assert(n[i].kind == NOTICE_ANSWER && n[i].cookie == round * 1000 + i);
	}
	/* reserved after a take that handed the loop everything: still room */
	cr_assert_eq(notice_reserve(&q), 0);
	cr_assert_eq(notice_take(&q, &n, &lost), 0);
	realloc_fails = true;
	notice_push_answer(&q, &(struct notice){ .kind = NOTICE_ANSWER, .cookie = 5 });
	realloc_fails = false;
	cr_assert_eq(notice_take(&q, &n, &lost), 1);
	cr_assert_eq(n[0].cookie, 5);
	notice_queue_destroy(&q);
}

Test(readiness, a_plain_write_counts_no_retry)
{
	struct fixture f;
	setup(&f, EFD_NONBLOCK);
	readiness_deliver(&f.r, f.fired, 1);
	cr_assert_eq(count_of(&f), 1);
	cr_assert_eq(offenders(&f), 0);
	cr_assert_eq(atomic_load(&f.sink.count[SN_write_retries]), 0);
	teardown(&f);
}

Test(readiness, every_wire_form_has_a_complete_row)
{
	unsigned rows = 0;
	FORM_EACH(i) {
		const struct form_ops *fo = form_get((uint8_t)i);
		cr_assert_not_null(fo->name, "form %u has no name", i);
		cr_assert_not_null(fo->group_key, "form %u has no group key", i);
		cr_assert_not_null(fo->deliver, "form %u has no delivery", i);
		cr_assert_str_eq(form_name(i), fo->name);
		rows++;
	}
	cr_assert_eq(rows, GARUDA_FORM_COUNT - 1);
	cr_assert_null(form_name(0));
	cr_assert_null(form_name(GARUDA_FORM_COUNT));
	cr_assert(form_get(GARUDA_FORM_EVENTFD)->needs_binding);
	cr_assert_not(form_get(GARUDA_FORM_MESSAGE)->needs_binding);
	cr_assert_not(form_get(GARUDA_FORM_DOORBELL)->needs_binding);
}

Test(readiness, one_bindings_fires_in_any_order_are_one_write)
{
	struct fixture f;
	setup(&f, EFD_NONBLOCK);
	struct binding other = { .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	cr_assert_geq(other.fd, 0);
	f.fired[1].a.bind = &other; /* f.bind, other, f.bind */
	readiness_deliver(&f.r, f.fired, 3);
	cr_assert_eq(writes_to_fd, 1, "one write serves the binding's run");
	cr_assert_eq(count_of(&f), 2);
	uint64_t v = 0;
	cr_assert_eq(read(other.fd, &v, sizeof(v)), (ssize_t)sizeof(v));
	cr_assert_eq(v, 1);
	cr_assert_eq(offenders(&f), 0);
	close(other.fd);
	teardown(&f);
}
