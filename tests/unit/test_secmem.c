/*
 * daemon/secmem.c: secret values go to OpenSSL's secure heap, which the
 * platform locks in memory here (RLIMIT_MEMLOCK allowing); a value that
 * would eat into the quarter kept for keys goes to ordinary memory instead,
 * usable all the same; every block is wiped and freed wherever it came
 * from.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include <openssl/crypto.h>

#include "secmem.h"

static void
test_off_before_init(void **state)
{
	void *p;

	assert_int_equal(secmem_state(), SECMEM_OFF);
	assert_int_equal(secmem_arena(), 0);
	p = secmem_alloc(64);
	assert_false(CRYPTO_secure_allocated(p));
	memset(p, 'x', 64);
	secmem_free(p, 64);
	secmem_free(NULL, 0);
}

static void
test_arena(void **state)
{
	enum secmem_state st = secmem_init();
	size_t arena = secmem_arena(), used0;
	void *a, *big;

	assert_int_not_equal(st, SECMEM_OFF);
	assert_int_equal(secmem_init(), st);		/* once */
	assert_true(arena >= SECMEM_ARENA_MIN && arena <= SECMEM_ARENA_MAX);
	assert_int_equal(arena & (arena - 1), 0);
	used0 = CRYPTO_secure_used();
	a = secmem_alloc(100);
	assert_true(CRYPTO_secure_allocated(a));
	assert_true(CRYPTO_secure_used() > used0);
	memcpy(a, "value", 5);
	/* Past what values may take: ordinary memory, still usable. */
	big = secmem_alloc(arena / 4 * 3 + 1);
	assert_non_null(big);
	assert_false(CRYPTO_secure_allocated(big));
	memset(big, 'y', arena / 4 * 3 + 1);
	secmem_free(big, arena / 4 * 3 + 1);
	secmem_free(a, 100);
	assert_int_equal(CRYPTO_secure_used(), used0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_before_init),
		cmocka_unit_test(test_arena),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
