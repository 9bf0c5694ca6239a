#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "gexec.h"
#include "laned.h"
#include "lane.h"
#include "lima.h"
#include "log.h"
#include "proc.h"
#include "reaper.h"
#include "registry.h"
#include "units.h"
#include "util.h"

#define LIMACTL_LIST_MAX (16u * 1024u * 1024u)
#define SETUP_OUTPUT_MAX 4096
/* Lanes in one LaneList at most; fewer if they would not fit a frame. */
#define LANE_LIST_MAX 1000

/*
 * Prepares the lane's writable workspace and proves the guest can run the
 * helper. The path is printed by the guest, so it is validated like any
 * other guest output.
 */
static const char setup_script[] =
    "mkdir -p \"$HOME/workspace\" && cd \"$HOME/workspace\" && pwd -P";

enum waiter_kind { WAIT_CREATE, WAIT_DESTROY };

struct lane_waiter {
	struct conn *c;
	struct lane *lane;
	enum waiter_kind kind;
	TAILQ_ENTRY(lane_waiter) entry;
};

struct lane_setup {
	struct lane *lane;
	char out[SETUP_OUTPUT_MAX + 1];
	size_t len;
	bool overflow;
	struct event *timer;
};

static void lane_step_create(struct lane *);
static void lane_begin_delete(struct lane *);
static void lane_fail_creation(struct lane *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

struct lane *
lane_find(struct laned *d, const char *name)
{
	struct lane *l;

	TAILQ_FOREACH(l, &d->lanes, entry)
		if (strcmp(l->name, name) == 0)
			return l;
	return NULL;
}

static struct lane *
lane_new(struct laned *d, const struct lane_record *rec)
{
	struct lane *l = xcalloc(1, sizeof *l);

	l->d = d;
	str_copy(l->name, rec->name, sizeof l->name);
	l->state = rec->state;
	l->created_at_ms = rec->created_at_ms;
	l->deadline_ms = rec->deadline_ms;
	l->idle_timeout_ms = rec->idle_timeout_ms;
	l->last_activity_ms = rec->last_activity_ms;
	l->persisted_activity_ms = rec->last_activity_ms;
	str_copy(l->workspace, rec->workspace, sizeof l->workspace);
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
	if (l->op != NULL)
		proc_abandon(l->op);
	if (l->setup != NULL)
		gexec_abort(l->setup);
	if (l->retry_timer != NULL)
		event_free(l->retry_timer);
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

/* Reads the lane's row and sends it; false if it could not. */
static bool
send_lane(struct laned *d, struct conn *c, const char *name)
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

/* ---- Waiters: clients blocked on a lane's create or destroy ---- */

static void
waiter_closed(struct conn *c, void *ctx)
{
	struct lane_waiter *w = ctx;

	/* The client went away; the lane carries on without it. */
	TAILQ_REMOVE(&w->lane->waiters, w, entry);
	free(w);
}

static const struct conn_handler waiter_handler = {
	.closed = waiter_closed,
};

static void
waiter_add(struct lane *l, struct conn *c, enum waiter_kind kind)
{
	struct lane_waiter *w = xcalloc(1, sizeof *w);

	w->c = c;
	w->lane = l;
	w->kind = kind;
	TAILQ_INSERT_TAIL(&l->waiters, w, entry);
	conn_set_handler(c, &waiter_handler, w);
}

static void
waiters_progress(struct lane *l, const char *phase, const char *message)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Progress p = AGENTLANE__V1__PROGRESS__INIT;
	struct lane_waiter *w;

	p.phase = (char *)phase;
	p.message = (char *)message;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_PROGRESS;
	resp.progress = &p;
	TAILQ_FOREACH(w, &l->waiters, entry)
		if (w->kind == WAIT_CREATE)
			(void)conn_send(w->c, &resp);
}

/* Answers every waiter of a kind with the lane, or with an error. */
static void
waiters_finish(struct lane *l, enum waiter_kind kind, int code,
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
			(void)send_lane(l->d, w->c, l->name);
		else
			conn_send_error(w->c, code, "%s", msg);
		free(w);
	}
}

/* ---- Registry helpers ---- */

static void
lane_transition(struct lane *l, int to, const char *event, const char *detail)
{
	int rc = registry_lane_transition(l->d->reg, l->name, to, event, detail);

	if (rc != REG_OK)
		log_warnx("lane %s: registry transition to %s failed (%d); "
		    "the next reconcile will repair it", l->name,
		    wire_lane_state_name(to), rc);
	log_info("lane %s: %s -> %s (%s%s%s)", l->name,
	    wire_lane_state_name(l->state), wire_lane_state_name(to), event,
	    detail != NULL && detail[0] ? ": " : "", detail != NULL ? detail : "");
	l->state = to;
}

static void
lane_event(struct lane *l, const char *event, const char *detail)
{
	if (registry_event_append(l->d->reg, l->name, event, detail) != REG_OK)
		log_warnx("lane %s: cannot record event %s", l->name, event);
}

/* The message of a failed limactl call: its error line, or its status. */
static void
limactl_failure(struct laned *d, struct proc *p, int status, char *buf,
    size_t len)
{
	char msg[256], st[32];

	lima_error_message(d->lima, proc_stderr(p), msg, sizeof msg);
	proc_status_string(status, st, sizeof st);
	if (proc_timed_out(p))
		snprintf(buf, len, "timed out%s%s", msg[0] ? ": " : "", msg);
	else
		snprintf(buf, len, "%s%s%s", st, msg[0] ? ": " : "", msg);
}

static struct proc *
lane_spawn(struct lane *l, char **argv, uint64_t timeout_ms, const char *verb,
    void (*done)(struct proc *, int, void *))
{
	struct proc_spec ps;
	struct proc *p;
	char what[64], err[256];

	if (argv == NULL) {
		/* Only reachable if a name in memory stopped validating. */
		log_warnx("lane %s: refusing limactl %s: invalid name", l->name,
		    verb);
		return NULL;
	}
	snprintf(what, sizeof what, "limactl %s %s", verb, l->name);
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(l->d->lima);
	ps.in = PROC_IN_NULL;
	ps.out = PROC_OUT_NULL;
	ps.timeout_ms = timeout_ms;
	ps.what = what;
	p = proc_spawn(l->d, &ps, done, l, err, sizeof err);
	lima_argv_free(argv);
	if (p == NULL)
		log_warnx("lane %s: %s", l->name, err);
	return p;
}

/* ---- Create ---- */

static void
yaml_path(struct lane *l, char *buf, size_t len)
{
	snprintf(buf, len, "%s/lanes/%s.yaml", l->d->cfg.state_dir, l->name);
}

static void
setup_free(struct lane_setup *s)
{
	if (s->timer != NULL)
		event_free(s->timer);
	free(s);
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

static void
setup_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	struct lane_setup *s = arg;
	struct lane *l = s->lane;
	char detail[LANE_WORKSPACE_MAX + 32];
	char *ws = s->out;
	size_t n;

	l->setup = NULL;
	if (l->destroy_pending) {
		setup_free(s);
		lane_fail_creation(l, l->destroy_code, "destroyed during "
		    "creation: %s", l->destroy_reason);
		return;
	}
	if (r->end != GEXEC_EXITED || r->code != 0) {
		if (r->end == GEXEC_FAILED)
			lane_fail_creation(l, r->error, "guest setup failed: %s",
			    r->message);
		else
			lane_fail_creation(l,
			    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
			    "guest setup failed (%s %d)",
			    r->end == GEXEC_EXITED ? "exit" : "signal",
			    r->end == GEXEC_EXITED ? r->code : r->sig);
		setup_free(s);
		return;
	}
	n = s->len;
	while (n > 0 && (ws[n - 1] == '\n' || ws[n - 1] == '\r'))
		ws[--n] = '\0';
	/* An absolute, printable, single-line path or nothing. */
	if (s->overflow || n == 0 || ws[0] != '/' || n >= LANE_WORKSPACE_MAX ||
	    strspn(ws, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789/._-+@,") != n) {
		setup_free(s);
		lane_fail_creation(l, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "guest setup printed an unusable workspace path");
		return;
	}
	if (registry_lane_set_workspace(l->d->reg, l->name, ws) != REG_OK)
		log_warnx("lane %s: cannot record the workspace", l->name);
	str_copy(l->workspace, ws, sizeof l->workspace);
	snprintf(detail, sizeof detail, "workspace=%s", ws);
	setup_free(s);
	lane_transition(l, LANE_READY, "ready", detail);
	l->last_activity_ms = time_now_ms();
	(void)registry_lane_touch(l->d->reg, l->name, l->last_activity_ms);
	waiters_progress(l, "ready", "");
	waiters_finish(l, WAIT_CREATE, 0, NULL);
	reaper_rearm(l->d);
}

static void
setup_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lane_setup *s = arg;
	struct lane *l = s->lane;

	gexec_abort(l->setup);
	l->setup = NULL;
	setup_free(s);
	lane_fail_creation(l, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
	    "guest setup did not finish within %llu s",
	    (unsigned long long)(l->d->cfg.command_timeout_ms / 1000));
}

static const struct gexec_ops setup_ops = {
	.output = setup_output,
	.done = setup_done,
};

static void
lane_step_setup(struct lane *l)
{
	struct gexec_bytes argv[] = {
		{ (const uint8_t *)"/bin/sh", 7 },
		{ (const uint8_t *)"-c", 2 },
		{ (const uint8_t *)setup_script, sizeof setup_script - 1 },
	};
	struct gexec_spec spec = {
		.lane = l->name, .argv = argv, .argc = 3, .cwd = "",
		.stdin = false, .what = "guest setup",
	};
	struct lane_setup *s = xcalloc(1, sizeof *s);
	struct timeval tv = {
		.tv_sec = (time_t)(l->d->cfg.command_timeout_ms / 1000),
	};
	char err[256];

	s->lane = l;
	waiters_progress(l, "setup", "preparing the guest workspace");
	l->setup = gexec_start(l->d, &spec, &setup_ops, s, err, sizeof err);
	if (l->setup == NULL) {
		free(s);
		lane_fail_creation(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "guest setup: %s", err);
		return;
	}
	if ((s->timer = evtimer_new(l->d->base, setup_timeout_cb, s)) == NULL ||
	    evtimer_add(s->timer, &tv) != 0)
		fatalx("evtimer_add");
}

/*
 * A creation step's limactl call returned. False when creation stops here:
 * the lane was destroyed meanwhile, or limactl failed (timeouts are
 * DEADLINE_EXCEEDED, other failures LIMA_FAILED with limactl's message).
 */
static bool
create_step_ok(struct lane *l, struct proc *p, int status, const char *verb)
{
	char msg[300];

	l->op = NULL;
	if (l->destroy_pending) {
		lane_fail_creation(l, l->destroy_code, "destroyed during "
		    "creation: %s", l->destroy_reason);
		return false;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		limactl_failure(l->d, p, status, msg, sizeof msg);
		lane_fail_creation(l, proc_timed_out(p) ?
		    AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED :
		    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
		    "limactl %s failed: %s", verb, msg);
		return false;
	}
	return true;
}

static void
start_done(struct proc *p, int status, void *arg)
{
	struct lane *l = arg;

	if (!create_step_ok(l, p, status, "start"))
		return;
	lane_event(l, "started", "");
	lane_step_setup(l);
}

static void
create_done(struct proc *p, int status, void *arg)
{
	struct lane *l = arg;
	char path[PATH_MAX];

	yaml_path(l, path, sizeof path);
	(void)unlink(path);
	if (!create_step_ok(l, p, status, "create"))
		return;
	lane_event(l, "vm-created", "");
	waiters_progress(l, "starting", "booting the VM");
	l->op = lane_spawn(l, lima_argv_start(l->d->lima, l->name,
	    l->d->cfg.start_timeout_ms), l->d->cfg.start_timeout_ms +
	    5 * UNITS_MS_PER_S, "start", start_done);
	if (l->op == NULL)
		lane_fail_creation(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl start");
}

static int
write_yaml(struct lane *l, char *err, size_t errlen)
{
	struct lima_lane_spec spec;
	struct lane_record rec;
	char yaml[4096], path[PATH_MAX];
	int fd, n;
	ssize_t w;

	if (registry_lane_get(l->d->reg, l->name, &rec) != REG_OK) {
		snprintf(err, errlen, "registry read failed");
		return -1;
	}
	spec.cpus = rec.cpus;
	spec.memory_mib = rec.memory_mib;
	spec.disk_gib = rec.disk_gib;
	if ((n = lima_yaml_render(l->d->lima, &spec, yaml, sizeof yaml)) < 0) {
		snprintf(err, errlen, "lane YAML too large");
		return -1;
	}
	yaml_path(l, path, sizeof path);
	(void)unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	w = write(fd, yaml, (size_t)n);
	if (w != n || fsync(fd) == -1) {
		snprintf(err, errlen, "%s: %s", path,
		    w == -1 ? strerror(errno) : "short write");
		close(fd);
		(void)unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

static void
lane_step_create(struct lane *l)
{
	char path[PATH_MAX], err[256];

	if (write_yaml(l, err, sizeof err) == -1) {
		lane_fail_creation(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "writing the lane YAML: %s", err);
		return;
	}
	yaml_path(l, path, sizeof path);
	waiters_progress(l, "creating", "limactl create");
	l->op = lane_spawn(l, lima_argv_create(l->d->lima, l->name, path),
	    l->d->cfg.command_timeout_ms, "create", create_done);
	if (l->op == NULL) {
		(void)unlink(path);
		lane_fail_creation(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl create");
	}
}

/* Lane names in keys, printable values: labels end up in logs and JSON. */
static bool
label_ok(const Agentlane__V1__Label *lb, char *err, size_t errlen)
{
	size_t kl = lb->key != NULL ? strlen(lb->key) : 0;
	size_t vl = lb->value != NULL ? strlen(lb->value) : 0;

	if (kl == 0 || kl > LANE_LABEL_KEY_MAX ||
	    strspn(lb->key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789._/-") != kl) {
		snprintf(err, errlen, "label keys are 1-%d characters of "
		    "[A-Za-z0-9._/-]", LANE_LABEL_KEY_MAX);
		return false;
	}
	if (vl > LANE_LABEL_VALUE_MAX) {
		snprintf(err, errlen, "label values are at most %d bytes",
		    LANE_LABEL_VALUE_MAX);
		return false;
	}
	for (size_t i = 0; i < vl; i++)
		if ((unsigned char)lb->value[i] < 0x20 ||
		    (unsigned char)lb->value[i] == 0x7f) {
			snprintf(err, errlen, "label values must be printable");
			return false;
		}
	return true;
}

void
lane_handle_create(struct laned *d, struct conn *c,
    const Agentlane__V1__CreateLane *req)
{
	const struct config *cfg = &d->cfg;
	struct lane_label labels[LANE_LABELS_MAX];
	struct lane_record rec;
	struct lane *l;
	uint64_t lifetime_ms, idle_ms;
	char err[512];
	size_t live;
	int rc = REG_EXISTS;

	memset(&rec, 0, sizeof rec);
	rec.cpus = req->cpus != 0 ? req->cpus : cfg->default_cpus;
	rec.memory_mib = req->memory_mib != 0 ? req->memory_mib :
	    cfg->default_memory_mib;
	rec.disk_gib = req->disk_gib != 0 ? req->disk_gib : cfg->default_disk_gib;
	if (rec.cpus > cfg->max_cpus) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "cpus %u is above the cap of %u (max_cpus)", rec.cpus,
		    cfg->max_cpus);
		return;
	}
	if (rec.memory_mib > cfg->max_memory_mib || rec.memory_mib < 256) {
		conn_send_error(c, rec.memory_mib < 256 ?
		    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT :
		    AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "memory %u MiB is outside 256..%u MiB (max_memory)",
		    rec.memory_mib, cfg->max_memory_mib);
		return;
	}
	if (rec.disk_gib > cfg->max_disk_gib) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "disk %u GiB is above the cap of %u GiB (max_disk)",
		    rec.disk_gib, cfg->max_disk_gib);
		return;
	}
	lifetime_ms = req->timeout_s != 0 ? req->timeout_s * 1000 :
	    cfg->default_lifetime_ms;
	if (req->timeout_s > cfg->max_lifetime_ms / 1000 ||
	    lifetime_ms > cfg->max_lifetime_ms) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "lifetime of %llu s is above the cap of %llu s "
		    "(max_lifetime)", (unsigned long long)req->timeout_s,
		    (unsigned long long)(cfg->max_lifetime_ms / 1000));
		return;
	}
	idle_ms = req->idle_timeout_s != 0 ? req->idle_timeout_s * 1000 :
	    cfg->default_idle_timeout_ms;
	if (req->idle_timeout_s > cfg->max_lifetime_ms / 1000) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "idle timeout of %llu s is longer than the maximum lifetime",
		    (unsigned long long)req->idle_timeout_s);
		return;
	}
	if (req->n_labels > LANE_LABELS_MAX) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "at most %d labels", LANE_LABELS_MAX);
		return;
	}
	for (size_t i = 0; i < req->n_labels; i++) {
		if (!label_ok(req->labels[i], err, sizeof err)) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT, "%s", err);
			return;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(req->labels[i]->key, labels[j].key) == 0) {
				conn_send_error(c,
				    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
				    "duplicate label %s", labels[j].key);
				return;
			}
		str_copy(labels[i].key, req->labels[i]->key, sizeof labels[i].key);
		str_copy(labels[i].value, req->labels[i]->value != NULL ?
		    req->labels[i]->value : "", sizeof labels[i].value);
	}
	if (registry_count_live(d->reg, &live) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: %s", registry_errmsg(d->reg));
		return;
	}
	if (live >= cfg->max_lanes) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "%zu lanes are live; the cap is %u (max_lanes)", live,
		    cfg->max_lanes);
		return;
	}
	if (lima_home_unsafe(d->lima, err, sizeof err)) {
		log_warnx("create refused: %s", err);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "%s", err);
		return;
	}

	rec.created_at_ms = time_now_ms();
	rec.deadline_ms = rec.created_at_ms + (int64_t)lifetime_ms;
	rec.idle_timeout_ms = idle_ms;
	rec.owner_uid = (uint32_t)d->uid;
	rec.state = LANE_CREATING;
	/* Invariant 1: the row is durable before limactl hears the name. */
	for (int tries = 0; rc == REG_EXISTS && tries < 8; tries++) {
		if (lima_name_generate(rec.name, sizeof rec.name) == -1) {
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "cannot read the OS random source");
			return;
		}
		if (lima_instance_exists(d->lima, rec.name))
			continue;	/* an orphan holds it; never reuse */
		rc = registry_lane_insert(d->reg, &rec, labels, req->n_labels);
	}
	if (rc != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: cannot register the lane");
		return;
	}
	log_info("lane %s: registered (cpus %u, memory %u MiB, disk %u GiB, "
	    "lifetime %llu s)", rec.name, rec.cpus, rec.memory_mib,
	    rec.disk_gib, (unsigned long long)(lifetime_ms / 1000));
	l = lane_new(d, &rec);
	waiter_add(l, c, WAIT_CREATE);
	waiters_progress(l, "registered", l->name);
	reaper_rearm(d);
	lane_step_create(l);
}

/*
 * Creation went wrong (or was cancelled): remember why, then delete the VM.
 * Creators hear the reason once the delete has been tried.
 */
static void
lane_fail_creation(struct lane *l, int code, const char *fmt, ...)
{
	va_list ap;

	if (l->state != LANE_CREATING)
		return;
	va_start(ap, fmt);
	vsnprintf(l->fail_msg, sizeof l->fail_msg, fmt, ap);
	va_end(ap);
	str_sanitize(l->fail_msg);
	l->fail_code = code;
	/* A cancelled creation ends "destroyed", a failed one "failed". */
	if (!l->destroy_pending && registry_lane_set_create_failed(l->d->reg,
	    l->name, l->fail_msg) != REG_OK)
		log_warnx("lane %s: cannot record the error", l->name);
	log_warnx("lane %s: %s", l->name, l->fail_msg);
	lane_transition(l, LANE_DESTROYING, l->destroy_pending ? "cancelled" :
	    "create-failed", l->fail_msg);
	lane_begin_delete(l);
}

/* ---- Destroy ---- */

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lane *l = arg;

	if (l->op == NULL)
		lane_begin_delete(l);
}

static void
lane_finish(struct lane *l)
{
	bool failed = l->fail_code != 0 && !l->destroy_pending;
	int creator_code = l->fail_code;
	char creator_msg[LANE_ERROR_MAX];

	str_copy(creator_msg, l->fail_msg, sizeof creator_msg);
	lane_transition(l, failed ? LANE_FAILED : LANE_DESTROYED,
	    failed ? "failed" : "destroyed", l->destroy_reason);
	if (creator_code == 0) {
		creator_code = AGENTLANE__V1__ERROR_CODE__CANCELLED;
		snprintf(creator_msg, sizeof creator_msg, "lane destroyed");
	}
	waiters_finish(l, WAIT_CREATE, creator_code, creator_msg);
	waiters_finish(l, WAIT_DESTROY, 0, NULL);
	lane_free(l);
}

static void
delete_done(struct proc *p, int status, void *arg)
{
	struct lane *l = arg;
	struct laned *d = l->d;
	char msg[300], detail[400];
	uint64_t backoff_ms;
	struct timeval tv;

	l->op = NULL;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	    !lima_instance_exists(d->lima, l->name)) {
		lane_finish(l);
		reaper_rearm(d);
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		snprintf(msg, sizeof msg, "instance directory still present");
	else
		limactl_failure(d, p, status, msg, sizeof msg);
	l->destroy_attempts++;
	backoff_ms = 1000;
	for (unsigned i = 1; i < l->destroy_attempts && backoff_ms <
	    d->cfg.destroy_retry_max_ms; i++)
		backoff_ms *= 2;
	if (backoff_ms > d->cfg.destroy_retry_max_ms)
		backoff_ms = d->cfg.destroy_retry_max_ms;
	snprintf(detail, sizeof detail, "limactl delete failed: %s (attempt "
	    "%u, retrying in %llu ms)", msg, l->destroy_attempts,
	    (unsigned long long)backoff_ms);
	log_warnx("lane %s: %s", l->name, detail);
	lane_event(l, "destroy-failed", detail);
	if (l->fail_code == 0)
		(void)registry_lane_set_error(d->reg, l->name, detail);

	if (l->retry_timer == NULL &&
	    (l->retry_timer = evtimer_new(d->base, retry_cb, l)) == NULL)
		fatalx("evtimer_new");
	tv.tv_sec = (time_t)(backoff_ms / 1000);
	tv.tv_usec = (suseconds_t)(backoff_ms % 1000) * 1000;
	if (evtimer_add(l->retry_timer, &tv) != 0)
		fatalx("evtimer_add");

	/* Nobody waits for retries: answer now, the row stays visible. */
	if (l->fail_code != 0) {
		char m[LANE_ERROR_MAX + 64];

		snprintf(m, sizeof m, "%s (cleanup pending: limactl delete "
		    "will be retried)", l->fail_msg);
		waiters_finish(l, WAIT_CREATE, l->fail_code, m);
	} else
		waiters_finish(l, WAIT_CREATE,
		    AGENTLANE__V1__ERROR_CODE__CANCELLED, "lane destroyed");
	waiters_finish(l, WAIT_DESTROY, AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
	    detail);
}

static void
lane_begin_delete(struct lane *l)
{
	if (l->op != NULL)
		return;
	if (l->retry_timer != NULL)
		evtimer_del(l->retry_timer);
	l->op = lane_spawn(l, lima_argv_delete(l->d->lima, l->name),
	    l->d->cfg.command_timeout_ms, "delete", delete_done);
	if (l->op == NULL) {
		struct timeval tv = { 5, 0 };

		/* Could not even spawn: try again later, like a failure. */
		if (l->retry_timer == NULL &&
		    (l->retry_timer = evtimer_new(l->d->base, retry_cb, l)) == NULL)
			fatalx("evtimer_new");
		if (evtimer_add(l->retry_timer, &tv) != 0)
			fatalx("evtimer_add");
	}
}

void
lane_destroy(struct lane *l, int code, const char *reason)
{
	struct lane_activity *a;
	char msg[128];

	switch (l->state) {
	case LANE_CREATING:
		if (l->destroy_pending)
			return;
		l->destroy_pending = true;
		l->destroy_code = code;
		str_copy(l->destroy_reason, reason, sizeof l->destroy_reason);
		lane_event(l, "destroy-requested", reason);
		if (l->op != NULL)
			proc_kill(l->op);	/* its callback carries on */
		else if (l->setup != NULL) {
			struct gexec *g = l->setup;

			/* An aborted gexec has no callback: continue here. */
			l->setup = NULL;
			gexec_abort(g);
			lane_fail_creation(l, code, "destroyed during "
			    "creation: %s", reason);
		} else
			lane_fail_creation(l, code, "destroyed during "
			    "creation: %s", reason);
		break;
	case LANE_READY:
		str_copy(l->destroy_reason, reason, sizeof l->destroy_reason);
		snprintf(msg, sizeof msg, "lane %s is being destroyed (%s)",
		    l->name, reason);
		while ((a = TAILQ_FIRST(&l->activities)) != NULL)
			a->cancel(a, code, msg);
		lane_transition(l, LANE_DESTROYING, "destroying", reason);
		lane_begin_delete(l);
		break;
	case LANE_DESTROYING:
		if (l->destroy_reason[0] == '\0')
			str_copy(l->destroy_reason, reason,
			    sizeof l->destroy_reason);
		/* A retry is pending: an explicit request runs it now. */
		if (l->op == NULL)
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
		if (l->deadline_ms <= time_now_ms())
			lane_destroy(l,
			    AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
			    "deadline passed while agent-laned was down");
		break;
	default:
		break;
	}
}

/* ---- Requests ---- */

/* Client-supplied names are checked for shape before anything else. */
static bool
check_name(struct conn *c, const char *name)
{
	if (!lima_name_valid(name)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "\"%.40s\" is not a lane name (al- and 16 hex digits)",
		    name != NULL ? name : "");
		return false;
	}
	return true;
}

void
lane_handle_get(struct laned *d, struct conn *c, const char *name)
{
	if (check_name(c, name))
		(void)send_lane(d, c, name);
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

	if (!check_name(c, name))
		return;
	if ((l = lane_find(d, name)) == NULL) {
		/* Not live: report the row (destroy is idempotent). */
		(void)send_lane(d, c, name);
		return;
	}
	waiter_add(l, c, WAIT_DESTROY);
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

	if (!check_name(c, req->name))
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
	reaper_rearm(d);
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

	if (!check_name(c, name))
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

/* ---- Activities ---- */

struct lane *
lane_activity_begin(struct laned *d, struct conn *c, const char *name,
    struct lane_activity *a)
{
	struct lane_record rec;
	struct lane *l;

	if (!check_name(c, name))
		return NULL;
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
		    wire_lane_state_name(l->state));
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
	reaper_rearm(l->d);
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
