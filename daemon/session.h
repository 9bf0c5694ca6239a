/*
 * A session relays one client connection to one guest exec: it is the
 * lane activity (cancelled if the lane goes), it applies backpressure in
 * both directions (the client's slow reads pause the guest's output; a
 * guest that does not read its stdin pauses the client's input), it enforces
 * the per-call timeout, and it kills the guest command if the client
 * disconnects. exec.c and copy.c supply what differs through hooks.
 */
#ifndef LANED_SESSION_H
#define LANED_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gexec.h"
#include "lane.h"
#include "wire.h"

struct laned;
struct conn;
struct session;

struct session_hooks {
	/* A client frame during the call (ExecInput, DataChunk). */
	void (*input)(struct session *, const AlRequest *);
	/* Guest output (1 stdout, 2 stderr). */
	void (*output)(struct session *, int stream, const uint8_t *, size_t);
	/* The guest command ended; must call session_finish or session_fail. */
	void (*done)(struct session *, const struct gexec_result *);
};

#define SESSION_STDERR_TAIL 2048

struct session {
	struct laned *d;
	struct conn *c;
	struct lane_activity act;
	struct gexec *g;
	struct event *timer;
	const struct session_hooks *hooks;
	const char *what;
	uint64_t timeout_ms;
	bool input_open;	/* the client may still send input frames */
	bool in_paused;		/* client input paused for the guest's sake */
	bool out_paused;	/* guest output paused for the client's sake */
	bool tty;		/* the command has a guest terminal */

	/* For the hooks. */
	uint64_t bytes;
	uint64_t max_bytes;
	int kind;
	char head[32];		/* copy-out: "F<size> <mode>\n" as it arrives */
	size_t head_len;
	char stderr_tail[SESSION_STDERR_TAIL + 1];
	size_t stderr_len;

	/*
	 * The audit trail: audit_kind "exec" (audit holds argv[0]), "copy-in"
	 * or "copy-out" (the guest path); NULL records nothing. Recorded once,
	 * however the call ends.
	 */
	const char *audit_kind;
	uint8_t audit[4100];
	size_t audit_len;
	int64_t exec_id;	/* the exec's registry record (audit_exec_begin) */
	bool audited;
};

/*
 * Starts the guest command (spec->lane is the client's lane reference,
 * resolved here and replaced by the lane's name). On failure the client has been answered and NULL is returned.
 */
/*
 * What the audit trail will say of a call: kind "exec" (data argv[0]),
 * "copy-in" or "copy-out" (data the guest path); data is cut to fit.
 */
struct session_record {
	const char *kind;
	const void *data;
	size_t len;
};
/* Records the end: r for an exec that ran, failure (or NULL) otherwise. */
void session_audit(struct session *, const struct gexec_result *r,
    const char *failure);
struct session *session_start(struct laned *, struct conn *,
    struct gexec_spec *, const struct session_hooks *, uint64_t timeout_ms,
    bool input_open, const struct session_record *);
/* Sends a response; pauses the guest's output if the client lags. */
void session_send(struct session *, const AlResponse *);
/* Forwards client input to the command, pausing the client if needed. */
void session_stdin(struct session *, const void *, size_t);
void session_stdin_close(struct session *);
/* Keeps the last bytes of the command's stderr for error messages. */
void session_stderr_keep(struct session *, const uint8_t *, size_t);
/* Ends the call with a final response, or with a typed error. */
void session_finish(struct session *, const AlResponse *);
void session_fail(struct session *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
