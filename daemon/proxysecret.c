/*
 * Placeholders in requests (see proxysecret.h). Base64 is OpenSSL's; the
 * rest is comparison of whole strings, on purpose: a value is put only
 * where a placeholder is exactly the credential, so that no text around it
 * (a URL, a JSON body, a cookie) can carry the value somewhere else.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "proxyreq.h"
#include "proxysecret.h"
#include "util.h"
#include "wire.h"

proxysecret_mask
proxysecret_find(const struct secret_set *set, const void *p, size_t n)
{
	proxysecret_mask m = 0;

	if (set == NULL)
		return 0;
	for (size_t i = 0; i < set->n; i++)
		if (n >= set->v[i].placeholder_len && memmem(p, n,
		    set->v[i].placeholder, set->v[i].placeholder_len) != NULL)
			m |= (proxysecret_mask)1 << i;
	return m;
}

/* The secret whose placeholder is exactly p[0..n), or -1. */
static int
exact(const struct secret_set *set, const char *p, size_t n)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i].placeholder_len == n &&
		    memcmp(set->v[i].placeholder, p, n) == 0)
			return (int)i;
	return -1;
}

/*
 * Decodes "Basic" credentials v[0..n) into a malloc'd buffer (NUL added);
 * NULL when they are not base64. The caller wipes it.
 */
static uint8_t *
basic_decode(const char *v, size_t n, size_t *outlen)
{
	size_t pad = 0;
	uint8_t *out;
	int k;

	if (n == 0 || n % 4 != 0 || n > 65536)
		return NULL;
	while (pad < 2 && v[n - 1 - pad] == '=')
		pad++;
	out = xmalloc(n / 4 * 3 + 1);
	if ((k = EVP_DecodeBlock(out, (const unsigned char *)v, (int)n)) < 0 ||
	    (size_t)k < pad) {
		free(out);
		return NULL;
	}
	*outlen = (size_t)k - pad;
	out[*outlen] = '\0';
	return out;
}

/* "Basic xxx" (scheme case-insensitive): the credentials' offset, or 0. */
static size_t
basic_at(const char *v, size_t n)
{
	if (n > 6 && strncasecmp(v, "Basic ", 6) == 0)
		return 6;
	return 0;
}

/* Placeholders in a header value, its decoded Basic credentials too. */
static proxysecret_mask
field_mask(const struct secret_set *set, const char *v, size_t n)
{
	proxysecret_mask m = proxysecret_find(set, v, n);
	size_t at = basic_at(v, n), dn;
	uint8_t *d;

	if (at > 0 && (d = basic_decode(v + at, n - at, &dn)) != NULL) {
		m |= proxysecret_find(set, d, dn);
		wire_wipe(d, dn);
		free(d);
	}
	return m;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The request line, raw and percent-decoded. */
static proxysecret_mask
line_mask(const struct secret_set *set, const char *line, size_t n)
{
	proxysecret_mask m = proxysecret_find(set, line, n);
	char *d = xmalloc(n + 1);
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int hi, lo;
		if (line[i] == '%' && i + 2 < n && (hi = hexval(line[i + 1])) >= 0
		    && (lo = hexval(line[i + 2])) >= 0) {
			d[k++] = (char)(hi * 16 + lo);
			i += 2;
		} else
			d[k++] = line[i];
	}
	m |= proxysecret_find(set, d, k);
	free(d);
	return m;
}

struct obuf {
	char *p;
	size_t len, cap;
	bool over;
};

static void
ob_put(struct obuf *o, const void *s, size_t n)
{
	if (o->over || n > PROXYSECRET_HEAD_MAX - o->len) {
		o->over = true;
		return;
	}
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

/*
 * Basic user:password where either is a placeholder of a secret that
 * lists host: writes the re-encoded credentials. False: not that shape.
 */
static bool
put_basic(const struct secret_set *set, const char *host, const char *v,
    size_t n, struct obuf *o, proxysecret_mask *used)
{
	size_t dn, un, pn, tn;
	uint8_t *d = basic_decode(v, n, &dn), *colon, *t;
	int us, ps;

	if (d == NULL)
		return false;
	if ((colon = memchr(d, ':', dn)) == NULL) {
		wire_wipe(d, dn);
		free(d);
		return false;
	}
	un = (size_t)(colon - d);
	pn = dn - un - 1;
	us = exact(set, (char *)d, un);
	ps = exact(set, (char *)colon + 1, pn);
	if (us >= 0 && !secret_host_match(&set->v[us], host))
		us = -1;
	if (ps >= 0 && !secret_host_match(&set->v[ps], host))
		ps = -1;
	if (us < 0 && ps < 0) {
		wire_wipe(d, dn);
		free(d);
		return false;
	}
	tn = (us >= 0 ? set->v[us].value_len : un) + 1 +
	    (ps >= 0 ? set->v[ps].value_len : pn);
	t = xmalloc(tn);
	memcpy(t, us >= 0 ? set->v[us].value : d, us >= 0 ?
	    set->v[us].value_len : un);
	size_t k = us >= 0 ? set->v[us].value_len : un;
	t[k++] = ':';
	memcpy(t + k, ps >= 0 ? set->v[ps].value : colon + 1, ps >= 0 ?
	    set->v[ps].value_len : pn);
	uint8_t *e = xmalloc(4 * ((tn + 2) / 3) + 1);
	int en = EVP_EncodeBlock(e, t, (int)tn);
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

/* "SCHEME rest": the placeholder's secret when rest is one, else -1. */
static int
scheme_secret(const struct secret_set *set, const char *v, size_t n)
{
	const char *sp = memchr(v, ' ', n);

	if (sp == NULL || sp == v)
		return -1;
	for (const char *q = v; q < sp; q++)
		if (!((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
		    (*q >= '0' && *q <= '9') || strchr("-._~+!#$%&'*^`|", *q)))
			return -1;
	return exact(set, sp + 1, n - (size_t)(sp - v) - 1);
}

/* The value of a forwarded field, a whole-credential placeholder replaced. */
static void
put_value(const struct secret_set *set, const char *host, bool replace,
    bool auth, const char *v, size_t n, struct obuf *o, proxysecret_mask *used)
{
	size_t at, mark;
	int i;

	if (!replace || proxysecret_find(set, v, n) == 0) {
		/* Basic credentials are encoded: the placeholder is not seen. */
		if (!replace || !auth || (at = basic_at(v, n)) == 0) {
			ob_put(o, v, n);
			return;
		}
	}
	if ((i = exact(set, v, n)) >= 0 && secret_host_match(&set->v[i], host)) {
		ob_put(o, set->v[i].value, set->v[i].value_len);
		*used |= (proxysecret_mask)1 << i;
		return;
	}
	/* A scheme and a credential: Authorization only. */
	if (!auth) {
		ob_put(o, v, n);
		return;
	}
	if ((at = basic_at(v, n)) > 0) {
		mark = o->len;
		ob_put(o, v, at);
		if (put_basic(set, host, v + at, n - at, o, used))
			return;
		o->len = mark;
	}
	/* "Bearer PH", "token PH", "Basic PH" (PH holding user:password). */
	if ((i = scheme_secret(set, v, n)) >= 0 &&
	    secret_host_match(&set->v[i], host)) {
		ob_put(o, v, n - set->v[i].placeholder_len);
		ob_put(o, set->v[i].value, set->v[i].value_len);
		*used |= (proxysecret_mask)1 << i;
		return;
	}
	ob_put(o, v, n);
}

static void
build(const struct secret_set *set, const char *head, const struct proxyreq *r,
    const char *host, bool replace, struct obuf *o, proxysecret_mask *used)
{
	ob_put(o, head, r->line_len + 2);
	for (size_t i = 0; i < r->nfields; i++) {
		const struct proxyreq_field *f = &r->fields[i];
		if (!proxyreq_field_forwarded(r, head, i) &&
		    !proxyreq_field_is(r, head, i, "host"))
			continue;
		ob_put(o, head + f->name, f->nlen);
		ob_put(o, ": ", 2);
		put_value(set, host, replace, proxyreq_field_is(r, head, i,
		    "authorization"), head + f->value, f->vlen, o, used);
		ob_put(o, "\r\n", 2);
	}
	if (r->close)
		ob_put(o, "Connection: close\r\n", 19);
	ob_put(o, "\r\n", 2);
}

int
proxysecret_head(const struct secret_set *set, const char *head,
    const struct proxyreq *r, const char *host, bool out, bool replace,
    struct proxysecret_head *h)
{
	proxysecret_mask m;
	struct obuf o = { NULL, 0, 0, false };

	memset(h, 0, sizeof(*h));
	h->refused = -1;
	if (set == NULL || set->n == 0)
		m = 0;
	else {
		m = line_mask(set, head, r->line_len);
		for (size_t i = 0; i < r->nfields; i++)
			m |= field_mask(set, head + r->fields[i].value,
			    r->fields[i].vlen);
	}
	for (size_t i = 0; set != NULL && i < set->n; i++)
		if ((m & ((proxysecret_mask)1 << i)) &&
		    !secret_host_match(&set->v[i], host)) {
			h->refused = (int)i;
			return 403;
		}
	if (!out)
		return 0;
	build(set, head, r, host, replace && set != NULL, &o, &h->used);
	if (o.over) {
		if (o.p != NULL)
			wire_wipe(o.p, o.cap);
		free(o.p);
		h->used = 0;
		return 431;
	}
	h->out = o.p;
	h->len = o.len;
	return 0;
}

void
proxysecret_scan(const struct secret_set *set, struct proxysecret_scan *sc,
    const uint8_t *p, size_t n)
{
	size_t keep, maxl;

	if (set == NULL || set->n == 0 || n == 0)
		return;
	maxl = set->placeholder_max;
	/* Across the seam: the kept tail and the first bytes of this piece. */
	if (sc->ntail > 0) {
		uint8_t seam[2 * SECRET_PLACEHOLDER_MAX];
		size_t k = n < maxl - 1 ? n : maxl - 1;
		memcpy(seam, sc->tail, sc->ntail);
		memcpy(seam + sc->ntail, p, k);
		sc->found |= proxysecret_find(set, seam, sc->ntail + k);
	}
	sc->found |= proxysecret_find(set, p, n);
	/* Keep the last maxl - 1 bytes of what has been seen. */
	keep = maxl - 1;
	if (n >= keep) {
		memcpy(sc->tail, p + n - keep, keep);
		sc->ntail = keep;
	} else {
		size_t drop = sc->ntail + n > keep ? sc->ntail + n - keep : 0;
		memmove(sc->tail, sc->tail + drop, sc->ntail - drop);
		memcpy(sc->tail + sc->ntail - drop, p, n);
		sc->ntail = sc->ntail - drop + n;
	}
}
