/*
 * The lane registry: one SQLite database in the state directory (WAL,
 * synchronous=FULL, schema version in PRAGMA user_version). It is the source
 * of truth for every lane the daemon ever made: a row is committed in state
 * "creating" before limactl runs, and every state change is appended to the
 * events table in the same transaction, which is the audit trail.
 */
#ifndef LANED_REGISTRY_H
#define LANED_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "names.h"

#define LANE_NAME_SIZE (NAMES_LANE_LEN + 1)	/* "al-" + 16 hex + NUL */
#define LANE_WORKSPACE_MAX 1024
#define LANE_ERROR_MAX 512
#define LANE_LABELS_MAX 16
#define LANE_LABEL_KEY_MAX 63
#define LANE_LABEL_VALUE_MAX 255
/* Network policy: the allow list is '\n'-separated patterns. */
#define LANE_NETWORK_SIZE 16
#define LANE_ALLOW_TEXT_MAX 2048	/* NETPOLICY_ALLOW_TEXT_MAX */
#define LANE_NET_NOTE_MAX 256
/* create --name: [a-z0-9][a-z0-9._-]{0,62}, not beginning "al-". */
#define LANE_ALIAS_MAX NAMES_ALIAS_MAX
#define LANE_ALIAS_SIZE (LANE_ALIAS_MAX + 1)
/* create --secret: names, hosts and headers, LANESECRET_TEXT_MAX. */
#define LANE_SECRETS_TEXT_MAX 2048
/* How long a write waits for another process's lock before failing. */
#define REGISTRY_BUSY_MS 1000

/* Same numbering as agentlane.v1.LaneState. */
enum lane_state {
	LANE_CREATING = 1,
	LANE_READY = 2,
	LANE_DESTROYING = 3,
	LANE_DESTROYED = 4,
	LANE_FAILED = 5,
	LANE_POOLED = 6,	/* a warm-pool lane (the row: pooled = 1) */
};

enum registry_rc {
	REG_OK = 0,
	REG_ERROR = -1,
	REG_NOT_FOUND = 1,
	REG_BAD_TRANSITION = 2,
	REG_EXISTS = 3,
	REG_TAKEN = 4,		/* a live lane has that alias */
};

struct lane_record {
	char name[LANE_NAME_SIZE];
	int state;
	uint32_t cpus, memory_mib, disk_gib;
	int64_t created_at_ms;
	int64_t deadline_ms;
	uint64_t idle_timeout_ms;
	int64_t last_activity_ms;
	int64_t ended_at_ms;
	uint32_t owner_uid;
	char workspace[LANE_WORKSPACE_MAX];
	char error[LANE_ERROR_MAX];
	bool create_failed;	/* the lane ends "failed", not "destroyed" */
	/*
	 * A warm-pool lane, until a create takes it. Such a row is stored
	 * as creating/ready (booting/booted) and read as LANE_POOLED.
	 */
	bool pooled;
	bool booting;		/* pooled, and its VM still boots */
	/* The network policy; network "" on rows made before policies. */
	char network[LANE_NETWORK_SIZE];
	char allow[LANE_ALLOW_TEXT_MAX + 1];
	bool sudo;
	uint16_t proxy_port;		/* allow: its proxy's port */
	/* "enforced", "advisory", "unenforced"; "" until ready. */
	char net_policy[16];
	char net_note[LANE_NET_NOTE_MAX];
	/* create --name; "" for none. Unique among live lanes. */
	char alias[LANE_ALIAS_SIZE];
	/* Destroyed when its creating connection closes (run). */
	bool owned;
	/*
	 * create --secret: names, hosts and headers (lanesecret_text), never
	 * values. Non-empty: a restart destroys the lane (its values are
	 * gone).
	 */
	char secrets[LANE_SECRETS_TEXT_MAX + 1];
};

struct lane_label {
	char key[LANE_LABEL_KEY_MAX + 1];
	char value[LANE_LABEL_VALUE_MAX + 1];
};

struct registry_event {
	int64_t time_ms;
	char lane[LANE_NAME_SIZE];
	char event[32];
	char detail[512];
};

struct registry;

int registry_open(const char *path, struct registry **out, char *err,
    size_t errlen);
/* Runs PRAGMA optimize before closing. */
void registry_close(struct registry *);
/* Periodic upkeep (the tick): PRAGMA optimize about once an hour. */
void registry_maintain(struct registry *, int64_t now_ms);
/* The schema version this build writes. */
int registry_schema_version(void);

bool registry_transition_allowed(int from, int to);
bool registry_state_is_live(int state);

/*
 * Inserts a lane in state "creating" with its labels and a "registered"
 * event. REG_EXISTS: the name is taken; REG_TAKEN: a live lane has the
 * alias (the index enforces it, so two racing creates cannot both win).
 */
int registry_lane_insert(struct registry *, const struct lane_record *,
    const struct lane_label *labels, size_t nlabels);
int registry_lane_get(struct registry *, const char *name, struct lane_record *);
/*
 * A lane and its labels (up to max, by key) in one statement, so in one
 * read transaction: what GetLane answers, without a second lock round.
 */
int registry_lane_get_labeled(struct registry *, const char *name,
    struct lane_record *, struct lane_label *labels, size_t max, size_t *n);
/*
 * Moves a lane to another state if the state machine allows it, appending
 * event/detail in the same transaction; sets ended_at for terminal states.
 */
int registry_lane_transition(struct registry *, const char *name, int to,
    const char *event, const char *detail);

/* A transition with the fields that must change with it, atomically. */
struct registry_change {
	int to;
	const char *event;
	const char *detail;
	const char *workspace;		/* NULL: unchanged */
	const char *error;		/* NULL: unchanged */
	bool create_failed;		/* with error: the lane ends "failed" */
	int64_t last_activity_ms;	/* 0: unchanged */
	const char *net_policy;		/* NULL: unchanged */
	const char *net_note;		/* NULL: unchanged */
};

/*
 * One transaction: the transition, its event and the fields of ch. REG_OK
 * only once committed; REG_ERROR when the database could not write (busy,
 * full, I/O): then nothing changed and the same call may be retried.
 */
int registry_lane_apply(struct registry *, const char *name,
    const struct registry_change *);
int registry_lane_set_workspace(struct registry *, const char *name,
    const char *workspace);
/* Why a lane is stuck (e.g. a delete being retried); shown to users. */
int registry_lane_set_error(struct registry *, const char *name,
    const char *error);
/* The port of an allow lane's proxy, bound again after a restart. */
int registry_lane_set_proxy_port(struct registry *, const char *name,
    uint16_t port);
/* Creation failed: the lane will end "failed" even across a restart. */
int registry_lane_set_create_failed(struct registry *, const char *name,
    const char *error);
int registry_lane_set_deadline(struct registry *, const char *name,
    int64_t deadline_ms, const char *detail);
int registry_lane_touch(struct registry *, const char *name, int64_t when_ms);
/* All lanes (or only live ones), oldest first; the caller frees *out. */
int registry_lane_list(struct registry *, bool all, struct lane_record **out,
    size_t *n);
/* Live lanes, warm-pool lanes not counted. */
int registry_count_live(struct registry *, size_t *n);
/*
 * A create takes a warm-pool lane, booted or (booting) still in
 * "creating": in one transaction it stops being pooled, its life
 * (created_at, deadline, idle timeout) starts at now_ms and its labels
 * are added, and its allow list and secrets (names, hosts, headers) are
 * the taker's. REG_NOT_FOUND unless it was such a pool lane.
 */
int registry_lane_take_pooled(struct registry *, const char *name,
    bool booting, int64_t now_ms, int64_t deadline_ms,
    uint64_t idle_timeout_ms, const struct lane_label *labels, size_t nlabels,
    const char *alias, bool owned,
    const char *allow, const char *secrets);
/*
 * How long the newest creations took from registration to ready (warm-pool
 * boots included), newest first: up to max of them, in ms.
 */
#define REGISTRY_BOOT_SCAN 100000	/* events looked at, newest first */
int registry_boot_times(struct registry *, size_t max, int64_t *ms,
    size_t *n);

/*
 * The lane with that alias: the live one, else the one that had it last.
 * REG_NOT_FOUND if no lane ever had it.
 */
int registry_lane_by_alias(struct registry *, const char *alias,
    char name[LANE_NAME_SIZE]);
/*
 * Lanes whose name begins with prefix, in name order: live ones (warm-pool
 * lanes not counted), or if none is live, any; *live says which. Up to max
 * in names; *n counts up to max + 1, so that n > max says there are more.
 */
int registry_lane_by_prefix(struct registry *, const char *prefix,
    char (*names)[LANE_NAME_SIZE], size_t max, size_t *n, bool *live);

/* A position in the lane order (created_at_ms, name), for keyset paging. */
struct lane_cursor {
	int64_t created_at_ms;
	char name[LANE_NAME_SIZE];
};

/* One lane of a page with its labels (in the page's label array). */
struct lane_page_row {
	struct lane_record rec;
	size_t label_off, nlabels;
};

/*
 * Up to `limit` lanes (live only unless `all`) strictly after `after`
 * (NULL: from the first), oldest first, and their labels, in two queries.
 * The caller frees *rows and *labels.
 */
int registry_lane_page(struct registry *, bool all,
    const struct lane_cursor *after, size_t limit,
    struct lane_page_row **rows, size_t *n, struct lane_label **labels);
/* Up to `limit` events of a lane with an id above after_id, oldest first;
 * ids[i] is the position of out[i]. The caller frees *out and *ids. */
int registry_events_page(struct registry *, const char *lane,
    int64_t after_id, size_t limit, struct registry_event **out,
    int64_t **ids, size_t *n);
int registry_labels_get(struct registry *, const char *name,
    struct lane_label *labels, size_t max, size_t *n);
int registry_event_append(struct registry *, const char *lane,
    const char *event, const char *detail);
/*
 * An exec in flight: begin records it (command: its printable argv[0])
 * before it runs; end removes that record and appends the exec's event in
 * one transaction. recover, at start, turns every record a dead daemon
 * left into an "exec" event "<command> <why>" and says how many in *n.
 */
int registry_exec_begin(struct registry *, const char *lane,
    const char *command, int64_t *id);
int registry_exec_end(struct registry *, int64_t id, const char *lane,
    const char *event, const char *detail);
int registry_exec_recover(struct registry *, const char *why, size_t *n);
/* Keeps a lane's newest `keep` audit events (exec, copy-in, copy-out). */
int registry_audit_trim(struct registry *, const char *lane, uint32_t keep);
int registry_events_list(struct registry *, const char *lane,
    struct registry_event **out, size_t *n);
/* Deletes lanes that ended before cutoff, with their labels and events. */
int registry_prune(struct registry *, int64_t cutoff_ms, size_t *pruned);
/* ---- Images (daemon/image.c) ---- */

#define IMAGE_NAME_SIZE NAMES_IMAGE_SIZE	/* 1-63 of [a-z0-9._-] + NUL */
#define IMAGE_ID_SIZE 65	/* sha256 hex */
#define IMAGE_INSTANCE_SIZE (NAMES_IMAGE_INSTANCE_LEN + 1) /* "ali-"+16 hex */
#define IMAGE_SCRIPTS_MAX 2048	/* script names, '\n'-separated */

enum image_state { IMAGE_BUILDING = 1, IMAGE_READY = 2 };

struct image_record {
	char name[IMAGE_NAME_SIZE];
	char id[IMAGE_ID_SIZE];
	char instance[IMAGE_INSTANCE_SIZE];
	int state;
	char from[IMAGE_NAME_SIZE];
	bool docker;
	uint32_t cpus, memory_mib, disk_gib;
	char scripts[IMAGE_SCRIPTS_MAX];
	int64_t created_at_ms;
	uint64_t build_ms;
	/* commit: the lane (al- name, "" for a built image), its alias. */
	char committed_from[LANE_NAME_SIZE];
	char committed_alias[LANE_ALIAS_SIZE];
	int64_t committed_at_ms;
};

/* In "building"; REG_EXISTS when the name (or instance) is taken. */
int registry_image_insert(struct registry *, const struct image_record *);
int registry_image_get(struct registry *, const char *name,
    struct image_record *);
/* The oldest ready image whose content id is id, whatever its name. */
int registry_image_by_id(struct registry *, const char *id,
    struct image_record *);
int registry_image_set_ready(struct registry *, const char *name,
    uint64_t build_ms);
int registry_image_delete(struct registry *, const char *name);
/*
 * A build made under the hidden row name `row` ("~" + its instance) takes
 * `name`, ready, in one transaction. The ready image that had the name is
 * retired: renamed "~" + its instance and "building", as a build the next
 * start deletes; *replaced says so, with that row (renamed) in *old.
 * REG_EXISTS: the name is another build's.
 */
int registry_image_replace(struct registry *, const char *row,
    const char *name, uint64_t build_ms, struct image_record *old,
    bool *replaced);
/* Oldest first; the caller frees *out. */
int registry_image_list(struct registry *, struct image_record **out,
    size_t *n);

/* PRAGMA integrity_check == "ok". */
bool registry_integrity_ok(struct registry *);
const char *registry_errmsg(struct registry *);

#endif
