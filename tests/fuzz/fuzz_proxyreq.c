/*
 * The lane proxy's request parser (daemon/proxyreq.c), as daemon/proxy.c
 * calls it: the head found by proxyreq_head_len, parsed, and for http://
 * the head proxyfwd_head writes. What it accepts must hold the invariants
 * the proxy's decisions rely on: a valid normalised host, a port, and for
 * http:// an upstream head that is one complete head with our Host, no
 * proxy credentials, and "Connection: close". The input's tail also
 * drives the allow-list matcher.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxyfwd.h"
#include "proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static bool
has_header(const char *head, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i + n + 2 <= len; i++)
		if (head[i] == '\n' && strncasecmp(head + i + 1, name, n) == 0)
			return true;
	return false;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t hl = proxyreq_head_len(buf, size);
	struct proxyreq r;
	const char *why;
	struct proxyfwd_head h;
	size_t outlen = 0;
	char *out = NULL;

	if (hl == 0)
		hl = size;	/* unterminated heads must be refused, not read past */
	int st = proxyreq_parse(buf, hl, &r, &why);
	if (st == 0 && (st = proxyfwd_head(NULL, buf, &r, r.host, r.connect ?
	    PROXYFWD_CONNECT : PROXYFWD_PLAIN, &h)) != 0)
		why = h.why;
	if (st == 0) {
		out = h.out;
		outlen = h.len;
		char host[PROXYREQ_HOST_MAX + 1];
		memcpy(host, r.host, sizeof(host));
		if (strlen(r.host) == 0 || !proxyreq_host_valid(host) ||
		    strcmp(host, r.host) != 0 || r.port == 0)
			abort();
		if (r.connect) {
			if (outlen != 0)
				abort();
		} else {
			if (outlen < 21 ||
			    proxyreq_head_len(out, outlen) != outlen ||
			    has_header(out, outlen, "proxy-authorization:") ||
			    !has_header(out, outlen, "host:") ||
			    memcmp(out + outlen - 21, "Connection: close\r\n\r\n", 21) != 0)
				abort();
		}
		if (!proxyreq_host_match(r.host, r.host))
			abort();
	} else if (why == NULL || st < 400 || st > 599) {
		abort();
	}

	/* Pattern and host from the tail, split at the first NUL. */
	const char *nul = memchr(buf, '\0', size);
	if (nul != NULL && size - (size_t)(nul - buf) - 1 <= PROXYREQ_HOST_MAX &&
	    (size_t)(nul - buf) <= PROXYREQ_HOST_MAX + 2) {
		char pat[PROXYREQ_HOST_MAX + 3], host[PROXYREQ_HOST_MAX + 1];
		memcpy(pat, buf, (size_t)(nul - buf));
		pat[nul - buf] = '\0';
		size_t hn = size - (size_t)(nul - buf) - 1;
		memcpy(host, nul + 1, hn);
		host[hn] = '\0';
		if (strlen(host) == hn && proxyreq_pattern_valid(pat) &&
		    proxyreq_host_valid(host) && proxyreq_host_match(pat, host)) {
			/* A match is the name itself or a name below the suffix. */
			if (strncmp(pat, "*.", 2) == 0) {
				size_t sl = strlen(pat + 1);
				if (strlen(host) <= sl ||
				    strcmp(host + strlen(host) - sl, pat + 1) != 0)
					abort();
			} else if (strcmp(pat, host) != 0)
				abort();
		}
	}
	free(out);
	return 0;
}
