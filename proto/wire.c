/* wire.c — encode/decode for wire.h.
 *
 * Each message body is described once, by a function that walks its fields through a
 * cursor; the same walk encodes (cursor writes) or decodes (cursor reads), so a layout
 * cannot drift between the two directions. Validation after decode (and before
 * encode) is table-driven: one row per type with body size and fd counts.
 */
#include "wire.h"

#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "errcode.h"
#include "segment_layout.h"

struct cursor {
	uint8_t *p;
	size_t off;
	bool writing;
	bool reserved_set; /* decode: a reserved byte was non-zero */
};

static void c_u8(struct cursor *c, uint8_t *v)
{
	if (c->writing)
		c->p[c->off] = *v;
	else
		*v = c->p[c->off];
	c->off += 1;
}

static void c_u16(struct cursor *c, uint16_t *v)
{
	uint16_t le;
	if (c->writing) {
		le = htole16(*v);
		memcpy(c->p + c->off, &le, 2);
	} else {
		memcpy(&le, c->p + c->off, 2);
		*v = le16toh(le);
	}
	c->off += 2;
}

static void c_u32(struct cursor *c, uint32_t *v)
{
	uint32_t le;
	if (c->writing) {
		le = htole32(*v);
		memcpy(c->p + c->off, &le, 4);
	} else {
		memcpy(&le, c->p + c->off, 4);
		*v = le32toh(le);
	}
	c->off += 4;
}

static void c_i32(struct cursor *c, int32_t *v)
{
	c_u32(c, (uint32_t *)v);
}

static void c_u64(struct cursor *c, uint64_t *v)
{
	uint64_t le;
	if (c->writing) {
		le = htole64(*v);
		memcpy(c->p + c->off, &le, 8);
	} else {
		memcpy(&le, c->p + c->off, 8);
		*v = le64toh(le);
	}
	c->off += 8;
}

/* n reserved bytes: written as zero, checked zero on read */
static void c_reserved(struct cursor *c, size_t n)
{
	if (c->writing) {
		memset(c->p + c->off, 0, n);
	} else {
		for (size_t i = 0; i < n; i++)
			if (c->p[c->off + i])
				c->reserved_set = true;
	}
	c->off += n;
}

static void c_slot(struct cursor *c, struct garuda_slot *s)
{
	c_u32(c, &s->segment);
	c_u32(c, &s->index);
}

/* ---- bodies ---- */

static void body_hello(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->hello.version);
	c_u32(c, &m->hello.features);
}

static void body_welcome(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->welcome.version);
	c_u32(c, &m->welcome.features);
	c_u64(c, &m->welcome.session_id);
	c_u32(c, &m->welcome.max_segments);
	c_u32(c, &m->welcome.max_lines);
	c_u32(c, &m->welcome.max_bindings);
	c_u32(c, &m->welcome.max_armed);
	c_u32(c, &m->welcome.max_message);
	c_reserved(c, 4);
}

static void body_segment_open(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->segment_open.lines);
	c_i32(c, &m->segment_open.numa_node);
	c_reserved(c, 8);
}

static void body_segment(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->segment.segment_id);
	c_u32(c, &m->segment.lines);
	c_u64(c, &m->segment.bytes);
	c_i32(c, &m->segment.numa_node);
	c_reserved(c, 4);
}

static void body_segment_close(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->segment_close.segment_id);
	c_reserved(c, 4);
}

static void body_slot(struct cursor *c, struct garuda_msg *m)
{
	c_slot(c, &m->bind.slot);
}

static void arm_record(struct cursor *c, struct garuda_arm *a)
{
	c_slot(c, &a->slot);
	c_u64(c, &a->target);
	c_u64(c, &a->token);
	c_u8(c, &a->form);
	c_reserved(c, 3);
	c_u32(c, &a->point);
}

static void body_arm(struct cursor *c, struct garuda_msg *m)
{
	arm_record(c, &m->arm);
}

static void body_disarm(struct cursor *c, struct garuda_msg *m)
{
	c_slot(c, &m->disarm.slot);
	c_u64(c, &m->disarm.token);
}

static void ready_record(struct cursor *c, struct garuda_ready *r)
{
	c_u64(c, &r->token);
	c_u64(c, &r->value);
	c_slot(c, &r->slot);
	c_u32(c, &r->flags);
	c_reserved(c, 4);
}

static void body_ready(struct cursor *c, struct garuda_msg *m)
{
	ready_record(c, &m->ready);
}

/* ARM_BATCH / READY_BATCH: the fixed part is the count; records follow */
static void body_arm_batch(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->arm_batch.count);
	c_reserved(c, 4);
}

static void body_ready_batch(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->ready_batch.count);
	c_reserved(c, 4);
}

static void record_arm(struct cursor *c, struct garuda_msg *m, unsigned i)
{
	arm_record(c, &m->arm_batch.arm[i]);
}

static void record_ready(struct cursor *c, struct garuda_msg *m, unsigned i)
{
	ready_record(c, &m->ready_batch.ready[i]);
}

/* ERROR: fixed part only; the text follows and is handled by the caller */
static void body_error(struct cursor *c, struct garuda_msg *m)
{
	c_i32(c, &m->error.code);
	c_u32(c, &m->error.text_len);
}

static void body_query(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->query.what);
	c_reserved(c, 4);
}

/* QUERY_REPLY: fixed part only; the JSON text follows */
static void body_query_reply(struct cursor *c, struct garuda_msg *m)
{
	c_u32(c, &m->query_reply.json_len);
	c_reserved(c, 4);
}

static void body_empty(struct cursor *c, struct garuda_msg *m)
{
	(void)c;
	(void)m;
}

struct msg_rule {
	const char *name;
	void (*body)(struct cursor *, struct garuda_msg *);
	uint16_t body_bytes; /* fixed part */
	uint8_t min_fds, max_fds;
	bool variable; /* ERROR, QUERY_REPLY: text follows the fixed part */
	/* ARM_BATCH, READY_BATCH: count records of GARUDA_BATCH_RECORD_BYTES follow */
	void (*record)(struct cursor *, struct garuda_msg *, unsigned i);
};

static const struct msg_rule rules[GARUDA_MSG_TYPE_MAX_ + 1] = {
	[GARUDA_MSG_HELLO] = { "HELLO", body_hello, 8, 0, 0, false, NULL },
	[GARUDA_MSG_WELCOME] = { "WELCOME", body_welcome, 40, 0, 0, false, NULL },
	[GARUDA_MSG_SEGMENT_OPEN] = { "SEGMENT_OPEN", body_segment_open, 16, 0, 0, false, NULL },
	[GARUDA_MSG_SEGMENT] = { "SEGMENT", body_segment, 24, 0, 1, false, NULL },
	[GARUDA_MSG_SEGMENT_CLOSE] = { "SEGMENT_CLOSE", body_segment_close, 8, 0, 0, false, NULL },
	[GARUDA_MSG_BIND] = { "BIND", body_slot, 8, 1, 1, false, NULL },
	[GARUDA_MSG_UNBIND] = { "UNBIND", body_slot, 8, 0, 0, false, NULL },
	[GARUDA_MSG_ARM] = { "ARM", body_arm, 32, 0, 0, false, NULL },
	[GARUDA_MSG_DISARM] = { "DISARM", body_disarm, 16, 0, 0, false, NULL },
	[GARUDA_MSG_READY] = { "READY", body_ready, 32, 0, 0, false, NULL },
	[GARUDA_MSG_ERROR] = { "ERROR", body_error, 8, 0, 0, true, NULL },
	[GARUDA_MSG_ACK] = { "ACK", body_empty, 0, 0, 0, false, NULL },
	[GARUDA_MSG_SEGMENT_ATTACH] = { "SEGMENT_ATTACH", body_segment_open, 16, 1, 1, false, NULL },
	[GARUDA_MSG_QUERY] = { "QUERY", body_query, 8, 0, 0, false, NULL },
	[GARUDA_MSG_QUERY_REPLY] = { "QUERY_REPLY", body_query_reply, 8, 0, 0, true, NULL },
	[GARUDA_MSG_ARM_BATCH] = { "ARM_BATCH", body_arm_batch, 8, 0, 0, false, record_arm },
	[GARUDA_MSG_READY_BATCH] = { "READY_BATCH", body_ready_batch, 8, 0, 0, false, record_ready },
};

/* The variable text of an ERROR or QUERY_REPLY: its length field, buffer and cap. */
struct var_text {
	uint32_t *len;
	char *buf;
	uint32_t max;
};

static struct var_text var_text(struct garuda_msg *m)
{
	if (m->type == GARUDA_MSG_QUERY_REPLY)
		return (struct var_text){ &m->query_reply.json_len, m->query_reply.json, GARUDA_QUERY_TEXT_MAX };
	return (struct var_text){ &m->error.text_len, m->error.text, GARUDA_ERROR_TEXT_MAX };
}

/* The record count of a batch message (the field is in the same place for both). */
static uint32_t batch_count(const struct garuda_msg *m)
{
	return m->type == GARUDA_MSG_ARM_BATCH ? m->arm_batch.count : m->ready_batch.count;
}

static bool batch_count_ok(uint32_t n)
{
	return n >= 1 && n <= GARUDA_BATCH_MAX;
}

static bool form_ok(uint8_t form)
{
	return form >= GARUDA_FORM_EVENTFD && form < GARUDA_FORM_COUNT;
}

static const struct msg_rule *rule_for(unsigned type)
{
	if (type == 0 || type > GARUDA_MSG_TYPE_MAX_)
		return NULL;
	return &rules[type];
}

const char *garuda_msg_type_name(unsigned type)
{
	const struct msg_rule *r = rule_for(type);
	return r ? r->name : NULL;
}

static void codec_header(struct cursor *c, struct garuda_msg *m, uint32_t *length)
{
	c_u16(c, &m->type);
	c_u16(c, &m->flags);
	c_u32(c, length);
	c_u16(c, &m->nfds);
	c_reserved(c, 6);
	c_u64(c, &m->cookie);
}

static bool slot_ok(const struct garuda_slot *s)
{
	return s->index < GARUDA_SEGMENT_MAX_LINES * GARUDA_WORDS_PER_LINE;
}

static bool numa_ok(int32_t node)
{
	return node >= -1 && node <= GARUDA_NUMA_MAX;
}

static bool lines_ok(uint32_t lines)
{
	return lines >= 1 && lines <= GARUDA_SEGMENT_MAX_LINES;
}

static bool error_code_ok(int32_t code)
{
	return (code < 0 && code > -GARUDA_ERR_BASE) || garuda_errcode_known(code);
}

/* Range checks on a body (both directions). */
static int check_body(const struct garuda_msg *m)
{
	switch (m->type) {
	case GARUDA_MSG_HELLO:
		/* any feature bits: a client may offer what a newer daemon knows; the
		 * daemon grants only what it supports */
		return m->hello.version == GARUDA_PROTO_VERSION ? 0 : -GARUDA_E_BAD_VERSION;
	case GARUDA_MSG_WELCOME:
		if (m->welcome.version != GARUDA_PROTO_VERSION)
			return -GARUDA_E_BAD_VERSION;
		return m->welcome.features & ~GARUDA_FEATURES_KNOWN_ ? -GARUDA_E_RESERVED_SET : 0;
	case GARUDA_MSG_ARM_BATCH:
		if (!batch_count_ok(m->arm_batch.count))
			return -GARUDA_E_BAD_VALUE;
		for (uint32_t i = 0; i < m->arm_batch.count; i++) {
			if (!slot_ok(&m->arm_batch.arm[i].slot))
				return -GARUDA_E_SLOT_RANGE;
			if (!form_ok(m->arm_batch.arm[i].form))
				return -GARUDA_E_BAD_VALUE;
		}
		return 0;
	case GARUDA_MSG_READY_BATCH:
		if (!batch_count_ok(m->ready_batch.count))
			return -GARUDA_E_BAD_VALUE;
		for (uint32_t i = 0; i < m->ready_batch.count; i++) {
			if (m->ready_batch.ready[i].flags)
				return -GARUDA_E_RESERVED_SET; /* OVERFLOW travels as a plain READY */
			if (!slot_ok(&m->ready_batch.ready[i].slot))
				return -GARUDA_E_SLOT_RANGE;
		}
		return 0;
	case GARUDA_MSG_SEGMENT_OPEN:
	case GARUDA_MSG_SEGMENT_ATTACH:
		return lines_ok(m->segment_open.lines) && numa_ok(m->segment_open.numa_node)
			       ? 0
			       : -GARUDA_E_BAD_VALUE;
	case GARUDA_MSG_SEGMENT:
		return lines_ok(m->segment.lines) && numa_ok(m->segment.numa_node) &&
				       m->segment.bytes >= GARUDA_SEGMENT_HEADER_BYTES +
								   (uint64_t)m->segment.lines * GARUDA_LINE_BYTES
			       ? 0
			       : -GARUDA_E_BAD_VALUE;
	case GARUDA_MSG_BIND:
	case GARUDA_MSG_UNBIND:
		return slot_ok(&m->bind.slot) ? 0 : -GARUDA_E_SLOT_RANGE;
	case GARUDA_MSG_ARM:
		if (!slot_ok(&m->arm.slot))
			return -GARUDA_E_SLOT_RANGE;
		return form_ok(m->arm.form) ? 0 : -GARUDA_E_BAD_VALUE;
	case GARUDA_MSG_DISARM:
		return slot_ok(&m->disarm.slot) ? 0 : -GARUDA_E_SLOT_RANGE;
	case GARUDA_MSG_READY:
		if (m->ready.flags & ~GARUDA_READY_OVERFLOW)
			return -GARUDA_E_RESERVED_SET;
		return slot_ok(&m->ready.slot) ? 0 : -GARUDA_E_SLOT_RANGE;
	case GARUDA_MSG_ERROR:
	case GARUDA_MSG_QUERY_REPLY: {
		struct var_text t = var_text((struct garuda_msg *)m);
		if (*t.len > t.max)
			return -GARUDA_E_TOO_LONG;
		if (memchr(t.buf, '\0', *t.len))
			return -GARUDA_E_BAD_VALUE; /* embedded NUL */
		return m->type == GARUDA_MSG_QUERY_REPLY || error_code_ok(m->error.code) ? 0 : -GARUDA_E_BAD_VALUE;
	}
	case GARUDA_MSG_QUERY:
		return m->query.what == 0 ? 0 : -GARUDA_E_BAD_VALUE;
	default:
		return 0;
	}
}

static int check_fds(const struct msg_rule *r, unsigned nfds)
{
	return nfds >= r->min_fds && nfds <= r->max_fds ? 0 : -GARUDA_E_FD_COUNT;
}

ssize_t garuda_msg_encode(const struct garuda_msg *m, void *buf, size_t cap)
{
	const struct msg_rule *r = rule_for(m->type);
	if (!r)
		return -GARUDA_E_UNKNOWN_TYPE;
	if (m->flags & ~GARUDA_F_KNOWN_)
		return -GARUDA_E_RESERVED_SET;
	int err = check_fds(r, m->nfds);
	if (err)
		return err;
	err = check_body(m);
	if (err)
		return err;

	struct garuda_msg copy = *m; /* the cursor walk takes non-const pointers */
	uint32_t length = GARUDA_HDR_BYTES + r->body_bytes;
	if (r->variable)
		length += *var_text(&copy).len;
	if (r->record)
		length += batch_count(m) * GARUDA_BATCH_RECORD_BYTES;
	if (length > cap)
		return -ENOBUFS;

	struct cursor c = { .p = buf, .writing = true };
	codec_header(&c, &copy, &length);
	r->body(&c, &copy);
	if (r->variable) {
		struct var_text t = var_text(&copy);
		memcpy(c.p + c.off, t.buf, *t.len);
	}
	for (uint32_t i = 0; r->record && i < batch_count(m); i++)
		r->record(&c, &copy, i);
	return (ssize_t)length;
}

int garuda_msg_decode(const void *buf, size_t len, unsigned nfds, struct garuda_msg *out)
{
	if (len < GARUDA_HDR_BYTES)
		return -GARUDA_E_TOO_SHORT;
	if (len > GARUDA_MSG_MAX)
		return -GARUDA_E_TOO_LONG;

	memset(out, 0, sizeof(*out));
	uint32_t length;
	struct cursor c = { .p = (uint8_t *)buf, .writing = false };
	codec_header(&c, out, &length);
	if (length != len)
		return -GARUDA_E_BAD_LENGTH;
	const struct msg_rule *r = rule_for(out->type);
	if (!r)
		return -GARUDA_E_UNKNOWN_TYPE;
	if (c.reserved_set || (out->flags & ~GARUDA_F_KNOWN_))
		return -GARUDA_E_RESERVED_SET;
	if (out->nfds != nfds)
		return -GARUDA_E_FD_COUNT;
	int err = check_fds(r, nfds);
	if (err)
		return err;

	size_t fixed = GARUDA_HDR_BYTES + r->body_bytes;
	if (len < fixed)
		return -GARUDA_E_TOO_SHORT;
	if (len > fixed && !r->variable && !r->record)
		return -GARUDA_E_TOO_LONG;
	r->body(&c, out);
	if (c.reserved_set)
		return -GARUDA_E_RESERVED_SET;
	if (r->record) {
		uint32_t n = batch_count(out);
		if (!batch_count_ok(n))
			return -GARUDA_E_BAD_VALUE;
		if (len != fixed + (size_t)n * GARUDA_BATCH_RECORD_BYTES)
			return -GARUDA_E_BAD_LENGTH;
		for (uint32_t i = 0; i < n; i++)
			r->record(&c, out, i);
		if (c.reserved_set)
			return -GARUDA_E_RESERVED_SET;
	}
	if (r->variable) {
		struct var_text t = var_text(out);
		if (*t.len > t.max)
			return -GARUDA_E_TOO_LONG;
		if (*t.len != len - fixed)
			return -GARUDA_E_BAD_LENGTH;
		memcpy(t.buf, c.p + c.off, *t.len);
		t.buf[*t.len] = '\0';
	}
	return check_body(out);
}

uint64_t garuda_peek_cookie(const void *buf, size_t len)
{
	if (len < GARUDA_HDR_BYTES)
		return 0;
	struct garuda_msg m;
	uint32_t length;
	struct cursor c = { .p = (uint8_t *)buf, .writing = false };
	codec_header(&c, &m, &length);
	return m.cookie;
}

void garuda_msg_init(struct garuda_msg *m, enum garuda_msg_type type, uint64_t cookie)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint16_t)type;
	m->cookie = cookie;
	switch (type) {
	case GARUDA_MSG_HELLO:
		m->hello.version = GARUDA_PROTO_VERSION;
		break;
	case GARUDA_MSG_WELCOME:
		m->welcome.version = GARUDA_PROTO_VERSION;
		m->welcome.max_message = GARUDA_MSG_MAX;
		break;
	case GARUDA_MSG_BIND:
	case GARUDA_MSG_SEGMENT_ATTACH:
		m->nfds = 1;
		break;
	default:
		break;
	}
}

void garuda_msg_error(struct garuda_msg *m, uint64_t cookie, int code, const char *text)
{
	garuda_msg_init(m, GARUDA_MSG_ERROR, cookie);
	/* accept either sign for registry codes; errno travels negative */
	if (code < 0 && code > INT32_MIN && -code >= GARUDA_ERR_BASE)
		code = -code;
	m->error.code = code;
	if (!text)
		text = garuda_strerror(code);
	size_t n = strnlen(text, GARUDA_ERROR_TEXT_MAX);
	memcpy(m->error.text, text, n);
	m->error.text[n] = '\0';
	m->error.text_len = (uint32_t)n;
}
