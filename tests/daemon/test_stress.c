/* test_stress.c — 10,000 arms across 8 concurrent clients (threads, one connection
 * each), all three readiness forms mixed: every arm yields exactly one readiness, and
 * none comes before the word reached its target.
 *
 * Each client owns one segment and runs rounds. In round r every one of its 25 words
 * holds r (the previous target) and gets an arm for target r+1: words 0-9 eventfd form
 * (all bound to one eventfd), 10-19 READY messages, 20-24 doorbell. After the arms are
 * acknowledged nothing may have fired (eventfd 0, no READY, doorbell unchanged). Then
 * the client stores r+1 into the words (in varying order) and collects exactly 10
 * eventfd counts, the 10 READY tokens of this round (value r+1) and 5 doorbell bumps.
 * A surplus in any round, or anything left after the last, is a duplicate. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "harness.h"

TestSuite(stress, .init = gd_test_init, .fini = gd_test_fini, .timeout = 600);

#define CLIENTS 8
#define WORDS 25
#define N_EVENTFD 10
#define N_MESSAGE 10
#define N_DOORBELL 5
#define ROUNDS 50 /* 8 clients * 50 rounds * 25 arms = 10,000 */

struct worker {
	struct gd_daemon *d;
	int idx;
	unsigned long arms, eventfd_ready, message_ready, doorbell_ready;
	char err[512];
};

static int fail(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(w->err, sizeof(w->err), "client %d: ", w->idx);
	vsnprintf(w->err + n, sizeof(w->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t token_of(int client, int round, int word)
{
	return ((uint64_t)client << 40) | ((uint64_t)round << 16) | (uint64_t)word;
}

static int run_client(struct worker *w, struct gd_client *c, struct gd_seg *s, int efd)
{
	int r;
	for (int round = 0; round < ROUNDS; round++) {
		uint64_t target = (uint64_t)round + 1;
		uint32_t bell0 = gd_doorbell(s);

		/* pipeline the arms, then collect their ACKs */
		uint64_t cookies[WORDS];
		for (int i = 0; i < WORDS; i++) {
			struct garuda_msg m;
			garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
			m.cookie = cookies[i] = ++c->cookie;
			m.arm.slot = gd_slot(s, (uint32_t)i);
			m.arm.target = target;
			m.arm.token = token_of(w->idx, round, i);
			m.arm.form = i < N_EVENTFD			? GARUDA_FORM_EVENTFD
				     : i < N_EVENTFD + N_MESSAGE ? GARUDA_FORM_MESSAGE
								 : GARUDA_FORM_DOORBELL;
			if ((r = gd_send(c, &m, NULL, 0)))
				return fail(w, "round %d: send ARM: %s", round, gd_strerr(r));
		}
		for (int i = 0; i < WORDS; i++) {
			struct garuda_msg rep;
			if ((r = gd_await(c, cookies[i], &rep, NULL)))
				return fail(w, "round %d: ARM word %d: %s", round, i, gd_strerr(r));
			if (rep.type != GARUDA_MSG_ACK)
				return fail(w, "round %d: ARM answered %s", round,
					    garuda_msg_type_name(rep.type));
			w->arms++;
		}

		/* nothing may have fired: every word still holds `round` */
		uint64_t v;
		if (read(efd, &v, sizeof(v)) == sizeof(v))
			return fail(w, "round %d: eventfd readiness %llu before any store", round,
				    (unsigned long long)v);
		struct garuda_msg early;
		if (gd_quiet(c, 0, &early))
			return fail(w, "round %d: %s (token %llx value %llu) before any store", round,
				    garuda_msg_type_name(early.type),
				    (unsigned long long)early.ready.token,
				    (unsigned long long)early.ready.value);
		if (gd_doorbell(s) != bell0)
			return fail(w, "round %d: doorbell rang before any store", round);

		/* play the GPU */
		for (int i = 0; i < WORDS; i++) {
			int k = (round & 1) ? WORDS - 1 - i : (i * 7) % WORDS;
			gd_store(s, (uint32_t)k, target);
		}

		/* collect */
		uint64_t dl = gd_deadline(GD_DEADLINE_MS);
		long long efd_total = 0;
		unsigned msg_seen = 0; /* bitmask over message words */
		uint32_t bell = bell0;
		while (efd_total < N_EVENTFD || __builtin_popcount(msg_seen) < N_MESSAGE ||
		       (uint32_t)(bell - bell0) < N_DOORBELL) {
			if (gd_left_ms(dl) == 0)
				return fail(w, "round %d: after %d ms: eventfd %lld/%d, READY %d/%d, "
					    "doorbell %u/%d", round, GD_DEADLINE_MS, efd_total,
					    N_EVENTFD, __builtin_popcount(msg_seen), N_MESSAGE,
					    bell - bell0, N_DOORBELL);
			long long n = gd_eventfd_read(efd, 0);
			if (n < 0)
				return fail(w, "eventfd read: %s", strerror((int)-n));
			efd_total += n;
			struct garuda_ready rd;
			while ((r = gd_wait_ready(c, &rd, 0)) == 1) {
				uint64_t want = token_of(w->idx, round, 0);
				int word = (int)(rd.token - want);
				if (rd.token < want + N_EVENTFD || word >= N_EVENTFD + N_MESSAGE)
					return fail(w, "round %d: READY token %llx is not this round's "
						    "message arm (late duplicate?)", round,
						    (unsigned long long)rd.token);
				if (msg_seen & (1u << (word - N_EVENTFD)))
					return fail(w, "round %d: second READY for word %d", round, word);
				if (rd.value != target)
					return fail(w, "round %d: READY value %llu, target %llu",
						    round, (unsigned long long)rd.value,
						    (unsigned long long)target);
				if (rd.slot.segment != s->id || rd.slot.index != (uint32_t)word)
					return fail(w, "round %d: READY slot %u:%u for word %d", round,
						    rd.slot.segment, rd.slot.index, word);
				if (rd.flags)
					return fail(w, "round %d: READY flags %x", round, rd.flags);
				msg_seen |= 1u << (word - N_EVENTFD);
				w->message_ready++;
			}
			if (r != 0)
				return fail(w, "round %d: waiting for READY: %s", round, gd_strerr(r));
			bell = gd_doorbell(s);
			if (efd_total > N_EVENTFD)
				return fail(w, "round %d: eventfd counted %lld for %d arms", round,
					    efd_total, N_EVENTFD);
			if ((uint32_t)(bell - bell0) > N_DOORBELL)
				return fail(w, "round %d: doorbell moved %u for %d arms", round,
					    bell - bell0, N_DOORBELL);
			bool efd_due = efd_total < N_EVENTFD;
			bool msg_due = __builtin_popcount(msg_seen) < N_MESSAGE;
			bool bell_due = (uint32_t)(bell - bell0) < N_DOORBELL;
			if (bell_due) {
				/* the doorbell is a futex: wait on it briefly, then look again */
				gd_doorbell_wait(s, bell, NULL, (efd_due || msg_due) ? 1 : 100);
			} else if (efd_due || msg_due) {
				struct pollfd p[2] = { { .fd = efd_due ? efd : -1, .events = POLLIN },
						       { .fd = msg_due ? c->fd : -1, .events = POLLIN } };
				poll(p, 2, 100);
			}
		}
		w->eventfd_ready += N_EVENTFD;
		w->doorbell_ready += N_DOORBELL;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct gd_client c;
	struct gd_seg s;
	int efd = -1, r;
	if ((r = gd_open(&c, w->d->sock))) {
		fail(w, "connect: %s", gd_strerr(r));
		return NULL;
	}
	if ((r = gd_segment_open(&c, 4, -1, &s))) {
		fail(w, "SEGMENT_OPEN: %s", gd_strerr(r));
		gd_close(&c);
		return NULL;
	}
	efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (uint32_t i = 0; i < N_EVENTFD && !w->err[0]; i++)
		if ((r = gd_bind(&c, gd_slot(&s, i), efd)))
			fail(w, "BIND word %u: %s", i, gd_strerr(r));
	if (!w->err[0] && run_client(w, &c, &s, efd) == 0) {
		/* after the last round nothing more may come */
		uint32_t bell = gd_doorbell(&s);
		struct garuda_msg m;
		long long n;
		if (gd_quiet(&c, 100, &m))
			fail(w, "%s (token %llx) after the last round", garuda_msg_type_name(m.type),
			     (unsigned long long)m.ready.token);
		else if ((n = gd_eventfd_read(efd, 0)) != 0)
			fail(w, "eventfd %lld after the last round", n);
		else if (gd_doorbell(&s) != bell)
			fail(w, "doorbell moved after the last round");
	}
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
	return NULL;
}

Test(stress, ten_thousand_arms_eight_clients)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	long long completions0 = gd_status_num(&d, "completions");
	struct worker w[CLIENTS];
	pthread_t t[CLIENTS];
	for (int i = 0; i < CLIENTS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].d = &d;
		w[i].idx = i;
		cr_assert_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	unsigned long arms = 0, readies = 0;
	int failed = -1;
	for (int i = 0; i < CLIENTS; i++) {
		if (w[i].err[0]) {
			cr_log_error("%s", w[i].err);
			if (failed < 0)
				failed = i;
		}
		arms += w[i].arms;
		readies += w[i].eventfd_ready + w[i].message_ready + w[i].doorbell_ready;
	}
	cr_assert_eq(failed, -1, "%s", failed >= 0 ? w[failed].err : "");
	cr_assert_eq(arms, CLIENTS * ROUNDS * WORDS, "%lu arms acknowledged", arms);
	cr_assert_eq(readies, arms, "%lu readiness for %lu arms", readies, arms);
	cr_log_info("%lu arms, %lu readiness, exactly one each", arms, readies);
	cr_assert_eq(gd_wait_status(&d, "armed", 0), 0);
	cr_assert_eq(gd_wait_status(&d, "clients", 0), 0);
	if (completions0 >= 0) {
		long long c = gd_status_num(&d, "completions");
		cr_assert_eq(c - completions0, (long long)arms, "status completions moved by %lld",
			     c - completions0);
	}
	gd_stop(&d);
}

/* Many descriptors armed at once: 60,000 eventfd-form arms (64 slots bound to one
 * eventfd, 940 targets each) on one connection and 60,000 doorbell-form arms on
 * another. Storing half the targets yields exactly half the readiness; the rest comes
 * with the second store; nothing extra. */
#define BIG_SLOTS 64
#define BIG_TARGETS 940 /* 64 * 940 = 60,160 arms per client */

static void arm_many(struct gd_client *c, struct gd_seg *s, uint8_t form)
{
	for (uint32_t t = 1; t <= BIG_TARGETS; t++)
		for (uint32_t i = 0; i < BIG_SLOTS; i++) {
			int r = gd_arm_flags(c, gd_slot(s, i), t, t * 1000 + i, form, GARUDA_F_NOREPLY);
			cr_assert_eq(r, 0, "arm: %s", gd_strerr(r));
		}
}

static long long eventfd_until(int efd, long long want)
{
	long long total = 0;
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	while (total < want && gd_left_ms(dl) > 0) {
		long long n = gd_eventfd_read(efd, gd_left_ms(dl));
		if (n < 0)
			break;
		total += n;
	}
	return total;
}

static uint32_t doorbell_until(struct gd_seg *s, uint32_t from, uint32_t want)
{
	uint64_t dl = gd_deadline(GD_DEADLINE_MS);
	uint32_t now = gd_doorbell(s);
	while ((uint32_t)(now - from) < want && gd_left_ms(dl) > 0)
		gd_doorbell_wait(s, now, &now, 100);
	return now - from;
}

Test(stress, many_armed_at_once)
{
	struct gd_daemon d = { 0 };
	gd_start(&d, NULL);
	struct gd_client a, b;
	struct gd_seg sa, sb;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	gd_ok(gd_open(&a, d.sock));
	gd_ok(gd_open(&b, d.sock));
	gd_ok(gd_segment_open(&a, BIG_SLOTS / 8, -1, &sa));
	gd_ok(gd_segment_open(&b, BIG_SLOTS / 8, -1, &sb));
	for (uint32_t i = 0; i < BIG_SLOTS; i++)
		gd_ok(gd_bind(&a, gd_slot(&sa, i), efd));
	arm_many(&a, &sa, GARUDA_FORM_EVENTFD);
	arm_many(&b, &sb, GARUDA_FORM_DOORBELL);
	const long long per = (long long)BIG_SLOTS * BIG_TARGETS;
	long long armed = gd_wait_status(&d, "armed", 2 * per);
	cr_assert_eq(armed, 2 * per, "status armed %lld, expected %lld", armed, 2 * per);
	cr_assert_eq(gd_quiet(&a, 0, NULL), 0, "an error or message after the arms");
	cr_assert_eq(gd_quiet(&b, 0, NULL), 0, "an error or message after the arms");
	cr_assert_eq(gd_eventfd_read(efd, 0), 0, "eventfd readiness before any store");
	uint32_t bell0 = gd_doorbell(&sb);

	/* half */
	for (uint32_t i = 0; i < BIG_SLOTS; i++) {
		gd_store(&sa, i, BIG_TARGETS / 2);
		gd_store(&sb, i, BIG_TARGETS / 2);
	}
	const long long half = (long long)BIG_SLOTS * (BIG_TARGETS / 2);
	long long n = eventfd_until(efd, half);
	cr_assert_eq(n, half, "eventfd total %lld after reaching half the targets, expected %lld",
		     n, half);
	uint32_t bells = doorbell_until(&sb, bell0, (uint32_t)half);
	cr_assert_eq(bells, (uint32_t)half, "doorbell moved %u, expected %lld", bells, half);
	cr_assert_eq(gd_wait_status(&d, "armed", 2 * (per - half)), 2 * (per - half));
	cr_assert_eq(gd_eventfd_read(efd, GD_QUIET_MS), 0, "eventfd beyond half");
	cr_assert_eq(gd_doorbell(&sb), bell0 + (uint32_t)half, "doorbell beyond half");

	/* the rest */
	for (uint32_t i = 0; i < BIG_SLOTS; i++) {
		gd_store(&sa, i, BIG_TARGETS);
		gd_store(&sb, i, BIG_TARGETS);
	}
	n = eventfd_until(efd, per - half);
	cr_assert_eq(n, per - half, "eventfd total %lld for the rest, expected %lld", n, per - half);
	bells = doorbell_until(&sb, bell0, (uint32_t)per);
	cr_assert_eq(bells, (uint32_t)per, "doorbell moved %u in all, expected %lld", bells, per);
	cr_assert_eq(gd_wait_status(&d, "armed", 0), 0);
	cr_assert_eq(gd_eventfd_read(efd, GD_QUIET_MS), 0, "eventfd: extra readiness");
	cr_assert_eq(gd_doorbell(&sb), bell0 + (uint32_t)per, "doorbell: extra readiness");
	cr_assert_eq(gd_quiet(&a, 0, NULL), 0);
	cr_assert_eq(gd_quiet(&b, 0, NULL), 0);
	cr_log_info("%lld descriptors armed at once, each fired exactly once", 2 * per);
	close(efd);
	gd_seg_unmap(&sa);
	gd_seg_unmap(&sb);
	gd_close(&a);
	gd_close(&b);
	gd_stop(&d);
}
