/* errcode.h — garuda's error-code registry.
 *
 * One append-only table: a code is its identity forever, its name is stable, its
 * message may be reworded. Codes start at GARUDA_ERR_BASE so that they never collide
 * with errno values: every garuda function returns 0 (or a count) on success, a
 * negative errno for a system failure (forwarded unchanged), or a negative registry
 * code for an API/protocol error. garuda_strerror() maps either kind to text.
 *
 * To add a code: append a line at the end of GARUDA_ERRCODES with the next number, then
 * run scripts/gen-errcodes.py (or `meson compile -C build errcodes`): it writes the
 * public <garuda/errcodes.h> and python/garuda/errors.py's classes, and the meson test
 * errcodes-fresh fails until it has. Never renumber, never remove (retire a code by
 * leaving it in place).
 */
#pragma once

#include <stdbool.h>

/* GARUDA_ERR_BASE and enum garuda_error (GARUDA_E_<name>): generated from the table
 * below by scripts/gen-errcodes.py, and public (<garuda/garuda.h> includes it). */
#include <garuda/errcodes.h>

/*     name               number  message */
#define GARUDA_ERRCODES(X)                                                            \
	X(PROTOCOL,        1000, "malformed message")                                       \
	X(TOO_SHORT,       1001, "message shorter than its header or body")                  \
	X(TOO_LONG,        1002, "message longer than the protocol allows")                  \
	X(BAD_LENGTH,      1003, "header length field differs from the datagram size")       \
	X(UNKNOWN_TYPE,    1004, "unknown message type")                                     \
	X(BAD_VERSION,     1005, "unsupported protocol version")                             \
	X(FD_COUNT,        1006, "number of passed fds differs from the header")             \
	X(SLOT_RANGE,      1007, "slot out of range")                                        \
	X(RESERVED_SET,    1008, "reserved field or flag is not zero")                       \
	X(BAD_VALUE,       1009, "field value out of range")                                 \
	X(UNEXPECTED,      1010, "message not valid in this direction or state")             \
	X(NO_SEGMENT,      1011, "no such segment in this session")                          \
	X(BAD_FD,          1012, "passed fd has the wrong type")                             \
	X(NOT_BOUND,       1013, "slot has no eventfd binding")                              \
	X(ALREADY_BOUND,   1014, "slot already has an eventfd binding")                      \
	X(NOT_ARMED,       1015, "no such armed descriptor")                                 \
	X(QUOTA,           1016, "quota exceeded")                                           \
	X(NO_MEMLOCK,      1017, "cannot lock segment memory: raise LimitMEMLOCK or grant CAP_IPC_LOCK") \
	X(BAD_SEGMENT,     1018, "presented segment has wrong seals, size or layout")       \
	X(SLOW_PEER,       1019, "peer does not drain its socket; disconnected")             \
	X(TIMEOUT,         1020, "timed out")                                                \
	X(DISCONNECTED,    1021, "not connected to garudad")                                 \
	X(BAD_PLAN,        1022, "invalid wait plan")                                        \
	X(STREAM_FAULT,    1023, "the stream reported an error")                             \
	X(NO_DRIVER,       1024, "vendor runtime library not found")                         \
	X(DRIVER_TOO_OLD,  1025, "vendor runtime lacks a required entry point")              \
	X(UNSUPPORTED,     1026, "device does not support 64-bit stream memory operations")  \
	X(REGISTER_FAILED, 1027, "vendor runtime refused to register host memory")           \
	X(BAD_JSON,        1028, "request is not a valid JSON object")                       \
	X(UNKNOWN_REQUEST, 1029, "unknown request")                                          \
	X(BAD_ARGUMENT,    1030, "missing or mistyped argument")                             \
	X(ACCESS_DENIED,   1031, "permission denied")                                        \
	X(NO_CLIENT,       1032, "no such client")                                           \
	X(BUSY,            1033, "resource busy")                                            \
	X(CLOSED,          1034, "object closed")                                            \
	X(FALLBACK_REACTOR, 1035, "garudad unreachable: waits run on the in-process reactor")


/* True when code (positive) is a registered garuda code. */
bool garuda_errcode_known(int code);

/* Stable upper-case name of a registered code ("QUOTA"), or NULL. */
const char *garuda_errcode_name(int code);

/* Text for any return value: a negative errno, a negative or positive registry code.
 * Never NULL; unknown values give "unknown error". Thread-safe. */
const char *garuda_strerror(int err);
