#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_prog = "agent-laned";
static bool log_verbose;

/* The log file (log_open_file): its path, descriptor and size so far. */
static char log_path[PATH_MAX];
static int log_fd = -1;
static uint64_t log_size, log_rotate_at;
static bool log_no_stderr;

void
log_file_only(bool file_only)
{
	log_no_stderr = file_only;
}

static int
log_file_open(void)
{
	struct stat sb;
	int fd;

	fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1)
		return -1;
	/* Ours alone: a file left readable by others is made private. */
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    sb.st_uid != geteuid() || fchmod(fd, 0600) == -1) {
		if (errno == 0)
			errno = EPERM;
		close(fd);
		return -1;
	}
	log_fd = fd;
	log_size = (uint64_t)sb.st_size;
	return 0;
}

int
log_open_file(const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
	if (strlen(path) + 3 > sizeof log_path) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	log_close_file();
	snprintf(log_path, sizeof log_path, "%s", path);
	log_rotate_at = max_bytes / 2;
	if (log_file_open() == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		log_path[0] = '\0';
		return -1;
	}
	return 0;
}

void
log_close_file(void)
{
	if (log_fd != -1)
		close(log_fd);
	log_fd = -1;
}

/*
 * One line to the file, rotating first when it would pass half the cap.
 * A failure is said once on stderr and the file is given up: logging must
 * never stop the daemon.
 */
static void
log_file_write(const char *line, size_t len)
{
	char old[PATH_MAX + 2];
	ssize_t n;

	if (log_fd == -1)
		return;
	if (log_size > 0 && log_size + len > log_rotate_at) {
		snprintf(old, sizeof old, "%s.1", log_path);
		close(log_fd);
		log_fd = -1;
		if (rename(log_path, old) == -1 || log_file_open() == -1) {
			fprintf(stderr, "%s[%ld]: warning: log file %s: %s; "
			    "logging to stderr only\n", log_prog,
			    (long)getpid(), log_path, strerror(errno));
			return;
		}
	}
	while ((n = write(log_fd, line, len)) == -1 && errno == EINTR)
		;
	if (n > 0)
		log_size += (uint64_t)n;
}

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
	char msg[2048], stamp[32], line[2600];
	struct timeval tv;
	struct tm tm;
	size_t i;
	int n;
	int saved = errno;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	vsnprintf(msg, sizeof msg, fmt, ap);
	/* One event per line, whatever a guest or limactl put in a message. */
	for (i = 0; msg[i] != '\0'; i++)
		if (msg[i] == '\n' || msg[i] == '\r')
			msg[i] = ' ';
	if (errnum != 0)
		n = snprintf(line, sizeof line, "%s.%03ldZ %s[%ld]: %s: %s: "
		    "%s\n", stamp, (long)(tv.tv_usec / 1000), log_prog,
		    (long)getpid(), level, msg, strerror(errnum));
	else
		n = snprintf(line, sizeof line, "%s.%03ldZ %s[%ld]: %s: %s\n",
		    stamp, (long)(tv.tv_usec / 1000), log_prog, (long)getpid(),
		    level, msg);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof line) {
		n = (int)sizeof line - 1;
		line[n - 1] = '\n';
	}
	if (log_fd == -1 || !log_no_stderr)
		fputs(line, stderr);
	log_file_write(line, (size_t)n);
	errno = saved;	/* callers may log, then look at errno */
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
