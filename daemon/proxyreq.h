/*
 * The lane proxy's request parser: one HTTP/1.x request head, as a guest
 * sends it to an HTTP proxy. Pure functions over bytes, no I/O, so that the
 * fuzzer (tests/fuzz/fuzz_proxyreq.c) drives exactly what the daemon runs.
 */
#ifndef LANED_PROXYREQ_H
#define LANED_PROXYREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXYREQ_HOST_MAX 253

struct proxyreq {
	bool connect;		/* CONNECT host:port; else absolute-URI http */
	char method[16];
	/* Lower case, no trailing dot; an IPv6 literal without brackets. */
	char host[PROXYREQ_HOST_MAX + 1];
	uint16_t port;
};

/*
 * Parses a complete request head: len bytes ending with the blank line.
 * For an absolute-URI request it also writes the head to send upstream
 * into out (origin-form target, Host set from the URI, proxy and hop-by-hop
 * headers removed, "Connection: close" so that one client connection
 * carries one request to the vetted host) and sets *outlen; for CONNECT
 * nothing is written. Returns 0, or the HTTP status to answer (400, 405,
 * 414, 431, 505) with *why saying what was wrong.
 */
int proxyreq_parse(const char *head, size_t len, struct proxyreq *,
    char *out, size_t outcap, size_t *outlen, const char **why);

/* Length of the head at the start of buf (through CRLFCRLF), or 0. */
size_t proxyreq_head_len(const char *buf, size_t len);

/*
 * A host name as the allow list and requests accept it: LDH labels of at
 * most 63 characters, 253 in all, or an IPv4 or IPv6 literal. Normalises
 * in place (lower case, trailing dot removed).
 */
bool proxyreq_host_valid(char *host);

/*
 * An allow-list entry: a host name as above, or "*." and a name with at
 * least two labels ("*.npmjs.org" yes, "*.org" no). Normalises in place.
 */
bool proxyreq_pattern_valid(char *pattern);

/*
 * Exact match, or for "*.suffix" any name below suffix at any depth (not
 * suffix itself: list both to allow both). Both sides normalised.
 */
bool proxyreq_host_match(const char *pattern, const char *host);

#endif
