/*
 * Which host patterns can ever work, for a secret's hosts (--secret, the
 * `secret` key) and an allow list (--allow, the `allow` key) alike. A
 * pattern is a host name ("api.example.com") or "*." and a name of two
 * labels or more ("*.example.com": any name below it, not the name
 * itself).
 *
 * The lane's proxy decides on names: it checks the name in an upstream's
 * certificate and refuses any name whose addresses are not public. So a
 * pattern is refused when
 *   - any resolver would read it as an address, in any spelling: dotted,
 *     shorthand (127.1), one number (2130706433), hex or octal parts
 *     (0x7f.1, 0177.0.0.1), IPv6 with or without brackets, and wildcards
 *     over any of these (*.1.2.3);
 *   - it is a loopback name (localhost and below it, localhost6, ...);
 *   - for a secret only, it is a wildcard over a public suffix (the
 *     Public Suffix List through libpsl, its private section included):
 *     "*.github.io" would hand the value to anyone who registers a name
 *     there and gets it a certificate.
 * An allow list may name a wildcard over a public suffix: reaching every
 * site under *.github.io is a choice a user can make, and gives nothing
 * away that the allow list did not already open.
 *
 * Not caught: a wildcard over a name that is not itself a public suffix
 * but has some deeper below it ("*.amazonaws.com" covers the suffix
 * "s3.amazonaws.com"): libpsl cannot list the rules below a name.
 *
 * The bottom of the daemon: needs libc, libpsl and util.h only.
 */
#ifndef LANED_HOSTRULE_H
#define LANED_HOSTRULE_H

#include <stdbool.h>
#include <stddef.h>

#define HOSTRULE_NAME_MAX 253			/* a DNS name, as text */
#define HOSTRULE_PATTERN_MAX (HOSTRULE_NAME_MAX + 2)	/* "*." too */
#define HOSTRULE_WHY_MAX 512	/* room for any of hostrule_check's reasons */

enum hostrule_use {
	HOSTRULE_ALLOW,		/* an allow list's entry */
	HOSTRULE_SECRET,	/* a secret's host */
};

/*
 * Checks pattern; true with its normal form in norm (ASCII lower case,
 * one trailing dot removed). False with why set to one sentence that
 * quotes the pattern as given and says why it can never work: the same
 * words for --secret and --allow (callers prefix "secret NAME: " or
 * "allow: ").
 */
bool hostrule_check(const char *pattern, enum hostrule_use,
    char norm[HOSTRULE_PATTERN_MAX + 1], char *why, size_t whylen);

/*
 * True when a resolver would read name as an address: the WHATWG URL
 * rule (the last label is all decimal digits, or 0x and hex digits or
 * nothing), inet_aton() and inet_pton() for IPv4, and an IPv6 literal,
 * bracketed or not, with or without a zone. Case and a trailing dot do
 * not matter.
 */
bool hostrule_is_address(const char *name);

/* True for a loopback name; name normalised (lower case, no end dot). */
bool hostrule_is_loopback(const char *name);

/*
 * 1 when names directly below the normalised suffix belong to different
 * registrants: suffix is a public suffix, or a wildcard rule of the list
 * ("*.kawasaki.jp") makes each name below it one. 0 when not; -1 when no
 * list could be loaded (the system's, else libpsl's built-in one).
 */
int hostrule_public_suffix(const char *suffix);

#endif
