/*
 * Secret values in OpenSSL's secure heap (see secmem.h). OpenSSL does the
 * platform work (mmap, mlock, MADV_DONTDUMP where defined, guard pages);
 * the arena's size and the fallback are decided here.
 */
#include <stdbool.h>
#include <stdlib.h>

#include <openssl/crypto.h>

#include "compat.h"
#include "log.h"
#include "secmem.h"
#include "util.h"
#include "wire.h"

static enum secmem_state state = SECMEM_OFF;
static size_t arena;
static bool spilled;		/* the last value went to ordinary memory */

/* The largest power of two <= limit, within [MIN, MAX]. */
static size_t
arena_size(unsigned long long limit)
{
	size_t sz = SECMEM_ARENA_MAX;

	while (sz > SECMEM_ARENA_MIN && sz > limit)
		sz >>= 1;
	return sz;
}

enum secmem_state
secmem_init(void)
{
	unsigned long long limit = compat_memlock_raise();
	size_t sz = arena_size(limit);
	int rc;

	if (state != SECMEM_OFF)
		return state;
	rc = CRYPTO_secure_malloc_init(sz, SECMEM_MINSIZE);
	if (rc == 0) {
		log_warnx("secure heap: OpenSSL cannot set up a %zu KiB arena; "
		    "secret values and lane CA keys are in ordinary memory "
		    "(wiped when freed, never in a core dump, but they may be "
		    "swapped)", sz >> 10);
		return state;
	}
	arena = sz;
	state = rc == 1 ? SECMEM_LOCKED : SECMEM_UNLOCKED;
	if (state == SECMEM_LOCKED)
		log_info("secure heap: %zu KiB, locked in memory and left out "
		    "of core dumps, for secret values and lane CA keys",
		    sz >> 10);
	else
		log_warnx("secure heap: %zu KiB, but the system refused to lock "
		    "it in memory (RLIMIT_MEMLOCK %llu bytes): secret values "
		    "and lane CA keys may be swapped", sz >> 10, limit);
	return state;
}

enum secmem_state
secmem_state(void)
{
	return state;
}

size_t
secmem_arena(void)
{
	return arena;
}

void *
secmem_alloc(size_t n)
{
	void *p = NULL;

	/* A quarter stays for keys: a lane CA that cannot be made fails. */
	if (state != SECMEM_OFF && n <= arena / 4 * 3 &&
	    CRYPTO_secure_used() <= arena / 4 * 3 - n)
		/* No file and line: a full arena pushes no OpenSSL error. */
		p = CRYPTO_secure_malloc(n, NULL, 0);
	if (p != NULL) {
		spilled = false;
		return p;
	}
	if (state != SECMEM_OFF && !spilled)
		log_warnx("secure heap: no room for a %zu-byte value (%zu of "
		    "%zu KiB used, a quarter kept for keys); secret values go "
		    "to ordinary memory, which may be swapped, until there is",
		    n, CRYPTO_secure_used() >> 10, arena >> 10);
	spilled = true;
	return xmalloc(n);
}

void
secmem_free(void *p, size_t n)
{
	if (p == NULL)
		return;
	if (CRYPTO_secure_allocated(p)) {
		CRYPTO_secure_clear_free(p, n, NULL, 0);
		return;
	}
	wire_wipe(p, n);
	free(p);
}
