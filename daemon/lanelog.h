/*
 * The Lima logs of a lane (boot console, hostagent) outlive a failed start:
 * before the failed VM is deleted, the last max_lane_log_bytes of each are
 * copied into <state_dir>/log/lanes/<lane>/ (0700 directory, 0600 files),
 * with the failing limactl command's stderr as limactl.log. They are
 * deleted when the lane is removed (`rm` of the failed lane) or leaves the
 * registry (retention). `agent-lanectl logs LANE` reads them (logcall.c).
 */
#ifndef LANED_LANELOG_H
#define LANED_LANELOG_H

#include <stdbool.h>
#include <stddef.h>

struct laned;

/* The files of a lane's logs, in the order they are shown; NULL ends it. */
extern const char *const lanelog_files[];

/* <state_dir>/log/lanes/<name>; false for a name that is not a lane's. */
bool lanelog_kept_dir(const struct laned *, const char *name, char *buf,
    size_t len);
/*
 * Copies the lane's Lima logs out of its instance directory (and, when
 * not NULL, limactl_stderr as limactl.log). Failures are logged: keeping
 * evidence must never stop the cleanup that follows.
 */
void lanelog_keep(struct laned *, const char *name,
    const char *limactl_stderr);
/* Deletes what was kept for the lane, if anything. */
void lanelog_discard(struct laned *, const char *name);
/* Deletes what was kept for lanes the registry no longer has. */
void lanelog_prune(struct laned *);

#endif
