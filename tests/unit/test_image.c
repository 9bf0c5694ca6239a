/*
 * daemon/sha256.c (OpenSSL EVP), daemon/imagebuild.c and daemon/image.c: the content address of an image
 * (FIPS 180-4 vectors, then which inputs change the id), image names, and
 * the instance names images get ("ali-" + 16 hex, never a lane name).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "imagebuild.h"
#include "lima.h"
#include "names.h"
#include "sha256.h"

static void
hex_of(const char *msg, size_t len, size_t reps, char out[65])
{
	struct sha256 h;
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_init(&h);
	for (size_t i = 0; i < reps; i++)
		sha256_update(&h, msg, len);
	sha256_final(&h, d);
	sha256_hex(d, out);
}

static void
test_sha256_vectors(void **state)
{
	char hex[65];

	hex_of("", 0, 1, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb924"
	    "27ae41e4649b934ca495991b7852b855");
	hex_of("abc", 3, 1, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223"
	    "b00361a396177a9cb410ff61f20015ad");
	hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    56, 1, hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039"
	    "a33ce45964ff2167f6ecedd419db06c1");
	/* One million 'a', fed in odd-sized pieces across block edges. */
	hex_of("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 40, 25000, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67"
	    "f1809a48a497200e046d39ccc7112cd0");
}

static void
id_of(const char *base, const char *from, bool docker, uint32_t cpus,
    const char *s1, const char *s2, char out[IMAGE_ID_SIZE])
{
	ProtobufCBinaryData sc[2];
	struct image_inputs in;
	size_t n = 0;

	if (s1 != NULL) {
		sc[n].data = (uint8_t *)s1;
		sc[n++].len = strlen(s1);
	}
	if (s2 != NULL) {
		sc[n].data = (uint8_t *)s2;
		sc[n++].len = strlen(s2);
	}
	memset(&in, 0, sizeof in);
	in.base_template = base;
	in.from_id = from;
	in.docker = docker;
	in.cpus = cpus;
	in.memory_mib = 4096;
	in.disk_gib = 30;
	in.scripts = sc;
	in.nscripts = n;
	image_content_id(&in, out);
}

static void
test_content_id(void **state)
{
	char a[IMAGE_ID_SIZE], b[IMAGE_ID_SIZE];
	const char *T = "template:_images/ubuntu-lts";

	id_of(T, "", false, 2, "echo a\n", NULL, a);
	assert_int_equal(strlen(a), 64);
	id_of(T, "", false, 2, "echo a\n", NULL, b);
	assert_string_equal(a, b);		/* same inputs, same id */
	id_of(T, "", false, 2, "echo b\n", NULL, b);
	assert_string_not_equal(a, b);		/* script bytes */
	id_of(T, "", true, 2, "echo a\n", NULL, b);
	assert_string_not_equal(a, b);		/* --docker */
	id_of(T, "", false, 3, "echo a\n", NULL, b);
	assert_string_not_equal(a, b);		/* resources */
	id_of(T, "0123", false, 2, "echo a\n", NULL, b);
	assert_string_not_equal(a, b);		/* parent image */
	id_of("template:_images/debian", "", false, 2, "echo a\n", NULL, b);
	assert_string_not_equal(a, b);		/* base template */
	/* Script boundaries count: ["ab"] is not ["a", "b"]. */
	id_of(T, "", false, 2, "ab", NULL, a);
	id_of(T, "", false, 2, "a", "b", b);
	assert_string_not_equal(a, b);
}

/*
 * Content ids are stored in registries and name images on disk: a change
 * of digest code (the project's own SHA-256 gave way to OpenSSL's EVP)
 * must give the very same bytes. It changes only if what is hashed changes
 * (the provision wrapper, say), which must then be on purpose: every
 * existing image is rebuilt. Last changed when the finishing step (a fresh
 * machine id for each clone) joined the id.
 */
static void
test_content_id_known(void **state)
{
	char a[IMAGE_ID_SIZE];
	const char *T = "template:_images/ubuntu-lts";

	id_of(T, "", false, 2, "echo a\n", NULL, a);
	assert_string_equal(a, "cf184a07743a3137e2eea773bddb444d"
	    "da85cf8f84373937ce2afb1bc7cb223d");
}

static void
test_image_names(void **state)
{
	static const char *const good[] = { "tools", "node-22", "a", "p.1_x",
	    "0abc" };
	static const char *const bad[] = { "", "Tools", "-x", ".x", "_x",
	    "a b", "a/b", "../x", "x\n", "al-0123456789abcdef/",
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };

	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		assert_true(names_image_valid(good[i]));
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_false(names_image_valid(bad[i]));
	assert_false(names_image_valid(NULL));
}

static void
test_instance_names(void **state)
{
	char n[NAMES_IMAGE_INSTANCE_LEN + 1];

	for (int i = 0; i < 100; i++) {
		assert_int_equal(lima_image_name_generate(n, sizeof n), 0);
		assert_true(names_image_instance_valid(n));
		/* An image is never a lane, and the other way round. */
		assert_false(names_lane_valid(n));
		assert_true(names_instance_valid(n));
	}
	assert_int_equal(lima_image_name_generate(n, NAMES_IMAGE_INSTANCE_LEN),
	    -1);
	assert_false(names_image_instance_valid("al-0123456789abcdef"));
	assert_false(names_image_instance_valid("ali-0123456789ABCDEF"));
	assert_false(names_image_instance_valid("ali-0123456789abcde"));
	assert_false(names_image_instance_valid("ali-0123456789abcdef0"));
	assert_false(names_image_instance_valid("ali-0123456789abcdef/"));
	assert_true(names_image_instance_valid("ali-0123456789abcdef"));
}

static void
test_clone_argv(void **state)
{
	struct lima *l = lima_new("/usr/bin/limactl", "/tmp/h",
	    "template:_images/ubuntu-lts", (char *const[]){ NULL });
	char **argv;

	/* From an image to a valid instance name, or a lane to an image. */
	assert_null(lima_argv_clone(l, "al-0123456789abcdef",
	    "al-00000000000000aa"));
	assert_null(lima_argv_clone(l, "ali-0123456789abcdef", "../x"));
	/* commit: a lane to an image, never a lane to a lane (above). */
	argv = lima_argv_clone(l, "al-0123456789abcdef", "ali-00000000000000aa");
	assert_non_null(argv);
	lima_argv_free(argv);
	assert_null(lima_argv_clone(l, "ali-0123456789abcdef", "default"));
	argv = lima_argv_clone(l, "ali-0123456789abcdef",
	    "al-00000000000000aa");
	assert_non_null(argv);
	assert_string_equal(argv[3], "clone");
	assert_string_equal(argv[4], "ali-0123456789abcdef");
	assert_string_equal(argv[5], "al-00000000000000aa");
	assert_null(argv[6]);
	lima_argv_free(argv);
	argv = lima_argv_stop(l, "ali-0123456789abcdef");
	assert_non_null(argv);
	assert_string_equal(argv[3], "stop");
	lima_argv_free(argv);
	assert_null(lima_argv_stop(l, "x"));
	lima_free(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_content_id),
		cmocka_unit_test(test_content_id_known),
		cmocka_unit_test(test_image_names),
		cmocka_unit_test(test_instance_names),
		cmocka_unit_test(test_clone_argv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
