#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "registry.h"
#include "util.h"
#include "wire.h"

struct registry {
	sqlite3 *db;
};

/*
 * Migrations, applied in order inside one transaction each; user_version
 * records how many have run. Never edit a shipped entry: append a new one.
 */
static const char *const migrations[] = {
	/* 1: lanes, labels, events */
	"CREATE TABLE lanes ("
	"  name TEXT PRIMARY KEY CHECK (name GLOB 'al-"
	"[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]"
	"[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'),"
	"  state TEXT NOT NULL CHECK (state IN"
	"    ('creating','ready','destroying','destroyed','failed')),"
	"  cpus INTEGER NOT NULL,"
	"  memory_mib INTEGER NOT NULL,"
	"  disk_gib INTEGER NOT NULL,"
	"  created_at_ms INTEGER NOT NULL,"
	"  deadline_ms INTEGER NOT NULL,"
	"  idle_timeout_ms INTEGER NOT NULL DEFAULT 0,"
	"  last_activity_ms INTEGER NOT NULL,"
	"  ended_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  owner_uid INTEGER NOT NULL,"
	"  workspace TEXT NOT NULL DEFAULT '',"
	"  error TEXT NOT NULL DEFAULT '',"
	"  create_failed INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE INDEX lanes_state ON lanes(state);"
	"CREATE TABLE lane_labels ("
	"  lane TEXT NOT NULL REFERENCES lanes(name) ON DELETE CASCADE,"
	"  key TEXT NOT NULL,"
	"  value TEXT NOT NULL,"
	"  PRIMARY KEY (lane, key)"
	");"
	"CREATE TABLE events ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  time_ms INTEGER NOT NULL,"
	"  lane TEXT NOT NULL,"
	"  event TEXT NOT NULL,"
	"  detail TEXT NOT NULL DEFAULT ''"
	");"
	"CREATE INDEX events_lane ON events(lane, id);",
};

#define SCHEMA_VERSION ((int)(sizeof migrations / sizeof *migrations))

int
registry_schema_version(void)
{
	return SCHEMA_VERSION;
}

const char *
registry_errmsg(struct registry *r)
{
	return sqlite3_errmsg(r->db);
}

static int
exec_sql(struct registry *r, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(r->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		log_warnx("registry: %s", msg != NULL ? msg : "error");
		sqlite3_free(msg);
		return REG_ERROR;
	}
	return REG_OK;
}

static int
pragma_int(struct registry *r, const char *sql, int *out)
{
	sqlite3_stmt *st;
	int rc = REG_ERROR;

	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
		return REG_ERROR;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*out = sqlite3_column_int(st, 0);
		rc = REG_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

static int
registry_migrate(struct registry *r, char *err, size_t errlen)
{
	int version;

	if (pragma_int(r, "PRAGMA user_version", &version) != REG_OK) {
		snprintf(err, errlen, "reading user_version: %s",
		    sqlite3_errmsg(r->db));
		return REG_ERROR;
	}
	if (version > SCHEMA_VERSION) {
		snprintf(err, errlen, "registry schema %d is newer than this "
		    "agent-laned (%d); refusing to touch it", version,
		    SCHEMA_VERSION);
		return REG_ERROR;
	}
	for (; version < SCHEMA_VERSION; version++) {
		char *set;

		xasprintf(&set, "PRAGMA user_version = %d", version + 1);
		if (exec_sql(r, "BEGIN IMMEDIATE") != REG_OK ||
		    exec_sql(r, migrations[version]) != REG_OK ||
		    exec_sql(r, set) != REG_OK ||
		    exec_sql(r, "COMMIT") != REG_OK) {
			snprintf(err, errlen, "migration %d failed: %s",
			    version + 1, sqlite3_errmsg(r->db));
			free(set);
			(void)exec_sql(r, "ROLLBACK");
			return REG_ERROR;
		}
		free(set);
		log_info("registry: migrated to schema %d", version + 1);
	}
	return REG_OK;
}

int
registry_open(const char *path, struct registry **out, char *err, size_t errlen)
{
	struct registry *r = xcalloc(1, sizeof *r);
	int fd;

	if (errlen > 0)
		err[0] = '\0';
	/* Create the file 0600 ourselves; SQLite would honour the umask. */
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(r);
		return REG_ERROR;
	}
	close(fd);
	if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		    r->db != NULL ? sqlite3_errmsg(r->db) : "cannot open");
		sqlite3_close(r->db);
		free(r);
		return REG_ERROR;
	}
	sqlite3_busy_timeout(r->db, 5000);
	sqlite3_extended_result_codes(r->db, 1);
	/*
	 * FULL: the "creating" row must be on disk before limactl create runs,
	 * even across a power cut, or a VM could exist that nothing can find.
	 */
	if (exec_sql(r, "PRAGMA journal_mode = WAL") != REG_OK ||
	    exec_sql(r, "PRAGMA synchronous = FULL") != REG_OK ||
	    exec_sql(r, "PRAGMA foreign_keys = ON") != REG_OK ||
	    registry_migrate(r, err, errlen) != REG_OK) {
		if (err[0] == '\0')
			snprintf(err, errlen, "%s: %s", path,
			    sqlite3_errmsg(r->db));
		sqlite3_close(r->db);
		free(r);
		return REG_ERROR;
	}
	*out = r;
	return REG_OK;
}

void
registry_close(struct registry *r)
{
	if (r == NULL)
		return;
	if (sqlite3_close(r->db) != SQLITE_OK)
		log_warnx("registry: close: %s", sqlite3_errmsg(r->db));
	free(r);
}

bool
registry_state_is_live(int state)
{
	return state == LANE_CREATING || state == LANE_READY ||
	    state == LANE_DESTROYING;
}

bool
registry_transition_allowed(int from, int to)
{
	switch (from) {
	case LANE_CREATING:
		return to == LANE_READY || to == LANE_DESTROYING;
	case LANE_READY:
		return to == LANE_DESTROYING;
	case LANE_DESTROYING:
		return to == LANE_DESTROYED || to == LANE_FAILED;
	default:
		return false;	/* destroyed and failed are terminal */
	}
}

static sqlite3_stmt *
prepare(struct registry *r, const char *sql)
{
	sqlite3_stmt *st;

	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
		log_warnx("registry: prepare: %s", sqlite3_errmsg(r->db));
		return NULL;
	}
	return st;
}

/* Runs a statement that returns no rows and finalizes it. */
static int
step_done(struct registry *r, sqlite3_stmt *st)
{
	int rc;

	if (st == NULL)
		return REG_ERROR;
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		log_warnx("registry: %s", sqlite3_errmsg(r->db));
		/* Only a taken name is "exists"; a failed CHECK is an error. */
		if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			return REG_EXISTS;
		return REG_ERROR;
	}
	return REG_OK;
}

static int
event_insert(struct registry *r, int64_t when, const char *lane,
    const char *event, const char *detail)
{
	sqlite3_stmt *st = prepare(r, "INSERT INTO events (time_ms, lane, "
	    "event, detail) VALUES (?1, ?2, ?3, ?4)");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_int64(st, 1, when);
	sqlite3_bind_text(st, 2, lane, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, event, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, detail != NULL ? detail : "", -1, SQLITE_STATIC);
	return step_done(r, st);
}

static int
tx_begin(struct registry *r)
{
	return exec_sql(r, "BEGIN IMMEDIATE");
}

static int
tx_end(struct registry *r, int rc)
{
	if (rc == REG_OK && exec_sql(r, "COMMIT") == REG_OK)
		return REG_OK;
	(void)exec_sql(r, "ROLLBACK");
	return rc == REG_OK ? REG_ERROR : rc;
}

int
registry_event_append(struct registry *r, const char *lane, const char *event,
    const char *detail)
{
	return event_insert(r, time_now_ms(), lane, event, detail);
}

int
registry_lane_insert(struct registry *r, const struct lane_record *rec,
    const struct lane_label *labels, size_t nlabels)
{
	sqlite3_stmt *st;
	char detail[256];
	int rc;

	if (tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = prepare(r, "INSERT INTO lanes (name, state, cpus, memory_mib, "
	    "disk_gib, created_at_ms, deadline_ms, idle_timeout_ms, "
	    "last_activity_ms, owner_uid) VALUES (?1, 'creating', ?2, ?3, ?4, "
	    "?5, ?6, ?7, ?8, ?9)");
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
	}
	rc = step_done(r, st);
	for (size_t i = 0; rc == REG_OK && i < nlabels; i++) {
		st = prepare(r, "INSERT INTO lane_labels (lane, key, value) "
		    "VALUES (?1, ?2, ?3)");
		if (st != NULL) {
			sqlite3_bind_text(st, 1, rec->name, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, labels[i].key, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, labels[i].value, -1,
			    SQLITE_STATIC);
		}
		rc = step_done(r, st);
	}
	if (rc == REG_OK) {
		snprintf(detail, sizeof detail,
		    "cpus=%u memory=%uMiB disk=%uGiB lifetime=%llds idle=%llus uid=%u",
		    rec->cpus, rec->memory_mib, rec->disk_gib,
		    (long long)((rec->deadline_ms - rec->created_at_ms) / 1000),
		    (unsigned long long)(rec->idle_timeout_ms / 1000),
		    rec->owner_uid);
		rc = event_insert(r, rec->created_at_ms, rec->name,
		    "registered", detail);
	}
	return tx_end(r, rc);
}

#define LANE_COLUMNS "name, state, cpus, memory_mib, disk_gib, " \
	"created_at_ms, deadline_ms, idle_timeout_ms, last_activity_ms, " \
	"ended_at_ms, owner_uid, workspace, error, create_failed"

static void
row_to_record(sqlite3_stmt *st, struct lane_record *rec)
{
	const char *s;

	memset(rec, 0, sizeof *rec);
	if ((s = (const char *)sqlite3_column_text(st, 0)) != NULL)
		str_copy(rec->name, s, sizeof rec->name);
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
	if ((s = (const char *)sqlite3_column_text(st, 11)) != NULL)
		str_copy(rec->workspace, s, sizeof rec->workspace);
	if ((s = (const char *)sqlite3_column_text(st, 12)) != NULL)
		str_copy(rec->error, s, sizeof rec->error);
	rec->create_failed = sqlite3_column_int(st, 13) != 0;
}

int
registry_lane_get(struct registry *r, const char *name, struct lane_record *rec)
{
	sqlite3_stmt *st = prepare(r, "SELECT " LANE_COLUMNS
	    " FROM lanes WHERE name = ?1");
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		row_to_record(st, rec);
		rc = REG_OK;
	} else if (rc == SQLITE_DONE)
		rc = REG_NOT_FOUND;
	else {
		log_warnx("registry: %s", sqlite3_errmsg(r->db));
		rc = REG_ERROR;
	}
	sqlite3_finalize(st);
	return rc;
}

int
registry_lane_transition(struct registry *r, const char *name, int to,
    const char *event, const char *detail)
{
	struct lane_record rec;
	sqlite3_stmt *st;
	int64_t now = time_now_ms();
	int rc;

	if (tx_begin(r) != REG_OK)
		return REG_ERROR;
	rc = registry_lane_get(r, name, &rec);
	if (rc == REG_OK && !registry_transition_allowed(rec.state, to))
		rc = REG_BAD_TRANSITION;
	if (rc == REG_OK) {
		st = prepare(r, "UPDATE lanes SET state = ?2, "
		    "ended_at_ms = CASE WHEN ?3 THEN ?4 ELSE ended_at_ms END "
		    "WHERE name = ?1");
		if (st != NULL) {
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, wire_lane_state_name(to), -1,
			    SQLITE_STATIC);
			sqlite3_bind_int(st, 3, !registry_state_is_live(to));
			sqlite3_bind_int64(st, 4, now);
		}
		rc = step_done(r, st);
	}
	if (rc == REG_OK)
		rc = event_insert(r, now, name, event, detail);
	return tx_end(r, rc);
}

static int
update_text(struct registry *r, const char *sql, const char *name,
    const char *value)
{
	sqlite3_stmt *st = prepare(r, sql);

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
	if (step_done(r, st) != REG_OK)
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

	if (tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = prepare(r, "UPDATE lanes SET deadline_ms = ?2 WHERE name = ?1 "
	    "AND state IN ('creating', 'ready')");
	if (st != NULL) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, deadline_ms);
	}
	rc = step_done(r, st);
	if (rc == REG_OK && sqlite3_changes(r->db) != 1)
		rc = REG_NOT_FOUND;
	if (rc == REG_OK)
		rc = event_insert(r, time_now_ms(), name, "extended", detail);
	return tx_end(r, rc);
}

int
registry_lane_touch(struct registry *r, const char *name, int64_t when_ms)
{
	sqlite3_stmt *st = prepare(r, "UPDATE lanes SET last_activity_ms = "
	    "max(last_activity_ms, ?2) WHERE name = ?1");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, when_ms);
	return step_done(r, st);
}

int
registry_lane_list(struct registry *r, bool all, struct lane_record **out,
    size_t *n)
{
	sqlite3_stmt *st = prepare(r, all ?
	    "SELECT " LANE_COLUMNS " FROM lanes ORDER BY created_at_ms, name" :
	    "SELECT " LANE_COLUMNS " FROM lanes WHERE state IN "
	    "('creating','ready','destroying') ORDER BY created_at_ms, name");
	struct lane_record *v = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap == 0 ? 16 : cap * 2;
			v = xreallocarray(v, cap, sizeof *v);
		}
		row_to_record(st, &v[len++]);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return REG_ERROR;
	}
	*out = v;
	*n = len;
	return REG_OK;
}

int
registry_count_live(struct registry *r, size_t *n)
{
	sqlite3_stmt *st = prepare(r, "SELECT count(*) FROM lanes WHERE state "
	    "IN ('creating','ready','destroying')");
	int rc = REG_ERROR;

	if (st == NULL)
		return REG_ERROR;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*n = (size_t)sqlite3_column_int64(st, 0);
		rc = REG_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

int
registry_labels_get(struct registry *r, const char *name,
    struct lane_label *labels, size_t max, size_t *n)
{
	sqlite3_stmt *st = prepare(r, "SELECT key, value FROM lane_labels "
	    "WHERE lane = ?1 ORDER BY key");
	size_t len = 0;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && len < max) {
		const char *k = (const char *)sqlite3_column_text(st, 0);
		const char *v = (const char *)sqlite3_column_text(st, 1);

		str_copy(labels[len].key, k != NULL ? k : "",
		    sizeof labels[len].key);
		str_copy(labels[len].value, v != NULL ? v : "",
		    sizeof labels[len].value);
		len++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return REG_ERROR;
	*n = len;
	return REG_OK;
}

int
registry_events_list(struct registry *r, const char *lane,
    struct registry_event **out, size_t *n)
{
	sqlite3_stmt *st = prepare(r, "SELECT time_ms, lane, event, detail "
	    "FROM events WHERE lane = ?1 ORDER BY id");
	struct registry_event *v = NULL;
	size_t len = 0, cap = 0;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, lane, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
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
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return REG_ERROR;
	}
	*out = v;
	*n = len;
	return REG_OK;
}

int
registry_prune(struct registry *r, int64_t cutoff_ms, size_t *pruned)
{
	sqlite3_stmt *st;
	int rc;

	if (tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = prepare(r, "DELETE FROM events WHERE lane IN (SELECT name FROM "
	    "lanes WHERE state IN ('destroyed','failed') AND ended_at_ms < ?1)");
	if (st != NULL)
		sqlite3_bind_int64(st, 1, cutoff_ms);
	rc = step_done(r, st);
	if (rc == REG_OK) {
		st = prepare(r, "DELETE FROM lanes WHERE state IN "
		    "('destroyed','failed') AND ended_at_ms < ?1");
		if (st != NULL)
			sqlite3_bind_int64(st, 1, cutoff_ms);
		rc = step_done(r, st);
		if (rc == REG_OK && pruned != NULL)
			*pruned = (size_t)sqlite3_changes(r->db);
	}
	return tx_end(r, rc);
}

bool
registry_integrity_ok(struct registry *r)
{
	sqlite3_stmt *st = prepare(r, "PRAGMA integrity_check");
	bool ok = false;

	if (st == NULL)
		return false;
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		ok = s != NULL && strcmp(s, "ok") == 0;
	}
	sqlite3_finalize(st);
	return ok;
}

int
registry_audit_trim(struct registry *r, const char *lane, uint32_t keep)
{
	/* Only the audit events: a lane's lifecycle stays whole. */
	sqlite3_stmt *st = prepare(r, "DELETE FROM events WHERE lane = ?1 AND "
	    "event IN ('exec', 'copy-in', 'copy-out') AND id <= (SELECT id "
	    "FROM events WHERE lane = ?1 AND event IN ('exec', 'copy-in', "
	    "'copy-out') ORDER BY id DESC LIMIT 1 OFFSET ?2)");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, lane, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, keep);
	return step_done(r, st);
}
