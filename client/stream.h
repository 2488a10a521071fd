/* stream.h — the pure pieces of stream.c, in a header of their own so that tests reach
 * them directly (the library exports only the garuda_* functions of its header). No
 * state, no locks; nothing here includes the library's internal headers.
 */
#pragma once

#include <stdint.h>

/* The sequence of this stream an ARM's asynchronous ERROR is for, or 0 when it can be
 * no arm of this stream (a stray). The cookie carries only the low 32 bits of the
 * target (arm_cookie() in internal.h); signalled is the stream's last sequence, which
 * was stored before the ARM went out. The arm is the latest sequence at or below
 * signalled with those low bits, provided it lies less than 2^31 below signalled and is
 * not 0: sequences start at 1, so no arm of 0 is ever sent, while a sequence k * 2^32
 * (low bits 0) is an arm like any other. */
static inline uint64_t stream_arm_target(uint64_t signalled, uint32_t low)
{
	uint32_t behind = (uint32_t)signalled - low; /* wraps: modulo 2^32 */
	if ((int32_t)behind < 0 || behind >= signalled)
		return 0; /* above signalled, or at/below 0 */
	return signalled - behind;
}
