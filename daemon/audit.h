/*
 * The audit trail of what ran in a lane: every exec (argv[0] and how it
 * ended, never its arguments or environment) and every copy (direction,
 * guest path, bytes), as lane events. A lane keeps its newest
 * max_audit_events of them.
 */
#ifndef LANED_AUDIT_H
#define LANED_AUDIT_H

#include <stddef.h>
#include <stdint.h>

struct gexec_result;
struct laned;

/*
 * Each takes the lane by name: the audit trail is the registry's, and a
 * record needs nothing of the lane's run-time state.
 *
 * argv0 is the command's own bytes (any); id audit_exec_begin's; r how it ended, NULL if the
 * call failed before it ran, with why in failure.
 */
void audit_exec(struct laned *, const char *lane, int64_t id,
    const uint8_t *argv0, size_t len, const struct gexec_result *r,
    const char *failure);
/*
 * Records an exec as started, before its command runs, in *id for
 * audit_exec; -1 if the registry could not (logged), and then it must not
 * run: a daemon that died under it could not say it ran.
 */
int audit_exec_begin(struct laned *, const char *lane, const uint8_t *argv0,
    size_t len, int64_t *id);
/* At start: an exec begun and never ended was cut off by the restart. */
#define AUDIT_INTERRUPTED "interrupted by a daemon restart"
void audit_recover(struct laned *);
/* what: "copy-in" or "copy-out"; failure NULL when it succeeded. */
void audit_copy(struct laned *, const char *lane, const char *what,
    const char *path, uint64_t bytes, const char *failure);

/* A record of an allow lane's proxy: event "proxy-allow", "proxy-deny"... */
void audit_proxy(struct laned *, const char *lane, const char *event,
    const char *detail);

#endif
