/*
 * daemon/names.c: the shapes of lane names, image instance names, aliases,
 * image names and lane-name prefixes, which config, image, lane, lima,
 * lanecreate and imagebuild share.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "names.h"

#define LANE "al-0123456789abcdef"
#define IMAGE "ali-0123456789abcdef"

static void
test_lane_and_image_names(void **state)
{
	(void)state;
	assert_true(names_lane_valid(LANE));
	assert_int_equal(strlen(LANE), NAMES_LANE_LEN);
	assert_int_equal(strlen(IMAGE), NAMES_IMAGE_INSTANCE_LEN);
	assert_false(names_lane_valid(IMAGE));
	assert_true(names_image_instance_valid(IMAGE));
	assert_false(names_image_instance_valid(LANE));
	assert_true(names_instance_valid(LANE));
	assert_true(names_instance_valid(IMAGE));
	assert_false(names_instance_valid("al-"));
	assert_false(names_instance_valid("ali-"));
	assert_false(names_instance_valid("al-0123456789abcde"));
	assert_false(names_instance_valid("al-0123456789abcdef0"));
	assert_false(names_instance_valid("al-0123456789abcdeF"));
	assert_false(names_instance_valid(NULL));
}

static void
test_aliases(void **state)
{
	static const char *const shapes[] = { "web", "0655", "a", "w.e_b-1",
	    "al", "ali", "alix-1" };
	static const char *const bad[] = { "", "Web", "al-web", "ali-x",
	    "-x", ".x", "_x", "a b", "we/b", "al-" };
	char max[NAMES_ALIAS_MAX + 2];

	(void)state;
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		assert_true(names_alias_shape(shapes[i]));
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_false(names_alias_shape(bad[i]));
		assert_false(names_alias_valid(bad[i]));
	}
	assert_false(names_alias_shape(NULL));
	/* Hex digits alone have the shape, but a new alias may not be them. */
	assert_false(names_alias_valid("0655"));
	assert_false(names_alias_valid("0123456789abcdef"));
	/* 17 digits are no name's. */
	assert_true(names_alias_valid("0123456789abcdef0"));
	assert_true(names_alias_valid("0655-x"));
	assert_true(names_alias_valid("web"));
	memset(max, 'a', NAMES_ALIAS_MAX);
	max[NAMES_ALIAS_MAX] = '\0';
	assert_true(names_alias_valid(max));
	max[NAMES_ALIAS_MAX] = 'a';
	max[NAMES_ALIAS_MAX + 1] = '\0';
	assert_false(names_alias_valid(max));
}

static void
test_image_names(void **state)
{
	char max[NAMES_IMAGE_SIZE + 1];

	(void)state;
	assert_true(names_image_valid("base"));
	assert_true(names_image_valid("0655"));	/* no prefix rule here */
	assert_true(names_image_valid("node-22.x_1"));
	assert_false(names_image_valid(""));
	assert_false(names_image_valid("Base"));
	assert_false(names_image_valid("-base"));
	assert_false(names_image_valid("a/b"));
	assert_false(names_image_valid(NULL));
	memset(max, 'i', NAMES_IMAGE_SIZE - 1);
	max[NAMES_IMAGE_SIZE - 1] = '\0';
	assert_true(names_image_valid(max));
	max[NAMES_IMAGE_SIZE - 1] = 'i';
	max[NAMES_IMAGE_SIZE] = '\0';
	assert_false(names_image_valid(max));
}

/* Issue 31: the id image ls shows, and its prefixes, as docker takes them. */
static void
test_image_id_prefixes(void **state)
{
	char id[NAMES_IMAGE_ID_LEN + 2];

	(void)state;
	assert_true(names_image_id_prefix("0"));
	assert_true(names_image_id_prefix("cafe0123beef"));
	assert_false(names_image_id_prefix(""));	/* no prefix of every id */
	assert_false(names_image_id_prefix("CAFE"));
	assert_false(names_image_id_prefix("sha256:cafe"));
	assert_false(names_image_id_prefix("cafe-"));
	assert_false(names_image_id_prefix(NULL));
	memset(id, 'f', NAMES_IMAGE_ID_LEN);
	id[NAMES_IMAGE_ID_LEN] = '\0';
	assert_true(names_image_id_prefix(id));
	id[NAMES_IMAGE_ID_LEN] = 'f';
	id[NAMES_IMAGE_ID_LEN + 1] = '\0';
	assert_false(names_image_id_prefix(id));
}

/* Issue 31: "al-" with nothing after it is no prefix, of any lane. */
static void
test_prefixes(void **state)
{
	(void)state;
	assert_false(names_lane_prefix("al-"));
	assert_false(names_lane_prefix(""));
	assert_false(names_lane_prefix(NULL));
	assert_true(names_lane_prefix("al-0"));
	assert_true(names_lane_prefix("al-0123456789abcde"));
	assert_true(names_lane_prefix(LANE));
	assert_false(names_lane_prefix("al-0123456789abcdef0"));
	assert_false(names_lane_prefix("al-0A"));
	assert_false(names_lane_prefix("al-x"));
	assert_false(names_lane_prefix("0655"));
	assert_false(names_lane_prefix("ali-0"));
	assert_false(names_lane_digits(""));
	assert_false(names_lane_digits(NULL));
	assert_true(names_lane_digits("0"));
	assert_true(names_lane_digits("0123456789abcdef"));
	assert_false(names_lane_digits("0123456789abcdef0"));
	assert_false(names_lane_digits("al-0"));
	assert_false(names_lane_digits("0x"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lane_and_image_names),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_image_names),
		cmocka_unit_test(test_image_id_prefixes),
		cmocka_unit_test(test_prefixes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
