/*
 * The lane proxy's policy (daemon/proxypolicy.c), every stage. The input
 * is split at NUL bytes: an allow pattern, a server name, a request head
 * to the proxy, a request head inside the tunnel; its first byte picks
 * internet mode. Checked against a plain reading of the rules:
 *   - a head passes only to an allowed host (internet, a secret's host, or
 *     a pattern that matches) and a listed port; a CONNECT is intercepted
 *     exactly when the host is a secret's;
 *   - no head passes with a placeholder of a secret not for its host;
 *   - a server name passes exactly when it names the target;
 *   - a request in the tunnel passes only when its Host names the target;
 *   - a refusal has a status, a reason, an event and a detail, and no
 *     detail holds a value (unless the guest typed it).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxypolicy.h"
#include "proxyreq.h"
#include "proxysecret.h"
#include "secret.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define PH_A "AGENTLANE_PH_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define PH_B "AGENTLANE_PH_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define VAL_A "value-of-A-0123"
#define VAL_B "value-of-B-4567"

static struct secret_set *set;
static bool typed;	/* the input holds a value itself */

static void
init(void)
{
	const char *ha[] = { "*.a.test" }, *hb[] = { "b.test" };
	char err[128];

	set = secret_set_new(2);
	if (secret_set_add(set, "A", PH_A, VAL_A, strlen(VAL_A), ha, 1, err,
	    sizeof err) != 0 || secret_set_add(set, "B", PH_B, VAL_B,
	    strlen(VAL_B), hb, 1, err, sizeof err) != 0)
		abort();
}

static void
check_deny(const struct proxypolicy_decision *d)
{
	if (d->verdict != PROXYPOLICY_DENY)
		return;
	if ((d->status != 400 && d->status != 403 && d->status != 421) ||
	    d->why == NULL || d->event == NULL || d->detail[0] == '\0' ||
	    (!typed && (strstr(d->detail, VAL_A) != NULL ||
	    strstr(d->detail, VAL_B) != NULL)))
		abort();
}

/* Placeholders of secrets that do not list host, anywhere in the head. */
static bool
foreign(const char *head, size_t n, const char *host)
{
	proxysecret_mask m = proxysecret_find(set, head, n);

	for (size_t i = 0; i < set->n; i++)
		if ((m & (1u << i)) && !secret_host_match(&set->v[i], host))
			return true;
	return false;
}

/* Splits p[0..n) at the next NUL: the piece, NUL-terminated (malloc'd). */
static char *
piece(const uint8_t **p, size_t *n, size_t *len)
{
	const uint8_t *nul = memchr(*p, '\0', *n);
	size_t k = nul != NULL ? (size_t)(nul - *p) : *n;
	char *s = malloc(k + 1);

	if (s == NULL)
		abort();
	memcpy(s, *p, k);
	s[k] = '\0';
	*len = k;
	*p += nul != NULL ? k + 1 : k;
	*n -= nul != NULL ? k + 1 : k;
	return s;
}

static void
stages(struct proxy_policy *pol, const char *sni, const char *h1, size_t l1,
    const char *h2, size_t l2)
{
	struct proxyreq t, r;
	struct proxypolicy_query q = { .pol = pol, .secrets = set };
	struct proxypolicy_decision d;
	const char *why;
	bool allowed;

	if (proxyreq_parse(h1, l1, &t, &why) != 0)
		return;
	q.stage = PROXYPOLICY_HEAD;
	q.target = &t;
	q.head = h1;
	proxypolicy_decide(&q, &d);
	check_deny(&d);
	allowed = pol->internet || secret_set_any_host(set, t.host) ||
	    (pol->nallow > 0 && proxyreq_host_match(pol->allow[0], t.host));
	if (d.verdict != PROXYPOLICY_DENY) {
		if (!allowed || foreign(h1, l1, t.host) ||
		    (t.connect ? t.port != 443 : t.port != 80))
			abort();
		if ((d.verdict == PROXYPOLICY_INTERCEPT) != (t.connect &&
		    secret_set_any_host(set, t.host)) ||
		    (d.verdict == PROXYPOLICY_FORWARD) != !t.connect)
			abort();
	}
	if (!t.connect)
		return;
	q.stage = PROXYPOLICY_SNI;
	q.sni = sni[0] != '\0' ? sni : NULL;
	proxypolicy_decide(&q, &d);
	check_deny(&d);
	size_t sn = strlen(sni);
	if (sn > 0 && sni[sn - 1] == '.')
		sn--;
	if ((d.verdict == PROXYPOLICY_PASS) != (sni[0] != '\0' &&
	    sn == strlen(t.host) && strncasecmp(sni, t.host, sn) == 0))
		abort();
	if (proxyreq_parse_origin(h2, l2, &r, &why) != 0)
		return;
	q.stage = PROXYPOLICY_REQUEST;
	q.req = &r;
	q.head = h2;
	proxypolicy_decide(&q, &d);
	check_deny(&d);
	if (d.verdict == PROXYPOLICY_FORWARD && (strcmp(r.host, t.host) != 0 ||
	    foreign(h2, l2, t.host)))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxy_policy pol;
	char *pat, *sni, *h1, *h2, *allow[1];
	size_t lp, ls, l1, l2;

	if (set == NULL)
		init();
	if (size == 0)
		return 0;
	typed = memmem(data, size, VAL_A, strlen(VAL_A)) != NULL ||
	    memmem(data, size, VAL_B, strlen(VAL_B)) != NULL;
	memset(&pol, 0, sizeof(pol));
	pol.internet = data[0] & 1;
	pol.connect_ports[0] = 443;
	pol.nconnect_ports = 1;
	pol.http_ports[0] = 80;
	pol.nhttp_ports = 1;
	data++;
	size--;
	pat = piece(&data, &size, &lp);
	sni = piece(&data, &size, &ls);
	h1 = piece(&data, &size, &l1);
	h2 = piece(&data, &size, &l2);
	if (lp <= PROXYREQ_HOST_MAX && proxyreq_pattern_valid(pat)) {
		allow[0] = pat;
		pol.allow = allow;
		pol.nallow = 1;
	}
	stages(&pol, sni, h1, l1, h2, l2);
	free(pat);
	free(sni);
	free(h1);
	free(h2);
	return 0;
}
