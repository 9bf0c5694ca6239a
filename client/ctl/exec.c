/* agent-lanectl exec: stdin, stdout and stderr streamed to a guest command. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "units.h"

#define EXEC_MAX_ENV 1024

int
cmd_exec(struct ctl *ctl, int argc, char **argv)
{
	struct al_exec_opts o = {
		.stdin_fd = STDIN_FILENO, .stdout_fd = STDOUT_FILENO,
		.stderr_fd = STDERR_FILENO,
	};
	struct ctl_parsed p;
	struct al_exec_result res;
	struct al_error err;
	const char *env[EXEC_MAX_ENV + 1], *lane, *v, *workdir = NULL;
	char *owned[EXEC_MAX_ENV];
	size_t nenv = 0, nowned = 0;
	uint64_t ms;
	int r;

	if ((r = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return r;
	for (size_t i = 0; i < p.nopts; i++) {
		v = p.opts[i].value;
		if (ctl_is(&p.opts[i], "workdir")) {
			if (v[0] == '\0' || strlen(v) > 4096)
				return ctl_usage("--workdir needs a guest directory");
			workdir = v;
		} else if (ctl_is(&p.opts[i], "env")) {
			if (v[0] == '=' || v[0] == '\0')
				return ctl_usage("--env needs NAME or NAME=VALUE");
			if (nenv == EXEC_MAX_ENV)
				return ctl_usage("too many --env options");
			if (strchr(v, '=') == NULL && getenv(v) == NULL)
				return ctl_usage("--env %s: not set in the "
				    "environment", v);
			env[nenv++] = v;
		} else if (ctl_is(&p.opts[i], "timeout")) {
			if (!ctl_duration(v, &ms) || ms == 0)
				return ctl_usage("--timeout needs a duration: 30 "
				    "(seconds), 30s, 5m, 1h30m");
			o.timeout_ms = ms;
		} else if (ctl_is(&p.opts[i], "no-stdin"))
			o.stdin_fd = -1;
	}
	if (p.noperands != 1 || p.ncommand == 0)
		return ctl_usage("usage: agent-lanectl exec [OPTIONS] LANE [--] "
		    "CMD [ARG...] (see agent-lanectl help exec)");
	lane = p.operands[0];
	/* A relative --workdir is in the workspace; the daemon joins it. */
	o.workdir = workdir;
	/*
	 * --env NAME takes the value from our environment, so that secrets
	 * need not be on any command line at all.
	 */
	for (size_t k = 0; k < nenv; k++) {
		char *kv;

		if (strchr(env[k], '=') != NULL)
			continue;
		if (asprintf(&kv, "%s=%s", env[k], getenv(env[k])) == -1) {
			err.code = AL_IO;
			snprintf(err.message, sizeof err.message, "out of memory");
			r = -1;
			goto out;
		}
		owned[nowned++] = kv;
		env[k] = kv;
	}
	env[nenv] = NULL;
	o.env = env;
	o.argv = (const char *const *)p.command;
	r = al_exec(ctl->client, lane, &o, &res, &err);
out:
	while (nowned > 0)
		free(owned[--nowned]);
	/* Our reader went away (`| head`): end quietly, as SIGPIPE would. */
	if (r == -1 && err.code == AL_IO && err.os_errno == EPIPE)
		return 128 + SIGPIPE;
	if (r == -1 && ctl_interrupted())
		return CTL_EXIT_EXEC_FAILURE;	/* main re-raises the signal */
	if (r == -1) {
		/* The daemon's message does not say which directory. */
		if (o.workdir != NULL && strstr(err.message,
		    "working directory") != NULL)
			fprintf(stderr, "agent-lanectl: exec: %s: --workdir %s: "
			    "%s\n", al_code_name(err.code), o.workdir,
			    err.message);
		else
			fprintf(stderr, "agent-lanectl: exec: %s: %s\n",
			    al_code_name(err.code), err.message);
		ctl_hint(ctl, &err);
		return CTL_EXIT_EXEC_FAILURE;
	}
	/* The shell's convention: 128+N for a command killed by signal N. */
	return res.signaled ? 128 + res.signal : res.code;
}
