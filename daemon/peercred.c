#include <sys/types.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peercred.h"

#if defined(__linux__)

int
peercred_uid(int fd, uid_t *uid)
{
	struct ucred uc;
	socklen_t len = sizeof uc;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == -1 ||
	    len != sizeof uc)
		return -1;
	*uid = uc.uid;
	return 0;
}

#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || \
    defined(__NetBSD__)

int
peercred_uid(int fd, uid_t *uid)
{
	gid_t gid;

	return getpeereid(fd, uid, &gid);
}

#else
#error "no kernel peer-credential call known for this platform"
#endif
