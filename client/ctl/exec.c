/* agent-lanectl exec: stdin, stdout and stderr streamed to a guest command. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "units.h"
#include "wire.h"

#define EXEC_MAX_ENV 1024

int
cmd_exec(struct ctl *ctl, int argc, char **argv)
{
	struct al_exec_opts o = AL_EXEC_OPTS_INIT;
	struct al_exec_result res;
	struct al_error err;
	const char *env[EXEC_MAX_ENV + 1], *lane = NULL, *v;
	char *owned[EXEC_MAX_ENV];
	size_t nenv = 0, nowned = 0;
	uint64_t ms;
	int i, r;

	o.stdin_fd = STDIN_FILENO;
	o.stdout_fd = STDOUT_FILENO;
	o.stderr_fd = STDERR_FILENO;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if ((r = ctl_opt(argc, argv, &i, "--workdir", &v)) != 0) {
			if (r < 0 || v[0] != '/')
				return ctl_usage("--workdir needs an absolute "
				    "guest path");
			o.workdir = v;
		} else if ((r = ctl_opt(argc, argv, &i, "--env", &v)) != 0) {
			if (r < 0 || v[0] == '=' || v[0] == '\0')
				return ctl_usage("--env needs NAME or NAME=VALUE");
			if (nenv == EXEC_MAX_ENV)
				return ctl_usage("too many --env options");
			if (strchr(v, '=') == NULL && getenv(v) == NULL)
				return ctl_usage("--env %s: not set in the "
				    "environment", v);
			env[nenv++] = v;
		} else if ((r = ctl_opt(argc, argv, &i, "--timeout", &v)) != 0) {
			if (r < 0 || !ctl_duration(v, UNITS_MS_PER_S, &ms) ||
			    ms == 0)
				return ctl_usage("--timeout needs a duration: 30 "
				    "(seconds), 30s, 5m, 2h");
			o.timeout_ms = ms;
		} else if (strcmp(argv[i], "-n") == 0 ||
		    strcmp(argv[i], "--no-stdin") == 0)
			o.stdin_fd = -1;
		else if (argv[i][0] == '-')
			return ctl_usage("exec: unknown option %s", argv[i]);
		else if (lane == NULL)
			lane = argv[i];
		else
			break;	/* the command starts here (no "--") */
	}
	if (lane == NULL || i >= argc)
		return ctl_usage("usage: agent-lanectl exec [--workdir DIR] "
		    "[--env K=V]... [--timeout DURATION] LANE -- CMD [ARG...]");
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
	o.argv = (const char *const *)(argv + i);
	r = al_exec(ctl->client, lane, &o, &res, &err) == AL_OK ? 0 : -1;
out:
	/* NAME=VALUE from our environment: secrets, wiped before free. */
	while (nowned > 0) {
		nowned--;
		wire_wipe(owned[nowned], strlen(owned[nowned]));
		free(owned[nowned]);
	}
	/* Our reader went away (`| head`): end quietly, as SIGPIPE would. */
	if (r == -1 && err.code == AL_IO && err.os_errno == EPIPE)
		return 128 + SIGPIPE;
	if (r == -1 && ctl_interrupted())
		return CTL_EXIT_EXEC_FAILURE;	/* main re-raises the signal */
	if (r == -1) {
		fprintf(stderr, "agent-lanectl: exec: %s: %s\n",
		    al_code_name(err.code), err.message);
		return CTL_EXIT_EXEC_FAILURE;
	}
	/* The shell's convention: 128+N for a command killed by signal N. */
	return res.signaled ? 128 + res.signal : res.code;
}
