/* al_copy_in and al_copy_out: host files travel through the client. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "place.h"
#include "tar.h"

#define COPY_DEFAULT_MAX_ENTRIES 100000

/* ---- Copy in ---- */

struct in_ctx {
	struct al_conn *conn;
	uint64_t bytes;
	al_progress_fn progress;
	void *arg;
};

static int
send_chunk(struct al_conn *conn, const void *data, size_t len, bool eof,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__DataChunk ch = AGENTLANE__V1__DATA_CHUNK__INIT;

	ch.data.data = (uint8_t *)data;
	ch.data.len = len;
	ch.eof = eof;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_DATA;
	req.data = &ch;
	return al_conn_send(conn, &req, err);
}

static int
in_write(void *arg, const void *buf, size_t len, struct al_error *err)
{
	struct in_ctx *ctx = arg;
	const uint8_t *p = buf;
	size_t chunk = al_conn_chunk(ctx->conn);

	while (len > 0) {
		size_t n = len > chunk ? chunk : len;

		if (send_chunk(ctx->conn, p, n, false, err) == -1)
			return -1;
		p += n;
		len -= n;
		ctx->bytes += n;
		if (ctx->progress != NULL)
			ctx->progress(ctx->bytes, ctx->arg);
	}
	return 0;
}

/*
 * The daemon answers once the guest is done, or early (and then closes)
 * when the guest failed: a send error is followed by reading its answer.
 */
static int
in_answer(struct al_conn *conn, uint64_t *bytes, struct al_error *err)
{
	struct al_error rerr;
	AlResponse *resp = al_conn_recv(conn, &rerr);

	if (resp == NULL) {
		if (err != NULL && err->code == AL_OK)
			*err = rerr;
		return -1;
	}
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_COPY_IN_DONE) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		return -1;
	}
	if (bytes != NULL)
		*bytes = resp->copy_in_done->bytes;
	al_response_free(resp);
	return 0;
}

/*
 * The source of a copy, as docker cp names it: a file goes by its name, a
 * directory by its name into an existing directory, and "DIR/." (or "/")
 * by its contents (*name ""). ".." is named by what it resolves to.
 */
static int
source_name(const char *path, bool dir, char *name, size_t len,
    struct al_error *err)
{
	char real[PATH_MAX];

	if (al_path_last(path, name, len) && !dir) {
		al_set_error(err, AL_INVALID_ARGUMENT, "%s: not a directory",
		    path);
		return -1;
	}
	if (strcmp(name, ".") == 0)
		name[0] = '\0';
	else if (strcmp(name, "..") == 0) {
		if (realpath(path, real) == NULL) {
			al_set_errno(err, AL_IO, path);
			return -1;
		}
		(void)al_path_last(real, name, len);
	}
	if (name[0] == '\0' && !dir) {
		al_set_error(err, AL_INVALID_ARGUMENT, "%s: not a file name",
		    path);
		return -1;
	}
	return 0;
}

static int
do_copy_in(struct al_client *c, const char *lane, const char *host_path,
    const char *guest_path, al_progress_fn progress, void *arg,
    uint64_t *bytes, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__CopyIn ci = AGENTLANE__V1__COPY_IN__INIT;
	struct in_ctx ctx = { .progress = progress, .arg = arg };
	struct al_conn conn;
	struct stat sb;
	char name[NAME_MAX + 1];
	int rc;

	if (guest_path == NULL || guest_path[0] == '\0' ||
	    strlen(guest_path) >= PATH_MAX) {
		al_set_error(err, AL_INVALID_ARGUMENT, "a guest path is needed");
		return -1;
	}
	if (stat(host_path, &sb) == -1) {
		al_set_errno(err, AL_IO, host_path);
		return -1;
	}
	if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) {
		al_set_error(err, AL_IO, "%s: not a regular file or directory",
		    host_path);
		return -1;
	}
	if (source_name(host_path, S_ISDIR(sb.st_mode), name, sizeof name,
	    err) == -1)
		return -1;
	/* The guest places it by docker cp's rules (daemon/copy.c). */
	ci.lane = (char *)lane;
	ci.dest_path = (char *)guest_path;
	ci.source_kind = S_ISDIR(sb.st_mode) ?
	    AGENTLANE__V1__COPY_KIND__DIRECTORY : AGENTLANE__V1__COPY_KIND__FILE;
	ci.source_name = name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_COPY_IN;
	req.copy_in = &ci;
	if (al_conn_open(c, &conn, &req, err) == -1)
		return -1;
	ctx.conn = &conn;
	rc = al_tar_create(host_path, name, in_write, &ctx, err);
	if (rc == 0)
		rc = send_chunk(&conn, NULL, 0, true, err);
	if (rc == 0)
		rc = in_answer(&conn, bytes, err);
	else if (err->code == AL_CONNECT) {
		/* The daemon stopped listening: it says why. */
		(void)in_answer(&conn, NULL, err);
	}
	al_conn_close(&conn);
	return rc;
}

AL_API enum al_code
al_copy_in(struct al_client *c, const char *lane, const char *host_path,
    const char *guest_path, al_progress_fn progress, void *arg,
    uint64_t *bytes, struct al_error *err)
{
	struct al_error local;

	err = al_error_begin(err, &local);
	return al_result(do_copy_in(c, lane, host_path, guest_path, progress,
	    arg, bytes, err), err);
}

/* ---- Copy out ---- */

struct out_ctx {
	struct al_conn *conn;
	AlResponse *cur;	/* frame whose data is being handed out */
	uint64_t bytes;
	uint64_t max_bytes;
	uint32_t mode;		/* a file's, as the guest gave it; 0: not known */
	bool done;		/* CopyOutDone seen */
	al_progress_fn progress;
	void *arg;
};

/* Next DataChunk from the daemon; 0 at CopyOutDone. */
static ssize_t
out_read(void *arg, const void **buf, struct al_error *err)
{
	struct out_ctx *ctx = arg;

	for (;;) {
		AlResponse *resp;

		al_response_free(ctx->cur);
		ctx->cur = NULL;
		if (ctx->done)
			return 0;
		if ((resp = al_conn_recv(ctx->conn, err)) == NULL)
			return -1;
		ctx->cur = resp;
		if (resp->body_case == AGENTLANE__V1__RESPONSE__BODY_COPY_OUT_DONE) {
			ctx->done = true;
			return 0;
		}
		if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_DATA) {
			al_error_from_response(err, resp);
			return -1;
		}
		if (resp->data->data.len == 0)
			continue;
		ctx->bytes += resp->data->data.len;
		if (ctx->max_bytes > 0 && ctx->bytes > ctx->max_bytes) {
			al_set_error(err, AL_TOO_LARGE, "guest data exceeds the "
			    "bound of %llu bytes",
			    (unsigned long long)ctx->max_bytes);
			return -1;
		}
		if (ctx->progress != NULL)
			ctx->progress(ctx->bytes, ctx->arg);
		*buf = resp->data->data.data;
		return (ssize_t)resp->data->data.len;
	}
}

/*
 * Temporary names are ".BASE.agent-lane-PID-XXXXXX": the creator's pid lets
 * a later copy to the same destination tell a file a SIGKILLed copy left
 * from one that a running copy is still writing.
 */
#define TEMP_TAG ".agent-lane-"
/* A dead creator's leftover is swept once it has been idle this long: a
 * pid from another pid namespace sharing the directory looks dead to us. */
#define TEMP_STALE_DEAD_S 60
/* Whoever created it, a temporary idle this long is abandoned. */
#define TEMP_STALE_ANY_S (24 * 60 * 60)

static void
temp_template(char *buf, size_t len, const char *parent, const char *base)
{
	snprintf(buf, len, "%s/.%s" TEMP_TAG "%ld-XXXXXX", parent, base,
	    (long)getpid());
}

/* The creator's pid when name is one of ours for base, else 0. */
static long
temp_owner(const char *name, const char *base)
{
	size_t blen = strlen(base), tlen = strlen(TEMP_TAG);
	const char *p;
	char *end;
	long pid;

	if (name[0] != '.' || strncmp(name + 1, base, blen) != 0 ||
	    strncmp(name + 1 + blen, TEMP_TAG, tlen) != 0)
		return 0;
	p = name + 1 + blen + tlen;
	if (*p < '1' || *p > '9')
		return 0;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno != 0 || pid <= 0 || *end != '-' || strlen(end + 1) != 6)
		return 0;
	for (p = end + 1; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9')))
			return 0;
	return pid;
}

/*
 * Removes what killed copies to the same destination left behind. Only our
 * own names for this destination, only plain files and directories owned
 * by us (never a symbolic link), and only stale ones: the creator is gone
 * and the file has been idle for a minute, or it has been idle for a day.
 * Best effort: a failure here never fails the copy.
 */
static void
sweep_stale(const char *parent, const char *base)
{
	time_t now = time(NULL);
	struct dirent *de;
	struct stat sb;
	DIR *d;
	int dfd;

	if ((dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		long pid = temp_owner(de->d_name, base);
		time_t idle;
		bool dead;

		if (pid == 0 || fstatat(dirfd(d), de->d_name, &sb,
		    AT_SYMLINK_NOFOLLOW) == -1 || sb.st_uid != geteuid() ||
		    !(S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)))
			continue;
		idle = now - sb.st_mtime;
		dead = pid != (long)getpid() && kill((pid_t)pid, 0) == -1 &&
		    errno == ESRCH;
		if (!((dead && idle >= TEMP_STALE_DEAD_S) ||
		    idle >= TEMP_STALE_ANY_S))
			continue;
		if (S_ISDIR(sb.st_mode)) {
			char path[PATH_MAX];

			snprintf(path, sizeof path, "%s/%s", parent, de->d_name);
			al_remove_tree(path);
		} else
			(void)unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

static void
fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd != -1) {
		(void)fsync(fd);
		close(fd);
	}
}

static int
out_file(struct out_ctx *ctx, const char *dest, const char *parent,
    const char *base, struct al_error *err)
{
	char tmp[PATH_MAX];
	const void *buf;
	ssize_t n;
	mode_t mask;
	int fd;

	/* O_CREAT|O_EXCL, in the destination's directory so rename is atomic. */
	temp_template(tmp, sizeof tmp, parent, base);
	if ((fd = mkstemp(tmp)) == -1) {
		al_set_errno(err, AL_IO, parent);
		return -1;
	}
	if ((fd = al_fd_above_stdio(fd)) == -1) {
		al_set_errno(err, AL_IO, tmp);
		(void)unlink(tmp);
		return -1;
	}
	while ((n = out_read(ctx, &buf, err)) > 0)
		if (al_write_all(fd, buf, (size_t)n) == -1) {
			al_set_errno(err, AL_IO, tmp);
			n = -1;
			break;
		}
	mask = umask(0);
	umask(mask);
	/* The guest file's permissions, as a tar would extract them. */
	if (n == 0 && (fchmod(fd, (ctx->mode != 0 ? ctx->mode & 0777 : 0666) &
	    ~mask) == -1 || fsync(fd) == -1)) {
		al_set_errno(err, AL_IO, tmp);
		n = -1;
	}
	if (close(fd) == -1 && n == 0) {
		al_set_errno(err, AL_IO, tmp);
		n = -1;
	}
	if (n == 0 && rename(tmp, dest) == -1) {
		al_set_errno(err, AL_IO, dest);
		n = -1;
	}
	if (n != 0) {
		(void)unlink(tmp);
		return -1;
	}
	fsync_dir(parent);
	return 0;
}

static int
out_directory(struct out_ctx *ctx, const struct al_copy_out_opts *o,
    const struct al_place *pl, struct al_error *err)
{
	struct al_tar_limits lim;
	char tmp[PATH_MAX], real[PATH_MAX];
	const char *dest = pl->dest, *parent = pl->parent;
	mode_t mask;

	temp_template(tmp, sizeof tmp, parent, pl->base);
	if (mkdtemp(tmp) == NULL) {
		al_set_errno(err, AL_IO, parent);
		return -1;
	}
	/* libarchive refuses to write through symlinks; there must be none
	 * in the path it is given, so resolve the fresh directory first. */
	if (realpath(tmp, real) == NULL) {
		al_set_errno(err, AL_IO, tmp);
		al_remove_tree(tmp);
		return -1;
	}
	lim.max_bytes = ctx->max_bytes > 0 ? ctx->max_bytes : UINT64_MAX;
	lim.max_entries = o != NULL && o->max_entries > 0 ? o->max_entries :
	    COPY_DEFAULT_MAX_ENTRIES;
	if (al_tar_extract(out_read, ctx, real, &lim, NULL, err) == -1) {
		al_remove_tree(tmp);
		return -1;
	}
	/* The stream ended; make sure the daemon agreed it was complete. */
	if (!ctx->done) {
		const void *buf;
		ssize_t n;

		while ((n = out_read(ctx, &buf, err)) > 0)
			;
		if (n < 0 || !ctx->done) {
			if (n == 0)
				al_set_error(err, AL_PROTOCOL, "data after the end "
				    "of the archive");
			al_remove_tree(tmp);
			return -1;
		}
	}
	/* Into a directory that is there: every entry checked, then moved. */
	if (pl->merge) {
		int rc = al_merge_tree(real, dest, lim.max_entries, err);

		al_remove_tree(tmp);
		if (rc == 0)
			fsync_dir(dest);
		return rc;
	}
	mask = umask(0);
	umask(mask);
	if (chmod(tmp, 0777 & ~mask) == -1 || rename(tmp, dest) == -1) {
		al_set_errno(err, AL_IO, dest);
		al_remove_tree(tmp);
		return -1;
	}
	fsync_dir(parent);
	return 0;
}

static int
do_copy_out(struct al_client *c, const char *lane, const char *guest_path,
    const char *host_path, const struct al_copy_out_opts *o, uint64_t *bytes,
    int *kind, struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__CopyOut co = AGENTLANE__V1__COPY_OUT__INIT;
	struct out_ctx ctx;
	struct al_conn conn;
	struct al_place pl;
	AlResponse *resp;
	int rc = -1, k;

	if (guest_path == NULL || guest_path[0] == '\0') {
		al_set_error(err, AL_INVALID_ARGUMENT, "a guest path is needed");
		return -1;
	}
	if (al_place_check(host_path, err) == -1)
		return -1;
	memset(&ctx, 0, sizeof ctx);
	co.lane = (char *)lane;
	co.path = (char *)guest_path;
	co.max_bytes = o != NULL ? o->max_bytes : 0;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_COPY_OUT;
	req.copy_out = &co;
	if (al_conn_open(c, &conn, &req, err) == -1)
		return -1;
	if ((resp = al_conn_recv(&conn, err)) == NULL)
		goto out;
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_COPY_OUT_BEGIN) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		goto out;
	}
	k = (int)resp->copy_out_begin->kind;
	ctx.max_bytes = resp->copy_out_begin->max_bytes;
	ctx.mode = resp->copy_out_begin->mode;
	if (o != NULL && o->begin != NULL)
		o->begin(k, resp->copy_out_begin->size, o->arg);
	al_response_free(resp);
	/* Where it lands depends on what it is (docker cp's rules). */
	if ((k == AL_COPY_FILE || k == AL_COPY_DIRECTORY) &&
	    al_place_out(guest_path, host_path, k, &pl, err) == -1)
		goto out;
	if (k == AL_COPY_FILE || k == AL_COPY_DIRECTORY)
		sweep_stale(pl.parent, pl.base);
	if (o != NULL && o->max_bytes > 0 &&
	    (ctx.max_bytes == 0 || o->max_bytes < ctx.max_bytes))
		ctx.max_bytes = o->max_bytes;
	ctx.conn = &conn;
	if (o != NULL) {
		ctx.progress = o->progress;
		ctx.arg = o->arg;
	}
	if (k == AL_COPY_FILE)
		rc = out_file(&ctx, pl.dest, pl.parent, pl.base, err);
	else if (k == AL_COPY_DIRECTORY)
		rc = out_directory(&ctx, o, &pl, err);
	else
		al_set_error(err, AL_PROTOCOL, "unknown copy kind %d", k);
	al_response_free(ctx.cur);
	if (rc == 0) {
		if (bytes != NULL)
			*bytes = ctx.bytes;
		if (kind != NULL)
			*kind = k;
	}
out:
	al_conn_close(&conn);
	return rc;
}

AL_API enum al_code
al_copy_out(struct al_client *c, const char *lane, const char *guest_path,
    const char *host_path, const struct al_copy_out_opts *o, uint64_t *bytes,
    int *kind, struct al_error *err)
{
	struct al_copy_out_opts opts;
	struct al_error local;

	err = al_error_begin(err, &local);
	if (o != NULL) {
		if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
			return al_result(-1, err);
		o = &opts;
	}
	return al_result(do_copy_out(c, lane, guest_path, host_path, o, bytes,
	    kind, err), err);
}
