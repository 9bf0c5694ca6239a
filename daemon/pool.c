#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config.h"
#include "conn.h"
#include "laned.h"
#include "lane.h"
#include "lanecreate.h"
#include "log.h"
#include "netpolicy.h"
#include "pool.h"
#include "registry.h"
#include "util.h"

/* Back-off after a failed pool boot: doubles from 5 s up to 5 min. */
#define POOL_BACKOFF_MIN_MS 5000
#define POOL_BACKOFF_MAX_MS 300000

/* A lane this daemon started booting for the pool, until it is booted. */
struct pool_boot {
	char name[LANE_NAME_SIZE];
};

struct pool {
	struct pool_shape shapes[POOL_SHAPES_MAX + 1];	/* resolved */
	size_t nshapes;
	struct pool_boot boots[POOL_LANES_MAX];
	size_t nboots;
	uint64_t backoff_ms;		/* 0: no failure since the last boot */
	int64_t retry_at_ms;
	struct event *retry_timer;
	bool started;
	bool refilling;			/* no re-entry from lane_changed */
};

/*
 * Pool lanes boot with the configured network policy (lane_create_pooled):
 * mode, allow list, no sudo. A lane of another policy (booted before the
 * configuration changed) is not the pool's, and a create asking for
 * another policy never gets a pool lane.
 */
static bool
policy_eq(const struct lane *l, uint32_t mode, const char *allow, bool sudo)
{
	return l->net_policy && l->net_mode == mode && l->sudo == sudo &&
	    strcmp(l->allow, allow) == 0;
}

static bool
pool_policy(const struct laned *d, const struct lane *l)
{
	return policy_eq(l, d->cfg.network, d->cfg.network == NETPOLICY_ALLOW ?
	    d->cfg.allow : "", false);
}

static bool
shape_eq(const struct pool_shape *a, uint32_t cpus, uint32_t memory_mib,
    uint32_t disk_gib)
{
	return a->cpus == cpus && a->memory_mib == memory_mib &&
	    a->disk_gib == disk_gib;
}

/* The configured shapes with defaults filled in; equal shapes merged. */
static void
pool_resolve(struct pool *p, const struct config *cfg)
{
	struct pool_shape all[POOL_SHAPES_MAX + 1];
	size_t n = 0;

	if (cfg->pool_size > 0) {
		memset(&all[n], 0, sizeof all[n]);
		all[n++].count = cfg->pool_size;
	}
	for (uint32_t i = 0; i < cfg->npool_shapes; i++)
		all[n++] = cfg->pool_shape[i];
	p->nshapes = 0;
	for (size_t i = 0; i < n; i++) {
		struct pool_shape s = all[i];
		size_t j;

		if (s.cpus == 0)
			s.cpus = cfg->default_cpus;
		if (s.memory_mib == 0)
			s.memory_mib = cfg->default_memory_mib;
		if (s.disk_gib == 0)
			s.disk_gib = cfg->default_disk_gib;
		for (j = 0; j < p->nshapes; j++)
			if (shape_eq(&p->shapes[j], s.cpus, s.memory_mib,
			    s.disk_gib))
				break;
		if (j < p->nshapes)
			p->shapes[j].count += s.count;
		else
			p->shapes[p->nshapes++] = s;
	}
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	pool_refill(arg);
}

static void
pool_kick(struct laned *d)
{
	pool_refill(d);
}

void
pool_init(struct laned *d)
{
	struct pool *p;

	d->pool = NULL;
	if (d->cfg.pool_size == 0 && d->cfg.npool_shapes == 0)
		return;
	p = xcalloc(1, sizeof *p);
	pool_resolve(p, &d->cfg);
	if ((p->retry_timer = evtimer_new(d->base, retry_cb, d)) == NULL)
		fatalx("evtimer_new");
	d->pool = p;
	d->pool_changed = pool_kick;
	for (size_t i = 0; i < p->nshapes; i++)
		log_info("warm pool: %u lanes of cpus %u, memory %u MiB, disk "
		    "%u GiB (max age %llu s, %u boots at once)",
		    p->shapes[i].count, p->shapes[i].cpus,
		    p->shapes[i].memory_mib, p->shapes[i].disk_gib,
		    (unsigned long long)(d->cfg.pool_max_age_ms / 1000),
		    d->cfg.pool_max_boots);
}

/*
 * Pool lanes kept from the last run that the configuration no longer
 * wants (pool off, shape gone, count lowered) are destroyed, oldest kept.
 */
static void
pool_trim(struct laned *d)
{
	struct pool *p = d->pool;
	struct lane *l, *next;
	size_t have[POOL_SHAPES_MAX + 1] = { 0 };

	for (l = TAILQ_FIRST(&d->lanes); l != NULL; l = next) {
		size_t i = 0;

		next = TAILQ_NEXT(l, entry);
		if (l->state != LANE_POOLED)
			continue;
		if (p != NULL && pool_policy(d, l))
			for (i = 0; i < p->nshapes; i++)
				if (shape_eq(&p->shapes[i], l->cpus,
				    l->memory_mib, l->disk_gib))
					break;
		if (p != NULL && pool_policy(d, l) && i < p->nshapes &&
		    have[i] < p->shapes[i].count) {
			int64_t age_end = l->created_at_ms +
			    (int64_t)d->cfg.pool_max_age_ms;

			have[i]++;
			/* A shorter pool_max_age applies to kept lanes too. */
			if (age_end < l->deadline_ms)
				l->deadline_ms = age_end;
			continue;
		}
		lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
		    "not in the configured warm pool");
	}
	lane_changed(d);	/* the reaper sees the deadlines */
}

void
pool_start(struct laned *d)
{
	pool_trim(d);
	if (d->pool == NULL)
		return;
	d->pool->started = true;
	pool_refill(d);
}

void
pool_stop(struct laned *d)
{
	if (d->pool == NULL)
		return;
	event_free(d->pool->retry_timer);
	free(d->pool);
	d->pool = NULL;
	d->pool_changed = NULL;
}

/*
 * Follows the boots this daemon started: a booted one resets the
 * back-off; one that ended before booting (failed, or destroyed) doubles
 * it, so that a broken limactl is not hammered by refills.
 */
static void
pool_follow_boots(struct laned *d, struct pool *p)
{
	for (size_t i = 0; i < p->nboots;) {
		struct lane *l = lane_find(d, p->boots[i].name);

		if (l != NULL && l->state == LANE_POOLED &&
		    l->step != LANE_STEP_NONE) {
			i++;
			continue;	/* still booting */
		}
		if (l != NULL && l->state == LANE_POOLED)
			p->backoff_ms = 0;
		else {
			p->backoff_ms = p->backoff_ms == 0 ?
			    POOL_BACKOFF_MIN_MS : p->backoff_ms * 2;
			if (p->backoff_ms > POOL_BACKOFF_MAX_MS)
				p->backoff_ms = POOL_BACKOFF_MAX_MS;
			p->retry_at_ms = time_now_ms() + (int64_t)p->backoff_ms;
			log_warnx("warm pool: lane %s did not boot; next pool "
			    "boot in %llu s", p->boots[i].name,
			    (unsigned long long)(p->backoff_ms / 1000));
		}
		p->boots[i] = p->boots[--p->nboots];
	}
}

void
pool_refill(struct laned *d)
{
	struct pool *p = d->pool;
	struct lane *l;
	size_t booting = 0, have[POOL_SHAPES_MAX + 1] = { 0 };
	int64_t now;

	if (p == NULL || !p->started || p->refilling || d->shutting_down)
		return;
	p->refilling = true;
	pool_follow_boots(d, p);
	/* Every pool lane counts: those recovered at start-up too. */
	TAILQ_FOREACH(l, &d->lanes, entry) {
		if (l->state != LANE_POOLED)
			continue;
		if (l->step != LANE_STEP_NONE)
			booting++;
		for (size_t i = 0; pool_policy(d, l) && i < p->nshapes; i++)
			if (shape_eq(&p->shapes[i], l->cpus, l->memory_mib,
			    l->disk_gib)) {
				have[i]++;
				break;
			}
	}
	now = time_now_ms();
	if (now < p->retry_at_ms) {
		struct timeval tv = tv_from_ms((uint64_t)(p->retry_at_ms - now));

		if (evtimer_add(p->retry_timer, &tv) != 0)
			fatalx("evtimer_add");
		p->refilling = false;
		return;
	}
	for (size_t i = 0; i < p->nshapes; i++) {
		while (have[i] < p->shapes[i].count &&
		    booting < d->cfg.pool_max_boots &&
		    p->nboots < POOL_LANES_MAX) {
			struct pool_boot *b = &p->boots[p->nboots];

			if (lane_create_pooled(d, p->shapes[i].cpus,
			    p->shapes[i].memory_mib, p->shapes[i].disk_gib,
			    d->cfg.pool_max_age_ms, b->name,
			    sizeof b->name) == -1) {
				/* Not even registered: retry after a pause. */
				p->backoff_ms = POOL_BACKOFF_MAX_MS;
				p->retry_at_ms = now + POOL_BACKOFF_MIN_MS;
				break;
			}
			p->nboots++;
			have[i]++;
			booting++;
		}
	}
	p->refilling = false;
}

bool
pool_take(struct laned *d, struct conn *c, const struct lane_create_plan *plan)
{
	struct lane *l, *pick = NULL;
	int64_t now;
	int rc;

	/* Pool lanes boot from the base template: an image boots cold. */
	if (d->pool == NULL || plan->image[0] != '\0')
		return false;
	/* The oldest booted lane of the shape: the first in the list. */
	TAILQ_FOREACH(l, &d->lanes, entry)
		if (l->state == LANE_POOLED && l->step == LANE_STEP_NONE &&
		    !l->destroy_pending && l->cpus == plan->cpus &&
		    l->memory_mib == plan->memory_mib &&
		    l->disk_gib == plan->disk_gib &&
		    policy_eq(l, plan->net_mode, plan->allow, plan->sudo)) {
			pick = l;
			break;
		}
	if (pick == NULL)
		return false;
	now = time_now_ms();
	rc = registry_lane_take_pooled(d->reg, pick->name, now, now +
	    (int64_t)plan->lifetime_ms, plan->idle_timeout_ms, plan->labels,
	    plan->nlabels, plan->alias, plan->owned);
	if (rc == REG_TAKEN) {
		char holder[LANE_NAME_SIZE];

		if (registry_lane_by_alias(d->reg, plan->alias, holder) != REG_OK)
			holder[0] = '\0';
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__ALREADY_EXISTS,
		    "the name %s is taken%s%s", plan->alias,
		    holder[0] ? " by lane " : "", holder);
		return true;
	}
	if (rc != REG_OK) {
		/* The row disagrees with memory: leave it to a cold create. */
		log_warnx("lane %s: cannot take it from the warm pool (%d)",
		    pick->name, rc);
		return false;
	}
	pick->state = LANE_READY;
	pick->created_at_ms = now;
	pick->deadline_ms = now + (int64_t)plan->lifetime_ms;
	pick->idle_timeout_ms = plan->idle_timeout_ms;
	pick->last_activity_ms = pick->persisted_activity_ms = now;
	pick->owned = plan->owned;
	log_info("lane %s: taken from the warm pool (lifetime %llu s)",
	    pick->name, (unsigned long long)(plan->lifetime_ms / 1000));
	if (!lane_deliver(pick, c) && pick->owned)
		lane_destroy(pick, AGENTLANE__V1__ERROR_CODE__CANCELLED,
		    "its owning client could not be answered");
	lane_changed(d);	/* deadlines, and the pool refills */
	return true;
}
