/*
 * An exec's end as its owner sees it, driven through gexec's own parser
 * with a transport that only collects what the exec sends: the helper's
 * frames are put in its input buffer by hand, so every interleaving of the
 * helper's output, the owner's pause and the stream's end is exact.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "agentlane.pb-c.h"
#include "gexec.h"
#include "gexec_int.h"
#include "guestproto.h"

struct fake {
	struct evbuffer *sent;		/* frames for the helper */
	bool closed;			/* no more frames either way */
	int done;
	struct gexec_result r;
};

static struct fake fk;

static struct evbuffer *
fake_sink(struct gexec *g)
{
	return fk.closed ? NULL : fk.sent;
}

static size_t
fake_wrap(struct gexec *g, uint8_t *hdr, size_t len)
{
	return 0;
}

static bool
fake_room(struct gexec *g, struct evbuffer *out)
{
	return true;
}

static void
fake_close(struct gexec *g)
{
	fk.closed = true;
}

static void
fake_lost(struct gexec *g)
{
	gexec_fail(g, AGENTLANE__V1__ERROR_CODE__UNAVAILABLE, "stream lost");
}

static void
fake_free(struct gexec *g)
{
}

static const struct gexec_transport fake_tr = {
	.sink = fake_sink,
	.wrap = fake_wrap,
	.room = fake_room,
	.pump = gexec_parse,
	.close = fake_close,
	.lost = fake_lost,
	.free = fake_free,
};

static void
fake_output(struct gexec *g, int stream, const uint8_t *p, size_t len,
    void *arg)
{
}

static void
fake_done(struct gexec *g, const struct gexec_result *r, void *arg)
{
	fk.done++;
	fk.r = *r;
}

static const struct gexec_ops fake_ops = {
	.output = fake_output,
	.done = fake_done,
};

/* One frame from the helper, as it writes it. */
static void
helper_says(struct gexec *g, char type, const void *data, uint32_t len)
{
	uint8_t hdr[GUEST_HEADER];

	guest_header(hdr, type, len);
	assert_int_equal(evbuffer_add(g->inbuf, hdr, sizeof hdr), 0);
	if (len > 0)
		assert_int_equal(evbuffer_add(g->inbuf, data, len), 0);
}

static void
helper_acks(struct gexec *g, uint32_t n)
{
	uint8_t k[4] = { n >> 24, n >> 16, n >> 8, n };

	helper_says(g, GUEST_ACK, k, sizeof k);
}

/* An exec whose command runs and was sent `in` bytes of input. */
static struct gexec *
running(size_t in)
{
	static uint8_t data[4096];
	struct gexec_spec spec = { .lane = "t", .what = "exec" };
	struct gexec *g;

	memset(&fk, 0, sizeof fk);
	assert_non_null(fk.sent = evbuffer_new());
	g = gexec_new(NULL, NULL, &spec, &fake_ops, NULL, &fake_tr);
	assert_int_equal(evbuffer_add(g->inbuf, GUEST_MAGIC,
	    GUEST_MAGIC_LEN), 0);
	helper_says(g, GUEST_STARTED, "42", 2);
	gexec_process(g);
	assert_true(g->started);
	assert_true(in <= sizeof data);
	assert_int_equal(gexec_stdin(g, data, in), 0);
	assert_int_equal(g->unacked, in);
	return g;
}

/* What the channel does when the helper's stream ends (gchan.c). */
static void
stream_ends(struct gexec *g)
{
	fk.closed = true;
	gexec_stream_over(g);
	gexec_process(g);
}

static void
finish(struct gexec *g)
{
	evbuffer_free(fk.sent);
	(void)g;	/* freed by gexec once reported */
}

/*
 * The owner paused (its client reads slowly) with the helper's last frames
 * still unparsed, an ack among them, when the stream's end arrives: the
 * exit status still comes, not "acknowledged input it was not sent".
 */
static void
test_ack_after_stream_end(void **state)
{
	struct gexec *g = running(1000);

	gexec_pause(g, true);
	helper_acks(g, 1000);
	helper_says(g, GUEST_EXIT, "c7", 2);
	stream_ends(g);
	assert_int_equal(fk.done, 0);
	gexec_pause(g, false);
	assert_int_equal(fk.done, 1);
	assert_int_equal(fk.r.end, GEXEC_EXITED);
	assert_int_equal(fk.r.code, 7);
	finish(g);
}

/* Acks in two frames, one before the end and one after. */
static void
test_acks_split_by_stream_end(void **state)
{
	struct gexec *g = running(3000);

	helper_acks(g, 1000);
	gexec_process(g);
	assert_int_equal(g->unacked, 2000);
	gexec_pause(g, true);
	helper_acks(g, 1500);
	helper_acks(g, 500);
	helper_says(g, GUEST_EXIT, "c0", 2);
	stream_ends(g);
	gexec_pause(g, false);
	assert_int_equal(fk.done, 1);
	assert_int_equal(fk.r.end, GEXEC_EXITED);
	assert_int_equal(fk.r.code, 0);
	finish(g);
}

/* The bound stays: more than was ever sent is an error, ended or not. */
static void
test_ack_beyond_sent_after_end(void **state)
{
	struct gexec *g = running(1000);

	gexec_pause(g, true);
	helper_acks(g, 1001);
	helper_says(g, GUEST_EXIT, "c0", 2);
	stream_ends(g);
	gexec_pause(g, false);
	assert_int_equal(fk.done, 1);
	assert_int_equal(fk.r.end, GEXEC_FAILED);
	assert_non_null(strstr(fk.r.message, "acknowledged input it was "
	    "not sent"));
	finish(g);
}

static void
test_ack_beyond_sent(void **state)
{
	struct gexec *g = running(1000);

	helper_acks(g, 600);
	helper_acks(g, 401);
	gexec_process(g);
	assert_int_equal(fk.done, 1);
	assert_int_equal(fk.r.end, GEXEC_FAILED);
	finish(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ack_after_stream_end),
		cmocka_unit_test(test_acks_split_by_stream_end),
		cmocka_unit_test(test_ack_beyond_sent_after_end),
		cmocka_unit_test(test_ack_beyond_sent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
