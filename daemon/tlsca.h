/*
 * A lane's certificate authority (OpenSSL 3): made at create, its private
 * key only ever in daemon memory, its certificate installed in the guest's
 * trust store. It signs, on demand, the leaf certificate the lane's proxy
 * shows the guest for one of a secret's hosts, and keeps a bounded cache of
 * them. No X.509 or ASN.1 is written by hand here: OpenSSL builds it all.
 *
 * CA profile: P-256, random serial, CN "Agent Lane CA <lane>", critical
 * basicConstraints CA:TRUE pathlen:0, critical keyUsage keyCertSign and
 * cRLSign, SKI; valid from an hour back to valid_ms ahead.
 * Leaf profile: P-256, random serial (top bit clear), SAN DNS:host,
 * critical basicConstraints CA:FALSE, critical keyUsage digitalSignature,
 * EKU serverAuth, SKI and AKI; notBefore a few minutes back, notAfter at
 * most TLSCA_LEAF_MS ahead and never past the CA's.
 */
#ifndef LANED_TLSCA_H
#define LANED_TLSCA_H

#include <stddef.h>
#include <stdint.h>

struct tlsca;
typedef struct ssl_st SSL;

#define TLSCA_LEAF_MS (24ull * 3600 * 1000)	/* a leaf's life, at most */

enum tlsca_err {
	TLSCA_OK = 0,
	TLSCA_FULL,		/* the leaf cache holds max_leaves live hosts */
	TLSCA_BADHOST,		/* not a DNS name a leaf can be made for */
	TLSCA_CRYPTO,		/* OpenSSL failed (out of memory, mostly) */
};

/*
 * A new CA for lane (its name goes into the subject), valid for valid_ms
 * from now (the lane's longest life, say), caching up to max_leaves leaf
 * certificates. NULL with err set on failure.
 */
struct tlsca *tlsca_new(const char *lane, uint64_t valid_ms,
    size_t max_leaves, char *err, size_t errlen);

/*
 * The CA certificate, PEM, NUL-terminated, owned by the CA (valid until
 * tlsca_free); *len gets its length when len is not NULL. This is what the
 * guest installs (/usr/local/share/ca-certificates/<x>.crt and
 * NODE_EXTRA_CA_CERTS). It holds no key.
 */
const char *tlsca_cert_pem(const struct tlsca *, size_t *len);

/*
 * Puts the leaf for host (a normalised DNS name) on ssl, minting and
 * caching it first if need be: certificate and key via SSL_use_*. An
 * expired or nearly expired leaf is replaced. TLSCA_FULL when the cache
 * holds max_leaves other hosts whose leaves are still good.
 */
enum tlsca_err tlsca_use_leaf(struct tlsca *, const char *host, SSL *ssl);

/* Leaves cached now. */
size_t tlsca_nleaves(const struct tlsca *);
const char *tlsca_strerror(enum tlsca_err);

/* Frees the key (OpenSSL clears freed key memory) and every leaf. */
void tlsca_free(struct tlsca *);

#endif
