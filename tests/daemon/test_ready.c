/* test_ready.c — readiness: every form (eventfd, READY message, doorbell futex)
 * delivers exactly once per arm and never before the word reached its target; arms
 * on already-reached words, wrapping targets, several arms per slot, DISARM, NOREPLY,
 * BIND/UNBIND errors and slot ranges.
 *
 * "Never before the store": the test stores values below the target first and checks
 * that nothing arrived; "exactly once": after the readiness, a sentinel arm on another
 * slot is fired and received, then nothing more may arrive. Quiet checks listen for
 * GD_QUIET_MS: a longer window only catches more, a shorter one never fails a good
 * daemon. */
#include <criterion/criterion.h>
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(ready, .init = gd_test_init, .fini = gd_test_fini, .timeout = 120);

struct env {
	struct gd_daemon d;
	struct gd_client c;
	struct gd_seg s;
};

static void env_up_opt(struct env *e, uint32_t lines, bool baseline)
{
	memset(e, 0, sizeof(*e));
	gd_start(&e->d, NULL);
	if (baseline)
		gd_baseline(&e->d);
	gd_ok(gd_open(&e->c, e->d.sock));
	gd_ok(gd_segment_open(&e->c, lines, -1, &e->s));
}

static void env_up(struct env *e, uint32_t lines)
{
	env_up_opt(e, lines, false);
}

static void env_down(struct env *e)
{
	cr_assert_eq(gd_wait_status(&e->d, "armed", 0), 0, "armed descriptors left over");
	gd_seg_unmap(&e->s);
	gd_close(&e->c);
	gd_stop(&e->d);
}

/* A READY must arrive: returns it. */
static struct garuda_ready expect_ready(struct gd_client *c, const char *what)
{
	struct garuda_msg m;
	int r = gd_recv(c, &m, NULL, GD_DEADLINE_MS);
	cr_assert_eq(r, 1, "%s: no READY: %s", what, gd_strerr(r));
	cr_assert_eq(m.type, GARUDA_MSG_READY, "%s: got %s (code %d) instead of READY", what,
		     garuda_msg_type_name(m.type), m.type == GARUDA_MSG_ERROR ? m.error.code : 0);
	cr_assert_eq(m.cookie, 0, "%s: READY with cookie %llu, contract says 0", what,
		     (unsigned long long)m.cookie);
	return m.ready;
}

static void expect_quiet(struct gd_client *c, const char *what)
{
	struct garuda_msg m;
	int r = gd_quiet(c, GD_QUIET_MS, &m);
	cr_assert_eq(r, 0, "%s: unexpected %s (token %llu value %llu)", what,
		     garuda_msg_type_name(m.type), (unsigned long long)m.ready.token,
		     (unsigned long long)m.ready.value);
}

/* Fire a message-form sentinel on word idx and receive it: everything the daemon
 * sent this client before it is then in our queue or socket. */
static void sentinel(struct gd_client *c, struct gd_seg *s, uint32_t idx, uint64_t token)
{
	uint64_t v = gd_load(s, idx) + 1;
	gd_ok(gd_arm(c, gd_slot(s, idx), v, token, GARUDA_FORM_MESSAGE));
	gd_store(s, idx, v);
	/* readiness for other slots may legally come first: skip nothing, fail on it */
	struct garuda_ready rd = expect_ready(c, "sentinel");
	cr_assert_eq(rd.token, token, "READY token %llu (value %llu) where only the sentinel "
		     "%llu was due", (unsigned long long)rd.token, (unsigned long long)rd.value,
		     (unsigned long long)token);
}

Test(ready, eventfd_form)
{
	struct env e;
	env_up(&e, 2);
	int efd;
	gd_ok(gd_bind_new(&e.c, gd_slot(&e.s, 3), &efd));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 3), 5, 11, GARUDA_FORM_EVENTFD));
	cr_assert_eq(gd_wait_status(&e.d, "armed", 1), 1);
	for (uint64_t v = 1; v < 5; v++) {
		gd_store(&e.s, 3, v);
		long long n = gd_eventfd_read(efd, GD_QUIET_MS);
		cr_assert_eq(n, 0, "eventfd readiness (%lld) with word %llu < target 5", n,
			     (unsigned long long)v);
	}
	gd_store(&e.s, 3, 5);
	long long n = gd_eventfd_read(efd, GD_DEADLINE_MS);
	cr_assert_eq(n, 1, "eventfd after the store: %lld, expected 1", n);
	sentinel(&e.c, &e.s, 15, 1000);
	cr_assert_eq(n = gd_eventfd_read(efd, GD_QUIET_MS), 0, "second eventfd readiness: %lld", n);
	gd_store(&e.s, 3, 6);
	cr_assert_eq(n = gd_eventfd_read(efd, GD_QUIET_MS), 0, "eventfd readiness without an arm");

	/* two arms on the slot reached by one store: +2 in all */
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 3), 7, 12, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 3), 8, 13, GARUDA_FORM_EVENTFD));
	gd_store(&e.s, 3, 7);
	cr_assert_eq(n = gd_eventfd_read(efd, GD_DEADLINE_MS), 1, "after reaching 7: %lld", n);
	cr_assert_eq(n = gd_eventfd_read(efd, GD_QUIET_MS), 0, "target 8 fired at 7");
	gd_store(&e.s, 3, 8);
	cr_assert_eq(n = gd_eventfd_read(efd, GD_DEADLINE_MS), 1, "after reaching 8: %lld", n);
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 3), 10, 14, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 3), 10, 15, GARUDA_FORM_EVENTFD));
	gd_store(&e.s, 3, 10);
	long long total = 0;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	while (total < 2 && gd_left_ms(dl) > 0)
		total += gd_eventfd_read(efd, gd_left_ms(dl));
	cr_assert_eq(total, 2, "two arms reached by one store added %lld", total);
	sentinel(&e.c, &e.s, 15, 1001);
	cr_assert_eq(n = gd_eventfd_read(efd, GD_QUIET_MS), 0, "extra eventfd readiness: %lld", n);

	/* the eventfd form sends no READY message */
	expect_quiet(&e.c, "eventfd form");
	close(efd);
	env_down(&e);
}

Test(ready, message_form)
{
	struct env e;
	env_up(&e, 2);
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 9), 3, 0xabcdef0123ull, GARUDA_FORM_MESSAGE));
	for (uint64_t v = 1; v < 3; v++) {
		gd_store(&e.s, 9, v);
		expect_quiet(&e.c, "word below target");
	}
	gd_store(&e.s, 9, 3);
	struct garuda_ready rd = expect_ready(&e.c, "message form");
	cr_assert_eq(rd.token, 0xabcdef0123ull);
	cr_assert_eq(rd.value, 3, "READY value %llu, the word holds 3", (unsigned long long)rd.value);
	cr_assert_eq(rd.slot.segment, e.s.id);
	cr_assert_eq(rd.slot.index, 9);
	cr_assert_eq(rd.flags, 0);
	sentinel(&e.c, &e.s, 1, 2000);
	expect_quiet(&e.c, "after READY and sentinel");

	/* the value is what the daemon saw: never below the target */
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 9), 4, 5, GARUDA_FORM_MESSAGE));
	gd_store(&e.s, 9, 1000);
	rd = expect_ready(&e.c, "store past the target");
	cr_assert_eq(rd.token, 5);
	cr_assert(garuda_reached(rd.value, 4), "READY value %llu below target 4",
		  (unsigned long long)rd.value);
	env_down(&e);
}

Test(ready, doorbell_form)
{
	struct env e;
	env_up(&e, 2);
	uint32_t bell = gd_doorbell(&e.s), now;
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 0), 2, 1, GARUDA_FORM_DOORBELL));
	gd_store(&e.s, 0, 1);
	cr_assert_eq(gd_doorbell_wait(&e.s, bell, &now, GD_QUIET_MS), 0,
		     "doorbell rang (%u -> %u) with word 1 < target 2", bell, now);
	gd_store(&e.s, 0, 2);
	cr_assert_eq(gd_doorbell_wait(&e.s, bell, &now, GD_DEADLINE_MS), 1, "doorbell never rang");
	cr_assert_eq(now, bell + 1, "doorbell %u -> %u for one arm", bell, now);
	sentinel(&e.c, &e.s, 15, 3000);
	cr_assert_eq(gd_doorbell_wait(&e.s, bell + 1, &now, GD_QUIET_MS), 0,
		     "doorbell rang again (%u)", now);

	/* three arms on three slots: +3 */
	bell = gd_doorbell(&e.s);
	for (uint32_t i = 1; i <= 3; i++)
		gd_ok(gd_arm(&e.c, gd_slot(&e.s, i), 1, 10 + i, GARUDA_FORM_DOORBELL));
	for (uint32_t i = 1; i <= 3; i++)
		gd_store(&e.s, i, 1);
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	now = bell;
	while ((uint32_t)(now - bell) < 3 && gd_left_ms(dl) > 0)
		gd_doorbell_wait(&e.s, now, &now, gd_left_ms(dl));
	cr_assert_eq((uint32_t)(now - bell), 3, "doorbell moved by %u for 3 arms", now - bell);
	sentinel(&e.c, &e.s, 15, 3001);
	cr_assert_eq(gd_doorbell(&e.s), bell + 3, "doorbell moved again");
	/* the doorbell form sends no READY message */
	expect_quiet(&e.c, "doorbell form");
	env_down(&e);
}

struct storer {
	struct gd_seg *s;
	uint32_t idx;
	uint64_t v;
	pid_t waiter;  /* the thread that waits on the doorbell */
	bool saw_wait; /* it was blocked in FUTEX_WAIT on the doorbell before the store */
};

/* store once the waiter sleeps in FUTEX_WAIT on the doorbell (so that the daemon's
 * FUTEX_WAKE, not the waiter's look at the word, is what must end its wait) */
static void *store_when_waiting(void *arg)
{
	struct storer *st = arg;
	st->saw_wait = gd_wait_blocked_in(st->waiter, SYS_futex, &st->s->map->hdr.doorbell);
	gd_store(st->s, st->idx, st->v);
	return NULL;
}

/* A thread blocked in FUTEX_WAIT on the doorbell is woken (the daemon FUTEX_WAKEs
 * the shared futex, not just bumps the word): the store comes only once the waiter is
 * seen asleep there, so its FUTEX_WAIT returns 0 (woken), never EAGAIN (the doorbell
 * moved before it slept) nor ETIMEDOUT (bumped but never woken). */
Test(ready, doorbell_wakes_futex_waiter)
{
	struct env e;
	env_up(&e, 1);
	for (int round = 1; round <= 3; round++) {
		uint32_t bell = gd_doorbell(&e.s);
		gd_ok(gd_arm(&e.c, gd_slot(&e.s, 0), (uint64_t)round, (uint64_t)round,
			     GARUDA_FORM_DOORBELL));
		struct storer st = { &e.s, 0, (uint64_t)round, (pid_t)syscall(SYS_gettid), false };
		pthread_t t;
		cr_assert_eq(pthread_create(&t, NULL, store_when_waiting, &st), 0);
		struct timespec ts = { GD_DEADLINE_MS / 1000, 0 };
		long r;
		int err;
		do /* a signal (the test runner's) only interrupts the wait: wait again */
			r = syscall(SYS_futex, &e.s.map->hdr.doorbell, FUTEX_WAIT, bell, &ts, NULL, 0);
		while (r < 0 && errno == EINTR);
		err = r < 0 ? errno : 0;
		pthread_join(t, NULL);
		cr_assert(st.saw_wait, "round %d: never saw this thread blocked in FUTEX_WAIT on the "
			  "doorbell (its wait returned %ld: %s; doorbell %u, was %u)", round, r,
			  strerror(err), gd_doorbell(&e.s), bell);
		cr_assert_eq(r, 0, "round %d: FUTEX_WAIT on the doorbell: %s (doorbell %u, was %u)%s", round,
			     strerror(err), gd_doorbell(&e.s), bell,
			     err == ETIMEDOUT ? ": bumped but not woken?" : "");
		uint32_t now;
		cr_assert_eq(gd_doorbell_wait(&e.s, bell, &now, GD_DEADLINE_MS), 1);
		cr_assert_eq(now, bell + 1);
	}
	env_down(&e);
}

/* Arm on a word that already reached its target: readiness at once */
Test(ready, arm_already_reached)
{
	struct env e;
	env_up(&e, 1);
	int efd;
	gd_ok(gd_bind_new(&e.c, gd_slot(&e.s, 0), &efd));
	gd_store(&e.s, 0, 5);
	gd_store(&e.s, 1, 5);
	gd_store(&e.s, 2, 5);

	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 1), 3, 1, GARUDA_FORM_MESSAGE));
	struct garuda_ready rd = expect_ready(&e.c, "arm below the current value");
	cr_assert_eq(rd.token, 1);
	cr_assert_eq(rd.value, 5);
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 1), 5, 2, GARUDA_FORM_MESSAGE));
	rd = expect_ready(&e.c, "arm at the current value");
	cr_assert_eq(rd.token, 2);
	cr_assert_eq(rd.value, 5);

	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 0), 5, 3, GARUDA_FORM_EVENTFD));
	long long n = gd_eventfd_read(efd, GD_DEADLINE_MS);
	cr_assert_eq(n, 1, "eventfd for an already reached word: %lld", n);

	uint32_t bell = gd_doorbell(&e.s), now;
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 2), 4, 4, GARUDA_FORM_DOORBELL));
	cr_assert_eq(gd_doorbell_wait(&e.s, bell, &now, GD_DEADLINE_MS), 1,
		     "doorbell for an already reached word");
	cr_assert_eq(now, bell + 1);

	/* and once only */
	sentinel(&e.c, &e.s, 7, 4000);
	cr_assert_eq(n = gd_eventfd_read(efd, GD_QUIET_MS), 0, "eventfd again: %lld", n);
	cr_assert_eq(gd_doorbell(&e.s), bell + 1);
	expect_quiet(&e.c, "already reached");
	close(efd);
	env_down(&e);
}

/* Targets compare in wrapping order */
Test(ready, wrapping_target)
{
	struct env e;
	env_up(&e, 1);
	gd_store(&e.s, 0, UINT64_MAX - 1);
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 0), 1, 1, GARUDA_FORM_MESSAGE)); /* 3 steps ahead */
	expect_quiet(&e.c, "target 1 with word UINT64_MAX-1");
	gd_store(&e.s, 0, UINT64_MAX);
	expect_quiet(&e.c, "target 1 with word UINT64_MAX");
	gd_store(&e.s, 0, 0);
	expect_quiet(&e.c, "target 1 with word 0");
	gd_store(&e.s, 0, 1);
	struct garuda_ready rd = expect_ready(&e.c, "wrapped target");
	cr_assert_eq(rd.token, 1);
	cr_assert_eq(rd.value, 1);

	/* a target "behind" in wrapping order is reached */
	gd_store(&e.s, 1, 2);
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 1), UINT64_MAX - 3, 2, GARUDA_FORM_MESSAGE));
	rd = expect_ready(&e.c, "target UINT64_MAX-3 with word 2");
	cr_assert_eq(rd.token, 2);
	env_down(&e);
}

/* Several arms on one slot: each fires when its own target is reached */
Test(ready, several_arms_one_slot)
{
	struct env e;
	env_up(&e, 1);
	for (uint64_t t = 1; t <= 5; t++)
		gd_ok(gd_arm(&e.c, gd_slot(&e.s, 2), t, 100 + t, GARUDA_FORM_MESSAGE));
	/* the same token twice is two arms */
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 2), 3, 103, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_status(&e.d, "armed", 6), 6);
	gd_store(&e.s, 2, 3);
	unsigned seen[6] = { 0 };
	for (int i = 0; i < 4; i++) {
		struct garuda_ready rd = expect_ready(&e.c, "store 3");
		cr_assert(rd.token >= 101 && rd.token <= 103, "token %llu fired at 3",
			  (unsigned long long)rd.token);
		cr_assert_eq(rd.value, 3);
		seen[rd.token - 100]++;
	}
	cr_assert(seen[1] == 1 && seen[2] == 1 && seen[3] == 2, "tokens 101..103 seen %u %u %u",
		  seen[1], seen[2], seen[3]);
	expect_quiet(&e.c, "targets 4 and 5 at 3");
	gd_store(&e.s, 2, 5);
	for (int i = 0; i < 2; i++) {
		struct garuda_ready rd = expect_ready(&e.c, "store 5");
		cr_assert(rd.token == 104 || rd.token == 105, "token %llu fired at 5",
			  (unsigned long long)rd.token);
		seen[rd.token - 100]++;
	}
	cr_assert(seen[4] == 1 && seen[5] == 1);
	sentinel(&e.c, &e.s, 7, 5000);
	expect_quiet(&e.c, "after all");
	env_down(&e);
}

Test(ready, disarm)
{
	struct env e;
	env_up(&e, 1);
	int efd;
	gd_ok(gd_bind_new(&e.c, gd_slot(&e.s, 3), &efd));

	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 0), 1, 7, GARUDA_FORM_MESSAGE));
	cr_assert_eq(gd_wait_status(&e.d, "armed", 1), 1);
	gd_ok(gd_disarm(&e.c, gd_slot(&e.s, 0), 7));
	cr_assert_eq(gd_wait_status(&e.d, "armed", 0), 0, "DISARM left the descriptor armed");
	gd_store(&e.s, 0, 1);
	sentinel(&e.c, &e.s, 7, 6000);
	expect_quiet(&e.c, "disarmed message arm");
	gd_refused(gd_disarm(&e.c, gd_slot(&e.s, 0), 7), GARUDA_E_NOT_ARMED);
	gd_refused(gd_disarm(&e.c, gd_slot(&e.s, 0), 12345), GARUDA_E_NOT_ARMED);
	gd_refused(gd_disarm(&e.c, gd_slot(&e.s, 1), 7), GARUDA_E_NOT_ARMED);

	/* all not-yet-fired arms with that slot and token go; others stay */
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 2), 1, 9, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 2), 2, 9, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 2), 1, 10, GARUDA_FORM_MESSAGE));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 1), 1, 9, GARUDA_FORM_MESSAGE));
	gd_ok(gd_disarm(&e.c, gd_slot(&e.s, 2), 9));
	cr_assert_eq(gd_wait_status(&e.d, "armed", 2), 2);
	gd_store(&e.s, 2, 2);
	gd_store(&e.s, 1, 1);
	for (int i = 0; i < 2; i++) {
		struct garuda_ready rd = expect_ready(&e.c, "after partial disarm");
		cr_assert((rd.token == 10 && rd.slot.index == 2) || (rd.token == 9 && rd.slot.index == 1),
			  "READY token %llu slot %u: disarmed arm fired", (unsigned long long)rd.token,
			  rd.slot.index);
	}
	sentinel(&e.c, &e.s, 7, 6001);
	expect_quiet(&e.c, "after partial disarm");

	/* eventfd and doorbell forms disarm too */
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 3), 1, 11, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 4), 1, 12, GARUDA_FORM_DOORBELL));
	gd_ok(gd_disarm(&e.c, gd_slot(&e.s, 3), 11));
	gd_ok(gd_disarm(&e.c, gd_slot(&e.s, 4), 12));
	uint32_t bell = gd_doorbell(&e.s);
	gd_store(&e.s, 3, 1);
	gd_store(&e.s, 4, 1);
	sentinel(&e.c, &e.s, 7, 6002);
	long long n = gd_eventfd_read(efd, GD_QUIET_MS);
	cr_assert_eq(n, 0, "disarmed eventfd arm fired (%lld)", n);
	cr_assert_eq(gd_doorbell(&e.s), bell, "disarmed doorbell arm rang");

	/* an arm that already fired cannot be disarmed */
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 5), 1, 13, GARUDA_FORM_MESSAGE));
	gd_store(&e.s, 5, 1);
	struct garuda_ready rd = expect_ready(&e.c, "before disarm of a fired arm");
	cr_assert_eq(rd.token, 13);
	gd_refused(gd_disarm(&e.c, gd_slot(&e.s, 5), 13), GARUDA_E_NOT_ARMED);
	/* those NOT_ARMED answers are not faults: garctl status shows no errors after a
	 * client that freed its streams (libgaruda DISARMs each); a real one counts */
	cr_assert_eq(gd_status_num(&e.d, "errors"), 0, "NOT_ARMED answers were counted as errors");
	gd_refused(gd_disarm(&e.c, (struct garuda_slot){ .segment = 999, .index = 0 }, 1),
		   GARUDA_E_NO_SEGMENT);
	cr_assert_eq(gd_wait_status(&e.d, "errors", 1), 1, "a DISARM of no segment was not counted");
	close(efd);
	env_down(&e);
}

/* GARUDA_F_NOREPLY: no ACK on success, errors still come (with the request's cookie) */
Test(ready, noreply)
{
	struct env e;
	env_up(&e, 1);
	gd_ok(gd_arm_flags(&e.c, gd_slot(&e.s, 0), 1, 1, GARUDA_FORM_MESSAGE, GARUDA_F_NOREPLY));
	expect_quiet(&e.c, "ARM with NOREPLY");
	gd_store(&e.s, 0, 1);
	struct garuda_ready rd = expect_ready(&e.c, "NOREPLY arm");
	cr_assert_eq(rd.token, 1);

	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.flags = GARUDA_F_NOREPLY;
	m.arm.slot = (struct garuda_slot){ .segment = e.s.id + 1000, .index = 0 };
	m.arm.target = 1;
	m.arm.form = GARUDA_FORM_MESSAGE;
	gd_ok(gd_request(&e.c, &m, NULL, 0, NULL, NULL));
	int r = gd_await(&e.c, m.cookie, &rep, NULL);
	cr_assert_eq(r, GARUDA_E_NO_SEGMENT, "NOREPLY ARM on no segment: %s", gd_strerr(r));

	/* NOREPLY on the other requests */
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	garuda_msg_init(&m, GARUDA_MSG_BIND, 0);
	m.flags = GARUDA_F_NOREPLY;
	m.bind.slot = gd_slot(&e.s, 1);
	gd_ok(gd_request(&e.c, &m, &efd, 1, NULL, NULL));
	garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
	m.flags = GARUDA_F_NOREPLY;
	m.disarm.slot = gd_slot(&e.s, 0);
	m.disarm.token = 1;
	gd_ok(gd_request(&e.c, &m, NULL, 0, NULL, NULL));
	r = gd_await(&e.c, m.cookie, &rep, NULL);
	cr_assert_eq(r, GARUDA_E_NOT_ARMED, "NOREPLY DISARM of nothing: %s", gd_strerr(r));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 1), 1, 2, GARUDA_FORM_EVENTFD)); /* bound by NOREPLY BIND */
	gd_store(&e.s, 1, 1);
	cr_assert_eq(gd_eventfd_read(efd, GD_DEADLINE_MS), 1);
	expect_quiet(&e.c, "NOREPLY");
	close(efd);
	env_down(&e);
}

/* BIND / UNBIND / NOT_BOUND / ALREADY_BOUND / SLOT_RANGE: errors, connection stays */
Test(ready, bind_errors)
{
	struct env e;
	env_up_opt(&e, 1, true);
	int base = gd_fd_count(&e.d);
	int efd, efd2 = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

	gd_refused(gd_arm(&e.c, gd_slot(&e.s, 0), 1, 1, GARUDA_FORM_EVENTFD), GARUDA_E_NOT_BOUND);
	gd_ok(gd_bind_new(&e.c, gd_slot(&e.s, 0), &efd));
	cr_assert_eq(gd_wait_status(&e.d, "bindings", 1), 1);
	gd_refused(gd_bind(&e.c, gd_slot(&e.s, 0), efd2), GARUDA_E_ALREADY_BOUND);
	/* the refused eventfd is not kept */
	int fds = gd_wait_fds_at_most(&e.d, base + 1);
	cr_assert_leq(fds, base + 1, "daemon kept the refused eventfd (%d fds, %d expected)", fds,
		      base + 1);
	/* one eventfd may back several slots */
	gd_ok(gd_bind(&e.c, gd_slot(&e.s, 1), efd));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 0), 1, 1, GARUDA_FORM_EVENTFD));
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 1), 1, 2, GARUDA_FORM_EVENTFD));
	gd_store(&e.s, 0, 1);
	gd_store(&e.s, 1, 1);
	long long total = 0;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	while (total < 2 && gd_left_ms(dl) > 0)
		total += gd_eventfd_read(efd, gd_left_ms(dl));
	cr_assert_eq(total, 2);

	gd_ok(gd_unbind(&e.c, gd_slot(&e.s, 0)));
	gd_refused(gd_unbind(&e.c, gd_slot(&e.s, 0)), GARUDA_E_NOT_BOUND);
	gd_refused(gd_arm(&e.c, gd_slot(&e.s, 0), 2, 3, GARUDA_FORM_EVENTFD), GARUDA_E_NOT_BOUND);
	gd_ok(gd_unbind(&e.c, gd_slot(&e.s, 1)));
	cr_assert_eq(gd_wait_status(&e.d, "bindings", 0), 0);
	fds = gd_wait_fds_at_most(&e.d, base);
	cr_assert_leq(fds, base, "daemon keeps unbound eventfds (%d fds, %d expected)", fds, base);
	/* rebind after unbind */
	gd_ok(gd_bind(&e.c, gd_slot(&e.s, 0), efd2));

	/* a slot beyond the segment (but within the protocol's range): SLOT_RANGE */
	uint32_t beyond = e.s.lines * GARUDA_WORDS_PER_LINE;
	gd_refused(gd_arm(&e.c, gd_slot(&e.s, beyond), 1, 4, GARUDA_FORM_MESSAGE),
		   GARUDA_E_SLOT_RANGE);
	gd_refused(gd_arm(&e.c, gd_slot(&e.s, 60000), 1, 4, GARUDA_FORM_MESSAGE),
		   GARUDA_E_SLOT_RANGE);
	gd_refused(gd_bind(&e.c, gd_slot(&e.s, beyond), efd), GARUDA_E_SLOT_RANGE);
	int r = gd_disarm(&e.c, gd_slot(&e.s, beyond), 4);
	cr_assert(r == GARUDA_E_SLOT_RANGE || r == GARUDA_E_NOT_ARMED, "DISARM beyond: %s",
		  gd_strerr(r));
	r = gd_unbind(&e.c, gd_slot(&e.s, beyond));
	cr_assert(r == GARUDA_E_SLOT_RANGE || r == GARUDA_E_NOT_BOUND, "UNBIND beyond: %s",
		  gd_strerr(r));
	/* last word of the segment is fine */
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, beyond - 1), 1, 5, GARUDA_FORM_MESSAGE));
	gd_store(&e.s, beyond - 1, 1);
	struct garuda_ready rd = expect_ready(&e.c, "last word");
	cr_assert_eq(rd.token, 5);
	close(efd);
	close(efd2);
	gd_ok(gd_unbind(&e.c, gd_slot(&e.s, 0)));
	env_down(&e);
}

/* A blocking (not O_NONBLOCK) eventfd: BIND refuses it with BAD_FD (protocol.md §10:
 * garudad writes only to non-blocking eventfds) and the connection stays. */
Test(ready, blocking_eventfd_bind)
{
	struct env e;
	env_up(&e, 1);
	int efd = eventfd(0, EFD_CLOEXEC);
	gd_refused(gd_bind(&e.c, gd_slot(&e.s, 0), efd), GARUDA_E_BAD_FD);
	gd_refused(gd_arm(&e.c, gd_slot(&e.s, 0), 1, 1, GARUDA_FORM_EVENTFD), GARUDA_E_NOT_BOUND);
	gd_ok(gd_arm(&e.c, gd_slot(&e.s, 1), 1, 2, GARUDA_FORM_MESSAGE));
	gd_store(&e.s, 1, 1);
	struct garuda_ready rd = expect_ready(&e.c, "after a refused BIND");
	cr_assert_eq(rd.token, 2);
	expect_quiet(&e.c, "blocking eventfd");
	close(efd);
	env_down(&e);
}

/* HELLO offering READY_BATCH: the daemon agrees in WELCOME, and arms that fire in one
 * pass arrive packed in READY_BATCH datagrams, each token exactly once. */
Test(ready, ready_batch_feature)
{
	struct gd_daemon d;
	struct gd_client c;
	struct gd_seg s;
	memset(&d, 0, sizeof(d));
	gd_start(&d, NULL);
	gd_ok(gd_connect(&c, d.sock));
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 0);
	m.hello.features = GARUDA_FEATURE_READY_BATCH | 0x40; /* 0x40: unknown, not granted */
	gd_ok(gd_request(&c, &m, NULL, 0, &rep, NULL));
	cr_assert_eq(rep.type, GARUDA_MSG_WELCOME);
	cr_assert_eq(rep.welcome.features, GARUDA_FEATURE_READY_BATCH, "WELCOME features %#x",
		     rep.welcome.features);
	gd_ok(gd_segment_open(&c, 1, -1, &s));

	/* 20 arms on one word, targets 1..20, in two ARM_BATCHes */
	enum { N = 20 };
	for (unsigned b = 0; b < 2; b++) {
		garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 0);
		m.arm_batch.count = N / 2;
		for (unsigned i = 0; i < N / 2; i++)
			m.arm_batch.arm[i] = (struct garuda_arm){ .slot = gd_slot(&s, 0),
								  .target = 1 + b * (N / 2) + i,
								  .token = 1000 + b * (N / 2) + i,
								  .form = GARUDA_FORM_MESSAGE };
		gd_ok(gd_request(&c, &m, NULL, 0, &rep, NULL));
		cr_assert_eq(rep.type, GARUDA_MSG_ACK, "ARM_BATCH answered by %s (code %d)",
			     garuda_msg_type_name(rep.type),
			     rep.type == GARUDA_MSG_ERROR ? rep.error.code : 0);
	}
	cr_assert_eq(gd_wait_status(&d, "armed", N), N);
	expect_quiet(&c, "before the store");

	gd_store(&s, 0, N); /* all twenty reached at once */
	bool seen[N] = { false };
	unsigned got = 0, batches = 0;
	while (got < N) {
		int r = gd_recv(&c, &m, NULL, GD_DEADLINE_MS);
		cr_assert_eq(r, 1, "only %u of %u readiness arrived: %s", got, N, gd_strerr(r));
		const struct garuda_ready *rec = m.type == GARUDA_MSG_READY_BATCH ? m.ready_batch.ready : &m.ready;
		unsigned k = m.type == GARUDA_MSG_READY_BATCH ? m.ready_batch.count : 1;
		cr_assert(m.type == GARUDA_MSG_READY_BATCH || m.type == GARUDA_MSG_READY, "got %s",
			  garuda_msg_type_name(m.type));
		batches += m.type == GARUDA_MSG_READY_BATCH;
		for (unsigned i = 0; i < k; i++) {
			unsigned t = (unsigned)(rec[i].token - 1000);
			cr_assert_lt(t, N, "unknown token %llu", (unsigned long long)rec[i].token);
			cr_assert(!seen[t], "token %u delivered twice", t);
			cr_assert_eq(rec[i].value, N);
			seen[t] = true;
			got++;
		}
	}
	cr_assert_geq(batches, 2, "20 arms fired in one pass: want READY_BATCH datagrams (<= 15 each)");
	expect_quiet(&c, "after every token");
	gd_seg_unmap(&s);
	gd_close(&c);
	gd_stop(&d);
}

/* ARM_BATCH is all or nothing: one bad record refuses the whole batch, naming it. */
Test(ready, arm_batch_all_or_nothing)
{
	struct env e;
	env_up(&e, 1);
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 0);
	m.arm_batch.count = 5;
	for (unsigned i = 0; i < 5; i++)
		m.arm_batch.arm[i] = (struct garuda_arm){ .slot = gd_slot(&e.s, i), .target = 1,
							  .token = i, .form = GARUDA_FORM_MESSAGE };
	m.arm_batch.arm[3].slot.segment = e.s.id + 100; /* not this session's */
	cr_assert_eq(gd_request(&e.c, &m, NULL, 0, &rep, NULL), GARUDA_E_NO_SEGMENT);
	cr_assert_eq(rep.type, GARUDA_MSG_ERROR);
	cr_assert_not_null(strstr(rep.error.text, "record 3"), "error text: %s", rep.error.text);
	m.arm_batch.arm[3].slot = gd_slot(&e.s, 3);
	m.arm_batch.arm[4].form = GARUDA_FORM_EVENTFD; /* no binding */
	cr_assert_eq(gd_request(&e.c, &m, NULL, 0, &rep, NULL), GARUDA_E_NOT_BOUND);
	cr_assert_not_null(strstr(rep.error.text, "record 4"), "error text: %s", rep.error.text);
	cr_assert_eq(gd_status_num(&e.d, "armed"), 0, "a refused batch armed something");
	for (unsigned i = 0; i < 5; i++)
		gd_store(&e.s, i, 1);
	expect_quiet(&e.c, "nothing was armed");
	env_down(&e);
}
