/* fuzz_decode.c — libFuzzer target over garuda_msg_decode().
 *
 * Input: byte 0 is the number of fds that "arrived" with the datagram, the rest is the
 * datagram. Aborts (a finding) when:
 *   - decode refuses with anything but a decoder code (TOO_SHORT .. BAD_VALUE), or
 *     garuda_peek_cookie() (the cookie garudad echoes in its ERROR, §5) is not bytes
 *     16-23 of a datagram of at least 24 bytes, 0 for a shorter one;
 *   - decode accepts and re-encoding the result does not reproduce the datagram byte
 *     for byte (so decode lost, invented or normalised something);
 *   - decode accepts a datagram whose header fd count disagrees with what arrived, or
 *     a type name, ERROR text, batch count or range check disagrees with what was
 *     accepted.
 * Built with -fsanitize=fuzzer,address,undefined under -Dfuzz=true (clang); the same
 * function also replays the seed corpus in the ordinary test suite (test_corpus.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errcode.h"
#include "wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned nfds = data[0];
	const uint8_t *dgram = data + 1;
	size_t len = size - 1;

	struct garuda_msg m;
	int r = garuda_msg_decode(dgram, len, nfds, &m);
	if (r != 0) {
		CHECK(r <= -GARUDA_E_TOO_SHORT && r >= -GARUDA_E_BAD_VALUE);
		CHECK(garuda_strerror(r) != NULL);
		uint64_t cookie = 0;
		if (len >= GARUDA_HDR_BYTES)
			memcpy(&cookie, dgram + 16, 8); /* little-endian hosts */
		CHECK(garuda_peek_cookie(dgram, len) == cookie);
		return 0;
	}

	/* accepted: the header agrees with the datagram */
	CHECK(len >= GARUDA_HDR_BYTES && len <= GARUDA_MSG_MAX);
	CHECK(m.nfds == nfds && nfds <= GARUDA_MSG_MAX_FDS);
	CHECK(garuda_msg_type_name(m.type) != NULL);
	CHECK((m.flags & ~GARUDA_F_KNOWN_) == 0); /* NOREPLY, REPRESENT */
	if (m.type == GARUDA_MSG_ERROR) {
		CHECK(m.error.text_len <= GARUDA_ERROR_TEXT_MAX);
		CHECK(strlen(m.error.text) == m.error.text_len);
	}
	/* HELLO may offer unknown features; WELCOME grants only known ones */
	if (m.type == GARUDA_MSG_WELCOME)
		CHECK((m.welcome.features & ~GARUDA_FEATURES_KNOWN_) == 0);
	if (m.type == GARUDA_MSG_ARM_BATCH) {
		CHECK(m.arm_batch.count >= 1 && m.arm_batch.count <= GARUDA_BATCH_MAX);
		CHECK(len == 32 + (size_t)m.arm_batch.count * GARUDA_BATCH_RECORD_BYTES);
		for (uint32_t i = 0; i < m.arm_batch.count; i++)
			CHECK(m.arm_batch.arm[i].form >= GARUDA_FORM_EVENTFD &&
			      m.arm_batch.arm[i].form <= GARUDA_FORM_DOORBELL);
	}
	if (m.type == GARUDA_MSG_READY_BATCH) {
		CHECK(m.ready_batch.count >= 1 && m.ready_batch.count <= GARUDA_BATCH_MAX);
		CHECK(len == 32 + (size_t)m.ready_batch.count * GARUDA_BATCH_RECORD_BYTES);
		for (uint32_t i = 0; i < m.ready_batch.count; i++)
			CHECK(m.ready_batch.ready[i].flags == 0);
	}

	/* re-encode reproduces the datagram exactly */
	uint8_t out[GARUDA_MSG_MAX];
	ssize_t n = garuda_msg_encode(&m, out, sizeof(out));
	CHECK(n >= 0 && (size_t)n == len);
	CHECK(memcmp(out, dgram, len) == 0);

	/* the same datagram with any other fd count is refused */
	struct garuda_msg other;
	CHECK(garuda_msg_decode(dgram, len, nfds + 1, &other) == -GARUDA_E_FD_COUNT);
	if (nfds > 0)
		CHECK(garuda_msg_decode(dgram, len, nfds - 1, &other) == -GARUDA_E_FD_COUNT);
	return 0;
}
