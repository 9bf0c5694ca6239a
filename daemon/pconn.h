/*
 * The lane proxy's connection layer, at the bottom of its stack:
 *
 *   proxy.c        accepts, reads the head, asks the policy, resolves,
 *                  connects, and hands a connection to one of:
 *   proxyhttp.c    the request relay (requests framed again, responses
 *                  scanned), and
 *   proxytls.c     the two TLS handshakes of an interception;
 *   pconn.c        this layer: one struct pconn per guest connection, its
 *                  bufferevents, timers, byte caps, splicing, refusals and
 *                  records;
 *   proxypolicy.c, proxyfwd.c, proxyreq.c, proxyresp.c, proxysecret.c
 *                  pure functions over bytes, fuzzed.
 *
 * Each layer calls only those below it. What flows up goes through the
 * callbacks a connection carries (on_idle, tls_done), set by the layer
 * that owns its state at the time. Private to the proxy's files.
 */
#ifndef LANED_PCONN_H
#define LANED_PCONN_H

#include <sys/queue.h>
#include <stdbool.h>
#include <stdint.h>

#include "proxy.h"
#include "proxyfwd.h"
#include "proxypolicy.h"
#include "proxyreq.h"
#include "proxyresp.h"
#include "proxysecret.h"

#include <event2/util.h>

struct bufferevent;
struct event;
struct evconnlistener;
struct evdns_getaddrinfo_request;
typedef struct ssl_ctx_st SSL_CTX;

/* A response head on an intercepted connection, at most (proxyresp.h). */
#define PROXY_RESP_HEAD_MAX	(64 * 1024)

/* Per-direction buffering: reads from one side stop above this much. */
#define SPLICE_HIGH	(256 * 1024)
#define SPLICE_LOW	(64 * 1024)

/*
 * PS_UPTLS and PS_CLITLS are the two handshakes of an intercepted CONNECT
 * (proxytls.c), upstream first; PS_HTTP relays parsed requests one by one
 * (intercepted, or the one request of a plain http:// connection) and the
 * responses as they come.
 */
enum pstate {
	PS_HEAD, PS_RESOLVE, PS_CONNECT, PS_UPTLS, PS_CLITLS, PS_HTTP,
	PS_SPLICE, PS_CLOSING,
};

/* Where a PS_HTTP connection is in its current request. */
enum rqstate { RQ_HEAD, RQ_BODY, RQ_DONE };

struct pconn;
typedef void pconn_fn(struct pconn *);

struct pconn {
	TAILQ_ENTRY(pconn) entry;
	struct proxy *px;
	enum pstate st;
	struct bufferevent *cli, *up;
	struct event *idle;
	struct evdns_getaddrinfo_request *dnsreq;
	struct proxyreq req;
	char *fwd;		/* the head of an http:// request, to send */
	size_t fwdlen;
	uint64_t bytes;
	char what[PROXYREQ_HOST_MAX + 32];	/* "CONNECT host:443" */
	/* Up-calls, set by the layer that owns the state. */
	pconn_fn *on_idle;	/* idle in PS_CLITLS or PS_HTTP; else freed */
	pconn_fn *tls_done;	/* both handshakes done, SNI agreed */
	/* Interception and request relay (proxytls.c, proxyhttp.c). */
	bool intercept;		/* CONNECT to a host of a secret */
	enum rqstate rq;
	struct event *deadline;	/* a keep-alive request's head deadline */
	struct proxyreq rreq;	/* the request being relayed */
	struct proxyfwd_body fbody;	/* its body, framed again */
	/* The responses of an intercepted connection, scanned (proxyresp.h). */
	struct proxyresp *resp;
	uint64_t expected;	/* requests whose responses were awaited */
	uint64_t out_at;	/* responses complete when a byte last went */
	bool resp_out;		/* some response byte went to the guest */
	proxysecret_mask redacted;	/* in the response under way */
	uint64_t nredacted;
	uint64_t rec_done;	/* responses complete at the last record */
	proxysecret_mask used;	/* secrets recorded as used */
};

TAILQ_HEAD(pconn_list, pconn);

struct proxy {
	struct event_base *base;
	struct evdns_base *dns;
	struct evconnlistener *lis;
	/* Out of descriptors: the listener rests, this timer wakes it. */
	struct event *accept_pause;
	int64_t accept_logged_ms;	/* last log line about it */
	uint64_t accept_pauses;		/* since that line */
	uint16_t port;
	struct proxy_policy pol;
	struct proxy_limits lim;
	proxy_record_fn *record;
	void *record_arg;
	proxy_resolve_fn *test_resolve;
	void *test_arg;
	const struct secret_set *secrets;	/* borrowed, see proxy.h */
	struct tlsca *ca;			/* borrowed */
	SSL_CTX *sctx, *cctx;		/* guest and upstream sides, made lazily */
	char *test_cafile;		/* proxy_set_test_trust */
	struct pconn_list conns;
	size_t nconns;
	size_t nheads;		/* connections still in PS_HEAD */
	uint64_t bytes;
	uint64_t requests;	/* heads sent upstream */
	/* Record rate: a window of one minute and what it dropped. */
	int64_t window_start;
	uint32_t window_count;
	uint64_t suppressed;
};

/* Closes both sides at once and frees c. */
void pconn_free(struct pconn *);
void pconn_state(struct pconn *, enum pstate);
/* False: c is freed. */
bool pconn_enable(struct pconn *, struct bufferevent *, short what);
bool pconn_timer(struct pconn *, uint64_t ms);
bool idle_touch(struct pconn *);
uint64_t head_ms(const struct proxy *);
/* Answers status on the client side (plain or TLS) and closes. */
void pconn_refuse(struct pconn *, int status, const char *reason);
/* A policy's refusal: its record (after c->what if it wants), its answer. */
void pconn_deny(struct pconn *, const struct proxypolicy_decision *);
/* Counts n bytes against the caps; false: over (c is freed). */
bool pconn_count(struct pconn *, size_t n);
/* Opaque bytes src -> dst within the caps; false: c is freed or closing. */
bool splice_move(struct pconn *, struct bufferevent *src,
    struct bufferevent *dst);
/* A CONNECT without interception: opaque bytes both ways from now on. */
void splice_start(struct pconn *);
/* bev's side ended: free it, write out what the other side holds, close. */
void pconn_close_side(struct pconn *, struct bufferevent *bev);
void px_record(struct proxy *, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The callbacks of a new connection's timer and of a closing side. */
void pconn_idle_cb(evutil_socket_t, short, void *);
void pconn_closing_write_cb(struct bufferevent *, void *);
void pconn_free_event_cb(struct bufferevent *, short, void *);

#endif
