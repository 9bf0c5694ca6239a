/*
 * libagentlane: the C client of agent-laned.
 *
 * Every call opens its own connection to the daemon's socket, says hello,
 * makes one request and closes; nothing is shared between calls, so the
 * functions are safe to use from several threads with separate clients.
 * Every call returns an enum al_code: AL_OK (0) on success, otherwise the
 * same code as err->code with err->message filled (err may be NULL). The
 * library never changes signal dispositions; writes to the socket cannot
 * raise SIGPIPE. It never calls setlocale(3) and does not depend on the
 * locale: file names are copied as bytes.
 *
 * Descriptors 0, 1 and 2: a program that may run with one of them closed
 * should open /dev/null on the missing ones at start-up (agent-lanectl
 * does), or the next file it opens becomes its "stderr". The library
 * itself never leaves its socket or files on 0-2: it moves them above 2.
 *
 * ABI and soname. Only the functions declared here are exported (the
 * protobuf code inside the library is hidden). The shared library is
 * libagentlane.so.2 (on macOS libagentlane.dylib, compatibility version 3;
 * 2 since struct al_image grew the origin of committed images);
 * the number after ".so." (and the dylib's compatibility version) is bumped
 * on any incompatible change: a
 * function removed or its signature changed, an enum value renumbered, or
 * an output struct (al_lane, al_lane_net, al_event, al_daemon_info,
 * al_reap_report, al_exec_result, al_error, al_image) changing size or
 * layout. Option structs grow
 * without a bump: they begin with a size field that their AL_*_INIT macro
 * fills, new fields are only appended, and the library treats fields
 * beyond the caller's size as zero. Always initialize them with the macro.
 * The newer output structs grow the same way: al_info begins with its
 * size (AL_INFO_INIT) and the library fills no more than that, and
 * al_lane_stats is only ever handed out by pointer, so fields appended
 * to either need no bump.
 * AL_VERSION_NUM and al_version() tell the header and the library apart.
 */
#ifndef AGENTLANE_H
#define AGENTLANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The exported API; everything else in the library is hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define AL_API __attribute__((visibility("default")))
#else
#define AL_API
#endif

/* 0xMMmmpp: major, minor, patch. The Makefile reads AL_VERSION_STRING. */
#define AL_VERSION_MAJOR 0
#define AL_VERSION_MINOR 1
#define AL_VERSION_PATCH 0
#define AL_VERSION_STRING "0.1.0"
#define AL_VERSION_NUM ((AL_VERSION_MAJOR << 16) | (AL_VERSION_MINOR << 8) | \
    AL_VERSION_PATCH)

/* The library's AL_VERSION_NUM, which may be newer than the header's. */
AL_API unsigned al_version(void);
/* "0.1.0" */
AL_API const char *al_version_string(void);

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
	AL_AMBIGUOUS = 30,	/* a name prefix matched several lanes */
	AL_ALREADY_EXISTS = 31,	/* create: a live lane has that alias */

	AL_CONNECT = 100,	/* the daemon's socket could not be reached */
	AL_PROTOCOL = 101,	/* the daemon's answer made no sense */
	AL_IO = 102,		/* a local file operation failed */
	AL_UNSAFE = 103,	/* a copied-out archive tried to escape or was hostile */
};

/* Most lanes al_list and events al_events collect over all pages. */
#define AL_LIST_MAX 10000
#define AL_EVENTS_MAX 100000

struct al_error {
	int code;
	int os_errno;		/* errno behind AL_IO and AL_CONNECT, else 0 */
	char message[512];
};

/* "NOT_FOUND", "CONNECT", ... */
AL_API const char *al_code_name(int code);

/*
 * Asks every call in progress to stop: async-signal-safe, meant for a
 * SIGINT/SIGTERM handler installed without SA_RESTART. The interrupted call
 * cleans up as on any failure (a copy-out removes its temporary file, an
 * exec's command is killed) and fails with AL_CANCELLED. Process-wide.
 */
AL_API void al_interrupt(void);

enum al_lane_state {
	AL_LANE_CREATING = 1,
	AL_LANE_READY = 2,
	AL_LANE_DESTROYING = 3,
	AL_LANE_DESTROYED = 4,
	AL_LANE_FAILED = 5,
	AL_LANE_POOLED = 6,	/* warm pool, not yet anyone's (ls --all) */
	/*
	 * A warm-pool lane whose VM still boots (ls --all). Not a state of
	 * the protocol: a POOLED lane the daemon marks booting.
	 */
	AL_LANE_BOOTING = 7,
};

/* "creating", "ready", "destroying", "destroyed", "failed", "pooled",
 * "booting" */
AL_API const char *al_state_name(int state);

#define AL_NAME_MAX 24
#define AL_ALIAS_MAX 64		/* a lane's alias and its NUL */
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
	char alias[AL_ALIAS_MAX];	/* create --name; "" for none */
	bool owned;		/* destroyed when its creator's call ends */
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
 * socket_path NULL or "": $AGENT_LANE_SOCKET, else
 * $HOME/.agent-lane/run/agent-laned.sock (the daemon's default too).
 * name appears in the daemon's logs ("agent-lanectl/0.1.0").
 */
AL_API struct al_client *al_client_new(const char *socket_path,
    const char *name);
AL_API void al_client_free(struct al_client *);
AL_API const char *al_client_socket(const struct al_client *);

AL_API enum al_code al_hello(struct al_client *, struct al_daemon_info *,
    struct al_error *);

#define AL_SECRETS_MAX 16		/* secrets of a lane */
#define AL_SECRET_NAME_MAX 64		/* a secret's name and its NUL */
#define AL_SECRET_VALUE_MAX 8192	/* bytes of a secret's value */
#define AL_SECRET_HOSTS_MAX 16		/* hosts of one secret */
#define AL_SECRET_HOSTS_TEXT_MAX 1024	/* their text, '\n' separators in */
#define AL_SECRET_HEADERS_MAX 8		/* a secret's own headers */
#define AL_SECRET_HEADER_MAX 64		/* bytes of one header name */
/* Their text, '\n' separators in (al_lane_secret_headers). */
#define AL_SECRET_HEADERS_TEXT_MAX (AL_SECRET_HEADERS_MAX * \
	(AL_SECRET_HEADER_MAX + 1))

/* A lane secret as al_create_opts carries it. */
struct al_secret {
	const char *name;	/* the guest variable, [A-Za-z_][A-Za-z0-9_]{0,62} */
	/*
	 * The real value: 1-AL_SECRET_VALUE_MAX bytes of printable ASCII
	 * without a space at either end (it goes into HTTP headers).
	 */
	const char *value;
	/*
	 * Host names or "*.example.org" patterns its value may be sent to
	 * (never an address, a loopback name or a wildcard over a public
	 * suffix: the daemon answers AL_INVALID_ARGUMENT); nhosts 0: those
	 * agent-laned.conf's `secret` line gives the name.
	 */
	const char *const *hosts;
	size_t nhosts;
};

/*
 * A header a secret's value may go in besides the default credential
 * headers (Authorization, x-api-key, api-key, x-goog-api-key,
 * private-token, x-auth-token), as al_create_opts.secret_headers carries
 * it: secret names one of al_create_opts.secrets, header is an HTTP token
 * of 1-AL_SECRET_HEADER_MAX bytes (any case) that is not Host, Cookie,
 * Set-Cookie, or a header the proxy frames or drops (Connection,
 * Content-Length, Transfer-Encoding, TE, Trailer, Upgrade, Expect,
 * Keep-Alive, Proxy-*). At most AL_SECRET_HEADERS_MAX a secret.
 */
struct al_secret_header {
	const char *secret;
	const char *header;
};

/*
 * A daemon on this host or another one. host is a URL:
 *   unix:///PATH              the socket at PATH
 *   ssh://[USER@]HOST[:PORT]  agent-laned of that user on HOST, reached by
 *                             running the user's own OpenSSH:
 *                             ssh -o BatchMode=yes -T [-p PORT] [-l USER]
 *                               -- HOST REMOTE system dial-stdio
 * with the user's ssh configuration, agent and known hosts (an unknown
 * host key fails; nothing is ever accepted for the user). ssh inherits
 * only the variables of the caller's environment that it needs (user,
 * home, PATH, SHELL, its agent and helpers, the locale; never a secret's,
 * which a SendEnv rule would forward), and those AGENT_LANE_SSH_ENV
 * names, separated by spaces or commas. Every call then
 * runs one ssh, as it opens one connection; an OpenSSH ControlMaster in
 * the ssh configuration makes that cheap. ssh that cannot connect, fails
 * to authenticate or dies during a call: AL_UNAVAILABLE, with what ssh
 * said. A remote end of another protocol version: AL_FAILED_PRECONDITION
 * naming both.
 */
struct al_client_opts {
	size_t size;		/* sizeof(struct al_client_opts): use the macro */
	/* NULL or "": $AGENT_LANE_HOST, else as al_client_new(NULL, name). */
	const char *host;
	const char *name;	/* in the daemon's logs ("myprog/1.0") */
	/*
	 * ssh: the agent-lanectl to run on HOST (NULL: "agent-lanectl", found
	 * on the remote user's non-login PATH, which may lack a Homebrew
	 * prefix such as /opt/homebrew/bin). [A-Za-z0-9._+/-], or "~/...".
	 */
	const char *remote_command;
};
#define AL_CLIENT_OPTS_INIT { .size = sizeof(struct al_client_opts) }

/*
 * NULL with err (AL_INVALID_ARGUMENT: a malformed URL, in opts or in
 * $AGENT_LANE_HOST) on failure. Nothing is connected until the first call.
 */
AL_API struct al_client *al_client_open(const struct al_client_opts *,
    struct al_error *);
/* The daemon's URL: "unix:///PATH" or "ssh://..."; al_client_socket gives
 * the path, or for ssh the URL. */
AL_API const char *al_client_host(const struct al_client *);

/* What agent-lanectl info shows: the daemon's state (al_info). */
struct al_info {
	size_t size;		/* sizeof(struct al_info): use AL_INFO_INIT */
	struct al_daemon_info daemon;	/* version, caps, pid, start, state dir */
	uint64_t uptime_ms;
	char socket_path[1024];		/* the daemon's own, on its host */
	char hostname[256];
	char os[160];			/* "Linux 6.1.0", "Darwin 24.1.0" */
	char arch[64];
	char limactl[1024];		/* the program it runs */
	char limactl_version[64];	/* "" while not known: see limactl_error */
	char limactl_driver[32];	/* the VM type of lanes: "qemu", "vz" */
	char limactl_error[256];
	bool network_enforceable;	/* lane network policies can hold */
	char network_note[512];		/* why not, or how */
	char network_default[16];	/* internet, none, allow */
	uint32_t max_connections, max_execs_per_lane, max_images, max_env_bytes;
	uint32_t pool_size, pool_shapes, pool_ready, pool_booting;
	char pool_state[16];		/* off, full, filling, backing off */
	char pool_note[128];
	uint32_t lanes_live, lanes_ready, images;
	/* Allocated on the daemon's host: its lanes' and images' VMs, and
	 * what is free where they are. */
	uint64_t lanes_disk_bytes, images_disk_bytes, disk_free_bytes;
	uint32_t connections;		/* open at the daemon, this one too */
};
#define AL_INFO_INIT { .size = sizeof(struct al_info) }

AL_API enum al_code al_info(struct al_client *, struct al_info *,
    struct al_error *);

/*
 * A lane's resource use as its guest reports it (al_stats): CPU (100 per
 * busy CPU, between two samples), memory used of the guest's total and
 * of the lane's limit, the workspace's file system, processes, and how
 * long the guest's init has run. Under the limactl simulator the guest
 * shares the host's kernel: CPU, memory and disk are then the host's,
 * processes and uptime the sandbox's (agent-lanectl(1), "stats").
 */
struct al_lane_stats {
	char name[AL_NAME_MAX];
	char alias[AL_ALIAS_MAX];
	int state;			/* enum al_lane_state */
	int error_code;			/* 0: the figures hold; else why not */
	char error[256];
	uint32_t cpus;
	bool cpu_known;			/* false in a lane's first sample */
	double cpu_percent;
	uint64_t memory_used_bytes, memory_total_bytes, memory_limit_bytes;
	uint64_t disk_used_bytes, disk_total_bytes, disk_limit_bytes;
	uint32_t processes;
	uint64_t uptime_ms;
	/*
	 * false: the guest reported a figure past what its lane physically
	 * has (more CPUs than it has, memory or disk past its limits, more
	 * processes than Linux can have), which the daemon refused; those
	 * figures are then 0. cpu_known is false when cpus_known is.
	 */
	bool cpus_known;
	bool memory_known;		/* memory_used_bytes, memory_total_bytes */
	bool disk_known;		/* disk_used_bytes, disk_total_bytes */
	bool processes_known;
};

#define AL_STATS_LANES_MAX 256

struct al_stats_opts {
	size_t size;		/* sizeof(struct al_stats_opts) */
	const char *const *lanes;	/* nlanes references; none: every live lane */
	size_t nlanes;
	/* false: one sample, about interval_ms after the call; true: one
	 * every interval_ms until sample returns false or al_interrupt(). */
	bool stream;
	uint64_t interval_ms;	/* 0: 1000; 200 to 60000 */
	/* Each sample: n lanes (by pointer), taken at time_ms. false: stop. */
	bool (*sample)(const struct al_lane_stats *const *lanes, size_t n,
	    int64_t time_ms, void *arg);
	void *arg;
};
#define AL_STATS_OPTS_INIT { .size = sizeof(struct al_stats_opts) }

/* AL_OK once the sample (or the stream, stopped by sample) is done. */
AL_API enum al_code al_stats(struct al_client *, const struct al_stats_opts *,
    struct al_error *);

struct al_create_opts {
	size_t size;		/* sizeof(struct al_create_opts): use the macro */
	uint32_t cpus;		/* 0: the daemon's default */
	uint32_t memory_mib;
	uint32_t disk_gib;
	uint64_t timeout_s;	/* hard lifetime */
	uint64_t idle_timeout_s;
	const struct al_label *labels;
	size_t nlabels;
	const char *image;	/* NULL or "": a fresh VM; else clone this image */
	/* Called as the VM boots ("registered", "creating", "starting", ...). */
	void (*progress)(const char *phase, const char *message, void *arg);
	void *arg;
	/*
	 * false: if this call ends before the lane is ready (the caller was
	 * interrupted, or died), the daemon destroys the lane.
	 */
	bool detach;
	/*
	 * The network policy (agent-lanectl(1), "Network policy"). network
	 * NULL or "": the daemon's default (`network` key); else "internet",
	 * "none" or "allow". allow: nallow host names or "*.example.org"
	 * patterns an allow lane reaches through its proxy (none: the
	 * daemon's `allow` key). sudo: keep passwordless guest root, which
	 * makes the policy advisory.
	 */
	const char *network;
	const char *const *allow;
	size_t nallow;
	bool sudo;
	/*
	 * alias: NULL or "": none. A second name for the lane, unique among live
	 * lanes: [a-z0-9][a-z0-9._-]{0,62}, not beginning "al-". Taken:
	 * AL_ALREADY_EXISTS.
	 */
	const char *alias;
	/*
	 * Credentials the lane uses without holding them (agent-lanectl(1),
	 * "Secrets"): every exec in the lane sees NAME set to a placeholder,
	 * and the lane's proxy puts the value in its place only in requests
	 * to the secret's hosts. The values go to the daemon over its socket
	 * and stay in its memory for the lane's life. A daemon whose
	 * agent-laned.conf names secrets refuses a create without them
	 * (AL_FAILED_PRECONDITION).
	 */
	const struct al_secret *secrets;
	size_t nsecrets;
	/*
	 * Headers each secret's value may go in besides the default
	 * credential headers (struct al_secret_header). A secret that none
	 * names takes those agent-laned.conf's `secret_header` gives it.
	 */
	const struct al_secret_header *secret_headers;
	size_t nsecret_headers;
};
#define AL_CREATE_OPTS_INIT { .size = sizeof(struct al_create_opts) }

/* opts may be NULL (the daemon's defaults). */
AL_API enum al_code al_create(struct al_client *, const struct al_create_opts *,
    struct al_lane *, struct al_error *);

/*
 * The connection an owned lane lives as long as (al_create_owned). Its
 * descriptor is close-on-exec, so a child process does not keep the lane.
 */
struct al_owner;

/*
 * As al_create, but the lane belongs to the returned owner: the daemon
 * destroys it as soon as the owner is closed, by al_owner_close or because
 * this process died. For run-and-discard jobs: nothing is left behind
 * however the caller ends. opts->detach must be false.
 */
AL_API enum al_code al_create_owned(struct al_client *,
    const struct al_create_opts *, struct al_lane *, struct al_owner **,
    struct al_error *);
/* Lets go of the lane: the daemon destroys it (NULL: nothing). */
AL_API void al_owner_close(struct al_owner *);

/*
 * Wherever a lane is named (al_get, al_destroy, al_extend, al_events,
 * al_exec, al_copy_in, al_copy_out), its al- name, its alias or a prefix
 * of its name that only one lane has will do; the daemon resolves it. An
 * ambiguous prefix fails with AL_AMBIGUOUS, listing the candidates.
 */
AL_API enum al_code al_get(struct al_client *, const char *name,
    struct al_lane *, struct al_error *);
/*
 * *lanes is allocated (free it with al_lanes_free). all: include ended
 * lanes. The daemon may answer in pages; they are collected, each on its
 * own connection, up to AL_LIST_MAX lanes (then AL_TOO_LARGE, never a
 * silent cut).
 */
AL_API enum al_code al_list(struct al_client *, bool all,
    struct al_lane **lanes, size_t *n, struct al_error *);
AL_API void al_lanes_free(struct al_lane *lanes);

#define AL_ALLOW_MAX 32		/* allow patterns of a lane */
#define AL_ALLOW_TEXT_MAX 2048	/* their text, '\n' separators included */

/* A lane's network policy, as al_get_net and al_list_net report it. */
struct al_lane_net {
	char name[AL_NAME_MAX];
	char network[16];	/* internet, none, allow; "" from before policies */
	size_t nallow;
	char allow[AL_ALLOW_TEXT_MAX + 1];	/* nallow patterns, '\n'-separated */
	bool sudo;		/* guest root kept */
	/*
	 * "enforced", "advisory" (sudo), "unenforced" (the limactl driver
	 * cannot load rules: note says why), "" while the lane boots.
	 */
	char policy[16];
	char note[256];
	uint16_t proxy_port;	/* allow: its proxy, host 127.0.0.1 */
};

/* al_get with the lane's network policy; lane or net may be NULL. */
AL_API enum al_code al_get_net(struct al_client *, const char *name,
    struct al_lane *, struct al_lane_net *, struct al_error *);
/*
 * al_list with each lane's policy: nets[i] is lanes[i]'s. Free both with
 * al_lanes_free and al_lane_nets_free.
 */
AL_API enum al_code al_list_net(struct al_client *, bool all,
    struct al_lane **lanes, struct al_lane_net **nets, size_t *n,
    struct al_error *);
AL_API void al_lane_nets_free(struct al_lane_net *nets);
/* A lane secret as the daemon reports it: never its value. */
struct al_lane_secret {
	char name[AL_SECRET_NAME_MAX];
	size_t nhosts;
	char hosts[AL_SECRET_HOSTS_TEXT_MAX + 1];	/* '\n'-separated */
};

/* One lane's secrets (v: n of them, allocated; NULL when n is 0). */
struct al_lane_secrets {
	char name[AL_NAME_MAX];		/* the lane */
	size_t n;
	struct al_lane_secret *v;
};

/*
 * al_get_net with the lane's secrets, into *secrets (allocated; free with
 * al_lane_secrets_free(*secrets, 1)). lane and net may be NULL.
 */
AL_API enum al_code al_get_secrets(struct al_client *, const char *name,
    struct al_lane *, struct al_lane_net *, struct al_lane_secrets **secrets,
    struct al_error *);
/*
 * al_list_net with each lane's secrets: secrets[i] is lanes[i]'s. Free
 * with al_lanes_free, al_lane_nets_free and al_lane_secrets_free(secrets,
 * n); nets may be NULL.
 */
AL_API enum al_code al_list_secrets(struct al_client *, bool all,
    struct al_lane **lanes, struct al_lane_net **nets,
    struct al_lane_secrets **secrets, size_t *n, struct al_error *);
AL_API void al_lane_secrets_free(struct al_lane_secrets *, size_t n);
/*
 * The headers secret i of s (as al_get_secrets or al_list_secrets gave
 * it) may go in besides the default credential headers: lower case,
 * '\n'-separated, "" when none (at most AL_SECRET_HEADERS_TEXT_MAX bytes);
 * their count into *nheaders unless it is NULL. NULL when i is not below
 * s->n. Kept beside s->v, so that struct al_lane_secret keeps its size; it
 * lives as long as s.
 */
AL_API const char *al_lane_secret_headers(const struct al_lane_secrets *s,
    size_t i, size_t *nheaders);

/* Waits until the VM is deleted; the final lane is returned. */
AL_API enum al_code al_destroy(struct al_client *, const char *name,
    struct al_lane *, struct al_error *);
AL_API enum al_code al_extend(struct al_client *, const char *name,
    uint64_t by_s, struct al_lane *, bool *capped, struct al_error *);

struct al_event {
	int64_t time_ms;
	char lane[AL_NAME_MAX];
	char event[32];
	char detail[512];
};

/*
 * *events is allocated (free it with al_events_free). Paged like al_list,
 * up to AL_EVENTS_MAX events.
 */
AL_API enum al_code al_events(struct al_client *, const char *name,
    struct al_event **events, size_t *n, struct al_error *);
AL_API void al_events_free(struct al_event *events);

/*
 * Logs: the daemon's own (lane NULL or ""), or one lane's Lima logs (boot
 * console and hostagent: serial.log, ha.stderr.log, ...). A lane's logs
 * exist while it lives, and after a failed start until it is removed.
 * Give the exact name (al_get resolves what a user typed).
 */
struct al_logs_opts {
	size_t size;		/* sizeof(struct al_logs_opts) */
	const char *lane;
	bool follow;		/* keep going as lines are appended; ends
				   when the lane is gone, or al_interrupt() */
	uint64_t max_bytes;	/* per file, its end; 0: the daemon's cap */
	/*
	 * Called with each piece, in order; source is the file's name.
	 * Return false to stop (the call fails with AL_IO).
	 */
	bool (*chunk)(const char *source, const void *data, size_t len,
	    void *arg);
	void *arg;
};
#define AL_LOGS_OPTS_INIT { .size = sizeof(struct al_logs_opts) }

AL_API enum al_code al_logs(struct al_client *, const struct al_logs_opts *,
    struct al_error *);

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

AL_API enum al_code al_reap(struct al_client *, bool delete_orphans,
    struct al_reap_report *, struct al_error *);
AL_API void al_reap_report_free(struct al_reap_report *);

struct al_exec_opts {
	size_t size;			/* sizeof(struct al_exec_opts) */
	const char *const *argv;	/* NULL-terminated; or: */
	const char *shell;		/* run as /bin/sh -c SHELL */
	size_t shell_len;		/* 0: strlen(shell) */
	const char *workdir;		/* NULL: the lane's workspace */
	/* NULL-terminated "NAME=VALUE"; the library's copies of the values
	 * (and of the request holding them) are wiped before they are freed. */
	const char *const *env;
	int stdin_fd;			/* -1: the command gets no input */
	int stdout_fd;			/* where its output goes; -1: discarded */
	int stderr_fd;			/* -1: discarded */
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
/*
 * No input, output discarded, no timeout, no terminal: set argv or shell
 * and the fds.
 */
#define AL_EXEC_OPTS_INIT { .size = sizeof(struct al_exec_opts), \
    .stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1, .tty_fd = -1, \
    .winch_fd = -1 }

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
AL_API enum al_code al_exec(struct al_client *, const char *lane,
    const struct al_exec_opts *, struct al_exec_result *, struct al_error *);

/* Called with the bytes sent or received so far. */
typedef void (*al_progress_fn)(uint64_t bytes, void *arg);

/*
 * Copies a host file or directory into the guest, placed as docker cp
 * places it: into guest_path when that is a directory in the guest, under
 * the host path's last component (a host path ending "/." gives the
 * directory's contents, into guest_path itself); otherwise at guest_path,
 * which must then not end in "/" for a file (AL_NOT_FOUND). A directory
 * already there is merged into; a directory never replaces a file, nor a
 * file a directory (AL_FAILED_PRECONDITION). Missing parents are made; a
 * relative guest_path is relative to the lane's workspace. Modes and
 * symbolic links are kept; sockets, FIFOs and devices are refused.
 */
AL_API enum al_code al_copy_in(struct al_client *, const char *lane,
    const char *host_path, const char *guest_path, al_progress_fn, void *arg,
    uint64_t *bytes, struct al_error *);

enum al_copy_kind {
	AL_COPY_FILE = 1,
	AL_COPY_DIRECTORY = 2,
};

struct al_copy_out_opts {
	size_t size;		/* sizeof(struct al_copy_out_opts) */
	uint64_t max_bytes;	/* 0: the daemon's bound */
	uint64_t max_entries;	/* directories; 0: 100000 */
	al_progress_fn progress;
	void *arg;
	/*
	 * Called once the daemon has said what comes (with arg): the kind,
	 * and for a file its size as the guest saw it (0: not known), for a
	 * percentage; the guest's word, not a bound.
	 */
	void (*begin)(int kind, uint64_t size, void *arg);
};
#define AL_COPY_OUT_OPTS_INIT { .size = sizeof(struct al_copy_out_opts) }

/*
 * Copies a guest file or directory to host_path, by the same rules as
 * al_copy_in: inside host_path if it is an existing directory, under the
 * guest path's last component ("DIR/.": its contents, into host_path);
 * otherwise at host_path, whose parent must exist. A file goes through an
 * O_EXCL temporary file in the destination directory, fsynced and renamed,
 * with the guest file's permission bits less the umask; a directory is
 * extracted with libarchive's secure flags into a fresh temporary
 * directory that is renamed into place, or merged into the directory
 * already there once every entry has been checked. A guest file or
 * directory larger than the bound (opts->max_bytes, which may not exceed
 * the daemon's max_copy_out_bytes: AL_RESOURCE_EXHAUSTED) is refused
 * before any data moves (AL_TOO_LARGE). On any failure the destination is
 * untouched (but for a merge that an I/O error cuts short among its
 * renames) and no temporary file is left. Temporary names are ".NAME.agent-lane-PID-XXXXXX";
 * leftovers of a killed copy to the same destination (ours by that name,
 * owned by us, not a symbolic link; the PID gone and idle a minute, or idle
 * a day) are removed first. opts may be NULL.
 */
AL_API enum al_code al_copy_out(struct al_client *, const char *lane,
    const char *guest_path, const char *host_path,
    const struct al_copy_out_opts *, uint64_t *bytes, int *kind,
    struct al_error *);

/*
 * Images: stopped, provisioned VMs that lanes are cloned from
 * (al_create_opts.image). See agent-lanectl(1), "image".
 */
#define AL_IMAGE_NAME_MAX 64
#define AL_IMAGE_SCRIPTS_MAX 64

struct al_image {
	char name[AL_IMAGE_NAME_MAX];
	char id[65];		/* sha256 of the inputs, hex */
	char from[AL_IMAGE_NAME_MAX];
	bool docker;
	uint32_t cpus, memory_mib, disk_gib;
	size_t nscripts;
	char scripts[AL_IMAGE_SCRIPTS_MAX][256];
	int64_t created_at_ms;
	uint64_t build_ms;
	bool cached;		/* a build found identical inputs: nothing ran */
	uint32_t in_use;	/* clones and builds using it now */
	/*
	 * al_commit: the lane whose disk it is (its al- name; "" for a built
	 * image), the lane's alias then ("" for none), and when. from is the
	 * image that lane was cloned from ("": the lane template).
	 */
	char committed_from[20];
	char committed_alias[AL_IMAGE_NAME_MAX];
	int64_t committed_at_ms;
};

struct al_provision_script {
	const char *name;	/* shown in progress and errors */
	const void *data;
	size_t len;
};

struct al_image_build_opts {
	size_t size;		/* sizeof(struct al_image_build_opts) */
	const char *name;	/* NULL or "": named by content ("p-" + hex) */
	const struct al_provision_script *scripts;
	size_t nscripts;
	const char *from;	/* NULL: the lane template */
	bool docker;		/* rootless Docker Engine for the lane user */
	uint32_t cpus, memory_mib, disk_gib;	/* 0: daemon defaults */
	/* Phases ("creating", "provision", ...) as the build goes. */
	void (*progress)(const char *phase, const char *message, void *arg);
	void *arg;
	int stdout_fd;		/* the scripts' output; -1: dropped */
	int stderr_fd;
	/*
	 * An image of this name built from other inputs is replaced once the
	 * new one is ready (as docker build -t retags), unless no_replace:
	 * then the build is refused with AL_FAILED_PRECONDITION.
	 */
	bool no_replace;
};
/* The scripts' output is dropped unless stdout_fd/stderr_fd are set. */
#define AL_IMAGE_BUILD_OPTS_INIT { \
	.size = sizeof(struct al_image_build_opts), \
	.stdout_fd = -1, .stderr_fd = -1 }

/*
 * Builds an image (or finds the identical one: image->cached). Blocks for
 * the whole build; al_interrupt() cancels it, and the daemon then deletes
 * the half-built VM. A failing script's error quotes its last stderr lines.
 */
AL_API enum al_code al_image_build(struct al_client *,
    const struct al_image_build_opts *, struct al_image *, struct al_error *);
/* *images is allocated (free it with al_images_free). */
AL_API enum al_code al_image_list(struct al_client *, struct al_image **images,
    size_t *n, struct al_error *);
AL_API void al_images_free(struct al_image *images);
AL_API enum al_code al_image_get(struct al_client *, const char *name,
    struct al_image *, struct al_error *);
/* Fails with AL_FAILED_PRECONDITION while a clone or build uses it. */
AL_API enum al_code al_image_remove(struct al_client *, const char *name,
    struct al_image *, struct al_error *);

struct al_commit_opts {
	size_t size;		/* sizeof(struct al_commit_opts) */
	bool no_workspace;	/* the image gets no copy of the workspace */
	/* Phases ("stopping", "cloning", "scrubbing", ...) as it goes. */
	void (*progress)(const char *phase, const char *message, void *arg);
	void *arg;
};
#define AL_COMMIT_OPTS_INIT { .size = sizeof(struct al_commit_opts) }

/*
 * Commits a ready lane's disk as image `image` (agent-lanectl commit; see
 * agent-lanectl(1)). The lane stays ready, but its VM is stopped, cloned
 * and started again: its execs and copies meanwhile fail with
 * AL_UNAVAILABLE. The image holds no lane CA, ssh host keys, machine id,
 * logs or audit of the lane. Blocks until the image is ready and the lane
 * runs again; al_interrupt() stops the wait, not the commit. opts may be
 * NULL.
 */
AL_API enum al_code al_commit(struct al_client *, const char *lane,
    const char *image, const struct al_commit_opts *, struct al_image *,
    struct al_error *);

#ifdef __cplusplus
}
#endif

#endif
