/*
 * The create pipeline: a CreateLane request is checked against the
 * configured caps (a pure function, unit-tested), the row is committed in
 * "creating" before limactl hears the name, then limactl create, limactl
 * start and the guest workspace setup run as the lane's steps.
 */
#ifndef LANED_LANECREATE_H
#define LANED_LANECREATE_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "wire.h"

struct config;
struct conn;
struct lane;
struct laned;
struct lanesecret_set;

/* What a checked request asks for, defaults applied. */
struct lane_create_plan {
	uint32_t cpus, memory_mib, disk_gib;
	uint64_t lifetime_ms;
	uint64_t idle_timeout_ms;
	struct lane_label labels[LANE_LABELS_MAX];
	size_t nlabels;
	bool detach;		/* survives its client's disconnect */
	bool owned;		/* destroyed when its client's call ends */
	char alias[LANE_ALIAS_SIZE];	/* "" or create --name */
	char image[IMAGE_NAME_SIZE];	/* "" or the image to clone */
	/* The network policy: mode, allow list ('\n'-separated), guest root. */
	uint32_t net_mode;		/* enum netpolicy_mode */
	char allow[LANE_ALLOW_TEXT_MAX + 1];
	bool sudo;
	/*
	 * The lane's secrets with their values (lanesecret.h), or NULL. The
	 * plan owns them until lane_create_start takes them; whoever drops a
	 * plan before that calls lane_create_plan_clear.
	 */
	struct lanesecret_set *secrets;
};

/* Wipes and frees what a plan owns (its secrets); the plan stays valid. */
void lane_create_plan_clear(struct lane_create_plan *);

/*
 * Checks a request against the caps of cfg, given `live` lanes already
 * live. Returns 0 with plan filled, or the agentlane.v1.ErrorCode to answer
 * with and a message in err. No I/O, no clock: a pure function of its
 * arguments.
 */
int lane_create_check(const struct config *, const Agentlane__V1__CreateLane *,
    size_t live, struct lane_create_plan *, char *err, size_t errlen);

/*
 * Registers the lane (a fresh name, committed in "creating") and starts
 * its creation with c as its first waiter. On failure c has been answered.
 * It takes plan->secrets in every case (the lane's, or wiped).
 */
void lane_create_start(struct laned *, struct conn *,
    struct lane_create_plan *);

/*
 * Registers a warm-pool lane of that shape (pooled, recycled after
 * max_age_ms; with an image, a clone of it) and starts booting it with
 * nobody waiting; its name in name. -1 if it could not be registered, or
 * the image cannot be had (logged).
 */
struct pool_shape;
int lane_create_pooled(struct laned *, const struct pool_shape *,
    uint64_t max_age_ms, char *name, size_t namelen);
/*
 * The events that name a lane's secrets, their hosts and their own
 * headers (never a value): a cold create's, or a pool lane's taker's.
 */
void lane_create_secrets_event(struct lane *);

/*
 * Reopens a booted pool lane's exec channel (it died in the pool, or the
 * lane was kept from the daemon's last run) by running the workspace
 * setup over a new one; why goes in the lane's events. Until it answers
 * the lane is not handed over warm (pool.c waits for it); if it fails,
 * the lane is destroyed.
 */
void lane_create_warm(struct lane *, const char *why);

/*
 * The network policy of a request, defaults from cfg applied (also the
 * warm pool's: a NULL request is the configured default). 0, or the
 * agentlane.v1.ErrorCode with why. Pure, like lane_create_check.
 */
int lane_create_net_plan(const struct config *,
    const Agentlane__V1__CreateLane *, struct lane_create_plan *, char *err,
    size_t errlen);

#endif
