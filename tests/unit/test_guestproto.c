/*
 * daemon/guestproto.c: the frames the guest helper writes back through
 * `limactl shell`. Every byte comes from inside the lane, so besides the
 * happy path these tests pin each bound and each refusal.
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

/* A growable byte buffer for building guest streams. */
struct buf {
	uint8_t *data;
	size_t len;
};

static void
buf_add(struct buf *b, const void *p, size_t n)
{
	b->data = realloc(b->data, b->len + n + 1);
	assert_non_null(b->data);
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void
buf_frame(struct buf *b, char type, const void *payload, size_t n)
{
	uint8_t hdr[GUEST_HEADER];

	guest_header(hdr, type, (uint32_t)n);
	buf_add(b, hdr, sizeof hdr);
	buf_add(b, payload, n);
}

/* The helper's magic line, preceded by what a login profile printed. */
static void
buf_start(struct buf *b, const char *noise)
{
	buf_add(b, noise, strlen(noise));
	buf_add(b, GUEST_MAGIC, GUEST_MAGIC_LEN);
}

/* A decoded frame with its own copy of the data. */
struct frame {
	char type;
	uint8_t data[64];
	size_t len;
	int code, sig, err_no;
	char what[16], message[256];
};

static void
keep_frame(struct frame *dst, const struct guest_frame *src)
{
	memset(dst, 0, sizeof *dst);
	dst->type = src->type;
	assert_true(src->len <= sizeof dst->data);
	memcpy(dst->data, src->data, src->len);
	dst->len = src->len;
	dst->code = src->code;
	dst->sig = src->sig;
	dst->err_no = src->err_no;
	memcpy(dst->what, src->what, sizeof dst->what);
	memcpy(dst->message, src->message, sizeof dst->message);
}

/*
 * Feeds s to a parser chunk bytes at a time the way gexec.c does: append
 * to a pending buffer, parse until NEED_MORE, drop the consumed bytes.
 * Returns the number of frames (at most max); *rc_out is the last result.
 */
static size_t
feed(const struct buf *s, size_t chunk, struct frame *out, size_t max,
    enum guest_rc *rc_out)
{
	struct guest_parser p;
	struct guest_frame gf;
	uint8_t *pending = malloc(s->len + 1);
	size_t plen = 0, off = 0, n = 0, used;
	enum guest_rc rc = GUEST_NEED_MORE;

	assert_non_null(pending);
	guest_parser_init(&p);
	while (off < s->len) {
		size_t take = s->len - off < chunk ? s->len - off : chunk;

		memcpy(pending + plen, s->data + off, take);
		plen += take;
		off += take;
		for (;;) {
			rc = guest_parse(&p, pending, plen, &gf, &used);
			if (rc == GUEST_ERROR)
				goto done;
			assert_true(used <= plen);
			if (rc == GUEST_FRAME) {
				assert_true(n < max);
				assert_true(gf.data >= pending);
				assert_true(gf.data + gf.len <= pending + used);
				keep_frame(&out[n++], &gf);
			}
			memmove(pending, pending + used, plen - used);
			plen -= used;
			if (rc == GUEST_NEED_MORE)
				break;
		}
	}
done:
	free(pending);
	*rc_out = rc;
	return n;
}

/* Parses exactly one frame from a fresh parser; fails otherwise. */
static enum guest_rc
parse_one(const struct buf *s, struct guest_frame *gf, const char **reason)
{
	static struct guest_parser p;
	size_t used = 0;
	enum guest_rc rc;

	guest_parser_init(&p);
	rc = guest_parse(&p, s->data, s->len, gf, &used);
	if (rc == GUEST_FRAME)
		assert_int_equal(used, s->len);
	*reason = p.reason;
	return rc;
}

static void
build_session(struct buf *b)
{
	static const uint8_t bin[] = { 0, 0xff, '\n', 'A', 'L', 'G', 'X' };
	/* Including NULs and a false start of the magic. */
	static const char noise[] = "Last login: Mon Jan  1 00:00:00 2025\r\n"
	    "Welcome to Ubuntu 24.04 LTS\n\0\0partial magic \0ALG\n";

	buf_add(b, noise, sizeof noise - 1);
	buf_start(b, "");
	buf_frame(b, 'P', "4242", 4);
	buf_frame(b, 'O', "hello\n", 6);
	buf_frame(b, 'E', "warn\n", 5);
	buf_frame(b, 'O', bin, sizeof bin);
	buf_frame(b, 'O', "", 0);
	buf_frame(b, 'X', "c3", 2);
}

static void
check_session(const struct frame *f, size_t n)
{
	assert_int_equal(n, 6);
	assert_int_equal(f[0].type, GUEST_STARTED);
	assert_int_equal(f[0].len, 4);
	assert_memory_equal(f[0].data, "4242", 4);
	assert_int_equal(f[1].type, GUEST_STDOUT);
	assert_int_equal(f[1].len, 6);
	assert_memory_equal(f[1].data, "hello\n", 6);
	assert_int_equal(f[2].type, GUEST_STDERR);
	assert_memory_equal(f[2].data, "warn\n", 5);
	assert_int_equal(f[3].type, GUEST_STDOUT);
	assert_int_equal(f[3].len, 7);
	assert_memory_equal(f[3].data, "\0\xff\nALGX", 7);
	assert_int_equal(f[4].type, GUEST_STDOUT);
	assert_int_equal(f[4].len, 0);
	assert_int_equal(f[5].type, GUEST_EXIT);
	assert_int_equal(f[5].code, 3);
	assert_int_equal(f[5].sig, 0);
}

static void
test_session_whole(void **state)
{
	struct buf b = { 0 };
	struct frame f[16];
	enum guest_rc rc;
	size_t n;

	build_session(&b);
	n = feed(&b, b.len, f, 16, &rc);
	assert_int_equal(rc, GUEST_NEED_MORE);
	check_session(f, n);
	free(b.data);
}

static void
test_session_byte_by_byte(void **state)
{
	struct buf b = { 0 };
	struct frame f[16];
	enum guest_rc rc;
	size_t n;

	build_session(&b);
	/* Every split point, and a few odd chunk sizes. */
	for (size_t chunk = 1; chunk <= 13; chunk++) {
		n = feed(&b, chunk, f, 16, &rc);
		assert_int_equal(rc, GUEST_NEED_MORE);
		check_session(f, n);
	}
	free(b.data);
}

static void
test_no_magic_yet(void **state)
{
	struct guest_parser p;
	struct guest_frame gf;
	size_t used = 99;
	const char *noise = "motd line\nmore\n";

	/* Noise is consumed but the last 7 bytes may start the magic. */
	guest_parser_init(&p);
	assert_int_equal(guest_parse(&p, (const uint8_t *)noise, strlen(noise),
	    &gf, &used), GUEST_NEED_MORE);
	assert_int_equal(used, strlen(noise) - (GUEST_MAGIC_LEN - 1));
	assert_false(p.synced);
	assert_int_equal(guest_parse(&p, (const uint8_t *)"abc", 3, &gf, &used),
	    GUEST_NEED_MORE);
	assert_int_equal(used, 0);

	/* After the magic: a partial header or payload consumes nothing more. */
	guest_parser_init(&p);
	assert_int_equal(guest_parse(&p, (const uint8_t *)GUEST_MAGIC "O\0\0",
	    GUEST_MAGIC_LEN + 3, &gf, &used), GUEST_NEED_MORE);
	assert_int_equal(used, GUEST_MAGIC_LEN);
	assert_true(p.synced);
	assert_int_equal(guest_parse(&p, (const uint8_t *)"O\0\0\0\5hell", 9,
	    &gf, &used), GUEST_NEED_MORE);
	assert_int_equal(used, 0);
	assert_int_equal(guest_parse(&p, (const uint8_t *)"O\0\0\0\5hello", 10,
	    &gf, &used), GUEST_FRAME);
	assert_int_equal(used, 10);
}

static void
expect_exit(const char *payload, bool ok, int code, int sig)
{
	struct buf b = { 0 };
	struct guest_frame gf;
	const char *reason;
	enum guest_rc rc;

	buf_start(&b, "");
	buf_frame(&b, 'X', payload, strlen(payload));
	rc = parse_one(&b, &gf, &reason);
	if (!ok) {
		if (rc != GUEST_ERROR)
			fail_msg("X \"%s\" accepted", payload);
		assert_non_null(reason);
	} else {
		if (rc != GUEST_FRAME)
			fail_msg("X \"%s\" refused: %s", payload, reason);
		assert_int_equal(gf.code, code);
		assert_int_equal(gf.sig, sig);
	}
	free(b.data);
}

static void
test_exit_status(void **state)
{
	expect_exit("c0", true, 0, 0);
	expect_exit("c1", true, 1, 0);
	expect_exit("c255", true, 255, 0);
	expect_exit("c007", true, 7, 0);
	expect_exit("s9", true, -1, 9);
	expect_exit("s1", true, -1, 1);
	expect_exit("s127", true, -1, 127);

	expect_exit("c256", false, 0, 0);
	expect_exit("c-1", false, 0, 0);
	expect_exit("c", false, 0, 0);
	expect_exit("s0", false, 0, 0);
	expect_exit("s128", false, 0, 0);
	expect_exit("s", false, 0, 0);
	expect_exit("cx", false, 0, 0);
	expect_exit("c1 ", false, 0, 0);
	expect_exit(" c1", false, 0, 0);
	expect_exit("x1", false, 0, 0);
	expect_exit("C1", false, 0, 0);
	expect_exit("c99999999999", false, 0, 0);
	expect_exit("", false, 0, 0);
}

static void
expect_failed(const void *payload, size_t len, bool ok, const char *what,
    int err_no, const char *message)
{
	struct buf b = { 0 };
	struct guest_frame gf;
	const char *reason;
	enum guest_rc rc;

	buf_start(&b, "");
	buf_frame(&b, 'F', payload, len);
	rc = parse_one(&b, &gf, &reason);
	if (!ok) {
		if (rc != GUEST_ERROR)
			fail_msg("F payload of %zu bytes accepted", len);
		assert_non_null(reason);
	} else {
		if (rc != GUEST_FRAME)
			fail_msg("F payload refused: %s", reason);
		assert_string_equal(gf.what, what);
		assert_int_equal(gf.err_no, err_no);
		assert_string_equal(gf.message, message);
	}
	free(b.data);
}

#define F(s) s, sizeof s - 1

static void
test_failed_frame(void **state)
{
	char big[400];

	expect_failed(F("cwd\0" "2\0No such file or directory"), true, "cwd", 2,
	    "No such file or directory");
	expect_failed(F("cwd\0" "13\0"), true, "cwd", 13, "");
	expect_failed(F("cwd\0" "0\0ok"), true, "cwd", 0, "ok");
	expect_failed(F("cwd\0" "4095\0x"), true, "cwd", 4095, "x");
	/* Control characters are made printable; a NUL ends the message. */
	expect_failed(F("c\twd\0" "2\0bad\x1b[31m\nline\0hidden"), true,
	    "c?wd", 2, "bad?[31m?line");
	/* what fills at most 15 bytes. */
	expect_failed(F("abcdefghijklmno\0" "1\0m"), true, "abcdefghijklmno",
	    1, "m");

	expect_failed(F("cwd"), false, NULL, 0, NULL);		/* no NUL */
	expect_failed(F("cwd\0" "2"), false, NULL, 0, NULL);	/* one NUL */
	expect_failed(F("\0" "2\0msg"), false, NULL, 0, NULL);	/* empty what */
	expect_failed(F("abcdefghijklmnop\0" "1\0m"), false, NULL, 0, NULL);
	expect_failed(F("cwd\0\0msg"), false, NULL, 0, NULL);	/* empty errno */
	expect_failed(F("cwd\0 2\0msg"), false, NULL, 0, NULL);
	expect_failed(F("cwd\0" "2x\0msg"), false, NULL, 0, NULL);
	expect_failed(F("cwd\0-2\0msg"), false, NULL, 0, NULL);
	expect_failed(F("cwd\0" "4096\0msg"), false, NULL, 0, NULL);
	expect_failed(F(""), false, NULL, 0, NULL);

	/* A long message is truncated, not overflowed; 256 is the edge. */
	for (size_t mlen = 255; mlen <= 257; mlen++) {
		struct buf b = { 0 };
		struct guest_frame gf;
		const char *reason;

		memcpy(big, "cwd\0" "2\0", 6);
		memset(big + 6, 'm', mlen);
		buf_start(&b, "");
		buf_frame(&b, 'F', big, 6 + mlen);
		assert_int_equal(parse_one(&b, &gf, &reason), GUEST_FRAME);
		assert_int_equal(strlen(gf.message), 255);
		free(b.data);
	}
}

static void
expect_pid(const char *payload, bool ok)
{
	struct buf b = { 0 };
	struct guest_frame gf;
	const char *reason;
	enum guest_rc rc;

	buf_start(&b, "");
	buf_frame(&b, 'P', payload, strlen(payload));
	rc = parse_one(&b, &gf, &reason);
	if (ok && rc != GUEST_FRAME)
		fail_msg("P \"%s\" refused", payload);
	if (!ok && rc != GUEST_ERROR)
		fail_msg("P \"%s\" accepted", payload);
	if (!ok)
		assert_non_null(reason);
	free(b.data);
}

static void
test_pid_frame(void **state)
{
	expect_pid("1", true);
	expect_pid("4242", true);
	expect_pid("4194304", true);
	expect_pid("", false);
	expect_pid("0", false);
	expect_pid("-1", false);
	expect_pid("12a", false);
	expect_pid(" 12", false);
	expect_pid("4194305", false);
	expect_pid("99999999999", false);
}

static void
expect_stream_error(const struct buf *b, const char *want_in_reason)
{
	struct frame f[4];
	enum guest_rc rc;
	struct guest_parser p;
	struct guest_frame gf;
	size_t used, off = 0;

	(void)feed(b, b->len, f, 4, &rc);
	assert_int_equal(rc, GUEST_ERROR);
	/* Same answer from a fresh parser, with the reason. */
	guest_parser_init(&p);
	while ((rc = guest_parse(&p, b->data + off, b->len - off, &gf,
	    &used)) == GUEST_FRAME)
		off += used;
	assert_int_equal(rc, GUEST_ERROR);
	assert_non_null(p.reason);
	if (strstr(p.reason, want_in_reason) == NULL)
		fail_msg("reason \"%s\" lacks \"%s\"", p.reason, want_in_reason);
}

static void
test_unknown_type(void **state)
{
	struct buf b = { 0 };

	buf_start(&b, "");
	buf_frame(&b, 'O', "ok", 2);
	buf_frame(&b, 'Q', "x", 1);
	expect_stream_error(&b, "unknown frame type");
	free(b.data);

	/* Daemon-to-guest types are not valid from the guest either. */
	memset(&b, 0, sizeof b);
	buf_start(&b, "");
	buf_frame(&b, 'I', "x", 1);
	expect_stream_error(&b, "unknown frame type");
	free(b.data);
}

static void
test_payload_bound(void **state)
{
	struct buf b = { 0 };
	uint8_t hdr[GUEST_HEADER];
	struct guest_parser p;
	struct guest_frame gf;
	size_t used;
	uint8_t *big;

	/* Refused from the header alone, before any payload arrives. */
	buf_start(&b, "");
	guest_header(hdr, 'O', GUEST_MAX_PAYLOAD + 1);
	buf_add(&b, hdr, sizeof hdr);
	expect_stream_error(&b, "oversized");
	free(b.data);

	memset(&b, 0, sizeof b);
	buf_start(&b, "");
	guest_header(hdr, 'E', 0xffffffffu);
	buf_add(&b, hdr, sizeof hdr);
	expect_stream_error(&b, "oversized");
	free(b.data);

	/* Exactly the bound is a frame. */
	big = calloc(1, GUEST_MAX_PAYLOAD);
	assert_non_null(big);
	memset(&b, 0, sizeof b);
	buf_start(&b, "");
	buf_frame(&b, 'O', big, GUEST_MAX_PAYLOAD);
	guest_parser_init(&p);
	assert_int_equal(guest_parse(&p, b.data, b.len, &gf, &used),
	    GUEST_FRAME);
	assert_int_equal(gf.len, GUEST_MAX_PAYLOAD);
	assert_int_equal(used, b.len);
	free(b.data);
	free(big);
}

static void
test_preamble_bound(void **state)
{
	struct buf b = { 0 };
	char *noise = malloc(GUEST_MAX_PREAMBLE + 64);
	struct frame f[2];
	enum guest_rc rc;
	size_t n;

	assert_non_null(noise);
	/* Exactly GUEST_MAX_PREAMBLE bytes of noise are tolerated... */
	memset(noise, 'n', GUEST_MAX_PREAMBLE);
	noise[GUEST_MAX_PREAMBLE] = '\0';
	buf_start(&b, noise);
	buf_frame(&b, 'X', "c0", 2);
	n = feed(&b, b.len, f, 2, &rc);
	assert_int_equal(n, 1);
	n = feed(&b, 4096, f, 2, &rc);
	assert_int_equal(n, 1);
	n = feed(&b, 1000, f, 2, &rc);
	assert_int_equal(n, 1);
	free(b.data);

	/* ...one more is not, whether the magic follows or not. */
	memset(&b, 0, sizeof b);
	memset(noise, 'n', GUEST_MAX_PREAMBLE + 1);
	noise[GUEST_MAX_PREAMBLE + 1] = '\0';
	buf_start(&b, noise);
	buf_frame(&b, 'X', "c0", 2);
	expect_stream_error(&b, "too much");
	n = feed(&b, 4096, f, 2, &rc);
	assert_int_equal(n, 0);
	assert_int_equal(rc, GUEST_ERROR);
	free(b.data);

	memset(&b, 0, sizeof b);
	memset(noise, 'n', GUEST_MAX_PREAMBLE + 64);
	buf_add(&b, noise, GUEST_MAX_PREAMBLE + 64);
	n = feed(&b, 999, f, 2, &rc);
	assert_int_equal(rc, GUEST_ERROR);
	free(b.data);
	free(noise);
}

static void
test_header_encoding(void **state)
{
	uint8_t hdr[GUEST_HEADER];

	guest_header(hdr, 'I', 0x01020304);
	assert_memory_equal(hdr, "I\x01\x02\x03\x04", GUEST_HEADER);
	guest_header(hdr, 'R', 0);
	assert_memory_equal(hdr, "R\0\0\0\0", GUEST_HEADER);
	guest_header(hdr, 'Z', 0xffffffffu);
	assert_memory_equal(hdr, "Z\xff\xff\xff\xff", GUEST_HEADER);
	assert_int_equal(GUEST_MAGIC_LEN, 8);
	assert_memory_equal(GUEST_MAGIC, "\0ALGX01\n", GUEST_MAGIC_LEN);
}

/* ---- The exec channel's frames ---- */

/*
 * Feeds buf step bytes at a time, as reads would, and consumes the way
 * gexec.c does (a frame's header stays until its payload is all there).
 */
static size_t
chan_parse_all(const uint8_t *buf, size_t len, size_t step,
    struct guest_chan_frame *out, size_t max, enum guest_rc *last)
{
	struct guest_chan_parser p;
	struct guest_chan_frame f;
	size_t avail = 0, off = 0, n = 0, used;

	guest_chan_parser_init(&p);
	for (;;) {
		*last = guest_chan_parse(&p, buf + off, avail, &f, &used);
		if (*last == GUEST_ERROR) {
			assert_non_null(p.reason);
			return n;
		}
		assert_true(used <= avail);
		if (*last == GUEST_FRAME && avail - used >= f.len) {
			assert_true(n < max);
			out[n++] = f;
			off += used + f.len;
			avail -= used + f.len;
			continue;
		}
		if (*last == GUEST_FRAME)
			used -= GUEST_CHAN_HEADER;
		off += used;
		avail -= used;
		if (off + avail == len)
			return n;
		avail += step;
		if (off + avail > len)
			avail = len - off;
	}
}

static void
test_chan_frames(void **state)
{
	uint8_t buf[256], *p = buf;
	struct guest_chan_frame f[8];
	enum guest_rc last;
	size_t n;

	memcpy(p, "motd noise\n", 11);
	p += 11;
	memcpy(p, GUEST_CHAN_MAGIC, GUEST_MAGIC_LEN);
	p += GUEST_MAGIC_LEN;
	guest_chan_header(p, GUEST_CHAN_DATA, 7, 3);
	memcpy(p + GUEST_CHAN_HEADER, "abc", 3);
	p += GUEST_CHAN_HEADER + 3;
	guest_chan_header(p, GUEST_CHAN_DATA, 0x01020304, 2);
	memcpy(p + GUEST_CHAN_HEADER, "xy", 2);
	p += GUEST_CHAN_HEADER + 2;
	guest_chan_header(p, GUEST_CHAN_END, 7, 0);
	p += GUEST_CHAN_HEADER;
	for (size_t step = 1; step <= (size_t)(p - buf); step++) {
		n = chan_parse_all(buf, (size_t)(p - buf), step, f, 8, &last);
		assert_int_equal(n, 3);
		assert_int_equal(f[0].type, GUEST_CHAN_DATA);
		assert_int_equal(f[0].id, 7);
		assert_int_equal(f[0].len, 3);
		assert_int_equal(f[1].id, 0x01020304);
		assert_int_equal(f[1].len, 2);
		assert_int_equal(f[2].type, GUEST_CHAN_END);
		assert_int_equal(f[2].id, 7);
	}
	guest_chan_header(buf, 'N', 1, 4);
	assert_memory_equal(buf, "N\0\0\0\1\0\0\0\4", GUEST_CHAN_HEADER);
	assert_memory_equal(GUEST_CHAN_MAGIC, "\0ALGM01\n", GUEST_MAGIC_LEN);
}

/* What the guest may not send on the channel. */
static void
test_chan_errors(void **state)
{
	struct { char type; uint32_t len; } bad[] = {
		{ 'X', 1 },				/* unknown type */
		{ 'N', 4 },				/* ours, not the guest's */
		{ 'G', 4 },
		{ GUEST_CHAN_DATA, 0 },			/* empty data */
		{ GUEST_CHAN_DATA, GUEST_CHAN_MAX_PAYLOAD + 1 },
		{ GUEST_CHAN_END, 1 },			/* an end with payload */
	};
	struct guest_chan_parser p;
	struct guest_chan_frame f;
	uint8_t buf[GUEST_MAGIC_LEN + GUEST_CHAN_HEADER];
	size_t used;
	uint8_t *noise;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(buf, GUEST_CHAN_MAGIC, GUEST_MAGIC_LEN);
		guest_chan_header(buf + GUEST_MAGIC_LEN, bad[i].type, 1,
		    bad[i].len);
		guest_chan_parser_init(&p);
		assert_int_equal(guest_chan_parse(&p, buf, sizeof buf, &f,
		    &used), GUEST_ERROR);
		assert_non_null(p.reason);
	}
	/* The largest payload is fine. */
	guest_chan_header(buf + GUEST_MAGIC_LEN, GUEST_CHAN_DATA, 1,
	    GUEST_CHAN_MAX_PAYLOAD);
	guest_chan_parser_init(&p);
	assert_int_equal(guest_chan_parse(&p, buf, sizeof buf, &f, &used),
	    GUEST_FRAME);
	assert_int_equal(used, sizeof buf);
	/* Noise before the magic line is bounded, in one read or many. */
	noise = calloc(1, GUEST_MAX_PREAMBLE + 64);
	assert_non_null(noise);
	memset(noise, 'm', GUEST_MAX_PREAMBLE + 64);
	guest_chan_parser_init(&p);
	assert_int_equal(guest_chan_parse(&p, noise, GUEST_MAX_PREAMBLE + 64,
	    &f, &used), GUEST_ERROR);
	guest_chan_parser_init(&p);
	for (size_t i = 0; i < 100; i++) {
		enum guest_rc rc = guest_chan_parse(&p, noise, 4096, &f,
		    &used);

		if (rc == GUEST_ERROR)
			break;
		assert_int_equal(rc, GUEST_NEED_MORE);
		assert_true(i < 20);
	}
	assert_non_null(p.reason);
	free(noise);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_session_whole),
		cmocka_unit_test(test_session_byte_by_byte),
		cmocka_unit_test(test_no_magic_yet),
		cmocka_unit_test(test_exit_status),
		cmocka_unit_test(test_failed_frame),
		cmocka_unit_test(test_pid_frame),
		cmocka_unit_test(test_unknown_type),
		cmocka_unit_test(test_payload_bound),
		cmocka_unit_test(test_preamble_bound),
		cmocka_unit_test(test_header_encoding),
		cmocka_unit_test(test_chan_frames),
		cmocka_unit_test(test_chan_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
