#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat.h"
#include "log.h"
#include "registry.h"
#include "util.h"
#include "wire.h"

/* Distinct SQL texts in this file, with room to spare. */
#define STMT_CACHE_MAX 48
/* PRAGMA optimize this often on a long-running connection. */
#define OPTIMIZE_EVERY_MS (60 * 60 * 1000)

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
	/* 2: images (agent-lanectl image build); see the image block below */
	"CREATE TABLE images ("
	"  name TEXT PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 63),"
	"  id TEXT NOT NULL CHECK (length(id) = 64),"
	"  instance TEXT NOT NULL UNIQUE CHECK (instance GLOB 'ali-"
	"[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]"
	"[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]'),"
	"  state TEXT NOT NULL CHECK (state IN ('building','ready')),"
	"  from_image TEXT NOT NULL DEFAULT '',"
	"  docker INTEGER NOT NULL DEFAULT 0,"
	"  cpus INTEGER NOT NULL,"
	"  memory_mib INTEGER NOT NULL,"
	"  disk_gib INTEGER NOT NULL,"
	"  scripts TEXT NOT NULL DEFAULT '',"
	"  created_at_ms INTEGER NOT NULL,"
	"  build_ms INTEGER NOT NULL DEFAULT 0"
	");",
	/* 3: warm-pool lanes (daemon/pool.c) */
	"ALTER TABLE lanes ADD COLUMN pooled INTEGER NOT NULL DEFAULT 0;",
	/*
	 * The lane network policy (daemon/netpolicy.h). Rows from before it
	 * keep network '': those lanes were made without one.
	 */
	"ALTER TABLE lanes ADD COLUMN network TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE lanes ADD COLUMN allow TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE lanes ADD COLUMN sudo INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE lanes ADD COLUMN proxy_port INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE lanes ADD COLUMN net_policy TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE lanes ADD COLUMN net_note TEXT NOT NULL DEFAULT '';",
	/*
	 * Lane aliases (create --name), unique among live lanes by a partial
	 * index, so that of two racing creates only one can commit; and
	 * lanes owned by their creating connection (run), which a restart
	 * destroys.
	 */
	"ALTER TABLE lanes ADD COLUMN alias TEXT CHECK (alias IS NULL OR "
	"  (length(alias) BETWEEN 1 AND 63 AND alias NOT GLOB 'al-*' AND alias NOT GLOB 'ali-*'));"
	"ALTER TABLE lanes ADD COLUMN owned INTEGER NOT NULL DEFAULT 0;"
	"CREATE UNIQUE INDEX lanes_alias_live ON lanes(alias) WHERE "
	"  alias IS NOT NULL AND state IN ('creating','ready','destroying');",
	/*
	 * Lane secrets (daemon/lanesecret.h): their names and hosts, never
	 * their values, which only the daemon's memory holds. Their headers
	 * came later as ':' tokens of the same text, so rows from before
	 * need no migration: they have none.
	 */
	"ALTER TABLE lanes ADD COLUMN secrets TEXT NOT NULL DEFAULT '';",
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
	return r->last_error[0] != '\0' ? r->last_error :
	    sqlite3_errmsg(r->db);
}

/* Logs a failure and keeps its message for registry_errmsg. */
static void
reg_failed(struct registry *r, const char *msg)
{
	str_copy(r->last_error, msg != NULL ? msg : "error",
	    sizeof r->last_error);
	log_warnx("registry: %s", r->last_error);
}

static int
exec_sql(struct registry *r, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(r->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		reg_failed(r, msg != NULL ? msg : sqlite3_errmsg(r->db));
		sqlite3_free(msg);
		return REG_ERROR;
	}
	return REG_OK;
}

/*
 * Durable commits: synchronous=FULL is not power-safe where fsync(2) stops
 * at the drive's cache (macOS) unless SQLite uses F_FULLFSYNC, for commits
 * and for WAL checkpoints.
 */
static const char *
durable_pragmas(void)
{
	return compat_fsync_stops_at_cache() ? "PRAGMA fullfsync = ON; "
	    "PRAGMA checkpoint_fullfsync = ON;" : "";
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

#define LANE_COLUMNS "name, state, cpus, memory_mib, disk_gib, " \
	"created_at_ms, deadline_ms, idle_timeout_ms, last_activity_ms, " \
	"ended_at_ms, owner_uid, workspace, error, create_failed, pooled, " \
	"network, allow, sudo, proxy_port, net_policy, net_note, alias, owned, " \
	"secrets"

/* The tables and columns this build reads and writes. */
#define IMAGE_COLUMNS "name, id, instance, state, from_image, docker, cpus, " \
	"memory_mib, disk_gib, scripts, created_at_ms, build_ms"

static const char *const schema_probes[][2] = {
	{ "lanes", "SELECT " LANE_COLUMNS " FROM lanes LIMIT 0" },
	{ "lane_labels", "SELECT lane, key, value FROM lane_labels LIMIT 0" },
	{ "events", "SELECT id, time_ms, lane, event, detail FROM events "
	    "LIMIT 0" },
	{ "images", "SELECT " IMAGE_COLUMNS " FROM images LIMIT 0" },
};

/*
 * The whole file, before anything is served from it. Before migrations:
 * that it is ours (a registry is never at user_version 0, see
 * registry_create) and that SQLite finds every page sound (quick_check:
 * every b-tree page, without integrity_check's index cross-check, which
 * sorts every index). After them: that every table and column this build
 * uses is there.
 */
static int
registry_check(struct registry *r, const char *path, bool migrated,
    char *err, size_t errlen)
{
	sqlite3_stmt *st;
	const char *s;
	int version, rc;

	if (migrated) {
		for (size_t i = 0; i < sizeof schema_probes /
		    sizeof *schema_probes; i++) {
			if (sqlite3_prepare_v2(r->db, schema_probes[i][1], -1,
			    &st, NULL) != SQLITE_OK) {
				snprintf(err, errlen, "%s: the registry schema "
				    "is damaged: table %s: %s", path,
				    schema_probes[i][0], sqlite3_errmsg(r->db));
				return REG_ERROR;
			}
			sqlite3_finalize(st);
		}
		return REG_OK;
	}
	if (pragma_int(r, "PRAGMA user_version", &version) != REG_OK) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(r->db));
		return REG_ERROR;
	}
	if (version == 0) {
		snprintf(err, errlen, "%s: not an agent-laned registry (an "
		    "SQLite file without a registry schema); refusing to touch "
		    "it", path);
		return REG_ERROR;
	}
	if (sqlite3_prepare_v2(r->db, "PRAGMA quick_check(1)", -1, &st,
	    NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: quick_check: %s", path,
		    sqlite3_errmsg(r->db));
		return REG_ERROR;
	}
	rc = sqlite3_step(st);
	s = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
	if (s == NULL || strcmp(s, "ok") != 0) {
		snprintf(err, errlen, "%s: the registry is damaged (quick_check: "
		    "%s); restore it from a backup", path,
		    s != NULL ? s : sqlite3_errmsg(r->db));
		sqlite3_finalize(st);
		return REG_ERROR;
	}
	sqlite3_finalize(st);
	return REG_OK;
}

/* fsync of the directory holding path, so that a rename is durable. */
static int
sync_parent(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX], *slash;
	int dfd;

	str_copy(dir, path, sizeof dir);
	if ((slash = strrchr(dir, '/')) == NULL)
		str_copy(dir, ".", sizeof dir);
	else if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fsync(dfd) == -1) {
		snprintf(err, errlen, "%s: fsync: %s", dir, strerror(errno));
		if (dfd != -1)
			close(dfd);
		return REG_ERROR;
	}
	close(dfd);
	return REG_OK;
}

/*
 * A fresh registry is built under another name and renamed into place
 * once its schema is committed, so `path` is either absent or a whole
 * registry: a crash during the first start cannot leave an empty file that
 * would pass for one.
 */
static int
registry_create(const char *path, char *err, size_t errlen)
{
	char tmp[PATH_MAX], side[PATH_MAX + 8];
	struct registry r0;
	int fd;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s.init", path) >= sizeof tmp) {
		snprintf(err, errlen, "%s: path too long", path);
		return REG_ERROR;
	}
	/* What an interrupted first start left. */
	(void)unlink(tmp);
	snprintf(side, sizeof side, "%s-wal", tmp);
	(void)unlink(side);
	snprintf(side, sizeof side, "%s-shm", tmp);
	(void)unlink(side);
	/* Created 0600 by us; SQLite would honour the umask. */
	if ((fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600)) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return REG_ERROR;
	}
	close(fd);
	memset(&r0, 0, sizeof r0);
	if (sqlite3_open_v2(tmp, &r0.db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", tmp, r0.db != NULL ?
		    sqlite3_errmsg(r0.db) : "cannot open");
		goto fail;
	}
	if (exec_sql(&r0, "PRAGMA journal_mode = WAL") != REG_OK ||
	    exec_sql(&r0, "PRAGMA synchronous = FULL") != REG_OK ||
	    exec_sql(&r0, durable_pragmas()) != REG_OK ||
	    registry_migrate(&r0, err, errlen) != REG_OK) {
		if (err[0] == '\0')
			snprintf(err, errlen, "%s: %s", tmp,
			    sqlite3_errmsg(r0.db));
		goto fail;
	}
	/* The last connection's close checkpoints the WAL into the file. */
	if (sqlite3_close(r0.db) != SQLITE_OK) {
		snprintf(err, errlen, "%s: close: %s", tmp,
		    sqlite3_errmsg(r0.db));
		goto fail;
	}
	r0.db = NULL;
	if ((fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1 ||
	    fsync(fd) == -1) {
		snprintf(err, errlen, "%s: fsync: %s", tmp, strerror(errno));
		if (fd != -1)
			close(fd);
		goto fail;
	}
	close(fd);
	if (rename(tmp, path) == -1) {
		snprintf(err, errlen, "rename %s: %s", tmp, strerror(errno));
		goto fail;
	}
	if (sync_parent(path, err, errlen) != REG_OK)
		return REG_ERROR;
	log_info("registry: created %s", path);
	return REG_OK;

fail:
	if (r0.db != NULL)
		(void)sqlite3_close(r0.db);
	(void)unlink(tmp);
	return REG_ERROR;
}

int
registry_open(const char *path, struct registry **out, char *err, size_t errlen)
{
	struct registry *r;
	struct stat sb;
	int fd;

	if (errlen > 0)
		err[0] = '\0';
	if (lstat(path, &sb) == -1) {
		if (errno != ENOENT) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			return REG_ERROR;
		}
		/* Missing: a first start. */
		if (registry_create(path, err, errlen) != REG_OK)
			return REG_ERROR;
	} else if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return REG_ERROR;
	} else if (sb.st_size == 0) {
		/*
		 * Never a registry this daemon wrote (registry_create): its
		 * contents were lost. Starting afresh would orphan every VM
		 * and stop enforcing their deadlines.
		 */
		snprintf(err, errlen, "%s is empty: the registry's contents "
		    "were lost; refusing to start a fresh one over it (restore "
		    "it from a backup, or move it aside to start with no "
		    "lanes, then `agent-lanectl reap --orphans`)", path);
		return REG_ERROR;
	}
	/* O_NOFOLLOW: a symbolic link swapped in meanwhile is refused. */
	if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return REG_ERROR;
	}
	close(fd);
	r = xcalloc(1, sizeof *r);
	if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		    r->db != NULL ? sqlite3_errmsg(r->db) : "cannot open");
		sqlite3_close(r->db);
		free(r);
		return REG_ERROR;
	}
	/* Before any pragma writes to it. */
	if (registry_check(r, path, false, err, errlen) != REG_OK) {
		sqlite3_close(r->db);
		free(r);
		return REG_ERROR;
	}
	/*
	 * The loop waits while another process holds the write lock; not for
	 * long, since every lane and client waits with it. A write that still
	 * finds the lock fails, and the lane's change is retried (lane.c).
	 */
	sqlite3_busy_timeout(r->db, REGISTRY_BUSY_MS);
	sqlite3_extended_result_codes(r->db, 1);
	/*
	 * FULL: the "creating" row must be on disk before limactl create runs,
	 * even across a power cut, or a VM could exist that nothing can find.
	 */
	if (exec_sql(r, "PRAGMA journal_mode = WAL") != REG_OK ||
	    exec_sql(r, "PRAGMA synchronous = FULL") != REG_OK ||
	    exec_sql(r, durable_pragmas()) != REG_OK ||
	    exec_sql(r, "PRAGMA foreign_keys = ON") != REG_OK ||
	    registry_migrate(r, err, errlen) != REG_OK ||
	    registry_check(r, path, true, err, errlen) != REG_OK) {
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
registry_maintain(struct registry *r, int64_t now_ms)
{
	if (now_ms - r->optimized_ms < OPTIMIZE_EVERY_MS)
		return;
	r->optimized_ms = now_ms;
	(void)exec_sql(r, "PRAGMA optimize");
}

void
registry_close(struct registry *r)
{
	if (r == NULL)
		return;
	/* What the planner learnt this session, for the next one. */
	(void)exec_sql(r, "PRAGMA optimize");
	for (size_t i = 0; i < r->nstmts; i++)
		sqlite3_finalize(r->stmts[i].st);
	if (sqlite3_close(r->db) != SQLITE_OK)
		log_warnx("registry: close: %s", sqlite3_errmsg(r->db));
	free(r);
}

bool
registry_state_is_live(int state)
{
	return state == LANE_CREATING || state == LANE_READY ||
	    state == LANE_DESTROYING || state == LANE_POOLED;
}

bool
registry_transition_allowed(int from, int to)
{
	switch (from) {
	case LANE_CREATING:
		return to == LANE_READY || to == LANE_DESTROYING;
	case LANE_READY:
		return to == LANE_DESTROYING;
	case LANE_POOLED:
		/* Booted (the row stays pooled), or recycled. */
		return to == LANE_READY || to == LANE_DESTROYING;
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

	for (size_t i = 0; i < r->nstmts; i++)
		if (r->stmts[i].sql == sql)
			return r->stmts[i].st;
	/* The SQL texts are the literals of this file: a fixed number. */
	if (r->nstmts == STMT_CACHE_MAX)
		fatalx("registry: more than %d statements", STMT_CACHE_MAX);
	if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
	    NULL) != SQLITE_OK) {
		reg_failed(r, sqlite3_errmsg(r->db));
		return NULL;
	}
	r->stmts[r->nstmts].sql = sql;
	r->stmts[r->nstmts].st = st;
	r->nstmts++;
	return st;
}

/* Done with a cached statement: it keeps no lock and no bound value. */
static void
release(sqlite3_stmt *st)
{
	(void)sqlite3_reset(st);
	(void)sqlite3_clear_bindings(st);
}

/* Runs a statement that returns no rows and releases it. */
static int
step_done(struct registry *r, sqlite3_stmt *st)
{
	int rc;

	if (st == NULL)
		return REG_ERROR;
	rc = sqlite3_step(st);
	if (rc != SQLITE_DONE)
		reg_failed(r, sqlite3_errmsg(r->db));
	release(st);
	if (rc != SQLITE_DONE) {
		/* Only a taken name is "exists"; a failed CHECK is an error. */
		if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			return REG_EXISTS;
		/* The only UNIQUE index on a lane row is its live alias. */
		if (rc == SQLITE_CONSTRAINT_UNIQUE)
			return REG_TAKEN;
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
	/*
	 * A failed COMMIT may have rolled back already (SQLITE_FULL) or left
	 * the transaction open (SQLITE_BUSY); the error that matters is the
	 * one kept above, not the rollback's.
	 */
	if (!sqlite3_get_autocommit(r->db) &&
	    sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		log_warnx("registry: rollback: %s", sqlite3_errmsg(r->db));
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
		    "cpus=%u memory=%uMiB disk=%uGiB lifetime=%llds idle=%llus "
		    "uid=%u network=%s%s%s%s%s",
		    rec->cpus, rec->memory_mib, rec->disk_gib,
		    (long long)((rec->deadline_ms - rec->created_at_ms) / 1000),
		    (unsigned long long)(rec->idle_timeout_ms / 1000),
		    rec->owner_uid, rec->network, rec->sudo ? " sudo" : "",
		    rec->alias[0] ? " alias=" : "", rec->alias,
		    rec->owned ? " owned" : "");
		rc = event_insert(r, rec->created_at_ms, rec->name,
		    "registered", detail);
	}
	return tx_end(r, rc);
}

/* A text column into buf; NULL leaves it as it was (memset by the caller). */
static void
column_copy(sqlite3_stmt *st, int col, char *buf, size_t len)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	if (s != NULL)
		str_copy(buf, s, len);
}

static void
row_to_record(sqlite3_stmt *st, struct lane_record *rec)
{
	const char *s;

	memset(rec, 0, sizeof *rec);
	column_copy(st, 0, rec->name, sizeof rec->name);
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
	column_copy(st, 11, rec->workspace, sizeof rec->workspace);
	column_copy(st, 12, rec->error, sizeof rec->error);
	rec->create_failed = sqlite3_column_int(st, 13) != 0;
	rec->pooled = sqlite3_column_int(st, 14) != 0;
	column_copy(st, 15, rec->network, sizeof rec->network);
	column_copy(st, 16, rec->allow, sizeof rec->allow);
	rec->sudo = sqlite3_column_int(st, 17) != 0;
	rec->proxy_port = (uint16_t)sqlite3_column_int(st, 18);
	column_copy(st, 19, rec->net_policy, sizeof rec->net_policy);
	column_copy(st, 20, rec->net_note, sizeof rec->net_note);
	column_copy(st, 21, rec->alias, sizeof rec->alias);
	rec->owned = sqlite3_column_int(st, 22) != 0;
	column_copy(st, 23, rec->secrets, sizeof rec->secrets);
	if (rec->pooled && (rec->state == LANE_CREATING ||
	    rec->state == LANE_READY)) {
		rec->booting = rec->state == LANE_CREATING;
		rec->state = LANE_POOLED;
	}
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
		reg_failed(r, sqlite3_errmsg(r->db));
		rc = REG_ERROR;
	}
	release(st);
	return rc;
}

int
registry_lane_get_labeled(struct registry *r, const char *name,
    struct lane_record *rec, struct lane_label *labels, size_t max, size_t *n)
{
	sqlite3_stmt *st = prepare(r, "SELECT " LANE_COLUMNS ", l.key, "
	    "l.value FROM lanes LEFT JOIN lane_labels l ON l.lane = "
	    "lanes.name WHERE lanes.name = ?1 ORDER BY l.key");
	size_t len = 0;
	int rc, ret = REG_NOT_FOUND;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	/* The label follows the lane's columns, however many those are. */
	int kcol = sqlite3_column_count(st) - 2;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
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
	if (rc != SQLITE_DONE) {
		reg_failed(r, sqlite3_errmsg(r->db));
		ret = REG_ERROR;
	}
	release(st);
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

	if (tx_begin(r) != REG_OK)
		return REG_ERROR;
	rc = registry_lane_get(r, name, &rec);
	if (rc == REG_OK && !registry_transition_allowed(rec.state, ch->to))
		rc = REG_BAD_TRANSITION;
	if (rc == REG_OK) {
		st = prepare(r, "UPDATE lanes SET state = ?2, "
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
		rc = step_done(r, st);
	}
	if (rc == REG_OK)
		rc = event_insert(r, now, name, ch->event, ch->detail);
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
registry_lane_set_proxy_port(struct registry *r, const char *name,
    uint16_t port)
{
	sqlite3_stmt *st;
	int rc;

	if (tx_begin(r) != REG_OK)
		return REG_ERROR;
	st = prepare(r, "UPDATE lanes SET proxy_port = ?2 WHERE name = ?1");
	if (st != NULL) {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, port);
	}
	rc = step_done(r, st);
	if (rc == REG_OK && sqlite3_changes(r->db) != 1)
		rc = REG_NOT_FOUND;
	return tx_end(r, rc);
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
	release(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return REG_ERROR;
	}
	*out = v;
	*n = len;
	return REG_OK;
}

#define LIVE_STATES "('creating','ready','destroying')"

static int
name_cmp(const void *a, const void *b)
{
	const struct lane_page_row *const *x = a, *const *y = b;

	return strcmp((*x)->rec.name, (*y)->rec.name);
}

int
registry_lane_page(struct registry *r, bool all,
    const struct lane_cursor *after, size_t limit,
    struct lane_page_row **rowsp, size_t *np, struct lane_label **labelsp)
{
	/* The same page in both queries: same filter, order and bound. */
/* Warm-pool lanes are nobody's yet: only `all` lists them. */
#define PAGE_WHERE " WHERE (?1 OR (state IN " LIVE_STATES " AND pooled = 0)) " \
	"AND " \
	"(created_at_ms, name) > (?2, ?3) ORDER BY created_at_ms, name LIMIT ?4"
	static const char lanes_sql[] = "SELECT " LANE_COLUMNS " FROM lanes"
	    PAGE_WHERE;
	static const char labels_sql[] = "SELECT ll.lane, ll.key, ll.value "
	    "FROM lane_labels ll JOIN (SELECT name FROM lanes" PAGE_WHERE
	    ") p ON p.name = ll.lane ORDER BY ll.lane, ll.key";
#undef PAGE_WHERE
	struct lane_page_row *rows = NULL, **byname = NULL, key, *kp, **hit;
	struct lane_label *labels = NULL;
	size_t n = 0, nl = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	int rc = REG_ERROR, step = SQLITE_DONE;

	for (int q = 0; q < 2; q++) {
		if ((st = prepare(r, q == 0 ? lanes_sql : labels_sql)) == NULL)
			goto out;
		sqlite3_bind_int(st, 1, all);
		sqlite3_bind_int64(st, 2, after != NULL ? after->created_at_ms :
		    INT64_MIN);
		sqlite3_bind_text(st, 3, after != NULL ? after->name : "", -1,
		    SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)limit);
		if (q == 0) {
			rows = xcalloc(limit, sizeof *rows);
			while (n < limit &&
			    (step = sqlite3_step(st)) == SQLITE_ROW)
				row_to_record(st, &rows[n++].rec);
		} else {
			/* Labels come by name: find their lane by name. */
			byname = xcalloc(n, sizeof *byname);
			for (size_t i = 0; i < n; i++)
				byname[i] = &rows[i];
			qsort(byname, n, sizeof *byname, name_cmp);
			while ((step = sqlite3_step(st)) == SQLITE_ROW) {
				const char *ln = (const char *)
				    sqlite3_column_text(st, 0);
				const char *k = (const char *)
				    sqlite3_column_text(st, 1);
				const char *v = (const char *)
				    sqlite3_column_text(st, 2);

				str_copy(key.rec.name, ln != NULL ? ln : "",
				    sizeof key.rec.name);
				kp = &key;
				hit = bsearch(&kp, byname, n, sizeof *byname,
				    name_cmp);
				if (hit == NULL || (*hit)->nlabels >=
				    LANE_LABELS_MAX)
					continue;
				if (nl == cap) {
					cap = cap == 0 ? 64 : cap * 2;
					labels = xreallocarray(labels, cap,
					    sizeof *labels);
				}
				str_copy(labels[nl].key, k != NULL ? k : "",
				    sizeof labels[nl].key);
				str_copy(labels[nl].value, v != NULL ? v : "",
				    sizeof labels[nl].value);
				/* Rows of one lane are adjacent. */
				if ((*hit)->nlabels == 0)
					(*hit)->label_off = nl;
				(*hit)->nlabels++;
				nl++;
			}
		}
		if (step != SQLITE_DONE && step != SQLITE_ROW) {
			reg_failed(r, sqlite3_errmsg(r->db));
			goto out;
		}
		release(st);
		st = NULL;
	}
	rc = REG_OK;
out:
	if (st != NULL)
		release(st);
	free(byname);
	if (rc != REG_OK) {
		free(rows);
		free(labels);
		return rc;
	}
	*rowsp = rows;
	*np = n;
	*labelsp = labels;
	return REG_OK;
}

int
registry_events_page(struct registry *r, const char *lane, int64_t after_id,
    size_t limit, struct registry_event **out, int64_t **idsp, size_t *np)
{
	sqlite3_stmt *st = prepare(r, "SELECT id, time_ms, lane, event, "
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
	while (n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
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
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		reg_failed(r, sqlite3_errmsg(r->db));
		release(st);
		free(v);
		free(ids);
		return REG_ERROR;
	}
	release(st);
	*out = v;
	*idsp = ids;
	*np = n;
	return REG_OK;
}

int
registry_count_live(struct registry *r, size_t *n)
{
	/* Warm-pool lanes have their own cap (pool_size). */
	sqlite3_stmt *st = prepare(r, "SELECT count(*) FROM lanes WHERE state "
	    "IN ('creating','ready','destroying') AND pooled = 0");
	int rc = REG_ERROR;

	if (st == NULL)
		return REG_ERROR;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*n = (size_t)sqlite3_column_int64(st, 0);
		rc = REG_OK;
	}
	release(st);
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
	release(st);
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
	release(st);
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
	release(st);
	return ok;
}

int
registry_lane_take_pooled(struct registry *r, const char *name, bool booting,
    int64_t now_ms, int64_t deadline_ms, uint64_t idle_timeout_ms,
    const struct lane_label *labels, size_t nlabels, const char *alias,
    bool owned)
{
	sqlite3_stmt *st;
	char detail[256];
	int rc;

	if (tx_begin(r) != REG_OK)
		return REG_ERROR;
	/* Only a pool lane one create has not taken already. */
	st = prepare(r, "UPDATE lanes SET pooled = 0, created_at_ms = ?2, "
	    "deadline_ms = ?3, idle_timeout_ms = ?4, last_activity_ms = ?2, "
	    "alias = NULLIF(?5, ''), owned = ?6 "
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
	}
	rc = step_done(r, st);
	if (rc == REG_OK && sqlite3_changes(r->db) != 1)
		rc = REG_NOT_FOUND;
	for (size_t i = 0; rc == REG_OK && i < nlabels; i++) {
		st = prepare(r, "INSERT INTO lane_labels (lane, key, value) "
		    "VALUES (?1, ?2, ?3)");
		if (st != NULL) {
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, labels[i].key, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 3, labels[i].value, -1,
			    SQLITE_STATIC);
		}
		rc = step_done(r, st);
	}
	if (rc == REG_OK) {
		snprintf(detail, sizeof detail, "lifetime=%llds idle=%llus%s%s%s%s",
		    (long long)((deadline_ms - now_ms) / 1000),
		    (unsigned long long)(idle_timeout_ms / 1000),
		    alias[0] ? " alias=" : "", alias, owned ? " owned" : "",
		    booting ? " booting" : "");
		rc = event_insert(r, now_ms, name, "taken-from-pool", detail);
	}
	return tx_end(r, rc);
}

int
registry_boot_times(struct registry *r, size_t max, int64_t *ms, size_t *n)
{
	/*
	 * The newest ready events among the last REGISTRY_BOOT_SCAN events
	 * (a bounded scan whatever the audit trail holds), each with its
	 * lane's registration.
	 */
	sqlite3_stmt *st = prepare(r, "SELECT e.time_ms - g.time_ms FROM "
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
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && *n < max)
		if (sqlite3_column_int64(st, 0) >= 0)
			ms[(*n)++] = sqlite3_column_int64(st, 0);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		reg_failed(r, sqlite3_errmsg(r->db));
		release(st);
		return REG_ERROR;
	}
	release(st);
	return REG_OK;
}

int
registry_lane_by_alias(struct registry *r, const char *alias,
    char name[LANE_NAME_SIZE])
{
	/* The live one first (at most one: the index), then the newest. */
	sqlite3_stmt *st = prepare(r, "SELECT name FROM lanes WHERE alias = ?1 "
	    "ORDER BY state IN " LIVE_STATES " DESC, created_at_ms DESC, "
	    "name DESC LIMIT 1");
	const char *s;
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, alias, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		s = (const char *)sqlite3_column_text(st, 0);
		str_copy(name, s != NULL ? s : "", LANE_NAME_SIZE);
		rc = REG_OK;
	} else if (rc == SQLITE_DONE)
		rc = REG_NOT_FOUND;
	else {
		reg_failed(r, sqlite3_errmsg(r->db));
		rc = REG_ERROR;
	}
	release(st);
	return rc;
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
		if ((st = prepare(r, sql[q])) == NULL)
			return REG_ERROR;
		sqlite3_bind_text(st, 1, prefix, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)max + 1);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			if (*n < max) {
				s = (const char *)sqlite3_column_text(st, 0);
				str_copy(names[*n], s != NULL ? s : "",
				    LANE_NAME_SIZE);
			}
			(*n)++;
		}
		if (rc != SQLITE_DONE) {
			reg_failed(r, sqlite3_errmsg(r->db));
			release(st);
			return REG_ERROR;
		}
		release(st);
		*live = q == 0;
	}
	return REG_OK;
}

int
registry_audit_trim(struct registry *r, const char *lane, uint32_t keep)
{
	/* Only the audit events: a lane's lifecycle stays whole. */
	sqlite3_stmt *st = prepare(r, "DELETE FROM events WHERE lane = ?1 AND "
	    "(event IN ('exec', 'copy-in', 'copy-out') OR event GLOB 'proxy-*') "
	    "AND id <= (SELECT id FROM events WHERE lane = ?1 AND (event IN "
	    "('exec', 'copy-in', 'copy-out') OR event GLOB 'proxy-*') "
	    "ORDER BY id DESC LIMIT 1 OFFSET ?2)");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, lane, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, keep);
	return step_done(r, st);
}

/* ---- Images ----
 *
 * One row per image: committed in "building" before limactl hears the
 * instance name (the lanes' invariant 1), "ready" once the provisioned VM
 * is stopped, deleted together with its VM (a failed or cancelled build
 * leaves no row).
 */

static void
image_row(sqlite3_stmt *st, struct image_record *rec)
{
	const char *s;

	memset(rec, 0, sizeof *rec);
	column_copy(st, 0, rec->name, sizeof rec->name);
	column_copy(st, 1, rec->id, sizeof rec->id);
	column_copy(st, 2, rec->instance, sizeof rec->instance);
	s = (const char *)sqlite3_column_text(st, 3);
	rec->state = s != NULL && strcmp(s, "ready") == 0 ? IMAGE_READY :
	    IMAGE_BUILDING;
	column_copy(st, 4, rec->from, sizeof rec->from);
	rec->docker = sqlite3_column_int(st, 5) != 0;
	rec->cpus = (uint32_t)sqlite3_column_int64(st, 6);
	rec->memory_mib = (uint32_t)sqlite3_column_int64(st, 7);
	rec->disk_gib = (uint32_t)sqlite3_column_int64(st, 8);
	column_copy(st, 9, rec->scripts, sizeof rec->scripts);
	rec->created_at_ms = sqlite3_column_int64(st, 10);
	rec->build_ms = (uint64_t)sqlite3_column_int64(st, 11);
}

int
registry_image_insert(struct registry *r, const struct image_record *rec)
{
	sqlite3_stmt *st = prepare(r, "INSERT INTO images (" IMAGE_COLUMNS
	    ") VALUES (?1, ?2, ?3, 'building', ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0)");
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, rec->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, rec->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, rec->instance, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, rec->from, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 5, rec->docker);
	sqlite3_bind_int64(st, 6, rec->cpus);
	sqlite3_bind_int64(st, 7, rec->memory_mib);
	sqlite3_bind_int64(st, 8, rec->disk_gib);
	sqlite3_bind_text(st, 9, rec->scripts, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 10, rec->created_at_ms);
	rc = sqlite3_step(st);
	release(st);
	if (rc == SQLITE_DONE)
		return REG_OK;
	/* Extended result codes are on: only a taken name or instance. */
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE)
		return REG_EXISTS;
	log_warnx("registry: %s", sqlite3_errmsg(r->db));
	return REG_ERROR;
}

/* The one image row st selects, keyed by ?1. */
static int
image_get_by(struct registry *r, sqlite3_stmt *st, const char *key,
    struct image_record *rec)
{
	int rc;

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		image_row(st, rec);
		rc = REG_OK;
	} else if (rc == SQLITE_DONE)
		rc = REG_NOT_FOUND;
	else {
		log_warnx("registry: %s", sqlite3_errmsg(r->db));
		rc = REG_ERROR;
	}
	release(st);
	return rc;
}

int
registry_image_get(struct registry *r, const char *name,
    struct image_record *rec)
{
	return image_get_by(r, prepare(r, "SELECT " IMAGE_COLUMNS
	    " FROM images WHERE name = ?1"), name, rec);
}

int
registry_image_by_id(struct registry *r, const char *id,
    struct image_record *rec)
{
	return image_get_by(r, prepare(r, "SELECT " IMAGE_COLUMNS
	    " FROM images WHERE id = ?1 AND state = 'ready' "
	    "ORDER BY created_at_ms, name LIMIT 1"), id, rec);
}

int
registry_image_set_ready(struct registry *r, const char *name,
    uint64_t build_ms)
{
	sqlite3_stmt *st = prepare(r, "UPDATE images SET state = 'ready', "
	    "build_ms = ?2 WHERE name = ?1 AND state = 'building'");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)build_ms);
	if (step_done(r, st) != REG_OK)
		return REG_ERROR;
	return sqlite3_changes(r->db) == 1 ? REG_OK : REG_NOT_FOUND;
}

int
registry_image_delete(struct registry *r, const char *name)
{
	sqlite3_stmt *st = prepare(r, "DELETE FROM images WHERE name = ?1");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (step_done(r, st) != REG_OK)
		return REG_ERROR;
	return sqlite3_changes(r->db) == 1 ? REG_OK : REG_NOT_FOUND;
}

int
registry_image_list(struct registry *r, struct image_record **out, size_t *n)
{
	sqlite3_stmt *st = prepare(r, "SELECT " IMAGE_COLUMNS
	    " FROM images ORDER BY created_at_ms, name");
	struct image_record *v = NULL;
	size_t cnt = 0, cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (st == NULL)
		return REG_ERROR;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cnt == cap) {
			cap = cap != 0 ? cap * 2 : 8;
			v = xreallocarray(v, cap, sizeof *v);
		}
		image_row(st, &v[cnt++]);
	}
	release(st);
	if (rc != SQLITE_DONE) {
		log_warnx("registry: %s", sqlite3_errmsg(r->db));
		free(v);
		return REG_ERROR;
	}
	*out = v;
	*n = cnt;
	return REG_OK;
}
