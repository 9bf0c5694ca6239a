/* Wiping freed memory that held what a peer sent (see wipe.c). */
#ifndef LANED_WIPE_H
#define LANED_WIPE_H

/*
 * Makes libevent wipe every block it frees. Call before any libevent
 * allocation.
 */
void wipe_libevent_on_free(void);

#endif
