/*
 * The GetLogs call: streams the daemon's own log, or one lane's Lima logs
 * (from its instance directory while it lives, or the copies lanelog.c
 * kept of a failed start), each file's last max_lane_log_bytes (the
 * daemon's log: max_log_bytes / 2) in LogChunk frames, then an eof chunk.
 * With follow it keeps sending what is appended, polling the files; it
 * ends when the lane is gone, or when the client closes the connection.
 */
#ifndef LANED_LOGCALL_H
#define LANED_LOGCALL_H

#include "wire.h"

struct conn;
struct laned;

void logcall_handle(struct laned *, struct conn *,
    const Agentlane__V1__GetLogs *);

#endif
