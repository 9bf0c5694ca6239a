#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <launch.h>
#endif

#include "compat.h"
#include "sockact.h"

/* Checks that fd is a listening Unix stream socket. */
static int
check_listener(int fd, char *err, size_t errlen)
{
	struct stat sb;
	int type = 0, listening = 0;
	socklen_t len = sizeof type;

	if (fstat(fd, &sb) == -1 || !S_ISSOCK(sb.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
	    type != SOCK_STREAM) {
		snprintf(err, errlen, "activated descriptor %d is not a stream "
		    "socket", fd);
		return -1;
	}
#if defined(SO_ACCEPTCONN)
	len = sizeof listening;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 &&
	    !listening) {
		snprintf(err, errlen, "activated socket %d is not listening", fd);
		return -1;
	}
#endif
	(void)listening;
	return 0;
}

#if defined(__APPLE__)

int
sockact_listen_fd(char *err, size_t errlen)
{
	int *fds = NULL;
	size_t count = 0;
	int rc, fd;

	rc = launch_activate_socket("Listeners", &fds, &count);
	if (rc == ESRCH || rc == ENOENT)
		return -1;	/* not started by launchd, or no Sockets key */
	if (rc != 0) {
		snprintf(err, errlen, "launch_activate_socket: %s", strerror(rc));
		return -2;
	}
	if (count != 1) {
		snprintf(err, errlen, "launchd passed %zu sockets, expected 1",
		    count);
		for (size_t i = 0; i < count; i++)
			close(fds[i]);
		free(fds);
		return -2;
	}
	fd = fds[0];
	free(fds);
	if (compat_set_cloexec(fd) == -1 || check_listener(fd, err, errlen) == -1)
		return -2;
	return fd;
}

#else

#define SD_LISTEN_FDS_START 3

int
sockact_listen_fd(char *err, size_t errlen)
{
	const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
	char *end;
	long pid, n;

	if (pid_s == NULL || fds_s == NULL)
		return -1;
	errno = 0;
	pid = strtol(pid_s, &end, 10);
	if (errno != 0 || *end != '\0' || pid <= 0) {
		snprintf(err, errlen, "bad LISTEN_PID \"%s\"", pid_s);
		return -2;
	}
	if ((pid_t)pid != getpid())
		return -1;	/* meant for another process */
	n = strtol(fds_s, &end, 10);
	if (*end != '\0' || n != 1) {
		snprintf(err, errlen, "LISTEN_FDS=%s: expected exactly 1 socket",
		    fds_s);
		return -2;
	}
	/* Children (limactl) must not believe they were activated. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (compat_set_cloexec(SD_LISTEN_FDS_START) == -1 ||
	    check_listener(SD_LISTEN_FDS_START, err, errlen) == -1)
		return -2;
	return SD_LISTEN_FDS_START;
}

#endif
