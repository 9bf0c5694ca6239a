#include <string.h>

#include "guestproto.h"
#include "util.h"

void
guest_parser_init(struct guest_parser *p)
{
	memset(p, 0, sizeof *p);
}

uint32_t
guest_header_len(const uint8_t hdr[GUEST_HEADER])
{
	return ((uint32_t)hdr[1] << 24) | ((uint32_t)hdr[2] << 16) |
	    ((uint32_t)hdr[3] << 8) | hdr[4];
}

void
guest_header(uint8_t hdr[GUEST_HEADER], char type, uint32_t len)
{
	hdr[0] = (uint8_t)type;
	hdr[1] = (uint8_t)(len >> 24);
	hdr[2] = (uint8_t)(len >> 16);
	hdr[3] = (uint8_t)(len >> 8);
	hdr[4] = (uint8_t)len;
}

/* Decimal in [min, max] spanning the whole of s[0..n); -1 otherwise. */
static long
parse_bounded(const uint8_t *s, size_t n, long min, long max)
{
	long v = 0;

	if (n == 0 || n > 10)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v < min || v > max ? -1 : v;
}

static bool
parse_exit(struct guest_frame *f)
{
	long v;

	f->code = -1;
	f->sig = 0;
	if (f->len < 2)
		return false;
	if (f->data[0] == 'c') {
		if ((v = parse_bounded(f->data + 1, f->len - 1, 0, 255)) < 0)
			return false;
		f->code = (int)v;
		return true;
	}
	if (f->data[0] == 's') {
		if ((v = parse_bounded(f->data + 1, f->len - 1, 1, 127)) < 0)
			return false;
		f->sig = (int)v;
		return true;
	}
	return false;
}

/* "what\0errno\0message" */
static bool
parse_failed(struct guest_frame *f)
{
	const uint8_t *a = f->data, *end = f->data + f->len, *b, *c;
	long v;

	if ((b = memchr(a, '\0', f->len)) == NULL || b - a == 0 ||
	    (size_t)(b - a) >= sizeof f->what)
		return false;
	b++;
	if ((c = memchr(b, '\0', (size_t)(end - b))) == NULL)
		return false;
	if ((v = parse_bounded(b, (size_t)(c - b), 0, 4095)) < 0)
		return false;
	memcpy(f->what, a, (size_t)(b - 1 - a));
	f->what[b - 1 - a] = '\0';
	str_sanitize_ascii(f->what);
	f->err_no = (int)v;
	c++;
	{
		size_t n = (size_t)(end - c);

		if (n >= sizeof f->message)
			n = sizeof f->message - 1;
		memcpy(f->message, c, n);
		f->message[n] = '\0';
		/* Stop at an embedded NUL, then make it printable. */
		str_sanitize(f->message);
	}
	return true;
}

enum guest_rc
guest_parse(struct guest_parser *p, const uint8_t *buf, size_t len,
    struct guest_frame *out, size_t *used)
{
	size_t off = 0;
	uint32_t plen;

	*used = 0;
	if (!p->synced) {
		/* Skip login-shell noise up to the helper's magic line. */
		for (; off + GUEST_MAGIC_LEN <= len; off++)
			if (memcmp(buf + off, GUEST_MAGIC, GUEST_MAGIC_LEN) == 0)
				break;
		if (off + GUEST_MAGIC_LEN > len) {
			/* Keep a possible partial magic at the end. */
			size_t keep = len < GUEST_MAGIC_LEN - 1 ?
			    len : GUEST_MAGIC_LEN - 1;

			p->skipped += len - keep;
			*used = len - keep;
			if (p->skipped > GUEST_MAX_PREAMBLE) {
				p->reason = "guest printed too much before the "
				    "agent-lane helper started";
				return GUEST_ERROR;
			}
			return GUEST_NEED_MORE;
		}
		p->skipped += off;
		if (p->skipped > GUEST_MAX_PREAMBLE) {
			p->reason = "guest printed too much before the "
			    "agent-lane helper started";
			return GUEST_ERROR;
		}
		p->synced = true;
		off += GUEST_MAGIC_LEN;
	}
	if (len - off < GUEST_HEADER) {
		*used = off;
		return GUEST_NEED_MORE;
	}
	memset(out, 0, sizeof *out);
	out->type = (char)buf[off];
	plen = guest_header_len(buf + off);
	switch (out->type) {
	case GUEST_STARTED:
	case GUEST_STDOUT:
	case GUEST_STDERR:
	case GUEST_EXIT:
	case GUEST_FAILED:
	case GUEST_ACK:
		break;
	default:
		p->reason = "unknown frame type from the guest helper";
		return GUEST_ERROR;
	}
	if (plen > GUEST_MAX_PAYLOAD) {
		p->reason = "oversized frame from the guest helper";
		return GUEST_ERROR;
	}
	if (len - off - GUEST_HEADER < plen) {
		*used = off;
		return GUEST_NEED_MORE;
	}
	out->data = buf + off + GUEST_HEADER;
	out->len = plen;
	if (out->type == GUEST_EXIT && !parse_exit(out)) {
		p->reason = "malformed exit status from the guest helper";
		return GUEST_ERROR;
	}
	if (out->type == GUEST_FAILED && !parse_failed(out)) {
		p->reason = "malformed failure report from the guest helper";
		return GUEST_ERROR;
	}
	if (out->type == GUEST_ACK) {
		if (plen != 4) {
			p->reason = "malformed acknowledgement from the guest "
			    "helper";
			return GUEST_ERROR;
		}
		{
			const uint8_t *d = buf + off + GUEST_HEADER;

			out->acked = ((uint32_t)d[0] << 24) |
			    ((uint32_t)d[1] << 16) | ((uint32_t)d[2] << 8) |
			    d[3];
		}
	}
	if (out->type == GUEST_STARTED &&
	    parse_bounded(out->data, out->len, 1, 4194304) < 0) {
		p->reason = "malformed pid from the guest helper";
		return GUEST_ERROR;
	}
	*used = off + GUEST_HEADER + plen;
	return GUEST_FRAME;
}

void
guest_chan_parser_init(struct guest_chan_parser *p)
{
	memset(p, 0, sizeof *p);
}

static uint32_t
be32(const uint8_t *d)
{
	return ((uint32_t)d[0] << 24) | ((uint32_t)d[1] << 16) |
	    ((uint32_t)d[2] << 8) | d[3];
}

void
guest_chan_header(uint8_t hdr[GUEST_CHAN_HEADER], char type, uint32_t id,
    uint32_t len)
{
	hdr[0] = (uint8_t)type;
	hdr[1] = (uint8_t)(id >> 24);
	hdr[2] = (uint8_t)(id >> 16);
	hdr[3] = (uint8_t)(id >> 8);
	hdr[4] = (uint8_t)id;
	hdr[5] = (uint8_t)(len >> 24);
	hdr[6] = (uint8_t)(len >> 16);
	hdr[7] = (uint8_t)(len >> 8);
	hdr[8] = (uint8_t)len;
}

enum guest_rc
guest_chan_parse(struct guest_chan_parser *p, const uint8_t *buf, size_t len,
    struct guest_chan_frame *out, size_t *used)
{
	size_t off = 0;

	*used = 0;
	if (!p->synced) {
		/* Login-shell noise up to the channel helper's magic line. */
		for (; off + GUEST_MAGIC_LEN <= len; off++)
			if (memcmp(buf + off, GUEST_CHAN_MAGIC,
			    GUEST_MAGIC_LEN) == 0)
				break;
		if (off + GUEST_MAGIC_LEN > len) {
			size_t keep = len < GUEST_MAGIC_LEN - 1 ?
			    len : GUEST_MAGIC_LEN - 1;

			off = len - keep;
		}
		p->skipped += off;
		if (p->skipped > GUEST_MAX_PREAMBLE) {
			p->reason = "guest printed too much before the "
			    "agent-lane channel helper started";
			return GUEST_ERROR;
		}
		if (off + GUEST_MAGIC_LEN > len) {
			*used = off;
			return GUEST_NEED_MORE;
		}
		p->synced = true;
		off += GUEST_MAGIC_LEN;
	}
	if (len - off < GUEST_CHAN_HEADER) {
		*used = off;
		return GUEST_NEED_MORE;
	}
	out->type = (char)buf[off];
	out->id = be32(buf + off + 1);
	out->len = be32(buf + off + 5);
	switch (out->type) {
	case GUEST_CHAN_DATA:
		if (out->len == 0 || out->len > GUEST_CHAN_MAX_PAYLOAD) {
			p->reason = "malformed data frame from the channel "
			    "helper";
			return GUEST_ERROR;
		}
		break;
	case GUEST_CHAN_END:
		if (out->len != 0) {
			p->reason = "malformed end frame from the channel "
			    "helper";
			return GUEST_ERROR;
		}
		break;
	default:
		p->reason = "unknown frame type from the channel helper";
		return GUEST_ERROR;
	}
	*used = off + GUEST_CHAN_HEADER;
	return GUEST_FRAME;
}
