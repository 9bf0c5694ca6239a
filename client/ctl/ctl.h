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

struct ctl_command {
	const char *name;
	const char *alias;	/* or NULL */
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
	bool json;		/* --json */
	void *owned;		/* ctl_parse()'s arrays, freed by main */
};

/* ctl_parse() returns this when the command should go on. */
#define CTL_CONTINUE (-1)

extern const struct ctl_command ctl_commands[];
extern const size_t ctl_ncommands;
extern const struct ctl_option ctl_global_options[];
/* By name or alias; NULL if none. */
const struct ctl_command *ctl_command_find(const char *name);
/* The help of one command, or with NULL the summary of all. */
void ctl_help(FILE *, const struct ctl_command *);

/*
 * Splits argv (argv[0] is the command's name) into options, operands and,
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
/* Connects ctl->client to --socket or the default; false (said) if OOM. */
bool ctl_client_open(struct ctl *);

/* A signal asked us to stop (the call cleans up; main re-raises it). */
bool ctl_interrupted(void);
/* Prints "agent-lanectl: CODE: message" (unless interrupted), returns status. */
int ctl_fail(const struct ctl *, const struct al_error *, int status);
void ctl_put_safe(FILE *, const char *);
/* For CONNECT: how to start the daemon or point at another socket. */
void ctl_hint(const struct ctl *, const struct al_error *);
int ctl_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ctl_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A duration; a plain number is seconds, as everywhere in the CLI. */
bool ctl_duration(const char *s, uint64_t *ms);
bool ctl_uint(const char *s, uint64_t max, uint64_t *out);
/* A size; a plain number counts plain_unit bytes. */
bool ctl_size(const char *s, uint64_t plain_unit, uint64_t *out);
/* Well-formed UTF-8 without C0 controls or DEL (label values). */
bool ctl_utf8_text(const char *s);
bool ctl_lane_name(const char *s);
/* Prints a JSON array of strings (no newline). */
void ctl_json_names(FILE *, char (*names)[AL_NAME_MAX], size_t n);

void ctl_json_string(FILE *, const char *);
/* RFC 3339 UTC, e.g. 2026-11-29T09:12:25Z; "-" for 0. */
void ctl_time(int64_t ms, char *buf, size_t len);
/*
 * net NULL: the lane's network policy is not printed; sec NULL: nor its
 * secrets (names and hosts: the CLI never has another lane's values).
 */
void ctl_lane_json(FILE *, const struct al_lane *, const struct al_lane_net *,
    const struct al_lane_secrets *sec);

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

int cmd_create(struct ctl *, int, char **);
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
int cmd_daemon(struct ctl *, int, char **);
int cmd_version(struct ctl *, int, char **);
int cmd_help(struct ctl *, int, char **);
int cmd_completion(struct ctl *, int, char **);
/* Completion's live lane names and aliases, one a line (not in the help). */
int cmd_complete_lanes(struct ctl *, int, char **);
int cmd_image(struct ctl *, int, char **);

/*
 * Builds (or finds) an image from script files, with progress and the
 * scripts' output on standard error. 0, or the exit status after saying why.
 */
int ctl_build_image(struct ctl *, struct al_image_build_opts *,
    const char *const *paths, size_t npaths, struct al_image *);

#endif
