/*
 * The invariant of daemon/proxyfwd.c (issue 29): the bytes the proxy
 * forwards frame exactly the requests it parsed. The input is a stream of
 * pipelined requests as a guest sends them; its first byte picks the path
 * (a plain http:// request, or requests inside an intercepted tunnel).
 * Each request is parsed (proxyreq), its head written (proxyfwd_head) and
 * its body framed again (proxyfwd_body_feed), as the relay does; the
 * forwarded stream is then parsed again as an upstream would, and must
 * give the same requests: method, target, Host, framing, body bytes, in
 * the same number and order, with no byte left over (a byte left over is
 * a request the proxy never saw).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxyfwd.h"
#include "proxyreq.h"
#include "secret.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define PH_A "AGENTLANE_PH_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define VAL_A "value-of-A-0123456789-long-enough-to-grow-a-head"
#define MAXREQ 16

struct seen {
	char method[16];
	char target[256];
	size_t tlen;
	char host[PROXYREQ_HOST_MAX + 1];
	bool chunked;
	uint64_t bodylen;
	uint64_t bodysum;
};

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static struct secret_set *set;

static bool
out(void *arg, const void *p, size_t n)
{
	struct buf *b = arg;

	if (n == 0)
		return true;
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		while (cap < b->n + n)
			cap *= 2;
		if ((b->p = realloc(b->p, cap)) == NULL)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
	return true;
}

/* Body bytes as a length and a position-dependent sum. */
static void
body_sum(void *arg, const uint8_t *p, size_t n)
{
	struct seen *s = arg;

	for (size_t i = 0; i < n; i++)
		s->bodysum = s->bodysum * 31 + p[i] + 1;
	s->bodylen += n;
}

static void
note(struct seen *s, const char *head, const struct proxyreq *r,
    bool plain)
{
	const char *t = head + (plain ? r->path : r->target);
	size_t tn = plain ? r->plen : r->tlen;

	memset(s, 0, sizeof(*s));
	memcpy(s->method, r->method, sizeof(s->method));
	if (plain && (tn == 0 || *t == '?'))
		s->target[s->tlen++] = '/';
	if (tn > sizeof(s->target) - 2)
		tn = sizeof(s->target) - 2;
	memcpy(s->target + s->tlen, t, tn);
	s->tlen += tn;
	memcpy(s->host, r->host, sizeof(s->host));
	s->chunked = r->framing == PROXYREQ_BODY_CHUNKED;
}

/* The guest's stream through the proxy: how many requests went whole. */
static size_t
forward(const uint8_t *data, size_t size, bool plain, struct seen *seen,
    struct buf *fwd)
{
	static struct proxyfwd_body fb;	/* large: its trailer buffer */
	size_t at = 0, nreq = 0;

	while (at < size && nreq < MAXREQ) {
		const char *head = (const char *)data + at;
		size_t hl = proxyreq_head_len(head, size - at), used;
		struct proxyreq r;
		struct proxyfwd_head h;
		const char *why;
		struct buf body = { NULL, 0, 0 };

		if (hl == 0)
			break;
		if ((plain ? proxyreq_parse(head, hl, &r, &why) :
		    proxyreq_parse_origin(head, hl, &r, &why)) != 0 ||
		    (plain && r.connect) || proxyfwd_head(set, head, &r, r.host,
		    plain ? PROXYFWD_PLAIN : PROXYFWD_TUNNEL, &h) != 0)
			break;
		note(&seen[nreq], head, &r, plain);
		proxyfwd_body_init(&fb, &r);
		enum proxyfwd_status st = proxyfwd_body_feed(&fb, set,
		    data + at + hl, size - at - hl, &used, out, &body);
		if (st != PROXYFWD_DONE) {
			/* Cut short or refused: the upstream gets no request. */
			proxyfwd_head_free(&h);
			free(body.p);
			break;
		}
		(void)out(fwd, h.out, h.len);
		(void)out(fwd, body.p, body.n);
		proxyfwd_head_free(&h);
		free(body.p);
		/* The data, counted as the guest framed it. */
		struct proxyreq_body b;
		proxyreq_body_init(&b, &r);
		(void)proxyreq_body_feed(&b, data + at + hl, used, body_sum,
		    &seen[nreq]);
		nreq++;
		at += hl + used;
		if (r.close)
			break;
	}
	return nreq;
}

/* The forwarded stream as an upstream parses it: the same requests. */
static void
reparse(const struct buf *fwd, bool plain, const struct seen *seen,
    size_t nreq)
{
	static struct proxyreq_body b;
	size_t at = 0, k = 0;

	while (at < fwd->n) {
		const char *head = (const char *)fwd->p + at;
		size_t hl = proxyreq_head_len(head, fwd->n - at), used;
		struct proxyreq r;
		struct seen s;
		const char *why;

		if (hl == 0 || k >= nreq)
			abort();
		if (proxyreq_parse_origin(head, hl, &r, &why) != 0) {
			/* Ours adds a field or three: a head at the cap. */
			if (r.nfields + 3 >= PROXYREQ_FIELDS_MAX)
				return;
			abort();
		}
		note(&s, head, &r, false);
		proxyreq_body_init(&b, &r);
		used = proxyreq_body_feed(&b, fwd->p + at + hl, fwd->n - at - hl,
		    body_sum, &s);
		if (!proxyreq_body_done(&b) || b.trailers != 0)
			abort();
		if (strcmp(s.method, seen[k].method) != 0 ||
		    s.tlen != seen[k].tlen ||
		    memcmp(s.target, seen[k].target, s.tlen) != 0 ||
		    strcmp(s.host, seen[k].host) != 0 ||
		    s.chunked != seen[k].chunked ||
		    s.bodylen != seen[k].bodylen ||
		    s.bodysum != seen[k].bodysum)
			abort();
		if (plain && !r.close)
			abort();
		k++;
		at += hl + used;
	}
	if (k != nreq)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct seen seen[MAXREQ];
	struct buf fwd = { NULL, 0, 0 };
	bool plain;
	size_t nreq;

	if (set == NULL) {
		const char *ha[] = { "*.a.test" };
		char err[128];
		set = secret_set_new(1);
		if (secret_set_add(set, "A", PH_A, VAL_A, strlen(VAL_A), ha, 1,
		    err, sizeof err) != 0)
			abort();
	}
	if (size == 0)
		return 0;
	plain = data[0] & 1;
	nreq = forward(data + 1, size - 1, plain, seen, &fwd);
	reparse(&fwd, plain, seen, nreq);
	free(fwd.p);
	return 0;
}
