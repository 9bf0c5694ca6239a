/* The Exec call: one command in a lane, streamed both ways. */
#ifndef LANED_EXEC_H
#define LANED_EXEC_H

#include "wire.h"

struct laned;
struct conn;

void exec_handle(struct laned *, struct conn *, const Agentlane__V1__Exec *);

#endif
