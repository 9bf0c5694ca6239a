/*
 * agent-lanectl commit LANE IMAGE: a ready lane's disk becomes an image
 * that lanes and pool shapes start from (docker commit, sbx template save).
 *
 * Lima's clone needs a stopped source, so the lane's VM is stopped, cloned
 * into a new image instance and started again. The lane stays "ready" in
 * the registry (its deadline runs on): meanwhile (lane->committing) its
 * execs and copies get UNAVAILABLE, reconcile does not judge its stopped
 * VM, and a destroy waits until the VM runs again. The image row is
 * registered ("building") before limactl hears the clone's name, as a
 * build's is.
 *
 * The clone is booted once, without the lane's YAML (no policy, no CA
 * provisioning), to scrub what was the lane's and not the image's: the
 * lane CA out of the trust store, ssh host keys, machine id, cloud-init
 * instance data, the lane user's sudo password file, logs and audit, and
 * with no_workspace the workspace. Then it is stopped and the row made
 * ready. The client hears the answer once both the image and the lane are
 * done; closing the connection does not cancel a commit.
 *
 * A failure on the image side deletes the clone and its row (no half
 * image); the lane is started again whatever happened. A daemon that dies
 * mid-commit leaves the row "building": at the next start
 * lanecommit_recover starts the lane's VM again (with an event), and
 * image_recover deletes the half-made clone.
 */
#ifndef LANED_LANECOMMIT_H
#define LANED_LANECOMMIT_H

#include "wire.h"

struct laned;
struct conn;

void lanecommit_init(struct laned *);
/* Daemon exit: commits stop without cleanup (recovered at next start). */
void lanecommit_free_all(struct laned *);
/* Start-up, after the lanes are adopted and before image_recover. */
void lanecommit_recover(struct laned *);

void lanecommit_handle(struct laned *, struct conn *,
    const Agentlane__V1__CommitLane *);

#endif
