/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scope-bound cleanup for plain C resources (after systemd and crun).
 * Ownership is handed over with TAKE_FD()/TAKE_PTR(), which leave the
 * variable empty so the cleanup does nothing.
 */
#ifndef RDMANS_CLEANUP_H
#define RDMANS_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>
#include <errno.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(rn_freep)
#define _cleanup_close_ _cleanup_(rn_closep)
#define _cleanup_fclose_ _cleanup_(rn_fclosep)
#define _cleanup_closedir_ _cleanup_(rn_closedirp)

static inline void rn_freep(void *p)
{
	free(*(void **)p);
}

static inline void rn_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		(void)close(*fd);
		errno = saved;
	}
}

static inline void rn_fclosep(FILE **f)
{
	if (*f)
		(void)fclose(*f);
}

static inline void rn_closedirp(DIR **d)
{
	if (*d)
		(void)closedir(*d);
}

/*
 * Defines funcp(type *p), calling func(*p) when *p is set: the cleanup for a
 * pointer that func frees, closes or puts (systemd's
 * DEFINE_TRIVIAL_CLEANUP_FUNC). Use it with _cleanup_(funcp).
 */
#define RN_DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                 \
	static inline void func##p(type *p)                                                        \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _fd_ = (fd);                                                                   \
		(fd) = -1;                                                                         \
		_fd_;                                                                              \
	})

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _p_ = (p);                                                           \
		(p) = NULL;                                                                        \
		_p_;                                                                               \
	})

#define RN_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
