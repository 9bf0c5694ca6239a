/*
 * The per-lane egress proxy of `--network allow` lanes: an HTTP proxy on
 * host 127.0.0.1, one listening port per lane (the guest reaches it as
 * 192.168.5.2:PORT, the only host port its rules let through). It serves
 * CONNECT host:port and absolute-URI http:// requests for allow-listed
 * names only, resolves those names itself off the event loop, refuses any
 * name with a non-public answer (DNS rebinding), connects to the address
 * it vetted, and records every allowed and denied connection.
 */
#ifndef LANED_PROXY_H
#define LANED_PROXY_H

#include <sys/socket.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evdns_base;
struct proxy;
struct secret_set;
struct tlsca;

#define PROXY_MAX_PORTS 16

struct proxy_limits {
	uint32_t max_conns;		/* open client connections */
	uint32_t max_heads;		/* of those, still sending their head */
	uint32_t max_header_bytes;	/* one request head */
	uint64_t max_conn_bytes;	/* both directions of one connection */
	uint64_t max_lane_bytes;	/* everything through this proxy */
	uint64_t idle_ms;		/* no byte either way */
	uint64_t head_ms;		/* accept to a whole head, fixed */
	uint64_t connect_ms;		/* resolve + connect upstream */
	uint32_t max_events_per_min;	/* records; the excess is counted */
};

struct proxy_policy {
	/*
	 * internet: any public name passes (the proxy of an internet lane
	 * with secrets, where hosts without a secret are opaque CONNECT
	 * tunnels); else only names in allow. A secret's hosts pass either
	 * way. Every name is still vetted (no non-public answer).
	 */
	bool internet;
	char **allow;			/* normalised patterns, see proxyreq.h */
	size_t nallow;
	uint16_t connect_ports[PROXY_MAX_PORTS];
	size_t nconnect_ports;
	uint16_t http_ports[PROXY_MAX_PORTS];
	size_t nhttp_ports;
};

/*
 * Where records go (the lane's events). event is one of:
 *   proxy-allow, proxy-deny, proxy-limit, proxy-fail, proxy-suppressed
 *                  connections allowed, refused, cut at a bound, failed
 *                  upstream, and how many records the rate cap dropped;
 *   secret-use     "secret NAME used for HOST": a placeholder was replaced
 *                  in a credential header (once per intercepted connection
 *                  and secret);
 *   secret-refused the request got 403, and the upstream no complete
 *                  request, for a placeholder (also percent-encoded in the
 *                  request line, or inside base64 in any header):
 *                  "secret NAME sent to HOST: refused" in a request line
 *                  or header to a host not of that secret;
 *                  "secret NAME in header HEADER to HOST: refused (not a
 *                  credential header)" in a header of a request to one of
 *                  its hosts that is not one of its credential headers
 *                  (secret_header_is_credential);
 *                  "secret NAME in a chunk trailer to HOST: refused" in
 *                  the trailer section of a chunked body, to any host;
 *   secret-body    "secret NAME seen in a request body to HOST: recorded"
 *                  (the request went on, unchanged; once per request).
 * A request whose Connection header names a field the proxy frames or
 * routes by, or a credential header, is a proxy-deny with 400, as is a
 * credential header sent twice inside an intercepted tunnel.
 * detail never holds a value. All go through the one per-minute cap.
 */
typedef void proxy_record_fn(void *arg, const char *event, const char *detail);

/*
 * A resolver that replaces DNS, for tests only: fills up to *n addresses
 * for host and returns 0, or -1 for "no such name". It has no config key
 * and no environment variable: only a program that links the proxy and
 * calls proxy_set_test_resolver (the test harness, the test daemon built
 * with -DLANED_TEST_HOOKS) can install one. Its answers are vetted like
 * DNS answers, so a test name pointing at 127.0.0.1 is refused; an answer
 * with *trusted set skips vetting, which is how a test reaches its own
 * loopback server.
 */
typedef int proxy_resolve_fn(void *arg, const char *host,
    struct sockaddr_storage *addrs, size_t *n, bool *trusted);

/*
 * Listens on 127.0.0.1, port 0 for any. dns may be NULL only when a test
 * resolver will be installed. Copies policy. Returns NULL with err set.
 */
struct proxy *proxy_new(struct event_base *, struct evdns_base *dns,
    const struct proxy_policy *, const struct proxy_limits *,
    uint16_t port, proxy_record_fn *, void *arg, char *err, size_t errlen);
uint16_t proxy_port(const struct proxy *);
size_t proxy_nconns(const struct proxy *);
/* Request heads sent upstream so far (plain and intercepted). */
uint64_t proxy_requests(const struct proxy *);
void proxy_set_test_resolver(struct proxy *, proxy_resolve_fn *, void *arg);

/*
 * Gives the proxy the lane's secrets and CA (secret.h, tlsca.h). CONNECT
 * to a host of a secret is then intercepted: the upstream is verified
 * against the host's trust store, the guest gets a leaf from ca, and
 * placeholders in request headers are swapped for values. Plain-HTTP
 * requests and intercepted ones are checked for placeholders sent to
 * other hosts. Both are borrowed: the caller keeps them and frees them
 * only after proxy_free (or after detaching with NULL, NULL). Connections
 * open at the call are closed (none may keep a set about to be freed), so
 * attach before the guest can connect. ca must not be NULL when set has
 * secrets.
 */
void proxy_set_secrets(struct proxy *, const struct secret_set *set,
    struct tlsca *ca);

/*
 * Replaces the allow list (patterns as in proxy_policy, copied). Every
 * open connection is closed first: none carries on under the list it was
 * let through by. A warm-pool lane's proxy gets its taker's list so.
 */
void proxy_set_allow(struct proxy *, char *const *allow, size_t nallow);

/*
 * For tests only, like proxy_set_test_resolver: upstream certificates are
 * verified against the CA certificates in the PEM file cafile instead of
 * the system trust store (hostname check and all else unchanged). Returns
 * 0, or -1 if the file cannot be loaded. No config key or environment
 * variable reaches it outside the test daemon (tests/proxy/testhooks.c).
 */
int proxy_set_test_trust(struct proxy *, const char *cafile);
/* Closes the listener and every connection; pending lookups are cancelled. */
void proxy_free(struct proxy *);

/* Parses "443,8443" into ports; false on a bad list. */
bool proxy_parse_ports(const char *s, uint16_t *ports, size_t *n);

#endif
