/*
 * Placeholders in what a guest sends through its lane proxy (secret.h):
 * found in request lines, headers and bodies, and swapped for the value
 * only where one is the whole credential of a header. Pure functions over
 * bytes, like proxyreq.c, so that tests/fuzz/fuzz_proxyhttp.c drives what
 * the proxy runs.
 */
#ifndef LANED_PROXYSECRET_H
#define LANED_PROXYSECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "secret.h"

struct proxyreq;

/* The rewritten head may grow past the parsed one by values; this caps it. */
#define PROXYSECRET_HEAD_MAX (256 * 1024)

/* Bit i stands for secret i of the set (SECRET_MAX is 32). */
typedef uint32_t proxysecret_mask;

/* Secrets whose placeholder occurs in p[0..n). */
proxysecret_mask proxysecret_find(const struct secret_set *, const void *p,
    size_t n);

struct proxysecret_head {
	char *out;			/* the head to send; malloc'd */
	size_t len;
	proxysecret_mask used;		/* placeholders replaced */
	int refused;			/* a secret sent elsewhere, or -1 */
};

/*
 * Checks one parsed request head (r from proxyreq_parse_origin or
 * proxyreq_parse over head) for placeholders, for a connection to host:
 *   - one in the request line (also percent-decoded) or in any header
 *     value (also inside a decoded Basic credential) of a secret that
 *     does not list host: h->refused is its index, and 403 is returned;
 *   - otherwise, when out is wanted (origin form: the head to send over
 *     the verified TLS connection), h->out is the head with hop-by-hop
 *     fields dropped, "Connection: close" when r->close, and, if replace,
 *     each header value that is exactly a placeholder, and each
 *     Authorization that is "SCHEME placeholder" or "Basic " over
 *     user:password where the user or the password is a placeholder,
 *     carrying the value instead. Nothing else changes.
 * Returns 0, 403, or 431 when the head would pass PROXYSECRET_HEAD_MAX.
 * h->out is NULL unless 0 was returned with out wanted; free it.
 */
int proxysecret_head(const struct secret_set *, const char *head,
    const struct proxyreq *r, const char *host, bool out, bool replace,
    struct proxysecret_head *h);

/*
 * A body's bytes as they pass, in pieces: a placeholder split between two
 * pieces is still found (the last placeholder_max - 1 bytes are kept).
 */
struct proxysecret_scan {
	uint8_t tail[SECRET_PLACEHOLDER_MAX];
	size_t ntail;
	proxysecret_mask found;
};

void proxysecret_scan(const struct secret_set *, struct proxysecret_scan *,
    const uint8_t *p, size_t n);

#endif
