/*
 * Lane secrets: the placeholders (daemon/lanesecret.c), the check of a
 * create's secrets against the configured ones, the `secret` and
 * `secret_header` config lines, a secret's own headers, the registry's
 * text, sealing into the proxy's set, and the shared text checks the CLI
 * uses too (proto/text.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "lanecheck.h"
#include "lanesecret.h"
#include "secret.h"
#include "text.h"

#define INVALID AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT
#define PRECONDITION AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION

/* A request secret; value NULL: none. */
static Agentlane__V1__Secret *
req_secret(const char *name, const char *value, const char **hosts,
    size_t nhosts)
{
	Agentlane__V1__Secret *s = calloc(1, sizeof *s);

	agentlane__v1__secret__init(s);
	s->name = (char *)name;
	s->value.data = (uint8_t *)value;
	s->value.len = value != NULL ? strlen(value) : 0;
	s->hosts = (char **)hosts;
	s->n_hosts = nhosts;
	return s;
}

static void
free_req(Agentlane__V1__Secret **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
}

/* Plans; the message must be set exactly when it refuses, never the value. */
static int
plan(const char *conf, Agentlane__V1__Secret **v, size_t n,
    struct lanesecret_set **out, const char *want_in_err)
{
	char err[512] = "";
	int code = lanesecret_plan(conf, v, n, out, err, sizeof err);

	if (code == 0 && err[0] != '\0')
		fail_msg("accepted with a message: %s", err);
	if (code != 0 && (want_in_err == NULL ||
	    strstr(err, want_in_err) == NULL))
		fail_msg("error \"%s\" lacks \"%s\"", err,
		    want_in_err != NULL ? want_in_err : "(none expected)");
	if (strstr(err, "sk-value") != NULL)
		fail_msg("the error quotes the value: %s", err);
	if (code != 0)
		assert_null(*out);
	return code;
}

static void
test_placeholder(void **state)
{
	char a[LANESECRET_PH_LEN + 1], b[LANESECRET_PH_LEN + 1];

	assert_int_equal(lanesecret_placeholder_make(a, sizeof a), 0);
	assert_int_equal(strlen(a), LANESECRET_PH_LEN);
	assert_int_equal(strncmp(a, "AGENTLANE_SECRET_", 17), 0);
	/* 192 random bits: 48 lower-case hex digits after the prefix. */
	assert_int_equal(strspn(a + 17, "0123456789abcdef"), 48);
	assert_int_equal(lanesecret_placeholder_make(b, sizeof b), 0);
	assert_string_not_equal(a, b);
	/* Claude Code tells keys apart by their last 20 characters. */
	assert_memory_not_equal(a + LANESECRET_PH_LEN - 20,
	    b + LANESECRET_PH_LEN - 20, 20);
	/* Too small a buffer is refused, not cut. */
	assert_int_equal(lanesecret_placeholder_make(a, LANESECRET_PH_LEN), -1);
	/* The proxy's set takes it: its length and alphabet. */
	assert_true(LANESECRET_PH_LEN >= SECRET_PLACEHOLDER_MIN &&
	    LANESECRET_PH_LEN <= SECRET_PLACEHOLDER_MAX);
}

/* Many draws: all distinct, none a part of another (one length). */
static void
test_placeholder_many(void **state)
{
	enum { N = 512 };
	static char ph[N][LANESECRET_PH_LEN + 1];

	for (size_t i = 0; i < N; i++) {
		assert_int_equal(lanesecret_placeholder_make(ph[i],
		    sizeof ph[i]), 0);
		for (size_t j = 0; j < i; j++)
			assert_null(strstr(ph[j], ph[i]));
	}
}

static void
test_plan(void **state)
{
	const char *h1[] = { "API.Anthropic.com." }, *h2[] = { "github.com",
	    "*.github.com", "github.com" };
	Agentlane__V1__Secret *v[2] = {
		req_secret("ANTHROPIC_API_KEY", "sk-value-1", h1, 1),
		req_secret("GH_TOKEN", "sk-value-2", h2, 3),
	};
	struct lanesecret_set *set;
	char text[LANESECRET_TEXT_MAX + 1];

	assert_int_equal(plan("", v, 2, &set, NULL), 0);
	assert_non_null(set);
	assert_int_equal(set->n, 2);
	assert_string_equal(set->s[0].name, "ANTHROPIC_API_KEY");
	/* Normalised like allow patterns; a repeat dropped. */
	assert_string_equal(set->s[0].hosts, "api.anthropic.com");
	assert_string_equal(set->s[1].hosts, "github.com\n*.github.com");
	assert_int_equal(set->s[1].nhosts, 2);
	assert_int_equal(set->s[0].value_len, 10);
	assert_memory_equal(set->s[0].value, "sk-value-1", 10);
	/* The value was copied off the request. */
	assert_ptr_not_equal(set->s[0].value, v[0]->value.data);
	assert_true(lanesecret_text(set, text, sizeof text) > 0);
	assert_string_equal(text, "ANTHROPIC_API_KEY api.anthropic.com\n"
	    "GH_TOKEN github.com *.github.com");
	assert_int_equal(lanesecret_text(set, text, 20), -1);
	lanesecret_set_free(set);

	/* No secrets, nothing configured: no set at all. */
	assert_int_equal(plan("", NULL, 0, &set, NULL), 0);
	assert_null(set);
	free_req(v, 2);
}

static void
test_plan_refusals(void **state)
{
	const char *good[] = { "api.example.com" };
	const char *wide[] = { "*.com" }, *addr[] = { "203.0.113.7" };
	const char *addr6[] = { "2001:db8::1" }, *empty[] = { "" };
	const char *many[17];
	struct lanesecret_set *set;
	Agentlane__V1__Secret *v[LANESECRET_MAX + 1];

	for (size_t i = 0; i < 17; i++)
		many[i] = "a.example.org";
	v[0] = req_secret("1BAD", "sk-value", good, 1);
	assert_int_equal(plan("", v, 1, &set, "a secret's name"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", NULL, good, 1);
	assert_int_equal(plan("", v, 1, &set, "is the variable set?"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value\r\nX-Evil: 1", good, 1);
	assert_int_equal(plan("", v, 1, &set, "printable ASCII"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", " sk-value", good, 1);
	assert_int_equal(plan("", v, 1, &set, "printable ASCII"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value", wide, 1);
	assert_int_equal(plan("", v, 1, &set, "is not a host name"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value", addr, 1);
	assert_int_equal(plan("", v, 1, &set, "is an address, not a host name"),
	    INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value", addr6, 1);
	assert_int_equal(plan("", v, 1, &set, "is an address, not a host name"),
	    INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value", empty, 1);
	assert_int_equal(plan("", v, 1, &set, "1-255 characters"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value", many, 17);
	assert_int_equal(plan("", v, 1, &set, "at most 16 hosts"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value", NULL, 0);
	assert_int_equal(plan("", v, 1, &set, "names no host"), INVALID);
	free(v[0]);
	v[0] = req_secret("K", "sk-value", good, 1);
	v[1] = req_secret("K", "sk-value-2", good, 1);
	assert_int_equal(plan("", v, 2, &set, "given twice"), INVALID);
	free_req(v, 2);
	for (size_t i = 0; i < LANESECRET_MAX + 1; i++)
		v[i] = req_secret("K", "sk-value", good, 1);
	assert_int_equal(plan("", v, LANESECRET_MAX + 1, &set, "at most 16"),
	    INVALID);
	free_req(v, LANESECRET_MAX + 1);
}

static void
test_config(void **state)
{
	const char *h[] = { "other.example.org" };
	char *conf = strdup("");
	char err[256];
	Agentlane__V1__Secret *v[2];
	struct lanesecret_set *set;

	assert_int_equal(lanesecret_config_add(&conf,
	    "ANTHROPIC_API_KEY@api.anthropic.com,*.Anthropic.com", err,
	    sizeof err), 0);
	assert_int_equal(lanesecret_config_add(&conf, "GH_TOKEN@github.com",
	    err, sizeof err), 0);
	assert_string_equal(conf, "ANTHROPIC_API_KEY api.anthropic.com "
	    "*.anthropic.com\nGH_TOKEN github.com");
	assert_int_equal(lanesecret_config_add(&conf, "GH_TOKEN@x.example.org",
	    err, sizeof err), -1);
	assert_non_null(strstr(err, "named twice"));
	assert_int_equal(lanesecret_config_add(&conf, "NOHOSTS", err,
	    sizeof err), -1);
	assert_int_equal(lanesecret_config_add(&conf, "X@*.org", err,
	    sizeof err), -1);
	assert_int_equal(lanesecret_config_add(&conf, "X@", err,
	    sizeof err), -1);

	/* Every configured name must be brought, with its value. */
	v[0] = req_secret("ANTHROPIC_API_KEY", "sk-value", NULL, 0);
	assert_int_equal(plan(conf, v, 1, &set, "names secret GH_TOKEN"),
	    PRECONDITION);
	assert_int_equal(plan(conf, NULL, 0, &set,
	    "names secret ANTHROPIC_API_KEY"), PRECONDITION);
	/* Without hosts: the configured ones; with: its own. */
	v[1] = req_secret("GH_TOKEN", "sk-value-2", h, 1);
	assert_int_equal(plan(conf, v, 2, &set, NULL), 0);
	assert_string_equal(set->s[0].hosts, "api.anthropic.com\n*.anthropic.com");
	assert_string_equal(set->s[1].hosts, "other.example.org");
	lanesecret_set_free(set);
	free_req(v, 2);
	free(conf);
}

/* config_set: the key and its round trip through config_print. */
static void
test_config_key(void **state)
{
	struct config c;
	char err[256], *out = NULL;
	size_t len = 0;
	FILE *f;

	config_defaults(&c);
	assert_int_equal(config_set(&c, "secret",
	    "ANTHROPIC_API_KEY@api.anthropic.com", err, sizeof err), 0);
	assert_int_equal(config_set(&c, "secret", "GH_TOKEN@github.com,"
	    "*.github.com", err, sizeof err), 0);
	assert_int_equal(config_set(&c, "secret", "bad name@x.example.org",
	    err, sizeof err), -1);
	assert_non_null((f = open_memstream(&out, &len)));
	config_print(&c, f);
	fclose(f);
	assert_non_null(strstr(out, "secret = ANTHROPIC_API_KEY@api.anthropic.com\n"
	    "secret = GH_TOKEN@github.com,*.github.com\n"));
	free(out);
	config_free(&c);
}

static void
test_seal(void **state)
{
	const char *h[] = { "api.anthropic.com", "*.anthropic.com" };
	Agentlane__V1__Secret *v[3] = {
		req_secret("A", "sk-value-a", h, 2),
		req_secret("B", "sk-value-b", h, 1),
		req_secret("C", "sk-value-c", h, 1),
	};
	struct lanesecret_set *set;
	struct secret_set *sealed;
	char err[256];

	assert_int_equal(plan("", v, 3, &set, NULL), 0);
	assert_non_null((sealed = lanesecret_seal(set, err, sizeof err)));
	assert_int_equal(sealed->n, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(strlen(sealed->v[i].placeholder),
		    LANESECRET_PH_LEN);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(sealed->v[i].placeholder,
			    sealed->v[j].placeholder);
	}
	assert_string_equal(sealed->v[0].name, "A");
	assert_int_equal(sealed->v[0].nhosts, 2);
	assert_string_equal(sealed->v[0].hosts[1], "*.anthropic.com");
	assert_memory_equal(sealed->v[2].value, "sk-value-c", 10);
	assert_true(secret_host_match(&sealed->v[0], "x.anthropic.com"));
	assert_false(secret_host_match(&sealed->v[1], "x.anthropic.com"));
	secret_set_free(sealed);
	free_req(v, 3);
}

static void
test_text_split(void **state)
{
	char text[] = "A a.example.org *.b.example.org\nB c.example.org";
	struct lanesecret_info info[LANESECRET_MAX];
	size_t n = lanesecret_text_split(text, info, LANESECRET_MAX);

	assert_int_equal(n, 2);
	assert_string_equal(info[0].name, "A");
	assert_int_equal(info[0].nhosts, 2);
	assert_string_equal(info[0].hosts[1], "*.b.example.org");
	assert_string_equal(info[1].name, "B");
	assert_string_equal(info[1].hosts[0], "c.example.org");
	assert_int_equal(lanesecret_text_split((char[]){ "" }, info, 4), 0);
}

/* What the CLI checks before it sends (the same functions). */
static void
test_text_checks(void **state)
{
	char name[TEXT_SECRET_NAME_MAX + 1], big[TEXT_SECRET_VALUE_MAX + 2];
	const char *hosts;

	assert_true(text_secret_spec("ANTHROPIC_API_KEY@api.anthropic.com",
	    name, &hosts));
	assert_string_equal(name, "ANTHROPIC_API_KEY");
	assert_string_equal(hosts, "api.anthropic.com");
	assert_true(text_secret_spec("GH_TOKEN", name, &hosts));
	assert_null(hosts);
	assert_true(text_secret_spec("_X@a.example.org,b.example.org", name,
	    &hosts));
	assert_string_equal(hosts, "a.example.org,b.example.org");
	assert_false(text_secret_spec("X@", name, &hosts));
	assert_false(text_secret_spec("@host", name, &hosts));
	assert_false(text_secret_spec("9X@host", name, &hosts));
	assert_false(text_secret_spec("A-B@host", name, &hosts));
	memset(big, 'A', 64);
	big[64] = '\0';
	assert_false(text_secret_spec(big, name, &hosts));
	big[63] = '\0';
	assert_true(text_secret_spec(big, name, &hosts));

	assert_true(text_secret_value_valid("sk-ant-api03-abc_DEF", 20));
	assert_true(text_secret_value_valid("a b", 3));
	assert_false(text_secret_value_valid("", 0));
	assert_false(text_secret_value_valid(" a", 2));
	assert_false(text_secret_value_valid("a ", 2));
	assert_false(text_secret_value_valid("a\tb", 3));
	assert_false(text_secret_value_valid("a\nb", 3));
	assert_false(text_secret_value_valid("a\0b", 3));
	assert_false(text_secret_value_valid("caf\xc3\xa9", 5));
	memset(big, 'v', sizeof big);
	assert_true(text_secret_value_valid(big, TEXT_SECRET_VALUE_MAX));
	assert_false(text_secret_value_valid(big, TEXT_SECRET_VALUE_MAX + 1));
}

/* lanecheck_create carries them into the plan; clearing wipes them. */
static void
test_create_plan(void **state)
{
	const char *h[] = { "api.example.com" };
	Agentlane__V1__Secret *v[1] = { req_secret("K", "sk-value", h, 1) };
	Agentlane__V1__CreateLane req = AGENTLANE__V1__CREATE_LANE__INIT;
	struct lane_create_plan p;
	struct config c;
	char err[256];

	config_defaults(&c);
	req.secrets = v;
	req.n_secrets = 1;
	assert_int_equal(lanecheck_create(&c, &req, 0, &p, err, sizeof err), 0);
	assert_non_null(p.secrets);
	assert_string_equal(p.secrets->s[0].name, "K");
	lanecheck_plan_clear(&p);
	assert_null(p.secrets);
	/* A refusal before the secrets leaves nothing to free. */
	assert_int_equal(lanecheck_create(&c, &req, c.max_lanes, &p, err,
	    sizeof err), AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED);
	assert_null(p.secrets);
	config_free(&c);
	free_req(v, 1);
}

/* A request secret with headers of its own. */
static Agentlane__V1__Secret *
req_secret_h(const char *name, const char **hosts, size_t nhosts,
    const char **headers, size_t nheaders)
{
	Agentlane__V1__Secret *s = req_secret(name, "sk-value", hosts, nhosts);

	s->headers = (char **)headers;
	s->n_headers = nheaders;
	return s;
}

/* A secret's own headers: checked, lower case, deduplicated, kept, sealed. */
static void
test_headers(void **state)
{
	const char *h[] = { "api.example.com" };
	const char *hd[] = { "X-Custom-Key", "x-custom-key", "X-Other" };
	Agentlane__V1__Secret *v[2] = {
		req_secret_h("K", h, 1, hd, 3),
		req_secret("L", "sk-value-2", h, 1),
	};
	struct lanesecret_set *set;
	struct secret_set *sealed;
	struct lanesecret_info info[LANESECRET_MAX];
	char text[LANESECRET_TEXT_MAX + 1], err[256];

	assert_int_equal(plan("", v, 2, &set, NULL), 0);
	assert_int_equal(set->s[0].nheaders, 2);
	assert_string_equal(set->s[0].headers[0], "x-custom-key");
	assert_string_equal(set->s[0].headers[1], "x-other");
	assert_int_equal(set->s[1].nheaders, 0);
	assert_true(lanesecret_text(set, text, sizeof text) > 0);
	assert_string_equal(text, "K api.example.com :x-custom-key :x-other\n"
	    "L api.example.com");
	/* The registry's text back: hosts and headers apart. */
	assert_int_equal(lanesecret_text_split(text, info, LANESECRET_MAX), 2);
	assert_int_equal(info[0].nhosts, 1);
	assert_string_equal(info[0].hosts[0], "api.example.com");
	assert_int_equal(info[0].nheaders, 2);
	assert_string_equal(info[0].headers[1], "x-other");
	assert_int_equal(info[1].nheaders, 0);
	/* Sealed: the proxy's set has them as credential headers. */
	assert_non_null((sealed = lanesecret_seal(set, err, sizeof err)));
	assert_int_equal(sealed->v[0].nheaders, 2);
	assert_true(secret_header_is_credential(&sealed->v[0], "X-Other", 7));
	assert_true(secret_header_is_credential(&sealed->v[0],
	    "Authorization", 13));
	assert_false(secret_header_is_credential(&sealed->v[0],
	    "X-Request-Id", 12));
	assert_false(secret_header_is_credential(&sealed->v[1], "X-Other", 7));
	secret_set_free(sealed);
	free_req(v, 2);
}

static void
test_headers_refused(void **state)
{
	const char *h[] = { "api.example.com" };
	const char *bad[] = { "Host", "content-length", "Transfer-Encoding",
	    "Connection", "COOKIE", "set-cookie", "Proxy-Authorization", "te",
	    "x custom", "x:custom", "x-\xc3\xa9", "", "x-key\r\nX-Evil" };
	const char *nine[] = { "h1", "h2", "h3", "h4", "h5", "h6", "h7", "h8",
	    "h9" };
	const char *eight[] = { "h1", "H1", "h2", "h3", "h4", "h5", "h6", "h7",
	    "h8" };
	char big[TEXT_SECRET_HEADER_MAX + 2];
	const char *bigv[] = { big };
	struct lanesecret_set *set;
	Agentlane__V1__Secret *v[1];

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		v[0] = req_secret_h("K", h, 1, &bad[i], 1);
		assert_int_equal(plan("", v, 1, &set,
		    "cannot carry a credential"), INVALID);
		free(v[0]);
	}
	v[0] = req_secret_h("K", h, 1, nine, 9);
	assert_int_equal(plan("", v, 1, &set, "at most 8 headers"), INVALID);
	free(v[0]);
	/* Nine names, eight headers: a repeat in another case is one. */
	v[0] = req_secret_h("K", h, 1, eight, 9);
	assert_int_equal(plan("", v, 1, &set, "at most 8 headers"), INVALID);
	free(v[0]);
	v[0] = req_secret_h("K", h, 1, eight + 1, 8);
	assert_int_equal(plan("", v, 1, &set, NULL), 0);
	assert_int_equal(set->s[0].nheaders, 8);
	lanesecret_set_free(set);
	free(v[0]);
	memset(big, 'x', sizeof big - 1);
	big[TEXT_SECRET_HEADER_MAX] = '\0';
	v[0] = req_secret_h("K", h, 1, bigv, 1);
	assert_int_equal(plan("", v, 1, &set, NULL), 0);
	lanesecret_set_free(set);
	big[TEXT_SECRET_HEADER_MAX] = 'x';
	big[TEXT_SECRET_HEADER_MAX + 1] = '\0';
	assert_int_equal(plan("", v, 1, &set, "cannot carry a credential"),
	    INVALID);
	free(v[0]);
}

/*
 * The CLI's and the daemon's check (text_secret_header_valid) and the
 * proxy's (secret_set_headers) agree: neither takes what the other
 * refuses, so nothing the daemon accepted fails when the lane is sealed.
 */
static void
test_headers_agree(void **state)
{
	const char *names[] = { "x-api-key", "X-Custom", "a", "!#$%&'*+-.^_`|~",
	    "host", "HOST", "connection", "proxy-connection", "keep-alive",
	    "te", "trailer", "transfer-encoding", "content-length", "upgrade",
	    "expect", "proxy-authorization", "proxy-authenticate", "cookie",
	    "set-cookie", "x y", "x:y", "x@y", "x(y)", "x\"y", "x\ty", "",
	    "x\x7f", "\xff", "x,y", "x/y", "x=y", "x;y", "x{y}", "x[y]",
	    "x?y", "x\\y" };
	const char *h[] = { "api.example.com" };
	char err[256];

	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		struct secret_set *s = secret_set_new(1);
		bool proxy;

		assert_int_equal(secret_set_add(s, "K", LANESECRET_PH_PREFIX
		    "0123456789abcdef0123456789abcdef0123456789abcdef",
		    "v", 1, h, 1, err, sizeof err), 0);
		proxy = secret_set_headers(s, 0, &names[i], 1, err,
		    sizeof err) == 0;
		if (proxy != text_secret_header_valid(names[i]))
			fail_msg("\"%s\": the proxy %s it, the daemon %s it",
			    names[i], proxy ? "takes" : "refuses", proxy ?
			    "refuses" : "takes");
		secret_set_free(s);
	}
}

/* agent-laned.conf's secret_header lines, and what a create takes of them. */
static void
test_config_headers(void **state)
{
	const char *h[] = { "other.example.org" }, *own[] = { "X-Mine" };
	char *conf = strdup("");
	char err[256];
	Agentlane__V1__Secret *v[1];
	struct lanesecret_set *set;

	assert_int_equal(lanesecret_config_header(&conf, "K=x-key", err,
	    sizeof err), -1);
	assert_non_null(strstr(err, "has no `secret` line"));
	assert_int_equal(lanesecret_config_add(&conf, "K@a.example.org", err,
	    sizeof err), 0);
	assert_int_equal(lanesecret_config_add(&conf, "L@b.example.org", err,
	    sizeof err), 0);
	assert_int_equal(lanesecret_config_header(&conf, "K=X-Key,x-other",
	    err, sizeof err), 0);
	assert_int_equal(lanesecret_config_header(&conf, "K=x-key", err,
	    sizeof err), 0);
	assert_string_equal(conf, "K a.example.org :x-key :x-other\n"
	    "L b.example.org");
	assert_int_equal(lanesecret_config_header(&conf, "K=Host", err,
	    sizeof err), -1);
	assert_non_null(strstr(err, "cannot carry a credential"));
	assert_int_equal(lanesecret_config_header(&conf, "K=", err,
	    sizeof err), -1);
	assert_int_equal(lanesecret_config_header(&conf, "K=,", err,
	    sizeof err), -1);
	assert_non_null(strstr(err, "names no header"));
	assert_int_equal(lanesecret_config_header(&conf, "K", err,
	    sizeof err), -1);
	assert_int_equal(lanesecret_config_header(&conf,
	    "K=h1,h2,h3,h4,h5,h6,h7", err, sizeof err), -1);
	assert_non_null(strstr(err, "at most 8 headers"));
	assert_string_equal(conf, "K a.example.org :x-key :x-other\n"
	    "L b.example.org");

	/* Without headers: the configured ones, with its own hosts too. */
	v[0] = req_secret("K", "sk-value", h, 1);
	assert_int_equal(plan(conf, v, 1, &set, "names secret L"),
	    PRECONDITION);
	free(v[0]);
	{
		Agentlane__V1__Secret *w[2] = {
			req_secret("K", "sk-value", h, 1),
			req_secret_h("L", NULL, 0, own, 1),
		};

		assert_int_equal(plan(conf, w, 2, &set, NULL), 0);
		assert_string_equal(set->s[0].hosts, "other.example.org");
		assert_int_equal(set->s[0].nheaders, 2);
		assert_string_equal(set->s[0].headers[0], "x-key");
		assert_string_equal(set->s[1].hosts, "b.example.org");
		assert_int_equal(set->s[1].nheaders, 1);
		assert_string_equal(set->s[1].headers[0], "x-mine");
		lanesecret_set_free(set);
		free(w[1]);
		w[1] = req_secret("L", "sk-value", NULL, 0);
		/* With headers of its own: only those. */
		w[0]->headers = (char **)own;
		w[0]->n_headers = 1;
		assert_int_equal(plan(conf, w, 2, &set, NULL), 0);
		assert_int_equal(set->s[0].nheaders, 1);
		assert_string_equal(set->s[0].headers[0], "x-mine");
		assert_int_equal(set->s[1].nheaders, 0);
		lanesecret_set_free(set);
		free_req(w, 2);
	}
	free(conf);
}

/* config_set's secret_header and its round trip through config_print. */
static void
test_config_header_key(void **state)
{
	struct config c;
	char err[256], *out = NULL;
	size_t len = 0;
	FILE *f;

	config_defaults(&c);
	assert_int_equal(config_set(&c, "secret", "K@a.example.org,b.example.org",
	    err, sizeof err), 0);
	assert_int_equal(config_set(&c, "secret", "L@c.example.org", err,
	    sizeof err), 0);
	assert_int_equal(config_set(&c, "secret_header", "K=X-Key,x-other",
	    err, sizeof err), 0);
	assert_int_equal(config_set(&c, "secret-header", "K=Cookie", err,
	    sizeof err), -1);
	assert_int_equal(config_set(&c, "secret_header", "M=x-key", err,
	    sizeof err), -1);
	assert_non_null((f = open_memstream(&out, &len)));
	config_print(&c, f);
	fclose(f);
	assert_non_null(strstr(out, "secret = K@a.example.org,b.example.org\n"
	    "secret = L@c.example.org\n"
	    "secret_header = K=x-key,x-other\n"));
	free(out);
	config_free(&c);
}

/* NAME=HEADER[,HEADER...]: the split the CLI and the configuration share. */
static void
test_header_spec(void **state)
{
	char name[TEXT_SECRET_NAME_MAX + 1];
	const char *list;

	assert_true(text_secret_header_spec("GITLAB_TOKEN=Private-Token,x-b",
	    name, &list));
	assert_string_equal(name, "GITLAB_TOKEN");
	assert_string_equal(list, "Private-Token,x-b");
	assert_false(text_secret_header_spec("K", name, &list));
	assert_false(text_secret_header_spec("K=", name, &list));
	assert_false(text_secret_header_spec("=x-key", name, &list));
	assert_false(text_secret_header_spec("9K=x-key", name, &list));
	assert_false(text_secret_header_spec("K@host=x-key", name, &list));
	assert_true(text_secret_header_valid("x-api-key"));
	assert_false(text_secret_header_valid(NULL));
	assert_false(text_secret_header_valid("Transfer-Encoding"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_placeholder),
		cmocka_unit_test(test_placeholder_many),
		cmocka_unit_test(test_plan),
		cmocka_unit_test(test_plan_refusals),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_config_key),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_text_split),
		cmocka_unit_test(test_text_checks),
		cmocka_unit_test(test_create_plan),
		cmocka_unit_test(test_headers),
		cmocka_unit_test(test_headers_refused),
		cmocka_unit_test(test_headers_agree),
		cmocka_unit_test(test_config_headers),
		cmocka_unit_test(test_config_header_key),
		cmocka_unit_test(test_header_spec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
