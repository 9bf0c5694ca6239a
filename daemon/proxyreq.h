/*
 * The lane proxy's request parser: one HTTP/1.x request head, as a guest
 * sends it to an HTTP proxy. Pure functions over bytes, no I/O, so that the
 * fuzzer (tests/fuzz/fuzz_proxyreq.c) drives exactly what the daemon runs.
 */
#ifndef LANED_PROXYREQ_H
#define LANED_PROXYREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXYREQ_HOST_MAX 253
#define PROXYREQ_FIELDS_MAX 100		/* header fields in one request */

/* One header field: offsets into the head it was parsed from. */
struct proxyreq_field {
	uint32_t name, nlen;
	uint32_t value, vlen;		/* without leading/trailing blanks */
	uint32_t end;			/* the CR that ends its line */
};

enum proxyreq_framing {
	PROXYREQ_BODY_NONE,
	PROXYREQ_BODY_LENGTH,		/* Content-Length */
	PROXYREQ_BODY_CHUNKED,		/* Transfer-Encoding: chunked */
};

struct proxyreq {
	bool connect;		/* CONNECT host:port; else absolute-URI http */
	char method[16];
	/* Lower case, no trailing dot; an IPv6 literal without brackets. */
	char host[PROXYREQ_HOST_MAX + 1];
	uint16_t port;
	bool host_port;		/* the authority named a port */
	uint32_t line_len;	/* the request line, CRLF not counted */
	uint32_t target, tlen;	/* the request target */
	bool http10;
	bool close;		/* HTTP/1.0, or Connection: close */
	enum proxyreq_framing framing;
	uint64_t length;	/* PROXYREQ_BODY_LENGTH */
	bool length_seen;	/* a Content-Length, of 0 too */
	uint32_t path, plen;	/* proxyreq_parse: the origin-form target */
	size_t nfields;
	struct proxyreq_field fields[PROXYREQ_FIELDS_MAX];
};

/*
 * Parses a complete request head: len bytes ending with the blank line.
 * CONNECT host:port, or an absolute http:// URI, whose origin-form path
 * (with its query) is then r->path, r->plen (plen 0: "/"); r->close is
 * set for it (one client connection carries one request to the vetted
 * host). What goes upstream is proxyfwd_head's (proxyfwd.h). The framing
 * rules of proxyreq_parse_origin hold here too. Returns 0, or the HTTP
 * status to answer (400, 405, 431, 501, 505) with *why saying what was
 * wrong.
 */
int proxyreq_parse(const char *head, size_t len, struct proxyreq *,
    const char **why);

/*
 * A request head inside an intercepted TLS connection: origin form
 * ("/path", or "*" for OPTIONS), HTTP/1.x, exactly one Host header, whose
 * host and port go into r->host and r->port (443 when it names none; the
 * caller compares them with the CONNECT target). CONNECT, TRACE and TRACK
 * are refused (405), as are every framing with two readings: Content-Length
 * with Transfer-Encoding, conflicting lengths, a Transfer-Encoding other
 * than chunked; and a Connection header that names a field the proxy
 * frames or routes by (Content-Length, Transfer-Encoding, Host, Trailer,
 * Expect): 400, since dropping it as hop-by-hop would change the framing
 * the upstream reads. More than PROXYREQ_FIELDS_MAX fields: 431. Returns
 * 0 or the status, with *why.
 */
int proxyreq_parse_origin(const char *head, size_t len, struct proxyreq *,
    const char **why);

/*
 * Whether field i of r is sent on as it came: not hop-by-hop (Connection,
 * Keep-Alive, TE, Trailer, Upgrade, Proxy-*, and every name a Connection
 * header lists) and not one the proxy writes itself from what it parsed
 * (Host, Content-Length, Transfer-Encoding).
 */
bool proxyreq_field_forwarded(const struct proxyreq *, const char *head,
    size_t i);

/* Whether field i is named name (ASCII case-insensitive). */
bool proxyreq_field_is(const struct proxyreq *, const char *head, size_t i,
    const char *name);

#define PROXYREQ_TRAILERS_MAX	8192	/* a chunked body's trailer section */

/*
 * A request body's framing, fed as it arrives. The parser finds where the
 * body ends, so that the next bytes are the next request, and hands the
 * body's data (without chunk framing) to a callback; proxyfwd.c frames it
 * again for the upstream. A chunked body's trailer section is kept whole
 * in tbuf (each field checked like a head's, CRLF line ends, the final
 * empty line not included), for the caller to scan before the body ends
 * upstream.
 */
struct proxyreq_body {
	int st;
	uint64_t left;		/* data bytes left in this chunk or body */
	uint32_t line;		/* bytes of the chunk-size or trailer line */
	uint32_t trailers;	/* bytes of the trailer section, in tbuf */
	unsigned digits;
	bool bad;
	const char *why;
	char tbuf[PROXYREQ_TRAILERS_MAX];
};

typedef void proxyreq_data_fn(void *arg, const uint8_t *p, size_t n);

void proxyreq_body_init(struct proxyreq_body *, const struct proxyreq *);
/*
 * Consumes up to n bytes of body; returns how many were the body's (less
 * than n when the body ended within them). proxyreq_body_done() then
 * says so; b->bad (with b->why) says the framing was broken, and nothing
 * from there on is the body's.
 */
size_t proxyreq_body_feed(struct proxyreq_body *, const uint8_t *p, size_t n,
    proxyreq_data_fn *, void *arg);
bool proxyreq_body_done(const struct proxyreq_body *);

/*
 * RFC 9110's token and blank characters, a hex digit's value (or -1), and
 * Content-Length digits (1 to 18 of them, nothing else): shared with the
 * response parser (proxyresp.c), so that both sides read them alike.
 */
bool proxyreq_tchar(uint8_t c);
bool proxyreq_ows(uint8_t c);
int proxyreq_hexval(uint8_t c);
bool proxyreq_length(const void *v, size_t n, uint64_t *out);

/* Length of the head at the start of buf (through CRLFCRLF), or 0. */
size_t proxyreq_head_len(const char *buf, size_t len);

/*
 * A host name as the allow list and requests accept it: LDH labels of at
 * most 63 characters, 253 in all, or an IPv4 or IPv6 literal. Normalises
 * in place (lower case, trailing dot removed).
 */
bool proxyreq_host_valid(char *host);

/*
 * An allow-list entry: a host name as above, or "*." and a name with at
 * least two labels ("*.npmjs.org" yes, "*.org" no). Normalises in place.
 */
bool proxyreq_pattern_valid(char *pattern);

/*
 * Exact match, or for "*.suffix" any name below suffix at any depth (not
 * suffix itself: list both to allow both), at a label boundary only.
 * ASCII case and one trailing dot on either side do not matter.
 */
bool proxyreq_host_match(const char *pattern, const char *host);

#endif
