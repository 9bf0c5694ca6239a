/*
 * The lane CA and its leaf certificates (see tlsca.h). OpenSSL builds and
 * signs every certificate; the extensions are given in OpenSSL's own
 * configuration syntax (X509V3_EXT_conf_nid), from a host name that
 * proxyreq_host_valid has already reduced to LDH labels, so that no text
 * from the guest can add an extension or a second name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "proxyreq.h"
#include "tlsca.h"
#include "util.h"

/* A leaf this close to its end is replaced rather than shown. */
#define LEAF_RENEW_S	3600
/* Clocks differ: a leaf is valid from a few minutes back. */
#define LEAF_BACKDATE_S	300
#define CA_BACKDATE_S	3600

struct leaf {
	char host[PROXYREQ_HOST_MAX + 1];
	X509 *cert;
	EVP_PKEY *key;
	time_t not_after;
};

struct tlsca {
	EVP_PKEY *key;
	X509 *cert;
	char *pem;
	size_t pemlen;
	time_t not_after;
	struct leaf *leaves;
	size_t nleaves, max;
};

/* A random positive serial of 127 bits (top bit clear, never zero). */
static int
set_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int ok;

	if (RAND_bytes(b, sizeof(b)) != 1)
		return -1;
	b[0] &= 0x7f;
	b[0] |= 0x01;
	if ((bn = BN_bin2bn(b, sizeof(b), NULL)) == NULL)
		return -1;
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

static int
add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -1;
}

static int
set_name(X509_NAME *nm, const char *o, const char *cn)
{
	if (o != NULL && X509_NAME_add_entry_by_txt(nm, "O", MBSTRING_ASC,
	    (const unsigned char *)o, -1, -1, 0) != 1)
		return -1;
	/* A CN is at most 64 characters; a longer name is in the SAN only. */
	if (cn != NULL && strlen(cn) <= 64 && X509_NAME_add_entry_by_txt(nm,
	    "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0) != 1)
		return -1;
	return 0;
}

/* Version, serial, validity and key of a certificate about to be signed. */
static X509 *
cert_start(EVP_PKEY *key, time_t from, time_t to)
{
	X509 *x = X509_new();

	if (x == NULL)
		return NULL;
	if (X509_set_version(x, 2) != 1 || set_serial(x) == -1 ||
	    ASN1_TIME_set(X509_getm_notBefore(x), from) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), to) == NULL ||
	    X509_set_pubkey(x, key) != 1) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static int
ca_make(struct tlsca *ca, const char *lane, time_t now, uint64_t valid_ms)
{
	char cn[128];
	X509 *x;

	if ((ca->key = EVP_EC_gen("P-256")) == NULL)
		return -1;
	ca->not_after = now + (time_t)(valid_ms / 1000);
	if ((x = cert_start(ca->key, now - CA_BACKDATE_S, ca->not_after)) ==
	    NULL)
		return -1;
	ca->cert = x;
	snprintf(cn, sizeof(cn), "Agent Lane CA %s", lane);
	if (set_name(X509_get_subject_name(x), "Agent Lane", cn) == -1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
	    add_ext(x, x, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") == -1 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") == -1 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") == -1 ||
	    X509_sign(x, ca->key, EVP_sha256()) <= 0)
		return -1;
	return 0;
}

static int
ca_pem(struct tlsca *ca)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long n;

	if (b == NULL)
		return -1;
	if (PEM_write_bio_X509(b, ca->cert) != 1 ||
	    (n = BIO_get_mem_data(b, &data)) <= 0) {
		BIO_free(b);
		return -1;
	}
	ca->pem = xmalloc((size_t)n + 1);
	memcpy(ca->pem, data, (size_t)n);
	ca->pem[n] = '\0';
	ca->pemlen = (size_t)n;
	BIO_free(b);
	return 0;
}

struct tlsca *
tlsca_new(const char *lane, uint64_t valid_ms, size_t max_leaves, char *err,
    size_t errlen)
{
	struct tlsca *ca;

	if (max_leaves == 0 || valid_ms < 2 * LEAF_RENEW_S * 1000ull ||
	    valid_ms > 3660ull * 86400 * 1000) {
		snprintf(err, errlen, "lane CA: bad validity or cache size");
		return NULL;
	}
	ca = xcalloc(1, sizeof(*ca));
	ca->max = max_leaves;
	ca->leaves = xcalloc(max_leaves, sizeof(*ca->leaves));
	if (ca_make(ca, lane, time(NULL), valid_ms) == -1 || ca_pem(ca) == -1) {
		snprintf(err, errlen, "lane CA: OpenSSL cannot make it");
		tlsca_free(ca);
		return NULL;
	}
	return ca;
}

const char *
tlsca_cert_pem(const struct tlsca *ca, size_t *len)
{
	if (len != NULL)
		*len = ca->pemlen;
	return ca->pem;
}

static int
leaf_make(struct tlsca *ca, struct leaf *lf, const char *host, time_t now)
{
	char san[PROXYREQ_HOST_MAX + 8];
	time_t to = now + (time_t)(TLSCA_LEAF_MS / 1000);
	X509 *x;

	if (to > ca->not_after)
		to = ca->not_after;
	if ((lf->key = EVP_EC_gen("P-256")) == NULL ||
	    (x = cert_start(lf->key, now - LEAF_BACKDATE_S, to)) == NULL)
		return -1;
	lf->cert = x;
	lf->not_after = to;
	snprintf(san, sizeof(san), "DNS:%s", host);
	if (set_name(X509_get_subject_name(x), NULL, host) == -1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1 ||
	    add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ==
	    -1 ||
	    add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") ==
	    -1 ||
	    add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") == -1 ||
	    add_ext(x, ca->cert, NID_subject_alt_name, san) == -1 ||
	    add_ext(x, ca->cert, NID_subject_key_identifier, "hash") == -1 ||
	    add_ext(x, ca->cert, NID_authority_key_identifier,
	    "keyid:always") == -1 ||
	    X509_sign(x, ca->key, EVP_sha256()) <= 0)
		return -1;
	str_copy(lf->host, host, sizeof(lf->host));
	return 0;
}

static void
leaf_clear(struct leaf *lf)
{
	X509_free(lf->cert);
	EVP_PKEY_free(lf->key);
	memset(lf, 0, sizeof(*lf));
}

/*
 * The slot for host: its own (kept if still good, else cleared for a new
 * leaf), a free one, or one whose leaf has run out. NULL: the cache is full
 * of good leaves for other hosts.
 */
static struct leaf *
leaf_slot(struct tlsca *ca, const char *host, time_t now)
{
	struct leaf *spare = NULL;

	for (size_t i = 0; i < ca->nleaves; i++) {
		struct leaf *lf = &ca->leaves[i];
		if (strcmp(lf->host, host) == 0) {
			if (lf->not_after - now < LEAF_RENEW_S &&
			    lf->not_after < ca->not_after)
				leaf_clear(lf);
			return lf;
		}
		if (spare == NULL && lf->not_after - now < LEAF_RENEW_S &&
		    lf->not_after < ca->not_after)
			spare = lf;
	}
	if (ca->nleaves < ca->max)
		return &ca->leaves[ca->nleaves++];
	if (spare != NULL)
		leaf_clear(spare);
	return spare;
}

enum tlsca_err
tlsca_use_leaf(struct tlsca *ca, const char *host, SSL *ssl)
{
	char h[PROXYREQ_HOST_MAX + 1];
	time_t now = time(NULL);
	struct leaf *lf;

	if (strlen(host) >= sizeof(h))
		return TLSCA_BADHOST;
	str_copy(h, host, sizeof(h));
	if (!proxyreq_host_valid(h) || strchr(h, ':') != NULL ||
	    strspn(h, "0123456789.") == strlen(h) || strcmp(h, host) != 0)
		return TLSCA_BADHOST;
	if ((lf = leaf_slot(ca, h, now)) == NULL)
		return TLSCA_FULL;
	if (lf->cert == NULL && leaf_make(ca, lf, h, now) == -1) {
		leaf_clear(lf);		/* an empty slot, found again next time */
		return TLSCA_CRYPTO;
	}
	if (SSL_use_certificate(ssl, lf->cert) != 1 ||
	    SSL_use_PrivateKey(ssl, lf->key) != 1)
		return TLSCA_CRYPTO;
	return TLSCA_OK;
}

size_t
tlsca_nleaves(const struct tlsca *ca)
{
	size_t n = 0;

	for (size_t i = 0; i < ca->nleaves; i++)
		if (ca->leaves[i].cert != NULL)
			n++;
	return n;
}

const char *
tlsca_strerror(enum tlsca_err e)
{
	switch (e) {
	case TLSCA_OK:
		return "ok";
	case TLSCA_FULL:
		return "the lane's certificate cache is full";
	case TLSCA_BADHOST:
		return "not a host name a certificate can be made for";
	case TLSCA_CRYPTO:
		break;
	}
	return "OpenSSL cannot make the certificate";
}

void
tlsca_free(struct tlsca *ca)
{
	if (ca == NULL)
		return;
	for (size_t i = 0; i < ca->nleaves; i++)
		leaf_clear(&ca->leaves[i]);
	free(ca->leaves);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	free(ca->pem);
	free(ca);
}
