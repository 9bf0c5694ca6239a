/*
 * daemon/netpolicy.c: the guest rule set and YAML keys of each network
 * mode (pinned by golden files, one per mode), the rule order the ssh
 * replies depend on, the Lima version gate and the proxy environment.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden.h"
#include "netpolicy.h"

static void
check_golden(enum netpolicy_mode m, uint16_t port, bool sudo, bool userns,
    const char *file)
{
	char yaml[8192];
	int n = netpolicy_yaml(m, port, sudo, userns, yaml, sizeof yaml);

	assert_true(n > 0);
	golden_check(file, yaml, (size_t)n);
}

static void
test_golden_internet(void **state)
{
	check_golden(NETPOLICY_INTERNET, 0, false, false,
	    "netpolicy-internet.yaml");
}

static void
test_golden_none(void **state)
{
	check_golden(NETPOLICY_NONE, 0, false, false, "netpolicy-none.yaml");
}

static void
test_golden_allow(void **state)
{
	check_golden(NETPOLICY_ALLOW, 41234, false, false,
	    "netpolicy-allow.yaml");
}

static void
test_golden_sudo(void **state)
{
	check_golden(NETPOLICY_INTERNET, 0, true, false,
	    "netpolicy-internet-sudo.yaml");
}

static size_t at(const char *, const char *);

/*
 * A lane with Docker (cloned from an image built with --docker) keeps
 * user namespaces; every other one turns them off, before the stamp, so
 * that a guest where that fails never says "enforced".
 */
static void
test_golden_docker(void **state)
{
	char yaml[8192];

	check_golden(NETPOLICY_INTERNET, 0, false, true,
	    "netpolicy-internet-docker.yaml");
	assert_true(netpolicy_yaml(NETPOLICY_NONE, 0, false, false, yaml,
	    sizeof yaml) > 0);
	assert_true(at(yaml, "set -eu") <
	    at(yaml, "echo 0 > /proc/sys/user/max_user_namespaces"));
	assert_true(at(yaml, "echo 0 > /proc/sys/user/max_user_namespaces") <
	    at(yaml, "/run/agent-lane/netpolicy.tmp"));
	(void)at(yaml, "echo 0 > /proc/sys/kernel/unprivileged_userns_clone");
	assert_true(netpolicy_yaml(NETPOLICY_NONE, 0, false, true, yaml,
	    sizeof yaml) > 0);
	assert_null(strstr(yaml, "max_user_namespaces"));
	assert_null(strstr(yaml, "unprivileged_userns_clone"));
}

/* Position of needle in hay, failing when absent. */
static size_t
at(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);
	if (p == NULL)
		fail_msg("no '%s' in:\n%s", needle, hay);
	return (size_t)(p - hay);
}

/* Established first (ssh replies go to 192.168.5.2), then DNS, then drops. */
static void
test_order(void **state)
{
	char r[4096];

	assert_true(netpolicy_ruleset(NETPOLICY_INTERNET, 0, r, sizeof r) > 0);
	assert_true(at(r, "ct state established,related accept") <
	    at(r, "192.168.5.3 udp dport 53 accept"));
	assert_true(at(r, "192.168.5.3 tcp dport 53 accept") <
	    at(r, "192.168.0.0/16"));
	assert_true(at(r, "policy accept") < at(r, "drop"));
	for (const char *net = "10.0.0.0/8\0" "172.16.0.0/12\0"
	    "169.254.0.0/16\0" "100.64.0.0/10\0" "fc00::/7\0" "fe80::/10\0";
	    *net; net += strlen(net) + 1)
		(void)at(r, net);

	assert_true(netpolicy_ruleset(NETPOLICY_NONE, 0, r, sizeof r) > 0);
	assert_true(at(r, "policy drop") < at(r, "established,related accept"));
	assert_null(strstr(r, "dport 53"));

	assert_true(netpolicy_ruleset(NETPOLICY_ALLOW, 8123, r, sizeof r) > 0);
	(void)at(r, "ip daddr 192.168.5.2 tcp dport 8123 accept");
	assert_null(strstr(r, "dport 53"));
	assert_int_equal(netpolicy_ruleset(NETPOLICY_ALLOW, 0, r, sizeof r), -1);
	/* A buffer one short fails rather than cutting the rules. */
	int n = netpolicy_ruleset(NETPOLICY_INTERNET, 0, r, sizeof r);
	assert_int_equal(netpolicy_ruleset(NETPOLICY_INTERNET, 0, r, (size_t)n), -1);
}

/* An internet lane with secrets lets its proxy port through, before drops. */
static void
test_internet_proxy(void **state)
{
	char r[4096];

	assert_true(netpolicy_ruleset(NETPOLICY_INTERNET, 0, r, sizeof r) > 0);
	assert_null(strstr(r, "192.168.5.2 tcp dport"));
	assert_true(netpolicy_ruleset(NETPOLICY_INTERNET, 8123, r, sizeof r) > 0);
	assert_true(at(r, "ip daddr 192.168.5.2 tcp dport 8123 accept") <
	    at(r, "192.168.0.0/16"));
	assert_null(strstr(r, "dport 22"));
}

static const char test_pem[] =
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBczCCARmgAwIBAgIUPxpJHlRCSq9mPj4g4g3mjB7umeAwCgYIKoZIzj0EAwIw\n"
    "DzENMAsGA1UEAwwEc3R1YjAeFw0yNjEyMDEwOTQ5MzRaFw0yNjEyMzEwOTQ5MzRa\n"
    "-----END CERTIFICATE-----\n";

/* The lane CA: a system provision item that installs it; checked before ready. */
static void
test_ca(void **state)
{
	char y[4096], c[8192], bad[sizeof test_pem + 16];
	int n;

	n = netpolicy_ca_yaml(test_pem, y, sizeof y);
	assert_true(n > 0);
	assert_int_equal(strncmp(y, "- mode: system\n  script: |\n", 27), 0);
	(void)at(y, "    set -eu\n");
	assert_true(at(y, "    -----BEGIN CERTIFICATE-----\n") <
	    at(y, "    mv -f /usr/local/share/ca-certificates/agent-lane.crt.tmp "
	    "/usr/local/share/ca-certificates/agent-lane.crt\n"));
	assert_true(at(y, "agent-lane.crt\n") <
	    at(y, "    update-ca-certificates\n"));
	/* One short fails rather than cutting the script. */
	assert_int_equal(netpolicy_ca_yaml(test_pem, y, (size_t)n), -1);
	/* Anything but a plain PEM certificate is refused, not quoted. */
	snprintf(bad, sizeof bad, "%s'$(reboot)'\n", test_pem);
	assert_int_equal(netpolicy_ca_yaml(bad, y, sizeof y), -1);
	assert_int_equal(netpolicy_ca_yaml("-----BEGIN PRIVATE KEY-----\nMII\n",
	    y, sizeof y), -1);
	assert_int_equal(netpolicy_ca_yaml("", y, sizeof y), -1);

	assert_true(netpolicy_check_script(NETPOLICY_INTERNET, false, 22,
	    test_pem, c, sizeof c) > 0);
	assert_true(at(c, "grep -qxF 'MIIBczCCARmgAwIBAgIUPxpJHlRCSq9mPj4g4g3mjB7"
	    "umeAwCgYIKoZIzj0EAwIw' /etc/ssl/certs/ca-certificates.crt") <
	    at(c, "echo 'ok internet'"));
	assert_true(netpolicy_check_script(NETPOLICY_INTERNET, false, 22, NULL,
	    c, sizeof c) > 0);
	assert_null(strstr(c, "ca-certificates.crt"));
	assert_int_equal(netpolicy_check_script(NETPOLICY_INTERNET, false, 22,
	    bad, c, sizeof c), -1);
}

static void
test_modes(void **state)
{
	enum netpolicy_mode m;

	assert_true(netpolicy_mode_parse("none", &m));
	assert_int_equal(m, NETPOLICY_NONE);
	assert_true(netpolicy_mode_parse("allow", &m));
	assert_string_equal(netpolicy_mode_name(m), "allow");
	assert_false(netpolicy_mode_parse("Internet", &m));
	assert_false(netpolicy_mode_parse("", &m));
}

static void
test_version(void **state)
{
	char why[512];

	assert_true(netpolicy_lima_version_ok("limactl version 2.2.0\n", why, sizeof why));
	assert_true(netpolicy_lima_version_ok("limactl version 2.10.1", why, sizeof why));
	assert_true(netpolicy_lima_version_ok("limactl version 3.0.0", why, sizeof why));
	assert_false(netpolicy_lima_version_ok("limactl version 2.1.9", why, sizeof why));
	assert_non_null(strstr(why, "Lima 2.1.9 cannot drop guest root"));
	assert_non_null(strstr(why, "2.2.0 or later"));
	assert_false(netpolicy_lima_version_ok("limactl version 1.99.0", why, sizeof why));
	assert_false(netpolicy_lima_version_ok("lima 2.2.0", why, sizeof why));
	assert_non_null(strstr(why, "cannot read the Lima version"));
	assert_false(netpolicy_lima_version_ok(NULL, why, sizeof why));
}

static void
test_env(void **state)
{
	char env[8][64];

	/* Internet lanes have a proxy only with secrets (a port); none never. */
	assert_int_equal(netpolicy_proxy_env(NETPOLICY_INTERNET, 0, env), 0);
	assert_int_equal(netpolicy_proxy_env(NETPOLICY_NONE, 8123, env), 0);
	assert_int_equal(netpolicy_proxy_env(NETPOLICY_INTERNET, 8123, env), 6);
	assert_string_equal(env[2], "http_proxy=http://192.168.5.2:8123");
	assert_int_equal(netpolicy_proxy_env(NETPOLICY_ALLOW, 0, env), 0);
	assert_int_equal(netpolicy_proxy_env(NETPOLICY_ALLOW, 8123, env), 6);
	assert_string_equal(env[0], "HTTP_PROXY=http://192.168.5.2:8123");
	assert_string_equal(env[1], "HTTPS_PROXY=http://192.168.5.2:8123");
	assert_string_equal(env[3], "https_proxy=http://192.168.5.2:8123");
	assert_string_equal(env[4], "NO_PROXY=localhost,127.0.0.1,::1");
	assert_string_equal(env[5], "no_proxy=localhost,127.0.0.1,::1");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_internet),
		cmocka_unit_test(test_golden_none),
		cmocka_unit_test(test_golden_allow),
		cmocka_unit_test(test_golden_sudo),
		cmocka_unit_test(test_golden_docker),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_internet_proxy),
		cmocka_unit_test(test_ca),
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_env),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
