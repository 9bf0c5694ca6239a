/*
 * Lanes at run time: the state machine that drives limactl for each live
 * lane, the clients waiting on a lane's create or destroy, and the execs and
 * copies running in it. The registry holds the durable state; a struct lane
 * exists for every live row (creating, ready, destroying).
 */
#ifndef LANED_LANE_H
#define LANED_LANE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "registry.h"
#include "wire.h"

struct laned;
struct conn;
struct proc;
struct gexec;
struct lane_waiter;

/* An exec or a copy running in a lane; cancelled when the lane goes. */
struct lane_activity {
	/* Must end the activity (lane_activity_end) before returning. */
	void (*cancel)(struct lane_activity *, int code, const char *msg);
	struct lane *lane;
	TAILQ_ENTRY(lane_activity) entry;
};

TAILQ_HEAD(lane_waiters, lane_waiter);
TAILQ_HEAD(lane_activities, lane_activity);

struct lane {
	struct laned *d;
	char name[LANE_NAME_SIZE];
	int state;
	int64_t created_at_ms;
	int64_t deadline_ms;
	uint64_t idle_timeout_ms;
	int64_t last_activity_ms;
	int64_t persisted_activity_ms;	/* what the registry holds */
	char workspace[LANE_WORKSPACE_MAX];	/* default cwd of execs */

	struct proc *op;		/* limactl create/start/delete */
	struct gexec *setup;		/* workspace preparation */
	struct lane_waiters waiters;
	struct lane_activities activities;
	size_t nactivities;

	/* Why creation failed (the lane then ends "failed"). */
	int fail_code;
	char fail_msg[LANE_ERROR_MAX];
	/* Destroy asked while creating; acted on when the step returns. */
	bool destroy_pending;
	int destroy_code;		/* error creators get: CANCELLED, ... */
	char destroy_reason[64];
	unsigned destroy_attempts;
	struct event *retry_timer;

	TAILQ_ENTRY(lane) entry;
};

struct lane *lane_find(struct laned *, const char *name);
/* Rebuilds the runtime entry of a live registry row (start-up). */
struct lane *lane_adopt(struct laned *, const struct lane_record *);
/*
 * Start-up recovery of an adopted lane: an interrupted creation or
 * destruction is finished by destroying the VM; an expired lane is
 * destroyed; a live one just gets its timers back.
 */
void lane_recover(struct lane *);

/* Request handlers: each owns the connection until it replies. */
void lane_handle_create(struct laned *, struct conn *,
    const Agentlane__V1__CreateLane *);
void lane_handle_get(struct laned *, struct conn *, const char *name);
void lane_handle_list(struct laned *, struct conn *, bool all);
void lane_handle_destroy(struct laned *, struct conn *, const char *name);
void lane_handle_extend(struct laned *, struct conn *,
    const Agentlane__V1__ExtendLane *);
void lane_handle_events(struct laned *, struct conn *, const char *name);

/*
 * Starts destroying a lane (idempotent). reason goes to the audit trail;
 * code is what running execs and a waiting creator are told
 * (DEADLINE_EXCEEDED for deadlines, CANCELLED otherwise).
 */
void lane_destroy(struct lane *, int code, const char *reason);

/*
 * Validates that a client-supplied lane name is a live, ready lane and
 * starts an activity in it. On failure sends the typed error on c and
 * returns NULL.
 */
struct lane *lane_activity_begin(struct laned *, struct conn *,
    const char *name, struct lane_activity *);
void lane_activity_end(struct lane_activity *);
/* Records exec/copy progress for the idle timeout. */
void lane_touch(struct lane *);
/* Writes changed last-activity times to the registry (tick, shutdown). */
void lane_persist_activity(struct laned *);

/* Fills a protobuf Lane from a record; strings point into rec/labels. */
void lane_record_to_proto(const struct lane_record *, Agentlane__V1__Lane *,
    Agentlane__V1__Label **labelv, Agentlane__V1__Label *labels,
    const struct lane_label *src, size_t nlabels);

/* Frees every runtime entry (daemon exit); VMs keep running. */
void lane_free_all(struct laned *);

#endif
