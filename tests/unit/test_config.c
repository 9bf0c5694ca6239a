/*
 * daemon/config.c: defaults, keys typed by users (file and flags), the
 * file syntax and the relations checked at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "units.h"
#include "lib/tar.h"	/* al_remove_tree */

#define MIN UNITS_MS_PER_MIN
#define SEC UNITS_MS_PER_S

struct fixture {
	struct config c;
	char dir[64];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);

	if (f == NULL)
		return -1;
	snprintf(f->dir, sizeof f->dir, "/tmp/test_config.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	config_defaults(&f->c);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	config_free(&f->c);
	al_remove_tree(f->dir);
	free(f);
	return 0;
}

static void
set_ok(struct config *c, const char *key, const char *value)
{
	char err[256] = "";

	if (config_set(c, key, value, err, sizeof err) != 0)
		fail_msg("%s = %s refused: %s", key, value, err);
}

/* The value is refused with a message naming the key and want_in_err. */
static void
set_bad(struct config *c, const char *key, const char *value,
    const char *want_in_err)
{
	char err[256] = "";

	if (config_set(c, key, value, err, sizeof err) != -1)
		fail_msg("%s = %s accepted", key, value);
	if (strstr(err, key) == NULL || strstr(err, want_in_err) == NULL)
		fail_msg("%s = %s: error \"%s\" lacks \"%s\"", key, value, err,
		    want_in_err);
}

static void
test_defaults(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;
	char err[256] = "";

	/* Safe defaults: an image template, caps above defaults. */
	assert_string_equal(c->lima_template, "template:_images/ubuntu-lts");
	assert_string_equal(c->limactl, "limactl");
	assert_true(c->default_cpus <= c->max_cpus);
	assert_true(c->default_memory_mib <= c->max_memory_mib);
	assert_true(c->default_disk_gib <= c->max_disk_gib);
	assert_true(c->default_lifetime_ms <= c->max_lifetime_ms);
	assert_int_equal(c->max_frame_bytes, 1u << 20);
	assert_int_equal(c->request_timeout_ms, 30 * SEC);
	assert_false(c->debug);
	/* Paths follow $HOME (set by main). */
	assert_non_null(strstr(c->state_dir, "/.agent-lane"));
	assert_true(c->state_dir[0] == '/');
	assert_true(c->socket_path[0] == '/');
	assert_int_equal(config_finalize(c, err, sizeof err), 0);
}

static void
test_memory(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;

	set_ok(c, "default_memory", "4GiB");
	assert_int_equal(c->default_memory_mib, 4096);
	set_ok(c, "default_memory", "512MiB");
	assert_int_equal(c->default_memory_mib, 512);
	/* Fractions are whole MiB here (issue 11: shared units). */
	set_ok(c, "default_memory", "1.5GiB");
	assert_int_equal(c->default_memory_mib, 1536);
	set_ok(c, "default_memory", "8G");
	assert_int_equal(c->default_memory_mib, 8192);
	/* The one rule (units.h): a plain number needs its unit here. */
	set_bad(c, "default_memory", "8", "needs its unit (8G or 8M)");
	set_bad(c, "default_memory", "0.5", "needs its unit");
	set_ok(c, "max_memory", "1536MiB");
	assert_int_equal(c->max_memory_mib, 1536);
	set_ok(c, "max_memory", "1T");
	assert_int_equal(c->max_memory_mib, 1u << 20);

	set_bad(c, "default_memory", "1.0001GiB", "invalid value");
	set_bad(c, "default_memory", "1536K", "invalid value");	/* not whole MiB */
	set_bad(c, "default_memory", "4gb", "invalid value");
	set_bad(c, "default_memory", "", "invalid value");
	set_bad(c, "default_memory", "128MiB", "out of range");
	set_bad(c, "default_memory", "0", "out of range");
	set_bad(c, "default_memory", "8T", "out of range");
	set_bad(c, "default_memory", "99999999999999999999G", "invalid value");
	assert_int_equal(c->default_memory_mib, 8192);
}

/* A GiB count so large that converting it to MiB wraps around. */
static void
test_memory_plain_overflow(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;

	/* 2^54 + 1 GiB is 2^64 + 1024 MiB: must not become 1024 MiB. */
	set_bad(c, "default_memory", "18014398509481985G", "");
	assert_int_equal(c->default_memory_mib, 4096);
}

static void
test_disk(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;

	set_ok(c, "default_disk", "40G");
	assert_int_equal(c->default_disk_gib, 40);
	set_bad(c, "default_disk", "40", "needs its unit (40G or 40M)");
	set_ok(c, "max_disk", "200GiB");
	assert_int_equal(c->max_disk_gib, 200);
	set_ok(c, "max_disk", "1T");
	assert_int_equal(c->max_disk_gib, 1024);
	set_bad(c, "default_disk", "512MiB", "invalid value");
	set_bad(c, "default_disk", "0", "out of range");
	set_bad(c, "default_disk", "65537G", "out of range");
}

static void
test_durations(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;

	/* Lifetimes take every duration form. */
	/* The one rule (units.h): a plain number needs its unit. */
	set_bad(c, "max_lifetime", "5400", "needs its unit (5400s or 5400m)");
	set_bad(c, "default_idle_timeout", "90", "needs its unit");
	set_bad(c, "retention", "1.5", "needs its unit");
	set_ok(c, "max_lifetime", "5400s");
	assert_int_equal(c->max_lifetime_ms, 90 * MIN);
	set_ok(c, "default_idle_timeout", "90s");
	assert_int_equal(c->default_idle_timeout_ms, 90 * SEC);
	set_ok(c, "retention", "120s");
	assert_int_equal(c->retention_ms, 2 * MIN);
	set_ok(c, "max_lifetime", "2h");
	assert_int_equal(c->max_lifetime_ms, 120 * MIN);
	set_ok(c, "default_lifetime", "30s");
	assert_int_equal(c->default_lifetime_ms, 30 * SEC);
	set_ok(c, "default_idle_timeout", "0");
	assert_int_equal(c->default_idle_timeout_ms, 0);
	set_ok(c, "retention", "7d");
	assert_int_equal(c->retention_ms, 7 * 24 * 60 * MIN);

	/* Timeouts too; 0 alone is zero in any unit. */
	set_bad(c, "request_timeout", "45", "needs its unit");
	set_ok(c, "request_timeout", "45s");
	assert_int_equal(c->request_timeout_ms, 45 * SEC);
	set_ok(c, "max_exec_timeout", "0");
	assert_int_equal(c->max_exec_timeout_ms, 0);
	set_ok(c, "max_exec_timeout", "2m");
	assert_int_equal(c->max_exec_timeout_ms, 2 * MIN);
	set_ok(c, "tick", "250ms");
	assert_int_equal(c->tick_ms, 250);

	set_bad(c, "max_lifetime", "500ms", "out of range");	/* below 1 s */
	set_bad(c, "max_lifetime", "367d", "out of range");
	set_bad(c, "request_timeout", "50ms", "out of range");
	/* Compounds parse (issue 11); this one is above the cap. */
	set_bad(c, "request_timeout", "1h1s", "out of range");
	set_bad(c, "request_timeout", "1s1h", "invalid value");
	set_bad(c, "request_timeout", "-5", "invalid value");
	set_bad(c, "tick", "1.5s1ms", "invalid value");
}

static void
test_sizes_and_numbers(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;

	set_ok(c, "max_copy_out_bytes", "256MiB");
	assert_int_equal(c->max_copy_out_bytes, 256ull << 20);
	set_ok(c, "max_copy_out_bytes", "16T");
	assert_int_equal(c->max_copy_out_bytes, 16ull << 40);
	set_ok(c, "max_frame_bytes", "64K");
	assert_int_equal(c->max_frame_bytes, 65536);
	set_ok(c, "max_env_bytes", "0");
	assert_int_equal(c->max_env_bytes, 0);

	set_bad(c, "max_frame_bytes", "2MiB", "out of range");
	set_bad(c, "max_frame_bytes", "1K", "out of range");
	set_bad(c, "max_copy_out_bytes", "0", "out of range");
	set_bad(c, "max_copy_out_bytes", "17T", "out of range");
	set_bad(c, "max_env_bytes", "1MiB", "out of range");

	set_ok(c, "max_lanes", "8");
	assert_int_equal(c->max_lanes, 8);
	set_ok(c, "max_cpus", "256");
	assert_int_equal(c->max_cpus, 256);
	/* Plain integers take no suffix. */
	set_bad(c, "max_lanes", "8K", "invalid value");
	set_bad(c, "max_lanes", "8B", "invalid value");
	set_bad(c, "max_lanes", "0", "out of range");
	set_bad(c, "max_lanes", "1025", "out of range");
	set_bad(c, "max_lanes", "-1", "invalid value");
	set_bad(c, "max_connections", "3", "out of range");
	set_bad(c, "max_cpus", "4294967297", "out of range");
	assert_int_equal(c->max_lanes, 8);
}

static void
test_bools(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;
	static const char *const yes[] = { "yes", "true", "1" };
	static const char *const no[] = { "no", "false", "0" };

	for (size_t i = 0; i < 3; i++) {
		set_ok(c, "debug", yes[i]);
		assert_true(c->debug);
		set_ok(c, "debug", no[i]);
		assert_false(c->debug);
	}
	set_bad(c, "debug", "maybe", "yes or no");
	set_bad(c, "debug", "YES", "yes or no");
	set_bad(c, "debug", "", "yes or no");
}

static void
test_paths_and_strings(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;

	/* "socket" is socket_path as users write it. */
	set_ok(c, "socket", "/run/user/1/al.sock");
	assert_string_equal(c->socket_path, "/run/user/1/al.sock");
	set_ok(c, "socket", "/tmp/al.sock");
	assert_string_equal(c->socket_path, "/tmp/al.sock");
	/* Storage names are not configuration names. */
	set_bad(c, "socket_path", "/tmp/other.sock", "unknown key");
	set_ok(c, "state_dir", "/var/tmp/al");
	assert_string_equal(c->state_dir, "/var/tmp/al");

	set_bad(c, "socket", "relative/al.sock", "not an absolute path");
	set_bad(c, "state_dir", "~/al", "not an absolute path");
	set_bad(c, "state_dir", "", "empty value");
	assert_string_equal(c->socket_path, "/tmp/al.sock");
	assert_string_equal(c->state_dir, "/var/tmp/al");

	/* limactl may be a bare name, found in PATH later. */
	set_ok(c, "limactl", "limactl");
	set_ok(c, "limactl", "/opt/homebrew/bin/limactl");
	assert_string_equal(c->limactl, "/opt/homebrew/bin/limactl");
	set_bad(c, "limactl", "", "empty value");
	set_ok(c, "lima_template", "template:_images/debian-12");
	assert_string_equal(c->lima_template, "template:_images/debian-12");
}

static void
test_key_names(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;
	char err[256] = "";

	/* Dashes (flags) and user names map; storage names do not (a plain
	 * number for max_lifetime_ms would be seconds, not milliseconds). */
	set_ok(c, "max-lanes", "5");
	assert_int_equal(c->max_lanes, 5);
	set_ok(c, "max-lifetime", "3h");
	assert_int_equal(c->max_lifetime_ms, 180 * MIN);
	set_bad(c, "max_lifetime_ms", "5000", "unknown key");
	assert_int_equal(c->max_lifetime_ms, 180 * MIN);
	set_ok(c, "default-memory", "2GiB");
	assert_int_equal(c->default_memory_mib, 2048);
	set_bad(c, "default_memory_mib", "3GiB", "unknown key");
	assert_int_equal(c->default_memory_mib, 2048);
	assert_true(config_is_flag("debug"));
	assert_false(config_is_flag("max_lanes"));

	assert_true(config_is_key("max_lifetime"));
	assert_true(config_is_key("default_memory"));
	assert_true(config_is_key("socket"));
	assert_true(config_is_key("max-copy-out-bytes"));
	assert_false(config_is_key("max_lifetime_m"));
	assert_false(config_is_key("max"));
	assert_false(config_is_key(""));
	assert_false(config_is_key("socket_"));
	assert_false(config_is_key("lima_home"));	/* derived, not set */
	assert_false(config_is_key("config_path"));

	assert_int_equal(config_set(c, "no_such_key", "1", err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown key"));
	assert_non_null(strstr(err, "no_such_key"));
	{
		char longkey[200];

		memset(longkey, 'a', sizeof longkey - 1);
		longkey[sizeof longkey - 1] = '\0';
		assert_int_equal(config_set(c, longkey, "1", err, sizeof err), -1);
	}
}

static char *
write_file(const char *dir, const char *name, const char *text)
{
	char *path;
	FILE *f;

	assert_true(asprintf(&path, "%s/%s", dir, name) > 0);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void
test_load_file(void **state)
{
	struct fixture *f = *state;
	char err[256] = "", *path;

	path = write_file(f->dir, "ok.conf",
	    "# agent-laned configuration\n"
	    "\n"
	    "   \t\n"
	    "max_lanes = 8   # trailing comment\n"
	    "\tdefault-memory=2GiB\n"
	    "max_lifetime   =   90m\n"
	    "debug = yes\n"
	    "socket = /tmp/x y/al.sock\n"
	    "request_timeout = 45s\r\n"
	    "max_cpus = 16");	/* no final newline */
	assert_int_equal(config_load_file(&f->c, path, true, err, sizeof err), 0);
	assert_int_equal(f->c.max_lanes, 8);
	assert_int_equal(f->c.default_memory_mib, 2048);
	assert_int_equal(f->c.max_lifetime_ms, 90 * MIN);
	assert_true(f->c.debug);
	assert_string_equal(f->c.socket_path, "/tmp/x y/al.sock");
	assert_int_equal(f->c.request_timeout_ms, 45 * SEC);
	assert_int_equal(f->c.max_cpus, 16);
	free(path);
}

static void
expect_load_error(struct fixture *f, const char *text, const char *want)
{
	char err[256] = "", *path, prefix[256];

	path = write_file(f->dir, "bad.conf", text);
	if (config_load_file(&f->c, path, true, err, sizeof err) != -1)
		fail_msg("accepted: %s", text);
	snprintf(prefix, sizeof prefix, "%s:", path);
	if (strncmp(err, prefix, strlen(prefix)) != 0 || strstr(err, want) == NULL)
		fail_msg("error \"%s\" is not \"%s...%s...\"", err, prefix, want);
	free(path);
}

static void
test_load_file_errors(void **state)
{
	struct fixture *f = *state;
	char longline[1100];

	expect_load_error(f, "max_lanes = 8\n\nnonsense\n", ":3: expected key = value");
	expect_load_error(f, "# x\nmax_lanes = 9999\n", ":2: max_lanes:");
	expect_load_error(f, "bogus = 1\n", ":1: unknown key \"bogus\"");
	expect_load_error(f, "\n\n\n\nsocket = relative\n", ":5: socket:");
	expect_load_error(f, "max_lanes = 8K\n", ":1: max_lanes: invalid value");
	/* "=" with nothing before it is an unknown (empty) key. */
	expect_load_error(f, "= 5\n", ":1: unknown key");

	memset(longline, '#', sizeof longline - 2);
	longline[sizeof longline - 2] = '\n';
	longline[sizeof longline - 1] = '\0';
	expect_load_error(f, longline, ":1: line too long");
	/* Values applied before the bad line stay applied. */
	expect_load_error(f, "max_lanes = 7\nbad\n", ":2:");
	assert_int_equal(f->c.max_lanes, 7);
}

static void
test_load_file_missing(void **state)
{
	struct fixture *f = *state;
	char err[256] = "", path[128];

	snprintf(path, sizeof path, "%s/absent.conf", f->dir);
	assert_int_equal(config_load_file(&f->c, path, false, err, sizeof err),
	    0);
	assert_int_equal(config_load_file(&f->c, path, true, err, sizeof err),
	    -1);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, "No such file"));
}

static void
test_finalize(void **state)
{
	struct config *c = &((struct fixture *)*state)->c;
	char err[256] = "";

	set_ok(c, "state_dir", "/tmp/al-state");
	assert_int_equal(config_finalize(c, err, sizeof err), 0);
	assert_string_equal(c->lima_home, "/tmp/al-state/lima");
	/* Finalizing again re-derives it. */
	set_ok(c, "state_dir", "/srv/al");
	assert_int_equal(config_finalize(c, err, sizeof err), 0);
	assert_string_equal(c->lima_home, "/srv/al/lima");

	set_ok(c, "default_cpus", "9");
	set_ok(c, "max_cpus", "8");
	assert_int_equal(config_finalize(c, err, sizeof err), -1);
	assert_non_null(strstr(err, "default_cpus"));
	set_ok(c, "default_cpus", "8");
	assert_int_equal(config_finalize(c, err, sizeof err), 0);

	set_ok(c, "default_memory", "32GiB");
	assert_int_equal(config_finalize(c, err, sizeof err), -1);
	assert_non_null(strstr(err, "default_memory"));
	set_ok(c, "default_memory", "16GiB");

	set_ok(c, "default_disk", "101G");
	assert_int_equal(config_finalize(c, err, sizeof err), -1);
	assert_non_null(strstr(err, "default_disk"));
	set_ok(c, "default_disk", "100G");

	set_ok(c, "default_lifetime", "25h");
	assert_int_equal(config_finalize(c, err, sizeof err), -1);
	assert_non_null(strstr(err, "default_lifetime"));
	set_ok(c, "default_lifetime", "24h");
	assert_int_equal(config_finalize(c, err, sizeof err), 0);
}

/*
 * `agent-laned --check` prints the effective configuration "in file
 * syntax": loading that output must give the same configuration back.
 */
static void
test_print_loads_back(void **state)
{
	struct fixture *f = *state;
	struct config back;
	char err[256] = "", *text = NULL, shown[1024], path[128];
	size_t len = 0;
	FILE *mem;
	int rc;

	set_ok(&f->c, "max_lifetime", "90m");
	set_ok(&f->c, "request_timeout", "61500ms");
	set_ok(&f->c, "max_memory", "1536MiB");
	set_ok(&f->c, "default_memory", "1GiB");
	set_ok(&f->c, "debug", "yes");
	assert_non_null(mem = open_memstream(&text, &len));
	config_print(&f->c, mem);
	assert_int_equal(fclose(mem), 0);
	free(write_file(f->dir, "printed.conf", text));
	snprintf(path, sizeof path, "%s/printed.conf", f->dir);
	snprintf(shown, sizeof shown, "%s", text);
	free(text);

	/* Compare after freeing, so that a failure leaks nothing. */
	config_defaults(&back);
	rc = config_load_file(&back, path, true, err, sizeof err);
	config_free(&back);
	if (rc != 0)
		fail_msg("config_print output does not load: %s\n%s", err, shown);
	config_defaults(&back);
	assert_int_equal(config_load_file(&back, path, true, err, sizeof err), 0);
	assert_int_equal(back.max_lifetime_ms, f->c.max_lifetime_ms);
	assert_int_equal(back.request_timeout_ms, f->c.request_timeout_ms);
	assert_int_equal(back.max_memory_mib, 1536);
	assert_int_equal(back.default_memory_mib, 1024);
	assert_true(back.debug);
	assert_string_equal(back.socket_path, f->c.socket_path);
	config_free(&back);
}

/* The warm pool keys; pool_shape appends a shape per line. */
static void
test_pool(void **state)
{
	struct fixture *f = *state;
	struct config *c = &f->c;
	struct config back;
	char err[256] = "", *text = NULL, path[128];
	size_t len = 0;
	FILE *mem;

	assert_int_equal(c->pool_size, 0);
	assert_int_equal(c->npool_shapes, 0);
	set_ok(c, "pool_size", "2");
	set_ok(c, "pool-max-boots", "3");
	set_ok(c, "pool_max_age", "90s");
	assert_int_equal(c->pool_max_age_ms, 90000);
	set_ok(c, "pool_shape", "1 cpus=4 memory=8GiB disk=50G");
	set_ok(c, "pool_shape", "3 memory=6G");
	assert_int_equal(c->npool_shapes, 2);
	assert_int_equal(c->pool_shape[0].count, 1);
	assert_int_equal(c->pool_shape[0].cpus, 4);
	assert_int_equal(c->pool_shape[0].memory_mib, 8192);
	assert_int_equal(c->pool_shape[0].disk_gib, 50);
	assert_int_equal(c->pool_shape[1].count, 3);
	assert_int_equal(c->pool_shape[1].cpus, 0);	/* the default */
	assert_int_equal(c->pool_shape[1].memory_mib, 6144);
	set_bad(c, "pool_size", "65", "out of range");
	set_bad(c, "pool_max_boots", "0", "out of range");
	set_bad(c, "pool_shape", "", "COUNT");
	set_bad(c, "pool_shape", "0", "COUNT");
	set_bad(c, "pool_shape", "cpus=2", "COUNT");
	set_bad(c, "pool_shape", "1 cpus=2 gpus=1", "COUNT");
	set_bad(c, "pool_shape", "1 memory=100MiB", "COUNT");
	set_bad(c, "pool_shape", "1 1", "COUNT");
	/* A plain GiB count that wraps when made bytes is refused. */
	set_bad(c, "pool_shape", "1 memory=18014398509481985G", "COUNT");
	/* Sizes with their unit, as the memory and disk keys. */
	set_bad(c, "pool_shape", "1 memory=6", "memory=4G");
	set_bad(c, "pool_shape", "1 disk=50", "disk=30G");
	assert_int_equal(c->npool_shapes, 2);

	/* Printed shapes load back. */
	assert_non_null(mem = open_memstream(&text, &len));
	config_print(c, mem);
	assert_int_equal(fclose(mem), 0);
	free(write_file(f->dir, "pool.conf", text));
	free(text);
	snprintf(path, sizeof path, "%s/pool.conf", f->dir);
	config_defaults(&back);
	assert_int_equal(config_load_file(&back, path, true, err, sizeof err), 0);
	assert_int_equal(back.npool_shapes, 2);
	assert_int_equal(back.pool_shape[1].memory_mib, 6144);
	assert_int_equal(back.pool_size, 2);
	config_free(&back);

	/* Caps: the whole pool, and shapes above the max_* keys. */
	assert_int_equal(config_finalize(c, err, sizeof err), 0);
	set_ok(c, "pool_size", "61");
	assert_int_equal(config_finalize(c, err, sizeof err), -1);
	assert_non_null(strstr(err, "warm pool"));
	set_ok(c, "pool_size", "1");
	set_ok(c, "max_cpus", "2");
	assert_int_equal(config_finalize(c, err, sizeof err), -1);
	assert_non_null(strstr(err, "pool_shape 1"));
}

int
main(void)
{
	static char home[64];
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_defaults),
		T(test_memory),
		T(test_memory_plain_overflow),
		T(test_disk),
		T(test_durations),
		T(test_sizes_and_numbers),
		T(test_bools),
		T(test_paths_and_strings),
		T(test_key_names),
		T(test_load_file),
		T(test_load_file_errors),
		T(test_load_file_missing),
		T(test_finalize),
		T(test_print_loads_back),
		T(test_pool),
	};
#undef T
	int rc;

	/* Defaults come from $HOME and AGENT_LANE_*: pin them. */
	snprintf(home, sizeof home, "/tmp/test_config_home.XXXXXX");
	if (mkdtemp(home) == NULL)
		return 1;
	setenv("HOME", home, 1);
	unsetenv("AGENT_LANE_CONFIG");
	unsetenv("AGENT_LANE_SOCKET");
	unsetenv("AGENT_LANE_STATE_DIR");
	unsetenv("AGENT_LANE_LIMACTL");
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(home);
	return rc;
}
