/*
 * The lane proxy's policy (see proxypolicy.h): every "may this go there"
 * of the proxy, in one pure function.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proxyfwd.h"
#include "proxypolicy.h"
#include "util.h"

static void
deny(struct proxypolicy_decision *d, int status, const char *event,
    const char *why, bool what, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void
deny(struct proxypolicy_decision *d, int status, const char *event,
    const char *why, bool what, const char *fmt, ...)
{
	va_list ap;

	d->verdict = PROXYPOLICY_DENY;
	d->status = status;
	d->event = event;
	d->why = why;
	d->what = what;
	va_start(ap, fmt);
	vsnprintf(d->detail, sizeof(d->detail), fmt, ap);
	va_end(ap);
	str_sanitize(d->detail);
}

/* A refusal of proxyfwd_check, as a decision. */
static void
deny_head(struct proxypolicy_decision *d, const struct secret_set *set,
    const char *host, int st, const struct proxyfwd_head *h)
{
	if (st != 403 || h->refused < 0) {
		deny(d, st, "proxy-deny", h->why != NULL ? h->why : "refused",
		    true, "bad request: %s", h->why != NULL ? h->why :
		    "refused");
		return;
	}
	if (h->header[0] == '\0')
		deny(d, 403, "secret-refused", "a secret's placeholder for "
		    "another host", false, "secret %s sent to %s: refused",
		    set->v[h->refused].name, host);
	else
		deny(d, 403, "secret-refused", "a secret's placeholder outside "
		    "its credential headers", false, "secret %s in header %s to "
		    "%s: refused (not a credential header)",
		    set->v[h->refused].name, h->header, host);
}

static bool
port_in(const uint16_t *ports, size_t n, uint16_t port)
{
	for (size_t i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

static bool
host_allowed(const struct proxy_policy *pol, const struct secret_set *set,
    const char *host)
{
	if (pol->internet || secret_set_any_host(set, host))
		return true;
	for (size_t i = 0; i < pol->nallow; i++)
		if (proxyreq_host_match(pol->allow[i], host))
			return true;
	return false;
}

static void
decide_head(const struct proxypolicy_query *q, struct proxypolicy_decision *d)
{
	const struct proxyreq *t = q->target;
	struct proxyfwd_head h;
	int st;

	if ((st = proxyfwd_check(q->secrets, q->head, t, t->host, t->connect ?
	    PROXYFWD_CONNECT : PROXYFWD_PLAIN, &h)) != 0) {
		deny_head(d, q->secrets, t->host, st, &h);
		return;
	}
	if (!host_allowed(q->pol, q->secrets, t->host)) {
		deny(d, 403, "proxy-deny", "host not allowed", true,
		    "host not in the allow list");
		return;
	}
	if (!(t->connect ? port_in(q->pol->connect_ports,
	    q->pol->nconnect_ports, t->port) : port_in(q->pol->http_ports,
	    q->pol->nhttp_ports, t->port))) {
		deny(d, 403, "proxy-deny", "port not allowed", true,
		    "port not allowed");
		return;
	}
	d->verdict = !t->connect ? PROXYPOLICY_FORWARD :
	    secret_set_any_host(q->secrets, t->host) ? PROXYPOLICY_INTERCEPT :
	    PROXYPOLICY_TUNNEL;
}

static void
decide_sni(const struct proxypolicy_query *q, struct proxypolicy_decision *d)
{
	const char *host = q->target->host;
	char s[PROXYREQ_HOST_MAX + 1];
	size_t n;

	if (q->sni == NULL) {
		deny(d, 421, "proxy-deny", "TLS server name does not match the "
		    "CONNECT target", true, "the guest sent no TLS server name");
		return;
	}
	n = strlen(q->sni);
	if (n > 0 && q->sni[n - 1] == '.')
		n--;
	if (n == strlen(host) && strncasecmp(q->sni, host, n) == 0) {
		d->verdict = PROXYPOLICY_PASS;
		return;
	}
	str_copy(s, q->sni, sizeof(s));
	str_sanitize_ascii(s);
	deny(d, 421, "proxy-deny", "TLS server name does not match the CONNECT "
	    "target", true, "TLS server name %s is not the CONNECT target", s);
}

static void
decide_request(const struct proxypolicy_query *q,
    struct proxypolicy_decision *d)
{
	const struct proxyreq *t = q->target, *r = q->req;
	struct proxyfwd_head h;
	int st;

	/* Decided on the CONNECT target; Host must only agree with it. */
	if (strcmp(r->host, t->host) != 0 || (r->host_port &&
	    r->port != t->port)) {
		deny(d, 421, "proxy-deny", "Host does not match the CONNECT "
		    "target", true, "Host %s is not the CONNECT target", r->host);
		return;
	}
	if ((st = proxyfwd_check(q->secrets, q->head, r, t->host,
	    PROXYFWD_TUNNEL, &h)) != 0) {
		deny_head(d, q->secrets, t->host, st, &h);
		return;
	}
	d->verdict = PROXYPOLICY_FORWARD;
}

void
proxypolicy_decide(const struct proxypolicy_query *q,
    struct proxypolicy_decision *d)
{
	memset(d, 0, sizeof(*d));
	switch (q->stage) {
	case PROXYPOLICY_HEAD:
		decide_head(q, d);
		return;
	case PROXYPOLICY_SNI:
		decide_sni(q, d);
		return;
	case PROXYPOLICY_REQUEST:
		decide_request(q, d);
		return;
	}
	deny(d, 400, "proxy-deny", "internal policy stage", true,
	    "internal policy stage");
}
