/* memset_s (C11 Annex K) is declared only when asked for, before any header. */
#if defined(__APPLE__)
#define __STDC_WANT_LIB_EXT1__ 1
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <malloc/malloc.h>
#include <sys/random.h>
#else
#include <malloc.h>
#endif

#include <event2/event.h>

#include "compat.h"

void
compat_wipe(void *p, size_t len)
{
	if (p == NULL || len == 0)
		return;
#if defined(__APPLE__)
	(void)memset_s(p, len, 0, len);
#else
	explicit_bzero(p, len);
#endif
}

static size_t
usable_size(void *p)
{
#if defined(__APPLE__)
	return malloc_size(p);
#else
	return malloc_usable_size(p);
#endif
}

static void *
wipe_malloc(size_t n)
{
	return malloc(n);
}

static void
wipe_free(void *p)
{
	if (p == NULL)
		return;
	compat_wipe(p, usable_size(p));
	free(p);
}

/* Never realloc in place: the old block is wiped before it is let go. */
static void *
wipe_realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (p == NULL)
		return malloc(n);
	if ((q = malloc(n != 0 ? n : 1)) == NULL)
		return NULL;
	old = usable_size(p);
	memcpy(q, p, old < n ? old : n);
	wipe_free(p);
	return q;
}

void
compat_libevent_wipe_on_free(void)
{
	event_set_mem_functions(wipe_malloc, wipe_realloc, wipe_free);
}

const char *
compat_sqlite_pragmas(void)
{
#if defined(__APPLE__)
	/*
	 * fsync() on macOS does not reach the platter; without F_FULLFSYNC,
	 * synchronous=FULL is not power-safe there, for commits or for WAL
	 * checkpoints.
	 */
	return "PRAGMA fullfsync = ON; PRAGMA checkpoint_fullfsync = ON;";
#else
	return "";
#endif
}

int
compat_set_cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);

	if (flags == -1 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) == -1)
		return -1;
	return 0;
}

int
compat_set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags == -1 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
		return -1;
	return 0;
}

int
compat_pipe_cloexec(int fds[2])
{
#if defined(__linux__)
	return pipe2(fds, O_CLOEXEC);
#else
	/*
	 * No pipe2 on macOS. The daemon is single-threaded and spawns with
	 * POSIX_SPAWN_CLOEXEC_DEFAULT, so the window cannot leak.
	 */
	if (pipe(fds) == -1)
		return -1;
	if (compat_set_cloexec(fds[0]) == -1 || compat_set_cloexec(fds[1]) == -1) {
		int saved = errno;
		close(fds[0]);
		close(fds[1]);
		errno = saved;
		return -1;
	}
	return 0;
#endif
}

int
compat_socket_cloexec(int domain, int type)
{
#if defined(SOCK_CLOEXEC)
	return socket(domain, type | SOCK_CLOEXEC, 0);
#else
	int fd = socket(domain, type, 0);

	if (fd != -1 && compat_set_cloexec(fd) == -1) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
#endif
}

int
compat_accept_cloexec(int lfd, struct sockaddr *sa, socklen_t *len)
{
#if defined(__linux__)
	return accept4(lfd, sa, len, SOCK_CLOEXEC);
#else
	int fd = accept(lfd, sa, len);

	if (fd != -1 && compat_set_cloexec(fd) == -1) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
#endif
}

void
compat_pipe_grow(int fd, int size)
{
#if defined(F_SETPIPE_SZ)
	(void)fcntl(fd, F_SETPIPE_SZ, size);
#else
	(void)fd;
	(void)size;
#endif
}

int
compat_random(void *buf, size_t len)
{
	unsigned char *p = buf;

	/* getentropy is limited to 256 bytes per call on both platforms. */
	while (len > 0) {
		size_t n = len > 256 ? 256 : len;
		if (getentropy(p, n) == -1)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

void
compat_nosigpipe(int fd)
{
#if defined(SO_NOSIGPIPE)
	int on = 1;

	(void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
#else
	(void)fd;	/* SIGPIPE is ignored process-wide on Linux. */
#endif
}

void
compat_cloexec_from(int lowfd)
{
#if defined(__linux__)
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (d != NULL) {
		int self = dirfd(d);

		while ((de = readdir(d)) != NULL) {
			char *end;
			long fd = strtol(de->d_name, &end, 10);

			if (*end == '\0' && de->d_name[0] != '\0' &&
			    fd >= lowfd && fd != self)
				(void)compat_set_cloexec((int)fd);
		}
		closedir(d);
		return;
	}
#endif
	/* macOS (and Linux without /proc): walk the descriptor table. */
	for (long fd = lowfd, max = sysconf(_SC_OPEN_MAX); fd < max && fd < 65536;
	    fd++)
		(void)compat_set_cloexec((int)fd);
}
