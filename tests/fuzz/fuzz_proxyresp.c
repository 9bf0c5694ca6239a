/*
 * The response parser and redactor (daemon/proxyresp.c), as the proxy
 * drives it: arbitrary upstream bytes, cut into arbitrary reads, with a
 * fixed set of secrets whose values overlap one another.
 *
 * Input: 4 bytes of HEAD flags (bit i: request i was HEAD), 1 byte for how
 * many requests are awaited (mod PROXYRESP_PIPELINE_MAX + 1), 4 bytes that
 * seed the read sizes, then the bytes from upstream.
 *
 * Invariants:
 *   - no crash, no leak, no read past a buffer;
 *   - the concatenated output never holds a value, whatever the cuts;
 *   - an error is final: nothing more goes out, and it says why;
 *   - when the stream was a valid one (every read and the close OK), the
 *     output parsed again by a fresh parser without secrets is valid too,
 *     answers the same requests, and comes out unchanged (the re-framing
 *     is a fixed point).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxyresp.h"
#include "secret.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAX_HEAD	4096

static const char *const values[] = {
	"SECRET-tok", "tok-1234", "aabaab", "zz", "sk-ant-0123456789",
};
#define NVALUES (sizeof(values) / sizeof(values[0]))

struct sink {
	uint8_t *buf;
	size_t len, cap;
	bool frozen;		/* an error was returned: nothing may come */
};

static bool
sink_out(void *arg, const void *p, size_t n)
{
	struct sink *k = arg;

	if (k->frozen)
		abort();
	if (k->len + n > k->cap) {
		size_t nc = (k->len + n) * 2;
		uint8_t *nb = realloc(k->buf, nc);
		if (nb == NULL)
			return false;
		k->buf = nb;
		k->cap = nc;
	}
	memcpy(k->buf + k->len, p, n);
	k->len += n;
	return true;
}

static struct secret_set *
the_set(void)
{
	static struct secret_set *set;
	const char *hosts[] = { "api.example.com" };
	char err[128], name[8], ph[48];

	if (set != NULL)
		return set;
	if ((set = secret_set_new(NVALUES)) == NULL)
		abort();
	for (size_t i = 0; i < NVALUES; i++) {
		memcpy(name, "S_", 2);
		name[2] = (char)('A' + i);
		name[3] = '\0';
		memcpy(ph, "AGENTLANE_PH_00000000000000000000000000000000", 46);
		ph[13] = (char)('a' + i);
		if (secret_set_add(set, name, ph, values[i], strlen(values[i]),
		    hosts, 1, err, sizeof(err)) != 0)
			abort();
	}
	return set;
}

static uint32_t
next(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static struct proxyresp *
parser(const struct secret_set *set, uint32_t max_head, uint32_t heads,
    size_t nreq)
{
	struct proxyresp *r = proxyresp_new(set, max_head);

	if (r == NULL)
		abort();
	for (size_t i = 0; i < nreq; i++)
		if (!proxyresp_expect(r, (heads >> i) & 1))
			abort();
	if (proxyresp_expect(r, false) != (nreq < PROXYRESP_PIPELINE_MAX))
		abort();
	if (nreq < PROXYRESP_PIPELINE_MAX && proxyresp_pending(r) != nreq + 1)
		abort();
	return r;
}

/* Feeds p in reads sized by seed (0: all at once); then the close. */
static enum proxyresp_status
run(struct proxyresp *r, const uint8_t *p, size_t n, uint32_t seed,
    struct sink *k)
{
	enum proxyresp_status st = PROXYRESP_OK;
	const char *why = NULL;
	size_t i = 0;

	while (i < n) {
		size_t m = n - i;
		if (seed != 0) {
			uint32_t v = next(&seed);
			size_t want = (v & 3) == 0 ? (v >> 8) % 4096 + 1 :
			    (v >> 8) % 17 + 1;
			if (want < m)
				m = want;
		}
		st = proxyresp_feed(r, p + i, m, sink_out, k, &why);
		i += m;
		if (st != PROXYRESP_OK)
			break;
	}
	if (st == PROXYRESP_OK)
		st = proxyresp_eof(r, sink_out, k, &why);
	if (st != PROXYRESP_OK) {
		enum proxyresp_status again;
		if (why == NULL)
			abort();
		k->frozen = true;
		again = proxyresp_feed(r, (const uint8_t *)"H", 1, sink_out, k,
		    &why);
		if (again != st || why == NULL)
			abort();
	}
	return st;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct secret_set *set = the_set();
	struct sink k1 = { 0 }, k2 = { 0 };
	struct proxyresp *r1, *r2;
	uint32_t heads, seed;
	size_t nreq;
	enum proxyresp_status st;

	if (size < 9)
		return 0;
	heads = (uint32_t)data[0] | (uint32_t)data[1] << 8 |
	    (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
	nreq = data[4] % (PROXYRESP_PIPELINE_MAX + 1);
	seed = (uint32_t)data[5] | (uint32_t)data[6] << 8 |
	    (uint32_t)data[7] << 16 | (uint32_t)data[8] << 24;
	data += 9;
	size -= 9;

	/* The parser takes one more request than nreq to check the cap. */
	r1 = parser(set, MAX_HEAD, heads, nreq);
	st = run(r1, data, size, seed, &k1);
	for (size_t i = 0; i < NVALUES; i++)
		if (memmem(k1.buf ? (void *)k1.buf : (void *)"", k1.len,
		    values[i], strlen(values[i])) != NULL)
			abort();
	if (st == PROXYRESP_OK) {
		/*
		 * The output is a valid stream for the same requests. Its heads
		 * may be longer by the framing line the parser wrote.
		 */
		r2 = parser(NULL, MAX_HEAD + 64, heads, nreq);
		if (run(r2, k1.buf ? k1.buf : (const uint8_t *)"", k1.len, 0,
		    &k2) != PROXYRESP_OK)
			abort();
		if (proxyresp_pending(r2) != proxyresp_pending(r1) ||
		    proxyresp_closing(r2) != proxyresp_closing(r1))
			abort();
		if (k2.len != k1.len || (k1.len > 0 &&
		    memcmp(k1.buf, k2.buf, k1.len) != 0))
			abort();
		proxyresp_free(r2);
	}
	(void)proxyresp_take_redacted(r1, NULL);
	proxyresp_free(r1);
	free(k1.buf);
	free(k2.buf);
	return 0;
}
