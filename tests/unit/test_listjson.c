/*
 * daemon/lima.c: parsing `limactl list --json` and picking the message out
 * of limactl's stderr. Both read output of a program that reads files in
 * the Lima home, so both are strict and sanitize what they keep.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lima.h"

/* One line as Lima 2.x prints it (key order and names as in its Go struct). */
#define INSTANCE(name, status) \
	"{\"name\":\"" name "\",\"hostname\":\"lima-" name "\"," \
	"\"status\":\"" status "\",\"dir\":\"/Users/u/.agent-lane/lima/" name \
	"\",\"vmType\":\"vz\",\"arch\":\"aarch64\",\"cpuType\":\"\"," \
	"\"cpus\":2,\"memory\":4294967296,\"disk\":32212254720," \
	"\"network\":[{\"lima\":\"\",\"socket\":\"\",\"vzNAT\":true," \
	"\"macAddress\":\"52:55:55:12:34:56\",\"interface\":\"\"," \
	"\"metric\":100}],\"sshLocalPort\":60022," \
	"\"sshConfigFile\":\"/Users/u/.agent-lane/lima/" name "/ssh.config\"," \
	"\"hostAgentPID\":4242,\"driverPID\":4242," \
	"\"config\":{\"vmType\":\"vz\",\"os\":\"Linux\",\"arch\":\"aarch64\"," \
	"\"images\":[{\"location\":\"https://cloud-images.ubuntu.com/x.img\"," \
	"\"arch\":\"aarch64\",\"digest\":\"sha256:00\"}],\"cpus\":2," \
	"\"memory\":\"4GiB\",\"disk\":\"30GiB\",\"mounts\":[]," \
	"\"ssh\":{\"localPort\":0,\"loadDotSSHPubKeys\":false," \
	"\"forwardAgent\":false,\"forwardX11\":false," \
	"\"forwardX11Trusted\":false},\"plain\":true,\"name\":\"ignored\"," \
	"\"status\":\"ignored\"},\"sshAddress\":\"127.0.0.1\"," \
	"\"protected\":false,\"limaVersion\":\"2.0.3\"," \
	"\"HostOS\":\"darwin\",\"HostArch\":\"aarch64\"," \
	"\"LimaHome\":\"/Users/u/.agent-lane/lima\"," \
	"\"IdentityFile\":\"/Users/u/.agent-lane/lima/_config/user\"}"

#define NAME_A "al-0123456789abcdef"
#define NAME_B "al-fedcba9876543210"
#define NAME_C "al-00000000000000ff"

static int
setup_lima(void **state)
{
	*state = lima_new("/bin/true", "/tmp/x", "template:_images/ubuntu-lts",
	    NULL);
	return *state == NULL ? -1 : 0;
}

static int
teardown_lima(void **state)
{
	lima_free(*state);
	return 0;
}

/* Parses s (without its NUL) and returns the rc; err always terminated. */
static int
parse(struct lima *l, const char *s, struct lima_instance **v, size_t *n,
    size_t max, char *err, size_t errlen)
{
	*v = NULL;
	*n = 0;
	err[0] = '\0';
	return lima_list_parse(l, s, strlen(s), v, n, max, err, errlen);
}

static void
test_list_realistic(void **state)
{
	const char *out =
	    INSTANCE(NAME_A, "Running") "\n"
	    INSTANCE(NAME_B, "Stopped") "\n"
	    INSTANCE(NAME_C, "Broken") "\n";
	struct lima_instance *v;
	size_t n;
	char err[256];

	assert_int_equal(parse(*state, out, &v, &n, 64, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].name, NAME_A);
	assert_string_equal(v[0].status, "Running");
	assert_string_equal(v[1].name, NAME_B);
	assert_string_equal(v[1].status, "Stopped");
	assert_string_equal(v[2].name, NAME_C);
	assert_string_equal(v[2].status, "Broken");
	free(v);
}

static void
test_list_blank_lines_and_crlf(void **state)
{
	const char *out =
	    "\n"
	    "\r\n"
	    INSTANCE(NAME_A, "Running") "\r\n"
	    "\n\n"
	    INSTANCE(NAME_B, "Stopped");	/* no final newline */
	struct lima_instance *v;
	size_t n;
	char err[256];

	assert_int_equal(parse(*state, out, &v, &n, 64, err, sizeof err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, NAME_A);
	assert_string_equal(v[0].status, "Running");
	assert_string_equal(v[1].name, NAME_B);
	assert_string_equal(v[1].status, "Stopped");
	free(v);

	/* No instances at all: success with none. */
	assert_int_equal(parse(*state, "", &v, &n, 64, err, sizeof err), 0);
	assert_int_equal(n, 0);
	free(v);
	assert_int_equal(parse(*state, "\n\r\n\n", &v, &n, 64, err, sizeof err),
	    0);
	assert_int_equal(n, 0);
	free(v);
}

static void
test_list_len_bounds_input(void **state)
{
	const char *out = INSTANCE(NAME_A, "Running") "\n"
	    INSTANCE(NAME_B, "Stopped") "\n";
	struct lima_instance *v = NULL;
	size_t n = 0, first = strlen(INSTANCE(NAME_A, "Running")) + 1;
	char err[256];

	/* Only len bytes are read: the second line is not seen. */
	assert_int_equal(lima_list_parse(*state, out, first, &v, &n, 64, err,
	    sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, NAME_A);
	free(v);
}

static void
expect_list_error(struct lima *l, const char *out, size_t max,
    const char *want_in_err)
{
	struct lima_instance *v;
	size_t n;
	char err[256];

	if (parse(l, out, &v, &n, max, err, sizeof err) != -1)
		fail_msg("accepted: %s", out);
	if (strstr(err, want_in_err) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", err, want_in_err);
}

static void
test_list_errors(void **state)
{
	struct lima *l = *state;

	expect_list_error(l, "time=\"x\" level=fatal msg=\"boom\"\n", 64,
	    "line 1: not JSON");
	expect_list_error(l, INSTANCE(NAME_A, "Running") "\n{\"name\":\n", 64,
	    "line 2: not JSON");
	expect_list_error(l, "[" INSTANCE(NAME_A, "Running") "]\n", 64,
	    "line 1: not an instance object");
	expect_list_error(l, "\n\n{\"status\":\"Running\"}\n", 64,
	    "line 3: not an instance object");
	expect_list_error(l, "{\"name\":42,\"status\":\"Running\"}\n", 64,
	    "not an instance object");
	expect_list_error(l, "{\"name\":null}\n", 64, "not an instance object");
	expect_list_error(l, "{\"name\":[\"" NAME_A "\"]}\n", 64,
	    "not an instance object");
	expect_list_error(l, "\"" NAME_A "\"\n", 64, "not an instance object");
	expect_list_error(l, "42\n", 64, "not an instance object");
	expect_list_error(l, "null\n", 64, "not an instance object");
	/* A name nested elsewhere is not the instance's name. */
	expect_list_error(l, "{\"config\":{\"name\":\"" NAME_A "\"}}\n", 64,
	    "not an instance object");
	/* A valid object followed by garbage on the same line. */
	expect_list_error(l, "{\"name\":\"" NAME_A "\"} x\n", 64, "not JSON");
}

static void
test_list_max(void **state)
{
	const char *three = INSTANCE(NAME_A, "Running") "\n"
	    INSTANCE(NAME_B, "Running") "\n" INSTANCE(NAME_C, "Running") "\n";
	struct lima_instance *v;
	size_t n;
	char err[256];

	expect_list_error(*state, three, 2, "more than 2 instances");
	expect_list_error(*state, three, 0, "more than 0 instances");
	/* Exactly max is fine, trailing blank lines included. */
	assert_int_equal(parse(*state, three, &v, &n, 3, err, sizeof err), 0);
	assert_int_equal(n, 3);
	free(v);
}

static void
test_list_status_missing(void **state)
{
	struct lima_instance *v;
	size_t n;
	char err[256];

	assert_int_equal(parse(*state,
	    "{\"name\":\"" NAME_A "\"}\n"
	    "{\"name\":\"" NAME_B "\",\"status\":7}\n"
	    "{\"name\":\"" NAME_C "\",\"status\":null}\n",
	    &v, &n, 64, err, sizeof err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(v[0].status, "");
	assert_string_equal(v[1].status, "");
	assert_string_equal(v[2].status, "");
	free(v);
}

static void
test_list_sanitizes(void **state)
{
	struct lima_instance *v;
	size_t n;
	char err[256];

	/* JSON escapes decode to control characters; none survive. */
	assert_int_equal(parse(*state,
	    "{\"name\":\"al-\\u001b[31m\\n\\t\\u0007x\",\"status\":"
	    "\"Run\\rning\\u00e9\"}\n",
	    &v, &n, 64, err, sizeof err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "al-?[31m???x");
	/* U+00E9 is two UTF-8 bytes, each replaced. */
	assert_string_equal(v[0].status, "Run?ning??");
	free(v);

	/* Overlong values are truncated, still terminated. */
	assert_int_equal(parse(*state,
	    "{\"name\":\"" NAME_A "\",\"status\":\"RunningRunningRunning\"}\n",
	    &v, &n, 64, err, sizeof err), 0);
	assert_int_equal(strlen(v[0].status), sizeof v[0].status - 1);
	assert_memory_equal(v[0].status, "RunningRunningR", 15);
	free(v);
}

static void
expect_message(struct lima *l, const char *text, const char *want)
{
	char buf[512];

	memset(buf, 'x', sizeof buf);
	lima_error_message(l, text, buf, sizeof buf);
	if (strcmp(buf, want) != 0)
		fail_msg("got \"%s\", want \"%s\"", buf, want);
}

static void
test_error_message_json(void **state)
{
	struct lima *l = *state;

	expect_message(l,
	    "{\"level\":\"info\",\"msg\":\"Creating an instance\","
	    "\"time\":\"2025-01-01T00:00:00Z\"}\n"
	    "{\"level\":\"fatal\",\"msg\":\"instance \\\"" NAME_A "\\\" "
	    "already exists\",\"time\":\"2025-01-01T00:00:01Z\"}\n",
	    "instance \"" NAME_A "\" already exists");

	/* The last error wins; warnings and info after it do not. */
	expect_message(l,
	    "{\"level\":\"error\",\"msg\":\"first\",\"time\":\"t\"}\n"
	    "{\"level\":\"error\",\"msg\":\"second\",\"time\":\"t\"}\n"
	    "{\"level\":\"warning\",\"msg\":\"later warning\",\"time\":\"t\"}\n"
	    "{\"level\":\"info\",\"msg\":\"later info\",\"time\":\"t\"}\n",
	    "second");

	/* A JSON error beats any text line, wherever the text is. */
	expect_message(l,
	    "{\"level\":\"fatal\",\"msg\":\"the real cause\",\"time\":\"t\"}\n"
	    "panic: something printed as text\n",
	    "the real cause");

	/* Only info/warning JSON: the last text line is the message. */
	expect_message(l,
	    "{\"level\":\"info\",\"msg\":\"starting\",\"time\":\"t\"}\n"
	    "exit status 1\n"
	    "{\"level\":\"warning\",\"msg\":\"hmm\",\"time\":\"t\"}\n",
	    "exit status 1");

	/* Control characters in msg are sanitized. */
	expect_message(l,
	    "{\"level\":\"fatal\",\"msg\":\"bad\\u001b[2J\\nname\\tx\","
	    "\"time\":\"t\"}\n",
	    "bad?[2J?name?x");
}

static void
test_error_message_text(void **state)
{
	struct lima *l = *state;

	expect_message(l, "limactl: must not run as the root user\n",
	    "limactl: must not run as the root user");
	expect_message(l,
	    "time=\"2025-01-01T00:00:00Z\" level=info msg=\"starting\"\n"
	    "time=\"2025-01-01T00:00:01Z\" level=fatal msg=\"boom\"\n"
	    "\n\n",
	    "time=\"2025-01-01T00:00:01Z\" level=fatal msg=\"boom\"");
	expect_message(l, "first\nsecond", "second");
	/* Controls go; valid UTF-8 (here U+00E9) stays, an invalid byte goes. */
	expect_message(l, "tab\there \x1b[31mred\x7f\xc3\xa9\xff\n",
	    "tab?here ?[31mred?\xc3\xa9?");
	expect_message(l, "", "");
	expect_message(l, "\n\n\n", "");
	expect_message(l, NULL, "");
}

static void
test_error_message_truncates(void **state)
{
	char buf[8];

	memset(buf, 'x', sizeof buf);
	lima_error_message(*state, "a long error message\n", buf, sizeof buf);
	assert_string_equal(buf, "a long ");
	memset(buf, 'x', sizeof buf);
	lima_error_message(*state,
	    "{\"level\":\"error\",\"msg\":\"a long json message\"}\n",
	    buf, sizeof buf);
	assert_string_equal(buf, "a long ");
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup_lima, teardown_lima)
	const struct CMUnitTest tests[] = {
		T(test_list_realistic),
		T(test_list_blank_lines_and_crlf),
		T(test_list_len_bounds_input),
		T(test_list_errors),
		T(test_list_max),
		T(test_list_status_missing),
		T(test_list_sanitizes),
		T(test_error_message_json),
		T(test_error_message_text),
		T(test_error_message_truncates),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
