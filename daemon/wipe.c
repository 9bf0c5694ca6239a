/*
 * libevent's allocator, made to wipe every block it frees: its buffers
 * held client frames and guest-bound frames (exec environments, which may
 * be secrets), and reading a frame across buffer chains leaves copies in
 * chains freed inside libevent. Policy lives here; the one platform fact
 * it needs, a block's usable size, is compat.c's.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "compat.h"
#include "wipe.h"
#include "wire.h"

static void *
wipe_malloc(size_t n)
{
	return malloc(n);
}

static void
wipe_free(void *p)
{
	if (p == NULL)
		return;
	wire_wipe(p, compat_malloc_size(p));
	free(p);
}

/* Never realloc in place: the old block is wiped before it is let go. */
static void *
wipe_realloc(void *p, size_t n)
{
	size_t old;
	void *q;

	if (p == NULL)
		return malloc(n);
	if ((q = malloc(n != 0 ? n : 1)) == NULL)
		return NULL;
	old = compat_malloc_size(p);
	memcpy(q, p, old < n ? old : n);
	wipe_free(p);
	return q;
}

void
wipe_libevent_on_free(void)
{
	event_set_mem_functions(wipe_malloc, wipe_realloc, wipe_free);
}
