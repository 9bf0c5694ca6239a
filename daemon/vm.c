#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "laned.h"
#include "lima.h"
#include "log.h"
#include "names.h"
#include "proc.h"
#include "registry.h"
#include "units.h"
#include "util.h"
#include "vm.h"
#include "wire.h"

/* How often a killed call's process group is looked for, and how long. */
#define VM_GROUP_POLL_MS 20
/* A half-made directory is small (a few files, a copied disk at most). */
#define VM_REMOVE_DEPTH 16
#define VM_REMOVE_ENTRIES 100000

enum vm_op {
	VM_IDLE,
	VM_CREATE,
	VM_CLONE,
	VM_EMBED,		/* the clone's template, its base embedded */
	VM_START,
	VM_STOP,
	VM_DELETE,
	VM_DELETE_WAIT,		/* a failed delete waits for its retry */
};

static const char *const op_verbs[] = {
	"", "create", "clone", "template copy", "start", "stop", "delete",
	"delete",
};

struct vm {
	struct laned *d;
	char name[NAMES_IMAGE_INSTANCE_LEN + 1];
	void *arg;
	enum vm_op op;
	struct proc *proc;
	pid_t pgid;		/* the call's process group */
	bool killed;		/* by us: an interrupted start or stop */
	bool interrupted;	/* the owner wants the VM gone */
	vm_done_cb done;
	vm_line_cb line;
	char *yaml;		/* create: the template's path; clone: the YAML */
	size_t yaml_len;
	char *embed_path;	/* clone: the template's file for VM_EMBED */
	/* A finished call waiting for its group to go, or for its delete. */
	struct vm_result res;
	char tail[PROC_STDERR_TAIL + 1];
	int64_t group_deadline_ms;
	struct event *timer;	/* the group wait, or a delete's retry */
	/* The delete. */
	unsigned max_attempts, attempts;
	vm_failed_cb failed;
	vm_gone_cb gone;
};

static void vm_delete_run(struct vm *);

/* ---- Names and registration ---- */

int
vm_register(struct laned *d, bool image, char *name, size_t size,
    int (*insert)(void *), void *arg)
{
	int rc = REG_EXISTS;

	for (int tries = 0; rc == REG_EXISTS && tries < 8; tries++) {
		if ((image ? lima_image_name_generate(name, size) :
		    lima_name_generate(name, size)) == -1)
			return VM_NO_NAME;
		/* An orphan directory holds the name: never reuse it. */
		if (lima_instance_exists(d->lima, name))
			continue;
		rc = insert(arg);
	}
	return rc;
}

/* ---- The instance ---- */

struct vm *
vm_new(struct laned *d, const char *name, void *arg)
{
	struct vm *vm = xcalloc(1, sizeof *vm);

	vm->d = d;
	str_copy(vm->name, name, sizeof vm->name);
	vm->arg = arg;
	return vm;
}

static void
vm_forget_yaml(struct vm *vm)
{
	if (vm->op == VM_CREATE && vm->yaml != NULL)
		(void)unlink(vm->yaml);
	if (vm->embed_path != NULL) {
		(void)unlink(vm->embed_path);
		free(vm->embed_path);
		vm->embed_path = NULL;
	}
	free(vm->yaml);
	vm->yaml = NULL;
	vm->yaml_len = 0;
}

void
vm_free(struct vm *vm)
{
	if (vm == NULL)
		return;
	if (vm->proc != NULL)
		proc_abandon(vm->proc);
	vm_forget_yaml(vm);
	if (vm->timer != NULL)
		event_free(vm->timer);
	free(vm);
}

const char *
vm_name(const struct vm *vm)
{
	return vm->name;
}

bool
vm_busy(const struct vm *vm)
{
	return vm->op != VM_IDLE && vm->op != VM_DELETE_WAIT;
}

static void
vm_timer_in(struct vm *vm, uint64_t ms, event_callback_fn cb)
{
	struct timeval tv = tv_from_ms(ms);

	if (vm->timer != NULL)
		event_free(vm->timer);
	if ((vm->timer = evtimer_new(vm->d->base, cb, vm)) == NULL ||
	    evtimer_add(vm->timer, &tv) != 0)
		fatalx("evtimer_add");
}

/* ---- One limactl call ---- */

static void call_done(struct proc *, int, void *);

static void
line_cb(const char *line, size_t len, void *arg)
{
	struct vm *vm = arg;

	if (vm->line != NULL)
		vm->line(line, len, vm->arg);
}

static int
vm_spawn(struct vm *vm, enum vm_op op, char **argv, uint64_t timeout_ms)
{
	struct proc_spec ps;
	char what[64], err[256];

	if (argv == NULL) {
		/* Only reachable if a name in memory stopped validating. */
		log_warnx("%s: refusing limactl %s: invalid instance name",
		    vm->name, op_verbs[op]);
		return -1;
	}
	snprintf(what, sizeof what, "limactl %s %s", op_verbs[op], vm->name);
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(vm->d->lima);
	ps.in = PROC_IN_NULL;
	/* Only the embedding prints data: the YAML that replaces the clone's. */
	ps.out = op == VM_EMBED ? PROC_OUT_CAPTURE : PROC_OUT_NULL;
	ps.out_cap = LIMA_EMBED_MAX;
	ps.timeout_ms = timeout_ms;
	ps.what = what;
	ps.err_line = vm->line != NULL ? line_cb : NULL;
	vm->proc = proc_spawn(vm->d->base, &vm->d->procs, &ps, call_done, vm,
	    err, sizeof err);
	lima_argv_free(argv);
	if (vm->proc == NULL) {
		log_warnx("%s: %s", vm->name, err);
		return -1;
	}
	vm->op = op;
	vm->pgid = proc_pid(vm->proc);
	vm->killed = false;
	return 0;
}

/* The message of a failed call: limactl's error line, or its status. */
static void
result_fill(struct vm *vm, struct proc *p, int status)
{
	struct vm_result *r = &vm->res;
	char msg[256], st[32];

	memset(r, 0, sizeof *r);
	str_copy(vm->tail, proc_stderr(p), sizeof vm->tail);
	r->stderr_tail = vm->tail;
	r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
	r->timed_out = proc_timed_out(p);
	if (r->ok)
		return;
	lima_error_message(vm->d->lima, vm->tail, msg, sizeof msg);
	proc_status_string(status, st, sizeof st);
	r->code = r->timed_out ? AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED :
	    AGENTLANE__V1__ERROR_CODE__LIMA_FAILED;
	snprintf(r->msg, sizeof r->msg, "%s%s%s", r->timed_out ? "timed out" :
	    st, msg[0] ? ": " : "", msg);
}

/* The clone (VM_EMBED) failed: the owner hears why. */
static void __attribute__((format(printf, 3, 4)))
embed_failed(struct vm *vm, int code, const char *fmt, ...)
{
	va_list ap;

	vm->res.ok = false;
	vm->res.code = code;
	va_start(ap, fmt);
	vsnprintf(vm->res.msg, sizeof vm->res.msg, fmt, ap);
	va_end(ap);
}

/*
 * The clone is made: its template, written to a private file of the state
 * directory, goes through `limactl template copy --embed-all` (VM_EMBED),
 * whose output then replaces the copy's lima.yaml (call_finish). 0 when
 * that call runs; -1 when it could not be started (vm->res says why).
 */
static int
clone_embed(struct vm *vm)
{
	char path[PATH_MAX], err[256];

	snprintf(path, sizeof path, "%s/lanes/%s.clone.yaml",
	    vm->d->cfg.state_dir, vm->name);
	if (file_replace_private(path, vm->yaml, vm->yaml_len, err,
	    sizeof err) == -1) {
		embed_failed(vm, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "writing the clone's template: %s", err);
		return -1;
	}
	vm->embed_path = xstrdup(path);
	vm->op = VM_IDLE;
	if (vm_spawn(vm, VM_EMBED, lima_argv_template_embed(vm->d->lima,
	    path), vm->d->cfg.command_timeout_ms) == -1) {
		vm->op = VM_CLONE;
		embed_failed(vm, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot run limactl template copy");
		return -1;
	}
	return 0;
}

/* The embedded template a VM_EMBED call printed becomes the clone's YAML. */
static void
embed_output(struct vm *vm, struct proc *p)
{
	const char *out;
	size_t len;

	if (proc_output_overflow(p)) {
		embed_failed(vm, AGENTLANE__V1__ERROR_CODE__TOO_LARGE,
		    "the clone's embedded lane template is over %d bytes",
		    LIMA_EMBED_MAX);
		return;
	}
	if (!vm->res.ok) {
		char msg[sizeof vm->res.msg];

		str_copy(msg, vm->res.msg, sizeof msg);
		embed_failed(vm, vm->res.code, "embedding the clone's lane "
		    "template (limactl template copy): %s", msg);
		return;
	}
	out = proc_stdout(p, &len);
	if (len == 0 || out == NULL) {
		embed_failed(vm, AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
		    "limactl template copy printed no template");
		return;
	}
	free(vm->yaml);
	vm->yaml = xmalloc(len + 1);
	memcpy(vm->yaml, out, len);
	vm->yaml[len] = '\0';
	vm->yaml_len = len;
}

/* The call is over, its group gone: the owner hears of it. */
static void
call_finish(struct vm *vm)
{
	enum vm_op op = vm->op;
	vm_done_cb done = vm->done;
	char err[256];

	if (op == VM_DELETE) {
		vm_delete_run(vm);
		return;
	}
	if (op == VM_CLONE && vm->res.ok && clone_embed(vm) == 0)
		return;		/* call_finish again, with VM_EMBED */
	/*
	 * The clone's own YAML is never trusted: the template replaces it,
	 * as Lima would have written it at create (its base embedded).
	 */
	if (op == VM_EMBED && vm->res.ok && lima_yaml_replace(vm->d->lima,
	    vm->name, vm->yaml, vm->yaml_len, err, sizeof err) == -1)
		embed_failed(vm, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "writing the clone's lane YAML: %s", err);
	vm_forget_yaml(vm);
	vm->op = VM_IDLE;
	vm->done = NULL;
	vm->line = NULL;
	done(vm, &vm->res, vm->arg);	/* may free vm */
}

static bool
group_gone(pid_t pgid)
{
	/* EPERM: the id now belongs to someone else's group, not ours. */
	return killpg(pgid, 0) == -1 && (errno == ESRCH || errno == EPERM);
}

static void
group_wait_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vm *vm = arg;

	if (!group_gone(vm->pgid)) {
		if (time_now_ms() < vm->group_deadline_ms) {
			vm_timer_in(vm, VM_GROUP_POLL_MS, group_wait_cb);
			return;
		}
		log_warnx("%s: limactl %s was killed, but its process group "
		    "%ld is still there; carrying on", vm->name,
		    op_verbs[vm->op], (long)vm->pgid);
	}
	call_finish(vm);
}

static void
call_done(struct proc *p, int status, void *arg)
{
	struct vm *vm = arg;

	vm->proc = NULL;
	result_fill(vm, p, status);
	if (vm->op == VM_EMBED)
		embed_output(vm, p);
	/*
	 * A killed call is over only when every process of its group is:
	 * limactl's children (cp of a clone, qemu-img) die with it, but
	 * not at the instant the leader is reaped.
	 */
	if ((vm->killed || vm->res.timed_out) && !group_gone(vm->pgid)) {
		vm->group_deadline_ms = time_now_ms() +
		    (int64_t)vm->d->cfg.command_timeout_ms;
		vm_timer_in(vm, VM_GROUP_POLL_MS, group_wait_cb);
		return;
	}
	call_finish(vm);
}

static int
vm_call(struct vm *vm, enum vm_op op, char **argv, uint64_t timeout_ms,
    vm_done_cb done, vm_line_cb line)
{
	if (vm->op != VM_IDLE) {
		lima_argv_free(argv);
		log_warnx("%s: limactl %s while %s runs", vm->name,
		    op_verbs[op], op_verbs[vm->op]);
		return -1;
	}
	vm->done = done;
	vm->line = line;
	vm->interrupted = false;
	if (vm_spawn(vm, op, argv, timeout_ms) == -1) {
		vm->done = NULL;
		vm->line = NULL;
		return -1;
	}
	return 0;
}

int
vm_create(struct vm *vm, const char *yaml, size_t len, vm_done_cb done,
    vm_line_cb line)
{
	char path[PATH_MAX], err[256];

	if (vm->op != VM_IDLE)
		return -1;
	/* The template as a private file: Lima reads it, then it goes. */
	snprintf(path, sizeof path, "%s/lanes/%s.yaml", vm->d->cfg.state_dir,
	    vm->name);
	if (file_replace_private(path, yaml, len, err, sizeof err) == -1) {
		log_warnx("%s: writing its template: %s", vm->name, err);
		return -1;
	}
	if (vm_call(vm, VM_CREATE, lima_argv_create(vm->d->lima, vm->name,
	    path), vm->d->cfg.command_timeout_ms, done, line) == -1) {
		(void)unlink(path);
		return -1;
	}
	vm->yaml = xstrdup(path);
	return 0;
}

int
vm_clone(struct vm *vm, const char *from, const char *yaml, size_t len,
    vm_done_cb done)
{
	if (vm_call(vm, VM_CLONE, lima_argv_clone(vm->d->lima, from, vm->name),
	    vm->d->cfg.command_timeout_ms, done, NULL) == -1)
		return -1;
	vm->yaml = xmalloc(len + 1);
	memcpy(vm->yaml, yaml, len);
	vm->yaml[len] = '\0';
	vm->yaml_len = len;
	return 0;
}

int
vm_start(struct vm *vm, vm_done_cb done, vm_line_cb line)
{
	const struct config *cfg = &vm->d->cfg;

	/* limactl's own timeout first; ours in case it does not keep it. */
	return vm_call(vm, VM_START, lima_argv_start(vm->d->lima, vm->name,
	    cfg->start_timeout_ms), cfg->start_timeout_ms + 5 * UNITS_MS_PER_S,
	    done, line);
}

int
vm_stop(struct vm *vm, vm_done_cb done)
{
	return vm_call(vm, VM_STOP, lima_argv_stop(vm->d->lima, vm->name),
	    vm->d->cfg.command_timeout_ms, done, NULL);
}

bool
vm_interrupt(struct vm *vm)
{
	switch (vm->op) {
	case VM_CREATE:
	case VM_CLONE:
	case VM_EMBED:
		if (!vm->interrupted)
			log_info("%s: limactl %s is let finish before the VM "
			    "goes", vm->name, op_verbs[vm->op]);
		vm->interrupted = true;
		return true;
	case VM_START:
	case VM_STOP:
		vm->interrupted = true;
		if (vm->proc != NULL && !vm->killed) {
			vm->killed = true;
			proc_kill(vm->proc);
		}
		return true;
	case VM_DELETE:
		return true;
	case VM_IDLE:
	case VM_DELETE_WAIT:
		break;
	}
	return false;
}

/* ---- Delete ---- */

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct vm *vm = arg;

	vm->op = VM_IDLE;
	vm_delete(vm, vm->max_attempts, vm->failed, vm->gone);
}

void
vm_delete(struct vm *vm, unsigned max_attempts, vm_failed_cb failed,
    vm_gone_cb gone)
{
	vm->max_attempts = max_attempts;
	vm->failed = failed;
	vm->gone = gone;
	if (vm->op == VM_DELETE)
		return;		/* one is running: it reports */
	if (vm->op == VM_DELETE_WAIT) {
		evtimer_del(vm->timer);
		vm->op = VM_IDLE;
	}
	if (vm->op != VM_IDLE) {
		log_warnx("%s: delete while limactl %s runs", vm->name,
		    op_verbs[vm->op]);
		return;
	}
	vm->done = NULL;
	vm->line = NULL;
	if (vm_spawn(vm, VM_DELETE, lima_argv_delete(vm->d->lima, vm->name),
	    vm->d->cfg.command_timeout_ms) == -1) {
		/* Could not even spawn: a failure like any other. */
		memset(&vm->res, 0, sizeof vm->res);
		vm->res.code = AGENTLANE__V1__ERROR_CODE__INTERNAL;
		snprintf(vm->res.msg, sizeof vm->res.msg, "cannot run limactl "
		    "delete");
		vm->op = VM_DELETE;
		vm_delete_run(vm);
	}
}

void
vm_delete_now(struct vm *vm)
{
	if (vm->op == VM_DELETE_WAIT)
		vm_delete(vm, vm->max_attempts, vm->failed, vm->gone);
}

/* The directory is there and has no lima.yaml: limactl refuses it. */
static bool
halfmade(struct vm *vm, int *home_fd)
{
	struct stat sb;
	int fd;

	*home_fd = open(lima_home(vm->d->lima), O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (*home_fd == -1)
		return false;
	if ((fd = openat(*home_fd, vm->name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		return false;
	if (fstatat(fd, "lima.yaml", &sb, AT_SYMLINK_NOFOLLOW) == 0 ||
	    errno != ENOENT) {
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* A delete attempt ended (vm->res): gone, retried, or given up. */
static void
vm_delete_run(struct vm *vm)
{
	char why[sizeof vm->res.msg + 320], err[256];
	uint64_t backoff_ms = 1000;
	int home_fd = -1;

	vm->op = VM_IDLE;
	if (vm->res.ok && !lima_instance_exists(vm->d->lima, vm->name)) {
		vm->attempts = 0;
		vm->gone(vm, vm->arg);		/* may free vm */
		return;
	}
	snprintf(why, sizeof why, "%s", vm->res.ok ? "instance directory still "
	    "present" : vm->res.msg);
	if (halfmade(vm, &home_fd)) {
		if (vm_remove_halfmade(home_fd, vm->name, err,
		    sizeof err) == 0) {
			close(home_fd);
			snprintf(why, sizeof why, "limactl delete refused the "
			    "directory (no lima.yaml; %.200s): agent-laned "
			    "removed it", vm->res.ok ? "" : vm->res.msg);
			log_warnx("%s: %s", vm->name, why);
			if (registry_event_append(vm->d->reg, vm->name,
			    "vm-dir-removed", why) != REG_OK)
				log_warnx("%s: cannot record event "
				    "vm-dir-removed", vm->name);
			vm->attempts = 0;
			vm->gone(vm, vm->arg);
			return;
		}
		snprintf(why, sizeof why, "%.200s; removing the half-made "
		    "directory failed: %s", vm->res.msg, err);
	}
	if (home_fd != -1)
		close(home_fd);
	vm->attempts++;
	if (vm->max_attempts != 0 && vm->attempts >= vm->max_attempts) {
		vm->failed(vm, why, vm->attempts, 0, vm->arg);
		return;
	}
	for (unsigned i = 1; i < vm->attempts &&
	    backoff_ms < vm->d->cfg.destroy_retry_max_ms; i++)
		backoff_ms *= 2;
	if (backoff_ms > vm->d->cfg.destroy_retry_max_ms)
		backoff_ms = vm->d->cfg.destroy_retry_max_ms;
	vm->op = VM_DELETE_WAIT;
	vm_timer_in(vm, backoff_ms, retry_cb);
	vm->failed(vm, why, vm->attempts, backoff_ms, vm->arg);
}

/* ---- The confined removal ---- */

struct rm_walk {
	dev_t dev;
	size_t entries;
	char err[256];
};

/* Empties the directory dfd (consumed), depth levels deep at most. */
static int
rm_tree(struct rm_walk *w, int dfd, unsigned depth)
{
	struct dirent *de;
	struct stat sb;
	DIR *dp;
	int rc = 0, fd;

	if ((dp = fdopendir(dfd)) == NULL) {
		snprintf(w->err, sizeof w->err, "fdopendir: %s",
		    strerror(errno));
		close(dfd);
		return -1;
	}
	while (rc == 0 && (de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++w->entries > VM_REMOVE_ENTRIES) {
			snprintf(w->err, sizeof w->err, "more than %d entries",
			    VM_REMOVE_ENTRIES);
			errno = E2BIG;
			rc = -1;
			break;
		}
		if (fstatat(dirfd(dp), de->d_name, &sb,
		    AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno == ENOENT)
				continue;
			snprintf(w->err, sizeof w->err, "%s: %s", de->d_name,
			    strerror(errno));
			rc = -1;
			break;
		}
		if (S_ISDIR(sb.st_mode)) {
			/* A mount point (another device) is never entered. */
			if (sb.st_dev != w->dev || depth == 0) {
				snprintf(w->err, sizeof w->err, "%s: %s",
				    de->d_name, sb.st_dev != w->dev ?
				    "another file system" : "too deep");
				errno = EXDEV;
				rc = -1;
				break;
			}
			if ((fd = openat(dirfd(dp), de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
			    rm_tree(w, fd, depth - 1) == -1) {
				if (fd == -1)
					snprintf(w->err, sizeof w->err, "%s: %s",
					    de->d_name, strerror(errno));
				rc = -1;
				break;
			}
		}
		/* A symbolic link is unlinked itself, never followed. */
		if (unlinkat(dirfd(dp), de->d_name, S_ISDIR(sb.st_mode) ?
		    AT_REMOVEDIR : 0) == -1 && errno != ENOENT) {
			snprintf(w->err, sizeof w->err, "%s: %s", de->d_name,
			    strerror(errno));
			rc = -1;
		}
	}
	closedir(dp);
	return rc;
}

int
vm_remove_halfmade(int home_fd, const char *name, char *err, size_t errlen)
{
	struct rm_walk w;
	struct stat home, sb;
	int fd;

	memset(&w, 0, sizeof w);
	if (!names_instance_valid(name)) {
		snprintf(err, errlen, "not an instance name");
		errno = EINVAL;
		return -1;
	}
	if (fstat(home_fd, &home) == -1 || (fd = openat(home_fd, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		return -1;
	}
	/* Ours, on the home's device, and still without lima.yaml. */
	if (fstat(fd, &sb) == -1 || sb.st_dev != home.st_dev ||
	    sb.st_uid != geteuid() ||
	    fstatat(fd, "lima.yaml", &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		snprintf(err, errlen, "%s: not a half-made instance directory "
		    "of this Lima home", name);
		close(fd);
		errno = EPERM;
		return -1;
	}
	w.dev = home.st_dev;
	if (rm_tree(&w, fd, VM_REMOVE_DEPTH) == -1) {
		str_copy(err, w.err, errlen);
		return -1;
	}
	if (unlinkat(home_fd, name, AT_REMOVEDIR) == -1) {
		snprintf(err, errlen, "rmdir %s: %s", name, strerror(errno));
		return -1;
	}
	return 0;
}
