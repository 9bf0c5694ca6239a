/*
 * The head and body the lane proxy forwards (see proxyfwd.h). Every
 * framing decision was made by proxyreq.c; this file writes it down again
 * and never lets a field the guest sent speak for the framing. Values go
 * in only here, and only where a placeholder is exactly the credential of
 * one of its secret's credential headers, so that no text around it (a
 * URL, a JSON body, a cookie, an echoed X-Request-Id) can carry the value
 * somewhere else.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "proxyfwd.h"
#include "util.h"
#include "wire.h"

/* ---- The output buffer: grown as needed, wiped whenever it moves ---- */

struct obuf {
	char *p;
	size_t len, cap;
};

static void
ob_put(struct obuf *o, const void *s, size_t n)
{
	if (o->len + n > o->cap) {
		size_t cap = o->cap ? o->cap : 1024;
		while (cap < o->len + n)
			cap *= 2;
		char *q = xmalloc(cap);
		if (o->len > 0)
			memcpy(q, o->p, o->len);
		/* Values pass through here: the old block is wiped. */
		if (o->p != NULL) {
			wire_wipe(o->p, o->cap);
			free(o->p);
		}
		o->p = q;
		o->cap = cap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void
ob_str(struct obuf *o, const char *s)
{
	ob_put(o, s, strlen(s));
}

/* ---- Which headers are credentials ---- */

/* A credential header of some secret of the set, or a default one. */
static bool
cred_any(const struct secret_set *set, const char *name, size_t n)
{
	for (size_t i = 0; secret_default_headers[i] != NULL; i++)
		if (strlen(secret_default_headers[i]) == n &&
		    strncasecmp(secret_default_headers[i], name, n) == 0)
			return true;
	for (size_t i = 0; set != NULL && i < set->n; i++)
		if (secret_header_is_credential(&set->v[i], name, n))
			return true;
	return false;
}

static bool
cred_of(const struct secret_set *set, int i, const char *name, size_t n)
{
	return secret_header_is_credential(&set->v[i], name, n);
}

#define FIELD_NAME(r, head, i)	((head) + (r)->fields[i].name)
#define FIELD_NLEN(r, i)	((size_t)(r)->fields[i].nlen)

/*
 * A Connection header naming a credential header would drop it after the
 * proxy decided on it; the same header twice (where values go in) would
 * let a head grow by a value per copy. Both are refused.
 */
static int
check_names(const struct secret_set *set, const char *head,
    const struct proxyreq *r, bool tunnel, const char **why)
{
	for (size_t i = 0; i < r->nfields; i++) {
		const char *name = FIELD_NAME(r, head, i);
		size_t nl = FIELD_NLEN(r, i);
		if (proxyreq_field_is(r, head, i, "connection")) {
			const char *t = head + r->fields[i].value;
			const char *end = t + r->fields[i].vlen, *te;
			for (; t < end; t = te) {
				while (t < end && (*t == ' ' || *t == '\t' ||
				    *t == ','))
					t++;
				for (te = t; te < end && *te != ',' &&
				    *te != ' ' && *te != '\t'; te++)
					;
				if (te > t && cred_any(set, t, (size_t)(te - t))) {
					*why = "Connection names a credential "
					    "header";
					return 400;
				}
			}
		}
		if (!tunnel || !cred_any(set, name, nl))
			continue;
		for (size_t j = 0; j < i; j++)
			if (FIELD_NLEN(r, j) == nl && strncasecmp(FIELD_NAME(r,
			    head, j), name, nl) == 0) {
				*why = "a credential header sent twice";
				return 400;
			}
	}
	return 0;
}

static void
set_header(struct proxyfwd_head *h, const char *name, size_t n)
{
	if (n > PROXYFWD_NAME_MAX)
		n = PROXYFWD_NAME_MAX;
	memcpy(h->header, name, n);
	h->header[n] = '\0';
	str_sanitize_ascii(h->header);
}

/*
 * Placeholders: to a host not their secret's, anywhere (403); in a tunnel
 * to their own host, in a header that is not one of their credential
 * headers (403: a header a server may echo, such as X-Request-Id).
 */
static int
check_placeholders(const struct secret_set *set, const char *head,
    const struct proxyreq *r, const char *host, bool tunnel,
    struct proxyfwd_head *h)
{
	proxysecret_mask m, own = 0;

	for (size_t i = 0; i < set->n; i++)
		if (secret_host_match(&set->v[i], host))
			own |= (proxysecret_mask)1 << i;
	m = proxysecret_line_mask(set, head, r->line_len);
	for (size_t i = 0; i < set->n; i++)
		if ((m & ~own) & ((proxysecret_mask)1 << i)) {
			h->refused = (int)i;
			return 403;
		}
	for (size_t f = 0; f < r->nfields; f++) {
		const char *name = FIELD_NAME(r, head, f);
		size_t nl = FIELD_NLEN(r, f);
		m = proxysecret_find(set, name, nl) | proxysecret_value_mask(set,
		    head + r->fields[f].value, r->fields[f].vlen);
		for (size_t i = 0; m != 0 && i < set->n; i++) {
			proxysecret_mask b = (proxysecret_mask)1 << i;
			if (!(m & b))
				continue;
			if (!(own & b)) {
				h->refused = (int)i;
				return 403;
			}
			if (tunnel && (proxysecret_find(set, name, nl) & b ||
			    !cred_of(set, (int)i, name, nl))) {
				h->refused = (int)i;
				set_header(h, name, nl);
				return 403;
			}
		}
	}
	return 0;
}

/* ---- Values in credential headers ---- */

/* The secret whose placeholder is exactly v[0..n), if name may carry it. */
static int
usable(const struct secret_set *set, const char *host, const char *name,
    size_t nl, const char *v, size_t n)
{
	int i = proxysecret_exact(set, v, n);

	if (i < 0 || !secret_host_match(&set->v[i], host) ||
	    !cred_of(set, i, name, nl))
		return -1;
	return i;
}

/*
 * Basic user:password where either is a placeholder that may go here:
 * writes the credentials encoded again. False: not that shape.
 */
static bool
put_basic(const struct secret_set *set, const char *host, const char *v,
    size_t n, struct obuf *o, proxysecret_mask *used)
{
	static const char auth[] = "authorization";
	size_t dn, un, pn, tn, k;
	uint8_t *d = proxysecret_b64_strict(v, n, &dn), *colon, *t, *e;
	int us, ps, en;

	if (d == NULL)
		return false;
	if ((colon = memchr(d, ':', dn)) == NULL) {
		wire_wipe(d, dn);
		free(d);
		return false;
	}
	un = (size_t)(colon - d);
	pn = dn - un - 1;
	us = usable(set, host, auth, sizeof(auth) - 1, (char *)d, un);
	ps = usable(set, host, auth, sizeof(auth) - 1, (char *)colon + 1, pn);
	if (us < 0 && ps < 0) {
		wire_wipe(d, dn);
		free(d);
		return false;
	}
	tn = (us >= 0 ? set->v[us].value_len : un) + 1 +
	    (ps >= 0 ? set->v[ps].value_len : pn);
	t = xmalloc(tn);
	k = us >= 0 ? set->v[us].value_len : un;
	memcpy(t, us >= 0 ? set->v[us].value : d, k);
	t[k++] = ':';
	memcpy(t + k, ps >= 0 ? set->v[ps].value : colon + 1, ps >= 0 ?
	    set->v[ps].value_len : pn);
	e = xmalloc(4 * ((tn + 2) / 3) + 1);
	en = EVP_EncodeBlock(e, t, (int)tn);
	ob_put(o, e, (size_t)en);
	*used |= (us >= 0 ? (proxysecret_mask)1 << us : 0) |
	    (ps >= 0 ? (proxysecret_mask)1 << ps : 0);
	wire_wipe(e, (size_t)en);
	wire_wipe(t, tn);
	wire_wipe(d, dn);
	free(e);
	free(t);
	free(d);
	return true;
}

/* "SCHEME rest": the offset of rest when SCHEME is a token, else 0. */
static size_t
scheme_len(const char *v, size_t n)
{
	const char *sp = memchr(v, ' ', n);

	if (sp == NULL || sp == v)
		return 0;
	for (const char *q = v; q < sp; q++)
		if (!((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
		    (*q >= '0' && *q <= '9') || strchr("-._~+!#$%&'*^`|", *q)))
			return 0;
	return (size_t)(sp - v) + 1;
}

/* The value of field f in a tunnel, a placeholder that may go replaced. */
static void
put_value(const struct secret_set *set, const char *host, const char *name,
    size_t nl, const char *v, size_t n, struct obuf *o,
    proxysecret_mask *used)
{
	bool auth = nl == 13 && strncasecmp(name, "authorization", 13) == 0;
	size_t at, mark;
	int i;

	if ((i = usable(set, host, name, nl, v, n)) >= 0) {
		ob_put(o, set->v[i].value, set->v[i].value_len);
		*used |= (proxysecret_mask)1 << i;
		return;
	}
	if (!auth || (at = scheme_len(v, n)) == 0) {
		ob_put(o, v, n);
		return;
	}
	if (at == 6 && strncasecmp(v, "Basic ", 6) == 0) {
		mark = o->len;
		ob_put(o, v, at);
		if (put_basic(set, host, v + at, n - at, o, used))
			return;
		o->len = mark;
	}
	/* "Bearer PH", "token PH", "Basic PH" (PH holding user:password). */
	if ((i = usable(set, host, name, nl, v + at, n - at)) >= 0) {
		ob_put(o, v, at);
		ob_put(o, set->v[i].value, set->v[i].value_len);
		*used |= (proxysecret_mask)1 << i;
		return;
	}
	ob_put(o, v, n);
}

/* ---- The head ---- */

static void
put_line(const char *head, const struct proxyreq *r, enum proxyfwd_mode mode,
    struct obuf *o)
{
	const char *path = head + r->path;
	char hostline[PROXYREQ_HOST_MAX + 32];
	bool v6 = strchr(r->host, ':') != NULL;
	int n;

	if (mode == PROXYFWD_TUNNEL) {
		ob_put(o, head, r->line_len + 2);
		for (size_t i = 0; i < r->nfields; i++)
			if (proxyreq_field_is(r, head, i, "host")) {
				ob_str(o, "Host: ");
				ob_put(o, head + r->fields[i].value,
				    r->fields[i].vlen);
				ob_str(o, "\r\n");
			}
		return;
	}
	ob_put(o, head, strlen(r->method) + 1);
	if (r->plen == 0 || *path == '?')
		ob_str(o, "/");
	ob_put(o, path, r->plen);
	ob_str(o, " ");
	ob_put(o, head + r->line_len - 8, 8);
	ob_str(o, "\r\n");
	if (r->port == 80)
		n = snprintf(hostline, sizeof(hostline), "Host: %s%s%s\r\n",
		    v6 ? "[" : "", r->host, v6 ? "]" : "");
	else
		n = snprintf(hostline, sizeof(hostline), "Host: %s%s%s:%u\r\n",
		    v6 ? "[" : "", r->host, v6 ? "]" : "", (unsigned)r->port);
	if (n > 0 && (size_t)n < sizeof(hostline))
		ob_put(o, hostline, (size_t)n);
}

static void
build(const struct secret_set *set, const char *head, const struct proxyreq *r,
    const char *host, enum proxyfwd_mode mode, struct obuf *o,
    proxysecret_mask *used)
{
	bool tunnel = mode == PROXYFWD_TUNNEL;
	char len[48];

	put_line(head, r, mode, o);
	for (size_t i = 0; i < r->nfields; i++) {
		const struct proxyreq_field *f = &r->fields[i];
		if (!proxyreq_field_forwarded(r, head, i) || (tunnel &&
		    proxyreq_field_is(r, head, i, "accept-encoding")))
			continue;
		ob_put(o, head + f->name, f->nlen);
		ob_str(o, ": ");
		if (tunnel && set != NULL && set->n > 0)
			put_value(set, host, head + f->name, f->nlen,
			    head + f->value, f->vlen, o, used);
		else
			ob_put(o, head + f->value, f->vlen);
		ob_str(o, "\r\n");
	}
	if (r->framing == PROXYREQ_BODY_CHUNKED)
		ob_str(o, "Transfer-Encoding: chunked\r\n");
	else if (r->framing == PROXYREQ_BODY_LENGTH || r->length_seen) {
		snprintf(len, sizeof(len), "Content-Length: %llu\r\n",
		    (unsigned long long)(r->framing == PROXYREQ_BODY_LENGTH ?
		    r->length : 0));
		ob_str(o, len);
	}
	if (tunnel)
		ob_str(o, "Accept-Encoding: identity\r\n");
	if (mode == PROXYFWD_PLAIN || r->close)
		ob_str(o, "Connection: close\r\n");
	ob_str(o, "\r\n");
}

int
proxyfwd_check(const struct secret_set *set, const char *head,
    const struct proxyreq *r, const char *host, enum proxyfwd_mode mode,
    struct proxyfwd_head *h)
{
	int st;

	memset(h, 0, sizeof(*h));
	h->refused = -1;
	if ((st = check_names(set, head, r, mode == PROXYFWD_TUNNEL,
	    &h->why)) != 0)
		return st;
	if (set != NULL && set->n > 0 && (st = check_placeholders(set, head,
	    r, host, mode == PROXYFWD_TUNNEL, h)) != 0)
		return st;
	return 0;
}

int
proxyfwd_head(const struct secret_set *set, const char *head,
    const struct proxyreq *r, const char *host, enum proxyfwd_mode mode,
    struct proxyfwd_head *h)
{
	struct obuf o = { NULL, 0, 0 };
	int st;

	if ((st = proxyfwd_check(set, head, r, host, mode, h)) != 0)
		return st;
	if (mode == PROXYFWD_CONNECT)
		return 0;
	build(set, head, r, host, mode, &o, &h->used);
	h->out = o.p;
	h->len = o.len;
	return 0;
}

void
proxyfwd_head_free(struct proxyfwd_head *h)
{
	if (h->out != NULL) {
		wire_wipe(h->out, h->len);
		free(h->out);
	}
	h->out = NULL;
	h->len = 0;
}

/* ---- The body ---- */

void
proxyfwd_body_init(struct proxyfwd_body *fb, const struct proxyreq *r)
{
	memset(fb, 0, sizeof(*fb));
	proxyreq_body_init(&fb->b, r);
	fb->chunked = r->framing == PROXYREQ_BODY_CHUNKED;
	fb->trailer_secret = -1;
}

static bool
emit(struct proxyfwd_body *fb, const void *p, size_t n)
{
	if (!fb->out_failed && !fb->out(fb->arg, p, n))
		fb->out_failed = true;
	return !fb->out_failed;
}

/* Body data: scanned, and sent in a chunk of the proxy's own if chunked. */
static void
body_data(void *arg, const uint8_t *p, size_t n)
{
	struct proxyfwd_body *fb = arg;
	char size[24];

	if (n == 0)
		return;
	proxysecret_scan(fb->set, &fb->scan, p, n);
	if (fb->chunked) {
		snprintf(size, sizeof(size), "%zx\r\n", n);
		if (!emit(fb, size, strlen(size)) || !emit(fb, p, n))
			return;
		(void)emit(fb, "\r\n", 2);
		return;
	}
	(void)emit(fb, p, n);
}

enum proxyfwd_status
proxyfwd_body_feed(struct proxyfwd_body *fb, const struct secret_set *set,
    const uint8_t *p, size_t n, size_t *used, proxyfwd_out_fn *out,
    void *arg)
{
	proxysecret_mask m;

	fb->out = out;
	fb->arg = arg;
	fb->set = set;
	*used = proxyreq_body_feed(&fb->b, p, n, body_data, fb);
	if (fb->out_failed)
		return PROXYFWD_OUT;
	if (fb->b.bad)
		return PROXYFWD_BAD;
	if (!proxyreq_body_done(&fb->b))
		return PROXYFWD_MORE;
	if (fb->chunked) {
		m = proxysecret_fields_mask(set, fb->b.tbuf, fb->b.trailers);
		for (size_t i = 0; set != NULL && i < set->n; i++)
			if (m & ((proxysecret_mask)1 << i)) {
				fb->trailer_secret = (int)i;
				return PROXYFWD_TRAILER;
			}
		if (!emit(fb, "0\r\n\r\n", 5))
			return PROXYFWD_OUT;
	}
	return PROXYFWD_DONE;
}
