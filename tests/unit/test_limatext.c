/*
 * lima_requirement_text: what Lima 2.2's hostagent says it waits for
 * (pkg/hostagent/requirements.go: "Waiting for the %s requirement %d of
 * %d: %#q"), said for the progress line (issue 31, defect 4).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>

#include "lima.h"

static void
test_requirements(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "Waiting for the essential requirement 1 of 2: `ssh`",
		    "booting (about a minute without KVM), step 1 of 2" },
		{ "Waiting for the essential requirement 2 of 2: "
		    "`user session is ready for ssh`",
		    "the guest user's session, step 2 of 2" },
		{ "Waiting for the final requirement 1 of 1: "
		    "`boot scripts must have finished`",
		    "the guest's boot scripts (cloud-init), step 1 of 1" },
		/* The simulator's older form, and a name it does not know. */
		{ "Waiting for the essential requirement 1 of 1: \"ssh\"",
		    "booting (about a minute without KVM), step 1 of 1" },
		{ "Waiting for the optional requirement 1 of 1: "
		    "`containerd binaries to be installed`",
		    "waiting for containerd binaries to be installed, step 1 of 1" },
		/* Anything else as it is. */
		{ "Waiting for the essential requirement", "Waiting for the "
		    "essential requirement" },
		{ "Waiting for the essential requirement 1 of 2: `ssh",
		    "Waiting for the essential requirement 1 of 2: `ssh" },
		{ "Forwarding TCP", "Forwarding TCP" },
	};
	char buf[256];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		lima_requirement_text(cases[i].in, buf, sizeof buf);
		assert_string_equal(buf, cases[i].out);
	}
	/* A small buffer is cut, never overrun. */
	lima_requirement_text(cases[0].in, buf, 8);
	assert_string_equal(buf, "booting");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requirements),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
