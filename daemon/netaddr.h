/*
 * Which addresses a lane's proxy may connect to. The proxy resolves names
 * itself and refuses any name with an answer that is not a public unicast
 * address, so that a name the guest may use cannot be pointed (DNS
 * rebinding) at the host's loopback, the lane network or a private range.
 */
#ifndef LANED_NETADDR_H
#define LANED_NETADDR_H

#include <sys/socket.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * True for a globally routable unicast address. NULL reason is fine;
 * otherwise it names the range that refused the address ("loopback",
 * "private", ...).
 */
bool netaddr_is_public(const struct sockaddr *, const char **reason);
/* The numeric form, "1.2.3.4" or "2001:db8::1"; "?" if it cannot be made. */
void netaddr_format(const struct sockaddr *, char *buf, size_t len);

#endif
