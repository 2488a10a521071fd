/* session_req.c — what each client request does: the request table (type -> handler,
 * the state it is valid in, the fds it takes; as daemon/control_req.c for the control
 * plane) and its handlers. The connection that feeds them is session_conn.c's.
 * Loop thread. */
#include "session_req.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "fdio.h"
#include "log.h"
#include "points.h"
#include "wire.h"

/* ---------------- lookup ---------------- */

static struct segment *find_segment(struct session *s, uint32_t id)
{
	for (struct segment *g = s->segments; g; g = g->next)
		if (g->id == id)
			return g;
	return NULL;
}

static struct scanner *scanner_of(struct session *s, const struct segment *g)
{
	return s->d->scanner[g->scanner];
}

/* ---------------- handlers ---------------- */

static void on_hello(struct session *s, const struct garuda_msg *m, int *fds)
{
	(void)fds;
	s->welcomed = true;
	/* before any arm can reach a scanner: the command queue's lock publishes it */
	s->sink->features =
		m->hello.features & (GARUDA_FEATURE_READY_BATCH | GARUDA_FEATURE_POINTS | GARUDA_FEATURE_REPRESENT);
	const struct quota_limits *q = &s->d->cfg.quota_connection;
	struct garuda_msg w;
	garuda_msg_init(&w, GARUDA_MSG_WELCOME, m->cookie);
	w.welcome.features = s->sink->features;
	w.welcome.session_id = s->id;
	w.welcome.max_segments = q->segments;
	w.welcome.max_lines = q->lines;
	w.welcome.max_bindings = q->bindings;
	w.welcome.max_armed = q->armed;
	session_send(s, &w, -1);
}


/* Scanner for a requested NUMA node (-1: round robin). Returns -1 if no such node. A
 * node without CPUs (memory-only) has no scanner: round robin, as for -1 (the segment
 * is placed on that scanner's node: protocol.md §4.3). */
static int pick_scanner(struct daemon *d, int node)
{
	int idx = node < 0 ? -1 : numa_index(&d->topo, node);
	if (node >= 0 && idx < 0 && !numa_present(&d->topo, node))
		return -1;
	if (idx < 0)
		return (int)(d->next_scanner++ % d->nscanners);
	for (unsigned i = 0; i < d->nscanners; i++)
		if (d->scanner_node[i] == node)
			return (int)i;
	return idx % (int)d->nscanners;
}

static void on_segment_open(struct session *s, const struct garuda_msg *m, int *fds)
{
	bool attach = m->type == GARUDA_MSG_SEGMENT_ATTACH;
	uint32_t lines = m->segment_open.lines;
	int sc = pick_scanner(s->d, m->segment_open.numa_node);
	if (sc < 0) {
		reply_error(s, m->cookie, -GARUDA_E_BAD_VALUE, "no such NUMA node");
		return;
	}
	if (s->held_segments) /* read since? then that is given back first */
		session_unread_check(s);
	int r = session_charge(s, Q_SEGMENTS, 1);
	if (r == 0 && (r = session_charge(s, Q_LINES, lines)) != 0)
		session_release_quota(s, Q_SEGMENTS, 1);
	if (r) {
		reply_error(s, m->cookie, r, session_quota_why);
		return;
	}
	int node = s->d->scanner_node[sc];
	struct segment *g = NULL;
	uint32_t id;
	do /* never 0, never one in use (after 2^32 opens the counter wraps) */
		id = s->next_segment_id++;
	while (id == 0 || find_segment(s, id));
	if (attach) {
		r = segment_attach(fds[0], id, lines, node, &g);
		if (r == 0)
			TAKE_FD(fds[0]); /* the segment owns it now */
	} else {
		r = segment_create(id, lines, node, s->pid, &g);
	}
	if (r) {
		session_release_quota(s, Q_SEGMENTS, 1);
		session_release_quota(s, Q_LINES, lines);
		const char *why =
			r == -GARUDA_E_NO_MEMLOCK && *segment_why() ? segment_why() : NULL;
		if (r == -GARUDA_E_NO_MEMLOCK)
			log_client(s->uid, LOG_ERR, "session %llu (pid %d uid %u %s): %s", (unsigned long long)s->id,
				   (int)s->pid, (unsigned)s->uid, s->comm,
				   why ? why
				       : "cannot mlock a segment: raise "
					 "LimitMEMLOCK= (ulimit -l) or grant garudad CAP_IPC_LOCK");
		reply_error(s, m->cookie, r, why);
		return;
	}
	g->scanner = (unsigned)sc;
	g->next = s->segments;
	s->segments = g;

	struct garuda_msg rep;
	garuda_msg_init(&rep, GARUDA_MSG_SEGMENT, m->cookie);
	rep.segment.segment_id = g->id;
	rep.segment.lines = g->lines;
	rep.segment.bytes = g->bytes;
	rep.segment.numa_node = g->numa_node;
	rep.nfds = attach ? 0 : 1;
	if (attach)
		session_send(s, &rep, -1);
	else
		session_send_segment(s, g, &rep);
}

/* reply: the request the scanner acknowledges once the drop is applied (NULL: none) */
static void drop_binding(struct session *s, struct binding *b, struct segment *g,
			 const struct scanner_reply *reply)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		g->bindings = b->next;
	if (b->next)
		b->next->prev = b->prev;
	g->nbindings--;
	garuda_keymap_del(&s->binding_index, session_binding_key(b->segment_id, b->index));
	scanner_drop_binding(scanner_of(s, g), b, g, s->id, reply);
	session_release_quota(s, Q_BINDINGS, 1);
	binding_unref(b);
}

static void on_segment_close(struct session *s, const struct garuda_msg *m, int *fds)
{
	(void)fds;
	struct segment **pp = &s->segments, *g;
	while ((g = *pp) && g->id != m->segment_close.segment_id)
		pp = &g->next;
	if (!g) {
		reply_error(s, m->cookie, -GARUDA_E_NO_SEGMENT, NULL);
		return;
	}
	*pp = g->next;
	while (g->bindings)
		drop_binding(s, g->bindings, g, NULL);
	session_unsend_segment(s, g);
	/* the ACK comes from the scanner once the drops are applied: no readiness for the
	 * segment can follow it (§4.5). The bindings' drops went first, to the same queue. */
	scanner_drop_segment(scanner_of(s, g), g, s->id,
			     &(struct scanner_reply){ .session_id = s->id,
						      .cookie = m->cookie,
						      .noreply = m->flags & GARUDA_F_NOREPLY });
	session_release_segment(s, g);
	segment_unref(g);
}

/* Resolve a slot to the session's segment: 0, or an error code with *why. */
static int lookup_slot(struct session *s, const struct garuda_slot *slot, struct segment **out,
		       const char **why)
{
	struct segment *g = find_segment(s, slot->segment);
	if (!g) {
		*why = garuda_strerror(-GARUDA_E_NO_SEGMENT);
		return -GARUDA_E_NO_SEGMENT;
	}
	if (slot->index >= g->lines * GARUDA_WORDS_PER_LINE) {
		*why = "slot index beyond the segment's lines";
		return -GARUDA_E_SLOT_RANGE;
	}
	*out = g;
	return 0;
}

/* Resolve a slot to the session's segment, or reply the error. */
static struct segment *slot_segment(struct session *s, const struct garuda_msg *m,
				    const struct garuda_slot *slot)
{
	struct segment *g = NULL;
	const char *why;
	int code = lookup_slot(s, slot, &g, &why);
	if (code)
		reply_error(s, m->cookie, code, why);
	return g;
}

static bool is_eventfd(int fd)
{
	char link[64], target[64];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return strcmp(target, "anon_inode:[eventfd]") == 0;
}

static void on_bind(struct session *s, const struct garuda_msg *m, int *fds)
{
	struct segment *g = slot_segment(s, m, &m->bind.slot);
	if (!g)
		return;
	if (!is_eventfd(fds[0])) {
		reply_error(s, m->cookie, -GARUDA_E_BAD_FD, "BIND needs an eventfd");
		return;
	}
	int fl = fcntl(fds[0], F_GETFL);
	if (fl < 0 || !(fl & O_NONBLOCK)) {
		reply_error(s, m->cookie, -GARUDA_E_BAD_FD,
			    "the eventfd must be non-blocking (EFD_NONBLOCK)");
		return;
	}
	if (session_binding(s, g->id, m->bind.slot.index)) {
		reply_error(s, m->cookie, -GARUDA_E_ALREADY_BOUND, NULL);
		return;
	}
	int r = session_charge(s, Q_BINDINGS, 1);
	if (r) {
		reply_error(s, m->cookie, r, session_quota_why);
		return;
	}
	/* the slot's index entry first (it may fail), the binding's pointer once there is
	 * one (a replace: never fails) */
	uint64_t key = session_binding_key(g->id, m->bind.slot.index);
	struct binding *b = NULL;
	if (garuda_keymap_put(&s->binding_index, key, 0) ||
	    !(b = binding_new(fds[0], g->id, m->bind.slot.index))) {
		garuda_keymap_del(&s->binding_index, key);
		session_release_quota(s, Q_BINDINGS, 1);
		reply_error(s, m->cookie, -ENOMEM, NULL);
		return;
	}
	TAKE_FD(fds[0]); /* the binding owns it now */
	garuda_keymap_put(&s->binding_index, key, (uintptr_t)b);
	b->next = g->bindings;
	if (g->bindings)
		g->bindings->prev = b;
	g->bindings = b;
	g->nbindings++;
	reply_ack(s, m);
}

static void on_unbind(struct session *s, const struct garuda_msg *m, int *fds)
{
	(void)fds;
	struct segment *g = slot_segment(s, m, &m->bind.slot);
	if (!g)
		return;
	struct binding *b = session_binding(s, g->id, m->bind.slot.index);
	if (!b) {
		reply_error(s, m->cookie, -GARUDA_E_NOT_BOUND, NULL);
		return;
	}
	/* acknowledged by the scanner once the drop is applied (§4.6) */
	drop_binding(s, b, g,
		     &(struct scanner_reply){ .session_id = s->id,
					      .cookie = m->cookie,
					      .noreply = m->flags & GARUDA_F_NOREPLY });
}

/* Check one ARM record: its segment, slot and (a form that needs one) binding. */
static int check_arm(struct session *s, const struct garuda_arm *a, struct segment **g,
		     struct binding **b, const char **why)
{
	int code = lookup_slot(s, &a->slot, g, why);
	if (code)
		return code;
	*b = NULL;
	if (form_get(a->form)->needs_binding) {
		*b = session_binding(s, (*g)->id, a->slot.index);
		if (!*b) {
			*why = "the arm's form (eventfd) needs a binding and the slot has none";
			return -GARUDA_E_NOT_BOUND;
		}
	}
	return 0;
}

/* A datagram's age by its send stamp counts at most this (a step of the real clock,
 * or a loop thread stalled that long, is not taken as the time a wait ran) */
#define ARM_AGE_MAX_NS 1000000000ull

/* When the ARM being handled was sent, on CLOCK_MONOTONIC (its wait's start); when it
 * is read, without a send stamp */
static uint64_t arm_start_ns(const struct session *s)
{
	if (!s->rx_sent_ns)
		return garuda_now_ns();
	return fdio_sent_mono_ns(s->rx_sent_ns, garuda_real_ns(), garuda_now_ns(), ARM_AGE_MAX_NS);
}

/* Hand one checked, charged arm to its scanner. */
static void post_arm(struct session *s, const struct garuda_arm *a, struct segment *g,
		     struct binding *b)
{
	struct arm_request req = {
		.sink = sink_ref(s->sink),
		.segment = segment_ref(g),
		.binding = b ? binding_ref(b) : NULL,
		.index = a->slot.index,
		.form = a->form,
		.target = a->target,
		.token = a->token,
		.arm_ns = arm_start_ns(s),
		.point_key = a->point ? POINT_KEY_NAMED | a->point
				      : point_key_word(g->id, a->slot.index),
		.point_slot = POINT_NONE,
	};
	if (s->d->cfg.plan.predict)
		points_lookup(&s->sink->points, &s->sink->quota, &s->d->cfg, s->d->plan_gen, req.point_key, &req.point_slot,
			      &req.sleep_ns, &req.exact_sleep_ns);
	sink_queued_add(s->sink, 1); /* before the post: the take subtracts it */
	scanner_arm(scanner_of(s, g), &req);
	s->arms++;
	s->d->arms_total++;
}

/* ARM and ARM_BATCH: every record is checked and the armed quota charged for all of
 * them before any is armed; the first failure answers for the whole request. */
static void on_arm(struct session *s, const struct garuda_msg *m, int *fds)
{
	(void)fds;
	bool batch = m->type == GARUDA_MSG_ARM_BATCH;
	const struct garuda_arm *arms = batch ? m->arm_batch.arm : &m->arm;
	unsigned n = batch ? m->arm_batch.count : 1;
	struct segment *g[GARUDA_BATCH_MAX];
	struct binding *b[GARUDA_BATCH_MAX];
	/* a point id is what used to be reserved bytes: without the feature it is
	 * malformed, as before (protocol.md §5, step 13) */
	for (unsigned i = 0; i < n && !(s->sink->features & GARUDA_FEATURE_POINTS); i++)
		if (arms[i].point) {
			fail_session(s, m->cookie, -GARUDA_E_RESERVED_SET,
				     "a point id on a session without the POINTS feature");
			return;
		}
	for (unsigned i = 0; i < n; i++) {
		const char *why;
		int code = check_arm(s, &arms[i], &g[i], &b[i], &why);
		if (code) {
			char text[160];
			if (batch)
				snprintf(text, sizeof(text), "record %u: %s", i, why);
			reply_error(s, m->cookie, code, batch ? text : why);
			return;
		}
	}
	int r = session_charge(s, Q_ARMED, n); /* released by the scanner when each fires or drops */
	if (r) {
		reply_error(s, m->cookie, r, session_quota_why);
		return;
	}
	for (unsigned i = 0; i < n; i++)
		post_arm(s, &arms[i], g[i], b[i]);
	reply_ack(s, m);
}

static void on_disarm(struct session *s, const struct garuda_msg *m, int *fds)
{
	(void)fds;
	struct segment *g = slot_segment(s, m, &m->disarm.slot);
	if (!g)
		return;
	/* the scanner owns the armed set: it answers through a notice */
	sink_queued_add(s->sink, 1); /* before the post: the take subtracts it */
	scanner_disarm(scanner_of(s, g), s->sink, g, m->disarm.slot.index, m->disarm.token,
		       m->cookie, m->flags & GARUDA_F_NOREPLY);
}

/* QUERY: a client may ask about its own session, nothing else. The reply is one JSON
 * object (stable lower_snake_case keys, "version" first) that fits one datagram. */
static void on_query(struct session *s, const struct garuda_msg *m, int *fds)
{
	(void)fds;
	struct session_view v;
	session_describe(s, &v);
	struct garuda_msg r;
	garuda_msg_init(&r, GARUDA_MSG_QUERY_REPLY, m->cookie);
	int n = snprintf(r.query_reply.json, sizeof(r.query_reply.json),
			 "{\"version\":1,\"id\":%llu,\"pid\":%d,\"uid\":%d,\"segments\":%u,"
			 "\"bindings\":%u,\"armed\":%llu,\"arms\":%llu,\"completions\":%llu,"
			 "\"errors\":%llu,\"outbox_bytes\":%llu,\"overflow\":%s,"
			 "\"word_loads\":%llu,\"scan_ns\":%llu}",
			 (unsigned long long)v.id, (int)v.pid, (int)v.uid, v.segments, v.bindings,
			 (unsigned long long)v.armed, (unsigned long long)v.arms,
			 (unsigned long long)v.counters[SN_completions], (unsigned long long)v.errors,
			 (unsigned long long)v.outbox_bytes, v.overflow ? "true" : "false",
			 (unsigned long long)v.counters[SN_word_loads], (unsigned long long)v.counters[SN_scan_ns]);
	r.query_reply.json_len = (uint32_t)n; /* bounded well below the cap by its fields */
	session_send(s, &r, -1);
}

/* ---------------- the table ---------------- */

static const struct request_handler handlers[GARUDA_MSG_TYPE_MAX_ + 1] = {
	[GARUDA_MSG_HELLO] = { on_hello, ST_NEW, 0 },
	[GARUDA_MSG_SEGMENT_OPEN] = { on_segment_open, ST_WELCOMED, 0 },
	[GARUDA_MSG_SEGMENT_ATTACH] = { on_segment_open, ST_WELCOMED, 1 }, /* the memfd */
	[GARUDA_MSG_SEGMENT_CLOSE] = { on_segment_close, ST_WELCOMED, 0 },
	[GARUDA_MSG_BIND] = { on_bind, ST_WELCOMED, 1 }, /* the eventfd */
	[GARUDA_MSG_UNBIND] = { on_unbind, ST_WELCOMED, 0 },
	[GARUDA_MSG_ARM] = { on_arm, ST_WELCOMED, 0 },
	[GARUDA_MSG_ARM_BATCH] = { on_arm, ST_WELCOMED, 0 },
	[GARUDA_MSG_DISARM] = { on_disarm, ST_WELCOMED, 0 },
	[GARUDA_MSG_QUERY] = { on_query, ST_WELCOMED, 0 },
};

const struct request_handler *session_request(uint8_t type)
{
	const struct request_handler *h = type <= GARUDA_MSG_TYPE_MAX_ ? &handlers[type] : NULL;
	return h && h->fn ? h : NULL;
}
