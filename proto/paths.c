/* paths.c — see paths.h. */
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int put(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s%s", a, b);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

#define WHY_PRIVATE GARUDA_SOCKET_WHY_PRIVATE
#define WHY_SYSTEM GARUDA_SOCKET_WHY_SYSTEM

static const char *xdg_runtime_dir(void)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	return x && x[0] == '/' ? x : NULL;
}

int garuda_runtime_dir(char *buf, size_t len)
{
	const char *x = geteuid() != 0 ? xdg_runtime_dir() : NULL;
	if (!x)
		return put(buf, len, GARUDA_SOCKET_DIR, "");
	return put(buf, len, x, "/garuda");
}

int garuda_path_beside(const char *path, const char *name, char *buf, size_t len)
{
	const char *slash = strrchr(path, '/');
	size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
	int n = snprintf(buf, len, "%.*s%s", (int)dir, path, name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int garuda_socket_path(enum garuda_socket_kind kind, char *buf, size_t len, const char **why)
{
	const char *name = kind == GARUDA_SOCKET_CONTROL ? GARUDA_CONTROL_SOCKET_NAME : GARUDA_SOCKET_NAME;
	const char *env = getenv(kind == GARUDA_SOCKET_CONTROL ? "GARUDA_CONTROL_SOCKET" : "GARUDA_SOCKET");
	const char *dummy;
	if (!why)
		why = &dummy;
	if (env && *env) {
		*why = kind == GARUDA_SOCKET_CONTROL ? "$GARUDA_CONTROL_SOCKET" : "$GARUDA_SOCKET";
		return put(buf, len, env, "");
	}
	const char *client = getenv("GARUDA_SOCKET");
	if (kind == GARUDA_SOCKET_CONTROL && client && *client) {
		*why = "beside $GARUDA_SOCKET";
		return garuda_path_beside(client, name, buf, len);
	}
	const char *x = geteuid() != 0 ? xdg_runtime_dir() : NULL;
	if (x) {
		struct stat st;
		int n = snprintf(buf, len, "%s/garuda/%s", x, name);
		if (n >= 0 && (size_t)n < len && stat(buf, &st) == 0) {
			*why = WHY_PRIVATE;
			return 0;
		}
	}
	*why = WHY_SYSTEM;
	return put(buf, len, GARUDA_SOCKET_DIR "/", name);
}

int garuda_socket_path_next(enum garuda_socket_kind kind, const char *first_why, char *buf, size_t len,
			    const char **why)
{
	if (!first_why || strcmp(first_why, WHY_PRIVATE) != 0)
		return -ENOENT;
	if (why)
		*why = "the system default, after your own garudad's socket refused";
	return put(buf, len, GARUDA_SOCKET_DIR "/",
		   kind == GARUDA_SOCKET_CONTROL ? GARUDA_CONTROL_SOCKET_NAME : GARUDA_SOCKET_NAME);
}
