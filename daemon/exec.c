#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "conn.h"
#include "exec.h"
#include "lane.h"
#include "laned.h"
#include "lanenet.h"
#include "log.h"
#include "session.h"
#include "units.h"
#include "util.h"
#include "wire.h"

#define EXEC_MAX_ARGS 65536

/* A terminal size as the guest takes it; false if out of range. */
static bool
exec_window(const Agentlane__V1__WindowSize *w, uint16_t *rows,
    uint16_t *cols)
{
	if (w->rows == 0 || w->rows > UINT16_MAX || w->cols == 0 ||
	    w->cols > UINT16_MAX)
		return false;
	*rows = (uint16_t)w->rows;
	*cols = (uint16_t)w->cols;
	return true;
}

static void
exec_input(struct session *s, const AlRequest *req)
{
	const Agentlane__V1__ExecInput *in;

	if (req->body_case != AGENTLANE__V1__REQUEST__BODY_EXEC_INPUT) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "only ExecInput frames may follow an Exec");
		return;
	}
	in = req->exec_input;
	if (in->window != NULL) {
		uint16_t rows, cols;

		if (!s->tty) {
			session_fail(s,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "a window size is for an exec with a tty");
			return;
		}
		if (!exec_window(in->window, &rows, &cols)) {
			session_fail(s,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "window sizes are 1-65535 rows and columns");
			return;
		}
		if (s->g != NULL)
			gexec_resize(s->g, rows, cols);
	}
	if (in->data.len > 0)
		session_stdin(s, in->data.data, in->data.len);
	if (in->eof)
		session_stdin_close(s);
}

static void
exec_output(struct session *s, int stream, const uint8_t *data, size_t len)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__ExecOutput out = AGENTLANE__V1__EXEC_OUTPUT__INIT;

	out.stream = stream == 1 ? AGENTLANE__V1__STREAM__STDOUT :
	    AGENTLANE__V1__STREAM__STDERR;
	out.data.data = (uint8_t *)data;
	out.data.len = len;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_EXEC_OUTPUT;
	resp.exec_output = &out;
	session_send(s, &resp);
}

static void
exec_done(struct session *s, const struct gexec_result *r)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__ExecExit ex = AGENTLANE__V1__EXEC_EXIT__INIT;

	if (r->end == GEXEC_FAILED) {
		session_fail(s, r->error, "%s", r->message);
		return;
	}
	if (r->end == GEXEC_SIGNALED) {
		ex.status_case = AGENTLANE__V1__EXEC_EXIT__STATUS_SIGNAL;
		ex.signal = r->sig;
	} else {
		ex.status_case = AGENTLANE__V1__EXEC_EXIT__STATUS_CODE;
		ex.code = r->code;
	}
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_EXEC_EXIT;
	resp.exec_exit = &ex;
	session_audit(s, r, NULL);
	session_finish(s, &resp);
}

static const struct session_hooks exec_hooks = {
	.input = exec_input,
	.output = exec_output,
	.done = exec_done,
};

/* Empty protobuf bytes may carry a NULL pointer: never hand it to memchr. */
static bool
has_nul(const ProtobufCBinaryData *b)
{
	return b->len > 0 && memchr(b->data, '\0', b->len) != NULL;
}

static bool
env_name_ok(const char *name)
{
	if (name == NULL || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return false;
	for (const char *p = name + 1; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return strlen(name) <= 255;
}

void
exec_wipe_request(Agentlane__V1__Exec *req)
{
	for (size_t i = 0; i < req->n_env; i++)
		if (req->env[i] != NULL)
			wire_wipe(req->env[i]->value.data,
			    req->env[i]->value.len);
}

void
exec_handle(struct laned *d, struct conn *c, const Agentlane__V1__Exec *req)
{
	struct gexec_bytes *argv = NULL, *env = NULL;
	char **envbuf = NULL, name[LANE_NAME_SIZE];
	struct lanenet_env *lenv;
	struct gexec_spec spec;
	uint64_t timeout_ms = req->timeout_ms, env_bytes = 0;
	size_t argc, npol;

	memset(&spec, 0, sizeof spec);
	/* The lane's name from here on: its policy is looked up by it. */
	if (!lane_resolve(d, c, req->lane, name))
		return;
	if ((req->n_argv > 0) == (req->shell.len > 0)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "exec needs exactly one of argv and shell");
		return;
	}
	if (req->n_argv > EXEC_MAX_ARGS) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "at most %d arguments", EXEC_MAX_ARGS);
		return;
	}
	/* execve() arguments cannot hold NUL bytes; refuse rather than cut. */
	for (size_t i = 0; i < req->n_argv; i++)
		if (req->argv[i].len == 0 && i == 0) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "argv[0] is empty");
			return;
		} else if (has_nul(&req->argv[i])) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "argv[%zu] contains a NUL byte", i);
			return;
		}
	if (has_nul(&req->shell)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "the shell command contains a NUL byte");
		return;
	}
	/* A relative workdir is in the workspace (session_start joins it). */
	if (req->workdir != NULL && strlen(req->workdir) > 4096) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "workdir is longer than 4096 bytes");
		return;
	}
	for (size_t i = 0; i < req->n_env; i++) {
		const Agentlane__V1__EnvVar *e = req->env[i];

		if (!env_name_ok(e->name)) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "invalid environment variable name");
			return;
		}
		if (has_nul(&e->value)) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "environment variable %s contains a NUL byte",
			    e->name);
			return;
		}
		env_bytes += strlen(e->name) + 1 + e->value.len;
	}
	if (env_bytes > d->cfg.max_env_bytes) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__TOO_LARGE,
		    "environment of %llu bytes exceeds the cap of %u bytes "
		    "(max_env_bytes)", (unsigned long long)env_bytes,
		    d->cfg.max_env_bytes);
		return;
	}
	spec.tty_rows = 24;
	spec.tty_cols = 80;
	if (req->window != NULL && (!req->tty ||
	    !exec_window(req->window, &spec.tty_rows, &spec.tty_cols))) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    req->tty ? "window sizes are 1-65535 rows and columns" :
		    "a window size is for an exec with a tty");
		return;
	}
	spec.tty = req->tty;
	/*
	 * The lane's own environment is its full name's (resolved above): an
	 * alias or a prefix gets what the al- name gets. A secret's variable
	 * is the lane's placeholder; a value for it must not reach the guest.
	 */
	lenv = xmalloc(sizeof *lenv);
	lanenet_exec_env(d, name, lenv);
	for (size_t i = 0; i < req->n_env; i++)
		if (lanenet_env_secret(lenv, req->env[i]->name)) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "%s is a secret of lane %s: the lane sets it to its "
			    "placeholder, and its value stays out of the guest",
			    req->env[i]->name, name);
			free(lenv);
			return;
		}
	if (d->cfg.max_exec_timeout_ms > 0) {
		if (timeout_ms > d->cfg.max_exec_timeout_ms) {
			char want[32], cap[32];

			units_format_duration(timeout_ms, want, sizeof want);
			units_format_duration(d->cfg.max_exec_timeout_ms, cap,
			    sizeof cap);
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
			    "exec timeout %s is above the cap of %s "
			    "(max_exec_timeout)", want, cap);
			free(lenv);
			return;
		}
		if (timeout_ms == 0)
			timeout_ms = d->cfg.max_exec_timeout_ms;
	}

	if (req->n_argv > 0) {
		argc = req->n_argv;
		argv = xcalloc(argc, sizeof *argv);
		for (size_t i = 0; i < argc; i++) {
			argv[i].data = req->argv[i].data;
			argv[i].len = req->argv[i].len;
		}
	} else {
		argc = 3;
		argv = xcalloc(argc, sizeof *argv);
		argv[0].data = (const uint8_t *)"/bin/sh";
		argv[0].len = 7;
		argv[1].data = (const uint8_t *)"-c";
		argv[1].len = 2;
		argv[2].data = req->shell.data;
		argv[2].len = req->shell.len;
	}
	/*
	 * NAME=VALUE entries; they only ever travel to the helper's stdin.
	 * The lane's come first (its proxy's and trust variables, its
	 * secrets' placeholders: lanenet.c), the caller's after them: the
	 * helper applies them in order, so a caller may override the proxy
	 * and trust ones. That changes no rule: the guest's nftables decide
	 * what is reachable, and the values are never in the guest.
	 */
	npol = lenv->n;
	env = xcalloc(npol + req->n_env + 1, sizeof *env);
	envbuf = xcalloc(req->n_env + 1, sizeof *envbuf);
	for (size_t i = 0; i < npol; i++) {
		env[i].data = (const uint8_t *)lenv->v[i];
		env[i].len = strlen(lenv->v[i]);
	}
	for (size_t i = 0; i < req->n_env; i++) {
		const Agentlane__V1__EnvVar *e = req->env[i];
		size_t nl = strlen(e->name);

		envbuf[i] = xmalloc(nl + 1 + e->value.len);
		memcpy(envbuf[i], e->name, nl);
		envbuf[i][nl] = '=';
		if (e->value.len > 0)
			memcpy(envbuf[i] + nl + 1, e->value.data, e->value.len);
		env[npol + i].data = (const uint8_t *)envbuf[i];
		env[npol + i].len = nl + 1 + e->value.len;
	}
	spec.lane = name;
	spec.argv = argv;
	spec.argc = argc;
	spec.cwd = req->workdir != NULL && req->workdir[0] != '\0' ?
	    req->workdir : NULL;
	spec.env = env;
	spec.nenv = npol + req->n_env;
	spec.stdin = req->stdin;
	spec.channel = true;
	spec.what = "exec";
	/* With a tty, window sizes may come even when stdin does not. */
	(void)session_start(d, c, &spec, &exec_hooks, timeout_ms,
	    req->stdin || req->tty, &(struct session_record){ "exec",
	    argv[0].data, argv[0].len });
	/* The helper frames were queued; wipe our copies of the values. */
	for (size_t i = 0; i < req->n_env; i++) {
		wire_wipe(envbuf[i], env[npol + i].len);
		free(envbuf[i]);
	}
	free(envbuf);
	free(env);
	free(lenv);
	free(argv);
}
