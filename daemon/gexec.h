/*
 * Guest exec: runs one command inside a lane through
 * `limactl shell NAME -- perl -e <guest helper>` of its own (gexec_start),
 * or on the lane's exec channel (gchan.h), and relays it as events.
 *
 * The command line on the host carries only the helper program, never the
 * command's arguments or environment: those go to the helper over the
 * child's stdin (docs/protocol.md, "Guest helper"), so they stay off the
 * host's process table. Output is read only while the owner is not paused,
 * which is how backpressure reaches the guest. Closing the channel (abort,
 * daemon crash) makes the helper kill the command's whole process group.
 */
#ifndef LANED_GEXEC_H
#define LANED_GEXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct gexec;
struct lima;
struct proc_list;

struct gexec_bytes {
	const uint8_t *data;
	size_t len;
};

struct gexec_spec {
	const char *lane;
	const struct gexec_bytes *argv;
	size_t argc;
	const char *cwd;		/* "" or NULL: the guest user's home */
	const struct gexec_bytes *env;	/* "NAME=VALUE" */
	size_t nenv;
	bool stdin;			/* false: the command's stdin is closed */
	/*
	 * The command reads the channel itself, unframed (copy-in: no relay
	 * in the guest). Input is held until the helper has started it and
	 * ends when gexec_stdin_close() has flushed it.
	 */
	bool stdin_direct;
	/*
	 * A pseudo-terminal in the guest (tty_rows/tty_cols its size): the
	 * command's stdin, stdout and stderr are the terminal, so its output
	 * all arrives as stream 1. Not with stdin_direct.
	 */
	bool tty;
	uint16_t tty_rows, tty_cols;
	/* On the lane's exec channel (gchan.h); not with stdin_direct. */
	bool channel;
	const char *what;		/* for logs; never includes arguments */
};

enum gexec_end {
	GEXEC_EXITED,
	GEXEC_SIGNALED,
	GEXEC_FAILED,
};

struct gexec_result {
	enum gexec_end end;
	int code;		/* GEXEC_EXITED */
	int sig;		/* GEXEC_SIGNALED */
	int error;		/* GEXEC_FAILED: agentlane.v1.ErrorCode */
	char message[512];
};

struct gexec_ops {
	/* stream: 1 stdout, 2 stderr. The owner may pause from here. */
	void (*output)(struct gexec *, int stream, const uint8_t *, size_t,
	    void *arg);
	/* Once. The handle is invalid for the owner after it returns. */
	void (*done)(struct gexec *, const struct gexec_result *, void *arg);
	/* Queued stdin fell below the low-water mark. */
	void (*stdin_drained)(struct gexec *, void *arg);
};

#define GEXEC_STDIN_HIGH (1024u * 1024u)
#define GEXEC_STDIN_LOW (256u * 1024u)
/*
 * Stdin bytes sent to the helper and not yet acknowledged (`K` frames): the
 * helper's buffer never holds more, so it can always keep reading its
 * channel, and so always sees it close, even while the command does not
 * read its stdin.
 */
#define GEXEC_STDIN_WINDOW (1024u * 1024u)

/* Children go on procs (reaped by proc_reap); events run on base. */
struct gexec *gexec_start(struct event_base *, struct proc_list *,
    struct lima *, const struct gexec_spec *, const struct gexec_ops *,
    void *arg, char *err, size_t errlen);

/* Queues command input; -1 once the command's stdin is gone. */
int gexec_stdin(struct gexec *, const void *, size_t);
void gexec_stdin_close(struct gexec *);
size_t gexec_stdin_pending(const struct gexec *);
/* A tty command's terminal was resized (the guest sends it SIGWINCH). */
void gexec_resize(struct gexec *, uint16_t rows, uint16_t cols);
void gexec_pause(struct gexec *, bool);
/* Kills the command (its whole guest process group); no done callback. */
void gexec_abort(struct gexec *);
/* "exit 3" or "signal 9" for an exited or signalled result. */
const char *gexec_status(const struct gexec_result *, char *buf, size_t len);

/* The helper program (generated from daemon/guest-helper.pl). */
extern const char guest_helper_source[];

#endif
