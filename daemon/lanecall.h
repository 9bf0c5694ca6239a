/*
 * The lane calls of the protocol (create, get, list, destroy, extend,
 * events) and the protobuf views of registry rows. Each handler owns the
 * connection until it replies.
 */
#ifndef LANED_LANECALL_H
#define LANED_LANECALL_H

#include <stdbool.h>
#include <stddef.h>

#include "registry.h"
#include "wire.h"

struct conn;
struct lane;
struct laned;

void lanecall_handle_create(struct laned *, struct conn *,
    const Agentlane__V1__CreateLane *);
void lanecall_handle_get(struct laned *, struct conn *, const char *name);
void lanecall_handle_list(struct laned *, struct conn *,
    const Agentlane__V1__ListLanes *);
void lanecall_handle_destroy(struct laned *, struct conn *, const char *name);
void lanecall_handle_extend(struct laned *, struct conn *,
    const Agentlane__V1__ExtendLane *);
void lanecall_handle_events(struct laned *, struct conn *,
    const Agentlane__V1__GetEvents *);

/* Sends the lane's row on c and finishes the call; false if it could not. */
bool lanecall_send(struct laned *, struct conn *, const char *name);
/* The same without finishing the call (false: an error was sent). */
bool lanecall_send_row(struct laned *, struct conn *, const char *name);

/* Fills a protobuf Lane from a record; strings point into rec/labels. */
void lanecall_record_to_proto(const struct lane_record *, Agentlane__V1__Lane *,
    Agentlane__V1__Label **labelv, Agentlane__V1__Label *labels,
    const struct lane_label *src, size_t nlabels);
/*
 * Adds the network policy; the allow list is split in rec->allow itself,
 * allowv has room for NETPOLICY_ALLOW_MAX pointers into it.
 */
void lanecall_record_net_to_proto(struct lane_record *, Agentlane__V1__Lane *,
    char **allowv);
/*
 * Adds the secrets' names, hosts and headers (split in rec->secrets
 * itself) from storage it allocates: NULL when the lane has none, else
 * what the caller frees once the answer is sent.
 */
void *lanecall_record_secrets_to_proto(struct lane_record *,
    Agentlane__V1__Lane *);

#endif
