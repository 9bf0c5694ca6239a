/*
 * The descriptor, randomness, memory-wiping and durability calls whose
 * spelling differs between Linux and macOS. Every descriptor the daemon owns is close-on-exec from birth
 * where the platform allows it (Lima's hostagent outlives `limactl start` and
 * would otherwise inherit the registry, the socket or a client connection).
 */
#ifndef LANED_COMPAT_H
#define LANED_COMPAT_H

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
/*
 * Makes libevent wipe every block it frees (call before any libevent
 * allocation): its buffers held client frames and guest-bound frames, and
 * reading a frame across buffer chains leaves copies in chains freed
 * inside libevent.
 */
void compat_libevent_wipe_on_free(void);
/*
 * Raises the soft RLIMIT_NOFILE towards the hard one (launchd starts
 * agents with a soft limit of 256; macOS caps a process at OPEN_MAX
 * whatever the hard limit says). Returns the soft limit in force after.
 */
unsigned long long compat_nofile_raise(void);
/* SQLite pragmas the platform needs for durable commits ("" for none). */
const char *compat_sqlite_pragmas(void);

#endif
