/*
 * SHA-256 for content addresses of images, over OpenSSL's EVP digests: an
 * image id must be the same on every host and across versions (a unit test
 * pins one).
 */
#ifndef LANED_SHA256_H
#define LANED_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32

struct sha256 {
	void *ctx;		/* EVP_MD_CTX */
};

/* Out of memory or a broken OpenSSL is fatal, as for xmalloc. */
void sha256_init(struct sha256 *);
void sha256_update(struct sha256 *, const void *, size_t);
/* Also frees the context. */
void sha256_final(struct sha256 *, uint8_t out[SHA256_DIGEST_SIZE]);
/* Lowercase hex of the digest: 65 bytes with the NUL. */
void sha256_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char out[65]);

#endif
