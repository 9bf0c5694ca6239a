/*
 * daemon/log.c: the daemon's own log file is bounded. Past half its cap
 * it is renamed to .1 (replacing the older copy) and a new one begins, so
 * the two together stay within the cap plus a line; the file is 0600.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static char dir[64], path[128], old[136];

static int
setup(void **state)
{
	snprintf(dir, sizeof dir, "/tmp/altestlog.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof path, "%s/agent-laned.log", dir);
	snprintf(old, sizeof old, "%s.1", path);
	return 0;
}

static int
teardown(void **state)
{
	log_close_file();
	unlink(path);
	unlink(old);
	rmdir(dir);
	return 0;
}

static off_t
size_of(const char *p)
{
	struct stat sb;

	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

static void
test_rotates_within_cap(void **state)
{
	char err[256];
	struct stat sb;
	const uint64_t cap = 8192;

	log_init("test", false);
	assert_int_equal(log_open_file(path, cap, err, sizeof err), 0);
	log_file_only(true);	/* keep the test's stderr clean */
	for (int i = 0; i < 500; i++)
		log_info("line %d of a log that must stay bounded", i);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	assert_true(size_of(path) > 0);
	assert_true((uint64_t)size_of(path) <= cap / 2);
	assert_true(size_of(old) > 0);
	assert_true((uint64_t)size_of(old) <= cap / 2);
	/* The newest line is in the current file, an older one in .1. */
	{
		char buf[8192];
		FILE *f = fopen(path, "r");
		size_t n;

		assert_non_null(f);
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		assert_non_null(strstr(buf, "line 499 of"));
	}
}

static void
test_refuses_symlink(void **state)
{
	char err[256];

	assert_int_equal(symlink("/dev/null", path), 0);
	assert_int_equal(log_open_file(path, 8192, err, sizeof err), -1);
	assert_non_null(strstr(err, path));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rotates_within_cap, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_refuses_symlink, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
