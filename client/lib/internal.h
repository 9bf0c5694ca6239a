/* libagentlane internals: one connection, framing, error helpers. */
#ifndef AL_INTERNAL_H
#define AL_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agentlane.h"
#include "wire.h"

/* Where the daemon is (transport.c). */
#define AL_HOST_URL_MAX 1100
#define AL_SSH_STDERR_TAIL 1024

enum al_host_kind { AL_HOST_UNIX, AL_HOST_SSH };

struct al_host {
	enum al_host_kind kind;
	char path[1030];	/* unix: the socket */
	char user[64];		/* ssh: "" for ssh's own default */
	char host[256];
	uint16_t port;		/* 0: ssh's own default */
};

struct al_client {
	char *socket_path;	/* unix; for ssh the URL */
	char *name;
	char *url;		/* unix:///PATH or ssh://... */
	struct al_host host;
	char *remote_command;	/* ssh: the agent-lanectl on the host */
};

struct al_ssh;

/* One connection: after al_conn_open the hello has been exchanged. */
struct al_conn {
	int fd;
	/*
	 * Over ssh: the child, reaped by al_conn_close, which also makes a
	 * lost connection (AL_CONNECT in err, the call's error) the
	 * UNAVAILABLE of ssh's own words. err is NULL once the connection
	 * outlives its call (an owned lane's).
	 */
	struct al_ssh *ssh;
	struct al_error *err;
	uint32_t max_frame;
	uint8_t *rbuf;		/* partial frame being read (non-blocking use) */
	size_t rlen, rcap;
	uint8_t *wbuf;		/* frames not yet written (non-blocking use) */
	size_t wlen, woff, wcap;
	struct al_daemon_info info;
};

/*
 * Public entry points call their implementation (0 or -1 with err set)
 * through these: err is never NULL inside, and the call returns err's code.
 */
struct al_error *al_error_begin(struct al_error *err, struct al_error *local);
enum al_code al_result(int rc, const struct al_error *err);
/*
 * Copies a caller's option struct, whose first member is its size, into a
 * zeroed current one: fields the caller's (older) header did not have stay
 * zero. -1 (AL_INVALID_ARGUMENT) when size was not set.
 */
int al_opts_copy(void *dst, size_t dstsize, const void *src,
    struct al_error *err);

void al_set_error(struct al_error *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void al_set_errno(struct al_error *, int code, const char *what);
/* Fills err from a Response{error}. */
void al_error_from_response(struct al_error *, const AlResponse *);

/* Connects and says hello, sending `call` (if any) in the same write. */
int al_conn_open(struct al_client *, struct al_conn *, const AlRequest *call,
    struct al_error *);
void al_conn_close(struct al_conn *);
/* Blocking send of one request. */
int al_conn_send(struct al_conn *, const AlRequest *, struct al_error *);
/* Blocking receive of one response (caller frees with al_response_free). */
AlResponse *al_conn_recv(struct al_conn *, struct al_error *);
void al_response_free(AlResponse *);

/* Non-blocking mode (exec): queue frames, flush when writable. */
int al_conn_queue(struct al_conn *, const AlRequest *, struct al_error *);
/* Writes what it can; -1 on a hard error. */
int al_conn_flush(struct al_conn *, struct al_error *);
/* Reads what is available; returns 1 with *out when a frame is complete,
 * 0 when more is needed, -1 on EOF or error. */
int al_conn_read_frame(struct al_conn *, AlResponse **out, struct al_error *);
bool al_conn_want_write(const struct al_conn *);

/* Lane/label conversion from the protocol. */
void al_lane_from_proto(struct al_lane *, const Agentlane__V1__Lane *);
void al_lane_net_from_proto(struct al_lane_net *, const Agentlane__V1__Lane *);
/*
 * Up to max of the n strings src[] into dst (cap bytes with its NUL),
 * '\n'-separated, whole ones only: an empty one, one with a '\n' or one
 * that does not fit is left out. Returns how many went in.
 */
size_t al_join_lines(char *dst, size_t cap, char *const *src, size_t n,
    size_t max);

/*
 * For EINTR handling: true once al_interrupt() was called. A loop that sees
 * EINTR retries unless this says to stop; the error it then sets becomes
 * AL_CANCELLED (see al_set_error).
 */
bool al_interrupted(void);

/*
 * Returns fd moved above 2 (closing the original) with FD_CLOEXEC set, or
 * -1 with errno (fd closed).
 */
int al_fd_above_stdio(int fd);

/* Largest data payload per frame under the cap the daemon announced. */
size_t al_conn_chunk(const struct al_conn *);

/* Whole-buffer write to a file descriptor, retrying on EINTR. */
int al_write_all(int fd, const void *buf, size_t len);

/*
 * transport.c. A host URL, strictly: unix:///PATH, or
 * ssh://[USER@]HOST[:PORT] with nothing ssh could read as an option. 0, or
 * -1 (AL_INVALID_ARGUMENT).
 */
int al_host_parse(const char *url, struct al_host *, struct al_error *);
/* The URL of a parsed host, as it is shown. */
void al_host_url(const struct al_host *, char *buf, size_t len);
/* A remote agent-lanectl path: [~/]{A-Za-z0-9._+/-}, not "-...". */
bool al_remote_command_valid(const char *);
/*
 * Starts `ssh ... HOST REMOTE system dial-stdio`: returns our end of its
 * standard input and output (close-on-exec, above 2), or -1 with err.
 */
int al_ssh_connect(const struct al_host *, const char *remote,
    struct al_ssh **, struct al_error *);
/* After the connection's descriptor is closed: ssh is reaped (bounded). */
void al_ssh_finish(struct al_ssh *);
/* err's AL_CONNECT becomes AL_UNAVAILABLE with ssh's last words. */
void al_ssh_explain(struct al_ssh *, struct al_error *);
void al_ssh_free(struct al_ssh *);

/* libcompat.c: the platform differences of the above. */
#include <spawn.h>
int al_compat_socketpair_cloexec(int fds[2]);
int al_compat_pipe_cloexec(int fds[2]);
/* The child gets 0-2 only, whatever else the program has open. */
int al_compat_spawn_only_stdio(posix_spawn_file_actions_t *, short *flags);

#endif
