/*
 * The registry's lanes and lane_labels tables: rows, transitions and their
 * events in one transaction, pages, references (alias, prefix), the warm
 * pool's hand-over, pruning.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "registry.h"
#include "registry_int.h"
#include "units.h"
#include "util.h"
#include "wire.h"

int
registry_lane_insert(struct registry *r, const struct lane_record *rec,
    const struct lane_label *labels, size_t nlabels)
{
	sqlite3_stmt *st;
	char detail[256];
	int rc;

	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = reg_prepare(r, "INSERT INTO lanes (name, state, cpus, memory_mib, "
	    "disk_gib, created_at_ms, deadline_ms, idle_timeout_ms, "
	    "last_activity_ms, owner_uid, pooled, network, allow, sudo, "
	    "proxy_port, alias, owned, secrets) VALUES (?1, 'creating', ?2, "
	    "?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
	    "NULLIF(?15, ''), ?16, ?17)");
	if (st != NULL) {
		sqlite3_bind_text(st, 1, rec->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, rec->cpus);
		sqlite3_bind_int64(st, 3, rec->memory_mib);
		sqlite3_bind_int64(st, 4, rec->disk_gib);
		sqlite3_bind_int64(st, 5, rec->created_at_ms);
		sqlite3_bind_int64(st, 6, rec->deadline_ms);
		sqlite3_bind_int64(st, 7, (sqlite3_int64)rec->idle_timeout_ms);
		sqlite3_bind_int64(st, 8, rec->created_at_ms);
		sqlite3_bind_int64(st, 9, rec->owner_uid);
		sqlite3_bind_int(st, 10, rec->pooled);
		sqlite3_bind_text(st, 11, rec->network, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 12, rec->allow, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 13, rec->sudo);
		sqlite3_bind_int(st, 14, rec->proxy_port);
		sqlite3_bind_text(st, 15, rec->alias, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 16, rec->owned);
		sqlite3_bind_text(st, 17, rec->secrets, -1, SQLITE_STATIC);
	}
	rc = reg_step_done(r, st);
	for (size_t i = 0; rc == REG_OK && i < nlabels; i++) {
		st = reg_prepare(r, "INSERT INTO lane_labels (lane, key, "
		    "value) VALUES (?1, ?2, ?3)");
		if (st != NULL) {
			sqlite3_bind_text(st, 1, rec->name, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, labels[i].key, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, labels[i].value, -1,
			    SQLITE_STATIC);
		}
		rc = reg_step_done(r, st);
	}
	if (rc == REG_OK) {
		char mem[16], disk[16];

		/* Sizes as every message prints them (units_format_bytes). */
		units_format_bytes((uint64_t)rec->memory_mib << 20, mem,
		    sizeof mem);
		units_format_bytes((uint64_t)rec->disk_gib << 30, disk,
		    sizeof disk);
		snprintf(detail, sizeof detail,
		    "cpus=%u memory=%s disk=%s lifetime=%llds idle=%llus "
		    "uid=%u network=%s%s%s%s%s",
		    rec->cpus, mem, disk,
		    (long long)((rec->deadline_ms - rec->created_at_ms) / 1000),
		    (unsigned long long)(rec->idle_timeout_ms / 1000),
		    rec->owner_uid, rec->network, rec->sudo ? " sudo" : "",
		    rec->alias[0] ? " alias=" : "", rec->alias,
		    rec->owned ? " owned" : "");
		rc = reg_event_insert(r, rec->created_at_ms, rec->name,
		    "registered", detail);
	}
	return reg_tx_end(r, rc);
}

static void
row_to_record(sqlite3_stmt *st, struct lane_record *rec)
{
	const char *s;

	memset(rec, 0, sizeof *rec);
	reg_column_copy(st, 0, rec->name, sizeof rec->name);
	if ((s = (const char *)sqlite3_column_text(st, 1)) != NULL)
		rec->state = wire_lane_state_from_name(s);
	rec->cpus = (uint32_t)sqlite3_column_int64(st, 2);
	rec->memory_mib = (uint32_t)sqlite3_column_int64(st, 3);
	rec->disk_gib = (uint32_t)sqlite3_column_int64(st, 4);
	rec->created_at_ms = sqlite3_column_int64(st, 5);
	rec->deadline_ms = sqlite3_column_int64(st, 6);
	rec->idle_timeout_ms = (uint64_t)sqlite3_column_int64(st, 7);
	rec->last_activity_ms = sqlite3_column_int64(st, 8);
	rec->ended_at_ms = sqlite3_column_int64(st, 9);
	rec->owner_uid = (uint32_t)sqlite3_column_int64(st, 10);
	reg_column_copy(st, 11, rec->workspace, sizeof rec->workspace);
	reg_column_copy(st, 12, rec->error, sizeof rec->error);
	rec->create_failed = sqlite3_column_int(st, 13) != 0;
	rec->pooled = sqlite3_column_int(st, 14) != 0;
	reg_column_copy(st, 15, rec->network, sizeof rec->network);
	reg_column_copy(st, 16, rec->allow, sizeof rec->allow);
	rec->sudo = sqlite3_column_int(st, 17) != 0;
	rec->proxy_port = (uint16_t)sqlite3_column_int(st, 18);
	reg_column_copy(st, 19, rec->net_policy, sizeof rec->net_policy);
	reg_column_copy(st, 20, rec->net_note, sizeof rec->net_note);
	reg_column_copy(st, 21, rec->alias, sizeof rec->alias);
	rec->owned = sqlite3_column_int(st, 22) != 0;
	reg_column_copy(st, 23, rec->secrets, sizeof rec->secrets);
	if (rec->pooled && (rec->state == LANE_CREATING ||
	    rec->state == LANE_READY)) {
		rec->booting = rec->state == LANE_CREATING;
		rec->state = LANE_POOLED;
	}
}

int
registry_lane_get(struct registry *r, const char *name, struct lane_record *rec)
{
	sqlite3_stmt *st = reg_prepare(r, "SELECT " LANE_COLUMNS
	    " FROM lanes WHERE name = ?1");
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if ((rc = reg_step_one(r, st)) != REG_OK)
		return rc;
	row_to_record(st, rec);
	reg_release(st);
	return REG_OK;
}

int
registry_lane_get_labeled(struct registry *r, const char *name,
    struct lane_record *rec, struct lane_label *labels, size_t max, size_t *n)
{
	sqlite3_stmt *st = reg_prepare(r, "SELECT " LANE_COLUMNS ", l.key, "
	    "l.value FROM lanes LEFT JOIN lane_labels l ON l.lane = "
	    "lanes.name WHERE lanes.name = ?1 ORDER BY l.key");
	size_t len = 0;
	int rc, ret = REG_NOT_FOUND;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	/* The label follows the lane's columns, however many those are. */
	int kcol = sqlite3_column_count(st) - 2;

	while ((rc = reg_step(r, st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, kcol);
		const char *v = (const char *)sqlite3_column_text(st, kcol + 1);

		if (ret == REG_NOT_FOUND) {
			row_to_record(st, rec);
			ret = REG_OK;
		}
		/* No label: the LEFT JOIN's one row has a NULL key. */
		if (k == NULL || len >= max)
			continue;
		str_copy(labels[len].key, k, sizeof labels[len].key);
		str_copy(labels[len].value, v != NULL ? v : "",
		    sizeof labels[len].value);
		len++;
	}
	if (reg_rows_end(st, rc) != REG_OK)
		ret = REG_ERROR;
	*n = len;
	return ret;
}

int
registry_lane_transition(struct registry *r, const char *name, int to,
    const char *event, const char *detail)
{
	struct registry_change ch = {
		.to = to, .event = event, .detail = detail,
	};

	return registry_lane_apply(r, name, &ch);
}

int
registry_lane_apply(struct registry *r, const char *name,
    const struct registry_change *ch)
{
	struct lane_record rec;
	sqlite3_stmt *st;
	int64_t now = time_now_ms();
	int rc;

	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	rc = registry_lane_get(r, name, &rec);
	if (rc == REG_OK && !registry_transition_allowed(rec.state, ch->to))
		rc = REG_BAD_TRANSITION;
	if (rc == REG_OK) {
		st = reg_prepare(r, "UPDATE lanes SET state = ?2, "
		    "ended_at_ms = CASE WHEN ?3 THEN ?4 ELSE ended_at_ms END, "
		    "workspace = coalesce(?5, workspace), "
		    "error = coalesce(?6, error), "
		    "create_failed = CASE WHEN ?7 THEN 1 ELSE create_failed END, "
		    "last_activity_ms = max(last_activity_ms, ?8), "
		    "net_policy = coalesce(?9, net_policy), "
		    "net_note = coalesce(?10, net_note) "
		    "WHERE name = ?1");
		if (st != NULL) {
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, wire_lane_state_name(ch->to),
			    -1, SQLITE_STATIC);
			sqlite3_bind_int(st, 3, !registry_state_is_live(ch->to));
			sqlite3_bind_int64(st, 4, now);
			if (ch->workspace != NULL)
				sqlite3_bind_text(st, 5, ch->workspace, -1,
				    SQLITE_STATIC);
			if (ch->error != NULL)
				sqlite3_bind_text(st, 6, ch->error, -1,
				    SQLITE_STATIC);
			sqlite3_bind_int(st, 7, ch->error != NULL &&
			    ch->create_failed);
			sqlite3_bind_int64(st, 8, ch->last_activity_ms);
			if (ch->net_policy != NULL)
				sqlite3_bind_text(st, 9, ch->net_policy, -1,
				    SQLITE_STATIC);
			if (ch->net_note != NULL)
				sqlite3_bind_text(st, 10, ch->net_note, -1,
				    SQLITE_STATIC);
		}
		rc = reg_step_done(r, st);
	}
	if (rc == REG_OK)
		rc = reg_event_insert(r, now, name, ch->event, ch->detail);
	return reg_tx_end(r, rc);
}

static int
update_text(struct registry *r, const char *sql, const char *name,
    const char *value)
{
	sqlite3_stmt *st = reg_prepare(r, sql);

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	if (reg_step_done(r, st) != REG_OK)
		return REG_ERROR;
	return sqlite3_changes(r->db) == 1 ? REG_OK : REG_NOT_FOUND;
}

int
registry_lane_set_workspace(struct registry *r, const char *name,
    const char *workspace)
{
	return update_text(r, "UPDATE lanes SET workspace = ?2 WHERE name = ?1",
	    name, workspace);
}

int
registry_lane_set_error(struct registry *r, const char *name, const char *error)
{
	return update_text(r, "UPDATE lanes SET error = ?2 WHERE name = ?1",
	    name, error);
}

int
registry_lane_set_proxy_port(struct registry *r, const char *name,
    uint16_t port)
{
	sqlite3_stmt *st;
	int rc;

	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = reg_prepare(r, "UPDATE lanes SET proxy_port = ?2 WHERE name = ?1");
	if (st != NULL) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, port);
	}
	rc = reg_step_done(r, st);
	if (rc == REG_OK && sqlite3_changes(r->db) != 1)
		rc = REG_NOT_FOUND;
	return reg_tx_end(r, rc);
}

int
registry_lane_set_create_failed(struct registry *r, const char *name,
    const char *error)
{
	return update_text(r, "UPDATE lanes SET error = ?2, create_failed = 1 "
	    "WHERE name = ?1", name, error);
}

int
registry_lane_set_deadline(struct registry *r, const char *name,
    int64_t deadline_ms, const char *detail)
{
	sqlite3_stmt *st;
	int rc;

	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = reg_prepare(r, "UPDATE lanes SET deadline_ms = ?2 WHERE name = ?1 "
	    "AND state IN ('creating', 'ready')");
	if (st != NULL) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, deadline_ms);
	}
	rc = reg_step_done(r, st);
	if (rc == REG_OK && sqlite3_changes(r->db) != 1)
		rc = REG_NOT_FOUND;
	if (rc == REG_OK)
		rc = reg_event_insert(r, time_now_ms(), name, "extended",
		    detail);
	return reg_tx_end(r, rc);
}

int
registry_lane_touch(struct registry *r, const char *name, int64_t when_ms)
{
	sqlite3_stmt *st = reg_prepare(r, "UPDATE lanes SET last_activity_ms = "
	    "max(last_activity_ms, ?2) WHERE name = ?1");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, when_ms);
	return reg_step_done(r, st);
}

int
registry_lane_list(struct registry *r, bool all, struct lane_record **out,
    size_t *n)
{
	sqlite3_stmt *st = reg_prepare(r, all ?
	    "SELECT " LANE_COLUMNS " FROM lanes ORDER BY created_at_ms, name" :
	    "SELECT " LANE_COLUMNS " FROM lanes WHERE state IN "
	    "('creating','ready','destroying') ORDER BY created_at_ms, name");
	struct lane_record *v = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	/* A failed step is logged (reg_step), as every other read's. */
	while ((rc = reg_step(r, st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap == 0 ? 16 : cap * 2;
			v = xreallocarray(v, cap, sizeof *v);
		}
		row_to_record(st, &v[len++]);
	}
	if (reg_rows_end(st, rc) != REG_OK) {
		free(v);
		return REG_ERROR;
	}
	*out = v;
	*n = len;
	return REG_OK;
}

static int
name_cmp(const void *a, const void *b)
{
	const struct lane_page_row *const *x = a, *const *y = b;

	return strcmp((*x)->rec.name, (*y)->rec.name);
}

/*
 * A page is two queries with the same filter, order and bound (?1-?4):
 * its lanes, and the labels of those lanes. Warm-pool lanes are nobody's
 * yet: only `all` lists them.
 */
#define PAGE_WHERE " WHERE (?1 OR (state IN " LIVE_STATES " AND pooled = 0)) " \
	"AND (created_at_ms, name) > (?2, ?3) ORDER BY created_at_ms, name " \
	"LIMIT ?4"
static const char page_lanes_sql[] = "SELECT " LANE_COLUMNS " FROM lanes"
    PAGE_WHERE;
static const char page_labels_sql[] = "SELECT ll.lane, ll.key, ll.value "
    "FROM lane_labels ll JOIN (SELECT name FROM lanes" PAGE_WHERE
    ") p ON p.name = ll.lane ORDER BY ll.lane, ll.key";
#undef PAGE_WHERE

static sqlite3_stmt *
page_prepare(struct registry *r, const char *sql, bool all,
    const struct lane_cursor *after, size_t limit)
{
	sqlite3_stmt *st = reg_prepare(r, sql);

	if (st == NULL)
		return NULL;
	sqlite3_bind_int(st, 1, all);
	sqlite3_bind_int64(st, 2, after != NULL ? after->created_at_ms :
	    INT64_MIN);
	sqlite3_bind_text(st, 3, after != NULL ? after->name : "", -1,
	    SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)limit);
	return st;
}

/* The page's lanes into rows (limit of them, zeroed). */
static int
page_lanes(struct registry *r, bool all, const struct lane_cursor *after,
    size_t limit, struct lane_page_row *rows, size_t *np)
{
	sqlite3_stmt *st = page_prepare(r, page_lanes_sql, all, after, limit);
	size_t n = 0;
	int rc = SQLITE_DONE;

	if (st == NULL)
		return REG_ERROR;
	while (n < limit && (rc = reg_step(r, st)) == SQLITE_ROW)
		row_to_record(st, &rows[n++].rec);
	*np = n;
	return reg_rows_end(st, rc);
}

/* Appends the label of st's row to its lane in byname (sorted by name). */
static void
page_label_add(sqlite3_stmt *st, struct lane_page_row **byname, size_t n,
    struct lane_label **labels, size_t *nl, size_t *cap)
{
	const char *ln = (const char *)sqlite3_column_text(st, 0);
	const char *k = (const char *)sqlite3_column_text(st, 1);
	const char *v = (const char *)sqlite3_column_text(st, 2);
	struct lane_page_row key, *kp = &key, **hit;

	str_copy(key.rec.name, ln != NULL ? ln : "", sizeof key.rec.name);
	hit = bsearch(&kp, byname, n, sizeof *byname, name_cmp);
	if (hit == NULL || (*hit)->nlabels >= LANE_LABELS_MAX)
		return;
	if (*nl == *cap) {
		*cap = *cap == 0 ? 64 : *cap * 2;
		*labels = xreallocarray(*labels, *cap, sizeof **labels);
	}
	str_copy((*labels)[*nl].key, k != NULL ? k : "",
	    sizeof (*labels)[*nl].key);
	str_copy((*labels)[*nl].value, v != NULL ? v : "",
	    sizeof (*labels)[*nl].value);
	/* Rows of one lane are adjacent. */
	if ((*hit)->nlabels == 0)
		(*hit)->label_off = *nl;
	(*hit)->nlabels++;
	(*nl)++;
}

/* The labels of the page's n lanes in rows, by name. */
static int
page_labels(struct registry *r, bool all, const struct lane_cursor *after,
    size_t limit, struct lane_page_row *rows, size_t n,
    struct lane_label **labelsp)
{
	sqlite3_stmt *st = page_prepare(r, page_labels_sql, all, after, limit);
	struct lane_page_row **byname;
	struct lane_label *labels = NULL;
	size_t nl = 0, cap = 0;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	byname = xcalloc(n, sizeof *byname);
	for (size_t i = 0; i < n; i++)
		byname[i] = &rows[i];
	qsort(byname, n, sizeof *byname, name_cmp);
	while ((rc = reg_step(r, st)) == SQLITE_ROW)
		page_label_add(st, byname, n, &labels, &nl, &cap);
	free(byname);
	if (reg_rows_end(st, rc) != REG_OK) {
		free(labels);
		return REG_ERROR;
	}
	*labelsp = labels;
	return REG_OK;
}

int
registry_lane_page(struct registry *r, bool all,
    const struct lane_cursor *after, size_t limit,
    struct lane_page_row **rowsp, size_t *np, struct lane_label **labelsp)
{
	struct lane_page_row *rows = xcalloc(limit, sizeof *rows);
	struct lane_label *labels = NULL;
	size_t n = 0;

	if (page_lanes(r, all, after, limit, rows, &n) != REG_OK ||
	    page_labels(r, all, after, limit, rows, n, &labels) != REG_OK) {
		free(rows);
		return REG_ERROR;
	}
	*rowsp = rows;
	*np = n;
	*labelsp = labels;
	return REG_OK;
}

int
registry_count_live(struct registry *r, size_t *n)
{
	/* Warm-pool lanes have their own cap (pool_size). */
	sqlite3_stmt *st = reg_prepare(r, "SELECT count(*) FROM lanes WHERE "
	    "state IN " LIVE_STATES " AND pooled = 0");

	/* count(*) always has its row: none is an error too. */
	if (reg_step_one(r, st) != REG_OK)
		return REG_ERROR;
	*n = (size_t)sqlite3_column_int64(st, 0);
	reg_release(st);
	return REG_OK;
}

int
registry_labels_get(struct registry *r, const char *name,
    struct lane_label *labels, size_t max, size_t *n)
{
	sqlite3_stmt *st = reg_prepare(r, "SELECT key, value FROM lane_labels "
	    "WHERE lane = ?1 ORDER BY key");
	size_t len = 0;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	while ((rc = reg_step(r, st)) == SQLITE_ROW && len < max) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);

		str_copy(labels[len].key, k != NULL ? k : "",
		    sizeof labels[len].key);
		str_copy(labels[len].value, v != NULL ? v : "",
		    sizeof labels[len].value);
		len++;
	}
	if (reg_rows_end(st, rc) != REG_OK)
		return REG_ERROR;
	*n = len;
	return REG_OK;
}

int
registry_prune(struct registry *r, int64_t cutoff_ms, size_t *pruned)
{
	sqlite3_stmt *st;
	int rc;

	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = reg_prepare(r, "DELETE FROM events WHERE lane IN (SELECT name "
	    "FROM lanes WHERE state IN ('destroyed','failed') AND ended_at_ms < ?1)");
	if (st != NULL)
		sqlite3_bind_int64(st, 1, cutoff_ms);
	rc = reg_step_done(r, st);
	if (rc == REG_OK) {
		st = reg_prepare(r, "DELETE FROM lanes WHERE state IN "
		    "('destroyed','failed') AND ended_at_ms < ?1");
		if (st != NULL)
			sqlite3_bind_int64(st, 1, cutoff_ms);
		rc = reg_step_done(r, st);
		if (rc == REG_OK && pruned != NULL)
			*pruned = (size_t)sqlite3_changes(r->db);
	}
	return reg_tx_end(r, rc);
}

int
registry_lane_take_pooled(struct registry *r, const char *name, bool booting,
    int64_t now_ms, int64_t deadline_ms, uint64_t idle_timeout_ms,
    const struct lane_label *labels, size_t nlabels, const char *alias,
    bool owned, const char *allow, const char *secrets)
{
	sqlite3_stmt *st;
	char detail[256];
	int rc;

	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	/* Only a pool lane one create has not taken already. */
	st = reg_prepare(r, "UPDATE lanes SET pooled = 0, created_at_ms = ?2, "
	    "deadline_ms = ?3, idle_timeout_ms = ?4, last_activity_ms = ?2, "
	    "alias = NULLIF(?5, ''), owned = ?6, allow = ?8, secrets = ?9 "
	    "WHERE name = ?1 AND pooled = 1 AND state = ?7");
	if (st != NULL) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, now_ms);
		sqlite3_bind_int64(st, 3, deadline_ms);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)idle_timeout_ms);
		sqlite3_bind_text(st, 5, alias, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 6, owned);
		sqlite3_bind_text(st, 7, booting ? "creating" : "ready", -1,
		    SQLITE_STATIC);
		sqlite3_bind_text(st, 8, allow, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 9, secrets, -1, SQLITE_STATIC);
	}
	rc = reg_step_done(r, st);
	if (rc == REG_OK && sqlite3_changes(r->db) != 1)
		rc = REG_NOT_FOUND;
	for (size_t i = 0; rc == REG_OK && i < nlabels; i++) {
		st = reg_prepare(r, "INSERT INTO lane_labels (lane, key, "
		    "value) VALUES (?1, ?2, ?3)");
		if (st != NULL) {
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, labels[i].key, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, labels[i].value, -1,
			    SQLITE_STATIC);
		}
		rc = reg_step_done(r, st);
	}
	if (rc == REG_OK) {
		snprintf(detail, sizeof detail, "lifetime=%llds idle=%llus%s%s%s%s",
		    (long long)((deadline_ms - now_ms) / 1000),
		    (unsigned long long)(idle_timeout_ms / 1000),
		    alias[0] ? " alias=" : "", alias, owned ? " owned" : "",
		    booting ? " booting" : "");
		rc = reg_event_insert(r, now_ms, name, "taken-from-pool",
		    detail);
	}
	return reg_tx_end(r, rc);
}

int
registry_lane_by_alias(struct registry *r, const char *alias,
    char name[LANE_NAME_SIZE])
{
	/* The live one first (at most one: the index), then the newest. */
	sqlite3_stmt *st = reg_prepare(r, "SELECT name FROM lanes WHERE "
	    "alias = ?1 ORDER BY state IN " LIVE_STATES " DESC, "
	    "created_at_ms DESC, name DESC LIMIT 1");
	const char *s;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, alias, -1, SQLITE_STATIC);
	if ((rc = reg_step_one(r, st)) != REG_OK)
		return rc;
	s = (const char *)sqlite3_column_text(st, 0);
	str_copy(name, s != NULL ? s : "", LANE_NAME_SIZE);
	reg_release(st);
	return REG_OK;
}

int
registry_lane_by_prefix(struct registry *r, const char *prefix,
    char (*names)[LANE_NAME_SIZE], size_t max, size_t *n, bool *live)
{
	static const char *const sql[] = {
		"SELECT name FROM lanes WHERE substr(name, 1, length(?1)) = ?1 "
		"AND state IN " LIVE_STATES " AND pooled = 0 ORDER BY name "
		"LIMIT ?2",
		"SELECT name FROM lanes WHERE substr(name, 1, length(?1)) = ?1 "
		"ORDER BY name LIMIT ?2",
	};
	sqlite3_stmt *st;
	const char *s;
	int rc;

	*n = 0;
	for (int q = 0; q < 2 && *n == 0; q++) {
		if ((st = reg_prepare(r, sql[q])) == NULL)
			return REG_ERROR;
		sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)max + 1);
		while ((rc = reg_step(r, st)) == SQLITE_ROW) {
			if (*n < max) {
				s = (const char *)sqlite3_column_text(st, 0);
				str_copy(names[*n], s != NULL ? s : "",
				    LANE_NAME_SIZE);
			}
			(*n)++;
		}
		if (reg_rows_end(st, rc) != REG_OK)
			return REG_ERROR;
		*live = q == 0;
	}
	return REG_OK;
}
