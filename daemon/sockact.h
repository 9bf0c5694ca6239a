/*
 * Socket activation: a listening socket handed over by launchd (the plist's
 * Sockets/Listeners, through launch_activate_socket) or by systemd
 * (LISTEN_FDS/LISTEN_PID). Returns the descriptor, -1 when the daemon was
 * started by hand (it then binds its own socket), or -2 with a message when
 * an activation environment is present but wrong.
 */
#ifndef LANED_SOCKACT_H
#define LANED_SOCKACT_H

#include <stddef.h>

int sockact_listen_fd(char *err, size_t errlen);

#endif
