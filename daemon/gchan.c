#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "agentlane.pb-c.h"
#include "gchan.h"
#include "gexec.h"
#include "gexec_int.h"
#include "guestproto.h"
#include "iobuf.h"
#include "lima.h"
#include "log.h"
#include "proc.h"
#include "util.h"

/*
 * An exec on a channel gets more output window once this much of it has
 * been parsed: a grant frame per 64 KiB, none for a small exec. The window
 * must hold the largest frame the exec's parser needs whole, or a paused
 * exec could never be given room for it.
 */
#define GCHAN_GRANT (64u * 1024u)
_Static_assert(GCHAN_WINDOW >= GCHAN_GRANT + GUEST_MAX_PAYLOAD +
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
_Static_assert(GEXEC_WRAP_MAX >= GUEST_CHAN_HEADER,
    "an exec's frame fits in the channel's M frame header room");

static void gchan_detach(struct gexec *, bool);

struct gchan {
	struct event_base *base;
	struct lima *lima;
	struct gchan **slot;		/* the lane's pointer, while we are it */
	gchan_died_cb died;		/* told when it dies while in *slot */
	void *died_arg;
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

/* ---- The lane's exec channel ---- */

static void
gchan_put(struct gchan *c, char type, uint32_t id, const void *data,
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
gchan_free_if_idle(struct gchan *c)
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
gchan_die(struct gchan *c, const char *why)
{
	struct gexec *g;
	char msg[256], st[32], lost[320];
	bool watched = false;

	if (c->dead)
		return;
	c->dead = true;
	if (c->slot != NULL) {
		*c->slot = NULL;
		c->slot = NULL;
		watched = c->died != NULL;
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
	/*
	 * The watcher first, while the slot's owner surely lives (it closes
	 * the channel before it goes): the execs' owners below may end it.
	 */
	if (watched)
		c->died(c->died_arg, lost);
	while ((g = TAILQ_FIRST(&c->execs)) != NULL) {
		gchan_detach(g, false);
		str_copy(g->ch.lost, lost, sizeof g->ch.lost);
		gexec_stream_over(g);
		gexec_process(g);
	}
	c->busy--;
}

static struct gexec *
gchan_find(struct gchan *c, uint32_t id)
{
	struct gexec *g;

	TAILQ_FOREACH(g, &c->execs, ch.entry)
		if (g->ch.id == id)
			return g;
	return NULL;
}

/* The channel helper says an exec's stream is over (its helper exited). */
static void
gchan_exec_ended(struct gexec *g)
{
	gchan_detach(g, false);
	gexec_stream_over(g);
	gexec_process(g);
}

/* Hands every whole frame read to its exec. */
static void
gchan_frames(struct gchan *c)
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
		if (f.len > g->ch.credit) {
			gchan_die(c, "the guest sent an exec more output than "
			    "its window");
			return;
		}
		g->ch.credit -= f.len;
		if (evbuffer_remove_buffer(c->inbuf, g->inbuf, f.len) !=
		    (int)f.len)
			fatalx("evbuffer_remove_buffer");
		gexec_process(g);
	}
}

static void
gchan_read(struct gchan *c)
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
	struct gchan *c = arg;

	c->busy++;
	gchan_read(c);
	c->busy--;
	gchan_free_if_idle(c);
}

static void
gchan_proc_done(struct proc *p, int status, void *arg)
{
	struct gchan *c = arg;
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
	struct gchan *c = arg;
	struct gexec *g, *next;

	c->busy++;
	for (g = TAILQ_FIRST(&c->execs); g != NULL && !c->dead; g = next) {
		next = TAILQ_NEXT(g, ch.entry);
		gexec_stdin_push(g);
		gexec_stdin_drained(g);
	}
	c->busy--;
	gchan_free_if_idle(c);
}

static void
gchan_in_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct gchan *c = arg;

	c->busy++;
	gchan_die(c, "cannot write to it");
	c->busy--;
	gchan_free_if_idle(c);
}

static struct gchan *
gchan_open(struct event_base *base, struct proc_list *procs,
    struct lima *lima, const char *lane, char *err, size_t errlen)
{
	const char *helper[] = { "perl", "-e", guest_helper_source, "mux",
	    NULL };
	struct gchan *c;
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

/* ---- The transport of an exec on the channel ---- */

/*
 * Takes the exec off its channel; end: tell the channel helper, which
 * closes the exec's pipes (its helper then kills the process group).
 */
static void
gchan_detach(struct gexec *g, bool end)
{
	struct gchan *c = g->ch.c;

	if (c == NULL)
		return;
	if (end)
		gchan_put(c, GUEST_CHAN_END, g->ch.id, NULL, 0);
	TAILQ_REMOVE(&c->execs, g, ch.entry);
	g->ch.c = NULL;
}

static struct evbuffer *
chan_sink(struct gexec *g)
{
	return g->ch.c != NULL ? bufferevent_get_output(g->ch.c->in) : NULL;
}

/* Every frame of the exec's goes in an M frame of its id. */
static size_t
chan_wrap(struct gexec *g, uint8_t *hdr, size_t len)
{
	guest_chan_header(hdr, GUEST_CHAN_DATA, g->ch.id, (uint32_t)len);
	return GUEST_CHAN_HEADER;
}

static bool
chan_room(struct gexec *g, struct evbuffer *out)
{
	return evbuffer_get_length(out) < GCHAN_OUT_MAX;
}

/* The channel hands us output; we hand back window. */
static void
chan_pump(struct gexec *g)
{
	uint8_t w[4];
	size_t n;

	gexec_parse(g);
	if (g->ch.c == NULL || (n = g->ch.consumed) < GCHAN_GRANT)
		return;
	w[0] = (n >> 24) & 0xff;
	w[1] = (n >> 16) & 0xff;
	w[2] = (n >> 8) & 0xff;
	w[3] = n & 0xff;
	gchan_put(g->ch.c, GUEST_CHAN_GRANT, g->ch.id, w, sizeof w);
	g->ch.credit += n;
	g->ch.consumed = 0;
}

static void
chan_close(struct gexec *g)
{
	gchan_detach(g, true);
	g->out_done = true;
}

static void
chan_lost(struct gexec *g)
{
	gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, "%s",
	    g->ch.lost[0] != '\0' ? g->ch.lost : "lost the guest (the exec's "
	    "helper ended without an exit status)");
}

static void
chan_free(struct gexec *g)
{
	gchan_detach(g, true);
}

static const struct gexec_transport chan_transport = {
	.sink = chan_sink,
	.wrap = chan_wrap,
	.room = chan_room,
	.pump = chan_pump,
	.close = chan_close,
	.lost = chan_lost,
	.free = chan_free,
};

struct gexec *
gchan_exec(struct event_base *base, struct proc_list *procs,
    struct lima *lima, struct gchan **slot, const struct gexec_spec *spec,
    const struct gexec_ops *ops, void *arg, char *err, size_t errlen)
{
	struct gchan *c = *slot;
	struct gexec *g;
	uint8_t w[4] = { (GCHAN_WINDOW >> 24) & 0xff,
	    (GCHAN_WINDOW >> 16) & 0xff, (GCHAN_WINDOW >> 8) & 0xff,
	    GCHAN_WINDOW & 0xff };

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
	g = gexec_new(base, lima, spec, ops, arg, &chan_transport);
	g->ch.c = c;
	/* Ids are never reused while the channel lives (0 is skipped). */
	do
		g->ch.id = ++c->next_id;
	while (g->ch.id == 0 || gchan_find(c, g->ch.id) != NULL);
	g->ch.credit = GCHAN_WINDOW;
	TAILQ_INSERT_TAIL(&c->execs, g, ch.entry);
	gchan_put(c, GUEST_CHAN_NEW, g->ch.id, w, sizeof w);
	gexec_send_spec(g, spec);
	return g;
}

void
gchan_watch(struct gchan *c, gchan_died_cb died, void *arg)
{
	c->died = died;
	c->died_arg = arg;
}

void
gchan_close(struct gchan **slot)
{
	struct gchan *c = *slot;

	if (c == NULL)
		return;
	*slot = NULL;
	c->slot = NULL;
	c->busy++;
	gchan_die(c, "the lane stopped");
	c->busy--;
	gchan_free_if_idle(c);
}
