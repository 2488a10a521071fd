/* session_conn.h — a client's connection, the session module's top layer
 * (session_conn.c): accept and who the peer is, the datagrams in and their dispatch
 * through the request table (session_req.h), the scanners' notices, the re-attach
 * timer. Loop thread; the session object it makes is session.h's.
 *
 * Promises: each datagram is decoded and validated before its handler acts; a
 * protocol violation gets ERROR and a disconnect; a semantic error gets ERROR and the
 * connection carries on; a connection over its quota is refused with ERROR{QUOTA}. */
#pragma once

#include "session.h"

/* A connection accepted on the client socket (fd: CLOEXEC, NONBLOCK; taken in every
 * case). The session is charged to its peer's uid and, where /proc/PID/cgroup gives
 * one (or, with /proc/PID hidden from garudad, the peer's pidfd), its cgroup v2 path
 * (read here, once; quota.h). A connection over
 * quota.uid.connections or quota.cgroup.connections gets ERROR{QUOTA} naming the quota
 * and is closed. */
void session_accept(struct daemon *d, int fd);

/* A connection server_accept() refuses for want of fds (fd: CLOEXEC, NONBLOCK; the
 * caller closes it): ERROR{-EMFILE} with cookie 0 and GARUDA_OUT_OF_FDS (server.h), as when it
 * is refused later for the same reason. */
void session_refuse_out_of_fds(struct daemon *d, int fd);

/* Act on the scanners' notices (DISARM answers, overflows, offenders) and drop the
 * last references they handed back. Loop thread. */
void session_handle_notices(struct daemon *d);

/* The re-attach timer (d->reattach_fd) fired: log each re-attaching session that has
 * been quiet for REATTACH_QUIET_MS (who, segments, eventfd bindings, waits re-armed);
 * re-arm for the rest. Loop thread. */
void session_reattach_tick(struct daemon *d);
