/* test_soak.c — issue 10's chaos soak: well-behaved clients in all three readiness
 * forms, with exact completion accounting, first alone, then while hostile clients
 * cycle through every bad-input class of docs/protocol.md §5 and the attacks of issue
 * 10 (a blocking-eventfd flip, SEGMENT_CLOSE racing a firing pass, bad attaches, a
 * quota flood, a reader that never reads).
 *
 * Asserts: no completion lost or duplicated; every hostile connection got what §5
 * says; the daemon's fd count back to its baseline and its RSS bounded afterwards;
 * SIGTERM exits 0. The good clients' p99 store -> readiness, unattacked and under
 * attack, is printed, not asserted: a loaded machine can make any bound fail (timing
 * targets belong to the benchmarks).
 * Bounded: two phases of SOAK_PHASE_MS each (the attacked one longer, at most six
 * more, until every attack class has run: under valgrind some are slow). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

TestSuite(soak, .init = gd_test_init, .fini = gd_test_fini, .timeout = 180);

#define SOAK_PHASE_MS 8000
#define GOOD_PER_FORM 2
#define NGOOD (3 * GOOD_PER_FORM)
#define LAT_MAX 200000
#define WAIT_MS 10000 /* a completion not seen within this is lost */

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct phase_stats {
	uint64_t *lat; /* ns per completion */
	unsigned n;
};

struct good {
	pthread_t th;
	struct gd_daemon *d;
	const char *sock;
	uint8_t form;
	atomic_int *phase; /* 0, 1: measure into stats[phase]; 2: stop */
	struct phase_stats stats[2];
	unsigned completions, lost, duplicated, errors;
	char why[480];
};

/* A lost completion explains itself: what garudad did with the session's descriptor
 * (its clients entry: armed still, fired and written, or fired and not written), and
 * what the word holds. Asked while the session is still open. */
static void explain_loss(struct good *g, struct gd_client *c, struct gd_seg *s)
{
	size_t at = strlen(g->why);
	cJSON *rep = gd_control(g->d, "{\"request\":\"clients\"}");
	cJSON *cl, *found = NULL, *list = rep ? cJSON_GetObjectItem(rep, "clients") : NULL;
	cJSON_ArrayForEach(cl, list)
		if ((uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(cl, "id")) == c->welcome.session_id)
			found = cl;
	const char *num[] = { "armed", "arms", "completions", "undelivered", "write_retries", "errors" };
	at += (size_t)snprintf(g->why + at, sizeof(g->why) - at, "; session %llu, form %u, word %llu",
			       (unsigned long long)c->welcome.session_id, g->form,
			       (unsigned long long)gd_load(s, 0));
	for (size_t i = 0; found && i < sizeof(num) / sizeof(num[0]) && at < sizeof(g->why); i++)
		at += (size_t)snprintf(g->why + at, sizeof(g->why) - at, ", %s %.0f", num[i],
				       cJSON_GetNumberValue(cJSON_GetObjectItem(found, num[i])));
	if (!found && at < sizeof(g->why))
		snprintf(g->why + at, sizeof(g->why) - at, ", not among garudad's clients (%s)",
			 rep ? "gone" : "no control reply");
	cJSON_Delete(rep);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double p99_ms(struct phase_stats *st)
{
	if (!st->n)
		return 0;
	qsort(st->lat, st->n, sizeof(*st->lat), cmp_u64);
	unsigned i = (st->n * 99) / 100;
	return st->lat[i < st->n ? i : st->n - 1] / 1e6;
}

/* One arm at a time on word 0 of its own segment: arm, store, await exactly one
 * readiness, check nothing more came. */
static void *good_main(void *arg)
{
	struct good *g = arg;
	struct gd_client c;
	struct gd_seg s;
	int efd = -1;
	int r = gd_open(&c, g->sock);
	if (!r)
		r = gd_segment_open(&c, 1, -1, &s);
	if (!r && g->form == GARUDA_FORM_EVENTFD)
		r = gd_bind_new(&c, gd_slot(&s, 0), &efd);
	if (r) {
		snprintf(g->why, sizeof(g->why), "setup: %s", gd_strerr(r));
		g->errors++;
		return NULL;
	}
	for (uint64_t k = 1;; k++) {
		int ph = atomic_load(g->phase);
		if (ph >= 2)
			break;
		r = gd_arm(&c, gd_slot(&s, 0), k, k, g->form);
		if (r) {
			snprintf(g->why, sizeof(g->why), "arm %llu: %s", (unsigned long long)k, gd_strerr(r));
			g->errors++;
			break;
		}
		uint32_t bell = gd_doorbell(&s), nb;
		uint64_t t0 = now_ns();
		gd_store(&s, 0, k);
		bool got = false;
		switch (g->form) {
		case GARUDA_FORM_EVENTFD: {
			long long n = gd_eventfd_read(efd, WAIT_MS);
			got = n >= 1;
			if (n > 1)
				g->duplicated += (unsigned)(n - 1);
			break;
		}
		case GARUDA_FORM_MESSAGE: {
			struct garuda_ready rd;
			int rr = gd_wait_ready(&c, &rd, WAIT_MS);
			got = rr == 1;
			if (got && (rd.token != k || rd.flags)) {
				snprintf(g->why, sizeof(g->why), "READY token %llu flags %u, expected %llu",
					 (unsigned long long)rd.token, rd.flags, (unsigned long long)k);
				g->duplicated++;
			}
			break;
		}
		default:
			got = gd_doorbell_wait(&s, bell, &nb, WAIT_MS) == 1;
			if (got && nb != bell + 1)
				g->duplicated += nb - bell - 1;
			break;
		}
		uint64_t dt = now_ns() - t0;
		if (!got) {
			g->lost++;
			snprintf(g->why, sizeof(g->why), "completion %llu not delivered within %d ms",
				 (unsigned long long)k, WAIT_MS);
			explain_loss(g, &c, &s);
			break;
		}
		g->completions++;
		struct phase_stats *st = &g->stats[ph];
		if (st->n < LAT_MAX)
			st->lat[st->n++] = dt;
	}
	/* nothing more may come: no duplicate readiness */
	if (g->form == GARUDA_FORM_EVENTFD) {
		if (gd_eventfd_read(efd, GD_QUIET_MS) > 0)
			g->duplicated++;
		close(efd);
	} else if (g->form == GARUDA_FORM_MESSAGE) {
		struct garuda_msg m;
		if (gd_quiet(&c, GD_QUIET_MS, &m) == 1)
			g->duplicated++;
	}
	gd_seg_unmap(&s);
	gd_close(&c);
	return NULL;
}

/* ------------------------------------------------------------- the hostile ---- */

struct hostile {
	pthread_t th;
	const char *sock;
	atomic_int *phase;
	unsigned attacks, wrong;
	unsigned by_class[32];
	uint64_t slowest_ns[32]; /* the longest attack of each class */
	char why[200];
};

/* After a malformed datagram: ERROR{code} (cookie) then end of file. */
static void expect_closed(struct hostile *h, struct gd_client *c, int code, uint64_t cookie,
			  const char *what)
{
	struct garuda_msg m;
	int r = gd_recv(c, &m, NULL, WAIT_MS);
	bool ok = r == 1 && m.type == GARUDA_MSG_ERROR && (!code || m.error.code == code) &&
		  m.cookie == cookie;
	if (ok)
		ok = gd_recv(c, &m, NULL, WAIT_MS) == -EPIPE;
	if (!ok) {
		h->wrong++;
		snprintf(h->why, sizeof(h->why), "%s: expected ERROR{%s} cookie %llu then EOF (r %d)",
			 what, code ? garuda_errcode_name(code) : "any", (unsigned long long)cookie, r);
	}
}

static void send_bad(struct hostile *h, bool hello, const uint8_t *buf, size_t len, const int *fds,
		     unsigned nfds, int code, uint64_t cookie, const char *what)
{
	struct gd_client c;
	if ((hello ? gd_open(&c, h->sock) : gd_connect(&c, h->sock)) != 0) {
		h->wrong++;
		snprintf(h->why, sizeof(h->why), "%s: cannot connect", what);
		return;
	}
	if (nfds > 4) { /* more than the harness sends: raw */
		union {
			struct cmsghdr align;
			char b[CMSG_SPACE(8 * sizeof(int))];
		} ctl;
		struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
				     .msg_controllen = CMSG_SPACE(nfds * sizeof(int)) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
		(void)!sendmsg(c.fd, &mh, MSG_NOSIGNAL);
	} else {
		gd_send_raw(&c, buf, len, fds, nfds);
	}
	expect_closed(h, &c, code, cookie, what);
	gd_close(&c);
}

static size_t enc(struct garuda_msg *m, uint8_t *buf)
{
	ssize_t n = garuda_msg_encode(m, buf, GARUDA_MSG_MAX);
	return n > 0 ? (size_t)n : 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4); /* little-endian hosts only, as the daemon */
}

static void *flip_main(void *arg)
{
	int fd = *(int *)arg;
	int fl = fcntl(fd, F_GETFL) | O_NONBLOCK;
	for (int i = 0; i < 20000; i++) {
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		fcntl(fd, F_SETFL, fl);
	}
	return NULL;
}

enum { A_DECODE_FIRST, A_EMPTY = 16, A_FLIP, A_CLOSE_RACE, A_ATTACH, A_QUOTA, A_SLOW, A_CLASSES };

static const char *const class_names[A_CLASSES] = {
	[0] = "too short", [1] = "too long", [2] = "bad length", [3] = "unknown type",
	[4] = "reserved header", [5] = "nfds mismatch", [6] = "fd on ARM", [7] = "truncated ARM",
	[8] = "reserved body", [9] = "batch count 0", [10] = "bad version", [11] = "slot range",
	[12] = "not a request", [13] = "HELLO twice", [14] = "request before HELLO",
	[15] = "too many fds", [A_EMPTY] = "empty datagram", [A_FLIP] = "eventfd flip",
	[A_CLOSE_RACE] = "SEGMENT_CLOSE race", [A_ATTACH] = "bad attach", [A_QUOTA] = "quota flood",
	[A_SLOW] = "slow reader",
};

/* One malformed-datagram class of §5 (0..15). */
static void attack_decode(struct hostile *h, unsigned cls, uint64_t cookie)
{
	uint8_t buf[1024];
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, cookie);
	m.arm = (struct garuda_arm){ .slot = { 1, 0 }, .target = 1, .token = 1, .form = GARUDA_FORM_MESSAGE };
	size_t len = enc(&m, buf);
	int efds[8];
	unsigned nfds = 0;
	bool hello = true;
	int code;
	switch (cls) {
	case 0:
		len = 10;
		break;
	case 1:
		memset(buf + len, 0, 600 - len);
		len = 600;
		put32(buf + 4, 600);
		break;
	case 2:
		put32(buf + 4, (uint32_t)len + 4);
		break;
	case 3:
		buf[0] = 99;
		break;
	case 4:
		buf[12] = 1;
		break;
	case 5:
		buf[8] = 1; /* nfds says 1, none sent */
		break;
	case 6:
		buf[8] = 1;
		efds[nfds++] = eventfd(0, EFD_CLOEXEC);
		break;
	case 7:
		len -= 8;
		put32(buf + 4, (uint32_t)len);
		break;
	case 8:
		buf[len - 1] = 0xff;
		break;
	case 9:
		garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, cookie);
		m.arm_batch.count = 1;
		m.arm_batch.arm[0] = (struct garuda_arm){ .slot = { 1, 0 }, .target = 1, .form = 2 };
		len = enc(&m, buf);
		buf[24] = 0;
		break;
	case 10:
		garuda_msg_init(&m, GARUDA_MSG_HELLO, cookie);
		len = enc(&m, buf);
		buf[24] = 7;
		hello = false;
		break;
	case 11:
		put32(buf + 28, 600000);
		break;
	case 12:
		garuda_msg_init(&m, GARUDA_MSG_ACK, cookie);
		len = enc(&m, buf);
		break;
	case 13:
		garuda_msg_init(&m, GARUDA_MSG_HELLO, cookie);
		len = enc(&m, buf);
		break;
	case 14:
		hello = false;
		break;
	default: /* 15: more fds than any message carries */
		for (nfds = 0; nfds < 6; nfds++)
			efds[nfds] = eventfd(0, EFD_CLOEXEC);
		break;
	}
	struct garuda_msg tmp;
	if (cls == 1 || cls == 15)
		code = GARUDA_E_TOO_LONG;
	else if (cls >= 12)
		code = GARUDA_E_UNEXPECTED;
	else
		code = -garuda_msg_decode(buf, len, nfds, &tmp);
	uint64_t want_cookie = len >= GARUDA_HDR_BYTES ? cookie : 0;
	send_bad(h, hello, buf, len, efds, nfds, code, want_cookie, class_names[cls]);
	for (unsigned i = 0; i < nfds; i++)
		close(efds[i]);
}

static void attack_flip(struct hostile *h)
{
	struct gd_client c;
	struct gd_seg s;
	if (gd_open(&c, h->sock) || gd_segment_open(&c, 2, -1, &s)) {
		h->wrong++;
		return;
	}
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (uint32_t i = 0; i < 16; i++) {
		gd_bind(&c, gd_slot(&s, i), efd);
		gd_arm(&c, gd_slot(&s, i), 1, i, GARUDA_FORM_EVENTFD);
	}
	uint64_t max = 0xfffffffffffffffeull;
	(void)!write(efd, &max, sizeof(max));
	pthread_t th;
	pthread_create(&th, NULL, flip_main, &efd);
	for (uint32_t i = 0; i < 16; i++)
		gd_store(&s, i, 1);
	pthread_join(th, NULL);
	struct garuda_msg m;
	int r = gd_quiet(&c, 100, &m); /* BAD_FD, or nothing when no write met it blocking */
	if (r == 1 && !(m.type == GARUDA_MSG_ERROR && m.error.code == GARUDA_E_BAD_FD)) {
		h->wrong++;
		snprintf(h->why, sizeof(h->why), "flip: got %s", garuda_msg_type_name(m.type));
	}
	close(efd);
	gd_seg_unmap(&s);
	gd_close(&c);
}

static void attack_close_race(struct hostile *h)
{
	struct gd_client c;
	struct gd_seg s;
	if (gd_open(&c, h->sock) || gd_segment_open(&c, 8, -1, &s)) {
		h->wrong++;
		return;
	}
	for (uint32_t i = 0; i < 64; i++)
		gd_arm_flags(&c, gd_slot(&s, i), 1, i, GARUDA_FORM_MESSAGE, GARUDA_F_NOREPLY);
	for (uint32_t i = 0; i < 64; i++)
		gd_store(&s, i, 1);
	int r = gd_segment_close(&c, s.id);
	c.qhead = c.qlen = 0;
	struct garuda_msg m;
	if (r || gd_quiet(&c, 5, &m) == 1) {
		h->wrong++;
		snprintf(h->why, sizeof(h->why), "close race: %s", r ? gd_strerr(r) : "READY after ACK");
	}
	gd_seg_unmap(&s);
	gd_close(&c);
}

static void attack_attach(struct hostile *h, unsigned k)
{
	struct gd_client c;
	if (gd_open(&c, h->sock)) {
		h->wrong++;
		return;
	}
	int fd = memfd_create("soak", MFD_CLOEXEC | MFD_ALLOW_SEALING | (k % 2 ? MFD_HUGETLB : 0));
	if (fd < 0) { /* no hugetlbfs: a write-sealed one */
		fd = memfd_create("soak", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		k = 0;
	}
	size_t bytes = garuda_segment_bytes(k % 2 ? 32766 : 1, (size_t)sysconf(_SC_PAGESIZE));
	(void)!ftruncate(fd, (off_t)bytes);
	fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | (k % 2 ? 0 : F_SEAL_WRITE));
	struct garuda_msg m, rep;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
	m.segment_open.lines = k % 2 ? 32766 : 1;
	m.segment_open.numa_node = -1;
	int r = gd_request(&c, &m, &fd, 1, &rep, NULL);
	if (r != GARUDA_E_BAD_SEGMENT && r != GARUDA_E_QUOTA) {
		h->wrong++;
		snprintf(h->why, sizeof(h->why), "attach: %s", gd_strerr(r));
	}
	close(fd);
	gd_close(&c);
}

static void attack_quota(struct hostile *h)
{
	struct gd_client c;
	struct gd_seg s;
	if (gd_open(&c, h->sock) || gd_segment_open(&c, 1, -1, &s)) {
		h->wrong++;
		return;
	}
	int r = 0;
	for (unsigned i = 0; i < 100000 && r == 0; i += GARUDA_BATCH_MAX) {
		struct garuda_msg m, rep;
		garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 0);
		m.arm_batch.count = GARUDA_BATCH_MAX;
		for (unsigned j = 0; j < GARUDA_BATCH_MAX; j++)
			m.arm_batch.arm[j] = (struct garuda_arm){ .slot = gd_slot(&s, 0), .target = 1,
								  .token = i + j, .form = GARUDA_FORM_MESSAGE };
		r = gd_request(&c, &m, NULL, 0, &rep, NULL);
	}
	if (r != GARUDA_E_QUOTA) {
		h->wrong++;
		snprintf(h->why, sizeof(h->why), "quota flood ended with %s", gd_strerr(r));
	}
	gd_store(&s, 0, 1); /* and fire them all at a reader that leaves */
	gd_seg_unmap(&s);
	gd_close(&c);
}

static void attack_slow(struct hostile *h)
{
	struct gd_client c;
	struct gd_seg s;
	if (gd_open(&c, h->sock) || gd_segment_open(&c, 8, -1, &s)) {
		h->wrong++;
		return;
	}
	for (uint32_t i = 0; i < 64; i++)
		for (uint64_t t = 0; t < 16; t++)
			gd_arm_flags(&c, gd_slot(&s, i), 1, t, GARUDA_FORM_MESSAGE, GARUDA_F_NOREPLY);
	for (uint32_t i = 0; i < 64; i++)
		gd_store(&s, i, 1);
	usleep(20000); /* never read; then go */
	gd_seg_unmap(&s);
	gd_close(&c);
}

static void *hostile_main(void *arg)
{
	struct hostile *h = arg;
	for (unsigned k = 0; atomic_load(h->phase) == 1; k++) {
		unsigned cls = k % A_CLASSES;
		uint64_t cookie = 0x5000 + k, t0 = now_ns();
		if (cls < A_EMPTY)
			attack_decode(h, cls, cookie);
		else if (cls == A_EMPTY)
			send_bad(h, k % 2, (const uint8_t *)"", 0, NULL, 0, GARUDA_E_TOO_SHORT, 0, "empty");
		else if (cls == A_FLIP)
			attack_flip(h);
		else if (cls == A_CLOSE_RACE)
			attack_close_race(h);
		else if (cls == A_ATTACH)
			attack_attach(h, k / A_CLASSES);
		else if (cls == A_QUOTA)
			attack_quota(h);
		else
			attack_slow(h);
		h->by_class[cls]++;
		if (now_ns() - t0 > h->slowest_ns[cls])
			h->slowest_ns[cls] = now_ns() - t0;
		__atomic_fetch_add(&h->attacks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static long rss_kib(struct gd_daemon *d)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)d->pid);
	FILE *f = fopen(path, "re");
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

Test(soak, hostile_chaos)
{
	struct gd_daemon d = { 0 };
	/* the flood's 2,000 armed descriptors sit on one word, and every scanner pass
	 * reads them all: under valgrind, which runs one thread at a time, a flood of
	 * 20,000 took 38 s (the loop answered a batch per scanner pass) */
	gd_start(&d, &(struct gd_opts){
		.config = "{\"quota\":{\"connection\":{\"armed\":2000,\"lines\":65536}}}" });
	gd_baseline(&d);
	int fds0 = d.fd_baseline;
	long rss0 = rss_kib(&d);
	atomic_int phase = 0;
	static struct good g[NGOOD];
	const uint8_t forms[3] = { GARUDA_FORM_EVENTFD, GARUDA_FORM_MESSAGE, GARUDA_FORM_DOORBELL };
	for (int i = 0; i < NGOOD; i++) {
		g[i] = (struct good){ .d = &d, .sock = d.sock, .form = forms[i % 3], .phase = &phase };
		for (int p = 0; p < 2; p++)
			g[i].stats[p].lat = calloc(LAT_MAX, sizeof(uint64_t));
		cr_assert_eq(pthread_create(&g[i].th, NULL, good_main, &g[i]), 0);
	}
	usleep(SOAK_PHASE_MS * 1000);
	struct hostile h = { .sock = d.sock, .phase = &phase };
	atomic_store(&phase, 1);
	cr_assert_eq(pthread_create(&h.th, NULL, hostile_main, &h), 0);
	usleep(SOAK_PHASE_MS * 1000);
	/* and on until every class has run once (a daemon under valgrind is slow to
	 * answer some), at most six phases more */
	for (int i = 0; i < 6 * SOAK_PHASE_MS / 50 && __atomic_load_n(&h.attacks, __ATOMIC_RELAXED) < A_CLASSES;
	     i++)
		usleep(50 * 1000);
	atomic_store(&phase, 2);
	pthread_join(h.th, NULL);
	unsigned done = 0, lost = 0, dup = 0, errs = 0;
	struct phase_stats all[2] = { { calloc((size_t)NGOOD * LAT_MAX, 8), 0 },
				      { calloc((size_t)NGOOD * LAT_MAX, 8), 0 } };
	for (int i = 0; i < NGOOD; i++) {
		pthread_join(g[i].th, NULL);
		done += g[i].completions;
		lost += g[i].lost;
		dup += g[i].duplicated;
		errs += g[i].errors;
		if (g[i].why[0])
			cr_log_error("good client %d (form %u): %s", i, g[i].form, g[i].why);
		for (int p = 0; p < 2; p++) {
			memcpy(all[p].lat + all[p].n, g[i].stats[p].lat, g[i].stats[p].n * 8);
			all[p].n += g[i].stats[p].n;
			free(g[i].stats[p].lat);
		}
	}
	double p99_base = p99_ms(&all[0]), p99_attack = p99_ms(&all[1]);
	unsigned n_base = all[0].n, n_attack = all[1].n;
	free(all[0].lat);
	free(all[1].lat);
	cr_assert_eq(gd_wait_status(&d, "clients", 0), 0, "clients left over");
	int fds1 = gd_wait_fds_at_most(&d, fds0);
	long rss1 = rss_kib(&d);
	fprintf(stderr, "soak (%s): %u completions checked (%u unattacked, %u under attack), "
		"%u lost, %u duplicated; %u attacks in %d classes (%u answered wrongly); "
		"p99 %.3f ms unattacked, %.3f ms under attack; daemon fds %d -> %d, RSS %ld -> %ld KiB\n",
		gd_event_loop(), done, n_base, n_attack, lost, dup, h.attacks, A_CLASSES, h.wrong,
		p99_base, p99_attack, fds0, fds1, rss0, rss1);
	for (int c = 0; c < A_CLASSES; c++)
		fprintf(stderr, "  %-22s %u (slowest %.1f ms)\n", class_names[c], h.by_class[c],
			h.slowest_ns[c] / 1e6);
	cr_assert_eq(errs, 0, "a good client's request failed");
	cr_assert_eq(lost, 0, "%u completions lost", lost);
	cr_assert_eq(dup, 0, "%u completions duplicated", dup);
	cr_assert_eq(h.wrong, 0, "%u hostile connections answered against §5: last: %s", h.wrong, h.why);
	cr_assert_geq(h.attacks, A_CLASSES, "not every attack class ran (%u attacks)", h.attacks);
	cr_assert_gt(n_base, 100, "too few unattacked completions to compare");
	cr_assert_gt(n_attack, 100, "too few completions under attack");
	/* the p99s are printed above, not compared: a loaded machine (or a TSan or
	 * valgrind garudad) can stretch either phase's tail; the benchmarks measure it */
	cr_assert_leq(fds1, fds0, "daemon fds %d after the soak, %d before", fds1, fds0);
#ifdef __SANITIZE_ADDRESS__
	/* an ASan build's garudad keeps freed memory in its quarantine (256 MiB by
	 * default) instead of reusing it: only a leak far beyond that fails here */
	const long rss_slack_kib = 512 * 1024;
#else
	const long rss_slack_kib = 64 * 1024;
#endif
	cr_assert_lt(rss1, rss0 + rss_slack_kib, "daemon RSS %ld KiB after, %ld before", rss1, rss0);
	gd_stop(&d); /* SIGTERM: exit 0 */
}
