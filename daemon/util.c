#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "text.h"
#include "util.h"

void *
xmalloc(size_t size)
{
	void *p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatalx("out of memory allocating %zu bytes", size);
	return p;
}

void *
xcalloc(size_t nmemb, size_t size)
{
	void *p;

	if (nmemb == 0 || size == 0)
		nmemb = size = 1;
	if ((p = calloc(nmemb, size)) == NULL)
		fatalx("out of memory allocating %zu x %zu bytes", nmemb, size);
	return p;
}

void *
xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (size != 0 && nmemb > SIZE_MAX / size)
		fatalx("allocation overflow: %zu x %zu", nmemb, size);
	if ((p = realloc(ptr, nmemb * size == 0 ? 1 : nmemb * size)) == NULL)
		fatalx("out of memory reallocating %zu x %zu", nmemb, size);
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		fatalx("out of memory duplicating a string");
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char *p;

	if ((p = strndup(s, n)) == NULL)
		fatalx("out of memory duplicating a string");
	return p;
}

int
xvasprintf(char **ret, const char *fmt, va_list ap)
{
	int n;

	if ((n = vasprintf(ret, fmt, ap)) < 0)
		fatalx("out of memory formatting a string");
	return n;
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return n;
}

size_t
str_copy(char *dst, const char *src, size_t size)
{
	size_t len = strlen(src);

	if (size > 0) {
		size_t n = len < size - 1 ? len : size - 1;
		memcpy(dst, src, n);
		dst[n] = '\0';
	}
	return len;
}

int64_t
time_now_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		fatal("clock_gettime(CLOCK_REALTIME)");
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
str_sanitize_ascii(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

/* The one rule, shared with the CLI (proto/text.c). */
void
str_sanitize(char *s)
{
	text_sanitize(s);
}

struct timeval
tv_from_ms(uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	return tv;
}

void
tail_append(char *buf, size_t cap, size_t *len, const void *data, size_t n)
{
	const char *src = data;

	if (n >= cap) {
		memcpy(buf, src + n - cap, cap);
		*len = cap;
	} else {
		if (*len + n > cap) {
			size_t drop = *len + n - cap;

			memmove(buf, buf + drop, *len - drop);
			*len -= drop;
		}
		memcpy(buf + *len, src, n);
		*len += n;
	}
	buf[*len] = '\0';
}

int
file_replace_private(const char *path, const void *data, size_t len,
    char *err, size_t errlen)
{
	ssize_t w;
	int fd;

	(void)unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	w = write(fd, data, len);
	if (w == -1 || (size_t)w != len || fsync(fd) == -1) {
		snprintf(err, errlen, "%s: %s", path,
		    w != -1 && (size_t)w != len ? "short write" :
		    strerror(errno));
		close(fd);
		(void)unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}
