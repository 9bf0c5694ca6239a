/*
 * The per-lane egress proxy (see proxy.h), the top of its stack (pconn.h
 * draws the layers): it accepts, reads a request head, asks the policy
 * (proxypolicy_decide), resolves and connects, and hands the connection to
 * the interception (proxytls.c), the relay (proxyhttp.c) or the splice.
 *
 * One struct pconn per client connection, in one of these states:
 *   HEAD      reading the request head (bounded by max_header_bytes);
 *   RESOLVE   an evdns lookup is in flight (the loop never blocks on DNS);
 *   CONNECT   a non-blocking connect to the vetted address;
 *   SPLICE    bytes flow both ways, with watermarks so that a slow side
 *             stops reads on the fast one instead of growing a buffer.
 * Every decision is made on what proxyreq.c parsed; the address connected
 * to is the one vetted, never a second lookup.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include <openssl/ssl.h>

#include "compat.h"
#include "log.h"
#include "netaddr.h"
#include "pconn.h"
#include "proxyhttp.h"
#include "proxypolicy.h"
#include "proxytls.h"
#include "secret.h"
#include "tls.h"
#include "util.h"
#include "wire.h"

#define MAX_ADDRS	8
/* Out of descriptors: how long the listener rests before it tries again. */
#define ACCEPT_PAUSE_MS	1000


bool
proxy_parse_ports(const char *s, uint16_t *ports, size_t *n)
{
	*n = 0;
	while (*s != '\0') {
		char *end;
		unsigned long v;

		if (*s < '0' || *s > '9')
			return false;
		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno != 0 || v == 0 || v > 65535 || *n >= PROXY_MAX_PORTS)
			return false;
		ports[(*n)++] = (uint16_t)v;
		s = end;
		if (*s == ',')
			s++;
		else if (*s != '\0')
			return false;
	}
	return *n > 0;
}

static void
up_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct pconn *c = arg;

	if (what & BEV_EVENT_CONNECTED) {
		if (c->intercept) {
			ptls_upstream(c, phttp_enter);
			return;
		}
		if (!c->req.connect) {
			phttp_start_plain(c);
			return;
		}
		{
			if (evbuffer_add_printf(bufferevent_get_output(c->cli),
			    "HTTP/1.1 200 Connection Established\r\n\r\n") < 0) {
				pconn_free(c);
				return;
			}
		}
		splice_start(c);
		return;
	}
	px_record(c->px, "proxy-fail", "%s: %s", c->what,
	    (what & BEV_EVENT_TIMEOUT) ? "connect timed out" :
	    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	pconn_refuse(c, (what & BEV_EVENT_TIMEOUT) ? 504 : 502,
	    "cannot connect upstream");
}

/* The vetted answer: connect to exactly this address. */
static void
pconn_connect(struct pconn *c, struct sockaddr_storage *ss)
{
	struct proxy *px = c->px;
	socklen_t len;
	int fd;

	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)ss)->sin_port = htons(c->req.port);
		len = sizeof(struct sockaddr_in);
	} else {
		((struct sockaddr_in6 *)ss)->sin6_port = htons(c->req.port);
		len = sizeof(struct sockaddr_in6);
	}
	pconn_state(c, PS_CONNECT);
	if ((fd = compat_socket_cloexec(ss->ss_family, SOCK_STREAM)) == -1 ||
	    compat_set_nonblock(fd) == -1) {
		if (fd != -1)
			close(fd);
		px_record(px, "proxy-fail", "%s: socket: %s", c->what,
		    strerror(errno));
		pconn_refuse(c, 502, "cannot connect upstream");
		return;
	}
	compat_nosigpipe(fd);
	c->up = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->up == NULL) {
		close(fd);
		pconn_refuse(c, 502, "cannot connect upstream");
		return;
	}
	bufferevent_setcb(c->up, NULL, NULL, up_event_cb, c);
	if (bufferevent_socket_connect(c->up, (struct sockaddr *)ss, (int)len) != 0) {
		px_record(px, "proxy-fail", "%s: connect failed", c->what);
		pconn_refuse(c, 502, "cannot connect upstream");
	}
}

/*
 * All answers must be public: one private answer among public ones would
 * let a rebinding name win some of the time.
 */
static void
pconn_vet(struct pconn *c, struct sockaddr_storage *addrs, size_t n,
    bool trusted)
{
	char a[INET6_ADDRSTRLEN];
	const char *why;

	if (n == 0) {
		px_record(c->px, "proxy-deny", "%s: name has no address", c->what);
		pconn_refuse(c, 502, "name does not resolve");
		return;
	}
	for (size_t i = 0; i < n && !trusted; i++) {
		if (!netaddr_is_public((struct sockaddr *)&addrs[i], &why)) {
			netaddr_format((struct sockaddr *)&addrs[i], a, sizeof(a));
			px_record(c->px, "proxy-deny", "%s: resolves to %s (%s)",
			    c->what, a, why);
			pconn_refuse(c, 403, "name resolves to a non-public address");
			return;
		}
	}
	netaddr_format((struct sockaddr *)&addrs[0], a, sizeof(a));
	px_record(c->px, "proxy-allow", "%s via %s%s", c->what, a,
	    trusted ? " (test resolver)" : "");
	pconn_connect(c, &addrs[0]);
}

static void
dns_cb(int result, struct evutil_addrinfo *res, void *arg)
{
	struct pconn *c = arg;
	struct sockaddr_storage addrs[MAX_ADDRS];
	size_t n = 0;

	if (result == EVUTIL_EAI_CANCEL)
		return;		/* c is gone: pconn_free cancelled us */
	c->dnsreq = NULL;
	if (result != 0) {
		px_record(c->px, "proxy-deny", "%s: lookup failed: %s", c->what,
		    evutil_gai_strerror(result));
		pconn_refuse(c, 502, "name does not resolve");
		return;
	}
	for (struct evutil_addrinfo *ai = res; ai != NULL && n < MAX_ADDRS;
	    ai = ai->ai_next) {
		if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
		    ai->ai_addrlen > sizeof(addrs[0]))
			continue;
		memset(&addrs[n], 0, sizeof(addrs[n]));
		memcpy(&addrs[n], ai->ai_addr, ai->ai_addrlen);
		n++;
	}
	evutil_freeaddrinfo(res);
	pconn_vet(c, addrs, n, false);
}

static void
pconn_resolve(struct pconn *c)
{
	struct proxy *px = c->px;
	struct evutil_addrinfo hints;

	pconn_state(c, PS_RESOLVE);
	if (px->test_resolve != NULL) {
		struct sockaddr_storage addrs[MAX_ADDRS];
		size_t n = MAX_ADDRS;
		bool trusted = false;
		if (px->test_resolve(px->test_arg, c->req.host, addrs, &n,
		    &trusted) != 0) {
			px_record(px, "proxy-deny", "%s: lookup failed: no such name",
			    c->what);
			pconn_refuse(c, 502, "name does not resolve");
			return;
		}
		pconn_vet(c, addrs, n > MAX_ADDRS ? MAX_ADDRS : n, trusted);
		return;
	}
	if (px->dns == NULL) {
		px_record(px, "proxy-fail", "%s: no resolver", c->what);
		pconn_refuse(c, 502, "no resolver");
		return;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	/* May answer synchronously (a literal, /etc/hosts) and free c. */
	struct evdns_getaddrinfo_request *r =
	    evdns_getaddrinfo(px->dns, c->req.host, NULL, &hints, dns_cb, c);
	if (r != NULL)
		c->dnsreq = r;
}

static void
head_read_cb(struct bufferevent *bev, void *arg)
{
	struct pconn *c = arg;
	struct proxy *px = c->px;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t avail = evbuffer_get_length(in), take, hl;
	struct proxyfwd_head fh;
	struct proxypolicy_query q = {
		.stage = PROXYPOLICY_HEAD, .pol = &px->pol,
		.secrets = px->secrets, .target = &c->req,
	};
	struct proxypolicy_decision d;
	const char *why;
	char *buf;
	int status;

	if (c->st != PS_HEAD)
		return;
	/* No idle_touch: the head's deadline was set at accept, once. */
	take = avail < px->lim.max_header_bytes ? avail : px->lim.max_header_bytes;
	buf = (char *)evbuffer_pullup(in, (ev_ssize_t)take);
	if (buf == NULL) {
		pconn_free(c);
		return;
	}
	hl = proxyreq_head_len(buf, take);
	if (hl == 0) {
		if (avail >= px->lim.max_header_bytes) {
			px_record(px, "proxy-deny", "request head over %u bytes",
			    px->lim.max_header_bytes);
			pconn_refuse(c, 431, "request head too large");
		}
		return;
	}
	status = proxyreq_parse(buf, hl, &c->req, &why);
	if (status != 0) {
		evbuffer_drain(in, hl);
		px_record(px, "proxy-deny", "bad request: %s", why);
		pconn_refuse(c, status, why);
		return;
	}
	snprintf(c->what, sizeof(c->what), "%s %s%s%s:%u",
	    c->req.connect ? "CONNECT" : "http",
	    strchr(c->req.host, ':') ? "[" : "", c->req.host,
	    strchr(c->req.host, ':') ? "]" : "", (unsigned)c->req.port);
	/* Placeholders, host and port: the policy's. */
	q.head = buf;
	proxypolicy_decide(&q, &d);
	if (d.verdict == PROXYPOLICY_DENY) {
		pconn_deny(c, &d);
		return;
	}
	if (!c->req.connect) {
		/* The head to send; its checks were the policy's just now. */
		if (proxyfwd_head(px->secrets, buf, &c->req, c->req.host,
		    PROXYFWD_PLAIN, &fh) != 0) {
			pconn_refuse(c, 403, "refused");
			return;
		}
		c->fwd = fh.out;
		c->fwdlen = fh.len;
	}
	evbuffer_drain(in, hl);
	c->intercept = d.verdict == PROXYPOLICY_INTERCEPT;
	/* Until upstream answers, the client's further bytes wait in its buffer. */
	(void)bufferevent_disable(bev, EV_READ);
	pconn_state(c, PS_RESOLVE);
	if (!pconn_timer(c, px->lim.connect_ms))
		return;
	pconn_resolve(c);
}

static void
accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct proxy *px = arg;
	struct pconn *c;

	if (compat_set_cloexec(fd) == -1 || compat_set_nonblock(fd) == -1) {
		close(fd);
		return;
	}
	compat_nosigpipe(fd);
	if (px->nconns >= px->lim.max_conns || px->nheads >= px->lim.max_heads ||
	    px->bytes >= px->lim.max_lane_bytes) {
		static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\n"
		    "Connection: close\r\nContent-Length: 0\r\n\r\n";
		if (px->nconns >= px->lim.max_conns)
			px_record(px, "proxy-limit", "refused: %u connections open",
			    px->lim.max_conns);
		else if (px->nheads >= px->lim.max_heads)
			px_record(px, "proxy-limit", "refused: %u connections "
			    "still sending their request head", px->lim.max_heads);
		else
			px_record(px, "proxy-limit",
			    "refused: the lane's %llu bytes are used up",
			    (unsigned long long)px->lim.max_lane_bytes);
		/* Best effort: the socket is new, its buffer has room. */
		if (send(fd, busy, sizeof(busy) - 1, 0) < 0)
			log_debug("proxy: 503 not sent: %s", strerror(errno));
		close(fd);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->px = px;
	c->st = PS_CLOSING;
	TAILQ_INSERT_TAIL(&px->conns, c, entry);
	px->nconns++;
	pconn_state(c, PS_HEAD);
	c->cli = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->idle = evtimer_new(px->base, pconn_idle_cb, c);
	if (c->cli == NULL || c->idle == NULL) {
		if (c->cli == NULL)
			close(fd);
		pconn_free(c);
		return;
	}
	/* Reading stops at the cap, so a head never grows the buffer past it. */
	bufferevent_setwatermark(c->cli, EV_READ, 0, px->lim.max_header_bytes);
	bufferevent_setcb(c->cli, head_read_cb, pconn_closing_write_cb,
	    pconn_free_event_cb, c);
	if (pconn_timer(c, head_ms(px)))
		(void)pconn_enable(c, c->cli, EV_READ | EV_WRITE);
}

static void
accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;

	if (evconnlistener_enable(px->lis) != 0)
		log_warnx("proxy on 127.0.0.1:%u: cannot resume accepting",
		    (unsigned)px->port);
}

/*
 * EMFILE and friends. The pending connection stays in the backlog, so a
 * listener left enabled would wake at once, fail again, and spin (and log)
 * as fast as the loop turns: it rests for ACCEPT_PAUSE_MS instead, as the
 * daemon's own listener does, and the log line comes once a minute at most.
 */
static void
accept_error_cb(struct evconnlistener *lis, void *arg)
{
	struct proxy *px = arg;
	struct timeval tv = tv_from_ms(ACCEPT_PAUSE_MS);
	int64_t now = time_now_ms();
	int saved = errno;

	(void)evconnlistener_disable(lis);
	if (evtimer_add(px->accept_pause, &tv) != 0) {
		/* No timer, no resume: accept again rather than go deaf. */
		log_warnx("proxy: evtimer_add failed");
		(void)evconnlistener_enable(lis);
	}
	px->accept_pauses++;
	if (now - px->accept_logged_ms >= 60000) {
		log_warnx("proxy on 127.0.0.1:%u: accept: %s; pausing %d ms "
		    "(%llu pauses since the last such line)", (unsigned)px->port,
		    strerror(saved), ACCEPT_PAUSE_MS,
		    (unsigned long long)px->accept_pauses);
		px_record(px, "proxy-limit", "accept paused: %s",
		    strerror(saved));
		px->accept_logged_ms = now;
		px->accept_pauses = 0;
	}
}

struct proxy *
proxy_new(struct event_base *base, struct evdns_base *dns,
    const struct proxy_policy *pol, const struct proxy_limits *lim,
    uint16_t port, proxy_record_fn *record, void *arg, char *err, size_t errlen)
{
	struct proxy *px;
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	int fd;

	if (lim->max_conns == 0 || lim->max_heads == 0 ||
	    lim->max_header_bytes < 64 || lim->idle_ms == 0 ||
	    lim->head_ms == 0 || lim->connect_ms == 0) {
		snprintf(err, errlen, "proxy limits must not be zero");
		return NULL;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if ((fd = compat_socket_cloexec(AF_INET, SOCK_STREAM)) == -1) {
		snprintf(err, errlen, "proxy socket: %s", strerror(errno));
		return NULL;
	}
	/*
	 * SO_REUSEADDR: a restarted daemon binds the lane's persisted port
	 * again while connections of the last run sit in TIME_WAIT.
	 */
	if (compat_set_nonblock(fd) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 },
	    sizeof(int)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 64) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &slen) == -1) {
		snprintf(err, errlen, "proxy listen on 127.0.0.1:%u: %s",
		    (unsigned)port, strerror(errno));
		close(fd);
		return NULL;
	}
	px = xcalloc(1, sizeof(*px));
	px->base = base;
	px->dns = dns;
	px->port = ntohs(sin.sin_port);
	px->pol = *pol;
	px->pol.allow = xreallocarray(NULL, pol->nallow ? pol->nallow : 1,
	    sizeof(char *));
	for (size_t i = 0; i < pol->nallow; i++)
		px->pol.allow[i] = xstrdup(pol->allow[i]);
	px->lim = *lim;
	px->record = record;
	px->record_arg = arg;
	px->window_start = time_now_ms();
	TAILQ_INIT(&px->conns);
	px->lis = evconnlistener_new(base, accept_cb, px, LEV_OPT_CLOSE_ON_FREE,
	    -1, fd);
	px->accept_pause = evtimer_new(base, accept_resume_cb, px);
	if (px->lis == NULL || px->accept_pause == NULL) {
		snprintf(err, errlen, "proxy listener: out of memory");
		if (px->lis == NULL)
			close(fd);
		proxy_free(px);
		return NULL;
	}
	evconnlistener_set_error_cb(px->lis, accept_error_cb);
	return px;
}

uint16_t
proxy_port(const struct proxy *px)
{
	return px->port;
}

size_t
proxy_nconns(const struct proxy *px)
{
	return px->nconns;
}

uint64_t
proxy_requests(const struct proxy *px)
{
	return px->requests;
}

void
proxy_set_test_resolver(struct proxy *px, proxy_resolve_fn *fn, void *arg)
{
	px->test_resolve = fn;
	px->test_arg = arg;
}

void
proxy_set_secrets(struct proxy *px, const struct secret_set *set,
    struct tlsca *ca)
{
	struct pconn *c;

	/* No connection may keep a set or CA its owner is about to free. */
	while ((c = TAILQ_FIRST(&px->conns)) != NULL)
		pconn_free(c);
	px->secrets = set;
	px->ca = ca;
}

void
proxy_set_allow(struct proxy *px, char *const *allow, size_t nallow)
{
	struct pconn *c;

	/* What an open connection was let through under is not the new list. */
	while ((c = TAILQ_FIRST(&px->conns)) != NULL)
		pconn_free(c);
	for (size_t i = 0; i < px->pol.nallow; i++)
		free(px->pol.allow[i]);
	free(px->pol.allow);
	px->pol.allow = xreallocarray(NULL, nallow ? nallow : 1,
	    sizeof(char *));
	for (size_t i = 0; i < nallow; i++)
		px->pol.allow[i] = xstrdup(allow[i]);
	px->pol.nallow = nallow;
}

int
proxy_set_test_trust(struct proxy *px, const char *cafile)
{
	char err[256];
	SSL_CTX *ctx = tls_client_ctx(cafile, err, sizeof(err));

	if (ctx == NULL) {
		log_warnx("proxy: %s", err);
		return -1;
	}
	SSL_CTX_free(px->cctx);
	px->cctx = ctx;
	free(px->test_cafile);
	px->test_cafile = xstrdup(cafile);
	return 0;
}

void
proxy_free(struct proxy *px)
{
	struct pconn *c;

	if (px == NULL)
		return;
	if (px->lis != NULL)
		evconnlistener_free(px->lis);
	if (px->accept_pause != NULL)
		event_free(px->accept_pause);
	while ((c = TAILQ_FIRST(&px->conns)) != NULL)
		pconn_free(c);
	ptls_free(px);
	for (size_t i = 0; i < px->pol.nallow; i++)
		free(px->pol.allow[i]);
	free(px->pol.allow);
	free(px);
}
