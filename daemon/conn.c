#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "compat.h"
#include "conn.h"
#include "iobuf.h"
#include "laned.h"
#include "log.h"
#include "util.h"
#include "wire.h"

/*
 * After its last frame a connection lingers: the daemon shuts down its
 * writing side and throws away what the client still sends (input it was
 * writing when the call ended), so that the client reads the answer instead
 * of a reset. Bounded in time and bytes.
 */
#define CONN_LINGER_MS 2000
#define CONN_LINGER_BYTES (16u * 1024u * 1024u)
/*
 * How often a paused connection is checked for its peer's close where the
 * event backend cannot report it (EV_FEATURE_EARLY_CLOSE: epoll has it).
 */
#define CONN_HUP_POLL_MS 100
/* At shutdown, how long the final answers may take to go out, in all. */
#define CONN_SHUTDOWN_FLUSH_MS 1000

enum conn_state {
	CONN_HELLO,	/* waiting for Hello */
	CONN_REQUEST,	/* waiting for the one call */
	CONN_CALL,	/* a handler owns the connection */
	CONN_FLUSH,	/* call over; closing once output is written */
	CONN_LINGER,	/* output written and shut down; discarding input */
	CONN_DEAD,	/* freed at the next loop turn */
};

struct conn {
	struct laned *d;
	uint64_t id;
	uid_t uid;
	struct bufferevent *bev;
	enum conn_state state;
	bool paused;
	/*
	 * While input is paused the bufferevent does not read, so it would
	 * not see the end of the stream either: this watches for the peer's
	 * close on its own (EV_CLOSED, or a timer where the backend lacks it).
	 */
	struct event *hup;
	struct event *timer;	/* request timeout, linger, deferred free */
	size_t lingered;	/* input bytes discarded while lingering */
	/* A handler took input after the request (exec, copy-in). */
	bool streamed;
	const struct conn_handler *handler;
	void *ctx;
	TAILQ_ENTRY(conn) entry;
};

static void conn_read_cb(struct bufferevent *, void *);
static void conn_write_cb(struct bufferevent *, void *);
static void conn_event_cb(struct bufferevent *, short, void *);
static void conn_fail(struct conn *, int, const char *, ...)
    __attribute__((format(printf, 3, 4)));

size_t
conn_output_len(const struct conn *c)
{
	return evbuffer_get_length(bufferevent_get_output(c->bev));
}

static void
conn_free_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	TAILQ_REMOVE(&c->d->conns, c, entry);
	c->d->nconns--;
	event_free(c->hup);
	bufferevent_free(c->bev);	/* closes the socket */
	event_free(c->timer);
	log_debug("conn %llu: closed", (unsigned long long)c->id);
	free(c);
}

/*
 * Tells the handler (once) and frees the connection at the next turn of the
 * loop, so that no caller up the stack is left holding a freed pointer.
 */
static void
conn_kill(struct conn *c)
{
	const struct conn_handler *h = c->handler;
	struct timeval now = { 0, 0 };

	if (c->state == CONN_DEAD)
		return;
	c->state = CONN_DEAD;
	c->handler = NULL;
	bufferevent_disable(c->bev, EV_READ | EV_WRITE);
	event_del(c->hup);
	if (h != NULL && h->closed != NULL)
		h->closed(c, c->ctx);
	evtimer_del(c->timer);
	event_assign(c->timer, c->d->base, -1, 0, conn_free_cb, c);
	if (evtimer_add(c->timer, &now) != 0)
		fatalx("evtimer_add");
}

static void
conn_linger_cb(evutil_socket_t fd, short what, void *arg)
{
	conn_kill(arg);
}

static void
conn_linger(struct conn *c)
{
	struct timeval tv = {
		CONN_LINGER_MS / 1000, (CONN_LINGER_MS % 1000) * 1000
	};

	/*
	 * A call that took no input after its request, whose client has
	 * sent nothing more: close now. The answer is in the client's
	 * receive queue already (a Unix socket), and with nothing unread on
	 * our side the close cannot turn into a reset that would discard it.
	 * Lingering (shutdown, then waiting for the client's end) is for
	 * calls whose client may still be sending, such as an exec's stdin.
	 */
	if (!c->streamed && evbuffer_get_length(bufferevent_get_input(c->bev))
	    == 0 && compat_unread(bufferevent_getfd(c->bev)) == 0) {
		conn_kill(c);
		return;
	}
	c->state = CONN_LINGER;
	if (shutdown(bufferevent_getfd(c->bev), SHUT_WR) == -1) {
		conn_kill(c);
		return;
	}
	evtimer_del(c->timer);
	event_assign(c->timer, c->d->base, -1, 0, conn_linger_cb, c);
	if (evtimer_add(c->timer, &tv) != 0)
		fatalx("evtimer_add");
	c->paused = false;
	event_del(c->hup);
	if (bufferevent_enable(c->bev, EV_READ) != 0)
		fatalx("bufferevent_enable");
}

static void
conn_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	log_warnx("conn %llu: no request within %llu ms; closing",
	    (unsigned long long)c->id,
	    (unsigned long long)c->d->cfg.request_timeout_ms);
	conn_fail(c, AGENTLANE__V1__ERROR_CODE__DEADLINE_EXCEEDED,
	    "no request received in time");
}

static void
conn_hup_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	if (!(what & EV_CLOSED) &&
	    compat_peer_closed(bufferevent_getfd(c->bev)) == 0)
		return;
	log_debug("conn %llu: peer closed while its input was paused",
	    (unsigned long long)c->id);
	conn_kill(c);
}

/*
 * A client writes its hello and request as soon as it is connected, so by
 * the time we accept, a small call is usually all there: serve it now,
 * without a trip through the event loop (no readiness registration, no
 * wait). Whatever else there is, or nothing yet, the bufferevent reads as
 * usual. A small stack buffer: a 256 KiB chain would cost more to wipe.
 */
static void
conn_read_early(struct conn *c, int fd)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	uint8_t buf[4096];
	ssize_t n;

	if ((n = read(fd, buf, sizeof buf)) <= 0)
		return;		/* EOF and errors: the bufferevent sees them too */
	evbuffer_unfreeze(in, 0);
	if (evbuffer_add(in, buf, (size_t)n) != 0)
		fatalx("evbuffer_add");
	evbuffer_freeze(in, 0);
	wire_wipe(buf, (size_t)n);	/* an Exec carries secrets */
	conn_read_cb(c->bev, c);
	/*
	 * Served and closed: nothing up the stack (the listener) holds the
	 * connection, so it goes now rather than at the next loop turn.
	 */
	if (c->state == CONN_DEAD) {
		evtimer_del(c->timer);
		conn_free_cb(-1, 0, c);
	}
}

void
conn_accept(struct laned *d, int fd, uid_t uid)
{
	struct conn *c;
	struct timeval tv;

	/* Non-blocking already: compat_accept_cloexec makes it so. */
	compat_nosigpipe(fd);
	c = xcalloc(1, sizeof *c);
	c->d = d;
	c->id = ++d->next_conn_id;
	c->uid = uid;
	c->state = CONN_HELLO;
	c->bev = bufferevent_socket_new(d->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(d->base, conn_timeout_cb, c);
	if (event_base_get_features(d->base) & EV_FEATURE_EARLY_CLOSE)
		c->hup = event_new(d->base, fd, EV_CLOSED | EV_PERSIST,
		    conn_hup_cb, c);
	else
		c->hup = event_new(d->base, -1, EV_PERSIST, conn_hup_cb, c);
	if (c->bev == NULL || c->timer == NULL || c->hup == NULL)
		fatalx("conn: out of memory");
	TAILQ_INSERT_TAIL(&d->conns, c, entry);
	d->nconns++;

	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	/*
	 * Read at most one maximal frame ahead; the write low-water mark is
	 * where paused producers resume.
	 */
	bufferevent_setwatermark(c->bev, EV_READ, 0,
	    d->cfg.max_frame_bytes + WIRE_HEADER_SIZE);
	bufferevent_setwatermark(c->bev, EV_WRITE, CONN_OUTPUT_LOW, 0);
	/* libevent moves 16 KiB per callback by default: too little for copies. */
	if (bufferevent_set_max_single_read(c->bev, CONN_IO_CHUNK) != 0 ||
	    bufferevent_set_max_single_write(c->bev, CONN_IO_CHUNK) != 0)
		fatalx("bufferevent_set_max_single_*");
	if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) != 0)
		fatalx("bufferevent_enable");
	tv = tv_from_ms(d->cfg.request_timeout_ms);
	if (evtimer_add(c->timer, &tv) != 0)
		fatalx("evtimer_add");
	log_debug("conn %llu: accepted (uid %ld)", (unsigned long long)c->id,
	    (long)uid);

	if (d->nconns > d->cfg.max_connections) {
		log_warnx("conn %llu: refused, %u connections open",
		    (unsigned long long)c->id, d->cfg.max_connections);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED,
		    "too many connections (max_connections = %u)",
		    d->cfg.max_connections);
		return;
	}
	conn_read_early(c, fd);
}

void
conn_set_handler(struct conn *c, const struct conn_handler *h, void *ctx)
{
	c->handler = h;
	c->ctx = ctx;
	if (h != NULL && h->input != NULL)
		c->streamed = true;
}

int
conn_send(struct conn *c, const AlResponse *resp)
{
	uint8_t *buf;
	size_t len;

	if (c->state == CONN_DEAD || c->state == CONN_FLUSH ||
	    c->state == CONN_LINGER)
		return -1;
	if (wire_pack_response(resp, &buf, &len) == -1) {
		log_warnx("conn %llu: response too large to send",
		    (unsigned long long)c->id);
		return -1;
	}
	if (bufferevent_write(c->bev, buf, len) != 0) {
		free(buf);
		conn_kill(c);
		return -1;
	}
	free(buf);
	return 0;
}

void
conn_finish(struct conn *c)
{
	if (c->state == CONN_DEAD || c->state == CONN_FLUSH ||
	    c->state == CONN_LINGER)
		return;
	c->state = CONN_FLUSH;
	c->handler = NULL;
	bufferevent_disable(c->bev, EV_READ);
	evtimer_del(c->timer);
	/*
	 * A small answer goes out now rather than on the next turn of the
	 * loop: no wait for writability, and for most calls the connection
	 * is done here. What does not fit is left to the bufferevent.
	 */
	if (conn_output_len(c) > 0 && conn_output_len(c) <= CONN_IO_CHUNK) {
		struct evbuffer *out = bufferevent_get_output(c->bev);

		evbuffer_unfreeze(out, 1);
		(void)evbuffer_write(out, bufferevent_getfd(c->bev));
		evbuffer_freeze(out, 1);
	}
	if (conn_output_len(c) == 0)
		conn_linger(c);
}

static void __attribute__((format(printf, 3, 0)))
conn_error_v(struct conn *c, int code, const char *fmt, va_list ap)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__Error e = AGENTLANE__V1__ERROR__INIT;
	char msg[512];

	vsnprintf(msg, sizeof msg, fmt, ap);
	e.code = (Agentlane__V1__ErrorCode)code;
	e.message = msg;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_ERROR;
	resp.error = &e;
	(void)conn_send(c, &resp);
	conn_finish(c);
}

void
conn_send_error(struct conn *c, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	conn_error_v(c, code, fmt, ap);
	va_end(ap);
}

/*
 * A protocol violation found by the connection itself: the handler that owns
 * the call (if any) is told first, then the client gets a typed error.
 */
static void
conn_fail(struct conn *c, int code, const char *fmt, ...)
{
	const struct conn_handler *h = c->handler;
	va_list ap;

	c->handler = NULL;
	if (h != NULL && h->closed != NULL)
		h->closed(c, c->ctx);
	va_start(ap, fmt);
	conn_error_v(c, code, fmt, ap);
	va_end(ap);
}

void
conn_pause_input(struct conn *c, bool paused)
{
	if (c->state == CONN_DEAD || c->state == CONN_FLUSH ||
	    c->state == CONN_LINGER || c->paused == paused)
		return;
	c->paused = paused;
	if (paused) {
		struct timeval tv = tv_from_ms(CONN_HUP_POLL_MS);

		bufferevent_disable(c->bev, EV_READ);
		if (event_add(c->hup, event_get_fd(c->hup) == -1 ? &tv :
		    NULL) != 0)
			fatalx("event_add");
	} else {
		event_del(c->hup);
		if (bufferevent_enable(c->bev, EV_READ) != 0)
			fatalx("bufferevent_enable");
		/* Frames may already be buffered: parse them now. */
		conn_read_cb(c->bev, c);
	}
}

void
conn_limits(const struct config *cfg, Agentlane__V1__Limits *lim)
{
	lim->max_frame_bytes = cfg->max_frame_bytes;
	lim->max_lanes = cfg->max_lanes;
	lim->default_cpus = cfg->default_cpus;
	lim->max_cpus = cfg->max_cpus;
	lim->default_memory_mib = cfg->default_memory_mib;
	lim->max_memory_mib = cfg->max_memory_mib;
	lim->default_disk_gib = cfg->default_disk_gib;
	lim->max_disk_gib = cfg->max_disk_gib;
	lim->default_lifetime_s = cfg->default_lifetime_ms / 1000;
	lim->max_lifetime_s = cfg->max_lifetime_ms / 1000;
	lim->max_exec_timeout_s = cfg->max_exec_timeout_ms / 1000;
	lim->max_copy_out_bytes = cfg->max_copy_out_bytes;
	lim->default_idle_timeout_s = cfg->default_idle_timeout_ms / 1000;
	lim->max_connections = cfg->max_connections;
	lim->max_execs_per_lane = cfg->max_execs_per_lane;
	lim->max_images = cfg->max_images;
	lim->max_env_bytes = cfg->max_env_bytes;
}

static void
conn_hello(struct conn *c, const AlRequest *req)
{
	AlResponse resp = AGENTLANE__V1__RESPONSE__INIT;
	Agentlane__V1__HelloReply hr = AGENTLANE__V1__HELLO_REPLY__INIT;
	Agentlane__V1__Limits lim = AGENTLANE__V1__LIMITS__INIT;
	const struct config *cfg = &c->d->cfg;

	if (req->body_case != AGENTLANE__V1__REQUEST__BODY_HELLO) {
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
		    "the first frame must be a hello");
		return;
	}
	if (req->hello->protocol_version != WIRE_PROTOCOL_VERSION) {
		log_warnx("conn %llu: protocol version %u, want %u",
		    (unsigned long long)c->id, req->hello->protocol_version,
		    WIRE_PROTOCOL_VERSION);
		conn_send_error(c, AGENTLANE__V1__ERROR_CODE__VERSION_MISMATCH,
		    "agent-laned speaks protocol version %u, the client %u",
		    WIRE_PROTOCOL_VERSION, req->hello->protocol_version);
		return;
	}
	conn_limits(cfg, &lim);
	hr.protocol_version = WIRE_PROTOCOL_VERSION;
	hr.daemon_version = (char *)AGENT_LANE_VERSION;
	hr.limits = &lim;
	hr.pid = (uint32_t)c->d->pid;
	hr.started_at_ms = c->d->started_at_ms;
	hr.state_dir = cfg->state_dir;
	resp.body_case = AGENTLANE__V1__RESPONSE__BODY_HELLO;
	resp.hello = &hr;
	if (conn_send(c, &resp) == 0)
		c->state = CONN_REQUEST;
}

static void
conn_frame(struct conn *c, const AlRequest *req)
{
	switch (c->state) {
	case CONN_HELLO:
		conn_hello(c, req);
		break;
	case CONN_REQUEST:
		evtimer_del(c->timer);
		c->state = CONN_CALL;
		c->d->dispatch(c->d, c, req);
		break;
	case CONN_CALL:
		if (c->handler == NULL || c->handler->input == NULL) {
			conn_fail(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "unexpected frame during this call");
			break;
		}
		c->handler->input(c, req, c->ctx);
		break;
	default:
		break;
	}
}

static bool
conn_frame_buffered(struct evbuffer *in)
{
	uint8_t hdr[WIRE_HEADER_SIZE];

	return evbuffer_copyout(in, hdr, sizeof hdr) == (ssize_t)sizeof hdr &&
	    evbuffer_get_length(in) >= WIRE_HEADER_SIZE +
	    (size_t)wire_header_length(hdr);
}

static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t hdr[WIRE_HEADER_SIZE], *payload;
	uint32_t len;
	AlRequest *req;

	if (c->state == CONN_LINGER) {
		c->lingered += evbuffer_get_length(in);
		evbuffer_drain(in, evbuffer_get_length(in));
		if (c->lingered > CONN_LINGER_BYTES)
			conn_kill(c);
		return;
	}
	/*
	 * Unless a whole hello or request is here already (a small call:
	 * both in one read), take what else is there, up to one maximal
	 * frame: a large frame then costs one callback, not one per 256 KiB.
	 * During a call (an exec's input, a copy) always: that is a stream.
	 * End of stream and errors are left for the bufferevent to find on
	 * its next read. Its input buffer is frozen at the end for everyone
	 * else, as libevent's own reader does, unfreeze it just for this.
	 */
	if (!c->paused && c->state != CONN_DEAD && c->state != CONN_FLUSH &&
	    (c->state == CONN_CALL || !conn_frame_buffered(in))) {
		evbuffer_unfreeze(in, 0);
		(void)iobuf_fill(in, bufferevent_getfd(bev),
		    c->d->cfg.max_frame_bytes + WIRE_HEADER_SIZE);
		evbuffer_freeze(in, 0);
	}
	while (!c->paused && (c->state == CONN_HELLO ||
	    c->state == CONN_REQUEST || c->state == CONN_CALL)) {
		if (evbuffer_copyout(in, hdr, sizeof hdr) < (ssize_t)sizeof hdr)
			return;
		len = wire_header_length(hdr);
		if (len > c->d->cfg.max_frame_bytes) {
			log_warnx("conn %llu: frame of %u bytes above the cap "
			    "of %u; closing", (unsigned long long)c->id, len,
			    c->d->cfg.max_frame_bytes);
			conn_fail(c, AGENTLANE__V1__ERROR_CODE__TOO_LARGE,
			    "frame of %u bytes exceeds the cap of %u bytes",
			    len, c->d->cfg.max_frame_bytes);
			return;
		}
		if (evbuffer_get_length(in) < WIRE_HEADER_SIZE + (size_t)len)
			return;
		evbuffer_drain(in, WIRE_HEADER_SIZE);
		payload = evbuffer_pullup(in, len);
		if (len > 0 && payload == NULL)
			fatalx("evbuffer_pullup");
		req = wire_unpack_request(payload, len);
		/*
		 * An Exec carries environment values, a CreateLane secrets:
		 * not left in the buffer.
		 */
		if (req != NULL &&
		    (req->body_case == AGENTLANE__V1__REQUEST__BODY_EXEC ||
		    req->body_case == AGENTLANE__V1__REQUEST__BODY_CREATE_LANE))
			wire_wipe(payload, len);
		evbuffer_drain(in, len);
		if (req == NULL || req->body_case ==
		    AGENTLANE__V1__REQUEST__BODY__NOT_SET) {
			log_warnx("conn %llu: malformed frame; closing",
			    (unsigned long long)c->id);
			if (req != NULL)
				agentlane__v1__request__free_unpacked(req, NULL);
			conn_fail(c,
			    AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT,
			    "malformed frame");
			return;
		}
		conn_frame(c, req);
		agentlane__v1__request__free_unpacked(req, NULL);
	}
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->state == CONN_FLUSH && conn_output_len(c) == 0) {
		conn_linger(c);
		return;
	}
	if (c->state == CONN_CALL && c->handler != NULL &&
	    c->handler->drained != NULL)
		c->handler->drained(c, c->ctx);
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;

	if (c->state == CONN_LINGER) {
		conn_kill(c);	/* the client closed (or reset) after our answer */
		return;
	}
	if (what & BEV_EVENT_EOF) {
		if (evbuffer_get_length(bufferevent_get_input(bev)) > 0)
			log_warnx("conn %llu: truncated frame at end of stream",
			    (unsigned long long)c->id);
		else
			log_debug("conn %llu: peer closed",
			    (unsigned long long)c->id);
	} else if (what & BEV_EVENT_ERROR)
		log_debug("conn %llu: %s", (unsigned long long)c->id,
		    strerror(EVUTIL_SOCKET_ERROR()));
	conn_kill(c);
}

static uint64_t
conn_mono_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		fatal("clock_gettime");
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Writes what is queued for the client, waiting for it to read until the
 * shared deadline at most: the daemon is exiting, so this blocks.
 */
static void
conn_flush_now(struct conn *c, uint64_t deadline_ms)
{
	struct evbuffer *out = bufferevent_get_output(c->bev);
	int fd = bufferevent_getfd(c->bev);
	uint64_t now;

	/* The bufferevent freezes its output's start for its own writer. */
	evbuffer_unfreeze(out, 1);
	while (evbuffer_get_length(out) > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };

		if (evbuffer_write(out, fd) >= 0)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			break;
		if ((now = conn_mono_ms()) >= deadline_ms)
			break;
		if (poll(&pfd, 1, (int)(deadline_ms - now)) == -1 &&
		    errno != EINTR)
			break;
	}
	evbuffer_freeze(out, 1);
}

void
conn_close_all(struct laned *d)
{
	uint64_t deadline = conn_mono_ms() + CONN_SHUTDOWN_FLUSH_MS;
	struct conn *c;

	/*
	 * A call still in flight is told why it ends, as docs/protocol.md
	 * promises, rather than seeing a bare close; answers already queued
	 * (calls cancelled by the lanes going away) go out too, for as long
	 * as the clients read within the deadline.
	 */
	TAILQ_FOREACH(c, &d->conns, entry) {
		if (c->state == CONN_HELLO || c->state == CONN_REQUEST ||
		    c->state == CONN_CALL)
			conn_fail(c, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE,
			    "agent-laned is shutting down");
		if (c->state != CONN_DEAD)
			conn_flush_now(c, deadline);
		conn_kill(c);
	}
}
