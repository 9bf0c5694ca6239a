/*
 * daemon/registry.c, the image block: rows committed "building" before the
 * VM exists, made "ready", listed, deleted; names and instance names unique;
 * the schema refuses instance names that are not image names; a database
 * of schema 1 (lanes only) migrates with its lanes kept; a replacing build
 * takes the name in one step and leaves the old image retired.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry.h"
#include "util.h"
#include "lib/tar.h"	/* al_remove_tree */

static const char id64[] =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void
rec_init(struct image_record *r, const char *name, const char *inst)
{
	memset(r, 0, sizeof *r);
	str_copy(r->name, name, sizeof r->name);
	str_copy(r->id, id64, sizeof r->id);
	str_copy(r->instance, inst, sizeof r->instance);
	r->cpus = 2;
	r->memory_mib = 4096;
	r->disk_gib = 30;
	str_copy(r->scripts, "a.sh\nb.sh\n", sizeof r->scripts);
	r->created_at_ms = 1000;
}

static void
tmpdb(char dir[64], char path[128])
{
	snprintf(dir, 64, "/tmp/test_imagereg.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, 128, "%s/registry.db", dir);
}

static void
test_image_rows(void **state)
{
	char dir[64], path[128], err[256];
	struct registry *r;
	struct image_record a, b, got, *v;
	size_t n;

	tmpdb(dir, path);
	assert_int_equal(registry_open(path, &r, err, sizeof err), REG_OK);
	/* 3: the warm pool; later migrations may follow. */
	assert_true(registry_schema_version() >= 3);
	rec_init(&a, "tools", "ali-000000000000000a");
	assert_int_equal(registry_image_insert(r, &a), REG_OK);
	assert_int_equal(registry_image_get(r, "tools", &got), REG_OK);
	assert_int_equal(got.state, IMAGE_BUILDING);
	assert_string_equal(got.instance, "ali-000000000000000a");
	assert_string_equal(got.scripts, "a.sh\nb.sh\n");
	assert_int_equal(got.disk_gib, 30);

	/* Names and instances are unique. */
	rec_init(&b, "tools", "ali-000000000000000b");
	assert_int_equal(registry_image_insert(r, &b), REG_EXISTS);
	rec_init(&b, "other", "ali-000000000000000a");
	assert_int_equal(registry_image_insert(r, &b), REG_EXISTS);
	/* The schema refuses a lane name (or anything else) as an instance. */
	rec_init(&b, "other", "al-000000000000000a");
	assert_int_not_equal(registry_image_insert(r, &b), REG_OK);
	rec_init(&b, "other", "ali-../../etc");
	assert_int_not_equal(registry_image_insert(r, &b), REG_OK);

	assert_int_equal(registry_image_set_ready(r, "tools", 1234), REG_OK);
	assert_int_equal(registry_image_set_ready(r, "tools", 1), REG_NOT_FOUND);
	assert_int_equal(registry_image_get(r, "tools", &got), REG_OK);
	assert_int_equal(got.state, IMAGE_READY);
	assert_int_equal(got.build_ms, 1234);

	rec_init(&b, "second", "ali-000000000000000b");
	b.created_at_ms = 2000;
	assert_int_equal(registry_image_insert(r, &b), REG_OK);
	assert_int_equal(registry_image_list(r, &v, &n), REG_OK);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, "tools");
	assert_string_equal(v[1].name, "second");
	free(v);

	assert_int_equal(registry_image_delete(r, "tools"), REG_OK);
	assert_int_equal(registry_image_delete(r, "tools"), REG_NOT_FOUND);
	assert_int_equal(registry_image_get(r, "tools", &got), REG_NOT_FOUND);
	registry_close(r);
	al_remove_tree(dir);
}

static void
test_image_replace(void **state)
{
	char dir[64], path[128], err[256];
	struct registry *r;
	struct image_record a, b, old, got;
	bool replaced;

	tmpdb(dir, path);
	assert_int_equal(registry_open(path, &r, err, sizeof err), REG_OK);
	rec_init(&a, "tools", "ali-000000000000000a");
	assert_int_equal(registry_image_insert(r, &a), REG_OK);
	assert_int_equal(registry_image_set_ready(r, "tools", 5), REG_OK);
	/* The replacement builds under its hidden row name. */
	rec_init(&b, "~ali-000000000000000b", "ali-000000000000000b");
	b.id[0] = 'f';
	assert_int_equal(registry_image_insert(r, &b), REG_OK);
	assert_int_equal(registry_image_replace(r, "~ali-000000000000000b",
	    "tools", 7, &old, &replaced), REG_OK);
	assert_true(replaced);
	/* The old row is retired: hidden and "building", for recovery. */
	assert_string_equal(old.name, "~ali-000000000000000a");
	assert_string_equal(old.instance, "ali-000000000000000a");
	assert_int_equal(registry_image_get(r, "~ali-000000000000000a", &got),
	    REG_OK);
	assert_int_equal(got.state, IMAGE_BUILDING);
	/* The name is the new image's, ready. */
	assert_int_equal(registry_image_get(r, "tools", &got), REG_OK);
	assert_string_equal(got.instance, "ali-000000000000000b");
	assert_int_equal(got.state, IMAGE_READY);
	assert_int_equal(got.build_ms, 7);
	assert_int_equal(registry_image_get(r, "~ali-000000000000000b", &got),
	    REG_NOT_FOUND);
	/* A name another build holds is not taken. */
	assert_int_equal(registry_image_delete(r, "tools"), REG_OK);
	rec_init(&a, "tools", "ali-000000000000000c");
	assert_int_equal(registry_image_insert(r, &a), REG_OK);
	rec_init(&b, "~ali-000000000000000d", "ali-000000000000000d");
	assert_int_equal(registry_image_insert(r, &b), REG_OK);
	assert_int_equal(registry_image_replace(r, "~ali-000000000000000d",
	    "tools", 7, &old, &replaced), REG_EXISTS);
	assert_false(replaced);
	assert_int_equal(registry_image_get(r, "~ali-000000000000000d", &got),
	    REG_OK);
	assert_int_equal(got.state, IMAGE_BUILDING);
	registry_close(r);
	al_remove_tree(dir);
	(void)state;
}

static void
test_migrate_from_schema_1(void **state)
{
	char dir[64], path[128], err[256];
	struct registry *r;
	struct lane_record lr;
	struct image_record a;
	sqlite3 *db;

	tmpdb(dir, path);
	/* What a daemon of schema 1 left: the lanes table with one lane. */
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db,
	    "CREATE TABLE lanes (name TEXT PRIMARY KEY, state TEXT NOT NULL,"
	    " cpus INTEGER NOT NULL, memory_mib INTEGER NOT NULL,"
	    " disk_gib INTEGER NOT NULL, created_at_ms INTEGER NOT NULL,"
	    " deadline_ms INTEGER NOT NULL, idle_timeout_ms INTEGER NOT NULL"
	    " DEFAULT 0, last_activity_ms INTEGER NOT NULL, ended_at_ms INTEGER"
	    " NOT NULL DEFAULT 0, owner_uid INTEGER NOT NULL, workspace TEXT NOT"
	    " NULL DEFAULT '', error TEXT NOT NULL DEFAULT '', create_failed"
	    " INTEGER NOT NULL DEFAULT 0);"
	    "CREATE INDEX lanes_state ON lanes(state);"
	    "CREATE TABLE lane_labels (lane TEXT NOT NULL, key TEXT NOT NULL,"
	    " value TEXT NOT NULL, PRIMARY KEY (lane, key));"
	    "CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, time_ms"
	    " INTEGER NOT NULL, lane TEXT NOT NULL, event TEXT NOT NULL, detail"
	    " TEXT NOT NULL DEFAULT '');"
	    "CREATE INDEX events_lane ON events(lane, id);"
	    "INSERT INTO lanes (name, state, cpus, memory_mib, disk_gib,"
	    " created_at_ms, deadline_ms, last_activity_ms, owner_uid) VALUES"
	    " ('al-000000000000000a', 'ready', 2, 4096, 30, 1, 2, 1, 0);"
	    "PRAGMA user_version = 1;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(registry_open(path, &r, err, sizeof err), REG_OK);
	assert_int_equal(registry_lane_get(r, "al-000000000000000a", &lr),
	    REG_OK);
	assert_int_equal(lr.state, LANE_READY);
	rec_init(&a, "tools", "ali-000000000000000a");
	assert_int_equal(registry_image_insert(r, &a), REG_OK);
	registry_close(r);
	al_remove_tree(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_image_rows),
		cmocka_unit_test(test_image_replace),
		cmocka_unit_test(test_migrate_from_schema_1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
