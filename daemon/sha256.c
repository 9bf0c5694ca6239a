/*
 * SHA-256 (see sha256.h): OpenSSL's EVP digest, which replaced the
 * project's own FIPS 180-4 code once OpenSSL became a dependency.
 */
#include <openssl/evp.h>

#include "log.h"
#include "sha256.h"

void
sha256_init(struct sha256 *s)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		fatalx("sha256: OpenSSL cannot make a digest context");
	s->ctx = ctx;
}

void
sha256_update(struct sha256 *s, const void *data, size_t len)
{
	if (EVP_DigestUpdate(s->ctx, data, len) != 1)
		fatalx("sha256: EVP_DigestUpdate failed");
}

void
sha256_final(struct sha256 *s, uint8_t out[SHA256_DIGEST_SIZE])
{
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(s->ctx, out, &n) != 1 ||
	    n != SHA256_DIGEST_SIZE)
		fatalx("sha256: EVP_DigestFinal_ex failed");
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
}

void
sha256_hex(const uint8_t d[SHA256_DIGEST_SIZE], char out[65])
{
	static const char hx[] = "0123456789abcdef";

	for (int i = 0; i < SHA256_DIGEST_SIZE; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[64] = '\0';
}
