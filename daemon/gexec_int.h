/*
 * Between gexec.c (one exec: its frames, its input window, its output and
 * its result) and the transports that carry it: a limactl shell of its
 * own (gexec.c) or the lane's exec channel (gchan.c). Not for other
 * modules: they use gexec.h and gchan.h.
 */
#ifndef LANED_GEXEC_INT_H
#define LANED_GEXEC_INT_H

#include <sys/queue.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gexec.h"
#include "guestproto.h"
#include "proc.h"

struct bufferevent;
struct event;
struct evbuffer;
struct gchan;

/*
 * What differs between an exec on a limactl shell of its own and one on
 * the lane's exec channel: the one place that asks which it is.
 */
struct gexec_transport {
	/* Where frames for the helper go; NULL once it takes no more. */
	struct evbuffer *(*sink)(struct gexec *);
	/* Writes what goes before a helper frame of len bytes; its size. */
	size_t (*wrap)(struct gexec *, uint8_t *hdr, size_t len);
	/* Whether more input may be queued on out now. */
	bool (*room)(struct gexec *, struct evbuffer *out);
	/* Hands on what arrived, then asks for more (a read, or window). */
	void (*pump)(struct gexec *);
	/* The exec is over for its owner: no more frames either way. */
	void (*close)(struct gexec *);
	/* The stream ended without the helper's status: fail saying why. */
	void (*lost)(struct gexec *);
	/* Frees what the transport holds for the exec. */
	void (*free)(struct gexec *);
};

/* The most a transport writes before a helper frame. */
#define GEXEC_WRAP_MAX GUEST_CHAN_HEADER

struct gexec {
	struct event_base *base;
	struct lima *lima;
	char *what;
	const struct gexec_ops *ops;	/* NULL once reported or aborted */
	void *arg;
	const struct gexec_transport *tr;

	/* Its own limactl shell (gexec_start); NULL on a channel. */
	struct proc *proc;		/* NULL once reaped */
	bool proc_exited;		/* no more will come from the helper */
	int proc_status;
	char proc_stderr[PROC_STDERR_TAIL + 1];
	struct bufferevent *in;		/* helper stdin */
	int out_fd;			/* helper stdout */
	struct event *out_ev;
	struct event *linger;
	bool direct;			/* unframed input straight to the command */
	struct evbuffer *held;		/* direct input before the command runs */

	bool in_closed;			/* the owner ended the command's input */
	bool z_sent;
	struct evbuffer *stdin_q;	/* framed input beyond the window */
	size_t unacked;			/* I bytes the helper did not ack */
	/*
	 * Unacked I bytes of input that ended (the helper's stream is over,
	 * or it stopped reading): its acks may still be in inbuf, unparsed
	 * while the owner is paused, and are taken against this.
	 */
	size_t unacked_gone;

	bool out_done;			/* EOF, or drained after exit */
	struct evbuffer *inbuf;
	struct guest_parser parser;
	bool paused;
	bool started;
	int busy;			/* inside gexec_process: defer frees */

	/* On a lane's channel (gchan_exec). */
	struct {
		struct gchan *c;	/* NULL once off it */
		uint32_t id;
		size_t credit;		/* output the guest may still send */
		size_t consumed;	/* output parsed, not yet granted back */
		char lost[320];		/* why the stream ended, if it broke */
		TAILQ_ENTRY(gexec) entry;
	} ch;
};

struct gexec *gexec_new(struct event_base *, struct lima *,
    const struct gexec_spec *, const struct gexec_ops *, void *arg,
    const struct gexec_transport *);
void gexec_free(struct gexec *);
/* The command, its environment and its directory, then R: run it. */
void gexec_send_spec(struct gexec *, const struct gexec_spec *);
/* Delivers what arrived in g->inbuf and checks whether the exec ended. */
void gexec_process(struct gexec *);
/* Delivers every whole frame in g->inbuf, unless the owner pauses. */
void gexec_parse(struct gexec *);
void gexec_fail(struct gexec *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Nothing more comes from or goes to the helper: input queued is lost. */
void gexec_stream_over(struct gexec *);
/* Sends queued input as far as the helper's window allows. */
void gexec_stdin_push(struct gexec *);
void gexec_stdin_drained(struct gexec *);

#endif
