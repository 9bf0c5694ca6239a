#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <spawn.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <poll.h>
#include <sys/prctl.h>
#else
#include <sys/event.h>
#endif
#if defined(__APPLE__)
#include <malloc/malloc.h>
#include <sys/random.h>
#else
#include <malloc.h>
#endif

#include "compat.h"

size_t
compat_malloc_size(void *p)
{
#if defined(__APPLE__)
	return malloc_size(p);
#else
	return malloc_usable_size(p);
#endif
}

bool
compat_fsync_stops_at_cache(void)
{
#if defined(__APPLE__)
	/* fsync() on macOS does not reach the platter; F_FULLFSYNC does. */
	return true;
#else
	return false;
#endif
}

int
compat_spawn_cloexec_default(void)
{
#if defined(POSIX_SPAWN_CLOEXEC_DEFAULT)
	return POSIX_SPAWN_CLOEXEC_DEFAULT;
#else
	return 0;
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

	if (flags == -1)
		return -1;
	/* Accepted sockets already are (compat_accept_cloexec): one call. */
	if ((flags & O_NONBLOCK) == 0 &&
	    fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
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
	/* Non-blocking from the start: every connection is made so anyway. */
	return accept4(lfd, sa, len, SOCK_CLOEXEC | SOCK_NONBLOCK);
#else
	int fd = accept(lfd, sa, len);

	if (fd != -1 && (compat_set_cloexec(fd) == -1 ||
	    compat_set_nonblock(fd) == -1)) {
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

/*
 * Whether the peer of a stream socket has closed (or shut down its writing
 * side), even with unread data still queued: the data comes first in the
 * stream, so a read would not tell. Linux says so with POLLRDHUP; on the
 * BSDs and macOS a kqueue read filter raises EV_EOF. 1, 0 or -1.
 */
int
compat_peer_closed(int fd)
{
#if defined(__linux__)
	struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLRDHUP };

	if (poll(&pfd, 1, 0) == -1)
		return -1;
	return (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
#else
	struct kevent kev, out;
	struct timespec zero = { 0, 0 };
	int kq, n, saved;

	/* A kqueue is not inherited across fork: no close-on-exec needed. */
	if ((kq = kqueue()) == -1)
		return -1;
	EV_SET(&kev, fd, EVFILT_READ, EV_ADD, 0, 0, NULL);
	n = kevent(kq, &kev, 1, &out, 1, &zero);
	saved = errno;
	(void)close(kq);
	if (n == -1) {
		errno = saved;
		return -1;
	}
	return n == 1 && (out.flags & (EV_EOF | EV_ERROR)) != 0;
#endif
}

int
compat_unread(int fd)
{
	int n;

	/* FIONREAD: the same ioctl on Linux and macOS sockets. */
	if (ioctl(fd, FIONREAD, &n) == -1)
		return -1;
	return n;
}

unsigned long long
compat_nofile_raise(void)
{
	struct rlimit rl;
	rlim_t want;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return 0;
	want = rl.rlim_max;
#if defined(__APPLE__)
	/* setrlimit refuses more than OPEN_MAX here, RLIM_INFINITY included. */
	if (want == RLIM_INFINITY || want > OPEN_MAX)
		want = OPEN_MAX;
#endif
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		struct rlimit nl = { want, rl.rlim_max };
		if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
			rl.rlim_cur = want;
	}
	return rl.rlim_cur == RLIM_INFINITY ? ULLONG_MAX :
	    (unsigned long long)rl.rlim_cur;
}

int
compat_nocore(void)
{
	struct rlimit rl = { 0, 0 };

	/* Hard limit too: nothing the daemon runs can raise it again. */
	if (setrlimit(RLIMIT_CORE, &rl) == -1)
		return -1;
#if defined(__linux__)
	/*
	 * A core_pattern that pipes to a collector (systemd-coredump, apport)
	 * ignores RLIMIT_CORE; it honours this. It also makes /proc/PID/mem
	 * and ptrace by the same uid refuse.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return -1;
#endif
	return 0;
}

unsigned long long
compat_memlock_raise(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == -1)
		return 0;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < rl.rlim_max) {
		struct rlimit nl = { rl.rlim_max, rl.rlim_max };
		if (setrlimit(RLIMIT_MEMLOCK, &nl) == 0)
			rl.rlim_cur = rl.rlim_max;
	}
	return rl.rlim_cur == RLIM_INFINITY ? ULLONG_MAX :
	    (unsigned long long)rl.rlim_cur;
}
