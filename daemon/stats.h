/*
 * GetStats (agent-lanectl stats): each live lane's CPU, memory, disk,
 * process count and uptime, read in its guest through its exec channel;
 * one sample, or a stream of them.
 */
#ifndef LANED_STATS_H
#define LANED_STATS_H

#include "wire.h"

struct laned;
struct conn;

void stats_handle(struct laned *, struct conn *,
    const Agentlane__V1__GetStats *);

#endif
