/* cgroup.h — real cgroup v2 groups for tests of garudad's per-cgroup quota key: find
 * the cgroup2 mount (/proc/self/mountinfo), make a fresh child group under its root,
 * and connect a client from a process inside it.
 *
 * Promises: cg_make() leaves nothing behind when it fails; cg_remove() removes the
 * group (it is empty once the connecting children have exited). cg_open_in() forks a
 * child that moves itself into the group (writes "0" to its cgroup.procs), connects
 * and says HELLO, hands the connected socket back over SCM_RIGHTS and exits: the
 * daemon read the child's /proc/PID/cgroup at accept, before the WELCOME, so the
 * session stays charged to the group while the test drives it. Neither asserts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "rawclient.h"

struct cg_group {
	char dir[256];  /* the group's directory under the cgroup2 mount */
	char path[256]; /* its path as /proc/PID/cgroup's "0::" line says it */
};

/* The cgroup2 mount point (dir) and the path it shows (root, "/" unless the mount is
 * of a subtree): 0, or -errno with why set. */
int cg_mount(char *dir, size_t dcap, char *root, size_t rcap, char *why, size_t wcap);

/* A fresh group "garuda-test-PID-NAME" under the mount's root: 0, or -errno with why
 * (no cgroup2 mount, not writable). */
int cg_make(struct cg_group *g, const char *name, char *why, size_t wcap);
/* rmdir the group; 0 or -errno. Empty g (dir "") is ignored. */
int cg_remove(struct cg_group *g);

/* Connect a client to sock from a child moved into g (see above). The client's
 * welcome is filled in as gd_open() does. *refused says what to expect: false, the
 * child sends HELLO and wants its WELCOME; true, it sends nothing and wants the
 * ERROR{QUOTA} (cookie 0) of a connection refused at accept (a HELLO could meet
 * ECONNRESET); on return *refused says which came, the ERROR's text in text (may be
 * NULL). 0, the child's -errno (moving, connecting, -ETIMEDOUT with no answer,
 * -EPROTO for another answer), or -errno of the hand-over. The socket comes back in
 * both cases. */
int cg_open_in(const struct cg_group *g, const char *sock, struct gd_client *c, bool *refused,
	       char *text, size_t tcap);

/* Our own cgroup v2 path (/proc/self/cgroup's "0::" line), or -errno. */
int cg_self(char *path, size_t cap);
