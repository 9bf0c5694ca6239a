/*
 * al-proxy-harness: runs one lane proxy (daemon/proxy.c) on its own event
 * loop, for tests/regress/proxy.sh. Prints "port N" once listening, then
 * one "EVENT detail" line per record; exits when stdin closes, after a
 * last line "cpu MS" (its own user + system time, for the busy-loop test).
 *
 *   --allow PATTERN        repeated
 *   --connect-ports LIST   default 443
 *   --http-ports LIST      default 80
 *   --max-conns N --max-header N --max-conn-bytes N --max-lane-bytes N
 *   --idle-ms N --head-ms N --max-heads N --connect-ms N --events-per-min N
 *   --map NAME=ADDR        test resolver answer, vetted like DNS
 *   --trust NAME=ADDR      test resolver answer that skips vetting
 *   --internet             any public host (an internet lane with secrets)
 *   --secret NAME=PLACEHOLDER=VALUE@HOST[,HOST...]   repeated; makes a lane CA
 *   --secret-header NAME=HEADER   a credential header of secret NAME besides
 *                          the defaults (repeated; after that --secret)
 *   --ca-out FILE          writes the lane CA's certificate (PEM) there
 *   --max-leaves N         the lane CA's leaf cache (default 64)
 *   --upstream-ca FILE     upstream trust store instead of the system's
 * A line on stdin prints "requests N" (request heads sent upstream so far).
 * With no --map/--trust the proxy uses libevent's evdns, as the daemon does.
 * This is a test program: it is built under build/tests and never installed.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>

#include "proxy.h"
#include "proxyreq.h"
#include "secret.h"
#include "tls.h"
#include "tlsca.h"

#define MAX_MAP 32

struct map {
	char name[PROXYREQ_HOST_MAX + 1];
	struct sockaddr_storage addr;
	bool trusted;
};

static struct map maps[MAX_MAP];
static size_t nmaps;

static void
record(void *arg, const char *event, const char *detail)
{
	printf("%s %s\n", event, detail);
	fflush(stdout);
}

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
	return got ? 0 : -1;
}

static void
add_map(const char *arg, bool trusted)
{
	const char *eq = strchr(arg, '=');
	struct map *m = &maps[nmaps];

	if (eq == NULL || nmaps >= MAX_MAP ||
	    (size_t)(eq - arg) > PROXYREQ_HOST_MAX) {
		fprintf(stderr, "bad --map %s\n", arg);
		exit(2);
	}
	memcpy(m->name, arg, (size_t)(eq - arg));
	m->name[eq - arg] = '\0';
	memset(&m->addr, 0, sizeof(m->addr));
	struct sockaddr_in *s4 = (struct sockaddr_in *)&m->addr;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&m->addr;
	if (inet_pton(AF_INET, eq + 1, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, eq + 1, &s6->sin6_addr) == 1)
		s6->sin6_family = AF_INET6;
	else {
		fprintf(stderr, "bad address %s\n", eq + 1);
		exit(2);
	}
	m->trusted = trusted;
	nmaps++;
}

/* NAME=PLACEHOLDER=VALUE@HOST,HOST */
static void
add_secret(struct secret_set *set, char *arg)
{
	char *hosts[SECRET_HOSTS_MAX], *save, *tok, *ph, *val, *at, err[256];
	size_t nh = 0;

	if ((ph = strchr(arg, '=')) == NULL || (val = strchr(ph + 1, '=')) ==
	    NULL || (at = strrchr(val, '@')) == NULL) {
		fprintf(stderr, "bad --secret\n");
		exit(2);
	}
	*ph++ = '\0';
	*val++ = '\0';
	*at++ = '\0';
	for (tok = strtok_r(at, ",", &save); tok != NULL && nh < SECRET_HOSTS_MAX;
	    tok = strtok_r(NULL, ",", &save))
		hosts[nh++] = tok;
	if (secret_set_add(set, arg, ph, val, strlen(val),
	    (const char *const *)hosts, nh, err, sizeof(err)) == -1) {
		fprintf(stderr, "--secret: %s\n", err);
		exit(2);
	}
}

/* NAME=HEADER: one more credential header for the secret NAME. */
static void
add_secret_header(struct secret_set *set, const char *arg)
{
	const char *eq = strchr(arg, '='), *hdrs[SECRET_HEADERS_MAX];
	static char names[SECRET_MAX][SECRET_HEADERS_MAX]
	    [SECRET_HEADER_NAME_MAX + 1];
	static size_t counts[SECRET_MAX];
	char err[256];
	size_t i;

	for (i = 0; eq != NULL && i < set->n; i++)
		if (strlen(set->v[i].name) == (size_t)(eq - arg) &&
		    strncmp(set->v[i].name, arg, (size_t)(eq - arg)) == 0)
			break;
	if (eq == NULL || i == set->n || counts[i] >= SECRET_HEADERS_MAX ||
	    strlen(eq + 1) > SECRET_HEADER_NAME_MAX) {
		fprintf(stderr, "bad --secret-header %s\n", arg);
		exit(2);
	}
	snprintf(names[i][counts[i]++], SECRET_HEADER_NAME_MAX + 1, "%s",
	    eq + 1);
	for (size_t k = 0; k < counts[i]; k++)
		hdrs[k] = names[i][k];
	if (secret_set_headers(set, i, hdrs, counts[i], err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "--secret-header: %s\n", err);
		exit(2);
	}
}

static struct proxy *the_proxy;

/*
 * Any line on stdin ("requests") prints "requests N": the request heads
 * the proxy has sent upstream so far, for the differential suite. EOF
 * ends the harness.
 */
static void
stdin_cb(evutil_socket_t fd, short what, void *arg)
{
	char buf[256];

	if (read(fd, buf, sizeof(buf)) <= 0) {
		event_base_loopbreak(arg);
		return;
	}
	printf("requests %llu\n", (unsigned long long)proxy_requests(the_proxy));
	fflush(stdout);
}

static unsigned long long
num(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == '\0' || *end != '\0') {
		fprintf(stderr, "bad number %s\n", s);
		exit(2);
	}
	return v;
}

int
main(int argc, char **argv)
{
	struct proxy_policy pol;
	struct proxy_limits lim = {
		.max_conns = 64, .max_heads = 64, .head_ms = 10000,
		.max_header_bytes = 16384,
		.max_conn_bytes = 1ull << 30, .max_lane_bytes = 1ull << 34,
		.idle_ms = 300000, .connect_ms = 30000, .max_events_per_min = 1000,
	};
	char *allow[64];
	char err[256];
	struct secret_set *secrets = secret_set_new(SECRET_MAX);
	struct tlsca *ca = NULL;
	const char *ca_out = NULL, *upstream_ca = NULL;
	size_t max_leaves = 64;

	/* As the daemon does, before OpenSSL allocates anything. */
	tls_wipe_on_free();

	memset(&pol, 0, sizeof(pol));
	pol.allow = allow;
	pol.connect_ports[0] = 443;
	pol.nconnect_ports = 1;
	pol.http_ports[0] = 80;
	pol.nhttp_ports = 1;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(o, "--internet") == 0) {
			pol.internet = true;
			continue;
		}
		if (v == NULL) {
			fprintf(stderr, "%s wants a value\n", o);
			return 2;
		}
		i++;
		if (strcmp(o, "--allow") == 0) {
			if (pol.nallow >= 64)
				return 2;
			allow[pol.nallow] = strdup(v);
			if (allow[pol.nallow] == NULL ||
			    !proxyreq_pattern_valid(allow[pol.nallow])) {
				fprintf(stderr, "bad pattern %s\n", v);
				return 2;
			}
			pol.nallow++;
		} else if (strcmp(o, "--connect-ports") == 0) {
			if (!proxy_parse_ports(v, pol.connect_ports, &pol.nconnect_ports))
				return 2;
		} else if (strcmp(o, "--http-ports") == 0) {
			if (!proxy_parse_ports(v, pol.http_ports, &pol.nhttp_ports))
				return 2;
		} else if (strcmp(o, "--max-conns") == 0)
			lim.max_conns = (uint32_t)num(v);
		else if (strcmp(o, "--max-header") == 0)
			lim.max_header_bytes = (uint32_t)num(v);
		else if (strcmp(o, "--max-conn-bytes") == 0)
			lim.max_conn_bytes = num(v);
		else if (strcmp(o, "--max-lane-bytes") == 0)
			lim.max_lane_bytes = num(v);
		else if (strcmp(o, "--idle-ms") == 0)
			lim.idle_ms = num(v);
		else if (strcmp(o, "--head-ms") == 0)
			lim.head_ms = num(v);
		else if (strcmp(o, "--max-heads") == 0)
			lim.max_heads = (uint32_t)num(v);
		else if (strcmp(o, "--connect-ms") == 0)
			lim.connect_ms = num(v);
		else if (strcmp(o, "--events-per-min") == 0)
			lim.max_events_per_min = (uint32_t)num(v);
		else if (strcmp(o, "--map") == 0)
			add_map(v, false);
		else if (strcmp(o, "--trust") == 0)
			add_map(v, true);
		else if (strcmp(o, "--secret") == 0)
			add_secret(secrets, argv[i]);
		else if (strcmp(o, "--secret-header") == 0)
			add_secret_header(secrets, v);
		else if (strcmp(o, "--ca-out") == 0)
			ca_out = v;
		else if (strcmp(o, "--max-leaves") == 0)
			max_leaves = (size_t)num(v);
		else if (strcmp(o, "--upstream-ca") == 0)
			upstream_ca = v;
		else {
			fprintf(stderr, "unknown option %s\n", o);
			return 2;
		}
	}

	struct event_base *base = event_base_new();
	struct evdns_base *dns = NULL;
	if (base == NULL)
		return 1;
	if (nmaps == 0 && (dns = evdns_base_new(base,
	    EVDNS_BASE_INITIALIZE_NAMESERVERS |
	    EVDNS_BASE_DISABLE_WHEN_INACTIVE)) == NULL) {
		fprintf(stderr, "evdns_base_new failed\n");
		return 1;
	}
	struct proxy *px = proxy_new(base, dns, &pol, &lim, 0, record, NULL,
	    err, sizeof(err));
	if (px == NULL) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (nmaps > 0)
		proxy_set_test_resolver(px, resolve, NULL);
	if (secrets->n > 0) {
		if ((ca = tlsca_new("al-0000000000harness", 86400000ull * 7,
		    max_leaves, err, sizeof(err))) == NULL) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		proxy_set_secrets(px, secrets, ca);
	}
	if (ca_out != NULL) {
		FILE *f = fopen(ca_out, "w");
		size_t len;
		const char *pem = ca != NULL ? tlsca_cert_pem(ca, &len) : "";
		if (f == NULL || fwrite(pem, 1, strlen(pem), f) != strlen(pem) ||
		    fclose(f) != 0) {
			fprintf(stderr, "cannot write %s\n", ca_out);
			return 1;
		}
	}
	if (upstream_ca != NULL && proxy_set_test_trust(px, upstream_ca) != 0) {
		fprintf(stderr, "cannot load %s\n", upstream_ca);
		return 1;
	}
	the_proxy = px;
	struct event *in = event_new(base, 0, EV_READ | EV_PERSIST, stdin_cb, base);
	if (in == NULL || event_add(in, NULL) != 0)
		return 1;
	printf("port %u\n", (unsigned)proxy_port(px));
	fflush(stdout);
	event_base_dispatch(base);
	{
		struct rusage ru;
		if (getrusage(RUSAGE_SELF, &ru) == 0)
			printf("cpu %lld\n", (long long)(ru.ru_utime.tv_sec +
			    ru.ru_stime.tv_sec) * 1000 + (ru.ru_utime.tv_usec +
			    ru.ru_stime.tv_usec) / 1000);
		fflush(stdout);
	}
	proxy_free(px);
	secret_set_free(secrets);
	tlsca_free(ca);
	event_free(in);
	if (dns != NULL)
		evdns_base_free(dns, 0);
	event_base_free(base);
	for (size_t i = 0; i < pol.nallow; i++)
		free(allow[i]);
	return 0;
}
