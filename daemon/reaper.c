#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <event2/event.h>

#include "conn.h"
#include "laned.h"
#include "lane.h"
#include "lanenet.h"
#include "lima.h"
#include "log.h"
#include "proc.h"
#include "reaper.h"
#include "lanelog.h"
#include "registry.h"
#include "units.h"
#include "util.h"

#define LIST_OUTPUT_MAX (16u * 1024u * 1024u)
#define INSTANCES_MAX 4096
#define ORPHANS_MAX 1024

/* One reconcile run: at start-up, on the tick until one succeeds, or `reap`. */
struct reconcile {
	struct laned *d;
	struct conn *c;			/* NULL: nobody waits for a report */
	bool background;		/* start-up or tick, not `reap` */
	bool delete_orphans;
	char (*orphans)[LANE_NAME_SIZE];
	size_t norphans;
	char (*deleted)[LANE_NAME_SIZE];
	size_t ndeleted;
	char (*destroyed)[LANE_NAME_SIZE];
	size_t ndestroyed;
	size_t deletes_running;
	/*
	 * The lanes whose VM must run by the time limactl list was started
	 * (ready, or booted pool lanes): only these are judged by it. A lane
	 * that became ready since, a create the first client of a socket-
	 * activated daemon sent say, may be missing from a list that was
	 * taken before its VM existed.
	 */
	char (*judged)[LANE_NAME_SIZE];
	size_t njudged;
	int error_code;
	char error[300];
	int64_t started_ms;	/* for the log: what a reconcile costs */
	int64_t listed_ms;	/* limactl list returned */
};

static const struct conn_handler reconcile_handler;

/* ---- Deadlines ---- */

static int64_t
lane_expiry(const struct lane *l)
{
	int64_t t;

	/* A change waiting for the registry is retried on its own timer. */
	if (l->step == LANE_STEP_COMMIT_WAIT)
		return INT64_MAX;
	/* A pooled lane's deadline is its pool_max_age: it is recycled. */
	if (l->state != LANE_CREATING && l->state != LANE_READY &&
	    l->state != LANE_POOLED)
		return INT64_MAX;
	t = l->deadline_ms;
	/* Idle means no exec or copy at all: a silent build is not idle. */
	if (l->state == LANE_READY && l->idle_timeout_ms > 0 &&
	    l->nactivities == 0 &&
	    l->last_activity_ms + (int64_t)l->idle_timeout_ms < t)
		t = l->last_activity_ms + (int64_t)l->idle_timeout_ms;
	return t;
}

void
reaper_rearm(struct laned *d)
{
	struct lane *l;
	int64_t next = INT64_MAX, now, delta;
	struct timeval tv;

	TAILQ_FOREACH(l, &d->lanes, entry) {
		int64_t t = lane_expiry(l);
		if (t < next)
			next = t;
	}
	evtimer_del(d->deadline_timer);
	if (next == INT64_MAX)
		return;
	now = time_now_ms();
	delta = next > now ? next - now : 0;
	tv = tv_from_ms((uint64_t)delta);
	if (evtimer_add(d->deadline_timer, &tv) != 0)
		fatalx("evtimer_add");
}

/* Destroys every lane whose deadline or idle expiry has passed. */
static void
reaper_check(struct laned *d)
{
	struct lane *l, *next;
	int64_t now = time_now_ms();

	for (l = TAILQ_FIRST(&d->lanes); l != NULL; l = next) {
		next = TAILQ_NEXT(l, entry);
		if (l->state != LANE_CREATING && l->state != LANE_READY &&
		    l->state != LANE_POOLED)
			continue;
		if (l->step == LANE_STEP_COMMIT_WAIT)
			continue;	/* lane_resync retries it */
		if (l->deadline_ms <= now) {
			/*
			 * A boot that outlived its lifetime is a failed start:
			 * its console says why it was slow. Kept before
			 * lane_destroy deletes the VM.
			 */
			lane_keep_logs(l, NULL);
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
			    l->state == LANE_POOLED ? "pool max age reached" :
			    "deadline reached");
		} else if (lane_expiry(l) <= now)
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
			    "idle timeout reached");
	}
	reaper_rearm(d);
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	reaper_check(arg);
}

/* ---- Reconcile ---- */

static void
name_push(char (**v)[LANE_NAME_SIZE], size_t *n, const char *name)
{
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	str_copy((*v)[*n], name, LANE_NAME_SIZE);
	(*n)++;
}

static void
reconcile_free(struct reconcile *r)
{
	free(r->orphans);
	free(r->deleted);
	free(r->destroyed);
	free(r->judged);
	free(r);
}

static void
reconcile_reply(struct reconcile *r)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__ReapReport rep = AGENTLANE__V1__REAP_REPORT__INIT;
	char **orph, **del, **des, **pend;
	struct lane *l;
	size_t npend = 0, i, nstuck;
	const char *why;

	if (r->c == NULL)
		return;
	conn_set_handler(r->c, NULL, NULL);
	/* A report of success would hide lanes whose rows cannot move. */
	if (r->error_code == 0 &&
	    (nstuck = lane_uncommitted(r->d, &why)) > 0) {
		r->error_code = AGENTLANE__V1__ERROR_CODE__UNAVAILABLE;
		snprintf(r->error, sizeof r->error, "%zu lane change%s not "
		    "recorded: the registry cannot write (%s); agent-laned "
		    "retries", nstuck, nstuck == 1 ? " is" : "s are", why);
	}
	if (r->error_code != 0) {
		conn_send_error(r->c, r->error_code, "%s", r->error);
		r->c = NULL;
		return;
	}
	orph = xcalloc(r->norphans + 1, sizeof *orph);
	del = xcalloc(r->ndeleted + 1, sizeof *del);
	des = xcalloc(r->ndestroyed + 1, sizeof *des);
	TAILQ_FOREACH(l, &r->d->lanes, entry)
		npend++;
	pend = xcalloc(npend + 1, sizeof *pend);
	for (i = 0; i < r->norphans; i++)
		orph[i] = r->orphans[i];
	for (i = 0; i < r->ndeleted; i++)
		del[i] = r->deleted[i];
	for (i = 0; i < r->ndestroyed; i++)
		des[i] = r->destroyed[i];
	npend = 0;
	TAILQ_FOREACH(l, &r->d->lanes, entry)
		if (l->state == LANE_DESTROYING)
			pend[npend++] = l->name;
	rep.n_orphans = r->norphans;
	rep.orphans = orph;
	rep.n_deleted_orphans = r->ndeleted;
	rep.deleted_orphans = del;
	rep.n_destroyed = r->ndestroyed;
	rep.destroyed = des;
	rep.n_pending = npend;
	rep.pending = pend;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_REAP_REPORT;
	resp.reap_report = &rep;
	(void)conn_send(r->c, &resp);
	conn_finish(r->c);
	r->c = NULL;
	free(orph);
	free(del);
	free(des);
	free(pend);
}

static void
reconcile_maybe_done(struct reconcile *r)
{
	if (r->deletes_running > 0)
		return;
	if (r->background)
		r->d->reconciling = false;
	log_info("reconcile: done in %lld ms (limactl list %lld ms)",
	    (long long)(time_now_ms() - r->started_ms),
	    (long long)(r->listed_ms != 0 ? r->listed_ms - r->started_ms : 0));
	reconcile_reply(r);
	reconcile_free(r);
}

struct orphan_delete {
	struct reconcile *r;
	char name[LANE_NAME_SIZE];
};

static void
orphan_delete_done(struct proc *p, int status, void *arg)
{
	struct orphan_delete *od = arg;
	struct reconcile *r = od->r;
	char msg[256];

	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    !lima_instance_exists(r->d->lima, od->name)) {
		name_push(&r->deleted, &r->ndeleted, od->name);
		(void)registry_event_append(r->d->reg, od->name,
		    "orphan-deleted", "reap --orphans");
		log_info("orphan %s: deleted", od->name);
	} else {
		lima_error_message(r->d->lima, proc_stderr(p), msg, sizeof msg);
		log_warnx("orphan %s: limactl delete failed: %s", od->name, msg);
	}
	free(od);
	r->deletes_running--;
	reconcile_maybe_done(r);
}

static void
reconcile_delete_orphans(struct reconcile *r)
{
	struct proc_spec ps;
	char err[256], what[64];

	for (size_t i = 0; i < r->norphans; i++) {
		char **argv = lima_argv_delete(r->d->lima, r->orphans[i]);
		struct orphan_delete *od;

		if (argv == NULL)
			continue;	/* never reached: scanned names validate */
		od = xcalloc(1, sizeof *od);
		od->r = r;
		str_copy(od->name, r->orphans[i], sizeof od->name);
		snprintf(what, sizeof what, "limactl delete %s (orphan)",
		    od->name);
		memset(&ps, 0, sizeof ps);
		ps.argv = argv;
		ps.envp = lima_envp(r->d->lima);
		ps.timeout_ms = r->d->cfg.command_timeout_ms;
		ps.what = what;
		if (proc_spawn(r->d->base, &r->d->procs, &ps, orphan_delete_done, od, err,
		    sizeof err) == NULL) {
			log_warnx("orphan %s: %s", od->name, err);
			free(od);
		} else
			r->deletes_running++;
		lima_argv_free(argv);
	}
}

static void
scan_cb(const char *name, void *arg)
{
	struct reconcile *r = arg;
	struct lane_record rec;

	if (lane_find(r->d, name) != NULL || r->norphans >= ORPHANS_MAX)
		return;
	/*
	 * No live row: either no row at all or one that says the VM is gone.
	 * Both are orphans; only `reap --orphans` deletes them.
	 */
	if (registry_lane_get(r->d->reg, name, &rec) == REG_OK &&
	    registry_state_is_live(rec.state))
		return;
	name_push(&r->orphans, &r->norphans, name);
}

/* A lane whose VM runs, or must: ready, or a booted pool lane. */
static bool
vm_should_run(const struct lane *l)
{
	/* Booted pool lanes too: a stopped VM is no warm lane. */
	/* A committing lane's VM is stopped on purpose (lanecommit.h). */
	return (l->state == LANE_READY || lane_pool_booted(l)) &&
	    l->step != LANE_STEP_COMMIT_WAIT && !l->committing;
}

/* Taken when the list starts: what it may judge. */
static void
judged_snapshot(struct reconcile *r)
{
	struct lane *l;

	TAILQ_FOREACH(l, &r->d->lanes, entry)
		if (vm_should_run(l))
			name_push(&r->judged, &r->njudged, l->name);
}

static bool
is_judged(const struct reconcile *r, const struct lane *l)
{
	if (!vm_should_run(l))
		return false;
	for (size_t i = 0; i < r->njudged; i++)
		if (strcmp(r->judged[i], l->name) == 0)
			return true;
	return false;
}

static void
list_done(struct proc *p, int status, void *arg)
{
	struct reconcile *r = arg;
	struct laned *d = r->d;
	struct lima_instance *inst = NULL;
	struct lane *l, *next;
	const char *out;
	size_t len, n = 0;
	char err[256], msg[256];

	r->listed_ms = time_now_ms();
	if (d->shutting_down) {
		reconcile_reply(r);
		reconcile_free(r);
		return;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    proc_output_overflow(p)) {
		lima_error_message(d->lima, proc_stderr(p), msg, sizeof msg);
		r->error_code = AGENTLANE__V1__ERROR_CODE__LIMA_FAILED;
		snprintf(r->error, sizeof r->error, "limactl list failed%s%s",
		    msg[0] ? ": " : "", msg);
		log_warnx("reconcile: %s", r->error);
		reconcile_maybe_done(r);
		return;
	}
	out = proc_stdout(p, &len);
	if (lima_list_parse(d->lima, out, len, &inst, &n, INSTANCES_MAX, err,
	    sizeof err) == -1) {
		r->error_code = AGENTLANE__V1__ERROR_CODE__LIMA_FAILED;
		snprintf(r->error, sizeof r->error, "limactl list --json: %s",
		    err);
		log_warnx("reconcile: %s", r->error);
		reconcile_maybe_done(r);
		return;
	}
	d->reconciled = true;
	for (l = TAILQ_FIRST(&d->lanes); l != NULL; l = next) {
		const char *status_s = NULL;
		char reason[64];

		next = TAILQ_NEXT(l, entry);
		if (!is_judged(r, l))
			continue;
		for (size_t i = 0; i < n; i++)
			if (strcmp(inst[i].name, l->name) == 0)
				status_s = inst[i].status;
		if (status_s != NULL && strcmp(status_s, "Running") == 0)
			continue;
		snprintf(reason, sizeof reason, "VM %s at reconcile",
		    status_s == NULL ? "missing" : status_s);
		name_push(&r->destroyed, &r->ndestroyed, l->name);
		lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED, reason);
	}
	free(inst);
	/* Expired lanes: reaper_check below destroys them; report them too. */
	TAILQ_FOREACH(l, &d->lanes, entry)
		if (lane_expiry(l) <= time_now_ms())
			name_push(&r->destroyed, &r->ndestroyed, l->name);
	if (lima_scan_lanes(d->lima, scan_cb, r) == -1)
		log_warn("scanning %s", lima_home(d->lima));
	for (size_t i = 0; i < r->norphans; i++) {
		log_warnx("orphan instance %s in %s (no live lane; "
		    "`agent-lanectl reap --orphans` deletes it)",
		    r->orphans[i], lima_home(d->lima));
		(void)registry_event_append(d->reg, r->orphans[i],
		    "orphan-found", "");
	}
	if (r->delete_orphans)
		reconcile_delete_orphans(r);
	reaper_check(d);
	reconcile_maybe_done(r);
}

static void
reconcile_conn_closed(struct conn *c, void *ctx)
{
	struct reconcile *r = ctx;

	r->c = NULL;	/* the work goes on; nobody to tell */
}

static const struct conn_handler reconcile_handler = {
	.closed = reconcile_conn_closed,
};

static void
reconcile_start(struct laned *d, struct conn *c, bool delete_orphans)
{
	struct reconcile *r = xcalloc(1, sizeof *r);
	struct proc_spec ps;
	char **argv, err[256];

	r->d = d;
	r->c = c;
	r->delete_orphans = delete_orphans;
	r->started_ms = time_now_ms();
	if (c == NULL) {
		r->background = true;
		d->reconciling = true;
	}
	if (c != NULL)
		conn_set_handler(c, &reconcile_handler, r);
	judged_snapshot(r);
	argv = lima_argv_list(d->lima);
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(d->lima);
	ps.out = PROC_OUT_CAPTURE;
	ps.out_cap = LIST_OUTPUT_MAX;
	ps.timeout_ms = d->cfg.command_timeout_ms;
	ps.what = "limactl list";
	if (proc_spawn(d->base, &d->procs, &ps, list_done, r, err, sizeof err) == NULL) {
		r->error_code = AGENTLANE__V1__ERROR_CODE__INTERNAL;
		snprintf(r->error, sizeof r->error, "%s", err);
		log_warnx("reconcile: %s", err);
		reconcile_maybe_done(r);
	}
	lima_argv_free(argv);
}

void
reaper_handle_reap(struct laned *d, struct conn *c,
    const Agentlane__V1__Reap *req)
{
	/* Changes waiting for the registry first: reap is an explicit retry. */
	(void)lane_resync(d);
	reconcile_start(d, c, req->orphans);
}

/* ---- Start-up and the periodic tick ---- */

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct laned *d = arg;
	size_t pruned = 0;

	/*
	 * The registry still cannot write: the rest of the tick would only
	 * stall the loop on the same lock. Deadlines wait for the next tick.
	 */
	if (!lane_resync(d))
		return;
	reaper_check(d);
	lane_persist_activity(d);
	registry_maintain(d->reg, time_now_ms());
	if (!d->reconciled && !d->reconciling)
		reconcile_start(d, NULL, false);
	if (d->cfg.retention_ms > 0 && registry_prune(d->reg,
	    time_now_ms() - (int64_t)d->cfg.retention_ms, &pruned) == REG_OK &&
	    pruned > 0)
		log_info("registry: pruned %zu ended lanes", pruned);
	/* Kept logs of failed lanes go with their rows. */
	lanelog_prune(d);
}

void
reaper_init(struct laned *d)
{
	d->deadline_timer = evtimer_new(d->base, deadline_cb, d);
	d->tick_timer = event_new(d->base, -1, EV_PERSIST, tick_cb, d);
	d->lanes_changed = reaper_rearm;
	if (d->deadline_timer == NULL || d->tick_timer == NULL)
		fatalx("reaper: event_new");
}

void
reaper_start(struct laned *d)
{
	struct lane_record *recs;
	struct lane *l, *next;
	struct timeval tv = tv_from_ms(d->cfg.tick_ms);
	int64_t t0 = time_now_ms();
	size_t n;

	if (registry_lane_list(d->reg, false, &recs, &n) != REG_OK)
		fatalx("registry: cannot list lanes: %s", registry_errmsg(d->reg));
	for (size_t i = 0; i < n; i++)
		(void)lane_adopt(d, &recs[i]);
	free(recs);
	for (l = TAILQ_FIRST(&d->lanes); l != NULL; l = next) {
		next = TAILQ_NEXT(l, entry);
		/* The evidence of a creation the restart interrupted. */
		lane_keep_logs(l, NULL);
		if (lanenet_recover(l))
			lane_recover(l);
	}
	if (n > 0)
		log_info("reconcile: %zu live lanes in the registry, adopted "
		    "in %lld ms", n, (long long)(time_now_ms() - t0));
	if (evtimer_add(d->tick_timer, &tv) != 0)
		fatalx("evtimer_add");
	reaper_rearm(d);
	reconcile_start(d, NULL, false);
}

void
reaper_stop(struct laned *d)
{
	if (d->deadline_timer != NULL)
		event_free(d->deadline_timer);
	if (d->tick_timer != NULL)
		event_free(d->tick_timer);
	d->deadline_timer = d->tick_timer = NULL;
}
