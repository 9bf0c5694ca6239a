#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"

#if !defined(MSG_NOSIGNAL)
#define MSG_NOSIGNAL 0		/* macOS: SO_NOSIGPIPE is set on the socket */
#endif

AL_API unsigned
al_version(void)
{
	return AL_VERSION_NUM;
}

AL_API const char *
al_version_string(void)
{
	return AL_VERSION_STRING;
}

int
al_opts_copy(void *dst, size_t dstsize, const void *src, struct al_error *err)
{
	size_t size;

	memset(dst, 0, dstsize);
	memcpy(&size, src, sizeof size);
	if (size < sizeof size) {
		al_set_error(err, AL_INVALID_ARGUMENT, "option struct without "
		    "its size: initialize it with its AL_..._INIT macro");
		return -1;
	}
	memcpy(dst, src, size < dstsize ? size : dstsize);
	return 0;
}

AL_API const char *
al_state_name(int state)
{
	if (state == AL_LANE_BOOTING)
		return "booting";
	return wire_lane_state_name(state);
}

void
al_error_from_response(struct al_error *err, const AlResponse *resp)
{
	if (resp->body_case == AGENTLANE__V1__RESPONSE__BODY_ERROR) {
		int code = (int)resp->error->code;

		/* A code this build does not know is the daemon's error. */
		if (code <= 0 || strcmp(wire_error_name(code), "UNKNOWN") == 0)
			code = AL_PROTOCOL;
		al_set_error(err, code, "%s", resp->error->message != NULL ?
		    resp->error->message : "");
	} else
		al_set_error(err, AL_PROTOCOL, "unexpected response (body %d)",
		    (int)resp->body_case);
}

/* The default socket: $AGENT_LANE_SOCKET, else under the home directory. */
static char *
default_socket(void)
{
	const char *env, *home;
	struct passwd *pw;
	char *path;

	if ((env = getenv(WIRE_SOCKET_ENV)) != NULL && env[0] != '\0')
		return strdup(env);
	home = getenv("HOME");
	if ((home == NULL || home[0] != '/') &&
	    (pw = getpwuid(getuid())) != NULL)
		home = pw->pw_dir;
	if (home == NULL)
		home = "/";
	if (asprintf(&path, "%s/" WIRE_DEFAULT_SOCKET_REL, home) == -1)
		return NULL;
	return path;
}

/* The client of a parsed host; NULL only when out of memory. */
static struct al_client *
client_make(const struct al_host *h, const char *name, const char *remote)
{
	struct al_client *c = calloc(1, sizeof *c);
	char url[AL_HOST_URL_MAX];

	if (c == NULL)
		return NULL;
	c->host = *h;
	al_host_url(h, url, sizeof url);
	c->url = strdup(url);
	c->socket_path = strdup(h->kind == AL_HOST_UNIX ? h->path : url);
	c->name = strdup(name != NULL ? name : "libagentlane");
	c->remote_command = strdup(remote != NULL && remote[0] != '\0' ?
	    remote : "agent-lanectl");
	if (c->url == NULL || c->socket_path == NULL || c->name == NULL ||
	    c->remote_command == NULL) {
		al_client_free(c);
		return NULL;
	}
	return c;
}

AL_API struct al_client *
al_client_new(const char *socket_path, const char *name)
{
	struct al_client *c;
	struct al_host h;
	char *path;

	memset(&h, 0, sizeof h);
	h.kind = AL_HOST_UNIX;
	if (socket_path != NULL && socket_path[0] != '\0')
		path = strdup(socket_path);
	else
		path = default_socket();
	if (path == NULL)
		return NULL;
	/* A path longer than a socket's cannot connect: said then. */
	snprintf(h.path, sizeof h.path, "%s", path);
	c = client_make(&h, name, NULL);
	if (c != NULL) {
		free(c->socket_path);
		c->socket_path = path;
	} else
		free(path);
	return c;
}

AL_API struct al_client *
al_client_open(const struct al_client_opts *o, struct al_error *err)
{
	struct al_client_opts opts;
	struct al_error local;
	struct al_client *c;
	struct al_host h;
	const char *url = NULL;

	err = al_error_begin(err, &local);
	if (o == NULL) {
		memset(&opts, 0, sizeof opts);
		opts.size = sizeof opts;
	} else if (al_opts_copy(&opts, sizeof opts, o, err) == -1)
		return NULL;
	if (opts.host != NULL && opts.host[0] != '\0')
		url = opts.host;
	else if ((url = getenv(WIRE_HOST_ENV)) != NULL && url[0] == '\0')
		url = NULL;
	if (url == NULL) {
		if ((c = al_client_new(NULL, opts.name)) == NULL)
			al_set_error(err, AL_IO, "out of memory");
		return c;
	}
	if (al_host_parse(url, &h, err) == -1) {
		if (url != opts.host) {
			char msg[sizeof err->message];

			snprintf(msg, sizeof msg, "%s", err->message);
			al_set_error(err, AL_INVALID_ARGUMENT, "$%s: %s",
			    WIRE_HOST_ENV, msg);
		}
		return NULL;
	}
	if (opts.remote_command != NULL && opts.remote_command[0] != '\0' &&
	    !al_remote_command_valid(opts.remote_command)) {
		al_set_error(err, AL_INVALID_ARGUMENT, "remote command %s: a "
		    "path of [A-Za-z0-9._+/-] (or ~/...), not beginning with "
		    "\"-\"", opts.remote_command);
		return NULL;
	}
	if ((c = client_make(&h, opts.name, opts.remote_command)) == NULL)
		al_set_error(err, AL_IO, "out of memory");
	return c;
}

AL_API void
al_client_free(struct al_client *c)
{
	if (c == NULL)
		return;
	free(c->socket_path);
	free(c->name);
	free(c->url);
	free(c->remote_command);
	free(c);
}

AL_API const char *
al_client_socket(const struct al_client *c)
{
	return c->socket_path;
}

AL_API const char *
al_client_host(const struct al_client *c)
{
	return c->url;
}

enum io_op { IO_WRITE, IO_SEND, IO_RECV };

/*
 * Moves all len bytes, whatever the descriptor's blocking mode: retries on
 * EINTR (unless al_interrupt() was called) and waits out EAGAIN with poll.
 * 0, or -1 with errno (ECONNRESET for end of stream while receiving).
 */
static int
io_all(int fd, void *buf, size_t len, enum io_op op)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n;

		/* A signal may have come between system calls. */
		if (al_interrupted()) {
			errno = EINTR;
			return -1;
		}
		if (op == IO_WRITE)
			n = write(fd, p, len);
		else if (op == IO_SEND)
			n = send(fd, p, len, MSG_NOSIGNAL);
		else
			n = recv(fd, p, len, 0);
		if (n == -1 && errno == EINTR && !al_interrupted())
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd pfd = {
				.fd = fd, .events = op == IO_RECV ? POLLIN : POLLOUT,
			};

			(void)poll(&pfd, 1, -1);
			continue;
		}
		if (n == 0 && op == IO_RECV)
			errno = ECONNRESET;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

size_t
al_conn_chunk(const struct al_conn *conn)
{
	size_t chunk = WIRE_CHUNK;

	if (conn->max_frame < chunk + WIRE_CHUNK_OVERHEAD)
		chunk = conn->max_frame > 2 * WIRE_CHUNK_OVERHEAD ?
		    conn->max_frame - WIRE_CHUNK_OVERHEAD : WIRE_CHUNK_OVERHEAD;
	return chunk;
}

int
al_write_all(int fd, const void *buf, size_t len)
{
	return io_all(fd, (void *)buf, len, IO_WRITE);
}

static int
send_all(int fd, const uint8_t *p, size_t len)
{
	return io_all(fd, (void *)p, len, IO_SEND);
}

static int
recv_all(int fd, uint8_t *p, size_t len)
{
	return io_all(fd, p, len, IO_RECV);
}

int
al_conn_send(struct al_conn *conn, const AlRequest *req, struct al_error *err)
{
	uint8_t *buf;
	size_t len;
	int rc;

	if (wire_pack_request(req, &buf, &len) == -1) {
		al_set_error(err, AL_TOO_LARGE, "request above the frame limit");
		return -1;
	}
	if (len - WIRE_HEADER_SIZE > conn->max_frame) {
		free(buf);
		al_set_error(err, AL_TOO_LARGE, "request of %zu bytes above the "
		    "daemon's frame cap of %u", len - WIRE_HEADER_SIZE,
		    conn->max_frame);
		return -1;
	}
	rc = send_all(conn->fd, buf, len);
	free(buf);
	if (rc == -1) {
		al_set_errno(err, AL_CONNECT, "sending to agent-laned");
		return -1;
	}
	return 0;
}

AlResponse *
al_conn_recv(struct al_conn *conn, struct al_error *err)
{
	uint8_t hdr[WIRE_HEADER_SIZE], *buf;
	uint32_t len;
	AlResponse *resp;

	if (recv_all(conn->fd, hdr, sizeof hdr) == -1) {
		al_set_error(err, AL_CONNECT, "agent-laned closed the connection");
		return NULL;
	}
	len = wire_header_length(hdr);
	if (len > WIRE_MAX_FRAME) {
		al_set_error(err, AL_PROTOCOL, "frame of %u bytes from the "
		    "daemon exceeds the protocol maximum", len);
		return NULL;
	}
	if ((buf = malloc(len > 0 ? len : 1)) == NULL) {
		al_set_error(err, AL_IO, "out of memory");
		return NULL;
	}
	if (recv_all(conn->fd, buf, len) == -1) {
		free(buf);
		al_set_error(err, AL_CONNECT, "truncated frame from agent-laned");
		return NULL;
	}
	resp = wire_unpack_response(buf, len);
	free(buf);
	if (resp == NULL || resp->body_case ==
	    AGENTLANE__V1__RESPONSE__BODY__NOT_SET) {
		if (resp != NULL)
			agentlane__v1__response__free_unpacked(resp, NULL);
		al_set_error(err, AL_PROTOCOL, "malformed frame from agent-laned");
		return NULL;
	}
	return resp;
}

void
al_response_free(AlResponse *resp)
{
	if (resp != NULL)
		agentlane__v1__response__free_unpacked(resp, NULL);
}

/*
 * Why connect(2) to path failed, in words: a directory or a plain file
 * refuses a connection just as a socket with no daemon behind it does,
 * and only the last means that the daemon is not running.
 */
static void
connect_error(const char *path, int e, struct al_error *err)
{
	struct stat sb;

	if ((e == ECONNREFUSED || e == ENOTSOCK) && stat(path, &sb) == 0 &&
	    !S_ISSOCK(sb.st_mode)) {
		al_set_error(err, AL_CONNECT, "cannot reach agent-laned at %s: "
		    "it is a %s, not a socket (the path names the socket "
		    "itself%s)", path, S_ISDIR(sb.st_mode) ? "directory" :
		    "file", S_ISDIR(sb.st_mode) ? ", such as "
		    "DIR/agent-laned.sock" : "");
		return;
	}
	/* What to do about it is the caller's to say (the CLI's hint). */
	al_set_error(err, AL_CONNECT, "cannot reach agent-laned at %s: %s",
	    path, e == ECONNREFUSED ? "no daemon listens on the socket" :
	    strerror(e));
	err->os_errno = e;
}

static int
conn_connect(struct al_client *c, struct al_error *err)
{
	struct sockaddr_un sun;
	int fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(c->socket_path) >= sizeof sun.sun_path) {
		al_set_error(err, AL_CONNECT, "socket path %s is too long",
		    c->socket_path);
		return -1;
	}
	memcpy(sun.sun_path, c->socket_path, strlen(c->socket_path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1) {
		al_set_errno(err, AL_CONNECT, "socket");
		return -1;
	}
	if ((fd = al_fd_above_stdio(fd)) == -1) {
		al_set_errno(err, AL_CONNECT, "socket");
		return -1;
	}
#if defined(SO_NOSIGPIPE)
	{
		int on = 1;

		(void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
	}
#endif
	while (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		if (errno == EINTR && !al_interrupted())
			continue;
		connect_error(c->socket_path, errno, err);
		close(fd);
		return -1;
	}
	return fd;
}

static void
info_from_hello(struct al_daemon_info *info, const Agentlane__V1__HelloReply *h)
{
	memset(info, 0, sizeof *info);
	info->protocol_version = h->protocol_version;
	snprintf(info->version, sizeof info->version, "%s",
	    h->daemon_version != NULL ? h->daemon_version : "");
	info->pid = h->pid;
	info->started_at_ms = h->started_at_ms;
	snprintf(info->state_dir, sizeof info->state_dir, "%s",
	    h->state_dir != NULL ? h->state_dir : "");
	if (h->limits != NULL) {
		const Agentlane__V1__Limits *l = h->limits;

		info->max_frame_bytes = l->max_frame_bytes;
		info->max_lanes = l->max_lanes;
		info->default_cpus = l->default_cpus;
		info->max_cpus = l->max_cpus;
		info->default_memory_mib = l->default_memory_mib;
		info->max_memory_mib = l->max_memory_mib;
		info->default_disk_gib = l->default_disk_gib;
		info->max_disk_gib = l->max_disk_gib;
		info->default_lifetime_s = l->default_lifetime_s;
		info->max_lifetime_s = l->max_lifetime_s;
		info->default_idle_timeout_s = l->default_idle_timeout_s;
		info->max_exec_timeout_s = l->max_exec_timeout_s;
		info->max_copy_out_bytes = l->max_copy_out_bytes;
	}
}

int
al_conn_open(struct al_client *c, struct al_conn *conn, const AlRequest *call,
    struct al_error *err)
{
	AlRequest req = AGENTLANE__V1__REQUEST__INIT;
	Agentlane__V1__Hello hello = AGENTLANE__V1__HELLO__INIT;
	AlResponse *resp;
	uint8_t *h = NULL, *b = NULL, *both;
	size_t hlen, blen = 0;
	int rc;

	memset(conn, 0, sizeof *conn);
	conn->max_frame = WIRE_MAX_FRAME;
	conn->err = err;
	if (c->host.kind == AL_HOST_SSH)
		conn->fd = al_ssh_connect(&c->host, c->remote_command,
		    &conn->ssh, err);
	else
		conn->fd = conn_connect(c, err);
	if (conn->fd == -1)
		return -1;
	hello.protocol_version = WIRE_PROTOCOL_VERSION;
	hello.client = c->name;
	req.body_case = AGENTLANE__V1__REQUEST__BODY_HELLO;
	req.hello = &hello;
	/*
	 * The call goes in the same write as the hello: the daemon reads
	 * frames in order, and a round trip saved is a round trip saved.
	 */
	if (wire_pack_request(&req, &h, &hlen) == -1 ||
	    (call != NULL && wire_pack_request(call, &b, &blen) == -1) ||
	    (both = realloc(h, hlen + blen)) == NULL) {
		free(h);
		wire_wipe(b, blen);
		free(b);
		al_set_error(err, AL_TOO_LARGE, "request above the frame limit");
		al_conn_close(conn);
		return -1;
	}
	if (blen > 0)
		memcpy(both + hlen, b, blen);
	/* The call may carry secrets (an exec's environment): no copy of it
	 * goes back to the allocator readable. */
	wire_wipe(b, blen);
	free(b);
	rc = send_all(conn->fd, both, hlen + blen);
	wire_wipe(both, hlen + blen);
	free(both);
	if (rc == -1) {
		al_set_errno(err, AL_CONNECT, "sending to agent-laned");
		al_conn_close(conn);
		return -1;
	}
	if ((resp = al_conn_recv(conn, err)) == NULL) {
		al_conn_close(conn);
		return -1;
	}
	if (resp->body_case != AGENTLANE__V1__RESPONSE__BODY_HELLO) {
		al_error_from_response(err, resp);
		al_response_free(resp);
		al_conn_close(conn);
		return -1;
	}
	info_from_hello(&conn->info, resp->hello);
	/*
	 * A local daemon refuses another version itself; over ssh the other
	 * end is another installation, whose daemon may answer anyway.
	 */
	if (conn->ssh != NULL &&
	    conn->info.protocol_version != WIRE_PROTOCOL_VERSION) {
		al_set_error(err, AL_FAILED_PRECONDITION, "%s: agent-laned %s "
		    "speaks protocol version %u, this client %u", c->url,
		    conn->info.version, conn->info.protocol_version,
		    WIRE_PROTOCOL_VERSION);
		al_response_free(resp);
		al_conn_close(conn);
		return -1;
	}
	if (conn->info.max_frame_bytes > 0 &&
	    conn->info.max_frame_bytes < conn->max_frame)
		conn->max_frame = conn->info.max_frame_bytes;
	al_response_free(resp);
	return 0;
}

void
al_conn_close(struct al_conn *conn)
{
	if (conn->fd != -1)
		close(conn->fd);
	conn->fd = -1;
	if (conn->ssh != NULL) {
		al_ssh_finish(conn->ssh);
		if (conn->err != NULL)
			al_ssh_explain(conn->ssh, conn->err);
		al_ssh_free(conn->ssh);
		conn->ssh = NULL;
	}
	free(conn->rbuf);
	/* What we sent an exec: its input, which may be secret. */
	wire_wipe(conn->wbuf, conn->wcap);
	free(conn->wbuf);
	conn->rbuf = conn->wbuf = NULL;
}

int
al_conn_queue(struct al_conn *conn, const AlRequest *req, struct al_error *err)
{
	uint8_t *buf;
	size_t len;

	if (wire_pack_request(req, &buf, &len) == -1) {
		al_set_error(err, AL_TOO_LARGE, "request above the frame limit");
		return -1;
	}
	if (conn->woff > 0 && conn->woff == conn->wlen)
		conn->woff = conn->wlen = 0;
	if (conn->wlen + len > conn->wcap) {
		size_t cap = conn->wcap == 0 ? 65536 : conn->wcap;
		uint8_t *nb;

		while (cap < conn->wlen + len)
			cap *= 2;
		/* Not realloc: the old buffer must be wiped, not abandoned. */
		if ((nb = malloc(cap)) == NULL) {
			wire_wipe(buf, len);
			free(buf);
			al_set_error(err, AL_IO, "out of memory");
			return -1;
		}
		if (conn->wlen > 0)
			memcpy(nb, conn->wbuf, conn->wlen);
		wire_wipe(conn->wbuf, conn->wcap);
		free(conn->wbuf);
		conn->wbuf = nb;
		conn->wcap = cap;
	}
	memcpy(conn->wbuf + conn->wlen, buf, len);
	conn->wlen += len;
	wire_wipe(buf, len);
	free(buf);
	return 0;
}

bool
al_conn_want_write(const struct al_conn *conn)
{
	return conn->woff < conn->wlen;
}

int
al_conn_flush(struct al_conn *conn, struct al_error *err)
{
	while (conn->woff < conn->wlen) {
		ssize_t n = send(conn->fd, conn->wbuf + conn->woff,
		    conn->wlen - conn->woff, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n == -1 && errno == EINTR && !al_interrupted())
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			al_set_errno(err, AL_CONNECT, "sending to agent-laned");
			return -1;
		}
		conn->woff += (size_t)n;
	}
	conn->woff = conn->wlen = 0;
	return 0;
}

int
al_conn_read_frame(struct al_conn *conn, AlResponse **out, struct al_error *err)
{
	for (;;) {
		uint32_t len;
		ssize_t n;

		if (conn->rlen >= WIRE_HEADER_SIZE) {
			len = wire_header_length(conn->rbuf);
			if (len > WIRE_MAX_FRAME) {
				al_set_error(err, AL_PROTOCOL, "oversized frame "
				    "from agent-laned");
				return -1;
			}
			if (conn->rlen >= WIRE_HEADER_SIZE + (size_t)len) {
				*out = wire_unpack_response(conn->rbuf +
				    WIRE_HEADER_SIZE, len);
				memmove(conn->rbuf, conn->rbuf +
				    WIRE_HEADER_SIZE + len, conn->rlen -
				    WIRE_HEADER_SIZE - len);
				conn->rlen -= WIRE_HEADER_SIZE + len;
				if (*out == NULL || (*out)->body_case ==
				    AGENTLANE__V1__RESPONSE__BODY__NOT_SET) {
					al_response_free(*out);
					al_set_error(err, AL_PROTOCOL,
					    "malformed frame from agent-laned");
					return -1;
				}
				return 1;
			}
		}
		if (conn->rcap < WIRE_HEADER_SIZE + WIRE_MAX_FRAME) {
			uint8_t *nb = realloc(conn->rbuf, WIRE_HEADER_SIZE +
			    WIRE_MAX_FRAME);

			if (nb == NULL) {
				al_set_error(err, AL_IO, "out of memory");
				return -1;
			}
			conn->rbuf = nb;
			conn->rcap = WIRE_HEADER_SIZE + WIRE_MAX_FRAME;
		}
		n = recv(conn->fd, conn->rbuf + conn->rlen,
		    conn->rcap - conn->rlen, MSG_DONTWAIT);
		if (n == -1 && errno == EINTR && !al_interrupted())
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0) {
			al_set_error(err, AL_CONNECT, "agent-laned closed the "
			    "connection%s", conn->rlen > 0 ?
			    " in the middle of a frame" : "");
			return -1;
		}
		conn->rlen += (size_t)n;
	}
}

void
al_lane_from_proto(struct al_lane *l, const Agentlane__V1__Lane *p)
{
	memset(l, 0, sizeof *l);
	snprintf(l->name, sizeof l->name, "%s", p->name != NULL ? p->name : "");
	l->state = (int)p->state;
	if (p->state == AGENTLANE__V1__LANE_STATE__POOLED && p->booting)
		l->state = AL_LANE_BOOTING;
	l->cpus = p->cpus;
	l->memory_mib = p->memory_mib;
	l->disk_gib = p->disk_gib;
	l->created_at_ms = p->created_at_ms;
	l->deadline_ms = p->deadline_ms;
	l->last_activity_ms = p->last_activity_ms;
	l->ended_at_ms = p->ended_at_ms;
	l->idle_timeout_s = p->idle_timeout_s;
	snprintf(l->workspace, sizeof l->workspace, "%s",
	    p->workspace != NULL ? p->workspace : "");
	snprintf(l->error, sizeof l->error, "%s", p->error != NULL ? p->error : "");
	snprintf(l->alias, sizeof l->alias, "%s", p->alias != NULL ? p->alias : "");
	l->owned = p->owned;
	for (size_t i = 0; i < p->n_labels && i < AL_LABELS_MAX; i++) {
		snprintf(l->labels[i].key, sizeof l->labels[i].key, "%s",
		    p->labels[i]->key != NULL ? p->labels[i]->key : "");
		snprintf(l->labels[i].value, sizeof l->labels[i].value, "%s",
		    p->labels[i]->value != NULL ? p->labels[i]->value : "");
		l->nlabels++;
	}
}

void
al_lane_net_from_proto(struct al_lane_net *n, const Agentlane__V1__Lane *p)
{
	memset(n, 0, sizeof *n);
	snprintf(n->name, sizeof n->name, "%s", p->name != NULL ? p->name : "");
	snprintf(n->network, sizeof n->network, "%s",
	    p->network != NULL ? p->network : "");
	snprintf(n->policy, sizeof n->policy, "%s",
	    p->network_policy != NULL ? p->network_policy : "");
	snprintf(n->note, sizeof n->note, "%s",
	    p->network_note != NULL ? p->network_note : "");
	n->sudo = p->sudo;
	n->proxy_port = p->proxy_port <= 65535 ? (uint16_t)p->proxy_port : 0;
	n->nallow = al_join_lines(n->allow, sizeof n->allow, p->allow,
	    p->n_allow, AL_ALLOW_MAX);
}

size_t
al_join_lines(char *dst, size_t cap, char *const *src, size_t n, size_t max)
{
	size_t off = 0, count = 0;

	for (size_t i = 0; i < n && count < max; i++) {
		size_t len = src[i] != NULL ? strlen(src[i]) : 0;

		if (len == 0 || strchr(src[i], '\n') != NULL ||
		    off + (off > 0) + len + 1 > cap)
			continue;
		if (off > 0)
			dst[off++] = '\n';
		memcpy(dst + off, src[i], len);
		off += len;
		count++;
	}
	dst[off] = '\0';
	return count;
}

AL_API enum al_code
al_hello(struct al_client *c, struct al_daemon_info *info, struct al_error *err)
{
	struct al_error local;
	struct al_conn conn;

	err = al_error_begin(err, &local);
	if (al_conn_open(c, &conn, NULL, err) == -1)
		return al_result(-1, err);
	if (info != NULL)
		*info = conn.info;
	al_conn_close(&conn);
	return AL_OK;
}
