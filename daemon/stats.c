/*
 * GetStats: each lane's resource use, read in its guest. A round runs the
 * stats script (statsparse.c) on every lane's exec channel at once, waits
 * for them all (each bounded in time and bytes), and answers with one
 * StatsList, split over frames when it does not fit one. CPU use is the
 * difference between two rounds, so the call starts with a silent round
 * and answers one interval later; a stream then answers every interval
 * until its client closes the connection.
 *
 * Reading stats is not lane activity: it never touches a lane's idle
 * clock, holds no lane activity (a destroy does not wait for it) and is not
 * in the audit trail. A lane destroyed mid-round just reports why.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "gchan.h"
#include "gexec.h"
#include "laned.h"
#include "lane.h"
#include "lanenet.h"
#include "log.h"
#include "registry.h"
#include "stats.h"
#include "statsparse.h"
#include "util.h"

#define STATS_INTERVAL_DEFAULT_MS 1000u
#define STATS_INTERVAL_MIN_MS 200u
#define STATS_INTERVAL_MAX_MS 60000u
/* A guest that has not answered a round within this is reported so. */
#define STATS_ROUND_TIMEOUT_MS 10000u
/* The lanes one call follows: GetStats names at most this many. */
#define STATS_LANES_MAX 256u

struct stats_call;

struct stats_lane {
	struct stats_call *call;
	char name[LANE_NAME_SIZE];
	char alias[LANE_ALIAS_SIZE];
	struct gexec *g;		/* in flight this round */
	char out[STATS_OUTPUT_MAX + 1];
	size_t len;
	bool in_round;			/* asked (or reported) this round */
	bool have_prev;
	struct stats_sample prev, cur;
	struct stats_limits limits;	/* the lane's, when it was asked */
	/* This round's answer. */
	bool ok;
	int code;
	char error[256];
};

struct stats_call {
	struct laned *d;
	struct conn *c;
	bool stream;
	bool all;			/* every live lane, found each round */
	uint64_t interval_ms;
	unsigned round;
	struct stats_lane **lanes;
	size_t nlanes;
	size_t pending;			/* execs in flight */
	struct event *timer;		/* the next round */
	struct event *timeout;		/* this round's guests */
	bool in_callback;		/* a round may not end the call inside */
};

static void stats_round(struct stats_call *);

static void
lane_error(struct stats_lane *sl, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
lane_error(struct stats_lane *sl, int code, const char *fmt, ...)
{
	va_list ap;

	sl->ok = false;
	sl->code = code;
	va_start(ap, fmt);
	vsnprintf(sl->error, sizeof sl->error, fmt, ap);
	va_end(ap);
	str_sanitize(sl->error);
}

static void
stats_free(struct stats_call *sc)
{
	for (size_t i = 0; i < sc->nlanes; i++) {
		if (sc->lanes[i]->g != NULL)
			gexec_abort(sc->lanes[i]->g);
		free(sc->lanes[i]);
	}
	free(sc->lanes);
	if (sc->timer != NULL)
		event_free(sc->timer);
	if (sc->timeout != NULL)
		event_free(sc->timeout);
	free(sc);
}

static void
stats_closed(struct conn *c, void *ctx)
{
	struct stats_call *sc = ctx;

	sc->c = NULL;
	stats_free(sc);
}

static const struct conn_handler stats_conn_handler = {
	.closed = stats_closed,
};

static struct stats_lane *
stats_add(struct stats_call *sc, const char *name)
{
	struct lane_record rec;
	struct stats_lane *sl;

	for (size_t i = 0; i < sc->nlanes; i++)
		if (strcmp(sc->lanes[i]->name, name) == 0)
			return sc->lanes[i];
	sc->lanes = xreallocarray(sc->lanes, sc->nlanes + 1, sizeof *sc->lanes);
	sl = xcalloc(1, sizeof *sl);
	sl->call = sc;
	str_copy(sl->name, name, sizeof sl->name);
	/* A lane's alias is set at create and never changes: read once. */
	if (registry_lane_get(sc->d->reg, name, &rec) == REG_OK)
		str_copy(sl->alias, rec.alias, sizeof sl->alias);
	sc->lanes[sc->nlanes++] = sl;
	return sl;
}

/* ---- one lane's guest ---- */

static void stats_lane_done(struct stats_lane *);

static void
stats_output(struct gexec *g, int stream, const uint8_t *data, size_t len,
    void *arg)
{
	struct stats_lane *sl = arg;

	if (stream != 1)
		return;		/* stderr: the exit status says enough */
	if (len > STATS_OUTPUT_MAX - sl->len) {
		/*
		 * Past the bound: nothing more is kept or read. The guest's
		 * command is killed and the lane answers TOO_LARGE.
		 */
		gexec_abort(sl->g);
		sl->g = NULL;
		lane_error(sl, AGENTLANE__V1__ERROR_CODE__TOO_LARGE, "the guest "
		    "printed more than %u bytes of stats", STATS_OUTPUT_MAX);
		stats_lane_done(sl);
		return;
	}
	memcpy(sl->out + sl->len, data, len);
	sl->len += len;
}

static void
stats_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	struct stats_lane *sl = arg;
	char st[32], why[160];

	sl->g = NULL;
	if (r->end == GEXEC_FAILED)
		lane_error(sl, r->error, "%s", r->message);
	else if (r->end != GEXEC_EXITED || r->code != 0)
		lane_error(sl, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, "the "
		    "guest's stats script failed (%s)", gexec_status(r, st,
		    sizeof st));
	else if (stats_parse(sl->out, sl->len, &sl->cur, why,
	    sizeof why) == -1)
		lane_error(sl, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, "the "
		    "guest's stats do not read as Linux's: %s", why);
	else
		sl->ok = true;
	stats_lane_done(sl);
}

static const struct gexec_ops stats_gexec_ops = {
	.output = stats_output,
	.done = stats_done,
};

/*
 * What the lane physically has, which its guest's figures must be within.
 * A driver whose guests have no network is the test simulator (lanenet.h),
 * whose guests are sandboxes on this host's kernel: /proc there shows the
 * host's CPUs and memory, and df the host file system the workspace is
 * on. Their limits are then the host's CPUs and memory, and no disk size
 * is known (a disk figure must still fit 64 bits in bytes).
 */
static void
stats_limits_of(struct laned *d, const struct lane *l,
    struct stats_limits *lim)
{
	long cpus, pages, pagesize;
	char note[8];

	/* 32-bit shapes shifted in 64 bits: no overflow. */
	lim->cpus = l->cpus;
	lim->memory_bytes = (uint64_t)l->memory_mib << 20;
	lim->disk_bytes = (uint64_t)l->disk_gib << 30;
	if (!lanenet_guest_unenforceable(d, note, sizeof note))
		return;
	cpus = sysconf(_SC_NPROCESSORS_CONF);
	pages = sysconf(_SC_PHYS_PAGES);
	pagesize = sysconf(_SC_PAGESIZE);
	if (cpus > 0 && (uint64_t)cpus <= UINT32_MAX)
		lim->cpus = (uint32_t)cpus;
	if (pages > 0 && pagesize > 0 && !stats_mul_u64((uint64_t)pages,
	    (uint64_t)pagesize, &lim->memory_bytes))
		lim->memory_bytes = UINT64_MAX;
	lim->disk_bytes = UINT64_MAX;
}

/* Starts the lane's script, or says why it cannot run. */
static void
stats_ask(struct stats_call *sc, struct stats_lane *sl)
{
	struct laned *d = sc->d;
	struct lane *l = lane_find(d, sl->name);
	struct gexec_bytes argv[] = {
		{ (const uint8_t *)"/bin/sh", 7 },
		{ (const uint8_t *)"-c", 2 },
		{ (const uint8_t *)stats_script, 0 },
	};
	struct gexec_spec spec = {
		.argv = argv, .argc = 3, .stdin = false, .channel = true,
		.what = "stats",
	};
	char err[256];

	argv[2].len = strlen(stats_script);
	sl->in_round = true;
	sl->ok = false;
	sl->len = 0;
	if (l == NULL) {
		lane_error(sl, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "the lane has ended");
		return;
	}
	if (l->state != LANE_READY || l->step == LANE_STEP_COMMIT_WAIT ||
	    l->destroy_pending) {
		lane_error(sl, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "the lane is %s, not ready", l->step ==
		    LANE_STEP_COMMIT_WAIT ? "being destroyed" :
		    wire_lane_state_name((int)l->state));
		return;
	}
	stats_limits_of(d, l, &sl->limits);
	spec.lane = l->name;
	spec.cwd = l->workspace;
	sl->g = gchan_exec(d->base, &d->procs, d->lima, &l->chan, &spec,
	    &stats_gexec_ops, sl, err, sizeof err);
	if (sl->g == NULL) {
		lane_error(sl, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, "%s",
		    err);
		return;
	}
	sc->pending++;
}

/* ---- answers ---- */

static void
stats_fill(struct stats_call *sc, const struct stats_lane *sl,
    Agentlane__V1__LaneStats *ls)
{
	struct lane *l = lane_find(sc->d, sl->name);
	struct stats_figures f;
	unsigned refused;
	char why[256];

	ls->name = (char *)sl->name;
	ls->alias = (char *)sl->alias;
	if (l != NULL) {
		ls->state = (Agentlane__V1__LaneState)l->state;
		ls->memory_limit_bytes = (uint64_t)l->memory_mib << 20;
		ls->disk_limit_bytes = (uint64_t)l->disk_gib << 30;
	} else
		ls->state = AGENTLANE__V1__LANE_STATE__DESTROYED;
	if (!sl->ok) {
		ls->error_code = (Agentlane__V1__ErrorCode)sl->code;
		ls->error = (char *)sl->error;
		return;
	}
	refused = stats_figures(sl->have_prev ? &sl->prev : NULL, &sl->cur,
	    &sl->limits, &f, why, sizeof why);
	/*
	 * Once per lane, whatever the calls and rounds: a guest that lies
	 * every second does not flood the log. why holds only numbers.
	 */
	if (refused != 0 && l != NULL && !l->stats_refusal_logged) {
		log_warnx("lane %s: stats refused what its guest reported, "
		    "shown unknown: %s", sl->name, why);
		l->stats_refusal_logged = true;
	}
	ls->cpus = f.cpus;
	ls->cpus_unknown = !f.cpus_known;
	ls->cpu_known = f.cpu_known;
	ls->cpu_percent = f.cpu_percent;
	ls->memory_used_bytes = f.memory_used_bytes;
	ls->memory_total_bytes = f.memory_total_bytes;
	ls->memory_unknown = !f.memory_known;
	ls->disk_used_bytes = f.disk_used_bytes;
	ls->disk_total_bytes = f.disk_total_bytes;
	ls->disk_unknown = !f.disk_known;
	ls->processes = f.procs;
	ls->processes_unknown = !f.procs_known;
	ls->uptime_ms = f.uptime_ms;
}

static size_t
stats_list_size(Agentlane__V1__LaneStats **v, size_t n, int64_t now,
    bool more)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__StatsList list = AGENTLANE__V1__STATS_LIST__INIT;

	list.lanes = v;
	list.n_lanes = n;
	list.time_ms = now;
	list.more = more;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_STATS_LIST;
	resp.stats_list = &list;
	return agentlane__v1__response__get_packed_size(&resp);
}

/* The round's lanes, as many frames as the frame cap makes them. */
static void
stats_send(struct stats_call *sc)
{
	Agentlane__V1__LaneStats *ls, **v;
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__StatsList list = AGENTLANE__V1__STATS_LIST__INIT;
	int64_t now = time_now_ms();
	size_t n = 0, first = 0, k = 0;

	ls = xcalloc(sc->nlanes > 0 ? sc->nlanes : 1, sizeof *ls);
	v = xcalloc(sc->nlanes > 0 ? sc->nlanes : 1, sizeof *v);
	for (size_t i = 0; i < sc->nlanes; i++) {
		if (!sc->lanes[i]->in_round)
			continue;
		agentlane__v1__lane_stats__init(&ls[n]);
		stats_fill(sc, sc->lanes[i], &ls[n]);
		v[n] = &ls[n];
		n++;
	}
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_STATS_LIST;
	resp.stats_list = &list;
	list.time_ms = now;
	/* Whole lanes per frame, at least one: one fits the smallest cap. */
	do {
		k = first < n ? first + 1 : first;
		while (k < n && stats_list_size(v + first, k + 1 - first, now,
		    true) <= sc->d->cfg.max_frame_bytes)
			k++;
		list.lanes = v + first;
		list.n_lanes = k - first;
		list.more = k < n;
		(void)conn_send(sc->c, &resp);
		first = k;
	} while (first < n);
	free(v);
	free(ls);
}

/* Every lane answered (or could not be asked): report, then go on. */
static void
stats_round_end(struct stats_call *sc)
{
	struct timeval tv = tv_from_ms(sc->interval_ms);
	bool answer = sc->round > 0;

	event_del(sc->timeout);
	if (answer) {
		/*
		 * A client that does not read a stream loses frames, not
		 * the daemon's memory.
		 */
		if (conn_output_len(sc->c) < CONN_OUTPUT_HIGH)
			stats_send(sc);
		else
			log_debug("stats: the client is not reading; a "
			    "sample dropped");
	}
	for (size_t i = 0; i < sc->nlanes; i++) {
		struct stats_lane *sl = sc->lanes[i];

		if (sl->ok) {
			sl->prev = sl->cur;
			sl->have_prev = true;
		} else if (sl->in_round)
			sl->have_prev = false;
		sl->in_round = false;
	}
	sc->round++;
	if (answer && !sc->stream) {
		conn_set_handler(sc->c, NULL, NULL);
		conn_finish(sc->c);
		stats_free(sc);
		return;
	}
	if (evtimer_add(sc->timer, &tv) != 0)
		fatalx("evtimer_add");
}

static void
stats_lane_done(struct stats_lane *sl)
{
	struct stats_call *sc = sl->call;

	if (--sc->pending == 0 && !sc->in_callback)
		stats_round_end(sc);
}

static void
stats_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct stats_call *sc = arg;

	for (size_t i = 0; i < sc->nlanes; i++) {
		struct stats_lane *sl = sc->lanes[i];

		if (sl->g == NULL)
			continue;
		gexec_abort(sl->g);
		sl->g = NULL;
		lane_error(sl, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
		    "the guest did not answer within %u s",
		    STATS_ROUND_TIMEOUT_MS / 1000);
		sc->pending--;
	}
	stats_round_end(sc);
}

static void
stats_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	stats_round(arg);
}

/* The lanes of every-lane mode: the live ones, pool lanes aside. */
static void
stats_refresh_all(struct stats_call *sc)
{
	struct lane *l;
	size_t keep = 0;

	TAILQ_FOREACH(l, &sc->d->lanes, entry)
		if (l->state != LANE_POOLED && sc->nlanes < STATS_LANES_MAX)
			(void)stats_add(sc, l->name);
	/* Lanes that have gone drop out of the list. */
	for (size_t i = 0; i < sc->nlanes; i++) {
		if (lane_find(sc->d, sc->lanes[i]->name) == NULL) {
			free(sc->lanes[i]);
			continue;
		}
		sc->lanes[keep++] = sc->lanes[i];
	}
	sc->nlanes = keep;
}

static void
stats_round(struct stats_call *sc)
{
	struct timeval tv = tv_from_ms(STATS_ROUND_TIMEOUT_MS);

	if (sc->all)
		stats_refresh_all(sc);
	/* Execs failing at once must not end the round before all began. */
	sc->in_callback = true;
	for (size_t i = 0; i < sc->nlanes; i++)
		stats_ask(sc, sc->lanes[i]);
	sc->in_callback = false;
	if (sc->pending == 0) {
		stats_round_end(sc);
		return;
	}
	if (evtimer_add(sc->timeout, &tv) != 0)
		fatalx("evtimer_add");
}

void
stats_handle(struct laned *d, struct conn *c, const Agentlane__V1__GetStats *req)
{
	struct stats_call *sc;
	struct lane_record rec;
	char name[LANE_NAME_SIZE];
	uint64_t iv = req->interval_ms != 0 ? req->interval_ms :
	    STATS_INTERVAL_DEFAULT_MS;

	if (iv < STATS_INTERVAL_MIN_MS || iv > STATS_INTERVAL_MAX_MS) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "a stats interval of %llu ms is outside %u..%u ms",
		    (unsigned long long)iv, STATS_INTERVAL_MIN_MS,
		    STATS_INTERVAL_MAX_MS);
		return;
	}
	if (req->n_lanes > STATS_LANES_MAX) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "stats of %zu lanes asked; at most %u", req->n_lanes,
		    STATS_LANES_MAX);
		return;
	}
	sc = xcalloc(1, sizeof *sc);
	sc->d = d;
	sc->c = c;
	sc->stream = req->stream;
	sc->interval_ms = iv;
	sc->all = req->n_lanes == 0;
	for (size_t i = 0; i < req->n_lanes; i++) {
		/* A lane no one has is the caller's mistake: NOT_FOUND. */
		if (!lane_resolve(d, c, req->lanes[i], name)) {
			stats_free(sc);
			return;
		}
		/* A whole name is taken as it is: it must be a lane's. */
		if (registry_lane_get(d->reg, name, &rec) == REG_NOT_FOUND) {
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
			    "no lane %s", name);
			stats_free(sc);
			return;
		}
		(void)stats_add(sc, name);
	}
	if ((sc->timer = evtimer_new(d->base, stats_timer_cb, sc)) == NULL ||
	    (sc->timeout = evtimer_new(d->base, stats_timeout_cb, sc)) == NULL)
		fatalx("evtimer_new");
	conn_set_handler(c, &stats_conn_handler, sc);
	stats_round(sc);
}
