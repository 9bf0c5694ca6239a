/* agent-lanectl: shared declarations of the command files. */
#ifndef CTL_H
#define CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "agentlane.h"

/* Exit statuses. exec passes the guest's own status through instead. */
#define CTL_EXIT_FAILURE 1
#define CTL_EXIT_USAGE 2
#define CTL_EXIT_EXEC_FAILURE 125	/* Agent Lane itself failed an exec */
#define CTL_EXIT_TIMEOUT 124		/* wait --timeout ran out, as timeout(1) */

/* One option of a command, as help, completion and the parser see it. */
struct ctl_option {
	char short_name;	/* 0: none */
	const char *name;	/* the long name without "--"; NULL ends a list */
	const char *arg;	/* the value's placeholder; NULL for a flag */
	const char *help;
};

/* What a command's operands complete to. */
enum ctl_complete {
	CTL_COMPLETE_NONE,
	CTL_COMPLETE_LANES,	/* every operand is a lane */
	CTL_COMPLETE_LANE,	/* the first operand is a lane */
	CTL_COMPLETE_FILES,	/* cp: host paths, or LANE: */
	CTL_COMPLETE_WORDS,	/* the first operand is one of words */
};

struct ctl;
struct ctl_parsed;

/*
 * One subcommand of a command (image build, context use): its handler,
 * given the whole parse (operands[0] is the subcommand's word), and what
 * the help and the completion scripts say of it. A table of them ends
 * with a NULL name; subcmd.c dispatches through it.
 */
struct ctl_subcommand {
	const char *name;
	int (*run)(struct ctl *, const struct ctl_parsed *);
	const char *alias;	/* or NULL; several: space-separated */
	const char *operands;	/* after the name, in its help line */
	const char *summary;	/* one line, for the help */
	bool json;		/* takes --json */
};

/* Which daemon a command talks to (target.c). */
enum ctl_reach {
	CTL_REACH_ANY,		/* --host, --context, $AGENT_LANE_HOST, ... */
	CTL_REACH_LOCAL,	/* this host's socket only, never a context */
	CTL_REACH_NONE,		/* none: it opens no client */
};

/*
 * One command: what runs it, and what its help, the parser, the completion
 * scripts and the man page test know of it. commands.c holds the table;
 * adding a command is one entry there and its handler.
 */
struct ctl_command {
	const char *name;
	int (*run)(struct ctl *, int argc, char **argv);
	const char *alias;	/* or NULL; several: space-separated */
	const char *operands;	/* in the usage line, after [OPTIONS] */
	const char *summary;	/* one line, for the command list */
	const char *text;	/* the rest of its help; NULL for none */
	const struct ctl_option *options;
	/*
	 * exec: after this many operands the next word, or the word after
	 * "--", starts a command whose words are never parsed. 0: none;
	 * CTL_COMMAND_AT_ONCE: no operands, the first one starts it (run).
	 */
	int operands_then_command;
	bool json;		/* takes --json */
	enum ctl_complete complete;
	const char *words;	/* CTL_COMPLETE_WORDS, space-separated */
	/* Its subcommands (NULL: none); the first operand is one of them. */
	const struct ctl_subcommand *subcommands;
	bool units;		/* its help ends with the units paragraph */
	bool hidden;		/* for scripts: not in the help or completion */
	enum ctl_reach reach;	/* which daemon it may talk to (target.c) */
};

#define CTL_COMMAND_AT_ONCE (-1)

/* One option as given: the option, and its value (NULL for a flag). */
struct ctl_arg {
	const struct ctl_option *opt;
	const char *value;
};

/* A command line split by ctl_parse() (arrays owned by struct ctl). */
struct ctl_parsed {
	const struct ctl_command *cmd;
	struct ctl_arg *opts;
	size_t nopts;
	char **operands;
	size_t noperands;
	char **command;		/* operands_then_command: NULL-terminated */
	size_t ncommand;
};

struct ctl {
	struct al_client *client;
	const char *prog;
	const char *socket;	/* --socket; NULL: the library's default */
	const char *host;	/* --host URL */
	const char *context;	/* --context NAME */
	/* What ctl_client_open chose: the context ("default": none) and why. */
	char target_name[64];
	const char *target_from;
	bool json;		/* --json */
	void *owned;		/* ctl_parse()'s arrays, freed by main */
	const struct ctl_command *cmd;		/* the one running */
	/* main's table, for the commands that list commands (help, completion) */
	const struct ctl_command *commands;
	size_t ncommands;
};

/* ctl_parse() returns this when the command should go on. */
#define CTL_CONTINUE (-1)

/* commands.c: every command, in the order the help lists them. */
extern const struct ctl_command ctl_commands[];
extern const size_t ctl_ncommands;

/*
 * subcmd.c: a command whose table has subcommands runs them through this
 * (its .run): parses argv, finds operands[0] in ctl->cmd->subcommands
 * (by name or alias) and runs it; a missing or unknown one is a usage
 * error with the nearest, --json where it prints nothing too.
 */
int ctl_subcommand_run(struct ctl *, int argc, char **argv);
const struct ctl_subcommand *ctl_subcommand_find(const struct ctl_command *,
    const char *name);
/* The tables, in the files of their handlers. */
extern const struct ctl_subcommand ctl_image_subcommands[];
extern const struct ctl_subcommand ctl_context_subcommands[];
extern const struct ctl_subcommand ctl_system_subcommands[];
extern const struct ctl_subcommand ctl_daemon_subcommands[];

/* help.c: the global options, and help made from the tables. */
extern const struct ctl_option ctl_global_options[];
/* In ctl->commands, by name or alias; NULL if none. */
const struct ctl_command *ctl_command_find(const struct ctl *,
    const char *name);
/* name is one of words (space-separated; NULL: none). */
bool ctl_word_in(const char *words, const char *name);
/* Prints words with sep between them, sep first too if lead. */
void ctl_put_words(FILE *, const char *words, const char *sep, bool lead);
/* The help of one command, or with NULL the summary of ctl->commands. */
void ctl_help(FILE *, const struct ctl *, const struct ctl_command *);

/*
 * Splits argv (argv[0] is ctl->cmd's name) into options, operands and,
 * for exec, the guest command. Global options (--socket, --json, -h,
 * --help) are taken anywhere before "--"; a word that starts with "-" is
 * never an operand unless it is "-" or comes after "--". Prints help or a
 * usage error itself: returns CTL_CONTINUE, or the status to exit with.
 * On CTL_CONTINUE, ctl->client is ready.
 */
int ctl_parse(struct ctl *, int argc, char **argv, struct ctl_parsed *);
void ctl_free_parsed(struct ctl *);
/* The option's long name is name. */
bool ctl_is(const struct ctl_arg *, const char *name);
/*
 * Makes ctl->client for the daemon the command line, the environment or
 * the current context names (target.c): 0, or the exit status after
 * saying why.
 */
int ctl_client_open(struct ctl *);

/*
 * interrupt.c: SIGINT, SIGTERM and SIGHUP stop the call in progress and let
 * it clean up; main then dies of the signal (ctl_interrupt_reraise).
 */
void ctl_interrupt_catch(void);
/* A signal asked us to stop. */
bool ctl_interrupted(void);
/* If one did: die of it now, as the caller expects. */
void ctl_interrupt_reraise(void);

/*
 * ctlcompat.c: what differs between macOS and Linux for the CLI, so that
 * no other file has an #ifdef. The path of this executable: 0 or -1.
 */
int ctl_compat_self_path(char *buf, size_t len);
/* The host's per-user service manager: "launchd" or "systemd". */
const char *ctl_compat_service_manager(void);

/*
 * Errors (util.c). Each is one line on standard error, finishing any
 * progress line first: "agent-lanectl: [WHAT: ][LANE: ][CODE: ]message",
 * or with --json one object {"error":{"code","command","lane","message",
 * "hint"}} (absent keys left out). A CONNECT error whose socket path does
 * not exist or is a socket gets the hint of how to start a daemon. CODE
 * is the library's (al_code_name), or ours below, which the text leaves
 * out: the message says what is wrong.
 */
#define CTL_CODE_USAGE "USAGE"		/* our own check of the command line */
#define CTL_CODE_FAILED "FAILED"	/* anything else we refused or failed */
#define CTL_CODE_INTERRUPTED "INTERRUPTED"	/* ^C (SIGINT, SIGTERM, SIGHUP) */
/* --json was given: errors from now on are JSON. */
void ctl_json_errors(bool on);
/* hint: a line of advice after it; NULL: CONNECT's, if it applies. */
void ctl_report(const struct ctl *, const char *code, const char *what,
    const char *lane, const char *message, const char *hint);
/* status, or CTL_EXIT_USAGE for the daemon's INVALID_ARGUMENT. */
int ctl_exit_status(const struct al_error *, int status);
/* Reports err (unless interrupted); returns ctl_exit_status(err, status). */
int ctl_fail(const struct ctl *, const struct al_error *, int status);
void ctl_put_safe(FILE *, const char *);
/* For CONNECT, in text: how to start the daemon or point at another socket. */
void ctl_hint(const struct ctl *, const struct al_error *);
/* sock is ~/.agent-lane/run/agent-laned.sock, the default daemon's. */
bool ctl_default_socket(const char *sock);
/*
 * The state directory to give a daemon on sock: $AGENT_LANE_STATE_DIR,
 * else DIR for DIR/run/NAME (the default layout), else the socket's
 * directory's "state".
 */
void ctl_state_dir_for(const char *sock, char *buf, size_t len);
/* Reports a usage error (code USAGE); returns CTL_EXIT_USAGE. */
int ctl_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reports a failure of ours (code FAILED). */
void ctl_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The candidate nearest word (a typo of it), or NULL if none is near. */
const char *ctl_nearest(const char *word, const char *const *cands, size_t n);

/*
 * Option values by the one rule for plain numbers (proto/units.h): a
 * duration or size carries its unit; opt names the option in messages.
 * 0, or CTL_EXIT_USAGE after saying why.
 */
int ctl_opt_duration(const char *opt, const char *v, uint64_t min_ms,
    uint64_t *ms);
int ctl_opt_memory(const char *opt, const char *v, uint32_t *mib);
int ctl_opt_disk(const char *opt, const char *v, uint32_t *gib);
/* A count (cpus, entries): a plain number up to max. */
bool ctl_uint(const char *s, uint64_t max, uint64_t *out);
/* A size whose name says its unit (--max-bytes): a plain number counts plain_unit bytes. */
bool ctl_size(const char *s, uint64_t plain_unit, uint64_t *out);
/* Well-formed UTF-8 without C0 controls or DEL (label values). */
bool ctl_utf8_text(const char *s);
bool ctl_lane_name(const char *s);
/* Prints a JSON array of strings (no newline). */
void ctl_json_names(FILE *, char (*names)[AL_NAME_MAX], size_t n);

void ctl_json_string(FILE *, const char *);
/* Sizes the one way (units_format_bytes): "512MiB", "1.5GiB", "23.4MiB". */
void ctl_bytes(uint64_t, char *buf, size_t len);
/* RFC 3339 UTC, e.g. 2026-11-29T09:12:25Z; "-" for 0. */
void ctl_time(int64_t ms, char *buf, size_t len);
/*
 * lanejson.c: a lane and its network policy as one JSON object, the same
 * for every command that prints a lane (no newline). The secrets are
 * names and hosts (the CLI never has a lane's values); NULL: none.
 */
void ctl_lane_json(FILE *, const struct al_lane *, const struct al_lane_net *,
    const struct al_lane_secrets *);

/*
 * cp with "-": a tar stream from standard input into a lane directory, or a
 * guest path to standard output as a tar stream. 0, a usage status, or -1
 * with err set for the caller to report.
 */
int cp_in_stream(struct ctl *, const char *lane, const char *guest_dir,
    struct al_error *);
int cp_out_stream(struct ctl *, const char *lane, const char *guest_path,
    const struct al_copy_out_opts *, struct al_error *);

/*
 * The terminal for exec -t: raw mode on fd (0, or -1 with errno), put
 * back by ctl_tty_restore() and, whatever happens, at exit. The winch fd
 * is readable after a SIGWINCH (-1 with errno if it cannot be made).
 */
int ctl_tty_raw(int fd);
void ctl_tty_restore(void);
int ctl_tty_winch_fd(void);

/*
 * The progress line on standard error (progress.c): a spinner, the phase
 * and the elapsed time, redrawn by a thread; only on a terminal and unless
 * quiet (false then: nothing is drawn, and the other calls do nothing).
 * ctl_progress_end() finishes it with the result and a newline;
 * ctl_progress_abort() ("interrupted" or "failed") is called before any
 * message and on main's way out, so no line is ever left unfinished.
 */
bool ctl_progress_start(const char *what, bool quiet);
void ctl_progress_phase(const char *phase, const char *message);
/* Copies: bytes so far of total (0: unknown); shows a percentage. */
void ctl_progress_bytes(uint64_t bytes, uint64_t total);
void ctl_progress_end(const char *result);
void ctl_progress_abort(void);
/* What create learnt while it waited: the name, once registered. */
struct ctl_create_state {
	char name[AL_NAME_MAX];
	/* create --no-wait: stop the call once registered (see lanes.c). */
	bool no_wait;
};

/* What the create options point into; lives as long as the create. */
struct ctl_create_args {
	struct al_label labels[AL_LABELS_MAX];
	const char *allow[AL_ALLOW_MAX];
	/* --secret NAME[@HOST,...]: the value is $NAME, never an argument. */
	struct al_secret secrets[AL_SECRETS_MAX];
	char secret_names[AL_SECRETS_MAX][AL_SECRET_NAME_MAX];
	char secret_hosts[AL_SECRETS_MAX][AL_SECRET_HOSTS_TEXT_MAX + 1];
	const char *secret_hostv[AL_SECRETS_MAX][AL_SECRET_HOSTS_MAX];
	/* --secret-header NAME=HEADER[,HEADER...]: one entry a header. */
	struct al_secret_header secret_headers[AL_SECRETS_MAX *
	    AL_SECRET_HEADERS_MAX];
	char secret_header_names[AL_SECRETS_MAX * AL_SECRET_HEADERS_MAX]
	    [AL_SECRET_HEADER_MAX + 1];
	struct al_image im;		/* of --provision */
	bool quiet;			/* -q: no progress line */
};

/*
 * The create options of p (create, run) into o, pointing into a; builds
 * the image of --provision scripts into a->im first. 0, or the exit status
 * after saying why.
 */
int ctl_create_prepare(struct ctl *, const struct ctl_parsed *,
    struct al_create_opts *, struct ctl_create_args *a);
/*
 * A create (or run's) failed: finishes the progress line and says what
 * became of the lane and where its logs are. Returns the exit status.
 */
int ctl_create_failed(struct ctl *, const struct ctl_create_state *,
    const struct al_error *, bool detach, int status);
/* A create's progress callback; arg is a struct ctl_create_state. */
void ctl_create_progress(const char *phase, const char *message, void *arg);
/*
 * Runs argv (NULL: the guest user's login shell, on a terminal) in lane
 * with the exec options of p. Returns the exit status; *ran says whether
 * it is the command's own (else Agent Lane failed and said so).
 */
int ctl_exec_in(struct ctl *, const struct ctl_parsed *, const char *lane,
    const char *const *argv, bool *ran);
/* A copy-out's host destination can be written: 0, or the status (said). */
int ctl_check_destination(const char *host);

/*
 * wait.c: until lane is ready, asking its state (at most timeout_ms; 0:
 * no limit). CTL_WAIT_ENDED: it failed or ended (err says so); ERROR: a
 * call failed (err). lane: its last state.
 */
#define CTL_WAIT_READY 0
#define CTL_WAIT_ENDED 1
#define CTL_WAIT_TIMEOUT 2
#define CTL_WAIT_ERROR (-1)
int ctl_wait_ready(struct ctl *, const char *name, uint64_t timeout_ms,
    struct al_lane *lane, struct al_error *err);

int cmd_create(struct ctl *, int, char **);
int cmd_wait(struct ctl *, int, char **);
int cmd_run(struct ctl *, int, char **);
int cmd_ls(struct ctl *, int, char **);
int cmd_show(struct ctl *, int, char **);
int cmd_rm(struct ctl *, int, char **);
int cmd_extend(struct ctl *, int, char **);
int cmd_events(struct ctl *, int, char **);
int cmd_logs(struct ctl *, int, char **);
int cmd_reap(struct ctl *, int, char **);
int cmd_exec(struct ctl *, int, char **);
int cmd_shell(struct ctl *, int, char **);
int cmd_cp(struct ctl *, int, char **);
int cmd_version(struct ctl *, int, char **);
int cmd_help(struct ctl *, int, char **);
int cmd_completion(struct ctl *, int, char **);
/* Completion's live lane names and aliases, one a line (not in the help). */
int cmd_complete_lanes(struct ctl *, int, char **);
int cmd_commit(struct ctl *, int, char **);
int cmd_info(struct ctl *, int, char **);
int cmd_stats(struct ctl *, int, char **);

/*
 * Builds (or finds) an image from script files, with progress and the
 * scripts' output on standard error. 0, or the exit status after saying why.
 */
int ctl_build_image(struct ctl *, struct al_image_build_opts *,
    const char *const *paths, size_t npaths, struct al_image *);

#endif
