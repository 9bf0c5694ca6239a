/*
 * The library's bottom: filling a struct al_error, the interrupt flag that
 * turns a transport or file error into AL_CANCELLED, the names of codes,
 * and moving a descriptor above stdio. Everything else in client/lib sets
 * its errors here and calls nothing above it (tests/layers/client-lib.order).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static volatile sig_atomic_t interrupted;

struct al_error *
al_error_begin(struct al_error *err, struct al_error *local)
{
	if (err == NULL)
		err = local;
	memset(err, 0, sizeof *err);
	return err;
}

enum al_code
al_result(int rc, const struct al_error *err)
{
	if (rc == 0)
		return AL_OK;
	/* Every failure path sets a code; never report success by mistake. */
	return err->code != AL_OK ? (enum al_code)err->code : AL_INTERNAL;
}

AL_API void
al_interrupt(void)
{
	interrupted = 1;
}

bool
al_interrupted(void)
{
	return interrupted != 0;
}

AL_API const char *
al_code_name(int code)
{
	switch (code) {
	case AL_CONNECT:
		return "CONNECT";
	case AL_PROTOCOL:
		return "PROTOCOL";
	case AL_IO:
		return "IO";
	case AL_UNSAFE:
		return "UNSAFE";
	case AL_OK:
		return "OK";
	default:
		/* The daemon's codes: the protocol's one table. */
		return wire_error_name(code);
	}
}

void
al_set_error(struct al_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL)
		return;
	err->code = code;
	err->os_errno = 0;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	/* A transport or file error during an interrupt is the interrupt. */
	if (interrupted && (code == AL_CONNECT || code == AL_IO)) {
		err->code = AL_CANCELLED;
		snprintf(err->message, sizeof err->message, "interrupted");
	}
}

void
al_set_errno(struct al_error *err, int code, const char *what)
{
	int saved = errno;

	al_set_error(err, code, "%s: %s", what, strerror(saved));
	if (err != NULL)
		err->os_errno = saved;
}

/*
 * A host program that closed 0, 1 or 2 would otherwise get our socket (or
 * file) there, and its next write to "stderr" would go into the control
 * stream. Moves fd to the lowest free descriptor above 2, close-on-exec.
 */
int
al_fd_above_stdio(int fd)
{
	int nfd;

	if (fd > STDERR_FILENO) {
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
			int saved = errno;

			close(fd);
			errno = saved;
			return -1;
		}
		return fd;
	}
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	if (nfd == -1) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return nfd;
}
