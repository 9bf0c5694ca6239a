/* Routes the one call of a connection to its handler. */
#ifndef LANED_DISPATCH_H
#define LANED_DISPATCH_H

#include "wire.h"

struct laned;
struct conn;

void dispatch_request(struct laned *, struct conn *, const AlRequest *);

#endif
