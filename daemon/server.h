/* server.h — the daemon's two listening sockets (client and control): open them
 * (or adopt systemd's), accept clients into sessions, close and unlink them at exit.
 * Loop thread only. */
#pragma once

#include <stdint.h>

#include "daemon.h"

int server_open_sockets(struct daemon *d);
void server_close_sockets(struct daemon *d);
/* Log the paths the listening sockets are bound to (under socket activation, the
 * activated sockets', whatever the config says). */
void server_log_listening(const struct daemon *d);
void server_on_client_accept(struct loop_watch *w, void *data, uint32_t events);
/* What garudad says when it cannot take a connection for want of its own fds. */
#define GARUDA_OUT_OF_FDS "garudad is out of file descriptors (raise its LimitNOFILE)"
/* What a listener says to a connection it refuses for want of fds, on fd (CLOEXEC,
 * NONBLOCK), best effort, before server_accept() closes it. */
typedef void server_refuse_fn(struct daemon *d, int fd);
/* accept4 (CLOEXEC, NONBLOCK) that copes with EMFILE/ENFILE through the spare fd: a
 * pending connection is accepted with it and, if the spare cannot be had back beside
 * it, refused after refuse() tells it why. Returns the fd (also when fds came back
 * between the two accepts), or -1 with errno as accept4's (EAGAIN: none pending, also
 * out of fds), or ECONNABORTED when one pending connection was refused (more may be
 * pending: call again). */
int server_accept(struct daemon *d, int listen_fd, server_refuse_fn *refuse);
/* An accept failed with errno other than EAGAIN: warn (rate-limited) and have the loop
 * call w's callback again next iteration (a pending connection is never left waiting
 * for the next one to arrive). */
void server_accept_failed(struct daemon *d, struct loop_watch *w);
