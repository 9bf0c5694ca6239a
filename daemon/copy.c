#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "copy.h"
#include "laned.h"
#include "log.h"
#include "session.h"
#include "units.h"
#include "util.h"

/* Exit statuses of the copy-out script below. */
#define COPY_NOT_REGULAR 65
#define COPY_NOT_FOUND 66
#define COPY_DENIED 67
#define COPY_UNREADABLE 68
/* And of the copy-in script: docker cp's refusals. */
#define COPY_NO_DIR 70		/* DEST/ is not a directory */
#define COPY_DIR_ON_FILE 71	/* a directory onto a non-directory */
#define COPY_FILE_ON_DIR 72	/* a file onto a directory */

/*
 * Run in the guest with the path as $1 (never spliced into the script).
 * The first byte of output says what follows. The guest may lie about it or
 * replace tar: the client treats what comes back as hostile either way.
 */
/*
 * Copy-in: $1 the destination, $2 what the stream holds ("f" the file $3,
 * "d" the contents of a directory named $3, "c" contents to put in $1
 * itself), placed by docker cp's rules: into $1 when it is a directory
 * (under $3), else at $1, whose trailing "/" says it must be a directory;
 * a directory never replaces a non-directory nor the other way round.
 * Missing parents are made. It extracts into a temporary directory beside
 * what it will replace, then renames each file into place (merging into
 * directories that exist): an interrupted copy never leaves a partial file
 * where the copy was going. A killed copy (its client went away: the whole
 * process group is killed) cannot remove the directory itself, so a watcher
 * in a session of its own does once the script is gone. The watcher starts
 * before the directory is made, so that no kill can fall between the two;
 * the directory is named for the script's pid, which no live copy shares
 * (one of that name is a dead copy's, removed first). mv -T and setsid:
 * the guest has GNU coreutils and util-linux.
 */
static const char copy_in_script[] =
    "m() (for e in \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*; do "
    "[ -e \"$e\" ] || [ -L \"$e\" ] || continue; b=${e##*/}; "
    "if [ -d \"$e\" ] && [ ! -L \"$e\" ] && [ -d \"$2/$b\" ] && "
    "[ ! -L \"$2/$b\" ]; then m \"$e\" \"$2/$b\" || exit 1; "
    "else mv -fT -- \"$e\" \"$2/$b\" || exit 1; fi; done); "
    "x=$1; case $2 in "
    "f) if [ -d \"$1\" ]; then x=${1%/}/$3; "
    "elif [ \"${1%/}\" != \"$1\" ]; then echo \"$1\" >&2; exit 70; fi; "
    "if [ -d \"$x\" ] && [ ! -L \"$x\" ]; then echo \"$x\" >&2; exit 72; fi; "
    "p=$(dirname -- \"$x\") || exit 1;; "
    "d) [ -d \"$1\" ] && x=${1%/}/$3;; esac; "
    "if [ \"$2\" != f ]; then "
    "if { [ -e \"$x\" ] || [ -L \"$x\" ]; } && [ ! -d \"$x\" ]; then "
    "echo \"$x\" >&2; exit 71; fi; p=$x; fi; "
    "mkdir -p -- \"$p\" || exit 1; t=$p/.agent-lane-in.$$; "
    "setsid sh -c 'while kill -0 \"$1\"; do sleep 1; done; rm -rf -- \"$2\"' "
    "w $$ \"$t\" </dev/null >/dev/null 2>&1 & "
    "rm -rf -- \"$t\" && mkdir -m 700 -- \"$t\" || exit 1; "
    "if [ \"$2\" = f ]; then tar -x -p -f - -C \"$t\" && "
    "mv -fT -- \"$t/$3\" \"$x\"; "
    "else tar -x -p -f - -C \"$t\" && m \"$t\" \"$x\"; fi; r=$?; "
    "rm -rf -- \"$t\"; exit $r";
/*
 * The first line says what follows, with what a bound can be checked
 * against before anything is sent: "D<bytes>" (what the directory's
 * regular files add up to, less than its tar stream) or "F<size> <mode>".
 * When the path cannot be read, perl (the guest helper's interpreter, so
 * always there) finds out why from the failing call's errno: ENOENT and
 * ENOTDIR are "not found", EACCES and EPERM "denied" (Linux numbers), and
 * the guest's own words go to stderr with the path.
 */
static const char copy_out_script[] =
    "if [ -d \"$1\" ] && [ -r \"$1\" ] && [ -x \"$1\" ]; then "
    "printf 'D%s\\n' \"$(find \"$1/\" -type f -printf '%s\\n' 2>/dev/null | "
    "awk '{ s += $1 } END { printf \"%.0f\", s }')\" && "
    "exec tar -c -f - -C \"$1\" .; fi; "
    "if [ -f \"$1\" ] && [ -r \"$1\" ]; then "
    "printf 'F%s\\n' \"$(stat -L -c '%s %a' -- \"$1\" 2>/dev/null)\" && "
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
	/* Refused before tar began: whatever the client was still sending. */
	if (r->end == GEXEC_EXITED && r->code == COPY_NO_DIR) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__NOT_FOUND,
		    "%s: no such directory in the guest (a trailing / says "
		    "the destination is one)", copy_guest_message(s));
		return;
	}
	if (r->end == GEXEC_EXITED && (r->code == COPY_DIR_ON_FILE ||
	    r->code == COPY_FILE_ON_DIR)) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
		    r->code == COPY_DIR_ON_FILE ? "cannot copy a directory "
		    "onto %s, which is not a directory in the guest" :
		    "cannot copy a file onto %s, a directory in the guest",
		    copy_guest_message(s));
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

/* A source's name in the guest: one path component, or "" where allowed. */
static bool
copy_name_ok(const char *n, bool empty_ok)
{
	size_t len = n != NULL ? strlen(n) : 0;

	if (len == 0)
		return empty_ok;
	return len <= 255 && strchr(n, '/') == NULL && strcmp(n, ".") != 0 &&
	    strcmp(n, "..") != 0;
}

/*
 * What the copy-in script is told ($1-$3): dest_path with the source's
 * kind and name (docker cp's rules), or dest_dir alone (its contents go
 * into that directory, the older form). NULL with c answered.
 */
static const char *
copy_in_args(struct conn *c, const Agentlane__V1__CopyIn *req,
    const char **how, const char **member)
{
	bool by_path = req->dest_path != NULL && req->dest_path[0] != '\0';
	const char *dest = by_path ? req->dest_path : req->dest_dir;
	bool file = req->source_kind == AGENTLANE__V1__COPY_KIND__FILE;

	*member = req->source_name != NULL ? req->source_name : "";
	if (by_path && req->dest_dir != NULL && req->dest_dir[0] != '\0') {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "a copy-in has dest_path or dest_dir, not both");
		return NULL;
	}
	if (!copy_guest_path_ok(dest)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "the destination needs a guest path");
		return NULL;
	}
	if (!by_path) {
		*how = "c";
		*member = "";
		return dest;
	}
	if ((!file && req->source_kind !=
	    AGENTLANE__V1__COPY_KIND__DIRECTORY) ||
	    !copy_name_ok(*member, !file)) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "a copy-in by dest_path needs source_kind FILE with its "
		    "name, or DIRECTORY with its name or \"\" (one path "
		    "component, not . or ..)");
		return NULL;
	}
	*how = file ? "f" : (*member)[0] != '\0' ? "d" : "c";
	return dest;
}

void
copy_handle_in(struct laned *d, struct conn *c, const Agentlane__V1__CopyIn *req)
{
	struct gexec_bytes argv[] = {
		{ (const uint8_t *)"/bin/sh", 7 },
		{ (const uint8_t *)"-c", 2 },
		{ (const uint8_t *)copy_in_script, sizeof copy_in_script - 1 },
		{ (const uint8_t *)"agent-lane-copy-in", 18 },
		{ NULL, 0 }, { NULL, 0 }, { NULL, 0 },
	};
	struct gexec_spec spec;
	const char *dest, *how, *member;
	char name[LANE_NAME_SIZE];

	if (!lane_resolve(d, c, req->lane, name))
		return;
	if ((dest = copy_in_args(c, req, &how, &member)) == NULL)
		return;
	argv[4].data = (const uint8_t *)dest;
	argv[4].len = strlen(dest);
	argv[5].data = (const uint8_t *)how;
	argv[5].len = 1;
	argv[6].data = (const uint8_t *)member;
	argv[6].len = strlen(member);
	memset(&spec, 0, sizeof spec);
	spec.lane = name;
	spec.argv = argv;
	spec.argc = 7;
	spec.cwd = copy_cwd(dest);
	spec.stdin = true;
	/*
	 * On the lane's exec channel, its archive relayed as an exec's stdin
	 * (acknowledged in windows, so a guest that stops reading stalls only
	 * this copy): a copy-in pays no limactl shell, ssh session, login
	 * shell or helper compile of its own, which under emulation was most
	 * of a small copy's time (docs/performance.md, "Sandcastle").
	 */
	spec.channel = true;
	spec.what = "copy-in";
	(void)session_start(d, c, &spec, &copy_in_hooks, 0, true,
	    &(struct session_record){ "copy-in", dest, strlen(dest) });
}

/* ---- Copy out ---- */

bool
copy_head_parse(const char *h, struct copy_head *out)
{
	size_t n, m;

	memset(out, 0, sizeof *out);
	if (h[0] != 'D' && h[0] != 'F')
		return false;
	out->kind = h[0] == 'D' ? AGENTLANE__V1__COPY_KIND__DIRECTORY :
	    AGENTLANE__V1__COPY_KIND__FILE;
	n = strspn(h + 1, "0123456789");
	/* Saturating: a size past 2^64 is past any bound. */
	if (n > 0 && n <= 20)
		out->size = strtoull(h + 1, NULL, 10);
	else if (n > 20)
		out->size = UINT64_MAX;
	h += 1 + n;
	m = h[0] == ' ' ? strspn(h + 1, "01234567") : 0;
	if (out->kind == AGENTLANE__V1__COPY_KIND__FILE && m >= 1 && m <= 4 &&
	    h[1 + m] == '\0')
		out->mode = (uint32_t)strtoul(h + 1, NULL, 8) & 0777;
	return true;
}

/*
 * The bound, checked against the guest's stat before any byte is sent: a
 * copy that cannot fit is refused whole, not cut off in the middle.
 */
static bool
copy_out_fits(struct session *s, int kind, uint64_t size)
{
	char have[32], max[32];

	if (size <= s->max_bytes)
		return true;
	units_format_bytes(size, have, sizeof have);
	units_format_bytes(s->max_bytes, max, sizeof max);
	session_fail(s, AGENTLANE__V1__ERROR_CODE__TOO_LARGE,
	    "the guest %s %s (%llu bytes), above the copy-out bound of %s "
	    "(%s); nothing was copied", kind ==
	    AGENTLANE__V1__COPY_KIND__FILE ? "file is" :
	    "directory's files add up to", have, (unsigned long long)size, max,
	    s->max_bytes == s->d->cfg.max_copy_out_bytes ?
	    "max_copy_out_bytes" : "the bound the client asked for");
	return false;
}

/* Reads the first line; true once CopyOutBegin went out, with the rest. */
static bool
copy_out_begin(struct session *s, const uint8_t **data, size_t *len)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__CopyOutBegin begin = AGENTLANE__V1__COPY_OUT_BEGIN__INIT;
	const uint8_t *nl = memchr(*data, '\n', *len);
	size_t take = nl != NULL ? (size_t)(nl - *data) + 1 : *len;
	struct copy_head h;

	if (s->head_len + take > sizeof s->head - 1) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "unexpected output from the guest copy command");
		return false;
	}
	memcpy(s->head + s->head_len, *data, take);
	s->head_len += take;
	s->head[s->head_len] = '\0';
	*data += take;
	*len -= take;
	if (nl == NULL)
		return false;		/* the rest of the line comes */
	s->head[s->head_len - 1] = '\0';
	if (memchr(s->head, '\0', s->head_len - 1) != NULL ||
	    !copy_head_parse(s->head, &h)) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "unexpected output from the guest copy command");
		return false;
	}
	if (!copy_out_fits(s, h.kind, h.size))
		return false;
	begin.kind = h.kind;
	/* For progress and the file's mode alone: the bound holds anyway. */
	if (h.kind == AGENTLANE__V1__COPY_KIND__FILE) {
		begin.size = h.size;
		begin.mode = h.mode;
	}
	s->kind = begin.kind;
	begin.max_bytes = s->max_bytes;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_COPY_OUT_BEGIN;
	resp.copy_out_begin = &begin;
	session_send(s, &resp);
	return true;
}

static void
copy_out_output(struct session *s, int stream, const uint8_t *data, size_t len)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__DataChunk ch = AGENTLANE__V1__DATA_CHUNK__INIT;

	if (stream == 2) {
		session_stderr_keep(s, data, len);
		return;
	}
	if (s->kind == 0 && (!copy_out_begin(s, &data, &len) || len == 0))
		return;
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
	if (req->max_bytes > max) {
		char want[32], cap[32];

		units_format_bytes(req->max_bytes, want, sizeof want);
		units_format_bytes(max, cap, sizeof cap);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "a copy-out bound of %s is above the daemon's cap of %s "
		    "(max_copy_out_bytes)", want, cap);
		return;
	}
	if (req->max_bytes > 0)
		max = req->max_bytes;
	argv[4].data = (const uint8_t *)req->path;
	argv[4].len = strlen(req->path);
	memset(&spec, 0, sizeof spec);
	spec.lane = name;
	spec.argv = argv;
	spec.argc = 5;
	spec.cwd = copy_cwd(req->path);
	spec.stdin = false;
	/*
	 * On the lane's exec channel, as an exec: a copy-out pays no limactl
	 * shell, ssh session, login shell or helper compile of its own (under
	 * emulation most of its time for a small file; docs/performance.md).
	 * Its output is windowed as an exec's, so a slow client still stalls
	 * only this copy, and a refused one is killed by its helper.
	 */
	spec.channel = true;
	spec.what = "copy-out";
	if ((s = session_start(d, c, &spec, &copy_out_hooks, 0, false,
	    &(struct session_record){ "copy-out", req->path,
	    strlen(req->path) })) != NULL)
		s->max_bytes = max;
}
