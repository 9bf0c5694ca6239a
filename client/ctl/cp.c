/* agent-lanectl cp: HOSTPATH LANE:GUESTPATH, or LANE:GUESTPATH HOSTPATH. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

struct progress {
	bool tty;
	struct timespec start;
	struct timespec last;
};

static double
seconds_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) +
	    (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

static void
progress_cb(uint64_t bytes, void *arg)
{
	struct progress *p = arg;
	double el;

	if (!p->tty || seconds_since(&p->last) < 0.2)
		return;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
	el = seconds_since(&p->start);
	fprintf(stderr, "\r%10.1f MiB  %8.1f MiB/s ", bytes / 1048576.0,
	    el > 0 ? bytes / 1048576.0 / el : 0.0);
}

static void
progress_end(struct progress *p, uint64_t bytes)
{
	double el = seconds_since(&p->start);

	if (p->tty)
		fprintf(stderr, "\r%10.1f MiB  %8.1f MiB/s  done\n",
		    bytes / 1048576.0, el > 0 ? bytes / 1048576.0 / el : 0.0);
}

/* "al-<16 hex>:/path" → lane and path; false for a host path. */
static bool
split_remote(char *arg, const char **lane, const char **path)
{
	char *colon = strchr(arg, ':');

	if (colon == NULL || colon - arg != 19)
		return false;
	*colon = '\0';
	if (!ctl_lane_name(arg)) {
		*colon = ':';
		return false;
	}
	*lane = arg;
	*path = colon + 1;
	return true;
}

int
cmd_cp(struct ctl *ctl, int argc, char **argv)
{
	struct al_copy_out_opts oo = AL_COPY_OUT_OPTS_INIT;
	struct progress p = { .tty = isatty(STDERR_FILENO) };
	struct al_error err;
	char *args[2];
	const char *lane, *gpath, *v;
	size_t nargs = 0;
	uint64_t bytes = 0;
	bool max_bytes_set = false;
	int r;

	for (int i = 1; i < argc; i++) {
		if ((r = ctl_opt(argc, argv, &i, "--max-bytes", &v)) != 0) {
			/* 0 is the protocol's "the daemon's cap". */
			if (r < 0 || !ctl_uint(v, UINT64_MAX, &oo.max_bytes))
				return ctl_usage("--max-bytes needs a size: "
				    "1048576, 512K, 64M, 1G (0: the daemon's cap)");
			max_bytes_set = true;
		} else if ((r = ctl_opt(argc, argv, &i, "--max-entries",
		    &v)) != 0) {
			if (r < 0 || !ctl_uint(v, UINT64_MAX, &oo.max_entries) ||
			    oo.max_entries == 0)
				return ctl_usage("--max-entries needs a number");
		} else if (nargs < 2)
			args[nargs++] = argv[i];
		else
			return ctl_usage("cp: too many arguments");
	}
	if (nargs != 2)
		return ctl_usage("usage: agent-lanectl cp [--max-bytes N] "
		    "HOSTPATH LANE:GUESTPATH | LANE:GUESTPATH HOSTPATH");
	clock_gettime(CLOCK_MONOTONIC, &p.start);
	p.last = p.start;
	if (split_remote(args[0], &lane, &gpath)) {
		char *dummy;

		if (split_remote(args[1], (const char **)&dummy, &v))
			return ctl_usage("cp: copy between lanes through the host");
		oo.progress = progress_cb;
		oo.arg = &p;
		if (al_copy_out(ctl->client, lane, gpath, args[1], &oo, &bytes,
		    NULL, &err) != AL_OK)
			return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	} else if (split_remote(args[1], &lane, &gpath)) {
		if (max_bytes_set || oo.max_entries != 0)
			return ctl_usage("cp: --max-bytes and --max-entries "
			    "bound copies out of a lane");
		if (al_copy_in(ctl->client, lane, args[0], gpath, progress_cb,
		    &p, &bytes, &err) != AL_OK)
			return ctl_fail(ctl, &err, CTL_EXIT_FAILURE);
	} else
		return ctl_usage("cp: one side must be LANE:PATH");
	progress_end(&p, bytes);
	return 0;
}
