#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "conn.h"
#include "gexec.h"
#include "image.h"
#include "laned.h"
#include "lima.h"
#include "log.h"
#include "proc.h"
#include "registry.h"
#include "sha256.h"
#include "units.h"
#include "util.h"

#define IMAGE_SCRIPTS_N 64		/* provision scripts per build */
#define IMAGE_SCRIPT_NAME_MAX 255
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

enum build_step {
	BUILD_NONE,
	BUILD_CREATE,	/* limactl create (proc) */
	BUILD_START,	/* limactl start (proc) */
	BUILD_SCRIPT,	/* a provision script (g) */
	BUILD_STOP,	/* limactl stop (proc) */
	BUILD_DELETE,	/* cleanup: limactl delete --force (proc) */
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
	enum build_step step;
	struct proc *proc;
	struct gexec *g;
	bool paused;
	struct script *scripts;
	size_t nscripts, cur;
	char tail[IMAGE_TAIL];		/* the current script's stderr */
	size_t tail_len;
	struct event *deadline;
	int64_t t0;
	bool from_held;
	int fail_code;			/* set: the build is being undone */
	char fail_msg[LANE_ERROR_MAX];
	TAILQ_ENTRY(build) entry;
};

/* An image clones or builds are using; image rm refuses while n > 0. */
struct hold {
	char name[IMAGE_NAME_SIZE];
	unsigned n;
	bool removing;
	TAILQ_ENTRY(hold) entry;
};

struct images {
	TAILQ_HEAD(, build) builds;
	TAILQ_HEAD(, hold) holds;
};

static void build_fail(struct build *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void build_next_script(struct build *);

/* ---- Content address and names ---- */

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
	sha256_final(&h, dg);
	sha256_hex(dg, out);
}

bool
image_name_valid(const char *s)
{
	size_t n;

	if (s == NULL || (n = strlen(s)) == 0 || n >= IMAGE_NAME_SIZE)
		return false;
	if (strchr("abcdefghijklmnopqrstuvwxyz0123456789", s[0]) == NULL)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* ---- Holds ---- */

static struct hold *
hold_find(struct laned *d, const char *name, bool create)
{
	struct hold *h;

	if (d->images == NULL)		/* daemon exit */
		return NULL;
	TAILQ_FOREACH(h, &d->images->holds, entry)
		if (strcmp(h->name, name) == 0)
			return h;
	if (!create)
		return NULL;
	h = xcalloc(1, sizeof *h);
	str_copy(h->name, name, sizeof h->name);
	TAILQ_INSERT_TAIL(&d->images->holds, h, entry);
	return h;
}

static void
hold_drop_if_idle(struct laned *d, struct hold *h)
{
	if (h->n == 0 && !h->removing) {
		TAILQ_REMOVE(&d->images->holds, h, entry);
		free(h);
	}
}

static unsigned
hold_count(struct laned *d, const char *name)
{
	struct hold *h = hold_find(d, name, false);

	return h != NULL ? h->n : 0;
}

int
image_hold(struct laned *d, const char *name,
    char instance[IMAGE_INSTANCE_SIZE], uint32_t *disk_gib, char *err,
    size_t errlen)
{
	struct image_record rec;
	struct hold *h;
	int rc;

	if (!image_name_valid(name)) {
		snprintf(err, errlen, "invalid image name");
		return AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT;
	}
	rc = registry_image_get(d->reg, name, &rec);
	if (rc == REG_NOT_FOUND) {
		snprintf(err, errlen, "no image %s (agent-lanectl image ls)",
		    name);
		return AGENTLANE__V1__ERROR_CODE__NOT_FOUND;
	}
	if (rc != REG_OK) {
		snprintf(err, errlen, "registry error: cannot read image %s",
		    name);
		return AGENTLANE__V1__ERROR_CODE__INTERNAL;
	}
	if (rec.state != IMAGE_READY || !lima_image_name_valid(rec.instance)) {
		snprintf(err, errlen, "image %s is still being built", name);
		return AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION;
	}
	h = hold_find(d, name, true);
	if (h == NULL || h->removing) {
		snprintf(err, errlen, "image %s is being removed", name);
		return AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION;
	}
	h->n++;
	str_copy(instance, rec.instance, IMAGE_INSTANCE_SIZE);
	if (disk_gib != NULL)
		*disk_gib = rec.disk_gib;
	return 0;
}

void
image_release(struct laned *d, const char *name)
{
	struct hold *h = hold_find(d, name, false);

	if (d->images == NULL)
		return;
	if (h == NULL || h->n == 0) {
		log_warnx("image %s: released more often than held", name);
		return;
	}
	h->n--;
	hold_drop_if_idle(d, h);
}

/* ---- Protobuf ---- */

static void
image_to_proto(struct laned *d, const struct image_record *rec,
    Agentlane__V1__Image *im, char **names, size_t maxnames, char *buf)
{
	size_t n = 0;
	char *p, *save = NULL;

	agentlane__v1__image__init(im);
	im->name = (char *)rec->name;
	im->id = (char *)rec->id;
	im->from = (char *)rec->from;
	im->docker = rec->docker;
	im->cpus = rec->cpus;
	im->memory_mib = rec->memory_mib;
	im->disk_gib = rec->disk_gib;
	im->created_at_ms = rec->created_at_ms;
	im->build_ms = rec->build_ms;
	im->in_use = hold_count(d, rec->name);
	str_copy(buf, rec->scripts, IMAGE_SCRIPTS_MAX);
	for (p = strtok_r(buf, "\n", &save); p != NULL && n < maxnames;
	    p = strtok_r(NULL, "\n", &save))
		names[n++] = p;
	im->n_scripts = n;
	im->scripts = names;
}

static void
send_image(struct laned *d, struct conn *c, const struct image_record *rec,
    bool cached)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Image im;
	char *names[IMAGE_SCRIPTS_N], buf[IMAGE_SCRIPTS_MAX];

	image_to_proto(d, rec, &im, names, IMAGE_SCRIPTS_N, buf);
	im.cached = cached;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_IMAGE;
	resp.image = &im;
	(void)conn_send(c, &resp);
	conn_finish(c);
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

	if (b->proc != NULL)
		proc_abandon(b->proc);
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
	TAILQ_REMOVE(&d->images->builds, b, entry);
	free(b);
}

static struct proc *
build_spawn(struct build *b, char **argv, uint64_t timeout_ms,
    const char *verb, proc_done_cb done)
{
	struct proc_spec ps;
	struct proc *p;
	char what[64], err[256];

	if (argv == NULL) {
		log_warnx("image %s: refusing limactl %s: invalid instance "
		    "name", b->rec.name, verb);
		return NULL;
	}
	snprintf(what, sizeof what, "limactl %s %s", verb, b->rec.instance);
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(b->d->lima);
	ps.in = PROC_IN_NULL;
	ps.out = PROC_OUT_NULL;
	ps.timeout_ms = timeout_ms;
	ps.what = what;
	p = proc_spawn(b->d->base, &b->d->procs, &ps, done, b, err, sizeof err);
	lima_argv_free(argv);
	if (p == NULL)
		log_warnx("image %s: %s", b->rec.name, err);
	return p;
}

/* The undo ended: the row goes only if the VM went. */
static void
build_undone(struct build *b, bool vm_gone)
{
	struct laned *d = b->d;

	if (vm_gone) {
		if (registry_image_delete(d->reg, b->rec.name) == REG_ERROR)
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
delete_done(struct proc *p, int status, void *arg)
{
	struct build *b = arg;

	b->proc = NULL;
	b->step = BUILD_NONE;
	if (b->d->shutting_down) {
		build_free(b);
		return;
	}
	build_undone(b, WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Stops whatever runs, deletes the VM, then the row; the client hears why
 * once that is done. A second failure while undoing changes nothing.
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
	if (b->proc != NULL) {
		proc_abandon(b->proc);
		b->proc = NULL;
	}
	if (b->d->shutting_down) {
		build_free(b);
		return;
	}
	build_progress(b, "cleanup", "deleting the build VM");
	b->step = BUILD_DELETE;
	b->proc = build_spawn(b, lima_argv_delete(b->d->lima, b->rec.instance),
	    b->d->cfg.command_timeout_ms, "delete", delete_done);
	if (b->proc == NULL)
		build_undone(b, false);
}

static bool
step_ok(struct build *b, struct proc *p, int status, const char *verb)
{
	char msg[256], st[32];

	b->proc = NULL;
	b->step = BUILD_NONE;
	if (b->d->shutting_down) {
		build_free(b);
		return false;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	lima_error_message(b->d->lima, proc_stderr(p), msg, sizeof msg);
	proc_status_string(status, st, sizeof st);
	build_fail(b, proc_timed_out(p) ?
	    AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED :
	    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED, "limactl %s failed: %s%s%s",
	    verb, proc_timed_out(p) ? "timed out" : st, msg[0] ? ": " : "", msg);
	return false;
}

static void
stop_done(struct proc *p, int status, void *arg)
{
	struct build *b = arg;
	struct laned *d = b->d;
	int64_t took;

	if (!step_ok(b, p, status, "stop"))
		return;
	took = time_now_ms() - b->t0;
	b->rec.build_ms = took > 0 ? (uint64_t)took : 0;
	if (registry_image_set_ready(d->reg, b->rec.name, b->rec.build_ms) !=
	    REG_OK) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: cannot record image %s", b->rec.name);
		return;
	}
	b->rec.state = IMAGE_READY;
	(void)registry_event_append(d->reg, b->rec.instance, "image-ready",
	    b->rec.name);
	log_info("image %s: ready (%s, %llu ms)", b->rec.name, b->rec.instance,
	    (unsigned long long)b->rec.build_ms);
	if (b->c != NULL) {
		build_progress(b, "ready", b->rec.name);
		conn_set_handler(b->c, NULL, NULL);
		send_image(d, b->c, &b->rec, false);
		b->c = NULL;
	}
	build_free(b);
}

/* The last lines of the failing script's stderr, on one line. */
static void
tail_lines(const struct build *b, char *out, size_t len)
{
	size_t start = b->tail_len, lines = 0;
	char *p;

	while (start > 0 && lines <= IMAGE_TAIL_LINES) {
		start--;
		if (b->tail[start] == '\n' && start + 1 < b->tail_len)
			lines++;
	}
	if (lines > IMAGE_TAIL_LINES)
		start++;
	snprintf(out, len, "%.*s", (int)(b->tail_len - start), b->tail + start);
	while ((p = strrchr(out, '\n')) != NULL && p[1] == '\0')
		*p = '\0';
	for (p = out; *p != '\0'; p++)
		if (*p == '\n')
			*p = '|';
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
		tail_lines(b, tail, sizeof tail);
		build_fail(b, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "provision script %s failed (%s)%s%s", name,
		    gexec_status(r, st, sizeof st),
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
		b->proc = build_spawn(b, lima_argv_stop(b->d->lima,
		    b->rec.instance), b->d->cfg.command_timeout_ms, "stop",
		    stop_done);
		if (b->proc == NULL) {
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
	snprintf(msg, sizeof msg, "%s (%zu of %zu)", s->name, b->cur + 1,
	    b->nscripts);
	build_progress(b, "provision", msg);
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
start_done(struct proc *p, int status, void *arg)
{
	struct build *b = arg;

	if (!step_ok(b, p, status, "start"))
		return;
	b->cur = 0;
	build_next_script(b);
}

static void
build_yaml_path(struct build *b, char *buf, size_t len)
{
	snprintf(buf, len, "%s/lanes/%s.yaml", b->d->cfg.state_dir,
	    b->rec.instance);
}

static void
create_done(struct proc *p, int status, void *arg)
{
	struct build *b = arg;
	char path[PATH_MAX];

	build_yaml_path(b, path, sizeof path);
	(void)unlink(path);
	if (!step_ok(b, p, status, "create"))
		return;
	build_progress(b, "starting", "booting the build VM");
	b->proc = build_spawn(b, lima_argv_start(b->d->lima, b->rec.instance,
	    b->d->cfg.start_timeout_ms), b->d->cfg.start_timeout_ms +
	    5 * UNITS_MS_PER_S, "start", start_done);
	if (b->proc == NULL) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl start");
		return;
	}
	b->step = BUILD_START;
}

static void
clone_from_done(struct proc *p, int status, void *arg)
{
	struct build *b = arg;
	/* Builds run scripts that install packages: no network policy. */
	struct lima_lane_spec spec = { .cpus = b->rec.cpus,
	    .memory_mib = b->rec.memory_mib, .disk_gib = b->rec.disk_gib };
	char yaml[4096], err[256];
	int n;

	if (b->from_held) {
		image_release(b->d, b->rec.from);
		b->from_held = false;
	}
	if (!step_ok(b, p, status, "clone"))
		return;
	/* The parent's YAML is not trusted either. */
	if ((n = lima_yaml_render(b->d->lima, &spec, yaml, sizeof yaml)) < 0 ||
	    lima_yaml_replace(b->d->lima, b->rec.instance, yaml, (size_t)n,
	    err, sizeof err) == -1) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "rewriting the clone's YAML: %s", n < 0 ? "too large" : err);
		return;
	}
	create_done(p, status, b);
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

static int
write_build_yaml(struct build *b, char *err, size_t errlen)
{
	/* Builds run scripts that install packages: no network policy. */
	struct lima_lane_spec spec = { .cpus = b->rec.cpus,
	    .memory_mib = b->rec.memory_mib, .disk_gib = b->rec.disk_gib };
	char yaml[4096], path[PATH_MAX];
	int n;

	if ((n = lima_yaml_render(b->d->lima, &spec, yaml, sizeof yaml)) < 0) {
		snprintf(err, errlen, "image YAML too large");
		return -1;
	}
	build_yaml_path(b, path, sizeof path);
	return file_replace_private(path, yaml, (size_t)n, err, errlen);
}

/* ---- Calls ---- */

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

void
image_handle_build(struct laned *d, struct conn *c,
    const Agentlane__V1__BuildImage *req)
{
	struct image_record rec, from, old;
	struct image_inputs in;
	ProtobufCBinaryData *bytes = NULL;
	struct build *b;
	size_t nimages = 0, sl = 0;
	struct image_record *all = NULL;
	char err[256], path[PATH_MAX];
	struct timeval tv;
	int rc;

	memset(&rec, 0, sizeof rec);
	memset(&from, 0, sizeof from);
	if (req->name != NULL && req->name[0] != '\0' &&
	    !image_name_valid(req->name)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "image names are 1-63 characters of [a-z0-9._-], "
		    "starting with a letter or digit");
		return;
	}
	if (req->n_provision > IMAGE_SCRIPTS_N) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "at most %d provision scripts", IMAGE_SCRIPTS_N);
		return;
	}
	if (req->n_provision == 0 && !req->docker) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "an image needs a provision script or --docker");
		return;
	}
	for (size_t i = 0; i < req->n_provision; i++) {
		if (!script_name_ok(req->provision[i]->name)) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "provision script names are 1-%d printable "
			    "characters without spaces", IMAGE_SCRIPT_NAME_MAX);
			return;
		}
		sl += strlen(req->provision[i]->name) + 1;
	}
	if (sl >= IMAGE_SCRIPTS_MAX) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "provision script names are too long together");
		return;
	}
	rec.cpus = req->cpus != 0 ? req->cpus : d->cfg.default_cpus;
	rec.memory_mib = req->memory_mib != 0 ? req->memory_mib :
	    d->cfg.default_memory_mib;
	rec.disk_gib = req->disk_gib != 0 ? req->disk_gib :
	    d->cfg.default_disk_gib;
	if (rec.cpus > d->cfg.max_cpus || rec.memory_mib < 256 ||
	    rec.memory_mib > d->cfg.max_memory_mib ||
	    rec.disk_gib > d->cfg.max_disk_gib) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "cpus %u, memory %u MiB, disk %u GiB: outside the caps "
		    "(max_cpus %u, max_memory %u MiB, max_disk %u GiB)",
		    rec.cpus, rec.memory_mib, rec.disk_gib, d->cfg.max_cpus,
		    d->cfg.max_memory_mib, d->cfg.max_disk_gib);
		return;
	}
	if (req->from != NULL && req->from[0] != '\0') {
		if (!image_name_valid(req->from) ||
		    (rc = registry_image_get(d->reg, req->from, &from)) ==
		    REG_NOT_FOUND) {
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
			    "no image %s to build from", req->from);
			return;
		}
		if (rc != REG_OK) {
			conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "registry error");
			return;
		}
		/* The parent's disk is the floor: Lima cannot shrink one. */
		if (rec.disk_gib < from.disk_gib)
			rec.disk_gib = from.disk_gib;
	}
	if (req->n_provision > 0)
		bytes = xcalloc(req->n_provision, sizeof *bytes);
	for (size_t i = 0; i < req->n_provision; i++)
		bytes[i] = req->provision[i]->script;
	memset(&in, 0, sizeof in);
	in.base_template = d->cfg.lima_template;
	in.from_id = from.id;
	in.docker = req->docker;
	in.cpus = rec.cpus;
	in.memory_mib = rec.memory_mib;
	in.disk_gib = rec.disk_gib;
	in.scripts = bytes;
	in.nscripts = req->n_provision;
	image_content_id(&in, rec.id);
	free(bytes);
	if (req->name != NULL && req->name[0] != '\0')
		str_copy(rec.name, req->name, sizeof rec.name);
	else
		snprintf(rec.name, sizeof rec.name, "p-%.16s", rec.id);

	rc = registry_image_get(d->reg, rec.name, &old);
	if (rc == REG_OK) {
		if (old.state == IMAGE_READY && strcmp(old.id, rec.id) == 0) {
			log_info("image %s: identical inputs, nothing to build",
			    rec.name);
			send_image(d, c, &old, true);
			return;
		}
		if (old.state == IMAGE_READY)
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "image %s exists, built from other inputs; remove "
			    "it first (agent-lanectl image rm %s)", rec.name,
			    rec.name);
		else
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "image %s is being built", rec.name);
		return;
	}
	if (rc != REG_NOT_FOUND ||
	    registry_image_list(d->reg, &all, &nimages) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	free(all);
	if (nimages >= d->cfg.max_images) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "%zu images exist; the cap is %u (max_images)", nimages,
		    d->cfg.max_images);
		return;
	}
	if (from.name[0] != '\0' && image_hold(d, from.name, from.instance,
	    NULL, err, sizeof err) != 0) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "%s", err);
		return;
	}
	str_copy(rec.from, from.name, sizeof rec.from);
	/* Built on an image with Docker, it has Docker (lanes keep userns). */
	rec.docker = req->docker || from.docker;
	rec.created_at_ms = time_now_ms();
	for (size_t i = 0; i < req->n_provision; i++) {
		strncat(rec.scripts, req->provision[i]->name,
		    sizeof rec.scripts - strlen(rec.scripts) - 1);
		strncat(rec.scripts, "\n",
		    sizeof rec.scripts - strlen(rec.scripts) - 1);
	}
	if (req->docker)
		strncat(rec.scripts, "docker-rootless\n",
		    sizeof rec.scripts - strlen(rec.scripts) - 1);
	/* Register before create: the row names the VM before it exists. */
	rc = REG_EXISTS;
	for (int tries = 0; rc == REG_EXISTS && tries < 8; tries++) {
		if (lima_image_name_generate(rec.instance,
		    sizeof rec.instance) == -1)
			break;
		if (lima_instance_exists(d->lima, rec.instance))
			continue;
		rc = registry_image_insert(d->reg, &rec);
		if (rc == REG_EXISTS &&
		    registry_image_get(d->reg, rec.name, &old) == REG_OK) {
			rc = REG_ERROR;		/* the name, not the instance */
			break;
		}
	}
	if (rc != REG_OK) {
		if (from.name[0] != '\0')
			image_release(d, from.name);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error: cannot register image %s", rec.name);
		return;
	}
	(void)registry_event_append(d->reg, rec.instance, "image-registered",
	    rec.name);
	log_info("image %s: building as %s (id %.16s)", rec.name, rec.instance,
	    rec.id);

	b = xcalloc(1, sizeof *b);
	b->d = d;
	b->c = c;
	b->rec = rec;
	b->rec.state = IMAGE_BUILDING;
	b->t0 = time_now_ms();
	b->from_held = from.name[0] != '\0';
	b->nscripts = req->n_provision + (req->docker ? 1 : 0);
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
	TAILQ_INSERT_TAIL(&d->images->builds, b, entry);
	conn_set_handler(c, &build_handler, b);
	tv = tv_from_ms(d->cfg.image_build_timeout_ms);
	if ((b->deadline = evtimer_new(d->base, build_deadline_cb, b)) ==
	    NULL || evtimer_add(b->deadline, &tv) != 0)
		fatalx("evtimer_add");
	build_progress(b, "registered", rec.name);

	if (b->from_held) {
		build_progress(b, "cloning", from.name);
		b->proc = build_spawn(b, lima_argv_clone(d->lima,
		    from.instance, rec.instance), d->cfg.command_timeout_ms,
		    "clone", clone_from_done);
		if (b->proc == NULL) {
			build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
			    "cannot run limactl clone");
			return;
		}
		b->step = BUILD_CREATE;
		return;
	}
	if (write_build_yaml(b, err, sizeof err) == -1) {
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "writing the image YAML: %s", err);
		return;
	}
	build_yaml_path(b, path, sizeof path);
	build_progress(b, "creating", "limactl create");
	b->proc = build_spawn(b, lima_argv_create(d->lima, rec.instance, path),
	    d->cfg.command_timeout_ms, "create", create_done);
	if (b->proc == NULL) {
		(void)unlink(path);
		build_fail(b, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl create");
		return;
	}
	b->step = BUILD_CREATE;
}

void
image_handle_list(struct laned *d, struct conn *c)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__ImageList il = AGENTLANE__V1__IMAGE_LIST__INIT;
	struct image_record *v = NULL;
	Agentlane__V1__Image *ims = NULL, **imv = NULL;
	char *(*names)[IMAGE_SCRIPTS_N] = NULL;
	char (*bufs)[IMAGE_SCRIPTS_MAX] = NULL;
	size_t n = 0, k = 0;

	if (registry_image_list(d->reg, &v, &n) != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	if (n > 0) {
		ims = xcalloc(n, sizeof *ims);
		imv = xcalloc(n, sizeof *imv);
		names = xcalloc(n, sizeof *names);
		bufs = xcalloc(n, sizeof *bufs);
	}
	/* Builds in progress are not images yet. max_images bounds n. */
	for (size_t i = 0; i < n; i++) {
		if (v[i].state != IMAGE_READY)
			continue;
		image_to_proto(d, &v[i], &ims[k], names[k], IMAGE_SCRIPTS_N,
		    bufs[k]);
		imv[k] = &ims[k];
		k++;
	}
	il.n_images = k;
	il.images = imv;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_IMAGE_LIST;
	resp.image_list = &il;
	(void)conn_send(c, &resp);
	conn_finish(c);
	free(bufs);
	free(names);
	free(imv);
	free(ims);
	free(v);
}

void
image_handle_get(struct laned *d, struct conn *c, const char *name)
{
	struct image_record rec;
	int rc;

	if (!image_name_valid(name)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "invalid image name");
		return;
	}
	rc = registry_image_get(d->reg, name, &rec);
	if (rc == REG_NOT_FOUND || (rc == REG_OK && rec.state != IMAGE_READY)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "no image %s", name);
		return;
	}
	if (rc != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	send_image(d, c, &rec, false);
}

struct removal {
	struct laned *d;
	struct conn *c;
	struct image_record rec;
	struct proc *proc;
};

static void
removal_closed(struct conn *c, void *ctx)
{
	struct removal *r = ctx;

	r->c = NULL;	/* the delete goes on; nobody to tell */
}

static const struct conn_handler removal_handler = {
	.closed = removal_closed,
};

static void
removal_done(struct proc *p, int status, void *arg)
{
	struct removal *r = arg;
	struct laned *d = r->d;
	struct hold *h = hold_find(d, r->rec.name, false);
	char msg[256], st[32];

	if (h != NULL) {
		h->removing = false;
		hold_drop_if_idle(d, h);
	}
	if (d->shutting_down) {
		free(r);
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (registry_image_delete(d->reg, r->rec.name) == REG_ERROR)
			log_warnx("image %s: cannot delete the row",
			    r->rec.name);
		(void)registry_event_append(d->reg, r->rec.instance,
		    "image-removed", r->rec.name);
		log_info("image %s: removed (%s)", r->rec.name,
		    r->rec.instance);
		if (r->c != NULL) {
			conn_set_handler(r->c, NULL, NULL);
			send_image(d, r->c, &r->rec, false);
		}
	} else {
		lima_error_message(d->lima, proc_stderr(p), msg, sizeof msg);
		proc_status_string(status, st, sizeof st);
		log_warnx("image %s: limactl delete failed: %s %s",
		    r->rec.name, st, msg);
		if (r->c != NULL) {
			conn_set_handler(r->c, NULL, NULL);
			conn_send_error(r->c,
			    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
			    "limactl delete failed: %s%s%s", st,
			    msg[0] ? ": " : "", msg);
		}
	}
	free(r);
}

void
image_handle_remove(struct laned *d, struct conn *c, const char *name)
{
	struct image_record rec;
	struct removal *r;
	struct proc_spec ps;
	struct hold *h;
	char **argv, what[64], err[256];
	int rc;

	if (!image_name_valid(name)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "invalid image name");
		return;
	}
	rc = registry_image_get(d->reg, name, &rec);
	if (rc == REG_NOT_FOUND) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "no image %s", name);
		return;
	}
	if (rc != REG_OK) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "registry error");
		return;
	}
	if (rec.state != IMAGE_READY) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "image %s is being built; cancel the build instead", name);
		return;
	}
	h = hold_find(d, name, true);
	if (h->n > 0 || h->removing) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    h->removing ? "image %s is already being removed" :
		    "image %s is in use by %u clone(s) or build(s); try again "
		    "when they are done", name, h->n);
		return;
	}
	if ((argv = lima_argv_delete(d->lima, rec.instance)) == NULL) {
		hold_drop_if_idle(d, h);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "image %s has an invalid instance name", name);
		return;
	}
	r = xcalloc(1, sizeof *r);
	r->d = d;
	r->c = c;
	r->rec = rec;
	snprintf(what, sizeof what, "limactl delete %s", rec.instance);
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(d->lima);
	ps.timeout_ms = d->cfg.command_timeout_ms;
	ps.what = what;
	r->proc = proc_spawn(d->base, &d->procs, &ps, removal_done, r, err,
	    sizeof err);
	lima_argv_free(argv);
	if (r->proc == NULL) {
		free(r);
		hold_drop_if_idle(d, h);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INTERNAL, "%s",
		    err);
		return;
	}
	h->removing = true;
	conn_set_handler(c, &removal_handler, r);
}

/* ---- Life cycle ---- */

void
image_init(struct laned *d)
{
	d->images = xcalloc(1, sizeof *d->images);
	TAILQ_INIT(&d->images->builds);
	TAILQ_INIT(&d->images->holds);
}

struct recovery {
	struct laned *d;
	struct image_record rec;
};

static void
recovery_done(struct proc *p, int status, void *arg)
{
	struct recovery *r = arg;

	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		if (registry_image_delete(r->d->reg, r->rec.name) == REG_ERROR)
			log_warnx("image %s: cannot delete the row",
			    r->rec.name);
		else
			log_info("image %s: unfinished build %s deleted",
			    r->rec.name, r->rec.instance);
	} else
		log_warnx("image %s: cannot delete unfinished build %s; "
		    "retried at the next start", r->rec.name, r->rec.instance);
	free(r);
}

struct orphan_scan {
	struct image_record *v;
	size_t n;
};

/* An image-shaped instance no row names: reported, never deleted here. */
static void
orphan_cb(const char *name, void *arg)
{
	struct orphan_scan *o = arg;

	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].instance, name) == 0)
			return;
	log_warnx("images: instance %s has no image row (an orphan); remove "
	    "it with limactl delete if it is not yours", name);
}

void
image_recover(struct laned *d)
{
	struct image_record *v = NULL;
	struct orphan_scan o;
	size_t n = 0;

	if (registry_image_list(d->reg, &v, &n) != REG_OK) {
		log_warnx("images: cannot read the registry");
		return;
	}
	o.v = v;
	o.n = n;
	if (lima_scan_images(d->lima, orphan_cb, &o) == -1)
		log_warn("images: scanning %s", lima_home(d->lima));
	for (size_t i = 0; i < n; i++) {
		struct recovery *r;
		struct proc_spec ps;
		char **argv, what[64], err[256];

		if (v[i].state == IMAGE_READY) {
			if (!lima_instance_exists(d->lima, v[i].instance))
				log_warnx("image %s: its instance %s is gone; "
				    "remove the image (agent-lanectl image rm)",
				    v[i].name, v[i].instance);
			continue;
		}
		/* A build the last daemon did not finish: undo it. */
		if ((argv = lima_argv_delete(d->lima, v[i].instance)) == NULL)
			continue;
		r = xcalloc(1, sizeof *r);
		r->d = d;
		r->rec = v[i];
		snprintf(what, sizeof what, "limactl delete %s", v[i].instance);
		memset(&ps, 0, sizeof ps);
		ps.argv = argv;
		ps.envp = lima_envp(d->lima);
		ps.timeout_ms = d->cfg.command_timeout_ms;
		ps.what = what;
		if (proc_spawn(d->base, &d->procs, &ps, recovery_done, r, err,
		    sizeof err) == NULL) {
			log_warnx("image %s: %s", v[i].name, err);
			free(r);
		}
		lima_argv_free(argv);
	}
	free(v);
}

void
image_free_all(struct laned *d)
{
	struct build *b;
	struct hold *h;

	if (d->images == NULL)
		return;
	/* Rows stay "building": the next start deletes those VMs. */
	while ((b = TAILQ_FIRST(&d->images->builds)) != NULL)
		build_free(b);
	while ((h = TAILQ_FIRST(&d->images->holds)) != NULL) {
		TAILQ_REMOVE(&d->images->holds, h, entry);
		free(h);
	}
	free(d->images);
	d->images = NULL;
}
