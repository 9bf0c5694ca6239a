/*
 * A lane's egress proxy (proxy.c) as the lane holds it: opened on
 * 127.0.0.1 for allow lanes, for internet lanes with secrets and for
 * every warm-pool lane of those modes, with the lane CA (tlsca.c, key in
 * this process only) and the lane's secrets; its records go to the lane's
 * events; closed with the lane, the values and the CA key wiped then.
 *
 * Below lane.c: it reads and sets the lane's proxy fields and calls
 * nothing of the lane state machine (lanenet.c recovers a proxy after a
 * restart, pool.c hands a pool lane's proxy to its taker).
 */
#ifndef LANED_LANEPROXY_H
#define LANED_LANEPROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct laned;
struct lane;
struct secret_set;

/* Frees the lane proxies' resolver (every lane proxy closed already). */
void laneproxy_free(struct laned *);

/*
 * Whether a pool lane of this policy boots with its proxy and lane CA
 * (allow and internet lanes): a take then only hands the proxy its
 * taker's allow list and secrets. Such a lane cannot outlive the daemon
 * in the pool: its CA key was in the daemon's memory.
 */
bool laneproxy_pool_ca(const struct lane *);
/*
 * Whether the lane has a proxy: allow lanes, lanes with secrets in
 * internet mode (their HTTP(S) goes through it so that the secrets' hosts
 * are intercepted; every other host is an opaque tunnel), and pool lanes
 * of those modes (laneproxy_pool_ca). A none lane has none: nothing
 * leaves it, secrets or not.
 */
bool laneproxy_wanted(const struct lane *);
/*
 * Whether the lane's execs are sent through its proxy: allow lanes, and
 * internet lanes with secrets. An internet lane taken from the pool
 * without secrets keeps a proxy nobody is pointed at.
 */
bool laneproxy_in_use(const struct lane *);
/*
 * Opens the lane's proxy on 127.0.0.1:port, port 0 for any; l->proxy_port
 * is set. A lane with secrets, or a pool lane, gets its CA made here
 * (l->ca) and the secrets handed to the proxy before the guest can
 * connect. -1 with err when it cannot listen or the CA cannot be made.
 */
int laneproxy_open(struct lane *, uint16_t port, char *err, size_t errlen);
/*
 * A pool lane's hand-over: l->allow becomes allow and l->secrets secrets
 * (the lane owns them from here, even on failure); an open proxy gets
 * both at once, every connection it had closed, and the secrets are bound
 * to the CA the lane booted with. A proxy not open yet (a lane taken
 * while it boots) gets them when it opens. -1 with err when the lane's
 * CA is gone (it then must not be handed over).
 */
int laneproxy_take(struct lane *, const char *allow, struct secret_set *,
    char *err, size_t errlen);
/*
 * Closes the proxy, then wipes the lane's secret values and frees its CA
 * (key included), which only the proxy used: the lane's end for both.
 */
void laneproxy_close(struct lane *);
/* The lane CA's certificate (PEM) for the lane YAML; NULL without one. */
const char *laneproxy_ca_pem(const struct lane *);

#endif
