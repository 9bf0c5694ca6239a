/*
 * daemon/registry.c: the SQLite lane registry, source of truth for every
 * lane the daemon made. A second SQLite connection inspects the file
 * directly where the API has no accessor (PRAGMAs, ended_at backdating).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"
#include "util.h"
#include "lib/tar.h"	/* al_remove_tree */

#define LANE_A "al-000000000000000a"
#define LANE_B "al-000000000000000b"
#define LANE_C "al-000000000000000c"
#define LANE_D "al-000000000000000d"

struct fixture {
	char dir[64];
	char path[128];
	struct registry *r;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	char err[256] = "";

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/test_registry.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof f->path, "%s/registry.db", f->dir);
	if (registry_open(f->path, &f->r, err, sizeof err) != REG_OK) {
		print_error("registry_open: %s\n", err);
		return -1;
	}
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	registry_close(f->r);
	al_remove_tree(f->dir);
	free(f);
	return 0;
}

/* Runs SQL on a separate connection; returns the first column as text. */
static char *
sql_text(const char *path, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char *out = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_busy_timeout(db, 5000), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
		out = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return out;
}

static void
sql_exec(const char *path, const char *sql)
{
	free(sql_text(path, sql));
}

static struct lane_record
make_record(const char *name, int64_t created)
{
	struct lane_record rec;

	memset(&rec, 0, sizeof rec);
	str_copy(rec.name, name, sizeof rec.name);
	rec.state = LANE_CREATING;
	rec.cpus = 2;
	rec.memory_mib = 4096;
	rec.disk_gib = 30;
	rec.created_at_ms = created;
	rec.deadline_ms = created + 3600000;
	rec.idle_timeout_ms = 600000;
	rec.owner_uid = 501;
	return rec;
}

static void
insert(struct registry *r, const char *name, int64_t created)
{
	struct lane_record rec = make_record(name, created);

	assert_int_equal(registry_lane_insert(r, &rec, NULL, 0), REG_OK);
}

static int
state_of(struct registry *r, const char *name)
{
	struct lane_record rec;

	assert_int_equal(registry_lane_get(r, name, &rec), REG_OK);
	return rec.state;
}

static size_t
event_count(struct registry *r, const char *name)
{
	struct registry_event *ev = NULL;
	size_t n = 0;

	assert_int_equal(registry_events_list(r, name, &ev, &n), REG_OK);
	free(ev);
	return n;
}

/* The newest event of a lane, which must exist. */
static struct registry_event
last_event(struct registry *r, const char *name)
{
	struct registry_event *ev = NULL, last;
	size_t n = 0;

	assert_int_equal(registry_events_list(r, name, &ev, &n), REG_OK);
	assert_true(n > 0);
	last = ev[n - 1];
	free(ev);
	return last;
}

static void
test_schema_and_pragmas(void **state)
{
	struct fixture *f = *state;
	char *v, want[16];

	assert_true(registry_schema_version() >= 1);
	snprintf(want, sizeof want, "%d", registry_schema_version());
	v = sql_text(f->path, "PRAGMA user_version");
	assert_string_equal(v, want);
	free(v);
	v = sql_text(f->path, "PRAGMA journal_mode");
	assert_string_equal(v, "wal");
	free(v);
	assert_true(registry_integrity_ok(f->r));
}

static void
test_file_mode(void **state)
{
	struct fixture *f = *state;
	struct registry *r2 = NULL;
	struct stat sb;
	char path[160], wal[176], err[256] = "";
	mode_t old;

	/* The registry is the user's alone, whatever the umask. */
	snprintf(path, sizeof path, "%s/open.db", f->dir);
	snprintf(wal, sizeof wal, "%s-wal", path);
	old = umask(0);
	assert_int_equal(registry_open(path, &r2, err, sizeof err), REG_OK);
	insert(r2, LANE_A, 1000);
	umask(old);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	/* SQLite gives its side files the database's mode. */
	assert_int_equal(stat(wal, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	registry_close(r2);
}

static void
test_insert_and_get(void **state)
{
	struct fixture *f = *state;
	struct lane_record rec = make_record(LANE_A, 1700000000000), got;
	struct registry_event ev;

	assert_int_equal(registry_lane_insert(f->r, &rec, NULL, 0), REG_OK);
	memset(&got, 0xa5, sizeof got);
	assert_int_equal(registry_lane_get(f->r, LANE_A, &got), REG_OK);
	assert_string_equal(got.name, LANE_A);
	assert_int_equal(got.state, LANE_CREATING);
	assert_int_equal(got.cpus, 2);
	assert_int_equal(got.memory_mib, 4096);
	assert_int_equal(got.disk_gib, 30);
	assert_int_equal(got.created_at_ms, 1700000000000);
	assert_int_equal(got.deadline_ms, 1700000000000 + 3600000);
	assert_int_equal(got.idle_timeout_ms, 600000);
	/* Activity starts at creation. */
	assert_int_equal(got.last_activity_ms, 1700000000000);
	assert_int_equal(got.ended_at_ms, 0);
	assert_int_equal(got.owner_uid, 501);
	assert_string_equal(got.workspace, "");
	assert_string_equal(got.error, "");

	/* The row and its "registered" event come together. */
	assert_int_equal(event_count(f->r, LANE_A), 1);
	ev = last_event(f->r, LANE_A);
	assert_string_equal(ev.event, "registered");
	assert_string_equal(ev.lane, LANE_A);
	assert_int_equal(ev.time_ms, 1700000000000);
	assert_non_null(strstr(ev.detail, "cpus=2 memory=4GiB disk=30GiB"));
	assert_non_null(strstr(ev.detail, "lifetime=3600s"));

	assert_int_equal(registry_lane_get(f->r, LANE_B, &got), REG_NOT_FOUND);

	assert_int_equal(registry_lane_set_workspace(f->r, LANE_A,
	    "/home/u.linux/workspace"), REG_OK);
	assert_int_equal(registry_lane_set_error(f->r, LANE_A, "why"), REG_OK);
	assert_int_equal(registry_lane_get(f->r, LANE_A, &got), REG_OK);
	assert_string_equal(got.workspace, "/home/u.linux/workspace");
	assert_string_equal(got.error, "why");
	assert_int_equal(registry_lane_set_error(f->r, LANE_B, "x"),
	    REG_NOT_FOUND);

	/* Activity only moves forward. */
	assert_int_equal(registry_lane_touch(f->r, LANE_A, 1700000005000), REG_OK);
	assert_int_equal(registry_lane_touch(f->r, LANE_A, 1700000001000), REG_OK);
	assert_int_equal(registry_lane_get(f->r, LANE_A, &got), REG_OK);
	assert_int_equal(got.last_activity_ms, 1700000005000);
}

/*
 * Aliases are unique among live lanes, in the registry itself: a second
 * insert with a live lane's alias is REG_TAKEN and leaves nothing behind,
 * and an ended lane's alias may be taken again.
 */
static void
test_alias_unique_live(void **state)
{
	struct fixture *f = *state;
	struct lane_record a = make_record(LANE_A, 1000);
	struct lane_record b = make_record(LANE_B, 2000), got;
	char name[LANE_NAME_SIZE], names[4][LANE_NAME_SIZE];
	size_t n;
	bool live;

	snprintf(a.alias, sizeof a.alias, "web");
	a.owned = true;
	snprintf(b.alias, sizeof b.alias, "web");
	assert_int_equal(registry_lane_insert(f->r, &a, NULL, 0), REG_OK);
	assert_int_equal(registry_lane_get(f->r, LANE_A, &got), REG_OK);
	assert_string_equal(got.alias, "web");
	assert_true(got.owned);
	assert_int_equal(registry_lane_insert(f->r, &b, NULL, 0), REG_TAKEN);
	assert_int_equal(registry_lane_get(f->r, LANE_B, &got), REG_NOT_FOUND);
	assert_int_equal(registry_lane_by_alias(f->r, "web", name), REG_OK);
	assert_string_equal(name, LANE_A);
	assert_int_equal(registry_lane_by_alias(f->r, "nope", name),
	    REG_NOT_FOUND);
	/* The CHECK refuses what no alias may look like. */
	snprintf(b.alias, sizeof b.alias, "al-1");
	assert_int_equal(registry_lane_insert(f->r, &b, NULL, 0), REG_ERROR);

	/* Once A has ended, B may take "web", and it is B's. */
	assert_int_equal(registry_lane_transition(f->r, LANE_A, LANE_DESTROYING,
	    "destroying", ""), REG_OK);
	snprintf(b.alias, sizeof b.alias, "web");
	assert_int_equal(registry_lane_insert(f->r, &b, NULL, 0), REG_TAKEN);
	assert_int_equal(registry_lane_transition(f->r, LANE_A, LANE_DESTROYED,
	    "destroyed", ""), REG_OK);
	assert_int_equal(registry_lane_insert(f->r, &b, NULL, 0), REG_OK);
	assert_int_equal(registry_lane_by_alias(f->r, "web", name), REG_OK);
	assert_string_equal(name, LANE_B);
	assert_int_equal(registry_lane_get(f->r, LANE_B, &got), REG_OK);
	assert_false(got.owned);

	/* Prefixes: live lanes first, then any; n counts one past max. */
	assert_int_equal(registry_lane_by_prefix(f->r, "al-", names, 4, &n,
	    &live), REG_OK);
	assert_int_equal(n, 1);
	assert_string_equal(names[0], LANE_B);
	assert_true(live);
	assert_int_equal(registry_lane_by_prefix(f->r, LANE_A, names, 4, &n,
	    &live), REG_OK);
	assert_int_equal(n, 1);
	assert_string_equal(names[0], LANE_A);
	assert_false(live);
	insert(f->r, LANE_C, 3000);
	insert(f->r, LANE_D, 4000);
	assert_int_equal(registry_lane_by_prefix(f->r, "al-0", names, 2, &n,
	    &live), REG_OK);
	assert_int_equal(n, 3);
	assert_true(live);
	assert_string_equal(names[0], LANE_B);
	assert_string_equal(names[1], LANE_C);
	assert_int_equal(registry_lane_by_prefix(f->r, "al-1", names, 2, &n,
	    &live), REG_OK);
	assert_int_equal(n, 0);
	assert_false(live);
}

static void
test_duplicate_insert(void **state)
{
	struct fixture *f = *state;
	struct lane_record rec = make_record(LANE_A, 1000), got;

	assert_int_equal(registry_lane_insert(f->r, &rec, NULL, 0), REG_OK);
	rec.cpus = 7;
	assert_int_equal(registry_lane_insert(f->r, &rec, NULL, 0), REG_EXISTS);
	/* The first row is untouched and has one "registered" event. */
	assert_int_equal(registry_lane_get(f->r, LANE_A, &got), REG_OK);
	assert_int_equal(got.cpus, 2);
	assert_int_equal(event_count(f->r, LANE_A), 1);
}

static void
test_insert_is_atomic(void **state)
{
	struct fixture *f = *state;
	struct lane_record rec = make_record(LANE_A, 1000), got;
	struct lane_label labels[2];
	size_t n = 9;

	/* A duplicate label key fails the insert: no row, no labels, no event. */
	str_copy(labels[0].key, "team", sizeof labels[0].key);
	str_copy(labels[0].value, "x", sizeof labels[0].value);
	labels[1] = labels[0];
	assert_int_not_equal(registry_lane_insert(f->r, &rec, labels, 2), REG_OK);
	assert_int_equal(registry_lane_get(f->r, LANE_A, &got), REG_NOT_FOUND);
	assert_int_equal(event_count(f->r, LANE_A), 0);
	assert_int_equal(registry_labels_get(f->r, LANE_A, labels, 2, &n), REG_OK);
	assert_int_equal(n, 0);

	/* The schema refuses names that are not lane names. */
	str_copy(rec.name, "al-XYZ", sizeof rec.name);
	assert_int_not_equal(registry_lane_insert(f->r, &rec, NULL, 0), REG_OK);
	assert_int_equal(registry_lane_get(f->r, "al-XYZ", &got), REG_NOT_FOUND);
}

static void
test_transition_matrix(void **state)
{
	static const struct {
		int from, to;
	} allowed[] = {
		{ LANE_CREATING, LANE_READY },
		{ LANE_CREATING, LANE_DESTROYING },
		{ LANE_READY, LANE_DESTROYING },
		{ LANE_DESTROYING, LANE_DESTROYED },
		{ LANE_DESTROYING, LANE_FAILED },
		{ LANE_POOLED, LANE_READY },		/* booted (row stays pooled) */
		{ LANE_POOLED, LANE_DESTROYING },	/* recycled */
	};

	for (int from = -1; from <= 7; from++) {
		for (int to = -1; to <= 7; to++) {
			bool want = false;

			for (size_t i = 0; i < sizeof allowed / sizeof *allowed;
			    i++)
				if (allowed[i].from == from && allowed[i].to == to)
					want = true;
			if (registry_transition_allowed(from, to) != want)
				fail_msg("%d -> %d: allowed is %d, want %d", from,
				    to, !want, want);
		}
	}
	/* Spot checks of the ones that matter most. */
	assert_false(registry_transition_allowed(LANE_DESTROYED, LANE_READY));
	assert_false(registry_transition_allowed(LANE_FAILED, LANE_DESTROYING));
	assert_false(registry_transition_allowed(LANE_READY, LANE_CREATING));
	assert_false(registry_transition_allowed(LANE_CREATING, LANE_FAILED));

	assert_true(registry_state_is_live(LANE_CREATING));
	assert_true(registry_state_is_live(LANE_READY));
	assert_true(registry_state_is_live(LANE_DESTROYING));
	assert_false(registry_state_is_live(LANE_DESTROYED));
	assert_false(registry_state_is_live(LANE_FAILED));
	assert_false(registry_state_is_live(0));
}

/* Every target the state machine refuses from the lane's current state. */
static void
expect_refusals(struct registry *r, const char *name)
{
	struct lane_record before, after;
	size_t events = event_count(r, name);

	assert_int_equal(registry_lane_get(r, name, &before), REG_OK);
	for (int to = 0; to <= 6; to++) {
		if (registry_transition_allowed(before.state, to))
			continue;
		if (registry_lane_transition(r, name, to, "bogus", "x") !=
		    REG_BAD_TRANSITION)
			fail_msg("%s: %d -> %d not refused", name, before.state,
			    to);
		assert_int_equal(registry_lane_get(r, name, &after), REG_OK);
		assert_int_equal(after.state, before.state);
		assert_int_equal(after.ended_at_ms, before.ended_at_ms);
		assert_int_equal(event_count(r, name), events);
	}
}

/* Transition, then check the state, one new event and ended_at. */
static void
expect_transition(struct registry *r, const char *name, int to,
    const char *event)
{
	struct lane_record rec;
	struct registry_event ev;
	size_t events = event_count(r, name);
	int64_t before = time_now_ms(), after;

	assert_int_equal(registry_lane_transition(r, name, to, event, "why"),
	    REG_OK);
	after = time_now_ms();
	assert_int_equal(registry_lane_get(r, name, &rec), REG_OK);
	assert_int_equal(rec.state, to);
	assert_int_equal(event_count(r, name), events + 1);
	ev = last_event(r, name);
	assert_string_equal(ev.event, event);
	assert_string_equal(ev.detail, "why");
	assert_true(ev.time_ms >= before && ev.time_ms <= after);
	if (registry_state_is_live(to))
		assert_int_equal(rec.ended_at_ms, 0);
	else
		assert_true(rec.ended_at_ms >= before &&
		    rec.ended_at_ms <= after);
}

static void
test_transitions(void **state)
{
	struct registry *r = ((struct fixture *)*state)->r;

	insert(r, LANE_A, 1000);
	insert(r, LANE_B, 2000);

	/* A: the normal life. */
	expect_refusals(r, LANE_A);
	expect_transition(r, LANE_A, LANE_READY, "ready");
	expect_refusals(r, LANE_A);
	expect_transition(r, LANE_A, LANE_DESTROYING, "destroying");
	expect_refusals(r, LANE_A);
	expect_transition(r, LANE_A, LANE_DESTROYED, "destroyed");
	expect_refusals(r, LANE_A);

	/* B: creation fails. */
	expect_transition(r, LANE_B, LANE_DESTROYING, "create-failed");
	expect_transition(r, LANE_B, LANE_FAILED, "failed");
	expect_refusals(r, LANE_B);

	assert_int_equal(registry_lane_transition(r, LANE_C, LANE_READY,
	    "ready", NULL), REG_NOT_FOUND);
	assert_int_equal(event_count(r, LANE_C), 0);
}

static void
test_list_and_count(void **state)
{
	struct registry *r = ((struct fixture *)*state)->r;
	struct lane_record *v = NULL;
	size_t n = 99;

	assert_int_equal(registry_count_live(r, &n), REG_OK);
	assert_int_equal(n, 0);
	assert_int_equal(registry_lane_list(r, true, &v, &n), REG_OK);
	assert_int_equal(n, 0);
	free(v);

	/* Inserted out of order: lists are oldest first. */
	insert(r, LANE_C, 3000);
	insert(r, LANE_A, 1000);
	insert(r, LANE_D, 4000);
	insert(r, LANE_B, 2000);
	assert_int_equal(registry_lane_transition(r, LANE_A, LANE_DESTROYING,
	    "destroying", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_A, LANE_DESTROYED,
	    "destroyed", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_C, LANE_READY,
	    "ready", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_D, LANE_DESTROYING,
	    "destroying", NULL), REG_OK);

	assert_int_equal(registry_lane_list(r, true, &v, &n), REG_OK);
	assert_int_equal(n, 4);
	assert_string_equal(v[0].name, LANE_A);
	assert_string_equal(v[1].name, LANE_B);
	assert_string_equal(v[2].name, LANE_C);
	assert_string_equal(v[3].name, LANE_D);
	assert_int_equal(v[0].state, LANE_DESTROYED);
	free(v);

	/* Live: creating, ready and destroying. */
	assert_int_equal(registry_lane_list(r, false, &v, &n), REG_OK);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].name, LANE_B);
	assert_int_equal(v[0].state, LANE_CREATING);
	assert_string_equal(v[1].name, LANE_C);
	assert_int_equal(v[1].state, LANE_READY);
	assert_string_equal(v[2].name, LANE_D);
	assert_int_equal(v[2].state, LANE_DESTROYING);
	free(v);
	assert_int_equal(registry_count_live(r, &n), REG_OK);
	assert_int_equal(n, 3);
}

static void
test_labels(void **state)
{
	struct registry *r = ((struct fixture *)*state)->r;
	struct lane_record rec = make_record(LANE_A, 1000);
	struct lane_label in[3], out[LANE_LABELS_MAX];
	size_t n = 99;

	memset(in, 0, sizeof in);
	str_copy(in[0].key, "team", sizeof in[0].key);
	str_copy(in[0].value, "infra", sizeof in[0].value);
	str_copy(in[1].key, "app", sizeof in[1].key);
	str_copy(in[1].value, "", sizeof in[1].value);
	memset(in[2].key, 'k', LANE_LABEL_KEY_MAX);
	memset(in[2].value, 'v', LANE_LABEL_VALUE_MAX);
	assert_int_equal(registry_lane_insert(r, &rec, in, 3), REG_OK);

	/* Back in key order, longest key and value intact. */
	assert_int_equal(registry_labels_get(r, LANE_A, out, LANE_LABELS_MAX,
	    &n), REG_OK);
	assert_int_equal(n, 3);
	assert_string_equal(out[0].key, "app");
	assert_string_equal(out[0].value, "");
	assert_string_equal(out[1].key, in[2].key);
	assert_string_equal(out[1].value, in[2].value);
	assert_string_equal(out[2].key, "team");
	assert_string_equal(out[2].value, "infra");

	/* max bounds what is written. */
	memset(out, 0, sizeof out);
	assert_int_equal(registry_labels_get(r, LANE_A, out, 1, &n), REG_OK);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].key, "app");
	assert_string_equal(out[1].key, "");

	insert(r, LANE_B, 2000);
	assert_int_equal(registry_labels_get(r, LANE_B, out, LANE_LABELS_MAX,
	    &n), REG_OK);
	assert_int_equal(n, 0);
}

static void
test_set_deadline(void **state)
{
	struct registry *r = ((struct fixture *)*state)->r;
	struct lane_record rec;
	struct registry_event ev;

	insert(r, LANE_A, 1000);
	insert(r, LANE_B, 2000);
	insert(r, LANE_C, 3000);

	/* Creating and ready lanes can be extended, with an event. */
	assert_int_equal(registry_lane_set_deadline(r, LANE_A, 99000,
	    "by 60s"), REG_OK);
	assert_int_equal(registry_lane_get(r, LANE_A, &rec), REG_OK);
	assert_int_equal(rec.deadline_ms, 99000);
	ev = last_event(r, LANE_A);
	assert_string_equal(ev.event, "extended");
	assert_string_equal(ev.detail, "by 60s");
	assert_int_equal(event_count(r, LANE_A), 2);

	assert_int_equal(registry_lane_transition(r, LANE_B, LANE_READY,
	    "ready", NULL), REG_OK);
	assert_int_equal(registry_lane_set_deadline(r, LANE_B, 88000, "x"),
	    REG_OK);
	assert_int_equal(state_of(r, LANE_B), LANE_READY);

	/* Ended lanes cannot: no change, no event. */
	assert_int_equal(registry_lane_transition(r, LANE_C, LANE_DESTROYING,
	    "destroying", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_C, LANE_DESTROYED,
	    "destroyed", NULL), REG_OK);
	assert_int_equal(registry_lane_set_deadline(r, LANE_C, 77000, "x"),
	    REG_NOT_FOUND);
	assert_int_equal(registry_lane_get(r, LANE_C, &rec), REG_OK);
	assert_int_equal(rec.deadline_ms, 3000 + 3600000);
	assert_string_equal(last_event(r, LANE_C).event, "destroyed");

	assert_int_equal(registry_lane_set_deadline(r, LANE_D, 1, "x"),
	    REG_NOT_FOUND);
	assert_int_equal(event_count(r, LANE_D), 0);
}

static void
test_prune(void **state)
{
	struct fixture *f = *state;
	struct registry *r = f->r;
	struct lane_record rec = make_record(LANE_A, 1000);
	struct lane_label label;
	size_t n = 99;

	memset(&label, 0, sizeof label);
	str_copy(label.key, "k", sizeof label.key);
	str_copy(label.value, "v", sizeof label.value);
	assert_int_equal(registry_lane_insert(r, &rec, &label, 1), REG_OK);
	insert(r, LANE_B, 1000);
	insert(r, LANE_C, 1000);
	insert(r, LANE_D, 1000);
	/* A destroyed and B failed long ago, D destroyed recently, C live. */
	assert_int_equal(registry_lane_transition(r, LANE_A, LANE_DESTROYING,
	    "destroying", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_A, LANE_DESTROYED,
	    "destroyed", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_B, LANE_DESTROYING,
	    "destroying", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_B, LANE_FAILED,
	    "failed", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_D, LANE_DESTROYING,
	    "destroying", NULL), REG_OK);
	assert_int_equal(registry_lane_transition(r, LANE_D, LANE_DESTROYED,
	    "destroyed", NULL), REG_OK);
	sql_exec(f->path, "UPDATE lanes SET ended_at_ms = 2000 WHERE name IN "
	    "('" LANE_A "', '" LANE_B "')");
	sql_exec(f->path, "UPDATE lanes SET ended_at_ms = 9000 WHERE name = '"
	    LANE_D "'");

	/* C's ended_at is 0, below any cutoff: it is live and must stay. */
	assert_int_equal(registry_prune(r, 5000, &n), REG_OK);
	assert_int_equal(n, 2);
	assert_int_equal(registry_lane_get(r, LANE_A, &rec), REG_NOT_FOUND);
	assert_int_equal(registry_lane_get(r, LANE_B, &rec), REG_NOT_FOUND);
	assert_int_equal(event_count(r, LANE_A), 0);
	assert_int_equal(event_count(r, LANE_B), 0);
	assert_int_equal(state_of(r, LANE_C), LANE_CREATING);
	assert_int_equal(event_count(r, LANE_C), 1);
	assert_int_equal(state_of(r, LANE_D), LANE_DESTROYED);
	assert_int_equal(event_count(r, LANE_D), 3);
	{
		char *labels = sql_text(f->path,
		    "SELECT count(*) FROM lane_labels");

		assert_string_equal(labels, "0");
		free(labels);
	}

	/* The cutoff is strict: ended_at equal to it stays. */
	assert_int_equal(registry_prune(r, 9000, &n), REG_OK);
	assert_int_equal(n, 0);
	assert_int_equal(registry_prune(r, 9001, &n), REG_OK);
	assert_int_equal(n, 1);
	assert_int_equal(registry_lane_get(r, LANE_D, &rec), REG_NOT_FOUND);
	assert_int_equal(state_of(r, LANE_C), LANE_CREATING);
	assert_true(registry_integrity_ok(r));
}

static void
test_reopen(void **state)
{
	struct fixture *f = *state;
	struct lane_record rec;
	char err[256] = "";

	insert(f->r, LANE_A, 1000);
	assert_int_equal(registry_lane_transition(f->r, LANE_A, LANE_READY,
	    "ready", NULL), REG_OK);
	registry_close(f->r);
	f->r = NULL;

	assert_int_equal(registry_open(f->path, &f->r, err, sizeof err),
	    REG_OK);
	assert_int_equal(registry_lane_get(f->r, LANE_A, &rec), REG_OK);
	assert_int_equal(rec.state, LANE_READY);
	assert_int_equal(rec.cpus, 2);
	assert_int_equal(event_count(f->r, LANE_A), 2);
	assert_true(registry_integrity_ok(f->r));
}

static void
test_newer_schema_refused(void **state)
{
	struct fixture *f = *state;
	struct registry *r2 = NULL;
	char sql[64], err[256] = "", *v, path[160];

	/* A later agent-laned migrated this file: leave it alone. */
	snprintf(sql, sizeof sql, "PRAGMA user_version = %d",
	    registry_schema_version() + 1);
	sql_exec(f->path, sql);
	registry_close(f->r);
	f->r = NULL;
	assert_int_equal(registry_open(f->path, &r2, err, sizeof err),
	    REG_ERROR);
	assert_null(r2);
	assert_non_null(strstr(err, "newer"));
	snprintf(sql, sizeof sql, "%d", registry_schema_version() + 1);
	v = sql_text(f->path, "PRAGMA user_version");
	assert_string_equal(v, sql);
	free(v);

	/* Not through a symbolic link either. */
	snprintf(path, sizeof path, "%s/link.db", f->dir);
	assert_int_equal(symlink("registry.db", path), 0);
	err[0] = '\0';
	assert_int_equal(registry_open(path, &r2, err, sizeof err), REG_ERROR);
	assert_true(err[0] != '\0');
}

/*
 * A file that is not SQLite fails with a message naming it, whatever the
 * caller's buffer held before (agent-laned passes an uninitialized one).
 */
static void
test_not_a_database(void **state)
{
	struct fixture *f = *state;
	struct registry *r2 = NULL;
	char path[160], err[256];
	FILE *fp;

	snprintf(path, sizeof path, "%s/garbage.db", f->dir);
	assert_non_null(fp = fopen(path, "w"));
	for (int i = 0; i < 4096; i++)
		fputc("SQLite?"[i % 7], fp);
	assert_int_equal(fclose(fp), 0);
	memset(err, 'X', sizeof err - 1);
	err[sizeof err - 1] = '\0';
	assert_int_equal(registry_open(path, &r2, err, sizeof err), REG_ERROR);
	assert_null(r2);
	if (strstr(err, path) == NULL)
		fail_msg("error does not name the file: \"%.60s...\"", err);
}

/* An existing empty file is a lost registry, never a fresh one. */
static void
test_empty_refused(void **state)
{
	struct fixture *f = *state;
	struct registry *r2 = NULL;
	char path[160], init[176], err[256] = "";
	struct stat sb;
	int fd;

	snprintf(path, sizeof path, "%s/empty.db", f->dir);
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(registry_open(path, &r2, err, sizeof err), REG_ERROR);
	assert_null(r2);
	assert_non_null(strstr(err, "empty"));
	assert_non_null(strstr(err, path));
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 0);

	/* Missing: created whole, with nothing left beside it. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(registry_open(path, &r2, err, sizeof err), REG_OK);
	registry_close(r2);
	snprintf(init, sizeof init, "%s.init", path);
	assert_int_equal(stat(init, &sb), -1);
	assert_int_equal(stat(path, &sb), 0);
	assert_true(sb.st_size > 0);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_schema_and_pragmas),
		T(test_empty_refused),
		T(test_file_mode),
		T(test_insert_and_get),
		T(test_duplicate_insert),
		T(test_alias_unique_live),
		T(test_insert_is_atomic),
		cmocka_unit_test(test_transition_matrix),
		T(test_transitions),
		T(test_list_and_count),
		T(test_labels),
		T(test_set_deadline),
		T(test_prune),
		T(test_reopen),
		T(test_newer_schema_refused),
		T(test_not_a_database),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
