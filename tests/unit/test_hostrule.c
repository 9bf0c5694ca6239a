/*
 * daemon/hostrule.c: which host patterns can ever work, for --secret and
 * --allow alike (every address spelling, loopback names, wildcards over
 * public suffixes for secrets only), and proxyreq_host_match on names
 * that only look like a listed suffix.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hostrule.h"
#include "netpolicy.h"
#include "proxyreq.h"
#include "secret.h"

/* Refused for both uses, with why containing want. */
static void
refused(const char *pattern, const char *want)
{
	char norm[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];
	enum hostrule_use uses[] = { HOSTRULE_ALLOW, HOSTRULE_SECRET };

	for (size_t i = 0; i < 2; i++) {
		why[0] = '\0';
		if (hostrule_check(pattern, uses[i], norm, why, sizeof why))
			fail_msg("\"%s\" was taken (use %zu) as \"%s\"", pattern,
			    i, norm);
		if (strstr(why, want) == NULL)
			fail_msg("\"%s\": \"%s\" lacks \"%s\"", pattern, why,
			    want);
		assert_string_equal(norm, "");
	}
}

static void
taken(const char *pattern, enum hostrule_use use, const char *want)
{
	char norm[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];

	if (!hostrule_check(pattern, use, norm, why, sizeof why))
		fail_msg("\"%s\" refused: %s", pattern, why);
	assert_string_equal(norm, want);
}

static const char addr_why[] = "is an address, not a host name: the proxy "
    "checks the name in the host's certificate and refuses non-public "
    "addresses";

static void
test_addresses(void **state)
{
	static const char *const spellings[] = {
		/* dotted, shorthand, one number */
		"127.0.0.1", "203.0.113.7", "127.1", "10.1.2", "2130706433",
		"0", "4294967295", "99999999999",
		/* hex and octal parts, in any case */
		"0x7f.1", "0X7F.0.0.1", "0x7f000001", "0177.0.0.1",
		"0177.1", "0x7f.0x0.0x0.0x1", "1.0x7f", "0x",
		/* last label numeric: an address to a URL parser */
		"example.123", "a.b.0x1f", "foo.0x",
		/* trailing dot, upper case */
		"127.0.0.1.", "0X7F000001.",
		/* IPv6, bracketed or not, mapped, with a zone */
		"::1", "[::1]", "::", "2001:db8::1", "[2001:DB8::1]",
		"::ffff:127.0.0.1", "[::ffff:7f00:1]", "::ffff:0:7f00:1",
		"fe80::1%eth0", "[fe80::1%25eth0]", "64:ff9b::7f00:1",
		/* wildcards over any of these */
		"*.1.2.3", "*.127.0.0.1", "*.0x7f.1", "*.2130706433",
		"*.[::1]", "*.::1", "*.example.123",
		NULL,
	};

	for (size_t i = 0; spellings[i] != NULL; i++)
		refused(spellings[i], addr_why);
	/* The quote is the pattern as given. */
	refused("0X7F.1", "\"0X7F.1\" is an address");
	assert_true(hostrule_is_address("127.1"));
	assert_true(hostrule_is_address("0x7f.1."));
	assert_false(hostrule_is_address("0xg.example.com"));
	assert_false(hostrule_is_address("1.2.3.4.example.com"));
	assert_false(hostrule_is_address("x0x1"));
	assert_false(hostrule_is_address(""));
}

static void
test_loopback(void **state)
{
	static const char *const names[] = {
		"localhost", "LOCALHOST.", "*.localhost", "a.localhost",
		"*.a.b.localhost", "localhost.localdomain", "ip6-localhost",
		"ip6-loopback", "localhost6", "localhost6.localdomain6",
		"Localhost6.Localdomain6.", NULL,
	};

	for (size_t i = 0; names[i] != NULL; i++)
		refused(names[i], "is a loopback name, not a host name: the "
		    "proxy refuses non-public addresses");
	taken("localhost.example.com", HOSTRULE_SECRET,
	    "localhost.example.com");
	taken("mylocalhost", HOSTRULE_ALLOW, "mylocalhost");
	taken("*.notlocalhost.dev", HOSTRULE_SECRET, "*.notlocalhost.dev");
}

static void
test_syntax(void **state)
{
	char long_label[80], long_name[HOSTRULE_PATTERN_MAX + 8];

	refused("", "a host pattern is 1-255 characters");
	refused("*.com", "\"*.\" needs a name of two labels or more");
	refused("*.org.", "\"*.\" needs a name of two labels or more");
	refused("*", "is not a host name");
	refused("*.", "is not a host name");
	refused("a.*.example.com", "is not a host name");
	refused("**.example.com", "is not a host name");
	refused("example.com:443", "is not a host name");
	refused("-a.example.com", "is not a host name");
	refused("a-.example.com", "is not a host name");
	refused("a..example.com", "is not a host name");
	refused("a_b.example.com", "is not a host name");
	refused("exa\nmple.com", "\"exa?mple.com\" is not a host name");
	memset(long_label, 'a', 64);
	strcpy(long_label + 64, ".example.com");
	refused(long_label, "is not a host name");
	memset(long_name, 'a', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	refused(long_name, "a host pattern is 1-255 characters");
	taken("API.Anthropic.COM.", HOSTRULE_SECRET, "api.anthropic.com");
	taken("*.NpmJS.org", HOSTRULE_ALLOW, "*.npmjs.org");
	taken("intranet", HOSTRULE_ALLOW, "intranet");
	taken("xn--bcher-kva.example", HOSTRULE_SECRET,
	    "xn--bcher-kva.example");
}

static void
test_public_suffixes(void **state)
{
	static const char *const wide[] = {
		"*.co.uk", "*.github.io", "*.herokuapp.com", "*.Github.IO.",
		"*.githubusercontent.com", "*.s3.amazonaws.com",
		/* a wildcard rule: each name below kawasaki.jp is public */
		"*.kawasaki.jp", "*.foo.kawasaki.jp", NULL,
	};
	char norm[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];

	for (size_t i = 0; wide[i] != NULL; i++) {
		if (hostrule_check(wide[i], HOSTRULE_SECRET, norm, why,
		    sizeof why))
			fail_msg("secret host \"%s\" was taken", wide[i]);
		if (strstr(why, "is a wildcard over the public suffix") == NULL)
			fail_msg("\"%s\": %s", wide[i], why);
		/* An allow list may open a whole public suffix. */
		if (!hostrule_check(wide[i], HOSTRULE_ALLOW, norm, why,
		    sizeof why))
			fail_msg("allow \"%s\" refused: %s", wide[i], why);
	}
	refused("*.com", "is not a host name");
	assert_false(hostrule_check("*.github.io", HOSTRULE_SECRET, norm, why,
	    sizeof why));
	assert_string_equal(why, "\"*.github.io\" is a wildcard over the "
	    "public suffix \"github.io\": any registrant's name below it, "
	    "with a certificate, would get the value; name the hosts");
	taken("*.anthropic.com", HOSTRULE_SECRET, "*.anthropic.com");
	taken("*.npmjs.org", HOSTRULE_SECRET, "*.npmjs.org");
	taken("*.bbc.co.uk", HOSTRULE_SECRET, "*.bbc.co.uk");
	taken("*.me.github.io", HOSTRULE_SECRET, "*.me.github.io");
	taken("*.anthropic.test", HOSTRULE_SECRET, "*.anthropic.test");
	/* An exact name that is a public suffix is one host, its owner's. */
	taken("github.io", HOSTRULE_SECRET, "github.io");
	assert_int_equal(hostrule_public_suffix("co.uk"), 1);
	assert_int_equal(hostrule_public_suffix("anthropic.com"), 0);
}

/* The rule holds where the daemon checks: allow lists and secret sets. */
static void
test_callers(void **state)
{
	char text[256] = "", why[HOSTRULE_WHY_MAX + 64];
	const char *h[] = { "*.github.io" }, *a[] = { "127.1" };
	struct secret_set *s = secret_set_new(2);

	assert_false(netpolicy_allow_add(text, sizeof text, "2130706433", why,
	    sizeof why));
	assert_string_equal(why, "allow: \"2130706433\" is an address, not a "
	    "host name: the proxy checks the name in the host's certificate "
	    "and refuses non-public addresses");
	assert_false(netpolicy_allow_add(text, sizeof text, "localhost", why,
	    sizeof why));
	assert_non_null(strstr(why, "allow: \"localhost\" is a loopback name"));
	assert_true(netpolicy_allow_add(text, sizeof text, "*.github.io", why,
	    sizeof why));
	assert_string_equal(text, "*.github.io");
	assert_int_equal(secret_set_add(s, "K",
	    "AGENTLANE_PH_0123456789abcdef0123456789abcdef", "v", 1, h, 1, why,
	    sizeof why), -1);
	assert_non_null(strstr(why, "secret K: \"*.github.io\" is a wildcard "
	    "over the public suffix"));
	assert_int_equal(secret_set_add(s, "K",
	    "AGENTLANE_PH_0123456789abcdef0123456789abcdef", "v", 1, a, 1, why,
	    sizeof why), -1);
	assert_non_null(strstr(why, "secret K: \"127.1\" is an address"));
	secret_set_free(s);
}

/* Look-alike suffixes: a wildcard matches at a label boundary only. */
static void
test_lookalike(void **state)
{
	const char *p = "*.anthropic.com";

	assert_false(proxyreq_host_match(p, "evilanthropic.com"));
	assert_true(proxyreq_host_match(p, "api.anthropic.com"));
	assert_true(proxyreq_host_match(p, "a.b.anthropic.com"));
	assert_false(proxyreq_host_match(p, "anthropic.com"));
	assert_false(proxyreq_host_match(p, "x.evil-anthropic.com"));
	assert_false(proxyreq_host_match(p, "anthropic.com.evil.org"));
	assert_false(proxyreq_host_match(p, "api.anthropic.com.evil.org"));
	assert_false(proxyreq_host_match(p, ".anthropic.com"));
	assert_false(proxyreq_host_match(p, "api.anthropic.co"));
	assert_false(proxyreq_host_match(p, "api.anthropic.comx"));
	/* Trailing dot and case, on either side. */
	assert_true(proxyreq_host_match(p, "API.Anthropic.COM."));
	assert_true(proxyreq_host_match("*.Anthropic.com.", "api.anthropic.com"));
	assert_false(proxyreq_host_match(p, "anthropic.com."));
	assert_false(proxyreq_host_match(p, "EVILanthropic.com."));
	/* Exact names. */
	assert_true(proxyreq_host_match("api.anthropic.com", "api.anthropic.com"));
	assert_true(proxyreq_host_match("api.anthropic.com", "API.anthropic.com."));
	assert_false(proxyreq_host_match("api.anthropic.com",
	    "xapi.anthropic.com"));
	assert_false(proxyreq_host_match("api.anthropic.com",
	    "api.anthropic.com.evil.org"));
	assert_false(proxyreq_host_match("api.anthropic.com", ""));
	assert_false(proxyreq_host_match("", ""));
}

/* What a request carries is normalised before it is matched. */
static void
test_request_host_normalised(void **state)
{
	char h1[] = "API.ANTHROPIC.COM.", h2[] = "EvilAnthropic.com";
	char norm[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];

	assert_true(hostrule_check("*.Anthropic.COM.", HOSTRULE_SECRET, norm,
	    why, sizeof why));
	assert_true(proxyreq_host_valid(h1));
	assert_string_equal(h1, "api.anthropic.com");
	assert_true(proxyreq_host_match(norm, h1));
	assert_true(proxyreq_host_valid(h2));
	assert_false(proxyreq_host_match(norm, h2));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addresses),
		cmocka_unit_test(test_loopback),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_public_suffixes),
		cmocka_unit_test(test_callers),
		cmocka_unit_test(test_lookalike),
		cmocka_unit_test(test_request_host_normalised),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
