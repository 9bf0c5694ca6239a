/*
 * The lane proxy's request relay (see proxyhttp.h), above its connection
 * layer (pconn.h). In PS_HTTP each request head of an intercepted tunnel
 * is parsed (proxyreq_parse_origin), decided on (proxypolicy_decide: Host
 * names the target, placeholders only where they may go), and written
 * again (proxyfwd_head: framing from what was parsed, values in credential
 * headers); its body is framed again and scanned (proxyfwd_body_feed), so
 * that the upstream reads the requests the proxy read. Every byte of the
 * responses goes through proxyresp_feed (values redacted, unscannable
 * bodies refused) and on to the guest as it comes. A plain http://
 * request (proxy.c wrote its head) enters PS_HTTP too, for its body only,
 * and its response is spliced back as it comes.
 */
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "pconn.h"
#include "proxyhttp.h"
#include "secret.h"
#include "util.h"
#include "wire.h"

static void http_pump(struct pconn *);
static void deadline_cb(evutil_socket_t, short, void *);
static bool resp_move(struct pconn *, bool);
static void resp_record(struct pconn *, bool);
static void http_idle(struct pconn *);
static void http_read_cb(struct bufferevent *, void *);
static void http_write_cb(struct bufferevent *, void *);
static void http_event_cb(struct bufferevent *, short, void *);

static const char *
secret_name(const struct proxy *px, int i)
{
	return px->secrets->v[i].name;
}

void
phttp_enter(struct pconn *c)
{
	if (c->intercept && c->resp == NULL && (c->resp =
	    proxyresp_new(c->px->secrets, PROXY_RESP_HEAD_MAX)) == NULL) {
		pconn_free(c);
		return;
	}
	pconn_state(c, PS_HTTP);
	c->on_idle = http_idle;
	bufferevent_setwatermark(c->cli, EV_READ, 0, c->px->lim.max_header_bytes >
	    SPLICE_HIGH ? c->px->lim.max_header_bytes : SPLICE_HIGH);
	bufferevent_setwatermark(c->up, EV_READ, 0, SPLICE_HIGH);
	bufferevent_setwatermark(c->cli, EV_WRITE, SPLICE_LOW, 0);
	bufferevent_setwatermark(c->up, EV_WRITE, SPLICE_LOW, 0);
	bufferevent_setcb(c->cli, http_read_cb, http_write_cb, http_event_cb, c);
	bufferevent_setcb(c->up, http_read_cb, http_write_cb, http_event_cb, c);
	if ((c->deadline = evtimer_new(c->px->base, deadline_cb, c)) == NULL) {
		pconn_free(c);
		return;
	}
	/*
	 * The first head of a tunnel is due within head_ms of the handshake,
	 * as a connection's is from accept; later ones from their first byte.
	 */
	if (c->rq == RQ_HEAD) {
		struct timeval tv = tv_from_ms(head_ms(c->px));
		if (evtimer_add(c->deadline, &tv) != 0) {
			pconn_free(c);
			return;
		}
	}
	if (!idle_touch(c) || !pconn_enable(c, c->up, EV_READ | EV_WRITE) ||
	    !pconn_enable(c, c->cli, EV_READ | EV_WRITE))
		return;
	http_pump(c);
}

void
phttp_start_plain(struct pconn *c)
{
	if (bufferevent_write(c->up, c->fwd, c->fwdlen) != 0) {
		pconn_free(c);
		return;
	}
	c->bytes += c->fwdlen;
	c->px->bytes += c->fwdlen;
	c->px->requests++;
	c->rreq = c->req;
	proxyfwd_body_init(&c->fbody, &c->rreq);
	c->rq = RQ_BODY;
	phttp_enter(c);
}

/* The body ended: placeholders seen in it to hosts not theirs, recorded. */
static void
body_end(struct pconn *c)
{
	const struct secret_set *set = c->px->secrets;

	for (size_t i = 0; set != NULL && i < set->n; i++)
		if ((c->fbody.scan.found & ((proxysecret_mask)1 << i)) &&
		    !secret_host_match(&set->v[i], c->req.host))
			px_record(c->px, "secret-body", "secret %s seen in a "
			    "request body to %s: recorded", set->v[i].name,
			    c->req.host);
	memset(&c->fbody.scan, 0, sizeof(c->fbody.scan));
	c->rq = c->rreq.close || !c->intercept ? RQ_DONE : RQ_HEAD;
}

/* One request head of an intercepted connection; false: c is closing. */
static bool
http_head(struct pconn *c, const char *buf, size_t hl)
{
	struct proxy *px = c->px;
	struct proxyfwd_head h;
	struct proxypolicy_query q = {
		.stage = PROXYPOLICY_REQUEST, .pol = &px->pol,
		.secrets = px->secrets, .target = &c->req, .req = &c->rreq,
	};
	struct proxypolicy_decision d;
	const char *why;
	int st;

	if ((st = proxyreq_parse_origin(buf, hl, &c->rreq, &why)) != 0) {
		px_record(px, "proxy-deny", "%s: bad request: %s", c->what, why);
		pconn_refuse(c, st, why);
		return false;
	}
	q.head = buf;
	proxypolicy_decide(&q, &d);
	if (d.verdict != PROXYPOLICY_FORWARD) {
		pconn_deny(c, &d);
		return false;
	}
	/* The same checks again, where the head is written. */
	if (proxyfwd_head(px->secrets, buf, &c->rreq, c->req.host,
	    PROXYFWD_TUNNEL, &h) != 0) {
		pconn_refuse(c, 403, "refused");
		return false;
	}
	for (size_t i = 0; i < px->secrets->n; i++)
		if ((h.used & ~c->used) & ((proxysecret_mask)1 << i))
			px_record(px, "secret-use", "secret %s used for %s",
			    secret_name(px, (int)i), c->req.host);
	c->used |= h.used;
	st = pconn_count(c, h.len) ? evbuffer_add(bufferevent_get_output(c->up),
	    h.out, h.len) : 1;
	proxyfwd_head_free(&h);
	if (st == 1)
		return false;
	if (st != 0) {
		pconn_free(c);
		return false;
	}
	px->requests++;
	/* Room was checked before the head was taken (http_pump). */
	if (!proxyresp_expect(c->resp, strcmp(c->rreq.method, "HEAD") == 0)) {
		pconn_free(c);
		return false;
	}
	c->expected++;
	proxyfwd_body_init(&c->fbody, &c->rreq);
	c->rq = RQ_BODY;
	if (proxyreq_body_done(&c->fbody.b))
		body_end(c);
	return true;
}

/* The head in front of in, if whole; false: c is closing or freed. */
static bool
http_take_head(struct pconn *c, struct evbuffer *in)
{
	struct proxy *px = c->px;
	size_t avail = evbuffer_get_length(in), take, hl;
	struct timeval tv = tv_from_ms(head_ms(px));
	char *buf;

	/* A fixed deadline from the head's first byte, as at accept. */
	if (!evtimer_pending(c->deadline, NULL) &&
	    evtimer_add(c->deadline, &tv) != 0) {
		pconn_free(c);
		return false;
	}
	take = avail < px->lim.max_header_bytes ? avail :
	    px->lim.max_header_bytes;
	if ((buf = (char *)evbuffer_pullup(in, (ev_ssize_t)take)) == NULL) {
		pconn_free(c);
		return false;
	}
	if ((hl = proxyreq_head_len(buf, take)) == 0) {
		if (avail >= px->lim.max_header_bytes) {
			px_record(px, "proxy-deny", "%s: request head over %u "
			    "bytes", c->what, px->lim.max_header_bytes);
			pconn_refuse(c, 431, "request head too large");
		}
		return false;
	}
	(void)evtimer_del(c->deadline);
	if (!http_head(c, buf, hl))
		return false;
	/* Heads with values in them: the copy freed with the chain is wiped. */
	wire_wipe(buf, hl);
	evbuffer_drain(in, hl);
	return true;
}

static bool
body_out(void *arg, const void *p, size_t n)
{
	struct pconn *c = arg;

	return evbuffer_add(bufferevent_get_output(c->up), p, n) == 0;
}

/* Relays what the body framing says is body; false: stop for now. */
static bool
http_body(struct pconn *c, struct evbuffer *in)
{
	const struct secret_set *set = c->px->secrets;
	struct evbuffer_iovec v;
	enum proxyfwd_status st;
	size_t n;

	if (evbuffer_peek(in, -1, NULL, &v, 1) < 1 || v.iov_len == 0)
		return false;
	st = proxyfwd_body_feed(&c->fbody, set, v.iov_base, v.iov_len, &n,
	    body_out, c);
	switch (st) {
	case PROXYFWD_BAD:
		px_record(c->px, "proxy-deny", "%s: bad request body: %s",
		    c->what, c->fbody.b.why);
		pconn_refuse(c, 400, c->fbody.b.why);
		return false;
	case PROXYFWD_TRAILER:
		/* Its last chunk never went: the upstream has no request. */
		px_record(c->px, "secret-refused", "secret %s in a chunk "
		    "trailer to %s: refused", set->v[c->fbody.trailer_secret].name,
		    c->req.host);
		pconn_refuse(c, 403, "a secret's placeholder in a trailer");
		return false;
	case PROXYFWD_OUT:
		pconn_free(c);
		return false;
	case PROXYFWD_MORE:
	case PROXYFWD_DONE:
		break;
	}
	if (n > 0 && !pconn_count(c, n))
		return false;
	if (evbuffer_drain(in, n) != 0) {
		pconn_free(c);
		return false;
	}
	if (st == PROXYFWD_DONE)
		body_end(c);
	return true;
}

static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct pconn *c = arg;

	if (c->st != PS_HTTP || c->rq != RQ_HEAD)
		return;
	/* Armed for a tunnel's first head, and for each later head begun. */
	px_record(c->px, "proxy-deny", "%s: request head not complete within "
	    "%llu ms", c->what, (unsigned long long)head_ms(c->px));
	pconn_refuse(c, 408, "request timeout");
}

static void
http_pump(struct pconn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->cli);

	while (c->st == PS_HTTP && evbuffer_get_length(in) > 0) {
		if (evbuffer_get_length(bufferevent_get_output(c->up)) >=
		    SPLICE_HIGH) {
			(void)bufferevent_disable(c->cli, EV_READ);
			return;
		}
		if (c->rq == RQ_DONE) {
			/* After a last request nothing more goes upstream. */
			evbuffer_drain(in, evbuffer_get_length(in));
			return;
		}
		/* Responses awaited at the bound: the guest waits for them. */
		if (c->rq == RQ_HEAD && c->resp != NULL &&
		    proxyresp_pending(c->resp) >= PROXYRESP_PIPELINE_MAX) {
			(void)bufferevent_disable(c->cli, EV_READ);
			return;
		}
		if (!idle_touch(c))
			return;
		if (c->rq == RQ_HEAD ? !http_take_head(c, in) :
		    !http_body(c, in))
			return;
	}
}

static bool
resp_out(void *arg, const void *p, size_t n)
{
	struct pconn *c = arg;

	c->resp_out = true;
	c->out_at = c->expected - proxyresp_pending(c->resp);
	return evbuffer_add(bufferevent_get_output(c->cli), p, n) == 0;
}

/*
 * Values redacted: one record per secret and response, once the response
 * is over (or the connection ends: force).
 */
static void
resp_record(struct pconn *c, bool force)
{
	const struct secret_set *set = c->px->secrets;
	uint64_t count, done;
	proxysecret_mask m;
	bool several;

	if (c->resp == NULL)
		return;
	m = proxyresp_take_redacted(c->resp, &count);
	c->redacted |= m;
	c->nredacted += count;
	done = c->expected - proxyresp_pending(c->resp);
	if (c->redacted == 0 || (!force && done == c->rec_done))
		return;
	c->rec_done = done;
	m = c->redacted;
	several = (m & (m - 1)) != 0;
	for (size_t i = 0; set != NULL && i < set->n; i++)
		if (m & ((proxysecret_mask)1 << i))
			px_record(c->px, "secret-redacted", "secret %s redacted "
			    "in a response from %s (%llu times%s)",
			    set->v[i].name, c->req.host,
			    (unsigned long long)c->nredacted, several ?
			    " with the others" : "");
	c->redacted = 0;
	c->nredacted = 0;
}

/*
 * A response the scan refused: recorded; the guest gets 502 when no byte
 * of that response went to it, else the connection closes (a status
 * inside a response would be read as its bytes). False: c is closing.
 */
static bool
resp_fail(struct pconn *c, enum proxyresp_status st, const char *why)
{
	bool begun = c->resp_out &&
	    c->out_at == c->expected - proxyresp_pending(c->resp);

	resp_record(c, true);
	px_record(c->px, "proxy-deny", "%s: response refused (%s): %s",
	    c->what, st == PROXYRESP_UNSCANNABLE ? "unscannable" :
	    st == PROXYRESP_TOO_LARGE ? "head too large" :
	    st == PROXYRESP_UNEXPECTED ? "unexpected" :
	    st == PROXYRESP_TRUNCATED ? "truncated" : "bad framing",
	    why != NULL ? why : "refused");
	if (!begun && c->cli != NULL) {
		pconn_refuse(c, 502, "response refused by the lane proxy");
		return false;
	}
	pconn_close_side(c, c->up);
	return false;
}

/*
 * Every byte read from upstream goes through the scan and out to the
 * guest as it comes (a stream stays a stream); false: c is closing. With
 * pump, a guest held back at the pipeline bound goes on (and c may be
 * gone: false).
 */
static bool
resp_move(struct pconn *c, bool pump)
{
	struct evbuffer *in = bufferevent_get_input(c->up);
	struct evbuffer_iovec v;
	enum proxyresp_status st;
	const char *why;

	while (evbuffer_peek(in, -1, NULL, &v, 1) >= 1 && v.iov_len > 0) {
		if (!pconn_count(c, v.iov_len))
			return false;
		st = proxyresp_feed(c->resp, v.iov_base, v.iov_len, resp_out, c,
		    &why);
		/* Bytes that held a value: the copy freed with the chain too. */
		wire_wipe(v.iov_base, v.iov_len);
		if (evbuffer_drain(in, v.iov_len) != 0) {
			pconn_free(c);
			return false;
		}
		if (st != PROXYRESP_OK)
			return resp_fail(c, st, why);
	}
	resp_record(c, false);
	if (!idle_touch(c))
		return false;
	if (proxyresp_closing(c->resp)) {
		pconn_close_side(c, c->up);
		return false;
	}
	if (evbuffer_get_length(bufferevent_get_output(c->cli)) >= SPLICE_HIGH)
		(void)bufferevent_disable(c->up, EV_READ);
	if (pump && c->rq == RQ_HEAD && proxyresp_pending(c->resp) <
	    PROXYRESP_PIPELINE_MAX && evbuffer_get_length(
	    bufferevent_get_input(c->cli)) > 0) {
		if (pconn_enable(c, c->cli, EV_READ))
			http_pump(c);
		return false;
	}
	return true;
}

/* Upstream ended: its last bytes, then the end of a close-framed body. */
static bool
resp_end(struct pconn *c)
{
	enum proxyresp_status st;
	const char *why;

	if (!resp_move(c, false))
		return false;
	if ((st = proxyresp_eof(c->resp, resp_out, c, &why)) != PROXYRESP_OK)
		return resp_fail(c, st, why);
	resp_record(c, true);
	return true;
}

/* No byte either way within idle_ms: redactions recorded, closed. */
static void
http_idle(struct pconn *c)
{
	resp_record(c, true);
	pconn_free(c);
}

static void
http_read_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	if (c->st != PS_HTTP)
		return;
	if (bev == c->cli)
		http_pump(c);
	else if (c->resp == NULL)
		(void)splice_move(c, c->up, c->cli);	/* plain: as they come */
	else
		(void)resp_move(c, true);
}

/* A side drained below its low watermark: the other may read again. */
static void
http_write_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;

	if (c->st == PS_CLOSING) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			pconn_free(c);
		return;
	}
	if (c->st != PS_HTTP)
		return;
	if (bev == c->up) {
		/* What the guest sent meanwhile waits in its input. */
		if (pconn_enable(c, c->cli, EV_READ))
			http_pump(c);
	} else
		(void)pconn_enable(c, c->up, EV_READ);
}

/*
 * One side ended. Upstream's last bytes still go to the guest; the guest's
 * unparsed bytes never go upstream (they are no whole request).
 */
static void
http_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;

	if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)) == 0)
		return;
	if (c->st != PS_HTTP) {
		pconn_free(c);
		return;
	}
	if (bev == c->up && c->resp == NULL && !splice_move(c, c->up, c->cli))
		return;
	if (bev == c->up && c->resp != NULL && !resp_end(c))
		return;
	resp_record(c, true);
	if (c->st != PS_CLOSING)
		pconn_close_side(c, bev);
}
