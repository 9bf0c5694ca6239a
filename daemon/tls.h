/*
 * OpenSSL set-up for the lane proxy's interception (proxytls.c): the
 * context that faces the guest and the one that faces upstream, and the
 * allocator that wipes what OpenSSL frees.
 */
#ifndef LANED_TLS_H
#define LANED_TLS_H

#include <stddef.h>

typedef struct ssl_ctx_st SSL_CTX;

/*
 * Makes OpenSSL wipe every block it frees (call first thing in main,
 * before any OpenSSL call): its record buffers held request heads with
 * secret values in them. Best effort: false if OpenSSL had allocated.
 */
int tls_wipe_on_free(void);

/*
 * The guest side: TLS 1.2 or later, ALPN http/1.1 only (a client that
 * offers nothing else gets no ALPN, and speaks HTTP/1.1 anyway), no
 * renegotiation, no session tickets, and an unexpected EOF read as an
 * end (SSL_OP_IGNORE_UNEXPECTED_EOF: HTTP framing finds truncation).
 * The certificate is set per connection (tlsca_use_leaf).
 */
SSL_CTX *tls_server_ctx(char *err, size_t errlen);

/*
 * The upstream side: TLS 1.2 or later, SSL_VERIFY_PEER against the host's
 * system trust store (cafile NULL) or, in tests only, against the CA
 * certificates in cafile; ALPN http/1.1 only; unexpected EOF as above.
 * The host name check and SNI are per connection (tls_client_host).
 */
SSL_CTX *tls_client_ctx(const char *cafile, char *err, size_t errlen);

typedef struct ssl_st SSL;
/* SNI and the certificate's name check (SSL_set1_host) for host; 0 or -1. */
int tls_client_host(SSL *, const char *host);

/* The last OpenSSL error (or "unknown") into buf; returns buf. */
const char *tls_error(unsigned long e, char *buf, size_t len);

#endif
