/*
 * The two TLS handshakes of an interception (see proxytls.c), a layer of
 * the lane proxy above its connection layer (pconn.h).
 */
#ifndef LANED_PROXYTLS_H
#define LANED_PROXYTLS_H

#include "pconn.h"

/*
 * Upstream TCP is up for an intercepted CONNECT: TLS to it, verified,
 * then "200" and TLS with the guest. Once both are up and the guest's
 * server name agrees with the target (the policy's), done(c) takes over.
 */
void ptls_upstream(struct pconn *, pconn_fn *done);
/* The proxy's TLS contexts and test trust, freed. */
void ptls_free(struct proxy *);

#endif
