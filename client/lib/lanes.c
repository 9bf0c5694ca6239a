/* The request/response calls: lanes, events, reap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Sends req on a new connection and returns the first non-progress answer. */
static AlResponse *
call(struct al_client *c, const AlRequest *req, const struct al_create_opts *co,
    struct al_error *err)
{
	struct al_conn conn;
	AlResponse *resp;

	if (al_conn_open(c, &conn, req, err) == -1)
		return NULL;
	for (;;) {
		if ((resp = al_conn_recv(&conn, err)) == NULL)
			break;
		if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_PROGRESS)
			break;
		if (co != NULL && co->progress != NULL)
			co->progress(resp->progress->phase != NULL ?
			    resp->progress->phase : "",
			    resp->progress->message != NULL ?
			    resp->progress->message : "", co->arg);
		al_response_free(resp);
	}
	al_conn_close(&conn);
	return resp;
}

/* Expects a Lane answer. */
static int
lane_call(struct al_client *c, const AlRequest *req,
    const struct al_create_opts *co, struct al_lane *out, struct al_error *err)
{
	AlResponse *resp = call(c, req, co, err);

	if (resp == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_LANE) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	if (out != NULL)
		al_lane_from_proto(out, resp->lane);
	al_response_free(resp);
	return 0;
}

int
al_create(struct al_client *c, const struct al_create_opts *o,
    struct al_lane *out, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__CreateLane cl = AGENTLANE__V1__CREATE_LANE__INIT;
	Agentlane__V1__Label labels[AL_LABELS_MAX], *labelv[AL_LABELS_MAX];

	if (o != NULL) {
		if (o->nlabels > AL_LABELS_MAX) {
			al_set_error(err, AL_INVALID_ARGUMENT, "at most %d labels",
			    AL_LABELS_MAX);
			return -1;
		}
		cl.cpus = o->cpus;
		cl.memory_mib = o->memory_mib;
		cl.disk_gib = o->disk_gib;
		cl.timeout_s = o->timeout_s;
		cl.idle_timeout_s = o->idle_timeout_s;
		cl.detach = o->detach;
		for (size_t i = 0; i < o->nlabels; i++) {
			agentlane__v1__label__init(&labels[i]);
			labels[i].key = (char *)o->labels[i].key;
			labels[i].value = (char *)o->labels[i].value;
			labelv[i] = &labels[i];
		}
		cl.n_labels = o->nlabels;
		cl.labels = labelv;
	}
	req.body_case = AGENTLANE__V1__REQUEST__BODY_CREATE_LANE;
	req.create_lane = &cl;
	return lane_call(c, &req, o, out, err);
}

int
al_get(struct al_client *c, const char *name, struct al_lane *out,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__GetLane g = AGENTLANE__V1__GET_LANE__INIT;

	g.name = (char *)name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_LANE;
	req.get_lane = &g;
	return lane_call(c, &req, NULL, out, err);
}

int
al_destroy(struct al_client *c, const char *name, struct al_lane *out,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__DestroyLane dl = AGENTLANE__V1__DESTROY_LANE__INIT;

	dl.name = (char *)name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_DESTROY_LANE;
	req.destroy_lane = &dl;
	return lane_call(c, &req, NULL, out, err);
}

int
al_list(struct al_client *c, bool all, struct al_lane **lanes, size_t *n,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__ListLanes ll = AGENTLANE__V1__LIST_LANES__INIT;
	AlResponse *resp;
	struct al_lane *v;

	ll.all = all;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_LIST_LANES;
	req.list_lanes = &ll;
	if ((resp = call(c, &req, NULL, err)) == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_LANE_LIST) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	v = calloc(resp->lane_list->n_lanes + 1, sizeof *v);
	if (v == NULL) {
		al_response_free(resp);
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < resp->lane_list->n_lanes; i++)
		al_lane_from_proto(&v[i], resp->lane_list->lanes[i]);
	*n = resp->lane_list->n_lanes;
	*lanes = v;
	al_response_free(resp);
	return 0;
}

int
al_extend(struct al_client *c, const char *name, uint64_t by_s,
    struct al_lane *out, bool *capped, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__ExtendLane el = AGENTLANE__V1__EXTEND_LANE__INIT;
	AlResponse *resp;

	el.name = (char *)name;
	el.by_s = by_s;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_EXTEND_LANE;
	req.extend_lane = &el;
	if ((resp = call(c, &req, NULL, err)) == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_EXTENDED ||
	    resp->extended->lane == NULL) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	if (out != NULL)
		al_lane_from_proto(out, resp->extended->lane);
	if (capped != NULL)
		*capped = resp->extended->capped;
	al_response_free(resp);
	return 0;
}

int
al_events(struct al_client *c, const char *name, struct al_event **events,
    size_t *n, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__GetEvents ge = AGENTLANE__V1__GET_EVENTS__INIT;
	AlResponse *resp;
	struct al_event *v;

	ge.lane = (char *)name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_EVENTS;
	req.get_events = &ge;
	if ((resp = call(c, &req, NULL, err)) == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_EVENT_LIST) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	if ((v = calloc(resp->event_list->n_events + 1, sizeof *v)) == NULL) {
		al_response_free(resp);
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < resp->event_list->n_events; i++) {
		const Agentlane__V1__Event *e = resp->event_list->events[i];

		v[i].time_ms = e->time_ms;
		snprintf(v[i].lane, sizeof v[i].lane, "%s",
		    e->lane != NULL ? e->lane : "");
		snprintf(v[i].event, sizeof v[i].event, "%s",
		    e->event != NULL ? e->event : "");
		snprintf(v[i].detail, sizeof v[i].detail, "%s",
		    e->detail != NULL ? e->detail : "");
	}
	*n = resp->event_list->n_events;
	*events = v;
	al_response_free(resp);
	return 0;
}

static int
copy_names(char (**dst)[AL_NAME_MAX], size_t *dn, char **src, size_t n)
{
	*dn = 0;
	if ((*dst = calloc(n + 1, sizeof **dst)) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		snprintf((*dst)[i], AL_NAME_MAX, "%s", src[i]);
	*dn = n;
	return 0;
}

int
al_reap(struct al_client *c, bool delete_orphans, struct al_reap_report *rep,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__Reap r = AGENTLANE__V1__REAP__INIT;
	const Agentlane__V1__ReapReport *p;
	AlResponse *resp;

	memset(rep, 0, sizeof *rep);
	r.orphans = delete_orphans;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_REAP;
	req.reap = &r;
	if ((resp = call(c, &req, NULL, err)) == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_REAP_REPORT) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	p = resp->reap_report;
	if (copy_names(&rep->orphans, &rep->norphans, p->orphans,
	    p->n_orphans) == -1 ||
	    copy_names(&rep->deleted_orphans, &rep->ndeleted_orphans,
	    p->deleted_orphans, p->n_deleted_orphans) == -1 ||
	    copy_names(&rep->destroyed, &rep->ndestroyed, p->destroyed,
	    p->n_destroyed) == -1 ||
	    copy_names(&rep->pending, &rep->npending, p->pending,
	    p->n_pending) == -1) {
		al_reap_report_free(rep);
		al_response_free(resp);
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	al_response_free(resp);
	return 0;
}

void
al_reap_report_free(struct al_reap_report *rep)
{
	free(rep->orphans);
	free(rep->deleted_orphans);
	free(rep->destroyed);
	free(rep->pending);
	memset(rep, 0, sizeof *rep);
}
