#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "audit.h"
#include "laned.h"
#include "lane.h"
#include "laneproxy.h"
#include "log.h"
#include "netpolicy.h"
#include "proxy.h"
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
	struct lane *l = arg;

	audit_proxy(l->d, l->name, event, detail);
}

bool
laneproxy_pool_ca(const struct lane *l)
{
	return l->net_policy && (l->net_mode == NETPOLICY_ALLOW ||
	    l->net_mode == NETPOLICY_INTERNET);
}

bool
laneproxy_wanted(const struct lane *l)
{
	if (!l->net_policy)
		return false;
	if (l->state == LANE_POOLED && laneproxy_pool_ca(l))
		return true;
	return laneproxy_in_use(l);
}

bool
laneproxy_in_use(const struct lane *l)
{
	return l->net_policy && (l->net_mode == NETPOLICY_ALLOW ||
	    (l->net_mode == NETPOLICY_INTERNET && l->has_secrets));
}

const char *
laneproxy_ca_pem(const struct lane *l)
{
	return l->ca != NULL ? tlsca_cert_pem(l->ca, NULL) : NULL;
}

/*
 * The secrets go to the proxy with the lane CA, made here: the key
 * stays in this process, the certificate goes to the lane YAML. A pool
 * lane gets its CA at boot, for the secrets of whoever takes it.
 */
static int
proxy_secrets(struct lane *l, char *err, size_t errlen)
{
	if (l->secrets == NULL && l->state != LANE_POOLED)
		return 0;
	/*
	 * Its leaf cache is bounded by proxy_max_certs: one leaf a host of
	 * a secret the guest connects to ("*.suffix" can name many); past
	 * it the proxy refuses with a record (TLSCA_FULL).
	 */
	if (l->ca == NULL && (l->ca = tlsca_new(l->name,
	    l->d->cfg.max_lifetime_ms + LANE_CA_MARGIN_MS,
	    l->d->cfg.proxy_max_certs, err, errlen)) == NULL)
		return -1;
	if (l->secrets != NULL)
		proxy_set_secrets(l->proxy, l->secrets, l->ca);
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
laneproxy_open(struct lane *l, uint16_t port, char *err, size_t errlen)
{
	struct laned *d = l->d;
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

	memset(&pol, 0, sizeof pol);
	str_copy(list, l->allow, sizeof list);
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
	pol.internet = l->net_mode == NETPOLICY_INTERNET;
	l->proxy = proxy_new(d->base, proxy_resolver(d), &pol, &lim, port,
	    proxy_record, l, err, errlen);
	if (l->proxy == NULL)
		return -1;
	/* Before the guest can connect: open connections keep their set. */
	if (proxy_secrets(l, err, errlen) == -1) {
		proxy_free(l->proxy);
		l->proxy = NULL;
		return -1;
	}
	l->proxy_port = proxy_port(l->proxy);
	if (d->proxy_hook != NULL)
		d->proxy_hook(l->proxy);
	log_info("lane %s: proxy on 127.0.0.1:%u (%s%zu allowed patterns, "
	    "%zu secrets%s)", l->name, (unsigned)l->proxy_port, pol.internet ?
	    "any public host, " : "", pol.nallow, l->secrets != NULL ?
	    l->secrets->n : 0, l->state == LANE_POOLED ? ", warm lane CA" : "");
	return 0;
}

int
laneproxy_take(struct lane *l, const char *allow, struct secret_set *set,
    char *err, size_t errlen)
{
	char *pats[NETPOLICY_ALLOW_MAX], list[LANE_ALLOW_TEXT_MAX + 1];

	str_copy(l->allow, allow, sizeof l->allow);
	l->secrets = set;
	l->has_secrets = set != NULL;
	if (l->proxy == NULL)
		return 0;	/* laneproxy_open hands both over */
	if (set != NULL && l->ca == NULL) {
		snprintf(err, errlen, "its lane CA is gone");
		return -1;
	}
	str_copy(list, l->allow, sizeof list);
	proxy_set_allow(l->proxy, pats, allow_split(list, pats));
	if (set != NULL)
		proxy_set_secrets(l->proxy, set, l->ca);
	log_info("lane %s: its proxy took its taker's allow list and %zu "
	    "secrets", l->name, set != NULL ? set->n : 0);
	return 0;
}

void
laneproxy_close(struct lane *l)
{
	if (l->proxy != NULL) {
		proxy_free(l->proxy);
		l->proxy = NULL;
		log_info("lane %s: proxy on 127.0.0.1:%u closed", l->name,
		    (unsigned)l->proxy_port);
	}
	/* The proxy only borrowed them: the values and the CA key go now. */
	secret_set_free(l->secrets);
	l->secrets = NULL;
	if (l->ca != NULL) {
		tlsca_free(l->ca);
		l->ca = NULL;
	}
}
