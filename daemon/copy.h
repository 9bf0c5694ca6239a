/*
 * CopyIn and CopyOut. The client reads and writes host files (on macOS a
 * launchd agent would hit privacy denials); the daemon only relays a tar
 * stream into `tar -x` in the guest, or streams a guest file or directory
 * back with a hard byte bound.
 */
#ifndef LANED_COPY_H
#define LANED_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

struct laned;
struct conn;

void copy_handle_in(struct laned *, struct conn *, const Agentlane__V1__CopyIn *);
void copy_handle_out(struct laned *, struct conn *,
    const Agentlane__V1__CopyOut *);

/* Guest paths: non-empty, not absurdly long (absolute, or relative to
 * the lane's workspace). */
bool copy_guest_path_ok(const char *path);

/* What the guest's copy-out script says first (its word, not a bound). */
struct copy_head {
	int kind;		/* AGENTLANE__V1__COPY_KIND__FILE or _DIRECTORY */
	uint64_t size;		/* a file's size, a directory's files' sum; 0 */
	uint32_t mode;		/* a file's permission bits (0-0777); 0 */
};

/*
 * Parses that first line, without its newline: "D<bytes>" or
 * "F<size> <mode>", where any number may be missing or malformed (then
 * 0: not known; a size past 2^64 saturates). False when the line is
 * neither kind. A pure function of its argument (fuzz_copyhead).
 */
bool copy_head_parse(const char *line, struct copy_head *);

#endif
