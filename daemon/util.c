#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
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

/*
 * The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF) and its code point, or 0.
 * The NUL terminator is never a continuation byte, so this stops there.
 */
static size_t
utf8_decode(const unsigned char *s, uint32_t *cp)
{
	size_t n;
	uint32_t c, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2;
		c = s[0] & 0x1f;
		min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		c = s[0] & 0x0f;
		min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		c = s[0] & 0x07;
		min = 0x10000;
	} else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

/*
 * Code points that steer a terminal rather than print: C0 and C1 controls,
 * DEL, and the bidirectional overrides and isolates, which can make a
 * message display as something it does not say.
 */
static bool
utf8_is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) ||
	    (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) ||
	    c == 0x2028 || c == 0x2029;
}

void
str_sanitize(char *s)
{
	unsigned char *r = (unsigned char *)s, *w = r;
	uint32_t cp;
	size_t n;

	while (*r != '\0') {
		n = utf8_decode(r, &cp);
		if (n == 0 || utf8_is_control(cp)) {
			*w++ = '?';
			r += n == 0 ? 1 : n;
			continue;
		}
		/* w never passes r: each sequence is kept whole or shrinks. */
		memmove(w, r, n);
		w += n;
		r += n;
	}
	*w = '\0';
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
