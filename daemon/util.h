/*
 * Small helpers used across the daemon: allocation that treats OOM as fatal
 * (as tmux's xmalloc does; a daemon that half-handles ENOMEM is worse than
 * one that restarts under launchd), clocks, and bounded string copies.
 */
#ifndef LANED_UTIL_H
#define LANED_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

void *xmalloc(size_t);
void *xcalloc(size_t, size_t);
void *xreallocarray(void *, size_t, size_t);
char *xstrdup(const char *);
char *xstrndup(const char *, size_t);
int xasprintf(char **, const char *, ...) __attribute__((format(printf, 2, 3)));
int xvasprintf(char **, const char *, va_list) __attribute__((format(printf, 2, 0)));

/* Copies with truncation; always NUL-terminates; returns strlen(src). */
size_t str_copy(char *dst, const char *src, size_t size);

/* Wall-clock milliseconds since the epoch (deadlines are wall-clock). */
int64_t time_now_ms(void);

/* A libevent timer interval for a duration in milliseconds. */
struct timeval tv_from_ms(uint64_t ms);

/*
 * The last bytes of a stream (a child's stderr), for error messages: buf
 * holds cap + 1 bytes and stays NUL-terminated; *len is its length. Older
 * bytes are dropped once cap is reached, so the memory is fixed whatever a
 * peer writes.
 */
void tail_append(char *buf, size_t cap, size_t *len, const void *data,
    size_t n);

/*
 * Makes text from outside (the guest, limactl) fit a protobuf string and a
 * terminal, in place: well-formed UTF-8 is kept; each invalid byte, and
 * each control character (C0, DEL, C1, bidirectional overrides), becomes
 * '?'. The result is never longer.
 */
/*
 * Writes a file only we may read, in place of any file or link at path:
 * O_EXCL and O_NOFOLLOW after an unlink, then fsync. On failure the file is
 * gone and err says why.
 */
int file_replace_private(const char *path, const void *data, size_t len,
    char *err, size_t errlen);
void str_sanitize(char *s);
/* For identifiers: every byte that is not printable ASCII becomes '?'. */
void str_sanitize_ascii(char *s);

#endif
