/*
 * Tar streams for copies, with libarchive: building the archive a copy-in
 * sends, and extracting what a copy-out returns. The extraction is the
 * place where bytes from inside a lane meet the host file system, so it
 * refuses anything but plain files, directories and symbolic links, any
 * member that is absolute or climbs with "..", any write through a symbolic
 * link, and more than the configured bytes or entries.
 */
#ifndef AL_TAR_H
#define AL_TAR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentlane.h"

/* Sink for archive bytes; 0 or -1 with err set. */
typedef int (*al_tar_write_fn)(void *arg, const void *buf, size_t len,
    struct al_error *err);
/* Source of archive bytes: >0 with *buf, 0 at the end, -1 with err set. */
typedef ssize_t (*al_tar_read_fn)(void *arg, const void **buf,
    struct al_error *err);

/*
 * Archives host_path. A directory's contents are stored relative to it (the
 * directory itself is not a member); a file is stored as the single member
 * `member` (its name in the guest). Owners are not recorded.
 */
int al_tar_create(const char *host_path, const char *member, al_tar_write_fn,
    void *arg, struct al_error *err);

struct al_tar_limits {
	uint64_t max_bytes;	/* sum of member sizes */
	uint64_t max_entries;
};

/*
 * Extracts a tar stream into dir, an existing empty directory given by an
 * absolute path without symbolic links (realpath). Returns 0, or -1 with err
 * (AL_UNSAFE for hostile content, AL_TOO_LARGE past a limit). dir may hold
 * partial output on failure; the caller removes it.
 */
int al_tar_extract(al_tar_read_fn, void *arg, const char *dir,
    const struct al_tar_limits *, uint64_t *entries, struct al_error *err);

/* Removes a tree without following symbolic links; best effort. */
void al_remove_tree(const char *path);

#endif
