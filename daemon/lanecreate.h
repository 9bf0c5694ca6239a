/*
 * The create pipeline: once a CreateLane request is checked (lanecheck.c),
 * the row is committed in "creating" before limactl hears the name, then
 * limactl create, limactl start and the guest workspace setup run as the
 * lane's steps.
 */
#ifndef LANED_LANECREATE_H
#define LANED_LANECREATE_H

#include <stddef.h>
#include <stdint.h>

#include "lane.h"

struct conn;
struct lane;
struct lane_create_plan;
struct laned;

/*
 * Registers the lane (a fresh name, committed in "creating") and starts
 * its creation with c as its first waiter, answered through deliver once
 * the lane is ready. On failure c has been answered. It takes
 * plan->secrets in every case (the lane's, or wiped).
 */
void lane_create_start(struct laned *, struct conn *, lane_deliver_cb deliver,
    void *arg, struct lane_create_plan *);

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

#endif
