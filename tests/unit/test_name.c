/*
 * daemon/lima.c: lane names and the limactl command lines built from them.
 * A lane name is the only client-influenced string that reaches limactl,
 * so its shape is checked everywhere it is used.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lima.h"
#include "names.h"

#define GOOD_NAME "al-0123456789abcdef"

static const char *const bad_names[] = {
	"",
	"al-",
	"al-0123456789ABCDEF",		/* uppercase hex */
	"al-0123456789abcdeF",
	"al-0123456789abcde",		/* 15 digits */
	"al-0123456789abcdef0",		/* 17 digits */
	"0123456789abcdef",		/* no prefix */
	"ab-0123456789abcdef",
	"AL-0123456789abcdef",
	"al_0123456789abcdef",
	"al-0123456789abcdeg",
	"al-0123456789abcdef/..",
	"al-0123456789abcdef/",
	"../al-0123456789abcdef",
	"./al-0123456789abcdef",
	"/al-0123456789abcdef",
	"-al-0123456789abcdef",
	"--al-0123456789abcde",
	"al--123456789abcdef",
	"al-0123456789abcde\n",
	"al-0123456789abcdef\n",
	"al-0123456789abcdef ",
	" al-0123456789abcdef",
	"al-01234567\0089abcdef",
};

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void
test_generate(void **state)
{
	enum { N = 1000 };
	char (*names)[NAMES_LANE_LEN + 1] = calloc(N, sizeof *names);

	assert_non_null(names);
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(lima_name_generate(names[i], sizeof names[i]), 0);
		assert_int_equal(strlen(names[i]), NAMES_LANE_LEN);
		assert_memory_equal(names[i], "al-", 3);
		for (size_t j = 3; j < NAMES_LANE_LEN; j++)
			assert_non_null(strchr("0123456789abcdef", names[i][j]));
		assert_true(names_lane_valid(names[i]));
	}
	/*
	 * Every digit position takes every value: a position stuck on one
	 * digit (a lost nibble) would leave a name space that is still
	 * collision-free here but guessable. Missing one of 16 values in
	 * 1000 draws has probability about 1e-27.
	 */
	for (size_t j = 3; j < NAMES_LANE_LEN; j++) {
		unsigned seen = 0;

		for (size_t i = 0; i < N; i++)
			seen |= 1u << (strchr("0123456789abcdef", names[i][j]) -
			    "0123456789abcdef");
		if (seen != 0xffff)
			fail_msg("position %zu takes only some digits (%04x)", j,
			    seen);
	}
	/* 64 random bits: a collision among 1000 would mean no randomness. */
	qsort(names, N, sizeof *names, name_cmp);
	for (size_t i = 1; i < N; i++)
		assert_string_not_equal(names[i - 1], names[i]);
	free(names);
}

static void
test_generate_small_buffer(void **state)
{
	char name[NAMES_LANE_LEN + 1];

	memset(name, 'x', sizeof name);
	assert_int_equal(lima_name_generate(name, NAMES_LANE_LEN), -1);
	/* Nothing written on failure. */
	assert_int_equal(name[0], 'x');
}

static void
test_valid(void **state)
{
	assert_true(names_lane_valid(GOOD_NAME));
	assert_true(names_lane_valid("al-0000000000000000"));
	assert_true(names_lane_valid("al-ffffffffffffffff"));
	for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++)
		if (names_lane_valid(bad_names[i]))
			fail_msg("\"%s\" was accepted", bad_names[i]);
	assert_false(names_lane_valid(NULL));
}

static char *env_base[] = {
	"PATH=/usr/bin:/bin",
	"LIMA_HOME=/home/someone/.lima",
	"_LIMA_OUTPUT_IS_TTY=1",
	"HOME=/home/someone",
	"LIMA_INSTANCE=default",
	NULL,
};

static int
setup_lima(void **state)
{
	*state = lima_new("/bin/true", "/tmp/x", "template:_images/ubuntu-lts",
	    env_base);
	return *state == NULL ? -1 : 0;
}

static int
teardown_lima(void **state)
{
	lima_free(*state);
	return 0;
}

static size_t
argv_len(char **argv)
{
	size_t n = 0;

	while (argv[n] != NULL)
		n++;
	return n;
}

static bool
argv_has(char **argv, const char *s)
{
	for (size_t i = 0; argv[i] != NULL; i++)
		if (strcmp(argv[i], s) == 0)
			return true;
	return false;
}

/* Checks one builder's output for a valid name. */
static void
check_argv(char **argv, const char *verb, const char *name_arg)
{
	assert_non_null(argv);
	assert_string_equal(argv[0], "/bin/true");
	assert_true(argv_has(argv, "--tty=false"));
	assert_true(argv_has(argv, verb));
	if (name_arg != NULL)
		assert_true(argv_has(argv, name_arg));
	lima_argv_free(argv);
}

static void
test_argv_valid(void **state)
{
	struct lima *l = *state;
	const char *const cmd[] = { "perl", "-e", "print 1", NULL };
	char **argv;

	check_argv(lima_argv_create(l, GOOD_NAME, "/tmp/x/lane.yaml"),
	    "create", "--name=" GOOD_NAME);
	argv = lima_argv_create(l, GOOD_NAME, "/tmp/x/lane.yaml");
	assert_true(argv_has(argv, "/tmp/x/lane.yaml"));
	assert_true(argv_has(argv, "--log-format=json"));
	lima_argv_free(argv);

	check_argv(lima_argv_start(l, GOOD_NAME, 600000), "start", GOOD_NAME);
	/* The timeout is rounded up to whole seconds, never down to 0. */
	argv = lima_argv_start(l, GOOD_NAME, 1500);
	assert_true(argv_has(argv, "--timeout=2s"));
	lima_argv_free(argv);
	argv = lima_argv_start(l, GOOD_NAME, 600000);
	assert_true(argv_has(argv, "--timeout=600s"));
	lima_argv_free(argv);

	check_argv(lima_argv_delete(l, GOOD_NAME), "delete", GOOD_NAME);
	argv = lima_argv_delete(l, GOOD_NAME);
	assert_true(argv_has(argv, "--force"));
	lima_argv_free(argv);

	check_argv(lima_argv_list(l), "list", NULL);
	argv = lima_argv_list(l);
	assert_true(argv_has(argv, "--json"));
	lima_argv_free(argv);

	check_argv(lima_argv_shell(l, GOOD_NAME, cmd), "shell", GOOD_NAME);
}

static void
test_argv_invalid_name(void **state)
{
	struct lima *l = *state;
	const char *const cmd[] = { "true", NULL };

	for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
		const char *n = bad_names[i];

		assert_null(lima_argv_create(l, n, "/tmp/x/lane.yaml"));
		assert_null(lima_argv_start(l, n, 1000));
		assert_null(lima_argv_delete(l, n));
		assert_null(lima_argv_shell(l, n, cmd));
	}
	assert_null(lima_argv_create(l, NULL, "/tmp/x/lane.yaml"));
	assert_null(lima_argv_start(l, NULL, 1000));
	assert_null(lima_argv_delete(l, NULL));
	assert_null(lima_argv_shell(l, NULL, cmd));
}

static void
test_argv_shell_layout(void **state)
{
	struct lima *l = *state;
	/* Things that would be flags or a second instance if misplaced. */
	const char *const cmd[] = {
		"perl", "-e", "--workdir=/etc", "al-ffffffffffffffff", "--",
		"", NULL,
	};
	const char *const empty[] = { NULL };
	char **argv = lima_argv_shell(l, GOOD_NAME, cmd);
	size_t n = argv_len(argv), dash = 0;

	/* Exactly: limactl --tty=false shell --workdir=/ NAME -- CMD... */
	assert_string_equal(argv[0], "/bin/true");
	assert_string_equal(argv[1], "--tty=false");
	assert_string_equal(argv[2], "shell");
	assert_string_equal(argv[3], "--workdir=/");
	assert_string_equal(argv[4], GOOD_NAME);
	assert_string_equal(argv[5], "--");
	dash = 5;
	assert_int_equal(n - dash - 1, 6);
	for (size_t i = 0; cmd[i] != NULL; i++)
		assert_string_equal(argv[dash + 1 + i], cmd[i]);
	/* The name appears once, before "--". */
	for (size_t i = 0; i < dash; i++)
		if (i != 4)
			assert_string_not_equal(argv[i], GOOD_NAME);
	lima_argv_free(argv);

	argv = lima_argv_shell(l, GOOD_NAME, empty);
	assert_int_equal(argv_len(argv), 6);
	assert_string_equal(argv[5], "--");
	lima_argv_free(argv);
}

static void
test_envp(void **state)
{
	struct lima *l = *state;
	char *const *envp = lima_envp(l);
	size_t homes = 0;
	bool path = false, home = false;

	for (size_t i = 0; envp[i] != NULL; i++) {
		if (strncmp(envp[i], "LIMA_HOME=", 10) == 0) {
			assert_string_equal(envp[i], "LIMA_HOME=/tmp/x");
			homes++;
		}
		assert_false(strncmp(envp[i], "_LIMA_OUTPUT_IS_TTY=", 20) == 0);
		assert_false(strncmp(envp[i], "LIMA_INSTANCE=", 14) == 0);
		if (strcmp(envp[i], "PATH=/usr/bin:/bin") == 0)
			path = true;
		if (strcmp(envp[i], "HOME=/home/someone") == 0)
			home = true;
	}
	assert_int_equal(homes, 1);
	/* Everything else is inherited. */
	assert_true(path);
	assert_true(home);
	assert_string_equal(lima_home(l), "/tmp/x");
	assert_string_equal(lima_limactl(l), "/bin/true");
}

static void
test_envp_without_base(void **state)
{
	struct lima *l = lima_new("/bin/true", "/srv/lima", "/abs/t.yaml", NULL);
	char *const *envp = lima_envp(l);

	assert_string_equal(envp[0], "LIMA_HOME=/srv/lima");
	assert_null(envp[1]);
	lima_free(l);
}

static void
test_instance_dir(void **state)
{
	struct lima *l = *state;
	char buf[64];

	assert_true(lima_instance_dir(l, GOOD_NAME, buf, sizeof buf));
	assert_string_equal(buf, "/tmp/x/" GOOD_NAME);
	for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++)
		assert_false(lima_instance_dir(l, bad_names[i], buf, sizeof buf));
	/* Truncation is a failure, not a shorter path. */
	assert_false(lima_instance_dir(l, GOOD_NAME, buf, 10));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_generate_small_buffer),
		cmocka_unit_test(test_valid),
		cmocka_unit_test_setup_teardown(test_argv_valid, setup_lima,
		    teardown_lima),
		cmocka_unit_test_setup_teardown(test_argv_invalid_name,
		    setup_lima, teardown_lima),
		cmocka_unit_test_setup_teardown(test_argv_shell_layout,
		    setup_lima, teardown_lima),
		cmocka_unit_test_setup_teardown(test_envp, setup_lima,
		    teardown_lima),
		cmocka_unit_test(test_envp_without_base),
		cmocka_unit_test_setup_teardown(test_instance_dir, setup_lima,
		    teardown_lima),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
