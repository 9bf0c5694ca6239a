/*
 * Where the daemon is: host URLs as libagentlane reads them (transport.c)
 * and contexts as the CLI stores them (client/ctl/ctxstore.c): strict
 * parsing, files 0600 in 0700 directories, written whole, and refused when
 * someone else could have written them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/internal.h"
#include "../../client/ctl/ctxstore.h"

static void
url_ok(const char *url, int kind, const char *user, const char *host,
    unsigned port, const char *shown)
{
	struct al_host h;
	struct al_error err;
	char back[AL_HOST_URL_MAX];

	if (al_host_parse(url, &h, &err) != 0)
		fail_msg("%s refused: %s", url, err.message);
	assert_int_equal(h.kind, kind);
	if (kind == AL_HOST_SSH) {
		assert_string_equal(h.user, user);
		assert_string_equal(h.host, host);
		assert_int_equal(h.port, port);
	} else
		assert_string_equal(h.path, host);
	al_host_url(&h, back, sizeof back);
	assert_string_equal(back, shown);
}

static void
url_refused(const char *url)
{
	struct al_host h;
	struct al_error err;

	memset(&err, 0, sizeof err);
	if (al_host_parse(url, &h, &err) == 0)
		fail_msg("%s accepted", url);
	assert_int_equal(err.code, AL_INVALID_ARGUMENT);
}

static void
test_urls(void **state)
{
	url_ok("ssh://mac-studio", AL_HOST_SSH, "", "mac-studio", 0,
	    "ssh://mac-studio");
	url_ok("ssh://me@mac.local:2222", AL_HOST_SSH, "me", "mac.local", 2222,
	    "ssh://me@mac.local:2222");
	url_ok("ssh://a_b@10.0.0.2", AL_HOST_SSH, "a_b", "10.0.0.2", 0,
	    "ssh://a_b@10.0.0.2");
	url_ok("ssh://u@[fe80::1%25eth0]:22", AL_HOST_SSH, "u", "fe80::1%25eth0",
	    22, "ssh://u@[fe80::1%25eth0]:22");
	url_ok("unix:///run/x.sock", AL_HOST_UNIX, "", "/run/x.sock", 0,
	    "unix:///run/x.sock");
	/* What ssh would take as an option, or the shell would split. */
	url_refused("ssh://-oProxyCommand=x");
	url_refused("ssh://-luser@host");
	url_refused("ssh://u@-host");
	url_refused("ssh://host;rm");
	url_refused("ssh://ho st");
	url_refused("ssh://host/path");
	url_refused("ssh://host?x=1");
	url_refused("ssh://host:0");
	url_refused("ssh://host:65536");
	url_refused("ssh://host:22a");
	url_refused("ssh://host:");
	url_refused("ssh://@host");
	url_refused("ssh://");
	url_refused("ssh://[::1");
	url_refused("ssh://[::1]x");
	url_refused("ssh://u@[%]");
	url_refused("ssh://[host]");
	url_refused("ssh://.host");
	url_refused("unix://relative");
	url_refused("tcp://host:1");
	url_refused("host");
	url_refused("ssh://ho\x1bst");
	assert_true(al_remote_command_valid("agent-lanectl"));
	assert_true(al_remote_command_valid("/opt/homebrew/bin/agent-lanectl"));
	assert_true(al_remote_command_valid("~/bin/agent-lanectl"));
	assert_false(al_remote_command_valid("-oops"));
	assert_false(al_remote_command_valid("a b"));
	assert_false(al_remote_command_valid("a;b"));
	assert_false(al_remote_command_valid("$(id)"));
	assert_false(al_remote_command_valid("~root/x"));
	assert_false(al_remote_command_valid(""));
}

static void
ctx_refused(const char *text, const char *why)
{
	struct ctx c;
	char err[256];

	if (ctx_parse(text, strlen(text), &c, err, sizeof err) == 0)
		fail_msg("accepted (%s): %s", why, text);
}

static void
test_parse(void **state)
{
	const char *good = "# a comment\nhost=ssh://me@mini\n"
	    "description=the Mac mini (büro)\nremote-command=/opt/homebrew/bin/"
	    "agent-lanectl\n";
	struct ctx c, d;
	char err[256], buf[CTX_FILE_MAX + 1];
	size_t n;

	assert_int_equal(ctx_parse(good, strlen(good), &c, err, sizeof err), 0);
	assert_string_equal(c.host, "ssh://me@mini");
	assert_string_equal(c.description, "the Mac mini (büro)");
	assert_string_equal(c.remote_command, "/opt/homebrew/bin/agent-lanectl");
	n = ctx_format(&c, buf, sizeof buf);
	assert_true(n > 0);
	assert_int_equal(ctx_parse(buf, n, &d, err, sizeof err), 0);
	assert_string_equal(d.host, c.host);
	assert_string_equal(d.description, c.description);
	ctx_refused("", "no host");
	ctx_refused("description=x\n", "no host");
	ctx_refused("host=\n", "an empty host");
	ctx_refused("host=ssh://a\nhost=ssh://b\n", "host twice");
	ctx_refused("host=ssh://a", "no newline");
	ctx_refused("host=ssh://a\nport=22\n", "an unknown key");
	ctx_refused("host=ssh://a\ndescription=\x1b[2J\n", "a control character");
	ctx_refused("host=ssh://a\ndescription=\xff\n", "invalid UTF-8");
	ctx_refused("host=ssh://a\r\n", "a carriage return");
	ctx_refused("host=ssh://a\njunk\n", "a line without =");
	ctx_refused("# \x07\nhost=ssh://a\n", "a bell in a comment");
	{
		char nul[] = "host=ssh://a\0b\n";

		assert_int_equal(ctx_parse(nul, sizeof nul - 1, &c, err,
		    sizeof err), -1);
	}
	memset(buf, 'x', sizeof buf);
	memcpy(buf, "host=", 5);
	buf[sizeof buf - 1] = '\n';
	assert_int_equal(ctx_parse(buf, sizeof buf, &c, err, sizeof err), -1);
	assert_true(ctx_name_valid("mac-studio"));
	assert_true(ctx_name_valid("a.b_c"));
	assert_false(ctx_name_valid("default"));
	assert_false(ctx_name_valid(".hidden"));
	assert_false(ctx_name_valid("a/b"));
	assert_false(ctx_name_valid("-x"));
	assert_false(ctx_name_valid(""));
}

static void
test_store(void **state)
{
	char home[] = "/tmp/alctx.XXXXXX", path[512], cur[CTX_NAME_MAX + 1];
	char err[1400];
	struct ctx c, got, *v;
	struct stat sb;
	size_t n;

	assert_non_null(mkdtemp(home));
	setenv("HOME", home, 1);
	assert_int_equal(ctx_current(cur, err, sizeof err), 1);
	assert_string_equal(cur, CTX_DEFAULT);
	assert_int_equal(ctx_load("mini", &got, err, sizeof err), 1);
	memset(&c, 0, sizeof c);
	snprintf(c.name, sizeof c.name, "mini");
	snprintf(c.host, sizeof c.host, "ssh://me@mini");
	assert_int_equal(ctx_save(&c, true, err, sizeof err), 0);
	assert_int_equal(ctx_save(&c, true, err, sizeof err), 1);
	snprintf(path, sizeof path, "%s/.agent-lane/contexts/mini", home);
	assert_int_equal(lstat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	snprintf(path, sizeof path, "%s/.agent-lane/contexts", home);
	assert_int_equal(lstat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0700);
	assert_int_equal(ctx_load("mini", &got, err, sizeof err), 0);
	assert_string_equal(got.host, "ssh://me@mini");
	assert_int_equal(ctx_set_current("mini", err, sizeof err), 0);
	assert_int_equal(ctx_current(cur, err, sizeof err), 0);
	assert_string_equal(cur, "mini");
	snprintf(path, sizeof path, "%s/.agent-lane/current-context", home);
	assert_int_equal(lstat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
	assert_int_equal(ctx_list(&v, &n, err, sizeof err), 0);
	assert_int_equal(n, 1);
	free(v);
	/* Someone else could have written it: refused, not read. */
	snprintf(path, sizeof path, "%s/.agent-lane/contexts/mini", home);
	assert_int_equal(chmod(path, 0620), 0);
	assert_int_equal(ctx_load("mini", &got, err, sizeof err), -1);
	assert_non_null(strstr(err, "writable by others"));
	assert_int_equal(chmod(path, 0600), 0);
	/* A link is not followed. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(ctx_load("mini", &got, err, sizeof err), -1);
	assert_int_equal(unlink(path), 0);
	/* Nor a directory others may write in. */
	snprintf(path, sizeof path, "%s/.agent-lane/contexts", home);
	assert_int_equal(chmod(path, 0777), 0);
	assert_int_equal(ctx_load("mini", &got, err, sizeof err), -1);
	assert_int_equal(chmod(path, 0700), 0);
	assert_int_equal(ctx_set_current(CTX_DEFAULT, err, sizeof err), 0);
	assert_int_equal(ctx_current(cur, err, sizeof err), 1);
	assert_int_equal(ctx_remove("mini", err, sizeof err), 1);
	snprintf(path, sizeof path, "rm -rf %s", home);
	assert_int_equal(system(path), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
