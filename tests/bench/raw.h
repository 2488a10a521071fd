/* raw.h — the bench's view of tests/common's raw-protocol client (rawclient.h): one
 * connection with one segment, for measurements that must not depend on libgaruda.
 * Connect and HELLO (optionally offering features), open the segment and map it, bind
 * eventfds, arm (one at a time, many ARMs with sendmmsg and GARUDA_F_NOREPLY, or
 * ARM_BATCHes of up to 15 records), and receive READY and READY_BATCH messages. The
 * protocol work is rawclient's; this file only keeps the segment id with the client.
 *
 * Every call that waits for the daemon has a deadline. Returns 0 (or a count), a
 * negative errno, or a positive registry code when the daemon answered ERROR. Safe to
 * use in forked children (no shared state).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rawclient.h"

struct rc {
	struct gd_client raw; /* the connection; raw.fd < 0 when closed */
	struct gd_seg seg;    /* the segment (seg.map: mapped read-write, or NULL) */
};

int rc_connect(struct rc *c, const char *path);
/* The same, offering `features` (GARUDA_FEATURE_*) in HELLO; rc_features(c) is what
 * the daemon granted. */
int rc_connect_features(struct rc *c, const char *path, uint32_t features);
void rc_close(struct rc *c);

static inline uint32_t rc_features(const struct rc *c)
{
	return c->raw.welcome.features;
}

/* SEGMENT_OPEN of `lines` lines; maps it (map = false: unmapped). The memfd is closed,
 * or handed to the caller through keep_fd when not NULL. */
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

#define rc_arm_req gd_arm_req
/* n NOREPLY arms in sendmmsg batches (gd_arm_many). Returns n or a negative errno. */
static inline int rc_arm_many(struct rc *c, const struct gd_arm_req *reqs, unsigned n)
{
	return gd_arm_many(&c->raw, c->seg.id, reqs, n);
}
/* n NOREPLY arms as ARM_BATCH datagrams (gd_arm_batched). Returns n or a negative errno. */
static inline int rc_arm_batched(struct rc *c, const struct gd_arm_req *reqs, unsigned n)
{
	return gd_arm_batched(&c->raw, c->seg.id, reqs, n);
}

/* Receive one message, waiting up to timeout_ms (-1: the hang deadline). Any fd that
 * comes with it is closed. Returns 0, -ETIMEDOUT, -EPIPE (closed), -EBADMSG. */
int rc_recv(struct rc *c, struct garuda_msg *m, int timeout_ms);

/* Readiness without blocking: gd_recv_ready (rawclient.h). */
static inline int rc_recv_ready(struct rc *c, struct garuda_ready *out, unsigned max,
				unsigned *datagrams)
{
	return gd_recv_ready(&c->raw, out, max, datagrams);
}

static inline uint64_t *rc_word(struct rc *c, uint32_t index)
{
	return garuda_segment_word(c->seg.map, index);
}
