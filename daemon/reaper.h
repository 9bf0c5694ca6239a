/*
 * Lifetimes and recovery: one libevent timer armed at the earliest lane
 * deadline or idle expiry (re-armed after every change), a coarse periodic
 * tick that re-checks deadlines against the wall clock (a laptop that slept
 * through a deadline reaps on wake), and the reconcile that compares the
 * registry with the Lima home at start-up and on `reap`.
 */
#ifndef LANED_REAPER_H
#define LANED_REAPER_H

#include <stdbool.h>

#include "wire.h"

struct laned;
struct conn;

void reaper_init(struct laned *);
/* Loads live rows, starts the timers and the first reconcile. */
void reaper_start(struct laned *);
void reaper_rearm(struct laned *);
void reaper_handle_reap(struct laned *, struct conn *,
    const Agentlane__V1__Reap *);
void reaper_stop(struct laned *);

#endif
