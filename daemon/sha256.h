/*
 * SHA-256 (FIPS 180-4), for content addresses of images: the daemon links
 * no crypto library, and an image id must be the same on every host.
 */
#ifndef LANED_SHA256_H
#define LANED_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32

struct sha256 {
	uint32_t h[8];
	uint64_t len;		/* bytes hashed so far */
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *);
void sha256_update(struct sha256 *, const void *, size_t);
void sha256_final(struct sha256 *, uint8_t out[SHA256_DIGEST_SIZE]);
/* Lowercase hex of the digest: 65 bytes with the NUL. */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char out[65]);

#endif
