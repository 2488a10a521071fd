/* uring_futex.h — what liburing 2.5 offers for IORING_OP_FUTEX_WAIT (Linux 6.7), for
 * the liburing 2.3 of Debian 12, which knows neither the opcode nor
 * io_uring_prep_futex_wait(): the opcode's number, the run-time probe and the SQE.
 * Header-only; used by examples/uring.c and tests/client/test_uring.c. With liburing
 * 2.5 or later, io_uring_prep_futex_wait(sqe, word, value, FUTEX_BITSET_MATCH_ANY,
 * FUTEX2_SIZE_U32, 0) is the same SQE. */
#pragma once

#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>

/* After IORING_OP_SENDMSG_ZC (liburing 2.3's last) come READ_MULTISHOT, WAITID and
 * FUTEX_WAIT: the uapi's enum io_uring_op */
#define URING_OP_FUTEX_WAIT   (IORING_OP_SENDMSG_ZC + 3)
#define URING_FUTEX2_SIZE_U32 0x02u /* a 32-bit futex word; shared (no FUTEX2_PRIVATE) */
#define URING_FUTEX_MATCH_ANY 0xffffffffull

/* Does this ring's kernel have IORING_OP_FUTEX_WAIT? (IORING_REGISTER_PROBE) */
static inline bool uring_futex_wait_supported(struct io_uring *ring)
{
	struct io_uring_probe *p = io_uring_get_probe_ring(ring);
	bool ok = p && io_uring_opcode_supported(p, URING_OP_FUTEX_WAIT);
	if (p)
		io_uring_free_probe(p);
	return ok;
}

/* Wait while *word == value: the CQE's res is 0 when woken, -EAGAIN when the word
 * already differed (a stale value returns at once), -ECANCELED when cancelled. */
static inline void uring_prep_futex_wait(struct io_uring_sqe *sqe, uint32_t *word, uint32_t value)
{
	io_uring_prep_rw(URING_OP_FUTEX_WAIT, sqe, (int)URING_FUTEX2_SIZE_U32, word, 0, value);
	sqe->addr3 = URING_FUTEX_MATCH_ANY;
}
