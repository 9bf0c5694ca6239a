/*
 * daemon/pool.c: pool_shape_eq, the one comparison that decides which
 * create a warm-pool lane goes to. The guest side (cpus, memory, disk,
 * image) and the network mode and sudo are the shape; the allow list and
 * the secrets are not (a pool lane's proxy takes its taker's).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#include "config.h"
#include "netpolicy.h"
#include "pool.h"

static struct pool_shape
base(void)
{
	struct pool_shape s;

	memset(&s, 0, sizeof s);
	s.count = 2;
	s.cpus = 2;
	s.memory_mib = 4096;
	s.disk_gib = 30;
	strcpy(s.image, "tools");
	s.net_policy = true;
	s.net_mode = NETPOLICY_ALLOW;
	s.sudo = false;
	return s;
}

static void
test_equal(void **state)
{
	struct pool_shape a = base(), b = base();

	(void)state;
	assert_true(pool_shape_eq(&a, &b));
	/* count is how many, not what. */
	b.count = 7;
	assert_true(pool_shape_eq(&a, &b));
}

static void
test_guest_side(void **state)
{
	struct pool_shape a = base(), b;

	(void)state;
	b = base();
	b.cpus = 1;
	assert_false(pool_shape_eq(&a, &b));
	b = base();
	b.memory_mib = 2048;
	assert_false(pool_shape_eq(&a, &b));
	b = base();
	b.disk_gib = 31;
	assert_false(pool_shape_eq(&a, &b));
	b = base();
	b.image[0] = '\0';
	assert_false(pool_shape_eq(&a, &b));
	b = base();
	strcpy(b.image, "tool");
	assert_false(pool_shape_eq(&a, &b));
}

static void
test_network(void **state)
{
	struct pool_shape a = base(), b;

	(void)state;
	b = base();
	b.net_mode = NETPOLICY_INTERNET;
	assert_false(pool_shape_eq(&a, &b));
	b = base();
	b.net_mode = NETPOLICY_NONE;
	assert_false(pool_shape_eq(&a, &b));
	b = base();
	b.net_policy = false;
	assert_false(pool_shape_eq(&a, &b));
	/* A lane that keeps guest root is never a pool lane's taker. */
	b = base();
	b.sudo = true;
	assert_false(pool_shape_eq(&a, &b));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal),
		cmocka_unit_test(test_guest_side),
		cmocka_unit_test(test_network),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
