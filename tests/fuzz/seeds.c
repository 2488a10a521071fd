/* seeds.c — see seeds.h. */
#include "seeds.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void seed_msg(unsigned type, struct garuda_msg *m)
{
	garuda_msg_init(m, type, 0x0102030405060708ull + type);
	switch (type) {
	case GARUDA_MSG_HELLO:
		m->hello.features = GARUDA_FEATURE_READY_BATCH;
		break;
	case GARUDA_MSG_WELCOME:
		m->welcome.features = GARUDA_FEATURE_READY_BATCH;
		m->welcome.session_id = 42;
		m->welcome.max_segments = 16;
		m->welcome.max_lines = 4096;
		m->welcome.max_bindings = 1024;
		m->welcome.max_armed = 65536;
		break;
	case GARUDA_MSG_SEGMENT_OPEN:
	case GARUDA_MSG_SEGMENT_ATTACH:
		m->segment_open.lines = 64;
		m->segment_open.numa_node = -1;
		break;
	case GARUDA_MSG_SEGMENT:
		m->nfds = 1;
		m->segment.segment_id = 1;
		m->segment.lines = 64;
		m->segment.bytes = 8192;
		m->segment.numa_node = 0;
		break;
	case GARUDA_MSG_SEGMENT_CLOSE:
		m->flags = GARUDA_F_NOREPLY;
		m->segment_close.segment_id = 1;
		break;
	case GARUDA_MSG_BIND:
	case GARUDA_MSG_UNBIND:
		m->bind.slot = (struct garuda_slot){ 1, 9 };
		break;
	case GARUDA_MSG_ARM:
		m->arm.slot = (struct garuda_slot){ 1, 9 };
		m->arm.target = 100;
		m->arm.token = 7;
		m->arm.form = GARUDA_FORM_EVENTFD;
		break;
	case GARUDA_MSG_DISARM:
		m->disarm.slot = (struct garuda_slot){ 1, 9 };
		m->disarm.token = 7;
		break;
	case GARUDA_MSG_READY:
		m->cookie = 0;
		m->ready.token = 7;
		m->ready.value = 100;
		m->ready.slot = (struct garuda_slot){ 1, 9 };
		m->ready.flags = GARUDA_READY_OVERFLOW;
		break;
	case GARUDA_MSG_ERROR:
		garuda_msg_error(m, m->cookie, -1016, NULL);
		break;
	case GARUDA_MSG_ARM_BATCH: /* one record of each form; records 1 and 2 name a point */
		m->flags = GARUDA_F_NOREPLY;
		m->arm_batch.count = 3;
		for (uint32_t i = 0; i < 3; i++)
			m->arm_batch.arm[i] = (struct garuda_arm){ .slot = { 1, 9 + i },
								   .target = 100 + i,
								   .token = 7 + i,
								   .form = (uint8_t)(GARUDA_FORM_EVENTFD + i),
								   .point = i * 0x10001u };
		break;
	case GARUDA_MSG_READY_BATCH:
		m->cookie = 0;
		m->ready_batch.count = 2;
		for (uint32_t i = 0; i < 2; i++)
			m->ready_batch.ready[i] = (struct garuda_ready){ .token = 7 + i,
									 .value = 100 + i,
									 .slot = { 1, 9 + i } };
		break;
	case GARUDA_MSG_QUERY_REPLY:
		m->query_reply.json_len = (uint32_t)snprintf(m->query_reply.json, sizeof(m->query_reply.json),
							     "{\"version\":1,\"id\":3,\"armed\":2}");
		break;
	default:
		break;
	}
}

size_t fuzz_seeds(struct fuzz_seed *out, size_t cap)
{
	size_t n = 0;
	for (unsigned t = 1; t <= GARUDA_MSG_TYPE_MAX_ && n < cap; t++, n++) {
		struct garuda_msg m;
		seed_msg(t, &m);
		struct fuzz_seed *s = &out[n];
		memset(s, 0, sizeof(*s));
		ssize_t len = garuda_msg_encode(&m, s->bytes + 1, sizeof(s->bytes) - 1);
		if (len <= 0) {
			fprintf(stderr, "seed for type %u does not encode: %zd\n", t, len);
			abort();
		}
		s->bytes[0] = (uint8_t)m.nfds;
		s->len = (size_t)len + 1;
		int k = snprintf(s->name, sizeof(s->name), "%02u-%s", t, garuda_msg_type_name(t));
		for (int i = 0; i < k; i++)
			s->name[i] = (char)(s->name[i] == '_' ? '-' : tolower((unsigned char)s->name[i]));
	}
	/* refused shapes (FUZZ_REFUSED_SEEDS) */
	if (n + FUZZ_REFUSED_SEEDS > cap)
		return n;
	struct garuda_msg m;
	seed_msg(GARUDA_MSG_ARM, &m);
	uint8_t arm[GARUDA_MSG_MAX];
	ssize_t alen = garuda_msg_encode(&m, arm, sizeof(arm));
	if (alen <= 0)
		abort();
	struct fuzz_seed *s = &out[n++]; /* a zero-length datagram: TOO_SHORT, cookie 0 */
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "r1-empty");
	s->len = 1;
	s = &out[n++]; /* a valid ARM that came with 6 fds */
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "r2-arm-six-fds");
	s->bytes[0] = 6;
	memcpy(s->bytes + 1, arm, (size_t)alen);
	s->len = 1 + (size_t)alen;
	s = &out[n++]; /* what the daemon reads of a 600-byte ARM: its first 512 bytes */
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "r3-oversized-prefix");
	memcpy(s->bytes + 1, arm, (size_t)alen);
	uint32_t claimed = 600;
	memcpy(s->bytes + 1 + 4, &claimed, 4);
	s->len = 1 + GARUDA_MSG_MAX;
	return n;
}
