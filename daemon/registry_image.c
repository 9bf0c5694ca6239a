/*
 * The registry's images table. One row per image: committed in "building"
 * before limactl hears the instance name (the lanes' invariant 1), "ready"
 * once the provisioned VM is stopped, deleted together with its VM (a
 * failed or cancelled build leaves no row). A commit's row also names
 * the lane it came from (committed_from, committed_alias, committed_at).
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

static void
image_row(sqlite3_stmt *st, struct image_record *rec)
{
	const char *s;

	memset(rec, 0, sizeof *rec);
	reg_column_copy(st, 0, rec->name, sizeof rec->name);
	reg_column_copy(st, 1, rec->id, sizeof rec->id);
	reg_column_copy(st, 2, rec->instance, sizeof rec->instance);
	s = (const char *)sqlite3_column_text(st, 3);
	rec->state = s != NULL && strcmp(s, "ready") == 0 ? IMAGE_READY :
	    IMAGE_BUILDING;
	reg_column_copy(st, 4, rec->from, sizeof rec->from);
	rec->docker = sqlite3_column_int(st, 5) != 0;
	rec->cpus = (uint32_t)sqlite3_column_int64(st, 6);
	rec->memory_mib = (uint32_t)sqlite3_column_int64(st, 7);
	rec->disk_gib = (uint32_t)sqlite3_column_int64(st, 8);
	reg_column_copy(st, 9, rec->scripts, sizeof rec->scripts);
	rec->created_at_ms = sqlite3_column_int64(st, 10);
	rec->build_ms = (uint64_t)sqlite3_column_int64(st, 11);
	reg_column_copy(st, 12, rec->committed_from,
	    sizeof rec->committed_from);
	reg_column_copy(st, 13, rec->committed_alias,
	    sizeof rec->committed_alias);
	rec->committed_at_ms = sqlite3_column_int64(st, 14);
}

int
registry_image_insert(struct registry *r, const struct image_record *rec)
{
	sqlite3_stmt *st = reg_prepare(r, "INSERT INTO images ("
	    IMAGE_COLUMNS ") VALUES (?1, ?2, ?3, 'building', ?4, ?5, ?6, ?7, "
	    "?8, ?9, ?10, 0, ?11, ?12, ?13)");
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
	sqlite3_bind_text(st, 11, rec->committed_from, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 12, rec->committed_alias, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 13, rec->committed_at_ms);
	rc = reg_step_done(r, st);
	/* Extended result codes are on: only a taken name or instance. */
	return rc == REG_TAKEN ? REG_EXISTS : rc;
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
	if ((rc = reg_step_one(r, st)) != REG_OK)
		return rc;
	image_row(st, rec);
	reg_release(st);
	return REG_OK;
}

int
registry_image_get(struct registry *r, const char *name,
    struct image_record *rec)
{
	return image_get_by(r, reg_prepare(r, "SELECT " IMAGE_COLUMNS
	    " FROM images WHERE name = ?1"), name, rec);
}

int
registry_image_by_id(struct registry *r, const char *id,
    struct image_record *rec)
{
	return image_get_by(r, reg_prepare(r, "SELECT " IMAGE_COLUMNS
	    " FROM images WHERE id = ?1 AND state = 'ready' "
	    "ORDER BY created_at_ms, name LIMIT 1"), id, rec);
}

int
registry_image_set_ready(struct registry *r, const char *name,
    uint64_t build_ms)
{
	sqlite3_stmt *st = reg_prepare(r, "UPDATE images SET state = 'ready', "
	    "build_ms = ?2 WHERE name = ?1 AND state = 'building'");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)build_ms);
	if (reg_step_done(r, st) != REG_OK)
		return REG_ERROR;
	return sqlite3_changes(r->db) == 1 ? REG_OK : REG_NOT_FOUND;
}

int
registry_image_delete(struct registry *r, const char *name)
{
	sqlite3_stmt *st = reg_prepare(r, "DELETE FROM images WHERE name = ?1");

	if (st == NULL)
		return REG_ERROR;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (reg_step_done(r, st) != REG_OK)
		return REG_ERROR;
	return sqlite3_changes(r->db) == 1 ? REG_OK : REG_NOT_FOUND;
}

int
registry_image_replace(struct registry *r, const char *row, const char *name,
    uint64_t build_ms, struct image_record *old, bool *replaced)
{
	sqlite3_stmt *st;
	int rc;

	*replaced = false;
	if (reg_tx_begin(r) != REG_OK)
		return REG_ERROR;
	rc = registry_image_get(r, name, old);
	if (rc == REG_OK && old->state == IMAGE_READY) {
		/* Retired: a "building" row, which recovery would delete. */
		st = reg_prepare(r, "UPDATE images SET name = '~' || instance, "
		    "state = 'building' WHERE name = ?1 AND state = 'ready'");
		if (st != NULL)
			sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		if ((rc = reg_step_done(r, st)) == REG_OK) {
			*replaced = true;
			snprintf(old->name, sizeof old->name, "~%s",
			    old->instance);
			old->state = IMAGE_BUILDING;
		}
	} else if (rc == REG_NOT_FOUND)
		rc = REG_OK;	/* removed meanwhile: nothing to retire */
	else if (rc == REG_OK)
		rc = REG_EXISTS;	/* another build of the name */
	if (rc == REG_OK) {
		st = reg_prepare(r, "UPDATE images SET name = ?2, state = "
		    "'ready', build_ms = ?3 WHERE name = ?1 AND state = "
		    "'building'");
		if (st != NULL) {
			sqlite3_bind_text(st, 1, row, -1, SQLITE_STATIC);
			sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 3, (int64_t)build_ms);
		}
		if ((rc = reg_step_done(r, st)) == REG_OK &&
		    sqlite3_changes(r->db) != 1)
			rc = REG_NOT_FOUND;
	}
	if ((rc = reg_tx_end(r, rc)) != REG_OK)
		*replaced = false;
	return rc;
}

int
registry_image_list(struct registry *r, struct image_record **out, size_t *n)
{
	sqlite3_stmt *st = reg_prepare(r, "SELECT " IMAGE_COLUMNS
	    " FROM images ORDER BY created_at_ms, name");
	struct image_record *v = NULL;
	size_t cnt = 0, cap = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if (st == NULL)
		return REG_ERROR;
	while ((rc = reg_step(r, st)) == SQLITE_ROW) {
		if (cnt == cap) {
			cap = cap != 0 ? cap * 2 : 8;
			v = xreallocarray(v, cap, sizeof *v);
		}
		image_row(st, &v[cnt++]);
	}
	if (reg_rows_end(st, rc) != REG_OK) {
		free(v);
		return REG_ERROR;
	}
	*out = v;
	*n = cnt;
	return REG_OK;
}
