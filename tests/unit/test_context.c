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

/*
 * The shared vector files (tests/vectors/, read by the provider's tests
 * too): vectors_open finds NAME beside this source, vectors_next splits
 * the next line that is not a comment into at most 8 tab-separated fields.
 */
static FILE *
vectors_open(const char *name, char *path, size_t pathlen)
{
	const char *slash = strrchr(__FILE__, '/');
	FILE *in;

	snprintf(path, pathlen, "%.*s../vectors/%s",
	    slash != NULL ? (int)(slash - __FILE__ + 1) : 0, __FILE__, name);
	if ((in = fopen(path, "r")) == NULL)
		fail_msg("%s: cannot open (run from the repository root)", path);
	return in;
}

static int
vectors_next(FILE *in, char *line, int linelen, char *f[8])
{
	char *p;
	int n;

	do {
		if (fgets(line, linelen, in) == NULL)
			return -1;
		line[strcspn(line, "\n")] = '\0';
	} while (line[0] == '#' || line[0] == '\0');
	for (n = 0, p = line; n < 8 && p != NULL; n++)
		f[n] = strsep(&p, "\t");
	return n;
}

/*
 * tests/vectors/hosts.tsv, which the provider's tests read too: one source
 * of truth for what both clients take as a host URL (tests/vectors/README.md).
 */
static void
test_url_vectors(void **state)
{
	char path[1024], line[1024], *f[8];
	unsigned ok = 0, refused = 0;
	FILE *in;
	int n;

	(void)state;
	in = vectors_open("hosts.tsv", path, sizeof path);
	while ((n = vectors_next(in, line, sizeof line, f)) >= 0) {
		for (int k = 0; k < n; k++)
			if (strcmp(f[k], "-") == 0)
				f[k] = "";
		if (n == 2 && strcmp(f[1], "refused") == 0) {
			url_refused(f[0]);
			refused++;
		} else if (n == 7 && strcmp(f[1], "ok") == 0) {
			url_ok(f[0], strcmp(f[2], "ssh") == 0 ? AL_HOST_SSH :
			    AL_HOST_UNIX, f[3], f[4], (unsigned)atoi(f[5]), f[6]);
			ok++;
		} else
			fail_msg("%s: a line that is neither ok nor refused: %s",
			    path, line);
	}
	assert_int_equal(fclose(in), 0);
	assert_true(ok >= 5 && refused >= 20);
}

static void
test_urls(void **state)
{
	/* Beyond the shared vectors: bytes a text file would not carry. */
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

/* A vector file's escapes (\n \r \t \\ \xHH) into out; the length. */
static size_t
unescape(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	unsigned v;

	for (; *in != '\0'; in++) {
		assert_true(n < cap);
		if (*in != '\\') {
			out[n++] = *in;
			continue;
		}
		switch (*++in) {
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case '\\': out[n++] = '\\'; break;
		case 'x':
			assert_int_equal(sscanf(in + 1, "%2x", &v), 1);
			out[n++] = (char)v;
			in += 2;
			break;
		default: fail_msg("bad escape \\%c", *in);
		}
	}
	out[n] = '\0';
	return n;
}

/* tests/vectors/contexts.tsv, which the provider's tests read too. */
static void
test_context_vectors(void **state)
{
	char path[1024], line[2048], text[1024], want[3][512], err[256], *f[8];
	unsigned ok = 0, refused = 0;
	struct ctx c;
	size_t len;
	FILE *in;
	int n;

	(void)state;
	in = vectors_open("contexts.tsv", path, sizeof path);
	while ((n = vectors_next(in, line, sizeof line, f)) >= 0) {
		assert_true(n >= 3);
		len = unescape(f[1], text, sizeof text - 1);
		if (strcmp(f[0], "refused") == 0) {
			if (ctx_parse(text, len, &c, err, sizeof err) == 0)
				fail_msg("accepted (%s): %s", f[2], f[1]);
			refused++;
			continue;
		}
		assert_int_equal(n, 5);
		assert_string_equal(f[0], "ok");
		for (int k = 0; k < 3; k++)
			(void)unescape(strcmp(f[k + 2], "-") == 0 ? "" :
			    f[k + 2], want[k], sizeof want[k] - 1);
		if (ctx_parse(text, len, &c, err, sizeof err) != 0)
			fail_msg("refused (%s): %s", err, f[1]);
		assert_string_equal(c.host, want[0]);
		assert_string_equal(c.description, want[1]);
		assert_string_equal(c.remote_command, want[2]);
		ok++;
	}
	assert_int_equal(fclose(in), 0);
	assert_true(ok >= 3 && refused >= 14);
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
	/* The refusals are tests/vectors/contexts.tsv's; and a file too large: */
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
		cmocka_unit_test(test_url_vectors),
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_context_vectors),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
