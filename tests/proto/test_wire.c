/* test_wire.c — the wire format as a client in another language depends on it.
 *
 * Pins: the exact bytes of every message type (hand-written arrays in
 * wire_samples.h), field-by-field round trips at the edges of every range (batches of
 * 1 and 15 records), the encoder's refusals, and that the decoder rejects each
 * malformed class with its own registry code, batches and feature bits included. Every decode runs on an exact-size heap copy, so ASan catches a read
 * past the datagram.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "errcode.h"
#include "fdcheck.h"
#include "segment_layout.h"
#include "wire.h"
#include "wire_samples.h"

TestSuite(wire, .init = fdcheck_begin, .fini = fdcheck_end);

#define MAX_INDEX (65536u * 8u - 1u) /* highest valid slot index */

/* ---- little helpers ---- */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Decode from an exact-size heap copy (so ASan sees any over-read). */
static int dec(const void *bytes, size_t len, unsigned nfds, struct garuda_msg *out)
{
	struct garuda_msg scratch;
	void *copy = malloc(len ? len : 1);
	cr_assert_not_null(copy);
	if (len)
		memcpy(copy, bytes, len);
	int r = garuda_msg_decode(copy, len, nfds, out ? out : &scratch);
	free(copy);
	return r;
}

static bool is_batch(unsigned type)
{
	return type == GARUDA_MSG_ARM_BATCH || type == GARUDA_MSG_READY_BATCH;
}

/* the type's main sample (variant 0) */
static const struct sample *sample_of(unsigned type)
{
	for (size_t i = 0; i < N_SAMPLES; i++)
		if (samples[i].type == type && samples[i].variant == 0)
			return &samples[i];
	cr_assert_fail("no sample for type %u", type);
	return NULL;
}

/* Copy the sample of `type` into buf; returns its length, sets *nfds. */
static size_t load(unsigned type, uint8_t *buf, unsigned *nfds)
{
	const struct sample *s = sample_of(type);
	memcpy(buf, s->bytes, s->len);
	*nfds = s->nfds;
	return s->len;
}

/* Decode the (possibly mutated) buf and expect `code` (0 or a positive registry code). */
static void expect_decode_at(const char *file, int line, const void *buf, size_t len,
			     unsigned nfds, int code)
{
	int r = dec(buf, len, nfds, NULL);
	int want = -code;
	cr_assert_eq(r, want, "%s:%d: decode gave %d (%s), want %d (%s)", file, line, r,
		     garuda_errcode_name(-r) ?: "ok", want, garuda_errcode_name(code) ?: "ok");
}
#define expect_decode(buf, len, nfds, code) \
	expect_decode_at(__FILE__, __LINE__, (buf), (len), (nfds), (int)(code))

/* The struct each hand-written sample stands for, also written by hand. */
static void sample_msg_v(unsigned type, unsigned variant, struct garuda_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint16_t)type;
	switch (type) {
	case GARUDA_MSG_HELLO:
		m->cookie = variant ? 0x0e : 1;
		m->hello.version = 1;
		m->hello.features = variant ? GARUDA_FEATURE_READY_BATCH : 0;
		break;
	case GARUDA_MSG_WELCOME:
		m->cookie = 1;
		m->welcome.version = 1;
		m->welcome.features = GARUDA_FEATURE_READY_BATCH;
		m->welcome.session_id = 0x0102030405060708ull;
		m->welcome.max_segments = 16;
		m->welcome.max_lines = 4096;
		m->welcome.max_bindings = 1024;
		m->welcome.max_armed = 65536;
		m->welcome.max_message = 512;
		break;
	case GARUDA_MSG_SEGMENT_OPEN:
		m->cookie = 2;
		m->segment_open.lines = 64;
		m->segment_open.numa_node = -1;
		break;
	case GARUDA_MSG_SEGMENT:
		m->cookie = 2;
		m->nfds = 1;
		m->segment.segment_id = 5;
		m->segment.lines = 64;
		m->segment.bytes = 8192;
		m->segment.numa_node = 1;
		break;
	case GARUDA_MSG_SEGMENT_CLOSE:
		m->cookie = 3;
		m->flags = GARUDA_F_NOREPLY;
		m->segment_close.segment_id = 5;
		break;
	case GARUDA_MSG_BIND:
		m->cookie = 4;
		m->nfds = 1;
		m->bind.slot = (struct garuda_slot){ 5, 9 };
		break;
	case GARUDA_MSG_UNBIND:
		m->cookie = 5;
		m->bind.slot = (struct garuda_slot){ 5, MAX_INDEX };
		break;
	case GARUDA_MSG_ARM:
		m->cookie = variant ? 8 : 7;
		m->arm.slot = (struct garuda_slot){ 3, 42 };
		m->arm.target = 0x100;
		m->arm.token = 0xdeadbeefcafef00dull;
		m->arm.form = GARUDA_FORM_MESSAGE;
		m->arm.point = variant ? 7 : 0;
		break;
	case GARUDA_MSG_DISARM:
		m->cookie = 8;
		m->disarm.slot = (struct garuda_slot){ 3, 42 };
		m->disarm.token = 0xdeadbeefcafef00dull;
		break;
	case GARUDA_MSG_READY:
		m->cookie = 0;
		m->ready.token = 0xdeadbeefcafef00dull;
		m->ready.value = 0x101;
		m->ready.slot = (struct garuda_slot){ 3, 42 };
		m->ready.flags = GARUDA_READY_OVERFLOW;
		break;
	case GARUDA_MSG_ERROR:
		m->cookie = 9;
		m->error.code = GARUDA_E_QUOTA;
		m->error.text_len = 14;
		memcpy(m->error.text, "quota exceeded", 15);
		break;
	case GARUDA_MSG_ACK:
		m->cookie = 0x1122334455667788ull;
		break;
	case GARUDA_MSG_SEGMENT_ATTACH:
		m->cookie = 10;
		m->nfds = 1;
		m->segment_open.lines = 8;
		m->segment_open.numa_node = 1023;
		break;
	case GARUDA_MSG_QUERY:
		m->cookie = 11;
		m->query.what = 0;
		break;
	case GARUDA_MSG_QUERY_REPLY:
		m->cookie = 11;
		m->query_reply.json_len = 8;
		memcpy(m->query_reply.json, "{\"id\":7}", 9);
		break;
	case GARUDA_MSG_ARM_BATCH:
		m->cookie = 12;
		m->flags = GARUDA_F_NOREPLY;
		m->arm_batch.count = 2;
		m->arm_batch.arm[0] = (struct garuda_arm){ .slot = { 3, 42 },
							   .target = 0x100,
							   .token = 0xdeadbeefcafef00dull,
							   .form = GARUDA_FORM_MESSAGE };
		m->arm_batch.arm[1] = (struct garuda_arm){ .slot = { 3, 43 },
							   .target = 0x200,
							   .token = 0x0123456789abcdefull,
							   .form = GARUDA_FORM_DOORBELL };
		break;
	case GARUDA_MSG_READY_BATCH:
		m->cookie = 0;
		m->ready_batch.count = 2;
		m->ready_batch.ready[0] = (struct garuda_ready){ .token = 0xdeadbeefcafef00dull,
								 .value = 0x101,
								 .slot = { 3, 42 } };
		m->ready_batch.ready[1] = (struct garuda_ready){ .token = 0x0123456789abcdefull,
								 .value = 0x2ff,
								 .slot = { 4, 43 } };
		break;
	default:
		cr_assert_fail("type %u", type);
	}
	if (variant)
		cr_assert(type == GARUDA_MSG_HELLO || type == GARUDA_MSG_ARM, "type %u has no variant %u",
			  type, variant);
}

static void sample_msg(unsigned type, struct garuda_msg *m)
{
	sample_msg_v(type, 0, m);
}

static void sample_msg_of(const struct sample *s, struct garuda_msg *m)
{
	sample_msg_v(s->type, s->variant, m);
}

#define EQ(field) cr_assert_eq(a->field, e->field, "%s: field " #field " differs", name)

static void assert_msg_eq(const struct garuda_msg *a, const struct garuda_msg *e)
{
	const char *name = garuda_msg_type_name(e->type) ?: "?";
	EQ(type);
	EQ(flags);
	EQ(nfds);
	EQ(cookie);
	switch (e->type) {
	case GARUDA_MSG_HELLO:
		EQ(hello.version);
		EQ(hello.features);
		break;
	case GARUDA_MSG_WELCOME:
		EQ(welcome.version);
		EQ(welcome.features);
		EQ(welcome.session_id);
		EQ(welcome.max_segments);
		EQ(welcome.max_lines);
		EQ(welcome.max_bindings);
		EQ(welcome.max_armed);
		EQ(welcome.max_message);
		break;
	case GARUDA_MSG_SEGMENT_OPEN:
	case GARUDA_MSG_SEGMENT_ATTACH:
		EQ(segment_open.lines);
		EQ(segment_open.numa_node);
		break;
	case GARUDA_MSG_SEGMENT:
		EQ(segment.segment_id);
		EQ(segment.lines);
		EQ(segment.bytes);
		EQ(segment.numa_node);
		break;
	case GARUDA_MSG_SEGMENT_CLOSE:
		EQ(segment_close.segment_id);
		break;
	case GARUDA_MSG_QUERY:
		EQ(query.what);
		break;
	case GARUDA_MSG_QUERY_REPLY:
		EQ(query_reply.json_len);
		cr_assert_str_eq(a->query_reply.json, e->query_reply.json);
		break;
	case GARUDA_MSG_BIND:
	case GARUDA_MSG_UNBIND:
		EQ(bind.slot.segment);
		EQ(bind.slot.index);
		break;
	case GARUDA_MSG_ARM:
		EQ(arm.slot.segment);
		EQ(arm.slot.index);
		EQ(arm.target);
		EQ(arm.token);
		EQ(arm.form);
		break;
	case GARUDA_MSG_DISARM:
		EQ(disarm.slot.segment);
		EQ(disarm.slot.index);
		EQ(disarm.token);
		break;
	case GARUDA_MSG_READY:
		EQ(ready.token);
		EQ(ready.value);
		EQ(ready.slot.segment);
		EQ(ready.slot.index);
		EQ(ready.flags);
		break;
	case GARUDA_MSG_ERROR:
		EQ(error.code);
		EQ(error.text_len);
		cr_assert_eq(memcmp(a->error.text, e->error.text, e->error.text_len), 0,
			     "ERROR text differs");
		cr_assert_eq(a->error.text[e->error.text_len], '\0', "ERROR text not terminated");
		break;
	case GARUDA_MSG_ACK:
		break;
	case GARUDA_MSG_ARM_BATCH:
		EQ(arm_batch.count);
		for (uint32_t i = 0; i < e->arm_batch.count && i < GARUDA_BATCH_MAX; i++) {
			const struct garuda_arm *x = &a->arm_batch.arm[i], *y = &e->arm_batch.arm[i];
			cr_assert(x->slot.segment == y->slot.segment && x->slot.index == y->slot.index &&
					  x->target == y->target && x->token == y->token && x->form == y->form,
				  "%s: record %u differs", name, i);
		}
		break;
	case GARUDA_MSG_READY_BATCH:
		EQ(ready_batch.count);
		for (uint32_t i = 0; i < e->ready_batch.count && i < GARUDA_BATCH_MAX; i++) {
			const struct garuda_ready *x = &a->ready_batch.ready[i], *y = &e->ready_batch.ready[i];
			cr_assert(x->token == y->token && x->value == y->value &&
					  x->slot.segment == y->slot.segment && x->slot.index == y->slot.index &&
					  x->flags == y->flags,
				  "%s: record %u differs", name, i);
		}
		break;
	default:
		cr_assert_fail("type %u", e->type);
	}
}
#undef EQ

/* encode, check it against `expect` (if given), decode, compare, re-encode */
static void round_trip(const struct garuda_msg *m, const uint8_t *expect, size_t expect_len)
{
	uint8_t buf[GARUDA_MSG_MAX + 16], again[GARUDA_MSG_MAX + 16];
	memset(buf, 0xa5, sizeof(buf));
	const char *name = garuda_msg_type_name(m->type) ?: "?";
	ssize_t n = garuda_msg_encode(m, buf, sizeof(buf));
	cr_assert_gt(n, 0, "%s: encode failed: %zd (%s)", name, n, garuda_strerror((int)n));
	cr_assert_leq((size_t)n, GARUDA_MSG_MAX);
	for (size_t i = (size_t)n; i < sizeof(buf); i++)
		cr_assert_eq(buf[i], 0xa5, "%s: encode wrote past its length at %zu", name, i);
	if (expect) {
		cr_assert_eq((size_t)n, expect_len, "%s: length %zd, want %zu", name, n, expect_len);
		for (size_t i = 0; i < expect_len; i++)
			cr_assert_eq(buf[i], expect[i], "%s: byte %zu is 0x%02x, want 0x%02x", name,
				     i, buf[i], expect[i]);
	}
	struct garuda_msg out;
	int r = dec(buf, (size_t)n, m->nfds, &out);
	cr_assert_eq(r, 0, "%s: decode of own encoding failed: %d (%s)", name, r,
		     garuda_strerror(r));
	assert_msg_eq(&out, m);
	ssize_t n2 = garuda_msg_encode(&out, again, sizeof(again));
	cr_assert_eq(n2, n);
	cr_assert_eq(memcmp(buf, again, (size_t)n), 0, "%s: re-encode differs", name);
}

/* ---- exact bytes ---- */

Test(wire, every_type_has_a_sample)
{
	for (unsigned t = 1; t <= GARUDA_MSG_TYPE_MAX_; t++)
		(void)sample_of(t);
	cr_assert_eq(GARUDA_MSG_TYPE_MAX_, 17, "17 message types in protocol version 1");
	size_t main = 0;
	for (size_t i = 0; i < N_SAMPLES; i++)
		main += samples[i].variant == 0;
	cr_assert_eq(main, 17, "one main sample per type");
}

Test(wire, encode_gives_the_documented_bytes)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		struct garuda_msg m;
		sample_msg_of(&samples[i], &m);
		round_trip(&m, samples[i].bytes, samples[i].len);
	}
}

Test(wire, decode_of_the_documented_bytes_gives_every_field)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		struct garuda_msg want, got;
		sample_msg_of(&samples[i], &want);
		int r = dec(samples[i].bytes, samples[i].len, samples[i].nfds, &got);
		cr_assert_eq(r, 0, "%s: %d", garuda_msg_type_name(samples[i].type), r);
		assert_msg_eq(&got, &want);
	}
}

/* The worked example of docs/protocol.md, built the way a client builds it. */
Test(wire, arm_exact_bytes)
{
	static const uint8_t want[56] = {
		0x08, 0x00, 0x00, 0x00, 0x38, 0x00, 0x00, 0x00, /* type 8, flags 0, length 56 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* nfds 0, reserved */
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cookie 7 */
		0x03, 0x00, 0x00, 0x00, 0x2a, 0x00, 0x00, 0x00, /* slot (3, 42) */
		0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* target 0x100 */
		0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad, 0xde, /* token */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* form MESSAGE, reserved */
	};
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 7);
	m.arm.slot.segment = 3;
	m.arm.slot.index = 42;
	m.arm.target = 0x100;
	m.arm.token = 0xdeadbeefcafef00dull;
	m.arm.form = GARUDA_FORM_MESSAGE;
	uint8_t buf[64];
	ssize_t n = garuda_msg_encode(&m, buf, sizeof(buf));
	cr_assert_eq(n, 56);
	cr_assert_arr_eq(buf, want, sizeof(want));
	cr_assert_arr_eq(sample_arm, want, sizeof(want));
}

Test(wire, hello_exact_bytes)
{
	static const uint8_t want[32] = {
		0x01, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, /* type 1, flags 0, length 32 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* nfds 0, reserved */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* cookie 1 */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* version 1, features 0 */
	};
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 1);
	uint8_t buf[64];
	ssize_t n = garuda_msg_encode(&m, buf, sizeof(buf));
	cr_assert_eq(n, 32);
	cr_assert_arr_eq(buf, want, sizeof(want));
	/* offering READY_BATCH sets byte 28 and nothing else */
	m.hello.features = GARUDA_FEATURE_READY_BATCH;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 32);
	for (size_t i = 0; i < 32; i++)
		cr_assert_eq(buf[i], i == 28 ? 0x01 : want[i], "byte %zu", i);
	cr_assert_eq(GARUDA_FEATURE_READY_BATCH, 1);
}

/* The ARM_BATCH worked example of docs/protocol.md, built the way a client builds it:
 * each record is exactly the body of the ARM it stands for. */
Test(wire, arm_batch_exact_bytes)
{
	struct garuda_msg m, one;
	garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 12);
	m.flags = GARUDA_F_NOREPLY;
	m.arm_batch.count = 2;
	m.arm_batch.arm[0].slot = (struct garuda_slot){ 3, 42 };
	m.arm_batch.arm[0].target = 0x100;
	m.arm_batch.arm[0].token = 0xdeadbeefcafef00dull;
	m.arm_batch.arm[0].form = GARUDA_FORM_MESSAGE;
	m.arm_batch.arm[1].slot = (struct garuda_slot){ 3, 43 };
	m.arm_batch.arm[1].target = 0x200;
	m.arm_batch.arm[1].token = 0x0123456789abcdefull;
	m.arm_batch.arm[1].form = GARUDA_FORM_DOORBELL;
	uint8_t buf[GARUDA_MSG_MAX], arm[64];
	ssize_t n = garuda_msg_encode(&m, buf, sizeof(buf));
	cr_assert_eq(n, 96);
	cr_assert_eq((size_t)n, sizeof(sample_arm_batch));
	cr_assert_arr_eq(buf, sample_arm_batch, sizeof(sample_arm_batch));
	for (unsigned i = 0; i < 2; i++) {
		garuda_msg_init(&one, GARUDA_MSG_ARM, 1);
		one.arm = m.arm_batch.arm[i];
		cr_assert_eq(garuda_msg_encode(&one, arm, sizeof(arm)), 56);
		cr_assert_arr_eq(buf + 32 + 32 * i, arm + 24, 32, "record %u is not an ARM body", i);
	}
	cr_assert_arr_eq(sample_arm_batch + 32, sample_arm + 24, 32, "record 0 is the ARM sample");
}

/* A READY_BATCH record is exactly the body of a READY (whose flags are 0). */
Test(wire, ready_batch_records_are_ready_bodies)
{
	struct garuda_msg m, one;
	sample_msg(GARUDA_MSG_READY_BATCH, &m);
	uint8_t buf[GARUDA_MSG_MAX], ready[64];
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 96);
	for (unsigned i = 0; i < 2; i++) {
		garuda_msg_init(&one, GARUDA_MSG_READY, 0);
		one.ready = m.ready_batch.ready[i];
		cr_assert_eq(garuda_msg_encode(&one, ready, sizeof(ready)), 56);
		cr_assert_arr_eq(buf + 32 + 32 * i, ready + 24, 32, "record %u is not a READY body", i);
	}
}

/* A full batch (15 records) is exactly the datagram cap. */
Test(wire, batch_sizes)
{
	cr_assert_eq(GARUDA_BATCH_MAX, 15);
	cr_assert_eq(GARUDA_BATCH_RECORD_BYTES, 32);
	for (uint32_t n = 1; n <= 15; n++) {
		struct garuda_msg a, r;
		garuda_msg_init(&a, GARUDA_MSG_ARM_BATCH, n);
		garuda_msg_init(&r, GARUDA_MSG_READY_BATCH, 0);
		a.arm_batch.count = n;
		r.ready_batch.count = n;
		for (uint32_t i = 0; i < n; i++)
			a.arm_batch.arm[i].form = GARUDA_FORM_EVENTFD;
		uint8_t buf[GARUDA_MSG_MAX];
		cr_assert_eq(garuda_msg_encode(&a, buf, sizeof(buf)), (ssize_t)(32 + 32 * n));
		cr_assert_eq(garuda_msg_encode(&r, buf, sizeof(buf)), (ssize_t)(32 + 32 * n));
	}
	cr_assert_eq(32 + 32 * GARUDA_BATCH_MAX, GARUDA_MSG_MAX);
}

/* Each type's datagram size (ERROR: without its text). */
Test(wire, sizes)
{
	static const struct {
		unsigned type;
		size_t bytes;
	} sizes[] = {
		{ GARUDA_MSG_HELLO, 32 },	  { GARUDA_MSG_WELCOME, 64 },
		{ GARUDA_MSG_SEGMENT_OPEN, 40 },  { GARUDA_MSG_SEGMENT, 48 },
		{ GARUDA_MSG_SEGMENT_CLOSE, 32 }, { GARUDA_MSG_BIND, 32 },
		{ GARUDA_MSG_UNBIND, 32 },	  { GARUDA_MSG_ARM, 56 },
		{ GARUDA_MSG_DISARM, 40 },	  { GARUDA_MSG_READY, 56 },
		{ GARUDA_MSG_ERROR, 32 },	  { GARUDA_MSG_ACK, 24 },
		{ GARUDA_MSG_SEGMENT_ATTACH, 40 }, { GARUDA_MSG_QUERY, 32 },
		{ GARUDA_MSG_QUERY_REPLY, 32 },	  { GARUDA_MSG_ARM_BATCH, 64 },
		{ GARUDA_MSG_READY_BATCH, 64 },
	};
	cr_assert_eq(GARUDA_HDR_BYTES, 24);
	cr_assert_eq(GARUDA_MSG_MAX, 512);
	cr_assert_eq(GARUDA_PROTO_VERSION, 1);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct garuda_msg m;
		sample_msg(sizes[i].type, &m);
		if (m.type == GARUDA_MSG_QUERY_REPLY)
			m.query_reply.json_len = 0;
		if (m.type == GARUDA_MSG_ERROR)
			m.error.text_len = 0;
		if (m.type == GARUDA_MSG_ARM_BATCH) /* one record */
			m.arm_batch.count = 1;
		if (m.type == GARUDA_MSG_READY_BATCH)
			m.ready_batch.count = 1;
		uint8_t buf[GARUDA_MSG_MAX];
		cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), (ssize_t)sizes[i].bytes,
			     "%s", garuda_msg_type_name(sizes[i].type));
	}
}

Test(wire, type_values_and_names)
{
	static const char *names[] = { NULL,	  "HELLO",	   "WELCOME", "SEGMENT_OPEN",
				       "SEGMENT", "SEGMENT_CLOSE", "BIND",    "UNBIND",
				       "ARM",	  "DISARM",	   "READY",   "ERROR",
				       "ACK",	  "SEGMENT_ATTACH", "QUERY",   "QUERY_REPLY",
				       "ARM_BATCH", "READY_BATCH" };
	for (unsigned t = 1; t <= 17; t++)
		cr_assert_str_eq(garuda_msg_type_name(t), names[t]);
	cr_assert_eq(GARUDA_MSG_ARM_BATCH, 16);
	cr_assert_eq(GARUDA_MSG_READY_BATCH, 17);
	cr_assert_null(garuda_msg_type_name(0));
	cr_assert_null(garuda_msg_type_name(18));
	cr_assert_null(garuda_msg_type_name(19));
	cr_assert_null(garuda_msg_type_name(0xffff));
	cr_assert_null(garuda_msg_type_name(UINT_MAX));
	cr_assert_eq(GARUDA_F_NOREPLY, 1);
	cr_assert_eq(GARUDA_READY_OVERFLOW, 1);
	cr_assert_eq(GARUDA_FORM_EVENTFD, 1);
	cr_assert_eq(GARUDA_FORM_MESSAGE, 2);
	cr_assert_eq(GARUDA_FORM_DOORBELL, 3);
}

/* ---- round trips at the edges of every range ---- */

static size_t edge_msgs(struct garuda_msg *v)
{
	size_t n = 0;
	struct garuda_msg *m;
#define NEXT(t, c) (m = &v[n++], garuda_msg_init(m, (t), (c)), m)
#define NEXT_(t, c) (void)NEXT(t, c)
	NEXT(GARUDA_MSG_HELLO, UINT64_MAX)->flags = GARUDA_F_NOREPLY;
	NEXT_(GARUDA_MSG_HELLO, 0);
	NEXT(GARUDA_MSG_HELLO, 1)->hello.features = GARUDA_FEATURES_KNOWN_;

	NEXT_(GARUDA_MSG_WELCOME, UINT64_MAX);
	m->welcome.features = GARUDA_FEATURES_KNOWN_;
	m->welcome.session_id = UINT64_MAX;
	m->welcome.max_segments = UINT32_MAX;
	m->welcome.max_lines = UINT32_MAX;
	m->welcome.max_bindings = UINT32_MAX;
	m->welcome.max_armed = UINT32_MAX;
	m->welcome.max_message = UINT32_MAX;
	NEXT_(GARUDA_MSG_WELCOME, 0);
	m->welcome.max_message = 0;

	NEXT_(GARUDA_MSG_SEGMENT_OPEN, 1);
	m->segment_open.lines = 1;
	m->segment_open.numa_node = -1;
	NEXT_(GARUDA_MSG_SEGMENT_OPEN, 2);
	m->segment_open.lines = GARUDA_SEGMENT_MAX_LINES;
	m->segment_open.numa_node = GARUDA_NUMA_MAX;
	NEXT_(GARUDA_MSG_SEGMENT_OPEN, 3);
	m->segment_open.lines = 2;
	m->segment_open.numa_node = 0;

	NEXT_(GARUDA_MSG_SEGMENT, 1); /* SEGMENT_OPEN's reply: the memfd rides along */
	m->nfds = 1;
	m->segment.segment_id = UINT32_MAX;
	m->segment.lines = GARUDA_SEGMENT_MAX_LINES;
	m->segment.bytes = UINT64_MAX;
	m->segment.numa_node = -1;
	NEXT_(GARUDA_MSG_SEGMENT, 2); /* SEGMENT_ATTACH's reply: no fd */
	m->segment.segment_id = 0;
	m->segment.lines = 1;
	m->segment.bytes = GARUDA_SEGMENT_HEADER_BYTES + GARUDA_LINE_BYTES; /* the minimum */
	m->segment.numa_node = GARUDA_NUMA_MAX;

	NEXT(GARUDA_MSG_SEGMENT_CLOSE, 4)->segment_close.segment_id = UINT32_MAX;
	NEXT(GARUDA_MSG_SEGMENT_CLOSE, 5)->segment_close.segment_id = 0;

	NEXT(GARUDA_MSG_BIND, 6)->bind.slot = (struct garuda_slot){ UINT32_MAX, MAX_INDEX };
	NEXT(GARUDA_MSG_BIND, 7)->bind.slot = (struct garuda_slot){ 0, 0 };
	NEXT(GARUDA_MSG_UNBIND, 8)->bind.slot = (struct garuda_slot){ UINT32_MAX, MAX_INDEX };
	m->flags = GARUDA_F_NOREPLY;

	for (uint8_t form = GARUDA_FORM_EVENTFD; form <= GARUDA_FORM_DOORBELL; form++) {
		NEXT_(GARUDA_MSG_ARM, 9 + form);
		m->arm.slot = (struct garuda_slot){ UINT32_MAX - form, MAX_INDEX - form };
		m->arm.target = UINT64_MAX - form;
		m->arm.token = form == 1 ? 0 : UINT64_MAX;
		m->arm.form = form;
	}

	NEXT_(GARUDA_MSG_DISARM, 13);
	m->disarm.slot = (struct garuda_slot){ UINT32_MAX, MAX_INDEX };
	m->disarm.token = UINT64_MAX;

	NEXT_(GARUDA_MSG_READY, 0);
	m->ready.token = UINT64_MAX;
	m->ready.value = UINT64_MAX;
	m->ready.slot = (struct garuda_slot){ UINT32_MAX, MAX_INDEX };
	m->ready.flags = 0;
	NEXT_(GARUDA_MSG_READY, 0);
	m->ready.flags = GARUDA_READY_OVERFLOW;

	char longtext[GARUDA_ERROR_TEXT_MAX + 1];
	memset(longtext, 'x', GARUDA_ERROR_TEXT_MAX);
	longtext[GARUDA_ERROR_TEXT_MAX] = '\0';
	m = &v[n++];
	garuda_msg_error(m, 14, -999, longtext); /* longest text, lowest errno */
	m = &v[n++];
	garuda_msg_error(m, 15, -1, ""); /* empty text */
	m = &v[n++];
	garuda_msg_error(m, UINT64_MAX, GARUDA_ERR_BASE, NULL);
	m = &v[n++];
	garuda_msg_error(m, 0, GARUDA_E_CLOSED, "\xff\x80 utf-8 is not checked \xc3\xa9");

	NEXT_(GARUDA_MSG_ACK, 0);
	NEXT_(GARUDA_MSG_ACK, UINT64_MAX);

	NEXT_(GARUDA_MSG_SEGMENT_ATTACH, 16);
	m->segment_open.lines = 1;
	m->segment_open.numa_node = -1;
	NEXT_(GARUDA_MSG_SEGMENT_ATTACH, 17);
	m->segment_open.lines = GARUDA_SEGMENT_MAX_LINES;
	m->segment_open.numa_node = GARUDA_NUMA_MAX;

	NEXT_(GARUDA_MSG_QUERY, UINT64_MAX);
	NEXT_(GARUDA_MSG_QUERY_REPLY, 18); /* empty text */
	NEXT_(GARUDA_MSG_QUERY_REPLY, 19); /* longest text */
	memset(m->query_reply.json, 'j', GARUDA_QUERY_TEXT_MAX);
	m->query_reply.json[GARUDA_QUERY_TEXT_MAX] = '\0';
	m->query_reply.json_len = GARUDA_QUERY_TEXT_MAX;

	/* batches: one record at the top of every range, and full ones */
	NEXT_(GARUDA_MSG_ARM_BATCH, UINT64_MAX);
	m->arm_batch.count = 1;
	m->arm_batch.arm[0] = (struct garuda_arm){ .slot = { UINT32_MAX, MAX_INDEX },
						   .target = UINT64_MAX,
						   .token = UINT64_MAX,
						   .form = GARUDA_FORM_DOORBELL };
	NEXT_(GARUDA_MSG_ARM_BATCH, 20);
	m->flags = GARUDA_F_NOREPLY;
	m->arm_batch.count = GARUDA_BATCH_MAX;
	for (uint32_t i = 0; i < GARUDA_BATCH_MAX; i++)
		m->arm_batch.arm[i] = (struct garuda_arm){
			.slot = { i == 0 ? 0 : UINT32_MAX - i, i == 14 ? MAX_INDEX : i },
			.target = i & 1 ? UINT64_MAX - i : i,
			.token = i == 14 ? UINT64_MAX : 0x1000 + i,
			.form = (uint8_t)(GARUDA_FORM_EVENTFD + i % 3),
		};
	NEXT_(GARUDA_MSG_READY_BATCH, 0);
	m->ready_batch.count = 1;
	m->ready_batch.ready[0] = (struct garuda_ready){ .token = UINT64_MAX,
							 .value = UINT64_MAX,
							 .slot = { UINT32_MAX, MAX_INDEX } };
	NEXT_(GARUDA_MSG_READY_BATCH, 0);
	m->ready_batch.count = GARUDA_BATCH_MAX;
	for (uint32_t i = 0; i < GARUDA_BATCH_MAX; i++)
		m->ready_batch.ready[i] = (struct garuda_ready){
			.token = i == 14 ? UINT64_MAX : i,
			.value = i & 1 ? UINT64_MAX - i : i,
			.slot = { UINT32_MAX - i, i == 14 ? MAX_INDEX : i * 37 },
		};
#undef NEXT
#undef NEXT_
	return n;
}

Test(wire, round_trip_every_type_at_the_edges)
{
	struct garuda_msg v[64];
	size_t n = edge_msgs(v);
	bool seen[GARUDA_MSG_TYPE_MAX_ + 1] = { false };
	for (size_t i = 0; i < n; i++) {
		round_trip(&v[i], NULL, 0);
		seen[v[i].type] = true;
	}
	for (unsigned t = 1; t <= GARUDA_MSG_TYPE_MAX_; t++)
		cr_assert(seen[t], "type %u not covered", t);
}

Test(wire, msg_init_defaults)
{
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 42);
	cr_assert_eq(m.type, GARUDA_MSG_HELLO);
	cr_assert_eq(m.cookie, 42);
	cr_assert_eq(m.flags, 0);
	cr_assert_eq(m.nfds, 0);
	cr_assert_eq(m.hello.version, GARUDA_PROTO_VERSION);
	cr_assert_eq(m.hello.features, 0, "a client offers features explicitly");
	garuda_msg_init(&m, GARUDA_MSG_WELCOME, 1);
	cr_assert_eq(m.welcome.version, GARUDA_PROTO_VERSION);
	cr_assert_eq(m.welcome.features, 0);
	cr_assert_eq(m.welcome.max_message, GARUDA_MSG_MAX);
	garuda_msg_init(&m, GARUDA_MSG_BIND, 1);
	cr_assert_eq(m.nfds, 1);
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 1);
	cr_assert_eq(m.nfds, 1);
	garuda_msg_init(&m, GARUDA_MSG_ARM, 1);
	cr_assert_eq(m.nfds, 0);
}

Test(wire, msg_error_builds_a_valid_error)
{
	struct garuda_msg m;
	garuda_msg_error(&m, 5, -GARUDA_E_QUOTA, NULL); /* either sign for registry codes */
	cr_assert_eq(m.type, GARUDA_MSG_ERROR);
	cr_assert_eq(m.cookie, 5);
	cr_assert_eq(m.error.code, GARUDA_E_QUOTA);
	cr_assert_str_eq(m.error.text, "quota exceeded");
	cr_assert_eq(m.error.text_len, 14);
	garuda_msg_error(&m, 5, GARUDA_E_QUOTA, "custom");
	cr_assert_eq(m.error.code, GARUDA_E_QUOTA);
	cr_assert_str_eq(m.error.text, "custom");
	garuda_msg_error(&m, 5, -ENOENT, NULL); /* errno travels negative */
	cr_assert_eq(m.error.code, -ENOENT);
	cr_assert_str_eq(m.error.text, "No such file or directory");

	char big[1000];
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	garuda_msg_error(&m, 5, GARUDA_E_BUSY, big); /* truncated to the maximum */
	cr_assert_eq(m.error.text_len, GARUDA_ERROR_TEXT_MAX);
	cr_assert_eq(strlen(m.error.text), GARUDA_ERROR_TEXT_MAX);
	round_trip(&m, NULL, 0);
}

/* ---- the encoder refuses what the decoder would refuse ---- */

Test(wire, encode_refuses_invalid_messages)
{
	uint8_t buf[GARUDA_MSG_MAX];
	struct garuda_msg m;

	garuda_msg_init(&m, GARUDA_MSG_ACK, 1);
	m.type = 0;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_UNKNOWN_TYPE);
	m.type = 18;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_UNKNOWN_TYPE);
	garuda_msg_init(&m, GARUDA_MSG_QUERY, 1);
	m.query.what = 1; /* only "this session" exists */
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE);
	garuda_msg_init(&m, GARUDA_MSG_QUERY_REPLY, 1);
	m.query_reply.json_len = GARUDA_QUERY_TEXT_MAX + 1;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_TOO_LONG);

	garuda_msg_init(&m, GARUDA_MSG_ACK, 1);
	m.flags = 0x2;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_RESERVED_SET);

	garuda_msg_init(&m, GARUDA_MSG_BIND, 1);
	m.nfds = 0;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_FD_COUNT);
	garuda_msg_init(&m, GARUDA_MSG_ARM, 1);
	m.arm.form = GARUDA_FORM_MESSAGE;
	m.nfds = 1;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_FD_COUNT);

	garuda_msg_init(&m, GARUDA_MSG_ARM, 1);
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE, "form 0");
	m.arm.form = GARUDA_FORM_EVENTFD;
	m.arm.slot.index = MAX_INDEX + 1;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_SLOT_RANGE);

	garuda_msg_init(&m, GARUDA_MSG_HELLO, 1);
	m.hello.version = 2;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VERSION);
	garuda_msg_init(&m, GARUDA_MSG_HELLO, 1);
	m.hello.features = 0x2; /* unknown here: an offer is still a valid HELLO */
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 32);
	garuda_msg_init(&m, GARUDA_MSG_WELCOME, 1);
	m.welcome.features = GARUDA_FEATURE_READY_BATCH | 0x80000000u;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_RESERVED_SET);

	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, 1);
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE, "0 lines");

	garuda_msg_init(&m, GARUDA_MSG_READY, 0);
	m.ready.flags = 2;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_RESERVED_SET);

	garuda_msg_init(&m, GARUDA_MSG_ERROR, 0);
	m.error.code = 0;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE);
	m.error.code = GARUDA_E_QUOTA;
	m.error.text_len = GARUDA_ERROR_TEXT_MAX + 1;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_TOO_LONG);
}

Test(wire, encode_refuses_invalid_batches)
{
	uint8_t buf[GARUDA_MSG_MAX];
	struct garuda_msg m;
	static const uint32_t bad_count[] = { 0, 16, 17, 0x10000, UINT32_MAX };
	for (size_t k = 0; k < sizeof(bad_count) / sizeof(bad_count[0]); k++) {
		sample_msg(GARUDA_MSG_ARM_BATCH, &m);
		m.arm_batch.count = bad_count[k];
		cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE, "count %u",
			     bad_count[k]);
		sample_msg(GARUDA_MSG_READY_BATCH, &m);
		m.ready_batch.count = bad_count[k];
		cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE, "count %u",
			     bad_count[k]);
	}

	/* every record is checked, the last one too */
	garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 1);
	m.arm_batch.count = GARUDA_BATCH_MAX;
	for (uint32_t i = 0; i < GARUDA_BATCH_MAX; i++)
		m.arm_batch.arm[i].form = GARUDA_FORM_MESSAGE;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 512);
	m.arm_batch.arm[14].form = 4;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE);
	m.arm_batch.arm[14].form = 0;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE);
	m.arm_batch.arm[14].form = GARUDA_FORM_EVENTFD;
	m.arm_batch.arm[14].slot.index = MAX_INDEX + 1;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_SLOT_RANGE);
	/* records past count are not sent, so not checked either */
	m.arm_batch.count = 14;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 32 + 32 * 14);
	m.arm_batch.count = 15;
	m.arm_batch.arm[14].slot.index = 0;
	m.nfds = 1;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_FD_COUNT);
	m.nfds = 0;
	cr_assert_eq(garuda_msg_encode(&m, buf, GARUDA_MSG_MAX - 1), -ENOBUFS);

	/* READY_BATCH: flags must be 0 in every record (OVERFLOW goes as a plain READY) */
	garuda_msg_init(&m, GARUDA_MSG_READY_BATCH, 0);
	m.ready_batch.count = GARUDA_BATCH_MAX;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 512);
	m.ready_batch.ready[7].flags = GARUDA_READY_OVERFLOW;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_RESERVED_SET);
	m.ready_batch.ready[7].flags = 0x2;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_RESERVED_SET);
	m.ready_batch.ready[7].flags = 0;
	m.ready_batch.ready[14].slot.index = UINT32_MAX;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_SLOT_RANGE);
	m.ready_batch.count = 14;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 32 + 32 * 14);
	m.nfds = 1;
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_FD_COUNT);
}

Test(wire, encode_never_writes_past_cap)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		struct garuda_msg m;
		sample_msg_of(&samples[i], &m);
		uint8_t buf[GARUDA_MSG_MAX];
		for (size_t cap = 0; cap < samples[i].len; cap++) {
			memset(buf, 0xa5, sizeof(buf));
			cr_assert_eq(garuda_msg_encode(&m, buf, cap), -ENOBUFS, "%s cap %zu",
				     garuda_msg_type_name(m.type), cap);
			for (size_t k = 0; k < sizeof(buf); k++)
				cr_assert_eq(buf[k], 0xa5, "wrote with cap %zu", cap);
		}
		cr_assert_eq(garuda_msg_encode(&m, buf, samples[i].len), (ssize_t)samples[i].len);
	}
}

/* ---- decode: too short ---- */

Test(wire, too_short_below_header)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	load(GARUDA_MSG_ACK, buf, &nfds);
	for (size_t len = 0; len < GARUDA_HDR_BYTES; len++) {
		put32(buf + 4, (uint32_t)len); /* even with a length field that agrees */
		expect_decode(buf, len, 0, GARUDA_E_TOO_SHORT);
	}
}

Test(wire, too_short_below_body)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		const struct sample *s = &samples[i];
		bool variable = s->type == GARUDA_MSG_ERROR || s->type == GARUDA_MSG_QUERY_REPLY;
		size_t fixed = variable || is_batch(s->type) ? 32 : s->len;
		for (size_t len = GARUDA_HDR_BYTES; len < fixed; len++) {
			uint8_t buf[GARUDA_MSG_MAX];
			memcpy(buf, s->bytes, s->len);
			put32(buf + 4, (uint32_t)len);
			expect_decode(buf, len, s->nfds, GARUDA_E_TOO_SHORT);
		}
		/* a batch cut inside its records: the count no longer fits the length */
		for (size_t len = fixed; is_batch(s->type) && len < s->len; len++) {
			uint8_t buf[GARUDA_MSG_MAX];
			memcpy(buf, s->bytes, s->len);
			put32(buf + 4, (uint32_t)len);
			expect_decode(buf, len, s->nfds, GARUDA_E_BAD_LENGTH);
		}
	}
}

/* ---- decode: too long ---- */

Test(wire, too_long_over_the_cap)
{
	static uint8_t buf[8192];
	unsigned nfds;
	load(GARUDA_MSG_ERROR, buf, &nfds);
	for (size_t len = GARUDA_MSG_MAX + 1; len < sizeof(buf); len += 511) {
		put32(buf + 4, (uint32_t)len); /* length field agreeing does not help */
		expect_decode(buf, len, 0, GARUDA_E_TOO_LONG);
	}
	put32(buf + 4, GARUDA_MSG_MAX + 1);
	expect_decode(buf, GARUDA_MSG_MAX + 1, 0, GARUDA_E_TOO_LONG);
	put32(buf + 4, GARUDA_MSG_MAX);
	expect_decode(buf, GARUDA_MSG_MAX + 1, 0, GARUDA_E_TOO_LONG);
}

Test(wire, too_long_over_the_body)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		const struct sample *s = &samples[i];
		if (s->type == GARUDA_MSG_ERROR || s->type == GARUDA_MSG_QUERY_REPLY)
			continue; /* variable: covered by the text tests */
		for (size_t extra = 1; extra <= 32; extra += 7) {
			uint8_t buf[GARUDA_MSG_MAX] = { 0 };
			memcpy(buf, s->bytes, s->len);
			put32(buf + 4, (uint32_t)(s->len + extra));
			/* a batch's size comes from its count: more bytes than that is BAD_LENGTH */
			expect_decode(buf, s->len + extra, s->nfds,
				      is_batch(s->type) ? GARUDA_E_BAD_LENGTH : GARUDA_E_TOO_LONG);
		}
	}
}

Test(wire, error_text_over_its_maximum_is_too_long)
{
	uint8_t buf[GARUDA_MSG_MAX] = { 0 };
	unsigned nfds;
	load(GARUDA_MSG_ERROR, buf, &nfds);
	memset(buf + 32, 'z', GARUDA_ERROR_TEXT_MAX + 1);
	size_t len = 32 + GARUDA_ERROR_TEXT_MAX;
	put32(buf + 4, (uint32_t)len);
	put32(buf + 28, GARUDA_ERROR_TEXT_MAX);
	expect_decode(buf, len, 0, 0); /* 256 bytes: fine */
	len++;
	put32(buf + 4, (uint32_t)len);
	put32(buf + 28, GARUDA_ERROR_TEXT_MAX + 1);
	expect_decode(buf, len, 0, GARUDA_E_TOO_LONG);
	len = GARUDA_MSG_MAX; /* the most text a datagram could carry */
	memset(buf + 32, 'z', len - 32);
	put32(buf + 4, (uint32_t)len);
	put32(buf + 28, (uint32_t)(len - 32));
	expect_decode(buf, len, 0, GARUDA_E_TOO_LONG);
}

/* ---- decode: length field ---- */

Test(wire, wrong_length_field)
{
	static const uint32_t wrong[] = { 0, 1, 23, 24, 31, 33, 512, 513, 0x10000, UINT32_MAX };
	for (size_t i = 0; i < N_SAMPLES; i++) {
		const struct sample *s = &samples[i];
		for (size_t k = 0; k < sizeof(wrong) / sizeof(wrong[0]); k++) {
			if (wrong[k] == s->len)
				continue;
			uint8_t buf[GARUDA_MSG_MAX];
			memcpy(buf, s->bytes, s->len);
			put32(buf + 4, wrong[k]);
			expect_decode(buf, s->len, s->nfds, GARUDA_E_BAD_LENGTH);
		}
		/* the datagram one byte longer than the length field says */
		uint8_t buf[GARUDA_MSG_MAX] = { 0 };
		memcpy(buf, s->bytes, s->len);
		expect_decode(buf, s->len + 1, s->nfds, GARUDA_E_BAD_LENGTH);
	}
}

Test(wire, error_text_len_inconsistent)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_ERROR, buf, &nfds); /* 14 bytes of text */
	static const uint32_t wrong[] = { 0, 1, 13, 15, 255, 256 };
	for (size_t k = 0; k < sizeof(wrong) / sizeof(wrong[0]); k++) {
		put32(buf + 28, wrong[k]);
		expect_decode(buf, len, 0, GARUDA_E_BAD_LENGTH);
	}
	/* empty text is fine when text_len says 0 */
	put32(buf + 4, 32);
	put32(buf + 28, 0);
	expect_decode(buf, 32, 0, 0);
}

/* ---- decode: type ---- */

Test(wire, unknown_type)
{
	static const uint16_t bad[] = { 0, 18, 19, 255, 256, 0x100 + 8, 0x100 + 16, 0x8001, 0xffff };
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		size_t len = load(GARUDA_MSG_ACK, buf, &nfds);
		put16(buf, bad[k]);
		expect_decode(buf, len, 0, GARUDA_E_UNKNOWN_TYPE);
		len = load(GARUDA_MSG_ARM, buf, &nfds); /* with a body */
		put16(buf, bad[k]);
		expect_decode(buf, len, 0, GARUDA_E_UNKNOWN_TYPE);
	}
}

/* ---- decode: version ---- */

Test(wire, bad_version)
{
	static const uint32_t bad[] = { 0, 2, 3, 0x100, 0x01000000, UINT32_MAX };
	static const unsigned types[] = { GARUDA_MSG_HELLO, GARUDA_MSG_WELCOME };
	for (size_t t = 0; t < 2; t++) {
		uint8_t buf[GARUDA_MSG_MAX];
		unsigned nfds;
		size_t len = load(types[t], buf, &nfds);
		expect_decode(buf, len, 0, 0);
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			put32(buf + 24, bad[k]);
			expect_decode(buf, len, 0, GARUDA_E_BAD_VERSION);
		}
	}
}

/* ---- decode: fd counts ---- */

Test(wire, fd_count_header_differs_from_received)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		const struct sample *s = &samples[i];
		for (unsigned got = 0; got <= 3; got++)
			if (got != s->nfds)
				expect_decode(s->bytes, s->len, got, GARUDA_E_FD_COUNT);
	}
	/* header says 300 fds (u16), received 300 - 256 = 44: no truncation to a byte */
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_ARM, buf, &nfds);
	put16(buf + 8, 300);
	expect_decode(buf, len, 44, GARUDA_E_FD_COUNT);
	expect_decode(buf, len, 300, GARUDA_E_FD_COUNT); /* agrees, but ARM carries none */
}

/* What each type must carry, written down independently of proto/wire.c. */
static const struct {
	unsigned type;
	unsigned min, max;
} fd_rules[] = {
	{ GARUDA_MSG_HELLO, 0, 0 },	    { GARUDA_MSG_WELCOME, 0, 0 },
	{ GARUDA_MSG_SEGMENT_OPEN, 0, 0 },  { GARUDA_MSG_SEGMENT, 0, 1 },
	{ GARUDA_MSG_SEGMENT_CLOSE, 0, 0 }, { GARUDA_MSG_BIND, 1, 1 },
	{ GARUDA_MSG_UNBIND, 0, 0 },	    { GARUDA_MSG_ARM, 0, 0 },
	{ GARUDA_MSG_DISARM, 0, 0 },	    { GARUDA_MSG_READY, 0, 0 },
	{ GARUDA_MSG_ERROR, 0, 0 },	    { GARUDA_MSG_ACK, 0, 0 },
	{ GARUDA_MSG_SEGMENT_ATTACH, 1, 1 }, { GARUDA_MSG_QUERY, 0, 0 },
	{ GARUDA_MSG_QUERY_REPLY, 0, 0 },   { GARUDA_MSG_ARM_BATCH, 0, 0 },
	{ GARUDA_MSG_READY_BATCH, 0, 0 },
};

Test(wire, fd_count_must_be_what_the_type_carries)
{
	for (size_t i = 0; i < sizeof(fd_rules) / sizeof(fd_rules[0]); i++) {
		uint8_t buf[GARUDA_MSG_MAX];
		unsigned nfds;
		size_t len = load(fd_rules[i].type, buf, &nfds);
		for (unsigned n = 0; n <= 3; n++) {
			put16(buf + 8, (uint16_t)n); /* header and received agree */
			bool ok = n >= fd_rules[i].min && n <= fd_rules[i].max;
			expect_decode(buf, len, n, ok ? 0 : GARUDA_E_FD_COUNT);
		}
	}
}

Test(wire, bind_without_fd_and_arm_with_fd)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_BIND, buf, &nfds);
	put16(buf + 8, 0);
	expect_decode(buf, len, 0, GARUDA_E_FD_COUNT);
	len = load(GARUDA_MSG_ARM, buf, &nfds);
	put16(buf + 8, 1);
	expect_decode(buf, len, 1, GARUDA_E_FD_COUNT);
	len = load(GARUDA_MSG_SEGMENT_ATTACH, buf, &nfds);
	put16(buf + 8, 0);
	expect_decode(buf, len, 0, GARUDA_E_FD_COUNT);
}

/* ---- decode: slots ---- */

Test(wire, slot_out_of_range)
{
	/* offset of slot.index in each type that carries a slot */
	static const struct {
		unsigned type;
		size_t index_off;
	} slots[] = {
		{ GARUDA_MSG_BIND, 28 },	{ GARUDA_MSG_UNBIND, 28 },	{ GARUDA_MSG_ARM, 28 },
		{ GARUDA_MSG_DISARM, 28 },	{ GARUDA_MSG_READY, 44 },	{ GARUDA_MSG_ARM_BATCH, 36 },
		{ GARUDA_MSG_ARM_BATCH, 68 },	{ GARUDA_MSG_READY_BATCH, 52 }, { GARUDA_MSG_READY_BATCH, 84 },
	};
	static const uint32_t bad[] = { MAX_INDEX + 1, MAX_INDEX + 8, 0x80000000u, UINT32_MAX };
	for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
		uint8_t buf[GARUDA_MSG_MAX];
		unsigned nfds;
		size_t len = load(slots[i].type, buf, &nfds);
		put32(buf + slots[i].index_off, MAX_INDEX);
		put32(buf + slots[i].index_off - 4, UINT32_MAX); /* any segment id is in range */
		expect_decode(buf, len, nfds, 0);
		put32(buf + slots[i].index_off, 0);
		expect_decode(buf, len, nfds, 0);
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			put32(buf + slots[i].index_off, bad[k]);
			expect_decode(buf, len, nfds, GARUDA_E_SLOT_RANGE);
		}
	}
}

/* ---- decode: reserved bytes and flags ---- */

Test(wire, reserved_header_bytes)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		const struct sample *s = &samples[i];
		for (size_t off = 10; off < 16; off++) {
			for (int bit = 0; bit < 8; bit += 7) {
				uint8_t buf[GARUDA_MSG_MAX];
				memcpy(buf, s->bytes, s->len);
				buf[off] = (uint8_t)(1u << bit);
				expect_decode(buf, s->len, s->nfds, GARUDA_E_RESERVED_SET);
			}
		}
	}
}

Test(wire, unknown_header_flags)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		const struct sample *s = &samples[i];
		for (int bit = 1; bit < 16; bit++) {
			if ((1u << bit) & GARUDA_F_KNOWN_)
				continue;
			uint8_t buf[GARUDA_MSG_MAX];
			memcpy(buf, s->bytes, s->len);
			put16(buf + 2, (uint16_t)(1u << bit));
			expect_decode(buf, s->len, s->nfds, GARUDA_E_RESERVED_SET);
			put16(buf + 2, (uint16_t)((1u << bit) | GARUDA_F_NOREPLY));
			expect_decode(buf, s->len, s->nfds, GARUDA_E_RESERVED_SET);
		}
		uint8_t buf[GARUDA_MSG_MAX];
		memcpy(buf, s->bytes, s->len);
		put16(buf + 2, GARUDA_F_NOREPLY); /* the known flags are fine on any type */
		expect_decode(buf, s->len, s->nfds, 0);
		put16(buf + 2, GARUDA_F_NOREPLY | GARUDA_F_REPRESENT);
		expect_decode(buf, s->len, s->nfds, 0);
	}
}

/* Reserved byte ranges [from, to) in each body, as docs/protocol.md lists them. */
static const struct {
	unsigned type;
	size_t from, to;
} reserved[] = {
	{ GARUDA_MSG_WELCOME, 60, 64 },	      { GARUDA_MSG_SEGMENT_OPEN, 32, 40 },
	{ GARUDA_MSG_SEGMENT, 44, 48 },	      { GARUDA_MSG_SEGMENT_CLOSE, 28, 32 },
	{ GARUDA_MSG_ARM, 49, 52 },	      { GARUDA_MSG_READY, 52, 56 },
	{ GARUDA_MSG_SEGMENT_ATTACH, 32, 40 }, { GARUDA_MSG_QUERY, 28, 32 },
	{ GARUDA_MSG_QUERY_REPLY, 28, 32 },   { GARUDA_MSG_ARM_BATCH, 28, 32 },
	{ GARUDA_MSG_ARM_BATCH, 57, 60 },     { GARUDA_MSG_ARM_BATCH, 89, 92 },
	{ GARUDA_MSG_READY_BATCH, 28, 32 },   { GARUDA_MSG_READY_BATCH, 60, 64 },
	{ GARUDA_MSG_READY_BATCH, 92, 96 },
};

Test(wire, reserved_body_bytes)
{
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		for (size_t off = reserved[i].from; off < reserved[i].to; off++) {
			for (int bit = 0; bit < 8; bit += 7) {
				uint8_t buf[GARUDA_MSG_MAX];
				unsigned nfds;
				size_t len = load(reserved[i].type, buf, &nfds);
				buf[off] = (uint8_t)(1u << bit);
				expect_decode(buf, len, nfds, GARUDA_E_RESERVED_SET);
			}
		}
	}
}

Test(wire, ready_unknown_flags)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_READY, buf, &nfds);
	put32(buf + 48, 0);
	expect_decode(buf, len, 0, 0);
	for (int bit = 1; bit < 32; bit++) {
		put32(buf + 48, 1u << bit);
		expect_decode(buf, len, 0, GARUDA_E_RESERVED_SET);
	}
}

/* ---- decode: values ---- */

Test(wire, bad_form)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_ARM, buf, &nfds);
	for (unsigned form = 0; form < 256; form++) {
		buf[48] = (uint8_t)form;
		bool ok = form >= 1 && form <= 3;
		expect_decode(buf, len, 0, ok ? 0 : GARUDA_E_BAD_VALUE);
	}
}

Test(wire, bad_lines)
{
	static const unsigned types[] = { GARUDA_MSG_SEGMENT_OPEN, GARUDA_MSG_SEGMENT_ATTACH,
					  GARUDA_MSG_SEGMENT };
	static const struct {
		uint32_t lines;
		bool ok;
	} v[] = { { 0, false },	    { 1, true },	  { 65536, true },
		  { 65537, false }, { 0x80000000u, false }, { UINT32_MAX, false } };
	for (size_t t = 0; t < 3; t++) {
		uint8_t buf[GARUDA_MSG_MAX];
		unsigned nfds;
		size_t len = load(types[t], buf, &nfds);
		size_t off = types[t] == GARUDA_MSG_SEGMENT ? 28 : 24;
		if (types[t] == GARUDA_MSG_SEGMENT)
			put64(buf + 32, UINT64_MAX); /* big enough for any line count */
		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
			put32(buf + off, v[k].lines);
			expect_decode(buf, len, nfds, v[k].ok ? 0 : GARUDA_E_BAD_VALUE);
		}
	}
}

Test(wire, bad_numa_node)
{
	static const unsigned types[] = { GARUDA_MSG_SEGMENT_OPEN, GARUDA_MSG_SEGMENT_ATTACH,
					  GARUDA_MSG_SEGMENT };
	static const struct {
		int32_t node;
		bool ok;
	} v[] = { { INT32_MIN, false }, { -1000, false }, { -2, false }, { -1, true },
		  { 0, true },		{ 1023, true },	  { 1024, false }, { INT32_MAX, false } };
	for (size_t t = 0; t < 3; t++) {
		uint8_t buf[GARUDA_MSG_MAX];
		unsigned nfds;
		size_t len = load(types[t], buf, &nfds);
		size_t off = types[t] == GARUDA_MSG_SEGMENT ? 40 : 28;
		for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
			put32(buf + off, (uint32_t)v[k].node);
			expect_decode(buf, len, nfds, v[k].ok ? 0 : GARUDA_E_BAD_VALUE);
		}
	}
}

Test(wire, segment_bytes_must_hold_the_lines)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_SEGMENT, buf, &nfds); /* 64 lines */
	uint64_t need = 128 + 64 * 64;
	put64(buf + 32, need);
	expect_decode(buf, len, nfds, 0);
	put64(buf + 32, need - 1);
	expect_decode(buf, len, nfds, GARUDA_E_BAD_VALUE);
	put64(buf + 32, 0);
	expect_decode(buf, len, nfds, GARUDA_E_BAD_VALUE);
	put32(buf + 28, 65536);
	put64(buf + 32, 128ull + 65536 * 64 - 1);
	expect_decode(buf, len, nfds, GARUDA_E_BAD_VALUE);
}

Test(wire, error_code_must_be_known)
{
	static const struct {
		int32_t code;
		bool ok;
	} v[] = {
		{ 0, false },	     { -1, true },	      { -999, true },	   { -1000, false },
		{ -1016, false },    { 999, false },	      { 1000, true },	   { 1035, true },
		{ 1036, false },     { INT32_MAX, false },    { -INT32_MAX + 1000, false },
	};
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_ERROR, buf, &nfds);
	for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
		put32(buf + 24, (uint32_t)v[k].code);
		expect_decode(buf, len, 0, v[k].ok ? 0 : GARUDA_E_BAD_VALUE);
	}
}

/* The most negative codes must be refused like any other unknown code, without
 * undefined behaviour on the way (the ASan+UBSan build halts on a signed overflow:
 * computing code - GARUDA_ERR_BASE before a range check overflows here). */
Test(wire, error_code_most_negative)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_ERROR, buf, &nfds);
	put32(buf + 24, (uint32_t)INT32_MIN);
	expect_decode(buf, len, 0, GARUDA_E_BAD_VALUE);
	put32(buf + 24, (uint32_t)(INT32_MIN + 999));
	expect_decode(buf, len, 0, GARUDA_E_BAD_VALUE);
}

Test(wire, error_text_with_embedded_nul)
{
	uint8_t buf[GARUDA_MSG_MAX];
	unsigned nfds;
	size_t len = load(GARUDA_MSG_ERROR, buf, &nfds);
	for (size_t at = 32; at < len; at++) {
		uint8_t copy[GARUDA_MSG_MAX];
		memcpy(copy, buf, len);
		copy[at] = 0;
		expect_decode(copy, len, 0, GARUDA_E_BAD_VALUE);
	}
}

/* The encoder validates like the decoder: an ERROR text with a NUL inside text_len. */
Test(wire, encode_refuses_error_text_with_nul)
{
	struct garuda_msg m;
	garuda_msg_error(&m, 1, GARUDA_E_BUSY, "abc");
	m.error.text_len = 5; /* "abc\0" plus a byte: a NUL inside the text */
	uint8_t buf[GARUDA_MSG_MAX];
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), -GARUDA_E_BAD_VALUE);
}

/* ---- the decoder's output is what a re-encode reproduces ---- */

Test(wire, decode_then_encode_reproduces_the_datagram)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		struct garuda_msg m;
		cr_assert_eq(dec(samples[i].bytes, samples[i].len, samples[i].nfds, &m), 0);
		uint8_t buf[GARUDA_MSG_MAX];
		ssize_t n = garuda_msg_encode(&m, buf, sizeof(buf));
		cr_assert_eq(n, (ssize_t)samples[i].len);
		cr_assert_arr_eq(buf, samples[i].bytes, samples[i].len);
	}
}

/* ---- features (HELLO, WELCOME) ---- */

/* A client may offer features this daemon does not know (HELLO decodes, whatever the
 * bits); a daemon may grant only features it knows (WELCOME refuses unknown bits). */
Test(wire, unknown_feature_bits)
{
	static const unsigned types[] = { GARUDA_MSG_HELLO, GARUDA_MSG_WELCOME };
	for (size_t t = 0; t < 2; t++) {
		uint8_t buf[GARUDA_MSG_MAX];
		unsigned nfds;
		size_t len = load(types[t], buf, &nfds);
		int unknown = types[t] == GARUDA_MSG_HELLO ? 0 : GARUDA_E_RESERVED_SET;
		put32(buf + 28, 0);
		expect_decode(buf, len, 0, 0);
		put32(buf + 28, GARUDA_FEATURE_READY_BATCH);
		expect_decode(buf, len, 0, 0);
		put32(buf + 28, GARUDA_FEATURE_POINTS | GARUDA_FEATURE_READY_BATCH);
		expect_decode(buf, len, 0, 0);
		put32(buf + 28, GARUDA_FEATURES_KNOWN_);
		expect_decode(buf, len, 0, 0);
		for (int bit = 2; bit < 32; bit++) {
			if ((1u << bit) & GARUDA_FEATURES_KNOWN_)
				continue;
			put32(buf + 28, 1u << bit);
			expect_decode(buf, len, 0, unknown);
			put32(buf + 28, (1u << bit) | GARUDA_FEATURE_READY_BATCH);
			expect_decode(buf, len, 0, unknown);
		}
		/* the version is checked first */
		put32(buf + 24, 2);
		expect_decode(buf, len, 0, GARUDA_E_BAD_VERSION);
	}
}

/* ---- batches (ARM_BATCH, READY_BATCH) ---- */

/* A batch datagram of `count` records (copies of the sample's record 0) with the
 * header length = len; returns len. buf holds at least max(len, GARUDA_MSG_MAX). */
static size_t batch_with(unsigned type, uint32_t count, size_t len, uint8_t *buf)
{
	const struct sample *s = sample_of(type);
	memset(buf, 0, len > GARUDA_MSG_MAX ? len : GARUDA_MSG_MAX);
	memcpy(buf, s->bytes, 32);
	for (size_t off = 32; off + 32 <= len && off + 32 <= GARUDA_MSG_MAX; off += 32)
		memcpy(buf + off, s->bytes + 32, 32);
	put32(buf + 4, (uint32_t)len);
	put32(buf + 24, count);
	return len;
}

Test(wire, batch_count_out_of_range)
{
	static const unsigned types[] = { GARUDA_MSG_ARM_BATCH, GARUDA_MSG_READY_BATCH };
	for (size_t t = 0; t < 2; t++) {
		uint8_t buf[1024];
		/* every count that fits, with the matching length, is fine */
		for (uint32_t n = 1; n <= GARUDA_BATCH_MAX; n++)
			expect_decode(buf, batch_with(types[t], n, 32 + 32 * n, buf), 0, 0);
		/* count 0: BAD_VALUE whatever the length */
		expect_decode(buf, batch_with(types[t], 0, 32, buf), 0, GARUDA_E_BAD_VALUE);
		expect_decode(buf, batch_with(types[t], 0, 64, buf), 0, GARUDA_E_BAD_VALUE);
		/* count 16: its length would be over the cap (TOO_LONG); at any length that
		 * fits, the count is BAD_VALUE before the length is compared */
		expect_decode(buf, batch_with(types[t], 16, 544, buf), 0, GARUDA_E_TOO_LONG);
		expect_decode(buf, batch_with(types[t], 16, 512, buf), 0, GARUDA_E_BAD_VALUE);
		expect_decode(buf, batch_with(types[t], 16, 64, buf), 0, GARUDA_E_BAD_VALUE);
		expect_decode(buf, batch_with(types[t], UINT32_MAX, 512, buf), 0, GARUDA_E_BAD_VALUE);
		expect_decode(buf, batch_with(types[t], 0x80000001u, 64, buf), 0, GARUDA_E_BAD_VALUE);
	}
}

Test(wire, batch_length_must_be_32_plus_32_per_record)
{
	static const unsigned types[] = { GARUDA_MSG_ARM_BATCH, GARUDA_MSG_READY_BATCH };
	for (size_t t = 0; t < 2; t++) {
		for (uint32_t n = 1; n <= GARUDA_BATCH_MAX; n++) {
			for (size_t len = 32; len <= GARUDA_MSG_MAX; len++) {
				if (len == 32 + 32 * n)
					continue;
				uint8_t buf[GARUDA_MSG_MAX];
				/* header length and datagram agree: only the count is off */
				expect_decode(buf, batch_with(types[t], n, len, buf), 0, GARUDA_E_BAD_LENGTH);
			}
		}
		/* shorter than count + reserved: TOO_SHORT */
		for (size_t len = GARUDA_HDR_BYTES; len < 32; len++) {
			uint8_t buf[GARUDA_MSG_MAX];
			expect_decode(buf, batch_with(types[t], 1, len, buf), 0, GARUDA_E_TOO_SHORT);
		}
	}
}

Test(wire, batch_record_reserved_bytes)
{
	/* reserved bytes of the last of 15 records, and of the count's word */
	static const struct {
		unsigned type;
		size_t from, to;
	} r[] = { { GARUDA_MSG_ARM_BATCH, 28, 32 },
		  { GARUDA_MSG_ARM_BATCH, 32 + 14 * 32 + 25, 32 + 14 * 32 + 28 },
		  { GARUDA_MSG_READY_BATCH, 28, 32 },
		  { GARUDA_MSG_READY_BATCH, 32 + 14 * 32 + 28, 512 } };
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		for (size_t off = r[i].from; off < r[i].to; off++) {
			uint8_t buf[GARUDA_MSG_MAX];
			size_t len = batch_with(r[i].type, 15, 512, buf);
			expect_decode(buf, len, 0, 0);
			buf[off] = 0x80;
			expect_decode(buf, len, 0, GARUDA_E_RESERVED_SET);
		}
}

Test(wire, batch_record_bad_form)
{
	for (uint32_t at = 0; at < GARUDA_BATCH_MAX; at++) {
		uint8_t buf[GARUDA_MSG_MAX];
		size_t len = batch_with(GARUDA_MSG_ARM_BATCH, 15, 512, buf);
		size_t off = 32 + 32 * at + 24;
		for (unsigned form = 0; form < 256; form++) {
			buf[off] = (uint8_t)form;
			bool ok = form >= 1 && form <= 3;
			expect_decode(buf, len, 0, ok ? 0 : GARUDA_E_BAD_VALUE);
		}
	}
}

Test(wire, batch_record_slot_out_of_range)
{
	static const uint32_t bad[] = { MAX_INDEX + 1, 0x80000000u, UINT32_MAX };
	static const struct {
		unsigned type;
		size_t index_off; /* within a record */
	} t[] = { { GARUDA_MSG_ARM_BATCH, 4 }, { GARUDA_MSG_READY_BATCH, 20 } };
	for (size_t k = 0; k < 2; k++)
		for (uint32_t at = 0; at < GARUDA_BATCH_MAX; at++) {
			uint8_t buf[GARUDA_MSG_MAX];
			size_t len = batch_with(t[k].type, 15, 512, buf);
			size_t off = 32 + 32 * at + t[k].index_off;
			put32(buf + off, MAX_INDEX);
			expect_decode(buf, len, 0, 0);
			for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
				put32(buf + off, bad[b]);
				expect_decode(buf, len, 0, GARUDA_E_SLOT_RANGE);
			}
		}
}

Test(wire, ready_batch_record_flags_must_be_zero)
{
	for (uint32_t at = 0; at < GARUDA_BATCH_MAX; at++) {
		uint8_t buf[GARUDA_MSG_MAX];
		size_t len = batch_with(GARUDA_MSG_READY_BATCH, 15, 512, buf);
		size_t off = 32 + 32 * at + 24;
		for (int bit = 0; bit < 32; bit++) { /* OVERFLOW (bit 0) too */
			put32(buf + off, 1u << bit);
			expect_decode(buf, len, 0, GARUDA_E_RESERVED_SET);
		}
	}
	/* but a plain READY may carry OVERFLOW (the sample does) */
	const struct sample *s = sample_of(GARUDA_MSG_READY);
	expect_decode(s->bytes, s->len, 0, 0);
}

/* The order of the batch checks (docs/protocol.md §5): body reserved bytes, count,
 * length, record reserved bytes, then record by record (ARM_BATCH: slot, form;
 * READY_BATCH: flags, slot). */
Test(wire, batch_check_order)
{
	uint8_t buf[GARUDA_MSG_MAX];
	size_t len;

	len = batch_with(GARUDA_MSG_ARM_BATCH, 0, 32, buf); /* count 0 and reserved set */
	buf[29] = 1;
	expect_decode(buf, len, 0, GARUDA_E_RESERVED_SET);
	len = batch_with(GARUDA_MSG_ARM_BATCH, 3, 64, buf); /* length wrong, record reserved set */
	buf[32 + 30] = 1;
	expect_decode(buf, len, 0, GARUDA_E_BAD_LENGTH);
	len = batch_with(GARUDA_MSG_ARM_BATCH, 2, 96, buf); /* [0] bad form, [1] reserved set */
	buf[32 + 24] = 0;
	buf[64 + 26] = 1;
	expect_decode(buf, len, 0, GARUDA_E_RESERVED_SET);
	len = batch_with(GARUDA_MSG_ARM_BATCH, 2, 96, buf); /* [0] bad form, [1] bad slot */
	buf[32 + 24] = 0;
	put32(buf + 64 + 4, UINT32_MAX);
	expect_decode(buf, len, 0, GARUDA_E_BAD_VALUE);
	len = batch_with(GARUDA_MSG_ARM_BATCH, 2, 96, buf); /* [0] bad slot, [1] bad form */
	put32(buf + 32 + 4, UINT32_MAX);
	buf[64 + 24] = 9;
	expect_decode(buf, len, 0, GARUDA_E_SLOT_RANGE);
	len = batch_with(GARUDA_MSG_ARM_BATCH, 2, 96, buf); /* [1] bad slot and bad form */
	put32(buf + 64 + 4, UINT32_MAX);
	buf[64 + 24] = 9;
	expect_decode(buf, len, 0, GARUDA_E_SLOT_RANGE);

	len = batch_with(GARUDA_MSG_READY_BATCH, 2, 96, buf); /* [1] flags and bad slot */
	put32(buf + 64 + 20, UINT32_MAX);
	put32(buf + 64 + 24, GARUDA_READY_OVERFLOW);
	expect_decode(buf, len, 0, GARUDA_E_RESERVED_SET);
	len = batch_with(GARUDA_MSG_READY_BATCH, 2, 96, buf); /* [0] bad slot, [1] flags */
	put32(buf + 32 + 20, UINT32_MAX);
	put32(buf + 64 + 24, GARUDA_READY_OVERFLOW);
	expect_decode(buf, len, 0, GARUDA_E_SLOT_RANGE);
}

/* A batch is the same type whatever its count: a decoded 15-record batch re-encodes
 * to the same 512 bytes, and its records are what was sent, in order. */
Test(wire, batch_decode_keeps_record_order)
{
	struct garuda_msg m, out;
	garuda_msg_init(&m, GARUDA_MSG_ARM_BATCH, 5);
	m.arm_batch.count = GARUDA_BATCH_MAX;
	for (uint32_t i = 0; i < GARUDA_BATCH_MAX; i++)
		m.arm_batch.arm[i] = (struct garuda_arm){
			.slot = { 1, i }, .target = 100 + i, .token = i, .form = GARUDA_FORM_MESSAGE
		};
	uint8_t buf[GARUDA_MSG_MAX];
	cr_assert_eq(garuda_msg_encode(&m, buf, sizeof(buf)), 512);
	cr_assert_eq(dec(buf, 512, 0, &out), 0);
	for (uint32_t i = 0; i < GARUDA_BATCH_MAX; i++) {
		cr_assert_eq(out.arm_batch.arm[i].slot.index, i);
		cr_assert_eq(out.arm_batch.arm[i].target, 100 + i);
		cr_assert_eq(out.arm_batch.arm[i].token, i);
	}
}
