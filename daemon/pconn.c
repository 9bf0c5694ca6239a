/*
 * The lane proxy's connection layer (see pconn.h): a guest connection and
 * its upstream as bufferevents, the timers, the byte caps, opaque
 * splicing with watermarks, refusals and the rate-bounded records. It
 * knows nothing of HTTP beyond writing a refusal, and calls no layer
 * above it: a state owned by one (interception, relay) carries its
 * callback in the connection.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>

#include "log.h"
#include "pconn.h"
#include "util.h"
#include "wire.h"

static void splice_write_cb(struct bufferevent *, void *);

/* Every state change goes here, so that nheads counts PS_HEAD exactly. */
void
pconn_state(struct pconn *c, enum pstate st)
{
	if (c->st == PS_HEAD && st != PS_HEAD)
		c->px->nheads--;
	else if (c->st != PS_HEAD && st == PS_HEAD)
		c->px->nheads++;
	c->st = st;
}

/*
 * A failed event_add or bufferevent_enable leaves a connection that no
 * callback will ever move again: it is closed instead (false; c freed).
 */
bool
pconn_enable(struct pconn *c, struct bufferevent *bev, short what)
{
	if (bufferevent_enable(bev, what) == 0)
		return true;
	log_warnx("proxy: bufferevent_enable failed; connection closed");
	pconn_free(c);
	return false;
}

bool
pconn_timer(struct pconn *c, uint64_t ms)
{
	struct timeval tv = tv_from_ms(ms);

	if (event_add(c->idle, &tv) == 0)
		return true;
	log_warnx("proxy: event_add failed; connection closed");
	pconn_free(c);
	return false;
}

void
px_record(struct proxy *px, const char *event, const char *fmt, ...)
{
	char detail[512];
	va_list ap;
	int64_t now = time_now_ms();

	if (now - px->window_start >= 60000) {
		if (px->suppressed > 0) {
			char s[96];
			snprintf(s, sizeof(s), "%llu records dropped (over %u a minute)",
			    (unsigned long long)px->suppressed,
			    px->lim.max_events_per_min);
			px->record(px->record_arg, "proxy-suppressed", s);
		}
		px->window_start = now;
		px->window_count = 0;
		px->suppressed = 0;
	}
	if (px->window_count >= px->lim.max_events_per_min) {
		px->suppressed++;
		return;
	}
	px->window_count++;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	str_sanitize(detail);
	px->record(px->record_arg, event, detail);
}

void
pconn_free_event_cb(struct bufferevent *bev, short what, void *arg)
{
	pconn_free(arg);
}

void
pconn_closing_write_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	if (c->st == PS_CLOSING &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		pconn_free(c);
}

/* Answers the client and closes once the answer is written. */
void
pconn_refuse(struct pconn *c, int status, const char *reason)
{
	const char *text = status == 403 ? "Forbidden" :
	    status == 400 ? "Bad Request" : status == 405 ? "Method Not Allowed" :
	    status == 408 ? "Request Timeout" : status == 414 ? "URI Too Long" :
	    status == 431 ? "Request Header Fields Too Large" :
	    status == 502 ? "Bad Gateway" : status == 503 ? "Service Unavailable" :
	    status == 504 ? "Gateway Timeout" : status == 505 ?
	    "HTTP Version Not Supported" : "Error";

	if (c->up != NULL) {
		bufferevent_free(c->up);
		c->up = NULL;
	}
	pconn_state(c, PS_CLOSING);
	(void)bufferevent_disable(c->cli, EV_READ);
	if (evbuffer_add_printf(bufferevent_get_output(c->cli),
	    "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
	    "Content-Length: %zu\r\n\r\n%s\n", status, text, strlen(reason) + 1,
	    reason) < 0) {
		pconn_free(c);
		return;
	}
	bufferevent_setwatermark(c->cli, EV_WRITE, 0, 0);
	bufferevent_setcb(c->cli, NULL, pconn_closing_write_cb, pconn_free_event_cb, c);
	/* A client that never reads its answer is closed at idle_ms. */
	if (pconn_timer(c, c->px->lim.idle_ms))
		(void)pconn_enable(c, c->cli, EV_WRITE);
}

void
pconn_deny(struct pconn *c, const struct proxypolicy_decision *d)
{
	if (d->what)
		px_record(c->px, d->event, "%s: %s", c->what, d->detail);
	else
		px_record(c->px, d->event, "%s", d->detail);
	pconn_refuse(c, d->status, d->why);
}

/* False: c is freed. */
bool
idle_touch(struct pconn *c)
{
	return pconn_timer(c, c->px->lim.idle_ms);
}

/*
 * The head's deadline is fixed at accept and reads never extend it: a
 * client that drips a byte now and then would otherwise hold its slot for
 * ever. It is never longer than the idle time.
 */
uint64_t
head_ms(const struct proxy *px)
{
	return px->lim.head_ms < px->lim.idle_ms ? px->lim.head_ms :
	    px->lim.idle_ms;
}

void
pconn_idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;

	if (c->st == PS_HEAD) {
		px_record(c->px, "proxy-deny", "request head not complete "
		    "within %llu ms", (unsigned long long)head_ms(c->px));
		pconn_refuse(c, 408, "request timeout");
		return;
	}
	if (c->st == PS_RESOLVE || c->st == PS_CONNECT || c->st == PS_UPTLS) {
		px_record(c->px, "proxy-fail", "%s: upstream did not answer in time",
		    c->what);
		pconn_refuse(c, 504, "upstream timeout");
		return;
	}
	if ((c->st == PS_CLITLS || c->st == PS_HTTP) && c->on_idle != NULL) {
		c->on_idle(c);
		return;
	}
	/* Idle splice or a client that never reads its refusal. */
	pconn_free(c);
}

/*
 * Moves what src has read to dst, up to the byte caps; at a cap the bytes
 * within it still go across and the connection then closes. False: c is
 * freed.
 */
bool
splice_move(struct pconn *c, struct bufferevent *src, struct bufferevent *dst)
{
	struct proxy *px = c->px;
	struct evbuffer *in = bufferevent_get_input(src);
	size_t n = evbuffer_get_length(in);
	uint64_t room_c = px->lim.max_conn_bytes - c->bytes;
	uint64_t room_l = px->lim.max_lane_bytes - px->bytes;
	uint64_t room = room_c < room_l ? room_c : room_l;

	if (n == 0)
		return true;
	if (n > room) {
		px_record(px, "proxy-limit", "%s: closed at %llu bytes (%s cap)",
		    c->what, (unsigned long long)(c->bytes + room),
		    room_c <= room_l ? "connection" : "lane");
		c->bytes += room;
		px->bytes += room;
		evbuffer_remove_buffer(in, bufferevent_get_output(dst), (size_t)room);
		/* Flush what fits, then close (PS_CLOSING frees when written). */
		pconn_state(c, PS_CLOSING);
		(void)bufferevent_disable(src, EV_READ);
		if (src == c->cli) {
			bufferevent_free(c->cli);
			c->cli = NULL;
		} else {
			bufferevent_free(c->up);
			c->up = NULL;
		}
		if (evbuffer_get_length(bufferevent_get_output(dst)) == 0) {
			pconn_free(c);
			return false;
		}
		(void)bufferevent_disable(dst, EV_READ);
		bufferevent_setwatermark(dst, EV_WRITE, 0, 0);
		(void)pconn_enable(c, dst, EV_WRITE);
		return false;
	}
	c->bytes += n;
	px->bytes += n;
	if (evbuffer_remove_buffer(in, bufferevent_get_output(dst), n) !=
	    (int)n) {
		pconn_free(c);
		return false;
	}
	if (!idle_touch(c))
		return false;
	/* Back-pressure: stop reading until dst has written some out. */
	if (evbuffer_get_length(bufferevent_get_output(dst)) >= SPLICE_HIGH)
		(void)bufferevent_disable(src, EV_READ);
	return true;
}

static void
splice_read_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	if (c->st != PS_SPLICE)
		return;
	(void)splice_move(c, bev, bev == c->cli ? c->up : c->cli);
}

/* dst drained below the low watermark: resume reading the other side. */
static void
splice_write_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;
	struct bufferevent *other = bev == c->cli ? c->up : c->cli;

	if (c->st == PS_CLOSING) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			pconn_free(c);
		return;
	}
	if (c->st == PS_SPLICE && other != NULL)
		(void)pconn_enable(c, other, EV_READ);
}

/* One side ended: flush what the other side still has to write, then close. */
static void
splice_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;
	struct bufferevent *other = bev == c->cli ? c->up : c->cli;

	if (c->st == PS_CLOSING || other == NULL ||
	    (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) == 0) {
		if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
			pconn_free(c);
		return;
	}
	/* Whatever bev read before its end still goes across. */
	if (!splice_move(c, bev, other) || c->st == PS_CLOSING)
		return;
	pconn_close_side(c, bev);
}

void
pconn_close_side(struct pconn *c, struct bufferevent *bev)
{
	struct bufferevent *other = bev == c->cli ? c->up : c->cli;

	pconn_state(c, PS_CLOSING);
	bufferevent_free(bev);
	if (bev == c->cli)
		c->cli = NULL;
	else
		c->up = NULL;
	if (other == NULL ||
	    evbuffer_get_length(bufferevent_get_output(other)) == 0) {
		pconn_free(c);
		return;
	}
	(void)bufferevent_disable(other, EV_READ);
	bufferevent_setwatermark(other, EV_WRITE, 0, 0);
	(void)pconn_enable(c, other, EV_WRITE);
}

void
splice_start(struct pconn *c)
{
	pconn_state(c, PS_SPLICE);
	bufferevent_set_timeouts(c->up, NULL, NULL);
	bufferevent_setwatermark(c->cli, EV_READ, 0, SPLICE_HIGH);
	bufferevent_setwatermark(c->up, EV_READ, 0, SPLICE_HIGH);
	bufferevent_setwatermark(c->cli, EV_WRITE, SPLICE_LOW, 0);
	bufferevent_setwatermark(c->up, EV_WRITE, SPLICE_LOW, 0);
	bufferevent_setcb(c->cli, splice_read_cb, splice_write_cb,
	    splice_event_cb, c);
	bufferevent_setcb(c->up, splice_read_cb, splice_write_cb,
	    splice_event_cb, c);
	if (!idle_touch(c) || !pconn_enable(c, c->up, EV_READ | EV_WRITE) ||
	    !pconn_enable(c, c->cli, EV_READ | EV_WRITE))
		return;
	/* Bytes the client sent after its head (a TLS hello, a body). */
	(void)splice_move(c, c->cli, c->up);
}

void
pconn_free(struct pconn *c)
{
	struct proxy *px = c->px;

	if (c->dnsreq != NULL) {
		struct evdns_getaddrinfo_request *r = c->dnsreq;
		c->dnsreq = NULL;
		evdns_getaddrinfo_cancel(r);	/* its callback sees CANCEL */
	}
	if (c->cli != NULL)
		bufferevent_free(c->cli);
	if (c->up != NULL)
		bufferevent_free(c->up);
	if (c->idle != NULL)
		event_free(c->idle);
	if (c->deadline != NULL)
		event_free(c->deadline);
	proxyresp_free(c->resp);
	if (c->fwd != NULL)
		wire_wipe(c->fwd, c->fwdlen);
	free(c->fwd);
	pconn_state(c, PS_CLOSING);
	TAILQ_REMOVE(&px->conns, c, entry);
	px->nconns--;
	free(c);
}

/* Counts n bytes against the caps; false: over (c is freed). */
bool
pconn_count(struct pconn *c, size_t n)
{
	struct proxy *px = c->px;

	if (c->bytes + n > px->lim.max_conn_bytes ||
	    px->bytes + n > px->lim.max_lane_bytes) {
		px_record(px, "proxy-limit", "%s: closed at %llu bytes (%s cap)",
		    c->what, (unsigned long long)c->bytes,
		    c->bytes + n > px->lim.max_conn_bytes ? "connection" :
		    "lane");
		pconn_free(c);
		return false;
	}
	c->bytes += n;
	px->bytes += n;
	return true;
}
