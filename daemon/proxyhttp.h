/*
 * The lane proxy's request relay (see proxyhttp.c), a layer above its
 * connection layer (pconn.h): requests parsed, checked by the policy,
 * written again by proxyfwd.c; responses of an intercepted connection
 * scanned by proxyresp.c.
 */
#ifndef LANED_PROXYHTTP_H
#define LANED_PROXYHTTP_H

#include "pconn.h"

/* An intercepted tunnel is up (both handshakes): relay its requests. */
void phttp_enter(struct pconn *);
/* Upstream is up for a plain http:// request: send it, relay its body. */
void phttp_start_plain(struct pconn *);

#endif
