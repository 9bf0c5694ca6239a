/*
 * OpenSSL contexts of the lane proxy (see tls.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls.h"
#include "wire.h"

static const unsigned char alpn_h1[] = "\x08http/1.1";

/*
 * Blocks carry their size in front, so that free can wipe them without
 * asking the platform's allocator (16 bytes keep the alignment).
 */
#define HDR 16

static void *
wipe_malloc(size_t n, const char *file, int line)
{
	unsigned char *p;

	if (n > SIZE_MAX - HDR || (p = malloc(n + HDR)) == NULL)
		return NULL;
	memcpy(p, &n, sizeof(n));
	return p + HDR;
}

static void
wipe_free(void *q, const char *file, int line)
{
	unsigned char *p;
	size_t n;

	if (q == NULL)
		return;
	p = (unsigned char *)q - HDR;
	memcpy(&n, p, sizeof(n));
	wire_wipe(p, n + HDR);
	free(p);
}

static void *
wipe_realloc(void *q, size_t n, const char *file, int line)
{
	unsigned char *r;
	size_t old;

	if (q == NULL)
		return wipe_malloc(n, file, line);
	if (n == 0) {
		wipe_free(q, file, line);
		return NULL;
	}
	if ((r = wipe_malloc(n, file, line)) == NULL)
		return NULL;
	memcpy(&old, (unsigned char *)q - HDR, sizeof(old));
	memcpy(r, q, old < n ? old : n);
	wipe_free(q, file, line);
	return r;
}

int
tls_wipe_on_free(void)
{
	return CRYPTO_set_mem_functions(wipe_malloc, wipe_realloc, wipe_free);
}

static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *o;

	if (SSL_select_next_proto(&o, outlen, alpn_h1, sizeof(alpn_h1) - 1, in,
	    inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = o;
	return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *
ctx_common(const SSL_METHOD *m, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(m);
	char e[160];

	if (ctx == NULL) {
		snprintf(err, errlen, "SSL_CTX_new: %s", tls_error(0, e,
		    sizeof(e)));
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		snprintf(err, errlen, "SSL_CTX_set_min_proto_version failed");
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	return ctx;
}

SSL_CTX *
tls_server_ctx(char *err, size_t errlen)
{
	SSL_CTX *ctx = ctx_common(TLS_server_method(), err, errlen);

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	return ctx;
}

SSL_CTX *
tls_client_ctx(const char *cafile, char *err, size_t errlen)
{
	SSL_CTX *ctx = ctx_common(TLS_client_method(), err, errlen);
	char e[160];
	int ok;

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	ok = cafile != NULL ? SSL_CTX_load_verify_locations(ctx, cafile, NULL) :
	    SSL_CTX_set_default_verify_paths(ctx);
	if (ok != 1 || SSL_CTX_set_alpn_protos(ctx, alpn_h1,
	    sizeof(alpn_h1) - 1) != 0) {
		snprintf(err, errlen, "upstream trust store %s: %s",
		    cafile != NULL ? cafile : "(system)", tls_error(0, e,
		    sizeof(e)));
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

int
tls_client_host(SSL *ssl, const char *host)
{
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (SSL_set_tlsext_host_name(ssl, host) != 1 ||
	    SSL_set1_host(ssl, host) != 1)
		return -1;
	return 0;
}

const char *
tls_error(unsigned long e, char *buf, size_t len)
{
	if (e == 0)
		e = ERR_peek_last_error();
	if (e == 0)
		snprintf(buf, len, "unknown error");
	else
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
	return buf;
}
