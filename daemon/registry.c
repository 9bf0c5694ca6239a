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
#include "registry_int.h"
#include "util.h"
#include "wire.h"

/* PRAGMA optimize this often on a long-running connection. */
#define OPTIMIZE_EVERY_MS (60 * 60 * 1000)

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
	/*
	 * Execs in flight (registry_exec_begin): a row from before its
	 * command runs to its "exec" event, so that a row left by a daemon
	 * that died is found at the next start and said so in the events.
	 */
	"CREATE TABLE execs ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  lane TEXT NOT NULL,"
	"  started_ms INTEGER NOT NULL,"
	"  command TEXT NOT NULL"
	");",
	/*
	 * Images made by agent-lanectl commit (daemon/lanecommit.h): the
	 * lane they came from, its alias then, and when. Built images keep
	 * committed_from ''.
	 */
	"ALTER TABLE images ADD COLUMN committed_from TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE images ADD COLUMN committed_alias TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE images ADD COLUMN committed_at_ms INTEGER NOT NULL "
	"DEFAULT 0;",
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

void
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

/* quiet: a new registry, which its creation's one line describes. */
static int
registry_migrate(struct registry *r, bool quiet, char *err, size_t errlen)
{
	int version, from;

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
	for (from = version; version < SCHEMA_VERSION; version++) {
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
	}
	if (!quiet && from < SCHEMA_VERSION)
		log_info("registry: migrated from schema %d to schema %d", from,
		    SCHEMA_VERSION);
	return REG_OK;
}

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
	    registry_migrate(&r0, true, err, errlen) != REG_OK) {
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
	log_info("registry: created %s at schema %d", path, SCHEMA_VERSION);
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
	    registry_migrate(r, false, err, errlen) != REG_OK ||
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

sqlite3_stmt *
reg_prepare(struct registry *r, const char *sql)
{
	sqlite3_stmt *st;

	for (size_t i = 0; i < r->nstmts; i++)
		if (r->stmts[i].sql == sql)
			return r->stmts[i].st;
	/* The SQL texts are the literals of the registry's files: a fixed
	 * number. */
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

void
reg_release(sqlite3_stmt *st)
{
	(void)sqlite3_reset(st);
	(void)sqlite3_clear_bindings(st);
}

int
reg_step(struct registry *r, sqlite3_stmt *st)
{
	int rc;

	if (st == NULL)
		return SQLITE_ERROR;	/* reg_prepare logged why */
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		reg_failed(r, sqlite3_errmsg(r->db));
	return rc;
}

int
reg_step_one(struct registry *r, sqlite3_stmt *st)
{
	int rc = reg_step(r, st);

	if (rc == SQLITE_ROW)
		return REG_OK;
	if (st != NULL)
		reg_release(st);
	return rc == SQLITE_DONE ? REG_NOT_FOUND : REG_ERROR;
}

int
reg_rows_end(sqlite3_stmt *st, int rc)
{
	if (st != NULL)
		reg_release(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? REG_OK : REG_ERROR;
}

int
reg_step_done(struct registry *r, sqlite3_stmt *st)
{
	int rc = reg_step(r, st);

	if (st != NULL)
		reg_release(st);
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		return REG_OK;
	/* Only a taken name is "exists"; a failed CHECK is an error. */
	if (rc == SQLITE_CONSTRAINT_PRIMARYKEY)
		return REG_EXISTS;
	/* The only UNIQUE index on a lane row is its live alias. */
	if (rc == SQLITE_CONSTRAINT_UNIQUE)
		return REG_TAKEN;
	return REG_ERROR;
}

int
reg_tx_begin(struct registry *r)
{
	return exec_sql(r, "BEGIN IMMEDIATE");
}

int
reg_tx_end(struct registry *r, int rc)
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

bool
registry_integrity_ok(struct registry *r)
{
	sqlite3_stmt *st = reg_prepare(r, "PRAGMA integrity_check");
	const char *s;
	bool ok;

	if (reg_step_one(r, st) != REG_OK)
		return false;
	s = (const char *)sqlite3_column_text(st, 0);
	ok = s != NULL && strcmp(s, "ok") == 0;
	reg_release(st);
	return ok;
}

void
reg_column_copy(sqlite3_stmt *st, int col, char *buf, size_t len)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	if (s != NULL)
		str_copy(buf, s, len);
}
