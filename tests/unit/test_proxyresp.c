/*
 * daemon/proxyresp.c: responses from an intercepted upstream are framed by
 * RFC 9112's rules, re-framed by the parser, and reach the guest with
 * every secret value redacted, wherever the reads cut them.
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

#include "proxyresp.h"
#include "secret.h"

#define VAL_A	"sk-live-0123456789abcdef"
#define VAL_B	"ghp_Zq9YwQ"

/* ---- Helpers ---- */

struct sink {
	uint8_t *buf;
	size_t len, cap;
	size_t calls;
	bool refuse;		/* the guest side takes nothing */
};

static bool
sink_out(void *arg, const void *p, size_t n)
{
	struct sink *k = arg;

	if (k->refuse)
		return false;
	if (k->len + n + 1 > k->cap) {
		k->cap = (k->len + n + 1) * 2;
		k->buf = realloc(k->buf, k->cap);
		assert_non_null(k->buf);
	}
	memcpy(k->buf + k->len, p, n);
	k->len += n;
	k->buf[k->len] = '\0';
	k->calls++;
	return true;
}

static void
sink_reset(struct sink *k)
{
	free(k->buf);
	memset(k, 0, sizeof(*k));
}

static struct secret_set *
mkset(const char *const *values, size_t n)
{
	struct secret_set *s = secret_set_new(SECRET_MAX);
	const char *hosts[] = { "api.example.com" };
	char err[128], name[16], ph[64];

	assert_non_null(s);
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "S%zu", i);
		snprintf(ph, sizeof(ph), "AGENTLANE_PH_%032zx", i + 1);
		assert_int_equal(secret_set_add(s, name, ph, values[i],
		    strlen(values[i]), hosts, 1, err, sizeof(err)), 0);
	}
	return s;
}

static struct secret_set *
set_ab(void)
{
	const char *v[] = { VAL_A, VAL_B };
	return mkset(v, 2);
}

/* Feeds s in pieces of `step` bytes (0: all at once); returns the status. */
static enum proxyresp_status
feed(struct proxyresp *r, const char *s, size_t n, size_t step,
    struct sink *k)
{
	const char *why = NULL;
	enum proxyresp_status st = PROXYRESP_OK;

	if (step == 0)
		step = n ? n : 1;
	for (size_t i = 0; i < n && st == PROXYRESP_OK; i += step) {
		size_t m = n - i < step ? n - i : step;
		st = proxyresp_feed(r, (const uint8_t *)s + i, m, sink_out, k,
		    &why);
		if (st != PROXYRESP_OK) {
			assert_non_null(why);
			assert_null(strstr(why, VAL_A));
			assert_null(strstr(why, VAL_B));
		}
	}
	return st;
}

static enum proxyresp_status
feed_str(struct proxyresp *r, const char *s, struct sink *k)
{
	return feed(r, s, strlen(s), 0, k);
}

/* Feeds s[0..cut) then s[cut..n). */
static enum proxyresp_status
feed_cut(struct proxyresp *r, const char *s, size_t n, size_t cut,
    struct sink *k)
{
	const char *why;
	enum proxyresp_status st;

	st = proxyresp_feed(r, (const uint8_t *)s, cut, sink_out, k, &why);
	if (st != PROXYRESP_OK)
		return st;
	return proxyresp_feed(r, (const uint8_t *)s + cut, n - cut, sink_out,
	    k, &why);
}

static enum proxyresp_status
eof(struct proxyresp *r, struct sink *k)
{
	const char *why = NULL;
	return proxyresp_eof(r, sink_out, k, &why);
}

static char *
xs(size_t n)
{
	char *s = malloc(n + 1);
	assert_non_null(s);
	memset(s, 'X', n);
	s[n] = '\0';
	return s;
}

/*
 * Strict chunked decoding of what the parser wrote: hex sizes with no
 * extensions, CRLF after each, "0\r\n\r\n" last and nothing after.
 * Returns the data (malloc'd) and its length, or NULL.
 */
static char *
dechunk(const char *p, size_t n, size_t *dlen)
{
	char *d = malloc(n + 1);
	size_t i = 0, o = 0;

	assert_non_null(d);
	for (;;) {
		size_t sz = 0, digits = 0;
		while (i < n && strchr("0123456789abcdef", p[i]) != NULL &&
		    p[i] != '\0') {
			sz = sz * 16 + (size_t)(p[i] <= '9' ? p[i] - '0' :
			    p[i] - 'a' + 10);
			i++;
			digits++;
		}
		if (digits == 0 || i + 2 > n || memcmp(p + i, "\r\n", 2) != 0)
			goto bad;
		i += 2;
		if (sz == 0)
			break;
		if (i + sz + 2 > n || memcmp(p + i + sz, "\r\n", 2) != 0)
			goto bad;
		memcpy(d + o, p + i, sz);
		o += sz;
		i += sz + 2;
	}
	if (i + 2 != n || memcmp(p + i, "\r\n", 2) != 0)
		goto bad;
	d[o] = '\0';
	*dlen = o;
	return d;
bad:
	free(d);
	return NULL;
}

/* ---- Redaction in bodies ---- */

static void
test_body_every_split(void **state)
{
	struct secret_set *s = set_ab();
	const char *body = "{\"echo\":\"Bearer " VAL_A "\"}";
	char in[256], want[256];
	char *x = xs(strlen(VAL_A));
	size_t n;

	snprintf(in, sizeof(in), "HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n"
	    "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
	snprintf(want, sizeof(want), "HTTP/1.1 200 OK\r\nContent-Type: a/b\r\n"
	    "Content-Length: %zu\r\n\r\n{\"echo\":\"Bearer %s\"}", strlen(body),
	    x);
	n = strlen(in);
	for (size_t cut = 0; cut <= n; cut++) {
		struct proxyresp *r = proxyresp_new(s, 8192);
		struct sink k = { 0 };
		uint64_t count = 0;

		assert_true(proxyresp_expect(r, false));
		assert_int_equal(feed_cut(r, in, n, cut, &k), PROXYRESP_OK);
		assert_int_equal(k.len, strlen(want));
		assert_memory_equal(k.buf, want, k.len);
		assert_int_equal(proxyresp_take_redacted(r, &count), 1);
		assert_int_equal(count, 1);
		assert_int_equal(proxyresp_take_redacted(r, &count), 0);
		assert_int_equal(count, 0);
		assert_int_equal(proxyresp_pending(r), 0);
		proxyresp_free(r);
		sink_reset(&k);
	}
	/* Byte by byte. */
	struct proxyresp *r = proxyresp_new(s, 8192);
	struct sink k = { 0 };
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed(r, in, n, 1, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf, want);
	assert_null(strstr((char *)k.buf, VAL_A));
	proxyresp_free(r);
	sink_reset(&k);
	free(x);
	secret_set_free(s);
}

/* A value split between two chunks is found; the output is valid chunked. */
static void
test_chunk_split(void **state)
{
	struct secret_set *s = set_ab();
	/* "ghp_Z" | "q9YwQ" across two chunks, with an extension and trailer. */
	const char *in = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "7;ext=1\r\ntoken=g\r\n"
	    "4\r\nhp_Z\r\n"
	    "8\r\nq9YwQ!!!\r\n"
	    "0\r\nX-Trailer: " VAL_B "\r\n\r\n";
	size_t n = strlen(in);

	for (size_t step = 0; step <= n; step++) {
		struct proxyresp *r = proxyresp_new(s, 8192);
		struct sink k = { 0 };
		const char *hd = "HTTP/1.1 200 OK\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n";
		size_t hl = strlen(hd), dl;
		char *d;
		uint64_t count;

		assert_true(proxyresp_expect(r, false));
		assert_int_equal(feed(r, in, n, step, &k), PROXYRESP_OK);
		assert_true(k.len > hl);
		assert_memory_equal(k.buf, hd, hl);
		d = dechunk((char *)k.buf + hl, k.len - hl, &dl);
		assert_non_null(d);
		assert_string_equal(d, "token=XXXXXXXXXX!!!");
		assert_null(strstr((char *)k.buf, "ext="));
		assert_null(strstr((char *)k.buf, "X-Trailer"));
		assert_int_equal(proxyresp_take_redacted(r, &count), 2);
		assert_int_equal(count, 1);
		assert_int_equal(proxyresp_pending(r), 0);
		free(d);
		proxyresp_free(r);
		sink_reset(&k);
	}
	secret_set_free(s);
}

static void
test_header_value(void **state)
{
	struct secret_set *s = set_ab();
	struct proxyresp *r = proxyresp_new(s, 8192);
	struct sink k = { 0 };
	uint64_t count;
	const char *in = "HTTP/1.1 401 " VAL_B "\r\n"
	    "X-Echo-Authorization: Bearer " VAL_A "\r\n"
	    "Set-Cookie: t=" VAL_B "; Path=/\r\n"
	    "Content-Length: 0\r\n\r\n";
	const char *want = "HTTP/1.1 401 XXXXXXXXXX\r\n"
	    "X-Echo-Authorization: Bearer XXXXXXXXXXXXXXXXXXXXXXXX\r\n"
	    "Set-Cookie: t=XXXXXXXXXX; Path=/\r\n"
	    "Content-Length: 0\r\n\r\n";

	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed(r, in, strlen(in), 3, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf, want);
	assert_int_equal(proxyresp_take_redacted(r, &count), 3);
	assert_int_equal(count, 3);
	proxyresp_free(r);
	sink_reset(&k);
	secret_set_free(s);
}

/* Close-delimited: the held tail goes out, redacted, at the close. */
static void
test_close_delimited_end(void **state)
{
	struct secret_set *s = set_ab();
	struct proxyresp *r = proxyresp_new(s, 8192);
	struct sink k = { 0 };
	const char *hd = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n";
	const char *body = "the key is " VAL_A;

	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, hd, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf, hd);
	assert_int_equal(feed_str(r, body, &k), PROXYRESP_OK);
	/* The whole value went by: redacted, nothing held. */
	assert_int_equal(k.len, strlen(hd) + strlen(body));
	assert_false(proxyresp_closing(r));
	assert_int_equal(eof(r, &k), PROXYRESP_OK);
	assert_true(proxyresp_closing(r));
	assert_int_equal(proxyresp_pending(r), 0);
	assert_string_equal((char *)k.buf + strlen(hd),
	    "the key is XXXXXXXXXXXXXXXXXXXXXXXX");
	proxyresp_free(r);
	sink_reset(&k);

	/* Ends on a prefix of a value: held until the close, then as is. */
	r = proxyresp_new(s, 8192);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, hd, &k), PROXYRESP_OK);
	assert_int_equal(feed_str(r, "abc sk-live-01", &k), PROXYRESP_OK);
	assert_int_equal(k.len, strlen(hd) + 4);
	assert_int_equal(eof(r, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf + strlen(hd), "abc sk-live-01");
	assert_int_equal(proxyresp_take_redacted(r, NULL), 0);
	proxyresp_free(r);
	sink_reset(&k);

	/* The value's last bytes arrive in the close's own read. */
	r = proxyresp_new(s, 8192);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, hd, &k), PROXYRESP_OK);
	assert_int_equal(feed_str(r, "ghp_Zq9Yw", &k), PROXYRESP_OK);
	assert_int_equal(feed_str(r, "Q", &k), PROXYRESP_OK);
	assert_int_equal(eof(r, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf + strlen(hd), "XXXXXXXXXX");
	proxyresp_free(r);
	sink_reset(&k);
	secret_set_free(s);
}

static void
run_close(const struct secret_set *s, const char *body, const char *want,
    uint32_t mask, uint64_t count)
{
	struct proxyresp *r;
	struct sink k = { 0 };
	const char *hd = "HTTP/1.1 200 OK\r\n\r\n";
	uint64_t c;

	for (size_t step = 0; step <= strlen(body); step++) {
		r = proxyresp_new(s, 8192);
		assert_true(proxyresp_expect(r, false));
		assert_int_equal(feed_str(r, hd, &k), PROXYRESP_OK);
		assert_int_equal(feed(r, body, strlen(body), step, &k),
		    PROXYRESP_OK);
		assert_int_equal(eof(r, &k), PROXYRESP_OK);
		assert_string_equal((char *)k.buf + strlen(hd), want);
		assert_int_equal(proxyresp_take_redacted(r, &c), mask);
		assert_int_equal(c, count);
		proxyresp_free(r);
		sink_reset(&k);
	}
}

/*
 * Overlaps: every occurrence of every value is redacted, so where two
 * overlap their union is; each occurrence counts.
 */
static void
test_overlap(void **state)
{
	const char *v1[] = { "tok-aaaa1111", "tok-aaaa2222" };
	const char *v2[] = { "secret", "mysecretvalue" };
	const char *v3[] = { "1234", "3456" };
	const char *v4[] = { "abab" };
	struct secret_set *s;

	/* Shared prefixes: the second one's tail decides. */
	s = mkset(v1, 2);
	run_close(s, "<tok-aaaa2222>", "<XXXXXXXXXXXX>", 2, 1);
	run_close(s, "tok-aaaatok-aaaa1111.", "tok-aaaaXXXXXXXXXXXX.", 1, 1);
	run_close(s, "tok-aaaa222", "tok-aaaa222", 0, 0);
	secret_set_free(s);
	/* One inside the other: both found, the longer one whole. */
	s = mkset(v2, 2);
	run_close(s, "[mysecretvalue]", "[XXXXXXXXXXXXX]", 3, 2);
	run_close(s, "[mysecretvalu]", "[myXXXXXXvalu]", 1, 1);
	secret_set_free(s);
	/* Two crossing: the union. */
	s = mkset(v3, 2);
	run_close(s, "0123456789", "0XXXXXX789", 3, 2);
	secret_set_free(s);
	/* A value overlapping itself: both occurrences. */
	s = mkset(v4, 1);
	run_close(s, "xababab", "xXXXXXX", 1, 2);
	secret_set_free(s);
}

/* A redaction never makes up a value: its byte is one no value holds. */
static void
test_redaction_byte(void **state)
{
	const char *v[] = { "XXab", "cd" };
	struct secret_set *s = mkset(v, 2);

	run_close(s, "XXcd", "XX**", 2, 1);
	run_close(s, "cdab", "**ab", 2, 1);
	secret_set_free(s);
}

/* Content-Length bodies: the held bytes count, the lengths stay exact. */
static void
test_length_exact(void **state)
{
	struct secret_set *s = set_ab();
	const char *bodies[] = { VAL_A, ("x" VAL_B), "sk-live-", "ghp_Zq9YwQghp_",
	    "", "plain" };

	for (size_t b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		char in[512];
		size_t bl = strlen(bodies[b]);
		int hl = snprintf(in, sizeof(in), "HTTP/1.1 200 OK\r\n"
		    "Content-Length: %zu\r\n\r\n", bl);
		/* Then a second response, to show where the first ended. */
		snprintf(in + hl, sizeof(in) - (size_t)hl, "%sHTTP/1.1 204 No"
		    "\r\n\r\n", bodies[b]);
		for (size_t step = 1; step <= strlen(in); step++) {
			struct proxyresp *r = proxyresp_new(s, 8192);
			struct sink k = { 0 };

			assert_true(proxyresp_expect(r, false));
			assert_true(proxyresp_expect(r, false));
			assert_int_equal(feed(r, in, strlen(in), step, &k),
			    PROXYRESP_OK);
			assert_int_equal(k.len, strlen(in));
			assert_int_equal(proxyresp_pending(r), 0);
			assert_null(strstr((char *)k.buf, VAL_A));
			assert_null(strstr((char *)k.buf, VAL_B));
			proxyresp_free(r);
			sink_reset(&k);
		}
	}
	secret_set_free(s);
}

/* Framing fields are re-written: one Content-Length, at the end. */
static void
test_reframe(void **state)
{
	struct proxyresp *r = proxyresp_new(NULL, 8192);
	struct sink k = { 0 };
	const char *in = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\nA: b\r\n"
	    "Content-Length:  3 \r\n\r\nabc";

	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, in, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf, "HTTP/1.1 200 OK\r\nA: b\r\n"
	    "Content-Length: 3\r\n\r\nabc");
	proxyresp_free(r);
	sink_reset(&k);
}

/* ---- Bodiless responses ---- */

static void
test_bodiless(void **state)
{
	struct proxyresp *r = proxyresp_new(NULL, 8192);
	struct sink k = { 0 };
	const char *in =
	    /* HEAD: the length is the GET's; no body follows. */
	    "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
	    /* 204 and 304: no body either. */
	    "HTTP/1.1 204 No Content\r\n\r\n"
	    "HTTP/1.1 304 Not Modified\r\nContent-Length: 55\r\n\r\n"
	    /* 1xx: the same request still awaits its response. */
	    "HTTP/1.1 100 Continue\r\n\r\n"
	    "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

	assert_true(proxyresp_expect(r, true));
	assert_true(proxyresp_expect(r, false));
	assert_true(proxyresp_expect(r, false));
	assert_true(proxyresp_expect(r, false));
	for (size_t step = 0; step <= strlen(in); step++) {
		struct proxyresp *q = proxyresp_new(NULL, 8192);
		assert_true(proxyresp_expect(q, true));
		assert_true(proxyresp_expect(q, false));
		assert_true(proxyresp_expect(q, false));
		assert_true(proxyresp_expect(q, false));
		assert_int_equal(feed(q, in, strlen(in), step, &k),
		    PROXYRESP_OK);
		assert_string_equal((char *)k.buf, in);
		assert_int_equal(proxyresp_pending(q), 0);
		proxyresp_free(q);
		sink_reset(&k);
	}
	/* After the 1xx heads, one request still awaits. */
	assert_int_equal(feed_str(r, "HTTP/1.1 200 OK\r\nContent-Length: 1000"
	    "\r\n\r\nHTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified"
	    "\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n", &k), PROXYRESP_OK);
	assert_int_equal(proxyresp_pending(r), 1);
	proxyresp_free(r);
	sink_reset(&k);

	/* 101 is refused: the proxy never relays an Upgrade. */
	r = proxyresp_new(NULL, 8192);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n", &k),
	    PROXYRESP_BAD);
	assert_int_equal(k.len, 0);
	proxyresp_free(r);
	sink_reset(&k);
}

static void
test_pipelined(void **state)
{
	struct secret_set *s = set_ab();
	struct proxyresp *r = proxyresp_new(s, 8192);
	struct sink k = { 0 };
	const char *in =
	    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" VAL_B
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nghp\r\n7\r\n_Zq9YwQ\r\n0\r\n\r\n"
	    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	uint64_t count;

	for (size_t i = 0; i < PROXYRESP_PIPELINE_MAX; i++)
		assert_true(proxyresp_expect(r, false));
	assert_false(proxyresp_expect(r, false));
	assert_int_equal(proxyresp_pending(r), PROXYRESP_PIPELINE_MAX);
	assert_int_equal(feed(r, in, strlen(in), 5, &k), PROXYRESP_OK);
	assert_int_equal(proxyresp_pending(r), PROXYRESP_PIPELINE_MAX - 3);
	assert_null(strstr((char *)k.buf, VAL_B));
	assert_non_null(strstr((char *)k.buf, "\r\n\r\nXXXXXXXXXXHTTP/1.1 200"));
	assert_non_null(strstr((char *)k.buf, "0\r\n\r\nHTTP/1.1 404 Not Found"
	    "\r\nContent-Length: 0\r\n\r\n"));
	assert_int_equal(proxyresp_take_redacted(r, &count), 2);
	assert_int_equal(count, 2);
	assert_false(proxyresp_in_head(r));
	assert_int_equal(feed_str(r, "HTTP/1.1 2", &k), PROXYRESP_OK);
	assert_true(proxyresp_in_head(r));
	proxyresp_free(r);
	sink_reset(&k);
	secret_set_free(s);
}

/* ---- Refusals ---- */

static void
refused(const char *in, enum proxyresp_status want, bool head)
{
	struct proxyresp *r = proxyresp_new(NULL, 8192);
	struct sink k = { 0 };
	const char *why;

	assert_true(proxyresp_expect(r, head));
	assert_int_equal(feed_str(r, in, &k), want);
	/* Nothing of the refused head went out. */
	assert_int_equal(k.len, 0);
	/* And nothing more ever does. */
	assert_int_equal(proxyresp_feed(r, (const uint8_t *)"x", 1, sink_out,
	    &k, &why), want);
	assert_int_equal(proxyresp_eof(r, sink_out, &k, &why), want);
	assert_int_equal(k.len, 0);
	proxyresp_free(r);
	sink_reset(&k);
}

static void
test_unscannable(void **state)
{
	refused("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
	    "Content-Length: 20\r\n\r\n", PROXYRESP_UNSCANNABLE, false);
	refused("HTTP/1.1 200 OK\r\nContent-Encoding: identity, br\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", PROXYRESP_UNSCANNABLE, false);
	refused("HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\n\r\n",
	    PROXYRESP_UNSCANNABLE, false);
	refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	    PROXYRESP_UNSCANNABLE, false);
	refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", PROXYRESP_UNSCANNABLE, false);

	/* No body: nothing to scan, so it passes. */
	struct proxyresp *r = proxyresp_new(NULL, 8192);
	struct sink k = { 0 };
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
	    "Content-Length: 20\r\n\r\n"
	    "HTTP/1.1 304 Not Modified\r\nContent-Encoding: gzip\r\n\r\n"
	    "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
	    "Content-Length: 0\r\n\r\n"
	    "HTTP/1.1 200 OK\r\nContent-Encoding: Identity\r\n"
	    "Content-Length: 1\r\n\r\nz";
	for (int i = 0; i < 4; i++)
		assert_true(proxyresp_expect(r, i == 0));
	assert_int_equal(feed_str(r, ok, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf, ok);
	proxyresp_free(r);
	sink_reset(&k);
}

static void
test_bad_framing(void **state)
{
	refused("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 3\r\n\r\n", PROXYRESP_BAD, true);
	refused("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
	    "Content-Length: 4\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n",
	    PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\nContent-Length: +3\r\n\r\n", PROXYRESP_BAD,
	    false);
	refused("HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456789\r\n\r\n",
	    PROXYRESP_BAD, false);
	refused("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	    PROXYRESP_BAD, false);
	/* Strict heads. */
	refused("HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", PROXYRESP_BAD,
	    false);
	refused("HTTP/1.1 200 OK\r\nA: b\rC: d\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\nA : b\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\n: b\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\nA\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 200 OK\r\nA: \001\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 20 OK\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 2000 OK\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/1.1 600 OK\r\n\r\n", PROXYRESP_BAD, false);
	refused("HTTP/2 200 OK\r\n\r\n", PROXYRESP_BAD, false);
	refused("http/1.1 200 OK\r\n\r\n", PROXYRESP_BAD, false);
	refused("\r\nHTTP/1.1 200 OK\r\n\r\n", PROXYRESP_BAD, false);
}

/* Bad chunk framing ends the connection after what was good went out. */
static void
test_bad_chunks(void **state)
{
	const char *bad[] = {
		"zz\r\n", "\r\n", "-1\r\n", " 5\r\n", "5 \r\n", "0x5\r\n",
		"1000000000000000\r\n", "5\r\nabcdefg\r\n", "5\nabcde\r\n",
		"5\r\nabcde\n", "0\r\nA: b\n\r\n",
	};
	const char *hd = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct proxyresp *r = proxyresp_new(NULL, 8192);
		struct sink k = { 0 };
		char in[256];

		snprintf(in, sizeof(in), "%s%s", hd, bad[i]);
		assert_true(proxyresp_expect(r, false));
		assert_int_equal(feed_str(r, in, &k), PROXYRESP_BAD);
		proxyresp_free(r);
		sink_reset(&k);
	}
}

static void
test_max_head(void **state)
{
	const char *in = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	size_t n = strlen(in);
	struct sink k = { 0 };
	struct proxyresp *r;

	/* Exactly at the cap: passes; one byte under it: refused. */
	r = proxyresp_new(NULL, (uint32_t)n);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed(r, in, n, 1, &k), PROXYRESP_OK);
	assert_string_equal((char *)k.buf, in);
	proxyresp_free(r);
	sink_reset(&k);
	r = proxyresp_new(NULL, (uint32_t)n - 1);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed(r, in, n, 1, &k), PROXYRESP_TOO_LARGE);
	assert_int_equal(k.len, 0);
	proxyresp_free(r);
	/* A head that never ends stops at the cap, not at memory's end. */
	r = proxyresp_new(NULL, 4096);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, "HTTP/1.1 200 OK\r\n", &k), PROXYRESP_OK);
	enum proxyresp_status st = PROXYRESP_OK;
	for (int i = 0; i < 1000 && st == PROXYRESP_OK; i++)
		st = feed_str(r, "A: bbbbbbbbbbbb\r\n", &k);
	assert_int_equal(st, PROXYRESP_TOO_LARGE);
	assert_int_equal(k.len, 0);
	proxyresp_free(r);
	sink_reset(&k);
}

static void
test_truncated(void **state)
{
	const char *cut[] = {
		"HTTP/1.1 200 OK\r\nContent-Le",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
	};

	for (size_t i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		struct proxyresp *r = proxyresp_new(NULL, 8192);
		struct sink k = { 0 };

		assert_true(proxyresp_expect(r, false));
		assert_int_equal(feed_str(r, cut[i], &k), PROXYRESP_OK);
		assert_int_equal(eof(r, &k), PROXYRESP_TRUNCATED);
		proxyresp_free(r);
		sink_reset(&k);
	}
	/* Between responses the close is no error, requests awaited or not. */
	struct proxyresp *r = proxyresp_new(NULL, 8192);
	struct sink k = { 0 };
	assert_true(proxyresp_expect(r, false));
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, "HTTP/1.1 204 No\r\n\r\n", &k),
	    PROXYRESP_OK);
	assert_int_equal(eof(r, &k), PROXYRESP_OK);
	assert_int_equal(proxyresp_pending(r), 1);
	proxyresp_free(r);
	sink_reset(&k);
}

static void
test_unexpected(void **state)
{
	struct proxyresp *r = proxyresp_new(NULL, 8192);
	struct sink k = { 0 };

	assert_int_equal(feed_str(r, "HTTP/1.1 200 OK\r\n\r\n", &k),
	    PROXYRESP_UNEXPECTED);
	assert_int_equal(k.len, 0);
	proxyresp_free(r);

	/* One too many. */
	r = proxyresp_new(NULL, 8192);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, "HTTP/1.1 204 No\r\n\r\n"
	    "HTTP/1.1 204 No\r\n\r\n", &k), PROXYRESP_UNEXPECTED);
	assert_string_equal((char *)k.buf, "HTTP/1.1 204 No\r\n\r\n");
	proxyresp_free(r);
	sink_reset(&k);

	/* Bytes after a response that closed the connection. */
	r = proxyresp_new(NULL, 8192);
	assert_true(proxyresp_expect(r, false));
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, "HTTP/1.1 200 OK\r\nConnection: close\r\n"
	    "Content-Length: 1\r\n\r\nz", &k), PROXYRESP_OK);
	assert_true(proxyresp_closing(r));
	assert_int_equal(feed_str(r, "HTTP/1.1 204 No\r\n\r\n", &k),
	    PROXYRESP_UNEXPECTED);
	proxyresp_free(r);
	sink_reset(&k);

	/* HTTP/1.0 closes unless it asks to be kept alive. */
	r = proxyresp_new(NULL, 8192);
	assert_true(proxyresp_expect(r, false));
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, "HTTP/1.0 200 OK\r\nConnection: keep-alive"
	    "\r\nContent-Length: 1\r\n\r\nz", &k), PROXYRESP_OK);
	assert_false(proxyresp_closing(r));
	assert_int_equal(feed_str(r, "HTTP/1.0 200 OK\r\nContent-Length: 1"
	    "\r\n\r\nz", &k), PROXYRESP_OK);
	assert_true(proxyresp_closing(r));
	proxyresp_free(r);
	sink_reset(&k);
}

/*
 * SSE: each event goes out in the feed call that brought it; nothing is
 * held when the data's tail cannot begin a value.
 */
static void
test_sse(void **state)
{
	struct secret_set *s = set_ab();
	const char *heads[] = {
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n",
	};
	const char *events[] = {
		"data: {\"delta\":\"hello\"}\n\n",
		"event: ping\ndata: 1\n\n",
		"data: {\"key\":\"" VAL_A "\"}\n\n",
	};

	for (int c = 0; c < 2; c++) {
		struct proxyresp *r = proxyresp_new(s, 8192);
		struct sink k = { 0 };

		assert_true(proxyresp_expect(r, false));
		assert_int_equal(feed_str(r, heads[c], &k), PROXYRESP_OK);
		for (size_t e = 0; e < 3; e++) {
			char chunk[128], want[128];
			size_t before = k.len, dl;
			const char *ev = events[e];
			char *d;

			if (c == 1)
				snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n",
				    strlen(ev), ev);
			else
				snprintf(chunk, sizeof(chunk), "%s", ev);
			assert_int_equal(feed_str(r, chunk, &k), PROXYRESP_OK);
			snprintf(want, sizeof(want), "%s", ev);
			if (e == 2)
				memset(strstr(want, VAL_A), 'X', strlen(VAL_A));
			if (c == 0) {
				assert_int_equal(k.len - before, strlen(want));
				assert_memory_equal(k.buf + before, want,
				    strlen(want));
				continue;
			}
			/* Chunked: one chunk of the event's bytes, here. */
			snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n0\r\n\r\n",
			    strlen(want), want);
			assert_int_equal(k.len - before, strlen(chunk) - 5);
			d = dechunk((char *)k.buf + before, k.len - before + 0,
			    &dl);
			assert_null(d);	/* no last chunk yet */
			assert_memory_equal(k.buf + before, chunk,
			    strlen(chunk) - 5);
		}
		/* A tail that could begin a value is held, and only that. */
		size_t before = k.len;
		const char *ev = c == 1 ? "9\r\ndata: ghp\r\n" : "data: ghp";
		assert_int_equal(feed_str(r, ev, &k), PROXYRESP_OK);
		assert_int_equal(k.len - before, c == 1 ? 6 + 3 + 2 : 6);
		proxyresp_free(r);
		sink_reset(&k);
	}
	secret_set_free(s);
}

/* A large body streams through bounded memory; every value is found. */
static void
test_large_body(void **state)
{
	struct secret_set *s = set_ab();
	struct proxyresp *r = proxyresp_new(s, 8192);
	struct sink k = { 0 };
	size_t n = 3 * 1024 * 1024 + 7, hl;
	char hd[128], *body = malloc(n);
	uint64_t count;
	size_t placed = 0;

	assert_non_null(body);
	for (size_t i = 0; i < n; i++)
		body[i] = "abcdefghsk-live-ghp_"[i % 20];
	for (size_t at = 1000; at + strlen(VAL_A) < n; at += 100003) {
		memcpy(body + at, VAL_A, strlen(VAL_A));
		placed++;
	}
	hl = (size_t)snprintf(hd, sizeof(hd), "HTTP/1.1 200 OK\r\n"
	    "Content-Length: %zu\r\n\r\n", n);
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed(r, hd, hl, 0, &k), PROXYRESP_OK);
	assert_int_equal(feed(r, body, n, 65536 + 13, &k), PROXYRESP_OK);
	assert_int_equal(k.len, hl + n);
	assert_int_equal(proxyresp_take_redacted(r, &count), 1);
	assert_int_equal(count, placed);
	assert_null(memmem(k.buf, k.len, VAL_A, strlen(VAL_A)));
	free(body);
	proxyresp_free(r);
	sink_reset(&k);
	secret_set_free(s);
}

/* The guest side taking no more ends the connection. */
static void
test_out_refused(void **state)
{
	struct proxyresp *r = proxyresp_new(NULL, 8192);
	struct sink k = { 0 };

	k.refuse = true;
	assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed_str(r, "HTTP/1.1 204 No\r\n\r\n", &k),
	    PROXYRESP_BAD);
	proxyresp_free(r);
	sink_reset(&k);
}

/* A value as long as a value may be, cut anywhere: held whole, then out. */
static void
test_longest_value(void **state)
{
	char *v = malloc(SECRET_VALUE_MAX + 1), *in, *x;
	const char *vs[1];
	struct secret_set *s;
	size_t hl, n;

	assert_non_null(v);
	for (size_t i = 0; i < SECRET_VALUE_MAX; i++)
		v[i] = "ab"[i % 2];	/* self-overlapping: the worst case */
	v[SECRET_VALUE_MAX - 1] = 'c';
	v[SECRET_VALUE_MAX] = '\0';
	vs[0] = v;
	s = mkset(vs, 1);
	n = 3 * SECRET_VALUE_MAX;
	in = malloc(n + 128);
	assert_non_null(in);
	hl = (size_t)snprintf(in, 128, "HTTP/1.1 200 OK\r\nContent-Length: %zu"
	    "\r\n\r\n", n);
	memset(in + hl, 'a', n);
	memcpy(in + hl + 5, v, SECRET_VALUE_MAX);		/* whole */
	memcpy(in + hl + n - 100, v, 100);		/* a prefix at the end */
	x = xs(SECRET_VALUE_MAX);
	for (size_t cut = hl; cut < hl + n; cut += 4093) {
		struct proxyresp *r = proxyresp_new(s, 8192);
		struct sink k = { 0 };
		uint64_t count;

		assert_true(proxyresp_expect(r, false));
		assert_int_equal(feed_cut(r, in, hl + n, cut, &k), PROXYRESP_OK);
		assert_int_equal(k.len, hl + n);
		assert_memory_equal(k.buf + hl + 5, x, SECRET_VALUE_MAX);
		assert_memory_equal(k.buf + hl + n - 100, v, 100);
		assert_int_equal(proxyresp_take_redacted(r, &count), 1);
		assert_int_equal(count, 1);
		proxyresp_free(r);
		sink_reset(&k);
	}
	free(x);
	free(in);
	free(v);
	secret_set_free(s);
}

/* A value is never matched across two responses, nor across a head. */
static void
test_no_match_across_responses(void **state)
{
	struct secret_set *s = set_ab();
	struct proxyresp *r = proxyresp_new(s, 8192);
	struct sink k = { 0 };
	const char *in = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nghp_Z"
	    "HTTP/1.1 200\r\nContent-Length: 5\r\n\r\nq9YwQ"
	    "HTTP/1.1 204 \r\n\r\n";

	for (int i = 0; i < 3; i++)
		assert_true(proxyresp_expect(r, false));
	assert_int_equal(feed(r, in, strlen(in), 1, &k), PROXYRESP_OK);
	/* As it came: the status line without a reason is fine too. */
	assert_string_equal((char *)k.buf, in);
	assert_int_equal(proxyresp_take_redacted(r, NULL), 0);
	proxyresp_free(r);
	sink_reset(&k);
	secret_set_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_every_split),
		cmocka_unit_test(test_chunk_split),
		cmocka_unit_test(test_header_value),
		cmocka_unit_test(test_close_delimited_end),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_redaction_byte),
		cmocka_unit_test(test_length_exact),
		cmocka_unit_test(test_reframe),
		cmocka_unit_test(test_bodiless),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_unscannable),
		cmocka_unit_test(test_bad_framing),
		cmocka_unit_test(test_bad_chunks),
		cmocka_unit_test(test_max_head),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_unexpected),
		cmocka_unit_test(test_sse),
		cmocka_unit_test(test_large_body),
		cmocka_unit_test(test_out_refused),
		cmocka_unit_test(test_longest_value),
		cmocka_unit_test(test_no_match_across_responses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
