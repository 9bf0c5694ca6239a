/*
 * What the lane proxy sends upstream for a request it parsed
 * (proxyreq.h): the head, and the body framed again. One function writes
 * the head for plain http:// requests and for those inside an intercepted
 * tunnel alike, so that what is forwarded frames exactly the requests the
 * proxy parsed, checked and substituted (issue 29: a framing field dropped
 * after it had decided the framing let a second request through unseen).
 * Pure functions over bytes, fuzzed by tests/fuzz/fuzz_proxyforward.c on
 * that invariant: parse, forward, parse again gives the same requests.
 *
 * The head sent:
 *   - the request line: as it came (tunnel), or with the origin-form
 *     target of the absolute URI (plain);
 *   - Host: as it came (tunnel, where it names the CONNECT target), or
 *     written from the URI (plain), right after the request line;
 *   - every other field as it came ("name: value"), except hop-by-hop
 *     ones (proxyreq_field_forwarded), every Content-Length and
 *     Transfer-Encoding, and in a tunnel Accept-Encoding;
 *   - framing written from what was parsed: "Content-Length: N" for a
 *     length (0 too, when the guest sent one), "Transfer-Encoding:
 *     chunked" for a chunked body, nothing else;
 *   - in a tunnel "Accept-Encoding: identity", so that the responses are
 *     bodies the response scan (proxyresp.h) can read;
 *   - "Connection: close" for a plain request and for a last one.
 * A value goes only into a credential header of its secret
 * (secret_header_is_credential) on a tunnel to one of its hosts:
 * Authorization as "SCHEME placeholder" (Bearer, token, ...), as the
 * placeholder alone, or Basic with the placeholder as user or password;
 * any other credential header when its value is exactly the placeholder.
 *
 * The body sent: a length-framed body as it came; a chunked one in the
 * proxy's own chunks (hex sizes, no extensions) and its own last chunk,
 * written only once the trailer section was parsed and scanned. Trailers
 * are dropped: none reaches the upstream, so none can carry a
 * placeholder, a value, or a framing field there.
 */
#ifndef LANED_PROXYFWD_H
#define LANED_PROXYFWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxyreq.h"
#include "proxysecret.h"
#include "secret.h"

enum proxyfwd_mode {
	PROXYFWD_CONNECT,	/* a CONNECT head: checked, nothing written */
	PROXYFWD_PLAIN,		/* an absolute-URI http:// request */
	PROXYFWD_TUNNEL,	/* origin form, inside an intercepted tunnel */
};

#define PROXYFWD_NAME_MAX	64	/* a header's name, as events show it */

struct proxyfwd_head {
	char *out;			/* the head to send; malloc'd */
	size_t len;
	proxysecret_mask used;		/* placeholders replaced */
	int refused;			/* 403: the secret's index, else -1 */
	/* 403: the header it was in ("" for the request line or when the
	 * host is not the secret's); sanitised, cut at PROXYFWD_NAME_MAX. */
	char header[PROXYFWD_NAME_MAX + 1];
	const char *why;		/* 400: what was wrong (static) */
};

/*
 * Checks and writes the head of r (parsed from head) for a connection to
 * host (normalised). Refused:
 *   403  a placeholder (in the request line, also percent-decoded; in a
 *        header value, also inside any base64) of a secret that does not
 *        list host; or, in a tunnel, of one that does, in a header that is
 *        not one of its credential headers (h->header names it);
 *   400  a Connection header naming a credential header, or in a tunnel
 *        (where values go in) a credential header sent twice: so a head
 *        grows by at most one value per credential header name, and the
 *        bound on a head is checked on what the guest sent, placeholders
 *        in it, never on the grown head (no length oracle).
 * Returns 0 (h->out set unless PROXYFWD_CONNECT), 400 or 403.
 */
int proxyfwd_head(const struct secret_set *, const char *head,
    const struct proxyreq *r, const char *host, enum proxyfwd_mode,
    struct proxyfwd_head *h);
/* proxyfwd_head's refusals alone: nothing is written (the policy's). */
int proxyfwd_check(const struct secret_set *, const char *head,
    const struct proxyreq *r, const char *host, enum proxyfwd_mode,
    struct proxyfwd_head *h);
/* Wipes and frees h->out (it may hold values). */
void proxyfwd_head_free(struct proxyfwd_head *h);

/* Bytes for the upstream, in order; false: stop (out of memory). */
typedef bool proxyfwd_out_fn(void *arg, const void *p, size_t n);

enum proxyfwd_status {
	PROXYFWD_MORE,		/* all of it was the body's; more to come */
	PROXYFWD_DONE,		/* the body ended (*used says where) */
	PROXYFWD_BAD,		/* broken framing: b.why; 400 */
	PROXYFWD_TRAILER,	/* a placeholder in a trailer: 403 */
	PROXYFWD_OUT,		/* out returned false */
};

struct proxyfwd_body {
	struct proxyreq_body b;
	bool chunked;
	struct proxysecret_scan scan;	/* placeholders in the data */
	int trailer_secret;		/* PROXYFWD_TRAILER: its index */
	bool out_failed;
	const struct secret_set *set;
	proxyfwd_out_fn *out;
	void *arg;
};

void proxyfwd_body_init(struct proxyfwd_body *, const struct proxyreq *);
/*
 * Feeds n bytes that follow the head; *used says how many were the
 * body's. What the upstream gets goes to out. A chunked body's last chunk
 * goes out only with PROXYFWD_DONE, after its trailers were scanned: a
 * refused body never ends upstream.
 */
enum proxyfwd_status proxyfwd_body_feed(struct proxyfwd_body *,
    const struct secret_set *, const uint8_t *p, size_t n, size_t *used,
    proxyfwd_out_fn *out, void *arg);

#endif
