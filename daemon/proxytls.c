/*
 * The lane proxy's interception and request relay (see proxy.h and
 * proxyint.h).
 *
 * A CONNECT to a host of one of the lane's secrets goes:
 *   PS_CONNECT  TCP to the vetted address (proxy.c);
 *   PS_UPTLS    TLS to it, verified against the host's trust store with a
 *               name check and SNI for the CONNECT target: no fallback, so
 *               a bad certificate is a 502 to the CONNECT itself;
 *   PS_CLITLS   then "200 Connection Established", and TLS with the guest
 *               under a leaf of the lane CA for the target; its SNI must be
 *               the target too;
 *   PS_HTTP     each request head is parsed (proxyreq_parse_origin), its
 *               Host must name the target, and the head to send is
 *               written by proxyfwd_head (placeholders checked, values in
 *               credential headers, framing from what was parsed); its
 *               body is framed again and scanned (proxyfwd_body_feed), so
 *               that the upstream reads the requests the proxy read.
 *               Responses go back as they arrive.
 * A plain http:// request (proxy.c parsed it) enters PS_HTTP too, for its
 * body only: one request per connection.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "log.h"
#include "proxyint.h"
#include "secret.h"
#include "tlsca.h"
#include "tls.h"
#include "util.h"
#include "wire.h"

static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";

static void http_pump(struct pconn *);
static void deadline_cb(evutil_socket_t, short, void *);
static bool resp_move(struct pconn *, bool);
static void resp_record(struct pconn *, bool);

static const char *
secret_name(const struct proxy *px, int i)
{
	return px->secrets->v[i].name;
}

/* Both contexts, made at the first interception. */
static bool
ptls_ctx(struct proxy *px, char *err, size_t errlen)
{
	if (px->sctx == NULL && (px->sctx = tls_server_ctx(err, errlen)) ==
	    NULL)
		return false;
	if (px->cctx == NULL && (px->cctx = tls_client_ctx(px->test_cafile,
	    err, errlen)) == NULL)
		return false;
	return true;
}

void
ptls_free(struct proxy *px)
{
	SSL_CTX_free(px->sctx);
	SSL_CTX_free(px->cctx);
	free(px->test_cafile);
	px->sctx = px->cctx = NULL;
	px->test_cafile = NULL;
}

/*
 * Moves the socket of a plain bufferevent (both its buffers empty) under
 * TLS. A socket-based TLS bufferevent rather than a filter: its output is
 * empty only once the records are in the kernel, so "close once written"
 * still delivers a last answer. Out of memory is fatal, as for xmalloc:
 * libevent has then freed ssl already.
 */
static struct bufferevent *
ptls_wrap(struct pconn *c, struct bufferevent **bevp, SSL *ssl,
    enum bufferevent_ssl_state st)
{
	evutil_socket_t fd = bufferevent_getfd(*bevp);
	struct bufferevent *t;

	/* Detached first, so that freeing the old one does not close it. */
	if (bufferevent_setfd(*bevp, -1) != 0)
		fatalx("proxy: bufferevent_setfd failed");
	bufferevent_free(*bevp);
	*bevp = NULL;
	t = bufferevent_openssl_socket_new(c->px->base, fd, ssl, st,
	    BEV_OPT_CLOSE_ON_FREE);
	if (t == NULL)
		fatalx("proxy: bufferevent_openssl_socket_new: out of memory");
	/* OpenSSL 3 reports a peer's missing close_notify as an error. */
	bufferevent_openssl_set_allow_dirty_shutdown(t, 1);
	*bevp = t;
	return t;
}

static const char *
ptls_failure(struct bufferevent *bev, char *buf, size_t len)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long e = bufferevent_get_openssl_error(bev);
	long v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;

	if (v != X509_V_OK)
		snprintf(buf, len, "certificate not verified: %s",
		    X509_verify_cert_error_string(v));
	else if (e != 0)
		tls_error(e, buf, len);
	else
		snprintf(buf, len, "%s", EVUTIL_SOCKET_ERROR() != 0 ?
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()) :
		    "connection closed");
	return buf;
}

/* ---- The guest's side of the interception ---- */

static void http_read_cb(struct bufferevent *, void *);
static void http_write_cb(struct bufferevent *, void *);
static void http_event_cb(struct bufferevent *, short, void *);

static void
http_enter(struct pconn *c)
{
	if (c->intercept && c->resp == NULL && (c->resp =
	    proxyresp_new(c->px->secrets, PROXY_RESP_HEAD_MAX)) == NULL) {
		pconn_free(c);
		return;
	}
	pconn_state(c, PS_HTTP);
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

/* The guest's SNI must name the CONNECT target (trailing dot aside). */
static bool
sni_matches(struct pconn *c)
{
	SSL *ssl = bufferevent_openssl_get_ssl(c->cli);
	const char *sni = ssl != NULL ?
	    SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) : NULL;
	size_t n;

	if (sni == NULL) {
		px_record(c->px, "proxy-deny", "%s: the guest sent no TLS "
		    "server name", c->what);
		return false;
	}
	n = strlen(sni);
	if (n > 0 && sni[n - 1] == '.')
		n--;
	if (n != strlen(c->req.host) || strncasecmp(sni, c->req.host, n) != 0) {
		char s[PROXYREQ_HOST_MAX + 1];
		str_copy(s, sni, sizeof(s));
		str_sanitize_ascii(s);
		px_record(c->px, "proxy-deny", "%s: TLS server name %s is not "
		    "the CONNECT target", c->what, s);
		return false;
	}
	return true;
}

static void
clitls_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;
	char e[200];

	if (c->st != PS_CLITLS)
		return;
	if (what & BEV_EVENT_CONNECTED) {
		if (!sni_matches(c)) {
			pconn_refuse(c, 421, "TLS server name does not match "
			    "the CONNECT target");
			return;
		}
		http_enter(c);
		return;
	}
	/* A guest that does not trust the lane CA ends up here. */
	px_record(c->px, "proxy-fail", "%s: TLS with the guest failed: %s",
	    c->what, ptls_failure(bev, e, sizeof(e)));
	pconn_free(c);
}

/* Upstream verified: answer the CONNECT and take the guest's TLS. */
static void
clitls_start(struct pconn *c)
{
	struct proxy *px = c->px;
	enum tlsca_err te;
	SSL *ssl;

	if ((ssl = SSL_new(px->sctx)) == NULL) {
		pconn_refuse(c, 502, "TLS set-up failed");
		return;
	}
	if ((te = tlsca_use_leaf(px->ca, c->req.host, ssl)) != TLSCA_OK) {
		SSL_free(ssl);
		px_record(px, te == TLSCA_FULL ? "proxy-limit" : "proxy-fail",
		    "%s: %s", c->what, tlsca_strerror(te));
		pconn_refuse(c, te == TLSCA_FULL ? 503 : 502,
		    tlsca_strerror(te));
		return;
	}
	/*
	 * A client waits for this answer before its TLS hello: bytes already
	 * there would be read by no one, so they are refused.
	 */
	if (evbuffer_get_length(bufferevent_get_input(c->cli)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(c->cli)) > 0) {
		SSL_free(ssl);
		px_record(px, "proxy-deny", "%s: bytes sent before the tunnel "
		    "was established", c->what);
		pconn_refuse(c, 400, "bytes before the CONNECT answer");
		return;
	}
	/* The socket is fresh and its buffer empty: the answer fits. */
	if (send(bufferevent_getfd(c->cli), established,
	    sizeof(established) - 1, 0) != (ssize_t)sizeof(established) - 1) {
		SSL_free(ssl);
		pconn_free(c);
		return;
	}
	pconn_state(c, PS_CLITLS);
	ptls_wrap(c, &c->cli, ssl, BUFFEREVENT_SSL_ACCEPTING);
	bufferevent_setcb(c->cli, NULL, NULL, clitls_event_cb, c);
	/* The guest has the head deadline to shake hands. */
	if (pconn_timer(c, head_ms(px)))
		(void)pconn_enable(c, c->cli, EV_READ | EV_WRITE);
}

/* ---- The upstream side ---- */

static void
uptls_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;
	char e[200];

	if (c->st != PS_UPTLS)
		return;
	if ((what & BEV_EVENT_CONNECTED) &&
	    SSL_get_verify_result(bufferevent_openssl_get_ssl(bev)) ==
	    X509_V_OK) {
		/* No reads until the guest's side is up: they wait in its buffer. */
		(void)bufferevent_disable(c->up, EV_READ);
		bufferevent_setwatermark(c->up, EV_READ, 0, SPLICE_HIGH);
		bufferevent_setcb(c->up, NULL, NULL, http_event_cb, c);
		clitls_start(c);
		return;
	}
	px_record(c->px, "proxy-fail", "%s: upstream TLS refused: %s", c->what,
	    ptls_failure(bev, e, sizeof(e)));
	pconn_refuse(c, 502, "upstream TLS failed (certificate or name)");
}

void
ptls_upstream(struct pconn *c)
{
	struct proxy *px = c->px;
	char err[256];
	SSL *ssl;

	if (px->ca == NULL || !ptls_ctx(px, err, sizeof(err))) {
		px_record(px, "proxy-fail", "%s: %s", c->what, px->ca == NULL ?
		    "the lane has no CA" : err);
		pconn_refuse(c, 502, "cannot intercept");
		return;
	}
	if ((ssl = SSL_new(px->cctx)) == NULL ||
	    tls_client_host(ssl, c->req.host) == -1) {
		SSL_free(ssl);
		pconn_refuse(c, 502, "TLS set-up failed");
		return;
	}
	pconn_state(c, PS_UPTLS);
	ptls_wrap(c, &c->up, ssl, BUFFEREVENT_SSL_CONNECTING);
	bufferevent_setcb(c->up, NULL, NULL, uptls_event_cb, c);
	/* The connect timer, armed when the head was read, still runs. */
	(void)pconn_enable(c, c->up, EV_READ | EV_WRITE);
}

void
ptls_idle(struct pconn *c)
{
	resp_record(c, true);
	if (c->st == PS_CLITLS)
		px_record(c->px, "proxy-fail", "%s: the guest did not finish "
		    "its TLS handshake in time", c->what);
	pconn_free(c);
}

/* ---- Requests ---- */

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
	http_enter(c);
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

/* Counts n bytes against the caps; false: over (c is closing or freed). */
static bool
http_count(struct pconn *c, size_t n)
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

/* One request head of an intercepted connection; false: c is closing. */
static bool
http_head(struct pconn *c, const char *buf, size_t hl)
{
	struct proxy *px = c->px;
	struct proxyfwd_head h;
	const char *why;
	int st;

	if ((st = proxyreq_parse_origin(buf, hl, &c->rreq, &why)) != 0) {
		px_record(px, "proxy-deny", "%s: bad request: %s", c->what, why);
		pconn_refuse(c, st, why);
		return false;
	}
	/* Decided on the CONNECT target; Host must only agree with it. */
	if (strcmp(c->rreq.host, c->req.host) != 0 ||
	    (c->rreq.host_port && c->rreq.port != c->req.port)) {
		px_record(px, "proxy-deny", "%s: Host %s is not the CONNECT "
		    "target", c->what, c->rreq.host);
		pconn_refuse(c, 421, "Host does not match the CONNECT target");
		return false;
	}
	if ((st = proxyfwd_head(px->secrets, buf, &c->rreq, c->req.host,
	    PROXYFWD_TUNNEL, &h)) != 0) {
		pconn_refuse_head(c, st, &h);
		return false;
	}
	for (size_t i = 0; i < px->secrets->n; i++)
		if ((h.used & ~c->used) & ((proxysecret_mask)1 << i))
			px_record(px, "secret-use", "secret %s used for %s",
			    secret_name(px, (int)i), c->req.host);
	c->used |= h.used;
	st = http_count(c, h.len) ? evbuffer_add(bufferevent_get_output(c->up),
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
	if (n > 0 && !http_count(c, n))
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

/* ---- Responses of an intercepted connection ---- */

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
		if (!http_count(c, v.iov_len))
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
