/*
 * A host pattern, any bytes (--secret HOST, --allow, the `secret` and
 * `allow` keys): hostrule_check never reads past the string; what it
 * takes is a name or "*." and a name that no resolver reads as an
 * address and that is no loopback name; its normal form is taken again
 * unchanged, by hostrule_check and by the proxy's own pattern check, and
 * matches what it should; a secret's host is an allowed host too; a
 * refusal is one printable sentence that quotes the pattern.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostrule.h"
#include "proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_taken(const char *norm, enum hostrule_use use)
{
	char again[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];
	char copy[HOSTRULE_PATTERN_MAX + 1], host[HOSTRULE_PATTERN_MAX + 3];
	int wild = strncmp(norm, "*.", 2) == 0;
	const char *name = wild ? norm + 2 : norm;

	if (norm[0] == '\0' || strlen(norm) > HOSTRULE_PATTERN_MAX)
		abort();
	for (const char *p = name; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '.'))
			abort();
	if (hostrule_is_address(name) || hostrule_is_loopback(name))
		abort();
	if (!hostrule_check(norm, use, again, why, sizeof why) ||
	    strcmp(norm, again) != 0)
		abort();
	if (use == HOSTRULE_SECRET &&
	    !hostrule_check(norm, HOSTRULE_ALLOW, again, why, sizeof why))
		abort();
	memcpy(copy, norm, strlen(norm) + 1);
	if (!proxyreq_pattern_valid(copy) || strcmp(copy, norm) != 0)
		abort();
	snprintf(host, sizeof host, "a.%s", name);
	if (proxyreq_host_match(norm, name) == wild ||
	    (wild && !proxyreq_host_match(norm, host)))
		abort();
}

static void
check_refused(const char *why)
{
	if (why[0] != '"' || strlen(why) >= HOSTRULE_WHY_MAX - 1)
		abort();
	for (const unsigned char *p = (const unsigned char *)why; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char norm[HOSTRULE_PATTERN_MAX + 1], why[HOSTRULE_WHY_MAX];
	enum hostrule_use use;
	char *s;

	if (size == 0)
		return 0;
	use = (data[0] & 1) ? HOSTRULE_SECRET : HOSTRULE_ALLOW;
	if ((s = malloc(size)) == NULL)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	hostrule_is_address(s);
	if (hostrule_check(s, use, norm, why, sizeof why))
		check_taken(norm, use);
	else
		check_refused(why);
	free(s);
	return 0;
}
