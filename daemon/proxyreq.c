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

static bool
is_tchar(unsigned char c)
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

bool
proxyreq_host_match(const char *pattern, const char *host)
{
	if (strncmp(pattern, "*.", 2) != 0)
		return strcmp(pattern, host) == 0;
	const char *suffix = pattern + 1;	/* ".npmjs.org" */
	size_t sl = strlen(suffix), hl = strlen(host);
	return hl > sl && strcmp(host + hl - sl, suffix) == 0;
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
	if (pe != NULL)
		return parse_port(pe, (size_t)(s + n - pe), &r->port);
	if (defport == 0)
		return false;
	r->port = defport;
	return true;
}

/* Headers the proxy owns or that concern only the hop to it. */
static bool
header_dropped(const char *name, size_t n)
{
	static const char *const drop[] = {
		"host", "connection", "proxy-connection", "proxy-authorization",
		"proxy-authenticate", "keep-alive", "te", "trailer", "upgrade",
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

static bool
is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Whether a Connection header among the lines in [p, end) lists name:
 * those headers are hop-by-hop too (RFC 9110 7.6.1) and never forwarded.
 */
static bool
connection_lists(const char *p, const char *end, const char *name, size_t n)
{
	while (p < end - 2) {
		const char *eol = memchr(p, '\r', (size_t)(end - p));
		const char *colon = memchr(p, ':', (size_t)(eol - p));

		if (colon != NULL && name_is(p, (size_t)(colon - p),
		    "connection")) {
			const char *t = colon + 1;
			while (t < eol) {
				const char *te;
				while (t < eol && (is_ows(*t) || *t == ','))
					t++;
				te = t;
				while (te < eol && *te != ',' && !is_ows(*te))
					te++;
				if (te > t && (size_t)(te - t) == n &&
				    strncasecmp(t, name, n) == 0)
					return true;
				t = te;
			}
		}
		p = eol + 2;
	}
	return false;
}

static bool
put(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
	if (out == NULL)
		return true;
	if (n > cap - *len)
		return false;
	memcpy(out + *len, s, n);
	*len += n;
	return true;
}

#define FAIL(code, reason) do { *why = (reason); return (code); } while (0)

int
proxyreq_parse(const char *head, size_t len, struct proxyreq *r, char *out,
    size_t outcap, size_t *outlen, const char **why)
{
	const char *p = head, *end = head + len, *eol, *sp1, *sp2;
	size_t olen = 0;

	memset(r, 0, sizeof(*r));
	*why = NULL;
	if (outlen)
		*outlen = 0;
	if (len < 4 || memcmp(end - 4, "\r\n\r\n", 4) != 0)
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

	eol = memchr(p, '\r', len);	/* never NULL: the head ends in CRLF */
	sp1 = memchr(p, ' ', (size_t)(eol - p));
	if (sp1 == NULL || sp1 == p || (size_t)(sp1 - p) >= sizeof(r->method))
		FAIL(400, "bad request line");
	for (const char *q = p; q < sp1; q++)
		if (!is_tchar((unsigned char)*q))
			FAIL(400, "bad method");
	memcpy(r->method, p, (size_t)(sp1 - p));
	sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1));
	if (sp2 == NULL || sp2 == sp1 + 1)
		FAIL(400, "bad request line");
	const char *target = sp1 + 1, *ver = sp2 + 1;
	size_t tn = (size_t)(sp2 - target), vn = (size_t)(eol - ver);
	if (vn != 8 || (memcmp(ver, "HTTP/1.1", 8) != 0 &&
	    memcmp(ver, "HTTP/1.0", 8) != 0))
		FAIL(505, "HTTP/1.0 or HTTP/1.1 only");
	for (size_t i = 0; i < tn; i++)
		if ((unsigned char)target[i] <= 0x20 || (unsigned char)target[i] >= 0x7f)
			FAIL(400, "bad request target");

	if (strcmp(r->method, "CONNECT") == 0) {
		r->connect = true;
		if (!parse_authority(target, tn, 0, r))
			FAIL(400, "CONNECT wants host:port");
	} else {
		if (tn < 7 || strncasecmp(target, "http://", 7) != 0)
			FAIL(400, "absolute http:// URI or CONNECT only");
		const char *auth = target + 7, *tend = target + tn;
		const char *path = auth;
		while (path < tend && *path != '/' && *path != '?')
			path++;
		if (!parse_authority(auth, (size_t)(path - auth), 80, r))
			FAIL(400, "bad host in URI");
		if (memchr(path, '#', (size_t)(tend - path)) != NULL)
			FAIL(400, "fragment in request target");
		if (!put(out, outcap, &olen, p, (size_t)(sp1 - p) + 1))
			FAIL(414, "request too long");
		if (path == tend || *path == '?')
			if (!put(out, outcap, &olen, "/", 1))
				FAIL(414, "request too long");
		if (!put(out, outcap, &olen, path, (size_t)(tend - path)) ||
		    !put(out, outcap, &olen, " ", 1) ||
		    !put(out, outcap, &olen, ver, vn) ||
		    !put(out, outcap, &olen, "\r\n", 2))
			FAIL(414, "request too long");
	}

	/* Header lines up to the blank one. */
	p = eol + 2;
	const char *headers = p;
	bool has_te = false, has_cl = false;
	while (p < end - 2) {
		eol = memchr(p, '\r', (size_t)(end - p));
		if (*p == ' ' || *p == '\t')
			FAIL(400, "folded header");
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (colon == NULL || colon == p)
			FAIL(400, "bad header line");
		for (const char *q = p; q < colon; q++)
			if (!is_tchar((unsigned char)*q))
				FAIL(400, "bad header name");
		size_t nl = (size_t)(colon - p);
		has_te |= name_is(p, nl, "transfer-encoding");
		has_cl |= name_is(p, nl, "content-length");
		if (!r->connect && !header_dropped(p, nl) &&
		    !connection_lists(headers, end, p, nl) &&
		    !put(out, outcap, &olen, p, (size_t)(eol - p) + 2))
			FAIL(431, "request head too large");
		p = eol + 2;
	}
	/* Two framings: the proxy and the server could each pick another. */
	if (has_te && has_cl)
		FAIL(400, "both Transfer-Encoding and Content-Length");
	if (!r->connect) {
		char hostline[PROXYREQ_HOST_MAX + 32];
		int n;
		bool v6 = strchr(r->host, ':') != NULL;
		if (r->port == 80)
			n = snprintf(hostline, sizeof(hostline), "Host: %s%s%s\r\n",
			    v6 ? "[" : "", r->host, v6 ? "]" : "");
		else
			n = snprintf(hostline, sizeof(hostline), "Host: %s%s%s:%u\r\n",
			    v6 ? "[" : "", r->host, v6 ? "]" : "", (unsigned)r->port);
		if (n < 0 || (size_t)n >= sizeof(hostline) ||
		    !put(out, outcap, &olen, hostline, (size_t)n) ||
		    !put(out, outcap, &olen, "Connection: close\r\n\r\n", 21))
			FAIL(431, "request head too large");
		if (outlen)
			*outlen = olen;
	}
	return 0;
}
