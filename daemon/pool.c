#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config.h"
#include "conn.h"
#include "image.h"
#include "laned.h"
#include "lane.h"
#include "lanecheck.h"
#include "lanecreate.h"
#include "laneproxy.h"
#include "lanesecret.h"
#include "log.h"
#include "netpolicy.h"
#include "pool.h"
#include "registry.h"
#include "secret.h"
#include "util.h"

/* Back-off after a failed pool boot: doubles from 5 s up to 5 min. */
#define POOL_BACKOFF_MIN_MS 5000
#define POOL_BACKOFF_MAX_MS 300000
/*
 * A typical cold boot (create to ready) before any was measured: a real
 * guest under Lima takes tens of seconds. Then the median of the newest
 * POOL_BOOT_SAMPLES in the registry, followed by each pool boot.
 */
#define POOL_BOOT_DEFAULT_MS 60000
#define POOL_BOOT_SAMPLES 20

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
	uint64_t boot_ms;		/* a typical cold boot, measured */
};

/*
 * Pool lanes boot with the configured network mode and no sudo
 * (lane_create_pooled), so both are part of a shape: a lane of another
 * mode (booted before the configuration changed) is not the pool's, and
 * a create asking for another mode never gets a pool lane. The allow
 * list and the secrets are not: they live in the host's proxy, which a
 * pool lane of a mode with one boots with (empty, with its lane CA:
 * laneproxy.h) and which takes them from its taker (pool_take).
 */
_Static_assert(sizeof(((struct pool_shape *)0)->image) == IMAGE_NAME_SIZE,
    "a pool shape holds an image name");

/*
 * The one place shapes are compared: a pool lane goes only to a create
 * that asks for exactly its shape, and the refill and trim count lanes by
 * it. A new part of the shape is compared here (count is not a part).
 */
bool
pool_shape_eq(const struct pool_shape *a, const struct pool_shape *b)
{
	return a->cpus == b->cpus && a->memory_mib == b->memory_mib &&
	    a->disk_gib == b->disk_gib && strcmp(a->image, b->image) == 0 &&
	    a->net_policy == b->net_policy && a->net_mode == b->net_mode &&
	    a->sudo == b->sudo;
}

/* A lane's shape, as it was booted. */
static void
pool_lane_shape(const struct lane *l, struct pool_shape *s)
{
	memset(s, 0, sizeof *s);
	s->cpus = l->cpus;
	s->memory_mib = l->memory_mib;
	s->disk_gib = l->disk_gib;
	str_copy(s->image, l->image, sizeof s->image);
	s->net_policy = l->net_policy;
	s->net_mode = l->net_mode;
	s->sudo = l->sudo;
}

/*
 * A clone gets the image's disk when that is larger (Lima grows a disk,
 * never shrinks one; lane_create_start does the same), so a shape with an
 * image is compared with the disk its lanes really have. Read each time:
 * an image rebuilt with a larger disk changes it.
 */
static void
pool_shape_disk(struct laned *d, struct pool_shape *s)
{
	struct image_record img;

	if (s->image[0] != '\0' &&
	    registry_image_get(d->reg, s->image, &img) == REG_OK &&
	    s->disk_gib < img.disk_gib)
		s->disk_gib = img.disk_gib;
}

/* The configured shapes with defaults filled in; equal shapes merged. */
static void
pool_resolve(struct pool *p, struct laned *d)
{
	const struct config *cfg = &d->cfg;
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
		s.net_policy = true;
		s.net_mode = cfg->network;
		s.sudo = false;
		pool_shape_disk(d, &s);
		for (j = 0; j < p->nshapes; j++)
			if (pool_shape_eq(&p->shapes[j], &s))
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

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median create-to-ready time of the newest creations, or a default. */
static uint64_t
pool_boot_estimate(struct laned *d)
{
	int64_t v[POOL_BOOT_SAMPLES];
	size_t n = 0;

	if (registry_boot_times(d->reg, POOL_BOOT_SAMPLES, v, &n) != REG_OK ||
	    n == 0)
		return POOL_BOOT_DEFAULT_MS;
	qsort(v, n, sizeof *v, cmp_i64);
	return v[n / 2] > 0 ? (uint64_t)v[n / 2] : 1;
}

void
pool_init(struct laned *d)
{
	struct pool *p;

	d->pool = NULL;
	if (d->cfg.pool_size == 0 && d->cfg.npool_shapes == 0)
		return;
	p = xcalloc(1, sizeof *p);
	p->boot_ms = pool_boot_estimate(d);
	pool_resolve(p, d);
	if ((p->retry_timer = evtimer_new(d->base, retry_cb, d)) == NULL)
		fatalx("evtimer_new");
	d->pool = p;
	d->pool_changed = pool_kick;
	for (size_t i = 0; i < p->nshapes; i++)
		log_info("warm pool: %u lanes of cpus %u, memory %u MiB, disk "
		    "%u GiB%s%s (max age %llu s, %u boots at once)",
		    p->shapes[i].count, p->shapes[i].cpus,
		    p->shapes[i].memory_mib, p->shapes[i].disk_gib,
		    p->shapes[i].image[0] != '\0' ? ", image " : "",
		    p->shapes[i].image,
		    (unsigned long long)(d->cfg.pool_max_age_ms / 1000),
		    d->cfg.pool_max_boots);
	log_info("warm pool: a cold boot takes about %llu ms",
	    (unsigned long long)p->boot_ms);
}

/*
 * The image a pool lane kept from the last run was cloned from: the row
 * does not hold it, the lane's audit trail does ("image", written when it
 * was registered). Without it the lane could be taken as a lane of the
 * base template.
 */
static void
pool_lane_image(struct laned *d, struct lane *l)
{
	struct registry_event *ev = NULL;
	size_t n = 0;

	if (l->image[0] != '\0' ||
	    registry_events_list(d->reg, l->name, &ev, &n) != REG_OK)
		return;
	for (size_t i = 0; i < n; i++)
		if (strcmp(ev[i].event, "image") == 0)
			str_copy(l->image, ev[i].detail, sizeof l->image);
	free(ev);
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
	struct pool_shape ls;
	size_t have[POOL_SHAPES_MAX + 1] = { 0 };

	if (p != NULL)
		pool_resolve(p, d);
	for (l = TAILQ_FIRST(&d->lanes); l != NULL; l = next) {
		size_t i = 0;

		next = TAILQ_NEXT(l, entry);
		if (l->state != LANE_POOLED)
			continue;
		pool_lane_image(d, l);
		pool_lane_shape(l, &ls);
		if (p != NULL)
			for (i = 0; i < p->nshapes; i++)
				if (pool_shape_eq(&p->shapes[i], &ls))
					break;
		if (p != NULL && i < p->nshapes &&
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
 * Follows the boots this daemon started: a booted one resets the back-off
 * and is a measure of a cold boot; one that ended before booting (failed,
 * or destroyed) doubles the back-off, so that a broken limactl is not
 * hammered by refills. One a create took (booting or booted) says neither.
 */
static void
pool_follow_boots(struct laned *d, struct pool *p)
{
	for (size_t i = 0; i < p->nboots;) {
		struct lane *l = lane_find(d, p->boots[i].name);
		int64_t took;

		if (l != NULL && l->state == LANE_POOLED &&
		    !lane_pool_booted(l)) {
			i++;
			continue;	/* still booting */
		}
		if (l != NULL && lane_pool_booted(l)) {
			p->backoff_ms = 0;
			took = time_now_ms() - l->created_at_ms;
			if (took > 0)
				p->boot_ms = (3 * p->boot_ms + (uint64_t)took) / 4;
		} else if (l != NULL && (l->state == LANE_CREATING ||
		    l->state == LANE_READY))
			;	/* taken by a create */
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

/*
 * Booted pool lanes without an exec channel (kept from the daemon's last
 * run: a channel does not outlive its daemon) open one now, so that they
 * are handed over warm.
 */
static void
pool_reopen_kept(struct laned *d)
{
	struct lane *l, *next;

	for (l = TAILQ_FIRST(&d->lanes); l != NULL; l = next) {
		next = TAILQ_NEXT(l, entry);
		if (lane_pool_booted(l) && l->chan == NULL &&
		    l->step == LANE_STEP_NONE && !l->destroy_pending)
			lane_create_warm(l, "opening: a pool lane kept from "
			    "the daemon's last run");
	}
}

void
pool_refill(struct laned *d)
{
	struct pool *p = d->pool;
	struct lane *l;
	struct pool_shape ls;
	size_t booting = 0, have[POOL_SHAPES_MAX + 1] = { 0 };
	int64_t now;

	if (p == NULL || !p->started || p->refilling || d->shutting_down)
		return;
	p->refilling = true;
	pool_resolve(p, d);
	pool_follow_boots(d, p);
	pool_reopen_kept(d);
	/* Every pool lane counts: those recovered at start-up too. */
	TAILQ_FOREACH(l, &d->lanes, entry) {
		if (l->state != LANE_POOLED)
			continue;
		if (!lane_pool_booted(l))
			booting++;
		pool_lane_shape(l, &ls);
		for (size_t i = 0; i < p->nshapes; i++)
			if (pool_shape_eq(&p->shapes[i], &ls)) {
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

			if (lane_create_pooled(d, &p->shapes[i],
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

/* What pool_pick found: warm, reopening its channel, or booting. */
enum pool_pick { PICK_WARM, PICK_REOPEN, PICK_BOOTING };

/*
 * The pool lane for a plan: a booted one with its exec channel open (the
 * oldest), else a booted one whose channel reopens (one round trip, far
 * sooner than any boot), else a booting one.
 */
static struct lane *
pool_pick(struct laned *d, const struct lane_create_plan *plan,
    enum pool_pick *kind)
{
	struct lane *l, *boot = NULL, *reopen = NULL;
	struct pool_shape want, ls;
	int64_t now = time_now_ms();

	memset(&want, 0, sizeof want);
	want.cpus = plan->cpus;
	want.memory_mib = plan->memory_mib;
	want.disk_gib = plan->disk_gib;
	str_copy(want.image, plan->image, sizeof want.image);
	want.net_policy = true;
	want.net_mode = plan->net_mode;
	want.sudo = plan->sudo;
	pool_shape_disk(d, &want);
	/* The list is oldest first. */
	TAILQ_FOREACH(l, &d->lanes, entry) {
		if (l->state != LANE_POOLED || l->destroy_pending ||
		    l->step == LANE_STEP_COMMIT_WAIT)
			continue;
		pool_lane_shape(l, &ls);
		if (!pool_shape_eq(&ls, &want))
			continue;
		if (lane_pool_booted(l)) {
			if (l->step == LANE_STEP_NONE && l->chan != NULL) {
				*kind = PICK_WARM;
				return l;
			}
			if (reopen == NULL && (l->step == LANE_STEP_NONE ||
			    l->step == LANE_STEP_SETUP))
				reopen = l;
			continue;
		}
		/*
		 * A boot that started at t is ready at about t + boot_ms, sooner
		 * than a cold boot started now. Past that it is late by
		 * now - (t + boot_ms), and a late boot is taken to need as much
		 * again: so it still wins while it is less than one typical
		 * boot late. Beyond, it may be stuck, and a cold boot is sooner.
		 */
		if (boot == NULL && now - l->created_at_ms <
		    2 * (int64_t)d->pool->boot_ms)
			boot = l;
	}
	*kind = reopen != NULL ? PICK_REOPEN : PICK_BOOTING;
	return reopen != NULL ? reopen : boot;
}

/*
 * A booted pool lane with no channel (one not noticed dead, say) starts
 * reopening it now. NULL if that failed at once: the lane is destroyed,
 * and the caller picks again.
 */
static struct lane *
pool_reopen(struct lane *l)
{
	if (l->step == LANE_STEP_NONE)
		lane_create_warm(l, "found without a channel when taken; "
		    "reopening");
	return l->step == LANE_STEP_SETUP && !l->destroy_pending ? l : NULL;
}

/* The lane taken is the creator's now: its life starts. */
static void
pool_taken(struct lane *l, const struct lane_create_plan *plan, int64_t now)
{
	l->created_at_ms = now;
	l->deadline_ms = now + (int64_t)plan->lifetime_ms;
	l->idle_timeout_ms = plan->idle_timeout_ms;
	l->last_activity_ms = l->persisted_activity_ms = now;
	l->owned = plan->owned;
}

/* Taken while it boots or reopens: c waits on it as on a creation. */
static int
pool_taken_waiting(struct lane *l, struct conn *c, lane_deliver_cb deliver,
    void *arg, const struct lane_create_plan *plan, enum pool_pick kind,
    int64_t eta)
{
	char msg[128];

	l->state = LANE_CREATING;
	l->create_detached = plan->detach;
	if (kind == PICK_REOPEN) {
		log_info("lane %s: taken from the warm pool while its exec "
		    "channel reopens (lifetime %llu s)", l->name,
		    (unsigned long long)(plan->lifetime_ms / 1000));
		snprintf(msg, sizeof msg, "a warm lane whose exec channel "
		    "reopens");
	} else {
		log_info("lane %s: taken from the warm pool while it boots "
		    "(ready in about %lld ms; lifetime %llu s)", l->name,
		    (long long)eta, (unsigned long long)(plan->lifetime_ms /
		    1000));
		snprintf(msg, sizeof msg, "a warm lane that boots, ready in "
		    "about %lld s", (long long)(eta + 999) / 1000);
	}
	lane_waiter_add(l, c, LANE_WAIT_CREATE, deliver, arg);
	lane_waiters_progress(l, "registered", l->name);
	lane_waiters_progress(l, "starting", msg);
	lane_changed(l->d);
	return POOL_BOOTING;
}

/*
 * After the registry committed the take: the proxy gets the taker's
 * allow list, and its secrets, sealed here, are bound to the lane CA it
 * booted with, all before the create is answered. False (c answered, the
 * lane destroyed) if that failed: the lane was the taker's already.
 */
static bool
pool_hand_over(struct lane *l, struct conn *c, struct lane_create_plan *plan)
{
	struct secret_set *sealed = NULL;
	char err[256];

	if (plan->secrets != NULL) {
		sealed = lanesecret_seal(plan->secrets, err, sizeof err);
		plan->secrets = NULL;
		if (sealed == NULL)
			goto fail;
	}
	/* The lane owns its taker's allow list and secrets from here. */
	str_copy(l->allow, plan->allow, sizeof l->allow);
	l->has_secrets = sealed != NULL;
	if (laneproxy_take(&l->px, l->allow, sealed, err, sizeof err) == -1)
		goto fail;
	lane_create_secrets_event(l);
	return true;
fail:
	lane_destroy(l, AGENTLANE__V1__ERROR_CODE__INTERNAL, err);
	conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL, "lane %s from "
	    "the warm pool: %s", l->name, err);
	return false;
}

int
pool_take(struct laned *d, struct conn *c, lane_deliver_cb deliver, void *arg,
    struct lane_create_plan *plan, struct lane **taken)
{
	struct lane *pick;
	char holder[LANE_NAME_SIZE];
	char stext[LANE_SECRETS_TEXT_MAX + 1] = "";
	enum pool_pick kind;
	int64_t now, eta;
	int rc;

	*taken = NULL;
	if (d->pool == NULL)
		return POOL_COLD;
	/* A text that does not fit: the cold create says so. */
	if (plan->secrets != NULL && lanesecret_text(plan->secrets, stext,
	    sizeof stext) == -1)
		return POOL_COLD;
	do {
		if ((pick = pool_pick(d, plan, &kind)) == NULL)
			return POOL_COLD;
	} while (kind == PICK_REOPEN && (pick = pool_reopen(pick)) == NULL);
	now = time_now_ms();
	eta = pick->created_at_ms + (int64_t)d->pool->boot_ms - now;
	/* A lane reopening its channel has a ready row, as a warm one. */
	rc = registry_lane_take_pooled(d->reg, pick->name,
	    kind == PICK_BOOTING, now, now + (int64_t)plan->lifetime_ms,
	    plan->idle_timeout_ms, plan->labels, plan->nlabels, plan->alias,
	    plan->owned, plan->allow, stext);
	if (rc == REG_TAKEN) {
		if (registry_lane_by_alias(d->reg, plan->alias, holder) != REG_OK)
			holder[0] = '\0';
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__ALREADY_EXISTS,
		    "the name %s is taken%s%s", plan->alias,
		    holder[0] ? " by lane " : "", holder);
		return POOL_ANSWERED;
	}
	if (rc != REG_OK) {
		/* The row disagrees with memory: leave it to a cold create. */
		log_warnx("lane %s: cannot take it from the warm pool (%d)",
		    pick->name, rc);
		return POOL_COLD;
	}
	pool_taken(pick, plan, now);
	if (!pool_hand_over(pick, c, plan))
		return POOL_ANSWERED;
	if (kind != PICK_WARM)
		return pool_taken_waiting(pick, c, deliver, arg, plan, kind,
		    eta > 0 ? eta : 0);
	pick->state = LANE_READY;
	log_info("lane %s: taken from the warm pool (lifetime %llu s)",
	    pick->name, (unsigned long long)(plan->lifetime_ms / 1000));
	*taken = pick;
	lane_changed(d);	/* deadlines, and the pool refills */
	return POOL_READY;
}

void
pool_status(struct laned *d, struct pool_status *st)
{
	struct pool *p = d->pool;
	struct lane *l;

	memset(st, 0, sizeof *st);
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nshapes; i++)
		st->size += p->shapes[i].count;
	st->shapes = (uint32_t)p->nshapes;
	TAILQ_FOREACH(l, &d->lanes, entry) {
		if (l->state != LANE_POOLED || l->destroy_pending)
			continue;
		if (l->step == LANE_STEP_NONE)
			st->ready++;
		else
			st->booting++;
	}
	st->backoff_ms = p->backoff_ms;
	st->retry_at_ms = p->retry_at_ms;
}
