/* server.c — garudad's listening sockets: inherited through socket activation
 * (sd_listen_fds_with_names, matched by name "client"/"control", else by order;
 * unknown fds closed), or created here: AF_UNIX SOCK_SEQPACKET, client socket 0660
 * with group socket_group, control socket 0600 (or 0660 with control_read_group, else
 * control_group).
 * One garudad per socket path: before it creates a socket, garudad takes an flock on
 * "<client socket path>.lock" (mode 0600, holds the holder's pid) and keeps it for its
 * life; a second garudad is refused there. A clean exit unlinks the file while still
 * holding the lock, so a locker re-checks after its flock that the path still names
 * the file it locked (else it opens the new one: two lockers of two inodes would both
 * win). The lock, not a connect() probe, decides
 * whether a socket file is stale: a killed garudad's io_uring can keep its listening
 * socket accepting for a few milliseconds after the process is gone, and a probe then
 * refused the restart. Under the lock, a socket file is replaced when nothing accepts
 * on it or when the process that listens there is the previous lock holder (a dying
 * garudad); a socket some other process listens on (a systemd socket unit), a symlink
 * or any other file at the path is refused. A held lock is retried for up to 2 s only
 * while its holder is dying (a SIGKILLed garudad holds it until the kernel has torn
 * the process down; holder_dying()); a running holder is refused at once. A fully
 * socket-activated garudad takes no lock: its manager runs one instance. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdio.h"
#include "log.h"
#include "paths.h"
#include "server.h"
#include "service.h"
#include "session_conn.h"

static int mkdir_parents(const char *path)
{
	char buf[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static void fill_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "%s", path);
}

/* The pid of the process that listens at path (SO_PEERCRED of a connection: the
 * listener's, from its listen()), 0 when nothing accepts there. */
static pid_t socket_listener(const char *path)
{
	_cleanup_close_ int fd = fdio_connect(path);
	struct ucred uc = { 0 };
	socklen_t len = sizeof(uc);
	if (fd == -EAGAIN)
		return -1; /* a listener whose backlog is full (stopped or hung): still there */
	if (fd < 0)
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.pid <= 0)
		return -1; /* someone accepts; who is unknown */
	return uc.pid;
}

/* What to say after a runtime directory, socket or lock file garudad may not create
 * (EACCES, EPERM, EROFS at path); "" for any other error. A user's garudad listens in
 * $XDG_RUNTIME_DIR/garuda; where XDG_RUNTIME_DIR is unset (sudo -u, su, cron) its
 * default is root's /run/garuda, which a user cannot write: say so, and how to choose.
 * The lock is the first file created, so its failure is where this is usually said. */
static const char *rundir_hint(const char *path, int err)
{
	if (err != -EACCES && err != -EPERM && err != -EROFS)
		return "";
	if (geteuid() == 0)
		return "; choose a directory you can write with --runtime-dir=DIR (or --socket=PATH "
		       "and --control-socket=PATH); see garudad(8)";
	const char *x = getenv("XDG_RUNTIME_DIR");
	char def[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool no_xdg = !x || x[0] != '/';
	size_t n = no_xdg && garuda_runtime_dir(def, sizeof(def)) == 0 ? strlen(def) : 0;
	if (n && strncmp(path, def, n) == 0 && path[n] == '/') /* in the default directory */
		return "; XDG_RUNTIME_DIR is not set to an absolute path (sudo -u, su and cron do "
		       "not set it), so this "
		       "user's garudad tried the system directory " GARUDA_SOCKET_DIR ": start it with "
		       "--runtime-dir=DIR, a directory you can write (or --socket=PATH and "
		       "--control-socket=PATH), or set XDG_RUNTIME_DIR; see garudad(8)";
	return "; choose a directory you can write with --runtime-dir=DIR (or --socket=PATH and "
	       "--control-socket=PATH; without them a user's garudad listens in "
	       "$XDG_RUNTIME_DIR/garuda); see garudad(8)";
}

#define LOCK_WAIT_MS 2000u
#define LOCK_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) + 8)

static void lock_path(const struct daemon *d, char path[LOCK_PATH_MAX])
{
	snprintf(path, LOCK_PATH_MAX, "%s.lock", d->cfg.socket_path);
}

/* whether path names the file open at fd */
static bool names_file(const char *path, int fd)
{
	struct stat held, named;
	return fstat(fd, &held) == 0 && lstat(path, &named) == 0 && held.st_dev == named.st_dev &&
	       held.st_ino == named.st_ino;
}

/* Is the lock's holder (the pid it recorded) on its way out, so that the lock is
 * worth waiting for? Gone from /proc (torn down, or not in our pid namespace:
 * unknown, so wait), a zombie, or exiting (PF_EXITING in /proc/PID/stat's flags: a
 * SIGKILLed garudad whose files the kernel has not released yet). A holder that
 * runs is not waited for. */
/* A SIGKILL sent to pid and not yet acted on: kill(2) returns once the signal is
 * pending (every thread's SigPnd, or the group's ShdPnd), and the process shows
 * PF_EXITING only when one of its threads runs again. A restart started right after
 * `kill -KILL` must see that holder as dying, not running. */
static bool kill_pending(pid_t pid)
{
	char path[40], text[2048];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* gone */
	ssize_t n = read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return true;
	text[n] = '\0';
	static const char *const keys[] = { "\nSigPnd:", "\nShdPnd:" };
	for (unsigned i = 0; i < 2; i++) {
		const char *k = strstr(text, keys[i]);
		unsigned long long mask;
		if (k && sscanf(k + strlen(keys[i]), " %llx", &mask) == 1 &&
		    mask & (1ull << (SIGKILL - 1)))
			return true;
	}
	return false;
}

static bool holder_dying(pid_t pid)
{
	if (pid <= 0)
		return true; /* no pid recorded yet: a holder between flock and write */
	char path[40], text[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return true;
	text[n] = '\0';
	const char *p = strrchr(text, ')'); /* comm may hold spaces and parentheses */
	char state;
	unsigned long long flags;
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %llu", &state, &flags) != 2)
		return true;
	if (state == 'Z' || state == 'X' || state == 'x' || (flags & 0x4 /* PF_EXITING */))
		return true;
	return kill_pending(pid);
}

/* Take the single-instance lock (see the head comment); *prev gets the pid the
 * previous holder recorded (0: none). */
static int lock_instance(struct daemon *d, pid_t *prev)
{
	char path[LOCK_PATH_MAX], buf[24] = "";
	lock_path(d, path);
	int r = mkdir_parents(path);
	if (r < 0) {
		log_err("lock file %s: cannot create its directory: %s%s", path, strerror(-r),
			rundir_hint(path, r));
		return r;
	}
	_cleanup_close_ int fd = -1;
	/* a garudad that was just killed holds the lock until the kernel has torn it
	 * down (tens of milliseconds for a large one): a restart started at once waits
	 * for that, at most LOCK_WAIT_MS */
	for (unsigned waited = 0;; waited += 10) {
		if (fd < 0)
			fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
		if (fd < 0) {
			r = -errno;
			log_err("lock file %s: %s%s", path, strerror(-r), rundir_hint(path, r));
			return r;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (names_file(path, fd))
				break;
			/* its holder unlinked it as it exited: lock the file the path names now
			 * (a path that keeps changing counts against the wait) */
			close(TAKE_FD(fd));
			if (waited >= LOCK_WAIT_MS) {
				log_err("lock file %s keeps being replaced; giving up", path);
				return -EBUSY;
			}
			continue;
		}
		r = -errno;
		if (r != -EWOULDBLOCK) {
			log_err("lock file %s: flock: %s", path, strerror(-r));
			return r;
		}
		if (!names_file(path, fd)) {
			/* its holder is exiting cleanly (it unlinks the file first): the
			 * file the path names now, if any, is the one to lock */
			close(TAKE_FD(fd));
			if (waited >= LOCK_WAIT_MS) {
				log_err("lock file %s keeps being replaced; giving up", path);
				return -EBUSY;
			}
			usleep(10 * 1000);
			continue;
		}
		ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		pid_t holder = (pid_t)atoi(buf);
		bool dying = holder_dying(holder);
		if (!dying || waited >= LOCK_WAIT_MS) {
			if (dying)
				log_err("another garudad (pid %d) holds %s and has not finished exiting after "
					"%u ms: one garudad per socket path", (int)holder, path, LOCK_WAIT_MS);
			else
				log_err("another garudad (pid %d) holds %s and is running: one garudad per "
					"socket path (stop it first, or give this one other sockets: "
					"--runtime-dir=DIR or --socket=PATH)", (int)holder, path);
			return -EADDRINUSE;
		}
		if (waited == 0)
			log_info("garudad pid %d holds %s and is exiting: waiting up to %u ms for it", (int)holder,
				 path, LOCK_WAIT_MS);
		usleep(10 * 1000);
	}
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	*prev = (pid_t)atoi(buf);
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warning("lock file %s: cannot record our pid: %s", path, strerror(errno));
	d->lock_fd = TAKE_FD(fd);
	return 0;
}

static int make_socket(struct daemon *d, const char *path, mode_t mode, const char *group,
		       const char *what, pid_t prev)
{
	struct sockaddr_un a;
	struct stat st;
	int r = mkdir_parents(path);
	if (r < 0) {
		log_err("%s socket %s: cannot create its directory: %s%s", what, path, strerror(-r),
			rundir_hint(path, r));
		return r;
	}
	if (lstat(path, &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			log_err("%s socket %s is a symlink; refusing to use it", what, path);
			return -ELOOP;
		}
		if (!S_ISSOCK(st.st_mode)) {
			log_err("%s socket %s exists and is not a socket; refusing to replace it", what, path);
			return -EEXIST;
		}
		pid_t l = socket_listener(path);
		if (l != 0 && l != prev) {
			log_err("%s socket %s: another process (pid %d) listens there; refusing to replace it",
				what, path, (int)l);
			return -EADDRINUSE;
		}
		unlink(path); /* stale, or the dying previous garudad's */
	}
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	fill_addr(&a, path);
	mode_t old = umask(0177);
	r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old);
	if (r < 0) {
		r = -errno;
		log_err("%s socket %s: bind: %s%s", what, path, strerror(-r), rundir_hint(path, r));
		return r;
	}
	/* listening before the group lookup and the chmod: a connect that finds the path
	 * while NSS answers waits in the backlog instead of failing with ECONNREFUSED
	 * (the mode is 0600 until the chmod, so only our own uid gets that far) */
	if (listen(fd, 128) < 0)
		return -errno;
	if (group && *group) {
		unsigned gid;
		bool numeric = config_numeric_gid(group, &gid); /* socket_group "2046": no lookup */
		struct group *g = numeric ? NULL : getgrnam(group);
		if (g || numeric) {
			/* never through a symlink: one renamed over the socket after the bind
			 * (a directory others can write) would hand its target to the group */
			int cr = fchownat(AT_FDCWD, path, (uid_t)-1, numeric ? (gid_t)gid : g->gr_gid,
					  AT_SYMLINK_NOFOLLOW) < 0 ? errno : 0;
			if (cr == EPERM && geteuid() != 0)
				log_notice("%s socket %s: you are not in group %s, so the socket keeps your own "
					   "group", what, path, group);
			else if (cr)
				log_warning("%s socket %s: chown to group %s: %s", what, path, group, strerror(cr));
		} else if (geteuid() == 0) {
			service_warn(d, "%s socket %s: group %s does not exist; only root can connect "
				     "(create the group, or set the config key %s)", what, path, group,
				     strcmp(what, "client") == 0 ? "socket_group" : "control_group or control_read_group");
		} else {
			log_notice("%s socket %s: group %s does not exist; only the daemon's own user (uid %u) "
				   "and root can connect", what, path, group, (unsigned)geteuid());
		}
	}
	if (fchmodat(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW) < 0) /* a symlink: EOPNOTSUPP */
		log_warning("%s socket %s: chmod: %s", what, path, strerror(errno));
	return TAKE_FD(fd);
}

static int adopt(int fd, const char *what)
{
	if (sd_is_socket(fd, AF_UNIX, SOCK_SEQPACKET, 1) <= 0) {
		log_err("activated fd %d (%s) is not a listening AF_UNIX SOCK_SEQPACKET socket; closing it",
			fd, what);
		close(fd);
		return -EINVAL;
	}
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	return fd;
}

/* The path a listening socket is bound to (an activated one's is systemd's, not the
 * config's), or "?" */
static void bound_path(int fd, char *out, size_t cap)
{
	struct sockaddr_un a;
	socklen_t len = sizeof(a);
	snprintf(out, cap, "?");
	if (fd < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0 || a.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path))
		return;
	size_t n = len - offsetof(struct sockaddr_un, sun_path);
	if (a.sun_path[0] == '\0') /* abstract: shown as @name */
		snprintf(out, cap, "@%.*s", (int)(n > 1 ? n - 1 : 0), a.sun_path + 1);
	else
		snprintf(out, cap, "%.*s", (int)strnlen(a.sun_path, n), a.sun_path);
}

void server_log_listening(const struct daemon *d)
{
	char client[sizeof(((struct sockaddr_un *)0)->sun_path) + 2];
	char control[sizeof(client)];
	bound_path(d->client_fd, client, sizeof(client));
	bound_path(d->control_fd, control, sizeof(control));
	log_info("listening on %s (control %s)", client, d->control_fd >= 0 ? control : "none");
}

/* Serving clients without a control socket: say why, and what that leaves out. 0. */
static int no_control_socket(int err)
{
	log_warning("socket activation passed no control socket and garudad cannot make its own "
		    "(%s): serving clients without one; garctl, systemctl reload and the metrics "
		    "cannot reach garudad (start garuda-control.socket, then restart garuda.service)",
		    strerror(-err));
	return 0;
}

int server_open_sockets(struct daemon *d)
{
	char **names = NULL;
	d->client_fd = d->control_fd = -1;
	int n = sd_listen_fds_with_names(1, &names);
	if (n < 0)
		log_warning("socket activation: %s", strerror(-n));
	int unnamed = 0;
	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names && names[i] ? names[i] : "unknown";
		bool is_client = strcmp(name, "client") == 0 ||
				 (strcmp(name, "unknown") == 0 && unnamed == 0 && d->client_fd < 0);
		bool is_control = strcmp(name, "control") == 0 ||
				  (strcmp(name, "unknown") == 0 && !is_client && unnamed == 1);
		if (strcmp(name, "unknown") == 0)
			unnamed++;
		if (is_client && d->client_fd < 0)
			d->client_fd = adopt(fd, "client");
		else if (is_control && d->control_fd < 0)
			d->control_fd = adopt(fd, "control");
		else {
			log_warning("socket activation: closing unexpected fd %d named \"%s\"", fd, name);
			close(fd);
		}
	}
	if (names) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	if (d->client_fd < 0 && n > 0) {
		log_err("socket activation passed no usable client socket");
		return -EINVAL;
	}
	/* activated with a client socket and no control socket (garuda-control.socket
	 * masked or stopped): garudad makes its own, and where it cannot (the service's
	 * user may not write /run/garuda) it serves its clients without one rather than
	 * not at all */
	bool control_optional = n > 0 && d->client_fd >= 0 && d->control_fd < 0;
	pid_t prev = 0;
	if (d->client_fd < 0 || d->control_fd < 0) {
		int r = lock_instance(d, &prev);
		if (r < 0 && control_optional)
			return no_control_socket(r);
		if (r < 0)
			return r;
	}
	if (d->client_fd < 0) {
		d->client_fd = make_socket(d, d->cfg.socket_path, 0660, d->cfg.socket_group, "client", prev);
		if (d->client_fd < 0)
			return d->client_fd;
		d->client_owned = true;
	}
	if (d->control_fd < 0) {
		/* the wider group reaches the socket: the read-only one where there is one
		 * (its admins must be in it too, or be root); garudad tells the tiers apart */
		const char *grp = d->cfg.control_read_group;
		if (!grp || !*grp)
			grp = d->cfg.control_group && *d->cfg.control_group ? d->cfg.control_group : NULL;
		int fd = make_socket(d, d->cfg.control_socket_path, grp ? 0660 : 0600, grp, "control", prev);
		if (fd < 0 && control_optional)
			return no_control_socket(fd);
		if (fd < 0)
			return fd;
		d->control_fd = fd;
		d->control_owned = true;
	}
	return 0;
}

void server_close_sockets(struct daemon *d)
{
	if (d->client_fd >= 0)
		close(d->client_fd);
	if (d->control_fd >= 0)
		close(d->control_fd);
	if (d->client_owned)
		unlink(d->cfg.socket_path);
	if (d->control_owned)
		unlink(d->cfg.control_socket_path);
	if (d->lock_fd >= 0) {
		/* after the socket unlinks (the next garudad finds no socket of ours), and
		 * while still held (a waiting locker re-checks the path: see the head) */
		char path[LOCK_PATH_MAX];
		lock_path(d, path);
		if (names_file(path, d->lock_fd)) /* never another holder's file */
			unlink(path);
		close(d->lock_fd);
	}
	d->client_fd = d->control_fd = d->lock_fd = -1;
}

void server_accept_failed(struct daemon *d, struct loop_watch *w)
{
	log_client(LOG_UID_NONE, LOG_WARNING, "accept: %s; trying again", strerror(errno));
	loop_again(d->loop, w);
}

int server_accept(struct daemon *d, int listen_fd, server_refuse_fn *refuse)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd >= 0 || (errno != EMFILE && errno != ENFILE) || d->spare_fd < 0)
		return fd;
	/* Out of fds (accept4 fails so whether or not a connection is pending): a
	 * pending one would keep the listener readable and the loop spinning. Spend the
	 * spare fd to accept it, then take the spare back. */
	int e = errno;
	close(d->spare_fd);
	int victim = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	int ve = errno;
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (victim < 0) {
		/* EAGAIN: none pending, drained; else the first failure stands */
		errno = ve == EAGAIN || ve == EWOULDBLOCK ? ve : e;
		return -1;
	}
	/* The spare back beside the victim: fds came back between the two accepts
	 * (LimitNOFILE raised, a session closed), and it is taken as any other. */
	if (d->spare_fd >= 0)
		return victim;
	log_client(LOG_UID_NONE, LOG_WARNING,
		   "accept: %s; refusing a connection (raise LimitNOFILE, or lower quota.uid.connections)",
		   strerror(e));
	refuse(d, victim);
	close(victim);
	d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	/* ECONNABORTED: one pending connection was refused, more may be waiting (the
	 * io_uring loop's multishot poll will not report them again): go on accepting */
	errno = ECONNABORTED;
	return -1;
}

void server_on_client_accept(struct loop_watch *w, void *data, uint32_t events)
{
	struct daemon *d = data;
	(void)events;
	for (int i = 0; i < 64; i++) {
		int fd = server_accept(d, d->client_fd, session_refuse_out_of_fds);
		if (fd < 0 && errno == ECONNABORTED)
			continue; /* refused one for want of fds: the next may fit */
		if (fd < 0) {
			/* EAGAIN: drained. Any other error (ENOMEM, ENOBUFS, an LSM's EPERM,
			 * out of fds with no spare) may leave connections waiting, and the
			 * io_uring loop's multishot poll reports a listener that stays
			 * readable only once: look again next iteration, as epoll would */
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				server_accept_failed(d, w);
			return;
		}
		session_accept(d, fd);
	}
	loop_again(d->loop, w);
}
