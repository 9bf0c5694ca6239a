/*
 * Where a copy out of a lane lands on the host, by docker cp's rules, and
 * the merge of a copied tree into a directory that already exists. The
 * guest side of the same rules, for copies in, is the copy-in script in
 * daemon/copy.c.
 */
#ifndef AL_PLACE_H
#define AL_PLACE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "agentlane.h"

struct al_place {
	char dest[PATH_MAX];	/* what is written (file) or made (directory) */
	char parent[PATH_MAX];	/* its directory: the temporaries go there */
	char base[NAME_MAX + 1];
	bool merge;		/* dest is a directory already: merge into it */
};

/*
 * A path's last component into name, trailing slashes aside ("a/b/" ->
 * "b", "/" -> ""); true when the path ended in a slash.
 */
bool al_path_last(const char *path, char *name, size_t len);

/*
 * Before asking the daemon: a host_path that does not exist must be in an
 * existing directory. 0, or -1 with err.
 */
int al_place_check(const char *host_path, struct al_error *err);

/*
 * Once the guest said what guest_path is (AL_COPY_FILE or _DIRECTORY):
 * into host_path when it is a directory, under the guest's name (a
 * directory's contents, "DIR/.", go into host_path itself); else at
 * host_path, where a file replaces a file and a directory is made. A
 * host_path ending in "/" must be a directory; a directory never replaces
 * a non-directory, nor a file a directory. 0, or -1 with err.
 */
int al_place_out(const char *guest_path, const char *host_path, int kind,
    struct al_place *, struct al_error *err);

/*
 * Moves the entries of the tree src (a fresh extraction of ours) into the
 * existing directory dst, as extracting over it would: directories merge,
 * anything else replaces what has its name, but a directory never replaces
 * a non-directory nor the other way round. Every entry is checked before
 * the first is moved, so that a conflict leaves dst as it was. Symbolic
 * links in dst are not followed. At most max_entries entries. 0, or -1.
 */
int al_merge_tree(const char *src, const char *dst, uint64_t max_entries,
    struct al_error *err);

#endif
