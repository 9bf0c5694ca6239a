/*
 * agent-lanectl exec and shell: stdin, stdout and stderr streamed to a
 * guest command, through pipes or (-t, shell) a terminal in the guest.
 */
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

/* The user's login shell if it is bash, else bash, else sh. */
static const char *const shell_argv[] = { "/bin/sh", "-c",
    "s=$(getent passwd \"$(id -un)\" | cut -d: -f7); "
    "for c in \"$s\" /bin/bash /bin/sh; do "
    "[ -n \"$c\" ] && [ -x \"$c\" ] && exec \"$c\" -l; done; exec sh -l",
    NULL };

/*
 * exec or shell on a lane still creating (create --no-wait, or another
 * terminal's create) waits until it is ready, up to --timeout, rather
 * than failing: 0 to go on, else the status (said).
 */
static int
wait_for(struct ctl *ctl, const struct ctl_parsed *p, const char *lane,
    uint64_t timeout_ms)
{
	struct al_lane l;
	struct al_error err;
	int rc;

	rc = ctl_wait_ready(ctl, lane, timeout_ms, &l, &err);
	if (rc == CTL_WAIT_READY)
		return 0;
	if (ctl_interrupted())
		return CTL_EXIT_EXEC_FAILURE;	/* main re-raises the signal */
	if (rc == CTL_WAIT_TIMEOUT)
		ctl_report(ctl, "DEADLINE_EXCEEDED", p->cmd->name, NULL,
		    "the lane was still creating after --timeout", NULL);
	else
		ctl_report(ctl, al_code_name(err.code), p->cmd->name, NULL,
		    err.message, NULL);
	return CTL_EXIT_EXEC_FAILURE;
}

/*
 * The exec, waiting for a lane still creating. The daemon refuses such a
 * lane at once, and the exec is then tried again, which loses nothing
 * when standard input is none, a terminal or seekable (put back where it
 * was). A pipe's bytes read meanwhile would be lost: with a pipe, the
 * lane's state is asked first instead (one more call). run's own lane is
 * ready already. 0 or -1 (err) as al_exec, or a status already said.
 */
static int
exec_call(struct ctl *ctl, const struct ctl_parsed *p, const char *lane,
    const struct al_exec_opts *o, bool raw, struct al_exec_result *res,
    struct al_error *err)
{
	bool run = strcmp(p->cmd->name, "run") == 0;
	off_t at = -1;
	bool pipe_in = false;
	struct al_lane l;
	int r;

	if (o->stdin_fd >= 0 && !isatty(o->stdin_fd))
		pipe_in = (at = lseek(o->stdin_fd, 0, SEEK_CUR)) == -1;
	if (!run && pipe_in && al_get(ctl->client, lane, &l, err) == AL_OK &&
	    l.state == AL_LANE_CREATING &&
	    (r = wait_for(ctl, p, l.name, o->timeout_ms)) != 0)
		return r;
	for (int attempt = 0;; attempt++) {
		if (raw && ctl_tty_raw(STDIN_FILENO) == -1) {
			err->code = AL_IO;
			snprintf(err->message, sizeof err->message,
			    "raw mode");
			ctl_errx("%s: cannot put the terminal in raw mode: %s",
			    p->cmd->name, strerror(errno));
			return -1;
		}
		r = al_exec(ctl->client, lane, o, res, err) == AL_OK ? 0 : -1;
		ctl_tty_restore();
		if (r == 0 || run || pipe_in || attempt > 0 ||
		    err->code != AL_FAILED_PRECONDITION ||
		    strstr(err->message, " is creating, not ready") == NULL)
			return r;
		if (at != -1 && lseek(o->stdin_fd, at, SEEK_SET) == -1)
			return r;
		if ((r = wait_for(ctl, p, lane, o->timeout_ms)) != 0)
			return r;
	}
}

/*
 * exec, shell and run share everything but their operands: runs argv
 * (NULL: the login shell) in lane with the exec options of p. *ran says
 * whether the status returned is the command's own.
 */
int
ctl_exec_in(struct ctl *ctl, const struct ctl_parsed *pp, const char *lane,
    const char *const *argv, bool *ran)
{
	struct al_exec_opts o = AL_EXEC_OPTS_INIT;
	struct ctl_parsed p = *pp;
	struct al_exec_result res;
	struct al_error err;
	const char *env[EXEC_MAX_ENV + 1], *v, *workdir = NULL;
	bool is_shell = argv == NULL;
	char *owned[EXEC_MAX_ENV];
	size_t nenv = 0, nowned = 0;
	uint64_t ms;
	bool tty = is_shell, interactive = is_shell, raw = false;
	int r;

	*ran = false;
	o.stdin_fd = STDIN_FILENO;
	o.stdout_fd = STDOUT_FILENO;
	o.stderr_fd = STDERR_FILENO;
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
			if ((r = ctl_opt_duration("--timeout", v, 1, &ms)) != 0)
				return r;
			o.timeout_ms = ms;
		} else if (ctl_is(&p.opts[i], "no-stdin"))
			o.stdin_fd = -1;
		else if (ctl_is(&p.opts[i], "tty"))
			tty = true;
		else if (ctl_is(&p.opts[i], "interactive"))
			interactive = true;
	}
	if (interactive && o.stdin_fd == -1)
		return ctl_usage("-i and --no-stdin contradict each other");
	/*
	 * As docker refuses it: a guest terminal fed from a pipe or a file
	 * never sees an end of input (a terminal has none to send), so the
	 * shell would wait for keys that cannot come. Refused before any
	 * call, so that a script fails at once instead of hanging.
	 */
	if (tty && interactive && !isatty(STDIN_FILENO)) {
		ctl_report(ctl, CTL_CODE_FAILED, p.cmd->name, NULL,
		    "the input device is not a TTY", NULL);
		return CTL_EXIT_FAILURE;
	}
	/*
	 * -t as docker's: without -i the command reads nothing (a terminal
	 * has no end of input to send it); with -i our terminal, if stdin is
	 * one, goes raw so that every key reaches the guest's terminal.
	 */
	if (tty) {
		o.tty = true;
		o.tty_fd = isatty(STDIN_FILENO) ? STDIN_FILENO :
		    isatty(STDOUT_FILENO) ? STDOUT_FILENO : -1;
		o.winch_fd = -1;
		if (!interactive)
			o.stdin_fd = -1;
		if (o.tty_fd != -1 && (o.winch_fd = ctl_tty_winch_fd()) == -1) {
			ctl_errx("%s: %s", p.cmd->name, strerror(errno));
			return CTL_EXIT_EXEC_FAILURE;
		}
		raw = interactive && isatty(STDIN_FILENO);
	}
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
	/* Programs in the guest's terminal want to know what it is. */
	if (tty) {
		bool have = false;

		for (size_t k = 0; k < nenv; k++)
			if (strncmp(env[k], "TERM=", 5) == 0)
				have = true;
		if (!have && nenv < EXEC_MAX_ENV) {
			const char *t = getenv("TERM");
			char *kv;

			if (asprintf(&kv, "TERM=%s", t != NULL && t[0] != '\0' ?
			    t : "xterm-256color") == -1) {
				err.code = AL_IO;
				snprintf(err.message, sizeof err.message,
				    "out of memory");
				r = -1;
				goto out;
			}
			owned[nowned++] = kv;
			env[nenv++] = kv;
		}
	}
	env[nenv] = NULL;
	o.env = env;
	o.argv = is_shell ? shell_argv : argv;
	r = exec_call(ctl, &p, lane, &o, raw, &res, &err);
out:
	/* NAME=VALUE from our environment: secrets, wiped before free. */
	while (nowned > 0) {
		nowned--;
		wire_wipe(owned[nowned], strlen(owned[nowned]));
		free(owned[nowned]);
	}
	if (r > 0)
		return r;	/* exec_call's status, said */
	/* Our reader went away (`| head`): end quietly, as SIGPIPE would. */
	if (r == -1 && err.code == AL_IO && err.os_errno == EPIPE)
		return 128 + SIGPIPE;
	if (r == -1 && ctl_interrupted())
		return CTL_EXIT_EXEC_FAILURE;	/* main re-raises the signal */
	if (r == -1) {
		char msg[sizeof err.message + 4200];

		/* The daemon's message does not say which directory. */
		if (o.workdir != NULL && strstr(err.message,
		    "working directory") != NULL)
			snprintf(msg, sizeof msg, "--workdir %s: %s", o.workdir,
			    err.message);
		else
			snprintf(msg, sizeof msg, "%s", err.message);
		/* Named as typed: shell, run or exec. */
		ctl_report(ctl, al_code_name(err.code), p.cmd->name, NULL, msg,
		    NULL);
		return ctl_exit_status(&err, CTL_EXIT_EXEC_FAILURE);
	}
	/* The shell's convention: 128+N for a command killed by signal N. */
	*ran = true;
	return res.signaled ? 128 + res.signal : res.code;
}

int
cmd_exec(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	bool ran;
	int r;

	if ((r = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return r;
	if (p.noperands != 1 || p.ncommand == 0)
		return ctl_usage("usage: agent-lanectl exec [OPTIONS] LANE [--] "
		    "CMD [ARG...] (see agent-lanectl help exec)");
	return ctl_exec_in(ctl, &p, p.operands[0],
	    (const char *const *)p.command, &ran);
}

int
cmd_shell(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_parsed p;
	bool ran;
	int r;

	if ((r = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return r;
	if (p.noperands != 1)
		return ctl_usage("usage: agent-lanectl shell [OPTIONS] LANE "
		    "(see agent-lanectl help shell)");
	return ctl_exec_in(ctl, &p, p.operands[0], NULL, &ran);
}
