/*
 * agent-lanectl run: a lane for one command. It creates the lane, copies
 * in (--cp), runs the command, copies out (--out) and destroys the lane,
 * and exits with the command's status. The lane is owned by this
 * process's create connection (al_create_owned): however run ends, by ^C,
 * a failure or SIGKILL, the daemon destroys the lane when that connection
 * closes. --keep makes an ordinary lane instead and leaves it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

/* One --cp or --out: a host path and a guest path. */
struct run_copy {
	const char *spec;	/* as given, for messages */
	char *host, *guest;
};

/*
 * --cp HOST:LANEPATH splits at the last colon and --out LANEPATH:HOST at
 * the first: the guest path is the one without a colon, so a host path
 * may have some.
 */
static int
split_copy(const char *opt, const char *spec, bool guest_first,
    struct run_copy *rc)
{
	const char *colon = guest_first ? strchr(spec, ':') : strrchr(spec, ':');
	char *a, *b;

	if (colon == NULL || colon == spec || colon[1] == '\0')
		return ctl_usage("run: --%s %s: use %s", opt, spec, guest_first ?
		    "LANEPATH:HOSTPATH" : "HOSTPATH:LANEPATH");
	if ((a = strndup(spec, (size_t)(colon - spec))) == NULL ||
	    (b = strdup(colon + 1)) == NULL) {
		free(a);
		ctl_errx("out of memory");
		return CTL_EXIT_FAILURE;
	}
	rc->spec = spec;
	rc->host = guest_first ? b : a;
	rc->guest = guest_first ? a : b;
	return 0;
}

static void
copies_free(struct run_copy *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].host);
		free(v[i].guest);
	}
	free(v);
}

static int
run_fail(const char *what, const char *spec, const struct al_error *err)
{
	if (!ctl_interrupted()) {
		fprintf(stderr, "agent-lanectl: run: %s", what);
		if (spec != NULL) {
			fputc(' ', stderr);
			ctl_put_safe(stderr, spec);
		}
		fprintf(stderr, ": %s: %s\n", al_code_name(err->code),
		    err->message);
	}
	return CTL_EXIT_EXEC_FAILURE;
}

/* Copies in, runs, copies out: the exit status. */
static int
run_in(struct ctl *ctl, const struct ctl_parsed *p, const char *lane,
    struct run_copy *in, size_t nin, struct run_copy *out, size_t nout)
{
	struct al_error err;
	uint64_t bytes;
	bool ran;
	int status;

	for (size_t i = 0; i < nin && !ctl_interrupted(); i++)
		if (al_copy_in(ctl->client, lane, in[i].host, in[i].guest, NULL,
		    NULL, &bytes, &err) != AL_OK)
			return run_fail("--cp", in[i].spec, &err);
	if (ctl_interrupted())
		return CTL_EXIT_EXEC_FAILURE;
	status = ctl_exec_in(ctl, p, lane, (const char *const *)p->command,
	    &ran);
	if (!ran)
		return status;
	/*
	 * Outputs are fetched whatever the status (a failed build's logs are
	 * worth having); a missing one fails run only if the command did
	 * not, so that its own failure is never hidden.
	 */
	for (size_t i = 0; i < nout && !ctl_interrupted(); i++)
		if (al_copy_out(ctl->client, lane, out[i].guest, out[i].host,
		    NULL, &bytes, NULL, &err) != AL_OK) {
			int r = run_fail("--out", out[i].spec, &err);

			if (status == 0)
				status = r;
		}
	return status;
}

int
cmd_run(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_create_state cs = { .name = "" };
	struct al_create_opts o = AL_CREATE_OPTS_INIT;
	struct ctl_create_args a = { .quiet = false };
	struct run_copy *in = NULL, *out = NULL;
	struct al_owner *owner = NULL;
	struct ctl_parsed p;
	struct al_lane lane, gone;
	struct al_error err;
	size_t nin = 0, nout = 0;
	bool keep = false;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	if (p.ncommand == 0)
		return ctl_usage("usage: agent-lanectl run [OPTIONS] [--] CMD "
		    "[ARG...] (see agent-lanectl help run)");
	if ((in = calloc(p.nopts + 1, sizeof *in)) == NULL ||
	    (out = calloc(p.nopts + 1, sizeof *out)) == NULL) {
		free(in);
		ctl_errx("out of memory");
		return CTL_EXIT_FAILURE;
	}
	for (size_t i = 0; i < p.nopts; i++) {
		rc = 0;
		if (ctl_is(&p.opts[i], "cp"))
			rc = split_copy("cp", p.opts[i].value, false, &in[nin++]);
		else if (ctl_is(&p.opts[i], "out"))
			rc = split_copy("out", p.opts[i].value, true,
			    &out[nout++]);
		else if (ctl_is(&p.opts[i], "keep"))
			keep = true;
		if (rc != 0)
			goto done;
	}
	/* What can be checked on the host is, before a lane is made. */
	for (size_t i = 0; i < nin; i++)
		if (access(in[i].host, F_OK) == -1) {
			ctl_errx("run: --cp %s: %s", in[i].host, strerror(errno));
			rc = CTL_EXIT_EXEC_FAILURE;
			goto done;
		}
	for (size_t i = 0; i < nout; i++)
		if (ctl_check_destination(out[i].host) != 0) {
			rc = CTL_EXIT_EXEC_FAILURE;
			goto done;
		}
	if ((rc = ctl_create_prepare(ctl, &p, &o, &a)) != 0)
		goto done;
	o.progress = ctl_create_progress;
	o.arg = &cs;
	ctl_progress_start("create", a.quiet);
	ctl_progress_phase("connecting", "");
	if ((keep ? al_create(ctl->client, &o, &lane, &err) :
	    al_create_owned(ctl->client, &o, &lane, &owner, &err)) != AL_OK) {
		rc = ctl_create_failed(ctl, &cs, &err, false,
		    CTL_EXIT_EXEC_FAILURE);
		goto done;
	}
	ctl_progress_end("ready");
	rc = run_in(ctl, &p, lane.name, in, nin, out, nout);
	if (keep) {
		fprintf(stderr, "agent-lanectl: run: lane %s kept (--keep)\n",
		    lane.name);
		goto done;
	}
	if (ctl_interrupted()) {
		/* Closing the owner is what destroys it: say so first. */
		fprintf(stderr, "agent-lanectl: run interrupted; lane %s is being "
		    "destroyed\n", lane.name);
	} else if (al_destroy(ctl->client, lane.name, &gone, &err) != AL_OK) {
		/* The daemon still destroys it once the owner is closed. */
		fprintf(stderr, "agent-lanectl: run: destroying lane %s: %s: "
		    "%s\n", lane.name, al_code_name(err.code), err.message);
		if (rc == 0)
			rc = CTL_EXIT_EXEC_FAILURE;
	}
done:
	al_owner_close(owner);
	copies_free(in, nin);
	copies_free(out, nout);
	return rc;
}
