/*
 * Request-head parser for the lane proxy (see proxyreq.h). Strict on
 * purpose: the proxy decides on the host it parses here, so anything with
 * two readings (bare LF, folded headers, userinfo in the URI, controls) is
 * refused rather than guessed at.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proxyreq.h"
#include "util.h"

size_t
proxyreq_head_len(const char *buf, size_t len)
{
	for (size_t i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

bool
proxyreq_tchar(uint8_t c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

bool
proxyreq_host_valid(char *host)
{
	size_t n = strlen(host);
	unsigned char a6[16];

	if (n > 0 && host[n - 1] == '.')
		host[--n] = '\0';
	if (n == 0 || n > PROXYREQ_HOST_MAX)
		return false;
	if (strchr(host, ':') != NULL)
		return inet_pton(AF_INET6, host, a6) == 1;
	size_t label = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)host[i];
		if (c >= 'A' && c <= 'Z')
			host[i] = (char)(c - 'A' + 'a');
		if (c == '.') {
			if (label == 0 || host[i - 1] == '-')
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-'))
			return false;
		if (c == '-' && label == 0)
			return false;
		if (++label > 63)
			return false;
	}
	/* No empty last label ("a.b.." was "a.b." after the strip above). */
	return label > 0 && host[n - 1] != '-';
}

bool
proxyreq_pattern_valid(char *pattern)
{
	if (strncmp(pattern, "*.", 2) != 0)
		return proxyreq_host_valid(pattern);
	char *suffix = pattern + 2;
	if (!proxyreq_host_valid(suffix) || strchr(suffix, ':') != NULL)
		return false;
	return strchr(suffix, '.') != NULL;
}

/*
 * Both sides are normalised already; case and one trailing dot are still
 * ignored here, so that a caller that forgot cannot widen or miss a match.
 * A suffix matches only at a label boundary: "*.anthropic.com" compares
 * ".anthropic.com", which "evilanthropic.com" does not end in.
 */
bool
proxyreq_host_match(const char *pattern, const char *host)
{
	size_t pl = strlen(pattern), hl = strlen(host);

	if (pl > 0 && pattern[pl - 1] == '.')
		pl--;
	if (hl > 0 && host[hl - 1] == '.')
		hl--;
	if (pl == 0 || hl == 0)
		return false;
	if (strncmp(pattern, "*.", 2) != 0)
		return pl == hl && strncasecmp(pattern, host, hl) == 0;
	const char *suffix = pattern + 1;	/* ".npmjs.org" */
	size_t sl = pl - 1;
	return hl > sl && strncasecmp(host + hl - sl, suffix, sl) == 0;
}

/* Port digits: 1..65535, at most five digits, no sign or spaces. */
static bool
parse_port(const char *s, size_t n, uint16_t *port)
{
	uint32_t v = 0;

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*port = (uint16_t)v;
	return true;
}

/* host[:port] or [v6][:port]; defport 0 means the port is required. */
static bool
parse_authority(const char *s, size_t n, uint16_t defport, struct proxyreq *r)
{
	const char *hs, *pe = NULL;
	size_t hn;

	if (n == 0 || memchr(s, '@', n) != NULL)
		return false;
	if (s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (close == NULL)
			return false;
		hs = s + 1;
		hn = (size_t)(close - hs);
		if (close + 1 < s + n) {
			if (close[1] != ':')
				return false;
			pe = close + 2;
		}
	} else {
		const char *colon = memchr(s, ':', n);
		hs = s;
		hn = colon ? (size_t)(colon - s) : n;
		if (colon)
			pe = colon + 1;
	}
	if (hn == 0 || hn > PROXYREQ_HOST_MAX)
		return false;
	memcpy(r->host, hs, hn);
	r->host[hn] = '\0';
	if (s[0] == '[' && strchr(r->host, ':') == NULL)
		return false;
	if (s[0] != '[' && strchr(r->host, ':') != NULL)
		return false;
	if (!proxyreq_host_valid(r->host))
		return false;
	r->host_port = pe != NULL;
	if (pe != NULL)
		return parse_port(pe, (size_t)(s + n - pe), &r->port);
	if (defport == 0)
		return false;
	r->port = defport;
	return true;
}

/*
 * Headers the proxy owns (Host and the framing fields, which it writes
 * from what it parsed) or that concern only the hop to it.
 */
static bool
header_dropped(const char *name, size_t n)
{
	static const char *const drop[] = {
		"host", "connection", "proxy-connection", "proxy-authorization",
		"proxy-authenticate", "keep-alive", "te", "trailer", "upgrade",
		"content-length", "transfer-encoding",
	};
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (strlen(drop[i]) == n && strncasecmp(drop[i], name, n) == 0)
			return true;
	return false;
}

static bool
name_is(const char *name, size_t n, const char *want)
{
	return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

bool
proxyreq_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

/* Whether the comma-separated list v[0..n) holds token (case-insensitive). */
static bool
list_has(const char *v, size_t n, const char *token, size_t tn)
{
	const char *t = v, *end = v + n;

	while (t < end) {
		const char *te;
		while (t < end && (proxyreq_ows(*t) || *t == ','))
			t++;
		te = t;
		while (te < end && *te != ',' && !proxyreq_ows(*te))
			te++;
		if (te > t && (size_t)(te - t) == tn &&
		    strncasecmp(t, token, tn) == 0)
			return true;
		t = te;
	}
	return false;
}

bool
proxyreq_field_is(const struct proxyreq *r, const char *head, size_t i,
    const char *name)
{
	return name_is(head + r->fields[i].name, r->fields[i].nlen, name);
}

/*
 * Headers a Connection header lists are hop-by-hop too (RFC 9110 7.6.1)
 * and never forwarded; framing() refuses a list that names a field the
 * proxy frames or routes by, so what is dropped here never decided
 * anything.
 */
bool
proxyreq_field_forwarded(const struct proxyreq *r, const char *head, size_t i)
{
	const char *name = head + r->fields[i].name;
	size_t n = r->fields[i].nlen;

	if (header_dropped(name, n))
		return false;
	for (size_t j = 0; j < r->nfields; j++)
		if (proxyreq_field_is(r, head, j, "connection") &&
		    list_has(head + r->fields[j].value, r->fields[j].vlen, name,
		    n))
			return false;
	return true;
}

#define FAIL(code, reason) do { *why = (reason); return (code); } while (0)

/* Controls, bare CR or LF anywhere in the head: refused, never guessed at. */
static int
check_bytes(const char *head, size_t len, const char **why)
{
	if (len < 4 || memcmp(head + len - 4, "\r\n\r\n", 4) != 0)
		FAIL(400, "request head not terminated");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)head[i];
		if (c == '\n' && (i == 0 || head[i - 1] != '\r'))
			FAIL(400, "bare LF");
		if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') ||
		    c == 0x7f)
			FAIL(400, "control character");
		if (c == '\r' && (i + 1 >= len || head[i + 1] != '\n'))
			FAIL(400, "bare CR");
	}
	return 0;
}

/* The request line: method, target and version into r. */
static int
split_line(const char *head, const char *eol, struct proxyreq *r,
    const char **why)
{
	const char *p = head, *sp1, *sp2, *target, *ver;
	size_t tn;

	sp1 = memchr(p, ' ', (size_t)(eol - p));
	if (sp1 == NULL || sp1 == p || (size_t)(sp1 - p) >= sizeof(r->method))
		FAIL(400, "bad request line");
	for (const char *q = p; q < sp1; q++)
		if (!proxyreq_tchar((unsigned char)*q))
			FAIL(400, "bad method");
	memcpy(r->method, p, (size_t)(sp1 - p));
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (sp2 == NULL || sp2 == sp1 + 1)
		FAIL(400, "bad request line");
	target = sp1 + 1;
	ver = sp2 + 1;
	tn = (size_t)(sp2 - target);
	if ((size_t)(eol - ver) != 8 || (memcmp(ver, "HTTP/1.1", 8) != 0 &&
	    memcmp(ver, "HTTP/1.0", 8) != 0))
		FAIL(505, "HTTP/1.0 or HTTP/1.1 only");
	for (size_t i = 0; i < tn; i++)
		if ((unsigned char)target[i] <= 0x20 ||
		    (unsigned char)target[i] >= 0x7f)
			FAIL(400, "bad request target");
	r->http10 = ver[7] == '0';
	r->line_len = (uint32_t)(eol - head);
	r->target = (uint32_t)(target - head);
	r->tlen = (uint32_t)tn;
	return 0;
}

/* Content-Length digits: 1 to 18 of them, nothing else. */
bool
proxyreq_length(const void *p, size_t n, uint64_t *out)
{
	const uint8_t *v = p;
	uint64_t x = 0;

	if (n == 0 || n > 18)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return false;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return true;
}

/*
 * Fields the proxy frames or routes a request by. A Connection header
 * naming one would make it hop-by-hop: dropped after it decided something,
 * so that the upstream would read another request than the proxy did
 * (request smuggling). Such a request is refused instead. Trailer and
 * TE concern the framing of the body (TE is hop-by-hop anyway, and
 * "Connection: TE" is what RFC 9110 asks of a client that sends TE, so it
 * passes); Expect changes when the body comes. Upgrade is always dropped
 * with the Connection header that asks for it, so no upstream switches
 * protocols under the proxy's parser: "Connection: upgrade" passes.
 * The credential headers are refused by proxyfwd.c, which knows them.
 */
static const char *const conn_refused[] = {
	"content-length", "transfer-encoding", "host", "trailer", "expect",
};

static int
connection_names(const char *v, size_t n, const char **why)
{
	for (size_t i = 0; i < sizeof(conn_refused) / sizeof(conn_refused[0]);
	    i++)
		if (list_has(v, n, conn_refused[i], strlen(conn_refused[i])))
			FAIL(400, "Connection names a field the proxy frames or "
			    "routes by");
	return 0;
}

/* How the body is framed (RFC 9112 6): one reading or a refusal. */
static int
framing(const char *head, struct proxyreq *r, const char **why)
{
	bool cl = false, te = false;
	int st;

	for (size_t i = 0; i < r->nfields; i++) {
		const char *v = head + r->fields[i].value;
		size_t vn = r->fields[i].vlen;
		uint64_t n;

		if (proxyreq_field_is(r, head, i, "content-length")) {
			if (!proxyreq_length(v, vn, &n))
				FAIL(400, "bad Content-Length");
			if (cl && n != r->length)
				FAIL(400, "conflicting Content-Length");
			cl = true;
			r->length = n;
		} else if (proxyreq_field_is(r, head, i, "transfer-encoding")) {
			if (te || vn != 7 || strncasecmp(v, "chunked", 7) != 0)
				FAIL(501, "Transfer-Encoding other than chunked");
			te = true;
		} else if (proxyreq_field_is(r, head, i, "connection")) {
			if ((st = connection_names(v, vn, why)) != 0)
				return st;
			if (list_has(v, vn, "close", 5))
				r->close = true;
		}
	}
	/* Two framings: the proxy and the server could each pick another. */
	if (te && cl)
		FAIL(400, "both Transfer-Encoding and Content-Length");
	if (te && r->http10)
		FAIL(400, "Transfer-Encoding in HTTP/1.0");
	r->length_seen = cl;
	r->framing = te ? PROXYREQ_BODY_CHUNKED : cl && r->length > 0 ?
	    PROXYREQ_BODY_LENGTH : PROXYREQ_BODY_NONE;
	if (r->http10)
		r->close = true;
	return 0;
}

/* Checks the whole head and splits it: request line, then the fields. */
static int
split_head(const char *head, size_t len, struct proxyreq *r,
    const char **why)
{
	const char *p, *end = head + len, *eol;
	int st;

	memset(r, 0, sizeof(*r));
	*why = NULL;
	if ((st = check_bytes(head, len, why)) != 0)
		return st;
	eol = memchr(head, '\r', len);	/* never NULL: the head ends in CRLF */
	if ((st = split_line(head, eol, r, why)) != 0)
		return st;
	for (p = eol + 2; p < end - 2; p = eol + 2) {
		struct proxyreq_field *f;
		const char *colon, *v, *ve;

		eol = memchr(p, '\r', (size_t)(end - p));
		if (*p == ' ' || *p == '\t')
			FAIL(400, "folded header");
		colon = memchr(p, ':', (size_t)(eol - p));
		if (colon == NULL || colon == p)
			FAIL(400, "bad header line");
		for (const char *q = p; q < colon; q++)
			if (!proxyreq_tchar((unsigned char)*q))
				FAIL(400, "bad header name");
		if (r->nfields == PROXYREQ_FIELDS_MAX)
			FAIL(431, "too many header fields");
		for (v = colon + 1; v < eol && proxyreq_ows(*v); v++)
			;
		for (ve = eol; ve > v && proxyreq_ows(ve[-1]); ve--)
			;
		f = &r->fields[r->nfields++];
		f->name = (uint32_t)(p - head);
		f->nlen = (uint32_t)(colon - p);
		f->value = (uint32_t)(v - head);
		f->vlen = (uint32_t)(ve - v);
		f->end = (uint32_t)(eol - head);
	}
	if (!strcmp(r->method, "TRACE") || !strcmp(r->method, "TRACK"))
		FAIL(405, "TRACE and TRACK are refused");
	return framing(head, r, why);
}

int
proxyreq_parse(const char *head, size_t len, struct proxyreq *r,
    const char **why)
{
	const char *target, *tend, *auth, *path;
	int st;

	if ((st = split_head(head, len, r, why)) != 0)
		return st;
	target = head + r->target;
	tend = target + r->tlen;
	if (strcmp(r->method, "CONNECT") == 0) {
		r->connect = true;
		if (!parse_authority(target, r->tlen, 0, r))
			FAIL(400, "CONNECT wants host:port");
		return 0;
	}
	if (r->tlen < 7 || strncasecmp(target, "http://", 7) != 0)
		FAIL(400, "absolute http:// URI or CONNECT only");
	auth = target + 7;
	for (path = auth; path < tend && *path != '/' && *path != '?'; path++)
		;
	if (!parse_authority(auth, (size_t)(path - auth), 80, r))
		FAIL(400, "bad host in URI");
	if (memchr(path, '#', (size_t)(tend - path)) != NULL)
		FAIL(400, "fragment in request target");
	/* Connection: close goes upstream whatever the client asked. */
	r->close = true;
	r->path = (uint32_t)(path - head);
	r->plen = (uint32_t)(tend - path);
	return 0;
}

int
proxyreq_parse_origin(const char *head, size_t len, struct proxyreq *r,
    const char **why)
{
	const char *target;
	size_t hosts = 0, hi = 0;
	int st;

	if ((st = split_head(head, len, r, why)) != 0)
		return st;
	target = head + r->target;
	if (strcmp(r->method, "CONNECT") == 0)
		FAIL(405, "CONNECT inside a tunnel");
	if (!(target[0] == '/' || (r->tlen == 1 && target[0] == '*' &&
	    strcmp(r->method, "OPTIONS") == 0)))
		FAIL(400, "origin-form request target only");
	if (memchr(target, '#', r->tlen) != NULL)
		FAIL(400, "fragment in request target");
	for (size_t i = 0; i < r->nfields; i++)
		if (proxyreq_field_is(r, head, i, "host")) {
			hosts++;
			hi = i;
		}
	if (hosts != 1)
		FAIL(400, "exactly one Host header");
	if (!parse_authority(head + r->fields[hi].value, r->fields[hi].vlen,
	    443, r))
		FAIL(400, "bad Host header");
	return 0;
}

/* ---- Body framing ---- */

enum {
	PB_DONE, PB_LENGTH, PB_SIZE, PB_EXT, PB_SIZE_LF, PB_DATA, PB_DATA_CR,
	PB_DATA_LF, PB_TRAILER, PB_TRAILER_LF,
};

#define CHUNK_LINE_MAX	1024	/* a chunk-size line, extensions in */

void
proxyreq_body_init(struct proxyreq_body *b, const struct proxyreq *r)
{
	memset(b, 0, sizeof(*b));
	if (r->framing == PROXYREQ_BODY_LENGTH) {
		b->st = PB_LENGTH;
		b->left = r->length;
	} else if (r->framing == PROXYREQ_BODY_CHUNKED)
		b->st = PB_SIZE;
	else
		b->st = PB_DONE;
}

bool
proxyreq_body_done(const struct proxyreq_body *b)
{
	return b->st == PB_DONE && !b->bad;
}

int
proxyreq_hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool
body_bad(struct proxyreq_body *b, const char *why)
{
	b->bad = true;
	b->why = why;
	b->st = PB_DONE;
	return false;
}

/*
 * The trailer section t[0..n), lines ending in CRLF (controls and bare CR
 * or LF were refused byte by byte): each a field, "name:" with a token
 * for a name and no obs-fold, as a head's fields are.
 */
static bool
trailers_ok(const char *t, size_t n)
{
	const char *p = t, *end = t + n, *eol, *colon;

	for (; p < end; p = eol + 2) {
		if ((eol = memchr(p, '\r', (size_t)(end - p))) == NULL)
			return false;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (colon == NULL || colon == p)
			return false;
		for (const char *q = p; q < colon; q++)
			if (!proxyreq_tchar((unsigned char)*q))
				return false;
	}
	return true;
}

/* One byte of the trailer section, kept in tbuf; false when refused. */
static bool
trailer_byte(struct proxyreq_body *b, uint8_t c)
{
	switch (b->st) {
	case PB_TRAILER:
		if (b->trailers >= PROXYREQ_TRAILERS_MAX)
			return body_bad(b, "trailers too large");
		b->tbuf[b->trailers++] = (char)c;
		if (c == '\r') {
			b->st = PB_TRAILER_LF;
			return true;
		}
		if (c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f)
			return body_bad(b, "bad trailer");
		return true;
	case PB_TRAILER_LF:
		if (c != '\n')
			return body_bad(b, "bare CR in trailer");
		if (b->line == 2) {
			/* An empty line ends the trailers, and the body. */
			b->trailers -= 1;	/* its CR */
			if (!trailers_ok(b->tbuf, b->trailers))
				return body_bad(b, "bad trailer field");
			b->st = PB_DONE;
		} else {
			if (b->trailers >= PROXYREQ_TRAILERS_MAX)
				return body_bad(b, "trailers too large");
			b->tbuf[b->trailers++] = '\n';
			b->st = PB_TRAILER;
		}
		b->line = 0;
		return true;
	}
	return body_bad(b, "internal framing state");
}

/* One byte of chunk framing (not data); false when it is refused. */
static bool
chunk_byte(struct proxyreq_body *b, uint8_t c)
{
	int h;

	if (++b->line > CHUNK_LINE_MAX)
		return body_bad(b, "chunk line too long");
	switch (b->st) {
	case PB_SIZE:
		if ((h = proxyreq_hexval(c)) >= 0) {
			if (++b->digits > 15)
				return body_bad(b, "chunk too large");
			b->left = b->left * 16 + (uint64_t)h;
			return true;
		}
		if (b->digits == 0)
			return body_bad(b, "bad chunk size");
		if (c == ';') {
			b->st = PB_EXT;
			return true;
		}
		if (c != '\r')
			return body_bad(b, "bad chunk size");
		b->st = PB_SIZE_LF;
		return true;
	case PB_EXT:
		if (c == '\r')
			b->st = PB_SIZE_LF;
		else if ((c < 0x20 && c != '\t') || c == 0x7f)
			return body_bad(b, "bad chunk extension");
		return true;
	case PB_SIZE_LF:
		if (c != '\n')
			return body_bad(b, "bare CR in chunk line");
		b->line = 0;
		b->digits = 0;
		b->st = b->left > 0 ? PB_DATA : PB_TRAILER;
		return true;
	case PB_DATA_CR:
		if (c != '\r')
			return body_bad(b, "chunk data overruns its size");
		b->st = PB_DATA_LF;
		return true;
	case PB_DATA_LF:
		if (c != '\n')
			return body_bad(b, "chunk data overruns its size");
		b->line = 0;
		b->st = PB_SIZE;
		return true;
	case PB_TRAILER:
	case PB_TRAILER_LF:
		return trailer_byte(b, c);
	}
	return body_bad(b, "internal framing state");
}

size_t
proxyreq_body_feed(struct proxyreq_body *b, const uint8_t *p, size_t n,
    proxyreq_data_fn *data, void *arg)
{
	size_t i = 0;

	while (i < n && b->st != PB_DONE) {
		if (b->st == PB_LENGTH || b->st == PB_DATA) {
			size_t take = n - i < b->left ? n - i : (size_t)b->left;
			if (data != NULL)
				data(arg, p + i, take);
			i += take;
			b->left -= take;
			if (b->left == 0)
				b->st = b->st == PB_LENGTH ? PB_DONE : PB_DATA_CR;
			continue;
		}
		if (!chunk_byte(b, p[i]))
			return i;
		i++;
	}
	return i;
}
