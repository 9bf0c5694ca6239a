/*
 * One client connection: length-prefixed frames on a bufferevent, the hello
 * exchange, then exactly one call. A malformed, truncated or oversized frame
 * closes this connection only; the length cap is checked before the payload
 * is buffered or allocated.
 *
 * A call's handler owns the connection after dispatch. Streaming handlers
 * (exec, copy) register callbacks for further client frames, for output
 * drain (backpressure) and for the connection going away.
 */
#ifndef LANED_CONN_H
#define LANED_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire.h"

struct laned;
struct conn;

/* Output above this: producers stop reading from their source. */
#define CONN_OUTPUT_HIGH (1024u * 1024u)
/* ... and resume when the client has drained it below this. */
#define CONN_OUTPUT_LOW (256u * 1024u)
/* Bytes moved per read or write callback. */
#define CONN_IO_CHUNK (256 * 1024)

struct conn_handler {
	/* A client frame after the call started; NULL: none are expected. */
	void (*input)(struct conn *, const AlRequest *, void *ctx);
	/* Output fell below CONN_OUTPUT_LOW. */
	void (*drained)(struct conn *, void *ctx);
	/* The connection is gone; the handler must forget it. */
	void (*closed)(struct conn *, void *ctx);
};

void conn_accept(struct laned *, int fd, uid_t uid);
void conn_set_handler(struct conn *, const struct conn_handler *, void *ctx);
/* Queues one response; -1 when the connection is closing. */
int conn_send(struct conn *, const AlResponse *);
/* Sends a typed error and finishes the call. */
void conn_send_error(struct conn *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Ends the call: the connection closes once its output is flushed. */
void conn_finish(struct conn *);
size_t conn_output_len(const struct conn *);
void conn_pause_input(struct conn *, bool paused);
void conn_close_all(struct laned *);
struct config;
/* The caps a hello (and `info`) announces. */
void conn_limits(const struct config *, Agentlane__V1__Limits *);

#endif
