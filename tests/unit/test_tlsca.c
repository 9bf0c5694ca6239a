/*
 * daemon/tlsca.c: the lane CA and its leaves have the profiles current
 * clients require (verified by OpenSSL itself, strict mode, against the CA
 * alone), never outlive the CA, and the leaf cache is bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "secmem.h"
#include "tlsca.h"

static X509 *
ca_cert(struct tlsca *ca)
{
	size_t len;
	const char *pem = tlsca_cert_pem(ca, &len);
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	assert_non_null(x);
	assert_int_equal(strlen(pem), len);
	assert_null(strstr(pem, "PRIVATE"));
	BIO_free(b);
	return x;
}

/* Verifies leaf for host against ca alone, strict, as a TLS server. */
static int
verify(X509 *ca, X509 *leaf, const char *host)
{
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *vp;
	int rc;

	assert_int_equal(X509_STORE_add_cert(st, ca), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, st, leaf, NULL), 1);
	vp = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_flags(vp, X509_V_FLAG_X509_STRICT);
	X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
	assert_int_equal(X509_VERIFY_PARAM_set1_host(vp, host, 0), 1);
	rc = X509_verify_cert(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return rc;
}

static X509 *
leaf_for(struct tlsca *ca, SSL_CTX *sctx, const char *host, enum tlsca_err *e)
{
	SSL *ssl = SSL_new(sctx);
	X509 *x;

	*e = tlsca_use_leaf(ca, host, ssl);
	x = SSL_get_certificate(ssl);
	if (x != NULL)
		X509_up_ref(x);
	SSL_free(ssl);
	return *e == TLSCA_OK ? x : NULL;
}

static void
test_ca_profile(void **state)
{
	char err[128];
	struct tlsca *ca = tlsca_new("al-0123456789abcdef", 86400000ull * 2, 8,
	    err, sizeof err);
	X509 *x;
	BASIC_CONSTRAINTS *bc;
	int crit;

	assert_non_null(ca);
	x = ca_cert(ca);
	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	assert_non_null(bc);
	assert_true(bc->ca);
	assert_int_equal(crit, 1);
	assert_int_equal(ASN1_INTEGER_get(bc->pathlen), 0);
	BASIC_CONSTRAINTS_free(bc);
	assert_true(X509_get_key_usage(x) & KU_KEY_CERT_SIGN);
	assert_true(X509_get_key_usage(x) & KU_CRL_SIGN);
	assert_non_null(X509_get0_subject_key_id(x));
	assert_int_equal(X509_check_ca(x), 1);
	/* Self-signed, valid now. */
	assert_int_equal(X509_verify(x, X509_get0_pubkey(x)), 1);
	assert_true(X509_cmp_current_time(X509_get0_notBefore(x)) < 0);
	assert_true(X509_cmp_current_time(X509_get0_notAfter(x)) > 0);
	X509_free(x);
	tlsca_free(ca);
}

static void
test_leaf_profile(void **state)
{
	char err[128];
	struct tlsca *ca = tlsca_new("al-0123456789abcdef", 30ull * 86400000,
	    8, err, sizeof err);
	SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
	enum tlsca_err e;
	X509 *cax, *x, *y;
	EXTENDED_KEY_USAGE *eku;
	BASIC_CONSTRAINTS *bc;
	int crit, days, secs;

	assert_non_null(ca);
	cax = ca_cert(ca);
	x = leaf_for(ca, sctx, "api.anthropic.test", &e);
	assert_int_equal(e, TLSCA_OK);
	assert_int_equal(verify(cax, x, "api.anthropic.test"), 1);
	assert_int_equal(verify(cax, x, "other.test"), 0);
	assert_int_equal(X509_check_host(x, "api.anthropic.test", 0, 0, NULL), 1);
	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	assert_false(bc->ca);
	assert_int_equal(crit, 1);
	BASIC_CONSTRAINTS_free(bc);
	assert_int_equal(X509_get_key_usage(x), KU_DIGITAL_SIGNATURE);
	eku = X509_get_ext_d2i(x, NID_ext_key_usage, NULL, NULL);
	assert_int_equal(sk_ASN1_OBJECT_num(eku), 1);
	assert_int_equal(OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, 0)),
	    NID_server_auth);
	sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
	assert_non_null(X509_get0_subject_key_id(x));
	assert_non_null(X509_get0_authority_key_id(x));
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x),
	    X509_get0_subject_key_id(cax)), 0);
	assert_int_equal(EVP_PKEY_get_base_id(X509_get0_pubkey(x)), EVP_PKEY_EC);
	/* Serials are positive, at most 127 bits, and random (below). */
	{
		BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
		assert_false(BN_is_negative(bn));
		assert_true(BN_num_bits(bn) <= 127 && BN_num_bits(bn) > 64);
		BN_free(bn);
	}
	/* At most a day and some minutes of validity. */
	assert_int_equal(ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x),
	    X509_get0_notAfter(x)), 1);
	assert_true(days * 86400 + secs <= 86400 + 600);
	assert_true(X509_cmp_current_time(X509_get0_notBefore(x)) < 0);
	/* Cached: the same leaf comes back. */
	y = leaf_for(ca, sctx, "api.anthropic.test", &e);
	assert_int_equal(X509_cmp(x, y), 0);
	X509_free(y);
	y = leaf_for(ca, sctx, "b.anthropic.test", &e);
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(x),
	    X509_get0_serialNumber(y)), 0);
	X509_free(y);
	X509_free(x);
	X509_free(cax);
	SSL_CTX_free(sctx);
	tlsca_free(ca);
}

/* A CA that ends in 3 hours: its leaves end with it, not a day later. */
static void
test_leaf_within_ca(void **state)
{
	char err[128];
	struct tlsca *ca = tlsca_new("al-0123456789abcdef", 3 * 3600000ull, 8,
	    err, sizeof err);
	SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
	enum tlsca_err e;
	X509 *cax = ca_cert(ca), *x = leaf_for(ca, sctx, "a.test", &e);

	assert_int_equal(e, TLSCA_OK);
	assert_true(ASN1_TIME_compare(X509_get0_notAfter(x),
	    X509_get0_notAfter(cax)) <= 0);
	assert_int_equal(verify(cax, x, "a.test"), 1);
	X509_free(x);
	X509_free(cax);
	SSL_CTX_free(sctx);
	tlsca_free(ca);
}

static void
test_cache_bound(void **state)
{
	char err[128];
	struct tlsca *ca = tlsca_new("al-0123456789abcdef", 86400000ull * 2, 2,
	    err, sizeof err);
	SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
	enum tlsca_err e;
	X509 *x;

	assert_null(tlsca_new("x", 86400000, 0, err, sizeof err));
	x = leaf_for(ca, sctx, "a.test", &e);
	X509_free(x);
	x = leaf_for(ca, sctx, "b.test", &e);
	X509_free(x);
	assert_int_equal(tlsca_nleaves(ca), 2);
	assert_null(leaf_for(ca, sctx, "c.test", &e));
	assert_int_equal(e, TLSCA_FULL);
	assert_string_equal(tlsca_strerror(e),
	    "the lane's certificate cache is full");
	x = leaf_for(ca, sctx, "a.test", &e);	/* still served */
	assert_int_equal(e, TLSCA_OK);
	X509_free(x);
	/* Names only, normalised: no IP literal, no second name smuggled. */
	static const char *const bad[] = { "1.2.3.4", "::1", "a b.test",
	    "A.test", "a.test,DNS:evil.test", "", "a..test" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_null(leaf_for(ca, sctx, bad[i], &e));
		assert_int_equal(e, TLSCA_BADHOST);
	}
	assert_int_equal(tlsca_nleaves(ca), 2);
	SSL_CTX_free(sctx);
	tlsca_free(ca);
}

/*
 * The CA's and the leaves' private keys are in the secure heap (mlock'd,
 * left out of cores): OpenSSL puts an EC key's private BIGNUM there once
 * the heap is set up, and gives it back, cleared, with the key.
 */
static void
test_keys_in_secure_heap(void **state)
{
	char err[128];
	size_t used0 = CRYPTO_secure_used(), used1;
	struct tlsca *ca;
	SSL_CTX *sctx = SSL_CTX_new(TLS_server_method());
	enum tlsca_err e;
	X509 *x;

	assert_int_not_equal(secmem_state(), SECMEM_OFF);
	ca = tlsca_new("al-0123456789abcdef", 86400000ull * 2, 4, err,
	    sizeof err);
	assert_non_null(ca);
	used1 = CRYPTO_secure_used();
	assert_true(used1 > used0);
	x = leaf_for(ca, sctx, "a.test", &e);
	assert_non_null(x);
	X509_free(x);
	assert_true(CRYPTO_secure_used() > used1);
	SSL_CTX_free(sctx);
	tlsca_free(ca);
	assert_int_equal(CRYPTO_secure_used(), used0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ca_profile),
		cmocka_unit_test(test_leaf_profile),
		cmocka_unit_test(test_leaf_within_ca),
		cmocka_unit_test(test_cache_bound),
		cmocka_unit_test(test_keys_in_secure_heap),
	};

	/* As the daemon does before its first lane. */
	(void)secmem_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
