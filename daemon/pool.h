/*
 * The warm pool: booted, never-used lanes kept per configured shape
 * (pool_size lanes of the default shape, plus pool_shape lines), handed to
 * a create of the same shape at once.
 *
 * A pool lane is an ordinary lane row with pooled = 1, read as state
 * "pooled": it boots through the create pipeline with nobody waiting,
 * accepts no exec or copy, and its deadline is pool_max_age, after which
 * the reaper recycles it. A create takes it in one registry transaction
 * (pooled = 0, deadline, idle timeout and labels from the request, its
 * life starting then); a lane never goes back. A create may take a pool
 * lane that still boots, when it will be ready sooner than a cold boot:
 * the lane then simply becomes that create's, creating as if cold. A pool
 * lane waits with its exec channel open (the guest setup opened it); one
 * whose channel died, or that was kept from the last run, reopens it
 * before it is handed over (lane_create_warm), or is destroyed. Refills
 * run in the
 * background, at most pool_max_boots at once, with a back-off after
 * failed boots. At start-up, booted pool lanes of mode none whose VM
 * still runs are kept and the rest destroyed (lane_recover, reconcile):
 * those of modes internet and allow carry a lane CA whose key died with
 * the daemon.
 */
#ifndef LANED_POOL_H
#define LANED_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "lane.h"

struct laned;
struct conn;
struct lane_create_plan;

struct pool_shape;

/*
 * Whether two resolved shapes are one: guest side (cpus, memory, disk,
 * image) and network mode and sudo. Never the allow list or secrets, which
 * a pool lane's proxy takes from its taker.
 */
bool pool_shape_eq(const struct pool_shape *, const struct pool_shape *);

/* Sets up the pool (off when nothing is configured) and its hook. */
void pool_init(struct laned *);
/* Starts the first refill (after start-up recovery). */
void pool_start(struct laned *);
void pool_stop(struct laned *);

/*
 * A checked create and the warm pool. POOL_COLD: nothing fits, boot one
 * cold. POOL_READY: *taken, a booted pool lane of the plan's shape, is now
 * the caller's: answer c with it. POOL_BOOTING: a pool lane of the shape
 * still boots and will be ready sooner than a cold boot (by a measured
 * typical boot time), or reopens its exec channel: it is the caller's,
 * and c waits on it as on any creation, answered through deliver.
 * POOL_ANSWERED: c was answered (the alias is taken). The plan's allow
 * list and secrets go to the lane's proxy (the secrets are taken from the
 * plan) before anything is answered.
 */
enum { POOL_COLD, POOL_READY, POOL_BOOTING, POOL_ANSWERED };
int pool_take(struct laned *, struct conn *, lane_deliver_cb deliver,
    void *arg, struct lane_create_plan *, struct lane **taken);

/* Boots pool lanes up to the configured counts, within the boot cap. */
void pool_refill(struct laned *);

/* What `info` shows of the pool (daemon/info.c). */
struct pool_status {
	uint32_t size;		/* lanes of all shapes together; 0: off */
	uint32_t shapes;
	uint32_t ready;		/* booted, waiting for a create */
	uint32_t booting;
	uint64_t backoff_ms;	/* a boot failed: refills wait this long */
	int64_t retry_at_ms;
};
void pool_status(struct laned *, struct pool_status *);

#endif
