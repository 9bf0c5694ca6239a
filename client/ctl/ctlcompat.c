/*
 * The CLI's platform differences, as daemon/compat.c is the daemon's: how
 * to find our own executable (agent-laned is installed beside it) and
 * which service manager the host has. Nothing else in client/ctl has an
 * #ifdef.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

#include "ctl.h"

int
ctl_compat_self_path(char *buf, size_t len)
{
#if defined(__APPLE__)
	uint32_t size = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;

	return _NSGetExecutablePath(buf, &size) == 0 ? 0 : -1;
#else
	ssize_t n;

	if (len == 0 || (n = readlink("/proc/self/exe", buf, len - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	return 0;
#endif
}

const char *
ctl_compat_service_manager(void)
{
#if defined(__APPLE__)
	return "launchd";
#else
	return "systemd";
#endif
}
