/* wire_samples.h — hand-written reference datagrams, one per message type.
 *
 * These byte arrays are written by hand from docs/protocol.md, not produced by the
 * encoder, so they pin the wire layout independently of proto/wire.c: a field that
 * moves, changes size or endianness breaks the exact-bytes tests. Every field holds a
 * distinct value so that two swapped fields cannot cancel out (HELLO's and WELCOME's
 * version and features are both 1: only feature bit 0 exists). The HELLO, ARM and
 * ARM_BATCH samples are the worked examples of docs/protocol.md. A type may have more
 * than one sample (variant 0 is the type's main one).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* the common header: type, flags, length, nfds, 6 reserved bytes, cookie */
#define HDR(type, flags, len, nfds, c0, c1, c2, c3, c4, c5, c6, c7)                   \
	(type) & 0xff, (type) >> 8, (flags) & 0xff, (flags) >> 8, (len) & 0xff,      \
		((len) >> 8) & 0xff, 0, 0, (nfds), 0, 0, 0, 0, 0, 0, 0, c0, c1, c2, c3, \
		c4, c5, c6, c7

/* HELLO, cookie 1, version 1, no features */
static const uint8_t sample_hello[] = {
	HDR(1, 0, 32, 0, 0x01, 0, 0, 0, 0, 0, 0, 0),
	0x01, 0x00, 0x00, 0x00, /* 24 version = 1 */
	0x00, 0x00, 0x00, 0x00, /* 28 features = 0 */
};

/* HELLO, cookie 0x0e, version 1, offering READY_BATCH */
static const uint8_t sample_hello_batch[] = {
	HDR(1, 0, 32, 0, 0x0e, 0, 0, 0, 0, 0, 0, 0),
	0x01, 0x00, 0x00, 0x00, /* 24 version = 1 */
	0x01, 0x00, 0x00, 0x00, /* 28 features = READY_BATCH */
};

/* WELCOME, cookie 1, granting READY_BATCH */
static const uint8_t sample_welcome[] = {
	HDR(2, 0, 64, 0, 0x01, 0, 0, 0, 0, 0, 0, 0),
	0x01, 0x00, 0x00, 0x00, /* 24 version = 1 */
	0x01, 0x00, 0x00, 0x00, /* 28 features = READY_BATCH */
	0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* 32 session_id = 0x0102030405060708 */
	0x10, 0x00, 0x00, 0x00, /* 40 max_segments = 16 */
	0x00, 0x10, 0x00, 0x00, /* 44 max_lines = 4096 */
	0x00, 0x04, 0x00, 0x00, /* 48 max_bindings = 1024 */
	0x00, 0x00, 0x01, 0x00, /* 52 max_armed = 65536 */
	0x00, 0x02, 0x00, 0x00, /* 56 max_message = 512 */
	0x00, 0x00, 0x00, 0x00, /* 60 reserved */
};

/* SEGMENT_OPEN, cookie 2, the daemon picks the NUMA node */
static const uint8_t sample_segment_open[] = {
	HDR(3, 0, 40, 0, 0x02, 0, 0, 0, 0, 0, 0, 0),
	0x40, 0x00, 0x00, 0x00, /* 24 lines = 64 */
	0xff, 0xff, 0xff, 0xff, /* 28 numa_node = -1 */
	0, 0, 0, 0, 0, 0, 0, 0, /* 32 reserved */
};

/* SEGMENT with the memfd, cookie 2 */
static const uint8_t sample_segment[] = {
	HDR(4, 0, 48, 1, 0x02, 0, 0, 0, 0, 0, 0, 0),
	0x05, 0x00, 0x00, 0x00, /* 24 segment_id = 5 */
	0x40, 0x00, 0x00, 0x00, /* 28 lines = 64 */
	0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 32 bytes = 8192 */
	0x01, 0x00, 0x00, 0x00, /* 40 numa_node = 1 */
	0x00, 0x00, 0x00, 0x00, /* 44 reserved */
};

/* SEGMENT_CLOSE, cookie 3, NOREPLY */
static const uint8_t sample_segment_close[] = {
	HDR(5, 1, 32, 0, 0x03, 0, 0, 0, 0, 0, 0, 0),
	0x05, 0x00, 0x00, 0x00, /* 24 segment_id = 5 */
	0x00, 0x00, 0x00, 0x00, /* 28 reserved */
};

/* BIND with an eventfd, cookie 4 */
static const uint8_t sample_bind[] = {
	HDR(6, 0, 32, 1, 0x04, 0, 0, 0, 0, 0, 0, 0),
	0x05, 0x00, 0x00, 0x00, /* 24 slot.segment = 5 */
	0x09, 0x00, 0x00, 0x00, /* 28 slot.index = 9 */
};

/* UNBIND, cookie 5 */
static const uint8_t sample_unbind[] = {
	HDR(7, 0, 32, 0, 0x05, 0, 0, 0, 0, 0, 0, 0),
	0x05, 0x00, 0x00, 0x00, /* 24 slot.segment = 5 */
	0xff, 0xff, 0x07, 0x00, /* 28 slot.index = 524287 (the highest) */
};

/* ARM, cookie 7: slot (3, 42), target 0x100, token 0xdeadbeefcafef00d, MESSAGE form */
static const uint8_t sample_arm[] = {
	HDR(8, 0, 56, 0, 0x07, 0, 0, 0, 0, 0, 0, 0),
	0x03, 0x00, 0x00, 0x00, /* 24 slot.segment = 3 */
	0x2a, 0x00, 0x00, 0x00, /* 28 slot.index = 42 */
	0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 32 target = 0x100 */
	0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad, 0xde, /* 40 token */
	0x02, /* 48 form = MESSAGE */
	0, 0, 0, /* 49 reserved */
	0, 0, 0, 0, /* 52 point = 0 (the word's) */
};

/* ARM, cookie 8, naming point 7 (a session granted POINTS): otherwise the ARM sample */
static const uint8_t sample_arm_point[] = {
	HDR(8, 0, 56, 0, 0x08, 0, 0, 0, 0, 0, 0, 0),
	0x03, 0x00, 0x00, 0x00, /* 24 slot.segment = 3 */
	0x2a, 0x00, 0x00, 0x00, /* 28 slot.index = 42 */
	0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 32 target = 0x100 */
	0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad, 0xde, /* 40 token */
	0x02, /* 48 form = MESSAGE */
	0, 0, 0, /* 49 reserved */
	0x07, 0x00, 0x00, 0x00, /* 52 point = 7 */
};

/* DISARM, cookie 8 */
static const uint8_t sample_disarm[] = {
	HDR(9, 0, 40, 0, 0x08, 0, 0, 0, 0, 0, 0, 0),
	0x03, 0x00, 0x00, 0x00, /* 24 slot.segment = 3 */
	0x2a, 0x00, 0x00, 0x00, /* 28 slot.index = 42 */
	0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad, 0xde, /* 32 token */
};

/* READY, cookie 0, OVERFLOW */
static const uint8_t sample_ready[] = {
	HDR(10, 0, 56, 0, 0, 0, 0, 0, 0, 0, 0, 0),
	0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad, 0xde, /* 24 token */
	0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 32 value = 0x101 */
	0x03, 0x00, 0x00, 0x00, /* 40 slot.segment = 3 */
	0x2a, 0x00, 0x00, 0x00, /* 44 slot.index = 42 */
	0x01, 0x00, 0x00, 0x00, /* 48 flags = OVERFLOW */
	0x00, 0x00, 0x00, 0x00, /* 52 reserved */
};

/* ERROR, cookie 9: QUOTA (1016), text "quota exceeded" (14 bytes, no NUL) */
static const uint8_t sample_error[] = {
	HDR(11, 0, 46, 0, 0x09, 0, 0, 0, 0, 0, 0, 0),
	0xf8, 0x03, 0x00, 0x00, /* 24 code = 1016 */
	0x0e, 0x00, 0x00, 0x00, /* 28 text_len = 14 */
	'q', 'u', 'o', 't', 'a', ' ', 'e', 'x', 'c', 'e', 'e', 'd', 'e', 'd',
};

/* ACK, cookie 0x1122334455667788 */
static const uint8_t sample_ack[] = {
	HDR(12, 0, 24, 0, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11),
};

/* SEGMENT_ATTACH with the client's memfd, cookie 10 */
static const uint8_t sample_segment_attach[] = {
	HDR(13, 0, 40, 1, 0x0a, 0, 0, 0, 0, 0, 0, 0),
	0x08, 0x00, 0x00, 0x00, /* 24 lines = 8 */
	0xff, 0x03, 0x00, 0x00, /* 28 numa_node = 1023 */
	0, 0, 0, 0, 0, 0, 0, 0, /* 32 reserved */
};

/* QUERY, cookie 11: what = 0 (this session) */
static const uint8_t sample_query[] = {
	HDR(14, 0, 32, 0, 0x0b, 0, 0, 0, 0, 0, 0, 0),
	0x00, 0x00, 0x00, 0x00, /* 24 what = 0 */
	0x00, 0x00, 0x00, 0x00, /* 28 reserved */
};

/* QUERY_REPLY, cookie 11: json {"id":7} (8 bytes, no NUL) */
static const uint8_t sample_query_reply[] = {
	HDR(15, 0, 40, 0, 0x0b, 0, 0, 0, 0, 0, 0, 0),
	0x08, 0x00, 0x00, 0x00, /* 24 json_len = 8 */
	0x00, 0x00, 0x00, 0x00, /* 28 reserved */
	'{', '"', 'i', 'd', '"', ':', '7', '}',
};

/* ARM_BATCH, cookie 12, NOREPLY: 2 records; the first is the ARM sample's body, the
 * second arms word 43 of segment 3 for 0x200, token 0x0123456789abcdef, DOORBELL form */
static const uint8_t sample_arm_batch[] = {
	HDR(16, 1, 96, 0, 0x0c, 0, 0, 0, 0, 0, 0, 0),
	0x02, 0x00, 0x00, 0x00, /* 24 count = 2 */
	0x00, 0x00, 0x00, 0x00, /* 28 reserved */
	0x03, 0x00, 0x00, 0x00, /* 32 [0] slot.segment = 3 */
	0x2a, 0x00, 0x00, 0x00, /* 36 [0] slot.index = 42 */
	0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 40 [0] target = 0x100 */
	0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad, 0xde, /* 48 [0] token */
	0x02, /* 56 [0] form = MESSAGE */
	0, 0, 0, 0, 0, 0, 0, /* 57 [0] reserved */
	0x03, 0x00, 0x00, 0x00, /* 64 [1] slot.segment = 3 */
	0x2b, 0x00, 0x00, 0x00, /* 68 [1] slot.index = 43 */
	0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 72 [1] target = 0x200 */
	0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, /* 80 [1] token = 0x0123456789abcdef */
	0x03, /* 88 [1] form = DOORBELL */
	0, 0, 0, 0, 0, 0, 0, /* 89 [1] reserved */
};

/* READY_BATCH, cookie 0: 2 records (flags are always 0 in a batch) */
static const uint8_t sample_ready_batch[] = {
	HDR(17, 0, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0),
	0x02, 0x00, 0x00, 0x00, /* 24 count = 2 */
	0x00, 0x00, 0x00, 0x00, /* 28 reserved */
	0x0d, 0xf0, 0xfe, 0xca, 0xef, 0xbe, 0xad, 0xde, /* 32 [0] token */
	0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 40 [0] value = 0x101 */
	0x03, 0x00, 0x00, 0x00, /* 48 [0] slot.segment = 3 */
	0x2a, 0x00, 0x00, 0x00, /* 52 [0] slot.index = 42 */
	0x00, 0x00, 0x00, 0x00, /* 56 [0] flags = 0 */
	0x00, 0x00, 0x00, 0x00, /* 60 [0] reserved */
	0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, /* 64 [1] token = 0x0123456789abcdef */
	0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* 72 [1] value = 0x2ff */
	0x04, 0x00, 0x00, 0x00, /* 80 [1] slot.segment = 4 */
	0x2b, 0x00, 0x00, 0x00, /* 84 [1] slot.index = 43 */
	0x00, 0x00, 0x00, 0x00, /* 88 [1] flags = 0 */
	0x00, 0x00, 0x00, 0x00, /* 92 [1] reserved */
};

struct sample {
	unsigned type;
	const uint8_t *bytes;
	size_t len;
	unsigned nfds;
	unsigned variant; /* 0: the type's main sample */
};

#define SAMPLE(t, a, n) { t, a, sizeof(a), n, 0 }
#define SAMPLE_V(t, a, n, v) { t, a, sizeof(a), n, v }
static const struct sample samples[] = {
	SAMPLE(GARUDA_MSG_HELLO, sample_hello, 0),
	SAMPLE(GARUDA_MSG_WELCOME, sample_welcome, 0),
	SAMPLE(GARUDA_MSG_SEGMENT_OPEN, sample_segment_open, 0),
	SAMPLE(GARUDA_MSG_SEGMENT, sample_segment, 1),
	SAMPLE(GARUDA_MSG_SEGMENT_CLOSE, sample_segment_close, 0),
	SAMPLE(GARUDA_MSG_BIND, sample_bind, 1),
	SAMPLE(GARUDA_MSG_UNBIND, sample_unbind, 0),
	SAMPLE(GARUDA_MSG_ARM, sample_arm, 0),
	SAMPLE(GARUDA_MSG_DISARM, sample_disarm, 0),
	SAMPLE(GARUDA_MSG_READY, sample_ready, 0),
	SAMPLE(GARUDA_MSG_ERROR, sample_error, 0),
	SAMPLE(GARUDA_MSG_ACK, sample_ack, 0),
	SAMPLE(GARUDA_MSG_SEGMENT_ATTACH, sample_segment_attach, 1),
	SAMPLE(GARUDA_MSG_QUERY, sample_query, 0),
	SAMPLE(GARUDA_MSG_QUERY_REPLY, sample_query_reply, 0),
	SAMPLE(GARUDA_MSG_ARM_BATCH, sample_arm_batch, 0),
	SAMPLE(GARUDA_MSG_READY_BATCH, sample_ready_batch, 0),
	SAMPLE_V(GARUDA_MSG_HELLO, sample_hello_batch, 0, 1),
	SAMPLE_V(GARUDA_MSG_ARM, sample_arm_point, 0, 1),
};
#undef SAMPLE
#undef SAMPLE_V
#define N_SAMPLES (sizeof(samples) / sizeof(samples[0]))
