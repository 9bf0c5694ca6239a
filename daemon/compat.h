/*
 * The descriptor, randomness, allocator, durability and spawn facts whose
 * spelling differs between Linux and macOS: platform code only, no policy
 * (what to wipe, which pragmas to set live with the code that decides).
 * Its siblings are peercred.c (peer credentials) and sockact.c (socket
 * activation). Every descriptor the daemon owns is close-on-exec from birth
 * where the platform allows it (Lima's hostagent outlives `limactl start` and
 * would otherwise inherit the registry, the socket or a client connection).
 */
#ifndef LANED_COMPAT_H
#define LANED_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

int compat_pipe_cloexec(int fds[2]);
int compat_socket_cloexec(int domain, int type);
/* accept(2): the new socket is close-on-exec and non-blocking. */
int compat_accept_cloexec(int fd, struct sockaddr *sa, socklen_t *len);
int compat_set_cloexec(int fd);
int compat_set_nonblock(int fd);
/*
 * Asks for a larger pipe buffer where the platform allows it (Linux), so
 * that a stream to or from limactl takes fewer wake-ups. Best effort.
 */
void compat_pipe_grow(int fd, int size);
/* Fills buf from the OS random source; 0 or -1. */
int compat_random(void *buf, size_t len);
/*
 * Marks every descriptor >= lowfd close-on-exec: whatever started the
 * daemon may have leaked some, and they must not reach limactl.
 */
void compat_cloexec_from(int lowfd);
/* Disables SIGPIPE on a socket where the platform supports it per socket. */
void compat_nosigpipe(int fd);
/*
 * 1 when the peer of a stream socket has closed or shut down its writing
 * side, even if unread data is still queued; 0 if not; -1 on error.
 */
int compat_peer_closed(int fd);
/* Bytes queued on a socket for us to read; -1 on error. */
int compat_unread(int fd);
/* The usable size of a block malloc(3) returned (at least what was asked). */
size_t compat_malloc_size(void *);
/*
 * Whether fsync(2) leaves data in the drive's cache, so that only
 * F_FULLFSYNC makes it durable (macOS).
 */
/*
 * Raises the soft RLIMIT_NOFILE towards the hard one (launchd starts
 * agents with a soft limit of 256; macOS caps a process at OPEN_MAX
 * whatever the hard limit says). Returns the soft limit in force after.
 */
unsigned long long compat_nofile_raise(void);
bool compat_fsync_stops_at_cache(void);
/*
 * POSIX_SPAWN_CLOEXEC_DEFAULT where the platform has it (macOS: the child
 * gets no descriptor it was not given), else 0.
 */
int compat_spawn_cloexec_default(void);
/*
 * No core dump of this process, ever: RLIMIT_CORE soft and hard 0
 * (inherited by children), and on Linux PR_SET_DUMPABLE 0, which core
 * collectors behind a piped core_pattern honour too. 0 or -1.
 */
int compat_nocore(void);
/*
 * Raises the soft RLIMIT_MEMLOCK to the hard one, for the secure heap's
 * mlock (secmem.c). Returns the soft limit in force after, in bytes.
 */
unsigned long long compat_memlock_raise(void);

#endif
