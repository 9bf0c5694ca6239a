/*
 * A lane's egress proxy (proxy.c) as the lane holds it: opened on
 * 127.0.0.1 for allow lanes, for internet lanes with secrets and for
 * every warm-pool lane of those modes, with the lane CA (tlsca.c, key in
 * this process only) and the lane's secrets; its records go to the lane's
 * events; closed with the lane, the values and the CA key wiped then.
 *
 * Below lane.c: it keeps its own state (struct laneproxy, which the
 * lane embeds) and gets what it reads of the lane (name, policy, allow
 * list, whether it is pooled) as arguments, so that it needs nothing of
 * lane.h and calls nothing of the lane state machine (lanenet.c recovers
 * a proxy after a restart, pool.c hands a pool lane's proxy to its taker).
 */
#ifndef LANED_LANEPROXY_H
#define LANED_LANEPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct laned;
struct proxy;
struct secret_set;
struct tlsca;

/*
 * The proxy half of a lane, embedded in struct lane. The secrets (in
 * memory only, lanesecret.h) and the lane CA (tlsca.h, made with its
 * proxy) are borrowed by the proxy and wiped when it closes. A pool lane
 * of an allow or internet policy has its CA from its boot, for its taker.
 * d and name are set by laneproxy_open, for the proxy's records and logs
 * (name is the lane's, which outlives its proxy).
 */
struct laneproxy {
	struct proxy *proxy;		/* allow: open while the lane lives */
	uint16_t port;			/* allow: persisted in the row */
	struct secret_set *secrets;
	struct tlsca *ca;
	struct laned *d;
	const char *name;
};

/* Frees the lane proxies' resolver (every lane proxy closed already). */
void laneproxy_free(struct laned *);

/*
 * Whether a pool lane of this policy boots with its proxy and lane CA
 * (allow and internet lanes): a take then only hands the proxy its
 * taker's allow list and secrets. Such a lane cannot outlive the daemon
 * in the pool: its CA key was in the daemon's memory.
 */
bool laneproxy_pool_ca(bool net_policy, uint32_t net_mode);
/*
 * Whether the lane has a proxy: allow lanes, lanes with secrets in
 * internet mode (their HTTP(S) goes through it so that the secrets' hosts
 * are intercepted; every other host is an opaque tunnel), and pool lanes
 * of those modes (laneproxy_pool_ca). A none lane has none: nothing
 * leaves it, secrets or not.
 */
bool laneproxy_wanted(bool net_policy, uint32_t net_mode, bool has_secrets,
    bool pooled);
/*
 * Whether the lane's execs are sent through its proxy: allow lanes, and
 * internet lanes with secrets. An internet lane taken from the pool
 * without secrets keeps a proxy nobody is pointed at.
 */
bool laneproxy_in_use(bool net_policy, uint32_t net_mode, bool has_secrets);
/*
 * Opens lane name's proxy on 127.0.0.1:port, port 0 for any, letting
 * through allow ('\n'-separated) and, for net_mode internet, any public
 * host; px->port is set. A lane with secrets, or a pooled one, gets its
 * CA made here (px->ca) and the secrets handed to the proxy before the
 * guest can connect. -1 with err when it cannot listen or the CA cannot
 * be made.
 */
int laneproxy_open(struct laneproxy *, struct laned *, const char *name,
    const char *allow, uint32_t net_mode, bool pooled, uint16_t port,
    char *err, size_t errlen);
/*
 * A pool lane's hand-over (the caller has set the lane's allow list to
 * allow): px->secrets becomes secrets (the lane owns them from here, even
 * on failure); an open proxy gets both at once, every connection it had
 * closed, and the secrets are bound to the CA the lane booted with. A
 * proxy not open yet (a lane taken while it boots) gets them when it
 * opens. -1 with err when the lane's CA is gone (it then must not be
 * handed over).
 */
int laneproxy_take(struct laneproxy *, const char *allow,
    struct secret_set *, char *err, size_t errlen);
/*
 * Closes the proxy, then wipes the lane's secret values and frees its CA
 * (key included), which only the proxy used: the lane's end for both.
 */
void laneproxy_close(struct laneproxy *);
/* The lane CA's certificate (PEM) for the lane YAML; NULL without one. */
const char *laneproxy_ca_pem(const struct laneproxy *);

#endif
