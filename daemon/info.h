/*
 * GetInfo (agent-lanectl info): the daemon's version, uptime and paths,
 * what it knows of limactl and of network policies, its caps, the warm
 * pool, and the lanes and images with the disk they take.
 */
#ifndef LANED_INFO_H
#define LANED_INFO_H

struct laned;
struct conn;

void info_handle(struct laned *, struct conn *);

#endif
