/*
 * daemon/secret.c, proxysecret.c and proxyfwd.c: what a secret set
 * accepts, where a placeholder is replaced (only a whole credential, only
 * in a credential header, only for its hosts), where it is refused (base64
 * of any shape too), and that a body scan finds it across seams.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "proxyfwd.h"
#include "proxyreq.h"
#include "proxysecret.h"
#include "secmem.h"
#include "secret.h"

#define PH_A "AGENTLANE_PH_0123456789abcdef0123456789abcdef"
#define PH_B "AGENTLANE_PH_fedcba9876543210fedcba9876543210"

static struct secret_set *
two(void)
{
	const char *ha[] = { "*.anthropic.com" }, *hb[] = { "github.com" };
	struct secret_set *s = secret_set_new(4);
	char err[128];

	assert_int_equal(secret_set_add(s, "ANTHROPIC_API_KEY", PH_A, "sk-A", 4,
	    ha, 1, err, sizeof err), 0);
	assert_int_equal(secret_set_add(s, "GH_TOKEN", PH_B, "ghp_B", 5, hb, 1,
	    err, sizeof err), 0);
	return s;
}

static void
test_set_checks(void **state)
{
	struct secret_set *s = two();
	const char *h[] = { "x.org" }, *bad[] = { "*.org" };
	char err[128];

	/* Duplicate name, overlapping placeholders, header-breaking values. */
	assert_int_equal(secret_set_add(s, "GH_TOKEN", PH_A "x", "v", 1, h, 1,
	    err, sizeof err), -1);
	assert_int_equal(secret_set_add(s, "C", PH_A "x", "v", 1, h, 1, err,
	    sizeof err), -1);
	assert_non_null(strstr(err, "overlaps"));
	assert_int_equal(secret_set_add(s, "C", "AGENTLANE_PH_short", "v", 1, h,
	    1, err, sizeof err), -1);
	assert_int_equal(secret_set_add(s, "C", PH_A "9Z", "a\r\nX: y", 7, h, 1,
	    err, sizeof err), -1);
	assert_int_equal(secret_set_add(s, "1C", "AGENTLANE_PH_" "11111111111111111111111111111111",
	    "v", 1, h, 1, err, sizeof err), -1);
	assert_int_equal(secret_set_add(s, "C", "AGENTLANE_PH_" "11111111111111111111111111111111",
	    "v", 1, bad, 1, err, sizeof err), -1);
	assert_int_equal(secret_set_add(s, "C", "AGENTLANE_PH_" "11111111111111111111111111111111",
	    "v", 1, h, 0, err, sizeof err), -1);
	assert_int_equal(s->n, 2);
	assert_true(secret_host_match(&s->v[0], "api.anthropic.com"));
	assert_false(secret_host_match(&s->v[0], "anthropic.com"));
	assert_true(secret_set_any_host(s, "github.com"));
	assert_false(secret_set_any_host(NULL, "github.com"));
	secret_set_free(s);
}

/* secret_set_headers: a secret's own credential headers, and their bounds. */
static void
test_set_headers(void **state)
{
	struct secret_set *s = two();
	const char *ok[] = { "X-Custom-Key", "PRIVATE-token" };
	const char *nine[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i" };
	const char *forbidden[] = { "Host", "Content-Length",
	    "transfer-encoding", "Connection", "Cookie", "Set-Cookie", "TE",
	    "Upgrade", "Proxy-Authorization" };
	const char *malformed[] = { "", "x y", "x:y", "x\r\ny", "x-\xc3\xa9" };
	char big[SECRET_HEADER_NAME_MAX + 2], err[128];
	const char *bigv[] = { big };

	assert_int_equal(secret_set_headers(s, 2, ok, 1, err, sizeof err), -1);
	assert_int_equal(secret_set_headers(s, 0, nine, 9, err, sizeof err), -1);
	assert_non_null(strstr(err, "at most 8 headers"));
	assert_int_equal(secret_set_headers(s, 0, nine, 8, err, sizeof err), 0);
	assert_int_equal(s->v[0].nheaders, 8);
	for (size_t i = 0; i < sizeof forbidden / sizeof *forbidden; i++) {
		assert_int_equal(secret_set_headers(s, 0, &forbidden[i], 1, err,
		    sizeof err), -1);
		assert_non_null(strstr(err, "cannot carry a credential"));
	}
	for (size_t i = 0; i < sizeof malformed / sizeof *malformed; i++)
		assert_int_equal(secret_set_headers(s, 0, &malformed[i], 1, err,
		    sizeof err), -1);
	memset(big, 'x', sizeof big - 1);
	big[SECRET_HEADER_NAME_MAX + 1] = '\0';
	assert_int_equal(secret_set_headers(s, 0, bigv, 1, err, sizeof err), -1);
	/* A refusal leaves what was set. */
	assert_int_equal(s->v[0].nheaders, 8);
	big[SECRET_HEADER_NAME_MAX] = '\0';
	assert_int_equal(secret_set_headers(s, 0, bigv, 1, err, sizeof err), 0);
	assert_int_equal(secret_set_headers(s, 0, ok, 2, err, sizeof err), 0);
	assert_int_equal(s->v[0].nheaders, 2);
	assert_string_equal(s->v[0].headers[1], "private-token");
	assert_true(secret_header_is_credential(&s->v[0], "x-custom-KEY", 12));
	assert_false(secret_header_is_credential(&s->v[1], "X-Custom-Key", 12));
	/* The defaults, for every secret. */
	for (size_t i = 0; secret_default_headers[i] != NULL; i++)
		assert_true(secret_header_is_credential(&s->v[1],
		    secret_default_headers[i],
		    strlen(secret_default_headers[i])));
	assert_false(secret_header_is_credential(&s->v[1], "Origin", 6));
	assert_false(secret_header_is_credential(&s->v[1], "X-Request-Id", 12));
	secret_set_free(s);
}

/* The head proxysecret_head sends, as a string (NULL when refused). */
static char last_header[PROXYFWD_NAME_MAX + 1];

/* The head proxyfwd_head sends in a tunnel, as a string (NULL: refused). */
static char *
send_head(struct secret_set *s, const char *head, const char *host, int *st,
    int *refused)
{
	struct proxyreq r;
	struct proxyfwd_head h;
	const char *why;

	assert_int_equal(proxyreq_parse_origin(head, strlen(head), &r, &why), 0);
	*st = proxyfwd_head(s, head, &r, host, PROXYFWD_TUNNEL, &h);
	*refused = h.refused;
	memcpy(last_header, h.header, sizeof(last_header));
	if (*st != 0)
		return NULL;
	char *out = malloc(h.len + 1);
	memcpy(out, h.out, h.len);
	out[h.len] = '\0';
	free(h.out);
	return out;
}

static void
test_replace(void **state)
{
	struct secret_set *s = two();
	int st, ref;
	char *o;

	o = send_head(s, "GET /v1 HTTP/1.1\r\nHost: api.anthropic.com\r\n"
	    "x-api-key: " PH_A "\r\nX-Note: see\r\n\r\n",
	    "api.anthropic.com", &st, &ref);
	assert_int_equal(st, 0);
	assert_non_null(strstr(o, "x-api-key: sk-A\r\n"));
	free(o);
	/* Not a credential header: refused even to its own host. */
	assert_null(send_head(s, "GET /v1 HTTP/1.1\r\nHost: api.anthropic.com\r\n"
	    "X-Request-Id: " PH_A "\r\n\r\n", "api.anthropic.com", &st, &ref));
	assert_int_equal(st, 403);
	assert_int_equal(ref, 0);
	assert_string_equal(last_header, "X-Request-Id");
	o = send_head(s, "GET /?q=" PH_B " HTTP/1.1\r\nHost: github.com\r\n"
	    "Authorization: token " PH_B "\r\nConnection: close, X-Hop\r\n"
	    "X-Hop: 1\r\n\r\n", "github.com", &st, &ref);
	assert_int_equal(st, 0);
	assert_non_null(strstr(o, "GET /?q=" PH_B " HTTP/1.1\r\n"));	/* line as is */
	assert_non_null(strstr(o, "Authorization: token ghp_B\r\n"));
	assert_null(strstr(o, "X-Hop"));
	assert_non_null(strstr(o, "Accept-Encoding: identity\r\n"
	    "Connection: close\r\n\r\n"));
	free(o);
	/* Basic: x-access-token:PH_B is "eC1hY2Nlc3MtdG9rZW46" + ... */
	o = send_head(s, "GET / HTTP/1.1\r\nHost: github.com\r\nAuthorization: "
	    "Basic eC1hY2Nlc3MtdG9rZW46QUdFTlRMQU5FX1BIX2ZlZGNiYTk4NzY1NDMyMTBmZWRjYmE5ODc2NTQzMjEw"
	    "\r\n\r\n", "github.com", &st, &ref);
	assert_int_equal(st, 0);
	/* base64("x-access-token:ghp_B") */
	assert_non_null(strstr(o, "Authorization: Basic eC1hY2Nlc3MtdG9rZW46Z2hwX0I=\r\n"));
	free(o);
	secret_set_free(s);
}

static void
test_refuse(void **state)
{
	struct secret_set *s = two();
	int st, ref;

	assert_null(send_head(s, "GET / HTTP/1.1\r\nHost: github.com\r\n"
	    "x-api-key: " PH_A "\r\n\r\n", "github.com", &st, &ref));
	assert_int_equal(st, 403);
	assert_int_equal(ref, 0);
	/* Percent-encoded in the line, and inside Basic credentials. */
	assert_null(send_head(s, "GET /?k=AGENTLANE%5FPH_0123456789abcdef0123456789abcdef"
	    " HTTP/1.1\r\nHost: evil.example\r\n\r\n", "evil.example", &st, &ref));
	assert_int_equal(st, 403);
	assert_null(send_head(s, "GET / HTTP/1.1\r\nHost: evil.example\r\nAuthorization: "
	    "Basic eC1hY2Nlc3MtdG9rZW46QUdFTlRMQU5FX1BIX2ZlZGNiYTk4NzY1NDMyMTBmZWRjYmE5ODc2NTQzMjEw"
	    "\r\n\r\n", "evil.example", &st, &ref));
	assert_int_equal(ref, 1);
	secret_set_free(s);
}

static void
test_scan_seams(void **state)
{
	struct secret_set *s = two();
	const char *body = "{\"history\":\"" PH_B "\"}";
	size_t n = strlen(body);

	for (size_t cut = 0; cut <= n; cut++) {
		struct proxysecret_scan sc;
		memset(&sc, 0, sizeof sc);
		/* One byte at a time up to the cut, then the rest. */
		for (size_t i = 0; i < cut; i++)
			proxysecret_scan(s, &sc, (const uint8_t *)body + i, 1);
		proxysecret_scan(s, &sc, (const uint8_t *)body + cut, n - cut);
		assert_int_equal(sc.found, 2);
	}
	secret_set_free(s);
}

/* A secret's own header carries it; the same header twice is refused. */
static void
test_credential_headers(void **state)
{
	struct secret_set *s = two();
	const char *extra[] = { "X-Custom-Key" };
	char err[128];
	int st, ref;
	char *o;

	assert_int_equal(secret_set_headers(s, 0, extra, 1, err, sizeof err), 0);
	o = send_head(s, "GET / HTTP/1.1\r\nHost: api.anthropic.com\r\n"
	    "x-custom-key: " PH_A "\r\n\r\n", "api.anthropic.com", &st, &ref);
	assert_int_equal(st, 0);
	assert_non_null(strstr(o, "x-custom-key: sk-A\r\n"));
	free(o);
	/* Not GH_TOKEN's header, even on its own host. */
	assert_null(send_head(s, "GET / HTTP/1.1\r\nHost: github.com\r\n"
	    "x-custom-key: " PH_B "\r\n\r\n", "github.com", &st, &ref));
	assert_int_equal(st, 403);
	assert_null(send_head(s, "GET / HTTP/1.1\r\nHost: api.anthropic.com\r\n"
	    "x-api-key: " PH_A "\r\nX-API-Key: " PH_A "\r\n\r\n",
	    "api.anthropic.com", &st, &ref));
	assert_int_equal(st, 400);
	assert_null(send_head(s, "GET / HTTP/1.1\r\nHost: api.anthropic.com\r\n"
	    "Connection: x-api-key\r\nx-api-key: " PH_A "\r\n\r\n",
	    "api.anthropic.com", &st, &ref));
	assert_int_equal(st, 400);
	secret_set_free(s);
}

/*
 * The tripwire reads base64 in any header: padded or not, either
 * alphabet, split by blanks, behind any prefix.
 */
static void
test_base64_tripwire(void **state)
{
	struct secret_set *s = two();
	/* base64("u:" PH_B) and base64("xx" PH_B), URL-safe, no padding. */
	static const char *const forms[] = {
		"QUdFTlRMQU5FX1BIX2ZlZGNiYTk4NzY1NDMyMTBmZWRjYmE5ODc2NTQzMjEw",
		"QUdFTlRMQU5F X1BIX2ZlZGNi\tYTk4NzY1NDMyMTBmZWRjYmE5ODc2NTQzMjEw",
		"Token dTpBR0VOVExBTkVfUEhfZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA",
		"eHhBR0VOVExBTkVfUEhfZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=",
	};
	char head[512];
	int st, ref;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(head, sizeof head, "GET / HTTP/1.1\r\nHost: "
		    "api.anthropic.com\r\nX-Data: %s\r\n\r\n", forms[i]);
		assert_null(send_head(s, head, "api.anthropic.com", &st, &ref));
		assert_int_equal(st, 403);
		assert_int_equal(ref, 1);
	}
	secret_set_free(s);
}

/* Values live in the secure heap and leave it, cleared, with the set. */
static void
test_values_in_secure_heap(void **state)
{
	size_t used0 = CRYPTO_secure_used();
	struct secret_set *s;

	assert_int_not_equal(secmem_state(), SECMEM_OFF);
	s = two();
	assert_true(CRYPTO_secure_allocated(s->v[0].value));
	assert_true(CRYPTO_secure_allocated(s->v[1].value));
	assert_memory_equal(s->v[1].value, "ghp_B", 5);
	assert_true(CRYPTO_secure_used() > used0);
	secret_set_free(s);
	assert_int_equal(CRYPTO_secure_used(), used0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_checks),
		cmocka_unit_test(test_set_headers),
		cmocka_unit_test(test_replace),
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_scan_seams),
		cmocka_unit_test(test_credential_headers),
		cmocka_unit_test(test_base64_tripwire),
		cmocka_unit_test(test_values_in_secure_heap),
	};

	/* As the daemon does before its first lane. */
	(void)secmem_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
