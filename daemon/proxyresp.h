/*
 * The response side of an intercepted connection: each response that an
 * upstream sends back is parsed (head, then body by RFC 9112's rules for
 * the request it answers), re-framed, and scanned for the lane's secret
 * values before the guest sees a byte of it. Every occurrence of a value,
 * in a head or in body data, across any read or chunk boundary, is
 * replaced by a redaction of the same length, so that framing still
 * holds. Pure functions over bytes, like proxyreq.c, so that
 * tests/fuzz/fuzz_proxyresp.c drives exactly what the proxy runs.
 *
 * What reaches the guest:
 *   - the status line and header fields as they came (values redacted),
 *     except the framing fields, which the parser re-writes from what it
 *     parsed: "Content-Length: N" for a length-framed body, and
 *     "Transfer-Encoding: chunked" for a chunked one, whose chunks are
 *     its own (no extensions) and whose trailers are dropped;
 *   - body data as it arrives, never buffered beyond the bytes that may
 *     still turn out to be the start of a value (so a streamed response,
 *     SSE say, flows as it comes: nothing is held unless its tail could
 *     begin a value);
 *   - nothing of a response it cannot scan: a body with a
 *     Content-Encoding other than identity, or a Transfer-Encoding other
 *     than chunked, is refused before its head is passed on
 *     (PROXYRESP_UNSCANNABLE), as is any framing with two readings
 *     (PROXYRESP_BAD).
 */
#ifndef LANED_PROXYRESP_H
#define LANED_PROXYRESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxysecret.h"
#include "secret.h"

/* Requests in flight on one connection whose responses are awaited. */
#define PROXYRESP_PIPELINE_MAX	32

enum proxyresp_status {
	PROXYRESP_OK,
	PROXYRESP_BAD,		/* malformed or ambiguous framing */
	PROXYRESP_UNSCANNABLE,	/* an encoding the scan cannot read */
	PROXYRESP_TOO_LARGE,	/* a head over its cap */
	PROXYRESP_UNEXPECTED,	/* a response no request asked for */
	PROXYRESP_TRUNCATED,	/* upstream ended inside a response */
};

/* Bytes for the guest, in order. Returns false to stop (out of memory). */
typedef bool proxyresp_out_fn(void *arg, const void *p, size_t n);

struct proxyresp;

/*
 * A parser for one connection's responses. set is borrowed (NULL or
 * empty: nothing to redact, framing is still checked and re-written).
 * max_head bounds one response head.
 */
struct proxyresp *proxyresp_new(const struct secret_set *set,
    uint32_t max_head);
void proxyresp_free(struct proxyresp *);

/*
 * The next request sent upstream: its response is awaited after those of
 * the requests before it. head: a HEAD request (its response has no body).
 * False when PROXYRESP_PIPELINE_MAX are already awaited.
 */
bool proxyresp_expect(struct proxyresp *, bool head);
/* Responses still awaited (0: the connection is between responses). */
size_t proxyresp_pending(const struct proxyresp *);

/*
 * Feeds n bytes read from upstream; what the guest may see goes to out.
 * Returns PROXYRESP_OK or the error that ends the connection, with *why
 * saying what was wrong (static text, never a value). After an error
 * nothing more goes out. When a response head is refused, nothing of
 * that response went out, so the caller may still answer the guest
 * with a status of its own.
 */
enum proxyresp_status proxyresp_feed(struct proxyresp *, const uint8_t *p,
    size_t n, proxyresp_out_fn *out, void *arg, const char **why);

/*
 * Upstream closed. A body framed by the close ends here (held bytes go
 * out); anything else cut short is PROXYRESP_TRUNCATED.
 */
enum proxyresp_status proxyresp_eof(struct proxyresp *, proxyresp_out_fn *,
    void *arg, const char **why);

/* Whether the last response ended the connection (close-framed, or
 * "Connection: close"): the caller closes the guest's side once written. */
bool proxyresp_closing(const struct proxyresp *);

/*
 * Secrets redacted since the last call (bit i: secret i of the set), and
 * how many occurrences; both reset by the call. For the lane's events.
 */
proxysecret_mask proxyresp_take_redacted(struct proxyresp *, uint64_t *count);

/* Whether a response head has begun but not yet gone out (for a caller
 * that wants to answer the guest itself after an upstream error). */
bool proxyresp_in_head(const struct proxyresp *);

/*
 * Semantics a caller relies on (proxyresp.c implements them; the unit
 * suite tests each):
 *   - Redaction: every occurrence of every value, overlapping ones
 *     included, is replaced; where occurrences overlap, their union is.
 *     Each occurrence counts once for its secret. The redaction byte is
 *     'X', or the first of a fixed list of token characters that no value
 *     of the set holds, so that a redaction never makes up a value with
 *     the bytes around it (only a set whose values together hold all 77
 *     of those characters falls back to 'X'). Heads are scanned from the status line through
 *     the last header passed on; the framing line the parser writes, and
 *     its chunk-size lines, hold only numbers it made and are not.
 *   - Holding: body data is held back only while its tail is a proper
 *     prefix of some value (at most SECRET_VALUE_MAX - 1 bytes); held
 *     bytes go out when later bytes rule a value out or when the body
 *     ends. A value is never matched across two responses.
 *   - Bodiless: the response to a HEAD request and a 304 keep their
 *     Content-Length (one, normalised); 1xx and 204 lose theirs. A 1xx
 *     other than 101 goes out and its request still awaits a response;
 *     101 is PROXYRESP_BAD. Content-Encoding is only refused where a body
 *     can follow (not for a bodiless response or Content-Length: 0).
 *   - Ending: a response ends the connection when it is close-delimited,
 *     says "Connection: close", or is HTTP/1.0 without "keep-alive";
 *     proxyresp_closing() turns true once its last byte went out, and any
 *     byte after it is PROXYRESP_UNEXPECTED. proxyresp_eof() between
 *     responses is PROXYRESP_OK even with requests still awaited: see
 *     proxyresp_pending() to answer those.
 *   - Errors: the out callback returning false is PROXYRESP_BAD. Errors
 *     are final: every later feed or eof returns the same status.
 *   - The set must not change during the parser's life (its values'
 *     automata are built by proxyresp_new; NULL when that fails).
 */

#endif
