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

#define PROXY_MAX_PORTS 16

struct proxy_limits {
	uint32_t max_conns;		/* open client connections */
	uint32_t max_header_bytes;	/* one request head */
	uint64_t max_conn_bytes;	/* both directions of one connection */
	uint64_t max_lane_bytes;	/* everything through this proxy */
	uint64_t idle_ms;		/* no byte either way */
	uint64_t connect_ms;		/* resolve + connect upstream */
	uint32_t max_events_per_min;	/* records; the excess is counted */
};

struct proxy_policy {
	char **allow;			/* normalised patterns, see proxyreq.h */
	size_t nallow;
	uint16_t connect_ports[PROXY_MAX_PORTS];
	size_t nconnect_ports;
	uint16_t http_ports[PROXY_MAX_PORTS];
	size_t nhttp_ports;
};

/* Where records go: event "proxy-allow", "proxy-deny", "proxy-limit"... */
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
void proxy_set_test_resolver(struct proxy *, proxy_resolve_fn *, void *arg);
/* Closes the listener and every connection; pending lookups are cancelled. */
void proxy_free(struct proxy *);

/* Parses "443,8443" into ports; false on a bad list. */
bool proxy_parse_ports(const char *s, uint16_t *ports, size_t *n);

#endif
