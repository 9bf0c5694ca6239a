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

struct ctl {
	struct al_client *client;
	const char *prog;
};

/* A signal asked us to stop (the call cleans up; main re-raises it). */
bool ctl_interrupted(void);
/* Prints "agent-lanectl: CODE: message" (unless interrupted), returns status. */
int ctl_fail(const struct ctl *, const struct al_error *, int status);
int ctl_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ctl_errx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A plain number counts plain_unit_ms. */
bool ctl_duration(const char *s, uint64_t plain_unit_ms, uint64_t *ms);
bool ctl_uint(const char *s, uint64_t max, uint64_t *out);
bool ctl_lane_name(const char *s);
/*
 * Matches "--name VALUE" or "--name=VALUE" at argv[*i]: 1 (value set, *i
 * on the last word used), 0 (another word), -1 (value missing).
 */
int ctl_opt(int argc, char **argv, int *i, const char *name,
    const char **value);

void ctl_json_string(FILE *, const char *);
/* RFC 3339 UTC, e.g. 2026-11-29T09:12:25Z; "-" for 0. */
void ctl_time(int64_t ms, char *buf, size_t len);
void ctl_lane_json(FILE *, const struct al_lane *);

int cmd_create(struct ctl *, int, char **);
int cmd_ls(struct ctl *, int, char **);
int cmd_show(struct ctl *, int, char **);
int cmd_rm(struct ctl *, int, char **);
int cmd_extend(struct ctl *, int, char **);
int cmd_events(struct ctl *, int, char **);
int cmd_reap(struct ctl *, int, char **);
int cmd_exec(struct ctl *, int, char **);
int cmd_cp(struct ctl *, int, char **);
int cmd_daemon(struct ctl *, int, char **);
int cmd_image(struct ctl *, int, char **);

/*
 * Builds (or finds) an image from script files, with progress and the
 * scripts' output on stderr. 0, or the exit status after printing why.
 */
int ctl_build_image(struct ctl *, struct al_image_build_opts *,
    const char *const *paths, size_t npaths, struct al_image *);

#endif
