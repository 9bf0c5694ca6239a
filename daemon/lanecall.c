#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "laned.h"
#include "lane.h"
#include "image.h"
#include "lanecall.h"
#include "lanecheck.h"
#include "lanelog.h"
#include "lanecreate.h"
#include "lanenet.h"
#include "lanesecret.h"
#include "lima.h"
#include "log.h"
#include "names.h"
#include "netpolicy.h"
#include "pool.h"
#include "registry.h"
#include "util.h"

/* Entries in one page at most (memory per call); fewer if the frame fills. */
#define LANE_PAGE_MAX 1000
#define EVENT_PAGE_MAX 2000

/* ---- Protobuf views of lanes ---- */

void
lanecall_record_to_proto(const struct lane_record *rec, Agentlane__V1__Lane *pl,
    Agentlane__V1__Label **labelv, Agentlane__V1__Label *labels,
    const struct lane_label *src, size_t nlabels)
{
	agentlane__v1__lane__init(pl);
	pl->name = (char *)rec->name;
	pl->state = (Agentlane__V1__LaneState)rec->state;
	pl->cpus = rec->cpus;
	pl->memory_mib = rec->memory_mib;
	pl->disk_gib = rec->disk_gib;
	pl->created_at_ms = rec->created_at_ms;
	pl->deadline_ms = rec->deadline_ms;
	pl->idle_timeout_s = rec->idle_timeout_ms / 1000;
	pl->last_activity_ms = rec->last_activity_ms;
	pl->workspace = (char *)rec->workspace;
	pl->error = (char *)rec->error;
	pl->ended_at_ms = rec->ended_at_ms;
	pl->alias = (char *)rec->alias;
	pl->owned = rec->owned;
	pl->booting = rec->booting;
	for (size_t i = 0; i < nlabels; i++) {
		agentlane__v1__label__init(&labels[i]);
		labels[i].key = (char *)src[i].key;
		labels[i].value = (char *)src[i].value;
		labelv[i] = &labels[i];
	}
	pl->n_labels = nlabels;
	pl->labels = nlabels > 0 ? labelv : NULL;
}

void
lanecall_record_net_to_proto(struct lane_record *rec, Agentlane__V1__Lane *pl,
    char **allowv)
{
	size_t n = 0;
	char *p = rec->allow;

	pl->network = rec->network;
	pl->sudo = rec->sudo;
	pl->network_policy = rec->net_policy;
	pl->network_note = rec->net_note;
	pl->proxy_port = rec->proxy_port;
	while (*p != '\0' && n < NETPOLICY_ALLOW_MAX) {
		size_t len = strcspn(p, "\n");

		allowv[n++] = p;
		if (p[len] == '\0')
			break;
		p[len] = '\0';
		p += len + 1;
	}
	pl->n_allow = n;
	pl->allow = n > 0 ? allowv : NULL;
}

/* What a Lane's secrets point into (lanecall_record_secrets_to_proto). */
struct secrets_view {
	struct lanesecret_info info[LANESECRET_MAX];
	Agentlane__V1__LaneSecret msg[LANESECRET_MAX];
	Agentlane__V1__LaneSecret *ptr[LANESECRET_MAX];
};

void *
lanecall_record_secrets_to_proto(struct lane_record *rec,
    Agentlane__V1__Lane *pl)
{
	struct secrets_view *v;
	size_t n;

	if (rec->secrets[0] == '\0')
		return NULL;
	v = xcalloc(1, sizeof *v);
	n = lanesecret_text_split(rec->secrets, v->info, LANESECRET_MAX);
	for (size_t i = 0; i < n; i++) {
		agentlane__v1__lane_secret__init(&v->msg[i]);
		v->msg[i].name = (char *)v->info[i].name;
		v->msg[i].hosts = (char **)v->info[i].hosts;
		v->msg[i].n_hosts = v->info[i].nhosts;
		v->msg[i].headers = (char **)v->info[i].headers;
		v->msg[i].n_headers = v->info[i].nheaders;
		v->ptr[i] = &v->msg[i];
	}
	pl->secrets = v->ptr;
	pl->n_secrets = n;
	return v;
}

bool
lanecall_send(struct laned *d, struct conn *c, const char *name)
{
	if (!lanecall_send_row(d, c, name))
		return false;
	conn_finish(c);
	return true;
}

bool
lanecall_send_row(struct laned *d, struct conn *c, const char *name)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Lane pl;
	Agentlane__V1__Label *labelv[LANE_LABELS_MAX];
	Agentlane__V1__Label labels[LANE_LABELS_MAX];
	struct lane_label src[LANE_LABELS_MAX];
	struct lane_record rec;
	char *allowv[NETPOLICY_ALLOW_MAX];
	void *secv;
	size_t n = 0;
	int rc;

	if ((rc = registry_lane_get_labeled(d->reg, name, &rec, src,
	    LANE_LABELS_MAX, &n)) != REG_OK) {
		conn_send_error(c, rc == REG_NOT_FOUND ?
		    AGENTLANE__V1__ERROR_CODE__NOT_FOUND :
		    AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    rc == REG_NOT_FOUND ? "no lane %s" : "registry error "
		    "reading lane %s", name);
		return false;
	}
	lanecall_record_to_proto(&rec, &pl, labelv, labels, src, n);
	lanecall_record_net_to_proto(&rec, &pl, allowv);
	secv = lanecall_record_secrets_to_proto(&rec, &pl);
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_LANE;
	resp.lane = &pl;
	rc = conn_send(c, &resp);
	free(secv);
	return rc == 0;
}

/* ---- Owners: the connection an owned lane (run) lives as long as ---- */

static void
owner_closed(struct conn *c, void *ctx)
{
	struct lane *l = ctx;

	l->owner = NULL;
	/*
	 * A daemon shutting down closes every connection: the row says
	 * owned, and the next start destroys the lane (lane_recover).
	 */
	if (l->d->shutting_down)
		return;
	log_info("lane %s: its owning client disconnected", l->name);
	lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
	    "its owning client disconnected");
}

static const struct conn_handler owner_handler = {
	.closed = owner_closed,
};

/*
 * Answers a lane's creator (once it is ready) or destroyer with its row:
 * the deliver this module's waiters give lane_waiter_add. An owned lane
 * keeps its creator's connection as its owner (lane_resolve, run); false
 * if the answer could not be made (the owned lane is then being
 * destroyed).
 */
static bool
deliver_row(struct lane *l, struct conn *c, void *arg)
{
	if (!l->owned || l->owner != NULL)
		return lanecall_send(l->d, c, l->name);
	if (!lanecall_send_row(l->d, c, l->name))
		return false;
	/* The call stays open: its end is the lane's. */
	l->owner = c;
	conn_set_handler(c, &owner_handler, l);
	return true;
}

/* ---- Calls ---- */

/* A checked create waiting for the limactl facts (lanenet.c). */
struct create_wait {
	struct conn *c;		/* NULL once the client went away */
	struct lane_create_plan plan;
};

static void
create_wait_closed(struct conn *c, void *ctx)
{
	struct create_wait *w = ctx;

	w->c = NULL;
}

static const struct conn_handler create_wait_handler = {
	.closed = create_wait_closed,
};

/*
 * After the checks and the facts: a pool lane, or a new one. A pool lane
 * takes the create's allow list and secrets into the proxy and lane CA
 * it booted with (pool_take).
 */
static void
create_go(struct laned *d, struct conn *c, struct lane_create_plan *plan)
{
	struct lane *l;
	char err[512];
	int code;

	if ((code = lanenet_lima_refusal(d, true, plan->sudo, err,
	    sizeof err)) != 0) {
		lanecheck_plan_clear(plan);
		conn_send_error(c, code, "%s", err);
		return;
	}
	switch (pool_take(d, c, deliver_row, NULL, plan, &l)) {
	case POOL_READY:
		lanecheck_plan_clear(plan);
		if (!deliver_row(l, c, NULL) && l->owned)
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
			    "its owning client could not be answered");
		return;
	case POOL_BOOTING:
	case POOL_ANSWERED:
		lanecheck_plan_clear(plan);
		return;
	default:
		break;
	}
	lane_create_start(d, c, deliver_row, NULL, plan);
}

static void
create_wait_done(struct laned *d, void *arg)
{
	struct create_wait *w = arg;

	if (w->c != NULL) {
		conn_set_handler(w->c, NULL, NULL);
		if (d->shutting_down)
			conn_send_error(w->c,
			    AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "agent-laned is shutting down");
		else
			create_go(d, w->c, &w->plan);
	}
	lanecheck_plan_clear(&w->plan);
	free(w);
}

void
lanecall_handle_create(struct laned *d, struct conn *c,
    const Agentlane__V1__CreateLane *req)
{
	struct lane_create_plan plan;
	char err[512];
	size_t live;
	int code;

	if (registry_count_live(d->reg, &live) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: %s", registry_errmsg(d->reg));
		return;
	}
	if ((code = lanecheck_create(&d->cfg, req, live, &plan, err,
	    sizeof err)) != 0) {
		conn_send_error(c, code, "%s", err);
		return;
	}
	/* --image as image ls shows it: a name, an id or an id prefix. */
	if (plan.image[0] != '\0') {
		struct image_record im;

		if ((code = image_resolve(d, plan.image, &im, err,
		    sizeof err)) != 0) {
			lanecheck_plan_clear(&plan);
			conn_send_error(c, code, "%s", err);
			return;
		}
		str_copy(plan.image, im.name, sizeof plan.image);
	}
	if (lima_home_unsafe(d->lima, err, sizeof err)) {
		lanecheck_plan_clear(&plan);
		log_warnx("create refused: %s", err);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "%s", err);
		return;
	}
	/*
	 * A lane is registered only once limactl is known to be able to
	 * make it: until the version is known (at start-up), the call waits.
	 */
	if (!lanenet_known(d)) {
		struct create_wait *w = xcalloc(1, sizeof *w);

		w->c = c;
		w->plan = plan;		/* its secrets move with it */
		conn_set_handler(c, &create_wait_handler, w);
		lanenet_when_known_call(d, create_wait_done, w);
		return;
	}
	create_go(d, c, &plan);
}

void
lanecall_handle_get(struct laned *d, struct conn *c, const char *ref)
{
	char name[LANE_NAME_SIZE];

	if (lane_resolve(d, c, ref, name))
		(void)lanecall_send(d, c, name);
}

/* ---- Paged lists ---- */

/*
 * Page tokens are opaque to clients and checked like any other input:
 * "L1.<created_at_ms>.<name>" for lanes, "E1.<id>" for events (the last
 * entry of the page before).
 */
#define PAGE_TOKEN_MAX 64

static size_t
varint_len(size_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* What one more entry of `size` bytes adds to a repeated field. */
static size_t
entry_cost(size_t size)
{
	return 1 + varint_len(size) + size;
}

/*
 * The room for entries in one frame: the protocol maximum, less the empty
 * answer, the token and the growth of the list's own length prefix.
 */
static size_t
page_budget(const AlResponse *empty)
{
	return WIRE_MAX_FRAME - protobuf_c_message_get_packed_size(&empty->base) -
	    (2 + PAGE_TOKEN_MAX) - 4;
}

static bool
parse_i64(const char *s, char **end, int64_t *out)
{
	long long v;

	if (*s == '\0' || (*s != '-' && (*s < '0' || *s > '9')))
		return false;
	errno = 0;
	v = strtoll(s, end, 10);
	if (errno != 0 || *end == s)
		return false;
	*out = v;
	return true;
}

static bool
lane_token_parse(const char *tok, struct lane_cursor *cur)
{
	char *end;

	if (strncmp(tok, "L1.", 3) != 0 ||
	    !parse_i64(tok + 3, &end, &cur->created_at_ms) || *end != '.' ||
	    !names_lane_valid(end + 1))
		return false;
	str_copy(cur->name, end + 1, sizeof cur->name);
	return true;
}

static bool
event_token_parse(const char *tok, int64_t *id)
{
	char *end;

	return strncmp(tok, "E1.", 3) == 0 && parse_i64(tok + 3, &end, id) &&
	    *end == '\0' && *id >= 0;
}

static size_t
page_limit(uint32_t asked, size_t max)
{
	return asked == 0 || asked > max ? max : asked;
}

void
lanecall_handle_list(struct laned *d, struct conn *c,
    const Agentlane__V1__ListLanes *req)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__LaneList list = AGENTLANE__V1__LANE_LIST__INIT;
	struct lane_cursor after;
	struct lane_page_row *rows;
	struct lane_label *src;
	Agentlane__V1__Lane *lanes, **lanev;
	Agentlane__V1__Label *labels, **labelv;
	char **allowv;
	void **secv;
	char token[PAGE_TOKEN_MAX + 1];
	size_t n, limit, budget, used = 0, i;
	bool more;

	if (req->page_token != NULL && req->page_token[0] != '\0' &&
	    !lane_token_parse(req->page_token, &after)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "not a page token of this daemon's lane list");
		return;
	}
	limit = page_limit(req->page_size, LANE_PAGE_MAX);
	/* One row more than the page says whether another page follows. */
	if (registry_lane_page(d->reg, req->all, req->page_token != NULL &&
	    req->page_token[0] != '\0' ? &after : NULL, limit + 1, &rows, &n,
	    &src) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: %s", registry_errmsg(d->reg));
		return;
	}
	more = n > limit;
	if (more)
		n = limit;
	lanes = xcalloc(n, sizeof *lanes);
	lanev = xcalloc(n, sizeof *lanev);
	labels = xcalloc(n * LANE_LABELS_MAX, sizeof *labels);
	labelv = xcalloc(n * LANE_LABELS_MAX, sizeof *labelv);
	allowv = xcalloc(n * NETPOLICY_ALLOW_MAX, sizeof *allowv);
	secv = xcalloc(n + 1, sizeof *secv);
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_LANE_LIST;
	resp.lane_list = &list;
	budget = page_budget(&resp);
	/* Fill the page up to what one frame holds; the rest is paged. */
	for (i = 0; i < n; i++) {
		size_t off = i * LANE_LABELS_MAX, cost;

		/* src is NULL when the page has no label at all. */
		lanecall_record_to_proto(&rows[i].rec, &lanes[i], labelv + off,
		    labels + off, rows[i].nlabels > 0 ?
		    src + rows[i].label_off : NULL, rows[i].nlabels);
		lanecall_record_net_to_proto(&rows[i].rec, &lanes[i],
		    allowv + i * NETPOLICY_ALLOW_MAX);
		secv[i] = lanecall_record_secrets_to_proto(&rows[i].rec,
		    &lanes[i]);
		cost = entry_cost(protobuf_c_message_get_packed_size(
		    &lanes[i].base));
		if (used + cost > budget)
			break;
		used += cost;
		lanev[i] = &lanes[i];
	}
	if (i < n)
		more = true;
	if (i == 0 && more) {
		/* Cannot happen with the protocol's 1 MiB; never loop on it. */
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__TOO_LARGE,
		    "lane %s does not fit in one frame", rows[0].rec.name);
		goto out;
	}
	list.n_lanes = i;
	list.lanes = lanev;
	if (more) {
		snprintf(token, sizeof token, "L1.%lld.%s",
		    (long long)rows[i - 1].rec.created_at_ms,
		    rows[i - 1].rec.name);
		list.next_page_token = token;
	}
	if (conn_send(c, &resp) == -1)
		log_warnx("list: cannot send the reply (%zu lanes)", i);
	conn_finish(c);
out:
	for (size_t k = 0; k < n; k++)
		free(secv[k]);
	free(secv);
	free(allowv);
	free(labelv);
	free(labels);
	free(lanev);
	free(lanes);
	free(src);
	free(rows);
}

void
lanecall_handle_destroy(struct laned *d, struct conn *c, const char *ref)
{
	char name[LANE_NAME_SIZE];
	struct lane *l;

	if (!lane_resolve(d, c, ref, name))
		return;
	if ((l = lane_find(d, name)) == NULL) {
		/*
		 * Not live: removing a failed lane removes the logs its start
		 * left, then the row is reported (destroy is idempotent). In
		 * that order: the answer may be written at once, and a client
		 * that has it must find the logs gone.
		 */
		lanelog_discard(d, name);
		(void)lanecall_send(d, c, name);
		return;
	}
	lane_waiter_add(l, c, LANE_WAIT_DESTROY, deliver_row, NULL);
	lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
	    "destroyed on request");
}

void
lanecall_handle_extend(struct laned *d, struct conn *c,
    const Agentlane__V1__ExtendLane *req)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Extended ext = AGENTLANE__V1__EXTENDED__INIT;
	Agentlane__V1__Lane pl;
	Agentlane__V1__Label *labelv[LANE_LABELS_MAX];
	Agentlane__V1__Label labels[LANE_LABELS_MAX];
	struct lane_label src[LANE_LABELS_MAX];
	struct lane_record rec;
	char *allowv[NETPOLICY_ALLOW_MAX];
	void *secv;
	struct lane *l;
	int64_t ceiling, deadline;
	char detail[128], name[LANE_NAME_SIZE];
	size_t nl = 0;
	bool capped = false;

	if (!lane_resolve(d, c, req->name, name))
		return;
	if ((l = lane_find(d, name)) == NULL ||
	    (l->state != LANE_READY && l->state != LANE_CREATING)) {
		if (l == NULL && registry_lane_get(d->reg, name, &rec) ==
		    REG_NOT_FOUND)
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
			    "no lane %s", name);
		else
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "lane %s is not live", name);
		return;
	}
	if (req->by_s == 0) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "an extension must be at least 1 s");
		return;
	}
	/* The ceiling counts from creation: extensions cannot stack past it. */
	ceiling = l->created_at_ms + (int64_t)d->cfg.max_lifetime_ms;
	if (req->by_s > d->cfg.max_lifetime_ms / 1000)
		deadline = ceiling + 1;		/* no overflow: capped below */
	else
		deadline = l->deadline_ms + (int64_t)req->by_s * 1000;
	if (deadline > ceiling) {
		deadline = ceiling;
		capped = true;
	}
	snprintf(detail, sizeof detail, "by=%llus%s deadline_ms=%lld",
	    (unsigned long long)req->by_s, capped ? " capped" : "",
	    (long long)deadline);
	if (registry_lane_set_deadline(d->reg, l->name, deadline, detail) !=
	    REG_OK || registry_lane_get(d->reg, l->name, &rec) != REG_OK ||
	    registry_labels_get(d->reg, l->name, src, LANE_LABELS_MAX, &nl) !=
	    REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	l->deadline_ms = deadline;
	log_info("lane %s: deadline extended (%s)", l->name, detail);
	lane_changed(d);
	lanecall_record_to_proto(&rec, &pl, labelv, labels, src, nl);
	lanecall_record_net_to_proto(&rec, &pl, allowv);
	secv = lanecall_record_secrets_to_proto(&rec, &pl);
	ext.lane = &pl;
	ext.capped = capped;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_EXTENDED;
	resp.extended = &ext;
	(void)conn_send(c, &resp);
	free(secv);
	conn_finish(c);
}

void
lanecall_handle_events(struct laned *d, struct conn *c,
    const Agentlane__V1__GetEvents *req)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__EventList list = AGENTLANE__V1__EVENT_LIST__INIT;
	struct registry_event *ev;
	Agentlane__V1__Event *pe, **pev;
	char token[PAGE_TOKEN_MAX + 1], name[LANE_NAME_SIZE];
	int64_t after = 0, *ids;
	size_t n, limit, budget, used = 0, i;
	bool paged = req->page_token != NULL && req->page_token[0] != '\0';
	bool more;

	if (!lane_resolve(d, c, req->lane, name))
		return;
	if (paged && !event_token_parse(req->page_token, &after)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "not a page token of this daemon's event list");
		return;
	}
	limit = page_limit(req->page_size, EVENT_PAGE_MAX);
	if (registry_events_page(d->reg, name, after, limit + 1, &ev, &ids,
	    &n) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: %s", registry_errmsg(d->reg));
		return;
	}
	if (n == 0 && !paged) {
		free(ev);
		free(ids);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "no events for %s", name);
		return;
	}
	more = n > limit;
	if (more)
		n = limit;
	pe = xcalloc(n, sizeof *pe);
	pev = xcalloc(n, sizeof *pev);
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_EVENT_LIST;
	resp.event_list = &list;
	budget = page_budget(&resp);
	for (i = 0; i < n; i++) {
		Agentlane__V1__Event *e = &pe[i];
		size_t cost;

		agentlane__v1__event__init(e);
		e->time_ms = ev[i].time_ms;
		e->lane = ev[i].lane;
		e->event = ev[i].event;
		e->detail = ev[i].detail;
		cost = entry_cost(protobuf_c_message_get_packed_size(&e->base));
		if (used + cost > budget)
			break;
		used += cost;
		pev[i] = e;
	}
	if (i < n)
		more = true;
	if (i == 0 && more) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__TOO_LARGE,
		    "an event of %s does not fit in one frame", name);
		goto out;
	}
	list.n_events = i;
	list.events = pev;
	if (more && i > 0) {
		snprintf(token, sizeof token, "E1.%lld", (long long)ids[i - 1]);
		list.next_page_token = token;
	}
	(void)conn_send(c, &resp);
	conn_finish(c);
out:
	free(pev);
	free(pe);
	free(ids);
	free(ev);
}
