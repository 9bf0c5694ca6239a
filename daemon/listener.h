/*
 * The control socket: a per-user directory that must be 0700 and ours
 * (checked with lstat, symlinks refused), a lock so that one daemon serves
 * one socket, a stale socket replaced only after a connect proves nothing
 * listens, bind under umask(0177), and a peer-uid check on every accept.
 */
#ifndef LANED_LISTENER_H
#define LANED_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct laned;

/*
 * Creates (0700) or checks a private directory: it must be a real
 * directory owned by uid with no group or other permission bits.
 */
int listener_private_dir(const char *path, uid_t uid, bool create,
    char *err, size_t errlen);
/* Takes an exclusive non-blocking flock; -1 with EWOULDBLOCK if held. */
int listener_lock(const char *path, char *err, size_t errlen);
/* Sets up d->listen_fd (activated or bound) and starts accepting. */
int listener_start(struct laned *, char *err, size_t errlen);
void listener_stop(struct laned *);

#endif
