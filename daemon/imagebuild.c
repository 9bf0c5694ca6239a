#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <event2/event.h>

#include "conn.h"
#include "gexec.h"
#include "image.h"
#include "imagebuild.h"
#include "laned.h"
#include "lima.h"
#include "log.h"
#include "names.h"
#include "registry.h"
#include "sha256.h"
#include "units.h"
#include "util.h"
#include "vm.h"

#define IMAGE_TAIL 2048			/* stderr kept for the error */
#define IMAGE_TAIL_LINES 6

/*
 * Runs one provision script as root: the script arrives on stdin and is
 * run as a file, so its #! line picks the interpreter (no #!: sh).
 */
static const char provision_wrapper[] =
    "f=$(mktemp /tmp/agent-lane-provision.XXXXXX) || exit 125\n"
    "cat > \"$f\" || exit 125\n"
    "chmod 0700 \"$f\"\n"
    "cd /\n"
    "\"$f\" </dev/null\n"
    "rc=$?\n"
    "rm -f \"$f\"\n"
    "exit $rc\n";

/*
 * `image build --docker`: Docker Engine from Debian packages, rootless for
 * the lane user. The system daemon never runs: policy-rc.d keeps the
 * packages' postinst from starting it, and it stays masked (membership of
 * the docker group, or a rootful socket, is root in the guest: SECURITY.md).
 * Debian's dockerd-rootless-setuptool.sh takes the directory of
 * dockerd-rootless.sh (/usr/share/docker.io/contrib) for the one holding
 * the docker CLI as well, and fails on "$BIN/docker version": it is given a
 * directory of links that holds both. No fuse-overlayfs: the guest kernel
 * (6.1) mounts overlayfs in a user namespace itself, and fuse3's
 * initramfs hook cost minutes per build under TCG. Exec's login shell
 * picks DOCKER_HOST up from /etc/profile.d. Changing this text changes
 * every docker image's id, as it should. Proved on a real guest by
 * tests/lima/docker.sh (make check-lima).
 */
static const char docker_script[] =
    "#!/bin/sh\n"
    "# agent-lane: rootless Docker Engine for the lane user\n"
    "set -eu\n"
    "user=${SUDO_USER:?run through sudo by agent-laned}\n"
    "uid=$(id -u \"$user\")\n"
    "export DEBIAN_FRONTEND=noninteractive\n"
    "trap 'rm -f /usr/sbin/policy-rc.d' EXIT\n"
    "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d\n"
    "chmod 0755 /usr/sbin/policy-rc.d\n"
    "systemctl mask docker.service docker.socket >/dev/null 2>&1\n"
    "apt-get update\n"
    "apt-get install -y --no-install-recommends docker.io rootlesskit "
    "uidmap slirp4netns dbus-user-session iptables\n"
    "rm -f /usr/sbin/policy-rc.d\n"
    "systemctl disable --now docker.service docker.socket "
    "containerd.service >/dev/null 2>&1 || true\n"
    "systemctl mask docker.service docker.socket\n"
    "grep -q \"^$user:\" /etc/subuid || "
    "usermod --add-subuids 100000-165535 \"$user\"\n"
    "grep -q \"^$user:\" /etc/subgid || "
    "usermod --add-subgids 100000-165535 \"$user\"\n"
    "bin=/usr/local/libexec/agent-lane-docker\n"
    "mkdir -p \"$bin\"\n"
    "ln -sf /usr/share/docker.io/contrib/dockerd-rootless.sh "
    "\"$bin/dockerd-rootless.sh\"\n"
    "ln -sf /usr/bin/docker \"$bin/docker\"\n"
    "loginctl enable-linger \"$user\"\n"
    /*
     * The user's manager may predate dbus-user-session (our own shell
     * session started it): reload it and start the session bus, talking
     * to it over its private socket.
     */
    "i=0; while [ ! -S /run/user/$uid/systemd/private ] && [ $i -lt 60 ]; "
    "do sleep 1; i=$((i + 1)); done\n"
    "runuser -u \"$user\" -- env XDG_RUNTIME_DIR=/run/user/$uid "
    "systemctl --user daemon-reload\n"
    "runuser -u \"$user\" -- env XDG_RUNTIME_DIR=/run/user/$uid "
    "systemctl --user start dbus.socket\n"
    "i=0; while [ ! -S /run/user/$uid/bus ] && [ $i -lt 60 ]; do "
    "sleep 1; i=$((i + 1)); done\n"
    "setup() { runuser -u \"$user\" -- env XDG_RUNTIME_DIR=/run/user/$uid "
    "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/$uid/bus "
    "PATH=$bin:/usr/sbin:/usr/bin:/sbin:/bin "
    "/usr/share/docker.io/contrib/dockerd-rootless-setuptool.sh install "
    "--skip-iptables; }\n"
    /*
     * The setup tool gives the daemon 3 s before `docker version`; under
     * emulation (TCG) dockerd takes longer. Once its socket is up, a
     * second run finds the unit written and running, and completes.
     */
    "setup || { i=0; while [ ! -S /run/user/$uid/docker.sock ] && "
    "[ $i -lt 300 ]; do sleep 1; i=$((i + 1)); done; setup; }\n"
    "printf '%s\\n' 'export DOCKER_HOST=unix:///run/user/$(id -u)/docker.sock'"
    " > /etc/profile.d/agent-lane-docker.sh\n"
    "chmod 0644 /etc/profile.d/agent-lane-docker.sh\n";

/*
 * Run last in every build, after the scripts: Lima copies an image's disk
 * into each clone as it is, so without this every lane cloned from one
 * image would share its /etc/machine-id (systemd makes a new one at a boot
 * that finds the file empty; cloud-init does not). Part of the content id:
 * an image built before this step existed has one machine id for all its
 * lanes, and must not be taken for one built with it.
 */
#define FINISH_SCRIPT_NAME "agent-lane-finish"
static const char finish_script[] =
    "#!/bin/sh\n"
    "# agent-lane: each lane cloned from this image makes its own machine id\n"
    "set -e\n"
    ": > /etc/machine-id\n"
    "rm -f /var/lib/dbus/machine-id\n";

enum build_step {
	BUILD_NONE,
	BUILD_CREATE,	/* limactl create or clone (vm) */
	BUILD_START,	/* limactl start (vm) */
	BUILD_SCRIPT,	/* a provision script (g) */
	BUILD_STOP,	/* limactl stop (vm) */
	BUILD_DELETE,	/* undoing: limactl delete (vm) */
};

struct script {
	char name[IMAGE_SCRIPT_NAME_MAX + 1];
	uint8_t *data;
	size_t len;
};

struct build {
	struct laned *d;
	struct conn *c;			/* NULL once the client is gone */
	struct image_record rec;
	struct vm *vm;
	enum build_step step;
	struct gexec *g;
	bool paused;
	struct script *scripts;
	size_t nscripts, cur;
	char tail[IMAGE_TAIL];		/* the current script's stderr */
	size_t tail_len;
	struct event *deadline;
	int64_t t0;
	bool from_held;
	char from_instance[IMAGE_INSTANCE_SIZE];
	int fail_code;			/* set: the build is being undone */
	char fail_msg[LANE_ERROR_MAX];
	/*
	 * The registry row's name: rec.name, or for a build that replaces
	 * the ready image of that name, "~" + its instance, hidden (not an
	 * image name) until registry_image_replace gives it rec.name.
	 */
	char row[IMAGE_NAME_SIZE];
	bool replacing;
	TAILQ_ENTRY(build) entry;
};

/* The builds in progress (d->builds). */
TAILQ_HEAD(builds, build);

static void build_fail(struct build *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void build_next_script(struct build *);

/* ---- Content address ---- */

static void
hash_field(struct sha256 *h, const void *p, size_t len)
{
	uint8_t n[8];

	/* Length-prefixed: no two input lists hash the same bytes. */
	for (int i = 0; i < 8; i++)
		n[i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
	sha256_update(h, n, 8);
	if (len > 0)
		sha256_update(h, p, len);
}

void
image_content_id(const struct image_inputs *in, char out[IMAGE_ID_SIZE])
{
	struct sha256 h;
	uint8_t dg[SHA256_DIGEST_SIZE];
	char num[64];

	sha256_init(&h);
	hash_field(&h, "agent-lane image v1", 19);
	hash_field(&h, in->base_template, strlen(in->base_template));
	hash_field(&h, in->from_id, strlen(in->from_id));
	snprintf(num, sizeof num, "%d %u %u %u", in->docker ? 1 : 0, in->cpus,
	    in->memory_mib, in->disk_gib);
	hash_field(&h, num, strlen(num));
	if (in->docker)
		hash_field(&h, docker_script, sizeof docker_script - 1);
	hash_field(&h, provision_wrapper, sizeof provision_wrapper - 1);
	for (size_t i = 0; i < in->nscripts; i++)
		hash_field(&h, in->scripts[i].data, in->scripts[i].len);
	hash_field(&h, finish_script, sizeof finish_script - 1);
	sha256_final(&h, dg);
	sha256_hex(dg, out);
}

/* ---- The request check ---- */

static bool
script_name_ok(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n == 0 || n > IMAGE_SCRIPT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* The scripts' names as the row keeps them, '\n'-separated. */
static void
plan_scripts(struct image_record *rec, const Agentlane__V1__BuildImage *req)
{
	for (size_t i = 0; i < req->n_provision; i++) {
		strncat(rec->scripts, req->provision[i]->name,
		    sizeof rec->scripts - strlen(rec->scripts) - 1);
		strncat(rec->scripts, "\n",
		    sizeof rec->scripts - strlen(rec->scripts) - 1);
	}
	if (req->docker)
		strncat(rec->scripts, "docker-rootless\n",
		    sizeof rec->scripts - strlen(rec->scripts) - 1);
}

/* The content id of the request's inputs (into rec->id). */
static void
plan_id(const struct config *cfg, const Agentlane__V1__BuildImage *req,
    const struct image_record *from, struct image_record *rec)
{
	ProtobufCBinaryData bytes[IMAGE_SCRIPTS_N];
	struct image_inputs in;

	for (size_t i = 0; i < req->n_provision; i++)
		bytes[i] = req->provision[i]->script;
	memset(&in, 0, sizeof in);
	in.base_template = cfg->lima_template;
	in.from_id = from != NULL ? from->id : "";
	in.docker = req->docker;
	in.cpus = rec->cpus;
	in.memory_mib = rec->memory_mib;
	in.disk_gib = rec->disk_gib;
	in.scripts = bytes;
	in.nscripts = req->n_provision;
	image_content_id(&in, rec->id);
}

/* The scripts: how many, and names the row and the logs can carry. */
static int
check_scripts(const Agentlane__V1__BuildImage *req, char *err, size_t errlen)
{
	size_t sl = 0;

	if (req->n_provision > IMAGE_SCRIPTS_N) {
		snprintf(err, errlen, "at most %d provision scripts",
		    IMAGE_SCRIPTS_N);
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if (req->n_provision == 0 && !req->docker) {
		snprintf(err, errlen, "an image needs a provision script or "
		    "--docker");
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	for (size_t i = 0; i < req->n_provision; i++) {
		if (!script_name_ok(req->provision[i]->name)) {
			snprintf(err, errlen, "provision script names are 1-%d "
			    "printable characters without spaces",
			    IMAGE_SCRIPT_NAME_MAX);
			return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
		}
		sl += strlen(req->provision[i]->name) + 1;
	}
	if (sl + (req->docker ? 16 : 0) >= IMAGE_SCRIPTS_MAX) {
		snprintf(err, errlen, "provision script names are too long "
		    "together");
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	return 0;
}

int
image_build_check(const struct config *cfg,
    const Agentlane__V1__BuildImage *req, const struct image_record *from,
    struct image_build_plan *plan, char *err, size_t errlen)
{
	struct image_record *rec = &plan->rec;
	int rc;

	memset(plan, 0, sizeof *plan);
	plan->named = req->name != NULL && req->name[0] != '\0';
	if (plan->named && !names_image_valid(req->name)) {
		snprintf(err, errlen, "image names are 1-63 characters of "
		    "[a-z0-9._-], starting with a letter or digit");
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	if ((rc = check_scripts(req, err, errlen)) != 0)
		return rc;
	rec->cpus = req->cpus != 0 ? req->cpus : cfg->default_cpus;
	rec->memory_mib = req->memory_mib != 0 ? req->memory_mib :
	    cfg->default_memory_mib;
	rec->disk_gib = req->disk_gib != 0 ? req->disk_gib :
	    cfg->default_disk_gib;
	if (rec->cpus > cfg->max_cpus || rec->memory_mib < 256 ||
	    rec->memory_mib > cfg->max_memory_mib ||
	    rec->disk_gib > cfg->max_disk_gib) {
		char m[16], dk[16], mm[16], md[16];

		units_format_bytes((uint64_t)rec->memory_mib << 20, m, sizeof m);
		units_format_bytes((uint64_t)rec->disk_gib << 30, dk, sizeof dk);
		units_format_bytes((uint64_t)cfg->max_memory_mib << 20, mm,
		    sizeof mm);
		units_format_bytes((uint64_t)cfg->max_disk_gib << 30, md,
		    sizeof md);
		snprintf(err, errlen, "cpus %u, memory %s, disk %s: outside the "
		    "caps (max_cpus %u, max_memory %s, max_disk %s)", rec->cpus,
		    m, dk, cfg->max_cpus, mm, md);
		return AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED;
	}
	if (req->from != NULL && req->from[0] != '\0') {
		if (from == NULL || !names_image_valid(req->from) ||
		    strcmp(from->name, req->from) != 0) {
			snprintf(err, errlen, "no image %.64s to build from",
			    req->from);
			str_sanitize(err);
			return AGENTLANE__V1__ERROR_CODE__NOT_FOUND;
		}
		/* The parent's disk is the floor: Lima cannot shrink one. */
		if (rec->disk_gib < from->disk_gib)
			rec->disk_gib = from->disk_gib;
		str_copy(rec->from, from->name, sizeof rec->from);
	} else
		from = NULL;
	plan_id(cfg, req, from, rec);
	if (plan->named)
		str_copy(rec->name, req->name, sizeof rec->name);
	else
		snprintf(rec->name, sizeof rec->name, "p-%.16s", rec->id);
	/* Built on an image with Docker, it has Docker (lanes keep userns). */
	rec->docker = req->docker || (from != NULL && from->docker);
	plan_scripts(rec, req);
	return 0;
}

/* ---- The build ---- */

static void
build_progress(struct build *b, const char *phase, const char *msg)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Progress pr = AGENTLANE__V1__PROGRESS__INIT;

	if (b->c == NULL)
		return;
	pr.phase = (char *)phase;
	pr.message = (char *)msg;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_PROGRESS;
	resp.progress = &pr;
	(void)conn_send(b->c, &resp);
}

static void
build_free(struct build *b)
{
	struct laned *d = b->d;

	vm_free(b->vm);
	if (b->g != NULL)
		gexec_abort(b->g);
	if (b->deadline != NULL)
		event_free(b->deadline);
	if (b->from_held)
		image_release(d, b->rec.from);
	if (b->c != NULL)
		conn_set_handler(b->c, NULL, NULL);
	for (size_t i = 0; i < b->nscripts; i++) {
		if (b->scripts[i].data != NULL)
			memset(b->scripts[i].data, 0, b->scripts[i].len);
		free(b->scripts[i].data);
	}
	free(b->scripts);
	TAILQ_REMOVE(d->builds, b, entry);
	free(b);
}

/* The undo ended: the row goes only if the VM went. */
static void
build_undone(struct build *b, bool vm_gone)
{
	struct laned *d = b->d;

	if (vm_gone) {
		if (registry_image_delete(d->reg, b->row) == REG_ERROR)
			log_warnx("image %s: cannot delete the row",
			    b->rec.name);
		(void)registry_event_append(d->reg, b->rec.instance,
		    "image-build-failed", b->fail_msg);
	} else
		log_warnx("image %s: %s was not deleted; it is retried at the "
		    "next start", b->rec.name, b->rec.instance);
	log_warnx("image %s: build failed: %s", b->rec.name, b->fail_msg);
	if (b->c != NULL) {
		conn_set_handler(b->c, NULL, NULL);
		conn_send_error(b->c, b->fail_code, "%s", b->fail_msg);
		b->c = NULL;
	}
	build_free(b);
}

static void
undo_gone(struct vm *vm, void *arg)
{
	build_undone(arg, true);
}

static void
undo_failed(struct vm *vm, const char *why, unsigned attempt,
    uint64_t retry_ms, void *arg)
{
	struct build *b = arg;

	log_warnx("image %s: limactl delete failed: %s", b->rec.name, why);
	build_undone(b, false);
}

/* Deletes the VM, then the row; the client hears why once that is done. */
static void
build_undo(struct build *b)
{
	build_progress(b, "cleanup", "deleting the build VM");
	b->step = BUILD_DELETE;
	vm_delete(b->vm, 1, undo_failed, undo_gone);
}

/*
 * Stops whatever runs and undoes the build. A limactl create or clone in
 * flight is let finish first (vm.c), and its callback undoes it. A second
 * failure while undoing changes nothing.
 */
static void
build_fail(struct build *b, int code, const char *fmt, ...)
{
	va_list ap;

	if (b->fail_code != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->fail_msg, sizeof b->fail_msg, fmt, ap);
	va_end(ap);
	str_sanitize(b->fail_msg);
	b->fail_code = code;
	if (b->g != NULL) {
		gexec_abort(b->g);
		b->g = NULL;
	}
	if (b->d->shutting_down) {
		build_free(b);
		return;
	}
	if (!vm_interrupt(b->vm))
		build_undo(b);
}

/* A limactl step returned: false when the build stops here. */
static bool
step_ok(struct build *b, const struct vm_result *r, const char *verb)
{
	b->step = BUILD_NONE;
	if (b->d->shutting_down) {
		build_free(b);
		return false;
	}
	if (b->fail_code != 0) {
		build_undo(b);
		return false;
	}
	if (r->ok)
		return true;
	build_fail(b, r->code, "limactl %s failed: %s", verb, r->msg);
	return false;
}

/*
 * The image becomes ready under its name; one it replaces is retired (its
 * VM deleted). -1 when the build failed instead.
 */
static int
build_commit(struct build *b)
{
	struct laned *d = b->d;
	struct image_record old;
	bool replaced;
	int rc;

	if (!b->replacing)
		rc = registry_image_set_ready(d->reg, b->row, b->rec.build_ms);
	else if ((rc = registry_image_replace(d->reg, b->row, b->rec.name,
	    b->rec.build_ms, &old, &replaced)) == REG_OK && replaced) {
		(void)registry_event_append(d->reg, old.instance,
		    "image-replaced", b->rec.instance);
		log_info("image %s: replaces %s (id %.16s)", b->rec.name,
		    old.instance, old.id);
		image_retire(d, b->rec.name, &old);
	}
	if (rc == REG_EXISTS) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "image %s is being built by another call", b->rec.name);
		return -1;
	}
	if (rc != REG_OK) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: cannot record image %s", b->rec.name);
		return -1;
	}
	return 0;
}

static void
stop_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct build *b = arg;
	struct laned *d = b->d;
	int64_t took;

	if (!step_ok(b, r, "stop"))
		return;
	took = time_now_ms() - b->t0;
	b->rec.build_ms = took > 0 ? (uint64_t)took : 0;
	if (build_commit(b) == -1)
		return;
	b->rec.state = IMAGE_READY;
	(void)registry_event_append(d->reg, b->rec.instance, "image-ready",
	    b->rec.name);
	log_info("image %s: ready (%s, %llu ms)", b->rec.name, b->rec.instance,
	    (unsigned long long)b->rec.build_ms);
	if (b->c != NULL) {
		build_progress(b, "ready", b->rec.name);
		conn_set_handler(b->c, NULL, NULL);
		image_send(d, b->c, &b->rec, false);
		b->c = NULL;
	}
	build_free(b);
}

/*
 * The last lines of the failing script's stderr, on one line ('|' between
 * lines), in at most len - 1 bytes: whole lines from the end, as many as
 * fit, since the last one usually says why. A last line longer than all
 * the room keeps its end, after "...".
 */
static void
tail_lines(const struct build *b, char *out, size_t len)
{
	size_t end = b->tail_len, start, used = 0, lines = 0;
	char *p;

	out[0] = '\0';
	if (len < 8)
		return;
	while (end > 0 && b->tail[end - 1] == '\n')
		end--;
	/* out is filled from its end: each line before the ones taken. */
	p = out + len - 1;
	*p = '\0';
	while (end > 0 && lines < IMAGE_TAIL_LINES) {
		size_t n, sep;

		for (start = end; start > 0 && b->tail[start - 1] != '\n';
		    start--)
			;
		n = end - start;
		sep = lines > 0 ? 1 : 0;
		if (used + n + sep > len - 1) {
			if (lines == 0) {	/* keep the end of the one line */
				n = len - 1 - 3;
				p -= n;
				memcpy(p, b->tail + end - n, n);
				p -= 3;
				memcpy(p, "...", 3);
				used = len - 1;
			}
			break;
		}
		if (sep) {
			*--p = '|';
			used++;
		}
		p -= n;
		memcpy(p, b->tail + start, n);
		used += n;
		lines++;
		end = start > 0 ? start - 1 : 0;
	}
	memmove(out, p, used + 1);
	str_sanitize(out);
}

static void
script_output(struct gexec *g, int stream, const uint8_t *data, size_t len,
    void *arg)
{
	struct build *b = arg;
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__ExecOutput out = AGENTLANE__V1__EXEC_OUTPUT__INIT;

	if (stream == 2) {
		if (len >= IMAGE_TAIL) {
			memcpy(b->tail, data + len - IMAGE_TAIL, IMAGE_TAIL);
			b->tail_len = IMAGE_TAIL;
		} else {
			if (b->tail_len + len > IMAGE_TAIL) {
				size_t drop = b->tail_len + len - IMAGE_TAIL;

				memmove(b->tail, b->tail + drop,
				    b->tail_len - drop);
				b->tail_len -= drop;
			}
			memcpy(b->tail + b->tail_len, data, len);
			b->tail_len += len;
		}
	}
	if (b->c == NULL)
		return;
	out.stream = stream == 1 ? AGENTLANE__V1__STREAM__STDOUT :
	    AGENTLANE__V1__STREAM__STDERR;
	out.data.data = (uint8_t *)data;
	out.data.len = len;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_EXEC_OUTPUT;
	resp.exec_output = &out;
	(void)conn_send(b->c, &resp);
	/* Backpressure: a slow client slows the script, memory stays bounded. */
	if (!b->paused && conn_output_len(b->c) > CONN_OUTPUT_HIGH) {
		b->paused = true;
		gexec_pause(g, true);
	}
}

static void
script_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	struct build *b = arg;
	const char *name = b->scripts[b->cur].name;
	char tail[IMAGE_TAIL + 1], st[32];

	b->g = NULL;
	b->step = BUILD_NONE;
	b->paused = false;
	if (r->end == GEXEC_FAILED) {
		build_fail(b, r->error, "provision script %s: %s", name,
		    r->message);
		return;
	}
	if (r->end != GEXEC_EXITED || r->code != 0) {
		int head;

		/* The message fits fail_msg: the tail gets the room left. */
		head = snprintf(tail, sizeof tail, "provision script %s failed "
		    "(%s): ", name, gexec_status(r, st, sizeof st));
		if (head < 0 || (size_t)head + 8 >= sizeof b->fail_msg)
			tail[0] = '\0';
		else
			tail_lines(b, tail, sizeof b->fail_msg - (size_t)head);
		build_fail(b, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "provision script %s failed (%s)%s%s", name, st,
		    tail[0] != '\0' ? ": " : "", tail);
		return;
	}
	b->cur++;
	build_next_script(b);
}

static const struct gexec_ops script_ops = {
	.output = script_output,
	.done = script_done,
};

static void
build_next_script(struct build *b)
{
	static const char *const argv_s[] = {
		"sudo", "-n", "/bin/sh", "-c", provision_wrapper,
		"agent-lane-provision",
	};
	struct gexec_bytes argv[6];
	struct gexec_spec spec;
	char err[256], msg[IMAGE_SCRIPT_NAME_MAX + 64];
	struct script *s;

	if (b->cur == b->nscripts) {
		build_progress(b, "stopping", "limactl stop");
		if (vm_stop(b->vm, stop_done) == -1) {
			build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "cannot run limactl stop");
			return;
		}
		b->step = BUILD_STOP;
		return;
	}
	s = &b->scripts[b->cur];
	for (size_t i = 0; i < 6; i++) {
		argv[i].data = (const uint8_t *)argv_s[i];
		argv[i].len = strlen(argv_s[i]);
	}
	memset(&spec, 0, sizeof spec);
	spec.lane = b->rec.instance;
	spec.argv = argv;
	spec.argc = 6;
	spec.cwd = "/";
	spec.stdin = true;
	spec.what = "provision script";
	if (b->cur + 1 == b->nscripts)
		build_progress(b, "finishing", "a fresh machine id for its lanes");
	else {
		snprintf(msg, sizeof msg, "%s (%zu of %zu)", s->name,
		    b->cur + 1, b->nscripts - 1);
		build_progress(b, "provision", msg);
	}
	b->tail_len = 0;
	b->g = gexec_start(b->d->base, &b->d->procs, b->d->lima, &spec,
	    &script_ops, b, err, sizeof err);
	if (b->g == NULL) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "provision script %s: %s", s->name, err);
		return;
	}
	b->step = BUILD_SCRIPT;
	if ((s->len > 0 && gexec_stdin(b->g, s->data, s->len) == -1)) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "provision script %s: the guest closed its input", s->name);
		return;
	}
	gexec_stdin_close(b->g);
}

static void
start_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct build *b = arg;

	if (!step_ok(b, r, "start"))
		return;
	b->cur = 0;
	build_next_script(b);
}

static void
build_start(struct build *b)
{
	build_progress(b, "starting", "booting the build VM");
	if (vm_start(b->vm, start_done, NULL) == -1) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl start");
		return;
	}
	b->step = BUILD_START;
}

static void
create_done(struct vm *vm, const struct vm_result *r, void *arg)
{
	struct build *b = arg;

	if (b->from_held) {
		image_release(b->d, b->rec.from);
		b->from_held = false;
	}
	if (!step_ok(b, r, b->rec.from[0] != '\0' ? "clone" : "create"))
		return;
	build_start(b);
}

static void
build_deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct build *b = arg;

	build_fail(b, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
	    "image build did not finish within %llu s (image_build_timeout)",
	    (unsigned long long)(b->d->cfg.image_build_timeout_ms / 1000));
}

static void
build_closed(struct conn *c, void *ctx)
{
	struct build *b = ctx;

	b->c = NULL;
	build_fail(b, AGENTLANE__V1__ERROR_CODE__CANCELLED,
	    "the client went away: build cancelled");
}

static void
build_drained(struct conn *c, void *ctx)
{
	struct build *b = ctx;

	if (b->paused && b->g != NULL) {
		b->paused = false;
		gexec_pause(b->g, false);
	}
}

static const struct conn_handler build_handler = {
	.drained = build_drained,
	.closed = build_closed,
};

/*
 * The VM: created from the isolated lane template, or cloned from the
 * parent with that template replacing the parent's YAML. Builds run
 * scripts that install packages: no network policy.
 */
static void
build_create(struct build *b)
{
	struct lima_lane_spec spec = { .cpus = b->rec.cpus,
	    .memory_mib = b->rec.memory_mib, .disk_gib = b->rec.disk_gib };
	char yaml[4096];
	int n, rc;

	if ((n = lima_yaml_render(b->d->lima, &spec, yaml, sizeof yaml)) < 0) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "the image YAML is too large");
		return;
	}
	if (b->from_held) {
		build_progress(b, "cloning", b->rec.from);
		rc = vm_clone(b->vm, b->from_instance, yaml, (size_t)n,
		    create_done);
	} else {
		build_progress(b, "creating", "limactl create");
		rc = vm_create(b->vm, yaml, (size_t)n, create_done, NULL);
	}
	if (rc == -1) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl %s", b->from_held ? "clone" : "create");
		return;
	}
	b->step = BUILD_CREATE;
}

/* ---- The call ---- */

/*
 * An image with these inputs exists: the same name built from the same
 * inputs, or, for a build named by its content (create --provision), any
 * ready image with its id. True when c was answered. *replace: the name is
 * a ready image built from other inputs, which this build replaces.
 */
static bool
build_reuse(struct laned *d, struct conn *c, const struct image_build_plan *p,
    bool no_replace, bool *replace)
{
	const struct image_record *rec = &p->rec;
	struct image_record old;
	int rc;

	*replace = false;
	if ((rc = registry_image_get(d->reg, rec->name, &old)) == REG_OK) {
		if (old.state == IMAGE_READY && strcmp(old.id, rec->id) == 0) {
			log_info("image %s: identical inputs, nothing to build",
			    rec->name);
			image_send(d, c, &old, true);
		} else if (old.state == IMAGE_READY && !no_replace) {
			/* As docker build -t: the name moves when it is ready. */
			*replace = true;
			return false;
		} else if (old.state == IMAGE_READY)
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "image %s exists, built from other inputs "
			    "(--no-replace); build without it to replace the "
			    "image, or remove it (agent-lanectl image rm %s)",
			    rec->name, rec->name);
		else
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "image %s is being built", rec->name);
		return true;
	}
	if (rc == REG_NOT_FOUND && !p->named)
		rc = registry_image_by_id(d->reg, rec->id, &old);
	if (rc == REG_OK) {
		log_info("image %s has the same content (id %.16s): nothing to "
		    "build", old.name, old.id);
		image_send(d, c, &old, true);
		return true;
	}
	if (rc != REG_NOT_FOUND) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return true;
	}
	return false;
}

static int
image_insert(void *arg)
{
	struct build *b = arg;
	struct image_record rec = b->rec;

	/* The instance is new on each try: so is a replacement's row name. */
	if (b->replacing)
		snprintf(b->row, sizeof b->row, "~%s", b->rec.instance);
	str_copy(rec.name, b->row, sizeof rec.name);
	return registry_image_insert(b->d->reg, &rec);
}

/* The build of a checked plan, holding its parent; NULL: c was answered. */
static struct build *
build_new(struct laned *d, struct conn *c, const struct image_build_plan *p,
    const Agentlane__V1__BuildImage *req)
{
	struct build *b = xcalloc(1, sizeof *b);
	char err[256];

	b->d = d;
	b->rec = p->rec;
	b->rec.created_at_ms = time_now_ms();
	str_copy(b->row, b->rec.name, sizeof b->row);
	if (b->rec.from[0] != '\0' && image_hold(d, b->rec.from,
	    b->from_instance, NULL, err, sizeof err) != 0) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "%s", err);
		free(b);
		return NULL;
	}
	b->from_held = b->rec.from[0] != '\0';
	b->nscripts = req->n_provision + (req->docker ? 1 : 0) + 1;
	b->scripts = xcalloc(b->nscripts + 1, sizeof *b->scripts);
	for (size_t i = 0; i < req->n_provision; i++) {
		struct script *s = &b->scripts[i];

		str_copy(s->name, req->provision[i]->name, sizeof s->name);
		s->len = req->provision[i]->script.len;
		s->data = xmalloc(s->len + 1);
		if (s->len > 0)
			memcpy(s->data, req->provision[i]->script.data, s->len);
	}
	if (req->docker) {
		struct script *s = &b->scripts[req->n_provision];

		str_copy(s->name, "docker-rootless", sizeof s->name);
		s->len = sizeof docker_script - 1;
		s->data = xmalloc(s->len);
		memcpy(s->data, docker_script, s->len);
	}
	{
		struct script *s = &b->scripts[b->nscripts - 1];

		str_copy(s->name, FINISH_SCRIPT_NAME, sizeof s->name);
		s->len = sizeof finish_script - 1;
		s->data = xmalloc(s->len);
		memcpy(s->data, finish_script, s->len);
	}
	TAILQ_INSERT_TAIL(d->builds, b, entry);
	return b;
}

/* Register before create: the row names the VM before it exists. */
static int
build_register(struct build *b)
{
	struct image_record old;
	int rc;

	rc = vm_register(b->d, true, b->rec.instance, sizeof b->rec.instance,
	    image_insert, b);
	/* REG_EXISTS from the name, not the instance: no retry helps. */
	if (rc == REG_EXISTS || (rc != REG_OK && registry_image_get(b->d->reg,
	    b->row, &old) == REG_OK))
		return -1;
	return rc == REG_OK ? 0 : -1;
}

void
image_handle_build(struct laned *d, struct conn *c,
    const Agentlane__V1__BuildImage *req)
{
	struct image_build_plan plan;
	struct image_record from, *all = NULL;
	struct build *b;
	size_t nimages = 0;
	char err[256];
	struct timeval tv;
	bool replace;
	int rc;

	memset(&from, 0, sizeof from);
	if (req->from != NULL && names_image_valid(req->from) &&
	    (rc = registry_image_get(d->reg, req->from, &from)) != REG_OK &&
	    rc != REG_NOT_FOUND) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	if ((rc = image_build_check(&d->cfg, req, from.name[0] != '\0' ?
	    &from : NULL, &plan, err, sizeof err)) != 0) {
		conn_send_error(c, rc, "%s", err);
		return;
	}
	if (build_reuse(d, c, &plan, req->no_replace, &replace))
		return;
	if (registry_image_list(d->reg, &all, &nimages) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	free(all);
	/* A replacement takes the place of the image it replaces. */
	if (nimages - (replace ? 1 : 0) >= d->cfg.max_images) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "%zu images exist; the cap is %u (max_images)", nimages,
		    d->cfg.max_images);
		return;
	}
	if ((b = build_new(d, c, &plan, req)) == NULL)
		return;
	b->replacing = replace;
	if (build_register(b) == -1) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: cannot register image %s", b->rec.name);
		build_free(b);
		return;
	}
	(void)registry_event_append(d->reg, b->rec.instance, "image-registered",
	    b->rec.name);
	log_info("image %s: building as %s (id %.16s)", b->rec.name,
	    b->rec.instance, b->rec.id);
	b->c = c;
	b->vm = vm_new(d, b->rec.instance, b);
	b->rec.state = IMAGE_BUILDING;
	b->t0 = time_now_ms();
	conn_set_handler(c, &build_handler, b);
	tv = tv_from_ms(d->cfg.image_build_timeout_ms);
	if ((b->deadline = evtimer_new(d->base, build_deadline_cb, b)) ==
	    NULL || evtimer_add(b->deadline, &tv) != 0)
		fatalx("evtimer_add");
	build_progress(b, "registered", b->rec.name);
	build_create(b);
}

/* ---- Life cycle ---- */

void
image_build_init(struct laned *d)
{
	d->builds = xcalloc(1, sizeof *d->builds);
	TAILQ_INIT(d->builds);
}

void
image_build_free_all(struct laned *d)
{
	struct build *b;

	if (d->builds == NULL)
		return;
	/* Rows stay "building": the next start deletes those VMs. */
	while ((b = TAILQ_FIRST(d->builds)) != NULL)
		build_free(b);
	free(d->builds);
	d->builds = NULL;
}
