/*
 * The floor for the RPC benchmark: a plain Unix-socket echo server, one
 * thread and one poll() loop like agent-laned's single event loop, that
 * writes back whatever it reads and closes when the client does. Nothing
 * here parses frames; what it costs is what any local server costs.
 *
 * Usage: echod SOCKET   (runs until killed)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define ECHO_MAX_CLIENTS 1024

static int
cloexec_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1)
		return -1;
	return 0;
}

int
main(int argc, char **argv)
{
	static struct pollfd pfd[ECHO_MAX_CLIENTS + 1];
	struct sockaddr_un sun;
	char buf[65536];
	nfds_t n = 1;
	int lfd;

	if (argc != 2 || strlen(argv[1]) >= sizeof sun.sun_path) {
		fprintf(stderr, "usage: echod SOCKET\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, argv[1], strlen(argv[1]));
	(void)unlink(argv[1]);
	if ((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    cloexec_nonblock(lfd) == -1 ||
	    bind(lfd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    listen(lfd, 512) == -1) {
		perror("echod: listen");
		return 1;
	}
	pfd[0].fd = lfd;
	pfd[0].events = POLLIN;
	for (;;) {
		if (poll(pfd, n, -1) == -1) {
			if (errno == EINTR)
				continue;
			perror("echod: poll");
			return 1;
		}
		for (nfds_t i = n; i-- > 1;) {
			ssize_t r, w = 0;

			if (pfd[i].revents == 0)
				continue;
			r = read(pfd[i].fd, buf, sizeof buf);
			if (r == -1 && (errno == EAGAIN || errno == EINTR))
				continue;
			/* Small messages: one write each (a full buffer drops). */
			if (r > 0)
				w = write(pfd[i].fd, buf, (size_t)r);
			if (r <= 0 || w != r) {
				close(pfd[i].fd);
				pfd[i] = pfd[--n];
			}
		}
		if (pfd[0].revents & POLLIN) {
			int fd;

			while (n <= ECHO_MAX_CLIENTS &&
			    (fd = accept(lfd, NULL, NULL)) != -1) {
				if (cloexec_nonblock(fd) == -1) {
					close(fd);
					continue;
				}
				pfd[n].fd = fd;
				pfd[n].events = POLLIN;
				pfd[n].revents = 0;
				n++;
			}
		}
	}
}
