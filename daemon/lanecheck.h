/*
 * The check of a CreateLane request, before anything is registered: the
 * request against the configured caps (cpus, memory, disk, lifetime, idle
 * timeout, labels, name, image name, network policy, secrets) and the
 * number of live lanes, with the configuration's defaults applied. Pure
 * functions of their arguments, unit-tested (tests/unit/test_createcheck.c);
 * the create pipeline (lanecreate.c) runs what the check planned.
 */
#ifndef LANED_LANECHECK_H
#define LANED_LANECHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "registry.h"
#include "wire.h"

struct config;
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
	 * plan before that calls lanecheck_plan_clear.
	 */
	struct lanesecret_set *secrets;
};

/* Wipes and frees what a plan owns (its secrets); the plan stays valid. */
void lanecheck_plan_clear(struct lane_create_plan *);

/*
 * Checks a request against the caps of cfg, given `live` lanes already
 * live. Returns 0 with plan filled, or the agentlane.v1.ErrorCode to answer
 * with and a message in err. No I/O, no clock: a pure function of its
 * arguments.
 */
int lanecheck_create(const struct config *, const Agentlane__V1__CreateLane *,
    size_t live, struct lane_create_plan *, char *err, size_t errlen);

/*
 * The network policy of a request, defaults from cfg applied (also the
 * warm pool's: a NULL request is the configured default). 0, or the
 * agentlane.v1.ErrorCode with why. Pure, like lanecheck_create.
 */
int lanecheck_net_plan(const struct config *,
    const Agentlane__V1__CreateLane *, struct lane_create_plan *, char *err,
    size_t errlen);

#endif
