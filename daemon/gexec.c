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
/*
 * An exec on a channel gets more output window once this much of it has
 * been parsed: a grant frame per 64 KiB, none for a small exec. The window
 * must hold the largest frame the exec's parser needs whole, or a paused
 * exec could never be given room for it.
 */
#define GCHAN_GRANT (64u * 1024u)
_Static_assert(GEXEC_CHAN_WINDOW >= GCHAN_GRANT + GUEST_MAX_PAYLOAD +
    GUEST_HEADER, "an exec's window holds a whole frame");
/* The channel is read in gulps of at most this (a frame and some). */
#define GCHAN_INBUF_MAX (GUEST_CHAN_HEADER + GUEST_CHAN_MAX_PAYLOAD + \
    64u * 1024u)
/*
 * Stdin queued towards the channel helper, all execs together: beyond this
 * no exec sends more, even if the guest acknowledged input it was never
 * sent through (a broken or hostile helper), so memory stays bounded.
 */
#define GCHAN_OUT_MAX (2u * GEXEC_STDIN_WINDOW)

struct gexec;

struct gexec_chan {
	struct event_base *base;
	struct lima *lima;
	struct gexec_chan **slot;	/* the lane's pointer, while we are it */
	char *what;
	struct proc *proc;		/* limactl shell; NULL once reaped */
	int proc_status;
	char proc_stderr[PROC_STDERR_TAIL + 1];
	struct bufferevent *in;		/* to the channel helper */
	int out_fd;			/* from it */
	struct event *out_ev;
	struct evbuffer *inbuf;
	struct guest_chan_parser parser;
	uint32_t next_id;
	TAILQ_HEAD(, gexec) execs;
	int busy;			/* inside a callback: defer the free */
	bool dead;
};

struct gexec {
	struct event_base *base;
	struct lima *lima;
	char *what;
	const struct gexec_ops *ops;	/* NULL once reported or aborted */
	void *arg;

	struct proc *proc;
	bool proc_exited;
	int proc_status;
	char proc_stderr[PROC_STDERR_TAIL + 1];

	struct bufferevent *in;		/* helper stdin */
	bool in_closed;			/* the owner ended the command's input */
	bool z_sent;
	struct evbuffer *stdin_q;	/* framed input beyond the window */
	size_t unacked;			/* I bytes the helper did not ack */
	bool direct;			/* unframed input straight to the command */
	struct evbuffer *held;		/* direct input before the command runs */

	int out_fd;			/* helper stdout */
	struct event *out_ev;
	bool out_done;			/* EOF, or drained after exit */
	struct evbuffer *inbuf;
	struct guest_parser parser;
	bool paused;
	bool started;
	int busy;			/* inside gexec_process: defer frees */

	struct event *linger;

	/* On a lane's channel (gexec_start_chan). */
	bool chan_mode;
	struct gexec_chan *chan;	/* NULL once off it */
	uint32_t id;
	size_t credit;			/* output the guest may still send */
	size_t consumed;		/* output parsed, not yet granted back */
	char lost[320];			/* why the stream ended, if it broke */
	TAILQ_ENTRY(gexec) chan_entry;
};

static void gexec_process(struct gexec *);
static int gexec_put(struct gexec *, char, const void *, size_t);
static void gchan_put(struct gexec_chan *, char, uint32_t, const void *,
    size_t);

/* Where frames for the helper go; NULL once it takes no more. */
static struct evbuffer *
gexec_sink(struct gexec *g)
{
	if (g->chan_mode)
		return g->chan != NULL ? bufferevent_get_output(g->chan->in) :
		    NULL;
	return g->in != NULL ? bufferevent_get_output(g->in) : NULL;
}

/*
 * Takes the exec off its channel; end: tell the channel helper, which
 * closes the exec's pipes (its helper then kills the process group).
 */
static void
gexec_chan_detach(struct gexec *g, bool end)
{
	struct gexec_chan *c = g->chan;

	if (c == NULL)
		return;
	if (end)
		gchan_put(c, GUEST_CHAN_END, g->id, NULL, 0);
	TAILQ_REMOVE(&c->execs, g, chan_entry);
	g->chan = NULL;
}

static void
gexec_free_if_idle(struct gexec *g)
{
	if (g->ops != NULL || g->busy > 0 ||
	    (!g->chan_mode && !g->proc_exited))
		return;
	gexec_chan_detach(g, true);
	if (g->in != NULL)
		bufferevent_free(g->in);
	if (g->out_ev != NULL)
		event_free(g->out_ev);
	if (g->out_fd != -1)
		close(g->out_fd);
	if (g->linger != NULL)
		event_free(g->linger);
	if (g->held != NULL)
		evbuffer_free(g->held);
	evbuffer_free(g->stdin_q);
	evbuffer_free(g->inbuf);
	free(g->what);
	free(g);
}

static void gexec_out_close(struct gexec *);

static void
gexec_close_channel(struct gexec *g)
{
	if (g->chan_mode) {
		gexec_chan_detach(g, true);
		g->out_done = true;
		return;
	}
	if (g->in != NULL) {
		bufferevent_free(g->in);
		g->in = NULL;
	}
	gexec_out_close(g);
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
	gexec_close_channel(g);
	if (!g->proc_exited && !g->chan_mode) {
		g->linger = evtimer_new(g->base, linger_cb, g);
		if (g->linger == NULL || evtimer_add(g->linger, &tv) != 0)
			fatalx("evtimer_add");
	}
	ops->done(g, r, g->arg);
	gexec_free_if_idle(g);
}

static void __attribute__((format(printf, 3, 4)))
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
 * The channel ended without a status from the helper: say why, from
 * limactl's exit status and stderr.
 */
static void
gexec_fail_transport(struct gexec *g)
{
	char msg[256], st[32];

	if (g->chan_mode) {
		gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, "%s",
		    g->lost[0] != '\0' ? g->lost : "lost the guest (the "
		    "exec's helper ended without an exit status)");
		return;
	}
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
gexec_check_end(struct gexec *g)
{
	if (g->ops != NULL && g->out_done && g->proc_exited && !g->paused)
		gexec_fail_transport(g);
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
static void
gexec_stdin_push(struct gexec *g)
{
	size_t n;
	uint8_t *p;

	struct evbuffer *out;

	if ((out = gexec_sink(g)) == NULL || g->direct)
		return;
	while (g->unacked < GEXEC_STDIN_WINDOW &&
	    (!g->chan_mode || evbuffer_get_length(out) < GCHAN_OUT_MAX) &&
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

static void
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
		if (!g->started || f->acked > g->unacked) {
			gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "guest helper acknowledged input it was not sent");
			return;
		}
		g->unacked -= f->acked;
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

static void gexec_read(struct gexec *);

/* Delivers every whole frame in the buffer, unless the owner pauses. */
static void
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
		g->consumed += used;
		if (rc == GUEST_NEED_MORE)
			return;
	}
}

static void
gexec_process(struct gexec *g)
{
	size_t before;

	/* Owner callbacks below may abort or finish this gexec. */
	g->busy++;
	if (g->chan_mode) {
		/* The channel hands us output; we hand back window. */
		gexec_parse(g);
		if (g->chan != NULL && g->consumed >= GCHAN_GRANT) {
			uint8_t n[4] = { (g->consumed >> 24) & 0xff,
			    (g->consumed >> 16) & 0xff,
			    (g->consumed >> 8) & 0xff, g->consumed & 0xff };

			gchan_put(g->chan, GUEST_CHAN_GRANT, g->id, n,
			    sizeof n);
			g->credit += g->consumed;
			g->consumed = 0;
		}
	} else for (;;) {
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
	g->unacked = 0;
	if (evbuffer_drain(g->stdin_q, evbuffer_get_length(g->stdin_q)) != 0)
		fatalx("evbuffer_drain");
	gexec_stdin_drained(g);
}

/* On a channel, the frame goes in an M frame of the exec's. */
static size_t
gexec_header(struct gexec *g, uint8_t *hdr, char type, size_t len)
{
	size_t h = 0;

	if (g->chan_mode) {
		guest_chan_header(hdr, GUEST_CHAN_DATA, g->id,
		    (uint32_t)(GUEST_HEADER + len));
		h = GUEST_CHAN_HEADER;
	}
	guest_header(hdr + h, type, (uint32_t)len);
	return h + GUEST_HEADER;
}

static int
gexec_put(struct gexec *g, char type, const void *data, size_t len)
{
	uint8_t hdr[GUEST_CHAN_HEADER + GUEST_HEADER];
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
	buf = xmalloc(GUEST_CHAN_HEADER + GUEST_HEADER + len);
	h = gexec_header(g, buf, type, len);
	if (len > 0)
		memcpy(buf + h, data, len);
	if (evbuffer_add_reference(out, buf, h + len, secret_cleanup,
	    buf) != 0)
		fatalx("evbuffer_add_reference");
	return 0;
}

static struct gexec *
gexec_new(struct event_base *base, struct lima *lima,
    const struct gexec_spec *spec, const struct gexec_ops *ops, void *arg)
{
	struct gexec *g = xcalloc(1, sizeof *g);

	g->base = base;
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

/* The command, its environment and its directory, then R: run it. */
static void
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
	g = gexec_new(base, lima, spec, ops, arg);
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(lima);
	ps.in = PROC_IN_PIPE;
	ps.out = PROC_OUT_PIPE;
	ps.what = g->what;
	g->proc = proc_spawn(base, procs, &ps, gexec_proc_done, g, err, errlen);
	lima_argv_free(argv);
	if (g->proc == NULL) {
		evbuffer_free(g->stdin_q);
		evbuffer_free(g->inbuf);
		free(g->what);
		free(g);
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

/* ---- The lane's exec channel ---- */

static void
gchan_put(struct gexec_chan *c, char type, uint32_t id, const void *data,
    size_t len)
{
	uint8_t hdr[GUEST_CHAN_HEADER];
	struct evbuffer *out = bufferevent_get_output(c->in);

	guest_chan_header(hdr, type, id, (uint32_t)len);
	if (evbuffer_add(out, hdr, sizeof hdr) != 0 ||
	    (len > 0 && evbuffer_add(out, data, len) != 0))
		fatalx("evbuffer_add");
}

static void
gchan_free_if_idle(struct gexec_chan *c)
{
	if (!c->dead || c->busy > 0)
		return;
	if (c->proc != NULL)
		proc_abandon(c->proc);
	if (c->in != NULL)
		bufferevent_free(c->in);
	if (c->out_ev != NULL)
		event_free(c->out_ev);
	if (c->out_fd != -1)
		close(c->out_fd);
	evbuffer_free(c->inbuf);
	free(c->what);
	free(c);
}

/*
 * The channel is over: nothing more is written to it or read from it. Each
 * exec on it still delivers what it already received (its exit status may
 * be there), then fails with why the channel ended.
 */
static void
gchan_die(struct gexec_chan *c, const char *why)
{
	struct gexec *g;
	char msg[256], st[32], lost[320];

	if (c->dead)
		return;
	c->dead = true;
	if (c->slot != NULL) {
		*c->slot = NULL;
		c->slot = NULL;
	}
	if (c->proc == NULL) {
		lima_error_message(c->lima, c->proc_stderr, msg, sizeof msg);
		proc_status_string(c->proc_status, st, sizeof st);
		snprintf(lost, sizeof lost, "lost the guest (the exec channel "
		    "ended: limactl shell %s)%s%s", st, msg[0] ? ": " : "",
		    msg);
	} else
		snprintf(lost, sizeof lost, "lost the guest (the exec channel "
		    "broke: %s)", why);
	str_sanitize(lost);
	if (!TAILQ_EMPTY(&c->execs))
		log_warnx("%s: %s", c->what, lost);
	else
		log_debug("%s: %s", c->what, lost);
	if (c->in != NULL) {
		bufferevent_free(c->in);
		c->in = NULL;
	}
	if (c->out_ev != NULL) {
		event_free(c->out_ev);
		c->out_ev = NULL;
	}
	c->busy++;
	while ((g = TAILQ_FIRST(&c->execs)) != NULL) {
		gexec_chan_detach(g, false);
		str_copy(g->lost, lost, sizeof g->lost);
		g->out_done = true;
		g->proc_exited = true;
		g->unacked = 0;
		if (evbuffer_drain(g->stdin_q,
		    evbuffer_get_length(g->stdin_q)) != 0)
			fatalx("evbuffer_drain");
		gexec_process(g);
	}
	c->busy--;
}

static struct gexec *
gchan_find(struct gexec_chan *c, uint32_t id)
{
	struct gexec *g;

	TAILQ_FOREACH(g, &c->execs, chan_entry)
		if (g->id == id)
			return g;
	return NULL;
}

/* The channel helper says an exec's stream is over (its helper exited). */
static void
gchan_exec_ended(struct gexec *g)
{
	gexec_chan_detach(g, false);
	g->out_done = true;
	g->proc_exited = true;
	g->unacked = 0;
	if (evbuffer_drain(g->stdin_q, evbuffer_get_length(g->stdin_q)) != 0)
		fatalx("evbuffer_drain");
	gexec_process(g);
}

/* Hands every whole frame read to its exec. */
static void
gchan_frames(struct gexec_chan *c)
{
	struct guest_chan_frame f;
	struct gexec *g;
	enum guest_rc rc;
	size_t len, want, used;
	uint8_t *p;

	while (!c->dead && (len = evbuffer_get_length(c->inbuf)) > 0) {
		want = c->parser.synced && len > GUEST_CHAN_HEADER ?
		    GUEST_CHAN_HEADER : len;
		if ((p = evbuffer_pullup(c->inbuf, (ssize_t)want)) == NULL)
			fatalx("evbuffer_pullup");
		rc = guest_chan_parse(&c->parser, p, want, &f, &used);
		if (rc == GUEST_ERROR) {
			gchan_die(c, c->parser.reason);
			return;
		}
		if (rc == GUEST_FRAME && len - used < f.len) {
			/* Keep the header until the payload is all here. */
			used -= GUEST_CHAN_HEADER;
			rc = GUEST_NEED_MORE;
		}
		if (evbuffer_drain(c->inbuf, used) != 0)
			fatalx("evbuffer_drain");
		if (rc != GUEST_FRAME)
			return;
		g = gchan_find(c, f.id);
		if (f.type == GUEST_CHAN_END) {
			if (g != NULL)
				gchan_exec_ended(g);
			continue;
		}
		if (g == NULL) {
			/* An exec we already left: what it sent goes. */
			if (evbuffer_drain(c->inbuf, f.len) != 0)
				fatalx("evbuffer_drain");
			continue;
		}
		if (f.len > g->credit) {
			gchan_die(c, "the guest sent an exec more output than "
			    "its window");
			return;
		}
		g->credit -= f.len;
		if (evbuffer_remove_buffer(c->inbuf, g->inbuf, f.len) !=
		    (int)f.len)
			fatalx("evbuffer_remove_buffer");
		gexec_process(g);
	}
}

static void
gchan_read(struct gexec_chan *c)
{
	enum iobuf_rc rc;

	rc = iobuf_fill(c->inbuf, c->out_fd, GCHAN_INBUF_MAX);
	gchan_frames(c);
	if (rc == IOBUF_EOF || rc == IOBUF_ERROR)
		gchan_die(c, rc == IOBUF_EOF ? "its output ended" :
		    strerror(errno));
}

static void
gchan_out_cb(evutil_socket_t fd, short what, void *arg)
{
	struct gexec_chan *c = arg;

	c->busy++;
	gchan_read(c);
	c->busy--;
	gchan_free_if_idle(c);
}

static void
gchan_proc_done(struct proc *p, int status, void *arg)
{
	struct gexec_chan *c = arg;
	size_t before;

	c->proc = NULL;
	c->proc_status = status;
	str_copy(c->proc_stderr, proc_stderr(p), sizeof c->proc_stderr);
	c->busy++;
	/* What the helper wrote before it went is in the pipe: take it. */
	while (!c->dead && c->out_fd != -1) {
		before = evbuffer_get_length(c->inbuf);
		gchan_read(c);
		if (evbuffer_get_length(c->inbuf) == before)
			break;
	}
	gchan_die(c, "limactl shell exited");
	c->busy--;
	gchan_free_if_idle(c);
}

/* Input queued for the helper went below the low-water mark. */
static void
gchan_in_write_cb(struct bufferevent *bev, void *arg)
{
	struct gexec_chan *c = arg;
	struct gexec *g, *next;

	c->busy++;
	for (g = TAILQ_FIRST(&c->execs); g != NULL && !c->dead; g = next) {
		next = TAILQ_NEXT(g, chan_entry);
		gexec_stdin_push(g);
		gexec_stdin_drained(g);
	}
	c->busy--;
	gchan_free_if_idle(c);
}

static void
gchan_in_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct gexec_chan *c = arg;

	c->busy++;
	gchan_die(c, "cannot write to it");
	c->busy--;
	gchan_free_if_idle(c);
}

static struct gexec_chan *
gchan_open(struct event_base *base, struct proc_list *procs,
    struct lima *lima, const char *lane, char *err, size_t errlen)
{
	const char *helper[] = { "perl", "-e", guest_helper_source, "mux",
	    NULL };
	struct gexec_chan *c;
	struct proc_spec ps;
	char **argv;

	if ((argv = lima_argv_shell(lima, lane, helper)) == NULL) {
		snprintf(err, errlen, "invalid lane name");
		return NULL;
	}
	c = xcalloc(1, sizeof *c);
	c->base = base;
	c->lima = lima;
	c->out_fd = -1;
	TAILQ_INIT(&c->execs);
	guest_chan_parser_init(&c->parser);
	xasprintf(&c->what, "exec channel (%s)", lane);
	if ((c->inbuf = evbuffer_new()) == NULL)
		fatalx("evbuffer_new");
	memset(&ps, 0, sizeof ps);
	ps.argv = argv;
	ps.envp = lima_envp(lima);
	ps.in = PROC_IN_PIPE;
	ps.out = PROC_OUT_PIPE;
	ps.what = c->what;
	c->proc = proc_spawn(base, procs, &ps, gchan_proc_done, c, err,
	    errlen);
	lima_argv_free(argv);
	if (c->proc == NULL) {
		evbuffer_free(c->inbuf);
		free(c->what);
		free(c);
		return NULL;
	}
	c->in = bufferevent_socket_new(base, proc_take_stdin(c->proc),
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->in == NULL)
		fatalx("bufferevent_socket_new");
	bufferevent_setcb(c->in, NULL, gchan_in_write_cb, gchan_in_event_cb,
	    c);
	bufferevent_setwatermark(c->in, EV_WRITE, GEXEC_STDIN_LOW, 0);
	if (bufferevent_set_max_single_write(c->in, 256 * 1024) != 0)
		fatalx("bufferevent_set_max_single_write");
	if (bufferevent_enable(c->in, EV_WRITE) != 0)
		fatalx("bufferevent_enable");
	c->out_fd = proc_take_stdout(c->proc);
	c->out_ev = event_new(base, c->out_fd, EV_READ | EV_PERSIST,
	    gchan_out_cb, c);
	if (c->out_ev == NULL || event_add(c->out_ev, NULL) != 0)
		fatalx("event_add");
	log_debug("%s: opened", c->what);
	return c;
}

struct gexec *
gexec_start_chan(struct event_base *base, struct proc_list *procs,
    struct lima *lima, struct gexec_chan **slot, const struct gexec_spec *spec,
    const struct gexec_ops *ops, void *arg, char *err, size_t errlen)
{
	struct gexec_chan *c = *slot;
	struct gexec *g;
	uint8_t w[4] = { (GEXEC_CHAN_WINDOW >> 24) & 0xff,
	    (GEXEC_CHAN_WINDOW >> 16) & 0xff, (GEXEC_CHAN_WINDOW >> 8) & 0xff,
	    GEXEC_CHAN_WINDOW & 0xff };

	if (spec->stdin_direct) {
		snprintf(err, errlen, "direct input needs a helper of its own");
		return NULL;
	}
	if (c == NULL) {
		if ((c = gchan_open(base, procs, lima, spec->lane, err,
		    errlen)) == NULL)
			return NULL;
		c->slot = slot;
		*slot = c;
	}
	g = gexec_new(base, lima, spec, ops, arg);
	g->chan_mode = true;
	g->chan = c;
	/* Ids are never reused while the channel lives (0 is skipped). */
	do
		g->id = ++c->next_id;
	while (g->id == 0 || gchan_find(c, g->id) != NULL);
	g->credit = GEXEC_CHAN_WINDOW;
	TAILQ_INSERT_TAIL(&c->execs, g, chan_entry);
	gchan_put(c, GUEST_CHAN_NEW, g->id, w, sizeof w);
	gexec_send_spec(g, spec);
	return g;
}

void
gexec_chan_close(struct gexec_chan **slot)
{
	struct gexec_chan *c = *slot;

	if (c == NULL)
		return;
	*slot = NULL;
	c->slot = NULL;
	c->busy++;
	gchan_die(c, "the lane stopped");
	c->busy--;
	gchan_free_if_idle(c);
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
	gexec_close_channel(g);
	if (g->proc != NULL && !g->proc_exited)
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
