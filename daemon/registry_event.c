/*
 * The registry's events table: the audit trail of every lane (its
 * lifecycle, execs, copies, proxy decisions), read by pages and trimmed
 * to a lane's audit cap; boot times for the create estimate; and the
 * execs in flight, so that one a crash cut off is said in the events.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "registry.h"
#include "registry_int.h"
#include "util.h"
#include "wire.h"

int
reg_event_insert(struct registry *r, int64_t when, const char *lane,
    const char *event, const char *detail)
{
	sqlite3_stmt *st = reg_prepare(r, "INSERT INTO events (time_ms, lane, "
	    "event, detail) VALUES (?1, ?2, ?3, ?4)");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_int64(st, 1, when);
	sqlite3_bind_text(st, 2, lane, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, event, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, detail != NULL ? detail : "", -1, SQLITE_STATIC);
	return reg_step_done(r, st);
}

int
registry_event_append(struct registry *r, const char *lane, const char *event,
    const char *detail)
{
	return reg_event_insert(r, time_now_ms(), lane, event, detail);
}

int
registry_events_page(struct registry *r, const char *lane, int64_t after_id,
    size_t limit, struct registry_event **out, int64_t **idsp, size_t *np)
{
	sqlite3_stmt *st = reg_prepare(r, "SELECT id, time_ms, lane, event, "
	    "detail FROM events WHERE lane = ?1 AND id > ?2 ORDER BY id "
	    "LIMIT ?3");
	struct registry_event *v;
	int64_t *ids;
	size_t n = 0;
	int rc = SQLITE_DONE;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, lane, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, after_id);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)limit);
	v = xcalloc(limit, sizeof *v);
	ids = xcalloc(limit, sizeof *ids);
	while (n < limit && (rc = reg_step(r, st)) == SQLITE_ROW) {
		const char *s;

		ids[n] = sqlite3_column_int64(st, 0);
		v[n].time_ms = sqlite3_column_int64(st, 1);
		if ((s = (const char *)sqlite3_column_text(st, 2)) != NULL)
			str_copy(v[n].lane, s, sizeof v[n].lane);
		if ((s = (const char *)sqlite3_column_text(st, 3)) != NULL)
			str_copy(v[n].event, s, sizeof v[n].event);
		if ((s = (const char *)sqlite3_column_text(st, 4)) != NULL)
			str_copy(v[n].detail, s, sizeof v[n].detail);
		n++;
	}
	if (reg_rows_end(st, rc) != REG_OK) {
		free(v);
		free(ids);
		return REG_ERROR;
	}
	*out = v;
	*idsp = ids;
	*np = n;
	return REG_OK;
}

int
registry_events_list(struct registry *r, const char *lane,
    struct registry_event **out, size_t *n)
{
	sqlite3_stmt *st = reg_prepare(r, "SELECT time_ms, lane, event, detail "
	    "FROM events WHERE lane = ?1 ORDER BY id");
	struct registry_event *v = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, lane, -1, SQLITE_STATIC);
	while ((rc = reg_step(r, st)) == SQLITE_ROW) {
		const char *s;

		if (len == cap) {
			cap = cap == 0 ? 32 : cap * 2;
			v = xreallocarray(v, cap, sizeof *v);
		}
		memset(&v[len], 0, sizeof v[len]);
		v[len].time_ms = sqlite3_column_int64(st, 0);
		if ((s = (const char *)sqlite3_column_text(st, 1)) != NULL)
			str_copy(v[len].lane, s, sizeof v[len].lane);
		if ((s = (const char *)sqlite3_column_text(st, 2)) != NULL)
			str_copy(v[len].event, s, sizeof v[len].event);
		if ((s = (const char *)sqlite3_column_text(st, 3)) != NULL)
			str_copy(v[len].detail, s, sizeof v[len].detail);
		len++;
	}
	if (reg_rows_end(st, rc) != REG_OK) {
		free(v);
		return REG_ERROR;
	}
	*out = v;
	*n = len;
	return REG_OK;
}

int
registry_boot_times(struct registry *r, size_t max, int64_t *ms, size_t *n)
{
	/*
	 * The newest ready events among the last REGISTRY_BOOT_SCAN events
	 * (a bounded scan whatever the audit trail holds), each with its
	 * lane's registration.
	 */
	sqlite3_stmt *st = reg_prepare(r, "SELECT e.time_ms - g.time_ms FROM "
	    "events e JOIN events g ON g.lane = e.lane AND "
	    "g.event = 'registered' WHERE e.event IN ('ready', 'pooled') AND "
	    "e.id > (SELECT ifnull(max(id), 0) FROM events) - ?2 "
	    "ORDER BY e.id DESC LIMIT ?1");
	int rc;

	*n = 0;
	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)max);
	sqlite3_bind_int64(st, 2, REGISTRY_BOOT_SCAN);
	while ((rc = reg_step(r, st)) == SQLITE_ROW && *n < max)
		if (sqlite3_column_int64(st, 0) >= 0)
			ms[(*n)++] = sqlite3_column_int64(st, 0);
	return reg_rows_end(st, rc);
}

int
registry_audit_trim(struct registry *r, const char *lane, uint32_t keep)
{
	/* Only the audit events: a lane's lifecycle stays whole. */
	sqlite3_stmt *st = reg_prepare(r, "DELETE FROM events WHERE "
	    "lane = ?1 AND (event IN ('exec', 'copy-in', 'copy-out') OR "
	    "event GLOB 'proxy-*') AND id <= (SELECT id FROM events WHERE "
	    "lane = ?1 AND (event IN ('exec', 'copy-in', 'copy-out') OR "
	    "event GLOB 'proxy-*') "
	    "ORDER BY id DESC LIMIT 1 OFFSET ?2)");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, lane, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, keep);
	return reg_step_done(r, st);
}

/* ---- Execs in flight: recorded before they run, found after a crash ---- */

int
registry_exec_begin(struct registry *r, const char *lane, const char *command,
    int64_t *id)
{
	sqlite3_stmt *st = reg_prepare(r, "INSERT INTO execs (lane, "
	    "started_ms, command) VALUES (?1, ?2, ?3)");
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, lane, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, time_now_ms());
	sqlite3_bind_text(st, 3, command, -1, SQLITE_STATIC);
	if ((rc = reg_step_done(r, st)) == REG_OK)
		*id = sqlite3_last_insert_rowid(r->db);
	return rc;
}

int
registry_exec_end(struct registry *r, int64_t id, const char *lane,
    const char *event, const char *detail)
{
	sqlite3_stmt *st;
	int rc;

	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = reg_prepare(r, "DELETE FROM execs WHERE id = ?1");
	if (st != NULL)
		sqlite3_bind_int64(st, 1, id);
	rc = reg_step_done(r, st);
	if (rc == REG_OK)
		rc = reg_event_insert(r, time_now_ms(), lane, event, detail);
	return reg_tx_end(r, rc);
}

int
registry_exec_recover(struct registry *r, const char *why, size_t *n)
{
	sqlite3_stmt *st;
	int rc;

	*n = 0;
	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = reg_prepare(r, "INSERT INTO events (time_ms, lane, event, detail) "
	    "SELECT ?1, lane, 'exec', command || ' ' || ?2 FROM execs "
	    "ORDER BY id");
	if (st != NULL) {
		sqlite3_bind_int64(st, 1, time_now_ms());
		sqlite3_bind_text(st, 2, why, -1, SQLITE_STATIC);
	}
	rc = reg_step_done(r, st);
	if (rc == REG_OK) {
		*n = (size_t)sqlite3_changes(r->db);
		rc = reg_step_done(r, reg_prepare(r, "DELETE FROM execs"));
	}
	return reg_tx_end(r, rc);
}
