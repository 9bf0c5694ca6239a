/*
 * The guest stream parser with hostile bytes: the whole input at once, then
 * the same input in two pieces (the way reads split it). Consumed counts
 * never exceed what was offered, frame data stays inside the buffer, and
 * both feedings yield the same frames and the same end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guestproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAX_FRAMES 4096

struct result {
	size_t n;
	char types[MAX_FRAMES];
	size_t lens[MAX_FRAMES];
	uint32_t sums[MAX_FRAMES];	/* a cheap digest of each payload */
	enum guest_rc last;
};

static uint32_t
digest(const uint8_t *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* Parses buf[0..*len) until NEED_MORE or ERROR; keeps the unconsumed tail. */
static void
drain(struct guest_parser *p, uint8_t *buf, size_t *len, struct result *r)
{
	struct guest_frame f;
	size_t used;

	while (r->last != GUEST_ERROR) {
		r->last = guest_parse(p, buf, *len, &f, &used);
		if (r->last == GUEST_ERROR) {
			if (p->reason == NULL)
				abort();
			return;
		}
		if (used > *len)
			abort();
		if (r->last == GUEST_FRAME) {
			if (f.data < buf || f.len > used ||
			    f.data + f.len > buf + used)
				abort();
			if (f.len > GUEST_MAX_PAYLOAD)
				abort();
			if (f.type == GUEST_EXIT && !((f.code >= 0 &&
			    f.code <= 255 && f.sig == 0) || (f.code == -1 &&
			    f.sig >= 1 && f.sig <= 127)))
				abort();
			if (f.type == GUEST_FAILED && (memchr(f.what, '\0',
			    sizeof f.what) == NULL || memchr(f.message, '\0',
			    sizeof f.message) == NULL))
				abort();
			if (r->n < MAX_FRAMES) {
				r->types[r->n] = f.type;
				r->lens[r->n] = f.len;
				r->sums[r->n] = digest(f.data, f.len);
			}
			r->n++;
		}
		memmove(buf, buf + used, *len - used);
		*len -= used;
		if (r->last == GUEST_NEED_MORE)
			return;
	}
}

static void
feed(const uint8_t *data, size_t size, size_t split, struct result *r)
{
	struct guest_parser p;
	uint8_t *buf = malloc(size + 1);
	size_t len = 0;

	if (buf == NULL)
		abort();
	memset(r, 0, sizeof *r);
	r->last = GUEST_NEED_MORE;
	guest_parser_init(&p);
	memcpy(buf, data, split);
	len = split;
	drain(&p, buf, &len, r);
	if (r->last != GUEST_ERROR) {
		memcpy(buf + len, data + split, size - split);
		len += size - split;
		drain(&p, buf, &len, r);
	}
	free(buf);
}

/*
 * The exec channel's parser on the same bytes, consumed as gexec.c does:
 * frame counts and ends agree between one read and two, consumption never
 * passes what was offered, and no payload is larger than the bound.
 */
static void
chan_feed(const uint8_t *data, size_t size, size_t split, size_t *frames,
    uint64_t *sum, enum guest_rc *last)
{
	struct guest_chan_parser p;
	struct guest_chan_frame f;
	size_t off = 0, avail = split, used;

	guest_chan_parser_init(&p);
	*frames = 0;
	*sum = 0;
	for (;;) {
		*last = guest_chan_parse(&p, data + off, avail, &f, &used);
		if (*last == GUEST_ERROR) {
			if (p.reason == NULL)
				abort();
			return;
		}
		if (used > avail)
			abort();
		if (*last == GUEST_FRAME && avail - used >= f.len) {
			if (f.len > GUEST_CHAN_MAX_PAYLOAD ||
			    (f.type != GUEST_CHAN_DATA &&
			    f.type != GUEST_CHAN_END))
				abort();
			(*frames)++;
			*sum += f.id + f.len + (unsigned char)f.type;
			off += used + f.len;
			avail -= used + f.len;
			continue;
		}
		if (*last == GUEST_FRAME) {
			used -= GUEST_CHAN_HEADER;
			*last = GUEST_NEED_MORE;
		}
		off += used;
		avail -= used;
		if (off + avail == size)
			return;
		avail = size - off;	/* the second read: all the rest */
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct result whole, halves;
	size_t split = size > 0 ? data[0] % (size + 1) : 0;
	size_t cn1, cn2;
	uint64_t cs1, cs2;
	enum guest_rc cl1, cl2;

	chan_feed(data, size, size, &cn1, &cs1, &cl1);
	chan_feed(data, size, split, &cn2, &cs2, &cl2);
	if (cn1 != cn2 || cs1 != cs2 || cl1 != cl2)
		abort();

	feed(data, size, size, &whole);
	feed(data, size, split, &halves);
	if (whole.n != halves.n || whole.last != halves.last)
		abort();
	for (size_t i = 0; i < whole.n && i < MAX_FRAMES; i++)
		if (whole.types[i] != halves.types[i] ||
		    whole.lens[i] != halves.lens[i] ||
		    whole.sums[i] != halves.sums[i])
			abort();
	return 0;
}
