/*
 * The response side of an intercepted connection (see proxyresp.h).
 *
 * Heads are read whole (at most max_head bytes), checked as strictly as
 * proxyreq.c checks requests, and passed on with their framing re-written
 * from what was parsed. Bodies stream: their data goes through the
 * redactor and out again as it comes.
 *
 * The redactor runs one Knuth-Morris-Pratt automaton per value over the
 * data, so that a value split across any feed, chunk or block boundary is
 * still found, in time linear in the data (times the number of values, and
 * only where a byte could continue or begin a value). Each automaton's
 * state is the longest tail of the data seen that is a prefix of its
 * value; the largest of them is exactly the tail that must be held back,
 * since any later occurrence that covers an earlier byte is one of those
 * prefixes. Every occurrence of every value is replaced, overlapping ones
 * included (their union is redacted), in a work buffer that holds the
 * held tail and at most one block of new data, so memory stays bounded.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxyreq.h"
#include "proxyresp.h"
#include "wire.h"

#define HEAD_CAP_MIN	1024	/* the head buffer's first size */
#define BLOCK		8192	/* body data scanned per pass */
#define CHUNK_LINE_MAX	1024	/* a chunk-size line, extensions in */
#define TRAILERS_MAX	8192	/* the trailer section */
#define FRAMING_MAX	48	/* the framing line the parser writes */

/*
 * The redaction byte: the first of these that no value holds, so that a
 * redaction can never make up a value with the bytes around it. All are
 * token characters, valid in a header name, a header value and a body.
 */
static const char redact_candidates[] =
    "X*#x~_-.!$%&'+^`|0123456789ABCDEFGHIJKLMNOPQRSTUVWYZ"
    "abcdefghijklmnopqrstuvwyz";

enum {
	S_HEAD,		/* reading a head (or between responses) */
	S_LENGTH,	/* Content-Length data */
	S_CLOSE,	/* data until upstream closes */
	S_SIZE,		/* chunk-size digits */
	S_EXT,		/* a chunk extension */
	S_SIZE_LF,
	S_DATA,		/* chunk data */
	S_DATA_CR,
	S_DATA_LF,
	S_TRAILER,	/* trailer lines (dropped) */
	S_TRAILER_LF,
	S_CLOSED,	/* the connection's last response is over */
	S_DEAD,		/* an error ended the connection */
};

enum framing { F_NONE, F_LENGTH, F_CHUNKED, F_CLOSE };

struct value {
	const uint8_t *v;
	uint32_t len;
	uint32_t st;		/* longest tail seen that prefixes v */
	uint16_t *fail;		/* KMP failure function (len < 2^16) */
	uint32_t idx;		/* its index in the set */
};

struct proxyresp {
	uint32_t max_head;

	/* Requests awaiting their responses, oldest first: HEAD or not. */
	bool q[PROXYRESP_PIPELINE_MAX];
	size_t qh, qn;

	int st;
	enum proxyresp_status err;
	const char *why;
	bool closing;		/* the last response ended the connection */
	bool close_after;	/* the current response will */

	uint8_t *hbuf;		/* the head being read */
	size_t hlen, hcap;
	uint8_t *obuf;		/* the head going out */
	size_t ocap;

	enum framing fr;
	uint64_t left;		/* bytes left in the body or chunk */
	uint32_t line, trailers, digits;

	struct value *vals;
	size_t nv;
	uint32_t vmax;		/* the longest value */
	bool first[256];	/* bytes that begin some value */
	uint8_t rbyte;
	uint8_t *work;		/* held tail, then one block */
	size_t nwork, wcap;
	bool idle;		/* every automaton at its start */

	proxysecret_mask found;
	uint64_t count;
};

/* ---- Redaction ---- */

static bool
values_init(struct proxyresp *r, const struct secret_set *set)
{
	bool used[256] = { false };
	size_t n = 0;

	for (size_t i = 0; set != NULL && i < set->n; i++)
		if (set->v[i].value != NULL && set->v[i].value_len > 0 &&
		    set->v[i].value_len <= SECRET_VALUE_MAX)
			n++;
	r->rbyte = 'X';
	if (n == 0)
		return true;
	if ((r->vals = calloc(n, sizeof(*r->vals))) == NULL)
		return false;
	for (size_t i = 0; i < set->n; i++) {
		const struct secret *s = &set->v[i];
		struct value *v;

		if (s->value == NULL || s->value_len == 0 ||
		    s->value_len > SECRET_VALUE_MAX)
			continue;
		v = &r->vals[r->nv++];
		v->v = s->value;
		v->len = (uint32_t)s->value_len;
		v->idx = (uint32_t)i;
		if ((v->fail = calloc(v->len, sizeof(*v->fail))) == NULL)
			return false;
		for (uint32_t k = 1, j = 0; k < v->len; k++) {
			while (j > 0 && v->v[k] != v->v[j])
				j = v->fail[j - 1];
			if (v->v[k] == v->v[j])
				j++;
			v->fail[k] = (uint16_t)j;
		}
		for (uint32_t k = 0; k < v->len; k++)
			used[v->v[k]] = true;
		r->first[v->v[0]] = true;
		if (v->len > r->vmax)
			r->vmax = v->len;
	}
	for (const char *c = redact_candidates; *c != '\0'; c++)
		if (!used[(uint8_t)*c]) {
			r->rbyte = (uint8_t)*c;
			break;
		}
	r->wcap = r->vmax - 1 + BLOCK;
	if ((r->work = malloc(r->wcap)) == NULL)
		return false;
	r->idle = true;
	return true;
}

/*
 * Runs the automata over p[0..n), redacting every occurrence in place.
 * An occurrence may begin before p: the held tail lies just before it.
 */
static void
scan(struct proxyresp *r, uint8_t *p, size_t n)
{
	if (r->nv == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		bool idle = true;
		uint8_t c;

		if (r->idle) {
			while (i < n && !r->first[p[i]])
				i++;
			if (i == n)
				break;
		}
		c = p[i];
		for (size_t k = 0; k < r->nv; k++) {
			struct value *v = &r->vals[k];
			uint32_t st = v->st;

			while (st > 0 && v->v[st] != c)
				st = v->fail[st - 1];
			if (v->v[st] == c)
				st++;
			if (st == v->len) {
				/* i + 1 < len: it began in the held tail. */
				uint8_t *s = i + 1 >= v->len ?
				    p + (i + 1 - v->len) :
				    p - (v->len - (i + 1));
				memset(s, r->rbyte, v->len);
				r->found |= (proxysecret_mask)1 << v->idx;
				r->count++;
				st = v->fail[st - 1];
			}
			v->st = st;
			if (st > 0)
				idle = false;
		}
		r->idle = idle;
	}
}

static uint32_t
held(const struct proxyresp *r)
{
	uint32_t m = 0;

	for (size_t k = 0; k < r->nv; k++)
		if (r->vals[k].st > m)
			m = r->vals[k].st;
	return m;
}

static void
scan_reset(struct proxyresp *r)
{
	for (size_t k = 0; k < r->nv; k++)
		r->vals[k].st = 0;
	r->idle = true;
}

/* ---- Output ---- */

#define FAIL(code, reason) do { r->err = (code); r->why = (reason); \
	return false; } while (0)

static bool
put(struct proxyresp *r, proxyresp_out_fn *out, void *arg, const void *p,
    size_t n)
{
	if (n > 0 && !out(arg, p, n))
		FAIL(PROXYRESP_BAD, "the guest's side took no more bytes");
	return true;
}

/* Body data, redacted, as the guest gets it: re-chunked when chunked. */
static bool
emit(struct proxyresp *r, const uint8_t *p, size_t n, proxyresp_out_fn *out,
    void *arg)
{
	char line[24];
	int ln;

	if (n == 0)
		return true;
	if (r->fr != F_CHUNKED)
		return put(r, out, arg, p, n);
	ln = snprintf(line, sizeof(line), "%zx\r\n", n);
	return put(r, out, arg, line, (size_t)ln) && put(r, out, arg, p, n) &&
	    put(r, out, arg, "\r\n", 2);
}

/*
 * Body data: scanned a block at a time after the held tail; all but the
 * new held tail goes out.
 */
static bool
data(struct proxyresp *r, const uint8_t *p, size_t n, proxyresp_out_fn *out,
    void *arg)
{
	if (r->nv == 0)
		return emit(r, p, n, out, arg);
	while (n > 0) {
		size_t b = n < BLOCK ? n : BLOCK, keep;

		memcpy(r->work + r->nwork, p, b);
		scan(r, r->work + r->nwork, b);
		r->nwork += b;
		p += b;
		n -= b;
		keep = held(r);
		if (!emit(r, r->work, r->nwork - keep, out, arg))
			return false;
		memmove(r->work, r->work + r->nwork - keep, keep);
		r->nwork = keep;
	}
	return true;
}

/* ---- Response boundaries ---- */

static void
pop(struct proxyresp *r)
{
	r->qh = (r->qh + 1) % PROXYRESP_PIPELINE_MAX;
	r->qn--;
}

/* The response is over: held bytes out, the next response (or none). */
static bool
body_end(struct proxyresp *r, proxyresp_out_fn *out, void *arg)
{
	if (r->nv > 0) {
		if (!emit(r, r->work, r->nwork, out, arg))
			return false;
		r->nwork = 0;
		scan_reset(r);
	}
	if (r->fr == F_CHUNKED && !put(r, out, arg, "0\r\n\r\n", 5))
		return false;
	pop(r);
	r->fr = F_NONE;
	if (r->close_after) {
		r->closing = true;
		r->st = S_CLOSED;
	} else
		r->st = S_HEAD;
	return true;
}

/* ---- Heads ---- */

static bool
name_is(const uint8_t *name, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp((const char *)name, want,
	    n) == 0;
}

/*
 * Calls fn for each element of the comma-separated list v[0..n), OWS
 * trimmed, empty ones skipped; stops at the first false.
 */
static bool
list_each(const uint8_t *v, size_t n, bool (*fn)(const uint8_t *, size_t,
    void *), void *arg)
{
	const uint8_t *t = v, *end = v + n;

	while (t < end) {
		const uint8_t *e = memchr(t, ',', (size_t)(end - t)), *te;
		if (e == NULL)
			e = end;
		for (te = e; te > t && proxyreq_ows(te[-1]); te--)
			;
		while (t < te && proxyreq_ows(*t))
			t++;
		if (te > t && !fn(t, (size_t)(te - t), arg))
			return false;
		if (e == end)
			break;
		t = e + 1;
	}
	return true;
}

static bool
is_identity(const uint8_t *t, size_t n, void *arg)
{
	return name_is(t, n, "identity");
}

static bool
not_token(const uint8_t *t, size_t n, void *arg)
{
	return !name_is(t, n, (const char *)arg);
}

/* What the head says, for its framing and for the connection. */
struct head {
	bool http10;
	unsigned code;
	bool cl, te, te_chunked, coded, close, keep_alive;
	unsigned tes;
	uint64_t length;
};

/* One header field (value trimmed) as it bears on framing. */
static bool
field(struct proxyresp *r, struct head *h, const uint8_t *name, size_t nn,
    const uint8_t *v, size_t vn)
{
	uint64_t x;

	if (name_is(name, nn, "content-length")) {
		if (!proxyreq_length(v, vn, &x))
			FAIL(PROXYRESP_BAD, "bad Content-Length");
		if (h->cl && x != h->length)
			FAIL(PROXYRESP_BAD, "conflicting Content-Length");
		h->cl = true;
		h->length = x;
	} else if (name_is(name, nn, "transfer-encoding")) {
		h->te = true;
		h->tes++;
		h->te_chunked = vn == 7 && name_is(v, vn, "chunked");
	} else if (name_is(name, nn, "content-encoding")) {
		if (!list_each(v, vn, is_identity, NULL))
			h->coded = true;
	} else if (name_is(name, nn, "connection")) {
		if (!list_each(v, vn, not_token, (void *)"close"))
			h->close = true;
		if (!list_each(v, vn, not_token, (void *)"keep-alive"))
			h->keep_alive = true;
	}
	return true;
}

/* Bare CR or LF and controls anywhere in the head: refused. */
static bool
check_bytes(struct proxyresp *r, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		if (c == '\n' && (i == 0 || p[i - 1] != '\r'))
			FAIL(PROXYRESP_BAD, "bare LF in a response head");
		if (c == '\r' && (i + 1 >= n || p[i + 1] != '\n'))
			FAIL(PROXYRESP_BAD, "bare CR in a response head");
		if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') ||
		    c == 0x7f)
			FAIL(PROXYRESP_BAD, "control character in a response head");
	}
	return true;
}

/* "HTTP/1.x NNN[ reason]": the status line up to eol. */
static bool
status_line(struct proxyresp *r, const uint8_t *p, size_t n, struct head *h)
{
	if (n < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    (p[7] != '0' && p[7] != '1') || p[8] != ' ')
		FAIL(PROXYRESP_BAD, "bad status line");
	if (p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9' || (n > 12 && p[12] != ' '))
		FAIL(PROXYRESP_BAD, "bad status code");
	h->http10 = p[7] == '0';
	h->code = (unsigned)(p[9] - '0') * 100 + (unsigned)(p[10] - '0') * 10 +
	    (unsigned)(p[11] - '0');
	return true;
}

static bool
ensure_obuf(struct proxyresp *r, size_t n)
{
	uint8_t *nb;

	if (n <= r->ocap)
		return true;
	if ((nb = malloc(n)) == NULL)
		FAIL(PROXYRESP_BAD, "out of memory");
	if (r->obuf != NULL) {
		wire_wipe(r->obuf, r->ocap);
		free(r->obuf);
	}
	r->obuf = nb;
	r->ocap = n;
	return true;
}

/*
 * Splits the head into status line and fields, checks each, and copies
 * every line but the framing fields into obuf; *olen is what was copied.
 */
static bool
split_head(struct proxyresp *r, struct head *h, size_t *olen)
{
	const uint8_t *p = r->hbuf, *end = r->hbuf + r->hlen - 2, *eol;
	size_t o;

	if (!check_bytes(r, r->hbuf, r->hlen))
		return false;
	eol = memchr(p, '\r', r->hlen);
	if (!status_line(r, p, (size_t)(eol - p), h))
		return false;
	if (!ensure_obuf(r, r->hlen + FRAMING_MAX))
		return false;
	o = (size_t)(eol + 2 - p);
	memcpy(r->obuf, p, o);
	for (p = eol + 2; p < end; p = eol + 2) {
		const uint8_t *colon, *v, *ve;

		eol = memchr(p, '\r', (size_t)(end + 2 - p));
		if (proxyreq_ows(*p))
			FAIL(PROXYRESP_BAD, "folded header in a response");
		colon = memchr(p, ':', (size_t)(eol - p));
		if (colon == NULL || colon == p)
			FAIL(PROXYRESP_BAD, "bad header line in a response");
		for (const uint8_t *q = p; q < colon; q++)
			if (!proxyreq_tchar(*q))
				FAIL(PROXYRESP_BAD, "bad header name in a response");
		for (v = colon + 1; v < eol && proxyreq_ows(*v); v++)
			;
		for (ve = eol; ve > v && proxyreq_ows(ve[-1]); ve--)
			;
		if (!field(r, h, p, (size_t)(colon - p), v, (size_t)(ve - v)))
			return false;
		if (name_is(p, (size_t)(colon - p), "content-length") ||
		    name_is(p, (size_t)(colon - p), "transfer-encoding"))
			continue;
		memcpy(r->obuf + o, p, (size_t)(eol + 2 - p));
		o += (size_t)(eol + 2 - p);
	}
	*olen = o;
	return true;
}

/* RFC 9112 6.3: how this response's body is framed, or a refusal. */
static bool
decide(struct proxyresp *r, const struct head *h, bool head_req)
{
	bool bodiless = head_req || h->code < 200 || h->code == 204 ||
	    h->code == 304;

	if (h->code == 101)
		FAIL(PROXYRESP_BAD, "101 Switching Protocols is not relayed");
	if (h->cl && h->te)
		FAIL(PROXYRESP_BAD, "both Transfer-Encoding and Content-Length");
	if (bodiless) {
		r->fr = F_NONE;
		return true;
	}
	if (h->te) {
		if (h->http10)
			FAIL(PROXYRESP_BAD, "Transfer-Encoding in HTTP/1.0");
		if (h->tes != 1 || !h->te_chunked)
			FAIL(PROXYRESP_UNSCANNABLE,
			    "Transfer-Encoding other than chunked");
		r->fr = F_CHUNKED;
	} else if (h->cl)
		r->fr = F_LENGTH;
	else
		r->fr = F_CLOSE;
	if (h->coded && !(r->fr == F_LENGTH && h->length == 0))
		FAIL(PROXYRESP_UNSCANNABLE, "Content-Encoding other than identity");
	return true;
}

/* A complete head in hbuf: checked, re-framed, redacted, sent. */
static bool
head_done(struct proxyresp *r, proxyresp_out_fn *out, void *arg)
{
	struct head h;
	bool head_req = r->q[r->qh];
	size_t o;
	int n = 0;

	memset(&h, 0, sizeof(h));
	if (!split_head(r, &h, &o) || !decide(r, &h, head_req))
		return false;
	wire_wipe(r->hbuf, r->hlen);
	r->hlen = 0;
	/* Fresh automata: a head is scanned on its own. */
	scan(r, r->obuf, o);
	scan_reset(r);
	if (r->fr == F_LENGTH || (r->fr == F_NONE && h.cl && (head_req ||
	    h.code == 304)))
		n = snprintf((char *)r->obuf + o, FRAMING_MAX,
		    "Content-Length: %llu\r\n", (unsigned long long)h.length);
	else if (r->fr == F_CHUNKED)
		n = snprintf((char *)r->obuf + o, FRAMING_MAX,
		    "Transfer-Encoding: chunked\r\n");
	memcpy(r->obuf + o + (size_t)n, "\r\n", 2);
	if (!put(r, out, arg, r->obuf, o + (size_t)n + 2))
		return false;
	wire_wipe(r->obuf, o);
	if (h.code < 200)
		return true;	/* the request still awaits its response */
	r->close_after = r->fr == F_CLOSE || h.close ||
	    (h.http10 && !h.keep_alive);
	switch (r->fr) {
	case F_NONE:
		return body_end(r, out, arg);
	case F_LENGTH:
		r->left = h.length;
		r->st = S_LENGTH;
		return r->left > 0 ? true : body_end(r, out, arg);
	case F_CHUNKED:
		r->st = S_SIZE;
		r->line = r->trailers = r->digits = 0;
		r->left = 0;
		return true;
	case F_CLOSE:
		r->st = S_CLOSE;
		return true;
	}
	FAIL(PROXYRESP_BAD, "internal framing state");
}

/* Head bytes up to the blank line; returns how many were the head's. */
static size_t
head_feed(struct proxyresp *r, const uint8_t *p, size_t n,
    proxyresp_out_fn *out, void *arg, bool *ok)
{
	size_t i = 0;

	*ok = false;
	if (r->qn == 0) {
		r->err = PROXYRESP_UNEXPECTED;
		r->why = "a response no request asked for";
		return 0;
	}
	while (i < n) {
		uint8_t c = p[i++];

		if (r->hlen == r->max_head) {
			r->err = PROXYRESP_TOO_LARGE;
			r->why = "response head too large";
			return i;
		}
		if (r->hlen == r->hcap) {
			size_t nc = r->hcap ? r->hcap * 2 : HEAD_CAP_MIN;
			uint8_t *nb;
			if (nc > r->max_head)
				nc = r->max_head;
			if ((nb = malloc(nc)) == NULL) {
				r->err = PROXYRESP_BAD;
				r->why = "out of memory";
				return i;
			}
			if (r->hbuf != NULL) {
				memcpy(nb, r->hbuf, r->hlen);
				wire_wipe(r->hbuf, r->hcap);
				free(r->hbuf);
			}
			r->hbuf = nb;
			r->hcap = nc;
		}
		r->hbuf[r->hlen++] = c;
		if (c != '\n')
			continue;
		if (r->hlen < 2 || r->hbuf[r->hlen - 2] != '\r') {
			r->err = PROXYRESP_BAD;
			r->why = "bare LF in a response head";
			return i;
		}
		if (r->hlen >= 4 && memcmp(r->hbuf + r->hlen - 4, "\r\n\r\n",
		    4) == 0) {
			*ok = head_done(r, out, arg);
			return i;
		}
	}
	*ok = true;
	return i;
}

/* ---- Chunked framing ---- */

/* One byte of chunk framing (not data); false when it is refused. */
static bool
chunk_byte(struct proxyresp *r, uint8_t c, proxyresp_out_fn *out, void *arg)
{
	int h;

	if (++r->line > CHUNK_LINE_MAX)
		FAIL(PROXYRESP_BAD, "chunk line too long");
	switch (r->st) {
	case S_SIZE:
		if ((h = proxyreq_hexval(c)) >= 0) {
			if (++r->digits > 15)
				FAIL(PROXYRESP_BAD, "chunk too large");
			r->left = r->left * 16 + (uint64_t)h;
			return true;
		}
		if (r->digits == 0)
			FAIL(PROXYRESP_BAD, "bad chunk size");
		if (c == ';') {
			r->st = S_EXT;
			return true;
		}
		if (c != '\r')
			FAIL(PROXYRESP_BAD, "bad chunk size");
		r->st = S_SIZE_LF;
		return true;
	case S_EXT:
		if (c == '\r')
			r->st = S_SIZE_LF;
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			FAIL(PROXYRESP_BAD, "bad chunk extension");
		return true;
	case S_SIZE_LF:
		if (c != '\n')
			FAIL(PROXYRESP_BAD, "bare CR in a chunk line");
		r->line = 0;
		r->digits = 0;
		r->st = r->left > 0 ? S_DATA : S_TRAILER;
		return true;
	case S_DATA_CR:
		if (c != '\r')
			FAIL(PROXYRESP_BAD, "chunk data overruns its size");
		r->st = S_DATA_LF;
		return true;
	case S_DATA_LF:
		if (c != '\n')
			FAIL(PROXYRESP_BAD, "chunk data overruns its size");
		r->line = 0;
		r->st = S_SIZE;
		return true;
	case S_TRAILER:
		if (++r->trailers > TRAILERS_MAX)
			FAIL(PROXYRESP_BAD, "trailers too large");
		if (c == '\r') {
			r->st = S_TRAILER_LF;
			return true;
		}
		if (c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f)
			FAIL(PROXYRESP_BAD, "bad trailer");
		return true;
	case S_TRAILER_LF:
		if (c != '\n')
			FAIL(PROXYRESP_BAD, "bare CR in a trailer");
		/* An empty line ends the trailers, and the body. */
		if (r->line == 2)
			return body_end(r, out, arg);
		r->line = 0;
		r->st = S_TRAILER;
		return true;
	}
	FAIL(PROXYRESP_BAD, "internal framing state");
}

/* ---- The interface ---- */

struct proxyresp *
proxyresp_new(const struct secret_set *set, uint32_t max_head)
{
	struct proxyresp *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->max_head = max_head;
	r->st = S_HEAD;
	if (!values_init(r, set)) {
		proxyresp_free(r);
		return NULL;
	}
	return r;
}

void
proxyresp_free(struct proxyresp *r)
{
	if (r == NULL)
		return;
	for (size_t k = 0; r->vals != NULL && k < r->nv; k++)
		if (r->vals[k].fail != NULL) {
			wire_wipe(r->vals[k].fail, r->vals[k].len *
			    sizeof(*r->vals[k].fail));
			free(r->vals[k].fail);
		}
	free(r->vals);
	if (r->work != NULL) {
		wire_wipe(r->work, r->wcap);
		free(r->work);
	}
	if (r->hbuf != NULL) {
		wire_wipe(r->hbuf, r->hcap);
		free(r->hbuf);
	}
	if (r->obuf != NULL) {
		wire_wipe(r->obuf, r->ocap);
		free(r->obuf);
	}
	wire_wipe(r, sizeof(*r));
	free(r);
}

bool
proxyresp_expect(struct proxyresp *r, bool head)
{
	if (r->qn == PROXYRESP_PIPELINE_MAX)
		return false;
	r->q[(r->qh + r->qn) % PROXYRESP_PIPELINE_MAX] = head;
	r->qn++;
	return true;
}

size_t
proxyresp_pending(const struct proxyresp *r)
{
	return r->qn;
}

/* An error ends the connection: nothing held survives it. */
static enum proxyresp_status
die(struct proxyresp *r, const char **why)
{
	if (r->work != NULL)
		wire_wipe(r->work, r->wcap);
	if (r->hbuf != NULL)
		wire_wipe(r->hbuf, r->hcap);
	r->nwork = r->hlen = 0;
	r->st = S_DEAD;
	*why = r->why;
	return r->err;
}

/* Body bytes from p (framing and data); returns how many were used. */
static size_t
body_feed(struct proxyresp *r, const uint8_t *p, size_t n,
    proxyresp_out_fn *out, void *arg, bool *ok)
{
	size_t take;

	*ok = true;
	switch (r->st) {
	case S_CLOSE:
		*ok = data(r, p, n, out, arg);
		return n;
	case S_LENGTH:
	case S_DATA:
		take = n < r->left ? n : (size_t)r->left;
		if (!(*ok = data(r, p, take, out, arg)))
			return take;
		r->left -= take;
		if (r->left == 0) {
			if (r->st == S_LENGTH)
				*ok = body_end(r, out, arg);
			else
				r->st = S_DATA_CR;
		}
		return take;
	default:
		*ok = chunk_byte(r, p[0], out, arg);
		return 1;
	}
}

enum proxyresp_status
proxyresp_feed(struct proxyresp *r, const uint8_t *p, size_t n,
    proxyresp_out_fn *out, void *arg, const char **why)
{
	size_t i = 0;
	bool ok = true;

	*why = NULL;
	if (r->st == S_DEAD) {
		*why = r->why;
		return r->err;
	}
	while (i < n) {
		if (r->st == S_CLOSED) {
			r->err = PROXYRESP_UNEXPECTED;
			r->why = "bytes after the connection's last response";
			return die(r, why);
		}
		if (r->st == S_HEAD)
			i += head_feed(r, p + i, n - i, out, arg, &ok);
		else
			i += body_feed(r, p + i, n - i, out, arg, &ok);
		if (!ok)
			return die(r, why);
	}
	return PROXYRESP_OK;
}

enum proxyresp_status
proxyresp_eof(struct proxyresp *r, proxyresp_out_fn *out, void *arg,
    const char **why)
{
	*why = NULL;
	switch (r->st) {
	case S_DEAD:
		*why = r->why;
		return r->err;
	case S_CLOSED:
		return PROXYRESP_OK;
	case S_CLOSE:
		r->close_after = true;
		if (!body_end(r, out, arg))
			return die(r, why);
		return PROXYRESP_OK;
	case S_HEAD:
		if (r->hlen == 0) {
			r->st = S_CLOSED;
			return PROXYRESP_OK;
		}
		break;
	default:
		break;
	}
	r->err = PROXYRESP_TRUNCATED;
	r->why = r->st == S_HEAD ? "upstream closed inside a response head" :
	    "upstream closed inside a response body";
	return die(r, why);
}

bool
proxyresp_closing(const struct proxyresp *r)
{
	return r->closing;
}

proxysecret_mask
proxyresp_take_redacted(struct proxyresp *r, uint64_t *count)
{
	proxysecret_mask m = r->found;

	if (count != NULL)
		*count = r->count;
	r->found = 0;
	r->count = 0;
	return m;
}

bool
proxyresp_in_head(const struct proxyresp *r)
{
	return r->st == S_HEAD && r->hlen > 0;
}
