#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_prog = "agent-laned";
static bool log_verbose;

void
log_init(const char *progname, bool debug)
{
	log_prog = progname;
	log_verbose = debug;
}

bool
log_debug_enabled(void)
{
	return log_verbose;
}

static void __attribute__((format(printf, 2, 0)))
log_vwrite(const char *level, const char *fmt, va_list ap, int errnum)
{
	char msg[2048], stamp[32];
	struct timeval tv;
	struct tm tm;
	size_t i;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	vsnprintf(msg, sizeof msg, fmt, ap);
	/* One event per line, whatever a guest or limactl put in a message. */
	for (i = 0; msg[i] != '\0'; i++)
		if (msg[i] == '\n' || msg[i] == '\r')
			msg[i] = ' ';
	if (errnum != 0)
		fprintf(stderr, "%s.%03ldZ %s[%ld]: %s: %s: %s\n", stamp,
		    (long)(tv.tv_usec / 1000), log_prog, (long)getpid(), level,
		    msg, strerror(errnum));
	else
		fprintf(stderr, "%s.%03ldZ %s[%ld]: %s: %s\n", stamp,
		    (long)(tv.tv_usec / 1000), log_prog, (long)getpid(), level,
		    msg);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_vwrite("debug", fmt, ap, 0);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite("info", fmt, ap, 0);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite("warning", fmt, ap, 0);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	log_vwrite("warning", fmt, ap, saved);
	va_end(ap);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite("fatal", fmt, ap, 0);
	va_end(ap);
	exit(1);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	log_vwrite("fatal", fmt, ap, saved);
	va_end(ap);
	exit(1);
}
