#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "audit.h"
#include "conn.h"
#include "gchan.h"
#include "laned.h"
#include "log.h"
#include "session.h"
#include "units.h"
#include "util.h"

#define CONTAINER(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/*
 * Before the command runs: an exec is in the registry first, so that a
 * daemon that dies under it leaves a record the next start finds.
 */
static int
session_audit_begin(struct session *s, const struct session_record *rec)
{
	size_t len = rec->len;

	s->audit_len = len < sizeof s->audit - 1 ? len : sizeof s->audit - 1;
	memcpy(s->audit, rec->data, s->audit_len);
	s->audit[s->audit_len] = '\0';
	if (strcmp(rec->kind, "exec") == 0 && audit_exec_begin(s->d,
	    s->act.lane->name, s->audit, s->audit_len, &s->exec_id) == -1)
		return -1;
	s->audit_kind = rec->kind;
	return 0;
}

void
session_audit(struct session *s, const struct gexec_result *r,
    const char *failure)
{
	if (s->audited || s->audit_kind == NULL || s->act.lane == NULL)
		return;
	s->audited = true;
	if (strcmp(s->audit_kind, "exec") == 0)
		audit_exec(s->d, s->act.lane->name, s->exec_id, s->audit,
		    s->audit_len, r, failure);
	else
		audit_copy(s->d, s->act.lane->name, s->audit_kind,
		    (const char *)s->audit, s->bytes, failure);
}

static void
session_free(struct session *s)
{
	if (s->g != NULL)
		gexec_abort(s->g);
	if (s->timer != NULL)
		event_free(s->timer);
	lane_activity_end(&s->act);
	free(s);
}

void
session_finish(struct session *s, const AlResponse *resp)
{
	if (s->c != NULL) {
		conn_set_handler(s->c, NULL, NULL);
		if (resp != NULL)
			(void)conn_send(s->c, resp);
		conn_finish(s->c);
		s->c = NULL;
	}
	session_free(s);
}

void
session_fail(struct session *s, int code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	str_sanitize(msg);
	session_audit(s, NULL, msg);
	log_info("%s in lane %s: %s: %s", s->what,
	    s->act.lane != NULL ? s->act.lane->name : "?", wire_error_name(code),
	    msg);
	if (s->c != NULL) {
		conn_set_handler(s->c, NULL, NULL);
		conn_send_error(s->c, code, "%s", msg);
		s->c = NULL;
	}
	session_free(s);
}

void
session_send(struct session *s, const AlResponse *resp)
{
	if (s->c == NULL)
		return;
	(void)conn_send(s->c, resp);
	if (!s->out_paused && s->g != NULL &&
	    conn_output_len(s->c) > CONN_OUTPUT_HIGH) {
		s->out_paused = true;
		gexec_pause(s->g, true);
	}
}

void
session_stdin(struct session *s, const void *data, size_t len)
{
	if (s->g == NULL)
		return;
	/* -1: the command closed its stdin; like a pipe, input is dropped. */
	(void)gexec_stdin(s->g, data, len);
	if (!s->in_paused && gexec_stdin_pending(s->g) > GEXEC_STDIN_HIGH) {
		s->in_paused = true;
		conn_pause_input(s->c, true);
	}
}

void
session_stdin_close(struct session *s)
{
	/* A terminal still takes window sizes. */
	s->input_open = s->tty;
	if (s->g != NULL)
		gexec_stdin_close(s->g);
}

void
session_stderr_keep(struct session *s, const uint8_t *data, size_t len)
{
	tail_append(s->stderr_tail, SESSION_STDERR_TAIL, &s->stderr_len, data,
	    len);
}

/* ---- gexec callbacks ---- */

static void
session_g_output(struct gexec *g, int stream, const uint8_t *data, size_t len,
    void *arg)
{
	struct session *s = arg;

	if (s->act.lane != NULL)
		lane_touch(s->act.lane);
	s->hooks->output(s, stream, data, len);
}

static void
session_g_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	struct session *s = arg;

	s->g = NULL;	/* the handle dies when this returns */
	s->hooks->done(s, r);
}

static void
session_g_stdin_drained(struct gexec *g, void *arg)
{
	struct session *s = arg;

	if (s->in_paused && s->c != NULL) {
		s->in_paused = false;
		conn_pause_input(s->c, false);
	}
}

static const struct gexec_ops session_gexec_ops = {
	.output = session_g_output,
	.done = session_g_done,
	.stdin_drained = session_g_stdin_drained,
};

/* ---- connection callbacks ---- */

static void
session_c_input(struct conn *c, const AlRequest *req, void *ctx)
{
	struct session *s = ctx;

	if (!s->input_open || s->hooks->input == NULL) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "unexpected frame: this call takes no more input");
		return;
	}
	s->hooks->input(s, req);
}

static void
session_c_drained(struct conn *c, void *ctx)
{
	struct session *s = ctx;

	if (s->out_paused && s->g != NULL) {
		s->out_paused = false;
		gexec_pause(s->g, false);
	}
}

static void
session_c_closed(struct conn *c, void *ctx)
{
	struct session *s = ctx;

	/* The client is gone: kill the guest command's process group. */
	log_info("%s in lane %s: client disconnected; killing the command",
	    s->what, s->act.lane != NULL ? s->act.lane->name : "?");
	session_audit(s, NULL, "the client disconnected");
	s->c = NULL;
	session_free(s);
}

static const struct conn_handler session_conn_handler = {
	.input = session_c_input,
	.drained = session_c_drained,
	.closed = session_c_closed,
};

/* ---- lane and timer callbacks ---- */

static void
session_cancel(struct lane_activity *a, int code, const char *msg)
{
	struct session *s = CONTAINER(a, struct session, act);

	session_fail(s, code, "%s", msg);
}

static void
session_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	char dur[32];

	units_format_human(s->timeout_ms, dur, sizeof dur);
	session_fail(s, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
	    "%s timed out after %s; its process group was killed", s->what,
	    dur);
}

struct session *
session_start(struct laned *d, struct conn *c, struct gexec_spec *spec,
    const struct session_hooks *hooks, uint64_t timeout_ms, bool input_open,
    const struct session_record *rec)
{
	struct session *s = xcalloc(1, sizeof *s);
	char err[256], cwd[LANE_WORKSPACE_MAX + 4100];

	s->d = d;
	s->c = c;
	s->hooks = hooks;
	s->what = spec->what;
	s->timeout_ms = timeout_ms;
	s->input_open = input_open;
	s->tty = spec->tty;
	s->act.cancel = session_cancel;
	if (lane_activity_begin(d, c, spec->lane, &s->act) == NULL) {
		free(s);
		return NULL;
	}
	/* The lane's own string: spec->lane was the caller's copy. */
	spec->lane = s->act.lane->name;
	/*
	 * Default: the lane's workspace; a relative directory is in it, as a
	 * relative copy path is. Joined here, where the lane is known, so
	 * that clients need no extra call to learn the workspace.
	 */
	if (spec->cwd == NULL)
		spec->cwd = s->act.lane->workspace;
	else if (spec->cwd[0] != '/') {
		if (s->act.lane->workspace[0] != '/') {
			session_fail(s,
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "lane %s has no workspace for the relative "
			    "directory %s", s->act.lane->name, spec->cwd);
			return NULL;
		}
		if ((size_t)snprintf(cwd, sizeof cwd, "%s/%s",
		    s->act.lane->workspace, spec->cwd) >= sizeof cwd) {
			session_fail(s,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "working directory too long");
			return NULL;
		}
		spec->cwd = cwd;
	}
	if (session_audit_begin(s, rec) == -1) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__INTERNAL,
		    "cannot record the %s in the registry", s->what);
		return NULL;
	}
	if (spec->channel)
		s->g = gchan_exec(d->base, &d->procs, d->lima,
		    &s->act.lane->chan, spec, &session_gexec_ops, s, err,
		    sizeof err);
	else
		s->g = gexec_start(d->base, &d->procs, d->lima, spec,
		    &session_gexec_ops, s, err, sizeof err);
	if (s->g == NULL) {
		session_fail(s, AGENTLANE__V1__ERROR_CODE__INTERNAL, "%s", err);
		return NULL;
	}
	if (timeout_ms > 0) {
		struct timeval tv = tv_from_ms(timeout_ms);

		if ((s->timer = evtimer_new(d->base, session_timeout_cb, s)) ==
		    NULL || evtimer_add(s->timer, &tv) != 0)
			fatalx("evtimer_add");
	}
	conn_set_handler(c, &session_conn_handler, s);
	return s;
}
