#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <event2/event.h>

#include "conn.h"
#include "gchan.h"
#include "image.h"
#include "laned.h"
#include "lane.h"
#include "lanelog.h"
#include "laneproxy.h"
#include "lima.h"
#include "log.h"
#include "names.h"
#include "netpolicy.h"
#include "registry.h"
#include "util.h"
#include "vm.h"

struct lane_waiter {
	struct conn *c;
	struct lane *lane;
	enum lane_waiter_kind kind;
	lane_deliver_cb deliver;	/* the answer when the wait ends well */
	void *arg;
	TAILQ_ENTRY(lane_waiter) entry;
};

static void lane_begin_delete(struct lane *);
static bool lane_commit(struct lane *);

/*
 * What a lane holds beyond its VM, let go when it ends or turns to
 * destroying: its exec channel, its proxy, an image it still holds.
 */
static void
lane_release(struct lane *l)
{
	/* A channel reopening for the pool (the setup step) stops first. */
	if (l->step == LANE_STEP_SETUP && l->step_abort != NULL)
		(void)l->step_abort(l);
	gchan_close(&l->chan);
	laneproxy_close(&l->px);
	/* A lane that ended before its clone (it waited, say) lets go. */
	if (l->image_held) {
		image_release(l->d, l->image);
		l->image_held = false;
	}
}

struct lane *
lane_find(struct laned *d, const char *name)
{
	struct lane *l;

	TAILQ_FOREACH(l, &d->lanes, entry)
		if (strcmp(l->name, name) == 0)
			return l;
	return NULL;
}

struct lane *
lane_new(struct laned *d, const struct lane_record *rec)
{
	struct lane *l = xcalloc(1, sizeof *l);

	l->d = d;
	str_copy(l->name, rec->name, sizeof l->name);
	l->state = (enum lane_state)rec->state;
	l->step = LANE_STEP_NONE;
	l->cpus = rec->cpus;
	l->memory_mib = rec->memory_mib;
	l->disk_gib = rec->disk_gib;
	l->created_at_ms = rec->created_at_ms;
	l->deadline_ms = rec->deadline_ms;
	l->idle_timeout_ms = rec->idle_timeout_ms;
	l->last_activity_ms = rec->last_activity_ms;
	l->persisted_activity_ms = rec->last_activity_ms;
	l->owned = rec->owned;
	l->has_secrets = rec->secrets[0] != '\0';
	str_copy(l->workspace, rec->workspace, sizeof l->workspace);
	if (rec->network[0] != '\0') {
		enum netpolicy_mode m;

		/* A mode this build does not know (a newer row): the strictest. */
		l->net_policy = true;
		l->net_mode = netpolicy_mode_parse(rec->network, &m) ?
		    (uint32_t)m : (uint32_t)NETPOLICY_NONE;
		l->sudo = rec->sudo;
		str_copy(l->allow, rec->allow, sizeof l->allow);
		l->px.port = rec->proxy_port;
	}
	l->vm = vm_new(d, l->name, l);
	TAILQ_INIT(&l->waiters);
	TAILQ_INIT(&l->activities);
	TAILQ_INSERT_TAIL(&d->lanes, l, entry);
	return l;
}

struct lane *
lane_adopt(struct laned *d, const struct lane_record *rec)
{
	struct lane *l = lane_new(d, rec);

	if (rec->create_failed) {
		/* A creation that failed before a restart still ends "failed". */
		l->fail_code = AGENTLANE__V1__ERROR_CODE__LIMA_FAILED;
		str_copy(l->fail_msg, rec->error, sizeof l->fail_msg);
	}
	return l;
}

static void
lane_free(struct lane *l)
{
	struct lane_waiter *w;

	while ((w = TAILQ_FIRST(&l->waiters)) != NULL) {
		TAILQ_REMOVE(&l->waiters, w, entry);
		conn_set_handler(w->c, NULL, NULL);
		conn_send_error(w->c, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "agent-laned is shutting down");
		free(w);
	}
	/* limactl's calls go with the vm, unheard; a guest step stops. */
	vm_free(l->vm);
	l->vm = NULL;
	if (l->step_abort != NULL)
		(void)l->step_abort(l);
	if (l->retry_timer != NULL)
		event_free(l->retry_timer);
	lane_release(l);
	if (l->owner != NULL) {
		/* Its owner hears the end as the connection closing. */
		conn_set_handler(l->owner, NULL, NULL);
		conn_finish(l->owner);
		l->owner = NULL;
	}
	TAILQ_REMOVE(&l->d->lanes, l, entry);
	free(l);
}

void
lane_free_all(struct laned *d)
{
	struct lane *l;

	while ((l = TAILQ_FIRST(&d->lanes)) != NULL) {
		struct lane_activity *a;

		while ((a = TAILQ_FIRST(&l->activities)) != NULL)
			a->cancel(a, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "agent-laned is shutting down");
		lane_free(l);
	}
}

void
lane_changed(struct laned *d)
{
	if (d->lanes_changed != NULL)
		d->lanes_changed(d);
	if (d->pool_changed != NULL)
		d->pool_changed(d);
}

/* ---- Lane references: name, alias or name prefix ---- */

/* Candidates an ambiguous reference lists at most. */
#define LANE_REF_CANDIDATES 5

/* What a reference matched: an alias's lane, and the lanes of a prefix. */
struct lane_ref {
	char alias[LANE_NAME_SIZE];	/* "": no alias matched */
	bool alias_live;
	char cand[LANE_REF_CANDIDATES][LANE_NAME_SIZE];
	size_t n;			/* prefix matches (may be > CANDIDATES) */
	bool prefix_live;
};

/* Looks ref up as an alias and as a name prefix. False: registry error. */
static bool
ref_lookup(struct laned *d, const char *ref, struct lane_ref *m)
{
	char prefix[LANE_NAME_SIZE];
	int rc;

	memset(m, 0, sizeof *m);
	prefix[0] = '\0';
	if (names_lane_prefix(ref))
		str_copy(prefix, ref, sizeof prefix);
	else if (names_alias_shape(ref)) {
		/* Shape, not validity: a row may predate the hex rule. */
		rc = registry_lane_by_alias(d->reg, ref, m->alias);
		if (rc != REG_OK && rc != REG_NOT_FOUND)
			return false;
		if (rc == REG_NOT_FOUND)
			m->alias[0] = '\0';
		else
			m->alias_live = lane_find(d, m->alias) != NULL;
		/* Hex digits: also the digits of a name. */
		if (names_lane_digits(ref))
			snprintf(prefix, sizeof prefix, "%s%s",
			    NAMES_LANE_PREFIX, ref);
	}
	if (prefix[0] != '\0' && registry_lane_by_prefix(d->reg, prefix,
	    m->cand, LANE_REF_CANDIDATES, &m->n, &m->prefix_live) != REG_OK)
		return false;
	return true;
}

static void
ref_ambiguous(struct conn *c, const char *ref, const struct lane_ref *m,
    bool with_alias)
{
	char list[(LANE_REF_CANDIDATES + 1) * (LANE_NAME_SIZE + 12) + 16];
	size_t len;

	list[0] = '\0';
	if (with_alias)
		snprintf(list, sizeof list, "%s (by alias)", m->alias);
	for (size_t i = 0; i < m->n && i < LANE_REF_CANDIDATES; i++) {
		len = strlen(list);
		snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
		    m->cand[i]);
	}
	if (m->n > LANE_REF_CANDIDATES) {
		len = strlen(list);
		snprintf(list + len, sizeof list - len, ", ...");
	}
	conn_send_error(c, AGENTLANE__V1__ERROR_CODE__AMBIGUOUS,
	    "%s matches more than one lane: %s (give more of the name)", ref,
	    list);
}

bool
lane_resolve(struct laned *d, struct conn *c, const char *ref,
    char name[LANE_NAME_SIZE])
{
	struct lane_ref m;
	char shown[41];

	if (ref == NULL || ref[0] == '\0') {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "no lane given (a name, an alias or a name prefix)");
		return false;
	}
	if (names_lane_valid(ref)) {
		str_copy(name, ref, LANE_NAME_SIZE);
		return true;
	}
	/* Shown sanitized: it may be anything a client sent. */
	str_copy(shown, ref, sizeof shown);
	str_sanitize(shown);
	/* "al-" alone is no prefix: an empty $ID must not mean every lane. */
	if (!names_alias_shape(ref) && !names_lane_prefix(ref)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "\"%s\" is not a lane name, alias or name prefix", shown);
		return false;
	}
	if (!ref_lookup(d, ref, &m)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: %s", registry_errmsg(d->reg));
		return false;
	}
	/*
	 * Both an alias (a row from before the hex rule) and a prefix: a live
	 * lane wins over an ended one; the same lane is no conflict.
	 */
	if (m.alias[0] != '\0' && m.n > 0) {
		if (m.n == 1 && strcmp(m.alias, m.cand[0]) == 0)
			m.n = 0;
		else if (m.alias_live && !m.prefix_live)
			m.n = 0;
		else if (m.prefix_live && !m.alias_live)
			m.alias[0] = '\0';
		else {
			ref_ambiguous(c, shown, &m, true);
			return false;
		}
	}
	if (m.alias[0] != '\0') {
		str_copy(name, m.alias, LANE_NAME_SIZE);
		return true;
	}
	if (m.n == 1) {
		str_copy(name, m.cand[0], LANE_NAME_SIZE);
		return true;
	}
	if (m.n == 0) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    names_lane_digits(ref) || names_lane_prefix(ref) ?
		    "no lane %s (no alias, and no lane name begins so)" :
		    "no lane %s", shown);
		return false;
	}
	ref_ambiguous(c, shown, &m, false);
	return false;
}

/* ---- Waiters: clients blocked on a lane's create or destroy ---- */

static void
waiter_closed(struct conn *c, void *ctx)
{
	struct lane_waiter *w = ctx;
	struct lane *l = w->lane;
	bool cancel;

	/*
	 * The creator went away before ready (interrupted, or dead): nobody
	 * will learn the lane's name, so it would only sit there until its
	 * deadline. Unless it was created detached, destroy it. A daemon
	 * shutting down closes every connection; its lanes stay for the
	 * reconcile of the next start.
	 */
	cancel = w->kind == LANE_WAIT_CREATE && l->state == LANE_CREATING &&
	    !l->create_detached && !l->d->shutting_down;
	TAILQ_REMOVE(&l->waiters, w, entry);
	free(w);
	if (cancel) {
		log_info("lane %s: its creator disconnected before ready",
		    l->name);
		lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
		    "the creating client disconnected");
	}
}

static const struct conn_handler waiter_handler = {
	.closed = waiter_closed,
};

void
lane_waiter_add(struct lane *l, struct conn *c, enum lane_waiter_kind kind,
    lane_deliver_cb deliver, void *arg)
{
	struct lane_waiter *w = xcalloc(1, sizeof *w);

	w->c = c;
	w->lane = l;
	w->kind = kind;
	w->deliver = deliver;
	w->arg = arg;
	TAILQ_INSERT_TAIL(&l->waiters, w, entry);
	conn_set_handler(c, &waiter_handler, w);
}

void
lane_waiters_progress(struct lane *l, const char *phase, const char *message)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Progress p = AGENTLANE__V1__PROGRESS__INIT;
	struct lane_waiter *w;

	p.phase = (char *)phase;
	p.message = (char *)message;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_PROGRESS;
	resp.progress = &p;
	TAILQ_FOREACH(w, &l->waiters, entry)
		if (w->kind == LANE_WAIT_CREATE)
			(void)conn_send(w->c, &resp);
}

void
lane_waiters_finish(struct lane *l, enum lane_waiter_kind kind, int code,
    const char *msg)
{
	struct lane_waiter *w, *next;

	for (w = TAILQ_FIRST(&l->waiters); w != NULL; w = next) {
		next = TAILQ_NEXT(w, entry);
		if (w->kind != kind)
			continue;
		TAILQ_REMOVE(&l->waiters, w, entry);
		conn_set_handler(w->c, NULL, NULL);
		if (code == 0)
			(void)w->deliver(l, w->c, w->arg);
		else
			conn_send_error(w->c, code, "%s", msg);
		free(w);
	}
}

/* ---- Registry helpers ---- */

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lane *l = arg;

	if (l->step == LANE_STEP_COMMIT_WAIT)
		(void)lane_commit(l);
}

/* The change waits ms for its retry (COMMIT_WAIT). */
static void
lane_retry_in(struct lane *l, uint64_t ms)
{
	struct timeval tv = tv_from_ms(ms);

	l->step = LANE_STEP_COMMIT_WAIT;
	if (l->retry_timer == NULL &&
	    (l->retry_timer = evtimer_new(l->d->base, retry_cb, l)) == NULL)
		fatalx("evtimer_new");
	if (evtimer_add(l->retry_timer, &tv) != 0)
		fatalx("evtimer_add");
}

/* The change that ends a creation: failed, or cancelled (destroy_pending). */
static void
creation_change(struct lane *l, struct lane_change *ch)
{
	memset(ch, 0, sizeof *ch);
	ch->to = LANE_DESTROYING;
	str_copy(ch->event, l->destroy_pending ? "cancelled" : "create-failed",
	    sizeof ch->event);
	str_copy(ch->detail, l->fail_msg, sizeof ch->detail);
	/* A cancelled creation ends "destroyed", a failed one "failed". */
	if (!l->destroy_pending) {
		ch->set_error = true;
		ch->create_failed = true;
		str_copy(ch->error, l->fail_msg, sizeof ch->error);
	}
	ch->then = lane_begin_delete;
}

/*
 * A creator is not kept waiting on a registry that cannot write: it hears
 * why at once (UNAVAILABLE), and the change goes on being retried. A
 * creation that was to end ready then has nobody to hand the lane to, so
 * unless it was made --detach it is cancelled instead: the change retried
 * becomes creating -> destroying, and nothing is left running.
 */
static void
lane_creators_unavailable(struct lane *l, const char *why)
{
	struct lane_waiter *w;
	bool waiting = false, cancel;
	char msg[LANE_ERROR_MAX + 128];

	TAILQ_FOREACH(w, &l->waiters, entry)
		if (w->kind == LANE_WAIT_CREATE)
			waiting = true;
	if (!waiting)
		return;
	cancel = l->state == LANE_CREATING && l->pending.to != LANE_DESTROYING &&
	    !l->create_detached;
	snprintf(msg, sizeof msg, "%s; %s", why, l->create_detached &&
	    l->pending.to != LANE_DESTROYING ? "the lane carries on (--detach) "
	    "and is ready once the change is recorded" : "the lane is destroyed "
	    "once the registry can record it");
	lane_waiters_finish(l, LANE_WAIT_CREATE,
	    AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, msg);
	if (!cancel)
		return;
	log_warnx("lane %s: its creator was answered UNAVAILABLE: cancelled",
	    l->name);
	l->destroy_pending = true;
	l->destroy_code = AGENTLANE__V1__ERROR_CODE__UNAVAILABLE;
	str_copy(l->destroy_reason, "its creator was answered UNAVAILABLE",
	    sizeof l->destroy_reason);
	l->fail_code = AGENTLANE__V1__ERROR_CODE__UNAVAILABLE;
	snprintf(l->fail_msg, sizeof l->fail_msg, "cancelled: the registry "
	    "could not record it ready (%s), and its creator was told so",
	    l->commit_error);
	str_sanitize(l->fail_msg);
	creation_change(l, &l->pending);
}

/*
 * Tries the pending change once. Only a committed change moves the lane;
 * a database that cannot write (busy, full, I/O) leaves everything as it
 * was and the change waits for its retry.
 */
static bool
lane_commit(struct lane *l)
{
	struct lane_change *ch = &l->pending;
	struct registry_change rc = {
		.to = (int)ch->to,
		.event = ch->event,
		.detail = ch->detail,
		.workspace = ch->set_workspace ? ch->workspace : NULL,
		.error = ch->set_error ? ch->error : NULL,
		.create_failed = ch->create_failed,
		.last_activity_ms = ch->last_activity_ms,
		.net_policy = ch->set_net ? ch->net_policy : NULL,
		.net_note = ch->set_net ? ch->net_note : NULL,
	};
	const char *from = wire_lane_state_name((int)l->state);
	const char *to = wire_lane_state_name((int)ch->to);
	char msg[512];
	uint64_t backoff_ms;
	int r;

	if ((r = registry_lane_apply(l->d->reg, l->name, &rc)) == REG_ERROR) {
		str_copy(l->commit_error, registry_errmsg(l->d->reg),
		    sizeof l->commit_error);
		l->commit_attempts++;
		backoff_ms = 1000;
		for (unsigned i = 1; i < l->commit_attempts &&
		    backoff_ms < l->d->cfg.tick_ms; i++)
			backoff_ms *= 2;
		if (backoff_ms > l->d->cfg.tick_ms)
			backoff_ms = l->d->cfg.tick_ms;
		log_warnx("lane %s: the registry cannot record %s -> %s (%s); "
		    "nothing moves until it does; retrying in %llu ms "
		    "(attempt %u)", l->name, from, to, l->commit_error,
		    (unsigned long long)backoff_ms, l->commit_attempts);
		lane_retry_in(l, backoff_ms);
		snprintf(msg, sizeof msg, "lane %s: the registry cannot record "
		    "%s -> %s (%s); agent-laned retries", l->name, from, to,
		    l->commit_error);
		lane_waiters_finish(l, LANE_WAIT_DESTROY,
		    AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, msg);
		lane_creators_unavailable(l, msg);
		return false;
	}
	/* Not the disk: the row disagrees. Memory follows the request. */
	if (r != REG_OK)
		log_warnx("lane %s: the registry refused %s -> %s (%d)",
		    l->name, from, to, r);
	if (l->step == LANE_STEP_COMMIT_WAIT) {
		evtimer_del(l->retry_timer);
		l->step = LANE_STEP_NONE;
	}
	l->commit_attempts = 0;
	log_info("lane %s: %s -> %s (%s%s%s)", l->name, from, to, ch->event,
	    ch->detail[0] ? ": " : "", ch->detail);
	l->state = ch->to;
	if (ch->set_workspace)
		str_copy(l->workspace, ch->workspace, sizeof l->workspace);
	if (ch->last_activity_ms > l->last_activity_ms)
		l->last_activity_ms = ch->last_activity_ms;
	if (ch->last_activity_ms > l->persisted_activity_ms)
		l->persisted_activity_ms = ch->last_activity_ms;
	if (ch->then != NULL)
		ch->then(l);
	return true;
}

bool
lane_transition(struct lane *l, const struct lane_change *ch)
{
	if (ch != &l->pending)
		l->pending = *ch;
	return lane_commit(l);
}

bool
lane_resync(struct laned *d)
{
	struct lane *l, *next;

	for (l = TAILQ_FIRST(&d->lanes); l != NULL; l = next) {
		next = TAILQ_NEXT(l, entry);
		/* One failure says the registry is still down: stop there. */
		if (l->step == LANE_STEP_COMMIT_WAIT && !lane_commit(l))
			return false;
	}
	return true;
}

size_t
lane_uncommitted(struct laned *d, const char **why)
{
	struct lane *l;
	size_t n = 0;

	*why = "";
	TAILQ_FOREACH(l, &d->lanes, entry)
		if (l->step == LANE_STEP_COMMIT_WAIT) {
			n++;
			*why = l->commit_error;
		}
	return n;
}

void
lane_event(struct lane *l, const char *event, const char *detail)
{
	if (registry_event_append(l->d->reg, l->name, event, detail) != REG_OK)
		log_warnx("lane %s: cannot record event %s", l->name, event);
}

bool
lane_pool_booted(const struct lane *l)
{
	/* The workspace comes with the committed ready change, and only then. */
	return l->state == LANE_POOLED && l->workspace[0] != '\0';
}

/*
 * The evidence of a failed creation: the lane's Lima logs (and the failing
 * limactl call's stderr), kept once before its VM and logs are deleted. A
 * cancelled creation keeps nothing; nor does a pool lane, which has no
 * creator to tell.
 */
void
lane_keep_logs(struct lane *l, const char *limactl_stderr)
{
	if (l->destroy_pending || l->state != LANE_CREATING || l->logs_kept)
		return;
	lanelog_keep(l->d, l->name, limactl_stderr);
	l->logs_kept = true;
}

void
lane_fail_creation(struct lane *l, int code, const char *fmt, ...)
{
	struct lane_change ch;
	va_list ap;

	/*
	 * A warm-pool lane fails while it boots like any creation (a booted
	 * one never comes here: lane_destroy treats it as ready).
	 */
	if (l->state != LANE_CREATING && l->state != LANE_POOLED)
		return;
	va_start(ap, fmt);
	vsnprintf(l->fail_msg, sizeof l->fail_msg, fmt, ap);
	va_end(ap);
	str_sanitize(l->fail_msg);
	l->fail_code = code;
	log_warnx("lane %s: %s", l->name, l->fail_msg);
	creation_change(l, &ch);
	(void)lane_transition(l, &ch);
}

/* ---- Destroy ---- */

/* The row says destroyed or failed: answer everyone, forget the lane. */
static void
lane_finished(struct lane *l)
{
	struct laned *d = l->d;
	int creator_code = l->fail_code;
	char creator_msg[LANE_ERROR_MAX];

	str_copy(creator_msg, l->fail_msg, sizeof creator_msg);
	if (creator_code == 0) {
		creator_code = AGENTLANE__V1__ERROR_CODE__CANCELLED;
		snprintf(creator_msg, sizeof creator_msg, "lane destroyed");
	}
	lane_waiters_finish(l, LANE_WAIT_CREATE, creator_code, creator_msg);
	lane_waiters_finish(l, LANE_WAIT_DESTROY, 0, NULL);
	lane_free(l);
	lane_changed(d);
}

static void
delete_gone(struct vm *vm, void *arg)
{
	struct lane *l = arg;
	bool failed = l->fail_code != 0 && !l->destroy_pending;
	struct lane_change ch;

	l->step = LANE_STEP_NONE;
	memset(&ch, 0, sizeof ch);
	ch.to = failed ? LANE_FAILED : LANE_DESTROYED;
	str_copy(ch.event, failed ? "failed" : "destroyed", sizeof ch.event);
	str_copy(ch.detail, l->destroy_reason, sizeof ch.detail);
	ch.then = lane_finished;
	(void)lane_transition(l, &ch);		/* may free the lane */
}

/* A delete attempt failed; vm.c retries it after retry_ms. */
static void
delete_failed(struct vm *vm, const char *why, unsigned attempt,
    uint64_t retry_ms, void *arg)
{
	struct lane *l = arg;
	char detail[512];

	snprintf(detail, sizeof detail, "limactl delete failed: %.300s (attempt "
	    "%u, retrying in %llu ms)", why, attempt,
	    (unsigned long long)retry_ms);
	log_warnx("lane %s: %s", l->name, detail);
	lane_event(l, "destroy-failed", detail);
	if (l->fail_code == 0)
		(void)registry_lane_set_error(l->d->reg, l->name, detail);

	/* Nobody waits for retries: answer now, the row stays visible. */
	if (l->fail_code != 0) {
		char m[LANE_ERROR_MAX + 64];

		snprintf(m, sizeof m, "%s (cleanup pending: limactl delete "
		    "will be retried)", l->fail_msg);
		lane_waiters_finish(l, LANE_WAIT_CREATE, l->fail_code, m);
	} else
		lane_waiters_finish(l, LANE_WAIT_CREATE,
		    AGENTLANE__V1__ERROR_CODE__CANCELLED, "lane destroyed");
	lane_waiters_finish(l, LANE_WAIT_DESTROY,
	    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED, detail);
}

static void
lane_begin_delete(struct lane *l)
{
	if (l->step == LANE_STEP_DELETE) {
		vm_delete_now(l->vm);
		return;
	}
	l->step = LANE_STEP_DELETE;
	vm_delete(l->vm, 0, delete_failed, delete_gone);
}

void
lane_destroy(struct lane *l, int code, const char *reason)
{
	struct lane_activity *a;
	struct lane_change ch;
	char msg[128];

	if (l->committing) {
		/* Its VM is stopped or being cloned: deleted once it ends. */
		if (!l->destroy_deferred) {
			l->destroy_deferred = true;
			l->destroy_code = code;
			str_copy(l->destroy_reason, reason,
			    sizeof l->destroy_reason);
			lane_event(l, "destroy-requested", reason);
		}
		return;
	}
	/* A pool lane still booting is a creation; a booted one is ready. */
	if (lane_pool_booted(l))
		goto ready;
	switch (l->state) {
	case LANE_POOLED:
	case LANE_CREATING:
		if (l->destroy_pending)
			return;
		/* A failed creation waits for the registry: retry that now. */
		if (l->step == LANE_STEP_COMMIT_WAIT &&
		    l->pending.to == LANE_DESTROYING) {
			(void)lane_commit(l);
			return;
		}
		l->destroy_pending = true;
		l->destroy_code = code;
		str_copy(l->destroy_reason, reason, sizeof l->destroy_reason);
		lane_event(l, "destroy-requested", reason);
		/*
		 * The step in flight stops, or (a limactl create or clone:
		 * vm.c lets it finish) carries on to its callback, which
		 * sees destroy_pending.
		 */
		if (l->step_abort != NULL && l->step_abort(l))
			break;
		lane_fail_creation(l, code, "destroyed during creation: %s",
		    reason);
		break;
	case LANE_READY:
	ready:
		str_copy(l->destroy_reason, reason, sizeof l->destroy_reason);
		snprintf(msg, sizeof msg, "lane %s is being destroyed (%s)",
		    l->name, reason);
		while ((a = TAILQ_FIRST(&l->activities)) != NULL)
			a->cancel(a, code, msg);
		/* No exec is left: its channel and its proxy go now. */
		lane_release(l);
		/* The VM is deleted only once the row says destroying. */
		memset(&ch, 0, sizeof ch);
		ch.to = LANE_DESTROYING;
		str_copy(ch.event, "destroying", sizeof ch.event);
		str_copy(ch.detail, reason, sizeof ch.detail);
		ch.then = lane_begin_delete;
		(void)lane_transition(l, &ch);
		break;
	case LANE_DESTROYING:
		if (l->destroy_reason[0] == '\0')
			str_copy(l->destroy_reason, reason,
			    sizeof l->destroy_reason);
		/* A retry is pending: an explicit request runs it now. */
		if (l->step == LANE_STEP_COMMIT_WAIT)
			(void)lane_commit(l);
		else
			lane_begin_delete(l);
		break;
	default:
		break;
	}
}

void
lane_recover(struct lane *l)
{
	switch (l->state) {
	case LANE_CREATING:
		lane_fail_creation(l, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "creation interrupted by an agent-laned restart");
		break;
	case LANE_DESTROYING:
		lane_event(l, "destroy-resumed", "after an agent-laned restart");
		lane_begin_delete(l);
		break;
	case LANE_READY:
		if (l->owned)
			/* Its owner's connection did not survive the restart. */
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
			    "its owner was lost to an agent-laned restart");
		else if (l->has_secrets && l->px.secrets == NULL)
			/*
			 * The values were in the memory of the daemon that
			 * stopped; its placeholders would now reach their hosts
			 * as they are. Nothing carries on half-working.
			 */
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
			    "its secrets were held in memory by the agent-laned "
			    "that stopped, and are gone");
		else if (l->deadline_ms <= time_now_ms())
			lane_destroy(l,
			    AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
			    "deadline passed while agent-laned was down");
		break;
	case LANE_POOLED:
		/*
		 * A booted pool lane is kept (reconcile checks that its VM
		 * runs, the pool trims what the configuration no longer
		 * wants); one whose boot was interrupted is destroyed.
		 */
		if (!lane_pool_booted(l))
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "pool boot interrupted by an agent-laned restart");
		else if (laneproxy_pool_ca(l->net_policy, l->net_mode))
			/*
			 * Its guest trusts a lane CA whose key was only in the
			 * memory of the daemon that stopped: no taker's secret
			 * could be bound to it.
			 */
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "warm lane: its lane CA key died with the daemon");
		else if (l->deadline_ms <= time_now_ms())
			lane_destroy(l,
			    AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
			    "pool max age passed while agent-laned was down");
		break;
	default:
		break;
	}
}

/* ---- Activities ---- */

struct lane *
lane_activity_begin(struct laned *d, struct conn *c, const char *name,
    struct lane_activity *a)
{
	struct lane_record rec;
	struct lane *l;

	if ((l = lane_find(d, name)) == NULL) {
		if (registry_lane_get(d->reg, name, &rec) == REG_NOT_FOUND)
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
			    "no lane %s", name);
		else
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "lane %s has ended", name);
		return NULL;
	}
	if (l->state != LANE_READY) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "lane %s is %s, not ready", name,
		    wire_lane_state_name((int)l->state));
		return NULL;
	}
	if (l->step == LANE_STEP_COMMIT_WAIT) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "lane %s is being destroyed (the registry has yet to "
		    "record it: %s)", name, l->commit_error);
		return NULL;
	}
	if (l->committing) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "lane %s is committing (agent-lanectl commit): its VM is "
		    "stopped while its disk is copied; try again when the "
		    "commit is done", name);
		return NULL;
	}
	if (l->nactivities >= d->cfg.max_execs_per_lane) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "lane %s already runs %zu execs and copies "
		    "(max_execs_per_lane)", name, l->nactivities);
		return NULL;
	}
	a->lane = l;
	TAILQ_INSERT_TAIL(&l->activities, a, entry);
	l->nactivities++;
	lane_touch(l);
	return l;
}

void
lane_commit_end(struct lane *l)
{
	char reason[sizeof l->destroy_reason];

	l->committing = false;
	if (!l->destroy_deferred)
		return;
	l->destroy_deferred = false;
	str_copy(reason, l->destroy_reason, sizeof reason);
	lane_destroy(l, l->destroy_code, reason);
}

void
lane_activity_end(struct lane_activity *a)
{
	struct lane *l = a->lane;

	if (l == NULL)
		return;
	TAILQ_REMOVE(&l->activities, a, entry);
	l->nactivities--;
	a->lane = NULL;
	/*
	 * The idle clock starts again from here. The registry hears of it on
	 * the next tick (lane_persist_activity), not with an fsync per exec.
	 */
	lane_touch(l);
	lane_changed(l->d);
}

void
lane_touch(struct lane *l)
{
	l->last_activity_ms = time_now_ms();
}

void
lane_persist_activity(struct laned *d)
{
	struct lane *l;

	TAILQ_FOREACH(l, &d->lanes, entry) {
		if (l->last_activity_ms == l->persisted_activity_ms)
			continue;
		if (registry_lane_touch(d->reg, l->name, l->last_activity_ms) ==
		    REG_OK)
			l->persisted_activity_ms = l->last_activity_ms;
	}
}
