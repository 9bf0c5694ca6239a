/*
 * daemon/copy.c: the first line of the guest's copy-out script, "D<bytes>"
 * or "F<size> <mode>", which the bound is checked against before any byte
 * is sent and which gives a copied file its mode. The guest writes it, so
 * anything may come: every malformed number is "not known" (0), a size
 * too large to hold saturates, and only the two kinds are accepted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "copy.h"

#define FILE_K AGENTLANE__V1__COPY_KIND__FILE
#define DIR_K AGENTLANE__V1__COPY_KIND__DIRECTORY

static void
expect(const char *line, int kind, uint64_t size, uint32_t mode)
{
	struct copy_head h;

	assert_true(copy_head_parse(line, &h));
	assert_int_equal(h.kind, kind);
	assert_true(h.size == size);
	assert_int_equal(h.mode, mode);
}

static void
test_well_formed(void **state)
{
	expect("F1610612736 755", FILE_K, 1610612736ULL, 0755);
	expect("F0 600", FILE_K, 0, 0600);
	expect("F12 4755", FILE_K, 12, 0755);	/* set-id bits dropped */
	expect("D300000", DIR_K, 300000, 0);
	expect("D0", DIR_K, 0, 0);
	/* The earlier head, without a mode. */
	expect("F42", FILE_K, 42, 0);
}

static void
test_not_known(void **state)
{
	expect("F", FILE_K, 0, 0);		/* stat failed in the guest */
	expect("D", DIR_K, 0, 0);
	expect("Fabc 755", FILE_K, 0, 0);	/* no digits: no mode either */
	expect("F12 789", FILE_K, 12, 0);	/* not octal */
	expect("F12 77777", FILE_K, 12, 0);	/* too many digits */
	expect("F12 755x", FILE_K, 12, 0);
	expect("F12  755", FILE_K, 12, 0);
	expect("D12 755", DIR_K, 12, 0);	/* directories have no mode */
	/* A size that u64 cannot hold is past any bound. */
	expect("F99999999999999999999", FILE_K, UINT64_MAX, 0);
	expect("F123456789012345678901234 644", FILE_K, UINT64_MAX, 0644);
}

static void
test_refused(void **state)
{
	struct copy_head h;

	assert_false(copy_head_parse("", &h));
	assert_false(copy_head_parse("X12", &h));
	assert_false(copy_head_parse("f12 644", &h));
	assert_false(copy_head_parse(" F12", &h));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_well_formed),
		cmocka_unit_test(test_not_known),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
