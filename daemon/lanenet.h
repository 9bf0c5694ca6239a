/*
 * A lane's network policy at run time; the rules themselves are
 * netpolicy.c. Three jobs, all about the same lane facts:
 *
 *  - what the installed limactl can do, learned once per daemon: its
 *    version (`limactl --version`: a lane without guest root needs Lima
 *    2.2) and whether its guests have a network at all (`limactl info`;
 *    only the test simulator says they do not);
 *  - a lane proxy (laneproxy.c) bound again after a restart, on the port
 *    persisted in the registry;
 *  - the exec environment those lanes get (HTTP_PROXY and friends).
 *
 * The pre-ready check that the rules hold is a step of the create
 * pipeline (lanecreate.c); this module says whether it can run.
 */
#ifndef LANED_LANENET_H
#define LANED_LANENET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct laned;
struct lane;

/* Sets up the module (d->net); nothing runs until lanenet_probe. */
void lanenet_init(struct laned *);
/* Closes the resolver; every lane proxy must be closed already. */
void lanenet_free(struct laned *);

/*
 * Learns the limactl facts if they are not known yet (a failed probe is
 * not cached: the next call tries again). go runs once they are known or
 * the probe failed, at once if they are known; the lane is found again by
 * name then, and go is skipped if it is no longer creating.
 */
void lanenet_when_known(struct lane *, void (*go)(struct lane *));
/*
 * The same for a call (a create that must not register a lane limactl
 * cannot make): fn(d, arg) runs once the probe ended, or at daemon exit
 * with d->shutting_down set; it must free arg.
 */
void lanenet_when_known_call(struct laned *, void (*fn)(struct laned *,
    void *), void *arg);
/* Starts the probe without a waiter (daemon start-up). */
void lanenet_probe(struct laned *);
/* Whether the facts are known (a probe succeeded). */
bool lanenet_known(const struct laned *);

/*
 * Whether a lane with this policy may be made with the installed limactl:
 * 0, or the agentlane.v1.ErrorCode (FAILED_PRECONDITION) with why. Lanes
 * that keep guest root (sudo) need no particular Lima. Facts unknown: 0.
 */
int lanenet_lima_refusal(const struct laned *, bool has_policy, bool sudo,
    char *why, size_t whylen);
/*
 * True when the limactl driver reports guests without a network (the
 * simulator): no rule can be loaded or checked; note says so.
 */
bool lanenet_guest_unenforceable(const struct laned *, char *note,
    size_t notelen);

/* What the daemon learnt of limactl, for `info` (daemon/info.c). */
struct lanenet_facts {
	bool known;		/* the probe succeeded */
	char version[64];	/* "2.2.0"; "" unknown */
	char driver[32];	/* the VM type lanes get; "" unknown */
	char error[256];	/* why the last probe failed */
	bool enforceable;	/* network policies can be loaded and checked */
	char note[512];		/* why not, or how they hold */
};
void lanenet_facts(const struct laned *, struct lanenet_facts *);

/*
 * Start-up: a live ready lane with a proxy port (allow lanes, internet
 * lanes from the pool or with secrets) adopted from the registry gets its
 * proxy back on the port its rules let through. If that port cannot be
 * bound, whatever holds it would be reachable from the guest: the lane is
 * destroyed and false returned (else true: recover it as usual).
 */
bool lanenet_recover(struct lane *);

/*
 * The NAME=VALUE strings a lane gives every exec: its proxy's variables,
 * with secrets the trust variables (NODE_EXTRA_CA_CERTS the lane CA's
 * file; SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO
 * the system bundle), and each secret's NAME=placeholder (secret[i] set).
 */
#define LANENET_ENV_MAX (8 + 5 + 32)	/* proxy, trust, SECRET_MAX */
#define LANENET_ENV_LEN 256
struct lanenet_env {
	size_t n;
	char v[LANENET_ENV_MAX][LANENET_ENV_LEN];
	bool secret[LANENET_ENV_MAX];
};
/* Empty for a name that is not a live lane (callers resolve it first). */
void lanenet_exec_env(struct laned *, const char *lane, struct lanenet_env *);
/* Whether name is one of env's secrets (an exec may not set it). */
bool lanenet_env_secret(const struct lanenet_env *, const char *name);

#endif
