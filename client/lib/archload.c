/*
 * The libarchive loader (see archload.h): dlopen on the first copy, one
 * dlsym per call the client uses, all or nothing.
 */
#define AL_ARCHLOAD_IMPL
#include "archload.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * Where the Makefile found libarchive: its soname (what the run-time
 * linker would have looked for) and the path in the build's pkg-config
 * libdir (Homebrew keeps libarchive out of the default search path).
 */
#ifndef AL_LIBARCHIVE_SONAME
#define AL_LIBARCHIVE_SONAME "libarchive.so.13"
#endif
#ifndef AL_LIBARCHIVE_PATH
#define AL_LIBARCHIVE_PATH AL_LIBARCHIVE_SONAME
#endif

struct al_archive_calls al_archive;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;

static void
load(void)
{
	struct al_archive_calls t;
	void *h;

	/* RTLD_LOCAL: our copy never answers another library's lookups. */
	if ((h = dlopen(AL_LIBARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL)) == NULL &&
	    (h = dlopen(AL_LIBARCHIVE_PATH, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		/*
		 * The callers can only say "out of memory" for a NULL
		 * constructor; say once what really happened.
		 */
		fprintf(stderr, "libagentlane: cannot load libarchive: %s\n",
		    dlerror());
		return;
	}
	memset(&t, 0, sizeof t);
#define AL_ARCHIVE_LOOKUP(f) \
	if ((*(void **)&t.f = dlsym(h, #f)) == NULL) { \
		fprintf(stderr, "libagentlane: libarchive lacks %s\n", #f); \
		(void)dlclose(h); \
		return; \
	}
	AL_ARCHIVE_CALLS(AL_ARCHIVE_LOOKUP)
	AL_ARCHIVE_LIFECYCLE(AL_ARCHIVE_LOOKUP)
#undef AL_ARCHIVE_LOOKUP
	al_archive = t;
	loaded = true;	/* never unloaded: objects may outlive any caller */
}

static bool
ready(void)
{
	if (pthread_once(&load_once, load) != 0 || !loaded) {
		errno = ENOSYS;
		return false;
	}
	return true;
}

struct archive *
al_archive_read_new(void)
{
	return ready() ? al_archive.archive_read_new() : NULL;
}

struct archive *
al_archive_read_disk_new(void)
{
	return ready() ? al_archive.archive_read_disk_new() : NULL;
}

struct archive *
al_archive_write_new(void)
{
	return ready() ? al_archive.archive_write_new() : NULL;
}

struct archive *
al_archive_write_disk_new(void)
{
	return ready() ? al_archive.archive_write_disk_new() : NULL;
}

struct archive_entry *
al_archive_entry_new(void)
{
	return ready() ? al_archive.archive_entry_new() : NULL;
}

/* Destructors: NULL (a failed constructor) needs no library. */
int
al_archive_read_free(struct archive *a)
{
	return a == NULL ? ARCHIVE_OK : al_archive.archive_read_free(a);
}

int
al_archive_write_free(struct archive *a)
{
	return a == NULL ? ARCHIVE_OK : al_archive.archive_write_free(a);
}

void
al_archive_entry_free(struct archive_entry *e)
{
	if (e != NULL)
		al_archive.archive_entry_free(e);
}
