/* al_exec: a command in a lane, streamed through poll(2). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Stop reading the caller's stdin while this much input is unsent. */
#define EXEC_QUEUE_MAX (1024u * 1024u)

static int
build_env(const struct al_exec_opts *o, Agentlane__V1__EnvVar **vars,
    Agentlane__V1__EnvVar ***varv, size_t *n, struct al_error *err)
{
	size_t count = 0;

	while (o->env != NULL && o->env[count] != NULL)
		count++;
	*vars = calloc(count + 1, sizeof **vars);
	*varv = calloc(count + 1, sizeof **varv);
	if (*vars == NULL || *varv == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < count; i++) {
		const char *e = o->env[i], *eq = strchr(e, '=');
		Agentlane__V1__EnvVar *v = &(*vars)[i];

		if (eq == NULL || eq == e) {
			al_set_error(err, AL_INVALID_ARGUMENT, "environment "
			    "entries are NAME=VALUE");
			return -1;
		}
		agentlane__v1__env_var__init(v);
		if ((v->name = strndup(e, (size_t)(eq - e))) == NULL) {
			al_set_error(err, AL_IO, "out of memory");
			return -1;
		}
		v->value.data = (uint8_t *)(eq + 1);
		v->value.len = strlen(eq + 1);
		(*varv)[i] = v;
		*n = i + 1;
	}
	return 0;
}

static int
queue_input(struct al_conn *conn, const void *data, size_t len, bool eof,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__ExecInput in = AGENTLANE__V1__EXEC_INPUT__INIT;

	in.data.data = (uint8_t *)data;
	in.data.len = len;
	in.eof = eof;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_EXEC_INPUT;
	req.exec_input = &in;
	return al_conn_queue(conn, &req, err);
}

/* The terminal's size, or 24x80 when it has none. */
static void
tty_size(int fd, Agentlane__V1__WindowSize *w)
{
	struct winsize ws;

	w->rows = 24;
	w->cols = 80;
	if (fd >= 0 && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
	    ws.ws_col > 0) {
		w->rows = ws.ws_row;
		w->cols = ws.ws_col;
	}
}

/* Drains winch_fd; queues the new size. */
static int
queue_resize(struct al_conn *conn, const struct al_exec_opts *o,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__ExecInput in = AGENTLANE__V1__EXEC_INPUT__INIT;
	Agentlane__V1__WindowSize w = AGENTLANE__V1__WINDOW_SIZE__INIT;
	char junk[64];

	while (read(o->winch_fd, junk, sizeof junk) > 0)
		;
	tty_size(o->tty_fd, &w);
	in.window = &w;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_EXEC_INPUT;
	req.exec_input = &in;
	return al_conn_queue(conn, &req, err);
}

/* Handles one frame; 1 when the call is over (result or error set). */
static int
exec_frame(const struct al_exec_opts *o, AlResponse *resp,
    struct al_exec_result *res, int *rc, struct al_error *err)
{
	switch (resp->body_case) {
	case AGENTLANE__V1__RESPONSE__BODY_EXEC_OUTPUT: {
		const Agentlane__V1__ExecOutput *out = resp->exec_output;
		int fd = out->stream == AGENTLANE__V1__STREAM__STDERR ?
		    o->stderr_fd : o->stdout_fd;

		if (fd >= 0 && out->data.len > 0 &&
		    al_write_all(fd, out->data.data, out->data.len) == -1) {
			al_set_errno(err, AL_IO, out->stream ==
			    AGENTLANE__V1__STREAM__STDERR ? "writing stderr" :
			    "writing stdout");
			*rc = -1;
			return 1;
		}
		return 0;
	}
	case AGENTLANE__V1__RESPONSE__BODY_EXEC_EXIT:
		memset(res, 0, sizeof *res);
		if (resp->exec_exit->status_case ==
		    AGENTLANE__V1__EXEC_EXIT__STATUS_SIGNAL) {
			res->signaled = true;
			res->signal = resp->exec_exit->signal;
		} else
			res->code = resp->exec_exit->code;
		*rc = 0;
		return 1;
	default:
		al_error_from_response(err, resp);
		*rc = -1;
		return 1;
	}
}

/*
 * Sending failed, typically because the daemon ended the call and closed:
 * its last frames (output, the exit or the error) may still be readable.
 */
static void
drain_answer(struct al_conn *conn, const struct al_exec_opts *o,
    struct al_exec_result *res, int *rc, struct al_error *err)
{
	struct al_error ignored;
	AlResponse *resp;
	int fl = fcntl(conn->fd, F_GETFL);

	if (fl != -1)
		(void)fcntl(conn->fd, F_SETFL, fl & ~O_NONBLOCK);
	while (al_conn_read_frame(conn, &resp, &ignored) == 1) {
		int done = exec_frame(o, resp, res, rc, err);

		al_response_free(resp);
		if (done)
			return;
	}
}

static int
do_exec(struct al_client *c, const char *lane, const struct al_exec_opts *o,
    struct al_exec_result *res, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__Exec ex = AGENTLANE__V1__EXEC__INIT;
	Agentlane__V1__WindowSize win = AGENTLANE__V1__WINDOW_SIZE__INIT;
	Agentlane__V1__EnvVar *vars = NULL, **varv = NULL;
	ProtobufCBinaryData *args = NULL;
	struct al_conn conn;
	bool stdin_open = o->stdin_fd >= 0;
	size_t nargs = 0, nenv = 0;
	uint8_t *buf = NULL;
	int rc = -1, fl;

	conn.fd = -1;
	if ((o->argv == NULL || o->argv[0] == NULL) == (o->shell == NULL)) {
		al_set_error(err, AL_INVALID_ARGUMENT,
		    "exec needs exactly one of argv and shell");
		return -1;
	}
	while (o->argv != NULL && o->argv[nargs] != NULL)
		nargs++;
	if ((args = calloc(nargs + 1, sizeof *args)) == NULL ||
	    (buf = malloc(WIRE_CHUNK)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nargs; i++) {
		args[i].data = (uint8_t *)o->argv[i];
		args[i].len = strlen(o->argv[i]);
	}
	if (build_env(o, &vars, &varv, &nenv, err) == -1)
		goto out;
	ex.lane = (char *)lane;
	ex.n_argv = nargs;
	ex.argv = args;
	if (o->shell != NULL) {
		ex.shell.data = (uint8_t *)o->shell;
		ex.shell.len = o->shell_len > 0 ? o->shell_len : strlen(o->shell);
	}
	ex.workdir = (char *)(o->workdir != NULL ? o->workdir : "");
	ex.n_env = nenv;
	ex.env = varv;
	ex.stdin = stdin_open;
	ex.timeout_ms = o->timeout_ms;
	if (o->tty) {
		ex.tty = true;
		tty_size(o->tty_fd, &win);
		ex.window = &win;
	}
	req.body_case = AGENTLANE__V1__REQUEST__BODY_EXEC;
	req.exec = &ex;

	if (al_conn_open(c, &conn, &req, err) == -1)
		goto out;
	if ((fl = fcntl(conn.fd, F_GETFL)) == -1 ||
	    fcntl(conn.fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		al_set_errno(err, AL_IO, "fcntl");
		goto out;
	}

	for (;;) {
		struct pollfd pfd[3];
		nfds_t npfd = 1, winch = 0;
		AlResponse *resp;
		int r;

		pfd[0].fd = conn.fd;
		pfd[0].events = POLLIN | (al_conn_want_write(&conn) ? POLLOUT : 0);
		pfd[0].revents = 0;
		if (stdin_open && conn.wlen - conn.woff < EXEC_QUEUE_MAX) {
			pfd[1].fd = o->stdin_fd;
			pfd[1].events = POLLIN;
			pfd[1].revents = 0;
			npfd = 2;
		}
		if (o->tty && o->winch_fd >= 0) {
			pfd[npfd].fd = o->winch_fd;
			pfd[npfd].events = POLLIN;
			pfd[npfd].revents = 0;
			winch = npfd++;
		}
		if (al_interrupted()) {
			al_set_error(err, AL_CANCELLED, "interrupted");
			goto out;
		}
		if (poll(pfd, npfd, -1) == -1) {
			if (errno == EINTR && !al_interrupted())
				continue;
			al_set_errno(err, AL_IO, "poll");
			goto out;
		}
		if ((pfd[0].revents & POLLOUT) && al_conn_flush(&conn, err) == -1)
			goto out;
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			while ((r = al_conn_read_frame(&conn, &resp, err)) == 1) {
				int done = exec_frame(o, resp, res, &rc, err);

				al_response_free(resp);
				if (done)
					goto out;
			}
			if (r == -1)
				goto out;
		}
		if (winch != 0 && (pfd[winch].revents & POLLIN) &&
		    queue_resize(&conn, o, err) == -1)
			goto out;
		if (npfd >= 2 && winch != 1 &&
		    (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			/* Sized from the daemon's hello: its frame cap may
			 * be as low as 4096 bytes. */
			ssize_t n = read(o->stdin_fd, buf, al_conn_chunk(&conn));

			if (n == -1 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n > 0) {
				if (queue_input(&conn, buf, (size_t)n, false,
				    err) == -1)
					goto out;
			} else {
				/* EOF (or a read error): close its stdin. */
				stdin_open = false;
				if (queue_input(&conn, NULL, 0, true, err) == -1)
					goto out;
			}
			if (al_conn_flush(&conn, err) == -1) {
				drain_answer(&conn, o, res, &rc, err);
				goto out;
			}
		}
	}
out:
	if (conn.fd != -1)
		al_conn_close(&conn);
	for (size_t i = 0; i < nenv; i++)
		free(vars[i].name);
	free(vars);
	free(varv);
	free(args);
	/* The last piece of the caller's input. */
	wire_wipe(buf, WIRE_CHUNK);
	free(buf);
	return rc;
}

AL_API enum al_code
al_exec(struct al_client *c, const char *lane, const struct al_exec_opts *o,
    struct al_exec_result *res, struct al_error *err)
{
	struct al_exec_opts opts;
	struct al_error local;

	err = al_error_begin(err, &local);
	if (o == NULL) {
		al_set_error(err, AL_INVALID_ARGUMENT, "exec needs options");
		return AL_INVALID_ARGUMENT;
	}
	if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
		return al_result(-1, err);
	return al_result(do_exec(c, lane, &opts, res, err), err);
}
