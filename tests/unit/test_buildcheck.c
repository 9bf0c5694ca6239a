/*
 * daemon/imagebuild.c: image_build_check, the pure check of a BuildImage
 * request against the configured caps: names, scripts, shape, the parent
 * image, and the row it plans (content id, name by content, scripts).
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
#include "image.h"
#include "imagebuild.h"

#define OK 0
#define INVALID AGENTLANE__V1__ERROR_CODE__INVALID_ARGUMENT
#define EXHAUSTED AGENTLANE__V1__ERROR_CODE__RESOURCE_EXHAUSTED
#define NOT_FOUND AGENTLANE__V1__ERROR_CODE__NOT_FOUND

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
}

/* Runs the check; the message must be set exactly when it refuses. */
static int
check(const Agentlane__V1__BuildImage *req, const struct image_record *from,
    struct image_build_plan *plan, const char *want_in_err)
{
	char err[512] = "";
	int code = image_build_check(&cfg, req, from, plan, err, sizeof err);

	if (code == OK && err[0] != '\0')
		fail_msg("accepted with a message: %s", err);
	if (code != OK && (want_in_err == NULL ||
	    strstr(err, want_in_err) == NULL))
		fail_msg("error \"%s\" lacks \"%s\"", err,
		    want_in_err != NULL ? want_in_err : "(none expected)");
	return code;
}

/* A request with n scripts named s0, s1, ... of the given bodies. */
struct req {
	Agentlane__V1__BuildImage req;
	Agentlane__V1__ProvisionScript s[IMAGE_SCRIPTS_N + 1];
	Agentlane__V1__ProvisionScript *sv[IMAGE_SCRIPTS_N + 1];
	char names[IMAGE_SCRIPTS_N + 1][16];
};

static void
req_init(struct req *r, size_t n, const char *body)
{
	memset(r, 0, sizeof *r);
	agentlane__v1__build_image__init(&r->req);
	for (size_t i = 0; i < n; i++) {
		agentlane__v1__provision_script__init(&r->s[i]);
		snprintf(r->names[i], sizeof r->names[i], "s%zu", i);
		r->s[i].name = r->names[i];
		r->s[i].script.data = (uint8_t *)body;
		r->s[i].script.len = strlen(body);
		r->sv[i] = &r->s[i];
	}
	r->req.n_provision = n;
	r->req.provision = r->sv;
}

static void
test_defaults_and_name(void **state)
{
	struct image_build_plan plan, again;
	struct req r;

	caps();
	req_init(&r, 1, "echo hi\n");
	assert_int_equal(check(&r.req, NULL, &plan, NULL), OK);
	assert_false(plan.named);
	assert_int_equal(plan.rec.cpus, 2);
	assert_int_equal(plan.rec.memory_mib, 2048);
	assert_int_equal(plan.rec.disk_gib, 20);
	assert_int_equal(strlen(plan.rec.id), 64);
	/* Named by its content: "p-" and the id's first 16 digits. */
	assert_int_equal(strncmp(plan.rec.name, "p-", 2), 0);
	assert_int_equal(strncmp(plan.rec.name + 2, plan.rec.id, 16), 0);
	assert_string_equal(plan.rec.scripts, "s0\n");
	assert_string_equal(plan.rec.from, "");

	/* A name changes the name, not the content. */
	r.req.name = "fake";
	assert_int_equal(check(&r.req, NULL, &again, NULL), OK);
	assert_true(again.named);
	assert_string_equal(again.rec.name, "fake");
	assert_string_equal(again.rec.id, plan.rec.id);
	r.req.name = "Fake";
	assert_int_equal(check(&r.req, NULL, &again, "image names"), INVALID);
	r.req.name = "";
	assert_int_equal(check(&r.req, NULL, &again, NULL), OK);
	assert_false(again.named);
}

static void
test_content_id_inputs(void **state)
{
	struct image_build_plan a, b;
	struct req r;

	caps();
	req_init(&r, 1, "echo hi\n");
	assert_int_equal(check(&r.req, NULL, &a, NULL), OK);
	req_init(&r, 1, "echo ho\n");
	assert_int_equal(check(&r.req, NULL, &b, NULL), OK);
	assert_string_not_equal(a.rec.id, b.rec.id);
	req_init(&r, 1, "echo hi\n");
	r.req.cpus = 3;
	assert_int_equal(check(&r.req, NULL, &b, NULL), OK);
	assert_string_not_equal(a.rec.id, b.rec.id);
	req_init(&r, 1, "echo hi\n");
	r.req.docker = true;
	assert_int_equal(check(&r.req, NULL, &b, NULL), OK);
	assert_string_not_equal(a.rec.id, b.rec.id);
	assert_string_equal(b.rec.scripts, "s0\ndocker-rootless\n");
	assert_true(b.rec.docker);
	/* The defaults are the inputs a request without them has. */
	req_init(&r, 1, "echo hi\n");
	r.req.cpus = 2;
	r.req.memory_mib = 2048;
	r.req.disk_gib = 20;
	assert_int_equal(check(&r.req, NULL, &b, NULL), OK);
	assert_string_equal(a.rec.id, b.rec.id);
}

static void
test_scripts(void **state)
{
	struct image_build_plan plan;
	struct req r;
	char longname[IMAGE_SCRIPT_NAME_MAX + 2];

	caps();
	req_init(&r, 0, "");
	assert_int_equal(check(&r.req, NULL, &plan, "provision script or "
	    "--docker"), INVALID);
	r.req.docker = true;
	assert_int_equal(check(&r.req, NULL, &plan, NULL), OK);
	assert_string_equal(plan.rec.scripts, "docker-rootless\n");

	req_init(&r, IMAGE_SCRIPTS_N, "true\n");
	assert_int_equal(check(&r.req, NULL, &plan, NULL), OK);
	req_init(&r, IMAGE_SCRIPTS_N + 1, "true\n");
	assert_int_equal(check(&r.req, NULL, &plan, "at most"), INVALID);

	req_init(&r, 1, "true\n");
	r.s[0].name = "with space";
	assert_int_equal(check(&r.req, NULL, &plan, "printable"), INVALID);
	r.s[0].name = "";
	assert_int_equal(check(&r.req, NULL, &plan, "printable"), INVALID);
	r.s[0].name = NULL;
	assert_int_equal(check(&r.req, NULL, &plan, "printable"), INVALID);
	memset(longname, 'x', sizeof longname);
	longname[IMAGE_SCRIPT_NAME_MAX + 1] = '\0';
	r.s[0].name = longname;
	assert_int_equal(check(&r.req, NULL, &plan, "printable"), INVALID);
	longname[IMAGE_SCRIPT_NAME_MAX] = '\0';
	assert_int_equal(check(&r.req, NULL, &plan, NULL), OK);

	/* The names, together, must fit the row. */
	req_init(&r, 9, "true\n");
	for (size_t i = 0; i < 9; i++)
		r.s[i].name = longname;
	assert_int_equal(check(&r.req, NULL, &plan, "too long together"),
	    INVALID);
}

static void
test_caps(void **state)
{
	struct image_build_plan plan;
	struct req r;

	caps();
	req_init(&r, 1, "true\n");
	r.req.cpus = 5;
	assert_int_equal(check(&r.req, NULL, &plan, "max_cpus"), EXHAUSTED);
	r.req.cpus = 4;
	r.req.memory_mib = 8193;
	assert_int_equal(check(&r.req, NULL, &plan, "max_memory"), EXHAUSTED);
	r.req.memory_mib = 255;
	assert_int_equal(check(&r.req, NULL, &plan, "caps"), EXHAUSTED);
	r.req.memory_mib = 8192;
	r.req.disk_gib = 51;
	assert_int_equal(check(&r.req, NULL, &plan, "max_disk"), EXHAUSTED);
	r.req.disk_gib = 50;
	assert_int_equal(check(&r.req, NULL, &plan, NULL), OK);
}

static void
test_parent(void **state)
{
	struct image_build_plan plan, plain;
	struct image_record from;
	struct req r;

	caps();
	memset(&from, 0, sizeof from);
	snprintf(from.name, sizeof from.name, "base");
	memset(from.id, 'a', 64);
	from.disk_gib = 40;
	from.state = IMAGE_READY;
	req_init(&r, 1, "true\n");
	assert_int_equal(check(&r.req, NULL, &plain, NULL), OK);
	r.req.from = "base";
	/* Named but not found: the handler passes no row. */
	assert_int_equal(check(&r.req, NULL, &plan, "no image base"), NOT_FOUND);
	assert_int_equal(check(&r.req, &from, &plan, NULL), OK);
	assert_string_equal(plan.rec.from, "base");
	/* The parent's disk is the floor; its id is an input. */
	assert_int_equal(plan.rec.disk_gib, 40);
	assert_string_not_equal(plan.rec.id, plain.rec.id);
	/* A row for another name is not the parent asked for. */
	snprintf(from.name, sizeof from.name, "other");
	assert_int_equal(check(&r.req, &from, &plan, "no image base"),
	    NOT_FOUND);
	r.req.from = "Bad Name";
	assert_int_equal(check(&r.req, &from, &plan, "no image"), NOT_FOUND);
	/* No parent asked for: a row given is ignored. */
	r.req.from = "";
	assert_int_equal(check(&r.req, &from, &plan, NULL), OK);
	assert_string_equal(plan.rec.from, "");
	assert_string_equal(plan.rec.id, plain.rec.id);
}

int
main(void)
{
#define T(f) cmocka_unit_test(f)
	const struct CMUnitTest tests[] = {
		T(test_defaults_and_name),
		T(test_content_id_inputs),
		T(test_scripts),
		T(test_caps),
		T(test_parent),
	};
#undef T
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	config_free(&cfg);
	return rc;
}
