/* The request/response calls: lanes, events, reap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "text.h"

struct al_owner {
	struct al_conn conn;
};

/*
 * Sends req on a new connection and returns the first non-progress answer.
 * keep: the connection is handed over there instead of closed (owned
 * lanes), when the answer came.
 */
static AlResponse *
call_keep(struct al_client *c, const AlRequest *req,
    const struct al_create_opts *co, struct al_conn *keep, struct al_error *err)
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
	if (keep != NULL && resp != NULL)
		*keep = conn;
	else
		al_conn_close(&conn);
	return resp;
}

static AlResponse *
call(struct al_client *c, const AlRequest *req, const struct al_create_opts *co,
    struct al_error *err)
{
	return call_keep(c, req, co, NULL, err);
}

static int lane_call_full(struct al_client *, const AlRequest *,
    const struct al_create_opts *, struct al_lane *, struct al_lane_net *,
    struct al_lane_secrets *, struct al_conn *, struct al_error *);

/*
 * Expects a Lane answer, into out and (its network policy) net, either
 * NULL; keep: as call_keep, on success only.
 */
static int
lane_call_keep(struct al_client *c, const AlRequest *req,
    const struct al_create_opts *co, struct al_lane *out,
    struct al_lane_net *net, struct al_conn *keep, struct al_error *err)
{
	return lane_call_full(c, req, co, out, net, NULL, keep, err);
}

/*
 * A secret's headers, kept after the n entries of al_lane_secrets.v in
 * the same allocation: struct al_lane_secret is an array element of the
 * ABI, so it cannot grow (al_lane_secret_headers reads these).
 */
_Static_assert(AL_SECRET_HEADERS_MAX == TEXT_SECRET_HEADERS_MAX &&
    AL_SECRET_HEADER_MAX == TEXT_SECRET_HEADER_MAX, "header bounds differ");

struct secret_headers {
	size_t n;
	char text[AL_SECRET_HEADERS_TEXT_MAX + 1];
};

static struct secret_headers *
secret_headers_of(const struct al_lane_secrets *s)
{
	return (struct secret_headers *)(void *)((char *)s->v +
	    s->n * sizeof *s->v);
}

/* Secrets' names, hosts and headers of a Lane; -1 (AL_IO) out of memory. */
static int
secrets_from_proto(struct al_lane_secrets *s, const Agentlane__V1__Lane *p,
    struct al_error *err)
{
	struct secret_headers *h;
	size_t n = 0;

	_Static_assert(sizeof(struct al_lane_secret) %
	    _Alignof(struct secret_headers) == 0, "headers misaligned");
	memset(s, 0, sizeof *s);
	snprintf(s->name, sizeof s->name, "%s", p->name != NULL ? p->name : "");
	for (size_t i = 0; i < p->n_secrets && n < AL_SECRETS_MAX; i++) {
		const char *nm = p->secrets[i]->name;

		n += nm != NULL && nm[0] != '\0';
	}
	if (n == 0)
		return 0;
	if ((s->v = calloc(n, sizeof *s->v + sizeof *h)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	s->n = n;
	h = secret_headers_of(s);
	for (size_t i = 0, k = 0; i < p->n_secrets && k < n; i++) {
		struct al_lane_secret *d = &s->v[k];
		const Agentlane__V1__LaneSecret *m = p->secrets[i];

		if (m->name == NULL || m->name[0] == '\0')
			continue;
		snprintf(d->name, sizeof d->name, "%s", m->name);
		d->nhosts = al_join_lines(d->hosts, sizeof d->hosts, m->hosts,
		    m->n_hosts, AL_SECRET_HOSTS_MAX);
		h[k].n = al_join_lines(h[k].text, sizeof h[k].text, m->headers,
		    m->n_headers, AL_SECRET_HEADERS_MAX);
		k++;
	}
	return 0;
}

AL_API const char *
al_lane_secret_headers(const struct al_lane_secrets *s, size_t i,
    size_t *nheaders)
{
	const struct secret_headers *h;

	if (s == NULL || i >= s->n || s->v == NULL)
		return NULL;
	h = &secret_headers_of(s)[i];
	if (nheaders != NULL)
		*nheaders = h->n;
	return h->text;
}

AL_API void
al_lane_secrets_free(struct al_lane_secrets *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		free(v[i].v);
	free(v);
}

static int
lane_call_full(struct al_client *c, const AlRequest *req,
    const struct al_create_opts *co, struct al_lane *out,
    struct al_lane_net *net, struct al_lane_secrets *sec,
    struct al_conn *keep, struct al_error *err)
{
	AlResponse *resp = call_keep(c, req, co, keep, err);

	if (resp == NULL)
		return -1;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_LANE) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		if (keep != NULL)
			al_conn_close(keep);
		return -1;
	}
	if (sec != NULL && secrets_from_proto(sec, resp->lane, err) == -1) {
		al_response_free(resp);
		if (keep != NULL)
			al_conn_close(keep);
		return -1;
	}
	if (out != NULL)
		al_lane_from_proto(out, resp->lane);
	if (net != NULL)
		al_lane_net_from_proto(net, resp->lane);
	al_response_free(resp);
	return 0;
}

static int
lane_call(struct al_client *c, const AlRequest *req,
    const struct al_create_opts *co, struct al_lane *out, struct al_error *err)
{
	return lane_call_keep(c, req, co, out, NULL, NULL, err);
}

/*
 * The secrets of a create into msgs (pointing into o, nothing copied),
 * checked as the daemon checks them so that a bad one is refused before
 * its value travels. The value is never in an error message.
 */
static int
secrets_to_proto(const struct al_create_opts *o, Agentlane__V1__Secret *msgs,
    Agentlane__V1__Secret **msgv, Agentlane__V1__CreateLane *cl,
    struct al_error *err)
{
	if (o->nsecrets > AL_SECRETS_MAX) {
		al_set_error(err, AL_INVALID_ARGUMENT, "at most %d secrets",
		    AL_SECRETS_MAX);
		return -1;
	}
	if (o->nsecrets > 0 && o->secrets == NULL) {
		al_set_error(err, AL_INVALID_ARGUMENT, "nsecrets without secrets");
		return -1;
	}
	for (size_t i = 0; i < o->nsecrets; i++) {
		const struct al_secret *sc = &o->secrets[i];

		if (!text_secret_name_valid(sc->name)) {
			al_set_error(err, AL_INVALID_ARGUMENT, "a secret's name is "
			    "[A-Za-z_][A-Za-z0-9_], up to %d characters",
			    AL_SECRET_NAME_MAX - 1);
			return -1;
		}
		if (sc->value == NULL || !text_secret_value_valid(sc->value,
		    strlen(sc->value))) {
			al_set_error(err, AL_INVALID_ARGUMENT, "secret %s: the "
			    "value must be 1-%d bytes of printable ASCII without a "
			    "space at either end", sc->name, AL_SECRET_VALUE_MAX);
			return -1;
		}
		if (sc->nhosts > AL_SECRET_HOSTS_MAX ||
		    (sc->nhosts > 0 && sc->hosts == NULL)) {
			al_set_error(err, AL_INVALID_ARGUMENT, "secret %s: at most "
			    "%d hosts", sc->name, AL_SECRET_HOSTS_MAX);
			return -1;
		}
		agentlane__v1__secret__init(&msgs[i]);
		msgs[i].name = (char *)sc->name;
		msgs[i].value.data = (uint8_t *)sc->value;
		msgs[i].value.len = strlen(sc->value);
		msgs[i].hosts = (char **)sc->hosts;
		msgs[i].n_hosts = sc->nhosts;
		msgv[i] = &msgs[i];
	}
	cl->secrets = msgv;
	cl->n_secrets = o->nsecrets;
	return 0;
}

/*
 * The secrets' own headers (o->secret_headers) into hdrv, a row of
 * AL_SECRET_HEADERS_MAX for each of cl's secrets, checked as the daemon
 * checks them; msgs are the secrets secrets_to_proto made.
 */
static int
secret_headers_to_proto(const struct al_create_opts *o,
    Agentlane__V1__Secret *msgs,
    const char *hdrv[][AL_SECRET_HEADERS_MAX], struct al_error *err)
{
	if (o->nsecret_headers > 0 && o->secret_headers == NULL) {
		al_set_error(err, AL_INVALID_ARGUMENT,
		    "nsecret_headers without secret_headers");
		return -1;
	}
	for (size_t j = 0; j < o->nsecret_headers; j++) {
		const struct al_secret_header *sh = &o->secret_headers[j];
		size_t i = 0;

		while (i < o->nsecrets && (sh->secret == NULL ||
		    strcmp(o->secrets[i].name, sh->secret) != 0))
			i++;
		if (i == o->nsecrets) {
			al_set_error(err, AL_INVALID_ARGUMENT, "secret header "
			    "for %.64s, which is not among the secrets",
			    sh->secret != NULL ? sh->secret : "(null)");
			return -1;
		}
		if (!text_secret_header_valid(sh->header)) {
			al_set_error(err, AL_INVALID_ARGUMENT, "secret %s: "
			    "header \"%.80s\" cannot carry a credential: a "
			    "header name is an HTTP token of 1-%d characters, "
			    "and not Host, Connection, Content-Length, "
			    "Transfer-Encoding, another framing or hop-by-hop "
			    "header, or Cookie", sh->secret, sh->header != NULL ?
			    sh->header : "", AL_SECRET_HEADER_MAX);
			return -1;
		}
		if (msgs[i].n_headers == AL_SECRET_HEADERS_MAX) {
			al_set_error(err, AL_INVALID_ARGUMENT, "secret %s: at "
			    "most %d headers", sh->secret, AL_SECRET_HEADERS_MAX);
			return -1;
		}
		hdrv[i][msgs[i].n_headers++] = sh->header;
		msgs[i].headers = (char **)hdrv[i];
	}
	return 0;
}

static int
do_create(struct al_client *c, const struct al_create_opts *o,
    struct al_lane *out, struct al_conn *owner, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__CreateLane cl = AGENTLANE__V1__CREATE_LANE__INIT;
	Agentlane__V1__Label labels[AL_LABELS_MAX], *labelv[AL_LABELS_MAX];
	Agentlane__V1__Secret secrets[AL_SECRETS_MAX], *secretv[AL_SECRETS_MAX];
	const char *hdrv[AL_SECRETS_MAX][AL_SECRET_HEADERS_MAX];

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
		cl.image = (char *)(o->image != NULL ? o->image : "");
		if (o->nallow > AL_ALLOW_MAX) {
			al_set_error(err, AL_INVALID_ARGUMENT,
			    "at most %d allow patterns", AL_ALLOW_MAX);
			return -1;
		}
		if (o->nallow > 0 && o->allow == NULL) {
			al_set_error(err, AL_INVALID_ARGUMENT,
			    "nallow without allow");
			return -1;
		}
		cl.network = (char *)(o->network != NULL ? o->network : "");
		cl.allow = (char **)o->allow;
		cl.n_allow = o->nallow;
		cl.sudo = o->sudo;
		cl.alias = (char *)(o->alias != NULL ? o->alias : "");
		if (secrets_to_proto(o, secrets, secretv, &cl, err) == -1 ||
		    secret_headers_to_proto(o, secrets, hdrv, err) == -1)
			return -1;
	}
	cl.owned = owner != NULL;
	if (cl.owned && cl.detach) {
		al_set_error(err, AL_INVALID_ARGUMENT, "an owned lane cannot be "
		    "created detached");
		return -1;
	}
	req.body_case = AGENTLANE__V1__REQUEST__BODY_CREATE_LANE;
	req.create_lane = &cl;
	return lane_call_keep(c, &req, o, out, NULL, owner, err);
}

static int
do_get(struct al_client *c, const char *name, struct al_lane *out,
    struct al_lane_net *net, struct al_lane_secrets *sec,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__GetLane g = AGENTLANE__V1__GET_LANE__INIT;

	g.name = (char *)name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_LANE;
	req.get_lane = &g;
	return lane_call_full(c, &req, NULL, out, net, sec, NULL, err);
}

static int
do_destroy(struct al_client *c, const char *name, struct al_lane *out,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__DestroyLane dl = AGENTLANE__V1__DESTROY_LANE__INIT;

	dl.name = (char *)name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_DESTROY_LANE;
	req.destroy_lane = &dl;
	return lane_call(c, &req, NULL, out, err);
}

/*
 * Collects a paged answer: elements are appended to v (elem bytes each),
 * up to max in all.
 */
struct pages {
	void *v;
	size_t n, cap, elem, max;
	const char *what;
	char *token;		/* next page's token; NULL when done */
};

/* Room for more elements; -1 (TOO_LARGE or out of memory) with err. */
static int
pages_grow(struct pages *pg, size_t more, struct al_error *err)
{
	if (more > pg->max - pg->n) {
		al_set_error(err, AL_TOO_LARGE, "more than %zu %s: the answer "
		    "is not collected in part", pg->max, pg->what);
		return -1;
	}
	if (pg->v == NULL || pg->n + more + 1 > pg->cap) {
		size_t cap = pg->n + more + 1;
		void *nv;

		if (cap < 2 * pg->cap)
			cap = 2 * pg->cap;
		if (cap > pg->max + 1)
			cap = pg->max + 1;
		if ((nv = realloc(pg->v, cap * pg->elem)) == NULL) {
			al_set_error(err, AL_IO, "out of memory");
			return -1;
		}
		pg->v = nv;
		pg->cap = cap;
	}
	memset((char *)pg->v + pg->n * pg->elem, 0, (more + 1) * pg->elem);
	return 0;
}

/*
 * Takes the next page's token. A page without elements that still asks for
 * more would loop for ever: that is the daemon's error.
 */
static int
pages_next(struct pages *pg, const char *token, size_t got,
    struct al_error *err)
{
	free(pg->token);
	pg->token = NULL;
	if (token == NULL || token[0] == '\0')
		return 0;
	if (got == 0) {
		al_set_error(err, AL_PROTOCOL, "an empty page of %s with a "
		    "continuation token", pg->what);
		return -1;
	}
	if ((pg->token = strdup(token)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	return 0;
}

/* Room for n entries of elem bytes at *v (grown by realloc); -1 OOM. */
static int
side_grow(void **v, size_t *cap, size_t n, size_t elem, struct al_error *err)
{
	void *g;

	if (n <= *cap)
		return 0;
	if ((g = realloc(*v, n * elem)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	memset((char *)g + *cap * elem, 0, (n - *cap) * elem);
	*v = g;
	*cap = n;
	return 0;
}

static int
do_list(struct al_client *c, bool all, struct al_lane **lanes,
    struct al_lane_net **nets, struct al_lane_secrets **secs, size_t *n,
    struct al_error *err)
{
	struct pages pg = { .elem = sizeof(struct al_lane), .max = AL_LIST_MAX,
	    .what = "lanes" };
	struct al_lane_net *nv = NULL;
	struct al_lane_secrets *sv = NULL;
	size_t ncap = 0, scap = 0;
	int rc = -1;

	do {
		AlRequest req = AGENTLANE__V1__REQUEST__INIT;
		Agentlane__V1__ListLanes ll = AGENTLANE__V1__LIST_LANES__INIT;
		const Agentlane__V1__LaneList *list;
		AlResponse *resp;

		ll.all = all;
		ll.page_token = pg.token != NULL ? pg.token : "";
		req.body_case = AGENTLANE__V1__REQUEST__BODY_LIST_LANES;
		req.list_lanes = &ll;
		/* Each page on a new connection, as docs/protocol.md says. */
		if ((resp = call(c, &req, NULL, err)) == NULL)
			goto out;
		if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_LANE_LIST) {
			al_error_from_response(err, resp);
			al_response_free(resp);
			goto out;
		}
		list = resp->lane_list;
		if (pages_grow(&pg, list->n_lanes, err) == -1 ||
		    pages_next(&pg, list->next_page_token, list->n_lanes,
		    err) == -1) {
			al_response_free(resp);
			goto out;
		}
		/* pages_grow bounded pg.n + n_lanes by AL_LIST_MAX. */
		if ((nets != NULL && side_grow((void **)&nv, &ncap, pg.n +
		    list->n_lanes, sizeof *nv, err) == -1) || (secs != NULL &&
		    side_grow((void **)&sv, &scap, pg.n + list->n_lanes,
		    sizeof *sv, err) == -1)) {
			al_response_free(resp);
			goto out;
		}
		for (size_t i = 0; i < list->n_lanes; i++) {
			if (nets != NULL)
				al_lane_net_from_proto(&nv[pg.n],
				    list->lanes[i]);
			if (secs != NULL && secrets_from_proto(&sv[pg.n],
			    list->lanes[i], err) == -1) {
				al_response_free(resp);
				goto out;
			}
			al_lane_from_proto(&((struct al_lane *)pg.v)[pg.n++],
			    list->lanes[i]);
		}
		al_response_free(resp);
	} while (pg.token != NULL);
	*lanes = pg.v;
	*n = pg.n;
	if (nets != NULL)
		*nets = nv;
	if (secs != NULL)
		*secs = sv;
	nv = NULL;
	sv = NULL;
	pg.v = NULL;
	rc = 0;
out:
	al_lane_secrets_free(sv, scap);
	free(nv);
	free(pg.token);
	free(pg.v);
	return rc;
}

AL_API enum al_code
al_list(struct al_client *c, bool all, struct al_lane **lanes, size_t *n,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	*lanes = NULL;
	*n = 0;
	return al_result(do_list(c, all, lanes, NULL, NULL, n, err), err);
}

AL_API enum al_code
al_list_net(struct al_client *c, bool all, struct al_lane **lanes,
    struct al_lane_net **nets, size_t *n, struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	*lanes = NULL;
	*nets = NULL;
	*n = 0;
	return al_result(do_list(c, all, lanes, nets, NULL, n, err), err);
}

AL_API enum al_code
al_list_secrets(struct al_client *c, bool all, struct al_lane **lanes,
    struct al_lane_net **nets, struct al_lane_secrets **secrets, size_t *n,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	*lanes = NULL;
	if (nets != NULL)
		*nets = NULL;
	*secrets = NULL;
	*n = 0;
	return al_result(do_list(c, all, lanes, nets, secrets, n, err), err);
}

AL_API void
al_lane_nets_free(struct al_lane_net *nets)
{
	free(nets);
}

AL_API void
al_lanes_free(struct al_lane *lanes)
{
	free(lanes);
}

static int
do_extend(struct al_client *c, const char *name, uint64_t by_s,
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

static int
do_events(struct al_client *c, const char *name, struct al_event **events,
    size_t *n, struct al_error *err)
{
	struct pages pg = { .elem = sizeof(struct al_event),
	    .max = AL_EVENTS_MAX, .what = "events" };
	int rc = -1;

	do {
		AlRequest req = AGENTLANE__V1__REQUEST__INIT;
		Agentlane__V1__GetEvents ge = AGENTLANE__V1__GET_EVENTS__INIT;
		const Agentlane__V1__EventList *list;
		AlResponse *resp;

		ge.lane = (char *)name;
		ge.page_token = pg.token != NULL ? pg.token : "";
		req.body_case = AGENTLANE__V1__REQUEST__BODY_GET_EVENTS;
		req.get_events = &ge;
		if ((resp = call(c, &req, NULL, err)) == NULL)
			goto out;
		if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_EVENT_LIST) {
			al_error_from_response(err, resp);
			al_response_free(resp);
			goto out;
		}
		list = resp->event_list;
		if (pages_grow(&pg, list->n_events, err) == -1 ||
		    pages_next(&pg, list->next_page_token, list->n_events,
		    err) == -1) {
			al_response_free(resp);
			goto out;
		}
		for (size_t i = 0; i < list->n_events; i++) {
			const Agentlane__V1__Event *e = list->events[i];
			struct al_event *v = &((struct al_event *)pg.v)[pg.n++];

			v->time_ms = e->time_ms;
			snprintf(v->lane, sizeof v->lane, "%s",
			    e->lane != NULL ? e->lane : "");
			snprintf(v->event, sizeof v->event, "%s",
			    e->event != NULL ? e->event : "");
			snprintf(v->detail, sizeof v->detail, "%s",
			    e->detail != NULL ? e->detail : "");
		}
		al_response_free(resp);
	} while (pg.token != NULL);
	*events = pg.v;
	*n = pg.n;
	pg.v = NULL;
	rc = 0;
out:
	free(pg.token);
	free(pg.v);
	return rc;
}

AL_API enum al_code
al_events(struct al_client *c, const char *name, struct al_event **events,
    size_t *n, struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	*events = NULL;
	*n = 0;
	return al_result(do_events(c, name, events, n, err), err);
}

AL_API void
al_events_free(struct al_event *events)
{
	free(events);
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

static int
do_reap(struct al_client *c, bool delete_orphans, struct al_reap_report *rep,
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

AL_API void
al_reap_report_free(struct al_reap_report *rep)
{
	free(rep->orphans);
	free(rep->deleted_orphans);
	free(rep->destroyed);
	free(rep->pending);
	memset(rep, 0, sizeof *rep);
}

AL_API enum al_code
al_create(struct al_client *c, const struct al_create_opts *o,
    struct al_lane *out, struct al_error *err)
{
	struct al_create_opts opts;
	struct al_error local;

	err = al_error_begin(err, &local);
	if (o != NULL) {
		if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
			return al_result(-1, err);
		o = &opts;
	}
	return al_result(do_create(c, o, out, NULL, err), err);
}

AL_API enum al_code
al_create_owned(struct al_client *c, const struct al_create_opts *o,
    struct al_lane *out, struct al_owner **ownerp, struct al_error *err)
{
	struct al_create_opts opts;
	struct al_error local;
	struct al_owner *ow;

	err = al_error_begin(err, &local);
	*ownerp = NULL;
	if (o != NULL) {
		if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
			return al_result(-1, err);
		o = &opts;
	}
	if ((ow = calloc(1, sizeof *ow)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return al_result(-1, err);
	}
	if (do_create(c, o, out, &ow->conn, err) == -1) {
		free(ow);
		return al_result(-1, err);
	}
	/* The connection outlives this call and its err. */
	ow->conn.err = NULL;
	*ownerp = ow;
	return AL_OK;
}

AL_API void
al_owner_close(struct al_owner *ow)
{
	if (ow == NULL)
		return;
	al_conn_close(&ow->conn);
	free(ow);
}

AL_API enum al_code
al_get(struct al_client *c, const char *name, struct al_lane *out,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_get(c, name, out, NULL, NULL, err), err);
}

AL_API enum al_code
al_get_net(struct al_client *c, const char *name, struct al_lane *out,
    struct al_lane_net *net, struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_get(c, name, out, net, NULL, err), err);
}

AL_API enum al_code
al_get_secrets(struct al_client *c, const char *name, struct al_lane *out,
    struct al_lane_net *net, struct al_lane_secrets **secrets,
    struct al_error *err)
{
	struct al_error local;
	int rc;

	err = al_error_begin(err, &local);
	if ((*secrets = calloc(1, sizeof **secrets)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return al_result(-1, err);
	}
	if ((rc = do_get(c, name, out, net, *secrets, err)) == -1) {
		al_lane_secrets_free(*secrets, 1);
		*secrets = NULL;
	}
	return al_result(rc, err);
}

AL_API enum al_code
al_destroy(struct al_client *c, const char *name, struct al_lane *out,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_destroy(c, name, out, err), err);
}

AL_API enum al_code
al_extend(struct al_client *c, const char *name, uint64_t by_s,
    struct al_lane *out, bool *capped, struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_extend(c, name, by_s, out, capped, err), err);
}

AL_API enum al_code
al_reap(struct al_client *c, bool delete_orphans, struct al_reap_report *rep,
    struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_reap(c, delete_orphans, rep, err), err);
}
