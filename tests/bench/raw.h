/* raw.h — a minimal garuda client over the raw protocol (proto/wire.h + util/fdio.h),
 * for measurements that must not depend on libgaruda: connect and HELLO (optionally
 * offering features), open one segment and map it, bind eventfds, arm (one at a time,
 * many ARMs with sendmmsg and GARUDA_F_NOREPLY, or ARM_BATCHes of up to 15 records),
 * and receive READY and READY_BATCH messages.
 *
 * Every call that waits for the daemon has a deadline (BENCH_HANG_MS). Returns 0 (or
 * a count), a negative errno, or a positive registry code when the daemon answered
 * ERROR. Safe to use in forked children (no shared state).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "segment_layout.h"
#include "wire.h"

struct rc {
	int fd;
	uint64_t session;
	uint32_t features; /* GARUDA_FEATURE_* the daemon granted in WELCOME */
	uint64_t cookie;
	struct garuda_segment *map; /* the segment, mapped read-write */
	size_t map_bytes;
	uint32_t seg_id;
	uint32_t lines;
};

int rc_connect(struct rc *c, const char *path);
/* The same, offering `features` (GARUDA_FEATURE_*) in HELLO; c->features is what the
 * daemon granted. */
int rc_connect_features(struct rc *c, const char *path, uint32_t features);
void rc_close(struct rc *c);

/* SEGMENT_OPEN of `lines` lines; maps it (map = false: close the memfd unmapped).
 * keep_fd: NULL, or where the memfd goes instead of being closed (the caller's). */
int rc_segment_open(struct rc *c, uint32_t lines, bool map, int *keep_fd);

/* BIND word index to efd (which must be EFD_NONBLOCK); waits for the ACK. */
int rc_bind(struct rc *c, uint32_t index, int efd);

/* ARM with GARUDA_F_NOREPLY (no round trip). */
int rc_arm(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form);

/* The same, naming a deadline-estimator point (needs GARUDA_FEATURE_POINTS; 0 = the
 * word's own). */
int rc_arm_point(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form,
		 uint32_t point);

/* ARM with a reply: waits for the ACK (or ERROR). */
int rc_arm_acked(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form);

struct rc_arm_req {
	uint32_t index;
	uint64_t target, token;
	uint8_t form;
};
/* n NOREPLY arms in sendmmsg batches; blocks while the socket is full. Returns n or
 * a negative errno. */
int rc_arm_many(struct rc *c, const struct rc_arm_req *reqs, unsigned n);

/* n NOREPLY arms as ARM_BATCH datagrams of up to GARUDA_BATCH_MAX records (a single
 * one as ARM), sent with sendmmsg; blocks while the socket is full. Returns n or a
 * negative errno. */
int rc_arm_batched(struct rc *c, const struct rc_arm_req *reqs, unsigned n);

/* Receive one message, waiting up to timeout_ms (-1: the hang deadline). Any fd that
 * comes with it is closed. Returns 0, -ETIMEDOUT, -EPIPE (closed), -EBADMSG. */
int rc_recv(struct rc *c, struct garuda_msg *m, int timeout_ms);

/* Receive readiness without blocking (recvmmsg): READY messages, and READY_BATCH when
 * the session has that feature, each record stored in out as one READY. Takes only as
 * many datagrams as out[0..max) can hold whatever they carry (so with READY_BATCH, max
 * must be at least GARUDA_BATCH_MAX, else -EINVAL). Returns how many records were
 * stored (0 when none is waiting), or a negative errno; *datagrams (if not NULL) gets
 * how many datagrams brought them. Other messages make it return -EPROTO (after
 * printing them). */
int rc_recv_ready(struct rc *c, struct garuda_ready *out, unsigned max, unsigned *datagrams);

static inline uint64_t *rc_word(struct rc *c, uint32_t index)
{
	return garuda_segment_word(c->map, index);
}
