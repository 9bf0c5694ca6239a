#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "audit.h"
#include "laned.h"
#include "laneproxy.h"
#include "log.h"
#include "netpolicy.h"
#include "proxy.h"
#include "registry.h"
#include "secret.h"
#include "tlsca.h"
#include "util.h"

/* A lane CA outlives the longest lane by this much (clocks drift). */
#define LANE_CA_MARGIN_MS (24ull * 3600 * 1000)

void
laneproxy_free(struct laned *d)
{
	if (d->proxy_dns != NULL)
		evdns_base_free(d->proxy_dns, 1);
	d->proxy_dns = NULL;
}

static void
proxy_record(void *arg, const char *event, const char *detail)
{
	struct laneproxy *px = arg;

	audit_proxy(px->d, px->name, event, detail);
}

bool
laneproxy_pool_ca(bool net_policy, uint32_t net_mode)
{
	return net_policy && (net_mode == NETPOLICY_ALLOW ||
	    net_mode == NETPOLICY_INTERNET);
}

bool
laneproxy_wanted(bool net_policy, uint32_t net_mode, bool has_secrets,
    bool pooled)
{
	if (!net_policy)
		return false;
	if (pooled && laneproxy_pool_ca(net_policy, net_mode))
		return true;
	return laneproxy_in_use(net_policy, net_mode, has_secrets);
}

bool
laneproxy_in_use(bool net_policy, uint32_t net_mode, bool has_secrets)
{
	return net_policy && (net_mode == NETPOLICY_ALLOW ||
	    (net_mode == NETPOLICY_INTERNET && has_secrets));
}

const char *
laneproxy_ca_pem(const struct laneproxy *px)
{
	return px->ca != NULL ? tlsca_cert_pem(px->ca, NULL) : NULL;
}

/*
 * The secrets go to the proxy with the lane CA, made here: the key
 * stays in this process, the certificate goes to the lane YAML. A pool
 * lane gets its CA at boot, for the secrets of whoever takes it.
 */
static int
proxy_secrets(struct laneproxy *px, bool pooled, char *err, size_t errlen)
{
	if (px->secrets == NULL && !pooled)
		return 0;
	/*
	 * Its leaf cache is bounded by proxy_max_certs: one leaf a host of
	 * a secret the guest connects to ("*.suffix" can name many); past
	 * it the proxy refuses with a record (TLSCA_FULL).
	 */
	if (px->ca == NULL && (px->ca = tlsca_new(px->name,
	    px->d->cfg.max_lifetime_ms + LANE_CA_MARGIN_MS,
	    px->d->cfg.proxy_max_certs, err, errlen)) == NULL)
		return -1;
	if (px->secrets != NULL)
		proxy_set_secrets(px->proxy, px->secrets, px->ca);
	return 0;
}

/* Splits a lane's '\n'-separated allow list into pats (in list). */
static size_t
allow_split(char *list, char **pats)
{
	char *save, *tok;
	size_t n = 0;

	for (tok = strtok_r(list, "\n", &save); tok != NULL &&
	    n < NETPOLICY_ALLOW_MAX; tok = strtok_r(NULL, "\n", &save))
		pats[n++] = tok;
	return n;
}

/* The lane proxies' resolver, made with the first proxy. */
static struct evdns_base *
proxy_resolver(struct laned *d)
{
	if (!d->proxy_dns_tried) {
		d->proxy_dns_tried = true;
		d->proxy_dns = evdns_base_new(d->base,
		    EVDNS_BASE_INITIALIZE_NAMESERVERS |
		    EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (d->proxy_dns == NULL)
			log_warnx("lane proxies: no resolver (/etc/resolv.conf): "
			    "every name will be refused");
	}
	return d->proxy_dns;
}

int
laneproxy_open(struct laneproxy *px, struct laned *d, const char *name,
    const char *allow, uint32_t net_mode, bool pooled, uint16_t port,
    char *err, size_t errlen)
{
	struct proxy_policy pol;
	struct proxy_limits lim = {
		.max_conns = d->cfg.proxy_max_connections,
		.max_header_bytes = 16384,
		.max_conn_bytes = d->cfg.proxy_max_conn_bytes,
		.max_lane_bytes = d->cfg.proxy_max_lane_bytes,
		.idle_ms = d->cfg.proxy_idle_timeout_ms,
		.head_ms = d->cfg.proxy_head_timeout_ms,
		.max_heads = d->cfg.proxy_max_heads,
		.connect_ms = d->cfg.command_timeout_ms < 30000 ?
		    d->cfg.command_timeout_ms : 30000,
		.max_events_per_min = d->cfg.proxy_events_per_min,
	};
	char *pats[NETPOLICY_ALLOW_MAX], list[LANE_ALLOW_TEXT_MAX + 1];

	/* For the records (proxy_record) and the CA's name. */
	px->d = d;
	px->name = name;
	memset(&pol, 0, sizeof pol);
	str_copy(list, allow, sizeof list);
	pol.nallow = allow_split(list, pats);
	pol.allow = pats;
	/* HTTPS through CONNECT, plain HTTP as absolute URIs (checked keys). */
	if (!proxy_parse_ports(d->cfg.proxy_connect_ports, pol.connect_ports,
	    &pol.nconnect_ports) || !proxy_parse_ports(d->cfg.proxy_http_ports,
	    pol.http_ports, &pol.nhttp_ports)) {
		snprintf(err, errlen, "bad proxy port keys");
		return -1;
	}
	/* Internet lanes have one for their secrets; others pass through. */
	pol.internet = net_mode == NETPOLICY_INTERNET;
	px->proxy = proxy_new(d->base, proxy_resolver(d), &pol, &lim, port,
	    proxy_record, px, err, errlen);
	if (px->proxy == NULL)
		return -1;
	/* Before the guest can connect: open connections keep their set. */
	if (proxy_secrets(px, pooled, err, errlen) == -1) {
		proxy_free(px->proxy);
		px->proxy = NULL;
		return -1;
	}
	px->port = proxy_port(px->proxy);
	if (d->proxy_hook != NULL)
		d->proxy_hook(px->proxy);
	log_info("lane %s: proxy on 127.0.0.1:%u (%s%zu allowed patterns, "
	    "%zu secrets%s)", name, (unsigned)px->port, pol.internet ?
	    "any public host, " : "", pol.nallow, px->secrets != NULL ?
	    px->secrets->n : 0, pooled ? ", warm lane CA" : "");
	return 0;
}

int
laneproxy_take(struct laneproxy *px, const char *allow,
    struct secret_set *set, char *err, size_t errlen)
{
	char *pats[NETPOLICY_ALLOW_MAX], list[LANE_ALLOW_TEXT_MAX + 1];

	px->secrets = set;
	if (px->proxy == NULL)
		return 0;	/* laneproxy_open hands both over */
	if (set != NULL && px->ca == NULL) {
		snprintf(err, errlen, "its lane CA is gone");
		return -1;
	}
	str_copy(list, allow, sizeof list);
	proxy_set_allow(px->proxy, pats, allow_split(list, pats));
	if (set != NULL)
		proxy_set_secrets(px->proxy, set, px->ca);
	log_info("lane %s: its proxy took its taker's allow list and %zu "
	    "secrets", px->name, set != NULL ? set->n : 0);
	return 0;
}

void
laneproxy_close(struct laneproxy *px)
{
	if (px->proxy != NULL) {
		proxy_free(px->proxy);
		px->proxy = NULL;
		log_info("lane %s: proxy on 127.0.0.1:%u closed", px->name,
		    (unsigned)px->port);
	}
	/* The proxy only borrowed them: the values and the CA key go now. */
	secret_set_free(px->secrets);
	px->secrets = NULL;
	if (px->ca != NULL) {
		tlsca_free(px->ca);
		px->ca = NULL;
	}
}
