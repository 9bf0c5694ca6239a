#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "config.h"
#include "conn.h"
#include "gchan.h"
#include "gexec.h"
#include "image.h"
#include "laned.h"
#include "lane.h"
#include "lanecheck.h"
#include "lanecreate.h"
#include "lanenet.h"
#include "laneproxy.h"
#include "lanesecret.h"
#include "secret.h"
#include "lima.h"
#include "log.h"
#include "netpolicy.h"
#include "registry.h"
#include "units.h"
#include "util.h"
#include "vm.h"

#define SETUP_OUTPUT_MAX 4096
/* The lane YAML: the template, the policy script, a CA certificate. */
#define LANE_YAML_MAX 16384
/* The registry keeps what the policy module bounds. */
_Static_assert(LANE_ALLOW_TEXT_MAX == NETPOLICY_ALLOW_TEXT_MAX,
    "allow list bounds differ");
_Static_assert(LANE_SECRETS_TEXT_MAX == LANESECRET_TEXT_MAX,
    "secret text bounds differ");

/*
 * Prepares the lane's writable workspace and proves the guest can run the
 * helper. The path is printed by the guest, so it is validated like any
 * other guest output.
 */
static const char setup_script[] =
    "mkdir -p \"$HOME/workspace\" && cd \"$HOME/workspace\" && pwd -P";

/*
 * A guest command of the create pipeline: the network policy check, then
 * the workspace setup; or the setup again over a pool lane's channel
 * reopened (SETUP_WARM). One at a time, in l->setup.
 */
enum setup_kind { SETUP_NETCHECK, SETUP_WORKSPACE, SETUP_WARM };

struct lane_setup {
	enum setup_kind kind;
	struct lane *lane;
	struct gexec *g;
	char out[SETUP_OUTPUT_MAX + 1];
	size_t len;
	bool overflow;
	struct event *timer;
};

static void lane_step_create(struct lane *);
static void lane_step_setup(struct lane *);
static bool setup_abort(struct lane *);
static void setup_run(struct lane *, enum setup_kind, const char *, size_t,
    const struct gexec_ops *);
static const struct gexec_ops setup_ops;

/* The pipeline failed: keep the evidence, then fail the creation. */
static void
create_fail(struct lane *l, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
create_fail(struct lane *l, int code, const char *fmt, ...)
{
	char msg[LANE_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	lane_keep_logs(l, NULL);
	lane_fail_creation(l, code, "%s", msg);
}

/* ---- Registration ---- */

/* The policy columns of a new row. */
static void
record_net(struct lane_record *rec, const struct lane_create_plan *plan)
{
	str_copy(rec->network, netpolicy_mode_name(
	    (enum netpolicy_mode)plan->net_mode), sizeof rec->network);
	str_copy(rec->allow, plan->allow, sizeof rec->allow);
	rec->sudo = plan->sudo;
}

/* A new lane: its row, its image hold, what vm_register inserts. */
struct lane_new {
	struct laned *d;
	struct lane_record rec;
	const struct lane_label *labels;
	size_t nlabels;
	const char *image;		/* "" for none */
	char inst[IMAGE_INSTANCE_SIZE];
};

static int
lane_insert(void *arg)
{
	struct lane_new *n = arg;

	return registry_lane_insert(n->d->reg, &n->rec, n->labels, n->nlabels);
}

/*
 * Holds the image a lane is cloned from (image rm refuses meanwhile, until
 * the clone returns), then commits the row in "creating" under a fresh
 * name: invariant 1, the row is durable before limactl hears the name.
 * 0, or -1 with the agentlane.v1.ErrorCode in *code and why in err.
 */
static int
lane_register(struct lane_new *n, int *code, char *err, size_t errlen)
{
	char holder[LANE_NAME_SIZE];
	uint32_t image_disk = 0;
	int rc;

	if (n->image[0] != '\0' && (*code = image_hold(n->d, n->image,
	    n->inst, &image_disk, err, errlen)) != 0)
		return -1;
	/* The clone has the image's disk: Lima can grow it, not shrink it. */
	if (n->rec.disk_gib < image_disk)
		n->rec.disk_gib = image_disk;
	n->rec.owner_uid = (uint32_t)n->d->uid;
	n->rec.state = LANE_CREATING;
	rc = vm_register(n->d, false, n->rec.name, sizeof n->rec.name,
	    lane_insert, n);
	if (rc == REG_OK)
		return 0;
	if (n->image[0] != '\0')
		image_release(n->d, n->image);
	*code = AGENTLANE__V1__ERROR_CODE__INTERNAL;
	if (rc == VM_NO_NAME)
		snprintf(err, errlen, "cannot read the OS random source");
	else if (rc == REG_TAKEN) {
		*code = AGENTLANE__V1__ERROR_CODE__ALREADY_EXISTS;
		if (registry_lane_by_alias(n->d->reg, n->rec.alias, holder) ==
		    REG_OK)
			snprintf(err, errlen, "the name %s is taken by lane %s",
			    n->rec.alias, holder);
		else
			snprintf(err, errlen, "the name %s is taken",
			    n->rec.alias);
	} else if (rc == REG_ERROR) {
		/* Not the request's fault: it may be tried again later. */
		*code = AGENTLANE__V1__ERROR_CODE__UNAVAILABLE;
		snprintf(err, errlen, "the registry cannot record a new lane "
		    "(%s)", registry_errmsg(n->d->reg));
	} else
		snprintf(err, errlen, "registry error: cannot register the "
		    "lane");
	return -1;
}

/* The runtime entry of a registered lane, holding its image. */
static struct lane *
lane_registered(struct lane_new *n)
{
	struct lane *l = lane_new(n->d, &n->rec);

	if (n->image[0] != '\0') {
		/* The audit trail keeps it across restarts (pool.c). */
		str_copy(l->image, n->image, sizeof l->image);
		str_copy(l->image_instance, n->inst, sizeof l->image_instance);
		l->image_held = true;
		lane_event(l, "image", l->image);
	}
	return l;
}

/* A new lane of that shape, its life (lifetime_ms) starting now. */
static void
lane_new_init(struct lane_new *n, struct laned *d, uint32_t cpus,
    uint32_t memory_mib, uint32_t disk_gib, uint64_t lifetime_ms)
{
	memset(n, 0, sizeof *n);
	n->d = d;
	n->rec.cpus = cpus;
	n->rec.memory_mib = memory_mib;
	n->rec.disk_gib = disk_gib;
	n->rec.created_at_ms = time_now_ms();
	n->rec.deadline_ms = n->rec.created_at_ms + (int64_t)lifetime_ms;
	n->image = "";
}

/*
 * The secrets of a new row: names, hosts and headers for the registry,
 * the values sealed with their placeholders into *sealed (the lane's,
 * once it is registered). False (c answered) if that failed; the plan's
 * set is gone either way.
 */
static bool
record_secrets(struct conn *c, struct lane_create_plan *plan,
    struct lane_record *rec, struct secret_set **sealed)
{
	char err[256];

	*sealed = NULL;
	if (plan->secrets == NULL)
		return true;
	if (lanesecret_text(plan->secrets, rec->secrets,
	    sizeof rec->secrets) == -1) {
		lanecheck_plan_clear(plan);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "the secrets' names, hosts and headers do not fit the "
		    "registry");
		return false;
	}
	*sealed = lanesecret_seal(plan->secrets, err, sizeof err);
	plan->secrets = NULL;
	if (*sealed == NULL) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL, "%s",
		    err);
		return false;
	}
	return true;
}

/*
 * The lane's events name its secrets, their hosts and their own headers
 * (never a value).
 */
void
lane_create_secrets_event(struct lane *l)
{
	char detail[LANE_SECRETS_TEXT_MAX + 64];

	for (size_t i = 0; l->px.secrets != NULL && i < l->px.secrets->n; i++) {
		const struct secret *sc = &l->px.secrets->v[i];
		size_t off;

		off = (size_t)snprintf(detail, sizeof detail, "%s for ",
		    sc->name);
		for (size_t k = 0; k < sc->nhosts && off < sizeof detail; k++)
			off += (size_t)snprintf(detail + off, sizeof detail - off,
			    "%s%s", k > 0 ? "," : "", sc->hosts[k]);
		for (size_t k = 0; k < sc->nheaders && off < sizeof detail; k++)
			off += (size_t)snprintf(detail + off, sizeof detail -
			    off, "%s%s", k > 0 ? "," : " in headers ",
			    sc->headers[k]);
		lane_event(l, "secret", detail);
	}
}

void
lane_create_start(struct laned *d, struct conn *c, lane_deliver_cb deliver,
    void *arg, struct lane_create_plan *plan)
{
	struct secret_set *sealed;
	struct lane_new n;
	struct lane *l;
	char err[256], mem[16], disk[16], life[32];
	int code;

	lane_new_init(&n, d, plan->cpus, plan->memory_mib, plan->disk_gib,
	    plan->lifetime_ms);
	n.rec.idle_timeout_ms = plan->idle_timeout_ms;
	record_net(&n.rec, plan);
	str_copy(n.rec.alias, plan->alias, sizeof n.rec.alias);
	n.rec.owned = plan->owned;
	n.labels = plan->labels;
	n.nlabels = plan->nlabels;
	n.image = plan->image;
	if (!record_secrets(c, plan, &n.rec, &sealed))
		return;
	if (lane_register(&n, &code, err, sizeof err) == -1) {
		secret_set_free(sealed);
		conn_send_error(c, code, "%s", err);
		return;
	}
	units_format_bytes((uint64_t)n.rec.memory_mib << 20, mem, sizeof mem);
	units_format_bytes((uint64_t)n.rec.disk_gib << 30, disk, sizeof disk);
	units_format_duration(plan->lifetime_ms, life, sizeof life);
	log_info("lane %s: registered (cpus %u, memory %s, disk %s, lifetime "
	    "%s)", n.rec.name, n.rec.cpus, mem, disk, life);
	l = lane_registered(&n);
	l->create_detached = plan->detach;
	l->px.secrets = sealed;
	if (plan->alias[0] != '\0')
		lane_event(l, "alias", plan->alias);
	lane_create_secrets_event(l);
	lane_waiter_add(l, c, LANE_WAIT_CREATE, deliver, arg);
	lane_waiters_progress(l, "registered", l->name);
	lane_changed(d);
	lane_step_create(l);
}

int
lane_create_pooled(struct laned *d, const struct pool_shape *shape,
    uint64_t max_age_ms, char *name, size_t namelen)
{
	struct lane_create_plan np;
	struct lane_new n;
	struct lane *l;
	char err[256];
	int code;

	/* The reaper recycles it at its deadline if nobody took it. */
	lane_new_init(&n, d, shape->cpus, shape->memory_mib, shape->disk_gib,
	    max_age_ms);
	/* Pool lanes have the configured mode; pool_take matches it. */
	memset(&np, 0, sizeof np);
	if (lanecheck_net_plan(&d->cfg, NULL, &np, err, sizeof err) != 0) {
		log_warnx("warm pool: %s", err);
		return -1;
	}
	/* Its proxy starts with an empty list: its taker's comes later. */
	np.allow[0] = '\0';
	record_net(&n.rec, &np);
	n.rec.pooled = true;
	n.image = shape->image;
	if (lane_register(&n, &code, err, sizeof err) == -1) {
		log_warnx("warm pool: cannot register a lane: %s", err);
		return -1;
	}
	log_info("lane %s: registered for the warm pool (cpus %u, memory %u "
	    "MiB, disk %u GiB%s%s)", n.rec.name, n.rec.cpus, n.rec.memory_mib,
	    n.rec.disk_gib, shape->image[0] != '\0' ? ", image " : "",
	    shape->image);
	str_copy(name, n.rec.name, namelen);
	l = lane_registered(&n);
	l->state = LANE_POOLED;
	lane_changed(d);
	lane_step_create(l);
	return 0;
}

/* ---- Guest setup ---- */

static void
setup_free(struct lane_setup *s)
{
	if (s->timer != NULL)
		event_free(s->timer);
	free(s);
}

/* The setup step ends: the lane forgets it before anything else runs. */
static void
setup_end(struct lane *l)
{
	struct lane_setup *s = l->setup;

	l->setup = NULL;
	l->step = LANE_STEP_NONE;
	l->step_abort = NULL;
	setup_free(s);
}

/* The setup's step_abort: the guest command stops, with no callback. */
static bool
setup_abort(struct lane *l)
{
	if (l->step == LANE_STEP_SETUP) {
		gexec_abort(l->setup->g);
		setup_end(l);
	}
	return false;
}

static void
setup_output(struct gexec *g, int stream, const uint8_t *data, size_t len,
    void *arg)
{
	struct lane_setup *s = arg;

	if (stream != 1 || s->overflow)
		return;
	if (s->len + len > SETUP_OUTPUT_MAX) {
		s->overflow = true;
		return;
	}
	memcpy(s->out + s->len, data, len);
	s->len += len;
	s->out[s->len] = '\0';
}

/* The row says ready: only now may the creator hear of it. */
static void
create_ready(struct lane *l)
{
	lane_waiters_progress(l, "ready", "");
	lane_waiters_finish(l, LANE_WAIT_CREATE, 0, NULL);
	/*
	 * An owned lane whose creator left, or could not be answered, has
	 * nobody to end it: it goes now rather than at its deadline.
	 */
	if (l->owned && l->owner == NULL) {
		log_info("lane %s: ready, but its owner is gone", l->name);
		lane_destroy(l, AGENTLANE__V1__ERROR_CODE__CANCELLED,
		    "its owning client disconnected");
		return;
	}
	lane_changed(l->d);
}

/* The registry row is ready (and still pooled); memory stays pooled. */
static void
pool_lane_booted(struct lane *l)
{
	l->state = LANE_POOLED;
	log_info("lane %s: booted for the warm pool", l->name);
	lane_changed(l->d);
}

/* ---- A pool lane's exec channel, reopened before hand-over ---- */

/*
 * The channel could not be reopened. A lane still in the pool is
 * destroyed (the next create takes another, or boots cold, and the pool
 * refills); one a create took while it reopened fails that creation.
 * Either way it is never handed over with no channel.
 */
static void
warm_fail(struct lane *l, int code, const char *why)
{
	char detail[LANE_ERROR_MAX];

	snprintf(detail, sizeof detail, "could not be reopened: %s", why);
	str_sanitize(detail);
	lane_event(l, "channel", detail);
	if (l->state == LANE_CREATING) {
		create_fail(l, code, "the warm pool lane's exec channel %s",
		    detail);
		return;
	}
	log_warnx("lane %s: its exec channel %s; destroying it", l->name,
	    detail);
	lane_destroy(l, code, "its exec channel could not be reopened");
}

static void
warm_done(struct lane *l, const struct gexec_result *r)
{
	char why[LANE_ERROR_MAX], st[32];

	if (r->end != GEXEC_EXITED || r->code != 0) {
		if (r->end == GEXEC_FAILED)
			str_copy(why, r->message, sizeof why);
		else
			snprintf(why, sizeof why, "the workspace check over it "
			    "ended %s", gexec_status(r, st, sizeof st));
		warm_fail(l, r->end == GEXEC_FAILED ? r->error :
		    AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, why);
		return;
	}
	lane_event(l, "channel", "reopened");
	log_info("lane %s: its exec channel is open again", l->name);
	if (l->state == LANE_CREATING) {
		/* Taken while it reopened: its row is ready since the take. */
		l->state = LANE_READY;
		create_ready(l);
		return;
	}
	lane_changed(l->d);	/* a create may take it now */
}

/*
 * A booted pool lane's channel died while it waited (its watcher, below,
 * before anything else hears of it): it reopens now, so that a create
 * finds the lane warm. A lane taken already opens another with its next
 * exec, as any lane does.
 */
static void
lane_chan_died(void *arg, const char *why)
{
	struct lane *l = arg;
	char detail[LANE_ERROR_MAX];

	if (!lane_pool_booted(l) || l->step != LANE_STEP_NONE ||
	    l->destroy_pending || l->d->shutting_down)
		return;
	log_warnx("lane %s: its exec channel died in the warm pool (%s); "
	    "reopening it", l->name, why);
	snprintf(detail, sizeof detail, "died in the warm pool (%s); "
	    "reopening", why);
	lane_create_warm(l, detail);
}

/*
 * The workspace setup runs over the lane's exec channel, which it opens:
 * a pool lane then waits with its channel open and its helper started,
 * and the first exec after the hand-over costs one round trip. The
 * channel's death is watched (lane_chan_died).
 */
static struct gexec *
setup_on_channel(struct lane *l, const struct gexec_spec *spec,
    const struct gexec_ops *ops, void *arg, char *err, size_t errlen)
{
	struct gexec *g;

	g = gchan_exec(l->d->base, &l->d->procs, l->d->lima, &l->chan, spec,
	    ops, arg, err, errlen);
	if (g != NULL && l->chan != NULL)
		gchan_watch(l->chan, lane_chan_died, l);
	return g;
}

void
lane_create_warm(struct lane *l, const char *why)
{
	lane_event(l, "channel", why);
	setup_run(l, SETUP_WARM, setup_script, sizeof setup_script - 1,
	    &setup_ops);
}

static void
setup_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	struct lane_setup *s = arg;
	struct lane *l = s->lane;
	struct lane_change ch;
	char ws[SETUP_OUTPUT_MAX + 1], st[32];
	bool overflow = s->overflow, warm = s->kind == SETUP_WARM;
	size_t n = s->len;

	memcpy(ws, s->out, n + 1);
	setup_end(l);
	if (l->destroy_pending) {
		lane_fail_creation(l, l->destroy_code, "destroyed during "
		    "creation: %s", l->destroy_reason);
		return;
	}
	if (warm) {
		warm_done(l, r);
		return;
	}
	if (r->end != GEXEC_EXITED || r->code != 0) {
		if (r->end == GEXEC_FAILED)
			create_fail(l, r->error, "guest setup failed: %s",
			    r->message);
		else
			create_fail(l,
			    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
			    "guest setup failed (%s)",
			    gexec_status(r, st, sizeof st));
		return;
	}
	while (n > 0 && (ws[n - 1] == '\n' || ws[n - 1] == '\r'))
		ws[--n] = '\0';
	/* An absolute, printable, single-line path or nothing. */
	if (overflow || n == 0 || ws[0] != '/' || n >= LANE_WORKSPACE_MAX ||
	    strspn(ws, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789/._-+@,") != n) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "guest setup printed an unusable workspace path");
		return;
	}
	/* State, workspace and idle clock in one transaction. */
	memset(&ch, 0, sizeof ch);
	ch.to = LANE_READY;
	str_copy(ch.event, "ready", sizeof ch.event);
	snprintf(ch.detail, sizeof ch.detail, "workspace=%s", ws);
	ch.set_workspace = true;
	str_copy(ch.workspace, ws, sizeof ch.workspace);
	ch.last_activity_ms = time_now_ms();
	if (l->net_policy) {
		ch.set_net = true;
		str_copy(ch.net_policy, l->net_verdict, sizeof ch.net_policy);
		str_copy(ch.net_note, l->net_note, sizeof ch.net_note);
	}
	ch.then = create_ready;
	if (l->state == LANE_POOLED) {
		/* Booted for the pool: the row is ready and stays pooled. */
		str_copy(ch.event, "pooled", sizeof ch.event);
		ch.then = pool_lane_booted;
	}
	(void)lane_transition(l, &ch);
}

static void
setup_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lane_setup *s = arg;
	struct lane *l = s->lane;
	bool check = s->kind == SETUP_NETCHECK;
	enum setup_kind s_kind = s->kind;

	(void)setup_abort(l);
	if (s_kind == SETUP_WARM) {
		warm_fail(l, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
		    "no answer within the command timeout");
		return;
	}
	create_fail(l, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
	    "%s did not finish within %llu s", check ?
	    "the network policy check" : "guest setup",
	    (unsigned long long)(l->d->cfg.command_timeout_ms / 1000));
}

static const struct gexec_ops setup_ops = {
	.output = setup_output,
	.done = setup_done,
};

/* Runs script with /bin/sh in the guest as the lane's setup step. */
static void
setup_run(struct lane *l, enum setup_kind kind, const char *script,
    size_t len, const struct gexec_ops *ops)
{
	const char *what = kind == SETUP_NETCHECK ? "network policy check" :
	    kind == SETUP_WARM ? "exec channel reopening" : "guest setup";
	struct gexec_bytes argv[] = {
		{ (const uint8_t *)"/bin/sh", 7 },
		{ (const uint8_t *)"-c", 2 },
		{ (const uint8_t *)script, len },
	};
	struct gexec_spec spec = {
		.lane = l->name, .argv = argv, .argc = 3, .cwd = "",
		.stdin = false, .what = what,
	};
	struct lane_setup *s = xcalloc(1, sizeof *s);
	struct timeval tv = tv_from_ms(l->d->cfg.command_timeout_ms);
	char err[256];

	s->lane = l;
	s->kind = kind;
	if (kind == SETUP_NETCHECK)
		s->g = gexec_start(l->d->base, &l->d->procs, l->d->lima, &spec,
		    ops, s, err, sizeof err);
	else
		s->g = setup_on_channel(l, &spec, ops, s, err, sizeof err);
	if (s->g == NULL) {
		free(s);
		if (kind == SETUP_WARM)
			warm_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL, err);
		else
			create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "%s: %s", what, err);
		return;
	}
	l->setup = s;
	l->step = LANE_STEP_SETUP;
	l->step_abort = setup_abort;
	if ((s->timer = evtimer_new(l->d->base, setup_timeout_cb, s)) == NULL ||
	    evtimer_add(s->timer, &tv) != 0)
		fatalx("evtimer_add");
}

static void
lane_step_setup(struct lane *l)
{
	lane_waiters_progress(l, "setup", "preparing the guest workspace");
	setup_run(l, SETUP_WORKSPACE, setup_script, sizeof setup_script - 1,
	    &setup_ops);
}

/* ---- The network policy check ---- */

/*
 * How the policy holds: in the lane's events now, in its row with the
 * ready change (show, ls --json), which is retried like any transition
 * when the registry cannot write.
 */
static void
net_policy_record(struct lane *l, const char *policy, const char *note)
{
	char detail[LANE_NET_NOTE_MAX + 64];

	str_copy(l->net_verdict, policy, sizeof l->net_verdict);
	str_copy(l->net_note, note, sizeof l->net_note);
	snprintf(detail, sizeof detail, "%s %s: %s",
	    netpolicy_mode_name((enum netpolicy_mode)l->net_mode), policy, note);
	lane_event(l, "network", detail);
}

static void
netcheck_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	struct lane_setup *s = arg;
	struct lane *l = s->lane;
	char out[SETUP_OUTPUT_MAX + 1], st[32], note[LANE_NET_NOTE_MAX];
	size_t n = s->len;

	memcpy(out, s->out, n + 1);
	setup_end(l);
	if (l->destroy_pending) {
		lane_fail_creation(l, l->destroy_code, "destroyed during "
		    "creation: %s", l->destroy_reason);
		return;
	}
	/* The script's one line: "ok MODE" or "fail: WHY". */
	out[strcspn(out, "\n")] = '\0';
	str_sanitize(out);
	if (r->end == GEXEC_FAILED) {
		create_fail(l, r->error, "network policy check failed: "
		    "%s", r->message);
		return;
	}
	if (r->end != GEXEC_EXITED || r->code != 0 ||
	    strncmp(out, "ok ", 3) != 0) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "network policy check failed (%s): %.300s",
		    gexec_status(r, st, sizeof st), out[0] != '\0' ? out :
		    "no output");
		return;
	}
	if (l->sudo)
		snprintf(note, sizeof note, "advisory: the rules are loaded "
		    "and were checked, but the lane keeps guest root (--sudo) "
		    "and can unload them");
	else
		snprintf(note, sizeof note, "enforced: rules loaded at boot, "
		    "no guest root, 192.168.5.2 (host loopback) checked "
		    "unreachable before ready");
	net_policy_record(l, l->sudo ? "advisory" : "enforced", note);
	lane_step_setup(l);
}

static const struct gexec_ops netcheck_ops = {
	.output = setup_output,
	.done = netcheck_done,
};

/*
 * Before ready: the guest must show that the rules hold. The check runs
 * as the lane user and connects to the lane's own ssh port on the host
 * through 192.168.5.2, which must be dropped; it also needs the boot's
 * stamp and, unless sudo was kept, no passwordless sudo. Only a limactl
 * that reports guests without a network (the simulator) skips it, and
 * the lane then says "unenforced".
 */
static void
lane_step_netcheck(struct lane *l)
{
	char script[4096], note[LANE_NET_NOTE_MAX];
	uint16_t port;
	int n;

	if (!l->net_policy) {
		lane_step_setup(l);
		return;
	}
	if (lanenet_guest_unenforceable(l->d, note, sizeof note)) {
		net_policy_record(l, "unenforced", note);
		lane_step_setup(l);
		return;
	}
	if (lima_ssh_port(l->d->lima, l->name, &port) == -1) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
		    "network policy check: cannot read the lane's ssh port "
		    "from its ssh.config");
		return;
	}
	if ((n = netpolicy_check_script((enum netpolicy_mode)l->net_mode,
	    l->sudo, port, laneproxy_ca_pem(&l->px), script, sizeof script)) < 0) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "network policy check script too large");
		return;
	}
	lane_waiters_progress(l, "network", "checking the network policy");
	setup_run(l, SETUP_NETCHECK, script, (size_t)n, &netcheck_ops);
}

/* ---- limactl create and start ---- */

/*
 * limactl's own progress, from its stderr (--log-format=json), for the
 * creator: Lima downloads the image during create when its cache lacks it
 * (minutes on a first run: lima-cli.md §6.1), and the hostagent's
 * requirement waits say what a slow boot is doing.
 */
static void
limactl_line(const char *line, size_t len, void *arg)
{
	struct lane *l = arg;
	const char *phase = l->step == LANE_STEP_START ? "starting" :
	    "creating";
	char level[16], msg[512];

	if (!lima_log_line(l->d->lima, line, len, level, sizeof level, msg,
	    sizeof msg))
		return;
	if (strncmp(msg, "Attempting to download ", 23) == 0) {
		/* Said even for a cached image: only a download is news. */
		log_debug("lane %s: limactl: %s", l->name, msg);
		lane_waiters_progress(l, "downloading", msg + 23);
	} else if (strncmp(msg, "Downloaded ", 11) == 0) {
		log_info("lane %s: limactl: %s", l->name, msg);
		lane_waiters_progress(l, phase, "downloaded; preparing the disk");
	} else if (strncmp(msg, "Using cache ", 12) == 0)
		lane_waiters_progress(l, phase, "the image is in Lima's cache");
	else if (strncmp(msg, "[hostagent] Waiting for ", 24) == 0) {
		char said[256];

		lima_requirement_text(msg + 12, said, sizeof said);
		lane_waiters_progress(l, phase, said);
	}
}

/*
 * A creation step's limactl call returned. False when creation stops here:
 * the lane was destroyed meanwhile, or limactl failed (timeouts are
 * DEADLINE_EXCEEDED, other failures LIMA_FAILED with limactl's message).
 */
static bool
create_step_ok(struct lane *l, const struct vm_result *r, const char *verb)
{
	l->step = LANE_STEP_NONE;
	l->step_abort = NULL;
	if (l->destroy_pending) {
		lane_fail_creation(l, l->destroy_code, "destroyed during "
		    "creation: %s", l->destroy_reason);
		return false;
	}
	if (!r->ok) {
		/* Its stderr too: this is the evidence of what failed. */
		lane_keep_logs(l, r->stderr_tail);
		create_fail(l, r->code, "limactl %s failed: %s", verb, r->msg);
		return false;
	}
	return true;
}

/*
 * The step_abort of a limactl step: vm.c lets a create or clone finish
 * and kills a start; the step's callback follows either way.
 */
static bool
create_step_vm_abort(struct lane *l)
{
	return l->vm != NULL && vm_interrupt(l->vm);
}

/* The lane's step is now this limactl call. */
static void
create_step_vm(struct lane *l, enum lane_step step)
{
	l->step = step;
	l->step_abort = create_step_vm_abort;
}

static void
start_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct lane *l = arg;

	if (!create_step_ok(l, r, "start"))
		return;
	lane_event(l, "started", "");
	lane_step_netcheck(l);
}

static void lane_step_start(struct lane *);

static void
create_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct lane *l = arg;

	if (!create_step_ok(l, r, "create"))
		return;
	lane_event(l, "vm-created", "");
	lane_step_start(l);
}

/*
 * A clone of an image with Docker keeps user namespaces (rootless Docker
 * runs in them); every other lane loses them (netpolicy_yaml). The image
 * row says: an image built on one with Docker has it too. Unknown (no row
 * any more): the safe side, none.
 */
static bool
lane_has_docker(const struct lane *l)
{
	struct image_record img;

	return l->image[0] != '\0' &&
	    registry_image_get(l->d->reg, l->image, &img) == REG_OK && img.docker;
}

/* Renders the isolation template for the lane from its registry row. */
static int
render_yaml(struct lane *l, char *yaml, size_t len, char *err, size_t errlen)
{
	struct lima_lane_spec spec;
	struct lane_record rec;
	int n;

	if (registry_lane_get(l->d->reg, l->name, &rec) != REG_OK) {
		snprintf(err, errlen, "registry read failed");
		return -1;
	}
	memset(&spec, 0, sizeof spec);
	spec.userns = lane_has_docker(l);
	spec.cpus = rec.cpus;
	spec.memory_mib = rec.memory_mib;
	spec.disk_gib = rec.disk_gib;
	spec.has_policy = l->net_policy;
	spec.net_mode = (int)l->net_mode;
	spec.proxy_port = l->px.port;
	spec.sudo = l->sudo;
	/* Its certificate only: the key never leaves the daemon's memory. */
	spec.ca_pem = laneproxy_ca_pem(&l->px);
	if ((n = lima_yaml_render(l->d->lima, &spec, yaml, len)) < 0) {
		snprintf(err, errlen, "lane YAML too large");
		return -1;
	}
	return n;
}

/*
 * The clone is a copy of the image's directory; vm.c has replaced its
 * lima.yaml with the lane template before this runs, so a tampered image
 * cannot bring back mounts, port forwards or agent forwarding
 * (tests/regress/images.sh, golden).
 */
static void
clone_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct lane *l = arg;

	if (l->image_held) {
		image_release(l->d, l->image);
		l->image_held = false;
	}
	if (!create_step_ok(l, r, "clone"))
		return;
	lane_event(l, "vm-cloned", l->image);
	lane_step_start(l);
}

static void
lane_step_start(struct lane *l)
{
	lane_waiters_progress(l, "starting", "booting the VM");
	if (vm_start(l->vm, start_done, limactl_line) == -1) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl start");
		return;
	}
	create_step_vm(l, LANE_STEP_START);
}

static void lane_step_create_go(struct lane *);

/* Policy lanes first learn what the installed limactl can do. */
static void
lane_step_create(struct lane *l)
{
	if (l->net_policy)
		lanenet_when_known(l, lane_step_create_go);
	else
		lane_step_create_go(l);
}

/*
 * The proxy of an allow lane, of a lane with secrets, or of a pool lane
 * of those modes (laneproxy_wanted) listens before its rules (which name
 * it) exist.
 */
static int
open_proxy(struct lane *l)
{
	char err[512];

	if (!laneproxy_wanted(l->net_policy, l->net_mode, l->has_secrets,
	    l->state == LANE_POOLED) || l->px.proxy != NULL)
		return 0;
	if (laneproxy_open(&l->px, l->d, l->name, l->allow, l->net_mode,
	    l->state == LANE_POOLED, 0, err, sizeof err) == -1) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "the lane's proxy: %s", err);
		return -1;
	}
	/* The rules name this port: the row keeps it for restarts. */
	if (registry_lane_set_proxy_port(l->d->reg, l->name, l->px.port) !=
	    REG_OK) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: cannot record the proxy port");
		return -1;
	}
	snprintf(err, sizeof err, "127.0.0.1:%u", (unsigned)l->px.port);
	lane_event(l, "proxy", err);
	return 0;
}

static void
lane_step_create_go(struct lane *l)
{
	char yaml[LANE_YAML_MAX], err[512];
	int code, n;

	if ((code = lanenet_lima_refusal(l->d, l->net_policy, l->sudo, err,
	    sizeof err)) != 0) {
		create_fail(l, code, "%s", err);
		return;
	}
	if (open_proxy(l) == -1)
		return;
	if ((n = render_yaml(l, yaml, sizeof yaml, err, sizeof err)) < 0) {
		create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "writing the lane YAML: %s", err);
		return;
	}
	if (l->image[0] != '\0') {
		lane_waiters_progress(l, "cloning", l->image);
		if (vm_clone(l->vm, l->image_instance, yaml, (size_t)n,
		    clone_done) == -1) {
			image_release(l->d, l->image);
			l->image_held = false;
			create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "cannot run limactl clone");
			return;
		}
	} else {
		lane_waiters_progress(l, "creating", "limactl create");
		if (vm_create(l->vm, yaml, (size_t)n, create_done,
		    limactl_line) == -1) {
			create_fail(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "cannot run limactl create");
			return;
		}
	}
	create_step_vm(l, LANE_STEP_CREATE);
}
