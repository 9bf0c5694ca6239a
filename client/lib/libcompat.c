/*
 * libagentlane's platform differences, as daemon/compat.c is the daemon's:
 * close-on-exec descriptors made in one call where the system can, and
 * how a spawned child (ssh) is kept from every descriptor but the three
 * it is given. Nothing else in client/lib has a platform #if for these.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#if !defined(SOCK_CLOEXEC) || !defined(__linux__)
static int
set_cloexec_pair(int fds[2])
{
	for (int i = 0; i < 2; i++) {
		int fl = fcntl(fds[i], F_GETFD);

		if (fl == -1 || fcntl(fds[i], F_SETFD, fl | FD_CLOEXEC) == -1) {
			int saved = errno;

			close(fds[0]);
			close(fds[1]);
			errno = saved;
			return -1;
		}
	}
	return 0;
}
#endif

int
al_compat_socketpair_cloexec(int fds[2])
{
#if defined(SOCK_CLOEXEC)
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
#else
	/*
	 * macOS has no SOCK_CLOEXEC: a fork in another thread between the
	 * two calls could inherit the pair. ssh itself is spawned with
	 * POSIX_SPAWN_CLOEXEC_DEFAULT there, so our own child never does.
	 */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == -1)
		return -1;
	return set_cloexec_pair(fds);
#endif
}

int
al_compat_pipe_cloexec(int fds[2])
{
#if defined(__linux__)
	return pipe2(fds, O_CLOEXEC);
#else
	if (pipe(fds) == -1)
		return -1;
	return set_cloexec_pair(fds);
#endif
}

int
al_compat_spawn_only_stdio(posix_spawn_file_actions_t *fa, short *flags)
{
#if defined(POSIX_SPAWN_CLOEXEC_DEFAULT)
	/* macOS: only what the file actions put on 0-2 is inherited. */
	(void)fa;
	*flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
	return 0;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
	/*
	 * Ours are all close-on-exec already; this closes what the program
	 * using the library left open without it.
	 */
	(void)flags;
	return posix_spawn_file_actions_addclosefrom_np(fa, STDERR_FILENO + 1);
#else
	(void)fa;
	(void)flags;
	return 0;
#endif
}
