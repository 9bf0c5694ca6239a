/*
 * Placeholders in requests (see proxysecret.h). Comparison of whole
 * strings, and decoding where a guest could hide one: percent-encoding in
 * the request line, base64 in any header value. A guest that hides a
 * placeholder better than this only hides it from the tripwire: no value
 * goes anywhere but where proxyfwd.c finds a placeholder exactly.
 */
#include <stdlib.h>
#include <string.h>

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

int
proxysecret_exact(const struct secret_set *set, const char *p, size_t n)
{
	for (size_t i = 0; set != NULL && i < set->n; i++)
		if (set->v[i].placeholder_len == n &&
		    memcmp(set->v[i].placeholder, p, n) == 0)
			return (int)i;
	return -1;
}

/* A base64 digit of either alphabet ('+' and '-', '/' and '_'), or -1. */
static int
b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* Digits s[0..n) (all valid, no padding) into out: n * 3 / 4 bytes. */
static size_t
b64_run(const char *s, size_t n, uint8_t *out)
{
	uint32_t acc = 0;
	size_t k = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		acc = (acc << 6) | (uint32_t)b64val((unsigned char)s[i]);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[k++] = (uint8_t)(acc >> bits);
		}
	}
	return k;
}

uint8_t *
proxysecret_b64_strict(const char *v, size_t n, size_t *outlen)
{
	size_t pad = 0;
	uint8_t *out;

	if (n == 0 || n % 4 != 0)
		return NULL;
	while (pad < 2 && v[n - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++)
		if (v[i] == '-' || v[i] == '_' || b64val((unsigned char)v[i]) < 0)
			return NULL;
	out = xmalloc(n / 4 * 3 + 1);
	*outlen = b64_run(v, n - pad, out);
	out[*outlen] = '\0';
	return out;
}

/* Shortest run of digits that can encode a placeholder. */
#define B64_RUN_MIN	(SECRET_PLACEHOLDER_MIN * 4 / 3)

proxysecret_mask
proxysecret_value_mask(const struct secret_set *set, const char *v, size_t n)
{
	proxysecret_mask m = proxysecret_find(set, v, n);
	char *c;
	uint8_t *d;
	size_t cn = 0, i, j;

	if (set == NULL || set->n == 0 || n < B64_RUN_MIN)
		return m;
	/* Blanks removed: "QUdF TlRM..." is one encoding. */
	c = xmalloc(n);
	d = xmalloc(n);
	for (i = 0; i < n; i++)
		if (v[i] != ' ' && v[i] != '\t')
			c[cn++] = v[i];
	for (i = 0; i < cn; i = j + 1) {
		for (j = i; j < cn && b64val((unsigned char)c[j]) >= 0; j++)
			;
		if (j - i < B64_RUN_MIN)
			continue;
		/* The encoding may start at any of four offsets of the run. */
		for (size_t k = 0; k < 4; k++) {
			size_t dn = b64_run(c + i + k, j - i - k, d);
			m |= proxysecret_find(set, d, dn);
		}
	}
	wire_wipe(d, n);
	wire_wipe(c, n);
	free(d);
	free(c);
	return m;
}

proxysecret_mask
proxysecret_fields_mask(const struct secret_set *set, const char *t,
    size_t n)
{
	const char *p = t, *end = t + n, *eol, *colon, *v;
	proxysecret_mask m = proxysecret_find(set, t, n);

	for (; p < end; p = eol + 2) {
		if ((eol = memchr(p, '\r', (size_t)(end - p))) == NULL)
			eol = end;
		if ((colon = memchr(p, ':', (size_t)(eol - p))) == NULL)
			continue;
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		m |= proxysecret_value_mask(set, v, (size_t)(eol - v));
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

proxysecret_mask
proxysecret_line_mask(const struct secret_set *set, const char *line,
    size_t n)
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
