/*
 * The lane proxy's interception handshakes (see proxytls.h), above its
 * connection layer (pconn.h). A CONNECT to a host of one of the lane's
 * secrets goes:
 *   PS_CONNECT  TCP to the vetted address (proxy.c);
 *   PS_UPTLS    TLS to it, verified against the host's trust store with a
 *               name check and SNI for the CONNECT target: no fallback, so
 *               a bad certificate is a 502 to the CONNECT itself;
 *   PS_CLITLS   then "200 Connection Established", and TLS with the guest
 *               under a leaf of the lane CA for the target; its SNI must
 *               name the target too (proxypolicy_decide);
 * and then the caller's done callback (the request relay, proxyhttp.c)
 * takes the connection: this file never calls it by name.
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
#include "pconn.h"
#include "proxytls.h"
#include "secret.h"
#include "tlsca.h"
#include "tls.h"
#include "util.h"

static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";

static void ptls_idle(struct pconn *);
static void up_wait_event_cb(struct bufferevent *, short, void *);

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

static void
clitls_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;
	char e[200];

	if (c->st != PS_CLITLS)
		return;
	if (what & BEV_EVENT_CONNECTED) {
		SSL *ssl = bufferevent_openssl_get_ssl(c->cli);
		struct proxypolicy_query q = {
			.stage = PROXYPOLICY_SNI, .pol = &c->px->pol,
			.secrets = c->px->secrets, .target = &c->req,
			.sni = ssl != NULL ? SSL_get_servername(ssl,
			    TLSEXT_NAMETYPE_host_name) : NULL,
		};
		struct proxypolicy_decision d;

		proxypolicy_decide(&q, &d);
		if (d.verdict != PROXYPOLICY_PASS) {
			pconn_deny(c, &d);
			return;
		}
		c->on_idle = NULL;
		c->tls_done(c);
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
	c->on_idle = ptls_idle;
	ptls_wrap(c, &c->cli, ssl, BUFFEREVENT_SSL_ACCEPTING);
	bufferevent_setcb(c->cli, NULL, NULL, clitls_event_cb, c);
	/* The guest has the head deadline to shake hands. */
	if (pconn_timer(c, head_ms(px)))
		(void)pconn_enable(c, c->cli, EV_READ | EV_WRITE);
}

/* The upstream's end while the guest shakes hands: nothing to relay. */
static void
up_wait_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		pconn_free(arg);
}

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
		bufferevent_setcb(c->up, NULL, NULL, up_wait_event_cb, c);
		clitls_start(c);
		return;
	}
	px_record(c->px, "proxy-fail", "%s: upstream TLS refused: %s", c->what,
	    ptls_failure(bev, e, sizeof(e)));
	pconn_refuse(c, 502, "upstream TLS failed (certificate or name)");
}

void
ptls_upstream(struct pconn *c, pconn_fn *done)
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
	c->tls_done = done;
	pconn_state(c, PS_UPTLS);
	ptls_wrap(c, &c->up, ssl, BUFFEREVENT_SSL_CONNECTING);
	bufferevent_setcb(c->up, NULL, NULL, uptls_event_cb, c);
	/* The connect timer, armed when the head was read, still runs. */
	(void)pconn_enable(c, c->up, EV_READ | EV_WRITE);
}

/* The guest's handshake did not finish within the head deadline. */
static void
ptls_idle(struct pconn *c)
{
	if (c->st == PS_CLITLS)
		px_record(c->px, "proxy-fail", "%s: the guest did not finish "
		    "its TLS handshake in time", c->what);
	pconn_free(c);
}
