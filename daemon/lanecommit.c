#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "conn.h"
#include "gchan.h"
#include "gexec.h"
#include "image.h"
#include "lane.h"
#include "lanecommit.h"
#include "laned.h"
#include "lima.h"
#include "log.h"
#include "names.h"
#include "netpolicy.h"
#include "registry.h"
#include "sha256.h"
#include "util.h"
#include "vm.h"

#define COMMIT_TAIL 1024		/* the scrub's stderr, for the error */

/*
 * Run as root in the clone's one boot, last: what was the lane's and must
 * not reach the lanes made from the image. $1 is the lane's workspace,
 * $2 "1" to drop it. Identity files come back per lane: systemd makes a
 * machine id at a boot that finds the file empty, and cloud-init (a new
 * instance id per boot under Lima) new ssh host keys. journald is moved
 * off /var first, so that this boot's own shutdown writes nothing there.
 * set -e: a scrub that fails makes no image.
 */
static const char scrub_script[] =
    "set -eu\n"
    "ws=$1 drop=$2\n"
    "u=${SUDO_USER:?run through sudo by agent-laned}\n"
    "home=$(getent passwd \"$u\" | cut -d: -f6)\n"
    "if [ -e " NETPOLICY_CA_FILE " ]; then\n"
    "\trm -f " NETPOLICY_CA_FILE "\n"
    "\tif [ -d /etc/ssl/certs ]; then update-ca-certificates >/dev/null; fi\n"
    "fi\n"
    "rm -f /etc/ssh/ssh_host_*\n"
    ": > /etc/machine-id\n"
    "rm -f /var/lib/dbus/machine-id\n"
    "rm -rf /var/lib/cloud/instances /var/lib/cloud/instance "
    "/var/lib/cloud/data /var/lib/cloud/sem\n"
    "if [ -n \"$home\" ]; then rm -f \"$home/password\" "
    "\"$home/.bash_history\"; fi\n"
    "if command -v journalctl >/dev/null 2>&1; then\n"
    "\tjournalctl --relinquish-var >/dev/null 2>&1 || true\n"
    "fi\n"
    "find /var/log -xdev -type f -exec rm -f {} +\n"
    "if [ \"$drop\" = 1 ] && [ -n \"$ws\" ]; then\n"
    "\tcase $ws in /?*) rm -rf -- \"$ws\" ;; *) exit 3 ;; esac\n"
    "fi\n"
    "sync\n";

struct commit {
	struct laned *d;
	struct conn *c;			/* NULL once the client is gone */
	char lane[LANE_NAME_SIZE];
	char workspace[LANE_WORKSPACE_MAX];
	bool no_workspace;
	struct image_record rec;
	struct vm *lvm;			/* the lane's instance */
	struct vm *ivm;			/* the clone: the image's instance */
	struct gexec *g;		/* the scrub */
	struct event *deadline;
	int64_t t0;
	bool lane_done;			/* its VM runs again (or never will) */
	bool image_done;		/* ready, or undone */
	int fail_code;			/* set: the image side is undone */
	char fail_msg[LANE_ERROR_MAX];
	char tail[COMMIT_TAIL];
	size_t tail_len;
	TAILQ_ENTRY(commit) entry;
};

TAILQ_HEAD(commits, commit);

static void image_side_fail(struct commit *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
commit_progress(struct commit *cm, const char *phase, const char *msg)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Progress pr = AGENTLANE__V1__PROGRESS__INIT;

	if (cm->c == NULL)
		return;
	pr.phase = (char *)phase;
	pr.message = (char *)msg;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_PROGRESS;
	resp.progress = &pr;
	(void)conn_send(cm->c, &resp);
}

static void
commit_free(struct commit *cm)
{
	vm_free(cm->lvm);
	vm_free(cm->ivm);
	if (cm->g != NULL)
		gexec_abort(cm->g);
	if (cm->deadline != NULL)
		event_free(cm->deadline);
	if (cm->c != NULL)
		conn_set_handler(cm->c, NULL, NULL);
	TAILQ_REMOVE(cm->d->commits, cm, entry);
	free(cm);
}

/* Both sides are done: the client hears how it went. */
static void
commit_maybe_end(struct commit *cm)
{
	if (!cm->lane_done || !cm->image_done)
		return;
	if (cm->c != NULL) {
		conn_set_handler(cm->c, NULL, NULL);
		if (cm->fail_code != 0)
			conn_send_error(cm->c, cm->fail_code, "%s",
			    cm->fail_msg);
		else {
			commit_progress(cm, "ready", cm->rec.name);
			image_send(cm->d, cm->c, &cm->rec, false);
		}
		cm->c = NULL;
	}
	commit_free(cm);
}

/* ---- The lane's side ---- */

static void
lane_started(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct commit *cm = arg;
	struct lane *l = lane_find(cm->d, cm->lane);

	cm->lane_done = true;
	if (l != NULL && l->committing) {
		if (r->ok) {
			lane_event(l, "commit-restarted", cm->rec.name);
			lane_commit_end(l);
		} else {
			lane_event(l, "commit-restart-failed", r->msg);
			lane_commit_end(l);
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
			    "its VM did not start again after a commit");
		}
	}
	commit_maybe_end(cm);
}

/* The lane's VM starts again, whatever happened to the clone. */
static void
lane_restart(struct commit *cm)
{
	struct lane *l = lane_find(cm->d, cm->lane);

	commit_progress(cm, "restarting", cm->lane);
	if (vm_start(cm->lvm, lane_started, NULL) == -1) {
		cm->lane_done = true;
		if (l != NULL) {
			lane_commit_end(l);
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "cannot run limactl start after a commit");
		}
	}
}

/* ---- The image's side ---- */

static void
undo_end(struct commit *cm, bool gone)
{
	struct laned *d = cm->d;

	if (gone) {
		if (registry_image_delete(d->reg, cm->rec.name) == REG_ERROR)
			log_warnx("image %s: cannot delete the row",
			    cm->rec.name);
		(void)registry_event_append(d->reg, cm->rec.instance,
		    "image-commit-failed", cm->fail_msg);
	} else
		log_warnx("image %s: %s was not deleted; it is retried at the "
		    "next start", cm->rec.name, cm->rec.instance);
	log_warnx("image %s: commit of %s failed: %s", cm->rec.name, cm->lane,
	    cm->fail_msg);
	cm->image_done = true;
	commit_maybe_end(cm);
}

static void
undo_gone(struct vm *vm, void *arg)
{
	undo_end(arg, true);
}

static void
undo_failed(struct vm *vm, const char *why, unsigned attempt,
    uint64_t retry_ms, void *arg)
{
	struct commit *cm = arg;

	log_warnx("image %s: limactl delete failed: %s", cm->rec.name, why);
	undo_end(cm, false);
}

/*
 * The image side fails: the clone (if limactl ever made one) and then the
 * row go. A limactl call in flight finishes first (its callback undoes).
 */
static void
image_side_fail(struct commit *cm, int code, const char *fmt, ...)
{
	va_list ap;

	if (cm->fail_code == 0) {
		va_start(ap, fmt);
		vsnprintf(cm->fail_msg, sizeof cm->fail_msg, fmt, ap);
		va_end(ap);
		str_sanitize(cm->fail_msg);
		cm->fail_code = code;
	}
	if (cm->g != NULL) {
		gexec_abort(cm->g);
		cm->g = NULL;
	}
	if (vm_interrupt(cm->ivm))
		return;
	commit_progress(cm, "cleanup", "deleting the clone");
	vm_delete(cm->ivm, 1, undo_failed, undo_gone);
}

/* A limactl step of the clone returned: false when it stops here. */
static bool
image_step_ok(struct commit *cm, const struct vm_result *r, const char *verb)
{
	if (cm->fail_code != 0) {
		image_side_fail(cm, cm->fail_code, "%s", cm->fail_msg);
		return false;
	}
	if (r->ok)
		return true;
	image_side_fail(cm, r->code, "limactl %s of the clone failed: %s",
	    verb, r->msg);
	return false;
}

static void
image_stopped(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct commit *cm = arg;
	struct laned *d = cm->d;
	int64_t took;

	if (!image_step_ok(cm, r, "stop"))
		return;
	took = time_now_ms() - cm->t0;
	cm->rec.build_ms = took > 0 ? (uint64_t)took : 0;
	if (registry_image_set_ready(d->reg, cm->rec.name, cm->rec.build_ms) !=
	    REG_OK) {
		image_side_fail(cm, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: cannot record image %s", cm->rec.name);
		return;
	}
	cm->rec.state = IMAGE_READY;
	(void)registry_event_append(d->reg, cm->rec.instance, "image-ready",
	    cm->rec.name);
	log_info("image %s: committed from %s (%s, %llu ms)", cm->rec.name,
	    cm->lane, cm->rec.instance, (unsigned long long)cm->rec.build_ms);
	cm->image_done = true;
	commit_maybe_end(cm);
}

static void
scrub_output(struct gexec *g, int stream, const uint8_t *data, size_t len,
    void *arg)
{
	struct commit *cm = arg;

	if (stream != 2)
		return;
	if (len >= COMMIT_TAIL) {
		data += len - COMMIT_TAIL;
		len = COMMIT_TAIL;
	}
	if (cm->tail_len + len > COMMIT_TAIL) {
		size_t drop = cm->tail_len + len - COMMIT_TAIL;

		memmove(cm->tail, cm->tail + drop, cm->tail_len - drop);
		cm->tail_len -= drop;
	}
	memcpy(cm->tail + cm->tail_len, data, len);
	cm->tail_len += len;
}

static void
scrub_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	struct commit *cm = arg;
	char st[32], tail[COMMIT_TAIL + 1];

	cm->g = NULL;
	if (r->end == GEXEC_FAILED) {
		image_side_fail(cm, r->error, "scrubbing the clone: %s",
		    r->message);
		return;
	}
	if (r->end != GEXEC_EXITED || r->code != 0) {
		snprintf(tail, sizeof tail, "%.*s", (int)cm->tail_len,
		    cm->tail);
		for (char *p = tail; *p != '\0'; p++)
			if (*p == '\n')
				*p = '|';
		image_side_fail(cm, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "scrubbing the clone failed (%s): %s",
		    gexec_status(r, st, sizeof st), tail);
		return;
	}
	commit_progress(cm, "stopping", "limactl stop (the clone)");
	if (vm_stop(cm->ivm, image_stopped) == -1)
		image_side_fail(cm, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl stop");
}

static const struct gexec_ops scrub_ops = {
	.output = scrub_output,
	.done = scrub_done,
};

static void
image_started(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct commit *cm = arg;
	struct gexec_bytes argv[8];
	struct gexec_spec spec;
	const char *a[8] = { "sudo", "-n", "/bin/sh", "-c", scrub_script,
	    "agent-lane-commit", cm->workspace, cm->no_workspace ? "1" : "0" };
	char err[256];

	if (!image_step_ok(cm, r, "start"))
		return;
	for (size_t i = 0; i < 8; i++) {
		argv[i].data = (const uint8_t *)a[i];
		argv[i].len = strlen(a[i]);
	}
	memset(&spec, 0, sizeof spec);
	spec.lane = cm->rec.instance;
	spec.argv = argv;
	spec.argc = 8;
	spec.cwd = "/";
	spec.what = "commit scrub";
	commit_progress(cm, "scrubbing", "lane CA, host keys, machine id, "
	    "logs");
	cm->g = gexec_start(cm->d->base, &cm->d->procs, cm->d->lima, &spec,
	    &scrub_ops, cm, err, sizeof err);
	if (cm->g == NULL)
		image_side_fail(cm, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "scrubbing the clone: %s", err);
}

static void
clone_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct commit *cm = arg;

	/* The copy is made (or not): the lane need not wait any longer. */
	lane_restart(cm);
	if (!image_step_ok(cm, r, "clone"))
		return;
	commit_progress(cm, "booting", "the clone, once, to scrub it");
	if (vm_start(cm->ivm, image_started, NULL) == -1)
		image_side_fail(cm, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl start");
}

static void
lane_stopped(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct commit *cm = arg;
	struct lima_lane_spec spec = { .cpus = cm->rec.cpus,
	    .memory_mib = cm->rec.memory_mib, .disk_gib = cm->rec.disk_gib };
	char yaml[4096];
	int n;

	if (!r->ok || cm->fail_code != 0) {
		/* No clone was made: the row goes, the lane starts again. */
		if (cm->fail_code == 0) {
			cm->fail_code = r->code;
			snprintf(cm->fail_msg, sizeof cm->fail_msg,
			    "limactl stop of the lane failed: %s", r->msg);
		}
		lane_restart(cm);
		undo_end(cm, true);	/* limactl never heard its name */
		return;
	}
	/* The clone boots once without the lane's YAML: no policy, no CA. */
	if ((n = lima_yaml_render(cm->d->lima, &spec, yaml, sizeof yaml)) < 0 ||
	    (commit_progress(cm, "cloning", cm->rec.instance),
	    vm_clone(cm->ivm, cm->lane, yaml, (size_t)n, clone_done)) == -1) {
		cm->fail_code = AGENTLANE__V1__ERROR_CODE__INTERNAL;
		snprintf(cm->fail_msg, sizeof cm->fail_msg,
		    "cannot run limactl clone");
		lane_restart(cm);
		undo_end(cm, true);
	}
}

/* ---- The call ---- */

static void
commit_closed(struct conn *c, void *ctx)
{
	struct commit *cm = ctx;

	cm->c = NULL;	/* the commit goes on: nobody to tell */
}

static const struct conn_handler commit_handler = {
	.closed = commit_closed,
};

static void
commit_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct commit *cm = arg;

	if (cm->image_done)
		return;
	/* limactl calls have their own timeouts; this stops the scrub. */
	if (cm->g != NULL)
		image_side_fail(cm, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
		    "commit did not finish within %llu s (image_build_timeout)",
		    (unsigned long long)(cm->d->cfg.image_build_timeout_ms /
		    1000));
	else if (cm->fail_code == 0) {
		cm->fail_code = AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED;
		snprintf(cm->fail_msg, sizeof cm->fail_msg, "commit did not "
		    "finish within %llu s (image_build_timeout)",
		    (unsigned long long)(cm->d->cfg.image_build_timeout_ms /
		    1000));
	}
}

/* The lane can be committed now; false: c was answered. */
static bool
commit_lane_ok(struct laned *d, struct conn *c, const char *name,
    struct lane **out)
{
	struct lane *l = lane_find(d, name);

	*out = l;
	if (l == NULL) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "lane %s has ended; only a ready lane can be committed",
		    name);
		return false;
	}
	if (l->state != LANE_READY || l->step == LANE_STEP_COMMIT_WAIT) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "lane %s is %s; only a ready lane can be committed", name,
		    l->step == LANE_STEP_COMMIT_WAIT ? "being destroyed" :
		    wire_lane_state_name((int)l->state));
		return false;
	}
	if (l->committing) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "lane %s is already being committed", name);
		return false;
	}
	if (l->nactivities > 0) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "lane %s runs %zu execs or copies; commit it when they are "
		    "done", name, l->nactivities);
		return false;
	}
	return true;
}

/* The image name is free and under the cap; false: c was answered. */
static bool
commit_image_ok(struct laned *d, struct conn *c, const char *name)
{
	struct image_record old, *all = NULL;
	size_t n = 0;
	int rc;

	if ((rc = registry_image_get(d->reg, name, &old)) == REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__ALREADY_EXISTS,
		    old.state == IMAGE_READY ? "image %s exists; remove it "
		    "first (agent-lanectl image rm %s)" : "image %s is being "
		    "built", name, name);
		return false;
	}
	if (rc != REG_NOT_FOUND ||
	    registry_image_list(d->reg, &all, &n) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return false;
	}
	free(all);
	if (n >= d->cfg.max_images) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "%zu images exist; the cap is %u (max_images)", n,
		    d->cfg.max_images);
		return false;
	}
	return true;
}

static int
commit_insert(void *arg)
{
	struct commit *cm = arg;
	struct sha256 h;
	uint8_t dg[SHA256_DIGEST_SIZE];

	/* No content address: a commit's disk is its own. */
	sha256_init(&h);
	sha256_update(&h, "agent-lane commit v1\n", 21);
	sha256_update(&h, cm->lane, strlen(cm->lane));
	sha256_update(&h, cm->rec.instance, strlen(cm->rec.instance));
	sha256_update(&h, &cm->rec.committed_at_ms,
	    sizeof cm->rec.committed_at_ms);
	sha256_final(&h, dg);
	sha256_hex(dg, cm->rec.id);
	return registry_image_insert(cm->d->reg, &cm->rec);
}

/* The row of the image to be, from the lane's; the lane's image stays. */
static void
commit_plan(struct laned *d, struct commit *cm, const struct lane *l,
    const char *image)
{
	struct lane_record lr;
	struct image_record base;

	str_copy(cm->rec.name, image, sizeof cm->rec.name);
	str_copy(cm->rec.from, l->image, sizeof cm->rec.from);
	if (l->image[0] != '\0' && registry_image_get(d->reg, l->image,
	    &base) == REG_OK)
		cm->rec.docker = base.docker;
	cm->rec.cpus = l->cpus;
	cm->rec.memory_mib = l->memory_mib;
	cm->rec.disk_gib = l->disk_gib;
	cm->rec.created_at_ms = cm->rec.committed_at_ms = time_now_ms();
	str_copy(cm->rec.committed_from, l->name, sizeof cm->rec.committed_from);
	if (registry_lane_get(d->reg, l->name, &lr) == REG_OK)
		str_copy(cm->rec.committed_alias, lr.alias,
		    sizeof cm->rec.committed_alias);
	str_copy(cm->lane, l->name, sizeof cm->lane);
	str_copy(cm->workspace, l->workspace, sizeof cm->workspace);
}

void
lanecommit_handle(struct laned *d, struct conn *c,
    const Agentlane__V1__CommitLane *req)
{
	char name[LANE_NAME_SIZE];
	struct commit *cm;
	struct lane *l;
	struct timeval tv;
	int rc;

	if (!names_image_valid(req->image)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "invalid image name: 1-63 of [a-z0-9._-], starting with a "
		    "letter or digit");
		return;
	}
	if (!lane_resolve(d, c, req->lane, name) ||
	    !commit_lane_ok(d, c, name, &l) ||
	    !commit_image_ok(d, c, req->image))
		return;
	cm = xcalloc(1, sizeof *cm);
	cm->d = d;
	cm->no_workspace = req->no_workspace;
	commit_plan(d, cm, l, req->image);
	TAILQ_INSERT_TAIL(d->commits, cm, entry);
	rc = vm_register(d, true, cm->rec.instance, sizeof cm->rec.instance,
	    commit_insert, cm);
	if (rc != REG_OK) {
		conn_send_error(c, rc == REG_EXISTS ?
		    AGENTLANE__V1__ERROR_CODE__ALREADY_EXISTS :
		    AGENTLANE__V1__ERROR_CODE__INTERNAL, rc == REG_EXISTS ?
		    "image %s exists" : "registry error: cannot register "
		    "image %s", cm->rec.name);
		commit_free(cm);
		return;
	}
	(void)registry_event_append(d->reg, cm->rec.instance,
	    "image-registered", cm->rec.name);
	lane_event(l, "commit", cm->rec.name);
	log_info("lane %s: committing to image %s (%s)", l->name, cm->rec.name,
	    cm->rec.instance);
	/* From here execs are refused and reconcile leaves the VM alone. */
	l->committing = true;
	gchan_close(&l->chan);
	cm->c = c;
	cm->rec.state = IMAGE_BUILDING;
	cm->t0 = time_now_ms();
	cm->lvm = vm_new(d, l->name, cm);
	cm->ivm = vm_new(d, cm->rec.instance, cm);
	conn_set_handler(c, &commit_handler, cm);
	tv = tv_from_ms(d->cfg.image_build_timeout_ms);
	if ((cm->deadline = evtimer_new(d->base, commit_deadline_cb, cm)) ==
	    NULL || evtimer_add(cm->deadline, &tv) != 0)
		fatalx("evtimer_add");
	commit_progress(cm, "stopping", "limactl stop (the lane)");
	if (vm_stop(cm->lvm, lane_stopped) == -1) {
		struct vm_result r = { .ok = false,
		    .code = AGENTLANE__V1__ERROR_CODE__INTERNAL };

		str_copy(r.msg, "cannot run limactl stop", sizeof r.msg);
		lane_stopped(cm->lvm, &r, cm);
	}
}

/* ---- Life cycle ---- */

void
lanecommit_init(struct laned *d)
{
	d->commits = xcalloc(1, sizeof *d->commits);
	TAILQ_INIT(d->commits);
}

void
lanecommit_free_all(struct laned *d)
{
	struct commit *cm;

	if (d->commits == NULL)
		return;
	/* Rows stay "building" and lanes stopped: the next start recovers. */
	while ((cm = TAILQ_FIRST(d->commits)) != NULL)
		commit_free(cm);
	free(d->commits);
	d->commits = NULL;
}

/* A lane whose commit a dead daemon left: its VM starts again. */
struct restart {
	struct laned *d;
	char lane[LANE_NAME_SIZE];
	struct vm *vm;
};

static void
restart_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct restart *rs = arg;
	struct lane *l = lane_find(rs->d, rs->lane);

	if (l != NULL && l->committing) {
		lane_event(l, r->ok ? "commit-recovered" :
		    "commit-restart-failed", r->ok ? "its VM runs again after "
		    "an interrupted commit" : r->msg);
		lane_commit_end(l);
		if (!r->ok)
			lane_destroy(l, AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
			    "its VM did not start again after an interrupted "
			    "commit");
	}
	vm_free(rs->vm);
	free(rs);
}

void
lanecommit_recover(struct laned *d)
{
	struct image_record *v = NULL;
	struct restart *rs;
	struct lane *l;
	size_t n = 0;

	if (registry_image_list(d->reg, &v, &n) != REG_OK) {
		log_warnx("commit: cannot read the registry");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].state == IMAGE_READY || v[i].committed_from[0] == '\0')
			continue;
		/* The half-made clone itself is image_recover's. */
		l = lane_find(d, v[i].committed_from);
		if (l == NULL || l->state != LANE_READY || l->committing)
			continue;
		log_info("lane %s: its commit to %s was interrupted; starting "
		    "its VM again", l->name, v[i].name);
		l->committing = true;
		lane_event(l, "commit-interrupted", v[i].name);
		rs = xcalloc(1, sizeof *rs);
		rs->d = d;
		str_copy(rs->lane, l->name, sizeof rs->lane);
		rs->vm = vm_new(d, l->name, rs);
		if (vm_start(rs->vm, restart_done, NULL) == -1) {
			struct vm_result r = { .ok = false };

			str_copy(r.msg, "cannot run limactl start", sizeof r.msg);
			restart_done(rs->vm, &r, rs);
		}
	}
	free(v);
}
