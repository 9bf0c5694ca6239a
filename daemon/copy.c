#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "copy.h"
#include "laned.h"
#include "log.h"
#include "session.h"
#include "util.h"

/* Exit statuses of the copy-out script below. */
#define COPY_NOT_REGULAR 65
#define COPY_NOT_FOUND 66
#define COPY_DENIED 67
#define COPY_UNREADABLE 68

/*
 * Run in the guest with the path as $1 (never spliced into the script).
 * The first byte of output says what follows. The guest may lie about it or
 * replace tar: the client treats what comes back as hostile either way.
 */
/*
 * Copy-in extracts into a temporary directory beside the files it will
 * replace, then renames each file into place (merging into directories
 * that exist): an interrupted copy never leaves a partial file where the
 * copy was going. A killed copy (its client went away: the whole process
 * group is killed) cannot remove the directory itself, so a watcher in a
 * session of its own does once the script is gone. mv -T and setsid: the
 * guest has GNU coreutils and util-linux.
 */
static const char copy_in_script[] =
    "m() (for e in \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*; do "
    "[ -e \"$e\" ] || [ -L \"$e\" ] || continue; b=${e##*/}; "
    "if [ -d \"$e\" ] && [ ! -L \"$e\" ] && [ -d \"$2/$b\" ] && "
    "[ ! -L \"$2/$b\" ]; then m \"$e\" \"$2/$b\" || exit 1; "
    "else mv -fT -- \"$e\" \"$2/$b\" || exit 1; fi; done); "
    "mkdir -p -- \"$1\" && t=$(mktemp -d -- \"$1/.agent-lane-in.XXXXXX\") "
    "|| exit 1; "
    "setsid sh -c 'while kill -0 \"$1\"; do sleep 1; done; rm -rf -- \"$2\"' "
    "w $$ \"$t\" </dev/null >/dev/null 2>&1 & "
    "tar -x -p -f - -C \"$t\" && m \"$t\" \"$1\"; r=$?; "
    "rm -rf -- \"$t\"; exit $r";
/*
 * When the path cannot be read, perl (the guest helper's interpreter, so
 * always there) finds out why from the failing call's errno: ENOENT and
 * ENOTDIR are "not found", EACCES and EPERM "denied" (Linux numbers), and
 * the guest's own words go to stderr with the path.
 */
static const char copy_out_script[] =
    "if [ -d \"$1\" ] && [ -r \"$1\" ] && [ -x \"$1\" ]; then "
    "printf D && exec tar -c -f - -C \"$1\" .; fi; "
    "if [ -f \"$1\" ] && [ -r \"$1\" ]; then "
    "printf 'F%s\\n' \"$(stat -L -c %s -- \"$1\" 2>/dev/null)\" && "
    "exec cat -- \"$1\"; fi; "
    "if [ -e \"$1\" ] && [ ! -d \"$1\" ] && [ ! -f \"$1\" ]; then "
    "echo \"not a regular file or directory\" >&2; exit 65; fi; "
    "exec perl -e '"
    "my $p = shift; "
    "my $ok = -d $p ? opendir(my $d, $p) && chdir($p) : open(my $f, \"<\", $p); "
    "my $n = $! + 0; "
    "if ($ok) { print STDERR \"$p: changed while being read\\n\"; exit(68); } "
    "print STDERR \"$p: $!\\n\"; "
    "exit($n == 2 || $n == 20 ? 66 : $n == 13 || $n == 1 ? 67 : 68);"
    "' -- \"$1\"";

bool
copy_guest_path_ok(const char *path)
{
	return path != NULL && path[0] != '\0' && strlen(path) <= 4096;
}

/* Relative guest paths are relative to the lane's workspace. */
static const char *
copy_cwd(const char *path)
{
	return path[0] == '/' ? "/" : NULL;
}

static void
copy_stderr(struct session *s, int stream, const uint8_t *data, size_t len)
{
	if (stream == 2)
		session_stderr_keep(s, data, len);
}

/*
 * tar's closing lines say only that it failed; the cause is on the line
 * before them.
 */
static bool
copy_tar_trailer(const char *line)
{
	return strcmp(line, "tar: Exiting with failure status due to previous "
	    "errors") == 0 ||
	    strcmp(line, "tar: Error is not recoverable: exiting now") == 0;
}

/* The guest's last meaningful stderr line, for error messages. */
static const char *
copy_guest_message(struct session *s)
{
	char *p = s->stderr_tail;
	size_t n = s->stderr_len;
	const char *line;

	for (;;) {
		while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == '\r'))
			p[--n] = '\0';
		line = p;
		for (size_t i = n; i > 0; i--)
			if (p[i - 1] == '\n') {
				line = p + i;
				break;
			}
		if (line == p || !copy_tar_trailer(line))
			return line;
		n = (size_t)(line - p);
	}
}

/* ---- Copy in ---- */

static void
copy_in_input(struct session *s, const AlRequest *req)
{
	const Agentlane__V1__DataChunk *ch;

	if (req->body_case != AGENTLANE__V1__REQUEST__BODY_DATA) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "only DataChunk frames may follow a CopyIn");
		return;
	}
	ch = req->data;
	if (ch->data.len > 0) {
		s->bytes += ch->data.len;
		session_stdin(s, ch->data.data, ch->data.len);
	}
	if (ch->eof)
		session_stdin_close(s);
}

static void
copy_in_done(struct session *s, const struct gexec_result *r)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__CopyInDone done = AGENTLANE__V1__COPY_IN_DONE__INIT;
	char st[32];

	if (r->end == GEXEC_FAILED) {
		session_fail(s, r->error, "%s", r->message);
		return;
	}
	if (s->input_open) {
		/* tar ended before the client finished: it did not take it all. */
		session_fail(s, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "guest tar ended before the end of the stream (%s): %s",
		    gexec_status(r, st, sizeof st),
		    copy_guest_message(s));
		return;
	}
	if (r->end != GEXEC_EXITED || r->code != 0) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "guest tar -x failed (%s): %s",
		    gexec_status(r, st, sizeof st),
		    copy_guest_message(s));
		return;
	}
	done.bytes = s->bytes;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_COPY_IN_DONE;
	resp.copy_in_done = &done;
	session_audit(s, NULL, NULL);
	session_finish(s, &resp);
}

static const struct session_hooks copy_in_hooks = {
	.input = copy_in_input,
	.output = copy_stderr,
	.done = copy_in_done,
};

void
copy_handle_in(struct laned *d, struct conn *c, const Agentlane__V1__CopyIn *req)
{
	struct gexec_bytes argv[] = {
		{ (const uint8_t *)"/bin/sh", 7 },
		{ (const uint8_t *)"-c", 2 },
		{ (const uint8_t *)copy_in_script, sizeof copy_in_script - 1 },
		{ (const uint8_t *)"agent-lane-copy-in", 18 },
		{ NULL, 0 },
	};
	struct gexec_spec spec;
	struct session *s;
	char name[LANE_NAME_SIZE];

	if (!lane_resolve(d, c, req->lane, name))
		return;
	if (!copy_guest_path_ok(req->dest_dir)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "the destination needs a guest path");
		return;
	}
	argv[4].data = (const uint8_t *)req->dest_dir;
	argv[4].len = strlen(req->dest_dir);
	memset(&spec, 0, sizeof spec);
	spec.lane = name;
	spec.argv = argv;
	spec.argc = 5;
	spec.cwd = copy_cwd(req->dest_dir);
	spec.stdin = true;
	spec.stdin_direct = true;	/* the archive goes straight to tar */
	spec.what = "copy-in";
	if ((s = session_start(d, c, &spec, &copy_in_hooks, 0, true)) != NULL)
		session_audit_begin(s, "copy-in", req->dest_dir,
		    strlen(req->dest_dir));
}

/* ---- Copy out ---- */

static void
copy_out_output(struct session *s, int stream, const uint8_t *data, size_t len)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__CopyOutBegin begin = AGENTLANE__V1__COPY_OUT_BEGIN__INIT;
	Agentlane__V1__DataChunk ch = AGENTLANE__V1__DATA_CHUNK__INIT;

	if (stream == 2) {
		session_stderr_keep(s, data, len);
		return;
	}
	if (s->kind == 0) {
		/*
		 * "D" then the tar stream, or "F<size>\n" then the file. The
		 * size is the guest's word, for progress alone: digits or 0.
		 */
		if (s->head_len == 0 && data[0] == 'D') {
			begin.kind = AGENTLANE__V1__COPY_KIND__DIRECTORY;
			data++;
			len--;
		} else if (s->head_len > 0 || data[0] == 'F') {
			const uint8_t *nl = memchr(data, '\n', len);
			size_t take = nl != NULL ? (size_t)(nl - data) + 1 : len;

			if (s->head_len + take > sizeof s->head - 1) {
				session_fail(s,
				    AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
				    "unexpected output from the guest copy "
				    "command");
				return;
			}
			memcpy(s->head + s->head_len, data, take);
			s->head_len += take;
			s->head[s->head_len] = '\0';
			data += take;
			len -= take;
			if (nl == NULL)
				return;		/* the rest of the line comes */
			begin.kind = AGENTLANE__V1__COPY_KIND__FILE;
			if (s->head_len > 2 && s->head_len <= 22 &&
			    strspn(s->head + 1, "0123456789") == s->head_len - 2)
				begin.size = strtoull(s->head + 1, NULL, 10);
		} else {
			session_fail(s, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "unexpected output from the guest copy command");
			return;
		}
		s->kind = begin.kind;
		begin.max_bytes = s->max_bytes;
		resp.body_case = AGENTLANE__V1__RESPONSE__BODY_COPY_OUT_BEGIN;
		resp.copy_out_begin = &begin;
		session_send(s, &resp);
		if (len == 0)
			return;
	}
	/* The bound is checked before the bytes leave the daemon. */
	if (s->bytes + len > s->max_bytes) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__TOO_LARGE,
		    "guest data exceeds the bound of %llu bytes; copy stopped",
		    (unsigned long long)s->max_bytes);
		return;
	}
	s->bytes += len;
	ch.data.data = (uint8_t *)data;
	ch.data.len = len;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_DATA;
	resp.data = &ch;
	session_send(s, &resp);
}

static void
copy_out_done(struct session *s, const struct gexec_result *r)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__CopyOutDone done = AGENTLANE__V1__COPY_OUT_DONE__INIT;
	char st[32];

	if (r->end == GEXEC_FAILED) {
		session_fail(s, r->error, "%s", r->message);
		return;
	}
	if (r->end == GEXEC_EXITED && r->code == COPY_NOT_FOUND && s->kind == 0) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "not found in the guest: %s", copy_guest_message(s));
		return;
	}
	if (r->end == GEXEC_EXITED && r->code == COPY_DENIED && s->kind == 0) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__PERMISSION_DENIED,
		    "the guest user may not read it: %s",
		    copy_guest_message(s));
		return;
	}
	if (r->end == GEXEC_EXITED && r->code == COPY_NOT_REGULAR &&
	    s->kind == 0) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "the guest path is not a regular file or directory");
		return;
	}
	if (r->end != GEXEC_EXITED || r->code != 0 || s->kind == 0) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    "reading the guest path failed (%s): %s",
		    gexec_status(r, st, sizeof st),
		    copy_guest_message(s));
		return;
	}
	done.bytes = s->bytes;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_COPY_OUT_DONE;
	resp.copy_out_done = &done;
	session_audit(s, NULL, NULL);
	session_finish(s, &resp);
}

static const struct session_hooks copy_out_hooks = {
	.output = copy_out_output,
	.done = copy_out_done,
};

void
copy_handle_out(struct laned *d, struct conn *c,
    const Agentlane__V1__CopyOut *req)
{
	struct gexec_bytes argv[] = {
		{ (const uint8_t *)"/bin/sh", 7 },
		{ (const uint8_t *)"-c", 2 },
		{ (const uint8_t *)copy_out_script, sizeof copy_out_script - 1 },
		{ (const uint8_t *)"agent-lane-copy-out", 19 },
		{ NULL, 0 },
	};
	struct gexec_spec spec;
	struct session *s;
	uint64_t max = d->cfg.max_copy_out_bytes;
	char name[LANE_NAME_SIZE];

	if (!lane_resolve(d, c, req->lane, name))
		return;
	if (!copy_guest_path_ok(req->path)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "the source needs a guest path");
		return;
	}
	/* A client may ask for less than the daemon's bound, never more. */
	if (req->max_bytes > 0 && req->max_bytes < max)
		max = req->max_bytes;
	argv[4].data = (const uint8_t *)req->path;
	argv[4].len = strlen(req->path);
	memset(&spec, 0, sizeof spec);
	spec.lane = name;
	spec.argv = argv;
	spec.argc = 5;
	spec.cwd = copy_cwd(req->path);
	spec.stdin = false;
	spec.what = "copy-out";
	if ((s = session_start(d, c, &spec, &copy_out_hooks, 0, false)) !=
	    NULL) {
		s->max_bytes = max;
		session_audit_begin(s, "copy-out", req->path,
		    strlen(req->path));
	}
}
