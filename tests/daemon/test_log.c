/* test_log.c — daemon/log.c's limit on the lines clients can trigger, as pure code on a
 * simulated clock (log_limiter_allow). Checked: one uid that floods gets its burst and
 * then its rate, and never takes another uid's lines (each uid its own bucket); what
 * was dropped is said with the uid's next line; all uids together are held to the
 * limit for all, and what that dropped is said too; a uid whose slot another took (the
 * 65th to log) loses no count of its dropped lines: the line that took it says them.
 */
#include <criterion/criterion.h>

#include "fdcheck.h"
#include "log.h"

TestSuite(log, .init = fdcheck_begin, .fini = fdcheck_end);

#define MS 1000000ull
#define S 1000000000ull

static unsigned allowed(struct log_limiter *l, uid_t uid, uint64_t now, unsigned tries, struct log_report *last)
{
	unsigned n = 0;
	for (unsigned i = 0; i < tries; i++) {
		struct log_report r;
		if (log_limiter_allow(l, uid, now, &r)) {
			n++;
			*last = r;
		}
	}
	return n;
}

Test(log, a_flooding_uid_gets_its_burst_and_rate_and_never_another_uids_lines)
{
	static struct log_limiter l;
	struct log_report r = { 0 };
	uint64_t now = 1 * S;
	cr_assert_eq(allowed(&l, 1000, now, 1000, &r), LOG_BURST, "the flood's burst");
	cr_assert_eq(allowed(&l, 1001, now, 1, &r), 1, "another uid's line, in the same instant");
	cr_assert_eq(r.uid_suppressed, 0);
	cr_assert_eq(allowed(&l, LOG_UID_NONE, now, 1, &r), 1, "and the daemon's own");
	/* a second later: LOG_RATE more, the first saying what was dropped */
	now += 1 * S;
	struct log_report first;
	cr_assert(log_limiter_allow(&l, 1000, now, &first));
	cr_assert_eq(first.uid_suppressed, 1000 - LOG_BURST, "dropped: %lu", first.uid_suppressed);
	cr_assert_eq(allowed(&l, 1000, now, 1000, &r), LOG_RATE - 1);
	cr_assert_eq(r.uid_suppressed, 0, "said once");
}

Test(log, all_uids_together_are_held_to_the_limit_for_all)
{
	static struct log_limiter l;
	struct log_report r = { 0 };
	uint64_t now = 1 * S;
	unsigned n = 0;
	for (uid_t u = 0; u < 30; u++) /* 30 x LOG_BURST = 600 asked at once */
		n += allowed(&l, u, now, LOG_BURST, &r);
	cr_assert_eq(n, LOG_ALL_BURST);
	now += 100 * MS; /* LOG_ALL_RATE / 10 for all; a uid that had none yet goes first */
	struct log_report first;
	cr_assert(log_limiter_allow(&l, 29, now, &first));
	cr_assert_eq(first.others_suppressed, 30 * LOG_BURST - LOG_ALL_BURST, "%lu", first.others_suppressed);
	cr_assert_eq(first.uid_suppressed, 0, "uid 29's own bucket dropped nothing");
}

Test(log, a_uid_that_loses_its_slot_loses_no_count)
{
	static struct log_limiter l;
	struct log_report r = { 0 };
	uint64_t now = 1 * S;
	cr_assert_eq(allowed(&l, 7, now, LOG_BURST + 5, &r), LOG_BURST); /* 5 dropped */
	for (uid_t u = 100; u < 100 + LOG_TENANTS; u++) { /* each newer than uid 7's */
		now += 1 * MS;
		cr_assert_eq(allowed(&l, u, now, 1, &r), 1);
		/* the last of them takes uid 7's slot (the oldest): its line says uid 7's 5 */
		cr_assert_eq(r.others_suppressed, u == 100 + LOG_TENANTS - 1 ? 5 : 0, "uid %u's line: %lu",
			     (unsigned)u, r.others_suppressed);
	}
	now += 1 * S;
	struct log_report back;
	cr_assert(log_limiter_allow(&l, 7, now, &back), "uid 7 again: a fresh bucket");
	cr_assert_eq(back.uid_suppressed + back.others_suppressed, 0, "said once already");
}
