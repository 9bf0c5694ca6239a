/*
 * The lane proxy's policy: one pure function from what the proxy knows at
 * a decision (the lane's policy and secrets, the CONNECT target, the TLS
 * server name, a request head) to what it does. No I/O and no state, so
 * that tests/fuzz/fuzz_proxypolicy.c drives every decision the proxy
 * makes about where bytes may go; the connection code (proxy.c,
 * proxytls.c, proxyhttp.c) only carries the decision out.
 */
#ifndef LANED_PROXYPOLICY_H
#define LANED_PROXYPOLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "proxy.h"
#include "proxyreq.h"
#include "secret.h"

enum proxypolicy_stage {
	PROXYPOLICY_HEAD,	/* a CONNECT or absolute-URI request to the proxy */
	PROXYPOLICY_SNI,	/* the guest's TLS server name, intercepted */
	PROXYPOLICY_REQUEST,	/* a request head inside an intercepted tunnel */
};

struct proxypolicy_query {
	enum proxypolicy_stage stage;
	const struct proxy_policy *pol;
	const struct secret_set *secrets;	/* NULL: none */
	/*
	 * HEAD: the request to the proxy (proxyreq_parse), whose host and
	 * port are the target. SNI and REQUEST: the CONNECT request, parsed
	 * at HEAD.
	 */
	const struct proxyreq *target;
	const char *head;		/* HEAD, REQUEST: the head parsed */
	const struct proxyreq *req;	/* REQUEST: the request in the tunnel */
	const char *sni;		/* SNI: what the guest sent, or NULL */
};

enum proxypolicy_verdict {
	PROXYPOLICY_DENY,	/* answer status; record event, detail */
	PROXYPOLICY_TUNNEL,	/* CONNECT: opaque bytes both ways */
	PROXYPOLICY_INTERCEPT,	/* CONNECT to a secret's host: TLS both sides */
	PROXYPOLICY_FORWARD,	/* an http:// request, or one in the tunnel */
	PROXYPOLICY_PASS,	/* SNI: the handshake goes on */
};

#define PROXYPOLICY_DETAIL_MAX	400

struct proxypolicy_decision {
	enum proxypolicy_verdict verdict;
	int status;		/* DENY: 400, 403 or 421 */
	const char *event;	/* DENY: "proxy-deny" or "secret-refused" */
	const char *why;	/* DENY: static text for the guest */
	/* DENY: the record's detail, never a value; after "TARGET: " when
	 * what is set (the connection's name goes in front). */
	char detail[PROXYPOLICY_DETAIL_MAX];
	bool what;
};

/*
 * Decides. HEAD: a placeholder in the head of a secret not for the
 * target, or a Connection naming a credential header (proxyfwd_check),
 * refuses; then the host must be allowed (internet, a secret's host, or
 * the allow list) and the port in the CONNECT or http list; a CONNECT to
 * a secret's host is intercepted, any other CONNECT tunnelled, an http://
 * request forwarded. SNI: it must name the CONNECT target (trailing dot
 * and case aside), else 421. REQUEST: Host must name the target (and its
 * port, if it names one), else 421; then proxyfwd_check in tunnel mode.
 */
void proxypolicy_decide(const struct proxypolicy_query *,
    struct proxypolicy_decision *);

#endif
