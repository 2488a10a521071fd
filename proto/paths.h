/* paths.h — where garudad listens, and how everyone finds it (the contract's one copy).
 *
 * Promises: one resolver, garuda_socket_path(), used by libgaruda and garctl alike,
 * and garuda_runtime_dir(), the daemon's default directory; so a garudad started
 * with no socket flags is found by a client and garctl started with no settings,
 * whether it runs as root (/run/garuda) or as a user ($XDG_RUNTIME_DIR/garuda).
 * garuda.h's public GARUDA_DEFAULT_SOCKET repeats the system client path for the
 * public API (of proto, the public header includes only the public <garuda/errcodes.h>);
 * libgaruda's client.c checks at compile time that the two agree. libc only. */
#pragma once

#include <stddef.h>

#define GARUDA_SOCKET_DIR "/run/garuda"
#define GARUDA_SOCKET_NAME "garuda.sock"
#define GARUDA_CONTROL_SOCKET_NAME "control.sock"
#define GARUDA_SOCKET_PATH GARUDA_SOCKET_DIR "/" GARUDA_SOCKET_NAME
#define GARUDA_CONTROL_SOCKET_PATH GARUDA_SOCKET_DIR "/" GARUDA_CONTROL_SOCKET_NAME

enum garuda_socket_kind { GARUDA_SOCKET_CLIENT, GARUDA_SOCKET_CONTROL };

/* garudad's default runtime directory: /run/garuda for root; for anyone else
 * $XDG_RUNTIME_DIR/garuda, or /run/garuda when XDG_RUNTIME_DIR is unset or not
 * absolute. Writes it into buf; returns 0 or -ENAMETOOLONG. */
int garuda_runtime_dir(char *buf, size_t len);

/* Where a client (kind CLIENT) or garctl (kind CONTROL) finds garudad, first match:
 *  1. $GARUDA_SOCKET (client) / $GARUDA_CONTROL_SOCKET (control), when set and non-empty;
 *  2. control only: control.sock beside $GARUDA_SOCKET, when that is set;
 *  3. not root: $XDG_RUNTIME_DIR/garuda/NAME when that file exists (the user's own
 *     garudad, started without flags);
 *  4. /run/garuda/NAME (the system garudad).
 * *why (may be NULL) gets a static phrase naming the rule that chose it, for error
 * messages ("$GARUDA_SOCKET", GARUDA_SOCKET_WHY_SYSTEM...). Returns 0 or -ENAMETOOLONG.
 * The search order is written here once; README.md, docs/python.md, garudad(8) and
 * garctl(1) repeat it. */
#define GARUDA_SOCKET_WHY_PRIVATE "your own garudad in $XDG_RUNTIME_DIR/garuda" /* rule 3 */
#define GARUDA_SOCKET_WHY_SYSTEM "the system default"                          /* rule 4 */
int garuda_socket_path(enum garuda_socket_kind kind, char *buf, size_t len, const char **why);

/* The next place to try when the connect to the one garuda_socket_path() chose
 * (rule 3, the user's own socket) finds nobody listening (ECONNREFUSED, ENOENT: a
 * killed garudad left its socket behind): rule 4's, the system garudad. Returns 0
 * with it in buf (and *why), or -ENOENT when there is no next place (the first choice
 * came from the environment, or was already rule 4). */
int garuda_socket_path_next(enum garuda_socket_kind kind, const char *first_why, char *buf, size_t len,
			    const char **why);

/* The path of NAME in the directory of PATH ("/a/b.sock", "c.sock" -> "/a/c.sock").
 * Returns 0 or -ENAMETOOLONG. */
int garuda_path_beside(const char *path, const char *name, char *buf, size_t len);
