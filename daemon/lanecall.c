#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "laned.h"
#include "lane.h"
#include "lanecall.h"
#include "lanecreate.h"
#include "lima.h"
#include "log.h"
#include "registry.h"
#include "util.h"

/* Lanes in one LaneList at most; fewer if they would not fit a frame. */
#define LANE_LIST_MAX 1000

/* ---- Protobuf views of lanes ---- */

void
lane_record_to_proto(const struct lane_record *rec, Agentlane__V1__Lane *pl,
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
	for (size_t i = 0; i < nlabels; i++) {
		agentlane__v1__label__init(&labels[i]);
		labels[i].key = (char *)src[i].key;
		labels[i].value = (char *)src[i].value;
		labelv[i] = &labels[i];
	}
	pl->n_labels = nlabels;
	pl->labels = nlabels > 0 ? labelv : NULL;
}

bool
lane_send(struct laned *d, struct conn *c, const char *name)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Lane pl;
	Agentlane__V1__Label *labelv[LANE_LABELS_MAX];
	Agentlane__V1__Label labels[LANE_LABELS_MAX];
	struct lane_label src[LANE_LABELS_MAX];
	struct lane_record rec;
	size_t n = 0;
	int rc;

	if ((rc = registry_lane_get(d->reg, name, &rec)) != REG_OK ||
	    registry_labels_get(d->reg, name, src, LANE_LABELS_MAX, &n) != REG_OK) {
		conn_send_error(c, rc == REG_NOT_FOUND ?
		    AGENTLANE__V1__ERROR_CODE__NOT_FOUND :
		    AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    rc == REG_NOT_FOUND ? "no lane %s" : "registry error "
		    "reading lane %s", name);
		return false;
	}
	lane_record_to_proto(&rec, &pl, labelv, labels, src, n);
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_LANE;
	resp.lane = &pl;
	(void)conn_send(c, &resp);
	conn_finish(c);
	return true;
}

/* ---- Calls ---- */

void
lane_handle_create(struct laned *d, struct conn *c,
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
	if ((code = lane_create_check(&d->cfg, req, live, &plan, err,
	    sizeof err)) != 0) {
		conn_send_error(c, code, "%s", err);
		return;
	}
	if (lima_home_unsafe(d->lima, err, sizeof err)) {
		log_warnx("create refused: %s", err);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "%s", err);
		return;
	}
	lane_create_start(d, c, &plan);
}

void
lane_handle_get(struct laned *d, struct conn *c, const char *name)
{
	if (lane_check_name(c, name))
		(void)lane_send(d, c, name);
}

void
lane_handle_list(struct laned *d, struct conn *c, bool all)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__LaneList list = AGENTLANE__V1__LANE_LIST__INIT;
	struct lane_record *recs;
	Agentlane__V1__Lane *lanes, **lanev;
	struct lane_label *src;
	Agentlane__V1__Label *labels, **labelv;
	size_t n, nl;

	if (registry_lane_list(d->reg, all, &recs, &n) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: %s", registry_errmsg(d->reg));
		return;
	}
	/* One frame holds the most recent lanes when the history is long. */
	if (n > LANE_LIST_MAX) {
		memmove(recs, recs + (n - LANE_LIST_MAX),
		    LANE_LIST_MAX * sizeof *recs);
		n = LANE_LIST_MAX;
	}
	lanes = xcalloc(n, sizeof *lanes);
	lanev = xcalloc(n, sizeof *lanev);
	src = xcalloc(n * LANE_LABELS_MAX, sizeof *src);
	labels = xcalloc(n * LANE_LABELS_MAX, sizeof *labels);
	labelv = xcalloc(n * LANE_LABELS_MAX, sizeof *labelv);
	for (size_t i = 0; i < n; i++) {
		size_t off = i * LANE_LABELS_MAX;

		if (registry_labels_get(d->reg, recs[i].name, src + off,
		    LANE_LABELS_MAX, &nl) != REG_OK)
			nl = 0;
		lane_record_to_proto(&recs[i], &lanes[i], labelv + off,
		    labels + off, src + off, nl);
		lanev[i] = &lanes[i];
	}
	list.n_lanes = n;
	list.lanes = lanev;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_LANE_LIST;
	resp.lane_list = &list;
	/* Drop the oldest until the answer fits one frame. */
	while (list.n_lanes > 0 &&
	    protobuf_c_message_get_packed_size(&resp.base) > WIRE_MAX_FRAME) {
		size_t drop = (list.n_lanes + 1) / 2;

		list.lanes += drop;
		list.n_lanes -= drop;
	}
	if (conn_send(c, &resp) == -1)
		log_warnx("list: cannot send the reply (%zu lanes)", n);
	conn_finish(c);
	free(labelv);
	free(labels);
	free(src);
	free(lanev);
	free(lanes);
	free(recs);
}

void
lane_handle_destroy(struct laned *d, struct conn *c, const char *name)
{
	struct lane *l;

	if (!lane_check_name(c, name))
		return;
	if ((l = lane_find(d, name)) == NULL) {
		/* Not live: report the row (destroy is idempotent). */
		(void)lane_send(d, c, name);
		return;
	}
	lane_waiter_add(l, c, LANE_WAIT_DESTROY);
	lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
	    "destroyed on request");
}

void
lane_handle_extend(struct laned *d, struct conn *c,
    const Agentlane__V1__ExtendLane *req)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Extended ext = AGENTLANE__V1__EXTENDED__INIT;
	Agentlane__V1__Lane pl;
	Agentlane__V1__Label *labelv[LANE_LABELS_MAX];
	Agentlane__V1__Label labels[LANE_LABELS_MAX];
	struct lane_label src[LANE_LABELS_MAX];
	struct lane_record rec;
	struct lane *l;
	int64_t ceiling, deadline;
	char detail[128];
	size_t nl = 0;
	bool capped = false;

	if (!lane_check_name(c, req->name))
		return;
	if ((l = lane_find(d, req->name)) == NULL ||
	    (l->state != LANE_READY && l->state != LANE_CREATING)) {
		if (l == NULL && registry_lane_get(d->reg, req->name, &rec) ==
		    REG_NOT_FOUND)
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
			    "no lane %s", req->name);
		else
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "lane %s is not live", req->name);
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
	lane_record_to_proto(&rec, &pl, labelv, labels, src, nl);
	ext.lane = &pl;
	ext.capped = capped;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_EXTENDED;
	resp.extended = &ext;
	(void)conn_send(c, &resp);
	conn_finish(c);
}

void
lane_handle_events(struct laned *d, struct conn *c, const char *name)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__EventList list = AGENTLANE__V1__EVENT_LIST__INIT;
	struct registry_event *ev;
	Agentlane__V1__Event *pe, **pev;
	size_t n, first = 0;

	if (!lane_check_name(c, name))
		return;
	if (registry_events_list(d->reg, name, &ev, &n) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: %s", registry_errmsg(d->reg));
		return;
	}
	if (n == 0) {
		free(ev);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "no events for %s", name);
		return;
	}
	/* One frame holds the most recent events if the trail is huge. */
	if (n > 2000)
		first = n - 2000;
	pe = xcalloc(n - first, sizeof *pe);
	pev = xcalloc(n - first, sizeof *pev);
	for (size_t i = first; i < n; i++) {
		Agentlane__V1__Event *e = &pe[i - first];

		agentlane__v1__event__init(e);
		e->time_ms = ev[i].time_ms;
		e->lane = ev[i].lane;
		e->event = ev[i].event;
		e->detail = ev[i].detail;
		pev[i - first] = e;
	}
	list.n_events = n - first;
	list.events = pev;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_EVENT_LIST;
	resp.event_list = &list;
	(void)conn_send(c, &resp);
	conn_finish(c);
	free(pev);
	free(pe);
	free(ev);
}
