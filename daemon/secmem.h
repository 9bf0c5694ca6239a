/*
 * Memory for what must never reach a disk: secret values and the lane
 * CAs' private keys. It is OpenSSL's secure heap, an arena that is
 * mmap'd, mlock'd (never swapped) and, on Linux, MADV_DONTDUMP (never in
 * a core). OpenSSL puts private key BIGNUMs there by itself once it is
 * set up; secmem_alloc puts secret values there.
 *
 * The arena is bounded (SECMEM_ARENA_MAX, less when RLIMIT_MEMLOCK is
 * lower) and keeps a quarter for keys. A value that does not fit, or a
 * platform that refuses the arena, gets ordinary memory: the create goes
 * on, and the log says so once per spell of it. Either way a value is
 * wiped when freed. Core dumps are off for the whole daemon anyway
 * (compat_nocore); this keeps the pages out of swap as well.
 */
#ifndef LANED_SECMEM_H
#define LANED_SECMEM_H

#include <stddef.h>

#define SECMEM_ARENA_MAX	(4u << 20)	/* bytes; a power of two */
#define SECMEM_ARENA_MIN	(64u << 10)
#define SECMEM_MINSIZE		32	/* the arena's smallest block */

enum secmem_state {
	SECMEM_OFF,		/* not set up, or refused: ordinary memory */
	SECMEM_LOCKED,		/* the arena is mlock'd (and DONTDUMP) */
	SECMEM_UNLOCKED,	/* the arena exists; mlock or madvise refused */
};

/*
 * Sets the secure heap up, sized from RLIMIT_MEMLOCK (raised to its hard
 * limit first), and logs what it got. Call once, after OpenSSL's
 * allocator is set (tls_wipe_on_free) and before any key or value is
 * made. Returns the state it reached.
 */
enum secmem_state secmem_init(void);
/* The state secmem_init reached (SECMEM_OFF before it). */
enum secmem_state secmem_state(void);
/* The arena's size in bytes (0 when off). */
size_t secmem_arena(void);

/* n > 0 bytes for a secret value: the arena, else ordinary memory. */
void *secmem_alloc(size_t n);
/* Wipes n bytes at p and frees it, from wherever it came; NULL is fine. */
void secmem_free(void *p, size_t n);

#endif
