/*
 * agent-lanectl cp: HOSTPATH LANE:GUESTPATH, or LANE:GUESTPATH HOSTPATH;
 * "-" for a tar stream on standard input or output (cpstream.c).
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/* What a copy moved so far, for the progress line. */
struct cp_progress {
	uint64_t total;		/* estimated; 0: unknown */
};

static void
progress_cb(uint64_t bytes, void *arg)
{
	struct cp_progress *p = arg;

	ctl_progress_bytes(bytes, p->total);
}

/* A copy out: a file's size, as the guest gives it, makes a percentage. */
static void
begin_cb(int kind, uint64_t size, void *arg)
{
	struct cp_progress *p = arg;

	p->total = kind == AL_COPY_FILE ? size : 0;
}

/*
 * The tar stream a host path makes, estimated for a percentage: a 512-byte
 * header per entry and its data in 512-byte blocks, and the end blocks
 * (pax headers of long names make it a little more: the line stays at 99%
 * until the copy is done). A tree past CP_ESTIMATE_MAX entries is not
 * walked twice: 0, no percentage.
 */
#define CP_ESTIMATE_MAX 100000
static uint64_t est_bytes;
static size_t est_entries;

static int
estimate_cb(const char *path, const struct stat *sb, int type,
    struct FTW *ftw)
{
	if (++est_entries > CP_ESTIMATE_MAX)
		return 1;
	est_bytes += 512;
	if (type == FTW_F && S_ISREG(sb->st_mode))
		est_bytes += ((uint64_t)sb->st_size + 511) / 512 * 512;
	return 0;
}

static uint64_t
estimate_tar(const char *path)
{
	est_bytes = 1024;
	est_entries = 0;
	if (nftw(path, estimate_cb, 32, FTW_PHYS) != 0)
		return 0;
	return est_bytes;
}

/*
 * "LANE:PATH" → lane and path, true; false for a host path. LANE is what
 * the daemon resolves: an al- name, an alias or a name prefix, so a word
 * of those characters before the first colon (no "/" in it, as in
 * `docker cp`); a host file whose name has a colon is written "./a:b". A
 * word that starts like a full lane name ("al-" and 16 more) but is not
 * one is a mistake worth naming: *bad is set and the word is not a host
 * path either.
 */
static bool
split_remote(char *arg, const char **lane, const char **path, bool *bad)
{
	char *colon = strchr(arg, ':');
	size_t n;

	*bad = false;
	if (colon == NULL || colon == arg)
		return false;
	n = (size_t)(colon - arg);
	if (n > 63 || strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789._-") !=
	    n || arg[0] == '.' || arg[0] == '-') {
		*bad = strncmp(arg, "al-", 3) == 0 && n >= 19 &&
		    memchr(arg, '/', n) == NULL;
		return false;
	}
	if (strncmp(arg, "al-", 3) == 0 && n > 19) {
		*bad = true;
		return false;
	}
	*colon = '\0';
	*lane = arg;
	*path = colon + 1;
	return true;
}

/*
 * Errors name the lane path they are about: the daemon's "no such file or
 * directory in the guest" does not say which.
 */
static int
cp_fail(struct ctl *ctl, const char *lane, const char *gpath,
    const struct al_error *err)
{
	if (ctl_interrupted())
		return CTL_EXIT_FAILURE;
	fputs("agent-lanectl: cp: ", stderr);
	ctl_put_safe(stderr, lane);
	fputc(':', stderr);
	ctl_put_safe(stderr, gpath);
	fprintf(stderr, ": %s: ", al_code_name(err->code));
	ctl_put_safe(stderr, err->message);
	fputc('\n', stderr);
	ctl_hint(ctl, err);
	return ctl_exit_status(err, CTL_EXIT_FAILURE);
}

/*
 * Copy-out checks the destination before asking the daemon, so that a
 * missing host directory is said as such rather than after the transfer.
 */
int
ctl_check_destination(const char *host)
{
	char parent[PATH_MAX], *slash;
	struct stat sb;

	if (stat(host, &sb) == 0)
		return 0;
	snprintf(parent, sizeof parent, "%s", host);
	while ((slash = strrchr(parent, '/')) != NULL && slash[1] == '\0' &&
	    slash != parent)
		*slash = '\0';
	if ((slash = strrchr(parent, '/')) == NULL)
		return 0;	/* in the current directory */
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	if (stat(parent, &sb) == -1) {
		ctl_errx("cp: %s: %s (the destination's directory %s must "
		    "exist)", host, strerror(errno), parent);
		return CTL_EXIT_FAILURE;
	}
	if (!S_ISDIR(sb.st_mode)) {
		ctl_errx("cp: %s: %s is not a directory", host, parent);
		return CTL_EXIT_FAILURE;
	}
	return 0;
}

int
cmd_cp(struct ctl *ctl, int argc, char **argv)
{
	struct al_copy_out_opts oo = AL_COPY_OUT_OPTS_INIT;
	struct cp_progress pr = { 0 };
	struct ctl_parsed p;
	struct al_error err;
	char *args[2];
	const char *lane, *gpath, *v;
	uint64_t bytes = 0;
	bool bad0, bad1, max_bytes_set = false, quiet = false;
	int rc;

	if ((rc = ctl_parse(ctl, argc, argv, &p)) != CTL_CONTINUE)
		return rc;
	for (size_t i = 0; i < p.nopts; i++) {
		v = p.opts[i].value;
		if (ctl_is(&p.opts[i], "max-bytes")) {
			/* 0 is the protocol's "the daemon's cap". */
			if (!ctl_size(v, 1, &oo.max_bytes))
				return ctl_usage("--max-bytes needs a size: "
				    "1048576, 512K, 64M, 1G (0: the daemon's cap)");
			max_bytes_set = true;
		} else if (ctl_is(&p.opts[i], "max-entries")) {
			if (!ctl_uint(v, UINT64_MAX, &oo.max_entries) ||
			    oo.max_entries == 0 ||
			    strspn(v, "0123456789") != strlen(v))
				return ctl_usage("--max-entries needs a number");
		} else if (ctl_is(&p.opts[i], "quiet"))
			quiet = true;
	}
	if (p.noperands != 2)
		return ctl_usage("usage: agent-lanectl cp [OPTIONS] SRC DST (see "
		    "agent-lanectl help cp)");
	args[0] = p.operands[0];
	args[1] = p.operands[1];
	if (split_remote(args[0], &lane, &gpath, &bad0)) {
		const char *l2, *g2;

		if (split_remote(args[1], &l2, &g2, &bad1))
			return ctl_usage("cp: copy between lanes through the host");
		if (bad1)
			return ctl_usage("cp: \"%s\": not a lane name, alias or "
			    "name prefix", args[1]);
		if (strcmp(args[1], "-") == 0) {
			/* No progress line: the stream is the output. */
			rc = cp_out_stream(ctl, lane, gpath, &oo, &err);
			if (rc == -1)
				return cp_fail(ctl, lane, gpath, &err);
			return rc;
		}
		if ((rc = ctl_check_destination(args[1])) != 0)
			return rc;
		oo.progress = progress_cb;
		oo.begin = begin_cb;
		oo.arg = &pr;
		ctl_progress_start("cp", quiet);
		if (al_copy_out(ctl->client, lane, gpath, args[1], &oo, &bytes,
		    NULL, &err) != AL_OK)
			return cp_fail(ctl, lane, gpath, &err);
	} else if (split_remote(args[1], &lane, &gpath, &bad1)) {
		if (bad0)
			return ctl_usage("cp: \"%s\": not a lane name, alias or "
			    "name prefix", args[0]);
		if (max_bytes_set || oo.max_entries != 0)
			return ctl_usage("cp: --max-bytes and --max-entries "
			    "bound copies out of a lane");
		if (strcmp(args[0], "-") == 0) {
			rc = cp_in_stream(ctl, lane, gpath, &err);
			if (rc == -1)
				return cp_fail(ctl, lane, gpath, &err);
			return rc;
		}
		if (access(args[0], F_OK) == -1) {
			ctl_errx("cp: %s: %s", args[0], strerror(errno));
			return CTL_EXIT_FAILURE;
		}
		if (ctl_progress_start("cp", quiet))
			pr.total = estimate_tar(args[0]);
		if (al_copy_in(ctl->client, lane, args[0], gpath, progress_cb,
		    &pr, &bytes, &err) != AL_OK)
			return cp_fail(ctl, lane, gpath, &err);
	} else if (bad0 || bad1)
		return ctl_usage("cp: \"%s\": not a lane name, alias or name "
		    "prefix", bad0 ? args[0] : args[1]);
	else
		return ctl_usage("cp: one side must be LANE:PATH (see "
		    "agent-lanectl help cp)");
	ctl_progress_bytes(bytes, pr.total != 0 ? bytes : 0);
	ctl_progress_end("done");
	return 0;
}
