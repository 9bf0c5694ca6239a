/*
 * daemon/util.c: str_sanitize, which makes guest and limactl text fit a
 * protobuf string (valid UTF-8) and a terminal. Text in any script must
 * survive; invalid bytes and control characters must not. The rule is
 * proto/text.c's, which the CLI applies too, whole (text_sanitize) and to
 * streams in chunks (text_stream_put, for `logs` on a terminal).
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

#include "guestproto.h"
#include "text.h"
#include "util.h"

static void
expect_sanitized(const char *in, const char *want)
{
	char buf[256];

	snprintf(buf, sizeof buf, "%s", in);
	str_sanitize(buf);
	assert_string_equal(buf, want);
}

/* Well-formed UTF-8 from many scripts passes unchanged. */
static void
test_keeps_utf8(void **state)
{
	static const char *const texts[] = {
		"plain ASCII: Permission denied",
		"caf\xc3\xa9 na\xc3\xafve \xc3\xbc\xc3\x9f",		/* Latin */
		"\xd0\x9d\xd0\xb5\xd1\x82 \xd1\x84\xd0\xb0\xd0\xb9\xd0\xbb\xd0\xb0", /* Cyrillic */
		"\xce\xb1\xce\xb2\xce\xb3",				/* Greek */
		"\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d",			/* Hebrew */
		"\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7",		/* Arabic */
		"\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87", /* Devanagari */
		"\xe6\x96\x87\xe4\xbb\xb6\xe4\xb8\x8d\xe5\xad\x98\xe5\x9c\xa8", /* CJK */
		"\xe3\x83\x95\xe3\x82\xa1\xe3\x82\xa4\xe3\x83\xab",	/* Katakana */
		"\xed\x8c\x8c\xec\x9d\xbc",				/* Hangul */
		"\xe0\xb8\xa0\xe0\xb8\xb2\xe0\xb8\xa9\xe0\xb8\xb2",	/* Thai */
		"\xf0\x9f\x98\x80 \xf0\x9f\x8c\x8d",			/* emoji (4 bytes) */
		"\xf4\x8f\xbf\xbf",					/* U+10FFFF */
		"\xef\xbf\xbd",						/* U+FFFD */
	};

	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
		expect_sanitized(texts[i], texts[i]);
}

/* Each byte that is not part of a well-formed sequence becomes one '?'. */
static void
test_replaces_invalid(void **state)
{
	expect_sanitized("a\xff" "b", "a?b");
	expect_sanitized("\x80\xbf", "??");			/* lone continuations */
	expect_sanitized("\xc3", "?");				/* truncated at the end */
	expect_sanitized("\xe6\x96", "??");
	expect_sanitized("\xe6\x96x", "??x");			/* truncated mid-text */
	expect_sanitized("\xc0\xaf", "??");			/* overlong '/' */
	expect_sanitized("\xe0\x80\xaf", "???");		/* overlong, 3 bytes */
	expect_sanitized("\xf0\x80\x80\xaf", "????");		/* overlong, 4 bytes */
	expect_sanitized("\xed\xa0\x80", "???");		/* surrogate U+D800 */
	expect_sanitized("\xf4\x90\x80\x80", "????");		/* above U+10FFFF */
	expect_sanitized("\xf5\x80\x80\x80", "????");
	expect_sanitized("\xc3\xa9\xff\xc3\xa9", "\xc3\xa9?\xc3\xa9");
}

/* Controls steer terminals: C0, DEL, C1 and bidi overrides go. */
static void
test_replaces_controls(void **state)
{
	expect_sanitized("a\nb\rc\td", "a?b?c?d");
	expect_sanitized("\x1b[31mred", "?[31mred");
	expect_sanitized("del\x7f", "del?");
	expect_sanitized("c1\xc2\x85\xc2\x9b", "c1??");		/* NEL, CSI */
	expect_sanitized("\xe2\x80\xae" "txt.exe", "?txt.exe");	/* U+202E */
	expect_sanitized("\xe2\x81\xa6x\xe2\x81\xa9", "?x?");	/* isolates */
	expect_sanitized("\xe2\x80\xa8", "?");			/* U+2028 */
	expect_sanitized("", "");
}

/* Any byte string comes out as valid UTF-8, never longer. */
static void
test_any_bytes(void **state)
{
	char buf[64];
	uint32_t x = 12345;

	for (int round = 0; round < 20000; round++) {
		size_t n = 1 + (size_t)(round % 40), len;

		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (char)((x >> 16) | 1);	/* never NUL */
		}
		buf[n] = '\0';
		str_sanitize(buf);
		len = strlen(buf);
		assert_true(len <= n);
		/* Re-sanitizing valid text changes nothing. */
		{
			char again[64];

			memcpy(again, buf, len + 1);
			str_sanitize(again);
			assert_string_equal(again, buf);
		}
		for (size_t i = 0; i < len; i++)
			assert_true((unsigned char)buf[i] >= 0x20 &&
			    (unsigned char)buf[i] != 0x7f);
	}
}

/* The identifier variant keeps printable ASCII only. */
static void
test_ascii(void **state)
{
	char buf[32];

	snprintf(buf, sizeof buf, "cwd\xc3\xa9\n");
	str_sanitize_ascii(buf);
	assert_string_equal(buf, "cwd???");
}

/* A guest helper failure message carries its UTF-8 through the parser. */
static void
test_guest_message(void **state)
{
	static const char frame_body[] = "cwd\0" "13\0" "/tmp/r\xc3\xb6: \xff\x1b";
	uint8_t buf[128];
	size_t blen = sizeof frame_body - 1, used;
	struct guest_parser p;
	struct guest_frame f;

	memcpy(buf, GUEST_MAGIC, GUEST_MAGIC_LEN);
	guest_header(buf + GUEST_MAGIC_LEN, 'F', (uint32_t)blen);
	memcpy(buf + GUEST_MAGIC_LEN + GUEST_HEADER, frame_body, blen);
	guest_parser_init(&p);
	assert_int_equal(guest_parse(&p, buf, GUEST_MAGIC_LEN + GUEST_HEADER +
	    blen, &f, &used), GUEST_FRAME);
	assert_string_equal(f.what, "cwd");
	assert_int_equal(f.err_no, 13);
	assert_string_equal(f.message, "/tmp/r\xc3\xb6: ??");
}


/* The terminal escapes issue 18 saw reach a terminal through `logs`. */
static void
test_c1_escapes(void **state)
{
	expect_sanitized("\xc2\x9b" "2J", "?2J");			/* CSI */
	expect_sanitized("\xc2\x9d" "0;pwned\x07", "?0;pwned?");	/* OSC, BEL */
	expect_sanitized("\xc2\x9d" "52;c;aGk=\xc2\x9c", "?52;c;aGk=?"); /* OSC 52, ST */
	expect_sanitized("\x9b" "2J", "?2J");			/* raw 8-bit CSI */
	expect_sanitized("\x9d\x9c", "??");
	expect_sanitized("\x1b]0;t\x1b\\", "?]0;t?\\");
}

struct sink {
	char buf[4096];
	size_t len;
};

static bool
sink_put(const void *p, size_t n, void *arg)
{
	struct sink *k = arg;

	assert_true(k->len + n < sizeof k->buf);
	memcpy(k->buf + k->len, p, n);
	k->len += n;
	k->buf[k->len] = '\0';
	return true;
}

/* s through a text_stream, cut into pieces of at most step bytes. */
static void
stream(const char *s, size_t len, size_t step, bool lines, struct sink *k)
{
	struct text_stream ts = { .lines = lines };

	k->len = 0;
	k->buf[0] = '\0';
	for (size_t off = 0; off < len; off += step)
		assert_true(text_stream_put(&ts, s + off, len - off < step ?
		    len - off : step, sink_put, k));
	assert_true(text_stream_end(&ts, sink_put, k));
}

/* The stream rule is text_sanitize's, wherever the chunks are cut. */
static void
test_stream_cuts(void **state)
{
	char buf[64], want[64];
	struct sink k;
	uint32_t x = 777;

	for (int round = 0; round < 5000; round++) {
		size_t n = 1 + (size_t)(round % 40);

		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			/* Mostly UTF-8 lead and continuation bytes. */
			buf[i] = (char)(((x >> 16) % 3 == 0 ? 0x20 :
			    0x80) | ((x >> 8) & 0x7f));
			if (buf[i] == 0)
				buf[i] = 'a';
		}
		buf[n] = '\0';
		memcpy(want, buf, n + 1);
		text_sanitize(want);
		for (size_t step = 1; step <= n; step++) {
			stream(buf, n, step, false, &k);
			assert_string_equal(k.buf, want);
		}
	}
	/* A sequence cut between chunks comes out whole. */
	stream("caf\xc3\xa9 \xe6\x96\x87 \xf0\x9f\x98\x80", 14, 1, false, &k);
	assert_string_equal(k.buf, "caf\xc3\xa9 \xe6\x96\x87 \xf0\x9f\x98\x80");
	stream("\xc2\x9b" "2J", 4, 1, false, &k);
	assert_string_equal(k.buf, "?2J");
	/* The stream ends in the middle of a sequence: a '?' a byte. */
	stream("ok\xe6\x96", 4, 4, false, &k);
	assert_string_equal(k.buf, "ok??");
}

/* A log's lines: line ends and tabs kept, carriage returns dropped. */
static void
test_stream_lines(void **state)
{
	struct sink k;

	stream("a\tb\r\nc\x1b[2J\xc2\x9d" "0;x\x07\n", 17, 3, true, &k);
	assert_string_equal(k.buf, "a\tb\nc?[2J?0;x?\n");
	stream("a\tb\r\n", 5, 5, false, &k);
	assert_string_equal(k.buf, "a?b??");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keeps_utf8),
		cmocka_unit_test(test_replaces_invalid),
		cmocka_unit_test(test_replaces_controls),
		cmocka_unit_test(test_any_bytes),
		cmocka_unit_test(test_ascii),
		cmocka_unit_test(test_guest_message),
		cmocka_unit_test(test_c1_escapes),
		cmocka_unit_test(test_stream_cuts),
		cmocka_unit_test(test_stream_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
