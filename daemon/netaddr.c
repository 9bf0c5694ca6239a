/*
 * Address classification for the lane proxy (see netaddr.h). The lists
 * follow the IANA special-purpose registries: anything not plainly public
 * unicast is refused, including the documentation and benchmarking ranges,
 * so that a surprise is a refusal rather than a connection.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include "netaddr.h"
#include "util.h"

struct v4range {
	uint32_t net;
	unsigned bits;
	const char *why;
};

static const struct v4range v4_refused[] = {
	{ 0x00000000u, 8, "unspecified" },	/* 0/8 "this network" */
	{ 0x0a000000u, 8, "private" },		/* 10/8 */
	{ 0x64400000u, 10, "cgnat" },		/* 100.64/10 */
	{ 0x7f000000u, 8, "loopback" },		/* 127/8 */
	{ 0xa9fe0000u, 16, "link-local" },	/* 169.254/16 */
	{ 0xac100000u, 12, "private" },		/* 172.16/12 */
	{ 0xc0000000u, 24, "special" },		/* 192.0.0/24 IETF */
	{ 0xc0000200u, 24, "documentation" },	/* 192.0.2/24 */
	{ 0xc0586300u, 24, "special" },		/* 192.88.99/24 6to4 relay */
	{ 0xc0a80000u, 16, "private" },		/* 192.168/16 (Lima's 192.168.5) */
	{ 0xc6120000u, 15, "benchmarking" },	/* 198.18/15 */
	{ 0xc6336400u, 24, "documentation" },	/* 198.51.100/24 */
	{ 0xcb007100u, 24, "documentation" },	/* 203.0.113/24 */
	{ 0xe0000000u, 4, "multicast" },	/* 224/4 */
	{ 0xf0000000u, 4, "reserved" },		/* 240/4, broadcast included */
};

static bool
v4_public(uint32_t a, const char **why)
{
	for (size_t i = 0; i < sizeof(v4_refused) / sizeof(v4_refused[0]); i++) {
		uint32_t mask = 0xffffffffu << (32 - v4_refused[i].bits);
		if ((a & mask) == v4_refused[i].net) {
			*why = v4_refused[i].why;
			return false;
		}
	}
	return true;
}

static uint32_t
be32_at(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
	    ((uint32_t)p[2] << 8) | p[3];
}

static bool
v6_public(const uint8_t a[16], const char **why)
{
	static const uint8_t zero[16];
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };

	if (memcmp(a, zero, 15) == 0 && (a[15] == 0 || a[15] == 1)) {
		*why = a[15] ? "loopback" : "unspecified";
		return false;
	}
	/* Embedded IPv4: judged as that address (::ffff:127.0.0.1 is loopback). */
	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0) {
		if (!v4_public(be32_at(a + 12), why))
			return false;
		return true;
	}
	if (a[0] == 0x20 && a[1] == 0x02) {	/* 2002::/16 6to4 */
		if (!v4_public(be32_at(a + 2), why))
			return false;
		return true;
	}
	if (memcmp(a, zero, 12) == 0) {	/* ::/96 IPv4-compatible, deprecated */
		*why = "ipv4-compatible";
		return false;
	}
	if ((a[0] & 0xfe) == 0xfc) {
		*why = "unique-local";	/* fc00::/7 */
		return false;
	}
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) {
		*why = "link-local";	/* fe80::/10 */
		return false;
	}
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0xc0) {
		*why = "site-local";	/* fec0::/10 */
		return false;
	}
	if (a[0] == 0xff) {
		*why = "multicast";
		return false;
	}
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8) {
		*why = "documentation";	/* 2001:db8::/32 */
		return false;
	}
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
		*why = "teredo";	/* 2001::/32 carries an IPv4 of its own */
		return false;
	}
	if (a[0] == 0x01 && a[1] == 0 && memcmp(a + 2, zero, 6) == 0) {
		*why = "discard";	/* 100::/64 */
		return false;
	}
	/* Only global unicast (2000::/3) is left as public. */
	if ((a[0] & 0xe0) != 0x20) {
		*why = "reserved";
		return false;
	}
	return true;
}

bool
netaddr_is_public(const struct sockaddr *sa, const char **reason)
{
	const char *why = "unknown family";
	bool ok = false;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
		ok = v4_public(ntohl(s4->sin_addr.s_addr), &why);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		ok = v6_public(s6->sin6_addr.s6_addr, &why);
	}
	if (reason)
		*reason = ok ? NULL : why;
	return ok;
}

void
netaddr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *src = NULL;

	if (sa->sa_family == AF_INET)
		src = &((const struct sockaddr_in *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		src = &((const struct sockaddr_in6 *)sa)->sin6_addr;
	if (src == NULL || inet_ntop(sa->sa_family, src, buf, (socklen_t)len) == NULL)
		str_copy(buf, "?", len);
}
