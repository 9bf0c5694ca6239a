/*
 * The intercepting proxy's parsers of guest bytes, as daemon/proxytls.c
 * runs them: a request head in origin form (proxyreq_parse_origin), its
 * placeholders checked and replaced (proxyfwd_head), and the body after
 * it framed (proxyreq_body_feed) and scanned (proxysecret_scan). Checked:
 *   - a head that passes is sent as one whole head, its request line as it
 *     came, and no value of a secret that does not list the host;
 *   - a placeholder of a secret that does not list the host never passes;
 *   - a value appears only in a credential header line;
 *   - the body framing and the scan give the same answer whether the body
 *     comes in one piece or two (the split comes from the input).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxyfwd.h"
#include "proxyreq.h"
#include "proxysecret.h"
#include "secret.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define PH_A "AGENTLANE_PH_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define PH_B "AGENTLANE_PH_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define VAL_A "value-of-A-0123"
#define VAL_B "value-of-B-4567"

static struct secret_set *set;

static void
init(void)
{
	const char *ha[] = { "*.a.test" }, *hb[] = { "b.test" };
	const char *xb[] = { "x-b-key" };
	char err[128];

	set = secret_set_new(2);
	if (secret_set_add(set, "A", PH_A, VAL_A, strlen(VAL_A), ha, 1, err,
	    sizeof err) != 0 || secret_set_add(set, "B", PH_B, VAL_B,
	    strlen(VAL_B), hb, 1, err, sizeof err) != 0 ||
	    secret_set_headers(set, 1, xb, 1, err, sizeof err) != 0)
		abort();
}

struct sink {
	uint8_t *p;
	size_t n;
};

static void
collect(void *arg, const uint8_t *p, size_t n)
{
	struct sink *s = arg;
	memcpy(s->p + s->n, p, n);
	s->n += n;
}

/* Every line of out that holds a value is a credential header's. */
static void
check_lines(const char *out, size_t len)
{
	const char *p = out, *end = out + len, *eol;

	for (; p < end; p = eol + 2) {
		if ((eol = memmem(p, (size_t)(end - p), "\r\n", 2)) == NULL)
			abort();
		for (size_t i = 0; i < set->n; i++) {
			const struct secret *s = &set->v[i];
			const char *colon = memchr(p, ':', (size_t)(eol - p));
			if (memmem(p, (size_t)(eol - p), s->value,
			    s->value_len) == NULL)
				continue;
			if (colon == NULL || !secret_header_is_credential(s, p,
			    (size_t)(colon - p)))
				abort();
		}
	}
}

static void
check_head(const char *head, size_t hl, const struct proxyreq *r)
{
	struct proxyfwd_head h;
	int st = proxyfwd_head(set, head, r, r->host, PROXYFWD_TUNNEL, &h);

	if (st != 0) {
		if ((st != 403 && st != 400) || h.out != NULL ||
		    (st == 403 && (h.refused < 0 || (size_t)h.refused >= set->n)) ||
		    (st == 400 && h.why == NULL))
			abort();
		return;
	}
	for (size_t i = 0; i < set->n; i++) {
		const struct secret *s = &set->v[i];
		bool listed = secret_host_match(s, r->host);
		/* A placeholder in the line of a host not its secret's: refused. */
		if (!listed && memmem(head, r->line_len, s->placeholder,
		    s->placeholder_len) != NULL)
			abort();
		/* No value for a host not its secret's (unless the guest typed it). */
		if (!listed && memmem(h.out, h.len, s->value, s->value_len) &&
		    !memmem(head, hl, s->value, s->value_len))
			abort();
	}
	if (proxyreq_head_len(h.out, h.len) != h.len)
		abort();
	/* The request line is never rewritten. */
	if (h.len < r->line_len || memcmp(h.out, head, r->line_len) != 0)
		abort();
	if (!memmem(head, hl, VAL_A, strlen(VAL_A)) &&
	    !memmem(head, hl, VAL_B, strlen(VAL_B)))
		check_lines(h.out, h.len);
	proxyfwd_head_free(&h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t hl = proxyreq_head_len(buf, size);
	struct proxyreq r;
	struct proxyreq_body b1, b2;
	const char *why;
	struct sink s1, s2;
	struct proxysecret_scan sc1, sc2;
	size_t n1, n2a, n2b, split;

	if (set == NULL)
		init();
	if (hl == 0)
		hl = size;
	if (proxyreq_parse_origin(buf, hl, &r, &why) != 0) {
		if (why == NULL)
			abort();
		return 0;
	}
	check_head(buf, hl, &r);

	/* The body: whole, then in two pieces split where the input says. */
	const uint8_t *body = data + hl;
	size_t bn = size - hl;
	split = bn > 0 ? data[0] % (bn + 1) : 0;
	s1.p = malloc(bn + 1);
	s2.p = malloc(bn + 1);
	s1.n = s2.n = 0;
	memset(&sc1, 0, sizeof sc1);
	memset(&sc2, 0, sizeof sc2);
	proxyreq_body_init(&b1, &r);
	proxyreq_body_init(&b2, &r);
	n1 = proxyreq_body_feed(&b1, body, bn, collect, &s1);
	n2a = proxyreq_body_feed(&b2, body, split, collect, &s2);
	n2b = n2a == split ? proxyreq_body_feed(&b2, body + split, bn - split,
	    collect, &s2) : 0;
	if (n1 > bn || n1 != n2a + n2b || b1.bad != b2.bad ||
	    proxyreq_body_done(&b1) != proxyreq_body_done(&b2) ||
	    s1.n != s2.n || memcmp(s1.p, s2.p, s1.n) != 0 || s1.n > n1)
		abort();
	/* The scan finds the same placeholders across any seam. */
	proxysecret_scan(set, &sc1, s1.p, s1.n);
	size_t k = s2.n > 0 ? data[size - 1] % (s2.n + 1) : 0;
	proxysecret_scan(set, &sc2, s2.p, k);
	proxysecret_scan(set, &sc2, s2.p + k, s2.n - k);
	if (sc1.found != sc2.found ||
	    sc1.found != proxysecret_find(set, s1.p, s1.n))
		abort();
	free(s1.p);
	free(s2.p);
	return 0;
}
