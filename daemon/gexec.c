#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "agentlane.pb-c.h"
#include "compat.h"
#include "gexec.h"
#include "gexec_int.h"
#include "guestproto.h"
#include "iobuf.h"
#include "lima.h"
#include "log.h"
#include "proc.h"
#include "util.h"
#include "wire.h"

/* Give limactl this long to exit on its own once the helper reported. */
#define GEXEC_LINGER_MS 5000
/* Stop reading the helper once this much is buffered unprocessed. */
#define GEXEC_INBUF_MAX (GUEST_MAX_PAYLOAD + GUEST_HEADER + 64u * 1024u)
static void gexec_out_close(struct gexec *);
static void gexec_read(struct gexec *);
static const struct gexec_transport proc_transport;
static int gexec_put(struct gexec *, char, const void *, size_t);

static struct evbuffer *
gexec_sink(struct gexec *g)
{
	return g->tr->sink(g);
}

void
gexec_free(struct gexec *g)
{
	g->tr->free(g);
	evbuffer_free(g->stdin_q);
	evbuffer_free(g->inbuf);
	free(g->what);
	free(g);
}

/* Frees once nobody holds it: no owner, no callback, no limactl. */
static void
gexec_free_if_idle(struct gexec *g)
{
	if (g->ops != NULL || g->busy > 0 || g->proc != NULL)
		return;
	gexec_free(g);
}

static void
linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gexec *g = arg;

	if (g->proc != NULL && !g->proc_exited) {
		log_debug("%s: limactl still running after the helper "
		    "reported; killing it", g->what);
		proc_kill(g->proc);
	}
}

/* Hands the result to the owner; the rest is cleanup without an owner. */
static void
gexec_report(struct gexec *g, struct gexec_result *r)
{
	const struct gexec_ops *ops = g->ops;
	struct timeval tv = { GEXEC_LINGER_MS / 1000, 0 };

	if (ops == NULL)
		return;
	g->ops = NULL;
	g->tr->close(g);
	if (g->proc != NULL) {
		g->linger = evtimer_new(g->base, linger_cb, g);
		if (g->linger == NULL || evtimer_add(g->linger, &tv) != 0)
			fatalx("evtimer_add");
	}
	ops->done(g, r, g->arg);
	gexec_free_if_idle(g);
}

void
gexec_fail(struct gexec *g, int code, const char *fmt, ...)
{
	struct gexec_result r;
	va_list ap;

	memset(&r, 0, sizeof r);
	r.end = GEXEC_FAILED;
	r.error = code;
	va_start(ap, fmt);
	vsnprintf(r.message, sizeof r.message, fmt, ap);
	va_end(ap);
	str_sanitize(r.message);
	log_warnx("%s: %s", g->what, r.message);
	gexec_report(g, &r);
}

/*
 * Input has nowhere to go any more: what is queued goes, and what was sent
 * unacknowledged no longer holds the owner's input back. The helper's acks
 * of it may still come (frames not parsed yet): they are no error.
 */
static void
gexec_stdin_gone(struct gexec *g)
{
	g->unacked_gone += g->unacked;
	g->unacked = 0;
	if (evbuffer_drain(g->stdin_q, evbuffer_get_length(g->stdin_q)) != 0)
		fatalx("evbuffer_drain");
}

void
gexec_stream_over(struct gexec *g)
{
	g->out_done = true;
	g->proc_exited = true;
	gexec_stdin_gone(g);
}

static void
gexec_check_end(struct gexec *g)
{
	if (g->ops != NULL && g->out_done && g->proc_exited && !g->paused)
		g->tr->lost(g);
}

/* Ends direct input once everything queued has been written. */
static void
gexec_direct_close_if_drained(struct gexec *g)
{
	if (g->in != NULL && g->in_closed && g->started &&
	    evbuffer_get_length(bufferevent_get_output(g->in)) == 0) {
		bufferevent_free(g->in);	/* EOF for the command */
		g->in = NULL;
	}
}

/* The command runs: what the client sent meanwhile may go. */
static void
gexec_direct_flush(struct gexec *g)
{
	if (g->in != NULL && evbuffer_add_buffer(bufferevent_get_output(g->in),
	    g->held) != 0)
		fatalx("evbuffer_add_buffer");
	gexec_direct_close_if_drained(g);
}

/*
 * Sends queued input as far as the helper's window allows, then the end of
 * input once everything before it went.
 */
void
gexec_stdin_push(struct gexec *g)
{
	struct evbuffer *out;
	size_t n;
	uint8_t *p;

	if ((out = gexec_sink(g)) == NULL || g->direct)
		return;
	while (g->unacked < GEXEC_STDIN_WINDOW && g->tr->room(g, out) &&
	    (n = evbuffer_get_length(g->stdin_q)) > 0) {
		if (n > 65536)
			n = 65536;
		if (n > GEXEC_STDIN_WINDOW - g->unacked)
			n = GEXEC_STDIN_WINDOW - g->unacked;
		if ((p = evbuffer_pullup(g->stdin_q, (ssize_t)n)) == NULL)
			fatalx("evbuffer_pullup");
		(void)gexec_put(g, 'I', p, n);
		if (evbuffer_drain(g->stdin_q, n) != 0)
			fatalx("evbuffer_drain");
		g->unacked += n;
	}
	if (g->in_closed && !g->z_sent &&
	    evbuffer_get_length(g->stdin_q) == 0) {
		g->z_sent = true;
		(void)gexec_put(g, 'Z', NULL, 0);
	}
}

void
gexec_stdin_drained(struct gexec *g)
{
	if (g->ops != NULL && g->ops->stdin_drained != NULL &&
	    gexec_stdin_pending(g) < GEXEC_STDIN_LOW)
		g->ops->stdin_drained(g, g->arg);
}

static void
gexec_frame(struct gexec *g, const struct guest_frame *f)
{
	struct gexec_result r;
	size_t gone = 0;

	switch (f->type) {
	case GUEST_STARTED:
		g->started = true;
		if (g->direct)
			gexec_direct_flush(g);
		break;
	case GUEST_STDOUT:
	case GUEST_STDERR:
		if (!g->started) {
			gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "guest helper sent output before starting");
			return;
		}
		if (f->len > 0)
			g->ops->output(g, f->type == GUEST_STDOUT ? 1 : 2,
			    f->data, f->len, g->arg);
		break;
	case GUEST_ACK:
		if (!g->started ||
		    f->acked > g->unacked + g->unacked_gone) {
			gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "guest helper acknowledged input it was not sent");
			return;
		}
		/* Input that ended has been let go of already. */
		if (g->unacked_gone > 0) {
			gone = f->acked < g->unacked_gone ? f->acked :
			    g->unacked_gone;
			g->unacked_gone -= gone;
			if (gone == f->acked)
				break;
		}
		g->unacked -= f->acked - gone;
		gexec_stdin_push(g);
		gexec_stdin_drained(g);
		break;
	case GUEST_EXIT:
		memset(&r, 0, sizeof r);
		if (f->sig != 0) {
			r.end = GEXEC_SIGNALED;
			r.sig = f->sig;
		} else {
			r.end = GEXEC_EXITED;
			r.code = f->code;
		}
		gexec_report(g, &r);
		break;
	case GUEST_FAILED:
		if (strcmp(f->what, "cwd") == 0)
			gexec_fail(g, f->err_no == ENOENT ?
			    AGENTLANE__V1__ERROR_CODE__NOT_FOUND :
			    AGENTLANE__V1__ERROR_CODE__FAILED_PRECONDITION,
			    "cannot use the working directory: %s", f->message);
		else
			gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "guest helper failed (%s): %s", f->what, f->message);
		break;
	}
}

void
gexec_parse(struct gexec *g)
{
	struct guest_frame f;
	enum guest_rc rc;
	size_t len, want, used;
	uint8_t *p;

	while (g->ops != NULL && !g->paused &&
	    (len = evbuffer_get_length(g->inbuf)) > 0) {
		/* Make exactly one frame contiguous, not the whole buffer. */
		want = len;
		if (g->parser.synced && len >= GUEST_HEADER) {
			uint8_t hdr[GUEST_HEADER];

			if (evbuffer_copyout(g->inbuf, hdr, sizeof hdr) !=
			    (ssize_t)sizeof hdr)
				fatalx("evbuffer_copyout");
			want = GUEST_HEADER + (size_t)guest_header_len(hdr);
			if (want > len)
				want = len;
		}
		if ((p = evbuffer_pullup(g->inbuf, (ssize_t)want)) == NULL)
			fatalx("evbuffer_pullup");
		rc = guest_parse(&g->parser, p, want, &f, &used);
		if (rc == GUEST_ERROR) {
			gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "%s", g->parser.reason);
			return;
		}
		if (rc == GUEST_FRAME)
			gexec_frame(g, &f);
		if (evbuffer_drain(g->inbuf, used) != 0)
			fatalx("evbuffer_drain");
		g->ch.consumed += used;
		if (rc == GUEST_NEED_MORE)
			return;
	}
}

void
gexec_process(struct gexec *g)
{
	/* Owner callbacks below may abort or finish this gexec. */
	g->busy++;
	g->tr->pump(g);
	if (g->ops != NULL)
		gexec_check_end(g);
	g->busy--;
	gexec_free_if_idle(g);
}

/*
 * Reads what the helper wrote. The channel is over at EOF, or once limactl
 * has exited and the pipe is empty: a lingering ssh master could hold the
 * write end open long after. A full buffer waits for the owner instead.
 */
static void
gexec_read(struct gexec *g)
{
	if (g->out_fd == -1)
		return;
	switch (iobuf_fill(g->inbuf, g->out_fd, GEXEC_INBUF_MAX)) {
	case IOBUF_FULL:
		if (g->out_ev != NULL)
			event_del(g->out_ev);
		break;
	case IOBUF_MORE:
		if (g->proc_exited)
			gexec_out_close(g);
		break;
	default:
		gexec_out_close(g);	/* EOF or error: either way, the end */
		break;
	}
}

/* Nothing more will come from the helper. */
static void
gexec_out_close(struct gexec *g)
{
	if (g->out_ev != NULL) {
		event_free(g->out_ev);
		g->out_ev = NULL;
	}
	if (g->out_fd != -1) {
		close(g->out_fd);
		g->out_fd = -1;
	}
	g->out_done = true;
}

static void
gexec_out_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gexec *g = arg;

	gexec_read(g);
	gexec_process(g);
}

static void
gexec_proc_done(struct proc *p, int status, void *arg)
{
	struct gexec *g = arg;

	g->proc = NULL;
	g->proc_exited = true;
	g->proc_status = status;
	str_copy(g->proc_stderr, proc_stderr(p), sizeof g->proc_stderr);
	if (g->ops == NULL) {
		gexec_free_if_idle(g);
		return;
	}
	/*
	 * limactl is gone, so what the helper wrote is in the pipe already:
	 * read it (as fast as the owner takes it) and stop at the first
	 * empty read rather than waiting for an EOF.
	 */
	gexec_read(g);
	gexec_process(g);
}

static void
gexec_in_write_cb(struct bufferevent *bev, void *arg)
{
	struct gexec *g = arg;

	if (g->direct) {
		gexec_direct_close_if_drained(g);
		if (g->in == NULL)
			return;
	}
	gexec_stdin_drained(g);
}

static void
gexec_in_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct gexec *g = arg;

	/* The helper stopped reading (it exited); input has nowhere to go. */
	bufferevent_free(g->in);
	g->in = NULL;
	gexec_stdin_gone(g);
	gexec_stdin_drained(g);
}

/* The transport's wrapping (a channel's M frame), then the helper's. */
static size_t
gexec_header(struct gexec *g, uint8_t *hdr, char type, size_t len)
{
	size_t h = g->tr->wrap(g, hdr, GUEST_HEADER + len);

	guest_header(hdr + h, type, (uint32_t)len);
	return h + GUEST_HEADER;
}

static int
gexec_put(struct gexec *g, char type, const void *data, size_t len)
{
	uint8_t hdr[GEXEC_WRAP_MAX + GUEST_HEADER];
	struct evbuffer *out;
	size_t h;

	if ((out = gexec_sink(g)) == NULL)
		return -1;
	h = gexec_header(g, hdr, type, len);
	if (evbuffer_add(out, hdr, h) != 0 ||
	    (len > 0 && evbuffer_add(out, data, len) != 0))
		fatalx("evbuffer_add");
	return 0;
}

/* T (allocate a terminal) and W (resize): rows and cols, 16 bits each. */
static void
gexec_put_size(struct gexec *g, char type, uint16_t rows, uint16_t cols)
{
	uint8_t sz[4] = { rows >> 8, rows & 0xff, cols >> 8, cols & 0xff };

	(void)gexec_put(g, type, sz, sizeof sz);
}

static void
secret_cleanup(const void *data, size_t len, void *arg)
{
	wire_wipe(arg, len);
	free(arg);
}

/*
 * A frame holding a secret (an environment entry): the output buffer
 * references our copy instead of copying it into its own chains, so that
 * the one copy is wiped once written.
 */
static int
gexec_put_secret(struct gexec *g, char type, const void *data, size_t len)
{
	uint8_t *buf;
	struct evbuffer *out;
	size_t h;

	if ((out = gexec_sink(g)) == NULL)
		return -1;
	buf = xmalloc(GEXEC_WRAP_MAX + GUEST_HEADER + len);
	h = gexec_header(g, buf, type, len);
	if (len > 0)
		memcpy(buf + h, data, len);
	if (evbuffer_add_reference(out, buf, h + len, secret_cleanup,
	    buf) != 0)
		fatalx("evbuffer_add_reference");
	return 0;
}

struct gexec *
gexec_new(struct event_base *base, struct lima *lima,
    const struct gexec_spec *spec, const struct gexec_ops *ops, void *arg,
    const struct gexec_transport *tr)
{
	struct gexec *g = xcalloc(1, sizeof *g);

	g->base = base;
	g->tr = tr;
	g->lima = lima;
	g->ops = ops;
	g->arg = arg;
	g->out_fd = -1;
	xasprintf(&g->what, "%s (%s)", spec->what, spec->lane);
	guest_parser_init(&g->parser);
	if ((g->inbuf = evbuffer_new()) == NULL ||
	    (g->stdin_q = evbuffer_new()) == NULL)
		fatalx("evbuffer_new");
	return g;
}

void
gexec_send_spec(struct gexec *g, const struct gexec_spec *spec)
{
	(void)gexec_put(g, 'C', spec->cwd != NULL ? spec->cwd : "",
	    spec->cwd != NULL ? strlen(spec->cwd) : 0);
	for (size_t i = 0; i < spec->nenv; i++)
		(void)gexec_put_secret(g, 'E', spec->env[i].data,
		    spec->env[i].len);
	for (size_t i = 0; i < spec->argc; i++)
		(void)gexec_put(g, 'A', spec->argv[i].data, spec->argv[i].len);
	if (spec->stdin_direct) {
		g->direct = true;
		if ((g->held = evbuffer_new()) == NULL)
			fatalx("evbuffer_new");
		(void)gexec_put(g, 'D', NULL, 0);
	} else if (spec->tty)
		gexec_put_size(g, 'T', spec->tty_rows, spec->tty_cols);
	(void)gexec_put(g, 'R', NULL, 0);
	if (!spec->stdin)
		gexec_stdin_close(g);
	log_debug("%s: started", g->what);
}

/* ---- The transport of an exec on a limactl shell of its own ---- */

static struct evbuffer *
proc_sink(struct gexec *g)
{
	return g->in != NULL ? bufferevent_get_output(g->in) : NULL;
}

static size_t
proc_wrap(struct gexec *g, uint8_t *hdr, size_t len)
{
	return 0;	/* the helper's frames as they are */
}

static bool
proc_room(struct gexec *g, struct evbuffer *out)
{
	return true;	/* the window alone bounds it */
}

/* Parses, then reads on while the owner takes it. */
static void
proc_pump(struct gexec *g)
{
	size_t before;

	for (;;) {
		gexec_parse(g);
		if (g->ops == NULL || g->paused || g->out_fd == -1 ||
		    evbuffer_get_length(g->inbuf) >= GEXEC_INBUF_MAX)
			break;
		if (!g->proc_exited) {
			/* Wait for the helper to write more. */
			if (g->out_ev != NULL && event_add(g->out_ev, NULL) != 0)
				fatalx("event_add");
			break;
		}
		/* limactl is gone: read on until the pipe is empty. */
		before = evbuffer_get_length(g->inbuf);
		gexec_read(g);
		if (evbuffer_get_length(g->inbuf) == before)
			break;
	}
}

/* Closing both pipes is what ends the helper (and its command). */
static void
proc_close(struct gexec *g)
{
	if (g->in != NULL) {
		bufferevent_free(g->in);
		g->in = NULL;
	}
	gexec_out_close(g);
}

/* Why, from limactl's exit status and stderr. */
static void
proc_lost(struct gexec *g)
{
	char msg[256], st[32];

	lima_error_message(g->lima, g->proc_stderr, msg, sizeof msg);
	proc_status_string(g->proc_status, st, sizeof st);
	if (WIFEXITED(g->proc_status) && WEXITSTATUS(g->proc_status) == 1)
		gexec_fail(g, AGENTLANE__V1__ERROR_CODE__LIMA_FAILED,
		    "limactl shell failed (%s)%s%s", st, msg[0] ? ": " : "",
		    msg);
	else
		gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
		    "lost the guest (limactl shell %s)%s%s", st,
		    msg[0] ? ": " : "", msg);
}

static void
proc_free(struct gexec *g)
{
	proc_close(g);
	if (g->linger != NULL)
		event_free(g->linger);
	if (g->held != NULL)
		evbuffer_free(g->held);
}

static const struct gexec_transport proc_transport = {
	.sink = proc_sink,
	.wrap = proc_wrap,
	.room = proc_room,
	.pump = proc_pump,
	.close = proc_close,
	.lost = proc_lost,
	.free = proc_free,
};

struct gexec *
gexec_start(struct event_base *base, struct proc_list *procs,
    struct lima *lima, const struct gexec_spec *spec,
    const struct gexec_ops *ops, void *arg, char *err, size_t errlen)
{
	const char *helper[] = { "perl", "-e", guest_helper_source, NULL };
	struct proc_spec ps;
	struct gexec *g;
	char **argv;
	int fd;

	if ((argv = lima_argv_shell(lima, spec->lane, helper)) == NULL) {
		snprintf(err, errlen, "invalid lane name");
		return NULL;
	}
	g = gexec_new(base, lima, spec, ops, arg, &proc_transport);
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(lima);
	ps.in = PROC_IN_PIPE;
	ps.out = PROC_OUT_PIPE;
	ps.what = g->what;
	g->proc = proc_spawn(base, procs, &ps, gexec_proc_done, g, err, errlen);
	lima_argv_free(argv);
	if (g->proc == NULL) {
		gexec_free(g);
		return NULL;
	}

	fd = proc_take_stdin(g->proc);
	g->in = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (g->in == NULL)
		fatalx("bufferevent_socket_new");
	bufferevent_setcb(g->in, NULL, gexec_in_write_cb, gexec_in_event_cb, g);
	bufferevent_setwatermark(g->in, EV_WRITE, GEXEC_STDIN_LOW, 0);
	if (bufferevent_set_max_single_write(g->in, 256 * 1024) != 0)
		fatalx("bufferevent_set_max_single_write");
	if (bufferevent_enable(g->in, EV_WRITE) != 0)
		fatalx("bufferevent_enable");

	g->out_fd = proc_take_stdout(g->proc);
	g->out_ev = event_new(base, g->out_fd, EV_READ | EV_PERSIST,
	    gexec_out_cb, g);
	if (g->out_ev == NULL || event_add(g->out_ev, NULL) != 0)
		fatalx("event_add");

	gexec_send_spec(g, spec);
	return g;
}

int
gexec_stdin(struct gexec *g, const void *data, size_t len)
{
	if (g->in_closed || gexec_sink(g) == NULL)
		return -1;
	if (g->direct) {
		if (evbuffer_add(g->started ? bufferevent_get_output(g->in) :
		    g->held, data, len) != 0)
			fatalx("evbuffer_add");
		return 0;
	}
	if (evbuffer_add(g->stdin_q, data, len) != 0)
		fatalx("evbuffer_add");
	gexec_stdin_push(g);
	return 0;
}

void
gexec_stdin_close(struct gexec *g)
{
	if (g->in_closed)
		return;
	g->in_closed = true;
	if (g->direct)
		gexec_direct_close_if_drained(g);
	else
		gexec_stdin_push(g);
}

void
gexec_resize(struct gexec *g, uint16_t rows, uint16_t cols)
{
	if (!g->direct)
		gexec_put_size(g, 'W', rows, cols);
}

size_t
gexec_stdin_pending(const struct gexec *g)
{
	size_t n = g->held != NULL ? evbuffer_get_length(g->held) : 0;
	size_t out = 0;

	if (g->in != NULL)
		out = evbuffer_get_length(bufferevent_get_output(g->in));
	/*
	 * Unacknowledged input includes what is still in the pipe's buffer;
	 * the larger of the two also bounds a guest that acks what it never
	 * read.
	 */
	n += evbuffer_get_length(g->stdin_q);
	n += out > g->unacked ? out : g->unacked;
	return n;
}

void
gexec_pause(struct gexec *g, bool paused)
{
	if (g->paused == paused || g->ops == NULL)
		return;
	g->paused = paused;
	if (paused) {
		if (g->out_ev != NULL)
			event_del(g->out_ev);
	} else
		gexec_process(g);
}

void
gexec_abort(struct gexec *g)
{
	if (g->ops == NULL)
		return;
	g->ops = NULL;
	/*
	 * Closing both pipes is what tells the helper to kill the command's
	 * process group (EOF on its input, EPIPE on its output); killing the
	 * limactl shell process group ends the session on the host side.
	 */
	g->tr->close(g);
	if (g->proc != NULL)
		proc_kill(g->proc);
	gexec_free_if_idle(g);
}

const char *
gexec_status(const struct gexec_result *r, char *buf, size_t len)
{
	wire_exit_string(buf, len, r->end != GEXEC_EXITED,
	    r->end == GEXEC_EXITED ? r->code : r->sig);
	return buf;
}
