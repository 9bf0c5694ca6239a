/*
 * The uid of the process at the other end of a Unix socket, as the kernel
 * knows it: SO_PEERCRED on Linux, getpeereid(3) on macOS and the BSDs.
 * There is no fallback: a platform without either fails to build, and a
 * failing call rejects the connection.
 */
#ifndef LANED_PEERCRED_H
#define LANED_PEERCRED_H

#include <sys/types.h>

int peercred_uid(int fd, uid_t *uid);

#endif
