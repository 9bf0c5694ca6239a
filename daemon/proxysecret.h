/*
 * Placeholders in what a guest sends through its lane proxy (secret.h):
 * where they are found, in request lines, header values (raw and inside
 * base64 of any shape), trailer sections and bodies. Pure functions over
 * bytes, like proxyreq.c, so that the fuzzers drive what the proxy runs.
 * Where a value is put in their place is proxyfwd.c's.
 */
#ifndef LANED_PROXYSECRET_H
#define LANED_PROXYSECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "secret.h"

/* Bit i stands for secret i of the set (SECRET_MAX is 32). */
typedef uint32_t proxysecret_mask;

/* Secrets whose placeholder occurs in p[0..n). */
proxysecret_mask proxysecret_find(const struct secret_set *, const void *p,
    size_t n);

/* The secret whose placeholder is exactly p[0..n), or -1. */
int proxysecret_exact(const struct secret_set *, const char *p, size_t n);

/*
 * The tripwire over one header value: placeholders in it as it is, and in
 * whatever base64 it may hold, decoded: the value with its blanks removed,
 * both alphabets (standard and URL-safe), padded or not, at each of the
 * four alignments of every run of base64 characters (so a scheme or any
 * other prefix in front of the encoding does not hide it).
 */
proxysecret_mask proxysecret_value_mask(const struct secret_set *,
    const char *v, size_t n);

/* A request line, raw and percent-decoded. */
proxysecret_mask proxysecret_line_mask(const struct secret_set *,
    const char *line, size_t n);

/*
 * A trailer section (proxyreq_body's tbuf: "name: value" lines ending in
 * CRLF): each line raw and its value as proxysecret_value_mask reads it.
 */
proxysecret_mask proxysecret_fields_mask(const struct secret_set *,
    const char *t, size_t n);

/*
 * Strict base64 (standard alphabet, padded, length a multiple of 4), as
 * Basic credentials are: decodes v[0..n) into a malloc'd buffer with a
 * NUL added, or NULL. The caller wipes and frees it.
 */
uint8_t *proxysecret_b64_strict(const char *v, size_t n, size_t *outlen);

/*
 * A body's bytes as they pass, in pieces: a placeholder split between two
 * pieces is still found (the last placeholder_max - 1 bytes are kept).
 */
struct proxysecret_scan {
	uint8_t tail[SECRET_PLACEHOLDER_MAX];
	size_t ntail;
	proxysecret_mask found;
};

void proxysecret_scan(const struct secret_set *, struct proxysecret_scan *,
    const uint8_t *p, size_t n);

#endif
