/* wire.h — garuda's wire protocol: message layouts, encode, decode and validation.
 *
 * No I/O here. One message per SOCK_SEQPACKET datagram, little-endian, fixed layouts
 * (docs/protocol.md gives every byte). garuda_msg_decode() is the only way a received
 * datagram becomes a struct garuda_msg: it checks the header against the datagram
 * (length, fd count), the type, reserved fields and flags, and every range it can
 * check without session state. Anything it accepts is safe to act on field by field;
 * what it refuses gets a registry code naming the class of the fault.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "seq.h"

#define GARUDA_PROTO_VERSION 1u
#define GARUDA_HDR_BYTES 24u
#define GARUDA_MSG_MAX 512u     /* hard cap on one datagram */
#define GARUDA_MSG_MAX_FDS 1u   /* at most one fd rides with a message */
#define GARUDA_ERROR_TEXT_MAX 256u
#define GARUDA_NUMA_MAX 1023    /* highest NUMA node number accepted */
#define GARUDA_QUERY_TEXT_MAX (GARUDA_MSG_MAX - GARUDA_HDR_BYTES - 8u) /* 480 */
#define GARUDA_BATCH_RECORD_BYTES 32u
#define GARUDA_BATCH_MAX ((GARUDA_MSG_MAX - GARUDA_HDR_BYTES - 8u) / GARUDA_BATCH_RECORD_BYTES) /* 15 */

/* HELLO/WELCOME features: the client offers, the daemon answers what it will use */
#define GARUDA_FEATURE_READY_BATCH 0x1u /* the client accepts READY_BATCH */
#define GARUDA_FEATURE_POINTS 0x2u      /* ARM / ARM_BATCH records may name a point */
#define GARUDA_FEATURE_REPRESENT 0x4u   /* the client marks its re-presentation (F_REPRESENT) */
/* WELCOME may grant only these */
#define GARUDA_FEATURES_KNOWN_ (GARUDA_FEATURE_READY_BATCH | GARUDA_FEATURE_POINTS | GARUDA_FEATURE_REPRESENT)

enum garuda_msg_type {
	GARUDA_MSG_HELLO = 1,          /* client -> daemon */
	GARUDA_MSG_WELCOME = 2,        /* daemon -> client */
	GARUDA_MSG_SEGMENT_OPEN = 3,   /* client -> daemon */
	GARUDA_MSG_SEGMENT = 4,        /* daemon -> client, memfd rides along (0 fds for ATTACH) */
	GARUDA_MSG_SEGMENT_CLOSE = 5,  /* client -> daemon */
	GARUDA_MSG_BIND = 6,           /* client -> daemon, eventfd rides along */
	GARUDA_MSG_UNBIND = 7,         /* client -> daemon */
	GARUDA_MSG_ARM = 8,            /* client -> daemon */
	GARUDA_MSG_DISARM = 9,         /* client -> daemon */
	GARUDA_MSG_READY = 10,         /* daemon -> client */
	GARUDA_MSG_ERROR = 11,         /* daemon -> client */
	GARUDA_MSG_ACK = 12,           /* daemon -> client */
	GARUDA_MSG_SEGMENT_ATTACH = 13,/* client -> daemon, the client's memfd rides along */
	GARUDA_MSG_QUERY = 14,         /* client -> daemon: describe my own session */
	GARUDA_MSG_QUERY_REPLY = 15,   /* daemon -> client: one JSON object */
	GARUDA_MSG_ARM_BATCH = 16,     /* client -> daemon: up to 15 ARMs in one datagram */
	GARUDA_MSG_READY_BATCH = 17,   /* daemon -> client: up to 15 READYs (feature READY_BATCH) */
	GARUDA_MSG_TYPE_MAX_ = 17,
};

/* header flags */
#define GARUDA_F_NOREPLY 0x1u /* request: send no ACK on success (errors still come) */
/* SEGMENT_ATTACH, BIND, ARM: part of the client's re-presentation of what it held in a
 * lost session (feature REPRESENT); what garudad counts as re-attached and re-armed */
#define GARUDA_F_REPRESENT 0x4u
#define GARUDA_F_KNOWN_ (GARUDA_F_NOREPLY | GARUDA_F_REPRESENT)

/* READY flags */
#define GARUDA_READY_OVERFLOW 0x1u /* readiness was coalesced: re-check every armed word */

enum garuda_form {
	GARUDA_FORM_EVENTFD = 1,  /* +1 on the eventfd bound to the slot */
	GARUDA_FORM_MESSAGE = 2,  /* a READY message on the socket */
	GARUDA_FORM_DOORBELL = 3, /* bump the segment's doorbell word and FUTEX_WAKE it */
	/* one past the last form: the forms are 1 .. GARUDA_FORM_COUNT - 1, and arrays
	 * indexed by form (counters) run 0 (no form) .. GARUDA_FORM_COUNT - 1 */
	GARUDA_FORM_COUNT
};
/* A form's index in such an array (a validated ARM's form always is one; anything
 * else counts under 0) */
static inline unsigned garuda_form_index(uint8_t form)
{
	return form < GARUDA_FORM_COUNT ? form : 0;
}

struct garuda_hello {
	uint32_t version;
	uint32_t features; /* GARUDA_FEATURE_* the client supports; unknown bits are allowed
			    * (offers to newer daemons) and never granted */
};

struct garuda_welcome {
	uint32_t version;
	uint32_t features; /* GARUDA_FEATURE_* the daemon will use on this session */
	uint64_t session_id;
	uint32_t max_segments;  /* per connection */
	uint32_t max_lines;     /* per connection, summed over its segments */
	uint32_t max_bindings;  /* per connection */
	uint32_t max_armed;     /* per connection */
	uint32_t max_message;   /* bytes, = GARUDA_MSG_MAX */
};

/* SEGMENT_OPEN and SEGMENT_ATTACH */
struct garuda_segment_open {
	uint32_t lines;
	int32_t numa_node; /* -1: the daemon picks */
};

struct garuda_segment_info {
	uint32_t segment_id;
	uint32_t lines;
	uint64_t bytes;
	int32_t numa_node;
};

struct garuda_segment_ref { /* SEGMENT_CLOSE */
	uint32_t segment_id;
};

struct garuda_slot_msg { /* BIND, UNBIND */
	struct garuda_slot slot;
};

struct garuda_arm {
	struct garuda_slot slot;
	uint64_t target;
	uint64_t token;
	uint8_t form; /* enum garuda_form */
	/* the deadline-estimator point this wait belongs to (docs/plans.md): 0 = the
	 * word's own; another value only on a session granted GARUDA_FEATURE_POINTS
	 * (else the daemon answers RESERVED_SET, as for any reserved byte) */
	uint32_t point;
};

struct garuda_disarm {
	struct garuda_slot slot;
	uint64_t token;
};

struct garuda_ready {
	uint64_t token;
	uint64_t value; /* the word's value the daemon's acquire load saw */
	struct garuda_slot slot;
	uint32_t flags; /* GARUDA_READY_* */
};

struct garuda_error_msg {
	int32_t code; /* > 0: registry code; < 0: negative errno from the daemon */
	uint32_t text_len;
	char text[GARUDA_ERROR_TEXT_MAX + 1]; /* NUL-terminated after decode */
};

struct garuda_query {
	uint32_t what; /* 0: this session (the only query a client may make) */
};

struct garuda_query_reply {
	uint32_t json_len;
	char json[GARUDA_QUERY_TEXT_MAX + 1]; /* NUL-terminated after decode */
};

struct garuda_arm_batch { /* records are ARM bodies */
	uint32_t count; /* 1 .. GARUDA_BATCH_MAX */
	struct garuda_arm arm[GARUDA_BATCH_MAX];
};

struct garuda_ready_batch { /* records are READY bodies with flags 0 */
	uint32_t count; /* 1 .. GARUDA_BATCH_MAX */
	struct garuda_ready ready[GARUDA_BATCH_MAX];
};

struct garuda_msg {
	uint16_t type;
	uint16_t flags;
	uint16_t nfds;
	uint64_t cookie;
	union {
		struct garuda_hello hello;
		struct garuda_welcome welcome;
		struct garuda_segment_open segment_open; /* also SEGMENT_ATTACH */
		struct garuda_segment_info segment;
		struct garuda_segment_ref segment_close;
		struct garuda_slot_msg bind; /* also UNBIND */
		struct garuda_arm arm;
		struct garuda_disarm disarm;
		struct garuda_ready ready;
		struct garuda_error_msg error;
		struct garuda_query query;
		struct garuda_query_reply query_reply;
		struct garuda_arm_batch arm_batch;
		struct garuda_ready_batch ready_batch;
	};
};

/* Name of a message type ("ARM"), or NULL for an unknown type. */
const char *garuda_msg_type_name(unsigned type);

/* Encode m into buf (at most cap bytes). m->nfds must be what the caller will pass
 * with the datagram. Validates like decode. Returns the datagram length, or
 * -ENOBUFS when cap is too small, or a negative registry code for an invalid m. */
ssize_t garuda_msg_encode(const struct garuda_msg *m, void *buf, size_t cap);

/* Decode and validate one datagram of len bytes that arrived with nfds fds.
 * Returns 0 and fills out, or a negative registry code:
 *   TOO_SHORT     shorter than the header, or than the type's body
 *   TOO_LONG      over GARUDA_MSG_MAX, or longer than the type's body
 *   BAD_LENGTH    header length != len (or ERROR/QUERY_REPLY text length inconsistent)
 *   UNKNOWN_TYPE  type not in enum garuda_msg_type
 *   BAD_VERSION   HELLO/WELCOME with a version other than GARUDA_PROTO_VERSION
 *   FD_COUNT      header fd count != nfds, or not what the type carries
 *   SLOT_RANGE    slot index beyond GARUDA_SEGMENT_MAX_LINES * 8
 *   RESERVED_SET  a reserved field or unknown flag is set
 *   BAD_VALUE     lines, NUMA node, form, query kind, error code or batch count out of
 *                 range, or a NUL inside an ERROR/QUERY_REPLY text */
int garuda_msg_decode(const void *buf, size_t len, unsigned nfds, struct garuda_msg *out);

/* The cookie of a datagram that may not decode, for the ERROR that refuses it: 0 when
 * it is shorter than the header. */
uint64_t garuda_peek_cookie(const void *buf, size_t len);

/* Convenience constructors used by both sides (they only fill the struct). */
void garuda_msg_init(struct garuda_msg *m, enum garuda_msg_type type, uint64_t cookie);
void garuda_msg_error(struct garuda_msg *m, uint64_t cookie, int code, const char *text);
