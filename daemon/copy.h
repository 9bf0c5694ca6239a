/*
 * CopyIn and CopyOut. The client reads and writes host files (on macOS a
 * launchd agent would hit privacy denials); the daemon only relays a tar
 * stream into `tar -x` in the guest, or streams a guest file or directory
 * back with a hard byte bound.
 */
#ifndef LANED_COPY_H
#define LANED_COPY_H

#include <stdbool.h>

#include "wire.h"

struct laned;
struct conn;

void copy_handle_in(struct laned *, struct conn *, const Agentlane__V1__CopyIn *);
void copy_handle_out(struct laned *, struct conn *,
    const Agentlane__V1__CopyOut *);

/* Guest paths: non-empty, not absurdly long (absolute, or relative to
 * the lane's workspace). */
bool copy_guest_path_ok(const char *path);

#endif
