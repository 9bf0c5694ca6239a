/*
 * agent-lanectl system dial-stdio: the remote end of an ssh:// host. It
 * connects to this host's own daemon socket and relays bytes both ways
 * between it and its standard input and output (ssh's channel) until
 * either side is done, as `docker system dial-stdio` does.
 *
 * The relay looks at one frame only, the client's hello: a client of
 * another protocol version is told so by name (FAILED_PRECONDITION, both
 * versions), and a daemon that cannot be reached is an UNAVAILABLE frame
 * the client reads like any answer. Everything after it is copied as it
 * comes. Each direction has one fixed buffer and is read only while the
 * buffer has room, so memory is bounded and a slow side slows the other;
 * poll(2) waits, nothing spins. The end of input is passed on as a
 * half-close (shutdown), so that what is still coming back arrives; the
 * daemon's close ends the relay. When ssh goes away (our input ends, or
 * our output is gone) the daemon's connection is closed, and the daemon
 * treats that as any client's close: an owned lane is destroyed.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "wire.h"

#define RELAY_BUF (256u * 1024u)

struct pipe_buf {
	uint8_t *data;
	size_t off, len;
	bool eof;		/* the reading side ended */
	bool dead;		/* the writing side failed: drop what comes */
};

/* Writes the whole of buf to fd (blocking), retrying on EINTR. */
static int
write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			(void)poll(&pfd, 1, -1);
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Answers the client with an Error frame, and says it on stderr too. */
static int
answer_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
answer_error(int code, const char *fmt, ...)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Error e = AGENTLANE__V1__ERROR__INIT;
	char msg[512];
	uint8_t *buf;
	size_t len;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	e.code = (Agentlane__V1__ErrorCode)code;
	e.message = msg;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_ERROR;
	resp.error = &e;
	if (wire_pack_response(&resp, &buf, &len) == 0) {
		(void)write_all(STDOUT_FILENO, buf, len);
		free(buf);
	}
	ctl_errx("system dial-stdio: %s", msg);
	return CTL_EXIT_FAILURE;
}

/*
 * The client's first frame, whole, into b (which it starts); its hello's
 * version in *version (0: it was no hello, for the daemon to refuse). -1:
 * input ended or failed first.
 */
static int
read_hello(struct pipe_buf *b, uint32_t *version)
{
	uint32_t len = 0;
	AlRequest *req;

	*version = 0;
	for (;;) {
		ssize_t n;

		if (b->len >= WIRE_HEADER_SIZE) {
			len = wire_header_length(b->data);
			/* Too large for any daemon: it refuses it, not us. */
			if (len > WIRE_MAX_FRAME ||
			    b->len >= WIRE_HEADER_SIZE + (size_t)len)
				break;
		}
		n = read(STDIN_FILENO, b->data + b->len, RELAY_BUF - b->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		b->len += (size_t)n;
	}
	if (len > WIRE_MAX_FRAME)
		return 0;
	if ((req = wire_unpack_request(b->data + WIRE_HEADER_SIZE, len)) != NULL) {
		if (req->body_case == AGENTLANE__V1__REQUEST__BODY_HELLO)
			*version = req->hello->protocol_version;
		agentlane__v1__request__free_unpacked(req, NULL);
	}
	return 0;
}

static int
dial(const char *path, char *err, size_t errlen)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		snprintf(err, errlen, "the socket path %s is too long", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	while (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		if (errno == EINTR)
			continue;
		snprintf(err, errlen, "cannot reach agent-laned at %s: %s%s",
		    path, errno == ECONNREFUSED ? "no daemon listens on the "
		    "socket" : strerror(errno), errno == ENOENT ||
		    errno == ECONNREFUSED ? " (is the daemon running there? "
		    "agent-lanectl daemon status)" : "");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Moves what it can from b to fd (non-blocking). -1 when fd failed: the
 * caller decides what that ends.
 */
static int
flush(struct pipe_buf *b, int fd)
{
	while (b->len > b->off) {
		ssize_t n = send(fd, b->data + b->off, b->len - b->off,
		    MSG_DONTWAIT | (fd == STDOUT_FILENO ? 0 : MSG_NOSIGNAL));

		if (n == -1 && errno == ENOTSOCK)
			n = write(fd, b->data + b->off, b->len - b->off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		b->off += (size_t)n;
	}
	b->off = b->len = 0;
	return 0;
}

/* Reads what there is room for; EOF and errors end the direction. */
static void
fill(struct pipe_buf *b, int fd)
{
	ssize_t n = read(fd, b->data + b->len, RELAY_BUF - b->len);

	if (n == -1 && (errno == EINTR || errno == EAGAIN ||
	    errno == EWOULDBLOCK))
		return;
	if (n <= 0)
		b->eof = true;
	else
		b->len += (size_t)n;
}

/* Non-blocking, unless it is a terminal (someone trying it by hand). */
static void
nonblock(int fd)
{
	int fl;

	if (!isatty(fd) && (fl = fcntl(fd, F_GETFL)) != -1)
		(void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void
relay(int sock, struct pipe_buf *up, struct pipe_buf *down)
{
	bool shut = false;

	nonblock(sock);
	nonblock(STDIN_FILENO);
	nonblock(STDOUT_FILENO);
	for (;;) {
		struct pollfd pfd[3];
		short sev = 0;
		nfds_t n = 0;
		int iin = -1, iout = -1, isock = -1;

		/* The client is done and all of it went: half-close. */
		if (up->eof && (up->len == 0 || up->dead) && !shut) {
			(void)shutdown(sock, SHUT_WR);
			shut = true;
		}
		/* The daemon is done and all of it went: so are we. */
		if (down->eof && down->len == 0)
			return;
		/*
		 * Only descriptors we want something of are polled: a hung-up
		 * one would otherwise wake poll at once, forever.
		 */
		if (!up->eof && up->len < RELAY_BUF) {
			pfd[n] = (struct pollfd){ .fd = STDIN_FILENO,
			    .events = POLLIN };
			iin = (int)n++;
		}
		if (down->len > 0) {
			pfd[n] = (struct pollfd){ .fd = STDOUT_FILENO,
			    .events = POLLOUT };
			iout = (int)n++;
		}
		if (!down->eof && down->len < RELAY_BUF)
			sev |= POLLIN;
		if (up->len > 0 && !up->dead)
			sev |= POLLOUT;
		if (sev != 0) {
			pfd[n] = (struct pollfd){ .fd = sock, .events = sev };
			isock = (int)n++;
		}
		if (poll(pfd, n, -1) == -1) {
			if (errno == EINTR && !ctl_interrupted())
				continue;
			return;
		}
		if (iin != -1 && pfd[iin].revents != 0)
			fill(up, STDIN_FILENO);
		if (up->dead)
			up->off = up->len = 0;	/* the daemon reads no more */
		if (isock != -1 && (pfd[isock].revents & (POLLOUT | POLLERR |
		    POLLHUP)) && up->len > 0 && flush(up, sock) == -1)
			up->dead = true;
		if (isock != -1 && (pfd[isock].revents & (POLLIN | POLLERR |
		    POLLHUP)) && !down->eof && down->len < RELAY_BUF)
			fill(down, sock);
		/* ssh is gone: nobody reads what the daemon says. */
		if (iout != -1 && (pfd[iout].revents & (POLLERR | POLLHUP)))
			return;
		if (down->len > 0 && flush(down, STDOUT_FILENO) == -1)
			return;
	}
}

static int
dial_stdio(struct ctl *ctl)
{
	struct pipe_buf up = { 0 }, down = { 0 };
	const char *path = al_client_socket(ctl->client);
	uint32_t version;
	char err[1200], host[256];
	int sock, rc = 0;

	if ((up.data = malloc(RELAY_BUF)) == NULL ||
	    (down.data = malloc(RELAY_BUF)) == NULL) {
		free(up.data);
		ctl_errx("out of memory");
		return CTL_EXIT_FAILURE;
	}
	if (gethostname(host, sizeof host) == -1)
		snprintf(host, sizeof host, "this host");
	host[sizeof host - 1] = '\0';
	/* Nothing came: nobody to answer. */
	if (read_hello(&up, &version) == -1)
		goto out;
	if (version != 0 && version != WIRE_PROTOCOL_VERSION) {
		rc = answer_error(AL_FAILED_PRECONDITION, "agent-lanectl %s on "
		    "%s speaks protocol version %u, the client %u: install the "
		    "same release on both hosts", AGENT_LANE_VERSION, host,
		    WIRE_PROTOCOL_VERSION, version);
		goto out;
	}
	if ((sock = dial(path, err, sizeof err)) == -1) {
		rc = answer_error(AL_UNAVAILABLE, "on %s: %s", host, err);
		goto out;
	}
	relay(sock, &up, &down);
	close(sock);
out:
	free(up.data);
	free(down.data);
	return rc;
}

static int
system_dial_stdio(struct ctl *ctl, const struct ctl_parsed *p)
{
	if (p->noperands != 1)
		return ctl_usage("usage: agent-lanectl system dial-stdio");
	return dial_stdio(ctl);
}

const struct ctl_subcommand ctl_system_subcommands[] = {
	{ "dial-stdio", system_dial_stdio, NULL, "", "relay standard input "
	    "and output to this host's daemon", false },
	{ NULL, NULL, NULL, NULL, NULL, false },
};
