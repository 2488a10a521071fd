/* tenants.c — benchmark 7 (issue 29): what one tenant's waits cost garudad, and
 * another tenant.
 *
 * One garudad (scanners 1, its default plan; quotas raised so that A can hold
 * 1,048,576 arms: quota.connection.armed, quota.uid.armed, quota.cgroup.armed).
 *
 * Tenant A is a process of its own: uid 65534 (when the bench runs as root; else the
 * bench's own uid, and the output says so), in a cgroup v2 group of its own when the
 * cgroup2 mount is writable (tests/common/cgroup.h; else the bench's group, said so).
 * It opens one connection per 65,536 arms it will hold, each with one 2,048-line
 * segment (16,384 words), and arms in the doorbell form, over ARM_BATCH (NOREPLY), on
 * words that never move: arm j of a connection waits on word j % 16,384 for target
 * j / 16,384 + 1 (a tenant with many streams, each with up to 4 sequences queued), so
 * N arms use min(N, 16,384) words per connection. It then does nothing, or churns:
 * on its first connection, while its arms stay held, an ARM_BATCH of 15 fresh arms
 * and their 15 DISARMs (the last acknowledged, so the next batch is never refused by
 * a quota), again and again, as fast as the daemon answers.
 *
 * Idle arms: A holds N = 1, 1,000, 65,536, 1,048,576 (quick: 1, 1,000, 65,536), added
 * rung by rung. For each N, garudad's CPU (the process's CPU clock, all threads) over
 * the window [armed + W, armed + 2W], W = 10 s (quick 3 s), as % of a core, where
 * "armed" is when the control socket first reports N armed; and garudad's VmRSS then,
 * against its VmRSS before A's first arm (A connected, its segments open): RSS per
 * armed wait. No control request is made inside a window.
 *
 * Tenant B is the bench's own uid: 2 streams of fixed 1 ms kernels (the plans
 * section's garudad streams, plans.c: eventfd form over the raw protocol, a producer
 * process stores after the kernel; store -> wake), with A none (connected, no arms:
 * the baseline), A loaded (A holding 65,536 idle arms; full mode also 1,048,576) and A
 * churning (holding 65,536, plus the churn), and A churning on one deep word (the same, with
 * TA_DEEP more arms on word 0 of its first connection, one token for them all, and
 * the churn's 15 arms on that word too: each DISARM names a word of TA_DEEP + 19
 * arms; the extra arms go with one DISARM when the churn ends), and A churning out of
 * order (the same, but the word's TA_DEEP arms wait for targets below and above the
 * churn's, half each, so that each churn ARM's place is in the middle of the word's
 * queue), and A storing to a wide word (widestore: on a connection of its own, TA_DEEP
 * arms on one word in no order, the word stored to every 20 us, each other store
 * reaching the next arm, so that garudad looks at it often), and A ending sessions that
 * hold arms (dropcycle: a connection of its own, TA_PER_CONN idle arms, closed, again
 * and again), and A closing segments that hold arms (closecycle: the same on one
 * connection that stays, a segment opened, armed and closed, again), and A binding and
 * unbinding an eventfd (unbindcycle: on a connection of its own, TA_DEEP idle arms on
 * word 0; A binds that slot, arms one wait of the eventfd form on it and UNBINDs, again
 * and again). Rows: B's p50 and p99 and their deltas
 * against the baseline in us, garudad CPU per B completion and its ratio to the
 * baseline's; each figure is the best of B_RUNS (3) runs, taken after the idle rungs
 * in B_RUNS rounds of every row once (A drops its arms, closing its connections,
 * before each round's baseline, then arms up row by row; each row's run W after A's
 * change, its arms as old as in the idle windows), so that every row samples the same
 * minutes of the host; one run before them all is not counted. The section
 * prints issue 29's targets as verdicts; like every timing in this bench they never
 * fail the run. GARUDA_BENCH_TENANT_RUNGS (e.g. "1048576": A's
 * holds, ascending) runs only those rungs, GARUDA_BENCH_TENANT_ROWS (e.g.
 * "dropcycle,closecycle") only those of B's loaded rows (development).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "bench.h"
#include "benchd.h"
#include "cgroup.h"
#include "raw.h"

#define TA_UID 65534u        /* nobody, when the bench is root */
#define TA_PER_CONN 65536u   /* arms per connection of A */
#define TA_TPW 4u            /* targets per word */
#define TA_WORDS (TA_PER_CONN / TA_TPW)
#define TA_LINES (TA_WORDS / GARUDA_WORDS_PER_LINE)
#define TA_CHURN 15u         /* one ARM_BATCH: GARUDA_BATCH_MAX */
#define TA_CHURN_TARGET 1000000ull
#define TA_CHURN_TOKEN (1ull << 62)
#define TA_DEEP 32768u       /* deep churn: arms held on word 0 besides A's hold */
#define TA_DEEP_TOKEN (1ull << 61)
#define TA_QUOTA_ARMED 2000000u
#define TA_IDLE_MS (20u * 60u * 1000u) /* A waits this long for a command at most */
#define B_STREAMS 2u
#define B_RUNS 3u            /* runs per B row; each figure is the best of them */

_Static_assert(TA_CHURN <= GARUDA_BATCH_MAX, "one churn batch is one ARM_BATCH");
_Static_assert(TA_WORDS % GARUDA_WORDS_PER_LINE == 0, "whole lines");

enum ta_cmd {
	TA_ARM = 1, TA_CHURN_RUN, TA_CHURN_DEEP_RUN, TA_CHURN_DISORDER_RUN, TA_WIDE_RUN, TA_DROPCYCLE_RUN, TA_CLOSECYCLE_RUN, TA_DROP,
	TA_UNBINDCYCLE_RUN, TA_EXIT
};
#define TA_WIDE_PAUSE_NS 20000ull /* widestore: between A's stores */

/* shared between A and the bench */
struct ta_shm {
	_Alignas(64) uint32_t cmd_seq; /* bench -> A: command number (2, 3, ...) */
	_Alignas(64) uint32_t ack_seq; /* A -> bench: 1 set up, then the last command done */
	_Alignas(64) uint32_t stop;    /* bench -> A: end the churn */
	uint32_t cmd;
	uint64_t arg;          /* TA_ARM: arms to hold in all */
	uint64_t held;         /* arms sent and held */
	uint64_t churn_cycles; /* batches of 15 ARMs + 15 DISARMs (widestore: stores; the *cycle rows: cycles) */
	uint64_t churn_ns;
	int err;               /* A broke (msg says how) */
	int cg_err;            /* moving into the group: 0, -errno */
	uint32_t uid;
	char cgroup[256];      /* A's /proc/self/cgroup "0::" path */
	char msg[200];
};

struct ta_ctx {
	struct ta_shm *sh;
	const char *sock;
	const struct cg_group *cg; /* NULL: stay in the bench's group */
	uid_t uid;                 /* == geteuid(): stay */
	unsigned conns;
};

static void ta_fail(struct ta_shm *sh, const char *what, int code)
{
	if (!sh->err)
		snprintf(sh->msg, sizeof(sh->msg), "%s (%d: %s)", what, code, gd_strerr(code));
	sh->err = code ? code : -EIO;
}

static void ta_arm_to(struct ta_shm *sh, struct rc *c, unsigned conns, struct rc_arm_req *reqs, uint64_t want)
{
	uint64_t k = sh->held;
	if (want > (uint64_t)conns * TA_PER_CONN) {
		ta_fail(sh, "more arms asked than A's connections hold", -EINVAL);
		return;
	}
	while (k < want) {
		unsigned conn = (unsigned)(k / TA_PER_CONN), n = 0;
		uint64_t end = ((uint64_t)conn + 1) * TA_PER_CONN < want ? ((uint64_t)conn + 1) * TA_PER_CONN : want;
		for (; k < end; k++) {
			uint32_t j = (uint32_t)(k % TA_PER_CONN);
			reqs[n++] = (struct rc_arm_req){ .index = j % TA_WORDS, .target = j / TA_WORDS + 1,
							 .token = k + 1, .form = GARUDA_FORM_DOORBELL };
		}
		int r = rc_arm_batched(&c[conn], reqs, n);
		if (r < 0) {
			ta_fail(sh, "A: ARM_BATCH failed", r);
			return;
		}
	}
	sh->held = want;
}

/* Every arm A holds given up: its connections closed (garudad ends their sessions and
 * drops what they armed) and opened afresh, each with its segment. */
static void ta_drop(struct ta_shm *sh, struct rc *c, unsigned conns, const char *sock)
{
	for (unsigned i = 0; i < conns; i++) {
		rc_close(&c[i]);
		int e = rc_connect(&c[i], sock);
		if (!e)
			e = rc_segment_open(&c[i], TA_LINES, false, NULL);
		if (e) {
			ta_fail(sh, "A: reconnect after a drop failed", e);
			return;
		}
	}
	sh->held = 0;
}

/* 15 fresh arms and their 15 DISARMs on A's first connection, until told to stop;
 * deep (TA_CHURN_DEEP_RUN, TA_CHURN_DISORDER_RUN): on word 0 alone, which holds
 * TA_DEEP more arms meanwhile (deep_reqs), for the churn's target or (disorder) half
 * below and half above it */
static void ta_churn(struct ta_shm *sh, struct rc *c, enum ta_cmd how, struct rc_arm_req *deep_reqs)
{
	struct rc_arm_req reqs[TA_CHURN];
	uint64_t t0 = now_ns(), cyc = 0;
	bool deep = how != TA_CHURN_RUN;
	if (deep) {
		for (unsigned i = 0; i < TA_DEEP; i++)
			deep_reqs[i] = (struct rc_arm_req){
				.index = 0,
				.target = how == TA_CHURN_DEEP_RUN ? TA_CHURN_TARGET
					  : i < TA_DEEP / 2        ? TA_CHURN_TARGET - TA_DEEP + i
								   : TA_CHURN_TARGET + i,
				.token = TA_DEEP_TOKEN,
				.form = GARUDA_FORM_DOORBELL };
		int r = rc_arm_batched(c, deep_reqs, TA_DEEP);
		if (r < 0) {
			ta_fail(sh, "A deep churn: ARM_BATCH of the deep word failed", r);
			return;
		}
	}
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		uint64_t tok = TA_CHURN_TOKEN + cyc * TA_CHURN;
		for (unsigned i = 0; i < TA_CHURN; i++)
			reqs[i] = (struct rc_arm_req){ .index = deep ? 0 : i, .target = TA_CHURN_TARGET,
						       .token = tok + i, .form = GARUDA_FORM_DOORBELL };
		int r = rc_arm_batched(c, reqs, TA_CHURN); /* TA_CHURN sent, or -errno */
		if (r < 0) {
			ta_fail(sh, "A churn: ARM_BATCH failed", r);
			break;
		}
		r = 0;
		for (unsigned i = 0; i + 1 < TA_CHURN && !r; i++) {
			struct garuda_msg m;
			garuda_msg_init(&m, GARUDA_MSG_DISARM, 0);
			m.flags = GARUDA_F_NOREPLY;
			m.disarm.slot = gd_slot(&c->seg, deep ? 0 : i);
			m.disarm.token = tok + i;
			r = gd_request(&c->raw, &m, NULL, 0, NULL, NULL);
		}
		/* the last one answered: every DISARM before it is done (one scanner, in order) */
		if (!r)
			r = gd_disarm(&c->raw, gd_slot(&c->seg, deep ? 0 : TA_CHURN - 1), tok + TA_CHURN - 1);
		if (!r && c->raw.qlen) /* an ERROR for a NOREPLY request came meanwhile */
			r = c->raw.q[c->raw.qhead].m.type == GARUDA_MSG_ERROR ? c->raw.q[c->raw.qhead].m.error.code
									     : -EPROTO;
		if (r) {
			ta_fail(sh, "A churn: DISARM failed", r);
			break;
		}
		__atomic_store_n(&sh->churn_cycles, ++cyc, __ATOMIC_RELAXED);
	}
	sh->churn_ns = now_ns() - t0;
	int r;
	if (deep && !sh->err && (r = gd_disarm(&c->raw, gd_slot(&c->seg, 0), TA_DEEP_TOKEN)))
		ta_fail(sh, "A deep churn: DISARM of the deep word's arms failed", r);
}

/* widestore (TA_WIDE_RUN): on a connection of its own, word 0 holds TA_DEEP arms in
 * no order (targets 2, 4, ..., then one odd one mid-queue: its place is deeper than
 * GARUDA_WATCH_ORDER_WALK from both ends, so the word is wide), and A stores 1, 2, 3,
 * ... to it, one every TA_WIDE_PAUSE_NS: each other store reaches the next wait, so
 * that garudad looks at the word as at a busy stream's, again and again. Arms again
 * above the value when they have all fired; the connection's close takes what is
 * left. */
/* A connection of A's own with a one-line segment (map: mapped); false (failed, why
 * said) if it could not be made. */
static bool ta_connect_own(struct ta_shm *sh, const char *sock, struct rc *c, bool map, const char *why)
{
	int r = rc_connect(c, sock);
	if (!r && (r = rc_segment_open(c, 1, map, NULL)))
		rc_close(c);
	if (r)
		ta_fail(sh, why, r);
	return r == 0;
}

static void ta_wide(struct ta_shm *sh, const char *sock, struct rc_arm_req *reqs)
{
	struct rc c;
	int r;
	if (!ta_connect_own(sh, sock, &c, true, "A widestore: connect or SEGMENT_OPEN failed"))
		return;
	uint64_t t0 = now_ns(), cyc = 0, base = 0;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		for (unsigned i = 0; i < TA_DEEP; i++)
			reqs[i] = (struct rc_arm_req){ .index = 0, .target = base + 2 * (i + 1),
						       .token = TA_DEEP_TOKEN, .form = GARUDA_FORM_DOORBELL };
		reqs[TA_DEEP] = (struct rc_arm_req){ .index = 0, .target = base + TA_DEEP + 1,
						     .token = TA_DEEP_TOKEN, .form = GARUDA_FORM_DOORBELL };
		if ((r = rc_arm_batched(&c, reqs, TA_DEEP + 1)) < 0) {
			ta_fail(sh, "A widestore: ARM_BATCH failed", r);
			break;
		}
		for (uint64_t k = 1; k <= 2 * TA_DEEP && !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE); k++) {
			gd_store(&c.seg, 0, base + k);
			__atomic_store_n(&sh->churn_cycles, ++cyc, __ATOMIC_RELAXED);
			sleep_ns(TA_WIDE_PAUSE_NS);
		}
		base += 2 * TA_DEEP;
	}
	sh->churn_ns = now_ns() - t0;
	rc_close(&c);
}

/* dropcycle (TA_DROPCYCLE_RUN): a connection of its own, TA_PER_CONN idle arms on it
 * (A's hold layout), closed at once (garudad drops them all with the session), again
 * and again. closecycle (TA_CLOSECYCLE_RUN, segments): one connection that stays, a
 * segment opened, armed the same and closed (SEGMENT_CLOSE, answered once garudad
 * dropped its arms), again and again. */
static void ta_dropcycle(struct ta_shm *sh, const char *sock, struct rc_arm_req *reqs, bool segments)
{
	uint64_t t0 = now_ns(), cyc = 0;
	for (uint32_t j = 0; j < TA_PER_CONN; j++)
		reqs[j] = (struct rc_arm_req){ .index = j % TA_WORDS, .target = j / TA_WORDS + 1, .token = j + 1,
					       .form = GARUDA_FORM_DOORBELL };
	unsigned refused = 0; /* in a row */
	struct rc kept;
	bool connected = false;
	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		struct rc once, *c = segments ? &kept : &once;
		int r = 0;
		if (!connected && (r = rc_connect(c, sock)) == 0)
			connected = segments;
		if (r == 0 && (r = rc_segment_open(c, TA_LINES, false, NULL)) == 0) {
			r = rc_arm_batched(c, reqs, TA_PER_CONN);
			if (segments) {
				int closed = gd_segment_close(&c->raw, c->seg.id);
				r = r < 0 ? r : closed;
			}
		}
		if (c == &once || (r < 0 && connected)) {
			rc_close(c);
			connected = false;
		}
		/* refused (A's ended sessions, their arms not all taken out yet, hold its
		 * quota of connections or lines): A waits for its own quota, as it must */
		if (r < 0 && ++refused < 5000) {
			sleep_ns(1000000);
			continue;
		}
		if (r < 0) {
			ta_fail(sh, segments ? "A closecycle: connect, SEGMENT_OPEN, ARM_BATCH or SEGMENT_CLOSE refused for 5 s"
					     : "A dropcycle: connect, SEGMENT_OPEN or ARM_BATCH refused for 5 s", r);
			break;
		}
		refused = 0;
		__atomic_store_n(&sh->churn_cycles, ++cyc, __ATOMIC_RELAXED);
	}
	if (connected)
		rc_close(&kept);
	sh->churn_ns = now_ns() - t0;
}

/* unbindcycle (TA_UNBINDCYCLE_RUN): on a connection of its own, word 0 holds TA_DEEP
 * idle arms of the doorbell form; A binds that slot's eventfd, arms one wait of the
 * eventfd form on it and UNBINDs (answered once garudad dropped the binding), again and
 * again. The connection's close takes the rest. */
static void ta_unbindcycle(struct ta_shm *sh, const char *sock, struct rc_arm_req *reqs)
{
	struct rc c;
	int r;
	if (!ta_connect_own(sh, sock, &c, false, "A unbindcycle: connect or SEGMENT_OPEN failed"))
		return;
	for (unsigned i = 0; i < TA_DEEP; i++)
		reqs[i] = (struct rc_arm_req){ .index = 0, .target = 1, .token = TA_DEEP_TOKEN,
					       .form = GARUDA_FORM_DOORBELL };
	uint64_t t0 = now_ns(), cyc = 0;
	if ((r = rc_arm_batched(&c, reqs, TA_DEEP)) < 0)
		ta_fail(sh, "A unbindcycle: ARM_BATCH failed", r);
	const struct garuda_slot slot = { .segment = c.seg.id, .index = 0 };
	while (r >= 0 && !__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		r = efd < 0 ? -errno : rc_bind(&c, 0, efd);
		if (r >= 0)
			r = rc_arm(&c, 0, 2, 1, GARUDA_FORM_EVENTFD);
		if (r >= 0)
			r = gd_unbind(&c.raw, slot);
		if (efd >= 0)
			close(efd);
		if (r < 0)
			ta_fail(sh, "A unbindcycle: BIND, ARM or UNBIND failed", r);
		else
			__atomic_store_n(&sh->churn_cycles, ++cyc, __ATOMIC_RELAXED);
	}
	rc_close(&c);
	sh->churn_ns = now_ns() - t0;
}

static int ta_main(void *arg)
{
	struct ta_ctx *t = arg;
	struct ta_shm *sh = t->sh;
	pid_t parent = getppid();
	if (t->cg) {
		char procs[300];
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", t->cg->dir);
		int fd = open(procs, O_WRONLY | O_CLOEXEC);
		sh->cg_err = fd < 0 || write(fd, "0", 1) != 1 ? -errno : 0;
		if (fd >= 0)
			close(fd);
	}
	if (t->uid != geteuid()) {
		if (setgroups(0, NULL) < 0 || setresgid(t->uid, t->uid, t->uid) < 0 ||
		    setresuid(t->uid, t->uid, t->uid) < 0) {
			ta_fail(sh, "A: cannot become the tenant's uid", -errno);
			futex_set(&sh->ack_seq, 1);
			return 1;
		}
		/* a change of credentials clears the parent-death signal */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			return 1;
	}
	sh->uid = (uint32_t)geteuid();
	if (cg_self(sh->cgroup, sizeof(sh->cgroup)) < 0)
		snprintf(sh->cgroup, sizeof(sh->cgroup), "?");
	struct rc *c = calloc(t->conns, sizeof(*c));
	struct rc_arm_req *reqs = calloc(TA_PER_CONN > TA_DEEP ? TA_PER_CONN : TA_DEEP + 1, sizeof(*reqs));
	unsigned open = 0;
	int rc = 1;
	if (!c || !reqs) {
		ta_fail(sh, "A: out of memory", -ENOMEM);
		futex_set(&sh->ack_seq, 1);
		goto out;
	}
	for (; open < t->conns; open++) {
		int e = rc_connect(&c[open], t->sock);
		if (!e && (e = rc_segment_open(&c[open], TA_LINES, false, NULL)))
			open++; /* connected: close it too */
		if (e) {
			ta_fail(sh, "A: connect or SEGMENT_OPEN failed", e);
			futex_set(&sh->ack_seq, 1);
			goto out;
		}
	}
	futex_set(&sh->ack_seq, 1);
	for (uint32_t seen = 1;;) {
		if (futex_wait_ge(&sh->cmd_seq, seen + 1, (uint64_t)TA_IDLE_MS * 1000000ull) < 0) {
			ta_fail(sh, "A: no command came", -ETIMEDOUT);
			goto out;
		}
		seen = __atomic_load_n(&sh->cmd_seq, __ATOMIC_ACQUIRE);
		enum ta_cmd cmd = (enum ta_cmd)sh->cmd;
		if (cmd == TA_ARM)
			ta_arm_to(sh, c, t->conns, reqs, sh->arg);
		else if (cmd == TA_CHURN_RUN || cmd == TA_CHURN_DEEP_RUN || cmd == TA_CHURN_DISORDER_RUN)
			ta_churn(sh, &c[0], cmd, reqs);
		else if (cmd == TA_WIDE_RUN)
			ta_wide(sh, t->sock, reqs);
		else if (cmd == TA_DROPCYCLE_RUN || cmd == TA_CLOSECYCLE_RUN)
			ta_dropcycle(sh, t->sock, reqs, cmd == TA_CLOSECYCLE_RUN);
		else if (cmd == TA_UNBINDCYCLE_RUN)
			ta_unbindcycle(sh, t->sock, reqs);
		else if (cmd == TA_DROP)
			ta_drop(sh, c, t->conns, t->sock);
		futex_set(&sh->ack_seq, seen);
		if (cmd == TA_EXIT || sh->err)
			break;
	}
	rc = sh->err ? 1 : 0;
out:
	for (unsigned i = 0; c && i < open; i++)
		rc_close(&c[i]);
	free(c);
	free(reqs);
	return rc;
}

/* ---------------------------------------------------------------- bench side */

struct tenant_a {
	struct ta_shm *sh;
	pid_t pid;
	uint32_t seq;
};

static int ta_start(struct bench *b, struct tenant_a *a, struct ta_ctx *ctx)
{
	memset(a->sh, 0, sizeof(*a->sh));
	a->seq = 1;
	ctx->sh = a->sh;
	a->pid = child_start(ta_main, ctx);
	if (a->pid < 0) {
		bench_fail(b, "tenants: cannot fork tenant A (%d)", (int)a->pid);
		return -1;
	}
	if (futex_wait_ge(&a->sh->ack_seq, 1, 6ull * BENCH_HANG_MS * 1000000ull) < 0 || a->sh->err)
		return -1; /* the caller says why (it may retry as its own uid) */
	return 0;
}

/* Send a command; wait for its end (wait = false: only send). 0 or -1 (recorded). */
static int ta_cmd(struct bench *b, struct tenant_a *a, enum ta_cmd cmd, uint64_t arg, bool wait)
{
	a->sh->cmd = cmd;
	a->sh->arg = arg;
	futex_set(&a->sh->cmd_seq, ++a->seq);
	if (wait && futex_wait_ge(&a->sh->ack_seq, a->seq, 6ull * BENCH_HANG_MS * 1000000ull) < 0) {
		bench_fail(b, "tenants: tenant A did not finish a command");
		return -1;
	}
	if (a->sh->err) {
		bench_fail(b, "tenants: %s", a->sh->msg);
		return -1;
	}
	return 0;
}

/* A told to exit (or killed), reaped. */
static void ta_stop(struct bench *b, struct tenant_a *a)
{
	if (a->pid <= 0)
		return;
	__atomic_store_n(&a->sh->stop, 1, __ATOMIC_RELEASE);
	if (!a->sh->err)
		ta_cmd(b, a, TA_EXIT, 0, false);
	if (child_wait(a->pid, BENCH_HANG_MS) != 0 && !a->sh->err)
		bench_fail(b, "tenants: tenant A did not exit cleanly");
	a->pid = -1;
}

static uint64_t distinct_words(uint64_t n)
{
	uint64_t full = n / TA_PER_CONN, rest = n % TA_PER_CONN;
	return full * TA_WORDS + (rest < TA_WORDS ? rest : TA_WORDS);
}

static void loadavg(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/loadavg", "re");
	snprintf(buf, cap, "?");
	if (f) {
		if (!fgets(buf, (int)cap, f))
			snprintf(buf, cap, "?");
		buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

struct b_row {
	const char *state; /* "none", "loaded", "churning", "deepchurn", "disorder", "widestore",
			    * "dropcycle", "closecycle" */
	uint64_t armed;    /* A's held arms */
	struct plans_streams_result r;
	uint64_t churn_cycles, churn_ns; /* A's churn batches and their time, over the row's runs */
	double churn_per_s;
	bool ran;
};

static void emit_b(cJSON *arr, const struct b_row *x, const struct b_row *base)
{
	const char *lbl = x->state;
	char armed[32];
	snprintf(armed, sizeof(armed), "%llu", (unsigned long long)x->armed);
	if (!x->r.ok) {
		printf("  %-9s %9s   (broken run)\n", lbl, armed);
		return;
	}
	bool rel = base && base->r.ok;
	double d50 = rel ? (x->r.lat.p50 - base->r.lat.p50) / 1e3 : NAN;
	double d99 = rel ? (x->r.lat.p99 - base->r.lat.p99) / 1e3 : NAN;
	double cr = rel && base->r.daemon_us > 0 ? x->r.daemon_us / base->r.daemon_us : NAN;
	printf("  %-9s %9s %8.1f %8.1f", lbl, armed, x->r.lat.p50 / 1e3, x->r.lat.p99 / 1e3);
	if (rel)
		printf(" %+9.1f %+9.1f %11.2f %7.1f %7.2fx", d50, d99, x->r.daemon_us, x->r.scan_us, cr);
	else
		printf(" %9s %9s %11.2f %7.1f %8s", "-", "-", x->r.daemon_us, x->r.scan_us, "1x");
	if (x->r.timed_wakes > 0)
		printf(" %5.0f/%-5.0f", x->r.timer_stalls, x->r.timed_wakes);
	if (x->churn_per_s > 0)
		printf("   %.0f %s/s", x->churn_per_s, strcmp(lbl, "widestore") == 0 ? "stores" : strstr(lbl, "cycle") ? "cycles" : "batches");
	printf("\n");
	fflush(stdout);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "a", lbl);
	cJSON_AddNumberToObject(o, "a_armed", (double)x->armed);
	cJSON_AddNumberToObject(o, "b_completions", (double)x->r.completions);
	cJSON_AddItemToObject(o, "b_store_to_wake", lat_json(&x->r.lat));
	cJSON_AddNumberToObject(o, "daemon_cpu_us_per_b_completion", x->r.daemon_us);
	cJSON_AddNumberToObject(o, "scanner_cpu_us_per_b_completion", x->r.scan_us);
	cJSON_AddNumberToObject(o, "total_cpu_us_per_b_completion", x->r.total_us);
	if (rel) {
		cJSON_AddNumberToObject(o, "p50_delta_us", d50);
		cJSON_AddNumberToObject(o, "p99_delta_us", d99);
		if (!isnan(cr))
			cJSON_AddNumberToObject(o, "daemon_cpu_per_b_completion_ratio", cr);
	}
	cJSON_AddNumberToObject(o, "timed_wakes", x->r.timed_wakes);
	cJSON_AddNumberToObject(o, "timed_wakes_0_5ms_late", x->r.timer_stalls);
	if (x->churn_per_s > 0)
		cJSON_AddNumberToObject(o, "a_churn_batches_per_s", x->churn_per_s);
	cJSON_AddItemToArray(arr, o);
}

static void verdict(cJSON *arr, const char *what, double v, const char *unit, double goal)
{
	const char *vd = isnan(v) ? "n/a" : v <= goal ? "met" : "MISSED";
	printf("  %-58s %10.2f%-3s <= %-7g %s\n", what, v, unit, goal, vd);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "target", what);
	cJSON_AddNumberToObject(o, "goal", goal);
	if (!isnan(v))
		cJSON_AddNumberToObject(o, "value", v);
	cJSON_AddStringToObject(o, "verdict", vd);
	cJSON_AddItemToArray(arr, o);
}

/* One run of B's two streams against d, with A as it is now, into row x: each of the
 * row's figures is the best (lowest) of its runs, the same rule for every row, the
 * baseline's included. One run on this shared guest now and then has a p99 or a CPU
 * figure several times its neighbours' (a host preemption), which one run per row
 * reported as A's doing. */
static void run_b(struct bench *b, struct gd_daemon *d, unsigned n, struct b_row *x)
{
	struct plans_streams_result r;
	x->ran = true;
	plans_garuda_streams(b, d, B_STREAMS, n, &r);
	if (!r.ok)
		return;
	if (!x->r.ok) {
		x->r = r;
		return;
	}
	x->r.completions += r.completions;
	x->r.lat.n += r.lat.n;
	x->r.lat.p50 = fmin(x->r.lat.p50, r.lat.p50);
	if (r.lat.p99 < x->r.lat.p99) { /* the stalls of the run whose p99 is kept */
		x->r.timed_wakes = r.timed_wakes;
		x->r.timer_stalls = r.timer_stalls;
	}
	x->r.lat.p99 = fmin(x->r.lat.p99, r.lat.p99);
	x->r.lat.p999 = fmin(x->r.lat.p999, r.lat.p999);
	x->r.lat.mean = fmin(x->r.lat.mean, r.lat.mean);
	x->r.lat.max = fmin(x->r.lat.max, r.lat.max);
	if (r.daemon_us < x->r.daemon_us) /* the split of the lowest */
		x->r.scan_us = r.scan_us;
	x->r.daemon_us = fmin(x->r.daemon_us, r.daemon_us);
	x->r.total_us = fmin(x->r.total_us, r.total_us);
}

/* B while A churns (TA_CHURN_RUN, TA_CHURN_DEEP_RUN, TA_CHURN_DISORDER_RUN): start the
 * churn, see it going, run B, stop it */
static int run_b_churning(struct bench *b, struct gd_daemon *d, struct tenant_a *a, unsigned n, struct b_row *x,
			  enum ta_cmd how)
{
	__atomic_store_n(&a->sh->stop, 0, __ATOMIC_RELEASE);
	a->sh->churn_cycles = 0;
	if (ta_cmd(b, a, how, 0, false) < 0)
		return -1;
	uint64_t dl = now_ns() + (uint64_t)BENCH_HANG_MS * 1000000ull;
	while (__atomic_load_n(&a->sh->churn_cycles, __ATOMIC_RELAXED) < 10 && !a->sh->err && now_ns() < dl)
		sleep_ns(1000000);
	if (__atomic_load_n(&a->sh->churn_cycles, __ATOMIC_RELAXED) < 10 || a->sh->err) {
		bench_fail(b, "tenants: tenant A's churn did not start: %s", a->sh->err ? a->sh->msg : "no batch done");
		return -1;
	}
	run_b(b, d, n, x);
	__atomic_store_n(&a->sh->stop, 1, __ATOMIC_RELEASE);
	if (futex_wait_ge(&a->sh->ack_seq, a->seq, 6ull * BENCH_HANG_MS * 1000000ull) < 0 || a->sh->err) {
		bench_fail(b, "tenants: tenant A's churn did not end: %s", a->sh->err ? a->sh->msg : "no answer");
		return -1;
	}
	x->churn_cycles += a->sh->churn_cycles;
	x->churn_ns += a->sh->churn_ns;
	x->churn_per_s = x->churn_ns ? (double)x->churn_cycles * 1e9 / (double)x->churn_ns : NAN;
	return 0;
}

/* A holds n arms (it adds to what it holds; 0: it drops them all), and garudad says so.
 * 0 or -1 (recorded). */
static int a_hold(struct bench *b, struct gd_daemon *d, struct tenant_a *a, unsigned n)
{
	if (ta_cmd(b, a, n ? TA_ARM : TA_DROP, n, true) < 0)
		return -1;
	if (bd_wait_status(d, "armed", n, 0, 6 * BENCH_HANG_MS) < 0) {
		bench_fail(b, "tenants: garudad did not report %u armed", n);
		return -1;
	}
	return 0;
}

int bench_tenants(struct bench *b)
{
	static const unsigned rungs_full[] = { 1, 1000, 65536, 1048576 };
	static const unsigned rungs_quick[] = { 1, 1000, 65536 };
	const unsigned *rungs = b->o.quick ? rungs_quick : rungs_full;
	unsigned nrungs = b->o.quick ? 3 : 4;
	/* GARUDA_BENCH_TENANT_RUNGS: A's holds, ascending, up to 4 (development: one rung
	 * against two daemons, e.g. "1048576") */
	unsigned rungs_env[4];
	const char *only = getenv("GARUDA_BENCH_TENANT_RUNGS");
	if (only && *only) {
		unsigned k = 0;
		for (char *end; *only && k < 4; only = *end ? end + 1 : end) {
			unsigned long v = strtoul(only, &end, 10);
			if (end == only || v < 1 || v > TA_QUOTA_ARMED || (k && v <= rungs_env[k - 1]))
				break;
			rungs_env[k++] = (unsigned)v;
		}
		if (k) {
			rungs = rungs_env;
			nrungs = k;
		}
	}
	unsigned max_n = rungs[nrungs - 1];
	unsigned conns = (max_n + TA_PER_CONN - 1) / TA_PER_CONN;
	unsigned win_s = b->o.quick ? 3 : 10;
	unsigned nb = b->o.quick ? 300 : 1000; /* B's completions per stream, per row */
	cJSON *sec = cJSON_AddObjectToObject(b->json, "tenants");
	char load[64];
	loadavg(load, sizeof(load));
	cJSON_AddStringToObject(sec, "loadavg_at_start", load);

	bool root = geteuid() == 0;
	uid_t a_uid = root ? TA_UID : geteuid();
	struct cg_group cg = { .dir = "" };
	char why[300] = "";
	bool have_cg = cg_make(&cg, "tenant-a", why, sizeof(why)) == 0;
	char cfg[512];
	snprintf(cfg, sizeof(cfg),
		 "{\"scanners\":1,%s\"quota\":{\"connection\":{\"armed\":%u},\"uid\":{\"armed\":%u},"
		 "\"cgroup\":{\"armed\":%u},\"daemon\":{\"armed\":%u}}}",
		 root ? "\"socket_group\":65534," : "", TA_PER_CONN + TA_DEEP + 1024, TA_QUOTA_ARMED, TA_QUOTA_ARMED,
		 2 * TA_QUOTA_ARMED); /* A's full quota and B's waits beside it */
	cJSON_AddStringToObject(sec, "garudad_config", cfg);

	printf("\n7. Tenants (issue 29): tenant A holds idle arms (doorbell form, words that never move, up to\n"
	       "   %u targets per word), or churns; tenant B: %u streams of 1 ms kernels (eventfd form, store ->\n"
	       "   wake); garudad's default plan, scanners 1; load average %s\n",
	       TA_TPW, B_STREAMS, load);

	struct gd_daemon d;
	struct tenant_a a = { .pid = -1 };
	struct b_row rows[12];
	unsigned nrows = 0;
	int rcode = -1;
	memset(rows, 0, sizeof(rows));
	a.sh = shm_alloc(sizeof(*a.sh));
	if (!a.sh) {
		bench_fail(b, "tenants: out of shared memory");
		goto out_cg;
	}
	if (bd_start(b, &d, cfg) < 0)
		goto out_cg;
	struct ta_ctx ctx = { .sock = d.sock, .cg = have_cg ? &cg : NULL, .uid = a_uid, .conns = conns };
	if (ta_start(b, &a, &ctx) < 0) {
		if (a.pid > 0)
			child_wait(a.pid, BENCH_HANG_MS);
		a.pid = -1;
		if (a_uid == geteuid()) {
			bench_fail(b, "tenants: tenant A could not set up: %s", a.sh->msg);
			goto out;
		}
		/* the socket's directory may not let uid 65534 in: A as the bench's uid */
		printf("   (tenant A as uid %u failed: %s; A runs as the bench's uid %u instead)\n", (unsigned)a_uid,
		       a.sh->msg, (unsigned)geteuid());
		ctx.uid = a_uid = geteuid();
		if (ta_start(b, &a, &ctx) < 0) {
			bench_fail(b, "tenants: tenant A could not set up: %s", a.sh->msg);
			goto out;
		}
	}
	bool in_cg = have_cg && a.sh->cg_err == 0;
	printf("   A: uid %u%s, cgroup %s (%s), %u connection(s) of one %u-line segment each\n", a.sh->uid,
	       a.sh->uid == (uint32_t)geteuid() ? " (the bench's own: not root)" : "", a.sh->cgroup,
	       in_cg ? "its own, cgroup v2"
	       : have_cg ? strerror(-a.sh->cg_err)
			 : why,
	       conns, TA_LINES);
	printf("   B: uid %u; garudad %s\n", (unsigned)geteuid(), b->o.garudad);
	cJSON *ja = cJSON_AddObjectToObject(sec, "tenant_a");
	cJSON_AddNumberToObject(ja, "uid", a.sh->uid);
	cJSON_AddStringToObject(ja, "cgroup", a.sh->cgroup);
	cJSON_AddBoolToObject(ja, "cgroup_of_its_own", in_cg);
	if (!in_cg)
		cJSON_AddStringToObject(ja, "cgroup_why_not", have_cg ? strerror(-a.sh->cg_err) : why);
	cJSON_AddNumberToObject(ja, "connections", conns);
	cJSON_AddNumberToObject(ja, "lines_per_segment", TA_LINES);
	cJSON_AddNumberToObject(ja, "targets_per_word", TA_TPW);
	cJSON_AddStringToObject(ja, "form", "doorbell");
	cJSON_AddNumberToObject(sec, "b_uid", (double)geteuid());
	cJSON_AddNumberToObject(sec, "b_streams", B_STREAMS);
	cJSON_AddNumberToObject(sec, "b_completions_per_stream", nb);
	cJSON_AddNumberToObject(sec, "b_runs_per_row", B_RUNS);
	cJSON_AddNumberToObject(sec, "window_s", win_s);
	cJSON_AddNumberToObject(sec, "after_s", win_s);

	/* B with A connected and nothing armed: the baseline, after one run not counted (the
	 * daemon's first completions of a point run cold: no records yet) */
	struct plans_streams_result warm;
	plans_garuda_streams(b, &d, B_STREAMS, nb / 4 + 32, &warm);
	rows[nrows++] = (struct b_row){ .state = "none", .armed = 0 };

	sleep_ns(200000000ull);
	struct proc_sample p_before;
	if (proc_read(d.pid, &p_before) < 0) {
		bench_fail(b, "tenants: cannot read garudad's /proc");
		goto out;
	}
	printf("\n   idle arms: garudad CPU over the %u s after their first %u s; RSS against %.1f MiB before\n"
	       "   A's first arm (A connected, segments open)\n",
	       win_s, win_s, (double)p_before.rss_kib / 1024.0);
	printf("  %9s %8s %6s %8s %12s %9s %10s %10s\n", "A armed", "words", "conns", "arm s", "CPU % core",
	       "RSS MiB", "+RSS MiB", "B/arm");
	cJSON *idle = cJSON_AddArrayToObject(sec, "idle_arms");
	cJSON_AddNumberToObject(sec, "rss_before_kib", (double)p_before.rss_kib);
	double idle_pct[4] = { NAN, NAN, NAN, NAN }, per_arm_last = NAN;
	for (unsigned ri = 0; ri < nrungs; ri++) {
		unsigned n = rungs[ri];
		uint64_t t0 = now_ns();
		if (a_hold(b, &d, &a, n) < 0)
			goto out;
		uint64_t t_armed = now_ns();
		struct proc_sample p0, p1;
		sleep_until_ns(t_armed + (uint64_t)win_s * 1000000000ull);
		proc_read(d.pid, &p0);
		uint64_t w0 = now_ns();
		sleep_ns((uint64_t)win_s * 1000000000ull);
		if (proc_read(d.pid, &p1) < 0) {
			bench_fail(b, "tenants: garudad went away with %u arms", n);
			goto out;
		}
		double w = (double)(now_ns() - w0) / 1e9;
		double pct = (double)(p1.cpu_ns - p0.cpu_ns) / 1e9 / w * 100.0;
		double drss = (double)p1.rss_kib - (double)p_before.rss_kib;
		double per_arm = drss * 1024.0 / n;
		idle_pct[ri] = pct;
		per_arm_last = per_arm;
		printf("  %9u %8llu %6u %8.2f %12.1f %9.1f %+10.1f %10.0f\n", n,
		       (unsigned long long)distinct_words(n), (unsigned)((n + TA_PER_CONN - 1) / TA_PER_CONN),
		       (double)(t_armed - t0) / 1e9, pct, (double)p1.rss_kib / 1024.0, drss / 1024.0, per_arm);
		fflush(stdout);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "armed", n);
		cJSON_AddNumberToObject(o, "distinct_words", (double)distinct_words(n));
		cJSON_AddNumberToObject(o, "connections", (n + TA_PER_CONN - 1) / TA_PER_CONN);
		cJSON_AddNumberToObject(o, "arm_s", (double)(t_armed - t0) / 1e9);
		cJSON_AddNumberToObject(o, "window_s", w);
		cJSON_AddNumberToObject(o, "daemon_cpu_s", (double)(p1.cpu_ns - p0.cpu_ns) / 1e9);
		cJSON_AddNumberToObject(o, "daemon_cpu_pct_of_core", pct);
		cJSON_AddNumberToObject(o, "rss_kib", (double)p1.rss_kib);
		cJSON_AddNumberToObject(o, "rss_increase_kib", drss);
		cJSON_AddNumberToObject(o, "rss_bytes_per_arm", per_arm);
		cJSON_AddItemToArray(idle, o);
		/* B against A holding 65,536 and 1,048,576 idle arms; churning over 65,536 (over
		 * 1,048,576 garudad 85e4664 took minutes for B's row) */
		if (n == 65536 || n == 1048576)
			rows[nrows++] = (struct b_row){ .state = "loaded", .armed = n };
		if (n == 65536) {
			rows[nrows++] = (struct b_row){ .state = "churning", .armed = n };
			rows[nrows++] = (struct b_row){ .state = "deepchurn", .armed = n };
			rows[nrows++] = (struct b_row){ .state = "disorder", .armed = n };
			rows[nrows++] = (struct b_row){ .state = "widestore", .armed = n };
			rows[nrows++] = (struct b_row){ .state = "dropcycle", .armed = n };
			rows[nrows++] = (struct b_row){ .state = "closecycle", .armed = n };
			rows[nrows++] = (struct b_row){ .state = "unbindcycle", .armed = n };
		}
	}

	/* GARUDA_BENCH_TENANT_ROWS: the loaded rows kept, by state ("dropcycle,loaded";
	 * development: the baseline row always runs) */
	const char *keep = getenv("GARUDA_BENCH_TENANT_ROWS");
	if (keep && *keep) {
		unsigned m = 1;
		for (unsigned i = 1; i < nrows; i++) {
			const char *at = strstr(keep, rows[i].state);
			size_t l = strlen(rows[i].state);
			if (at && (at == keep || at[-1] == ',') && (at[l] == ',' || !at[l]))
				rows[m++] = rows[i];
		}
		nrows = m;
	}

	/* B's rows in B_RUNS rounds, every row once a round: A drops its arms W before the
	 * baseline's run and arms up to each loaded row W before that row's. The host's
	 * timer stalls come and go over minutes (one run had 7 stalls, the next row's 24),
	 * so rows measured one after another, B_RUNS times each, compared the host's
	 * minutes, not A; and a baseline after A has come and gone is what B sees on a
	 * shared garudad (a walk over every id ever armed once cost B 100 us a completion
	 * there, hidden while the baseline ran before A's first arm) */
	for (unsigned k = 0; k < B_RUNS; k++) {
		if (k == 0 || nrows > 1) { /* the baseline, too, W after A's last change */
			if (a_hold(b, &d, &a, 0) < 0)
				goto out;
			sleep_ns((uint64_t)win_s * 1000000000ull);
		}
		run_b(b, &d, nb, &rows[0]);
		for (unsigned i = 1; i < nrows; i++) {
			struct b_row *x = &rows[i];
			if (a.sh->held != x->armed) {
				/* A idle: its arms as old as in the idle rungs' windows (young
				 * words are looked at often: their backoff grows with their age) */
				if (a_hold(b, &d, &a, (unsigned)x->armed) < 0)
					goto out;
				sleep_ns((uint64_t)win_s * 1000000000ull);
			}
			if (strcmp(x->state, "loaded") != 0) {
				enum ta_cmd how = strcmp(x->state, "deepchurn") == 0   ? TA_CHURN_DEEP_RUN
						  : strcmp(x->state, "disorder") == 0  ? TA_CHURN_DISORDER_RUN
						  : strcmp(x->state, "widestore") == 0 ? TA_WIDE_RUN
						  : strcmp(x->state, "dropcycle") == 0 ? TA_DROPCYCLE_RUN
						  : strcmp(x->state, "closecycle") == 0 ? TA_CLOSECYCLE_RUN
						  : strcmp(x->state, "unbindcycle") == 0 ? TA_UNBINDCYCLE_RUN
										       : TA_CHURN_RUN;
				if (run_b_churning(b, &d, &a, nb, x, how) < 0)
					goto out;
			} else
				run_b(b, &d, nb, x);
		}
	}

	printf("\n   B's store -> wake (us) and garudad CPU per B completion (scanner: its scanner thread's\n"
	       "   share), against A none (connected, no arms);\n"
	       "   %u streams x %u completions per run (the first 16 of each stream not counted), each\n"
	       "   figure the best of %u runs, in rounds of every row once (A dropping its arms %u s before\n"
	       "   the baseline's run, arming up %u s before each loaded row's); one run before them not\n"
	       "   counted; stalls: of the scanner's timed sleeps in the run whose p99 is kept, those that\n"
	       "   woke 0.5 ms or more late (the host's timer stalls: each can make a completion that late)\n"
	       "   / all that ran to their time\n",
	       B_STREAMS, nb, B_RUNS, win_s, win_s);
	printf("  %-9s %9s %8s %8s %9s %9s %11s %7s %8s %11s\n", "A", "A armed", "p50", "p99", "d p50", "d p99",
	       "daemon us/c", "scanner", "x CPU/c", "stalls");
	cJSON *jb = cJSON_AddArrayToObject(sec, "tenant_b");
	for (unsigned i = 0; i < nrows; i++)
		if (rows[i].ran)
			emit_b(jb, &rows[i], i ? &rows[0] : NULL);
	printf("   (churning: A's first connection, holding its arms, sends an ARM_BATCH of %u fresh arms and\n"
	       "    their %u DISARMs, the last acknowledged, again and again; deepchurn: the same, all on\n"
	       "    word 0, which holds %u more arms of A meanwhile: each DISARM names a word of %u arms;\n"
	       "    disorder: the same, the %u arms' targets half below and half above the churn's, so that\n"
	       "    each churn ARM's place is in the middle of the word's queue; widestore: on a connection\n"
	       "    of its own, a word of %u arms in no order (wide), stored to every %llu us, each other\n"
	       "    store reaching the next arm; dropcycle: a connection of its own, %u idle arms, closed,\n"
	       "    again and again; closecycle: the same on one connection, a segment opened, armed and\n"
	       "    closed, again; unbindcycle: on a connection of its own, a word of %u idle arms, its\n"
	       "    slot bound to an eventfd, one arm of the eventfd form and UNBIND, again)\n",
	       TA_CHURN, TA_CHURN, TA_DEEP, TA_DEEP + TA_TPW + TA_CHURN, TA_DEEP, TA_DEEP + 1,
	       (unsigned long long)(TA_WIDE_PAUSE_NS / 1000), TA_PER_CONN, TA_DEEP);

	printf("\n   Issue 29's targets (this run; A's largest hold here is %u arms)\n", max_n);
	cJSON *tg = cJSON_AddArrayToObject(sec, "targets");
	char what[96];
	for (unsigned ri = 0; ri < nrungs; ri++) {
		snprintf(what, sizeof(what), "garudad CPU with %u idle arms", rungs[ri]);
		verdict(tg, what, idle_pct[ri], " %", 1.0);
	}
	snprintf(what, sizeof(what), "garudad RSS per armed wait, %u arms", max_n);
	verdict(tg, what, per_arm_last, " B", 128);
	const struct b_row *base = &rows[0], *ld = NULL, *ch = NULL, *dc = NULL, *dis = NULL, *wd = NULL, *dr = NULL, *cc = NULL, *ub = NULL;
	for (unsigned i = 1; i < nrows; i++) {
		if (!rows[i].r.ok)
			continue;
		if (strcmp(rows[i].state, "loaded") == 0)
			ld = &rows[i];
		else if (strcmp(rows[i].state, "churning") == 0)
			ch = &rows[i];
		else if (strcmp(rows[i].state, "deepchurn") == 0)
			dc = &rows[i];
		else if (strcmp(rows[i].state, "widestore") == 0)
			wd = &rows[i];
		else if (strcmp(rows[i].state, "dropcycle") == 0)
			dr = &rows[i];
		else if (strcmp(rows[i].state, "closecycle") == 0)
			cc = &rows[i];
		else if (strcmp(rows[i].state, "unbindcycle") == 0)
			ub = &rows[i];
		else
			dis = &rows[i];
	}
	if (base->r.ok && ld) {
		snprintf(what, sizeof(what), "B p50 delta, A holding %llu idle arms", (unsigned long long)ld->armed);
		verdict(tg, what, (ld->r.lat.p50 - base->r.lat.p50) / 1e3, " us", 10);
		snprintf(what, sizeof(what), "B p99 delta, A holding %llu idle arms", (unsigned long long)ld->armed);
		verdict(tg, what, (ld->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 50);
		snprintf(what, sizeof(what), "garudad CPU per B completion, A holding %llu", (unsigned long long)ld->armed);
		verdict(tg, what, base->r.daemon_us > 0 ? ld->r.daemon_us / base->r.daemon_us : NAN, " x", 1.2);
	}
	if (base->r.ok && ch) {
		snprintf(what, sizeof(what), "B p99 delta, A churning over %llu", (unsigned long long)ch->armed);
		verdict(tg, what, (ch->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 100);
	}
	if (base->r.ok && dc) {
		snprintf(what, sizeof(what), "B p99 delta, A churning on a word of %u arms", TA_DEEP + TA_TPW + TA_CHURN);
		verdict(tg, what, (dc->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 100);
	}
	if (base->r.ok && dis) {
		snprintf(what, sizeof(what), "B p99 delta, A churning mid-queue on a word of %u", TA_DEEP + TA_TPW + TA_CHURN);
		verdict(tg, what, (dis->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 100);
	}
	if (base->r.ok && wd) {
		snprintf(what, sizeof(what), "B p99 delta, A storing to its wide word of %u", TA_DEEP + 1);
		verdict(tg, what, (wd->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 100);
	}
	if (base->r.ok && dr) {
		snprintf(what, sizeof(what), "B p99 delta, A arming %u and disconnecting, again", TA_PER_CONN);
		verdict(tg, what, (dr->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 100);
	}
	if (base->r.ok && cc) {
		snprintf(what, sizeof(what), "B p99 delta, A arming a segment with %u and closing it, again", TA_PER_CONN);
		verdict(tg, what, (cc->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 100);
	}
	if (base->r.ok && ub) {
		snprintf(what, sizeof(what), "B p99 delta, A binding and unbinding on a word of %u", TA_DEEP + 1);
		verdict(tg, what, (ub->r.lat.p99 - base->r.lat.p99) / 1e3, " us", 100);
	}
	rcode = 0;
out:
	ta_stop(b, &a);
	bd_stop(b, &d);
out_cg:
	/* the group empties once A is reaped; its removal may lag a moment behind */
	for (int i = 0; i < 100 && cg.dir[0] && cg_remove(&cg) == -EBUSY; i++)
		sleep_ns(10000000ull);
	if (cg.dir[0])
		fprintf(stderr, "garuda-bench: tenants: could not remove the cgroup %s\n", cg.dir);
	if (a.sh)
		shm_free(a.sh, sizeof(*a.sh));
	return rcode;
}
