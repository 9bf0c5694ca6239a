#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "conn.h"
#include "exec.h"
#include "laned.h"
#include "log.h"
#include "session.h"
#include "util.h"
#include "wire.h"

#define EXEC_MAX_ARGS 65536

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
	char **envbuf = NULL;
	struct gexec_spec spec;
	uint64_t timeout_ms = req->timeout_ms, env_bytes = 0;
	size_t argc;

	memset(&spec, 0, sizeof spec);
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
	if (req->workdir != NULL && req->workdir[0] != '\0' &&
	    (req->workdir[0] != '/' || strlen(req->workdir) > 4096)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "workdir must be an absolute guest path");
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
	if (d->cfg.max_exec_timeout_ms > 0) {
		if (timeout_ms > d->cfg.max_exec_timeout_ms) {
			conn_send_error(c,
			    AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
			    "exec timeout above the cap of %llu s "
			    "(max_exec_timeout)", (unsigned long long)
			    (d->cfg.max_exec_timeout_ms / 1000));
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
	/* NAME=VALUE entries; they only ever travel to the helper's stdin. */
	env = xcalloc(req->n_env + 1, sizeof *env);
	envbuf = xcalloc(req->n_env + 1, sizeof *envbuf);
	for (size_t i = 0; i < req->n_env; i++) {
		const Agentlane__V1__EnvVar *e = req->env[i];
		size_t nl = strlen(e->name);

		envbuf[i] = xmalloc(nl + 1 + e->value.len);
		memcpy(envbuf[i], e->name, nl);
		envbuf[i][nl] = '=';
		if (e->value.len > 0)
			memcpy(envbuf[i] + nl + 1, e->value.data, e->value.len);
		env[i].data = (const uint8_t *)envbuf[i];
		env[i].len = nl + 1 + e->value.len;
	}
	spec.lane = req->lane;
	spec.argv = argv;
	spec.argc = argc;
	spec.cwd = req->workdir != NULL && req->workdir[0] != '\0' ?
	    req->workdir : NULL;
	spec.env = env;
	spec.nenv = req->n_env;
	spec.stdin = req->stdin;
	spec.what = "exec";
	(void)session_start(d, c, &spec, &exec_hooks, timeout_ms, req->stdin);
	/* The helper frames were queued; wipe our copies of the values. */
	for (size_t i = 0; i < req->n_env; i++) {
		wire_wipe(envbuf[i], env[i].len);
		free(envbuf[i]);
	}
	free(envbuf);
	free(env);
	free(argv);
}
