/* cleanup.h — scope-bound cleanup helpers (gcc/clang cleanup attribute) and explicit
 * ownership hand-over. `_cleanup_close_ int fd = ...; return TAKE_FD(fd);` */
#pragma once

#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void cleanup_closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
static inline void cleanup_freep(void *p)
{
	free(*(void **)p);
}

#define _cleanup_close_ _cleanup_(cleanup_closep)
#define _cleanup_free_ _cleanup_(cleanup_freep)

/* DEFINE_CLEANUP(type, fn): fn##p(type **), for _cleanup_(fn##p) on a pointer that fn
 * releases (fn is not called on NULL). E.g. DEFINE_CLEANUP(struct sink, sink_unref)
 * gives sink_unrefp: `_cleanup_(sink_unrefp) struct sink *k = sink_new(...);` and
 * `s->sink = TAKE_PTR(k);` once it is handed over. */
#define DEFINE_CLEANUP(type, fn)                 \
	static inline void fn##p(type **p)       \
	{                                        \
		if (*p)                          \
			fn(*p);                  \
	}

/* Move an fd out of a cleanup-owned variable. */
#define TAKE_FD(fd)                  \
	({                           \
		int take_fd_ = (fd); \
		(fd) = -1;           \
		take_fd_;            \
	})

/* Move a pointer out of a cleanup-owned variable. */
#define TAKE_PTR(p)                          \
	({                                   \
		__typeof__(p) take_ptr_ = (p); \
		(p) = NULL;                  \
		take_ptr_;                   \
	})
