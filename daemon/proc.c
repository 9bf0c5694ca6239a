#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "compat.h"
#include "log.h"
#include "proc.h"
#include "util.h"
#include "wire.h"

struct proc {
	struct proc_list *list;
	pid_t pid;
	char *what;
	proc_done_cb done;
	void *arg;

	int in_fd;		/* PROC_IN_PIPE, until taken */
	int out_fd;		/* PROC_OUT_PIPE until taken, or capture */
	bool out_capture;
	struct event *out_ev;
	struct evbuffer *out_buf;
	size_t out_cap;
	bool out_overflow;
	char *out_copy;

	int err_fd;
	struct event *err_ev;
	char err_tail[PROC_STDERR_TAIL + 1];
	size_t err_len;
	void (*err_line)(const char *, size_t, void *);
	char line[PROC_LINE_MAX];	/* err_line: the line so far */
	size_t line_len;
	bool line_long;			/* past PROC_LINE_MAX: skipped */

	struct event *timer;
	bool timed_out;
	bool exited;
	int status;

	TAILQ_ENTRY(proc) entry;
};

void
proc_status_string(int status, char *buf, size_t len)
{
	wire_wait_string(buf, len, status);
}

static void
close_event_fd(struct event **ev, int *fd)
{
	if (*ev != NULL) {
		event_free(*ev);
		*ev = NULL;
	}
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

static void
proc_free(struct proc *p)
{
	TAILQ_REMOVE(p->list, p, entry);
	close_event_fd(&p->out_ev, &p->out_fd);
	close_event_fd(&p->err_ev, &p->err_fd);
	if (p->in_fd != -1)
		close(p->in_fd);
	if (p->timer != NULL)
		event_free(p->timer);
	if (p->out_buf != NULL)
		evbuffer_free(p->out_buf);
	free(p->out_copy);
	free(p->what);
	free(p);
}

/* Appends to the stderr tail, keeping only the last PROC_STDERR_TAIL bytes. */
static void
err_append(struct proc *p, const char *data, size_t n)
{
	tail_append(p->err_tail, PROC_STDERR_TAIL, &p->err_len, data, n);
	if (p->err_line == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		if (data[i] == '\n') {
			if (!p->line_long)
				p->err_line(p->line, p->line_len, p->arg);
			p->line_len = 0;
			p->line_long = false;
		} else if (p->line_len < sizeof p->line)
			p->line[p->line_len++] = data[i];
		else
			p->line_long = true;
	}
}

/* Reads what is available; returns false at EOF or error. */
static bool
pipe_read(struct proc *p, bool is_err)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = read(is_err ? p->err_fd : p->out_fd, buf, sizeof buf);
		if (n > 0) {
			if (is_err)
				err_append(p, buf, (size_t)n);
			else if (!p->out_overflow) {
				if (evbuffer_get_length(p->out_buf) + (size_t)n >
				    p->out_cap) {
					p->out_overflow = true;
					log_warnx("%s: output above %zu bytes; "
					    "killing it", p->what, p->out_cap);
					proc_kill(p);
				} else if (evbuffer_add(p->out_buf, buf,
				    (size_t)n) != 0)
					fatalx("evbuffer_add");
			}
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return true;
		return false;	/* EOF or a real error: either way, done */
	}
}

static void proc_maybe_done(struct proc *);

static void
pipe_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;
	bool is_err = fd == p->err_fd;

	if (!pipe_read(p, is_err)) {
		if (is_err)
			close_event_fd(&p->err_ev, &p->err_fd);
		else
			close_event_fd(&p->out_ev, &p->out_fd);
		proc_maybe_done(p);
	}
}

static void
proc_maybe_done(struct proc *p)
{
	proc_done_cb done = p->done;

	if (!p->exited)
		return;
	/*
	 * The child has exited, so whatever it wrote is already in the pipes.
	 * Drain to EAGAIN rather than waiting for EOF: a grandchild (Lima's
	 * hostagent) could hold the write end open for as long as it lives.
	 */
	if (p->err_fd != -1) {
		(void)pipe_read(p, true);
		close_event_fd(&p->err_ev, &p->err_fd);
	}
	if (p->out_capture && p->out_fd != -1) {
		(void)pipe_read(p, false);
		close_event_fd(&p->out_ev, &p->out_fd);
	}
	if (done != NULL) {
		p->done = NULL;
		done(p, p->status, p->arg);
	}
	proc_free(p);
}

static void
timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proc *p = arg;

	log_warnx("%s: timed out; killing it", p->what);
	p->timed_out = true;
	proc_kill(p);
}

struct proc *
proc_spawn(struct event_base *base, struct proc_list *list,
    const struct proc_spec *spec, proc_done_cb done, void *arg, char *err,
    size_t errlen)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	int inp[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	short flags;
	struct proc *p;
	int rc;

	p = xcalloc(1, sizeof *p);
	p->list = list;
	p->in_fd = p->out_fd = p->err_fd = -1;
	p->what = xstrdup(spec->what != NULL ? spec->what : spec->argv[0]);
	p->done = done;
	p->arg = arg;
	p->err_line = spec->err_line;

	if ((spec->in == PROC_IN_PIPE && compat_pipe_cloexec(inp) == -1) ||
	    (spec->out != PROC_OUT_NULL && compat_pipe_cloexec(outp) == -1) ||
	    compat_pipe_cloexec(errp) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}

	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		snprintf(err, errlen, "posix_spawn_file_actions_init: %s",
		    strerror(rc));
		goto fail;
	}
	if (spec->in == PROC_IN_PIPE)
		rc = posix_spawn_file_actions_adddup2(&fa, inp[0], 0);
	else
		rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null",
		    O_RDONLY, 0);
	if (rc == 0 && spec->out != PROC_OUT_NULL)
		rc = posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	else if (rc == 0)
		rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null",
		    O_WRONLY, 0);
	if (rc == 0)
		rc = posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	if (rc != 0) {
		snprintf(err, errlen, "posix_spawn_file_actions: %s", strerror(rc));
		posix_spawn_file_actions_destroy(&fa);
		goto fail;
	}

	/*
	 * Own process group, so a timeout can kill limactl and its ssh child
	 * together; no inherited mask or ignored SIGPIPE; and on macOS no
	 * descriptor at all beyond 0-2, whatever a library opened.
	 */
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGCHLD);
	sigaddset(&dfl, SIGHUP);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGQUIT);
	flags = (short)(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
	    POSIX_SPAWN_SETSIGDEF | compat_spawn_cloexec_default());
	if ((rc = posix_spawnattr_init(&attr)) != 0 ||
	    (rc = posix_spawnattr_setflags(&attr, flags)) != 0 ||
	    (rc = posix_spawnattr_setpgroup(&attr, 0)) != 0 ||
	    (rc = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
	    (rc = posix_spawnattr_setsigdefault(&attr, &dfl)) != 0) {
		snprintf(err, errlen, "posix_spawnattr: %s", strerror(rc));
		posix_spawn_file_actions_destroy(&fa);
		goto fail;
	}
	rc = posix_spawn(&p->pid, spec->argv[0], &fa, &attr, spec->argv,
	    spec->envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		snprintf(err, errlen, "cannot run %s: %s", spec->argv[0],
		    strerror(rc));
		goto fail;
	}
	log_debug("spawned %s (pid %ld)", p->what, (long)p->pid);

	if (inp[0] != -1)
		close(inp[0]);
	if (outp[1] != -1)
		close(outp[1]);
	close(errp[1]);
	p->in_fd = inp[1];
	p->out_fd = outp[0];
	p->err_fd = errp[0];
	/* Streams through limactl are large: bigger pipes, fewer wake-ups. */
	if (p->in_fd != -1)
		compat_pipe_grow(p->in_fd, 1 << 20);
	if (spec->out == PROC_OUT_PIPE)
		compat_pipe_grow(p->out_fd, 1 << 20);
	if ((p->in_fd != -1 && compat_set_nonblock(p->in_fd) == -1) ||
	    (p->out_fd != -1 && compat_set_nonblock(p->out_fd) == -1) ||
	    compat_set_nonblock(p->err_fd) == -1)
		fatal("fcntl(O_NONBLOCK)");

	p->err_ev = event_new(base, p->err_fd, EV_READ | EV_PERSIST,
	    pipe_cb, p);
	if (p->err_ev == NULL || event_add(p->err_ev, NULL) != 0)
		fatalx("event_add");
	if (spec->out == PROC_OUT_CAPTURE) {
		p->out_capture = true;
		p->out_cap = spec->out_cap;
		if ((p->out_buf = evbuffer_new()) == NULL)
			fatalx("evbuffer_new");
		p->out_ev = event_new(base, p->out_fd, EV_READ | EV_PERSIST,
		    pipe_cb, p);
		if (p->out_ev == NULL || event_add(p->out_ev, NULL) != 0)
			fatalx("event_add");
	}
	if (spec->timeout_ms > 0) {
		struct timeval tv = tv_from_ms(spec->timeout_ms);

		if ((p->timer = evtimer_new(base, timeout_cb, p)) == NULL ||
		    evtimer_add(p->timer, &tv) != 0)
			fatalx("evtimer_add");
	}
	TAILQ_INSERT_TAIL(list, p, entry);
	return p;

fail:
	for (int i = 0; i < 2; i++) {
		if (inp[i] != -1)
			close(inp[i]);
		if (outp[i] != -1)
			close(outp[i]);
		if (errp[i] != -1)
			close(errp[i]);
	}
	free(p->what);
	free(p);
	return NULL;
}

void
proc_kill(struct proc *p)
{
	if (p->exited)
		return;
	/* The group first; the pid too in case it left the group. */
	if (killpg(p->pid, SIGKILL) == -1 && errno != ESRCH)
		log_warn("killpg %ld", (long)p->pid);
	(void)kill(p->pid, SIGKILL);
}

void
proc_abandon(struct proc *p)
{
	p->done = NULL;
	p->err_line = NULL;	/* its arg is going away with the owner */
	proc_kill(p);
}

pid_t
proc_pid(const struct proc *p)
{
	return p->pid;
}

bool
proc_timed_out(const struct proc *p)
{
	return p->timed_out;
}

bool
proc_output_overflow(const struct proc *p)
{
	return p->out_overflow;
}

int
proc_take_stdin(struct proc *p)
{
	int fd = p->in_fd;

	p->in_fd = -1;
	return fd;
}

int
proc_take_stdout(struct proc *p)
{
	int fd = -1;

	if (!p->out_capture) {
		fd = p->out_fd;
		p->out_fd = -1;
	}
	return fd;
}

const char *
proc_stdout(const struct proc *p, size_t *len)
{
	struct proc *mp = (struct proc *)p;
	size_t n;

	if (p->out_buf == NULL) {
		*len = 0;
		return "";
	}
	if (mp->out_copy == NULL) {
		n = evbuffer_get_length(p->out_buf);
		mp->out_copy = xmalloc(n + 1);
		if (evbuffer_copyout(p->out_buf, mp->out_copy, n) != (ssize_t)n)
			fatalx("evbuffer_copyout");
		mp->out_copy[n] = '\0';
	}
	*len = evbuffer_get_length(p->out_buf);
	return mp->out_copy;
}

const char *
proc_stderr(const struct proc *p)
{
	return p->err_tail;
}

void
proc_reap(struct proc_list *list)
{
	struct proc *p;
	pid_t pid;
	int status;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == -1 && errno == EINTR)
			continue;
		if (pid <= 0)
			break;
		TAILQ_FOREACH(p, list, entry)
			if (p->pid == pid && !p->exited)
				break;
		if (p == NULL)
			continue;
		p->exited = true;
		p->status = status;
		if (p->timer != NULL)
			evtimer_del(p->timer);
		if (log_debug_enabled()) {
			char s[32];
			proc_status_string(status, s, sizeof s);
			log_debug("%s (pid %ld) ended: %s", p->what, (long)pid, s);
		}
		proc_maybe_done(p);
	}
}

void
proc_shutdown(struct proc_list *list)
{
	struct proc *p;
	int waited_ms = 0;

	TAILQ_FOREACH(p, list, entry)
		proc_kill(p);
	while (!TAILQ_EMPTY(list) && waited_ms < 3000) {
		proc_reap(list);
		if (TAILQ_EMPTY(list))
			break;
		usleep(10000);
		waited_ms += 10;
	}
	if (!TAILQ_EMPTY(list))
		log_warnx("%zu children did not exit after SIGKILL",
		    proc_count(list));
}

size_t
proc_count(const struct proc_list *list)
{
	struct proc *p;
	size_t n = 0;

	TAILQ_FOREACH(p, list, entry)
		n++;
	return n;
}
