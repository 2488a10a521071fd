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

/* Typed cleanup for a pointer: DEFINE_TRIVIAL_CLEANUP_FUNC(struct foo *, foo_free)
 * defines foo_freep(), which calls foo_free(*p) when *p is not NULL, for
 * `_cleanup_(foo_freep) struct foo *f = ...; ... return TAKE_PTR(f);` */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)          \
	static inline void func##p(type *p)              \
	{                                                \
		if (*p)                                  \
			func(*p);                        \
	}

#define _cleanup_close_ _cleanup_(cleanup_closep)
#define _cleanup_free_ _cleanup_(cleanup_freep)

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
