/*
 * The registry's own header, shared by its files and included by nothing
 * else: registry.c (opening, migrations, the statement cache, the step
 * helpers, transactions), registry_lane.c (lanes and their labels),
 * registry_image.c (images) and registry_event.c (the events table, the
 * audit trail). Callers see only registry.h.
 */
#ifndef LANED_REGISTRY_INT_H
#define LANED_REGISTRY_INT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "registry.h"

/* Distinct SQL texts in the registry's files, with room to spare. */
#define STMT_CACHE_MAX 48

struct registry {
	sqlite3 *db;
	/*
	 * Prepared once, kept for the connection's life (keyed by the address
	 * of the SQL literal), and reset after each use.
	 */
	struct {
		const char *sql;
		sqlite3_stmt *st;
	} stmts[STMT_CACHE_MAX];
	size_t nstmts;
	int64_t optimized_ms;
	/* Why the last statement failed, kept past the rollback. */
	char last_error[256];
};

/* The columns this build reads and writes (also probed at open). */
#define LANE_COLUMNS "name, state, cpus, memory_mib, disk_gib, " \
	"created_at_ms, deadline_ms, idle_timeout_ms, last_activity_ms, " \
	"ended_at_ms, owner_uid, workspace, error, create_failed, pooled, " \
	"network, allow, sudo, proxy_port, net_policy, net_note, alias, owned, " \
	"secrets"

#define IMAGE_COLUMNS "name, id, instance, state, from_image, docker, cpus, " \
	"memory_mib, disk_gib, scripts, created_at_ms, build_ms, " \
	"committed_from, committed_alias, committed_at_ms"

#define LIVE_STATES "('creating','ready','destroying')"

/* Logs a failure and keeps its message for registry_errmsg. */
void reg_failed(struct registry *, const char *msg);
/* The cached statement for sql, a literal (NULL: failed, logged). */
sqlite3_stmt *reg_prepare(struct registry *, const char *sql);
/* Done with a cached statement: it keeps no lock and no bound value. */
void reg_release(sqlite3_stmt *);
/*
 * Steps st once: SQLITE_ROW or SQLITE_DONE; anything else (st NULL after
 * a failed prepare included) is a failure, logged and kept for
 * registry_errmsg, and its SQLite code is returned.
 */
int reg_step(struct registry *, sqlite3_stmt *);
/*
 * Steps st for its one row and maps the result: REG_OK with the row to
 * read (the caller releases st after reading it), REG_NOT_FOUND,
 * REG_ERROR (released already).
 */
int reg_step_one(struct registry *, sqlite3_stmt *);
/*
 * Runs a statement that returns no rows and releases it: REG_OK,
 * REG_EXISTS (a primary key taken), REG_TAKEN (a UNIQUE index: a live
 * lane's alias) or REG_ERROR.
 */
int reg_step_done(struct registry *, sqlite3_stmt *);
/*
 * Ends a loop of reg_step over st's rows and releases st: REG_OK if the
 * last step was the end or a row (the caller stopped early), else
 * REG_ERROR (reg_step logged it).
 */
int reg_rows_end(sqlite3_stmt *, int rc);
/* BEGIN IMMEDIATE; and COMMIT if rc is REG_OK, else ROLLBACK (rc kept). */
int reg_tx_begin(struct registry *);
int reg_tx_end(struct registry *, int rc);
/* A text column into buf; NULL leaves it as it was (memset by the caller). */
void reg_column_copy(sqlite3_stmt *, int col, char *buf, size_t len);
/* One row of the events table (registry_event.c), in the caller's tx. */
int reg_event_insert(struct registry *, int64_t when, const char *lane,
    const char *event, const char *detail);

#endif
