/*
 * daemon/lima.c: the lane YAML and the base templates it may name. Every
 * key of the YAML closes a path from the guest to the host, so the golden
 * file pins the whole document and a second test checks each isolation key
 * on its own (a reordering that loses one fails there by name).
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
#include "lima.h"
#include "netpolicy.h"

#define BASE "template:_images/ubuntu-lts"

static int
setup_lima(void **state)
{
	*state = lima_new("/bin/true", "/tmp/x", BASE, NULL);
	return *state == NULL ? -1 : 0;
}

static int
teardown_lima(void **state)
{
	lima_free(*state);
	return 0;
}

/* Renders into a newly allocated string. */
static char *
render(struct lima *l, uint32_t cpus, uint32_t memory_mib, uint32_t disk_gib)
{
	struct lima_lane_spec spec = { .cpus = cpus, .memory_mib = memory_mib,
	    .disk_gib = disk_gib };
	char *buf = calloc(1, 8192);
	int n;

	assert_non_null(buf);
	n = lima_yaml_render(l, &spec, buf, 8192);
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	return buf;
}

static void
test_golden(void **state)
{
	char *yaml = render(*state, 2, 4096, 30);

	golden_check("lane.yaml", yaml, strlen(yaml));
	free(yaml);
}

/*
 * What agent-laned writes for each network policy: the lane YAML with the
 * policy's provision script, and user.passwordlessSudo: false with
 * minimumLimaVersion 2.2.0 unless sudo is kept (tests/unit/golden/lane-*).
 */
static void
check_policy_golden(struct lima *l, int mode, uint16_t port, bool sudo,
    bool userns, const char *file)
{
	struct lima_lane_spec spec = { .cpus = 2, .memory_mib = 4096,
	    .disk_gib = 30, .has_policy = true, .net_mode = mode,
	    .proxy_port = port, .sudo = sudo, .userns = userns };
	char *yaml = calloc(1, 16384);
	int n;

	assert_non_null(yaml);
	n = lima_yaml_render(l, &spec, yaml, 16384);
	assert_true(n > 0);
	golden_check(file, yaml, (size_t)n);
	/* The policy always fits the buffer the daemon renders into. */
	assert_true(n < 8192);
	free(yaml);
}

static void
test_golden_policies(void **state)
{
	check_policy_golden(*state, NETPOLICY_INTERNET, 0, false, false,
	    "lane-internet.yaml");
	check_policy_golden(*state, NETPOLICY_NONE, 0, false, false,
	    "lane-none.yaml");
	check_policy_golden(*state, NETPOLICY_ALLOW, 41234, false, false,
	    "lane-allow.yaml");
	check_policy_golden(*state, NETPOLICY_INTERNET, 0, true, false,
	    "lane-internet-sudo.yaml");
	/* A clone of an image with Docker: user namespaces kept. */
	check_policy_golden(*state, NETPOLICY_INTERNET, 0, false, true,
	    "lane-internet-docker.yaml");
}

/*
 * An internet lane with secrets: its proxy port let through, and the lane
 * CA's certificate installed by one more system provision item.
 */
static void
test_golden_secrets(void **state)
{
	static const char pem[] =
	    "-----BEGIN CERTIFICATE-----\n"
	    "MIIBczCCARmgAwIBAgIUPxpJHlRCSq9mPj4g4g3mjB7umeAwCgYIKoZIzj0EAwIw\n"
	    "-----END CERTIFICATE-----\n";
	struct lima_lane_spec spec = { .cpus = 2, .memory_mib = 4096,
	    .disk_gib = 30, .has_policy = true, .net_mode = NETPOLICY_INTERNET,
	    .proxy_port = 41234, .ca_pem = pem };
	char *yaml = calloc(1, 16384);
	int n;

	assert_non_null(yaml);
	n = lima_yaml_render(*state, &spec, yaml, 16384);
	assert_true(n > 0);
	golden_check("lane-internet-secrets.yaml", yaml, (size_t)n);
	/* A CA needs the policy's provision list to go into. */
	spec.has_policy = false;
	assert_int_equal(lima_yaml_render(*state, &spec, yaml, 16384), -1);
	free(yaml);
}

static void
test_policy_keys(void **state)
{
	struct lima_lane_spec spec = { .cpus = 2, .memory_mib = 4096,
	    .disk_gib = 30, .has_policy = true, .net_mode = NETPOLICY_ALLOW,
	    .proxy_port = 0 };
	char buf[8192];
	char *y;

	/* allow without a proxy port has no rule set to render. */
	assert_int_equal(lima_yaml_render(*state, &spec, buf, sizeof buf), -1);
	y = render(*state, 2, 4096, 30);
	/* No policy: neither key (image builds). */
	assert_null(strstr(y, "passwordlessSudo"));
	assert_null(strstr(y, "provision:"));
	assert_non_null(strstr(y, "minimumLimaVersion: 2.0.0\n"));
	free(y);
}

/*
 * Value of "key" in yaml: a top-level key when parent is NULL, else a key
 * of the top-level mapping parent (indented by two spaces). Fails unless
 * the key occurs exactly once there.
 */
static void
expect_key(const char *yaml, const char *parent, const char *key,
    const char *want)
{
	const char *p = yaml, *found = NULL;
	bool inside = parent == NULL;
	size_t plen = parent != NULL ? strlen(parent) : 0, klen = strlen(key);
	int count = 0;
	char value[256];

	while (*p != '\0') {
		const char *eol = strchr(p, '\n'), *k = p;

		if (eol == NULL)
			eol = p + strlen(p);
		if (parent != NULL && p[0] != ' ' && p[0] != '-') {
			inside = strncmp(p, parent, plen) == 0 &&
			    strncmp(p + plen, ":\n", 2) == 0;
		} else if (inside) {
			if (parent != NULL)
				k = strncmp(p, "  ", 2) == 0 && p[2] != ' ' ?
				    p + 2 : NULL;
			if (k != NULL && strncmp(k, key, klen) == 0 &&
			    k[klen] == ':') {
				found = k + klen + 1;
				count++;
			}
		}
		p = *eol == '\n' ? eol + 1 : eol;
	}
	if (count != 1)
		fail_msg("%s%s%s: found %d times, want once", parent ? parent : "",
		    parent ? "." : "", key, count);
	if (*found == ' ')
		found++;
	snprintf(value, sizeof value, "%.*s", (int)strcspn(found, "\n"), found);
	if (strcmp(value, want) != 0)
		fail_msg("%s%s%s is \"%s\", want \"%s\"", parent ? parent : "",
		    parent ? "." : "", key, value, want);
}

/*
 * The items of a top-level sequence of mappings ("- k: v" then "  k: v"
 * lines), each flattened to "k=v,k=v". Returns the number of items.
 */
static size_t
sequence_items(const char *yaml, const char *key, char items[][256],
    size_t max)
{
	char head[64];
	const char *p;
	size_t n = 0;

	snprintf(head, sizeof head, "\n%s:\n", key);
	if ((p = strstr(yaml, head)) == NULL)
		return 0;
	for (p += strlen(head); p[0] == '-' || p[0] == ' '; p++) {
		size_t len = strcspn(p, "\n"), ilen;
		const char *field = p + 2, *colon;
		char *item;

		if (p[0] == '-') {
			assert_true(n < max);
			items[n++][0] = '\0';
		}
		assert_true(n > 0 && len > 2);
		colon = strstr(field, ": ");
		assert_true(colon != NULL && colon < p + len);
		item = items[n - 1];
		ilen = strlen(item);
		snprintf(item + ilen, 256 - ilen, "%s%.*s=%.*s",
		    ilen > 0 ? "," : "", (int)(colon - field), field,
		    (int)(p + len - colon - 2), colon + 2);
		p += len;
		if (*p == '\0')
			break;
	}
	return n;
}

static void
test_isolation_keys(void **state)
{
	char *yaml = render(*state, 2, 4096, 30);
	char items[8][256];
	size_t n;

	expect_key(yaml, NULL, "minimumLimaVersion", "2.0.0");
	expect_key(yaml, NULL, "cpus", "2");
	expect_key(yaml, NULL, "memory", "4GiB");
	expect_key(yaml, NULL, "disk", "30GiB");
	/* plain: no mounts, port forwards or containerd from any template. */
	expect_key(yaml, NULL, "plain", "true");
	expect_key(yaml, NULL, "mounts", "[]");
	expect_key(yaml, "containerd", "system", "false");
	expect_key(yaml, "containerd", "user", "false");
	expect_key(yaml, "ssh", "loadDotSSHPubKeys", "false");
	expect_key(yaml, "ssh", "forwardAgent", "false");
	expect_key(yaml, "ssh", "forwardX11", "false");
	expect_key(yaml, "ssh", "forwardX11Trusted", "false");
	expect_key(yaml, NULL, "propagateProxyEnv", "false");
	expect_key(yaml, "hostResolver", "enabled", "false");
	expect_key(yaml, "video", "display", "none");

	/* Exactly one base: the image template, nothing that mounts $HOME. */
	assert_non_null(strstr(yaml, "\nbase:\n- " BASE "\n"));
	assert_null(strstr(yaml, "template:default"));

	/* Every port-forward rule ignores; the first matches any guest IP. */
	n = sequence_items(yaml, "portForwards", items, 8);
	assert_int_equal(n, 2);
	assert_string_equal(items[0], "guestIP=\"0.0.0.0\","
	    "guestIPMustBeZero=false,proto=any,ignore=true");
	assert_string_equal(items[1], "guestIP=\"127.0.0.1\",proto=any,"
	    "ignore=true");
	for (size_t i = 0; i < n; i++) {
		assert_null(strstr(items[i], "hostPort"));
		assert_null(strstr(items[i], "hostSocket"));
	}

	/* Things that would open a path to the host are absent altogether. */
	assert_null(strstr(yaml, "location:"));
	assert_null(strstr(yaml, "writable"));
	assert_null(strstr(yaml, "forwardAgent: true"));
	free(yaml);
}

static void
test_resources(void **state)
{
	char *yaml;

	yaml = render(*state, 8, 1536, 100);
	expect_key(yaml, NULL, "cpus", "8");
	expect_key(yaml, NULL, "memory", "1536MiB");
	expect_key(yaml, NULL, "disk", "100GiB");
	free(yaml);

	yaml = render(*state, 1, 1024, 1);
	expect_key(yaml, NULL, "memory", "1GiB");
	free(yaml);

	yaml = render(*state, 1, 16384, 1);
	expect_key(yaml, NULL, "memory", "16GiB");
	free(yaml);

	yaml = render(*state, 1, 256, 1);
	expect_key(yaml, NULL, "memory", "256MiB");
	free(yaml);
}

static void
test_base_path(void **state)
{
	struct lima *l = lima_new("/bin/true", "/tmp/x", "/srv/t/lane-base.yaml",
	    NULL);
	char *yaml = render(l, 2, 4096, 30);

	assert_non_null(strstr(yaml, "\nbase:\n- /srv/t/lane-base.yaml\n"));
	free(yaml);
	lima_free(l);
}

static void
test_small_buffer(void **state)
{
	struct lima_lane_spec spec = { .cpus = 2, .memory_mib = 4096,
	    .disk_gib = 30 };
	char buf[4096];
	int n;

	n = lima_yaml_render(*state, &spec, buf, sizeof buf);
	assert_true(n > 0);
	/* The terminating NUL must fit too. */
	assert_int_equal(lima_yaml_render(*state, &spec, buf, (size_t)n), -1);
	assert_int_equal(lima_yaml_render(*state, &spec, buf, 16), -1);
	assert_int_equal(lima_yaml_render(*state, &spec, buf, (size_t)n + 1), n);
}

static void
test_template_accepts(void **state)
{
	static const char *const good[] = {
		"template:_images/ubuntu-lts",
		"template:_images/debian-12",
		"template:_images/fedora_41.x",
		"/abs/path.yaml",
		"/opt/lima/templates/lane-base_2.yaml",
	};

	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		if (!lima_template_acceptable(good[i]))
			fail_msg("\"%s\" was refused", good[i]);
}

static void
test_template_rejects(void **state)
{
	static const char *const bad[] = {
		"",
		"template:default",
		"template:docker",
		"template://default",
		"template:_images",
		"template:_images/",
		"template:_images/ubuntu lts",
		"template:_images/ubuntu-lts\n",
		"template:_images/ubuntu-lts\nmounts: [{location: \"~\"}]",
		"template:_images/x\"",
		"template:_images/x'",
		"template:_images/sub/x",
		"template:_images/../default",
		"/abs/pa th.yaml",
		"/abs/path.yaml\nmounts: []",
		"/abs/path.yaml\r",
		"\"/abs/path.yaml\"",
		"'/abs/path.yaml'",
		"/abs/\"x.yaml",
		"/abs/../etc/lima.yaml",
		"/../abs.yaml",
		"relative.yaml",
		"./x.yaml",
		"../x.yaml",
		"~/x.yaml",
		"https://example.com/x.yaml",
		"file:///abs/x.yaml",
		"default",
	};

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		if (lima_template_acceptable(bad[i]))
			fail_msg("\"%s\" was accepted", bad[i]);
}

/* ".." is refused wherever it stands, not only between slashes. */
static void
test_template_rejects_dotdot(void **state)
{
	static const char *const bad[] = {
		"/abs/..",
		"/..",
		"template:_images/..",
	};

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		if (lima_template_acceptable(bad[i]))
			fail_msg("\"%s\" was accepted", bad[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_golden, setup_lima,
		    teardown_lima),
		cmocka_unit_test_setup_teardown(test_isolation_keys, setup_lima,
		    teardown_lima),
		cmocka_unit_test_setup_teardown(test_golden_policies,
		    setup_lima, teardown_lima),
		cmocka_unit_test_setup_teardown(test_golden_secrets,
		    setup_lima, teardown_lima),
		cmocka_unit_test_setup_teardown(test_policy_keys, setup_lima,
		    teardown_lima),
		cmocka_unit_test_setup_teardown(test_resources, setup_lima,
		    teardown_lima),
		cmocka_unit_test(test_base_path),
		cmocka_unit_test_setup_teardown(test_small_buffer, setup_lima,
		    teardown_lima),
		cmocka_unit_test(test_template_accepts),
		cmocka_unit_test(test_template_rejects),
		cmocka_unit_test(test_template_rejects_dotdot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
