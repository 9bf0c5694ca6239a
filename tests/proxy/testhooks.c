/*
 * The test resolver of the test daemon build (testhooks.h). A test
 * program: built under build/tests and never installed.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "laned.h"
#include "log.h"
#include "proxy.h"
#include "proxyreq.h"
#include "testhooks.h"
#include "util.h"

#define TEST_MAPS 32

static struct {
	char name[PROXYREQ_HOST_MAX + 1];
	struct sockaddr_storage addr;
	bool trusted;
} maps[TEST_MAPS];
static size_t nmaps;

static int
resolve(void *arg, const char *host, struct sockaddr_storage *addrs, size_t *n,
    bool *trusted)
{
	size_t got = 0;

	*trusted = false;
	for (size_t i = 0; i < nmaps && got < *n; i++) {
		if (strcmp(maps[i].name, host) != 0)
			continue;
		addrs[got++] = maps[i].addr;
		if (maps[i].trusted)
			*trusted = true;
	}
	*n = got;
	return got > 0 ? 0 : -1;
}

static char *trust;	/* AGENT_LANED_TEST_TRUST */

static void
hook(struct proxy *px)
{
	if (nmaps > 0)
		proxy_set_test_resolver(px, resolve, NULL);
	/* A trust store that cannot be loaded is no reason to trust more. */
	if (trust != NULL && proxy_set_test_trust(px, trust) != 0)
		fatalx("AGENT_LANED_TEST_TRUST: cannot load %s", trust);
}

int
testhooks_secmem(void)
{
	const char *env = getenv("AGENT_LANED_TEST_SECURE_HEAP");

	if (env == NULL || strcmp(env, "off") != 0)
		return 1;
	log_warnx("TEST BUILD: no secure heap (AGENT_LANED_TEST_SECURE_HEAP="
	    "off): secret values in ordinary memory");
	return 0;
}

void
testhooks_init(struct laned *d)
{
	const char *env = getenv("AGENT_LANED_TEST_RESOLVE");
	const char *tenv = getenv("AGENT_LANED_TEST_TRUST");
	char buf[4096], *tok, *save = NULL;

	if (tenv != NULL && tenv[0] != '\0') {
		trust = xstrdup(tenv);
		log_warnx("TEST BUILD: lane proxies verify upstreams against %s "
		    "(AGENT_LANED_TEST_TRUST), not the system trust store",
		    trust);
		d->proxy_hook = hook;
	}
	if (env == NULL || env[0] == '\0')
		return;
	if (strlen(env) >= sizeof buf)
		fatalx("AGENT_LANED_TEST_RESOLVE is too long");
	str_copy(buf, env, sizeof buf);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *a;
		struct sockaddr_in *s4;
		struct sockaddr_in6 *s6;

		if (eq == NULL || nmaps == TEST_MAPS ||
		    (size_t)(eq - tok) > PROXYREQ_HOST_MAX)
			fatalx("AGENT_LANED_TEST_RESOLVE: bad entry %s", tok);
		*eq = '\0';
		a = eq + 1;
		maps[nmaps].trusted = *a != '!';
		if (*a == '!')
			a++;
		str_copy(maps[nmaps].name, tok, sizeof maps[nmaps].name);
		memset(&maps[nmaps].addr, 0, sizeof maps[nmaps].addr);
		s4 = (struct sockaddr_in *)&maps[nmaps].addr;
		s6 = (struct sockaddr_in6 *)&maps[nmaps].addr;
		if (inet_pton(AF_INET, a, &s4->sin_addr) == 1)
			s4->sin_family = AF_INET;
		else if (inet_pton(AF_INET6, a, &s6->sin6_addr) == 1)
			s6->sin6_family = AF_INET6;
		else
			fatalx("AGENT_LANED_TEST_RESOLVE: bad address %s", a);
		nmaps++;
	}
	log_warnx("TEST BUILD: lane proxies resolve %zu names from "
	    "AGENT_LANED_TEST_RESOLVE", nmaps);
	d->proxy_hook = hook;
}
