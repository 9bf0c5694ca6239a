/*
 * Host patterns that can ever work (see hostrule.h). The address rule is
 * wider than any one parser on purpose: glibc, musl, macOS, curl, Python
 * and browsers disagree on which spellings are addresses, and a pattern
 * is refused if any of them would read it as one.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <libpsl.h>

#include "hostrule.h"
#include "util.h"

/* The WHATWG URL "ends in a number" rule, on the last label of s[0..n). */
static bool
ends_in_number(const char *s, size_t n)
{
	const char *last = s + n;
	size_t ln;
	bool digits = true;

	while (last > s && last[-1] != '.')
		last--;
	ln = (size_t)(s + n - last);
	if (ln == 0)
		return false;
	for (size_t i = 0; i < ln; i++)
		if (last[i] < '0' || last[i] > '9')
			digits = false;
	if (digits)
		return true;
	if (ln < 2 || last[0] != '0' || (last[1] != 'x' && last[1] != 'X'))
		return false;
	for (size_t i = 2; i < ln; i++)
		if (!((last[i] >= '0' && last[i] <= '9') ||
		    (last[i] >= 'a' && last[i] <= 'f') ||
		    (last[i] >= 'A' && last[i] <= 'F')))
			return false;
	return true;	/* "0x" alone is 0 to a URL parser */
}

/* An IPv6 literal: "::1", "[::1]", "fe80::1%eth0", "::ffff:127.0.0.1". */
static bool
is_v6(const char *s, size_t n)
{
	char buf[INET6_ADDRSTRLEN + 64];
	unsigned char a[16];

	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n >= sizeof buf || memchr(s, ':', n) == NULL)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	buf[strcspn(buf, "%")] = '\0';	/* a zone is still an address */
	return inet_pton(AF_INET6, buf, a) == 1;
}

bool
hostrule_is_address(const char *name)
{
	char buf[HOSTRULE_PATTERN_MAX + 1];
	size_t n = strlen(name);
	struct in_addr a4;
	unsigned char a[16];

	if (n > 0 && name[n - 1] == '.')
		n--;
	if (n == 0 || n >= sizeof buf)
		return false;
	if (is_v6(name, n))
		return true;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return ends_in_number(buf, n) || inet_aton(buf, &a4) != 0 ||
	    inet_pton(AF_INET, buf, a) == 1;
}

/* The names systems map to loopback in /etc/hosts, besides *.localhost. */
static const char *const loopback_names[] = {
	"localhost.localdomain", "ip6-localhost", "ip6-loopback",
	"localhost6", "localhost6.localdomain6", NULL,
};

bool
hostrule_is_loopback(const char *name)
{
	static const char tld[] = ".localhost";
	size_t n = strlen(name), tl = sizeof tld - 1;

	/* RFC 6761: localhost and every name below it are loopback. */
	if (strcmp(name, "localhost") == 0 ||
	    (n > tl && strcmp(name + n - tl, tld) == 0))
		return true;
	for (size_t i = 0; loopback_names[i] != NULL; i++)
		if (strcmp(name, loopback_names[i]) == 0)
			return true;
	return false;
}

int
hostrule_public_suffix(const char *suffix)
{
	char probe[HOSTRULE_PATTERN_MAX + 3];
	psl_ctx_t *own = psl_latest(NULL);
	const psl_ctx_t *psl = own != NULL ? own : psl_builtin();
	int rc;

	if (psl == NULL)
		return -1;
	/*
	 * A wildcard rule ("*.kawasaki.jp") makes each name directly below
	 * its base a public suffix; "x" stands for any such name. libpsl
	 * 0.21 already calls the base itself public; a version that follows
	 * the list's algorithm to the letter would not, and the probe holds.
	 */
	snprintf(probe, sizeof probe, "x.%s", suffix);
	rc = psl_is_public_suffix2(psl, suffix, PSL_TYPE_ANY) ||
	    psl_is_public_suffix2(psl, probe, PSL_TYPE_ANY);
	psl_free(own);
	return rc ? 1 : 0;
}

/*
 * LDH labels of 1-63 characters, 253 in all, no hyphen at either end of
 * a label; *labels says how many. name is already lower case.
 */
static bool
name_valid(const char *name, size_t *labels)
{
	size_t n = strlen(name), label = 0;

	*labels = 1;
	if (n == 0 || n > HOSTRULE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (c == '.') {
			if (label == 0 || name[i - 1] == '-')
				return false;
			label = 0;
			(*labels)++;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-'))
			return false;
		if ((c == '-' && label == 0) || ++label > 63)
			return false;
	}
	return label > 0 && name[n - 1] != '-';
}

/* ASCII lower case, one trailing dot removed. */
static void
normalise(char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			s[i] = (char)(s[i] - 'A' + 'a');
	if (n > 0 && s[n - 1] == '.')
		s[n - 1] = '\0';
}

/* The reason a normalised pattern can never work, or NULL. */
static const char *
refusal(const char *name, bool wild, enum hostrule_use use, char *ps,
    size_t pslen)
{
	size_t labels;

	if (hostrule_is_address(name))
		return "is an address, not a host name: the proxy checks the "
		    "name in the host's certificate and refuses non-public "
		    "addresses";
	if (!name_valid(name, &labels))
		return "is not a host name or a \"*.example.org\" pattern";
	if (hostrule_is_loopback(name))
		return "is a loopback name, not a host name: the proxy "
		    "refuses non-public addresses";
	if (wild && labels < 2)
		return "is not a host name or a \"*.example.org\" pattern: "
		    "\"*.\" needs a name of two labels or more";
	if (!wild || use != HOSTRULE_SECRET)
		return NULL;
	switch (hostrule_public_suffix(name)) {
	case 0:
		return NULL;
	case 1:
		snprintf(ps, pslen, "is a wildcard over the public suffix "
		    "\"%.80s\": any registrant's name below it, with a "
		    "certificate, would get the value; name the hosts", name);
		return ps;
	default:
		return "is a wildcard, and no public suffix list could be "
		    "loaded to check it (install publicsuffix or libpsl's "
		    "built-in list); name the hosts";
	}
}

bool
hostrule_check(const char *pattern, enum hostrule_use use,
    char norm[HOSTRULE_PATTERN_MAX + 1], char *why, size_t whylen)
{
	char given[84], ps[HOSTRULE_PATTERN_MAX + 200];
	size_t n = strlen(pattern);
	bool wild = strncmp(pattern, "*.", 2) == 0;
	const char *r;

	norm[0] = '\0';
	snprintf(given, sizeof given, "%.80s", pattern);
	str_sanitize(given);
	if (n == 0 || n > HOSTRULE_PATTERN_MAX) {
		snprintf(why, whylen, "\"%s\" is not a host name: a host "
		    "pattern is 1-%d characters", given, HOSTRULE_PATTERN_MAX);
		return false;
	}
	memcpy(norm, pattern, n + 1);
	normalise(norm);
	r = refusal(wild ? norm + 2 : norm, wild, use, ps, sizeof ps);
	if (r == NULL)
		return true;
	norm[0] = '\0';
	snprintf(why, whylen, "\"%s\" %s", given, r);
	return false;
}
