/* rawclient.h — the one raw-protocol client of the tests: proto/wire.h over util/fdio.h,
 * never libgaruda. Connect and HELLO, segments, BIND, ARM (one at a time), DISARM,
 * READY; the bench's bulk paths (ARM with NOREPLY in sendmmsg batches, ARM_BATCH,
 * READY/READY_BATCH through recvmmsg) are in this module too.
 *
 * Promises: nothing here asserts or keeps global state, so it is safe in threads,
 * forked children and programs without Criterion (the bench). Every call returns 0
 * (or a count), a positive registry code when the daemon answered ERROR, or a
 * negative errno (-EPIPE: the daemon closed the connection; -ETIMEDOUT: nothing came
 * within the deadline; -EBADMSG: the daemon sent something garuda_msg_decode refuses;
 * -EPROTO: a reply of the wrong type). gd_strerr() turns any of them into text.
 * Deadlines only detect hangs; no test depends on timing to pass.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "errcode.h"
#include "segment_layout.h"
#include "seq.h"
#include "wire.h"

#include "deadline.h"

/* ---------------------------------------------------------------- client ---- */

struct gd_rx {
	struct garuda_msg m;
};

struct gd_client {
	int fd;
	uint64_t cookie;
	struct garuda_welcome welcome;
	struct gd_rx *q; /* messages that arrived while waiting for a reply, in order */
	size_t qhead, qlen, qcap;
	bool eof;
	/* a process that connected it and lives while it is used (cgroup.h cg_open_in:
	 * garudad ends a session when its connecting process exits); keeper_pid 0: none */
	pid_t keeper_pid;
	int keeper_fd; /* its pipe: closing it ends the process */
};

/* Give c a keeper process, pid, ended by closing fd (registered: see below); end it,
 * if any (gd_close() does). A process forked while keepers live holds copies of their
 * pipes, so a keeper would not see its end: such a child (cgroup.c's, before it
 * connects) closes them with gd_keepers_close_inherited(). */
void gd_keeper_set(struct gd_client *c, pid_t pid, int fd);
void gd_keeper_end(struct gd_client *c);
void gd_keepers_close_inherited(void);

struct gd_seg {
	uint32_t id;
	uint32_t lines;
	uint64_t bytes;
	int32_t numa_node;
	int memfd;
	struct garuda_segment *map;
};

/* Text for any harness return value. */
const char *gd_strerr(int r);

/* Connect (SOCK_SEQPACKET); 0 or -errno. c is initialised either way. */
int gd_connect(struct gd_client *c, const char *path);
/* HELLO -> WELCOME (stored in c->welcome). */
int gd_hello(struct gd_client *c);
/* connect + hello */
int gd_open(struct gd_client *c, const char *path);
void gd_close(struct gd_client *c);

/* Encode m (m->nfds = nfds) and send it with fds. */
int gd_send(struct gd_client *c, const struct garuda_msg *m, const int *fds, unsigned nfds);
/* Send raw bytes with fds. */
int gd_send_raw(struct gd_client *c, const void *buf, size_t len, const int *fds, unsigned nfds);

/* Next message (queued first, then the socket): 1, 0 on timeout, or -errno. A fd that
 * came with it goes to *fd (or is closed when fd is NULL; *fd = -1 when none). */
int gd_recv(struct gd_client *c, struct garuda_msg *m, int *fd, int timeout_ms);

/* Wait for the reply with this cookie (READY and other messages are queued). */
int gd_await(struct gd_client *c, uint64_t cookie, struct garuda_msg *reply, int *fd);

/* Give m the next cookie, send it and (unless NOREPLY) wait for its reply. */
int gd_request(struct gd_client *c, struct garuda_msg *m, const int *fds, unsigned nfds,
	       struct garuda_msg *reply, int *reply_fd);

int gd_segment_open(struct gd_client *c, uint32_t lines, int32_t numa, struct gd_seg *s);
int gd_segment_close(struct gd_client *c, uint32_t id);
void gd_seg_unmap(struct gd_seg *s);

/* BIND slot to efd (the daemon gets its own copy). */
int gd_bind(struct gd_client *c, struct garuda_slot slot, int efd);
/* New non-blocking eventfd in *efd, bound to slot (closed again on failure). */
int gd_bind_new(struct gd_client *c, struct garuda_slot slot, int *efd);
int gd_unbind(struct gd_client *c, struct garuda_slot slot);

int gd_arm(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
	   uint8_t form);
int gd_arm_flags(struct gd_client *c, struct garuda_slot slot, uint64_t target, uint64_t token,
		 uint8_t form, uint16_t flags);
int gd_disarm(struct gd_client *c, struct garuda_slot slot, uint64_t token);

/* Next READY: 1 (filled), 0 on timeout, or -errno; any other message -> -EPROTO
 * (an ERROR -> its positive code). */
int gd_wait_ready(struct gd_client *c, struct garuda_ready *r, int timeout_ms);

/* Nothing at all arrives on c for ms (queued messages count): 0, or 1 with *m filled. */
int gd_quiet(struct gd_client *c, int ms, struct garuda_msg *m);

/* Play the GPU: release-store v into word index of the segment. */
static inline void gd_store(struct gd_seg *s, uint32_t index, uint64_t v)
{
	__atomic_store_n(garuda_segment_word(s->map, index), v, __ATOMIC_RELEASE);
}
static inline uint64_t gd_load(struct gd_seg *s, uint32_t index)
{
	return __atomic_load_n(garuda_segment_word(s->map, index), __ATOMIC_ACQUIRE);
}
static inline uint32_t gd_doorbell(struct gd_seg *s)
{
	return __atomic_load_n(&s->map->hdr.doorbell, __ATOMIC_ACQUIRE);
}
static inline struct garuda_slot gd_slot(struct gd_seg *s, uint32_t index)
{
	return (struct garuda_slot){ .segment = s->id, .index = index };
}

/* Read an eventfd: its counter (> 0), 0 when nothing came within timeout_ms, -errno. */
long long gd_eventfd_read(int efd, int timeout_ms);

/* Wait until the doorbell differs from old (FUTEX_WAIT, shared): its new value in
 * *now; 1, or 0 on timeout. */
int gd_doorbell_wait(struct gd_seg *s, uint32_t old, uint32_t *now, int timeout_ms);



/* ------------------------------------------------------- bulk (the bench) ---- */

/* HELLO offering features (GARUDA_FEATURE_*); c->welcome.features is what the daemon
 * granted. gd_open_features: connect + that. */
int gd_hello_features(struct gd_client *c, uint32_t features);
int gd_open_features(struct gd_client *c, const char *path, uint32_t features);

struct gd_arm_req {
	uint32_t index;
	uint64_t target, token;
	uint8_t form;
};

/* n NOREPLY ARMs on segment seg, sent in sendmmsg batches; blocks while the socket is
 * full. Returns n or a negative errno. */
int gd_arm_many(struct gd_client *c, uint32_t seg, const struct gd_arm_req *reqs, unsigned n);

/* n NOREPLY arms as ARM_BATCH datagrams of up to GARUDA_BATCH_MAX records (a single
 * one as ARM), sent with sendmmsg; blocks while the socket is full. Returns n or a
 * negative errno. */
int gd_arm_batched(struct gd_client *c, uint32_t seg, const struct gd_arm_req *reqs, unsigned n);

/* Receive readiness without blocking (queued READYs first, then recvmmsg): READY
 * messages, and READY_BATCH when the session has that feature, each record stored in
 * out as one READY. Takes only as many datagrams as out[0..max) can hold whatever they
 * carry (so with READY_BATCH, max must be at least GARUDA_BATCH_MAX, else -EINVAL).
 * Returns how many records were stored (0 when none is waiting), or a negative errno;
 * *datagrams (if not NULL) gets how many datagrams brought them. Other messages make
 * it return -EPROTO (after printing them). */
int gd_recv_ready(struct gd_client *c, struct garuda_ready *out, unsigned max, unsigned *datagrams);
