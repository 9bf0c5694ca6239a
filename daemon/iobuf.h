/*
 * Large reads into an evbuffer. libevent 2.1's evbuffer_read() stops at
 * 4 KiB per call (EVBUFFER_MAX_READ), which turns a copy of hundreds of
 * megabytes into hundreds of thousands of loop turns; this reads straight
 * into reserved evbuffer space, up to a limit per call.
 */
#ifndef LANED_IOBUF_H
#define LANED_IOBUF_H

#include <stddef.h>
#include <sys/types.h>

struct evbuffer;

enum iobuf_rc {
	IOBUF_MORE,	/* read what was there; the descriptor would block */
	IOBUF_FULL,	/* stopped at the limit */
	IOBUF_EOF,
	IOBUF_ERROR,	/* errno is set */
};

/* Reads from fd until it would block, until EOF, or until the buffer
 * holds `limit` bytes. */
enum iobuf_rc iobuf_fill(struct evbuffer *, int fd, size_t limit);

#endif
