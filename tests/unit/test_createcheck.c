/*
 * daemon/lanecheck.c: lanecheck_create, the pure check of a CreateLane
 * request against the configured caps and the number of live lanes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "lanecheck.h"
#include "names.h"
#include "netpolicy.h"
#include "units.h"

#define OK 0
#define INVALID AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT
#define EXHAUSTED AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED

static struct config cfg;

/* Fresh defaults with small caps (config_free first: it owns strings). */
static void
caps(void)
{
	config_free(&cfg);
	config_defaults(&cfg);
	cfg.default_cpus = 2;
	cfg.max_cpus = 4;
	cfg.default_memory_mib = 2048;
	cfg.max_memory_mib = 8192;
	cfg.default_disk_gib = 20;
	cfg.max_disk_gib = 50;
	cfg.default_lifetime_ms = 3600 * UNITS_MS_PER_S;
	cfg.max_lifetime_ms = 4 * 3600 * UNITS_MS_PER_S;
	cfg.default_idle_timeout_ms = 600 * UNITS_MS_PER_S;
	cfg.max_lanes = 3;
}

/* Runs the check; the message must be set exactly when it refuses. */
static int
check(const Agentlane__V1__CreateLane *req, size_t live,
    struct lane_create_plan *plan, const char *want_in_err)
{
	char err[512] = "";
	int code = lanecheck_create(&cfg, req, live, plan, err, sizeof err);

	if (code == OK && err[0] != '\0')
		fail_msg("accepted with a message: %s", err);
	if (code != OK && (want_in_err == NULL ||
	    strstr(err, want_in_err) == NULL))
		fail_msg("error \"%s\" lacks \"%s\"", err,
		    want_in_err != NULL ? want_in_err : "(none expected)");
	return code;
}

static void
test_defaults_apply(void **state)
{
	Agentlane__V1__CreateLane req = AGENTLANE__V1__CREATE_LANE__INIT;
	struct lane_create_plan plan;

	caps();
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_int_equal(plan.cpus, 2);
	assert_int_equal(plan.memory_mib, 2048);
	assert_int_equal(plan.disk_gib, 20);
	assert_int_equal(plan.lifetime_ms, 3600 * UNITS_MS_PER_S);
	assert_int_equal(plan.idle_timeout_ms, 600 * UNITS_MS_PER_S);
	assert_int_equal(plan.nlabels, 0);
}

static void
test_request_values(void **state)
{
	Agentlane__V1__CreateLane req = AGENTLANE__V1__CREATE_LANE__INIT;
	struct lane_create_plan plan;

	caps();
	req.cpus = 4;
	req.memory_mib = 8192;
	req.disk_gib = 50;
	req.timeout_s = 4 * 3600;
	req.idle_timeout_s = 30;
	assert_int_equal(check(&req, 2, &plan, NULL), OK);
	assert_int_equal(plan.cpus, 4);
	assert_int_equal(plan.memory_mib, 8192);
	assert_int_equal(plan.disk_gib, 50);
	assert_int_equal(plan.lifetime_ms, 4 * 3600 * UNITS_MS_PER_S);
	assert_int_equal(plan.idle_timeout_ms, 30 * UNITS_MS_PER_S);
}

static void
test_caps(void **state)
{
	Agentlane__V1__CreateLane req;
	struct lane_create_plan plan;

	caps();
	agentlane__v1__create_lane__init(&req);
	req.cpus = 5;
	assert_int_equal(check(&req, 0, &plan, "max_cpus"), EXHAUSTED);

	agentlane__v1__create_lane__init(&req);
	req.memory_mib = 8193;
	assert_int_equal(check(&req, 0, &plan, "max_memory"), EXHAUSTED);
	req.memory_mib = 255;
	assert_int_equal(check(&req, 0, &plan, "below the floor of 256MiB"),
	    INVALID);

	agentlane__v1__create_lane__init(&req);
	req.disk_gib = 51;
	assert_int_equal(check(&req, 0, &plan, "max_disk"), EXHAUSTED);

	agentlane__v1__create_lane__init(&req);
	req.timeout_s = 4 * 3600 + 1;
	assert_int_equal(check(&req, 0, &plan, "max_lifetime"), EXHAUSTED);
	/* A value whose product in ms would wrap is still refused. */
	req.timeout_s = UINT64_MAX / 1000 + 1;
	assert_int_equal(check(&req, 0, &plan, "max_lifetime"), EXHAUSTED);

	agentlane__v1__create_lane__init(&req);
	req.idle_timeout_s = 4 * 3600 + 1;
	/* The same cap as a lifetime's: the same kind of error (issue 31). */
	assert_int_equal(check(&req, 0, &plan, "idle timeout 14401s is above "
	    "the cap of 4h (max_lifetime)"), EXHAUSTED);

	/* A default above the cap (a config finalize would refuse it). */
	agentlane__v1__create_lane__init(&req);
	cfg.default_cpus = 8;
	assert_int_equal(check(&req, 0, &plan, "max_cpus"), EXHAUSTED);
}

static void
test_live_count(void **state)
{
	Agentlane__V1__CreateLane req = AGENTLANE__V1__CREATE_LANE__INIT;
	struct lane_create_plan plan;

	caps();
	assert_int_equal(check(&req, 2, &plan, NULL), OK);
	assert_int_equal(check(&req, 3, &plan, "max_lanes"), EXHAUSTED);
	assert_int_equal(check(&req, 300, &plan, "3 (max_lanes)"), EXHAUSTED);
	/* Invalid requests are refused as such even at the cap. */
	req.cpus = 99;
	assert_int_equal(check(&req, 3, &plan, "max_cpus"), EXHAUSTED);
}

static void
test_labels(void **state)
{
	Agentlane__V1__CreateLane req = AGENTLANE__V1__CREATE_LANE__INIT;
	Agentlane__V1__Label lb[LANE_LABELS_MAX + 1], *lv[LANE_LABELS_MAX + 1];
	struct lane_create_plan plan;
	char keys[LANE_LABELS_MAX + 1][8], longkey[LANE_LABEL_KEY_MAX + 2];
	char longval[LANE_LABEL_VALUE_MAX + 2];

	caps();
	for (size_t i = 0; i <= LANE_LABELS_MAX; i++) {
		agentlane__v1__label__init(&lb[i]);
		snprintf(keys[i], sizeof keys[i], "k%zu", i);
		lb[i].key = keys[i];
		lb[i].value = "v";
		lv[i] = &lb[i];
	}
	req.labels = lv;
	req.n_labels = LANE_LABELS_MAX;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_int_equal(plan.nlabels, LANE_LABELS_MAX);
	assert_string_equal(plan.labels[3].key, "k3");
	assert_string_equal(plan.labels[3].value, "v");

	req.n_labels = LANE_LABELS_MAX + 1;
	assert_int_equal(check(&req, 0, &plan, "at most"), INVALID);

	req.n_labels = 2;
	lb[1].key = "k0";
	assert_int_equal(check(&req, 0, &plan, "duplicate label k0"), INVALID);
	lb[1].key = "bad key";
	assert_int_equal(check(&req, 0, &plan, "label keys"), INVALID);
	lb[1].key = "";
	assert_int_equal(check(&req, 0, &plan, "label keys"), INVALID);
	memset(longkey, 'a', sizeof longkey - 1);
	longkey[sizeof longkey - 1] = '\0';
	lb[1].key = longkey;
	assert_int_equal(check(&req, 0, &plan, "label keys"), INVALID);
	longkey[LANE_LABEL_KEY_MAX] = '\0';	/* exactly the maximum */
	assert_int_equal(check(&req, 0, &plan, NULL), OK);

	lb[1].key = "k1";
	lb[1].value = "tab\there";
	assert_int_equal(check(&req, 0, &plan, "control"), INVALID);
	lb[1].value = "del\x7f";
	assert_int_equal(check(&req, 0, &plan, "UTF-8"), INVALID);
	lb[1].value = "latin1 \xe9t\xe9";	/* not UTF-8: JSON could not hold it */
	assert_int_equal(check(&req, 0, &plan, "UTF-8"), INVALID);
	lb[1].value = "overlong \xc0\xaf";
	assert_int_equal(check(&req, 0, &plan, "UTF-8"), INVALID);
	lb[1].value = "c1 \xc2\x9b";		/* U+009B, CSI */
	assert_int_equal(check(&req, 0, &plan, "control"), INVALID);
	lb[1].value = "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93";	/* "été ✓" */
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	memset(longval, 'x', sizeof longval - 1);
	longval[sizeof longval - 1] = '\0';
	lb[1].value = longval;
	assert_int_equal(check(&req, 0, &plan, "at most"), INVALID);
	longval[LANE_LABEL_VALUE_MAX] = '\0';
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	/* UTF-8 values are printable; a missing value is empty. */
	lb[1].value = "caf\xc3\xa9";
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	lb[1].value = NULL;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_string_equal(plan.labels[1].value, "");
}

/* The network policy of a request: mode, allow list, sudo, defaults. */
static void
test_network(void **state)
{
	Agentlane__V1__CreateLane req = AGENTLANE__V1__CREATE_LANE__INIT;
	struct lane_create_plan plan;
	char *allow[40], err[256];
	char names[40][32];

	caps();
	/* Defaults: the network key, no allow list, guest root dropped. */
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_int_equal(plan.net_mode, NETPOLICY_INTERNET);
	assert_string_equal(plan.allow, "");
	assert_false(plan.sudo);
	cfg.network = NETPOLICY_NONE;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_int_equal(plan.net_mode, NETPOLICY_NONE);

	req.network = "bogus";
	assert_int_equal(check(&req, 0, &plan, "is not internet, none or allow"),
	    INVALID);
	req.network = "allow";
	req.sudo = true;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_int_equal(plan.net_mode, NETPOLICY_ALLOW);
	assert_true(plan.sudo);

	/* The configured allow list applies when the request names none. */
	config_free(&cfg);
	caps();
	assert_int_equal(config_set(&cfg, "allow", "a.example.org, *.npmjs.org",
	    err, sizeof err), 0);
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_string_equal(plan.allow, "a.example.org\n*.npmjs.org");

	/* The request's own, normalised, duplicates dropped. */
	allow[0] = "Registry.NPMJS.org.";
	allow[1] = "*.PyPI.org";
	allow[2] = "registry.npmjs.org";
	req.allow = allow;
	req.n_allow = 3;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_string_equal(plan.allow, "registry.npmjs.org\n*.pypi.org");

	allow[1] = "*.org";
	assert_int_equal(check(&req, 0, &plan, "is not a host name"), INVALID);
	allow[1] = "a b";
	assert_int_equal(check(&req, 0, &plan, "is not a host name"), INVALID);
	allow[1] = "";
	assert_int_equal(check(&req, 0, &plan, "1-255 characters"), INVALID);
	allow[1] = NULL;
	assert_int_equal(check(&req, 0, &plan, "1-255 characters"), INVALID);

	/* Bounded: 32 patterns, and only for allow lanes. */
	for (size_t i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "h%zu.example.org", i);
		allow[i] = names[i];
	}
	req.n_allow = 32;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_int_equal(netpolicy_allow_count(plan.allow), 32);
	req.n_allow = 33;
	assert_int_equal(check(&req, 0, &plan, "at most 32 allow patterns"),
	    INVALID);
	req.n_allow = 1;
	req.network = "internet";
	assert_int_equal(check(&req, 0, &plan, "need network allow"), INVALID);
	/* The configured default counts as allow too. */
	req.network = "";
	cfg.network = NETPOLICY_ALLOW;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_string_equal(plan.allow, "h0.example.org");
}

/* The list text is bounded as a whole too (the registry's column). */
static void
test_allow_text_bound(void **state)
{
	char text[64] = "", why[256];

	assert_true(netpolicy_allow_add(text, sizeof text,
	    "aaaaaaaaaaaaaaaaaaaa.example.org", why, sizeof why));
	assert_false(netpolicy_allow_add(text, sizeof text,
	    "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.example.org", why, sizeof why));
	assert_non_null(strstr(why, "longer than 63 bytes"));
	assert_string_equal(text, "aaaaaaaaaaaaaaaaaaaa.example.org");
}

/* create --name: the alias shape, and owned excluding detach. */
static void
test_alias_and_owned(void **state)
{
	Agentlane__V1__CreateLane req = AGENTLANE__V1__CREATE_LANE__INIT;
	struct lane_create_plan plan;
	char longest[LANE_ALIAS_MAX + 2];
	const char *good[] = { "web", "x", "my-lane.v2_x", "3f2g", "0x1",
	    "0655-web", "0123456789abcdef0" };
	/* All-hex words up to 16 are the digits of lane names: prefixes. */
	const char *bad[] = { "Web", "al-web", "ali-x", "-x", ".x", "_x",
	    "a b", "we/b", "caf\xc3\xa9", "0", "a", "3f2a", "0655", "cafe",
	    "0123456789abcdef" };

	caps();
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		req.alias = (char *)good[i];
		assert_true(names_alias_valid(good[i]));
		assert_int_equal(check(&req, 0, &plan, NULL), OK);
		assert_string_equal(plan.alias, good[i]);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		req.alias = (char *)bad[i];
		assert_false(names_alias_valid(bad[i]));
		assert_int_equal(check(&req, 0, &plan, "--name"), INVALID);
	}
	/* Still an alias's shape, so that rows from before resolve. */
	assert_true(names_alias_shape("0655"));
	assert_false(names_alias_shape("al-0655"));
	memset(longest, 'a', sizeof longest);
	longest[LANE_ALIAS_MAX] = '\0';
	req.alias = longest;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	longest[LANE_ALIAS_MAX] = 'a';
	longest[LANE_ALIAS_MAX + 1] = '\0';
	assert_int_equal(check(&req, 0, &plan, "--name"), INVALID);
	req.alias = "";
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_string_equal(plan.alias, "");

	req.owned = true;
	assert_int_equal(check(&req, 0, &plan, NULL), OK);
	assert_true(plan.owned);
	req.detach = true;
	assert_int_equal(check(&req, 0, &plan, "detached"), INVALID);
}

int
main(void)
{
#define T(f) cmocka_unit_test(f)
	const struct CMUnitTest tests[] = {
		T(test_defaults_apply),
		T(test_request_values),
		T(test_caps),
		T(test_live_count),
		T(test_labels),
		T(test_network),
		T(test_allow_text_bound),
		T(test_alias_and_owned),
	};
#undef T
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	config_free(&cfg);
	return rc;
}
