/*
 * Lanes at run time: the state machine that drives limactl for each live
 * lane, the clients waiting on a lane's create or destroy, and the execs and
 * copies running in it. The registry holds the durable state; a struct lane
 * exists for every live row (creating, ready, destroying).
 *
 * The lane module is three files, one job each: lane.c is the state machine
 * (transitions, destroy, recovery, activities), lanecreate.c the create
 * pipeline (request check, limactl create/start, guest setup) and
 * lanecall.c the client calls with their protobuf conversion. The VM itself
 * is vm.c's (limactl calls, delete retries, half-made directories).
 *
 * lane.c calls only down (registry, vm, conn, the lane's exec channel,
 * proxy and image hold, which it lets go when the lane ends): what must
 * flow up goes through callbacks, the lane's step_abort and each waiter's
 * deliver (lane_waiter_add).
 */
#ifndef LANED_LANE_H
#define LANED_LANE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "laneproxy.h"
#include "registry.h"
#include "wire.h"

struct laned;
struct conn;
struct proc;
struct gexec;
struct gchan;
struct lane_waiter;
struct lane_setup;
struct proxy;
struct secret_set;
struct tlsca;
struct vm;

/* An exec or a copy running in a lane; cancelled when the lane goes. */
struct lane_activity {
	/* Must end the activity (lane_activity_end) before returning. */
	void (*cancel)(struct lane_activity *, int code, const char *msg);
	struct lane *lane;
	TAILQ_ENTRY(lane_activity) entry;
};

TAILQ_HEAD(lane_waiters, lane_waiter);
TAILQ_HEAD(lane_activities, lane_activity);

/*
 * What the daemon is doing for a lane right now. The registry state says
 * where the lane is in its life; the step says which operation is in
 * flight, and so which handle (proc or setup) is valid.
 */
enum lane_step {
	LANE_STEP_NONE,		/* nothing in flight */
	LANE_STEP_CREATE,	/* limactl create or clone (vm) */
	LANE_STEP_START,	/* limactl start (vm) */
	LANE_STEP_SETUP,	/* guest workspace preparation (setup) */
	LANE_STEP_DELETE,	/* limactl delete and its retries (vm) */
	LANE_STEP_COMMIT_WAIT,	/* a transition the registry could not
				   write waits for retry_timer (or the tick) */
};

/*
 * A transition and what follows it. The lane's state moves, and `then`
 * runs, only once the registry has committed the change.
 */
struct lane_change {
	enum lane_state to;
	char event[32];
	char detail[LANE_ERROR_MAX + 64];
	bool set_workspace;
	char workspace[LANE_WORKSPACE_MAX];
	bool set_error;
	bool create_failed;
	char error[LANE_ERROR_MAX];
	int64_t last_activity_ms;
	/* How the network policy holds (the ready change). */
	bool set_net;
	char net_policy[16];
	char net_note[LANE_NET_NOTE_MAX];
	void (*then)(struct lane *);	/* may free the lane */
};

enum lane_waiter_kind { LANE_WAIT_CREATE, LANE_WAIT_DESTROY };

/*
 * How a waiter is answered when its wait ends well: with the lane's row
 * on c (an owned lane may keep c as its owner). False if the answer could
 * not be made. The waiter's own, given with it (lane_waiter_add): the
 * calls that wait (lanecall.c) are above the lane module.
 */
typedef bool (*lane_deliver_cb)(struct lane *, struct conn *, void *arg);

struct lane {
	struct laned *d;
	char name[LANE_NAME_SIZE];
	enum lane_state state;
	enum lane_step step;
	uint32_t cpus, memory_mib, disk_gib;	/* its shape (warm pool) */
	int64_t created_at_ms;
	int64_t deadline_ms;
	uint64_t idle_timeout_ms;
	int64_t last_activity_ms;
	int64_t persisted_activity_ms;	/* what the registry holds */
	char workspace[LANE_WORKSPACE_MAX];	/* default cwd of execs */
	/* stats refused a figure of its guest and said so, once (stats.c). */
	bool stats_refusal_logged;
	/* create --image: the image (held until the clone returns). */
	char image[IMAGE_NAME_SIZE];
	char image_instance[IMAGE_INSTANCE_SIZE];
	bool image_held;

	/* The network policy (netpolicy.h, lanenet.c); from the row. */
	bool net_policy;		/* false: a lane from before policies */
	uint32_t net_mode;		/* enum netpolicy_mode */
	bool sudo;			/* kept guest root: advisory */
	char allow[LANE_ALLOW_TEXT_MAX + 1];
	bool net_wait;			/* waits for the limactl facts */
	/* The check's verdict, written with the ready change. */
	char net_verdict[16];
	char net_note[LANE_NET_NOTE_MAX];
	/*
	 * Its proxy, port, create --secret values and lane CA (laneproxy.h),
	 * closed and wiped with the lane (lane_free). has_secrets comes from
	 * the row: after a restart px.secrets is NULL, and the lane is
	 * destroyed.
	 */
	struct laneproxy px;
	bool has_secrets;

	struct vm *vm;			/* its Lima instance */
	struct lane_setup *setup;	/* SETUP */
	/*
	 * Stops the step in flight, whichever it is (set by the pipeline
	 * that started it, NULL between steps): true if the step's own
	 * callback still comes and carries on, false if it stopped silently.
	 */
	bool (*step_abort)(struct lane *);
	struct lane_waiters waiters;
	struct lane_activities activities;
	size_t nactivities;
	/* Carries the lane's execs; opened by the first (gchan_exec). */
	struct gchan *chan;

	/* Why creation failed (the lane then ends "failed"). */
	int fail_code;
	char fail_msg[LANE_ERROR_MAX];
	/* Destroy asked while creating; acted on when the step returns. */
	bool destroy_pending;
	/*
	 * agent-lanectl commit (lanecommit.h) has its VM stopped, cloned or
	 * restarting: still "ready" in the registry, but execs and copies
	 * get UNAVAILABLE, reconcile does not judge it, and a destroy waits
	 * (destroy_deferred, its code and reason kept) until it runs again.
	 */
	bool committing;
	bool destroy_deferred;
	/* create --detach: its client may go before ready (else: destroyed). */
	bool create_detached;
	bool logs_kept;		/* lanelog_keep ran for its failed start */
	/*
	 * run: the lane lives as long as its creating connection, `owner`
	 * once ready (NULL before, and after it closed). Kept in the
	 * registry: a restart destroys such a lane.
	 */
	bool owned;
	struct conn *owner;
	int destroy_code;		/* error creators get: CANCELLED, ... */
	char destroy_reason[64];
	struct event *retry_timer;	/* COMMIT_WAIT */

	/* COMMIT_WAIT: the change to retry, and why it failed. */
	struct lane_change pending;
	unsigned commit_attempts;
	char commit_error[256];

	TAILQ_ENTRY(lane) entry;
};

struct lane *lane_find(struct laned *, const char *name);
/* A runtime entry for a row (a new one, or a live one at start-up). */
struct lane *lane_new(struct laned *, const struct lane_record *);
/* Rebuilds the runtime entry of a live registry row (start-up). */
struct lane *lane_adopt(struct laned *, const struct lane_record *);
/*
 * Start-up recovery of an adopted lane: an interrupted creation or
 * destruction is finished by destroying the VM; an expired lane is
 * destroyed; a live one just gets its timers back.
 */
void lane_recover(struct lane *);

/*
 * Starts destroying a lane (idempotent). reason goes to the audit trail;
 * code is what running execs and a waiting creator are told
 * (DEADLINE_EXCEEDED for deadlines, CANCELLED otherwise). A committing
 * lane is destroyed once its commit ends (lane_commit_end).
 */
void lane_destroy(struct lane *, int code, const char *reason);
/* The commit of a lane ended (its VM runs again, or will not): a destroy
 * asked meanwhile runs now. */
void lane_commit_end(struct lane *);

/*
 * What a client calls a lane, made its al- name: the name itself, its
 * alias (the live lane with it, else the last one that had it), or a
 * prefix of its name, with or without "al-" but with at least one digit
 * (names.h), that one lane has (live lanes first, then any). "al-" alone
 * is no prefix: INVALID_ARGUMENT, never every lane. A reference that is
 * both an alias and a prefix (an all-hex alias from before
 * names_alias_valid refused them) goes to the live one; both live, or
 * both ended, is AMBIGUOUS. Every call that names a lane resolves it here,
 * once, at its top, and uses only the name after that. False: c was
 * answered (INVALID_ARGUMENT, NOT_FOUND, or AMBIGUOUS listing the
 * candidates).
 */
bool lane_resolve(struct laned *, struct conn *, const char *ref,
    char name[LANE_NAME_SIZE]);

/* A warm-pool lane whose VM has booted (its ready change committed). */
bool lane_pool_booted(const struct lane *);

/*
 * Validates that the lane name (resolved at the top of the call:
 * lane_resolve) is a live, ready lane and starts an activity in it. On
 * failure sends the typed error on c and returns NULL.
 */
struct lane *lane_activity_begin(struct laned *, struct conn *,
    const char *name, struct lane_activity *);
void lane_activity_end(struct lane_activity *);
/* Records exec/copy progress for the idle timeout. */
void lane_touch(struct lane *);
/* Writes changed last-activity times to the registry (tick, shutdown). */
void lane_persist_activity(struct laned *);

/* Frees every runtime entry (daemon exit); VMs keep running. */
void lane_free_all(struct laned *);

/* ---- Within the lane module ---- */

/*
 * Clients blocked on a lane's create or destroy; deliver(l, c, arg)
 * answers c when the wait ends well (never NULL).
 */
void lane_waiter_add(struct lane *, struct conn *, enum lane_waiter_kind,
    lane_deliver_cb deliver, void *arg);
void lane_waiters_progress(struct lane *, const char *phase,
    const char *message);
/*
 * Answers every waiter of a kind: through its deliver (code 0), or with
 * the error.
 */
void lane_waiters_finish(struct lane *, enum lane_waiter_kind, int code,
    const char *msg);

/*
 * Moves the lane to ch->to: first in the registry, then in memory, then
 * ch->then runs. If the registry cannot write, nothing moves: the change
 * waits (LANE_STEP_COMMIT_WAIT) and is retried with back-off and on every
 * tick; clients waiting on a destroy are told at once. True if committed
 * now (the lane may then be gone).
 */
bool lane_transition(struct lane *, const struct lane_change *);
/*
 * Retries every waiting transition (the tick, reap); stops at the first
 * failure and returns false: the registry still cannot write.
 */
bool lane_resync(struct laned *);
/* How many transitions wait for the registry; why the last one failed. */
size_t lane_uncommitted(struct laned *, const char **why);
/* Appends to the lane's audit trail (best effort). */
void lane_event(struct lane *, const char *event, const char *detail);
/* The lane's expiries changed: re-arm the reaper through its hook. */
void lane_changed(struct laned *);

/* A failed creation keeps its Lima logs until rm (not when cancelled). */
void lane_keep_logs(struct lane *, const char *limactl_stderr);

/*
 * Creation went wrong (or was cancelled): remember why, then delete the VM.
 * Creators hear the reason once the delete has been tried.
 */
void lane_fail_creation(struct lane *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
