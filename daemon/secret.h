/*
 * A lane's secrets as its egress proxy uses them: each is an environment
 * name, the placeholder the guest sees in its place, the real value (daemon
 * memory only), and the host patterns the value may be sent to.
 *
 * Who does what:
 *   - the secrets code (client option, protocol, exec environment) makes
 *     the set at create, generates each placeholder, and owns the set for
 *     the lane's life;
 *   - the proxy (proxy.h: proxy_set_secrets) borrows the set: it looks
 *     placeholders up in what the guest sends, swaps in the value where a
 *     placeholder is the whole credential of a header to one of that
 *     secret's hosts over verified TLS, and refuses or records it anywhere
 *     else (see proxy_record_fn for the events);
 *   - the lane's CA (tlsca.h) signs the leaf certificates the proxy shows
 *     the guest for a secret's hosts.
 *
 * A value never leaves this struct except into the TLS stream to one of its
 * hosts: not into logs, events, the registry or a command line. It is wiped
 * when the set is freed.
 */
#ifndef LANED_SECRET_H
#define LANED_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SECRET_MAX		32	/* secrets one set can hold, at most */
#define SECRET_NAME_MAX		64	/* an environment variable name */
#define SECRET_PLACEHOLDER_MIN	32	/* prefix + >= 128 random bits */
#define SECRET_PLACEHOLDER_MAX	128
#define SECRET_VALUE_MAX	16384	/* bytes of one value */
#define SECRET_HOSTS_MAX	16	/* host patterns per secret */
#define SECRET_HEADERS_MAX	8	/* credential headers a secret adds */
#define SECRET_HEADER_NAME_MAX	64	/* bytes of one header name */

struct secret {
	char name[SECRET_NAME_MAX + 1];
	char placeholder[SECRET_PLACEHOLDER_MAX + 1];
	size_t placeholder_len;
	uint8_t *value;			/* secmem_alloc; wiped by secret_set_free */
	size_t value_len;
	/* Normalised patterns (hostrule_check): "h.example", "*.x.y". */
	char *hosts[SECRET_HOSTS_MAX];
	size_t nhosts;
	/*
	 * Header names, lower case, where this value may go besides the
	 * default credential headers (secret_header_is_credential).
	 */
	char headers[SECRET_HEADERS_MAX][SECRET_HEADER_NAME_MAX + 1];
	size_t nheaders;
};

struct secret_set {
	struct secret *v;		/* n of cap */
	size_t n, cap;
	size_t placeholder_max;		/* longest placeholder: scan carry */
};

/* An empty set that will hold at most cap (<= SECRET_MAX) secrets. */
struct secret_set *secret_set_new(size_t cap);

/*
 * Adds a secret; copies every argument (value included: wipe your own
 * copy). Refused, with err set and nothing added, when:
 *   - the set is full (its cap);
 *   - name is not an environment name ([A-Za-z_][A-Za-z0-9_]*) or is
 *     already in the set;
 *   - placeholder is shorter than SECRET_PLACEHOLDER_MIN or longer than
 *     SECRET_PLACEHOLDER_MAX, is not made of [A-Za-z0-9_-], or is a
 *     substring of another placeholder of the set (or has one as its own
 *     substring);
 *   - value is empty, over SECRET_VALUE_MAX, or holds a byte a header
 *     value cannot carry (NUL, CR, LF or another control but TAB): it is
 *     put into request headers as it is;
 *   - hosts is empty, longer than SECRET_HOSTS_MAX, or a pattern can
 *     never work for a secret (hostrule_check: not a name or "*." and
 *     two labels or more, an address, a loopback name, a wildcard over a
 *     public suffix).
 * Returns 0 or -1.
 */
int secret_set_add(struct secret_set *, const char *name,
    const char *placeholder, const void *value, size_t value_len,
    const char *const *hosts, size_t nhosts, char *err, size_t errlen);

/*
 * Names extra credential headers for the secret last added (index i):
 * each an HTTP token of at most SECRET_HEADER_NAME_MAX bytes, stored in
 * lower case; hop-by-hop and framing names (Host, Connection,
 * Content-Length, Transfer-Encoding, ...) and Cookie are refused, as are
 * more than SECRET_HEADERS_MAX. Returns 0 or -1 with err set.
 */
int secret_set_headers(struct secret_set *, size_t i,
    const char *const *headers, size_t n, char *err, size_t errlen);

/*
 * Whether the header named name[0..n) (any case) is one a value of s may
 * be put in: Authorization, x-api-key, api-key, x-goog-api-key,
 * private-token, x-auth-token, or one of s->headers.
 */
bool secret_header_is_credential(const struct secret *s, const char *name,
    size_t n);
/* The default credential headers, NULL-terminated (lower case). */
extern const char *const secret_default_headers[];

/* Whether host (normalised, as proxyreq.h gives it) is one of s's hosts. */
bool secret_host_match(const struct secret *s, const char *host);
/* Whether any secret of the set lists host; NULL set: false. */
bool secret_set_any_host(const struct secret_set *, const char *host);

/* Wipes every value and frees the set; NULL is fine. */
void secret_set_free(struct secret_set *);

#endif
