#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "text.h"

size_t
text_utf8_decode(const unsigned char *p, size_t len, uint32_t *cp)
{
	unsigned char lo = 0x80, hi = 0xbf;
	uint32_t c;
	size_t n;

	if (len == 0)
		return 0;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		c = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		c = p[0] & 0x0f;
		if (p[0] == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (p[0] == 0xed)
			hi = 0x9f;	/* surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		c = p[0] & 0x07;
		if (p[0] == 0xf0)
			lo = 0x90;	/* overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else
		return 0;
	/* Byte by byte: a NUL (never a continuation) stops it in time. */
	for (size_t i = 1; i < n; i++) {
		if (i >= len || p[i] < (i == 1 ? lo : 0x80) ||
		    p[i] > (i == 1 ? hi : 0xbf))
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	*cp = c;
	return n;
}

size_t
text_utf8_len(const unsigned char *p)
{
	uint32_t cp;

	return text_utf8_decode(p, 4, &cp);
}

bool
text_utf8_cut(const unsigned char *p, size_t len)
{
	unsigned char q[4];
	uint32_t cp;

	if (len == 0 || len >= 4 || p[0] < 0xc2 || p[0] > 0xf4)
		return false;
	/* A prefix of a well-formed sequence: complete it and ask. */
	memcpy(q, p, len);
	memset(q + len, 0x80, sizeof q - len);
	for (unsigned char b = 0x80; b <= 0xbf; b++) {
		/* The first continuation's range depends on the lead byte. */
		if (len == 1)
			q[1] = b;
		if (text_utf8_decode(q, sizeof q, &cp) > len)
			return true;
		if (len > 1)
			break;
	}
	return false;
}

bool
text_is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) ||
	    (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) ||
	    c == 0x2028 || c == 0x2029;
}

bool
text_utf8_printable(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	while (*p != '\0') {
		if (*p < 0x20 || *p == 0x7f || (n = text_utf8_len(p)) == 0 ||
		    (p[0] == 0xc2 && p[1] < 0xa0))	/* C1 controls */
			return false;
		p += n;
	}
	return true;
}

void
text_sanitize(char *s)
{
	unsigned char *r = (unsigned char *)s, *w = r;
	uint32_t cp;
	size_t n;

	while (*r != '\0') {
		n = text_utf8_decode(r, 4, &cp);
		if (n == 0 || text_is_control(cp)) {
			*w++ = '?';
			r += n == 0 ? 1 : n;
			continue;
		}
		/* w never passes r: each sequence is kept whole or shrinks. */
		memmove(w, r, n);
		w += n;
		r += n;
	}
	*w = '\0';
}

/*
 * One step of the rule on a stream: how many bytes of p[0..len) were
 * consumed, with *keep saying whether they go out as they are (false:
 * they stand for one '?'); 0 when p holds only the start of a sequence
 * cut by the end of the chunk.
 */
static size_t
stream_step(const unsigned char *p, size_t len, bool lines, int *what)
{
	uint32_t cp;
	size_t n = text_utf8_decode(p, len, &cp);

	if (n == 0 && text_utf8_cut(p, len))
		return 0;
	if (n == 0) {
		*what = '?';
		return 1;
	}
	if (lines && (cp == '\n' || cp == '\t'))
		*what = 0;
	else if (lines && cp == '\r')
		*what = -1;	/* dropped */
	else
		*what = text_is_control(cp) ? '?' : 0;
	return n;
}

bool
text_stream_put(struct text_stream *ts, const void *data, size_t len,
    bool (*put)(const void *, size_t, void *), void *arg)
{
	const unsigned char *p = data;
	int what;

	/* A sequence the last chunk cut: completed from this one's bytes. */
	while (ts->ncarry > 0 && len > 0) {
		size_t n;

		ts->carry[ts->ncarry++] = *p++;
		len--;
		if ((n = stream_step(ts->carry, ts->ncarry, ts->lines,
		    &what)) == 0)
			continue;
		if (what > 0 ? !put("?", 1, arg) :
		    what == 0 && !put(ts->carry, n, arg))
			return false;
		/* Bytes after the one consumed go round again. */
		memmove(ts->carry, ts->carry + n, ts->ncarry - n);
		ts->ncarry -= n;
		while (ts->ncarry > 0 && (n = stream_step(ts->carry,
		    ts->ncarry, ts->lines, &what)) > 0) {
			if (what > 0 ? !put("?", 1, arg) :
			    what == 0 && !put(ts->carry, n, arg))
				return false;
			memmove(ts->carry, ts->carry + n, ts->ncarry - n);
			ts->ncarry -= n;
		}
	}
	while (len > 0) {
		size_t run = 0, n;

		/* The longest run kept as it is, written in one call. */
		while (run < len && (n = stream_step(p + run, len - run,
		    ts->lines, &what)) > 0 && what == 0)
			run += n;
		if (run > 0 && !put(p, run, arg))
			return false;
		p += run;
		len -= run;
		if (len == 0)
			break;
		if ((n = stream_step(p, len, ts->lines, &what)) == 0) {
			memcpy(ts->carry, p, len);
			ts->ncarry = len;
			break;
		}
		if (what > 0 && !put("?", 1, arg))
			return false;
		p += n;
		len -= n;
	}
	return true;
}

bool
text_stream_end(struct text_stream *ts,
    bool (*put)(const void *, size_t, void *), void *arg)
{
	/* A sequence the stream ended in: each byte of it invalid. */
	for (; ts->ncarry > 0; ts->ncarry--)
		if (!put("?", 1, arg))
			return false;
	return true;
}

bool
text_secret_name_valid(const char *s)
{
	size_t n = 0;

	if (s == NULL || !((s[0] >= 'A' && s[0] <= 'Z') ||
	    (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (; s[n] != '\0'; n++)
		if (!((s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= 'a' &&
		    s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') ||
		    s[n] == '_') || n >= TEXT_SECRET_NAME_MAX)
			return false;
	return true;
}

bool
text_secret_value_valid(const void *v, size_t len)
{
	const unsigned char *p = v;

	if (p == NULL || len == 0 || len > TEXT_SECRET_VALUE_MAX ||
	    p[0] == ' ' || p[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

bool
text_secret_spec(const char *spec, char name[TEXT_SECRET_NAME_MAX + 1],
    const char **hosts)
{
	size_t n = 0;

	while (spec[n] != '\0' && spec[n] != '@')
		n++;
	if (n == 0 || n > TEXT_SECRET_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		name[i] = spec[i];
	name[n] = '\0';
	if (!text_secret_name_valid(name))
		return false;
	*hosts = NULL;
	if (spec[n] == '@') {
		if (spec[n + 1] == '\0')
			return false;
		*hosts = spec + n + 1;
	}
	return true;
}

/* Never a credential header: the proxy frames, routes or drops these. */
static const char *const secret_header_forbidden[] = {
	"host", "connection", "proxy-connection", "keep-alive", "te",
	"trailer", "transfer-encoding", "content-length", "upgrade", "expect",
	"proxy-authorization", "proxy-authenticate", "cookie", "set-cookie",
	NULL,
};

bool
text_secret_header_valid(const char *s)
{
	size_t n;

	if (s == NULL || (n = strlen(s)) == 0 || n > TEXT_SECRET_HEADER_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c) !=
		    NULL))
			return false;
	}
	for (size_t i = 0; secret_header_forbidden[i] != NULL; i++)
		if (strcasecmp(secret_header_forbidden[i], s) == 0)
			return false;
	return true;
}

bool
text_secret_header_spec(const char *spec, char name[TEXT_SECRET_NAME_MAX + 1],
    const char **headers)
{
	size_t n = strcspn(spec, "=");

	if (n == 0 || n > TEXT_SECRET_NAME_MAX || spec[n] != '=' ||
	    spec[n + 1] == '\0')
		return false;
	memcpy(name, spec, n);
	name[n] = '\0';
	if (!text_secret_name_valid(name))
		return false;
	*headers = spec + n + 1;
	return true;
}
