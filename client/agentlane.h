/*
 * libagentlane: the C client of agent-laned.
 *
 * Every call opens its own connection to the daemon's socket, says hello,
 * makes one request and closes; nothing is shared between calls, so the
 * functions are safe to use from several threads with separate clients.
 * Every function returns 0 on success or -1 with *err filled (err may be
 * NULL). The library never changes signal dispositions; writes to the
 * socket cannot raise SIGPIPE.
 */
#ifndef AGENTLANE_H
#define AGENTLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AL_PROTOCOL_VERSION 1

/* The daemon's error codes (agentlane.v1.ErrorCode), then local ones. */
enum al_code {
	AL_OK = 0,
	AL_INVALID_ARGUMENT = 1,
	AL_NOT_FOUND = 2,
	AL_RESOURCE_EXHAUSTED = 3,
	AL_FAILED_PRECONDITION = 4,
	AL_TOO_LARGE = 5,
	AL_DEADLINE_EXCEEDED = 6,
	AL_PERMISSION_DENIED = 7,
	AL_UNAVAILABLE = 8,
	AL_INTERNAL = 9,
	AL_VERSION_MISMATCH = 10,
	AL_LIMA_FAILED = 11,
	AL_CANCELLED = 12,

	AL_CONNECT = 100,	/* the daemon's socket could not be reached */
	AL_PROTOCOL = 101,	/* the daemon's answer made no sense */
	AL_IO = 102,		/* a local file operation failed */
	AL_UNSAFE = 103,	/* a copied-out archive tried to escape or was hostile */
};

struct al_error {
	int code;
	int os_errno;		/* errno behind AL_IO and AL_CONNECT, else 0 */
	char message[512];
};

/* "NOT_FOUND", "CONNECT", ... */
const char *al_code_name(int code);

/*
 * Asks every call in progress to stop: async-signal-safe, meant for a
 * SIGINT/SIGTERM handler installed without SA_RESTART. The interrupted call
 * cleans up as on any failure (a copy-out removes its temporary file, an
 * exec's command is killed) and fails with AL_CANCELLED. Process-wide.
 */
void al_interrupt(void);

enum al_lane_state {
	AL_LANE_CREATING = 1,
	AL_LANE_READY = 2,
	AL_LANE_DESTROYING = 3,
	AL_LANE_DESTROYED = 4,
	AL_LANE_FAILED = 5,
};

/* "creating", "ready", "destroying", "destroyed", "failed" */
const char *al_state_name(int state);

#define AL_NAME_MAX 24
#define AL_LABELS_MAX 16

struct al_label {
	char key[64];
	char value[256];
};

struct al_lane {
	char name[AL_NAME_MAX];
	int state;
	uint32_t cpus;
	uint32_t memory_mib;
	uint32_t disk_gib;
	int64_t created_at_ms;	/* Unix epoch milliseconds */
	int64_t deadline_ms;
	int64_t last_activity_ms;
	int64_t ended_at_ms;	/* 0 while live */
	uint64_t idle_timeout_s;
	char workspace[1024];
	char error[512];
	size_t nlabels;
	struct al_label labels[AL_LABELS_MAX];
};

/* The daemon's version and caps, from its hello. */
struct al_daemon_info {
	uint32_t protocol_version;
	char version[64];
	uint32_t max_frame_bytes;
	uint32_t max_lanes;
	uint32_t default_cpus, max_cpus;
	uint32_t default_memory_mib, max_memory_mib;
	uint32_t default_disk_gib, max_disk_gib;
	uint64_t default_lifetime_s, max_lifetime_s;
	uint64_t default_idle_timeout_s;
	uint64_t max_exec_timeout_s;
	uint64_t max_copy_out_bytes;
	uint32_t pid;			/* the daemon's process id */
	int64_t started_at_ms;		/* Unix epoch milliseconds */
	char state_dir[1024];
};

struct al_client;

/*
 * socket_path NULL: $AGENT_LANE_SOCKET, else ~/.agent-lane/run/agent-laned.sock.
 * name appears in the daemon's logs ("agent-lanectl/0.1.0").
 */
struct al_client *al_client_new(const char *socket_path, const char *name);
void al_client_free(struct al_client *);
const char *al_client_socket(const struct al_client *);

int al_hello(struct al_client *, struct al_daemon_info *, struct al_error *);

struct al_create_opts {
	uint32_t cpus;		/* 0: the daemon's default */
	uint32_t memory_mib;
	uint32_t disk_gib;
	uint64_t timeout_s;	/* hard lifetime */
	uint64_t idle_timeout_s;
	const struct al_label *labels;
	size_t nlabels;
	/* Called as the VM boots ("registered", "creating", "starting", ...). */
	void (*progress)(const char *phase, const char *message, void *arg);
	void *arg;
	/*
	 * false: if this call ends before the lane is ready (the caller was
	 * interrupted, or died), the daemon destroys the lane.
	 */
	bool detach;
};

int al_create(struct al_client *, const struct al_create_opts *,
    struct al_lane *, struct al_error *);
int al_get(struct al_client *, const char *name, struct al_lane *,
    struct al_error *);
/* *lanes is allocated; free() it. all: include ended lanes. */
int al_list(struct al_client *, bool all, struct al_lane **lanes, size_t *n,
    struct al_error *);
/* Waits until the VM is deleted; the final lane is returned. */
int al_destroy(struct al_client *, const char *name, struct al_lane *,
    struct al_error *);
int al_extend(struct al_client *, const char *name, uint64_t by_s,
    struct al_lane *, bool *capped, struct al_error *);

struct al_event {
	int64_t time_ms;
	char lane[AL_NAME_MAX];
	char event[32];
	char detail[512];
};

/* *events is allocated; free() it. */
int al_events(struct al_client *, const char *name, struct al_event **events,
    size_t *n, struct al_error *);

struct al_reap_report {
	char (*orphans)[AL_NAME_MAX];
	size_t norphans;
	char (*deleted_orphans)[AL_NAME_MAX];
	size_t ndeleted_orphans;
	char (*destroyed)[AL_NAME_MAX];
	size_t ndestroyed;
	char (*pending)[AL_NAME_MAX];
	size_t npending;
};

int al_reap(struct al_client *, bool delete_orphans, struct al_reap_report *,
    struct al_error *);
void al_reap_report_free(struct al_reap_report *);

struct al_exec_opts {
	const char *const *argv;	/* NULL-terminated; or: */
	const char *shell;		/* run as /bin/sh -c SHELL */
	size_t shell_len;		/* 0: strlen(shell) */
	const char *workdir;		/* NULL: the lane's workspace */
	const char *const *env;		/* NULL-terminated "NAME=VALUE" */
	int stdin_fd;			/* -1: the command gets no input */
	int stdout_fd;			/* where the command's output goes */
	int stderr_fd;
	uint64_t timeout_ms;		/* 0: none */
	/*
	 * A pseudo-terminal in the guest: the command's stdin, stdout and
	 * stderr are its terminal and all output goes to stdout_fd. Its
	 * size is tty_fd's (TIOCGWINSZ; -1 or not a terminal: 24x80), sent
	 * again whenever winch_fd (-1: never) becomes readable; the library
	 * drains winch_fd, which the caller's SIGWINCH handler writes to.
	 * Putting the caller's terminal in raw mode is the caller's job.
	 */
	bool tty;
	int tty_fd;
	int winch_fd;
};

struct al_exec_result {
	bool signaled;
	int code;		/* exit status when !signaled */
	int signal;		/* signal number when signaled */
};

/*
 * Runs a command in a lane, relaying stdin_fd to it and its output to
 * stdout_fd/stderr_fd as it is produced (blocking writes: a slow reader
 * slows the command, memory stays bounded). A write error on stdout_fd or
 * stderr_fd (EPIPE) ends the call and the command is killed.
 */
int al_exec(struct al_client *, const char *lane, const struct al_exec_opts *,
    struct al_exec_result *, struct al_error *);

/* Called with the bytes sent or received so far. */
typedef void (*al_progress_fn)(uint64_t bytes, void *arg);

/*
 * Copies a host file or directory into the guest: a file to exactly
 * guest_path, a directory's contents into guest_path (created with its
 * parents); a relative guest_path is relative to the lane's workspace.
 * Modes and symbolic links inside the tree are kept; sockets, FIFOs and
 * devices are refused.
 */
int al_copy_in(struct al_client *, const char *lane, const char *host_path,
    const char *guest_path, al_progress_fn, void *arg, uint64_t *bytes,
    struct al_error *);

enum al_copy_kind {
	AL_COPY_FILE = 1,
	AL_COPY_DIRECTORY = 2,
};

struct al_copy_out_opts {
	uint64_t max_bytes;	/* 0: the daemon's bound */
	uint64_t max_entries;	/* directories; 0: 100000 */
	al_progress_fn progress;
	void *arg;
};

/*
 * Copies a guest file or directory to host_path (inside it, if host_path is
 * an existing directory). A file goes through an O_EXCL temporary file in
 * the destination directory, fsynced and renamed; a directory is extracted
 * with libarchive's secure flags into a fresh temporary directory that is
 * renamed into place. On any failure the destination is untouched and no
 * temporary file is left.
 */
int al_copy_out(struct al_client *, const char *lane, const char *guest_path,
    const char *host_path, const struct al_copy_out_opts *, uint64_t *bytes,
    int *kind, struct al_error *);

#ifdef __cplusplus
}
#endif

#endif
