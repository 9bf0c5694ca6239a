/* The Exec call: one command in a lane, streamed both ways. */
#ifndef LANED_EXEC_H
#define LANED_EXEC_H

#include "wire.h"

struct laned;
struct conn;

/*
 * Wipes the environment values of an unpacked Exec (whether or not the call
 * was accepted) before protobuf-c frees them.
 */
void exec_wipe_request(Agentlane__V1__Exec *);
void exec_handle(struct laned *, struct conn *, const Agentlane__V1__Exec *);

#endif
