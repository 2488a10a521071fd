/* fdio.h — datagrams with at most a few fds each over an AF_UNIX SOCK_SEQPACKET socket
 * (one per call, or several per recvmmsg: fdio_recv_many).
 *
 * Shared by garudad and libgaruda. Receiving never leaks an fd: every fd the kernel
 * passed is either handed to the caller or closed (through fdio_set_closer()'s hook,
 * so that a daemon's event loop never closes a peer's fd itself), including on truncation
 * (MSG_TRUNC/MSG_CTRUNC), which is reported as -EMSGSIZE, or as -EMFILE when the
 * kernel cut the fds short because this process has no fd left. All fds arrive
 * CLOEXEC.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define FDIO_MAX_FDS 4

/* Send len bytes with nfds fds. flags as for sendmsg (MSG_DONTWAIT...); MSG_NOSIGNAL
 * is always added. Returns bytes sent or -errno. */
ssize_t fdio_send(int sock, const void *buf, size_t len, const int *fds, unsigned nfds, int flags);

/* Receive one datagram into buf (cap bytes) and up to max_fds fds into fds.
 * *nfds gets how many fds arrived. Returns its length, 0 on EOF, or -errno:
 * -EMSGSIZE when the datagram or its fds did not fit (all fds closed, *nfds = 0);
 * -EMFILE (likewise) when its fds were cut short because this process is out of fds. */
ssize_t fdio_recv(int sock, void *buf, size_t cap, int *fds, unsigned max_fds, unsigned *nfds,
		  int flags);
/* fdio_recv, and *got = the bytes placed in buf (on -EMSGSIZE too: then the first
 * min(length, cap) bytes of the datagram, so that its header can still be read). */
ssize_t fdio_recv_ex(int sock, void *buf, size_t cap, int *fds, unsigned max_fds, unsigned *nfds,
		     int flags, size_t *got);

/* Several datagrams in one call (recvmmsg): the caller fills buf, cap and max_fds of
 * d[0..n); for each datagram received, n is what fdio_recv_ex would have returned for
 * it (its length, 0 for EOF or an empty datagram, -EMSGSIZE, -EMFILE), got the bytes
 * placed in buf, fds/nfds its fds (all closed on -EMSGSIZE and -EMFILE), sent_ns when its sender sent it
 * (the kernel's SCM_TIMESTAMPNS, CLOCK_REALTIME, on a socket with SO_TIMESTAMPNS set:
 * fdio_stamp_sends(); 0: none). Returns how many came (1..n, at most
 * FDIO_RECV_MANY_MAX), or -errno (-EAGAIN: none, with MSG_DONTWAIT). At EOF every entry
 * after the first reads 0 again: a caller stops at the first 0. No fd of any received
 * datagram is left anywhere but in d. */
#define FDIO_RECV_MANY_MAX 16
struct fdio_dgram {
	void *buf;
	size_t cap;
	unsigned max_fds;
	ssize_t n;
	size_t got;
	int fds[FDIO_MAX_FDS];
	unsigned nfds;
	uint64_t sent_ns;
};
int fdio_recv_many(int sock, struct fdio_dgram *d, unsigned n, int flags);

/* Ask the kernel to stamp every datagram that arrives on sock with the time its sender
 * sent it (SO_TIMESTAMPNS: AF_UNIX stamps it in the sender's sendmsg), for
 * fdio_recv_many()'s sent_ns. 0 or -errno. */
int fdio_stamp_sends(int sock);

/* How long ago, on CLOCK_MONOTONIC, a datagram stamped sent_ns (CLOCK_REALTIME) was sent,
 * as of now_mono: now_mono less its age by the real clock, the age clamped to
 * [0, max_age_ns] (a step of the real clock can only shorten what it says, never put
 * it in the future); now_mono itself for no stamp (0). */
uint64_t fdio_sent_mono_ns(uint64_t sent_ns, uint64_t now_real, uint64_t now_mono, uint64_t max_age_ns);

/* Connect a new AF_UNIX SOCK_SEQPACKET socket (close-on-exec, blocking) to path,
 * without ever blocking in the connect. Returns the fd, or -ENAMETOOLONG (path does
 * not fit sun_path), or connect's -errno (-ENOENT: nothing there; -ECONNREFUSED:
 * nobody listening; -EACCES; -EAGAIN: a listener whose backlog is full, one that has
 * not accepted for a while: stopped, hung or swamped). */
int fdio_connect(const char *path);

/* Close n fds of an array (ignores -1; sets each to -1), with close() itself: for the
 * caller's own fds. The fds a peer sent that the caller does not take go to
 * whatever fdio_set_closer() installed instead (garudad: daemon/closer.h). */
void fdio_close_all(int *fds, unsigned n);

/* How fdio closes the fds a peer sent that nobody took: those of a datagram it
 * refuses (-EMSGSIZE, -EMFILE: take_fds), more than FDIO_MAX_FDS with one datagram,
 * and every fd fdio_discard() reads. Such a close can block for as long as the fd's
 * owner likes (a FUSE file whose server never answers the FLUSH of each close; a TCP
 * socket with SO_LINGER and unsent data: its last close waits up to the linger time),
 * so a daemon hands them to a thread of its own (garudad's closer thread) rather than
 * closing them on its event loop. close_fn takes the fd over (it must close it, now or
 * later, and must not fail); NULL restores the default, close(). Process-wide; set it
 * before the threads that receive start and reset it after they stop (the pointer is
 * read atomically, so a change is safe, only not ordered with a receive in flight).
 * libgaruda never sets it: a client closes what it is sent itself. Receiving makes
 * room for the most fds one datagram can carry (SCM_MAX_FD, 253), so that the kernel
 * never drops the surplus itself, which would close them on the receiving thread
 * (MSG_CTRUNC); it still does when this process is out of fds (-EMFILE). */
void fdio_set_closer(void (*close_fn)(int fd));

/* Read and throw away what sock has received (MSG_DONTWAIT), closing every fd that
 * came with it (through fdio_set_closer()'s hook), until nothing is left. Before
 * closing a socket its peer still sends on (after shutdown(SHUT_RD), so nothing more
 * comes): a socket closed with datagrams unread makes the peer's next read fail with
 * ECONNRESET, ahead of what it had not read yet. */
void fdio_discard(int sock);

/* A memfd of `bytes` bytes sealed against shrink and grow (and further sealing), for a
 * segment: what garudad makes per client and what libgaruda's fallback makes itself,
 * so that a later SEGMENT_ATTACH accepts it. Writable; no exec (MFD_NOEXEC_SEAL where
 * the kernel knows it). Returns the fd (CLOEXEC) or -errno. */
int fdio_sealed_memfd(const char *name, size_t bytes);
