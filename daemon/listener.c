#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "compat.h"
#include "conn.h"
#include "laned.h"
#include "listener.h"
#include "log.h"
#include "peercred.h"
#include "sockact.h"
#include "util.h"

int
listener_private_dir(const char *path, uid_t uid, bool create, char *err,
    size_t errlen)
{
	struct stat sb;

	if (create && mkdir(path, 0700) == -1 && errno != EEXIST) {
		snprintf(err, errlen, "mkdir %s: %s", path, strerror(errno));
		return -1;
	}
	if (lstat(path, &sb) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(sb.st_mode)) {
		snprintf(err, errlen, "%s is not a directory%s", path,
		    S_ISLNK(sb.st_mode) ? " (symbolic links are refused)" : "");
		return -1;
	}
	if (sb.st_uid != uid || (sb.st_mode & 077) != 0) {
		snprintf(err, errlen, "directory %s has unsafe permissions "
		    "(owner uid %ld, mode %03o; expected uid %ld, mode 700)",
		    path, (long)sb.st_uid, (unsigned)(sb.st_mode & 0777),
		    (long)uid);
		return -1;
	}
	return 0;
}

int
listener_lock(const char *path, char *err, size_t errlen)
{
	char pidbuf[32], held[32];
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0600)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		int saved = errno;

		n = pread(fd, held, sizeof held - 1, 0);
		held[n > 0 ? n : 0] = '\0';
		held[strcspn(held, "\n")] = '\0';
		if (saved == EWOULDBLOCK)
			snprintf(err, errlen, "another agent-laned%s%s%s holds "
			    "%s", held[0] ? " (pid " : "", held,
			    held[0] ? ")" : "", path);
		else
			snprintf(err, errlen, "flock %s: %s", path,
			    strerror(saved));
		close(fd);
		errno = saved;
		return -1;
	}
	snprintf(pidbuf, sizeof pidbuf, "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == -1 ||
	    pwrite(fd, pidbuf, strlen(pidbuf), 0) != (ssize_t)strlen(pidbuf))
		log_warn("writing pid to %s", path);
	return fd;
}

static int
socket_addr(const char *path, struct sockaddr_un *sun, char *err,
    size_t errlen)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun->sun_path) {
		snprintf(err, errlen, "socket path %s is %zu bytes; this system "
		    "allows at most %zu", path, strlen(path),
		    sizeof sun->sun_path - 1);
		errno = ENAMETOOLONG;
		return -1;
	}
	str_copy(sun->sun_path, path, sizeof sun->sun_path);
	return 0;
}

/*
 * A socket file left by a daemon that died. It is replaced only when a
 * connect fails with ECONNREFUSED; anything that answers is a live daemon.
 */
static int
socket_clear_stale(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	struct stat sb;
	int fd, rc;

	if (lstat(path, &sb) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(sb.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket; "
		    "refusing to replace it", path);
		return -1;
	}
	if (socket_addr(path, &sun, err, errlen) == -1)
		return -1;
	if ((fd = compat_socket_cloexec(AF_UNIX, SOCK_STREAM)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	rc = connect(fd, (struct sockaddr *)&sun, sizeof sun);
	close(fd);
	if (rc == 0) {
		snprintf(err, errlen, "another daemon is listening on %s", path);
		return -1;
	}
	if (errno != ECONNREFUSED) {
		snprintf(err, errlen, "probing %s: %s", path, strerror(errno));
		return -1;
	}
	log_info("replacing stale socket %s", path);
	if (unlink(path) == -1 && errno != ENOENT) {
		snprintf(err, errlen, "unlink %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int
socket_bind(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	mode_t old;
	int fd;

	if (socket_addr(path, &sun, err, errlen) == -1)
		return -1;
	if ((fd = compat_socket_cloexec(AF_UNIX, SOCK_STREAM)) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		snprintf(err, errlen, "bind %s: %s", path, strerror(errno));
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	if (listen(fd, 64) == -1) {
		snprintf(err, errlen, "listen %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

static void accept_cb(evutil_socket_t, short, void *);

static void
accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct laned *d = arg;

	if (event_add(d->listen_ev, NULL) != 0)
		fatalx("event_add");
}

static void
accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	struct laned *d = arg;
	uid_t uid;
	int fd;

	for (;;) {
		fd = compat_accept_cloexec(lfd, NULL, NULL);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EMFILE || errno == ENFILE) {
				/* Out of descriptors: stop accepting for 1 s. */
				struct timeval tv = { 1, 0 };

				log_warn("accept");
				event_del(d->listen_ev);
				if (evtimer_add(d->accept_pause, &tv) != 0)
					fatalx("evtimer_add");
				return;
			}
			log_warn("accept");
			return;
		}
		if (peercred_uid(fd, &uid) == -1) {
			log_warn("connection refused: cannot read peer "
			    "credentials");
			close(fd);
			continue;
		}
		if (uid != d->uid) {
			log_warnx("connection refused: peer uid %ld is not "
			    "the daemon's uid %ld", (long)uid, (long)d->uid);
			close(fd);
			continue;
		}
		conn_accept(d, fd, uid);
	}
}

int
listener_start(struct laned *d, char *err, size_t errlen)
{
	char lockpath[PATH_MAX], dir[PATH_MAX], *slash;
	struct sockaddr_un sun;
	int fd;

	if (socket_addr(d->cfg.socket_path, &sun, err, errlen) == -1)
		return -1;
	str_copy(dir, d->cfg.socket_path, sizeof dir);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir) {
		snprintf(err, errlen, "socket path %s must be absolute and "
		    "inside a private directory", d->cfg.socket_path);
		return -1;
	}
	*slash = '\0';
	if (listener_private_dir(dir, d->uid, true, err, errlen) == -1)
		return -1;
	snprintf(lockpath, sizeof lockpath, "%s.lock", d->cfg.socket_path);
	if ((d->socket_lock_fd = listener_lock(lockpath, err, errlen)) == -1)
		return -1;

	fd = sockact_listen_fd(err, errlen);
	if (fd == -2)
		return -1;
	if (fd >= 0) {
		d->listen_activated = true;
		log_info("listening on an activated socket (%s)",
		    d->cfg.socket_path);
	} else {
		if (socket_clear_stale(d->cfg.socket_path, err, errlen) == -1)
			return -1;
		if ((fd = socket_bind(d->cfg.socket_path, err, errlen)) == -1)
			return -1;
		log_info("listening on %s", d->cfg.socket_path);
	}
	if (compat_set_nonblock(fd) == -1) {
		snprintf(err, errlen, "fcntl: %s", strerror(errno));
		close(fd);
		return -1;
	}
	d->listen_fd = fd;
	d->listen_ev = event_new(d->base, fd, EV_READ | EV_PERSIST, accept_cb, d);
	d->accept_pause = evtimer_new(d->base, accept_resume_cb, d);
	if (d->listen_ev == NULL || d->accept_pause == NULL ||
	    event_add(d->listen_ev, NULL) != 0)
		fatalx("listener events");
	return 0;
}

void
listener_stop(struct laned *d)
{
	if (d->listen_ev != NULL) {
		event_free(d->listen_ev);
		d->listen_ev = NULL;
	}
	if (d->accept_pause != NULL) {
		event_free(d->accept_pause);
		d->accept_pause = NULL;
	}
	if (d->listen_fd != -1) {
		close(d->listen_fd);
		d->listen_fd = -1;
		/* An activated socket belongs to launchd/systemd. */
		if (!d->listen_activated)
			(void)unlink(d->cfg.socket_path);
	}
}
